"""The tables of ``sspgm bounds`` (:mod:`sspgm.commands.bounds`): terms, totals, LaTeX."""

import numpy as np
import sympy as sp

import bounds
from bounds import ParameterError

FAMILY_CMIN = ("thm1", "eq4", "lower", "explicit1")
FAMILY_THETA = ("thm2", "thm2_proved", "eq5", "lemma9", "explicit4", "explicit3")


def print_report(args):
    """Print the table of bounds for ``args`` (from ``sspgm bounds``); returns the exit status."""
    evaluated = [(key, _evaluate(key, args)) for key in _selected(args)]
    if args.json:
        print(_json_document(args, evaluated))
        return 0
    header = _header(args)
    if args.latex:
        print(_latex_table(header, evaluated))
        return 0
    print("\n".join(header))
    for key, values in evaluated:
        print()
        print(_section(bounds.BOUNDS[key], values))
    print()
    print("totals")
    width = max(len(bounds.BOUNDS[key].title) for key, _ in evaluated)
    for key, values in evaluated:
        print(_row(bounds.BOUNDS[key].title, _total(values), width))
    return 0


PARAMETERS = ("eps", "B", "cmin", "S", "A", "Gamma", "theta", "D", "D_hat", "delta", "alpha",
              "Delta", "W")
"""The parameters of ``sspgm bounds``, as the JSON document names them."""


def _json_document(args, evaluated):
    """The ``--json`` document (:func:`sspgm._json.bounds_document`) as text."""
    from sspgm import _json

    found = [bounds.BOUNDS[key] for key, _ in evaluated]
    keys = [key for key, _ in evaluated]
    document = _json.bounds_document(
        {name: getattr(args, name) for name in PARAMETERS}, evaluated,
        titles={k: b.title for k, b in zip(keys, found)},
        kinds={k: b.kind for k, b in zip(keys, found)},
        terms={k: [sp.sstr(t) for t in b.terms] for k, b in zip(keys, found)},
        totals={k: _total(values) for k, values in evaluated},
        dominants={k: _dominant(b, values, sp.sstr)
                   for (k, values), b in zip(evaluated, found)},
    )
    return _json.dumps(document)


def _selected(args):
    theta_given = (args.theta is not None, args.D is not None)
    if any(theta_given) and not all(theta_given):
        raise ParameterError("`--theta` and `--D` must be given together; got only one of them.")
    for name in ("D_hat", "W"):
        if getattr(args, name) is not None and not all(theta_given):
            flag = "--D-hat" if name == "D_hat" else "--W"
            raise ParameterError(
                f"`{flag}` is used by the Alg. 3 bounds only; give `--theta` and `--D` too."
            )
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
    if key in ("lemma9", "explicit4"):
        if key == "lemma9":
            return bounds.samp_comp_diameter(args.eps, args.D, **common)
        D = args.D if args.W is None else None
        return bounds.samp_comp_diameter(args.eps, D, delta=args.delta, W=args.W,
                                         bound=key, **common)
    if key in ("thm1", "eq4"):
        return bounds.samp_comp(args.eps, args.B, args.cmin, bound=key, **common)
    explicit = dict(delta=args.delta, alpha=args.alpha, Delta=args.Delta)
    if key == "explicit1":
        B = args.B if args.Delta is None else None
        return bounds.samp_comp(args.eps, B, args.cmin, bound=key, **explicit, **common)
    theta = (args.eps, args.theta, args.D)
    if key == "thm2":
        return bounds.samp_comp_theta(*theta, args.B, variant="printed", **common)
    if key == "thm2_proved":
        B = args.B if args.cmin else None
        return bounds.samp_comp_theta(*theta, B, cmin=args.cmin, variant="proved", **common)
    if key == "eq5":
        return bounds.samp_comp_theta(*theta, args.B, bound=key, **common)
    B = args.B if args.cmin and args.Delta is None else None
    return bounds.samp_comp_theta(*theta, B, cmin=args.cmin, D_hat=args.D_hat, W=args.W,
                                  bound=key, **explicit, **common)


def _header(args):
    """Lines describing the parameters, the defaults filled in, and what the kinds mean."""
    given = [("eps", args.eps), ("B", args.B), ("cmin", args.cmin), ("S", args.S),
             ("A", args.A), ("Gamma", args.Gamma), ("theta", args.theta), ("D", args.D),
             ("delta", args.delta), ("alpha", args.alpha)]
    shown = ", ".join(f"{name} = {value:g}" for name, value in given if value is not None)
    lines = [f"parameters: {shown}"]
    if args.cmin is not None:
        Delta = args.Delta if args.Delta is not None else bounds.final_delta(args.B)
        lines.append(f"Alg. 1: Delta = {Delta:g}"
                     + ("" if args.Delta is not None else " (first power of 2 >= B)"))
    if args.theta is not None and args.D is not None:
        lines.append(_alg3_header(args))
    lines.append("O~ and Omega bounds: constants and log factors dropped; "
                 "explicit totals: calls at the final guesses, logs and alpha included")
    return lines


def _alg3_header(args):
    if args.D_hat is None:
        D_hat = float(bounds.D_HAT_UPPER.subs({bounds.eps: args.eps, bounds.D: args.D}))
        parts = [f"D_hat = {D_hat:g} (Lemma 9's upper bound) for the floor, D for the range"]
        nu_range = args.eps / (2 * args.theta * args.D)
    else:
        D_hat = args.D_hat
        parts = [f"D_hat = {D_hat:g}"]
        nu_range = args.eps / (2 * args.theta * D_hat)
    nu = args.eps / (2 * args.theta * D_hat)
    floor = nu if args.cmin is None else max(args.cmin, nu)
    parts.append(f"nu = {nu:.6g}, cost floor max(c_min, nu) = {floor:.6g}")
    W = args.W if args.W is not None else bounds.final_delta(args.D)
    parts.append(f"W = {W:g}" + ("" if args.W is not None else " (first power of 2 >= D)"))
    if args.Delta is not None:
        parts.append(f"Delta = {args.Delta:g}")
    else:
        cmin = args.cmin if args.cmin else None
        B = args.B if cmin else None
        reach = float(sp.sympify(bounds.perturbed_range(args.D, B, cmin, nu_range)))
        parts.append(f"Delta = {bounds.final_delta(reach):g} (first power of 2 >= {reach:.6g}, "
                     "the perturbed problem's range bound)")
    return "Alg. 3: " + "; ".join(parts)


def _section(bound, values):
    labels = [sp.sstr(t) for t in bound.terms]
    width = max(len(label) for label in labels + ["total"])
    lines = [f"{bound.title} [{bound.kind}]"]
    lines += [_row(label, value, width) for label, value in zip(labels, values)]
    lines.append(_row("total", _total(values), width))
    lines.append(f"  dominant: {_dominant(bound, values, sp.sstr)}")
    return "\n".join(lines)


def _dominant(bound, values, show):
    if _numeric(values):
        return show(bound.terms[int(np.argmax(values))])
    missing = sorted({str(s) for v in values if not isinstance(v, float) for s in v.free_symbols})
    return f"undetermined (depends on {', '.join(missing)})"


def _row(label, value, width):
    cell = f"{value:.6g}" if isinstance(value, float) else sp.sstr(value)
    return f"  {label:<{width}}  {cell}"


def _total(values):
    return sum(values) if _numeric(values) else sp.Add(*values)


def _numeric(values):
    return all(isinstance(v, float) for v in values)


KIND_LATEX = {"O~": r"$\tilde O$", "Omega": r"$\Omega$", "explicit": "explicit"}


def _latex_value(value):
    if isinstance(value, float):
        return "$" + sp.latex(sp.Float(value, 6)) + "$"
    return "$" + bounds.to_latex(value) + "$"


def _latex_table(header, evaluated):
    """One complete ``tabular``: a block per bound (terms, total, dominant), then the totals."""
    lines = [f"% {line}" for line in header]
    lines += [r"\begin{tabular}{lll}", r"\hline", r"Bound & Term & Value \\", r"\hline"]
    for key, values in evaluated:
        bound = bounds.BOUNDS[key]
        lines.append(rf"\multicolumn{{3}}{{l}}{{{bound.latex_title}, {KIND_LATEX[bound.kind]}}} \\")
        for term, value in zip(bound.terms, values):
            lines.append(rf" & ${bounds.to_latex(term)}$ & {_latex_value(value)} \\")
        lines.append(rf" & total & {_latex_value(_total(values))} \\")
        dominant = _dominant(bound, values, lambda t: f"${bounds.to_latex(t)}$")
        lines.append(rf" & dominant & {dominant} \\")
        lines.append(r"\hline")
    lines.append(r"\multicolumn{3}{l}{Totals} \\")
    for key, values in evaluated:
        lines.append(rf"{bounds.BOUNDS[key].latex_title} & & {_latex_value(_total(values))} \\")
    lines += [r"\hline", r"\end{tabular}"]
    return "\n".join(lines)
