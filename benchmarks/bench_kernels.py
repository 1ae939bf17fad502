"""Kernel benchmarks: EVI boxes, sweep and full call, VI sweep and full call, robust sweep.

Each group holds one operation at one size, so ``reference``, ``fast`` and
a yardstick sit side by side:

- ``yardstick`` of a sweep: the memory-bound floor, numpy ``P @ v`` on the
  dense ``(S*A, S+1)`` array, or a scipy CSR matvec over the same nonzeros;
- ``yardstick`` of a full EVI call on ``few-*`` dense counts: numpy reading
  the counts once (``counts.sum()``);
- ``yardstick`` of a full EVI call on CSR counts: the sweeps that call
  performs (on boxes built beforehand) plus one pass over the counts
  (``counts.sum()``);
- ``sweep`` in an ``evi-boxes`` group: one EVI sweep on the boxes built.

The sweeps and boxes run through the kernel sets of the two backends
(``docs/backends.md``). Instances are described in ``conftest.py``. The
reference EVI densifies CSR counts and refuses above 256 MiB, so its sparse
cells are skipped.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import fast
import reference
from fast.kernels import COMPILED_KERNELS
from reference.kernels import NUMPY_KERNELS

from conftest import DELTA, FEW_SIZES, LARGE, SIZES, instance, rounds_spanning

EVI_MU = 1e-3
SLOW_ROUNDS = 3
VI_FULL_ROUNDS = 15
"""Fewest rounds of a full value iteration row (0.03-1 s a call); the short rows run as many
as span :data:`conftest.SPAN_SECONDS`."""


def _skip_reference_evi(inst):
    if inst.sparse:
        S = inst.n_states
        gib = 8 * S * 4 * (S + 1) / 2**30
        pytest.skip(f"reference EVI densifies CSR counts: {gib:.0f} GiB at S = {S}, above its "
                    "256 MiB limit (fast only)")


def _run(benchmark, function, *args, slow=False):
    """Benchmark ``function(*args)``; a few fixed rounds for calls taking seconds."""
    if slow:
        return benchmark.pedantic(function, args=args, rounds=SLOW_ROUNDS, iterations=1)
    return benchmark(function, *args)


def _yardstick(inst):
    """The matrix of the memory-bound yardstick: dense ``(S*A, S+1)`` or CSR counts."""
    if inst.sparse:
        return inst.counts
    S = inst.n_states
    return np.asarray(inst.counts, dtype=np.float64).reshape(S * 4, S + 1)


KERNELS = {"reference": NUMPY_KERNELS, "fast": COMPILED_KERNELS}


def _counts(inst):
    """The instance's counts as the kernels take them: dense float64 or float64 CSR."""
    if inst.sparse:
        return sp.csr_array(inst.counts, dtype=np.float64)
    return np.ascontiguousarray(inst.counts, dtype=np.float64)


def _boxes(kernels, inst):
    """A kernel set's boxes of the instance's counts (dense ones through ``scan_counts``)."""
    counts = _counts(inst)
    return kernels.boxes(counts if inst.sparse else kernels.scan_counts(counts), DELTA)


def _evi_sweep(kernels, boxes, costs, v_ext, v_out, policy_out):
    """One EVI sweep of a kernel set (the fast one includes its partial sort of ``v``)."""
    kernels.evi_sweep(boxes, costs, v_ext, v_out, policy_out)
    return v_out


def _counts_bytes(counts):
    """Bytes of CSR counts: values, column indices and row pointers."""
    return counts.data.nbytes + counts.indices.nbytes + counts.indptr.nbytes


def _vi_sweep(kernels, model, costs, v_ext, v_out, policy_out):
    """One VI sweep of a kernel set."""
    kernels.vi_sweep(model, costs, v_ext, v_out, policy_out)
    return v_out


@pytest.mark.parametrize("size", SIZES + [LARGE])
@pytest.mark.parametrize("impl", ["reference", "fast", "yardstick"])
def test_evi_sweep(benchmark, impl, size):
    inst = instance(size)
    benchmark.group = f"evi-sweep {size}"
    v_ext = np.append(inst.values, 0.0)
    if impl == "yardstick":
        result = _run(benchmark, _yardstick(inst).__matmul__, v_ext)
    else:
        if impl == "reference":
            _skip_reference_evi(inst)
        kernels, S = KERNELS[impl], inst.n_states
        out, policy = np.empty(S), np.empty(S, dtype=np.intp)
        boxes = _boxes(kernels, inst)
        if impl == "fast" and inst.sparse:
            benchmark.extra_info["memory_ratio"] = boxes.nbytes / _counts_bytes(inst.counts)
        result = _run(benchmark, _evi_sweep, kernels, boxes, inst.costs, v_ext, out, policy,
                      slow=impl == "reference" and S >= 2000)
    assert np.all(np.isfinite(result))


@pytest.mark.parametrize("size", ["sparse-100000", LARGE])
@pytest.mark.parametrize("impl", ["fast", "sweep"])
def test_evi_boxes(benchmark, impl, size):
    """Box construction from CSR counts against one sweep on the boxes."""
    inst = instance(size)
    benchmark.group = f"evi-boxes {size}"
    counts = _counts(inst)
    if impl == "fast":
        boxes = _run(benchmark, COMPILED_KERNELS.boxes, counts, DELTA, slow=size == LARGE)
    else:
        boxes = COMPILED_KERNELS.boxes(counts, DELTA)
        S = inst.n_states
        out, policy = np.empty(S), np.empty(S, dtype=np.intp)
        _run(benchmark, _evi_sweep, COMPILED_KERNELS, boxes, inst.costs,
             np.append(inst.values, 0.0), out, policy, slow=size == LARGE)
    assert not np.any(boxes.upper_mass < 1.0)


def _sweeps_and_one_pass(boxes, costs, counts, n_sweeps):
    """The yardstick of a full EVI call on CSR counts: one pass over the counts, then
    the sweeps of the call (from ``v = 0``) on boxes built beforehand."""
    counts.sum()
    S = costs.shape[0]
    v_ext, out, policy = np.zeros(S + 1), np.empty(S), np.empty(S, dtype=np.intp)
    for _ in range(n_sweeps):
        COMPILED_KERNELS.evi_sweep(boxes, costs, v_ext, out, policy)
        v_ext[:S] = out


@pytest.mark.parametrize("size", SIZES + FEW_SIZES)
@pytest.mark.parametrize("backend_name", ["reference", "fast", "yardstick"])
def test_evi_full(benchmark, backend_name, size):
    inst = instance(size)
    benchmark.group = f"evi-full {size}"
    slow = backend_name == "reference" or (inst.n_states >= 2000 and size != "few-2000")
    if backend_name == "yardstick":
        if size.startswith("dense"):
            pytest.skip("no yardstick: the sweeps dominate a full call on these counts")
        if not inst.sparse:
            _run(benchmark, inst.counts.sum)
            return
        n_sweeps = fast.extended_value_iteration(inst.counts, inst.costs, DELTA, EVI_MU).n_iter
        benchmark.extra_info["n_iter"] = n_sweeps
        _run(benchmark, _sweeps_and_one_pass, _boxes(COMPILED_KERNELS, inst),
             inst.costs, inst.counts, n_sweeps, slow=slow)
        return
    if backend_name == "reference":
        _skip_reference_evi(inst)
        if size == "dense-2000":
            pytest.skip("reference full EVI at S = 2000: about 500 sweeps of 1.4 s each, "
                        "12 minutes per call (its sweep is timed in evi-sweep dense-2000)")
    backend = fast if backend_name == "fast" else reference
    out = _run(benchmark, backend.extended_value_iteration, inst.counts, inst.costs, DELTA,
               EVI_MU, slow=slow)
    benchmark.extra_info["n_iter"] = out.n_iter
    assert out.converged


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("impl", ["reference", "fast", "yardstick"])
def test_vi_sweep(benchmark, impl, size):
    inst = instance(size)
    benchmark.group = f"vi-sweep {size}"
    if impl == "yardstick":
        if inst.sparse:
            matrix = inst.ssp.kernel_csr()
        else:
            matrix = inst.ssp.kernel_dense().reshape(-1, inst.n_states + 1)
        result = _run(benchmark, matrix.__matmul__, np.append(inst.values, 0.0))
    else:
        kernels, S = KERNELS[impl], inst.n_states
        out, policy = np.empty(S), np.empty(S, dtype=np.intp)
        result = _run(benchmark, _vi_sweep, kernels, kernels.vi_model(inst.ssp), inst.costs,
                      np.append(inst.values, 0.0), out, policy)
    assert np.all(np.isfinite(result))


@pytest.mark.parametrize("size", ["densestored-2000", "sparse-10000"])
@pytest.mark.parametrize("backend_name", ["reference", "fast"])
def test_vi_full(benchmark, backend_name, size):
    """Value iteration to convergence on a sparse kernel, stored dense or CSR."""
    inst = instance(size)
    benchmark.group = f"vi-full {size}"
    backend = fast if backend_name == "fast" else reference
    rounds = rounds_spanning(lambda: backend.value_iteration(inst.ssp), VI_FULL_ROUNDS)
    out = benchmark.pedantic(backend.value_iteration, args=(inst.ssp,), rounds=rounds,
                             iterations=1)
    assert out.converged


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("impl", ["reference", "fast", "yardstick"])
def test_robust_sweep(benchmark, impl, size):
    """The robust sweep of the certificates: the adversary's pour of every pair (KL boxes)."""
    inst = instance(size)
    benchmark.group = f"robust-sweep {size}"
    S = inst.n_states
    v_ext = np.append(inst.values, 0.0)
    if impl == "yardstick":
        result = _run(benchmark, _yardstick(inst).__matmul__, v_ext)
    else:
        if impl == "reference" and S >= 100_000:
            pytest.skip("reference robust sweep at S = 100000: it expands the unseen next "
                        "states each pour reaches, about 4e7 entries (fast only)")
        boxes = reference.confidence_boxes(_counts(inst), DELTA, kind="kl")
        rows = np.arange(S * 4)
        result = _run(benchmark, KERNELS[impl].pour_values, boxes, rows, v_ext, True,
                      slow=impl == "reference" and S >= 2000)
    assert np.all(np.isfinite(result))


@pytest.fixture
def threads(request):
    """Set the fast backend's thread count for one benchmark, restoring the default after."""
    fast.set_num_threads(request.param)
    yield request.param
    fast.set_num_threads(None)


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
@pytest.mark.parametrize(("sweep", "size"), [("evi", "dense-2000"), ("evi", "sparse-100000"),
                                             ("vi", "dense-2000")])
def test_threads(benchmark, sweep, size, threads):
    """Thread scaling of the fast sweeps large enough to be split (not in the tracked run)."""
    inst = instance(size)
    benchmark.group = f"threads {sweep}-sweep {size}"
    S = inst.n_states
    out, policy = np.empty(S), np.empty(S, dtype=np.intp)
    v_ext = np.append(inst.values, 0.0)
    if sweep == "evi":
        boxes = _boxes(COMPILED_KERNELS, inst)
        result = benchmark(_evi_sweep, COMPILED_KERNELS, boxes, inst.costs, v_ext, out, policy)
    else:
        model = COMPILED_KERNELS.vi_model(inst.ssp)
        result = benchmark(_vi_sweep, COMPILED_KERNELS, model, inst.costs, v_ext, out, policy)
    assert np.all(np.isfinite(result))
