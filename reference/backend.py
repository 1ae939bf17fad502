"""The seam between the algorithms and the numerical kernels of a backend.

The algorithms of the paper (EVI's loop, SEARCH, Alg. 1, 3 and 4, value
iteration, the plug-in baseline) and every argument check are written once, in
``reference``, as *kernel functions*: functions whose first parameter is a
:class:`KernelSet`, the few numerical routines whose speed matters (the Lemma 5
radius, the boxes, one EVI sweep, the optimistic kernel, one VI sweep). Each
backend binds its own kernel set to them with :meth:`KernelSet.bind`:
``reference`` the numpy set of :mod:`reference.kernels`, ``fast`` the compiled
set of ``fast.kernels``. A bound function is a plain Python function with the
public signature (the kernel function's parameters after ``kernels``, with
their defaults), name and docstring; it forwards every argument by keyword
and fills the ``params`` of the :class:`~reference.results.Result` it returns
with them (:func:`reference.results.echo_params`).

The protocol each kernel follows, and how to add a kernel or a public
function, is described in ``docs/backends.md``.
"""

import inspect
from dataclasses import dataclass
from typing import Callable

from .results import echo_params

__all__ = ["KernelSet", "KernelGroup", "KERNEL_GROUPS"]

_FORWARDED_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


@dataclass(frozen=True)
class KernelGroup:
    """The kernels of one subsystem: a small protocol, documented under ``title`` in
    ``docs/backends.md``.

    Attributes
    ----------
    title : str
        The heading of the group's table in ``docs/backends.md``.
    kernels : tuple of str
        Its fields of :class:`KernelSet`.
    callers : str
        The kernel functions that call them.
    """

    title: str
    kernels: tuple
    callers: str


KERNEL_GROUPS = {
    "evi": KernelGroup(
        "EVI", ("radius", "scan_counts", "boxes", "evi_sweep", "optimistic_kernel"),
        "reference.evi: extended_value_iteration (through SEARCH, Alg. 1, 3, 4), "
        "bernstein_radius"),
    "vi": KernelGroup("Value iteration", ("vi_model", "vi_sweep"),
                      "reference.optimal.value_iteration (and the plug-in baseline)"),
    "pours": KernelGroup("Pours over confidence boxes", ("pour_values", "pour_kernel"),
                         "the policy iterations of reference.robust (the certificates)"),
    "kl": KernelGroup("KL intervals", ("kl_interval", "chernoff_rows"),
                      "reference.confidence: kl_interval, confidence_boxes and store_boxes "
                      "(kinds \"kl\" and \"mixture\", through box_ends)"),
    "poured_chains": KernelGroup("Poured chains", ("poured_chain_values", "poured_chain_visits"),
                                 "the evaluations of the policy iterations of reference.robust; "
                                 "the occupancy of solve_certified's adaptive sampling"),
    "graphs": KernelGroup("Graph searches", ("reaching", "closable"),
                          "the infinity decision and the zero states of the adversary's "
                          "values in reference.robust"),
    "policy_iterations": KernelGroup(
        "Policy iterations", ("adversary_iteration", "optimist_iteration", "robust_iteration"),
        "reference.robust: the adversary's values of a policy (_robust_values), the "
        "optimist's values (_optimistic) and the rounds of the robust policy iteration "
        "(_robust_policy), in the certificates and solve_certified"),
    "checks": KernelGroup(
        "Bellman checks", ("upper_check", "lower_check"),
        "reference.robust: the checks of the adversary's values (_check_upper) and of the "
        "optimist's values (_check_lower), after each policy iteration"),
    "sampling": KernelGroup(
        "Sampling", ("merge_counts", "split_calls"),
        "reference.generative.SampleStore (its merge, which solve_certified sets to its "
        "kernel set's); solve_certified's split of a round's calls over the pairs"),
}
"""The kernels of a :class:`KernelSet`, grouped by subsystem: every field in exactly one group
(``tests/test_layout.py`` checks it, and that ``docs/backends.md`` documents each)."""


@dataclass(frozen=True)
class KernelSet:
    """The numerical kernels of one backend (the protocol of ``docs/backends.md``).

    The fields come in the groups of :data:`KERNEL_GROUPS`: EVI (``radius``,
    ``scan_counts``, ``boxes``, ``evi_sweep``, ``optimistic_kernel``), value
    iteration (``vi_model``, ``vi_sweep``), pours over confidence boxes
    (``pour_values``, ``pour_kernel``), KL intervals (``kl_interval``),
    poured chains (``poured_chain_values``, ``poured_chain_visits``),
    graph searches (``reaching``, ``closable``), policy iterations
    (``adversary_iteration``, ``optimist_iteration``, ``robust_iteration``), Bellman checks
    (``upper_check``, ``lower_check``) and sampling (``merge_counts``, ``split_calls``).

    Attributes
    ----------
    name : str
        ``"numpy"`` or ``"compiled"``.
    radius : callable
        ``radius(counts, delta) -> beta``: the Lemma 5 radius of every next
        state, from checked dense float64 counts ``(S, A, S+1)``; ``beta`` has
        the same shape.
    scan_counts : callable
        ``scan_counts(counts) -> scan``: dense float64 C-contiguous counts
        ``(S, A, S+1)`` of the right shape, values not checked, read once.
        ``scan.largest`` is the largest count when every count is finite with
        its sign bit clear, else NaN (what the argument check needs:
        ``reference._checks.check_dense_values``); the rest of ``scan`` is
        what this kernel set's :attr:`boxes` reads of the counts.
    boxes : callable
        ``boxes(counts, delta) -> boxes``: the Lemma 5 boxes of checked counts
        (the :attr:`scan_counts` of dense float64 ``(S, A, S+1)`` counts, or
        canonical float64 CSR ``(S*A, S+1)`` counts), in the kernel set's own
        layout. The object has
        ``n_states``, ``n_actions`` and ``upper_mass`` (float64 ``(S, A)``,
        the sum of the upper ends of each pair's box).
    evi_sweep : callable
        ``evi_sweep(boxes, costs, v_ext, v_out, policy_out)``: one EVI sweep
        at ``v_ext`` (float64 ``(S+1,)``, goal last and 0), writing the new
        values (float64 ``(S,)``) and the greedy actions (intp ``(S,)``,
        ties to the lowest action) in place; returns the residual
        ``max_s |v_out(s) - v_ext(s)|`` (a float).
    optimistic_kernel : callable
        ``optimistic_kernel(boxes, v_ext, policy) -> p``: the minimiser of
        the inner problem at ``v_ext`` for the pairs ``(s, policy[s])``, a
        :class:`~reference.poured.PouredKernel` of shape ``(S, S+1)`` (the
        pieces of :func:`reference.kernels.poured_kernel`, equal in both kernel
        sets), whatever the storage of the counts.
    vi_model : callable
        ``vi_model(ssp) -> model``: a known SSP prepared for :attr:`vi_sweep`.
    vi_sweep : callable
        ``vi_sweep(model, costs, v_ext, v_out, policy_out)``: one Bellman
        sweep of value iteration, with the arguments and the returned
        residual of :attr:`evi_sweep`.
    pour_values : callable
        ``pour_values(boxes, rows, v_ext, descending) -> values``: the greedy
        inner problem of the pairs ``rows`` (int64 ``(n,)``, ``s*A + a``)
        over :class:`~reference.confidence.ConfidenceBoxes`, against
        ``v_ext`` (float64 ``(S+1,)``, ``>= 0``, ``+inf`` allowed, goal
        last and 0): from the lower ends, pour the rest by decreasing value,
        goal last (``descending``, the adversary's) or by increasing value,
        goal first (the optimist's), ties to the lower index. ``values``:
        float64 ``(n,)``, ``sum p v`` over the entries with ``p > 0``.
    pour_kernel : callable
        ``pour_kernel(boxes, rows, v_ext, descending) -> p``: the poured
        distributions of :attr:`pour_values` as a
        :class:`~reference.poured.PouredKernel` of shape ``(n, S+1)``
        (``O(S + stored)`` memory, ``descending`` recorded): the order of
        ``v_ext``, each row's stored entries of the boxes with ``lo`` plus
        the mass poured, width ``hi_unseen``, and the reach and partial of
        :func:`reference.kernels.greedy_pour`, the same pieces in every
        kernel set.
    kl_interval : callable
        ``kl_interval(p_hat, n, level) -> (lo, hi)``: the Chernoff interval
        ends of :func:`reference.confidence.kl_interval` on checked float64
        C-contiguous arrays of one shape ``(m,)`` (``p_hat`` in ``[0, 1]``,
        ``n >= 0``, ``level > 0``): float64 ``(m,)`` each, the same floats in
        every kernel set.
    chernoff_rows : callable
        ``chernoff_rows(indptr, counts, n, level, rows, width, lo, hi, hi_unseen)
        -> hi_sum``: the ends of :attr:`kl_interval` of the rows ``rows`` of CSR
        counts (int64 or float64 ``counts``, int64 ``indptr`` and ``rows``),
        written into ``lo``, ``hi`` (their entries) and ``hi_unseen`` (the rows),
        and each row's sum of upper ends over the ``width`` columns, float64
        ``(len(rows),)``; :func:`reference.kernels.chernoff_rows` says which
        floats, the same in every kernel set.
    poured_chain_values : callable
        ``poured_chain_values(kernel, costs, start) -> (values, residual)``:
        the values of a square :class:`~reference.poured.PouredKernel`
        ``(S, S+1)`` with costs float64 ``(S,)``, ``>= 0``, from the
        candidate ``start`` (float64 ``(S,)``), with the contract of
        :func:`reference.chains.poured_values`: ``+inf`` and ``0`` exactly
        where the support graph says so, candidates of ``V = c + Q V``
        elsewhere (the Bellman checks of :mod:`reference.robust` accept
        them), ``residual`` ``max |c + P V - V|`` over the finite positive
        values; ``ConvergenceError`` when no candidate is acceptable.
    poured_chain_visits : callable
        ``poured_chain_visits(kernel, start) -> visits``: the expected visits
        of a square :class:`~reference.poured.PouredKernel` ``(S, S+1)``
        started from ``start`` (float64 ``(S,)``, finite, ``>= 0``), with the
        contract of :func:`reference.chains.poured_occupancy`: float64
        ``(S,)``, ``>= 0``, zeros when the chain is not proper or the solve
        fails.
    reaching : callable
        ``reaching(tails, heads, targets) -> mask``: the nodes with a path
        (possibly empty) into ``targets`` (bool ``(n,)``) along the edges
        ``tails -> heads`` (integer arrays of one size, entries in
        ``[0, n)``); bool ``(n,)``, the same in every kernel set.
    closable : callable
        ``closable(boxes, rows) -> mask``: the largest set of states whose
        rows ``rows`` (int64 ``(S,)``) of
        :class:`~reference.confidence.ConfidenceBoxes` can all keep the chain
        in it, by the sums of :func:`reference.adversary_sets.closable`; bool
        ``(S,)``, the same in every kernel set.
    adversary_iteration : callable
        ``adversary_iteration(boxes, rows, costs_pi, infinite, start) ->
        (values, kernel, n_iter, converged)``: the adversary's policy
        iteration of :func:`reference.robust_loops.adversary_loop` on the
        rows ``rows`` (int64 ``(S,)``) of
        :class:`~reference.confidence.ConfidenceBoxes`, with costs float64
        ``(S,)``, the graph test's ``infinite`` (bool ``(S,)``) and finite
        ``start`` (float64 ``(S,)``); bit-identical to that loop run on the
        same kernel set's steps, and across kernel sets equal up to the
        rounding of the chain solve (``poured_chain_values``).
    optimist_iteration : callable
        ``optimist_iteration(boxes, costs, policy, start) -> (values, policy,
        kernel, n_iter, converged, q)``: the optimist's policy iteration of
        :func:`reference.robust_loops.optimist_loop` from ``policy``
        (int64 ``(S,)``, not modified) and finite ``start`` (float64
        ``(S,)``), costs float64 ``(S, A)``; ``q`` the Q-values ``(S, A)`` of
        the last values (None when its solve failed); bit-identical to that
        loop run on the same kernel set's steps, and across kernel sets equal
        up to the rounding of the chain solve (``poured_chain_values``).
    robust_iteration : callable
        ``robust_iteration(boxes, costs, policy, start, rounds) -> (values,
        policy, kernel, n_rounds, n_iter, converged, dropped, r, status)``: at
        most ``rounds`` rounds of the robust policy iteration of
        :func:`reference.robust_rounds.robust_rounds` from ``policy`` (int64
        ``(S,)``, not modified) and finite ``start`` (float64 ``(S,)``), costs
        float64 ``(S, A)``, while every cost of the policy is positive and
        ``closable`` finds no state; bit-identical to that loop run on the same
        kernel set's steps. It returns its own policy array (never ``policy``
        itself): :func:`reference.robust.optimal._robust_policy` keeps it without
        a copy.
    upper_check : callable
        ``upper_check(boxes, rows, costs_pi, values, exact_zero) -> (U, dropped,
        r)``: the adversary's Bellman check of
        :func:`reference.robust_checks.upper_check` on the policy's rows
        (int64 ``(S,)``), costs float64 ``(S,)``, candidate ``values``
        (float64 ``(S,)``) and ``exact_zero`` (bool ``(S,)``); the same floats
        in every kernel set.
    lower_check : callable
        ``lower_check(boxes, costs, values, q_values) -> (L, dropped, r)``: the
        optimist's Bellman check of :func:`reference.robust_checks.lower_check`
        with costs float64 ``(S, A)``, candidate ``values`` (float64 ``(S,)``)
        and their Q-values ``q_values`` (``(S, A)`` or None); the same floats
        in every kernel set.
    merge_counts : callable
        ``merge_counts(indptr, indices, data, inc_indptr, inc_indices,
        inc_data) -> (indptr, indices, data)``: the canonical CSR arrays of the
        sum of two canonical CSR layouts with the same rows (int64 arrays,
        columns strictly increasing in each row, positive counts): a sample
        store's counts and a batch of samples. The same arrays in every kernel
        set; when the sum stores exactly the entries of the first term, its
        ``indptr`` and ``indices`` themselves.
    split_calls : callable
        ``split_calls(more, total, grid) -> draws``: ``total`` calls split over
        the pairs in proportion to ``more`` (float64 ``(m,)``, finite,
        ``>= 0``, positive sum), each share rounded to a multiple of
        ``1 / grid`` (a power of two) and cut to whole calls, the rest one each
        to the largest remainders, ties to the lower index
        (:func:`reference.sampling_kernels.split_calls`): int64 ``(m,)``, the same in
        every kernel set.
    """

    name: str
    radius: Callable
    scan_counts: Callable
    boxes: Callable
    evi_sweep: Callable
    optimistic_kernel: Callable
    vi_model: Callable
    vi_sweep: Callable
    pour_values: Callable
    pour_kernel: Callable
    kl_interval: Callable
    chernoff_rows: Callable
    poured_chain_values: Callable
    poured_chain_visits: Callable
    reaching: Callable
    closable: Callable
    adversary_iteration: Callable
    optimist_iteration: Callable
    robust_iteration: Callable
    upper_check: Callable
    lower_check: Callable
    merge_counts: Callable
    split_calls: Callable

    def bind(self, function, module=None):
        """Return the public function of a kernel function, running on this kernel set.

        Parameters
        ----------
        function : function
            A kernel function (first parameter ``kernels``), or the public
            function of one bound to another kernel set.
        module : str, optional
            ``__module__`` of the result (where it can be imported and
            pickled from); default: the kernel function's module.

        Returns
        -------
        function
            ``public(*args, **kwargs) = function(self, ...)`` with every
            argument forwarded by keyword (a returned
            :class:`~reference.results.Result` gets them as its ``params``,
            :func:`~reference.results.echo_params`); its signature is the kernel
            function's without ``kernels`` (same defaults), its name and
            docstring are the kernel function's, ``__wrapped__`` is the kernel
            function and its globals are the kernel function's module (so
            doctest finds its examples there).

        Raises
        ------
        TypeError
            If ``function`` has no first parameter ``kernels``, or has
            positional-only or variadic parameters.
        """
        implementation = getattr(function, "__wrapped__", function)
        signature = inspect.signature(implementation)
        first, *parameters = signature.parameters.values()
        if first.name != "kernels" or any(p.kind not in _FORWARDED_KINDS for p in parameters):
            raise TypeError(
                f"{implementation.__qualname__} is not a kernel function: its first parameter "
                "must be `kernels` and the others positional-or-keyword or keyword-only."
            )
        public = _forwarding_function(implementation, parameters, self)
        public.__signature__ = signature.replace(parameters=parameters)
        public.__doc__ = implementation.__doc__
        public.__module__ = implementation.__module__ if module is None else module
        public.__wrapped__ = implementation
        return public

    def call(self, function, *args, **kwargs):
        """Call the kernel function behind the public ``function`` with this kernel set.

        How one kernel function calls another: ``kernels.call(
        extended_value_iteration, counts, costs, delta, mu)`` runs EVI on the
        caller's kernels, whichever backend's public function is named.
        """
        return getattr(function, "__wrapped__", function)(self, *args, **kwargs)


def _forwarding_function(implementation, parameters, kernels):
    """A function named like ``implementation`` taking ``parameters`` and forwarding them
    (and echoing them in the ``params`` of a returned result).

    The source is generated (as :mod:`dataclasses` does) so that the result
    has a real signature and Python itself reports wrong calls; it is compiled
    in the globals of ``implementation``'s module.
    """
    positional = [p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    keyword = [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
    heading = ", ".join(positional + (["*"] + keyword if keyword else []))
    forwarded = ", ".join(f"{p.name}={p.name}" for p in parameters)
    name = implementation.__name__
    source = (
        f"def bind(implementation, kernels, echo_params):\n"
        f"    def {name}({heading}):\n"
        f"        return echo_params(implementation(kernels, {forwarded}), {forwarded})\n"
        f"    return {name}\n"
    )
    namespace = {}
    exec(compile(source, f"<kernel set binding of {name}>", "exec"),
         implementation.__globals__, namespace)
    public = namespace["bind"](implementation, kernels, echo_params)
    public.__defaults__ = implementation.__defaults__
    public.__kwdefaults__ = implementation.__kwdefaults__
    public.__qualname__ = implementation.__qualname__
    return public
