"""``sspgm solve [INSTANCE] [--param value ...]``: run Alg. 1 (or Alg. 3 with ``--theta``).

The instance is known, so after the run the policy's exact error is printed:
``max_s |V^pi(s) - V*(s)|`` for Alg. 1 (Thm. 1), and the one-sided
``max_s (V^pi(s) - V*_theta(s))`` for Alg. 3 (Thm. 2 as proved, docs/semantics.md).
``--method certified`` runs ``solve_certified`` instead. Every run prints the
certificate of its policy (bounds computed from its own samples) next to the
exact error. ``--simulator MODULE:FUNCTION`` solves a user's simulator instead of
an instance (its certificate is the only check), and ``--workers N`` or
``--scheduler ADDRESS`` sample on worker processes (:mod:`sspgm.commands.sampling`).

The exit status is 0 when the answer passes every check of :func:`answer_checks`
and :data:`EXIT_FAILED_CHECK` when it fails one (each failure is named on
standard error); errors in the arguments exit with status 2.
"""

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
import warnings

from sspgm import BACKENDS, load_backend
from sspgm.cli import COMMANDS, default_backend, option_strings
from sspgm.commands import sampling
from sspgm.instance_help import describe_instance_help, time_uniform_box_kinds

EXIT_FAILED_CHECK = 1
"""Exit status of a run whose answer fails a check (e.g. its exact error exceeds eps)."""


def register(subparsers):
    """Add the ``solve`` sub-command."""
    parser = subparsers.add_parser(
        "solve",
        help=COMMANDS["solve"],
        usage="sspgm solve [-h] [--eps EPS] [--delta DELTA] [--theta THETA] [--alpha ALPHA] "
        "[--seed SEED] [--backend {reference,fast}] [--max-iter N] [--checkpoint PATH] "
        "[--method {paper,certified}] [--kind {" + ",".join(time_uniform_box_kinds()) + "}] "
        "[--relative] [--budget N] "
        "[--show N] [--json] [--workers N | --scheduler ADDRESS] [--chunk N] "
        "[INSTANCE[:key=value,...] [--param value ...] [--instance-seed N] | "
        "--simulator MODULE:FUNCTION --states S --actions A [--batched] [--costs PATH]]",
        description="Sample the instance through its generative model and run Alg. 1 "
        "(c_min > 0) or, with --theta, Alg. 3 (any costs), printing one line per round; "
        "then print the calls used, the policy and its exact error against eps. "
        "Exit status: 0 when the answer is certified and its exact error is within eps, 1 "
        "when it is not, 2 on an "
        "error in the arguments or input, 130 when interrupted. --seed is the run's seed "
        "(its samples); the instance's own seed (garnet, random_discounted) is --instance-seed "
        "or INSTANCE:seed=N.",
        epilog=describe_instance_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--eps", type=float, default=0.1, help="accuracy in (0, 1] (default: 0.1)")
    parser.add_argument(
        "--delta", type=float, default=0.1, help="confidence level in (0, 1) (default: 0.1)"
    )
    parser.add_argument(
        "--theta", type=float, default=None,
        help="slack >= 1: run Alg. 3, eps-optimal against the policies reaching the goal "
        "within theta times the diameter (needed when c_min = 0)",
    )
    parser.add_argument(
        "--alpha", type=float, default=1.0,
        help="constant of the allocation function, eq. 6 (default: 1.0)",
    )
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the run's samples (default: 0); the instance's seed is "
                        "--instance-seed")
    parser.add_argument(
        "--backend", choices=BACKENDS, default=None,
        help="backend running the algorithm (default: fast when it is built, else reference, "
        "as `import sspgm`)",
    )
    parser.add_argument(
        "--max-iter", type=int, default=None, metavar="N",
        help="EVI sweep limit (default: the backend's EVI_MAX_ITER)",
    )
    parser.add_argument(
        "--checkpoint", default=None, metavar="PATH",
        help="file saved after every round; an existing one is resumed",
    )
    parser.add_argument(
        "--show", type=int, default=20, metavar="N",
        help="print the policy of the first N states only, for non-grid instances (default: 20)",
    )
    parser.add_argument(
        "--method", choices=("paper", "certified"), default="paper",
        help="paper: Alg. 1 / Alg. 3; certified: sample until the certificate proves "
        "eps-optimality (solve_certified) (default: paper)",
    )
    parser.add_argument(
        "--kind", choices=time_uniform_box_kinds(), default="mixture",
        help="confidence sets of --method certified (default: mixture)",
    )
    parser.add_argument(
        "--relative", action="store_true",
        help="--method certified: stop at upper <= (1 + eps) lower; the exact error printed "
        "and checked is then relative",
    )
    parser.add_argument(
        "--budget", type=int, default=None, metavar="N",
        help="--method certified: cap on the calls to the generative model",
    )
    parser.add_argument(
        "--json", action="store_true",
        help="print one JSON document on standard output instead of the text report "
        "(schema: docs/json.md)",
    )
    sampling.add_arguments(parser)
    parser.set_defaults(run=run, accepts_extra=True, command_options=option_strings(parser))


def format_seconds(seconds):
    """A duration for a round line: milliseconds below 0.1 s, so that short rounds show.

    Examples
    --------
    >>> format_seconds(0.0031), format_seconds(2.5)
    ('3.1 ms', '2.50 s')
    """
    return f"{seconds * 1000:.1f} ms" if seconds < 0.1 else f"{seconds:.2f} s"


def _print_round(round_):
    name = "W" if round_.phase == "diameter" else "Delta"
    label = "Alg. 4" if round_.phase == "diameter" else "SEARCH"
    print(
        f"  {label:6s} {name} = {round_.scale:<6g} samples/pair >= {round_.target:<10d} "
        f"Gamma_hat = {round_.Gamma_hat:<3d} EVI sweeps = {round_.evi_n_iter:<6d} "
        f"max v = {round_.v_tilde_max:<10.6g} calls = {round_.n_calls:<12d} "
        f"{format_seconds(round_.seconds)}",
        flush=True,
    )


class _CertifiedRounds:
    """The callback printing the rounds of ``solve_certified``, each with its wall time.

    The time of a round runs from the previous line (or the start of the run)
    to this one, so it covers the round's sampling as well as its certificate.
    """

    def __init__(self):
        self.last = time.perf_counter()
        self.printed = 0

    def __call__(self, round_):
        now = time.perf_counter()
        print(
            f"  round: calls = {round_.n_calls:<12d} gap = {round_.gap:<10.6g} "
            f"max lower = {round_.max_lower:<10.6g} max upper = {round_.max_upper:<10.6g} "
            f"{format_seconds(now - self.last)}",
            flush=True,
        )
        self.last = now
        self.printed += 1


class _PaperRounds:
    """The callback printing the rounds of Alg. 1, Alg. 3 and Alg. 4, counting them."""

    def __init__(self):
        self.printed = 0

    def __call__(self, round_):
        _print_round(round_)
        self.printed += 1


def certificate_verdict(res):
    """Whether the result's certificate proves the accuracy asked for, and why (not), as text.

    The target is ``eps``, or ``eps / 2`` for Alg. 3 (the perturbed costs'
    certificate), relative for a certified run with ``relative``. The text
    gives the gap itself: ``certified: gap 0.051 <= 0.1``, ``NOT certified:
    gap 6,576.7 > 1``, or what else failed when the gap is small enough.

    Returns
    -------
    certified : bool
    text : str
    """
    cert = res.certificate
    relative = getattr(res, "relative", False)
    alg3 = getattr(res, "algorithm", None) == "alg3"
    target = res.eps / 2 if alg3 else res.eps
    what = "relative gap" if relative else "gap"
    value = cert.relative_gap if relative else cert.gap
    if res.certified:
        return True, f"certified: {what} {value:,.6g} <= {target:g}"
    if not value <= target:
        return False, f"NOT certified: {what} {value:,.6g} > {target:g}"
    if not cert.proper:
        why = "the policy is not shown proper"
    elif alg3:
        why = "the bound on D from the boxes exceeds D_hat"
    else:
        why = "the run stopped before proving it"
    return False, f"NOT certified: {what} {value:,.6g} <= {target:g}, but {why}"


def _certificate(res):
    """Print the result's certificate; returns whether it proves the accuracy asked for."""
    cert = res.certificate
    alg3 = getattr(res, "algorithm", None) == "alg3"
    certified, verdict = certificate_verdict(res)
    print(f"certificate ({cert.kind} boxes, delta = {cert.delta:g}, from the run's own samples; "
          f"lower <= {'V*' if res.theta is None or alg3 else 'V*_theta'}, upper >= V^pi): "
          f"max lower = {cert.lower.max():.6g}, max upper = {cert.upper.max():.6g}, "
          f"gap = {cert.gap:.6g}, relative gap = {cert.relative_gap:.6g} "
          f"({verdict})")
    return certified


def _print_policy(ssp, policy, show):
    from sspgm.instances import draw_grid_policy

    if "state_to_cell" in ssp.meta:
        print("policy on the grid (^ up, > right, v down, < left, # wall, G goal):")
        print(draw_grid_policy(ssp, policy))
        return
    shown = min(max(show, 0), ssp.n_states)
    print("policy: " + " ".join(f"{s}:{int(policy[s])}" for s in range(shown)))
    if shown < ssp.n_states:
        print(f"  ... {ssp.n_states - shown} more states")


def exact_error(backend, ssp, res):
    """The policy's exact error against eps, as a dict (printed by :func:`_exact_error`).

    The error is ``max_s |V^pi(s) - V*(s)|`` for Alg. 1, the one-sided
    ``max_s (V^pi(s) - V*_theta(s))`` with ``theta``, and relative,
    ``max_s (V^pi(s) - V(s)) / V(s)`` (``inf`` where only ``V(s)`` is 0), for a
    certified run with ``relative``.

    Returns
    -------
    dict
        ``error`` (float, or None when ``V*_theta`` is too large to
        enumerate), ``measure`` (its formula), ``within_eps`` (bool, or None
        when not computed) and ``note`` (why it was not computed, or None).
    """
    import numpy as np

    from reference.errors import TooLargeError

    v_pi = np.asarray(backend.policy_values(ssp, res.policy))
    star = "V*" if res.theta is None else "V*_theta"
    if res.theta is None:
        best = np.asarray(backend.optimal_values(ssp).values)
        error = float(np.max(np.abs(v_pi - best)))
        measure = "max_s |V^pi(s) - V*(s)|"
    else:
        try:
            best = np.asarray(backend.restricted_optimal_values(ssp, res.theta).values)
        except TooLargeError as exc:
            return {"error": None, "measure": None, "within_eps": None,
                    "note": f"V*_theta needs enumeration: {exc}"}
        error = float(np.max(v_pi - best))
        measure = "max_s (V^pi(s) - V*_theta(s)), one-sided (Thm. 2)"
    if getattr(res, "relative", False):
        excess = v_pi - best
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(excess <= 0, 0.0, np.where(best > 0, excess / best, np.inf))
        error = float(ratio.max())
        measure = f"max_s (V^pi(s) - {star}(s)) / {star}(s), relative"
    return {"error": error, "measure": measure, "within_eps": error <= res.eps, "note": None}


def _exact_error(exact, eps):
    """Print the exact error of :func:`exact_error`; returns whether it is within eps."""
    if exact["error"] is None:
        print(f"exact error: not computed ({exact['note']})")
        return None
    verdict = "within eps" if exact["within_eps"] else "ABOVE eps"
    print(f"exact error: {exact['measure']} = {exact['error']:.6g} ({verdict} = {eps:g})")
    return exact["within_eps"]


def answer_checks(backend, ssp, res, exact=None):
    """The checks of a run's answer, printed as they are computed.

    Parameters
    ----------
    backend : module
        The backend computing the exact values.
    ssp : SSP
        The instance solved.
    res : SolveResult or CertifiedResult
        The run's result.
    exact : dict, optional
        :func:`exact_error` of the result, when already computed.

    Returns
    -------
    dict
        Check name -> True (passed), False (failed) or None (could not be
        decided). ``sspgm solve`` exits with :data:`EXIT_FAILED_CHECK` when
        any check is False.
    """
    exact = exact_error(backend, ssp, res) if exact is None else exact
    return {"certified": _certificate(res),
            "exact error within eps": _exact_error(exact, res.eps)}


def check_checkpoint_path(path):
    """Refuse, before the first round, a checkpoint path that can be neither resumed nor written.

    Raises
    ------
    ParameterError
        If ``path`` is a directory or another file that is not a regular
        one (a FIFO would block), its directory does not exist, or an
        existing file cannot be read or a new one cannot be created next to it
        (the checkpoint is written to a temporary file there, then renamed).
    """
    from reference.errors import ParameterError

    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ParameterError(f"`--checkpoint` must be a file; got the directory {path!r}.")
    if os.path.exists(path) and not os.path.isfile(path):
        raise ParameterError(
            f"`--checkpoint` {path!r} is not a regular file (a FIFO, a device or a socket)."
        )
    if not os.path.isdir(directory):
        raise ParameterError(
            f"`--checkpoint` must be in an existing directory; {directory!r} is not one."
        )
    try:
        if os.path.exists(path):
            with open(path, "rb"):
                pass
        fd, probe = tempfile.mkstemp(dir=directory, suffix=".tmp")
        os.close(fd)
        os.remove(probe)
    except OSError as exc:
        raise ParameterError(
            f"`--checkpoint` {path!r} cannot be used: {exc.strerror or exc}."
        ) from exc


def _stall_printer(show, stalled):
    """A ``warnings.showwarning`` that prints a ``stalled`` warning as one line on stderr, in the
    command's words, and hands any other warning to ``show``."""
    def showwarning(message, category, *rest, **options):
        if not issubclass(category, stalled):
            return show(message, category, *rest, **options)
        text = str(message).replace("pass `budget` to cap", "give --budget N to cap")
        print(f"sspgm solve: warning: {text}", file=sys.stderr, flush=True)
    return showwarning


def _solve(backend, args, model, costs):
    """Run the algorithm ``args`` asks for on ``model``; returns its result and a run record.

    The record holds ``seconds`` (wall time), ``resumed`` (whether the run
    started from an existing ``--checkpoint``) and ``rounds_resumed`` (the
    rounds recorded before this process, which are not printed again).
    """
    from reference.errors import NotCertifiedWarning, StalledRunWarning

    options = {} if args.max_iter is None else {"max_iter": args.max_iter}
    resumed = args.checkpoint is not None and os.path.exists(args.checkpoint)
    if resumed:
        print(f"checkpoint {args.checkpoint} exists: resuming its run")
    start = time.perf_counter()
    with warnings.catch_warnings(), sampling.worker_tracebacks():
        warnings.simplefilter("ignore", NotCertifiedWarning)
        warnings.simplefilter("always", StalledRunWarning)
        warnings.showwarning = _stall_printer(warnings.showwarning, StalledRunWarning)
        if args.method == "certified":
            callback = _CertifiedRounds()
            res = backend.solve_certified(
                model, costs, args.eps, args.delta, kind=args.kind, relative=args.relative,
                theta=args.theta, budget=args.budget, seed=args.seed,
                checkpoint=args.checkpoint, callback=callback,
            )
        else:
            callback = _PaperRounds()
            res = backend.solve(
                model, costs, args.eps, args.delta, theta=args.theta, alpha=args.alpha,
                seed=args.seed, callback=callback, checkpoint=args.checkpoint, **options,
            )
    record = {"seconds": time.perf_counter() - start, "resumed": resumed,
              "rounds_resumed": len(res.history) - callback.printed if resumed else 0}
    if resumed:
        print(f"resumed from {args.checkpoint}: {record['rounds_resumed']} of the "
              f"{len(res.history)} rounds were run before (not printed again)")
    return res, record


def _algorithm(args):
    if args.method == "certified":
        algorithm = "solve_certified"
        if args.theta is not None:
            algorithm += f" (theta = {args.theta:g})"
        return algorithm
    return "Alg. 1" if args.theta is None else f"Alg. 3 (theta = {args.theta:g})"


def _print_header(args):
    """The line naming the method and its parameters (``alpha`` only where it is used)."""
    alpha = "" if args.method == "certified" else f"alpha = {args.alpha:g}, "
    print(f"{_algorithm(args)}: eps = {args.eps:g}, delta = {args.delta:g}, {alpha}"
          f"seed = {args.seed}, backend = {args.backend}")


def _print_run(args, res, seconds):
    import numpy as np

    print(res.message)
    if res.D_hat is not None:
        print(f"D_hat = {res.D_hat:.6g}, nu = {res.nu:.6g}")
    calls = np.asarray(res.calls)
    print(f"calls used: {res.n_calls} (per pair: min {calls.min()}, max {calls.max()}) "
          f"in {seconds:.2f} s")


def _run_simulator(args, backend):
    """``solve`` on ``--simulator``: the certificate is the answer's only check."""
    import numpy as np

    from reference.errors import ParameterError

    if args.extra:
        raise ParameterError(f"`--simulator` replaces the instance; got also {args.extra}.")
    *simulator, costs = sampling.simulator_problem(args)
    with sampling.sampling_model(args, simulator=simulator) as (model, where):
        print(f"simulator: {args.simulator}  S = {model.n_states}, A = {model.n_actions}; "
              f"sampling in {where}")
        _print_header(args)
        res, record = _solve(backend, args, model, costs)
    _print_run(args, res, record["seconds"])
    policy = np.asarray(res.policy)
    shown = min(max(args.show, 0), policy.size)
    print("policy: " + " ".join(f"{s}:{int(policy[s])}" for s in range(shown)))
    if shown < policy.size:
        print(f"  ... {policy.size - shown} more states")
    checks = {"certified": _certificate(res)}
    facts = {"simulator": {"target": args.simulator, "S": model.n_states,
                           "A": model.n_actions}, "res": res, "exact": None,
             "checks": checks, "verdict": certificate_verdict(res)[1], **record}
    return _failed(checks), facts


def _failed(checks):
    """The exit status of a run whose checks are ``checks``, the failures named on stderr."""
    failed = [check for check, passed in checks.items() if passed is False]
    if failed:
        print(f"sspgm solve: checks that failed: {', '.join(failed)}", file=sys.stderr)
        return EXIT_FAILED_CHECK
    return 0


def _run(args):
    """Run the algorithm on the chosen instance and report; returns ``(status, facts)``.

    ``facts`` holds what the JSON document of :mod:`sspgm._json` reports.
    """
    import numpy as np

    from sspgm.instances import build_instance, instance_label, split_instance_args

    if args.simulator is None:
        name, tokens = split_instance_args(args.extra)
        ssp, kwargs = build_instance(name, tokens, args.command_options)
    args.backend = default_backend(args.backend)
    backend = load_backend(args.backend)
    if args.checkpoint is not None:
        check_checkpoint_path(args.checkpoint)
    if args.simulator is not None:
        return _run_simulator(args, backend)
    params = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    print(f"instance: {instance_label(name, kwargs)}  S = {ssp.n_states}, "
          f"A = {ssp.n_actions}, Gamma = {ssp.branching}, c_min = {ssp.c_min:g}")
    _print_header(args)
    with sampling.sampling_model(args, ssp, f"{name}({params})") as (model, where):
        if model is not ssp:
            print(f"sampling: {where}")
        res, record = _solve(backend, args, model, ssp.costs)
    _print_run(args, res, record["seconds"])
    _print_policy(ssp, np.asarray(res.policy), args.show)
    exact = exact_error(backend, ssp, res)
    checks = answer_checks(backend, ssp, res, exact)
    facts = {"instance": (name, kwargs, ssp), "res": res, "exact": exact, "checks": checks,
             "verdict": certificate_verdict(res)[1], **record}
    return _failed(checks), facts


def run(args):
    """Run ``sspgm solve``; returns the exit status.

    With ``--json`` the text report is not printed, and one JSON document
    (:func:`sspgm._json.solve_document`) is printed instead.
    """
    if not args.json:
        return _run(args)[0]
    from sspgm import _json

    with contextlib.redirect_stdout(io.StringIO()):
        status, facts = _run(args)
    print(_json.dumps(_json.solve_document(args, facts, status)))
    return status
