"""Build script: compiles the Cython kernels of the ``fast`` backend, when it can.

The directives that fix each kernel's semantics (``language_level``,
``cdivision``, ``embedsignature``) are in the ``# cython:`` header line of each
``.pyx`` file; the safety checks are set here, for all extensions, by the build
mode (``COMPILER_DIRECTIVES``): off, or on in the debug build
(``SSPGM_DEBUG=1``). Every compiler flag is in ``EXTRA_COMPILE_ARGS``.

The ``.pyx`` files are translated to C (``cythonize``) by ``build_ext`` itself,
only once a C compiler has been seen to work, so the sdist carries the Cython
sources and no generated C (the build requires Cython, ``pyproject.toml``).
Cython runs on ``BUILD_JOBS`` processes and the C compiler on as many threads
(``build_ext -j N`` sets another number).

The compiled extensions are optional. Without a working C compiler the build
goes on without them, quickly (nothing is translated): ``reference``,
``bounds`` and the ``sspgm`` command line install as usual, and ``import fast``
raises an ImportError that says how to build it. Whether the compiler supports
OpenMP is tried on a tiny program first; without it the kernels are built
single-threaded (``fast.OPENMP`` is False and ``sspgm --version`` says so).
"""

import os
import sys
import tempfile
from pathlib import Path

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

EXTRA_COMPILE_ARGS = [*(["-O1"] if DEBUG else ["-O3", "-g0"]), *FLOAT_FLAGS]
"""The debug build is for its checks, not its speed: at ``-O1`` its C compiles in about
half the time ``-O3`` takes (2.4 against 5.1 s of CPU for ``fast/_vi.c``). The release
build carries no debug information: ``-g0`` overrides the ``-g`` of Python's own
compiler flags, so the wheel's extensions are stripped of it."""

OPENMP_FLAGS = ["-fopenmp"]

BUILD_JOBS = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
              else os.cpu_count() or 1)
"""Processes for Cython and threads for the C compiler: the cores this process may use."""

C_PROBE = "int main(void) { return 0; }\n"

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
    """``build_ext`` that translates and compiles the extensions when a C compiler works.

    Without a working compiler it skips them (no Cython run). With one, it
    probes OpenMP, runs Cython on ``parallel`` processes and the compiler on as
    many threads.
    """

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = BUILD_JOBS

    def build_extensions(self):
        if not self._compiles(C_PROBE, []):
            _warn(
                "no working C compiler: the compiled `fast` backend is not built; installing "
                "`reference`, `bounds` and the `sspgm` command line without it. `import fast` "
                "will say how to build it."
            )
            return
        openmp = self._compiles(OPENMP_PROBE, OPENMP_FLAGS)
        if not openmp:
            _warn("no OpenMP with this C compiler: the `fast` kernels are built single-threaded.")
        import numpy
        from Cython.Build import cythonize

        for ext in self.extensions:
            ext.include_dirs.append(numpy.get_include())
            ext.extra_compile_args = EXTRA_COMPILE_ARGS + (OPENMP_FLAGS if openmp else [])
            ext.extra_link_args = OPENMP_FLAGS if openmp else []
        translated = cythonize(
            self.extensions, compiler_directives=COMPILER_DIRECTIVES, force=self.force,
            nthreads=self.parallel if self.parallel > 1 else 0,
            build_dir="build/debug" if DEBUG else None,
        )
        sources = {ext.name: ext.sources for ext in translated}
        for ext in self.extensions:
            ext.sources = sources[ext.name]
        try:
            super().build_extensions()
        except (CCompilerError, ExecError, PlatformError) as exc:
            _warn(
                f"the compiled `fast` backend could not be built ({type(exc).__name__}: {exc}); "
                "installing `reference`, `bounds` and the `sspgm` command line without it. "
                "`import fast` will say how to build it."
            )

    def _compiles(self, program, flags):
        """Whether ``program`` (C source) compiles and links with ``flags``."""
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "probe.c"
            source.write_text(program)
            try:
                objects = self.compiler.compile(
                    [str(source)], output_dir=tmp, extra_postargs=flags
                )
                self.compiler.link_executable(
                    objects, "probe", output_dir=tmp, extra_postargs=flags
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
        include_dirs=["fast"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for path in sorted(Path("fast").glob("_*.pyx"))
]

setup(ext_modules=extensions, cmdclass={"build_ext": OptionalBuildExt})
