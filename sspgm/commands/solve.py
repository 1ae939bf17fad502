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
import os
import sys
import tempfile
import time
import warnings

from sspgm import BACKENDS, load_backend
from sspgm.cli import COMMANDS
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
        "[--show N] [--workers N | --scheduler ADDRESS] [--chunk N] "
        "[INSTANCE [--param value ...] | --simulator MODULE:FUNCTION --states S --actions A "
        "[--batched] [--costs PATH]]",
        description="Sample the instance through its generative model and run Alg. 1 "
        "(c_min > 0) or, with --theta, Alg. 3 (any costs), printing one line per round; "
        "then print the calls used, the policy and its exact error against eps. "
        "Exit status: 0 when the answer is certified and its exact error is within eps, 1 "
        "when it is not, 2 on an "
        "error in the arguments or input, 130 when interrupted.",
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
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument(
        "--backend", choices=BACKENDS, default="reference",
        help="backend running the algorithm (default: reference)",
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
    sampling.add_arguments(parser)
    parser.set_defaults(run=run, accepts_extra=True)


def _print_round(round_):
    name = "W" if round_.phase == "diameter" else "Delta"
    label = "Alg. 4" if round_.phase == "diameter" else "SEARCH"
    print(
        f"  {label:6s} {name} = {round_.scale:<6g} samples/pair >= {round_.target:<10d} "
        f"Gamma_hat = {round_.Gamma_hat:<3d} EVI sweeps = {round_.evi_n_iter:<6d} "
        f"max v = {round_.v_tilde_max:<10.6g} calls = {round_.n_calls:<12d} "
        f"{round_.seconds:.2f} s",
        flush=True,
    )


def _print_certified_round(round_):
    print(
        f"  round: calls = {round_.n_calls:<12d} gap = {round_.gap:<10.6g} "
        f"max lower = {round_.max_lower:<10.6g} max upper = {round_.max_upper:<10.6g} "
        f"{round_.seconds:.2f} s",
        flush=True,
    )


def _certificate(res):
    """Print the result's certificate; returns whether it proves the accuracy asked for.

    The target is ``eps``, or ``eps / 2`` for Alg. 3 (the perturbed costs'
    certificate), relative for a certified run with ``relative`` (whose
    certificate with ``theta`` bounds ``V*_theta``).
    """
    cert = res.certificate
    relative = getattr(res, "relative", False)
    alg3 = getattr(res, "algorithm", None) == "alg3"
    target = res.eps / 2 if alg3 else res.eps
    certified = res.certified
    verdict = "certified" if certified else "NOT certified"
    what = "relative gap" if relative else "gap"
    print(f"certificate ({cert.kind} boxes, delta = {cert.delta:g}, from the run's own samples; "
          f"lower <= {'V*' if res.theta is None or alg3 else 'V*_theta'}, upper >= V^pi): "
          f"max lower = {cert.lower.max():.6g}, max upper = {cert.upper.max():.6g}, "
          f"gap = {cert.gap:.6g}, relative gap = {cert.relative_gap:.6g} "
          f"({verdict}: {what} <= {target:g})")
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


def _exact_error(backend, ssp, res):
    """Print the policy's exact error against eps; returns whether it is within eps.

    The error is relative, ``max_s (V^pi(s) - V(s)) / V(s)`` (``inf`` where
    only ``V(s)`` is 0), for a certified run with ``relative``. Returns None
    when the error cannot be computed (``V*_theta`` too large to enumerate):
    the answer is then neither confirmed nor refuted.
    """
    import numpy as np

    from reference.errors import TooLargeError

    v_pi = np.asarray(backend.policy_values(ssp, res.policy))
    if res.theta is None:
        best = np.asarray(backend.optimal_values(ssp).values)
        error = float(np.max(np.abs(v_pi - best)))
        what = "max_s |V^pi(s) - V*(s)|"
    else:
        try:
            best = np.asarray(backend.restricted_optimal_values(ssp, res.theta).values)
        except TooLargeError as exc:
            print(f"exact error: not computed (V*_theta needs enumeration: {exc})")
            return None
        error = float(np.max(v_pi - best))
        what = "max_s (V^pi(s) - V*_theta(s)), one-sided (Thm. 2)"
    if getattr(res, "relative", False):
        excess = v_pi - best
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(excess <= 0, 0.0, np.where(best > 0, excess / best, np.inf))
        error = float(ratio.max())
        star = "V*" if res.theta is None else "V*_theta"
        what = f"max_s (V^pi(s) - {star}(s)) / {star}(s), relative"
    within = error <= res.eps
    verdict = "within eps" if within else "ABOVE eps"
    print(f"exact error: {what} = {error:.6g} ({verdict} = {res.eps:g})")
    return within


def answer_checks(backend, ssp, res):
    """The checks of a run's answer, printed as they are computed.

    Returns
    -------
    dict
        Check name -> True (passed), False (failed) or None (could not be
        decided). ``sspgm solve`` exits with :data:`EXIT_FAILED_CHECK` when
        any check is False.
    """
    return {"certified": _certificate(res),
            "exact error within eps": _exact_error(backend, ssp, res)}


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


def _solve(backend, args, model, costs):
    """Run the algorithm ``args`` asks for on ``model``; returns its result and seconds."""
    from reference.errors import NotCertifiedWarning

    options = {} if args.max_iter is None else {"max_iter": args.max_iter}
    start = time.perf_counter()
    with warnings.catch_warnings(), sampling.worker_tracebacks():
        warnings.simplefilter("ignore", NotCertifiedWarning)
        if args.method == "certified":
            res = backend.solve_certified(
                model, costs, args.eps, args.delta, kind=args.kind, relative=args.relative,
                theta=args.theta, budget=args.budget, seed=args.seed,
                checkpoint=args.checkpoint, callback=_print_certified_round,
            )
        else:
            res = backend.solve(
                model, costs, args.eps, args.delta, theta=args.theta, alpha=args.alpha,
                seed=args.seed, callback=_print_round, checkpoint=args.checkpoint, **options,
            )
    return res, time.perf_counter() - start


def _algorithm(args):
    if args.method == "certified":
        algorithm = "solve_certified"
        if args.theta is not None:
            algorithm += f" (theta = {args.theta:g})"
        return algorithm
    return "Alg. 1" if args.theta is None else f"Alg. 3 (theta = {args.theta:g})"


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
    with sampling.sampling_model(args) as (model, where):
        print(f"simulator: {args.simulator}  S = {model.n_states}, A = {model.n_actions}; "
              f"sampling in {where}")
        print(f"{_algorithm(args)}: eps = {args.eps:g}, delta = {args.delta:g}, "
              f"alpha = {args.alpha:g}, seed = {args.seed}, backend = {args.backend}")
        res, seconds = _solve(backend, args, model, sampling.simulator_problem(args)[3])
    _print_run(args, res, seconds)
    policy = np.asarray(res.policy)
    shown = min(max(args.show, 0), policy.size)
    print("policy: " + " ".join(f"{s}:{int(policy[s])}" for s in range(shown)))
    if shown < policy.size:
        print(f"  ... {policy.size - shown} more states")
    if not _certificate(res):
        print("sspgm solve: the answer fails: certified", file=sys.stderr)
        return EXIT_FAILED_CHECK
    return 0


def run(args):
    """Run the algorithm on the chosen instance and report; returns the exit status."""
    import numpy as np

    from sspgm.instances import build_instance, split_instance_args

    if args.simulator is None:
        name, tokens = split_instance_args(args.extra)
        ssp, kwargs = build_instance(name, tokens)
    backend = load_backend(args.backend)
    if args.checkpoint is not None:
        check_checkpoint_path(args.checkpoint)
    if args.simulator is not None:
        return _run_simulator(args, backend)
    params = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    print(f"instance: {name}({params})  S = {ssp.n_states}, A = {ssp.n_actions}, "
          f"Gamma = {ssp.branching}, c_min = {ssp.c_min:g}")
    print(f"{_algorithm(args)}: eps = {args.eps:g}, delta = {args.delta:g}, "
          f"alpha = {args.alpha:g}, seed = {args.seed}, backend = {args.backend}")
    with sampling.sampling_model(args, ssp, f"{name}({params})") as (model, where):
        if model is not ssp:
            print(f"sampling: {where}")
        res, seconds = _solve(backend, args, model, ssp.costs)
    _print_run(args, res, seconds)
    _print_policy(ssp, np.asarray(res.policy), args.show)
    failed = [check for check, passed in answer_checks(backend, ssp, res).items()
              if passed is False]
    if failed:
        print(f"sspgm solve: the answer fails: {', '.join(failed)}", file=sys.stderr)
        return EXIT_FAILED_CHECK
    return 0
