"""The naive plug-in baseline: plain value iteration on the empirical model.

:func:`plug_in` is a kernel function (:mod:`reference.backend`).
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import optimal
from .box_kinds import box_kind
from ._checks import check_int, check_real, make_rng
from .certified import Certificate, _certify
from .confidence import _confidence_boxes
from .generative import SampleStore
from .kernels import NUMPY_KERNELS
from .model import SSP
from .results import Result
from .runs import as_model, check_model_costs

__all__ = ["PlugInResult", "plug_in"]


@dataclass(frozen=True, repr=False)
class PlugInResult(Result):
    """Output of :func:`plug_in`: plain VI on the empirical model.

    Attributes
    ----------
    policy : ndarray of int64, shape (S,)
        Greedy policy of the last VI iterate.
    values : ndarray of float64, shape (S,)
        The last VI iterate on the empirical model: a plug-in estimate of
        ``V*``, neither a bound nor ``V^pi`` (``certificate`` bounds both).
    n_calls : int
        Generative-model calls made.
    calls : ndarray of int64, shape (S, A)
        Calls per pair.
    n_iter : int
        VI sweeps.
    converged : bool
        Whether VI met its tolerance (False when the empirical model has no
        proper policy and the iterates diverge).
    certificate : Certificate
        Bounds ``lower <= V*`` and ``upper >= V^pi`` from the run's own
        samples (:func:`~reference.certified.certify`, KL boxes at ``delta``):
        ``upper`` is infinite where the samples cannot exclude that the policy
        never reaches the goal.
    message : str
        VI's message.
    params : Params
        ``n_per_pair``, ``seed``, ``tol``, ``max_iter`` and ``delta``
        (:class:`~reference.results.Result`).
    """

    policy: np.ndarray
    values: np.ndarray
    n_calls: int
    calls: np.ndarray
    n_iter: int
    converged: bool
    certificate: Certificate
    message: str


@NUMPY_KERNELS.bind
def plug_in(kernels, model, costs, n_per_pair, seed=None, tol=1e-8, max_iter=100_000, delta=0.1):
    r"""Naive baseline: ``n_per_pair`` samples per pair, then plain VI on the empirical model.

    Parameters
    ----------
    model : GenerativeModel or SSP
        Source of samples.
    costs : array_like of shape (S, A)
        Costs in ``[0, 1]``.
    n_per_pair : int >= 1
        Budget per pair (total ``S A n_per_pair`` calls).
    seed : None, int, numpy.random.SeedSequence, BitGenerator or Generator
        Randomness of the sampling.
    tol : float > 0, default 1e-8
        VI tolerance.
    max_iter : int, default 100000
        VI sweep limit.
    delta : float in (0, 1), default 0.1
        Confidence level of the result's certificate.

    Returns
    -------
    PlugInResult
        VI's greedy policy on ``p_hat = N / N(s, a)``:

        .. math::

            V_{k+1}(s) = \min_a \Big\{ c(s,a) + \sum_{s'} \hat p(s'|s,a) V_k(s') \Big\}.

        When ``p_hat`` has no proper policy the iterates diverge,
        ``converged`` is False, and the policy can be improper in the true
        model: the failure EVI avoids (docs/semantics.md, "Confidence sets").

    Raises
    ------
    ParameterError
        On ``n_per_pair < 1``, ``tol <= 0``, ``max_iter < 1`` or ``delta``
        outside ``(0, 1)``.
    ShapeError, NotFiniteError, CostError
        On costs as in :func:`solve`.

    See Also
    --------
    solve : Alg. 1, which runs EVI on confidence sets instead.
    solve_certified : samples until its policy is certified.

    Examples
    --------
    On :func:`~reference.trap`, 20 samples of the trap's rare exit often miss it,
    and value iteration on the empirical model may keep the trap's self-loop:
    a policy of infinite cost in the true model.

    >>> from reference import policy_values, trap
    >>> ssp = trap()
    >>> res = plug_in(ssp, ssp.costs, n_per_pair=20, seed=0)
    >>> policy_values(ssp, res.policy)
    array([ 1., inf])
    """
    model = as_model(model)
    costs = check_model_costs(costs, model)
    n_per_pair = check_int("n_per_pair", n_per_pair, low=1)
    delta = check_real("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    store = SampleStore(model.n_states, model.n_actions)
    store.top_up(model, n_per_pair, make_rng(seed))
    counts = store.counts_csr().astype(np.float64)
    p_hat = sp.csr_array(sp.diags_array(1.0 / counts.sum(axis=1)) @ counts)
    empirical = SSP(p_hat, costs, require_proper=False, name="empirical")
    out = kernels.call(optimal.value_iteration, empirical, tol, max_iter)
    policy = np.asarray(out.policy, dtype=np.int64)
    boxes = _confidence_boxes(kernels, store.counts(), delta, box_kind("kl"))
    return PlugInResult(
        policy=policy,
        values=np.asarray(out.values),
        n_calls=store.n_samples,
        calls=store.n_pair,
        n_iter=int(out.n_iter),
        converged=bool(out.converged),
        certificate=_certify(kernels, boxes, costs, policy.copy(), None),
        message=out.message,
    )
