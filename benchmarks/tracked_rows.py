"""The rows of the tracked benchmarks (``track.py``): each a subject next to its yardstick.

A :class:`Row` builds, from the instances of ``conftest.py``, two functions of
no argument: the *subject* (the ``fast`` code whose speed is tracked) and its
*yardstick* (what the subject's time is divided by). ``track.py`` times the
two interleaved in one process, so a slower or busier host moves both sides.
The yardsticks:

- a sweep: numpy ``P @ v`` on the dense ``(S*A, S+1)`` array of the same
  instance, or a scipy CSR matvec over the same nonzeros;
- a full EVI call on few samples: numpy reading the counts once
  (``counts.sum()``); on CSR counts: the sweeps that call performs on boxes
  built beforehand plus one pass over the counts;
- box construction: one sweep on the boxes built;
- value iteration and ``solve``: the same call on the ``reference`` backend.

A row in :data:`QUICK` is part of the quick check ``.ci/run`` runs; every
row is part of the full set. :data:`CALL_CASES` are the instances whose
calls to the generative model are tracked exactly: ``solve_certified`` and
Alg. 1 (``solve``) from seed 0, and their ratio.
"""

import importlib.util
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

import fast
import reference
from fast.kernels import COMPILED_KERNELS
from reference.kernels import NUMPY_KERNELS


def _benchmark_instances():
    """``benchmarks/conftest.py``, loaded by path (the tests' ``conftest`` may hold the name)."""
    name = "sspgm_benchmark_instances"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("conftest.py"))
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


DELTA = _benchmark_instances().DELTA
instance = _benchmark_instances().instance
EVI_MU = 1e-3
SOLVE_EPS = 1.0


@dataclass(frozen=True)
class Row:
    """A tracked row: ``build()`` returns ``(subject, yardstick)``, two functions of no argument;
    ``track.py`` times them over at least ``min_rounds`` rounds."""

    name: str
    yardstick: str
    build: Callable
    quick: bool = False
    min_rounds: int = 7


def _counts(inst):
    """The instance's counts as the kernels take them: dense float64 or float64 CSR."""
    if inst.sparse:
        return sp.csr_array(inst.counts, dtype=np.float64)
    return np.ascontiguousarray(inst.counts, dtype=np.float64)


def _matvec(inst, matrix=None):
    """``P @ v`` over the instance's counts (dense ``(S*A, S+1)`` or CSR), the sweeps' yardstick."""
    if matrix is None:
        matrix = inst.counts if inst.sparse else np.asarray(inst.counts, dtype=np.float64).reshape(
            inst.n_states * 4, inst.n_states + 1)
    v_ext = np.append(inst.values, 0.0)
    return lambda: matrix @ v_ext


def _boxes(kernels, inst):
    counts = _counts(inst)
    return kernels.boxes(counts if inst.sparse else kernels.scan_counts(counts), DELTA)


def _evi_sweep_call(kernels, inst):
    boxes = _boxes(kernels, inst)
    S = inst.n_states
    v_ext, out, policy = np.append(inst.values, 0.0), np.empty(S), np.empty(S, dtype=np.intp)
    return lambda: kernels.evi_sweep(boxes, inst.costs, v_ext, out, policy)


def evi_sweep(size):
    """The compiled EVI sweep against ``P @ v``."""
    def build():
        inst = instance(size)
        return _evi_sweep_call(COMPILED_KERNELS, inst), _matvec(inst)
    return build


def evi_sweep_reference(size):
    """The compiled EVI sweep against the numpy one."""
    def build():
        inst = instance(size)
        return _evi_sweep_call(COMPILED_KERNELS, inst), _evi_sweep_call(NUMPY_KERNELS, inst)
    return build


def vi_sweep(size):
    """The compiled VI sweep against ``P @ v`` over the instance's kernel."""
    def build():
        inst = instance(size)
        S = inst.n_states
        model = COMPILED_KERNELS.vi_model(inst.ssp)
        v_ext, out, policy = np.append(inst.values, 0.0), np.empty(S), np.empty(S, dtype=np.intp)
        if inst.sparse:
            kernel = inst.ssp.kernel_csr()
        else:
            kernel = inst.ssp.kernel_dense().reshape(-1, S + 1)
        return (lambda: COMPILED_KERNELS.vi_sweep(model, inst.costs, v_ext, out, policy),
                _matvec(inst, kernel))
    return build


def robust_sweep(size):
    """The compiled robust sweep of the certificates (KL boxes) against ``P @ v``."""
    def build():
        inst = instance(size)
        boxes = reference.confidence_boxes(_counts(inst), DELTA, kind="kl")
        rows, v_ext = np.arange(inst.n_states * 4), np.append(inst.values, 0.0)
        return (lambda: COMPILED_KERNELS.pour_values(boxes, rows, v_ext, True), _matvec(inst))
    return build


def evi_full(size):
    """A full ``fast.extended_value_iteration`` call against one read of the counts (dense
    counts) or the call's sweeps on boxes built beforehand plus one read (CSR counts)."""
    def build():
        inst = instance(size)

        def subject():
            return fast.extended_value_iteration(inst.counts, inst.costs, DELTA, EVI_MU)

        if not inst.sparse:
            return subject, inst.counts.sum
        n_sweeps = subject().n_iter
        boxes, S = _boxes(COMPILED_KERNELS, inst), inst.n_states

        def yardstick():
            inst.counts.sum()
            v_ext, out, policy = np.zeros(S + 1), np.empty(S), np.empty(S, dtype=np.intp)
            for _ in range(n_sweeps):
                COMPILED_KERNELS.evi_sweep(boxes, inst.costs, v_ext, out, policy)
                v_ext[:S] = out

        return subject, yardstick
    return build


def evi_boxes(size):
    """The compiled box construction from CSR counts against one sweep on the boxes."""
    def build():
        inst = instance(size)
        counts = _counts(inst)
        return (lambda: COMPILED_KERNELS.boxes(counts, DELTA),
                _evi_sweep_call(COMPILED_KERNELS, inst))
    return build


def vi_full(size):
    """``fast.value_iteration`` against ``reference.value_iteration``."""
    def build():
        ssp = instance(size).ssp
        return (lambda: fast.value_iteration(ssp)), (lambda: reference.value_iteration(ssp))
    return build


def _solve_call(backend, ssp, eps):
    return lambda: backend.solve(backend.TabularGenerativeModel(ssp), ssp.costs, eps, 0.1, seed=0)


def solve_garnet(n_states):
    """``fast.solve`` against ``reference.solve`` on ``garnet(S, 4, 5, c_min=0.2)``, eps = 1."""
    def build():
        ssp = reference.garnet(n_states, 4, 5, c_min=0.2, seed=0)
        return _solve_call(fast, ssp, SOLVE_EPS), _solve_call(reference, ssp, SOLVE_EPS)
    return build


def solve_gridworld():
    """The default ``sspgm solve`` (``gridworld()``, eps = 0.1): fast against reference."""
    ssp = reference.gridworld()
    return _solve_call(fast, ssp, 0.1), _solve_call(reference, ssp, 0.1)


def solve_certified_gridworld():
    """``fast.solve_certified`` on ``gridworld()`` at eps = 0.5 against the reference's."""
    ssp = reference.gridworld()

    def call(backend):
        return lambda: backend.solve_certified(ssp, ssp.costs, 0.5, 0.1, seed=0)

    return call(fast), call(reference)


def solve_certified_garnet(n_states):
    """``fast.solve_certified`` on the dense ``garnet(n_states, 4, 5)`` at relative eps = 0.5
    against the reference's (``certified_round.py``'s first speed target at 200 states)."""
    def build():
        ssp = reference.garnet(n_states, 4, 5, seed=0)

        def call(backend):
            return lambda: backend.solve_certified(ssp, ssp.costs, 0.5, 0.1, relative=True,
                                                   seed=0)

        return call(fast), call(reference)
    return build


ROWS = (
    Row("evi-sweep dense-500", "P @ v", evi_sweep("dense-500"), quick=True),
    Row("vi-sweep dense-500", "P @ v", vi_sweep("dense-500"), quick=True),
    Row("robust-sweep sparse-10000", "CSR matvec", robust_sweep("sparse-10000"), quick=True),
    Row("evi-full few-500", "counts.sum()", evi_full("few-500"), quick=True),
    Row("evi-full sparse-10000", "sweeps + counts.sum()", evi_full("sparse-10000"), quick=True),
    Row("solve gridworld", "reference", solve_gridworld, quick=True),
    Row("solve dense-100", "reference", solve_garnet(100), quick=True),
    Row("evi-sweep dense-100", "P @ v", evi_sweep("dense-100")),
    Row("evi-sweep dense-2000", "P @ v", evi_sweep("dense-2000")),
    Row("evi-sweep sparse-10000", "CSR matvec", evi_sweep("sparse-10000")),
    Row("evi-sweep sparse-100000", "CSR matvec", evi_sweep("sparse-100000")),
    Row("evi-sweep reference dense-500", "reference", evi_sweep_reference("dense-500")),
    Row("vi-sweep dense-2000", "P @ v", vi_sweep("dense-2000")),
    Row("vi-sweep sparse-10000", "CSR matvec", vi_sweep("sparse-10000")),
    Row("robust-sweep dense-500", "P @ v", robust_sweep("dense-500")),
    Row("evi-full few-2000", "counts.sum()", evi_full("few-2000")),
    Row("evi-boxes sparse-100000", "one sweep", evi_boxes("sparse-100000")),
    Row("vi-full densestored-2000", "reference", vi_full("densestored-2000")),
    Row("vi-full sparse-10000", "reference", vi_full("sparse-10000")),
    Row("solve-certified gridworld", "reference", solve_certified_gridworld),
    Row("solve-certified garnet-200 relative", "reference", solve_certified_garnet(200),
        min_rounds=3),
)
QUICK = tuple(row for row in ROWS if row.quick)


def _calls_case(make_ssp, eps):
    def run():
        ssp = make_ssp()
        certified = fast.solve_certified(ssp, ssp.costs, eps, 0.1, seed=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fast.NotCertifiedWarning)
            alg1 = fast.solve(ssp, ssp.costs, eps, 0.1, seed=0)
        return int(certified.n_calls), int(alg1.n_calls)
    return run


CALL_CASES = {
    "gridworld eps=0.1": _calls_case(reference.gridworld, 0.1),
    "gridworld eps=0.5": _calls_case(reference.gridworld, 0.5),
    "chain-4 eps=0.5": _calls_case(lambda: reference.chain(4, 0.7), 0.5),
    "tradeoff eps=0.2": _calls_case(reference.tradeoff, 0.2),
    "trap eps=0.5": _calls_case(lambda: reference.trap(r=0.3), 0.5),
    "garnet-100 eps=1": _calls_case(lambda: reference.garnet(100, 4, 5, c_min=0.2, seed=0), 1.0),
}
"""Instances whose calls are tracked exactly: ``name -> run()`` returning
``(solve_certified calls, Alg. 1 calls)``, both from seed 0 with ``delta = 0.1``
(Alg. 1 with its default ``alpha = 1``, certified or not)."""
