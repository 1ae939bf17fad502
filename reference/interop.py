r"""Models from other tools: the layout of pymdptoolbox (``P`` of shape ``(A, S, S)``).

pymdptoolbox (its module ``mdp``) describes a discounted, reward-maximising
MDP by ``P`` of shape ``(A, S, S)`` (or a list of ``A`` matrices ``(S, S)``,
dense or scipy.sparse) and ``R`` of shape ``(S,)``, ``(S, A)`` or
``(A, S, S)``. An SSP of this package is an undiscounted, cost-minimising
problem with a goal state, costs in ``[0, 1]`` and the goal as the last column
of ``P`` (``(S, A, S+1)``). :func:`from_mdptoolbox` makes the conversion
explicit:

- **Rewards to costs.** ``c(s, a) = -r(s, a)``, where ``r(s, a)`` is the
  expected reward of the pair (``R[s]``, ``R[s, a]``, or
  :math:`\sum_{s'} P[a, s, s'] R[a, s, s']`). The costs must lie in
  ``[0, 1]``, so the rewards must lie in ``[-1, 0]``; other rewards are
  refused rather than shifted. Dividing rewards by a positive constant scales
  every value and keeps the optimal policies, and is left to the caller;
  adding a constant is not equivalent in an SSP (it changes the cost of long
  paths against short ones), so it is never done here.
- **The goal.** Either ``goal``: the states that end the episode, each
  absorbing under every action with zero reward (then the MDP's total reward
  from any state is exactly minus the SSP's value, and every policy's value
  is kept); they are merged into the SSP's goal and removed from the states.
  Or ``discount``: footnote 1 of the paper (:meth:`reference.SSP.from_discounted`),
  where each step reaches the goal with probability ``1 - discount``, so the
  SSP's values are the discounted values of the costs.
"""

import numbers

import numpy as np
import scipy.sparse as sp

from ._checks import check_real
from .errors import CostError, ParameterError, ShapeError
from .model import SSP

__all__ = ["from_mdptoolbox"]


def _kernel_per_action(P):
    """``P`` as a list of ``A`` float64 matrices ``(S, S)`` (dense or CSR), shapes checked."""
    if isinstance(P, np.ndarray) or not isinstance(P, (list, tuple)):
        array = np.asarray(P) if not sp.issparse(P) else None
        if array is None or array.ndim != 3 or array.shape[1] != array.shape[2]:
            shape = np.shape(P) if array is None else array.shape
            raise ShapeError(
                f"`P` must have the mdptoolbox shape (A, S, S), or be a list of A matrices "
                f"(S, S); got shape {shape}."
            )
        matrices = [np.asarray(m, dtype=np.float64) for m in array]
    else:
        matrices = [sp.csr_array(m, dtype=np.float64) if sp.issparse(m)
                     else np.asarray(m, dtype=np.float64) for m in P]
    if not matrices:
        raise ShapeError("`P` must hold at least one action; got none.")
    S = matrices[0].shape[0] if matrices[0].ndim == 2 else -1
    for a, m in enumerate(matrices):
        if m.ndim != 2 or m.shape != (S, S) or S < 1:
            raise ShapeError(
                f"`P[a]` must be a square matrix (S, S) with S >= 1, the same for every action; "
                f"`P[0]` has shape {matrices[0].shape} and `P[{a}]` has shape {m.shape}."
            )
    return matrices


def _expected_rewards(R, matrices):
    """``r(s, a)``, float64 ``(S, A)``, from ``R`` shaped ``(S,)``, ``(S, A)`` or ``(A, S, S)``."""
    A, S = len(matrices), matrices[0].shape[0]
    if isinstance(R, (list, tuple)) and len(R) == A and all(
            sp.issparse(m) or np.ndim(m) == 2 for m in R):
        R_list = R
    else:
        R = np.asarray(R, dtype=np.float64)
        if R.shape == (S,):
            return np.repeat(R[:, None], A, axis=1)
        if R.shape == (S, A):
            return R.copy()
        if R.shape != (A, S, S):
            raise ShapeError(
                f"`R` must have shape (S,) = ({S},), (S, A) = ({S}, {A}) or (A, S, S) = "
                f"({A}, {S}, {S}); got {R.shape}."
            )
        R_list = list(R)
    r = np.empty((S, A))
    for a, (P_a, R_a) in enumerate(zip(matrices, R_list)):
        if np.shape(R_a) != (S, S):
            raise ShapeError(f"`R[{a}]` must have shape (S, S) = ({S}, {S}); got {np.shape(R_a)}.")
        R_a = sp.csr_array(R_a) if sp.issparse(R_a) else np.asarray(R_a, dtype=np.float64)
        product = (sp.csr_array(P_a).multiply(R_a) if sp.issparse(P_a) or sp.issparse(R_a)
                   else P_a * R_a)
        r[:, a] = np.asarray(product.sum(axis=1)).ravel()
    return r


def _costs(r):
    """``-r``, refused unless every reward lies in ``[-1, 0]`` (costs in ``[0, 1]``)."""
    if not np.isfinite(r).all():
        raise CostError("`R` must be finite; it gives a non-finite expected reward.")
    for bad, what in ((r > 0, "positive"), (r < -1, "below -1")):
        if bad.any():
            s, a = (int(i) for i in np.argwhere(bad)[0])
            raise CostError(
                f"`R` gives the expected reward {r[s, a]:.6g} ({what}) to state {s}, action {a}: "
                "SSP costs are -R and must lie in [0, 1], so rewards must lie in [-1, 0]. "
                "Divide R by a positive constant to rescale it (the optimal policies stay); "
                "adding a constant changes the SSP's optimal policies, so it is not done."
            )
    return -r


def _goal_states(goal, S):
    states = [goal] if isinstance(goal, numbers.Integral) else list(goal)
    if not states or not all(isinstance(g, numbers.Integral) and not isinstance(g, bool)
                             and 0 <= g < S for g in states):
        raise ParameterError(
            f"`goal` must be a state or a non-empty list of states in 0..{S - 1}; got {goal!r}."
        )
    return sorted(set(int(g) for g in states))


def _check_goals_absorbing(matrices, r, goals):
    for a, P_a in enumerate(matrices):
        for g in goals:
            stay = P_a[[g], :][:, [g]]
            stay = float(stay.toarray()[0, 0] if sp.issparse(stay) else stay[0, 0])
            if stay != 1.0 or r[g, a] != 0.0:
                raise ParameterError(
                    f"goal state {g} must be absorbing with zero reward under every action "
                    f"(then the SSP keeps every policy's total reward); under action {a} it "
                    f"stays with probability {stay:.6g} and earns {r[g, a]:.6g}. Pass "
                    "`discount` instead for a discounted MDP without a goal."
                )


def _pair_rows(blocks):
    """Per-action blocks ``(n, m)`` as one CSR ``(n*A, m)`` whose row ``s*A + a`` is row ``s`` of
    block ``a`` (the pair order of an SSP's CSR kernel)."""
    A, n = len(blocks), blocks[0].shape[0]
    stacked = sp.vstack([sp.csr_array(block) for block in blocks], format="csr")
    order = (np.arange(A)[None, :] * n + np.arange(n)[:, None]).ravel()
    return sp.csr_array(stacked[order])


def _ssp_kernel(matrices, kept, goals):
    """The SSP kernel ``(S', A, S'+1)`` (dense) or CSR ``(S'*A, S'+1)``: goals merged, last."""
    S, A, n = matrices[0].shape[0], len(matrices), len(kept)
    columns = np.full(S, n, dtype=np.int64)
    columns[kept] = np.arange(n)
    merge = sp.csr_array((np.ones(S), (np.arange(S), columns)), shape=(S, n + 1))
    if any(sp.issparse(m) for m in matrices):
        return sp.csr_array(_pair_rows([sp.csr_array(m)[kept] for m in matrices]) @ merge)
    P = np.stack([m[kept] for m in matrices], axis=1)
    return np.asarray((sp.csr_array(P.reshape(n * A, S)) @ merge).toarray()).reshape(n, A, n + 1)


def from_mdptoolbox(P, R, goal=None, *, discount=None, name="mdptoolbox", meta=None):
    r"""An SSP from a model in pymdptoolbox's layout: ``P`` (A, S, S) and rewards ``R``.

    Parameters
    ----------
    P : array_like of shape (A, S, S), or sequence of A matrices (S, S)
        ``P[a, s, s']``, the probability of moving from ``s`` to ``s'`` under
        action ``a``; the matrices may be scipy.sparse (the SSP is then CSR).
    R : array_like of shape (S,), (S, A) or (A, S, S), or sequence of A matrices (S, S)
        Rewards, as pymdptoolbox takes them: of a state, of a pair, or of a
        transition. The SSP's costs are ``c(s, a) = -r(s, a)`` with
        ``r(s, a)`` the expected reward of the pair; they must lie in
        ``[0, 1]`` (module notes).
    goal : int or sequence of int, optional
        The states that end the episode, each absorbing with zero reward
        under every action; merged into the SSP's goal. Give ``goal`` or
        ``discount``, not both.
    discount : float in (0, 1), optional
        Convert the discounted MDP by footnote 1 of the paper
        (:meth:`SSP.from_discounted`): every state is kept, and each step
        reaches the goal with probability ``1 - discount``.
    name : str, default "mdptoolbox"
        Name of the SSP.
    meta : dict, optional
        Extra entries for ``SSP.meta``.

    Returns
    -------
    SSP
        With ``goal``: the states of ``P`` other than the goals, in their
        order (``meta["mdp_states"]`` maps the SSP's state indices to those of
        ``P``), and the values of every policy equal minus its total reward in
        the MDP. With ``discount``: ``S`` states and the discounted values
        (``meta["gamma"]``).

    Raises
    ------
    ShapeError
        On shapes that do not match the layout (the message gives them).
    ProbabilityError, NotFiniteError
        On rows of ``P`` that are not distributions.
    CostError
        On rewards outside ``[-1, 0]``.
    ParameterError
        On neither or both of ``goal`` and ``discount``, a goal state out of
        range, or one that is not absorbing with zero reward.
    NoProperPolicyError
        When some state cannot reach a goal state.

    Examples
    --------
    Two states and a goal state 2: action 0 moves right with probability
    0.5 (reward -0.5), action 1 jumps to the goal from state 1 only.

    >>> import numpy as np
    >>> from reference import from_mdptoolbox, optimal_values
    >>> P = np.array([[[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0]],
    ...               [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]])
    >>> R = np.array([[-0.5, -1.0], [-0.5, -1.0], [0.0, 0.0]])
    >>> ssp = from_mdptoolbox(P, R, goal=2)
    >>> ssp.P.shape, ssp.meta["mdp_states"]
    ((2, 2, 3), [0, 1])
    >>> optimal_values(ssp).values
    array([2., 1.])
    """
    matrices = _kernel_per_action(P)
    S = matrices[0].shape[0]
    r = _expected_rewards(R, matrices)
    if (goal is None) == (discount is None):
        raise ParameterError(
            "give `goal` (the absorbing zero-reward states that end the episode) or `discount` "
            f"(a discounted MDP, footnote 1), exactly one of them; got goal={goal!r}, "
            f"discount={discount!r}."
        )
    if discount is not None:
        check_real("discount", discount, 0.0, 1.0, low_open=True, high_open=True)
        costs = _costs(r)
        if any(sp.issparse(m) for m in matrices):
            kernel = _pair_rows(matrices)
        else:
            kernel = np.stack(matrices, axis=1)
        return SSP.from_discounted(kernel, costs, discount, name=name, meta=meta)
    goals = _goal_states(goal, S)
    _check_goals_absorbing(matrices, r, goals)
    kept = np.setdiff1d(np.arange(S), goals)
    if kept.size == 0:
        raise ParameterError(f"`goal` = {goal!r} leaves no state outside the goal.")
    costs = _costs(r[kept])
    info = {"mdp_states": kept.tolist(), "mdp_goal": goals, **(meta or {})}
    return SSP(_ssp_kernel(matrices, kept, goals), costs, name=name, meta=info)
