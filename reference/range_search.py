"""SEARCH (Alg. 2): the doubling search over the range guess ``Delta``.

Every choice follows docs/semantics.md, "Algorithms", where it differs from the
paper's listing. :func:`search` is a kernel function (:mod:`reference.backend`).
"""

import time
from dataclasses import dataclass

import numpy as np

from . import evi
from ._checks import check_int, check_real
from .allocation import _top_up_to_fixpoint
from .box_kinds import box_kind
from .certified import Certificate, _certify
from .confidence import _confidence_boxes
from .errors import NotCertifiedWarning, ParameterError, warn_at_caller
from .kernels import NUMPY_KERNELS
from .poured import PouredKernel
from .results import Result
from .runs import Round, Run, as_model, check_accuracy, check_model_costs, converged_evi, run_params
from .theta_bounds import alg3_hitting_check

__all__ = ["SolveResult", "search"]


@dataclass(frozen=True, repr=False)
class SolveResult(Result):
    """Output of :func:`solve` (Alg. 1 or Alg. 3) and of :func:`search` (Alg. 2).

    Attributes
    ----------
    policy : ndarray of int64, shape (S,)
        The returned policy ``pi_tilde``, greedy with respect to ``v_tilde``.
    v_tilde : ndarray of float64, shape (S,)
        The optimistic values of the last EVI (not the policy's values
        ``V^pi``, which :func:`policy_values` computes on a known model).
    p_tilde : PouredKernel, shape (S, S+1)
        The optimistic kernel of ``policy`` (:attr:`EVIResult.p_tilde
        <reference.evi.EVIResult>`): compact, ``O(S + stored entries)``
        whatever the samples per pair.
    Delta_final : float
        The final range guess ``Delta`` of SEARCH (``max v_tilde <= Delta``);
        not to be confused with the confidence level ``delta``.
    D_hat : float or None
        Alg. 3's diameter estimate (``None`` for Alg. 1 and SEARCH).
    nu : float or None
        Alg. 3's cost perturbation ``eps / (2 theta D_hat)``.
    n_calls : int
        Generative-model calls made by the run (all phases, including
        those made before a resumed checkpoint and those of a round lost
        when the run was killed before its checkpoint).
    n_redrawn : int
        Calls of rounds lost before their checkpoint, whose samples the
        resumed run drew again: ``n_calls - n_redrawn`` is the ``n_calls``
        of the uninterrupted run.
    calls : ndarray of int64, shape (S, A)
        Samples per pair (``calls.sum() = n_calls - n_redrawn``).
    history : tuple of Round
        Every round of every phase, in order.
    converged : bool
        Whether SEARCH stopped by its test with a converged EVI: always True
        on a returned result, since a non-converged EVI raises
        :class:`ConvergenceError` instead (no policy is returned from it).
    certificate : Certificate
        Bounds ``lower <= V*`` and ``upper >= V^pi`` computed from the run's
        own samples (:func:`~reference.certified.certify`, KL boxes at
        ``delta``, against the costs given); ``certificate.meets(eps)``
        tells whether they prove the policy eps-optimal. For Alg. 3 they are
        those of the perturbed costs ``max(c, nu)`` SEARCH ran on, tested at
        ``eps / 2`` (App. E; ``upper`` bounds ``V^pi`` of ``c`` too). When
        they do not prove it, ``message`` says so and
        :class:`NotCertifiedWarning` is emitted.
    certified : bool
        Whether ``certificate`` proves the policy eps-optimal: its gap is at
        most ``eps`` and the policy is shown proper; for Alg. 3 the gap is at
        most ``eps / 2`` and the robust unit-cost bound on ``D`` from the same
        boxes is at most ``D_hat`` (so ``nu theta D <= eps / 2`` on the event,
        docs/certified-soundness.md).
    message : str
        How the run ended.
    algorithm : str
        ``"alg1"``, ``"alg3"`` or ``"search"``.
    eps : float
        The accuracy ``certified`` is judged at (``params["eps"]``, checked).
    theta : float or None
        Slack of Alg. 3 (``params["theta"]``, checked; ``None`` for Alg. 1
        and SEARCH).
    params : Params
        The settings of the call (:class:`~reference.results.Result`):
        ``eps``, ``delta``, ``theta`` (:func:`solve` only), ``alpha``,
        ``seed`` and ``max_iter``.
    """

    policy: np.ndarray
    v_tilde: np.ndarray
    p_tilde: PouredKernel
    Delta_final: float
    D_hat: float | None
    nu: float | None
    n_calls: int
    n_redrawn: int
    calls: np.ndarray
    history: tuple[Round, ...]
    converged: bool
    certificate: Certificate
    certified: bool
    message: str
    algorithm: str
    eps: float
    theta: float | None


def search_rounds(kernels, run, costs, eps, delta, alpha, max_iter):
    r"""SEARCH (Alg. 2) on the run's sample store; returns ``(EVIResult, Delta)``.

    Parameters
    ----------
    kernels : KernelSet
        Numerical kernels of the backend.
    run : Run
        Store, generator, history and checkpoint (rounds already in its
        history are not repeated).
    costs : ndarray of float64, shape (S, A)
        The positive cost function ``c'``.
    eps : float
        Accuracy given to SEARCH.
    delta : float
        Confidence level.
    alpha : float
        Constant of the allocation function.
    max_iter : int
        EVI sweep limit.

    Notes
    -----
    With ``iota = min c'`` and ``Delta = 1/2``, repeat: ``Delta <- 2 Delta``;
    top every pair up to ``ceil(phi(Delta, iota))`` samples (eq. 6, at the
    ``Gamma_hat`` fixpoint); run EVI with

    .. math::

        \mu = \frac{\iota \epsilon}{6 \Delta};

    stop when ``max v_tilde <= Delta``. A resumed run whose last SEARCH round
    stopped recomputes that round's EVI from the stored samples (its top-up
    draws nothing).
    """
    iota = float(costs.min())
    prior = run.rounds("search")
    scale = prior[-1].scale if prior else 0.5
    finished = bool(prior) and prior[-1].v_tilde_max <= prior[-1].scale
    while True:
        start = time.perf_counter()
        if not finished:
            scale *= 2.0
        run.start_round(f"SEARCH round {len(run.rounds('search')) + (not finished)} "
                        f"(Delta = {scale:g})")
        target, Gamma_hat = _top_up_to_fixpoint(
            run.model, run.store, run.rng, scale, iota, eps, delta, alpha
        )
        mu = iota * eps / (6.0 * scale)
        where = f"SEARCH at Delta = {scale:g}"
        out = converged_evi(kernels, run, costs, delta, mu, max_iter, where)
        v_tilde_max = float(out.v_tilde.max())
        if not finished:
            run.record(
                Round(phase="search", scale=scale, target=target, Gamma_hat=Gamma_hat,
                      evi_n_iter=out.n_iter, v_tilde_max=v_tilde_max,
                      n_calls=run.store.n_samples, seconds=time.perf_counter() - start)
            )
        if v_tilde_max <= scale:
            return out, scale


def solve_result(kernels, run, out, scale, D_hat, nu, algorithm, eps, delta, theta, alpha, costs):
    """The :class:`SolveResult` of a run whose SEARCH stopped at ``Delta = scale`` with EVI ``out``.

    Certifies the returned policy on the run's own samples against ``costs``
    (:func:`~reference.certified.certify`, KL boxes at ``delta``); warns with
    :class:`NotCertifiedWarning` (and says so in ``message``) when the
    certificate's gap exceeds ``eps``, or ``eps / 2`` for Alg. 3 (``costs``
    are then the perturbed costs ``max(c, nu)`` SEARCH ran on), whose answer
    is certified only when the robust unit-cost bound on ``D`` from the same
    boxes is at most ``D_hat`` (docs/certified-soundness.md).
    """
    target = eps if theta is None else eps / 2.0
    n_rounds = len(run.rounds("search"))
    message = (
        f"SEARCH stopped after {n_rounds} round(s) at Delta = {scale:g} with "
        f"max v_tilde = {float(out.v_tilde.max()):.6g} <= Delta; EVI met its stopping rule "
        f"at j = {out.n_iter - 1}."
    )
    boxes = _confidence_boxes(kernels, run.store.counts(), delta, box_kind("kl"))
    certificate = _certify(kernels, boxes, costs, out.policy.copy(), out.v_tilde)
    proved = certificate._proves(target, False)
    reason = (f"its certificate gives max(upper - lower) = {certificate.gap:.6g}"
              + ("" if certificate.proper else " and does not show it proper"))
    if proved and theta is not None:
        proved, H_max = alg3_hitting_check(kernels, boxes, D_hat)
        reason = (f"the robust unit-cost bound on D from its certificate's boxes, {H_max:.6g}, "
                  f"exceeds D_hat = {D_hat:.6g}, so nu theta D <= eps / 2 is not shown")
    if not proved:
        warning = (
            f"The returned policy is not certified at {target:g}: on the run's own samples "
            f"{reason}, so the samples do not show it eps-optimal (a larger `alpha`, got "
            f"{alpha:g}, or `solve_certified` samples until they do)."
        )
        warn_at_caller(warning, NotCertifiedWarning)
        message = f"{message} Warning: {warning}"
    return SolveResult(
        policy=out.policy,
        v_tilde=out.v_tilde,
        p_tilde=out.p_tilde,
        Delta_final=scale,
        D_hat=D_hat,
        nu=nu,
        n_calls=run.store.calls_made,
        n_redrawn=run.store.calls_redrawn,
        calls=run.store.n_pair,
        history=tuple(run.history),
        converged=bool(out.converged),
        certificate=certificate,
        certified=proved,
        message=message,
        algorithm=algorithm,
        eps=eps,
        theta=theta,
    )


@NUMPY_KERNELS.bind
def search(kernels, model, costs, eps, delta, alpha=1.0, seed=None, max_iter=evi.EVI_MAX_ITER,
           callback=None, checkpoint=None):
    r"""SEARCH (Alg. 2): doubling guess ``Delta`` of the optimistic value range.

    Parameters
    ----------
    model : GenerativeModel or SSP
        Source of samples (an SSP is wrapped in a :class:`TabularGenerativeModel`).
    costs : array_like of shape (S, A)
        The cost function ``c'``, in ``(0, 1]``.
    eps : float in (0, 1]
        Accuracy.
    delta : float in (0, 1)
        Confidence level.
    alpha : float > 0, default 1.0
        Constant of the allocation function (eq. 6).
    seed : None, int, numpy.random.SeedSequence, BitGenerator or Generator
        Randomness of the sampling.
    max_iter : int, default EVI_MAX_ITER
        EVI sweep limit.
    callback : callable, optional
        Called with each :class:`Round` once it is recorded.
    checkpoint : str or os.PathLike, optional
        File updated after every round; if it exists, the run resumes from it
        and ends with the result of an uninterrupted run.

    Returns
    -------
    SolveResult
        With ``algorithm = "search"``.

    Raises
    ------
    ParameterError
        On ``eps``, ``delta`` or ``alpha`` out of range, a cost equal to 0,
        or a checkpoint of another run.
    ShapeError, NotFiniteError, CostError
        On costs of the wrong shape (sizes disagreeing with the model's),
        not finite, or outside ``[0, 1]``.
    ConvergenceError
        If an EVI does not converge within ``max_iter`` sweeps.

    Warns
    -----
    NotCertifiedWarning
        When the certificate of the returned policy, computed on the run's
        own samples (``result.certificate``), does not prove it eps-optimal;
        ``message`` says so too.

    See Also
    --------
    solve : Alg. 1 and Alg. 3, built on it.
    extended_value_iteration : run every round.
    allocation_function : the samples every round draws.

    Notes
    -----
    With :math:`\iota = \min c'` and :math:`\Delta = 1/2`, each round doubles
    :math:`\Delta`, tops every pair up to :math:`\lceil \phi(\Delta, \iota) \rceil`
    samples (eq. 6, at the :math:`\hat\Gamma` fixpoint of docs/semantics.md) and
    runs EVI; it stops at the first round with
    :math:`\|\tilde v\|_\infty \le \Delta`:

    .. math::

        \mu_\Delta = \frac{\iota \epsilon}{6 \Delta}, \qquad
        (\tilde v, \tilde\pi) = \mathrm{EVI}(N, c', \mu_\Delta), \qquad
        \text{stop when } \max_s \tilde v(s) \le \Delta.

    Examples
    --------
    In ``tradeoff()`` the fast action reaches the goal surely at cost 1, so no
    optimistic value exceeds 1 and SEARCH stops in its first round, at
    ``Delta = 1``, with the slow action (value ``0.1 / 0.5 = 0.2`` against 1):

    >>> import reference as sspgm
    >>> ssp = sspgm.tradeoff()
    >>> result = sspgm.search(ssp, ssp.costs, eps=0.1, delta=0.1, seed=0)
    >>> result.algorithm, len(result.history), result.Delta_final, result.policy
    ('search', 1, 1.0, array([1]))
    """
    model = as_model(model)
    costs = check_model_costs(costs, model)
    eps, delta = check_accuracy(eps, delta)
    alpha = check_real("alpha", alpha, 0.0, None, low_open=True)
    max_iter = check_int("max_iter", max_iter, low=1)
    if costs.min() <= 0.0:
        raise ParameterError(
            f"`costs` must be positive for SEARCH (iota = min c' > 0); got min "
            f"{float(costs.min())!r}."
        )
    run = Run(model, run_params("search", model, costs, eps, delta, None, alpha, seed),
               seed, callback, checkpoint)
    out, scale = search_rounds(kernels, run, costs, eps, delta, alpha, max_iter)
    return solve_result(kernels, run, out, scale=scale, D_hat=None, nu=None, algorithm="search",
                        eps=eps, delta=delta, theta=None, alpha=alpha, costs=costs)
