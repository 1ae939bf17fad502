"""``sspgm info [INSTANCE] [--param value ...]``: sizes, constants, V* and an optimal policy."""

import argparse

from sspgm import BACKENDS, load_backend
from sspgm.cli import COMMANDS
from sspgm.instance_help import describe_instance_help


def register(subparsers):
    """Add the ``info`` sub-command."""
    parser = subparsers.add_parser(
        "info",
        help=COMMANDS["info"],
        usage="sspgm info [-h] [--backend {reference,fast}] [--show N] [INSTANCE] "
        "[--param value ...]",
        description="Build an instance and print its sizes, constants (Gamma, c_min, "
        "D, B*), the best values over proper policies V* and an optimal policy "
        "(drawn on the grid for grid worlds).",
        epilog=describe_instance_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--backend", choices=BACKENDS, default="reference",
        help="backend computing V*, D and B* (default: reference)",
    )
    parser.add_argument(
        "--show", type=int, default=20, metavar="N",
        help="print V* and the policy of the first N states only (default: 20)",
    )
    parser.set_defaults(run=run, accepts_extra=True)


def _format_params(kwargs):
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


def run(args):
    """Print the description of the chosen instance; returns the exit status."""
    import numpy as np

    from sspgm.instances import build_instance, draw_grid, draw_grid_policy, split_instance_args

    name, tokens = split_instance_args(args.extra)
    ssp, kwargs = build_instance(name, tokens)
    backend = load_backend(args.backend)
    best = backend.optimal_values(ssp)
    diam = backend.diameter(ssp)
    values, policy = np.asarray(best.values), np.asarray(best.policy)
    kind = "sparse CSR" if ssp.is_sparse else "dense"
    print(f"instance: {name}({_format_params(kwargs)})")
    print(f"S = {ssp.n_states}")
    print(f"A = {ssp.n_actions}")
    print(f"Gamma = {ssp.branching}")
    print(f"c_min = {ssp.c_min:.6g}")
    print(f"kernel = {kind}")
    print(f"D = {diam.D:.6g}")
    print(f"B* = {float(values.max()):.6g}")
    print(f"V*: {best.which}")
    shown = min(max(args.show, 0), ssp.n_states)
    for s in range(shown):
        print(f"  V*({s}) = {values[s]:.6g}   action {policy[s]}")
    if shown < ssp.n_states:
        print(
            f"  ... {ssp.n_states - shown} more states (V* min {values.min():.6g}, "
            f"mean {values.mean():.6g}, max {values.max():.6g})"
        )
    if "state_to_cell" in ssp.meta:
        print("optimal policy on the grid (^ up, > right, v down, < left, # wall, G goal):")
        print(draw_grid_policy(ssp, policy))
        print("V* on the grid:")
        print(draw_grid(ssp, [f"{v:.3f}" for v in values]))
    return 0
