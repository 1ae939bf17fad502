"""``sspgm bounds``: the paper's sample-complexity bounds at given parameters.

Prints, for every bound that the given parameters select, each term with
its value, the dominant term and the total, then all totals side by side.
``--cmin`` selects the ``c_min > 0`` family (Thm. 1, eq. 4, the explicit
total of Alg. 1, and the lower bound of Sec. 5 when ``B >= 1``); ``--theta``
with ``--D`` selects the ``theta`` family (Thm. 2 as printed and as proved,
eq. 5, Lemma 9, the explicit totals of Alg. 4 and Alg. 3; Alg. 3's uses
``max(c_min, nu)`` when ``--cmin`` is given). Omitted ``--S``, ``--A``,
``--Gamma`` stay symbolic. ``--latex`` prints one complete LaTeX
``tabular`` in the paper's notation.
"""

from sspgm.cli import COMMANDS
from sspgm.plain_text import plain


def register(subparsers):
    """Add the ``bounds`` parser to ``subparsers``."""
    p = subparsers.add_parser(
        "bounds",
        help=COMMANDS["bounds"],
        description=plain(__doc__.split("\n\n")[1]),
    )
    p.add_argument("--eps", type=float, required=True, help="accuracy in (0, 1]")
    p.add_argument("--B", type=float, required=True,
                   help="range B* of the optimal values (0 allowed with --theta)")
    p.add_argument("--cmin", type=float, help="minimum cost in (0, 1]: Alg. 1 bounds")
    p.add_argument("--S", type=int, help="number of non-goal states (symbolic if omitted)")
    p.add_argument("--A", type=int, help="number of actions (symbolic if omitted)")
    p.add_argument("--Gamma", type=int, help="branching factor (symbolic if omitted)")
    p.add_argument("--theta", type=float, help="slack theta >= 1: Alg. 3 bounds (with --D)")
    p.add_argument("--D", type=float, help="SSP-diameter >= 1: Alg. 3 bounds (with --theta)")
    p.add_argument("--D-hat", dest="D_hat", type=float,
                   help="diameter estimate (>= D) for Alg. 3's explicit total "
                   "(default: Lemma 9's upper bound from D and eps)")
    p.add_argument("--delta", type=float, default=0.1, metavar="delta",
                   help="confidence level of the explicit totals (default 0.1)")
    p.add_argument("--alpha", type=float, default=1.0,
                   help="constant of the allocation function (default 1)")
    p.add_argument("--Delta", type=float, metavar="Delta",
                   help="final doubling guess of SEARCH in the explicit totals "
                   "(default: bounded from B, or from D in Alg. 3)")
    p.add_argument("--W", type=float,
                   help="final doubling guess of Alg. 4 in the explicit totals "
                   "(default: first power of 2 >= D)")
    output = p.add_mutually_exclusive_group()
    output.add_argument("--latex", action="store_true",
                        help="print one complete LaTeX tabular in the paper's notation")
    output.add_argument("--json", action="store_true",
                        help="print one JSON document (schema: docs/json.md)")
    p.set_defaults(run=run)


def run(args):
    """Print the table of bounds for ``args``; returns the exit status.

    The tables are built by :mod:`sspgm.commands.bounds_report`, imported here
    so that building the parser (``sspgm bounds --help``) loads no sympy.
    """
    from sspgm.commands.bounds_report import print_report

    return print_report(args)
