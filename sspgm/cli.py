"""The ``sspgm`` command line: one sub-command per module of :mod:`sspgm.commands`."""

import argparse
import importlib
import sys

COMMANDS = ("info", "solve", "bounds", "validate")


def build_parser():
    """Return the top-level parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="sspgm",
        description="Stochastic shortest path with a generative model "
        "(Tarbouriech et al., ALT 2021).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"sspgm.commands.{name}").register(sub)
    return parser


def main(argv=None):
    """Run the command line; returns the process exit status."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "accepts_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    try:
        return args.run(args) or 0
    except ValueError as exc:
        print(f"sspgm {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
