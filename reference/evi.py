"""Bernstein confidence sets (Lemma 5) and extended value iteration for SSP (App. B).

Every choice follows docs/semantics.md, "Confidence sets and EVI":
natural logarithms, ``S`` the number of non-goal states in the
logarithm, a radius for every next state including the goal, the exact greedy
inner problem with goal-first stable ties, and the stopping rule returning
``v_j`` with the policy greedy with respect to ``v_j``.
"""

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import confidence, lemma5
from ._checks import (
    as_float_array,
    check_counts_log_term,
    check_dense_values,
    check_int,
    check_real,
    dense_count_array,
)
from .confidence import SIMPLEX_SLACK
from .counts import Counts
from .errors import NotFiniteError, NumericRangeError, ParameterError, ShapeError
from .kernels import (
    EVI_DENSE_LIMIT_BYTES,
    NUMPY_KERNELS,
    box_ends,
    densify,
    goal_first_order,
    pour,
)
from .poured import PouredKernel
from .results import Result

__all__ = [
    "EVIResult",
    "EVI_MAX_ITER",
    "EVI_DENSE_LIMIT_BYTES",
    "bernstein_radius",
    "bernstein_radius_sum",
    "confidence_box",
    "optimistic_inner",
    "extended_value_iteration",
]

EVI_MAX_ITER = 100_000
"""Default sweep limit of :func:`extended_value_iteration`.

Each sweep contracts towards the goal by at least the smallest optimistic
goal probability; ``1e5`` sweeps cover the value ranges and accuracies the
algorithms ask for on instances the reference backend is meant for, within
seconds per call.
"""



@dataclass(frozen=True, repr=False)
class EVIResult(Result):
    """Output of :func:`extended_value_iteration`.

    Attributes
    ----------
    v_tilde : ndarray of float64, shape (S,)
        The optimistic values ``v_tilde = v_j``, the last iterate before the
        stopping rule held.
    policy : ndarray of int64, shape (S,)
        Greedy policy with respect to ``v_j`` (the argmin building
        ``v_{j+1}``; ties to the lowest action).
    p_tilde : PouredKernel, shape (S, S+1)
        Optimistic kernel ``p_tilde(.|s, policy(s))`` minimising the inner
        problem at ``v_j`` (:func:`optimistic_inner`), whatever the storage
        of the counts: per row its seen next states' probabilities and how
        far the pour went along the shared order of ``v_j``, so its memory is
        ``O(S + stored entries)`` however many samples the boxes rest on.
        ``p_tilde @ x``, ``p_tilde.toarray()`` and ``p_tilde.tocsr()`` read it
        (:class:`~reference.poured.PouredKernel`).
    n_iter : int
        Sweeps performed, ``j + 1`` (the last one computed ``v_{j+1}``).
    residual : float
        ``max_s |v_{j+1}(s) - v_j(s)|``.
    converged : bool
        Whether the stopping rule held within ``max_iter`` sweeps.
    message : str
        How the iteration ended.
    params : Params
        ``delta``, ``mu`` and ``max_iter`` (:class:`~reference.results.Result`).
    """

    v_tilde: np.ndarray
    policy: np.ndarray
    p_tilde: PouredKernel
    n_iter: int
    residual: float
    converged: bool
    message: str


def dense_counts(counts):
    """Checked counts as dense float64 ``(S, A, S+1)`` (CSR densified, see :func:`densify`)."""
    table = Counts(counts).table
    return densify(table) if sp.issparse(table) else table


def read_counts(kernels, counts):
    """Counts checked as :class:`~reference.counts.Counts` does, each entry read once.

    Dense counts not yet checked are read by the kernel set's ``scan_counts``,
    whose largest entry decides :func:`~reference._checks.check_dense_values`
    (the check of :class:`~reference.counts.Counts`; the counts are read again
    only to name a bad entry) and whose result the kernel set's ``boxes``
    builds the boxes from.

    Parameters
    ----------
    kernels : KernelSet
    counts : Counts, array_like of shape (S, A, S+1) or scipy.sparse matrix of shape (S*A, S+1)

    Returns
    -------
    counts : Counts
        The checked counts.
    scanned : object
        What ``kernels.boxes`` takes: the ``scan_counts`` of dense counts, or
        the table itself when it is CSR.

    Raises
    ------
    ShapeError, NotFiniteError, ParameterError, NumericRangeError, SparseFormatError
        As :class:`~reference.counts.Counts`.
    """
    if isinstance(counts, Counts) or sp.issparse(counts):
        counts = Counts(counts)
        table = counts.table
        return counts, (table if counts.storage == "csr" else kernels.scan_counts(table))
    table = dense_count_array(counts)
    scanned = kernels.scan_counts(table)
    check_dense_values(table, scanned.largest)
    return Counts.trusted(table, scanned.largest), scanned


def check_delta(delta):
    """``delta`` as a float in ``(0, 1)`` (:class:`ParameterError` otherwise)."""
    return check_real("delta", delta, 0.0, 1.0, low_open=True, high_open=True)


@NUMPY_KERNELS.bind
def bernstein_radius(kernels, counts, delta):
    r"""Radii ``beta(s, a, s')`` of the empirical Bernstein confidence set (Lemma 5).

    Parameters
    ----------
    counts : Counts, ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts ``N(s, a, s')``.
    delta : float in (0, 1)
        Confidence level.

    Returns
    -------
    ndarray of float64, shape (S, A, S+1)
        The radius of every next state, the goal included:

        .. math::

            N^+ = \max(1, N(s,a)),\quad \hat p = N(s,a,s') / N^+,\quad
            L = \log\frac{S A N^+}{\delta},\quad
            \beta = 4 \sqrt{\frac{\hat p L}{N^+}} + \frac{28 L}{N^+}.

    Raises
    ------
    ShapeError, NotFiniteError
        On counts of another shape, or NaN/infinite counts.
    ParameterError
        On negative counts (the first one is named) or ``delta`` outside
        ``(0, 1)``.
    TooLargeError
        If CSR counts would densify above :data:`EVI_DENSE_LIMIT_BYTES`.
    SparseFormatError
        On CSR counts with a malformed structure (indices out of range,
        ``indptr`` not starting at 0 or decreasing); duplicate entries are
        summed.
    NumericRangeError
        If ``S A N^+ / delta`` overflows float64 (a tiny ``delta`` or huge
        counts: the radius would be NaN), or a pair holds more than
        ``2^63 - 1`` samples.

    See Also
    --------
    bernstein_radius_sum : the sum over next states, without densifying.
    confidence_box : the boxes these radii make.

    Notes
    -----
    docs/semantics.md fixes what Lemma 5 leaves open: the logarithm is natural,
    ``S`` is the number of non-goal states, and the goal gets a radius like
    every other next state.

    Examples
    --------
    One pair, 3 samples staying and 1 reaching the goal, ``delta = 0.1``: ``L = log 40`` and
    the goal's radius is ``4 sqrt(L / 16) + 7 L = 27.74`` (no information yet); with a
    million samples it is below 0.01.

    >>> import numpy as np
    >>> bernstein_radius(np.array([[[3, 1]]]), 0.1).round(2)
    array([[[29.15, 27.74]]])
    >>> bernstein_radius(np.array([[[750_000, 250_000]]]), 0.1).round(4)
    array([[[0.0144, 0.0085]]])
    """
    counts = dense_counts(counts)
    delta = check_delta(delta)
    check_counts_log_term(counts, delta)
    return kernels.radius(counts, delta)


def bernstein_radius_sum(counts, delta):
    r"""Per-pair total radius ``sum_{s'} beta(s, a, s')`` (Lemma 5), without densifying.

    This is the quantity Alg. 4 drives below ``eta / 2`` (docs/semantics.md).

    Parameters
    ----------
    counts : Counts, ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts.
    delta : float in (0, 1)
        Confidence level.

    Returns
    -------
    ndarray of float64, shape (S, A)
        .. math::

            \sum_{s' \in S'} \beta(s,a,s') = 4 \sqrt{\frac{L}{N^+}}
            \sum_{s'} \sqrt{\hat p(s')} + \frac{28 (S+1) L}{N^+}.

    Raises
    ------
    ShapeError, NotFiniteError, ParameterError, SparseFormatError, NumericRangeError
        As :func:`bernstein_radius`; CSR counts are checked without densifying.

    Examples
    --------
    >>> import numpy as np
    >>> counts = np.array([[[750_000, 250_000]]])
    >>> bernstein_radius_sum(counts, 0.1).round(4)
    array([[0.0228]])
    >>> total = bernstein_radius(counts, 0.1).sum(axis=-1)
    >>> bool(np.allclose(bernstein_radius_sum(counts, 0.1), total))
    True
    """
    delta = check_delta(delta)
    counts = Counts(counts)
    check_counts_log_term(counts.table, delta)
    return _bernstein_radius_sum(counts, delta)


def _bernstein_radius_sum(counts, delta):
    """:func:`bernstein_radius_sum` of checked :class:`~reference.counts.Counts` and ``delta``
    (its log term finite for them: :func:`check_counts_log_term`), which it trusts."""
    S, A, csr = counts.n_states, counts.n_actions, counts.csr()
    n_plus = np.maximum(1.0, np.asarray(csr.sum(axis=1)).ravel())
    log_l = lemma5.log_term(n_plus, S, A, delta)
    stored = np.diff(csr.indptr)
    rows = np.repeat(np.arange(S * A), stored)
    beta_stored = lemma5.radius(csr.data / n_plus[rows], log_l[rows], n_plus[rows])
    beta_unseen = lemma5.radius(0.0, log_l, n_plus)
    total = np.bincount(rows, weights=beta_stored, minlength=S * A)
    return (total + (S + 1 - stored) * beta_unseen).reshape(S, A)


def confidence_box(counts, delta, kind="paper"):
    r"""Lower and upper ends of the confidence box of every pair, as dense arrays (small models).

    The dense view of the boxes, for small models and tests; the one way to the
    boxes of any kind, stored sparse, is
    :func:`~reference.confidence.confidence_boxes`. Its default kind is the
    paper's (Lemma 5), computed here on dense arrays.

    Parameters
    ----------
    counts : Counts, ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts (:class:`~reference.counts.Counts`).
    delta : float in (0, 1)
        Confidence level.
    kind : {"paper", "bernstein", "kl", "mixture"}, default "paper"
        ``"paper"`` is Lemma 5's box ``[p_hat - beta, p_hat + beta] ∩ [0, 1]``;
        the time-uniform kinds are those of
        :func:`~reference.confidence.confidence_boxes` (which keeps them sparse).

    Returns
    -------
    lo, hi : ndarray of float64, shape (S, A, S+1)
        For ``"paper"``:

        .. math::

            lo = \max(0, \hat p - \beta), \qquad hi = \min(1, \hat p + \beta).

    Raises
    ------
    ParameterError
        On an unknown ``kind``, or if some box misses the simplex
        (``sum hi < 1``), which happens only for the paper's box of a pair
        without samples and a ``delta`` so close to 1 that
        ``28 (S+1) log(S A / delta) < 1``.

    See Also
    --------
    reference.confidence.confidence_boxes : the boxes of any kind, stored sparse.
    bernstein_radius : the radii of the paper's box.

    Examples
    --------
    A million samples, 3/4 staying and 1/4 at the goal: ``p_hat`` plus or minus the radius.

    >>> import numpy as np
    >>> lo, hi = confidence_box(np.array([[[750_000, 250_000]]]), 0.1)
    >>> lo.round(4), hi.round(4)
    (array([[[0.7356, 0.2415]]]), array([[[0.7644, 0.2585]]]))
    """
    if kind != "paper":
        return confidence.confidence_boxes(counts, delta, kind).to_dense()
    counts = dense_counts(counts)
    delta = check_delta(delta)
    check_counts_log_term(counts, delta)
    lo, hi = box_ends(counts, delta)
    check_simplex(hi.sum(axis=2), counts, delta)
    return lo, hi


def check_simplex(upper_mass, counts, delta):
    """Raise unless every box reaches the simplex: ``upper_mass >= 1 - SIMPLEX_SLACK``.

    Parameters
    ----------
    upper_mass : ndarray of float64, shape (S, A)
        Sum of the upper ends of each pair's box.
    counts : ndarray (S, A, S+1) or CSR (S*A, S+1)
        The counts the boxes were built from (for the message).
    delta : float
        Their confidence level (for the message).

    Raises
    ------
    ParameterError
        Naming the first pair whose box misses the simplex.
    """
    short = upper_mass < 1.0 - SIMPLEX_SLACK
    if short.any():
        s, a = (int(i) for i in np.argwhere(short)[0])
        if sp.issparse(counts):
            samples = counts[[s * short.shape[1] + a]].sum()
        else:
            samples = counts[s, a].sum()
        raise ParameterError(
            f"the confidence set of the pair (s, a) = ({s}, {a}) misses the simplex "
            f"(it has {int(samples)} samples and `delta` = {delta!r}); sample "
            "every pair at least once or use a smaller `delta`."
        )


def optimistic_inner(lo, hi, v):
    r"""Exact minimiser of ``sum_s' p(s') v(s')`` over a box intersected with the simplex.

    The greedy solution of docs/semantics.md (App. B's inner problem): start at
    the lower ends, then pour the remaining mass into next states in ascending
    order of ``v``, the goal first and ties by lower index (a stable sort of
    ``(g, 0, 1, ..., S-1)``), each up to its upper end.

    Parameters
    ----------
    lo, hi : ndarray of float64, shape (..., S+1)
        Box ends, ``0 <= lo <= hi <= 1`` with ``sum lo <= 1 <= sum hi``; the
        leading dimensions index independent problems.
    v : ndarray of float64, shape (S+1,)
        Values of the next states, the goal last.

    Returns
    -------
    ndarray of float64, shape (..., S+1)
        The minimiser ``p``:

        .. math::

            p = \arg\min \Big\{ \sum_{s'} p(s') v(s') :
            lo \le p \le hi,\ \sum_{s'} p(s') = 1 \Big\}.

    Examples
    --------
    Next states 0 and 1 of values 1 and 3, and the goal (value 0, last). The mass above the
    lower ends, ``0.7``, goes to the goal first (up to 0.5), then to state 0 (0.2 more):

    >>> import numpy as np
    >>> lo, hi = np.array([0.1, 0.2, 0.0]), np.array([0.6, 0.7, 0.5])
    >>> optimistic_inner(lo, hi, np.array([1.0, 3.0, 0.0]))
    array([0.3, 0.2, 0.5])
    """
    lo, hi, v = checked_box(lo, hi, v)
    return pour(lo, hi - lo, 1.0 - lo.sum(axis=-1, keepdims=True), goal_first_order(v))


def checked_box(lo, hi, v):
    """``lo, hi, v`` as float64 arrays after the checks of :func:`_check_box` and their shapes."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if lo.shape != hi.shape or lo.ndim < 1 or v.shape != lo.shape[-1:]:
        raise ShapeError(
            "`lo` and `hi` must have the same shape (..., S+1) and `v` shape (S+1,); got "
            f"{lo.shape}, {hi.shape} and {v.shape}."
        )
    _check_box(lo, hi, v)
    return lo, hi, v


def _check_box(lo, hi, v):
    """Raise unless ``0 <= lo <= hi <= 1``, ``sum lo <= 1 <= sum hi`` and ``v`` is finite."""
    for name, arr in (("lo", lo), ("hi", hi), ("v", v)):
        if not np.all(np.isfinite(arr)):
            bad = float(arr[~np.isfinite(arr)][0])
            raise NotFiniteError(f"`{name}` must be finite; got {bad!r}.")
    bad = np.argwhere((lo < 0) | (lo > hi) | (hi > 1))
    if bad.size:
        i = tuple(int(k) for k in bad[0])
        raise ParameterError(
            f"the box must satisfy 0 <= `lo` <= `hi` <= 1; got lo = {float(lo[i])!r}, "
            f"hi = {float(hi[i])!r} at index {i}."
        )
    outside = (lo.sum(axis=-1) > 1 + SIMPLEX_SLACK) | (hi.sum(axis=-1) < 1 - SIMPLEX_SLACK)
    if np.any(outside):
        i = tuple(int(k) for k in np.argwhere(outside)[0]) if lo.ndim > 1 else ()
        raise ParameterError(
            f"the box must meet the simplex (sum `lo` <= 1 <= sum `hi`); got sums "
            f"{float(lo[i].sum())!r} and {float(hi[i].sum())!r} for the problem at index {i}."
        )


def _stop_message(j, residual, mu, max_iter):
    """EVI's message: the stopping rule met at ``j``, or the sweep limit reached."""
    if residual <= mu:
        return f"stopping rule met at j = {j}: max |v_(j+1) - v_j| = {residual:.3g} <= mu."
    return (
        f"no convergence within max_iter = {max_iter} sweeps: max |v_(j+1) - v_j| = "
        f"{residual:.3g} > mu = {mu:.3g}."
    )


@NUMPY_KERNELS.bind
def extended_value_iteration(kernels, counts, costs, delta, mu, max_iter=EVI_MAX_ITER):
    r"""Extended value iteration for SSP with Bernstein confidence sets (App. B).

    Parameters
    ----------
    counts : Counts, ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts ``N(s, a, s')`` (row ``s*A + a`` when CSR). The
        reference backend densifies CSR counts, refusing above
        :data:`EVI_DENSE_LIMIT_BYTES`.
    costs : array_like of shape (S, A)
        Cost function ``c``.
    delta : float in (0, 1)
        Confidence level of the sets (Lemma 5).
    mu : float > 0
        VI precision of the stopping rule.
    max_iter : int, default EVI_MAX_ITER
        Largest number of sweeps.

    Returns
    -------
    EVIResult
        ``v_tilde = v_j``, the greedy policy, its optimistic kernel and the
        diagnostics. ``converged`` is False (and ``message`` says so) when the
        rule did not hold within ``max_iter`` sweeps; the fields then describe
        the last iterate and must not be used as a solution.

    Raises
    ------
    ShapeError, NotFiniteError, TooLargeError
        On counts as in :func:`bernstein_radius`, or costs not of shape
        ``(S, A)`` or not finite.
    ParameterError
        On negative counts, ``delta`` outside ``(0, 1)``, ``mu`` not in
        ``(0, inf)``, ``max_iter < 1``, or a pair whose box misses the simplex
        (:func:`confidence_box`).
    SparseFormatError
        On CSR counts with a malformed structure, as in :func:`bernstein_radius`.
    NumericRangeError
        As in :func:`bernstein_radius`, or if the iterates stop being finite
        (never a NaN policy).

    See Also
    --------
    confidence_box : the sets it optimises over.
    solve : Alg. 1 and Alg. 3, which run it on growing samples.

    Notes
    -----
    With ``v_0 = 0`` and the box ``B(s, a)`` of :func:`confidence_box`
    (computed once per call),

    .. math::

        v_{i+1}(s) = \min_a \Big\{ c(s,a) + \min_{p \in B(s,a) \cap \Delta(S')}
        \sum_{s' \in S} p(s') v_i(s') \Big\},

    stopping at the first ``j`` with ``max_s |v_{j+1}(s) - v_j(s)| <= mu``.
    Lemma 4: under the event of Lemma 5, ``v_tilde <= V*``, and if
    ``mu <= c_min / 2`` the policy's value in the optimistic model satisfies
    ``V_tilde^pi <= (1 + 2 mu / c_min) v_tilde``.

    The paper (App. B) leaves the inner solver and the ties open; docs/semantics.md
    fixes them and they are followed here: the exact greedy of
    :func:`optimistic_inner` (goal first, stable sort), the policy's ties to
    the lowest action, and ``v_tilde = v_j`` (not ``v_{j+1}``) with the policy
    greedy with respect to ``v_j``.

    Examples
    --------
    On :func:`~reference.tradeoff` (action 0 costs 1 to the goal, action 1 costs 0.1 and
    reaches it w.p. 1/2: ``V* = 0.2``), from a million samples per pair at their exact
    frequencies, ``v_tilde`` is below ``V*`` (Lemma 4) and the policy is optimal.

    >>> import numpy as np
    >>> from reference import tradeoff
    >>> ssp = tradeoff()
    >>> counts = np.array([[[0, 10**6], [500_000, 500_000]]])
    >>> res = extended_value_iteration(counts, ssp.costs, delta=0.1, mu=0.001)
    >>> res.v_tilde.round(3), res.policy, bool(res.converged)
    (array([0.194]), array([1]), True)
    """
    counts, scanned = read_counts(kernels, counts)
    largest = np.nan if counts.storage == "csr" else scanned.largest
    costs = as_float_array("costs", costs, (counts.n_states, counts.n_actions))
    delta = check_delta(delta)
    check_counts_log_term(counts.table, delta, largest)
    mu = check_real("mu", mu, 0.0, None, low_open=True)
    max_iter = check_int("max_iter", max_iter, low=1)
    return _iterate(kernels, counts, scanned, costs, delta, mu, max_iter)


def _iterate(kernels, counts, scanned, costs, delta, mu, max_iter):
    """:func:`extended_value_iteration` of checked arguments, which it trusts.

    :func:`reference.runs.converged_evi` calls it with the counts of a
    :class:`~reference.generative.SampleStore` (:meth:`SampleStore.counts
    <reference.generative.SampleStore.counts>`), which the store built from
    answers it checked, and the arguments its public caller checked.

    Parameters
    ----------
    kernels : KernelSet
    counts : Counts
        Checked counts, as :func:`read_counts` returns them.
    scanned : object
        What ``kernels.boxes`` takes, as :func:`read_counts` returns it.
    costs : ndarray of float64, shape (S, A)
        Finite costs.
    delta : float in (0, 1)
        Its log term finite for these counts (:func:`check_counts_log_term`).
    mu : float > 0
    max_iter : int >= 1

    Returns
    -------
    EVIResult
    """
    S = counts.n_states
    boxes = kernels.boxes(scanned, delta)
    check_simplex(boxes.upper_mass, counts.table, delta)
    v_ext = np.zeros(S + 1)
    v_next = np.empty(S)
    policy = np.empty(S, dtype=np.intp)
    for j in range(max_iter):
        residual = kernels.evi_sweep(boxes, costs, v_ext, v_next, policy)
        if residual <= mu:
            break
        if not math.isfinite(residual):
            raise NumericRangeError(
                f"EVI's iterates left the finite floats at sweep {j + 1} (max |v_(j+1) - v_j| "
                f"= {residual!r}); no policy is returned from them."
            )
        if j + 1 < max_iter:
            v_ext[:S] = v_next
    return EVIResult(
        v_tilde=v_ext[:S].copy(),
        policy=policy.astype(np.int64),
        p_tilde=kernels.optimistic_kernel(boxes, v_ext, policy),
        n_iter=j + 1,
        residual=residual,
        converged=residual <= mu,
        message=_stop_message(j, residual, mu, max_iter),
    )
