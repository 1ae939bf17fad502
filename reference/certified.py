r"""Certificates computed from the data, and a solver that stops once it proves eps-optimality.

A **certificate** of a policy ``pi`` is a pair of value vectors computed from
the samples alone: ``lower <= V*`` and ``upper >= V^pi`` in every state, both
holding on the confidence event of the boxes (probability at least
``1 - delta``). Its ``gap = max_s (upper - lower)`` bounds the policy's error
``max_s (V^pi - V*)``, whatever the constants of the allocation function were, so a
policy whose gap is at most ``eps`` is eps-optimal with probability at least
``1 - delta``. Its ``policy_gap`` bounds the same error from the separation
of the policy's actions (:mod:`reference.policy_gap`), never above ``gap``.
:func:`certify` computes one for any policy; :func:`solve_certified` samples
until its own policy is certified.
"""

import time
from dataclasses import dataclass, field, replace

import numpy as np

from ._checks import INT64_MAX, as_float_array, check_policy, check_real
from .box_kinds import box_kind
from .certified_sampling import GROWTH, _next_draws
from .certified_stall import StallWatch
from .errors import NotCertifiedWarning, ParameterError, warn_at_caller
from .kernels import NUMPY_KERNELS
from .policy_gap import policy_gap_bound
from .results import Record, Result, call_params
from .robust import _optimistic, _robust_values, checked_inputs
from .runs import Run, as_model, check_accuracy, check_model_costs, checked_budget, run_params
from .store_boxes import KeptEnds, store_boxes
from .theta_bounds import proper_everywhere, round_bounds, theta_round

__all__ = ["INITIAL_PER_PAIR", "GROWTH", "SAMPLINGS", "TARGETS", "Certificate", "CertifiedRound",
           "CertifiedResult", "certify", "solve_certified"]

SAMPLINGS = ("adaptive", "uniform")
"""The values of :func:`solve_certified`'s ``sampling``: how each round's new calls are
spread over the pairs."""

TARGETS = ("value", "policy")
"""What an answer is asked to be right about: the values (:func:`solve_certified` certifies
``gap``) or the policy (``policy_gap``); :func:`~reference.lower_bound.instance_lower_bound`'s
targets too."""

INITIAL_PER_PAIR = 64
"""Samples of every pair in the first round of :func:`solve_certified`."""


@dataclass(frozen=True, repr=False)
class Certificate(Result):
    r"""Bounds on ``V*`` and ``V^pi`` computed from samples, valid on the confidence event.

    Attributes
    ----------
    policy : ndarray of int64, shape (S,)
        The certified policy.
    lower : ndarray of float64, shape (S,)
        ``lower <= V*`` (the best value over proper policies): the fixed point
        of EVI's operator over the boxes, checked
        (:func:`reference.robust.optimistic_values`).
    upper : ndarray of float64, shape (S,)
        ``upper >= V^pi``: the policy's worst case over the boxes, checked
        (:func:`reference.robust.robust_policy_values`); ``+inf`` where no
        finite bound holds.
    gap : float
        ``max_s (upper - lower)``: on the event,
        :math:`\max_s (V^\pi - V^*)(s) \le` ``gap``.
    relative_gap : float
        ``max_s (upper - lower) / lower`` (``0`` where both are 0, ``inf``
        where only ``lower`` is).
    policy_gap : float
        ``max_s`` of :func:`reference.policy_gap.policy_gap_bound`: on the
        event, :math:`\max_s (V^\pi - V^*)(s) \le` ``policy_gap``
        ``<= gap``. It certifies the policy, not the values. On a round of
        :func:`solve_certified` with ``theta``, whose ``lower`` bounds
        ``V*_theta`` and not ``V*``, it is ``gap``.
    policy_relative_gap : float
        The same per-state bound over ``lower``, conventions of
        ``relative_gap``; on the event,
        ``V^pi <= (1 + policy_relative_gap) V*`` in every state.
    kind : str
        The confidence-set kind (``params["kind"]``, checked).
    delta : float
        The confidence level: the bounds hold together with probability at
        least ``1 - delta`` (``params["delta"]``, checked).
    converged : bool
        Whether both policy iterations stopped on their own (the bounds are
        valid either way: each passed its check).
    proper : bool
        Whether the policy is proper from every state in every kernel of the
        boxes, so in the true model on the event (docs/certified-soundness.md).
    message : str
        One line: the gap, and how the two bounds were computed.
    params : Params
        ``delta`` and ``kind`` (:class:`~reference.results.Result`): the
        arguments of :func:`certify`, or those a solver computed the
        certificate of its answer with.
    """

    policy: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    gap: float
    relative_gap: float
    policy_gap: float
    policy_relative_gap: float
    kind: str
    delta: float
    converged: bool
    proper: bool
    message: str

    def meets(self, eps, relative=False, target="value"):
        """Whether it proves ``eps``-optimality (``relative``: ``upper <= (1 + eps) lower``).

        Never for a policy not shown ``proper``: with zero costs, one that
        never reaches the goal can have ``upper = lower``.

        Parameters
        ----------
        eps : float > 0
            Accuracy.
        relative : bool, default False
            Test the relative gap instead of the absolute one.
        target : {"value", "policy"}, default "value"
            Test ``gap`` (the values are pinned to ``eps``) or ``policy_gap``
            (the policy is ``eps``-optimal).

        Returns
        -------
        bool
        """
        eps = check_real("eps", eps, 0.0, None, low_open=True)
        if target not in TARGETS:
            raise ParameterError(f"`target` must be one of {TARGETS}; got {target!r}.")
        return self._proves(eps, relative, target)

    def _proves(self, eps, relative, target="value"):
        """:meth:`meets` of checked arguments, which it trusts."""
        gaps = ((self.relative_gap, self.gap) if target == "value"
                else (self.policy_relative_gap, self.policy_gap))
        return self.proper and bool(gaps[0 if relative else 1] <= eps)


@dataclass(frozen=True, repr=False)
class CertifiedRound(Record):
    """One round of :func:`solve_certified`.

    Attributes
    ----------
    n_calls : int
        Calls made so far, lost ones included (the boxes use every sample kept).
    gap, relative_gap : float
        Of the round's certificate (against ``V*_theta`` with ``theta``).
    max_lower, max_upper : float
        ``max lower`` and ``max upper`` of the round.
    n_infinite : int
        States where ``upper`` is infinite.
    D_hat : float or None
        With ``theta``: the robust unit-cost bound on ``D`` (``inf`` while
        none is finite).
    nu : float or None
        With ``theta``: the cost floor (``eps / (2 theta D_hat)``, or less
        with ``relative``).
    seconds : float
        Wall time of the round (ignored when rounds are compared).
    """

    n_calls: int
    gap: float
    relative_gap: float
    max_lower: float
    max_upper: float
    n_infinite: int
    D_hat: float | None
    nu: float | None
    seconds: float = field(compare=False)


@dataclass(frozen=True, repr=False)
class CertifiedResult(Result):
    """Output of :func:`solve_certified`.

    Attributes
    ----------
    policy : ndarray of int64, shape (S,)
        ``pi_U``, the policy minimising the pessimistic value of the last round.
    values : ndarray of float64, shape (S,)
        An upper bound on ``V^pi`` of ``policy`` on the confidence event:
        ``U = certificate.upper`` (``+inf`` where none is finite).
    certificate : Certificate
        The last round's certificate of ``policy``; with ``theta``,
        ``lower <= V*_theta`` and ``upper >= V^pi`` (docs/certified-soundness.md).
    certified : bool
        Whether the certificate meets the target, for a policy shown proper:
        ``gap <= eps``, or ``relative_gap <= eps`` with ``relative``
        (``policy_gap`` and ``policy_relative_gap`` with ``target="policy"``).
    n_calls : int
        Calls made by the run (before a resume and lost ones included); ``budget`` caps it.
    calls : ndarray of int64, shape (S, A)
        Samples per pair (``n_calls`` less the calls whose samples were lost).
    history : tuple of CertifiedRound
        One record per round.
    converged : bool
        Same as ``certified``: whether the run reached its target.
    message : str
        How the run ended.
    eps : float
        The accuracy ``certified`` is judged at (``params["eps"]``, checked).
    relative : bool
        Whether ``eps`` is relative (``params["relative"]``, checked).
    theta : float or None
        Slack of the ``c_min = 0`` variant (``params["theta"]``, checked).
    D_hat, nu : float or None
        With ``theta``: the last round's bound on ``D`` and cost floor.
    params : Params
        The settings of the call (:class:`~reference.results.Result`):
        ``eps``, ``delta``, ``kind``, ``relative``, ``theta``, ``budget``,
        ``seed``, ``sampling`` and ``target``.
    """

    policy: np.ndarray
    values: np.ndarray
    certificate: Certificate
    certified: bool
    n_calls: int
    calls: np.ndarray
    history: tuple[CertifiedRound, ...]
    converged: bool
    message: str
    eps: float
    relative: bool
    theta: float | None
    D_hat: float | None
    nu: float | None


def _gaps(lower, diff):
    """``(max diff, max diff / lower)`` of per-state gaps ``diff``, conventions of Certificate."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff <= 0, 0.0, np.where(lower > 0, diff / lower, np.inf))
    return float(diff.max()), float(ratio.max())


def _policy_gaps(kernels, boxes, costs, policy, lower, upper):
    """``(policy_gap, policy_relative_gap)``: :func:`_gaps` of :func:`policy_gap_bound`."""
    return _gaps(lower, policy_gap_bound(kernels, boxes, costs, policy, lower, upper))


def _certificate(kernels, boxes, costs, policy, lower, upper, lower_message, converged, proper):
    """The Certificate of ``policy`` from the checked bounds ``lower``, ``upper`` of ``boxes``.

    ``costs`` gives ``policy_gap`` its separation bound; ``None`` (a ``theta``
    round, whose ``lower`` bounds ``V*_theta``) makes it ``gap``.
    """
    gap, relative_gap = _gaps(lower, np.where(np.isinf(upper), np.inf, upper - lower))
    if costs is None:
        policy_gap, policy_relative_gap = gap, relative_gap
    else:
        policy_gap, policy_relative_gap = _policy_gaps(kernels, boxes, costs, policy, lower,
                                                       upper)
    n_inf = int(np.isinf(upper).sum())
    how = f"{n_inf} state(s) with no finite upper bound" if n_inf else "every upper bound finite"
    how += "" if proper else "; the policy is not shown proper"
    message = (
        f"{boxes.kind} boxes at delta = {boxes.delta:g}: gap max(upper - lower) = {gap:.6g}, "
        f"relative gap {relative_gap:.6g}; {how}. Lower: {lower_message}"
    )
    return Certificate(policy=policy, lower=lower, upper=upper, gap=gap,
                       relative_gap=relative_gap, policy_gap=policy_gap,
                       policy_relative_gap=policy_relative_gap, kind=boxes.kind,
                       delta=boxes.delta, converged=converged, proper=proper, message=message,
                       params=call_params(delta=boxes.delta, kind=boxes.kind))


@NUMPY_KERNELS.bind
def certify(kernels, counts, costs, policy, delta, kind="mixture", start=None):
    r"""Certificate of a policy from sample counts: ``lower <= V*`` and ``upper >= V^pi``.

    Parameters
    ----------
    counts : ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts ``N(s, a, s')``; CSR counts are never densified.
    costs : array_like of shape (S, A)
        Costs, ``>= 0``.
    policy : array_like of int, shape (S,)
        The policy to certify.
    delta : float in (0, 1)
        Confidence level of the boxes.
    kind : {"mixture", "kl", "bernstein", "paper"}, default "mixture"
        The boxes (:func:`reference.confidence.confidence_boxes`).
    start : array_like of float, shape (S,), optional
        Values close to the optimist's fixed point (for example EVI's
        ``v_tilde``): its first kernel is poured against them instead of
        zeros, which saves evaluations and never changes what the
        checks accept.

    Returns
    -------
    Certificate
        With probability at least ``1 - delta`` (the event that the true
        kernel lies in every box),

        .. math::

            \text{lower} \le V^* \quad\text{and}\quad V^\pi \le \text{upper},
            \qquad\text{so}\qquad
            \max_s \big(V^\pi(s) - V^*(s)\big) \le \text{gap}.

    Raises
    ------
    ShapeError, NotFiniteError, ParameterError
        On counts, costs, policy, ``delta`` or ``kind`` out of form.

    See Also
    --------
    solve_certified : samples until its own policy's certificate holds.
    Certificate.meets : whether a certificate proves an accuracy.

    Notes
    -----
    ``lower`` comes from :func:`reference.robust.optimistic_values` started at
    ``policy`` and ``upper`` from :func:`reference.robust.robust_policy_values`,
    whose adversary starts from its pour against ``lower`` (the order of the
    next states by ``lower`` is mostly that of ``upper``, which saves an
    evaluation); each is accepted only after its Bellman check, so the start
    changes the work, never the validity. With the time-uniform
    kinds the certificate stays valid however the samples were chosen and
    whenever it is computed.

    Examples
    --------
    >>> import numpy as np
    >>> counts = np.zeros((1, 2, 2)); counts[0, 0] = [1000, 0]; counts[0, 1] = [0, 1000]
    >>> cert = certify(counts, np.ones((1, 2)), [1], delta=0.1)
    >>> bool(cert.meets(0.1)), bool(certify(counts, np.ones((1, 2)), [0], 0.1).meets(0.1))
    (True, False)
    """
    boxes, costs = checked_inputs(kernels, counts, costs, delta, kind)
    policy = check_policy(policy, boxes.n_states, boxes.n_actions)
    start = None if start is None else as_float_array("start", start, (boxes.n_states,))
    return _certify(kernels, boxes, costs, policy, start)


def _certify(kernels, boxes, costs, policy, start):
    """:func:`certify` on boxes, of checked arguments (as :func:`certify` makes them)."""
    lower, _, _, _, lower_converged, lower_message = _optimistic(kernels, boxes, costs, policy,
                                                                 start)
    costs_pi = costs[np.arange(boxes.n_states), policy]
    upper, _, infinite, _, upper_converged, _, _ = _robust_values(kernels, boxes, costs_pi,
                                                                  policy, lower)
    return _certificate(kernels, boxes, costs, policy, lower, upper, lower_message,
                        lower_converged and upper_converged,
                        proper_everywhere(boxes, policy, costs_pi, infinite))


def _draw(run, more):
    """Draw ``more[s*A + a]`` samples of every pair (int64 ``>= 0``, within the cap: unchecked)."""
    pairs = np.flatnonzero(more > 0)
    run.store._draw(run.model, pairs, more[pairs], int(more.sum()), run.rng)


def _params(model, costs, eps, delta, kind, relative, theta, budget, sampling, seed, target):
    """What identifies a certified run in its checkpoint."""
    params = run_params("certified", model, costs, eps, delta, theta, None, seed)
    params.update(kind=kind, relative=relative, budget=budget, sampling=sampling,
                  target=target)
    return params


def _with_policy_gap(kernels, boxes, costs, cert):
    """``cert`` (whose ``policy_gap`` is its ``gap``) with the policy gap of ``costs``."""
    policy_gap, policy_relative_gap = _policy_gaps(kernels, boxes, costs, cert.policy,
                                                   cert.lower, cert.upper)
    return replace(cert, policy_gap=policy_gap, policy_relative_gap=policy_relative_gap)


def _round(kernels, boxes, costs, eps, theta, relative, policies, policy_gap):
    """Bounds of one round: ``(costs', (L, pi_L, kernel_L, U), certificate, D_hat, nu)``.

    With ``theta`` (:func:`reference.theta_bounds.theta_round`) the
    certificate bounds ``V*_theta`` and ``V^pi`` of ``costs``, and the other
    bounds are those of the costs ``costs'`` the round works on. Without
    ``policy_gap`` the certificate's ``policy_gap`` is its ``gap`` (a looser
    bound, as with ``theta``): a run stopping on the values computes the
    policy gap of its last round only (:func:`_with_policy_gap`).
    """
    D_hat = nu = None
    if theta is None:
        state, parts = round_bounds(kernels, boxes, costs, policies)
        return (costs, state, _certificate(kernels, boxes, costs if policy_gap else None, *parts),
                D_hat, nu)
    costs, state, parts, D_hat, nu = theta_round(kernels, boxes, costs, eps, theta, relative,
                                                 policies)
    return costs, state, _certificate(kernels, boxes, None, *parts), D_hat, nu


@NUMPY_KERNELS.bind
def solve_certified(kernels, model, costs, eps, delta, kind="mixture", relative=False,
                    theta=None, budget=None, seed=None, checkpoint=None, callback=None,
                    sampling="adaptive", target="value"):
    r"""A policy with a certificate of eps-optimality, sampling only until the certificate holds.

    Parameters
    ----------
    model : GenerativeModel or SSP
        Source of samples (an SSP is wrapped in a
        :class:`~reference.generative.TabularGenerativeModel`).
    costs : array_like of shape (S, A)
        Costs in ``[0, 1]``; ``c_min > 0`` unless ``theta`` is given.
    eps : float in (0, 1]
        Accuracy (absolute, or relative with ``relative=True``).
    delta : float in (0, 1)
        Confidence level.
    kind : {"mixture", "kl", "bernstein", "paper"}, default "mixture"
        Confidence sets (:func:`reference.confidence.confidence_boxes`); the
        guarantee needs a time-uniform kind (any but ``"paper"``), since the
        run stops on its data.
    relative : bool, default False
        Stop when ``upper <= (1 + eps) lower`` instead of ``upper - lower <= eps``.
    theta : float >= 1, optional
        ``c_min = 0`` variant: run on the costs ``max(c, nu)`` with
        ``nu = eps / (2 theta D_hat)`` (halved while it alone stops a
        relative run), and certify against ``V*_theta``.
    budget : int, optional
        Cap on calls, lost ones included. When reached, the best policy found is
        returned with ``certified = False``, its certificate and a message (see Warns).
    seed : None, int, numpy.random.SeedSequence, BitGenerator or Generator
        Randomness of the sampling: a seed fixes the result.
    checkpoint : str or os.PathLike, optional
        File holding the samples, the generator's state and the rounds,
        rewritten after every round; when it exists the run resumes from it
        and ends with exactly the result of an uninterrupted run.
    callback : callable, optional
        Called with each :class:`CertifiedRound` once it is recorded.
    sampling : {"adaptive", "uniform"}, default "adaptive"
        How new calls are spread over the pairs.
    target : {"value", "policy"}, default "value"
        Stop when the values are pinned (``gap``), or as soon as the policy
        is certified (``policy_gap``, never later; adaptive sampling
        then also samples the actions that compete with the policy's).
        ``"policy"`` is refused with ``theta``: the policy certificate bounds
        ``V^pi - V*``, while ``theta`` asks about ``V*_theta``.

    Returns
    -------
    CertifiedResult
        The policy ``pi_U``, its certificate, the calls and the rounds.

    Raises
    ------
    ParameterError
        On ``eps``, ``delta``, ``theta``, ``budget``, ``kind``,
        ``sampling`` or ``target`` out of range, ``c_min = 0`` without ``theta``, a
        ``"paper"`` kind (not time-uniform), or a checkpoint of another run.
    ShapeError, NotFiniteError, CostError
        On costs of the wrong shape, not finite, or outside ``[0, 1]``.

    Warns
    -----
    NotCertifiedWarning
        When ``budget`` is spent before the certificate holds.
    StalledRunWarning
        Without ``budget``, once, when after 20 times the first round's calls the samples
        show no way to the goal from some states; the warning names them.

    See Also
    --------
    certify : the certificate of any policy from counts.
    solve : Alg. 1 and Alg. 3.
    instance_lower_bound : the calls any correct method needs.

    Notes
    -----
    Every round builds the boxes from all the samples so far and computes

    - ``L``, the optimistic value (EVI's fixed point, by policy iteration
      from the previous optimistic policy, checked: ``L <= V*``);
    - ``pi_U``, the policy minimising the pessimistic value, by robust policy
      iteration started from the optimistic policy, and its checked
      ``U >= V^{pi_U}``.

    It stops when :math:`\max_s (U - L)(s) \le \epsilon` (or
    :math:`U \le (1 + \epsilon) L`) and returns ``pi_U``: on the event of the
    boxes, which holds with probability at least ``1 - delta`` for every
    round at once (the kinds are time-uniform),
    :math:`V^{\pi_U} - V^* \le U - L \le \epsilon`. With
    ``target="policy"`` it stops once ``policy_gap`` (the same maximum over
    the policy's certificate, ``docs/certificates.md``) is at most ``eps``.
    Checking the stop after every round costs nothing in ``delta``.

    The first round draws :data:`INITIAL_PER_PAIR` samples of every pair;
    each later one grows the total by :data:`GROWTH`. ``"uniform"`` gives
    every pair the same count. ``"adaptive"`` aims the pairs of the optimistic
    policy at counts proportional to :math:`(\nu w \sqrt{n})^{2/3}`, with
    ``nu`` its expected visits from the states whose gap is still too large
    and ``w`` the pair's width term :math:`(p^+ - p^-) \cdot U` (adversary's pour
    against ``U`` minus optimist's against ``L``, both read at ``U``);
    every pair whose optimistic Q-value does not exceed ``U`` keeps a floor of
    :data:`~reference.certified_sampling.FLOOR_SHARE` of the mean count.
    While ``U`` is infinite, the width of the pairs leading there counts as
    the largest finite width, so the optimistic policy's pairs grow until
    their lower ends force mass towards the goal. With ``target="policy"``
    the rivals of the policy's actions are sampled too
    (:mod:`reference.certified_sampling`).

    With ``theta``: ``H >= D_s`` is the robust unit-cost value over the same
    boxes, ``D_hat = max H`` and ``nu = eps / (2 theta D_hat)``; every ``pi``
    in ``Pi_theta`` has ``V^pi_{max(c, nu)} <= V^pi + nu theta H``, so
    ``max(0, L' - nu theta H) <= V*_theta`` for the optimist ``L'`` of the
    costs ``max(c, nu)``, and the stop compares it with ``min(U', U)``
    (:mod:`reference.theta_bounds`, docs/certified-soundness.md). With
    ``relative`` a state with ``V*_theta = 0`` is certified only by a policy
    of zero cost in every state: give a ``budget``.

    Examples
    --------
    >>> import reference as sspgm
    >>> ssp = sspgm.tradeoff()
    >>> res = solve_certified(ssp, ssp.costs, eps=0.1, delta=0.1, seed=0)
    >>> bool(res.certified), bool(res.certificate.gap <= 0.1)
    (True, True)
    """
    model = as_model(model)
    S, A = model.n_states, model.n_actions
    costs = check_model_costs(costs, model)
    eps, delta = check_accuracy(eps, delta)
    record = box_kind(kind, time_uniform=True)
    if sampling not in SAMPLINGS:
        raise ParameterError(f"`sampling` must be one of {SAMPLINGS}; got {sampling!r}.")
    if target not in TARGETS:
        raise ParameterError(f"`target` must be one of {TARGETS}; got {target!r}.")
    relative = bool(relative)
    budget = checked_budget(budget, S * A * INITIAL_PER_PAIR, kind, S, A, delta)
    if theta is None:
        if costs.min() <= 0.0:
            s, a = (int(i) for i in np.argwhere(costs <= 0.0)[0])
            raise ParameterError(
                f"`costs` has c_min = 0 (costs[{s}, {a}] = 0); pass `theta` (>= 1) for the "
                "variant that is eps-optimal against the policies reaching the goal within "
                "theta times the diameter."
            )
    else:
        theta = check_real("theta", theta, 1.0)
        if target == "policy":
            raise ParameterError(
                "`target` must be 'value' with `theta`: the policy certificate bounds "
                "V^pi - V*, and theta's answers are measured against V*_theta; got 'policy'."
            )
    goal_gap = eps if theta is None else eps / 2.0
    run = Run(model, _params(model, costs, eps, delta, kind, relative, theta, budget, sampling,
                             seed, target), seed, callback, checkpoint, round_type=CertifiedRound)
    run.store.merge = kernels.merge_counts
    resumed = bool(run.history)
    if not resumed:
        run.check_budget(budget, S * A * INITIAL_PER_PAIR, "the first round")
        _draw(run, np.full(S * A, INITIAL_PER_PAIR, dtype=np.int64))
    policies = dict(run.warm)
    first, stall, kept = True, StallWatch(budget, S * A * INITIAL_PER_PAIR), KeptEnds()
    while True:
        start_time = time.perf_counter()
        run.warm = dict(policies)
        boxes = store_boxes(kernels, run.store.counts_csr(), delta, record, kept)
        work_costs, state, cert, D_hat, nu = _round(kernels, boxes, costs, eps, theta, relative,
                                                    policies, target == "policy")
        searching = D_hat is not None and not np.isfinite(D_hat)
        done = not searching and cert._proves(eps, relative, target)
        n_calls = run.store.calls_made
        if not (first and resumed):
            run.record(CertifiedRound(
                n_calls=n_calls, gap=cert.gap, relative_gap=cert.relative_gap,
                max_lower=float(cert.lower.max()), max_upper=float(cert.upper.max()),
                n_infinite=int(np.isinf(cert.upper).sum()), D_hat=D_hat, nu=nu,
                seconds=time.perf_counter() - start_time))
        first = False
        stall.round(cert.upper, run.store.counts_csr(), n_calls)
        cap = INT64_MAX - n_calls if budget is None else budget - n_calls
        if done or cap <= 0:
            break
        more = _next_draws(kernels, boxes, work_costs, sampling, run.store.n_samples, state,
                           goal_gap, cap, target == "policy")
        boxes = state = cert = None  # freed before the draw, and the calls before the merge
        _draw(run, more)
        more = None
    if theta is None and target == "value":
        cert = _with_policy_gap(kernels, boxes, costs, cert)
    wanted = (f"{'relative ' if relative else ''}{'policy ' if target == 'policy' else ''}"
              f"gap <= {eps:g}")
    if done:
        message = (f"certified after {len(run.history)} round(s) and {n_calls} calls: "
                   f"{wanted}. {cert.message}")
    else:
        message = (f"not certified: the budget of {budget} calls is spent and the certificate "
                   f"does not reach {wanted}. {cert.message}")
        warn_at_caller(message, NotCertifiedWarning)
    return CertifiedResult(
        policy=cert.policy, values=cert.upper, certificate=cert, certified=done,
        n_calls=n_calls, calls=run.store.n_pair, history=tuple(run.history), converged=done,
        message=message, eps=eps, relative=relative, theta=theta, D_hat=D_hat, nu=nu,
    )
