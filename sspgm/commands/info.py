"""``sspgm info [INSTANCE] [--param value ...]``: sizes, constants, V* and an optimal policy.

The instance is named in the spec language of :mod:`sspgm.instance_spec`
(``garnet:n_states=30,seed=3`` or ``garnet --n-states 30 --instance-seed 3``),
the same as ``sspgm solve`` and ``sspgm validate``.
"""

import argparse

from sspgm import BACKENDS, load_backend
from sspgm.cli import COMMANDS, default_backend, option_strings
from sspgm.instance_help import describe_instance_help


def register(subparsers):
    """Add the ``info`` sub-command."""
    parser = subparsers.add_parser(
        "info",
        help=COMMANDS["info"],
        usage="sspgm info [-h] [--backend {reference,fast}] [--show N] [--json] "
        "[INSTANCE[:key=value,...]] [--param value ...] [--instance-seed N]",
        description="Build an instance and print its sizes, constants (Gamma, c_min, "
        "D, B*), the best values over proper policies V* and an optimal policy "
        "(drawn on the grid for grid worlds). A random instance's seed is --instance-seed "
        "(or INSTANCE:seed=N), as in `sspgm solve`.",
        epilog=describe_instance_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument(
        "--backend", choices=BACKENDS, default=None,
        help="backend computing V*, D and B* (default: fast when it is built, else reference, "
        "as `import sspgm`)",
    )
    parser.add_argument(
        "--show", type=int, default=20, metavar="N",
        help="print V* and the policy of the first N states only (default: 20)",
    )
    parser.add_argument(
        "--json", action="store_true",
        help="print one JSON document on standard output instead of the text (schema: "
        "docs/json.md)",
    )
    parser.set_defaults(run=run, accepts_extra=True, command_options=option_strings(parser))


def run(args):
    """Print the description of the chosen instance; returns the exit status."""
    import numpy as np

    from sspgm.instances import (
        build_instance,
        draw_grid,
        draw_grid_policy,
        instance_label,
        split_instance_args,
    )

    name, tokens = split_instance_args(args.extra)
    ssp, kwargs = build_instance(name, tokens, args.command_options)
    args.backend = default_backend(args.backend)
    backend = load_backend(args.backend)
    best = backend.optimal_values(ssp)
    diam = backend.diameter(ssp)
    if args.json:
        from sspgm import _json

        print(_json.dumps(_json.info_document(name, kwargs, ssp, args.backend, best, diam)))
        return 0
    values, policy = np.asarray(best.values), np.asarray(best.policy)
    kind = "sparse CSR" if ssp.is_sparse else "dense"
    print(f"instance: {instance_label(name, kwargs)}")
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
