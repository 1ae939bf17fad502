"""``sspgm bounds``: the paper's sample-complexity bounds at given parameters.

Prints, for every bound that the given parameters select, each term with
its value, the dominant term and the total, then all totals side by side.
``--cmin`` selects the ``c_min > 0`` family (Thm. 1, eq. 4, the explicit
total of Alg. 1, and the unit-cost lower bound when ``B >= 1``); ``--theta``
with ``--D`` selects the ``theta`` family (Thm. 2, eq. 5, Lemma 9, the
explicit total of Alg. 3). Omitted ``--S``, ``--A``, ``--Gamma`` stay
symbolic. ``--latex`` prints every cell as LaTeX.
"""

import numpy as np
import sympy as sp

import bounds
from reference.errors import ParameterError

FAMILY_CMIN = ("thm1", "eq4", "lower", "explicit1")
FAMILY_THETA = ("thm2", "eq5", "lemma9", "explicit3")


def register(subparsers):
    """Add the ``bounds`` parser to ``subparsers``."""
    p = subparsers.add_parser(
        "bounds",
        help="evaluate the sample-complexity bounds",
        description=__doc__.split("\n\n")[1],
    )
    p.add_argument("--eps", type=float, required=True, help="accuracy in (0, 1]")
    p.add_argument("--B", type=float, required=True, help="range B* of the optimal values")
    p.add_argument("--cmin", type=float, help="minimum cost in (0, 1]: Alg. 1 bounds")
    p.add_argument("--S", type=int, help="number of non-goal states (symbolic if omitted)")
    p.add_argument("--A", type=int, help="number of actions (symbolic if omitted)")
    p.add_argument("--Gamma", type=int, help="branching factor (symbolic if omitted)")
    p.add_argument("--theta", type=float, help="slack theta >= 1: Alg. 3 bounds (with --D)")
    p.add_argument("--D", type=float, help="SSP-diameter >= 1: Alg. 3 bounds (with --theta)")
    p.add_argument("--D-hat", dest="D_hat", type=float,
                   help="diameter estimate for Alg. 3's explicit total "
                   "(default: Lemma 9's upper bound from D and eps)")
    p.add_argument("--delta", type=float, default=0.1,
                   help="confidence level of the explicit totals (default 0.1)")
    p.add_argument("--alpha", type=float, default=1.0,
                   help="constant of the allocation function (default 1)")
    p.add_argument("--Delta", type=float,
                   help="final doubling guess of the explicit totals "
                   "(default: first power of 2 >= B)")
    p.add_argument("--latex", action="store_true", help="print LaTeX")
    p.set_defaults(run=run)


def run(args):
    """Print the table of bounds for ``args``; returns the exit status."""
    evaluated = [(key, _evaluate(key, args)) for key in _selected(args)]
    print(_header(args))
    totals = []
    for key, values in evaluated:
        bound = bounds.BOUNDS[key]
        print()
        print(_section(bound, values, args.latex))
        title = rf"\text{{{key}}}" if args.latex else bound.title
        totals.append((title, sum(values) if _numeric(values) else sp.Add(*values)))
    print()
    print("% totals" if args.latex else "totals")
    width = max(len(title) for title, _ in totals)
    for title, total in totals:
        print(_row(title, total, width, args.latex))
    return 0


def _selected(args):
    theta_given = (args.theta is not None, args.D is not None)
    if any(theta_given) and not all(theta_given):
        raise ParameterError("`--theta` and `--D` must be given together; got only one of them.")
    keys = []
    if args.cmin is not None:
        keys += [k for k in FAMILY_CMIN if k != "lower" or args.B >= 1]
    if all(theta_given):
        keys += list(FAMILY_THETA)
    if not keys:
        raise ParameterError(
            "give `--cmin` (Alg. 1 bounds) or `--theta` with `--D` (Alg. 3 bounds); got neither."
        )
    return keys


def _evaluate(key, args):
    common = dict(S=args.S, A=args.A, terms=True)
    if key == "lower":
        return bounds.samp_comp_lower(args.eps, args.B, **common)
    common["Gamma"] = args.Gamma
    if key == "lemma9":
        return bounds.samp_comp_diameter(args.eps, args.D, **common)
    common.update(delta=args.delta, alpha=args.alpha, Delta=args.Delta, bound=key)
    if key in FAMILY_CMIN:
        return bounds.samp_comp(args.eps, args.B, args.cmin, **common)
    return bounds.samp_comp_theta(args.eps, args.theta, args.D, args.B, D_hat=args.D_hat,
                                  **common)


def _header(args):
    Delta = args.Delta if args.Delta is not None else bounds.final_delta(args.B)
    given = [("eps", args.eps), ("B", args.B), ("cmin", args.cmin), ("S", args.S),
             ("A", args.A), ("Gamma", args.Gamma), ("theta", args.theta), ("D", args.D),
             ("delta", args.delta), ("alpha", args.alpha), ("Delta", Delta)]
    shown = ", ".join(f"{name} = {value:g}" for name, value in given if value is not None)
    lines = [f"parameters: {shown}"]
    if args.theta is not None and args.D is not None:
        D_hat = args.D_hat
        if D_hat is None:
            D_hat = float(bounds.D_HAT_UPPER.subs({bounds.eps: args.eps, bounds.D: args.D}))
            lines.append(f"D_hat = {D_hat:g} (Lemma 9 upper bound from D and eps)")
        else:
            lines.append(f"D_hat = {D_hat:g}")
    lines.append("O~ and Omega bounds: constants and log factors dropped; "
                 "explicit totals: S A phi(Delta, y) with logs and alpha")
    prefix = "% " if args.latex else ""
    return "\n".join(prefix + line for line in lines)


def _section(bound, values, latex):
    labels = [bounds.to_latex(t) if latex else sp.sstr(t) for t in bound.terms]
    total = r"\text{total}" if latex else "total"
    width = max(len(label) for label in labels + [total])
    lines = [("% " if latex else "") + f"{bound.title} [{bound.kind}]"]
    lines += [_row(label, value, width, latex) for label, value in zip(labels, values)]
    if _numeric(values):
        lines.append(_row(total, sum(values), width, latex))
        top = bound.terms[int(np.argmax(values))]
        shown = bounds.to_latex(top) if latex else sp.sstr(top)
    else:
        lines.append(_row(total, sp.Add(*values), width, latex))
        missing = sorted({str(s) for v in values if not isinstance(v, float)
                          for s in v.free_symbols})
        shown = f"undetermined (depends on {', '.join(missing)})"
    lines.append(("% " if latex else "  ") + f"dominant: {shown}")
    return "\n".join(lines)


def _row(label, value, width, latex):
    if latex:
        cell = sp.latex(sp.Float(value, 6)) if isinstance(value, float) else sp.latex(value)
        return f"{label} & {cell} \\\\"
    cell = f"{value:.6g}" if isinstance(value, float) else sp.sstr(value)
    return f"  {label:<{width}}  {cell}"


def _numeric(values):
    return all(isinstance(v, float) for v in values)
