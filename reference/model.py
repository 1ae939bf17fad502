"""The SSP model: transition kernel, costs, validation and Assumption 1.

Conventions (docs/semantics.md, "Model"): the ``S`` non-goal states are
``0..S-1`` and the goal ``g`` is index ``S``. The kernel ``P`` gives, for each
non-goal pair ``(s, a)``, a probability vector over ``S' = S ∪ {g}``; the goal
is absorbing and free and is not a row of ``P``.
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order

from ._checks import (
    check_costs,
    check_dense_size,
    check_int,
    check_real,
    check_real_dtype,
    check_sparse_structure,
    csr_position,
)
from .errors import (
    NoProperPolicyError,
    NotFiniteError,
    ParameterError,
    ProbabilityError,
    ShapeError,
    TooLargeError,
)

__all__ = [
    "SSP",
    "ROW_SUM_TOL",
    "ROW_SUM_TOL_SINGLE",
    "DENSE_LIMIT_BYTES",
    "check_dense_kernel_size",
]

ROW_SUM_TOL = 1e-9
"""Largest accepted ``|sum_s' P(s'|s,a) - 1|``."""

ROW_SUM_TOL_SINGLE = 1e-5
"""Largest accepted ``|sum_s' P(s'|s,a) - 1|`` for a kernel given in float32 (or narrower).

Such a kernel carries about 7 significant digits; it is converted to float64
and each row divided by its sum, so the model's rows sum to 1 to within
:data:`ROW_SUM_TOL`.
"""

DENSE_LIMIT_BYTES = 2 * 1024**3
"""Largest dense ``(S, A, S+1)`` float64 kernel built from a sparse one (2 GiB)."""


class SSP:
    """A stochastic shortest path problem with a known kernel and costs.

    Parameters
    ----------
    P : ndarray of shape (S, A, S+1) or scipy.sparse matrix of shape (S*A, S+1)
        Transition kernel; the last column is the goal. A sparse ``P`` stores
        the row of pair ``(s, a)`` at ``s*A + a`` and is never densified by
        validation; its structure (``indptr``, indices) is checked before
        anything reads it, and duplicate entries of one ``(s, a, s')`` are
        summed (so they count once in :attr:`branching`). Integer, float64
        and float32 values are accepted: a float32 (or narrower) kernel must
        have rows summing to 1 within :data:`ROW_SUM_TOL_SINGLE`, and is
        converted to float64 with each row divided by its sum. Complex and
        object dtypes are refused.
    c : array_like of shape (S, A)
        Costs in ``[0, 1]``, of a real dtype.
    require_proper : bool, default True
        Check Assumption 1 (a proper policy exists) and raise
        :class:`NoProperPolicyError` naming a state from which the goal cannot
        be reached almost surely. Pass ``False`` only for models that are
        legitimately not SSPs in the paper's sense, such as an empirical
        kernel handed to the plug-in baseline.
    name : str, optional
        Short name of the instance, shown in summaries.
    meta : dict, optional
        Free-form description of the instance (builder parameters, known
        closed-form values, a grid layout for drawing).

    Raises
    ------
    ShapeError, NotFiniteError, ProbabilityError, CostError, NoProperPolicyError
        On invalid input; each a :class:`ValueError`.
    ParameterError
        On a complex, object or other non-real dtype, named.
    SparseFormatError
        On a sparse ``P`` with a malformed structure (indices out of range,
        ``indptr`` decreasing, non-integer index arrays).
    TooLargeError
        If a dense ``P`` cannot be held in memory as float64; pass a sparse
        kernel instead.

    Notes
    -----
    Assumption 1 is decided exactly on the support graph (which entries are
    positive), with no floating-point arithmetic: the set of states from
    which some policy reaches ``g`` with probability 1 is the greatest fixpoint

    .. math::

        Z = \\{ s \\in Z : \\exists a,\\ \\mathrm{supp}\\, p(\\cdot|s,a) \\subseteq Z \\cup \\{g\\}
        \\text{ and } s \\text{ reaches } g \\text{ through such pairs} \\}.

    Examples
    --------
    One state and two actions: action 0 reaches the goal at cost 1; action 1
    reaches it with probability 1/2 at cost 1/4, so it costs
    :math:`V = 1/4 + V/2`, that is 1/2, in expectation.

    >>> import numpy as np
    >>> from reference import SSP, optimal_values
    >>> ssp = SSP(np.array([[[0.0, 1.0], [0.5, 0.5]]]), [[1.0, 0.25]])
    >>> ssp.n_states, ssp.n_actions, ssp.branching
    (1, 2, 2)
    >>> best = optimal_values(ssp)
    >>> best.values, best.policy
    (array([0.5]), array([1]))

    Invalid input is refused with a message naming the argument:

    >>> SSP(np.array([[[0.5, 0.4]]]), [[1.0]])
    Traceback (most recent call last):
    ...
    reference.errors.ProbabilityError: each row `P`[s, a, :] must sum to 1 ...
    """

    def __init__(self, P, c, *, require_proper=True, name=None, meta=None):
        if sp.issparse(P):
            self._P = _validate_sparse(P)
            n_states = self._P.shape[1] - 1
            n_actions = self._P.shape[0] // n_states
        else:
            self._P = _validate_dense(P)
            n_states, n_actions = self._P.shape[:2]
        check_real_dtype("c", c)
        self._c = check_costs("c", c, n_states, n_actions, "the kernel `P`").copy()
        self._c.flags.writeable = False
        self._csr = None
        self.name = name if name is not None else "ssp"
        self.meta = dict(meta or {})
        if require_proper:
            self.check_assumption_1()

    @classmethod
    def from_discounted(cls, P, c, gamma, *, name=None, meta=None):
        """Convert a discounted MDP into an SSP (footnote 1 of the paper).

        Parameters
        ----------
        P : ndarray of shape (S, A, S) or scipy.sparse matrix of shape (S*A, S)
            Kernel of the discounted MDP.
        c : array_like of shape (S, A)
            Costs in ``[0, 1]``.
        gamma : float in (0, 1)
            Discount factor.

        Returns
        -------
        SSP
            The SSP whose values are the discounted values:

            .. math::

                p_{ssp}(s'|s,a) = \\gamma\\, p(s'|s,a), \\qquad
                p_{ssp}(g|s,a) = 1 - \\gamma, \\qquad
                V_{ssp}(s) = \\mathbb{E}\\Big[\\sum_{t \\ge 0} \\gamma^t c(s_t, a_t)\\Big].

            Assumption 1 holds by construction (every pair reaches the goal with
            probability ``1 - gamma``), so it is not checked again.

        Examples
        --------
        One state that loops on itself at cost 1 with ``gamma = 0.9``: its
        discounted value is :math:`1 / (1 - 0.9) = 10`.

        >>> import numpy as np
        >>> from reference import SSP, policy_values
        >>> ssp = SSP.from_discounted(np.ones((1, 1, 1)), [[1.0]], gamma=0.9)
        >>> ssp.P
        array([[[0.9, 0.1]]])
        >>> policy_values(ssp, [0])
        array([10.])
        """
        gamma = check_real("gamma", gamma, 0.0, 1.0, low_open=True, high_open=True)
        check_real_dtype("P", P)
        if sp.issparse(P):
            P = sp.csr_array(P, dtype=np.float64)
            if P.ndim != 2 or P.shape[1] < 1 or P.shape[0] % P.shape[1]:
                raise ShapeError(
                    f"`P` must have shape (S*A, S) when sparse; got {P.shape}."
                )
            _check_rows_sparse(P, "P", P.shape[0] // P.shape[1])
            goal = sp.csr_array(np.full((P.shape[0], 1), 1.0 - gamma))
            Pssp = sp.hstack([gamma * P, goal], format="csr")
        else:
            P = np.asarray(P, dtype=np.float64)
            if P.ndim != 3 or P.shape[0] != P.shape[2]:
                raise ShapeError(f"`P` must have shape (S, A, S); got {P.shape}."
                                 + _toolbox_hint(P.shape))
            _check_rows_dense(P, "P")
            Pssp = np.empty(P.shape[:2] + (P.shape[2] + 1,))
            np.multiply(P, gamma, out=Pssp[:, :, :-1])
            Pssp[:, :, -1] = 1.0 - gamma
        meta = {"gamma": gamma, **(meta or {})}
        return cls(Pssp, c, require_proper=False, name=name or "discounted", meta=meta)

    @property
    def n_states(self):
        """Number ``S`` of non-goal states."""
        return self._c.shape[0]

    @property
    def n_actions(self):
        """Number ``A`` of actions."""
        return self._c.shape[1]

    @property
    def goal(self):
        """Index of the goal state (``S``)."""
        return self.n_states

    @property
    def costs(self):
        """Read-only cost array of shape ``(S, A)``."""
        return self._c

    @property
    def c_min(self):
        """Smallest cost ``c_min = min_{s,a} c(s, a)``."""
        return float(self._c.min())

    @property
    def is_sparse(self):
        """Whether the kernel is stored as a CSR matrix of shape ``(S*A, S+1)``."""
        return sp.issparse(self._P)

    @property
    def P(self):
        """The kernel as given: dense ``(S, A, S+1)`` or CSR ``(S*A, S+1)``, read-only."""
        return self._P

    @property
    def branching(self):
        """``Gamma = max_{s,a} |supp p(.|s,a)|``, counted over ``S'`` (goal included)."""
        if self.is_sparse:
            return int(np.diff(self._P.indptr).max())
        return int((self._P > 0).sum(axis=2).max())

    def kernel_csr(self):
        """The kernel as a CSR matrix of shape ``(S*A, S+1)`` (row ``s*A + a``).

        Returns
        -------
        scipy.sparse.csr_array of float64, shape (S*A, S+1)
            Explicit zeros are removed, so the stored entries are the support. A
        dense kernel is converted once and the matrix kept (the model is
        immutable; its values are read-only).
        """
        if self.is_sparse:
            return self._P
        if self._csr is None:
            self._csr = sp.csr_array(
                self._P.reshape(self.n_states * self.n_actions, self.n_states + 1)
            )
            self._csr.data.flags.writeable = False
        return self._csr

    def kernel_dense(self, max_bytes=DENSE_LIMIT_BYTES):
        """The kernel as a dense array of shape ``(S, A, S+1)``.

        Parameters
        ----------
        max_bytes : int, default DENSE_LIMIT_BYTES
            Largest dense array built from a sparse kernel (2 GiB by default).

        Returns
        -------
        ndarray of float64, shape (S, A, S+1)
            Read-only.

        Raises
        ------
        TooLargeError
            If the kernel is sparse and the dense array would exceed
            ``max_bytes`` (2 GiB by default).
        """
        if not self.is_sparse:
            return self._P
        S, A = self.n_states, self.n_actions
        check_dense_size(
            "a dense kernel", (S, A, S + 1), max_bytes,
            "use a backend that works on sparse kernels (`fast`).",
        )
        dense = self._P.toarray().reshape(S, A, S + 1)
        dense.flags.writeable = False
        return dense

    def row(self, s, a):
        """Support and probabilities of ``p(.|s, a)``.

        Parameters
        ----------
        s : int
            Non-goal state, ``0 <= s < S``.
        a : int
            Action, ``0 <= a < A``.

        Returns
        -------
        support : ndarray of int64, shape (k,)
            Next states with positive probability, ascending (the goal is ``S``).
        probs : ndarray of float64, shape (k,)
            Their probabilities.

        Raises
        ------
        ParameterError
            If ``s`` or ``a`` is not an index in range.
        """
        s = check_int("s", s, 0)
        a = check_int("a", a, 0)
        if s >= self.n_states or a >= self.n_actions:
            raise ParameterError(
                f"`(s, a)` must be a pair in 0..{self.n_states - 1} x 0..{self.n_actions - 1}; "
                f"got ({s}, {a})."
            )
        if self.is_sparse:
            i = s * self.n_actions + a
            lo, hi = self._P.indptr[i], self._P.indptr[i + 1]
            return self._P.indices[lo:hi].astype(np.int64), self._P.data[lo:hi].copy()
        p = self._P[s, a]
        support = np.flatnonzero(p > 0)
        return support, p[support].copy()

    def proper_states(self):
        """Mask of the states from which some policy reaches the goal almost surely.

        Returns
        -------
        ndarray of bool, shape (S,)
            Decided on the support graph alone (see the class notes).
        """
        S, A = self.n_states, self.n_actions
        support = self.kernel_csr().copy()
        support.data = np.ones_like(support.data)
        pair_state = np.repeat(np.arange(S), A)
        alive = np.ones(S + 1, dtype=bool)
        while True:
            outside = support @ (~alive).astype(np.float64)
            allowed = np.flatnonzero((outside == 0) & alive[pair_state])
            edges = support[allowed].tocoo()
            graph = sp.csr_array(
                (np.ones(edges.nnz), (edges.col, pair_state[allowed][edges.row])),
                shape=(S + 1, S + 1),
            )
            reached = breadth_first_order(graph, S, directed=True, return_predecessors=False)
            new_alive = np.zeros(S + 1, dtype=bool)
            new_alive[reached] = True
            if np.array_equal(new_alive, alive):
                return alive[:S].copy()
            alive = new_alive

    def check_assumption_1(self):
        """Check Assumption 1 exactly (see :meth:`proper_states`).

        Raises
        ------
        NoProperPolicyError
            Naming the first state from which no policy reaches the goal with
            probability 1, and how many such states there are.
        """
        ok = self.proper_states()
        if not ok.all():
            s = int(np.flatnonzero(~ok)[0])
            raise NoProperPolicyError(
                f"`P` admits no proper policy (Assumption 1): from state {s} no policy "
                f"reaches the goal (index {self.n_states}) with probability 1 "
                f"({int((~ok).sum())} such state(s) in all)."
            )

    def __repr__(self):
        kind = "sparse" if self.is_sparse else "dense"
        return (
            f"SSP(name={self.name!r}, S={self.n_states}, A={self.n_actions}, "
            f"Gamma={self.branching}, c_min={self.c_min:g}, kernel={kind})"
        )


def _check_rows_dense(P, name, tol=ROW_SUM_TOL):
    """Raise unless every row ``P[s, a, :]`` is a finite probability vector; name the first bad.

    Valid input is accepted in two passes (the smallest entry, which is NaN if
    any entry is, and the row sums, infinite if an entry is); the detailed
    checks below run only to name what is wrong.
    """
    if P.size and P.min() >= 0.0:
        sums = P.sum(axis=-1)
        if np.all(np.abs(sums - 1.0) <= tol):
            return
    if not np.all(np.isfinite(P)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(P))[0])
        raise NotFiniteError(
            f"`{name}` must be finite; got {float(P[bad])!r} at (s, a, s') = {bad}."
        )
    if (P < 0).any():
        bad = tuple(int(i) for i in np.argwhere(P < 0)[0])
        raise ProbabilityError(
            f"`{name}` must hold probabilities >= 0; got {float(P[bad])!r} at (s, a, s') = {bad}."
        )
    sums = P.sum(axis=-1)
    off = np.abs(sums - 1.0) > tol
    if off.any():
        s, a = (int(i) for i in np.argwhere(off)[0])
        raise ProbabilityError(
            f"each row `{name}`[s, a, :] must sum to 1 (tolerance {tol:g}); "
            f"row (s, a) = ({s}, {a}) sums to {float(sums[s, a])!r}."
        )


def _check_rows_sparse(P, name, n_actions, tol=ROW_SUM_TOL):
    """As :func:`_check_rows_dense` for a CSR ``P`` whose row ``s*A + a`` is the pair ``(s, a)``."""
    if not np.all(np.isfinite(P.data)):
        k = int(np.flatnonzero(~np.isfinite(P.data))[0])
        raise NotFiniteError(
            f"`{name}` must be finite; got {float(P.data[k])!r} at (s, a, s') = "
            f"{csr_position(P, k, n_actions)}."
        )
    if (P.data < 0).any():
        k = int(np.flatnonzero(P.data < 0)[0])
        raise ProbabilityError(
            f"`{name}` must hold probabilities >= 0; got {float(P.data[k])!r} at "
            f"(s, a, s') = {csr_position(P, k, n_actions)}."
        )
    sums = np.asarray(P.sum(axis=1)).ravel()
    off = np.abs(sums - 1.0) > tol
    if off.any():
        row = int(np.flatnonzero(off)[0])
        s, a = divmod(row, n_actions)
        raise ProbabilityError(
            f"each row of `{name}` (row s*A + a for the pair (s, a)) must sum to 1 "
            f"(tolerance {tol:g}); row (s, a) = ({s}, {a}) sums to "
            f"{float(sums[row])!r}."
        )


def _row_sum_tolerance(dtype):
    """:data:`ROW_SUM_TOL`, or :data:`ROW_SUM_TOL_SINGLE` for floats narrower than float64."""
    narrow = np.issubdtype(dtype, np.floating) and np.finfo(dtype).bits < 64
    return ROW_SUM_TOL_SINGLE if narrow else ROW_SUM_TOL


def check_dense_kernel_size(n_states, n_actions, max_bytes=DENSE_LIMIT_BYTES):
    """Refuse to build a dense float64 kernel ``(S, A, S+1)`` above ``max_bytes``.

    Instance builders call it before allocating, so that a large instance is
    refused with a clear error instead of numpy's ``MemoryError``.

    Parameters
    ----------
    n_states, n_actions : int
        ``S`` and ``A``.
    max_bytes : int, default DENSE_LIMIT_BYTES
        The limit (2 GiB).

    Raises
    ------
    ParameterError
        If a size is not an integer >= 1, or ``max_bytes`` not one >= 0.
    TooLargeError
        Naming the size, and advising a sparse kernel.

    See Also
    --------
    SSP : takes the kernel dense or as a ``scipy.sparse`` CSR matrix.

    Examples
    --------
    A grid of 100 states with 4 actions fits; 10^5 states with 10 actions would
    need 745 GiB:

    >>> check_dense_kernel_size(100, 4)
    >>> check_dense_kernel_size(10**5, 10)
    Traceback (most recent call last):
    ...
    reference.errors.TooLargeError: a dense kernel of shape (100000, 10, 100001) needs 745.07 GiB...
    """
    n_states = check_int("n_states", n_states, low=1)
    n_actions = check_int("n_actions", n_actions, low=1)
    max_bytes = check_int("max_bytes", max_bytes, low=0)
    check_dense_size(
        "a dense kernel", (n_states, n_actions, n_states + 1), max_bytes,
        "pass the kernel as a scipy.sparse CSR matrix of shape (S*A, S+1) (for the "
        "standard instances, `sparse=True` where offered).",
    )


def _toolbox_hint(shape):
    """A pointer to :func:`reference.from_mdptoolbox` for a kernel shaped ``(A, S, S)``."""
    if len(shape) == 3 and shape[1] == shape[2]:
        return (f" It looks like pymdptoolbox's layout (A, S, S) = {tuple(shape)}: convert it "
                "with from_mdptoolbox(P, R, goal=...) (or discount=...).")
    return ""


def _validate_dense(P):
    try:
        given = np.asarray(P)
        check_real_dtype("P", given)
        tol = _row_sum_tolerance(given.dtype)
        P = np.array(given, dtype=np.float64, order="C")
    except MemoryError:
        shape = np.shape(given)
        raise TooLargeError(
            f"`P` of shape {shape} does not fit in memory as float64 "
            f"({8 * float(np.prod(shape, dtype=np.float64)) / 2**30:.2f} GiB); pass it as a "
            "scipy.sparse CSR matrix of shape (S*A, S+1)."
        ) from None
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ParameterError):
            raise
        raise ShapeError(
            f"`P` must be a numeric array of shape (S, A, S+1); got {type(P).__name__} ({exc})."
        ) from None
    if P.ndim != 3 or P.shape[0] < 1 or P.shape[1] < 1 or P.shape[2] != P.shape[0] + 1:
        raise ShapeError(f"`P` must have shape (S, A, S+1) with S, A >= 1; got {P.shape}."
                         + _toolbox_hint(P.shape))
    _check_rows_dense(P, "P", tol)
    if tol != ROW_SUM_TOL:
        P /= P.sum(axis=2, keepdims=True)
    P.flags.writeable = False
    return P


def _validate_sparse(P):
    check_real_dtype("P", P)
    tol = _row_sum_tolerance(P.dtype)
    S = P.shape[1] - 1
    if S < 1 or P.shape[0] < S or P.shape[0] % S:
        raise ShapeError(
            f"`P` must have shape (S*A, S+1) with S, A >= 1 when sparse; got {P.shape}."
        )
    P = check_sparse_structure("P", P)
    _check_rows_sparse(P, "P", P.shape[0] // S, tol)
    P.eliminate_zeros()
    if tol != ROW_SUM_TOL:
        P = sp.csr_array(sp.diags_array(1.0 / np.asarray(P.sum(axis=1)).ravel()) @ P)
        P.sort_indices()
    P.data.flags.writeable = False
    return P
