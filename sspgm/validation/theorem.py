r"""The theorems' totals for a sweep's runs, from the instance's own quantities.

A run's ``bound`` (:func:`~sspgm.validation.runner.run_one`) is the explicit
total at the run's *own* final guesses: on every sample path the calls are at
most that, so for Alg. 1 they equal it up to rounding and comparing them says
nothing about Thm. 1. The theorems bound the calls from the instance alone,
on the event of Lemma 5 (probability at least ``1 - delta``):

* Thm. 1 (Alg. 1): SEARCH stops at a guess at most ``final_delta(B*)``, so
  the calls are at most the explicit total there, :func:`theorem_total`
  (``bounds.samp_comp(..., B=B*, bound="explicit1")`` plus ``S A`` for the
  rounding up).
* Thm. 2 (Alg. 3): Alg. 4's total up to ``final_delta(D)`` and SEARCH's at
  accuracy ``eps / 2`` up to the range bound of the perturbed problem, over
  every diameter estimate Lemma 9 allows (``bounds.samp_comp_theta(...,
  bound="explicit3")``); its diameter phase, Alg. 4, within Lemma 9's
  total, :func:`diameter_total` (``bounds.samp_comp_diameter(...,
  bound="explicit4")``).

The :math:`\tilde O` forms (``bound="thm1"``, ``"thm2"``) drop constants and
logarithms, so they bound nothing on their own; their exponents (2 and 3) are
the slopes the summary and the plots compare with
(:func:`~sspgm.validation.statistics.theorem_slope` fits the explicit totals'
own slope on a grid).

The functions take a :class:`~sspgm.validation.rows.Row` (any run of the
configuration: they read ``S``, ``A``, ``Gamma``, ``c_min``, ``B*``, ``D``,
``delta``, ``alpha`` and ``theta``) and an accuracy, and return a float
(NaN for a row that raised).
"""

import functools
import math

import bounds

__all__ = ["theorem_total", "diameter_total", "fails_theorem"]


def _instance(row):
    """The arguments the theorems read from ``row``, hashable (None when the run raised)."""
    if row.exception is not None or row.n_states is None:
        return None
    return (row.n_states, row.n_actions, row.branching, row.c_min, row.B_star, row.D,
            row.delta, row.alpha, row.theta)


@functools.lru_cache(maxsize=4096)
def _total(instance, eps):
    S, A, Gamma, cmin, B_star, D, delta, alpha, theta = instance
    common = dict(S=S, A=A, Gamma=Gamma, delta=delta, alpha=alpha)
    if theta is None:
        total = bounds.samp_comp(eps, B=max(B_star, cmin), cmin=cmin, bound="explicit1", **common)
        return float(total) + S * A
    B = min(max(B_star, cmin), D) if cmin > 0 else None
    return float(bounds.samp_comp_theta(eps, theta=theta, D=D, B=B, cmin=cmin,
                                        bound="explicit3", **common))


def theorem_total(row, eps):
    """The most calls the theorem allows a run of ``row``'s configuration at accuracy ``eps``.

    Parameters
    ----------
    row : Row
        Any run of the configuration.
    eps : float
        The accuracy.

    Returns
    -------
    float
        Thm. 1's explicit total at SEARCH's largest final guess for ``B*``
        (rounding up included), or Thm. 2's (Alg. 3's explicit total over
        every estimate Lemma 9 allows); NaN when ``row`` raised. A run above
        it is allowed only outside the event of Lemma 5.

    Examples
    --------
    >>> from sspgm.validation import RunSpec, run_one
    >>> row = run_one(RunSpec("tradeoff", eps=0.2, delta=0.1, seed=0))
    >>> bool(row.calls <= theorem_total(row, 0.2))
    True
    """
    instance = _instance(row)
    return math.nan if instance is None else _total(instance, float(eps))


@functools.lru_cache(maxsize=4096)
def _diameter(instance, eps):
    S, A, Gamma, _, _, D, delta, _, _ = instance
    return float(bounds.samp_comp_diameter(eps, D, S=S, A=A, Gamma=Gamma, delta=delta,
                                           bound="explicit4"))


def diameter_total(row, eps):
    """The most calls Lemma 9 allows Alg. 4 (Alg. 3's diameter phase) at accuracy ``eps``.

    Parameters
    ----------
    row : Row
        Any Alg. 3 run of the configuration.
    eps : float
        The accuracy of the diameter subroutine (the row's ``eps_diameter``).

    Returns
    -------
    float
        Alg. 4's explicit total at the largest guess it can stop at when the
        diameter is ``D`` (``bounds.samp_comp_diameter(..., bound="explicit4")``,
        rounding included); NaN for an Alg. 1 row or a row that raised.

    Examples
    --------
    >>> from sspgm.validation import RunSpec, run_one
    >>> row = run_one(RunSpec("theta_example", eps=0.2, delta=0.1, seed=0, theta=3.0))
    >>> bool(row.calls_diameter <= diameter_total(row, row.eps_diameter))
    True
    """
    instance = _instance(row)
    if instance is None or row.theta is None:
        return math.nan
    return _diameter(instance, float(eps))


def fails_theorem(row):
    """True when the run falls outside what its theorem promises with probability ``1 - delta``.

    Thm. 1 and Thm. 2 promise, on one event of probability at least
    ``1 - delta``, both an eps-optimal policy (the row's ``success``) and at
    most :func:`theorem_total` calls. A run fails when either is missed.

    Parameters
    ----------
    row : Row
        A run that returned a policy.

    Returns
    -------
    bool
        ``not row.success`` or ``row.calls > theorem_total(row, row.eps)``
        (the second is False when the total is undefined).

    Examples
    --------
    A run of Alg. 1 within its guarantee, and the same run as if its policy had missed ``eps``:

    >>> import dataclasses
    >>> from sspgm.validation import RunSpec, run_one
    >>> row = run_one(RunSpec("tradeoff", eps=0.2, delta=0.1, seed=0))
    >>> fails_theorem(row), fails_theorem(dataclasses.replace(row, success=False))
    (False, True)
    """
    return (not row.success) or row.calls > theorem_total(row, row.eps)
