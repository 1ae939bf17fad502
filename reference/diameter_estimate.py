"""The diameter estimate (Alg. 4, App. C.1).

Every choice follows docs/semantics.md, "Algorithms", where it differs from the
paper's listing. :func:`estimate_diameter` is a kernel function
(:mod:`reference.backend`).
"""

import time
from dataclasses import dataclass

import numpy as np

from . import evi
from .evi import _bernstein_radius_sum
from ._checks import check_counts_log_term, check_int
from .kernels import NUMPY_KERNELS
from .results import Result
from .runs import Round, Run, as_model, check_accuracy, converged_evi, run_params

__all__ = ["DiameterEstimate", "estimate_diameter"]


@dataclass(frozen=True, repr=False)
class DiameterEstimate(Result):
    """Output of the diameter estimate (Alg. 4).

    Attributes
    ----------
    D_hat : float
        The proof's estimate (App. C.1, Lemma 9)
        ``(1 + 2 eta (1 + eps) ||v||)(1 + eps) ||v||``.
    D_listing : float
        The listing's ``(1 + 2 eta ||v||) ||v||``, kept to document the
        erratum (it can lie below ``D``).
    v_tilde_max : float
        ``||v_tilde||_inf`` of the last round.
    W : float
        The last ``W``.
    eta : float
        The last ``eta = eps / W``.
    n_calls : int
        Generative-model calls made, as in :attr:`SolveResult.n_calls`.
    n_redrawn : int
        Calls of rounds lost before their checkpoint and made again.
    calls : ndarray of int64, shape (S, A)
        Samples per pair.
    history : tuple of Round
        One record per round.
    converged : bool
        Whether the rounds stopped by the test ``||v_tilde|| <= W``: always
        True on a returned result (a non-converged EVI raises
        :class:`ConvergenceError`).
    message : str
        How the estimate ended.
    params : Params
        ``eps``, ``delta``, ``seed`` and ``max_iter``
        (:class:`~reference.results.Result`).
    """

    D_hat: float
    D_listing: float
    v_tilde_max: float
    W: float
    eta: float
    n_calls: int
    n_redrawn: int
    calls: np.ndarray
    history: tuple[Round, ...]
    converged: bool
    message: str


def sample_until_radius(run, delta, bound):
    """Alg. 4's sampling: until every pair has ``sum_s' beta(s, a, s') <= bound``.

    Deterministic schedule: while some pairs fail, every failing pair (in
    order ``(s, a)``) draws ``max(1, N(s, a))`` more samples, doubling its
    count.
    """
    while True:
        counts = run.store.counts()
        check_counts_log_term(counts.table, delta)
        radius = _bernstein_radius_sum(counts, delta)
        failing = np.flatnonzero(radius.reshape(-1) > bound)
        if failing.size == 0:
            return
        more = np.maximum(1, run.store.n_pair.reshape(-1)[failing])
        run.store.draw_pairs(run.model, failing, more, run.rng)


def diameter_rounds(kernels, run, eps, delta, max_iter):
    r"""The diameter estimate (Alg. 4) on the run's sample store.

    Parameters
    ----------
    kernels : KernelSet
        Numerical kernels of the backend.
    run : Run
        Store, generator, history and checkpoint.
    eps : float
        Accuracy.
    delta : float
        Confidence level.
    max_iter : int
        EVI sweep limit.

    Returns
    -------
    D_hat, D_listing, v_tilde_max, W, eta : float

    Notes
    -----
    ``W = 1/2``, ``||v|| = 1``; while ``||v|| > W``: ``W <- 2W``,
    ``eta = eps / W``, sample until every pair has
    ``sum_s' beta(s, a, s') <= eta / 2`` (:func:`sample_until_radius`),
    ``v = EVI(N, c = 1, mu = eps / 2)``. The output is the proof's value
    (docs/semantics.md; App. C.1)

    .. math::

        \hat D = \big(1 + 2 \eta (1 + \epsilon) \|v\|_\infty\big)
        (1 + \epsilon)\|v\|_\infty,

    not the listing's ``(1 + 2 eta ||v||) ||v||``, which can lie below ``D``
    and break Thm. 2: with one state, one action, unit cost,
    ``p(g) = 0.3`` and ``eps = 1``, the listing gives 3.0 < D = 10/3.
    """
    prior = run.rounds("diameter")
    W = prior[-1].scale if prior else 0.5
    v_tilde_max = prior[-1].v_tilde_max if prior else 1.0
    unit = np.ones((run.store.n_states, run.store.n_actions))
    while v_tilde_max > W:
        start = time.perf_counter()
        W *= 2.0
        run.start_round(f"Alg. 4 round {len(run.rounds('diameter')) + 1} (W = {W:g})")
        sample_until_radius(run, delta, eps / W / 2.0)
        out = converged_evi(kernels, run, unit, delta, eps / 2.0, max_iter, f"Alg. 4 at W = {W:g}")
        v_tilde_max = float(out.v_tilde.max())
        run.record(
            Round(phase="diameter", scale=W, target=int(run.store.n_pair.min()),
                  Gamma_hat=run.store.Gamma_hat, evi_n_iter=out.n_iter, v_tilde_max=v_tilde_max,
                  n_calls=run.store.n_samples, seconds=time.perf_counter() - start)
        )
    eta = eps / W
    D_hat = (1.0 + 2.0 * eta * (1.0 + eps) * v_tilde_max) * (1.0 + eps) * v_tilde_max
    D_listing = (1.0 + 2.0 * eta * v_tilde_max) * v_tilde_max
    return D_hat, D_listing, v_tilde_max, W, eta


@NUMPY_KERNELS.bind
def estimate_diameter(kernels, model, eps, delta, seed=None, max_iter=evi.EVI_MAX_ITER,
                      callback=None, checkpoint=None):
    r"""Upper estimate of the SSP-diameter ``D`` (Alg. 4, App. C.1).

    Parameters
    ----------
    model : GenerativeModel or SSP
        Source of samples.
    eps : float in (0, 1]
        Accuracy.
    delta : float in (0, 1)
        Confidence level.
    seed : None, int, numpy.random.SeedSequence, BitGenerator or Generator
        Randomness of the sampling.
    max_iter : int, default EVI_MAX_ITER
        EVI sweep limit.
    callback : callable, optional
        Called with each :class:`Round`.
    checkpoint : str or os.PathLike, optional
        Save/resume file, as in :func:`search`.

    Returns
    -------
    DiameterEstimate
        With probability ``>= 1 - delta`` (Lemma 9),

        .. math::

            D \le \hat D \le \big(1 + 2 \epsilon (1 + \epsilon)\big)(1 + \epsilon) D.

    Raises
    ------
    ParameterError
        On ``eps`` outside ``(0, 1]``, ``delta`` outside ``(0, 1)``, or a
        checkpoint of another run.
    ConvergenceError
        If an EVI does not converge within ``max_iter`` sweeps.

    See Also
    --------
    reference.diameter : the exact diameter of a known SSP.
    solve : Alg. 3 (``theta=``) runs it first.

    Notes
    -----
    ``W = 1/2``, ``||v|| = 1``; while ``||v|| > W``: ``W <- 2W``,
    ``eta = eps / W``, sample until every pair has
    ``sum_s' beta(s, a, s') <= eta / 2`` (each failing pair doubling its
    count), then ``v = EVI(N, c = 1, mu = eps / 2)``. The output is the
    proof's estimate (App. C.1), which docs/semantics.md prescribes over the
    listing's:

    .. math::

        \hat D = \big(1 + 2 \eta (1 + \epsilon) \|v\|_\infty\big)
        (1 + \epsilon)\|v\|_\infty .

    Erratum: Alg. 4's listing outputs :math:`(1 + 2 \eta \|v\|_\infty)
    \|v\|_\infty` (kept as ``D_listing``), which can lie below ``D`` and
    break Thm. 2: with one state, one action, unit cost, ``p(g) = 0.3`` and
    ``eps = 1`` it gives 3.0 < D = 10/3.

    Examples
    --------
    On a deterministic chain of 3 states, ``D = 3``; Lemma 9 allows up to
    ``(1 + 2 * 0.5 * 1.5) * 1.5 * 3 = 11.25`` at ``eps = 0.5``:

    >>> from reference import chain, diameter
    >>> ssp = chain(3)
    >>> est = estimate_diameter(ssp, eps=0.5, delta=0.1, seed=0)
    >>> float(diameter(ssp).D), bool(3 <= est.D_hat <= 11.25)
    (3.0, True)
    """
    model = as_model(model)
    eps, delta = check_accuracy(eps, delta)
    max_iter = check_int("max_iter", max_iter, low=1)
    run = Run(model, run_params("diameter", model, None, eps, delta, None, None, seed),
               seed, callback, checkpoint)
    D_hat, D_listing, v_tilde_max, W, eta = diameter_rounds(kernels, run, eps, delta, max_iter)
    message = (
        f"Alg. 4 stopped after {len(run.rounds('diameter'))} round(s) at W = {W:g} with "
        f"||v_tilde|| = {v_tilde_max:.6g} <= W: D_hat = {D_hat:.6g}."
    )
    return DiameterEstimate(
        D_hat=D_hat, D_listing=D_listing, v_tilde_max=v_tilde_max, W=W, eta=eta,
        n_calls=run.store.calls_made, n_redrawn=run.store.calls_redrawn,
        calls=run.store.n_pair, history=tuple(run.history),
        converged=True, message=message,
    )
