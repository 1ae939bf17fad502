"""``Counts``: the one door for user counts, and every public function behind it.

Every public function of both backends that takes counts (found from ``__all__``
by its signature) runs on malformed tables in a fresh interpreter, so that a
crash of compiled code (an abort, a segfault) fails the test instead of the
run: each must raise a ``ValueError`` subclass naming ``counts``.
"""

import inspect
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import reference
from reference import Counts
from reference.errors import ParameterError, ShapeError, SparseFormatError

COUNTS_FUNCTIONS = [
    name for name in reference.__all__
    if inspect.isfunction(getattr(reference, name))
    and "counts" in inspect.signature(getattr(reference, name)).parameters
]
"""The public functions taking counts, by signature."""

MALFORMED = {
    "column out of range": "csr_with(indices=[0, 7, 1, 2])",
    "column far out of range": "csr_with(indices=[0, 10**6, 1, 2])",
    "negative column": "csr_with(indices=[0, -1, 1, 2])",
    "indptr decreasing": "csr_with(indptr=[0, 2, 1, 4])",
    "indptr too short": "csr_with(indptr=[0, 4])",
    "indptr past the entries": "csr_with(indptr=[0, 2, 3, 9])",
    "unsorted csr": "csr_with(indices=[1, 0, 1, 2])",
    "duplicate csr": "csr_with(indices=[0, 0, 1, 2])",
    "negative count": "csr_with(data=[1.0, -2.0, 3.0, 1.0])",
    "fractional csr": "csr_with(data=[1.0, 2.5, 3.0, 1.0])",
    "fractional dense": "np.where(np.eye(3)[:2].reshape(2, 1, 3) > 0, 0.5, 1.0)",
    "subnormal dense": "np.full((2, 1, 3), 5e-324)",
    "complex csr": "sp.csr_array(np.ones((2, 3)) * (1 + 1j))",
    "complex dense": "np.ones((2, 1, 3)) * (1 + 1j)",
    "object dense": "np.ones((2, 1, 3)).astype(object)",
    "nan dense": "np.where(np.eye(3)[:2].reshape(2, 1, 3) > 0, np.nan, 1.0)",
    "totals past int64": "np.full((2, 1, 3), 2.0**62)",
    "wrong shape": "np.ones((2, 1, 2))",
}
"""Malformed count tables for ``S = 2, A = 1`` (``csr_with`` builds a CSR ``(2, 3)`` table and
then overwrites its arrays, past scipy's constructor)."""

SCRIPT = textwrap.dedent("""
    import inspect
    import sys
    import warnings

    import numpy as np
    import scipy.sparse as sp

    backend = __import__(sys.argv[1])
    warnings.simplefilter("ignore")


    def csr_with(**arrays):
        table = sp.csr_array(np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 1.0]]))
        for name, value in arrays.items():
            setattr(table, name, np.asarray(value, dtype=float if name == "data" else np.int32))
        return table


    ARGS = {"costs": np.full((2, 1), 0.5), "policy": np.zeros(2, dtype=int), "delta": 0.1,
            "mu": 0.01}
    defects, names = sys.argv[2].split(";"), sys.argv[3:]
    for defect in defects:
        for name in names:
            function = getattr(backend, name)
            params = list(inspect.signature(function).parameters.values())
            kwargs = {p.name: ARGS[p.name] for p in params[1:] if p.default is p.empty}
            try:
                function(eval(defect), **kwargs)
            except ValueError as exc:
                verdict = f"raised {type(exc).__name__}: {exc}"
            else:
                verdict = "accepted"
            print(f"{defect}|{name}|{verdict}", flush=True)
""")


@pytest.mark.parametrize("backend", ["reference", "fast"])
def test_every_counts_function_refuses_a_malformed_table_without_crashing(backend):
    # One interpreter per backend: a crash ends it, and the last line printed tells where.
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, backend, ";".join(MALFORMED.values()), *COUNTS_FUNCTIONS],
        capture_output=True, text=True, timeout=600,
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, (proc.returncode, lines[-1:], proc.stderr[-2000:])
    expected = [(table, name) for table in MALFORMED.values() for name in COUNTS_FUNCTIONS]
    assert [tuple(line.split("|")[:2]) for line in lines] == expected
    for line in lines:
        verdict = line.split("|")[2]
        assert verdict.startswith("raised") and "`counts" in verdict, line
    for case, fix in (("unsorted csr", "`sort_indices()`"), ("duplicate csr", "`sum_duplicates()`")):
        for line in lines:
            if line.startswith(MALFORMED[case] + "|"):
                assert "SparseFormatError" in line and "row 0, the pair" in line and fix in line


def test_the_counts_functions_are_found():
    assert {"extended_value_iteration", "bernstein_radius", "bernstein_radius_sum",
            "confidence_boxes", "certify", "robust_policy_values",
            "robust_optimal_values", "optimistic_values"} <= set(COUNTS_FUNCTIONS)


def test_counts_carry_their_shape_storage_and_totals():
    dense = np.zeros((2, 3, 3))
    dense[1, 2] = [4.0, 0.0, 1.0]
    for given, storage in ((dense, "dense"), (sp.csr_array(dense.reshape(6, 3)), "csr")):
        counts = Counts(given)
        assert (counts.n_states, counts.n_actions, counts.storage) == (2, 3, storage)
        expected = np.zeros((2, 3))
        expected[1, 2] = 5.0
        np.testing.assert_array_equal(counts.n_pair, expected)
        np.testing.assert_array_equal(counts.csr().toarray(), dense.reshape(6, 3))


def _csr(data, indices, indptr, shape=(2, 3)):
    """A CSR matrix of exactly these arrays (scipy's constructor keeps them as given)."""
    table = sp.csr_array((np.array(data), np.array(indices), np.array(indptr)), shape=shape)
    table.has_sorted_indices = False
    return table


def test_csr_counts_unsorted_or_repeated_within_a_row_are_refused_with_the_fix():
    unsorted = _csr([2.0, 1.0, 0.0, 3.0], [2, 0, 1, 2], [0, 3, 4])
    with pytest.raises(SparseFormatError, match=r"row 0, the pair \(s, a\) = \(0, 0\), stores "
                       r"column 0 after column 2\. Call the matrix's `sort_indices\(\)`"):
        Counts(unsorted)
    repeated = _csr([1.0, 1.0, 2.0, 3.0], [0, 1, 1, 2], [0, 1, 4, 4, 4], shape=(4, 3))
    with pytest.raises(SparseFormatError, match=r"row 1, the pair \(s, a\) = \(0, 1\), stores "
                       r"column 1 twice\. Call the matrix's `sum_duplicates\(\)`"):
        Counts(repeated)
    # The advice works, and gives the counts the stored entries mean (repeats summed).
    meant = np.zeros((4, 3))
    meant[0, 0], meant[1, 1], meant[1, 2] = 1.0, 3.0, 3.0
    for table, fix in ((unsorted, "sort_indices"), (repeated, "sum_duplicates")):
        dense = np.zeros(table.shape)
        np.add.at(dense, (np.repeat(np.arange(table.shape[0]), np.diff(table.indptr)),
                          table.indices), table.data)
        getattr(table, fix)()
        counts = Counts(table)
        assert counts.table.has_canonical_format
        np.testing.assert_array_equal(counts.table.toarray(), dense)
    np.testing.assert_array_equal(dense, meant)


def test_other_sparse_formats_are_converted_with_repeats_summed():
    # COO stores repeats by design (scipy sums them on conversion); explicit zeros are dropped.
    coo = sp.coo_array((np.array([2.0, 1.0, 0.0, 3.0]), (np.array([0, 0, 1, 0]),
                                                         np.array([2, 2, 1, 0]))), shape=(2, 3))
    counts = Counts(coo)
    assert counts.table.has_canonical_format
    np.testing.assert_array_equal(counts.table.indices, [0, 2])
    np.testing.assert_array_equal(counts.table.toarray(), [[3.0, 0.0, 3.0], [0.0, 0.0, 0.0]])


def test_counts_are_immutable_and_pass_through_unchecked():
    counts = Counts(np.ones((1, 2, 2)))
    with pytest.raises(AttributeError, match="immutable"):
        counts.n_states = 3
    again = Counts(counts)
    assert again.table is counts.table and again.n_actions == 2


def test_every_counts_function_accepts_counts_with_the_same_result(backend):
    rng = np.random.default_rng(3)
    raw = rng.integers(0, 5, size=(3, 2, 4)).astype(float)
    raw[..., 0] += 1.0
    costs = np.full((3, 2), 0.5)
    policy = np.zeros(3, dtype=int)
    for table in (raw, sp.csr_array(raw.reshape(6, 4))):
        wrapped = Counts(table)
        for call in (lambda c: backend.bernstein_radius(c, 0.1),
                     lambda c: backend.bernstein_radius_sum(c, 0.1),
                     lambda c: backend.extended_value_iteration(c, costs, 0.1, 0.01).v_tilde,
                     lambda c: backend.confidence_boxes(c, 0.1).hi,
                     lambda c: backend.certify(c, costs, policy, 0.1).upper,
                     lambda c: backend.robust_policy_values(c, costs, policy, 0.1).values,
                     lambda c: backend.optimistic_values(c, costs, 0.1).values):
            np.testing.assert_array_equal(call(wrapped), call(table))


def test_the_sample_store_hands_out_its_counts_unchecked():
    ssp = reference.chain(3, 0.8)
    store = reference.SampleStore(ssp.n_states, ssp.n_actions)
    store.top_up(reference.TabularGenerativeModel(ssp), 5, np.random.default_rng(0))
    counts = store.counts()
    assert isinstance(counts, Counts) and counts.storage == "csr"
    checked = Counts(store.counts_csr())
    assert (counts.table != checked.table).nnz == 0
    np.testing.assert_array_equal(counts.n_pair, store.n_pair)


@pytest.mark.parametrize("storage", ["dense", "csr"])
@pytest.mark.parametrize("value", [0.5, 2.5, 1e-300, 2.0**51 + 0.5])
def test_fractional_counts_are_refused_by_entry_and_value(backend, storage, value):
    # A count is a number of samples: the first fractional one is named, on both backends,
    # by every way into counts (the constructor, EVI's own pass over dense counts).
    dense = np.ones((3, 2, 4))
    dense[2, 1, 3] = 7.0
    dense[1, 0, 2] = value
    dense[2, 1, 0] = value + 1.0
    table = dense if storage == "dense" else sp.csr_array(dense.reshape(6, 4))
    message = rf"`counts` must hold integers .*got {value!r} at \(s, a, s'\) = \(1, 0, 2\)"
    costs = np.full((3, 2), 0.5)
    for call in (Counts, lambda c: backend.extended_value_iteration(c, costs, 0.1, 0.01),
                 lambda c: backend.bernstein_radius_sum(c, 0.1),
                 lambda c: backend.confidence_boxes(c, 0.1)):
        with pytest.raises(ParameterError, match=message):
            call(table)


def test_integer_counts_of_any_dtype_are_accepted(backend):
    raw = np.arange(24).reshape(3, 2, 4) % 5
    costs = np.full((3, 2), 0.5)
    expected = backend.extended_value_iteration(raw.astype(np.float64), costs, 0.1, 0.01)
    for table in (raw, raw.astype(np.int32), raw.astype(np.uint8), raw.astype(np.float32),
                  sp.csr_array(raw.reshape(6, 4)), sp.csr_array(raw.reshape(6, 4) * 1.0)):
        got = backend.extended_value_iteration(table, costs, 0.1, 0.01)
        np.testing.assert_array_equal(got.v_tilde, expected.v_tilde)


@pytest.mark.parametrize("error, table", [
    (SparseFormatError, "csr_with(indices=[0, 7, 1, 2])"),
    (ParameterError, "np.ones((1, 1, 2)) * (1 + 1j)"),
    (ShapeError, "np.ones((2, 2))"),
])
def test_counts_name_the_defect(error, table):
    def csr_with(**arrays):
        out = sp.csr_array(np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 1.0]]))
        for name, value in arrays.items():
            setattr(out, name, np.asarray(value, dtype=np.int32))
        return out

    with pytest.raises(error, match="`counts"):
        Counts(eval(table, {"np": np, "csr_with": csr_with}))
