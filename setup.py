"""Build script: compiles the Cython kernels of the ``fast`` backend.

The directives that fix each kernel's semantics (``language_level``,
``cdivision``, ``embedsignature``) are in the ``# cython:`` header line of each
``.pyx`` file; the safety checks are set here, for all extensions, by the build
mode: off, or on in the debug build (``SSPGM_DEBUG=1``).
"""
import os
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("SSPGM_DEBUG") == "1"
"""Debug build: bounds, negative-index and memoryview-initialisation checks on.

Build it with ``SSPGM_DEBUG=1 python setup.py build_ext --inplace --force``;
its C sources go to ``build/debug``, so the release sources are kept.
"""

COMPILER_DIRECTIVES = {
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
}

extensions = [
    Extension(
        f"fast.{path.stem}",
        [str(path)],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3", "-fopenmp"],
        extra_link_args=["-fopenmp"],
    )
    for path in sorted(Path("fast").glob("_*.pyx"))
]

setup(ext_modules=cythonize(extensions, compiler_directives=COMPILER_DIRECTIVES,
                            build_dir="build/debug" if DEBUG else None))
