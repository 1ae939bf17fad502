"""The JSON documents of ``sspgm solve --json``, ``sspgm info --json``, ``sspgm bounds --json``
and ``sspgm validate --json`` (its ``summary.json``).

One document per command run, as one JSON object; the fields of ``solve``,
``info`` and ``bounds`` are documented in ``docs/json.md``, those of
``validate``'s summary in ``docs/validate.md``. Each document has its own
version (:data:`SCHEMA_VERSIONS`), raised whenever one of its fields changes
meaning or disappears; new fields may be added without raising it. Every
document starts with ``schema_version``, ``command`` and ``sspgm_version``.
Numbers that JSON cannot hold (infinite values, NaN) are written as the
strings ``"inf"``, ``"-inf"`` and ``"nan"``.
"""

import dataclasses
import json
import math
import numbers

__all__ = ["SCHEMA_VERSIONS", "dumps", "to_json", "envelope", "solve_document",
           "info_document", "bounds_document"]

SCHEMA_VERSIONS = {"solve": 1, "info": 1, "bounds": 1, "validate": 2}
"""The version of each command's document (docs/json.md, docs/validate.md): ``validate``'s
summary is at 2 since it is written by this module (its fields changed then)."""


def to_json(value):
    """``value`` as plain JSON data: numpy scalars and arrays to numbers and lists, tuples to
    lists, non-finite floats to ``"inf"``, ``"-inf"`` or ``"nan"``.

    Examples
    --------
    >>> import numpy as np
    >>> to_json({"v": np.array([1.0, np.inf]), "n": np.int64(3), "cell": (0, 3)})
    {'v': [1.0, 'inf'], 'n': 3, 'cell': [0, 3]}
    """
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return to_json(value.tolist())
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    return str(value)


def dumps(document, indent=None):
    """The document as strict JSON (no ``NaN`` or ``Infinity`` tokens).

    Parameters
    ----------
    document : dict
        Anything :func:`to_json` takes.
    indent : int, optional
        As :func:`json.dumps`'s; the default writes one line.

    Returns
    -------
    str

    Examples
    --------
    >>> dumps({"gap": float("inf"), "policy": (0, 1)})
    '{"gap": "inf", "policy": [0, 1]}'
    """
    return json.dumps(to_json(document), indent=indent, allow_nan=False)


def envelope(command, version):
    """The fields every document starts with: ``schema_version``, ``command`` and
    ``sspgm_version``.

    Parameters
    ----------
    command : str
        The command whose document this is.
    version : int
        The version of that document's layout (its entry in :data:`SCHEMA_VERSIONS`).

    Examples
    --------
    >>> envelope("validate", SCHEMA_VERSIONS["validate"])["schema_version"]
    2
    """
    from sspgm import __version__

    return {"schema_version": version, "command": command, "sspgm_version": __version__}


def _instance(name, kwargs, ssp):
    """The instance fields shared by ``solve`` and ``info``: every builder parameter (its
    default where not given; None for a required one, which is always given)."""
    import inspect

    from sspgm.instances import instance_parameters

    params = {k: (None if v is inspect.Parameter.empty else v)
              for k, v in instance_parameters(name).items()}
    params.update(kwargs)
    return {"name": name, "given": dict(kwargs), "params": params, "S": ssp.n_states,
            "A": ssp.n_actions, "Gamma": ssp.branching, "c_min": ssp.c_min,
            "kernel": "sparse" if ssp.is_sparse else "dense"}


def _round(round_):
    return dataclasses.asdict(round_)


def solve_document(args, facts, status):
    """The document of one ``sspgm solve --json`` run (docs/json.md, "solve").

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    facts : dict
        What :func:`sspgm.commands.solve.run` gathered: ``res`` (the result),
        ``instance`` (``(name, kwargs, ssp)``) or ``simulator``, ``exact``,
        ``checks``, ``verdict`` (the certificate's, as text), ``seconds``,
        ``resumed``, ``rounds_resumed``.
    status : int
        The exit status.
    """
    res = facts["res"]
    cert = res.certificate
    instance = _instance(*facts["instance"]) if "instance" in facts else None
    run = {"eps": args.eps, "delta": args.delta, "theta": args.theta, "seed": args.seed,
           "checkpoint": args.checkpoint}
    if args.method == "certified":
        run.update(kind=args.kind, relative=args.relative, budget=args.budget)
    else:
        run.update(alpha=args.alpha, max_iter=args.max_iter)
    calls = res.calls
    return {
        **envelope("solve", SCHEMA_VERSIONS["solve"]),
        "instance": instance,
        "simulator": facts.get("simulator"),
        "method": args.method,
        "algorithm": getattr(res, "algorithm", "certified"),
        "backend": args.backend,
        "run": run,
        "resumed": facts["resumed"],
        "rounds_resumed": facts["rounds_resumed"],
        "rounds": [_round(r) for r in res.history],
        "n_calls": res.n_calls,
        "calls_per_pair": {"min": calls.min(), "max": calls.max()},
        "seconds": facts["seconds"],
        "D_hat": res.D_hat,
        "nu": res.nu,
        "message": res.message,
        "policy": res.policy,
        "certified": bool(res.certified),
        "certificate": {
            "kind": cert.kind, "delta": cert.delta, "lower": cert.lower, "upper": cert.upper,
            "gap": cert.gap, "relative_gap": cert.relative_gap, "policy_gap": cert.policy_gap,
            "proper": cert.proper, "verdict": facts["verdict"],
        },
        "exact": facts["exact"],
        "checks": facts["checks"],
        "exit_status": status,
    }


def info_document(name, kwargs, ssp, backend_name, best, diameter):
    """The document of ``sspgm info --json`` (docs/json.md, "info").

    Parameters
    ----------
    name : str
        The instance's name.
    kwargs : dict
        The parameters given (the others are the builder's defaults).
    ssp : SSP
        The instance.
    backend_name : str
        The backend that computed ``best`` and ``diameter``.
    best : OptimalValuesResult
        ``optimal_values(ssp)``.
    diameter : DiameterResult
        ``diameter(ssp)``.
    """
    values = best.values
    return {
        **envelope("info", SCHEMA_VERSIONS["info"]),
        "instance": _instance(name, kwargs, ssp),
        "backend": backend_name,
        "D": diameter.D,
        "B_star": float(values.max()),
        "V_star": values,
        "V_star_method": best.which,
        "policy": best.policy,
    }


def bounds_document(params, evaluated, titles, kinds, terms, totals, dominants):
    """The document of ``sspgm bounds --json`` (docs/json.md, "bounds").

    Parameters
    ----------
    params : dict
        The parameters of the command line (None where not given).
    evaluated : list of (str, list)
        Bound key and the values of its terms (floats, or sympy expressions
        where ``S``, ``A`` or ``Gamma`` are symbolic).
    titles, kinds, terms, totals, dominants : dict
        Per bound key: its title, its kind (``"O~"``, ``"Omega"``,
        ``"explicit"``), the text of its terms, its total and its dominant
        term (text).
    """
    bounds = []
    for key, values in evaluated:
        bounds.append({
            "key": key, "title": titles[key], "kind": kinds[key],
            "terms": [{"term": term, "value": _number_or_text(value)}
                      for term, value in zip(terms[key], values)],
            "total": _number_or_text(totals[key]),
            "dominant": dominants[key],
        })
    return {**envelope("bounds", SCHEMA_VERSIONS["bounds"]), "params": params, "bounds": bounds}


def _number_or_text(value):
    """A float as a number, a symbolic value as its sympy text."""
    if isinstance(value, numbers.Real):
        return float(value)
    import sympy as sp

    return sp.sstr(value)
