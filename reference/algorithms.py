"""Alg. 1 and Alg. 3: an eps-optimal policy from a generative model.

Alg. 1 is SEARCH (:mod:`reference.range_search`) on the costs; Alg. 3 first
estimates the diameter (:mod:`reference.diameter_estimate`) and runs SEARCH on
perturbed costs. Every choice follows docs/semantics.md, "Algorithms", where it
differs from the paper's listings. :func:`solve` is a kernel function
(:mod:`reference.backend`).
"""

import numpy as np

from . import evi
from ._checks import check_int, check_real
from .diameter_estimate import diameter_rounds
from .errors import ParameterError
from .kernels import NUMPY_KERNELS
from .range_search import search_rounds, solve_result
from .runs import Run, as_model, check_accuracy, check_model_costs, run_params

__all__ = ["solve"]


@NUMPY_KERNELS.bind
def solve(kernels, model, costs, eps, delta, theta=None, alpha=1.0, seed=None,
          max_iter=evi.EVI_MAX_ITER, callback=None, checkpoint=None):
    r"""An eps-optimal policy from a generative model: Alg. 1, or Alg. 3 when ``theta`` is given.

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
    seed : None, int, numpy.random.SeedSequence, BitGenerator or Generator
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
        Policy, optimistic values, final ``Delta``, ``D_hat`` and ``nu``
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

    Warns
    -----
    NotCertifiedWarning
        When the certificate of the returned policy, computed on the run's
        own samples (``result.certificate``), does not prove it eps-optimal;
        ``message`` says so too.

    See Also
    --------
    solve_certified : samples only until its policy is certified.
    search : Alg. 2, the inner loop.
    estimate_diameter : Alg. 4, run first by Alg. 3.
    plug_in : the naive baseline.
    bounds.samp_comp : Thm. 1 and Alg. 1's explicit total.

    Notes
    -----
    Alg. 1 (``c_min > 0``): SEARCH(c, eps); Thm. 1: with probability
    ``>= 1 - delta``, ``||V^pi - V*||_inf <= eps``.

    Alg. 3 (docs/semantics.md): ``D_hat`` from Alg. 4 at accuracy ``eps``, then

    .. math::

        \nu = \frac{\epsilon}{2 \theta \hat D}, \qquad
        \tilde\pi = \mathrm{SEARCH}\big(\max(c, \nu), \epsilon / 2\big),

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

    Examples
    --------
    In ``tradeoff()`` the slow action (cost 0.1, goal w.p. 1/2, value
    ``0.1 / 0.5 = 0.2``) beats the fast one (cost 1); Alg. 1 finds it, and the
    certificate from its own samples proves it within ``eps``:

    >>> import reference as sspgm
    >>> ssp = sspgm.tradeoff()
    >>> result = sspgm.solve(ssp, ssp.costs, eps=0.1, delta=0.1, seed=0)
    >>> result.policy, sspgm.policy_values(ssp, result.policy), result.certified
    (array([1]), array([0.2]), True)
    """
    model = as_model(model)
    costs = check_model_costs(costs, model)
    eps, delta = check_accuracy(eps, delta)
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
        run = Run(model, run_params("alg1", model, costs, eps, delta, None, alpha, seed),
                   seed, callback, checkpoint)
        out, scale = search_rounds(kernels, run, costs, eps, delta, alpha, max_iter)
        return solve_result(kernels, run, out, scale=scale, D_hat=None, nu=None,
                            algorithm="alg1", eps=eps, delta=delta, theta=None, alpha=alpha,
                            costs=costs)
    theta = check_real("theta", theta, 1.0)
    run = Run(model, run_params("alg3", model, costs, eps, delta, theta, alpha, seed),
               seed, callback, checkpoint)
    D_hat = diameter_rounds(kernels, run, eps, delta, max_iter)[0]
    nu = eps / (2.0 * theta * D_hat)
    perturbed = np.maximum(costs, nu)
    out, scale = search_rounds(kernels, run, perturbed, eps / 2.0, delta, alpha, max_iter)
    return solve_result(kernels, run, out, scale=scale, D_hat=D_hat, nu=nu, algorithm="alg3",
                        eps=eps, delta=delta, theta=theta, alpha=alpha, costs=perturbed)
