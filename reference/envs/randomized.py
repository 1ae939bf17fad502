"""Random instances: garnets and random discounted MDPs as SSPs."""

import numpy as np
import scipy.sparse as sp

from .._checks import check_dense_size, check_int, check_real, make_rng
from ..errors import ParameterError
from ..model import DENSE_LIMIT_BYTES, SSP, check_dense_kernel_size

__all__ = ["garnet", "random_discounted"]


def _random_simplex_rows(rng, n_rows, k):
    """``n_rows`` probability vectors of length ``k``, Dirichlet(1, ..., 1), all entries > 0."""
    w = np.maximum(rng.standard_exponential((n_rows, k)), 1e-12)
    return w / w.sum(axis=1, keepdims=True)


def _random_subsets(rng, n_rows, n_values, k):
    """One uniform random ``k``-subset of ``0..n_values-1`` per row (Floyd's algorithm).

    Returns an int64 array of shape ``(n_rows, k)``; the loop runs over the
    ``k`` positions, each step vectorised over the rows.
    """
    chosen = np.empty((n_rows, k), dtype=np.int64)
    for i, j in enumerate(range(n_values - k, n_values)):
        t = rng.integers(0, j + 1, size=n_rows)
        taken = (chosen[:, :i] == t[:, None]).any(axis=1)
        chosen[:, i] = np.where(taken, j, t)
    return chosen


def garnet(n_states, n_actions, branching, c_min=0.1, seed=0, sparse=False):
    """A random SSP ("garnet") with exactly ``branching`` next states per pair.

    Parameters
    ----------
    n_states : int >= 1
        Number ``S`` of non-goal states.
    n_actions : int >= 1
        Number ``A`` of actions.
    branching : int in [1, S+1]
        Support size of every ``p(.|s, a)`` over ``S'`` (goal included), so
        ``Gamma = branching``.
    c_min : float in [0, 1], default 0.1
        Costs are drawn uniformly in ``[c_min, 1]``.
    seed : int, SeedSequence, BitGenerator, Generator or None, default 0
        Randomness; the same seed gives the same instance.
    sparse : bool, default False
        Store the kernel as CSR ``(S*A, S+1)``, built directly (never dense).
        The dense and sparse variants of a seed are the same instance.

    Returns
    -------
    SSP

    Notes
    -----
    Each support is a uniform random ``branching``-subset of ``S'`` and its
    probabilities are Dirichlet(1, ..., 1). Assumption 1 holds by
    construction: the support of ``(s, 0)`` always contains ``s + 1`` (the
    goal for ``s = S - 1``; if the random subset misses it, a uniformly
    chosen member is replaced by it), so under "action 0 everywhere" the goal
    is reachable from every state and, the chain being finite, reached
    almost surely. No closed-form values.

    Examples
    --------
    >>> from reference import garnet
    >>> ssp = garnet(100, 4, 3, seed=0, sparse=True)
    >>> ssp.is_sparse, ssp.n_states, ssp.branching
    (True, 100, 3)
    >>> ssp.c_min >= 0.1
    True
    """
    n_states = check_int("n_states", n_states, 1)
    n_actions = check_int("n_actions", n_actions, 1)
    branching = check_int("branching", branching, 1)
    if branching > n_states + 1:
        raise ParameterError(
            f"`branching` must be at most S+1 = {n_states + 1} (the number of next "
            f"states, goal included); got {branching}."
        )
    c_min = check_real("c_min", c_min, 0.0, 1.0)
    if not isinstance(sparse, (bool, np.bool_)):
        raise ParameterError(f"`sparse` must be a bool; got {sparse!r}.")
    rng = make_rng(seed)
    n_rows = n_states * n_actions
    check_dense_size("the stored transitions", (n_rows, branching), DENSE_LIMIT_BYTES,
                     "use fewer states or actions, or a smaller `branching`.")
    support = _random_subsets(rng, n_rows, n_states + 1, branching)
    forward = np.arange(n_states) + 1
    first = support[::n_actions]
    missing = ~(first == forward[:, None]).any(axis=1)
    slot = rng.integers(0, branching, size=n_states)
    first[missing, slot[missing]] = forward[missing]
    support.sort(axis=1)
    probs = _random_simplex_rows(rng, n_rows, branching)
    costs = rng.uniform(c_min, 1.0, size=(n_states, n_actions))
    meta = {
        "n_states": n_states,
        "n_actions": n_actions,
        "branching": branching,
        "c_min": c_min,
        "seed": seed if not isinstance(seed, np.random.Generator) else None,
        "sparse": bool(sparse),
    }
    if sparse:
        indptr = np.arange(0, n_rows * branching + 1, branching, dtype=np.int64)
        P = sp.csr_array(
            (probs.ravel(), support.ravel(), indptr), shape=(n_rows, n_states + 1)
        )
    else:
        check_dense_kernel_size(n_states, n_actions)
        P = np.zeros((n_rows, n_states + 1))
        np.put_along_axis(P, support, probs, axis=1)
        P = P.reshape(n_states, n_actions, n_states + 1)
    return SSP(P, costs, name="garnet", meta=meta)


def random_discounted(n_states, n_actions, gamma=0.9, seed=0):
    """A random discounted MDP turned into an SSP (footnote 1 of the paper).

    Parameters
    ----------
    n_states : int >= 1
        Number ``S`` of states of the discounted MDP (non-goal states of the SSP).
    n_actions : int >= 1
        Number ``A`` of actions.
    gamma : float in (0, 1), default 0.9
        Discount factor.
    seed : int, SeedSequence, BitGenerator, Generator or None, default 0
        Randomness; the same seed gives the same instance.

    Returns
    -------
    SSP
        Built by :meth:`SSP.from_discounted` from full-support Dirichlet(1, ..., 1)
        rows and costs uniform in ``[0, 1]``.

    Notes
    -----
    Every step reaches the goal with probability ``1 - gamma`` whatever the
    action, so every policy has ``E[tau] = 1 / (1 - gamma)``:

    .. math::

        D = \\frac{1}{1 - \\gamma}, \\qquad V_{ssp} = (I - \\gamma P_\\pi)^{-1} c_\\pi.

    Examples
    --------
    Every pair reaches the goal with probability :math:`1 - \\gamma`:

    >>> from reference import random_discounted
    >>> ssp = random_discounted(5, 2, gamma=0.9, seed=0)
    >>> bool((abs(ssp.P[:, :, -1] - 0.1) < 1e-12).all())
    True
    """
    n_states = check_int("n_states", n_states, 1)
    n_actions = check_int("n_actions", n_actions, 1)
    gamma = check_real("gamma", gamma, 0.0, 1.0, low_open=True, high_open=True)
    check_dense_kernel_size(n_states, n_actions)
    rng = make_rng(seed)
    P = _random_simplex_rows(rng, n_states * n_actions, n_states)
    costs = rng.uniform(0.0, 1.0, size=(n_states, n_actions))
    meta = {
        "n_states": n_states,
        "n_actions": n_actions,
        "seed": seed if not isinstance(seed, np.random.Generator) else None,
        "D": 1.0 / (1.0 - gamma),
    }
    return SSP.from_discounted(
        P.reshape(n_states, n_actions, n_states),
        costs,
        gamma,
        name="random_discounted",
        meta=meta,
    )
