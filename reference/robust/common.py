"""What the robust values share: the result class, the limits, the boxes and costs checked
once, the messages."""

from dataclasses import dataclass

import numpy as np

from .._checks import as_float_array
from ..confidence import confidence_boxes
from ..errors import ParameterError
from ..robust_checks import CHECK_MAX_SLACK
from ..robust_loops import ROBUST_MAX_ITER, SWITCH_RTOL
from ..poured import PouredKernel
from ..results import Result

__all__ = ["CHECK_MAX_SLACK", "ROBUST_MAX_ITER", "RobustValuesResult"]


@dataclass(frozen=True, repr=False)
class RobustValuesResult(Result):
    """Checked bounds over the boxes: the output of the public functions of this module.

    Attributes
    ----------
    values : ndarray of float64, shape (S,)
        The checked bound, valid on the confidence event: an upper bound on
        ``V^pi`` of ``policy`` (:func:`~reference.robust.robust_policy_values`,
        :func:`~reference.robust.robust_optimal_values`; ``+inf`` where none is
        finite) or a lower bound on ``V*`` (:func:`~reference.robust.optimistic_values`).
    policy : ndarray of int64, shape (S,)
        The policy the values belong to.
    p_bound : PouredKernel, shape (S, S+1)
        The kernel of ``policy`` in the boxes attaining the bound (the
        adversary's or the optimist's last choice), ``O(S + stored)`` bytes
        (:class:`~reference.poured.PouredKernel`; ``p_bound.tocsr()`` for the
        explicit matrix).
    infinite : ndarray of bool, shape (S,)
        States where the value is ``+inf``.
    n_iter : int
        Policy evaluations made (the kernel ``poured_chain_values``,
        :func:`reference.chains.poured_values` in the numpy kernel set).
    converged : bool
        Whether policy iteration stopped on its own (no improving switch).
    message : str
        How the computation ended and what the check found.
    params : Params
        ``delta`` and ``kind`` (:class:`~reference.results.Result`).
    """

    values: np.ndarray
    policy: np.ndarray
    p_bound: PouredKernel
    infinite: np.ndarray
    n_iter: int
    converged: bool
    message: str


def _policy_rows(boxes, policy):
    return np.arange(boxes.n_states) * boxes.n_actions + policy


def _how(converged, n_iter):
    """How a policy iteration of ``n_iter`` evaluations ended, for its message."""
    if converged:
        return "converged"
    if n_iter >= ROBUST_MAX_ITER:
        return "stopped at the iteration limit"
    return "stopped: an evaluation found no acceptable solution"


def _check_message(kind, n_inf, dropped, r, n_iter, converged):
    how = _how(converged, n_iter)
    text = (f"{kind} policy iteration {how} after {n_iter} evaluations; "
            f"{n_inf} state(s) infinite on the graph test")
    if dropped:
        return f"{text}; the Bellman check failed on {dropped} state(s), set to inf."
    return f"{text}; the Bellman check holds everywhere (relative slack {r:.2g})."


def checked_inputs(kernels, counts, costs, delta, kind):
    """The boxes of ``counts`` (built by ``kernels``) and the checked costs (float64 ``(S, A)``,
    ``>= 0``)."""
    boxes = kernels.call(confidence_boxes, counts, delta, kind)
    S, A = boxes.n_states, boxes.n_actions
    costs = as_float_array("costs", costs, (S, A))
    if np.any(costs < 0):
        s, a = (int(i) for i in np.argwhere(costs < 0)[0])
        raise ParameterError(f"`costs` must be >= 0; got costs[{s}, {a}] = {costs[s, a]!r}.")
    return boxes, costs
