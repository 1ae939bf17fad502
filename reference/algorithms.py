"""The paper's algorithms: SEARCH (Alg. 2), the diameter estimate (Alg. 4), Alg. 1 and Alg. 3.

Each public function is a kernel function (:mod:`reference.backend`): written
once, it receives the backend's kernel set and runs EVI and value iteration on
it; ``fast`` binds its compiled kernel set to the same functions. Every choice follows docs/semantics.md, "Algorithms", where it differs from
the paper's listings.
"""

import hashlib
import numbers
import os
import time
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
import scipy.sparse as sp

from . import evaluation, evi
from ._checks import check_costs, check_int, check_real, make_rng
from .allocation import top_up_to_fixpoint
from .kernels import NUMPY_KERNELS
from .errors import ConvergenceError, ParameterError
from .generative import SampleStore, TabularGenerativeModel
from .model import SSP
from .results import Result

__all__ = [
    "Round",
    "DiameterEstimate",
    "SolveResult",
    "PlugInResult",
    "search",
    "estimate_diameter",
    "solve",
    "plug_in",
]


@dataclass(frozen=True, repr=False)
class Round(Result):
    """Diagnostics of one round of SEARCH (Alg. 2) or of the diameter estimate (Alg. 4).

    Attributes
    ----------
    phase : str
        ``"search"`` or ``"diameter"``.
    scale : float
        The guess of the round: ``Delta`` (SEARCH) or ``W`` (Alg. 4).
    target : int
        Fewest samples of any pair after the round's sampling (``ceil(phi)``
        in SEARCH).
    gamma_hat : int
        Largest empirical support after the sampling.
    evi_iterations : int
        Index ``j`` at which EVI stopped.
    max_v : float
        ``max_s v_tilde(s)``, compared with ``scale`` by the stopping test.
    n_calls : int
        Generative-model calls made so far by the run.
    seconds : float
        Wall time of the round (ignored when rounds are compared).
    """

    phase: str
    scale: float
    target: int
    gamma_hat: int
    evi_iterations: int
    max_v: float
    n_calls: int
    seconds: float = field(compare=False)


@dataclass(frozen=True, repr=False)
class DiameterEstimate(Result):
    """Output of the diameter estimate (Alg. 4).

    Attributes
    ----------
    d_hat : float
        The proof's estimate (App. C.1, Lemma 9)
        ``(1 + 2 eta (1 + eps) ||v||)(1 + eps) ||v||``.
    d_listing : float
        The listing's ``(1 + 2 eta ||v||) ||v||``, kept to document the
        erratum (it can lie below ``D``).
    v_max : float
        ``||v_tilde||_inf`` of the last round.
    w : float
        The last ``W``.
    eta : float
        The last ``eta = eps / W``.
    eps : float
        Accuracy.
    n_calls : int
        Generative-model calls made.
    calls : ndarray of int64, shape (S, A)
        Calls per pair.
    history : tuple of Round
        One record per round.
    """

    d_hat: float
    d_listing: float
    v_max: float
    w: float
    eta: float
    eps: float
    n_calls: int
    calls: np.ndarray
    history: tuple


@dataclass(frozen=True, repr=False)
class SolveResult(Result):
    """Output of :func:`solve` (Alg. 1 or Alg. 3) and of :func:`search` (Alg. 2).

    Attributes
    ----------
    policy : ndarray of int64, shape (S,)
        The returned policy ``pi_tilde``, greedy with respect to ``values``.
    values : ndarray of float64, shape (S,)
        The optimistic values ``v_tilde`` of the last EVI.
    kernel : ndarray of shape (S, S+1) or CSR matrix
        The optimistic kernel of ``policy``.
    delta_final : float
        The final ``Delta`` of SEARCH (``max v_tilde <= Delta``).
    d_hat : float or None
        Alg. 3's diameter estimate (``None`` for Alg. 1 and SEARCH).
    nu : float or None
        Alg. 3's cost perturbation ``eps / (2 theta d_hat)``.
    n_calls : int
        Generative-model calls made by the run (all phases, including
        those made before a resumed checkpoint).
    calls : ndarray of int64, shape (S, A)
        Calls per pair.
    history : tuple of Round
        Every round of every phase, in order.
    converged : bool
        Whether the last EVI met its stopping rule (always True: a
        non-converged EVI raises :class:`ConvergenceError` instead).
    vacuous : bool
        Whether the last EVI sent every state straight to the goal, against
        the samples of ``policy`` for at least one state: the stopping test
        then said nothing about the dynamics, and ``message`` warns (too small
        an ``alpha`` for this ``eps``).
    message : str
        How the run ended.
    algorithm : str
        ``"alg1"``, ``"alg3"`` or ``"search"``.
    eps, delta : float
        Accuracy and confidence level asked for.
    theta : float or None
        Slack of Alg. 3.
    alpha : float
        Constant of the allocation function.
    seed : int or None
        The seed given.
    """

    policy: np.ndarray
    values: np.ndarray
    kernel: object
    delta_final: float
    d_hat: object
    nu: object
    n_calls: int
    calls: np.ndarray
    history: tuple
    converged: bool
    vacuous: bool
    message: str
    algorithm: str
    eps: float
    delta: float
    theta: object
    alpha: float
    seed: object


@dataclass(frozen=True, repr=False)
class PlugInResult(Result):
    """Output of :func:`plug_in`: plain VI on the empirical model.

    Attributes
    ----------
    policy : ndarray of int64, shape (S,)
        Greedy policy of the last VI iterate.
    values : ndarray of float64, shape (S,)
        The last VI iterate.
    n_per_pair : int
        Samples drawn per pair.
    n_calls : int
        Generative-model calls made.
    calls : ndarray of int64, shape (S, A)
        Calls per pair.
    iterations : int
        VI sweeps.
    converged : bool
        Whether VI met its tolerance (False when the empirical model has no
        proper policy and the iterates diverge).
    message : str
        VI's message.
    """

    policy: np.ndarray
    values: np.ndarray
    n_per_pair: int
    n_calls: int
    calls: np.ndarray
    iterations: int
    converged: bool
    message: str


class _Run:
    """Samples, generator, history and checkpoint of one run; resumes from a checkpoint."""

    def __init__(self, model, params, seed, callback, checkpoint):
        self.model = model
        self.callback = callback
        self.checkpoint = checkpoint
        self.params = params
        if checkpoint is not None and os.path.exists(checkpoint):
            self.store, self.rng, meta = SampleStore.load(checkpoint)
            _check_same_run(checkpoint, meta.get("params"), params)
            self.history = [Round(**r) for r in meta["history"]]
        else:
            self.store = SampleStore(model.n_states, model.n_actions)
            self.rng = make_rng(seed)
            self.history = []

    def rounds(self, phase):
        return [r for r in self.history if r.phase == phase]

    def record(self, round_):
        self.history.append(round_)
        if self.checkpoint is not None:
            meta = {"params": self.params, "history": [asdict(r) for r in self.history]}
            self.store.save(self.checkpoint, self.rng, meta)
        if self.callback is not None:
            self.callback(round_)


def _check_same_run(path, saved, params):
    for key, value in params.items():
        if saved is None or saved.get(key) != value:
            was = None if saved is None else saved.get(key)
            raise ParameterError(
                f"`checkpoint` {os.fspath(path)!r} belongs to another run: it has {key} = "
                f"{was!r}, this call has {key} = {value!r}."
            )


def _as_model(model):
    if isinstance(model, SSP):
        return TabularGenerativeModel(model)
    needed = ("n_states", "n_actions", "sample")
    if not all(hasattr(model, name) for name in needed):
        raise ParameterError(
            "`model` must be an SSP or a generative model with `n_states`, `n_actions` "
            f"and `sample(s, a, n, rng)`; got {type(model).__name__}."
        )
    return model


def _check_costs(costs, model):
    return check_costs("costs", costs, model.n_states, model.n_actions, "`model`")


def _check_accuracy(eps, delta):
    eps = check_real("eps", eps, 0.0, 1.0, low_open=True)
    delta = check_real("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    return eps, delta


def _params(algorithm, model, costs, eps, delta, theta, alpha, seed):
    digest = None if costs is None else hashlib.sha256(costs.tobytes()).hexdigest()
    return {
        "algorithm": algorithm,
        "n_states": model.n_states,
        "n_actions": model.n_actions,
        "costs_sha256": digest,
        "eps": eps,
        "delta": delta,
        "theta": theta,
        "alpha": alpha,
        "seed": int(seed) if isinstance(seed, numbers.Integral) else None,
    }


def _run_evi(kernels, run, costs, delta, mu, max_iter, where):
    out = kernels.call(evi.extended_value_iteration, run.store.counts_csr(), costs, delta, mu,
                       max_iter)
    if not out.converged:
        raise ConvergenceError(
            f"EVI did not converge in {where} (mu = {mu:.3g}, max_iter = {max_iter}): "
            f"{out.message} Raise `max_iter`; no policy is returned from a non-converged EVI."
        )
    return out


def _search(kernels, run, costs, eps, delta, alpha, max_iter):
    """SEARCH (Alg. 2) on the run's sample store; returns ``(EVIResult, Delta)``.

    Parameters
    ----------
    kernels : KernelSet
        Numerical kernels of the backend.
    run : _Run
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

        \\mu = \\frac{\\iota \\epsilon}{6 \\Delta};

    stop when ``max v_tilde <= Delta``. A resumed run whose last SEARCH round
    stopped recomputes that round's EVI from the stored samples (its top-up
    draws nothing).
    """
    iota = float(costs.min())
    prior = run.rounds("search")
    scale = prior[-1].scale if prior else 0.5
    finished = bool(prior) and prior[-1].max_v <= prior[-1].scale
    while True:
        start = time.perf_counter()
        if not finished:
            scale *= 2.0
        target, gamma_hat = top_up_to_fixpoint(
            run.model, run.store, run.rng, scale, iota, eps, delta, alpha
        )
        mu = iota * eps / (6.0 * scale)
        out = _run_evi(kernels, run, costs, delta, mu, max_iter, f"SEARCH at Delta = {scale:g}")
        max_v = float(out.values.max())
        if not finished:
            run.record(
                Round("search", scale, target, gamma_hat, out.iterations, max_v,
                      run.store.n_samples, time.perf_counter() - start)
            )
        if max_v <= scale:
            return out, scale


def _sample_until_radius(run, delta, bound):
    """Alg. 4's sampling: until every pair has ``sum_s' beta(s, a, s') <= bound``.

    Deterministic schedule: while some pairs fail, every failing pair (in
    order ``(s, a)``) draws ``max(1, N(s, a))`` more samples, doubling its
    count.
    """
    while True:
        radius = evi.bernstein_radius_sum(run.store.counts_csr(), delta)
        failing = np.flatnonzero(radius.reshape(-1) > bound)
        if failing.size == 0:
            return
        more = np.maximum(1, run.store.n_pair.reshape(-1)[failing])
        run.store.draw_pairs(run.model, failing, more, run.rng)


def _diameter(kernels, run, eps, delta, max_iter):
    """The diameter estimate (Alg. 4) on the run's sample store.

    Parameters
    ----------
    kernels : KernelSet
        Numerical kernels of the backend.
    run : _Run
        Store, generator, history and checkpoint.
    eps : float
        Accuracy.
    delta : float
        Confidence level.
    max_iter : int
        EVI sweep limit.

    Returns
    -------
    d_hat, d_listing, v_max, w, eta : float

    Notes
    -----
    ``W = 1/2``, ``||v|| = 1``; while ``||v|| > W``: ``W <- 2W``,
    ``eta = eps / W``, sample until every pair has
    ``sum_s' beta(s, a, s') <= eta / 2`` (:func:`_sample_until_radius`),
    ``v = EVI(N, c = 1, mu = eps / 2)``. The output is the proof's value
    (docs/semantics.md; App. C.1)

    .. math::

        \\hat D = \\big(1 + 2 \\eta (1 + \\epsilon) \\|v\\|_\\infty\\big)
        (1 + \\epsilon)\\|v\\|_\\infty,

    not the listing's ``(1 + 2 eta ||v||) ||v||``, which can lie below ``D``
    and break Thm. 2: with one state, one action, unit cost,
    ``p(g) = 0.3`` and ``eps = 1``, the listing gives 3.0 < D = 10/3.
    """
    prior = run.rounds("diameter")
    w = prior[-1].scale if prior else 0.5
    v_max = prior[-1].max_v if prior else 1.0
    unit = np.ones((run.store.n_states, run.store.n_actions))
    while v_max > w:
        start = time.perf_counter()
        w *= 2.0
        _sample_until_radius(run, delta, eps / w / 2.0)
        out = _run_evi(kernels, run, unit, delta, eps / 2.0, max_iter, f"Alg. 4 at W = {w:g}")
        v_max = float(out.values.max())
        run.record(
            Round("diameter", w, int(run.store.n_pair.min()), run.store.gamma_hat,
                  out.iterations, v_max, run.store.n_samples, time.perf_counter() - start)
        )
    eta = eps / w
    d_hat = (1.0 + 2.0 * eta * (1.0 + eps) * v_max) * (1.0 + eps) * v_max
    d_listing = (1.0 + 2.0 * eta * v_max) * v_max
    return d_hat, d_listing, v_max, w, eta


def _vacuous(store, out):
    """Whether the stopping test saw no dynamics: EVI sent every state straight to the goal,
    against the samples of at least one of them.

    With ``p_tilde`` the optimistic kernel of the returned policy and ``p_hat``
    the empirical one, the run is vacuous when

    .. math::

        \\tilde p(g \\mid s, \\pi(s)) = 1 \\ \\text{for every } s
        \\quad\\text{and}\\quad \\hat p(g \\mid s, \\pi(s)) < 1 \\ \\text{for some } s:

    then ``v_tilde(s) = c(s, pi(s))`` everywhere and the test
    ``max v_tilde <= Delta`` is passed whatever the dynamics. A policy whose
    pairs all truly reach the goal in one step (``p_hat(g) = 1``) is not
    vacuous.
    """
    S, A = store.n_states, store.n_actions
    kernel = out.kernel
    goal_tilde = kernel[:, [S]].toarray().ravel() if sp.issparse(kernel) else kernel[:, S]
    rows = np.arange(S) * A + out.policy
    goal_hat = store.counts_csr()[rows][:, [S]].toarray().ravel()
    n_plus = np.maximum(1, store.n_pair.reshape(-1)[rows])
    return bool(np.all(goal_tilde >= 1.0 - 1e-12) and np.any(goal_hat < n_plus))


def _solve_result(run, out, scale, d_hat, nu, algorithm, eps, delta, theta, alpha, seed):
    n_rounds = len(run.rounds("search"))
    message = (
        f"SEARCH stopped after {n_rounds} round(s) at Delta = {scale:g} with "
        f"max v_tilde = {float(out.values.max()):.6g} <= Delta; EVI met its stopping rule "
        f"at j = {out.iterations}."
    )
    vacuous = _vacuous(run.store, out)
    if vacuous:
        warning = (
            f"The confidence sets are vacuous at this sample size: EVI sent every state "
            f"straight to the goal, against the samples of the returned policy, so the "
            f"stopping test carried no information about the dynamics. The guarantee needs a "
            f"larger `alpha` (got {alpha:g}) or a smaller `eps`."
        )
        warnings.warn(warning, RuntimeWarning, stacklevel=4)
        message = f"{message} Warning: {warning}"
    return SolveResult(
        policy=out.policy,
        values=out.values,
        kernel=out.kernel,
        delta_final=scale,
        d_hat=d_hat,
        nu=nu,
        n_calls=run.store.n_samples,
        calls=run.store.n_pair,
        history=tuple(run.history),
        converged=bool(out.converged),
        vacuous=vacuous,
        message=message,
        algorithm=algorithm,
        eps=eps,
        delta=delta,
        theta=theta,
        alpha=alpha,
        seed=seed,
    )


@NUMPY_KERNELS.bind
def search(kernels, model, costs, eps, delta, alpha=1.0, seed=None, max_iter=evi.EVI_MAX_ITER,
           callback=None, checkpoint=None):
    """SEARCH (Alg. 2): doubling guess ``Delta`` of the optimistic value range.

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
    seed : None, int or numpy.random.Generator
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

    Notes
    -----
    With :math:`\\iota = \\min c'` and :math:`\\Delta = 1/2`, each round doubles
    :math:`\\Delta`, tops every pair up to :math:`\\lceil \\phi(\\Delta, \\iota) \\rceil`
    samples (eq. 6, at the :math:`\\hat\\Gamma` fixpoint of docs/semantics.md) and
    runs EVI; it stops at the first round with
    :math:`\\|\\tilde v\\|_\\infty \\le \\Delta`:

    .. math::

        \\mu_\\Delta = \\frac{\\iota \\epsilon}{6 \\Delta}, \\qquad
        (\\tilde v, \\tilde\\pi) = \\mathrm{EVI}(N, c', \\mu_\\Delta), \\qquad
        \\text{stop when } \\max_s \\tilde v(s) \\le \\Delta.
    """
    model = _as_model(model)
    costs = _check_costs(costs, model)
    eps, delta = _check_accuracy(eps, delta)
    alpha = check_real("alpha", alpha, 0.0, None, low_open=True)
    max_iter = check_int("max_iter", max_iter, low=1)
    if costs.min() <= 0.0:
        raise ParameterError(
            f"`costs` must be positive for SEARCH (iota = min c' > 0); got min "
            f"{float(costs.min())!r}."
        )
    run = _Run(model, _params("search", model, costs, eps, delta, None, alpha, seed),
               seed, callback, checkpoint)
    out, scale = _search(kernels, run, costs, eps, delta, alpha, max_iter)
    return _solve_result(run, out, scale, None, None, "search", eps, delta, None, alpha, seed)


@NUMPY_KERNELS.bind
def estimate_diameter(kernels, model, eps, delta, seed=None, max_iter=evi.EVI_MAX_ITER, callback=None,
                      checkpoint=None):
    """Upper estimate of the SSP-diameter ``D`` (Alg. 4, App. C.1).

    Parameters
    ----------
    model : GenerativeModel or SSP
        Source of samples.
    eps : float in (0, 1]
        Accuracy.
    delta : float in (0, 1)
        Confidence level.
    seed : None, int or numpy.random.Generator
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

            D \\le \\hat D \\le \\big(1 + 2 \\epsilon (1 + \\epsilon)\\big)(1 + \\epsilon) D.

    Raises
    ------
    ParameterError
        On ``eps`` outside ``(0, 1]``, ``delta`` outside ``(0, 1)``, or a
        checkpoint of another run.
    ConvergenceError
        If an EVI does not converge within ``max_iter`` sweeps.

    Notes
    -----
    ``W = 1/2``, ``||v|| = 1``; while ``||v|| > W``: ``W <- 2W``,
    ``eta = eps / W``, sample until every pair has
    ``sum_s' beta(s, a, s') <= eta / 2`` (each failing pair doubling its
    count), then ``v = EVI(N, c = 1, mu = eps / 2)``. The output is the
    proof's estimate (App. C.1), which docs/semantics.md prescribes over the
    listing's:

    .. math::

        \\hat D = \\big(1 + 2 \\eta (1 + \\epsilon) \\|v\\|_\\infty\\big)
        (1 + \\epsilon)\\|v\\|_\\infty .

    Erratum: Alg. 4's listing outputs :math:`(1 + 2 \\eta \\|v\\|_\\infty)
    \\|v\\|_\\infty` (kept as ``d_listing``), which can lie below ``D`` and
    break Thm. 2: with one state, one action, unit cost, ``p(g) = 0.3`` and
    ``eps = 1`` it gives 3.0 < D = 10/3.
    """
    model = _as_model(model)
    eps, delta = _check_accuracy(eps, delta)
    max_iter = check_int("max_iter", max_iter, low=1)
    run = _Run(model, _params("diameter", model, None, eps, delta, None, None, seed),
               seed, callback, checkpoint)
    d_hat, d_listing, v_max, w, eta = _diameter(kernels, run, eps, delta, max_iter)
    return DiameterEstimate(
        d_hat=d_hat, d_listing=d_listing, v_max=v_max, w=w, eta=eta, eps=eps,
        n_calls=run.store.n_samples, calls=run.store.n_pair, history=tuple(run.history),
    )


@NUMPY_KERNELS.bind
def solve(kernels, model, costs, eps, delta, theta=None, alpha=1.0, seed=None, max_iter=evi.EVI_MAX_ITER,
          callback=None, checkpoint=None):
    """An eps-optimal policy from a generative model: Alg. 1, or Alg. 3 when ``theta`` is given.

    Parameters
    ----------
    model : GenerativeModel or SSP
        Source of samples (an SSP is wrapped in a :class:`TabularGenerativeModel`).
    costs : array_like of shape (S, A)
        Costs in ``[0, 1]``; Alg. 1 needs ``c_min > 0``.
    eps : float in (0, 1]
        Accuracy.
    delta : float in (0, 1)
        Confidence level.
    theta : float >= 1, optional
        Slack of Alg. 3. ``None`` runs Alg. 1.
    alpha : float > 0, default 1.0
        Constant of the allocation function (eq. 6), unspecified in the paper.
    seed : None, int or numpy.random.Generator
        Randomness of the sampling: a seed fixes the result.
    max_iter : int, default EVI_MAX_ITER
        EVI sweep limit.
    callback : callable, optional
        Called with each :class:`Round` once it is recorded (progress).
    checkpoint : str or os.PathLike, optional
        File holding the samples, the generator's state and the history,
        rewritten after every round. When it exists, the run resumes from it
        and ends with exactly the result of an uninterrupted run.

    Returns
    -------
    SolveResult
        Policy, optimistic values, final ``Delta``, ``d_hat`` and ``nu``
        (Alg. 3), calls, and the history of rounds.

    Raises
    ------
    ParameterError
        On ``eps`` outside ``(0, 1]``, ``delta`` outside ``(0, 1)``,
        ``theta`` not a finite number ``>= 1``, ``alpha <= 0``, ``c_min = 0``
        without ``theta``, or a checkpoint of another run.
    ShapeError, NotFiniteError, CostError
        On costs of the wrong shape (or sizes disagreeing with the model's),
        not finite, or outside ``[0, 1]``.
    ConvergenceError
        If an EVI does not converge within ``max_iter`` sweeps.

    Notes
    -----
    Alg. 1 (``c_min > 0``): SEARCH(c, eps); Thm. 1: with probability
    ``>= 1 - delta``, ``||V^pi - V*||_inf <= eps``.

    Alg. 3 (docs/semantics.md): ``D_hat`` from Alg. 4 at accuracy ``eps``, then

    .. math::

        \\nu = \\frac{\\epsilon}{2 \\theta \\hat D}, \\qquad
        \\tilde\\pi = \\mathrm{SEARCH}\\big(\\max(c, \\nu), \\epsilon / 2\\big),

    one sample store serving both phases; Thm. 2 as proved (App. E):
    ``V^pi <= V*_theta + eps`` componentwise. Two choices follow docs/semantics.md
    where the listings differ: SEARCH runs at ``eps / 2`` (App. E applies
    Thm. 1 in the perturbed model at that accuracy; the listing of Alg. 3
    passes no accuracy), and it keeps Alg. 4's samples instead of starting
    from the empty set of Alg. 2's listing (the confidence event of Lemma 5
    holds uniformly over time).

    The guarantees hold for a large enough ``alpha``, which the paper does
    not give. With ``alpha = 1`` and a coarse ``eps`` the first round can
    leave every Bernstein box covering ``[0, 1]`` (``28 L / N >= 1``): EVI
    then sends all optimistic mass to the goal, ``max v_tilde = c <= 1 =
    Delta`` and SEARCH stops at once with an uninformed policy (as on
    ``gridworld()`` with ``eps = 0.5``, where ``eps = 0.1`` or ``alpha = 10``
    gives the optimal policy).
    """
    model = _as_model(model)
    costs = _check_costs(costs, model)
    eps, delta = _check_accuracy(eps, delta)
    alpha = check_real("alpha", alpha, 0.0, None, low_open=True)
    max_iter = check_int("max_iter", max_iter, low=1)
    if theta is None:
        if costs.min() <= 0.0:
            s, a = (int(i) for i in np.argwhere(costs <= 0.0)[0])
            raise ParameterError(
                f"`costs` has c_min = 0 (costs[{s}, {a}] = 0) and Alg. 1 needs c_min > 0; "
                "pass `theta` (>= 1) to run Alg. 3, which is eps-optimal against the "
                "policies reaching the goal within theta times the diameter."
            )
        run = _Run(model, _params("alg1", model, costs, eps, delta, None, alpha, seed),
                   seed, callback, checkpoint)
        out, scale = _search(kernels, run, costs, eps, delta, alpha, max_iter)
        return _solve_result(run, out, scale, None, None, "alg1", eps, delta, None, alpha, seed)
    theta = check_real("theta", theta, 1.0)
    run = _Run(model, _params("alg3", model, costs, eps, delta, theta, alpha, seed),
               seed, callback, checkpoint)
    d_hat = _diameter(kernels, run, eps, delta, max_iter)[0]
    nu = eps / (2.0 * theta * d_hat)
    perturbed = np.maximum(costs, nu)
    out, scale = _search(kernels, run, perturbed, eps / 2.0, delta, alpha, max_iter)
    return _solve_result(run, out, scale, d_hat, nu, "alg3", eps, delta, theta, alpha, seed)


@NUMPY_KERNELS.bind
def plug_in(kernels, model, costs, n_per_pair, seed=None, tol=1e-8, max_iter=100_000):
    """Naive baseline: ``n_per_pair`` samples per pair, then plain VI on the empirical model.

    Parameters
    ----------
    model : GenerativeModel or SSP
        Source of samples.
    costs : array_like of shape (S, A)
        Costs in ``[0, 1]``.
    n_per_pair : int >= 1
        Budget per pair (total ``S A n_per_pair`` calls).
    seed : None, int or numpy.random.Generator
        Randomness of the sampling.
    tol : float > 0, default 1e-8
        VI tolerance.
    max_iter : int, default 100000
        VI sweep limit.

    Returns
    -------
    PlugInResult
        VI's greedy policy on ``p_hat = N / N(s, a)``:

        .. math::

            V_{k+1}(s) = \\min_a \\Big\\{ c(s,a) + \\sum_{s'} \\hat p(s'|s,a) V_k(s') \\Big\\}.

        When ``p_hat`` has no proper policy the iterates diverge,
        ``converged`` is False, and the policy can be improper in the true
        model: the failure EVI avoids (docs/semantics.md, "Confidence sets").

    Raises
    ------
    ParameterError
        On ``n_per_pair < 1``, ``tol <= 0`` or ``max_iter < 1``.
    ShapeError, NotFiniteError, CostError
        On costs as in :func:`solve`.
    """
    model = _as_model(model)
    costs = _check_costs(costs, model)
    n_per_pair = check_int("n_per_pair", n_per_pair, low=1)
    store = SampleStore(model.n_states, model.n_actions)
    store.top_up(model, n_per_pair, make_rng(seed))
    counts = store.counts_csr().astype(np.float64)
    p_hat = sp.csr_array(sp.diags_array(1.0 / counts.sum(axis=1)) @ counts)
    empirical = SSP(p_hat, costs, require_proper=False, name="empirical")
    out = kernels.call(evaluation.value_iteration, empirical, tol, max_iter)
    return PlugInResult(
        policy=np.asarray(out.policy, dtype=np.int64),
        values=np.asarray(out.values),
        n_per_pair=n_per_pair,
        n_calls=store.n_samples,
        calls=store.n_pair,
        iterations=int(out.iterations),
        converged=bool(out.converged),
        message=out.message,
    )
