"""Build script: compiles the Cython kernels of the ``fast`` backend, when it can.

The directives that fix each kernel's semantics (``language_level``,
``cdivision``, ``embedsignature``) are in the ``# cython:`` header line of each
``.pyx`` file; the safety checks are set here, for all extensions, by the build
mode (``COMPILER_DIRECTIVES``): off, or on in the debug build
(``SSPGM_DEBUG=1``). Every compiler flag is in ``EXTRA_COMPILE_ARGS``.

The compiled extensions are optional. Without a working C compiler the build
goes on without them: ``reference``, ``bounds`` and the ``sspgm`` command line
install as usual, and ``import fast`` raises an ImportError that says how to
build it. Whether the compiler supports OpenMP is tried on a tiny program
first; without it the kernels are built single-threaded (``fast.OPENMP`` is
False and ``sspgm --version`` says so).
"""

import os
import sys
import tempfile
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

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

FLOAT_FLAGS = [
    # libm functions never set errno, so ``sqrt`` compiles to one instruction
    # instead of a call with an error branch (the Bernstein radius is 2x
    # faster); values are unchanged.
    "-fno-math-errno",
    # Floating-point operations may be assumed not to trap, so branches over
    # them can be if-converted and vectorised; values are unchanged.
    "-fno-trapping-math",
    # Never fuse a multiply and an add into one rounding: results stay the
    # same on machines with and without FMA.
    "-ffp-contract=off",
]
"""Floating-point flags, each bit-identical to the default build (no ``-ffast-math``)."""

EXTRA_COMPILE_ARGS = ["-O1" if DEBUG else "-O3", *FLOAT_FLAGS]
"""The debug build is for its checks, not its speed: at ``-O1`` its C compiles in about
half the time ``-O3`` takes (2.4 against 5.1 s of CPU for ``fast/_vi.c``)."""

OPENMP_FLAGS = ["-fopenmp"]

OPENMP_PROBE = """\
#include <omp.h>
int main(void) {
    int n = 0;
    #pragma omp parallel reduction(+:n)
    n += 1;
    return n > 0 ? 0 : 1;
}
"""


def _warn(message):
    print(f"sspgm build: {message}", file=sys.stderr, flush=True)


class OptionalBuildExt(build_ext):
    """``build_ext`` that probes OpenMP and skips the extensions when no compiler works."""

    def build_extensions(self):
        openmp = self._compiles_with_openmp()
        for ext in self.extensions:
            ext.extra_compile_args = EXTRA_COMPILE_ARGS + (OPENMP_FLAGS if openmp else [])
            ext.extra_link_args = OPENMP_FLAGS if openmp else []
        if not openmp:
            _warn("no OpenMP with this C compiler (or no working compiler): the `fast` kernels "
                  "are built single-threaded.")
        try:
            super().build_extensions()
        except (CCompilerError, ExecError, PlatformError) as exc:
            _warn(
                f"the compiled `fast` backend could not be built ({type(exc).__name__}: {exc}); "
                "installing `reference`, `bounds` and the `sspgm` command line without it. "
                "`import fast` will say how to build it."
            )

    def _compiles_with_openmp(self):
        """Whether a tiny OpenMP program compiles and links with ``OPENMP_FLAGS``."""
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "probe_openmp.c"
            source.write_text(OPENMP_PROBE)
            try:
                objects = self.compiler.compile(
                    [str(source)], output_dir=tmp, extra_postargs=OPENMP_FLAGS
                )
                self.compiler.link_executable(
                    objects, "probe_openmp", output_dir=tmp, extra_postargs=OPENMP_FLAGS
                )
            except (CCompilerError, ExecError, PlatformError):
                return False
        return True


extensions = [
    Extension(
        f"fast.{path.stem}",
        [str(path)],
        # "fast" for the C helpers the .pyx files include (``fast/_scan.h``), wherever
        # the generated C file lies (``build/debug`` in the debug build).
        include_dirs=[numpy.get_include(), "fast"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for path in sorted(Path("fast").glob("_*.pyx"))
]

setup(
    ext_modules=cythonize(extensions, compiler_directives=COMPILER_DIRECTIVES,
                          build_dir="build/debug" if DEBUG else None),
    cmdclass={"build_ext": OptionalBuildExt},
)
