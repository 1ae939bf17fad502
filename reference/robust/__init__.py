r"""Pessimistic (robust) and optimistic values over per-entry confidence boxes, as checked bounds.

Two games on the boxes of :mod:`reference.confidence`:

- the **adversary** (pessimism) picks, for a fixed policy, the kernel in the
  boxes that maximises the expected cost: its value ``U^pi`` bounds ``V^pi``
  from above on the confidence event;
- the **optimist** picks both the action and the kernel that minimise the
  cost: its value (the fixed point of EVI's operator) bounds ``V*`` from below.

Both inner problems are the greedy pour of App. B: start every next state at
its lower end and pour the remaining mass into next states in a fixed order,
each up to its upper end. The optimist pours by increasing value, the goal
first; the adversary by **decreasing** value, the goal last (ties to the lower
index either way). Both values are computed by policy iteration whose kernels are kept as
:class:`~reference.poured.PouredKernel` (``O(S + stored)`` memory, whatever
the samples behind the boxes) and evaluated by the kernel ``poured_chain_values``
(:func:`reference.chains.poured_values` in the numpy kernel set; never by value
iteration from 0,
whose iterates lie below the pessimistic fixed point and certify nothing);
each value is accepted only after an explicit check of the Bellman inequality
that makes it a bound; see :func:`robust_policy_values` and
:func:`optimistic_values`.
"""

from .common import (
    CHECK_MAX_SLACK,
    ROBUST_MAX_ITER,
    SWITCH_RTOL,
    RobustValuesResult,
    checked_inputs,
)
from .pessimistic import (
    pessimistic_inner,
    _infinite_states,
    _robust_values,
    robust_policy_values,
)
from .optimal import (
    _robust_policy,
    robust_optimal_values,
)
from .optimistic import (
    _check_lower,
    _optimistic,
    optimistic_values,
)

__all__ = [
    "ROBUST_MAX_ITER",
    "RobustValuesResult",
    "pessimistic_inner",
    "robust_policy_values",
    "robust_optimal_values",
    "optimistic_values",
]
