r"""Values of absorbing Markov chains with non-negative costs: exact for explicit chains,
candidates for poured kernels.

The one solver behind :func:`~reference.evaluation.policy_values`,
:func:`~reference.evaluation.hitting_times`, policy iteration, the optimal values
and the diameter. It answers

.. math::

    V = c + Q V, \qquad V \ge 0,

on the states of a chain ``P`` (shape ``(S, S+1)``, goal last), with the
finite / infinite / zero split decided on the support graph (docs/semantics.md,
"Model"), which is exact for every function here. The finite values are:

- exact for an explicit chain (CSR or dense): :func:`chain_values` (and
  :func:`transient_values`) certifies them to :data:`CERTIFIED_RTOL` relative
  accuracy (from the residual, or from checked monotone bounds:
  :mod:`reference.chains.monotone`) or computes them by a subtraction-free
  elimination (GTH) whose relative accuracy does not depend on the
  conditioning, its fill-in counted before it is made (:mod:`reference.chains.fill`);
- for a :class:`~reference.poured.PouredKernel` with more than
  :data:`DENSE_MAX_STATES` states, uncertified candidates:
  :func:`poured_values` and :func:`poured_occupancy` solve iteratively in
  ``O(S + stored)`` memory, and the residual :func:`poured_values` returns
  does not bound the forward error (its callers check the values against
  the Bellman operator); with fewer states :func:`poured_values` expands
  the kernel and is exact as :func:`chain_values`, and
  :func:`poured_occupancy` uses a sparse LU (uncertified). The compiled
  kernel set evaluates poured kernels of every size iteratively (its kernels
  ``poured_chain_values`` and ``poured_chain_visits``, docs/backends.md), with
  :func:`poured_values` and :func:`poured_occupancy` as their fallbacks.

The chain is read as given: the probability of leaving a state is the sum of
its stored probabilities to the goal and to other states, never ``1 - P[s, s]``.
A row's rounding defect (at most ``ROW_SUM_TOL`` after validation) is thereby
attributed to staying put, so that a goal probability of ``1e-17`` next to a
self-loop of ``1`` means an expected ``1e17`` steps, not a singular system.
"""

from .explicit import (
    CERTIFIED_RTOL,
    DENSE_MAX_STATES,
    ITERATIVE_MIN_STATES,
    KRYLOV_MAXITER,
    REFINEMENT_STEPS,
    DENSE_SWITCH_STATES,
    DENSE_SWITCH_FILL,
    ELIMINATION_MAX_STATES,
    UNIT_ROUNDOFF,
    closed_classes,
    direct_exits,
    has_closed_class,
    transient_values,
    chain_values,
)
from .poured import (
    POURED_RTOL,
    POURED_ACCEPT,
    POURED_FAIL,
    POURED_ROUNDS,
    GMRES_RESTART,
    JACOBI_SWEEPS,
    OCCUPANCY_RTOL,
    poured_values,
    poured_occupancy,
)

__all__ = []
