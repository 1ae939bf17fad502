"""Bernstein confidence sets (Lemma 5) and extended value iteration for SSP (App. B).

Every choice follows docs/semantics.md, "Confidence sets and EVI":
natural logarithms, ``S`` the number of non-goal states in the
logarithm, a radius for every next state including the goal, the exact greedy
inner problem with goal-first stable ties, and the stopping rule returning
``v_j`` with the policy greedy with respect to ``v_j``.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._checks import as_float_array, check_dense_size, check_int, check_real, csr_position
from .errors import NotFiniteError, ParameterError, ShapeError
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

EVI_DENSE_LIMIT_BYTES = 256 * 1024**2
"""Largest dense ``(S, A, S+1)`` float64 array the reference EVI builds from CSR counts."""


@dataclass(frozen=True, repr=False)
class EVIResult(Result):
    """Output of :func:`extended_value_iteration`.

    Attributes
    ----------
    values : ndarray of float64, shape (S,)
        ``v_tilde = v_j``, the last iterate before the stopping rule held.
    policy : ndarray of int64, shape (S,)
        Greedy policy with respect to ``v_j`` (the argmin building
        ``v_{j+1}``; ties to the lowest action).
    kernel : ndarray of shape (S, S+1) or scipy.sparse CSR matrix
        Optimistic kernel ``p_tilde(.|s, policy(s))`` minimising the inner
        problem at ``v_j``; CSR when the counts were given as CSR.
    iterations : int
        The index ``j``.
    residual : float
        ``max_s |v_{j+1}(s) - v_j(s)|``.
    converged : bool
        Whether the stopping rule held within ``max_iter`` sweeps.
    message : str
        How the iteration ended.
    """

    values: np.ndarray
    policy: np.ndarray
    kernel: object
    iterations: int
    residual: float
    converged: bool
    message: str


def _csr_sizes(counts):
    """Return ``(S, A)`` of CSR counts of shape ``(S*A, S+1)`` after checking the shape."""
    rows, cols = counts.shape
    S = cols - 1
    if S < 1 or rows < S or rows % S:
        raise ShapeError(
            f"`counts` must have shape (S*A, S+1) with S, A >= 1 when sparse; got {counts.shape}."
        )
    return S, rows // S


def _check_count_values(values, where):
    """Raise unless ``values`` are finite and ``>= 0``; ``where(k)`` locates entry ``k``."""
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        k = int(bad[0])
        raise NotFiniteError(
            f"`counts` must hold finite counts; got {float(values[k])!r} at "
            f"(s, a, s') = {where(k)}."
        )
    bad = np.flatnonzero(values < 0)
    if bad.size:
        k = int(bad[0])
        raise ParameterError(
            f"`counts` must be >= 0; got {float(values[k])!r} at (s, a, s') = {where(k)}."
        )


def _counts_array(counts, max_bytes=EVI_DENSE_LIMIT_BYTES):
    """Return ``(dense float64 counts of shape (S, A, S+1), was_sparse)`` after checks."""
    if sp.issparse(counts):
        S, A = _csr_sizes(counts)
        check_dense_size(
            "the reference EVI densifies `counts` to an array", (S, A, S + 1), max_bytes,
            "use the `fast` backend.",
        )
        dense = np.asarray(counts.toarray(), dtype=np.float64).reshape(S, A, S + 1)
        sparse_input = True
    else:
        dense = np.asarray(counts, dtype=np.float64)
        if dense.ndim != 3 or dense.shape[0] < 1 or dense.shape[2] != dense.shape[0] + 1:
            raise ShapeError(
                f"`counts` must have shape (S, A, S+1) or be CSR (S*A, S+1); got {dense.shape}."
            )
        sparse_input = False
    flat = dense.ravel()
    _check_count_values(flat, lambda k: tuple(int(i) for i in np.unravel_index(k, dense.shape)))
    return dense, sparse_input


def _log_term(n_plus, n_states, n_actions, delta):
    return np.log(n_states * n_actions * n_plus / delta)


def bernstein_radius(counts, delta):
    """Radii ``beta(s, a, s')`` of the empirical Bernstein confidence set (Lemma 5).

    Parameters
    ----------
    counts : ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts ``N(s, a, s')``.
    delta : float in (0, 1)
        Confidence level.

    Returns
    -------
    ndarray of float64, shape (S, A, S+1)
        The radius of every next state, the goal included:

        .. math::

            N^+ = \\max(1, N(s,a)),\\quad \\hat p = N(s,a,s') / N^+,\\quad
            L = \\log\\frac{S A N^+}{\\delta},\\quad
            \\beta = 4 \\sqrt{\\frac{\\hat p L}{N^+}} + \\frac{28 L}{N^+}.

    Raises
    ------
    ShapeError, NotFiniteError
        On counts of another shape, or NaN/infinite counts.
    ParameterError
        On negative counts (the first one is named) or ``delta`` outside
        ``(0, 1)``.
    TooLargeError
        If CSR counts would densify above :data:`EVI_DENSE_LIMIT_BYTES`.

    Notes
    -----
    docs/semantics.md fixes what Lemma 5 leaves open: the logarithm is natural,
    ``S`` is the number of non-goal states, and the goal gets a radius like
    every other next state.
    """
    dense, _ = _counts_array(counts)
    delta = check_real("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    return _radius(dense, delta)[0]


def _radius(dense, delta):
    S, A = dense.shape[:2]
    n_plus = np.maximum(1.0, dense.sum(axis=2, keepdims=True))
    p_hat = dense / n_plus
    L = _log_term(n_plus, S, A, delta)
    return 4.0 * np.sqrt(p_hat * L / n_plus) + 28.0 * L / n_plus, p_hat


def bernstein_radius_sum(counts, delta):
    """Per-pair total radius ``sum_{s'} beta(s, a, s')`` (Lemma 5), without densifying.

    This is the quantity Alg. 4 drives below ``eta / 2`` (docs/semantics.md).

    Parameters
    ----------
    counts : ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts.
    delta : float in (0, 1)
        Confidence level.

    Returns
    -------
    ndarray of float64, shape (S, A)
        .. math::

            \\sum_{s' \\in S'} \\beta(s,a,s') = 4 \\sqrt{\\frac{L}{N^+}}
            \\sum_{s'} \\sqrt{\\hat p(s')} + \\frac{28 (S+1) L}{N^+}.

    Raises
    ------
    ShapeError, NotFiniteError, ParameterError
        As :func:`bernstein_radius`; CSR counts are checked without densifying.
    """
    delta = check_real("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    if sp.issparse(counts):
        csr = sp.csr_array(counts, dtype=np.float64)
        S, A = _csr_sizes(csr)
        _check_count_values(csr.data, lambda k: csr_position(csr, k, A))
    else:
        dense, _ = _counts_array(counts)
        S, A = dense.shape[:2]
        csr = sp.csr_array(dense.reshape(-1, S + 1))
    n_plus = np.maximum(1.0, np.asarray(csr.sum(axis=1)).ravel())
    L = _log_term(n_plus, S, A, delta)
    roots = csr.copy()
    roots.data = np.sqrt(roots.data / np.repeat(n_plus, np.diff(csr.indptr)))
    root_sum = np.asarray(roots.sum(axis=1)).ravel()
    total = 4.0 * np.sqrt(L / n_plus) * root_sum + 28.0 * (S + 1) * L / n_plus
    return total.reshape(S, A)


def confidence_box(counts, delta):
    """Lower and upper ends of the box ``[p_hat - beta, p_hat + beta] ∩ [0, 1]`` (Lemma 5).

    Parameters
    ----------
    counts : ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts.
    delta : float in (0, 1)
        Confidence level.

    Returns
    -------
    lo, hi : ndarray of float64, shape (S, A, S+1)
        .. math::

            lo = \\max(0, \\hat p - \\beta), \\qquad hi = \\min(1, \\hat p + \\beta).

    Raises
    ------
    ParameterError
        If some box misses the simplex (``sum hi < 1``), which happens only for
        a pair without samples and a ``delta`` so close to 1 that
        ``28 (S+1) log(S A / delta) < 1``.
    """
    dense, _ = _counts_array(counts)
    delta = check_real("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    return _box(dense, delta)


def _box(dense, delta):
    beta, p_hat = _radius(dense, delta)
    lo = np.maximum(0.0, p_hat - beta)
    hi = np.minimum(1.0, p_hat + beta)
    short = hi.sum(axis=2) < 1.0 - 1e-12
    if short.any():
        s, a = (int(i) for i in np.argwhere(short)[0])
        raise ParameterError(
            f"the confidence set of the pair (s, a) = ({s}, {a}) misses the simplex "
            f"(it has {int(dense[s, a].sum())} samples and `delta` = {delta!r}); sample "
            "every pair at least once or use a smaller `delta`."
        )
    return lo, hi


def optimistic_inner(lo, hi, v):
    """Exact minimiser of ``sum_s' p(s') v(s')`` over a box intersected with the simplex.

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

            p = \\arg\\min \\Big\\{ \\sum_{s'} p(s') v(s') :
            lo \\le p \\le hi,\\ \\sum_{s'} p(s') = 1 \\Big\\}.
    """
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if lo.shape != hi.shape or lo.ndim < 1 or v.shape != lo.shape[-1:]:
        raise ShapeError(
            "`lo` and `hi` must have the same shape (..., S+1) and `v` shape (S+1,); got "
            f"{lo.shape}, {hi.shape} and {v.shape}."
        )
    _check_box(lo, hi, v)
    return _pour(lo, hi - lo, 1.0 - lo.sum(axis=-1, keepdims=True), _goal_first_order(v))


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
    tol = 1e-12
    outside = (lo.sum(axis=-1) > 1 + tol) | (hi.sum(axis=-1) < 1 - tol)
    if np.any(outside):
        i = tuple(int(k) for k in np.argwhere(outside)[0]) if lo.ndim > 1 else ()
        raise ParameterError(
            f"the box must meet the simplex (sum `lo` <= 1 <= sum `hi`); got sums "
            f"{float(lo[i].sum())!r} and {float(hi[i].sum())!r} for the problem at index {i}."
        )


def _goal_first_order(v):
    """Next states by ascending ``v``: a stable sort of ``(g, 0, 1, ..., S-1)``."""
    S = v.shape[0] - 1
    goal_first = np.concatenate([[S], np.arange(S)])
    return goal_first[np.argsort(v[goal_first], kind="stable")]


def _pour(lo, gaps, remaining, order):
    """The greedy of :func:`optimistic_inner`, given ``gaps = hi - lo`` and ``1 - sum lo``."""
    ordered = gaps[..., order]
    poured_before = np.cumsum(ordered, axis=-1) - ordered
    p = lo.copy()
    p[..., order] += np.clip(remaining - poured_before, 0.0, ordered)
    return p


def _stop_message(j, residual, mu, max_iter):
    """EVI's message: the stopping rule met at ``j``, or the sweep limit reached."""
    if residual <= mu:
        return f"stopping rule met at j = {j}: max |v_(j+1) - v_j| = {residual:.3g} <= mu."
    return (
        f"no convergence within max_iter = {max_iter} sweeps: max |v_(j+1) - v_j| = "
        f"{residual:.3g} > mu = {mu:.3g}."
    )


def extended_value_iteration(counts, costs, delta, mu, max_iter=EVI_MAX_ITER):
    """Extended value iteration for SSP with Bernstein confidence sets (App. B).

    Parameters
    ----------
    counts : ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
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

    Notes
    -----
    With ``v_0 = 0`` and the box ``B(s, a)`` of :func:`confidence_box`
    (computed once per call),

    .. math::

        v_{i+1}(s) = \\min_a \\Big\\{ c(s,a) + \\min_{p \\in B(s,a) \\cap \\Delta(S')}
        \\sum_{s' \\in S} p(s') v_i(s') \\Big\\},

    stopping at the first ``j`` with ``max_s |v_{j+1}(s) - v_j(s)| <= mu``.
    Lemma 4: under the event of Lemma 5, ``v_tilde <= V*``, and if
    ``mu <= c_min / 2`` the policy's value in the optimistic model satisfies
    ``V_tilde^pi <= (1 + 2 mu / c_min) v_tilde``.

    The paper (App. B) leaves the inner solver and the ties open; docs/semantics.md
    fixes them and they are followed here: the exact greedy of
    :func:`optimistic_inner` (goal first, stable sort), the policy's ties to
    the lowest action, and ``v_tilde = v_j`` (not ``v_{j+1}``) with the policy
    greedy with respect to ``v_j``.
    """
    dense, sparse_input = _counts_array(counts)
    S, A = dense.shape[:2]
    costs = as_float_array("costs", costs, (S, A))
    delta = check_real("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    mu = check_real("mu", mu, 0.0, None, low_open=True)
    max_iter = check_int("max_iter", max_iter, low=1)
    lo, hi = _box(dense, delta)
    gaps = hi - lo
    remaining = 1.0 - lo.sum(axis=2, keepdims=True)
    states = np.arange(S)
    v = np.zeros(S)
    for j in range(max_iter):
        v_ext = np.append(v, 0.0)
        p = _pour(lo, gaps, remaining, _goal_first_order(v_ext))
        q = costs + p @ v_ext
        policy = np.argmin(q, axis=1).astype(np.int64)
        v_next = q[states, policy]
        residual = float(np.max(np.abs(v_next - v)))
        if residual <= mu:
            break
        if j + 1 < max_iter:
            v = v_next
    converged = residual <= mu
    message = _stop_message(j, residual, mu, max_iter)
    kernel = p[states, policy]
    if sparse_input:
        kernel = sp.csr_array(kernel)
    return EVIResult(
        values=v,
        policy=policy,
        kernel=kernel,
        iterations=j,
        residual=residual,
        converged=converged,
        message=message,
    )
