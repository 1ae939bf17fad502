"""Mutation testing on demand: does a targeted set of tests catch each named code error?

Each mutation replaces one exact piece of text of one file (it must occur exactly
once) in a temporary copy of the repository, rebuilds the compiled kernels there when
the file is a ``.pyx``, and runs only the tests listed for it
(``pytest -x``, ``CI=1`` so that hypothesis derandomizes). A mutation is

* **caught** when the tests fail,
* **survived** when they pass,
* **error** when pytest ends otherwise (collection error, build failure, timeout),
* **stale** when its text no longer occurs exactly once (the code moved on).

Run from the repository root with the project's virtual environment; the machine is
shared, so every child runs under ``nice`` on one thread::

    .venv/bin/python benchmarks/mutations.py                 # every mutation
    .venv/bin/python benchmarks/mutations.py alg4 search     # names or areas containing these
    .venv/bin/python benchmarks/mutations.py --list
    .venv/bin/python benchmarks/mutations.py --report docs/mutations.md

It exits 1 when a mutation is not caught. It is not part of CI (it takes minutes; a
mutation of a ``.pyx`` or ``.pxd`` rebuilds the kernels, which needs the build requirements
of ``pyproject.toml``, Cython and setuptools, in the environment). ``--list`` marks a
mutation whose text no longer occurs once as STALE. Its last report is
``docs/mutations.md``.
"""

import argparse
from dataclasses import dataclass
import os
from pathlib import Path
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = Path(__file__).resolve().parent.parent

IGNORED = shutil.ignore_patterns(".venv", ".git", "build", "dist", "__pycache__", ".hypothesis",
                                 ".pytest_cache", ".benchmarks", "*.egg-info", "_build")

TIMEOUT = 1800
"""Seconds one mutation's build and tests may take before it is reported as an error."""


@dataclass(frozen=True)
class Mutation:
    """One named code error.

    Attributes
    ----------
    name : str
        Short unique name.
    area : str
        What it breaks: ``"Alg. 4"``, ``"SEARCH"``, ``"Lemma 5"``, ...
    path : str
        File, relative to the repository root.
    old, new : str
        The text replaced (exactly one occurrence) and its replacement.
    tests : tuple of str
        pytest node ids or files (relative to the root) that should catch it.
    """

    name: str
    area: str
    path: str
    old: str
    new: str
    tests: tuple


ALG4 = "reference/diameter_estimate.py"
STEPS = "tests/test_algorithm_steps.py"
LEMMAS = "tests/test_lemmas.py"
ROUNDING = "reference/check_rounding.py"
EXACT_POURS = "tests/test_check_rounding.py::test_rounding_bound_covers_the_exact_pour"

MUTATIONS = (
    Mutation("alg4-listing-output", "Alg. 4", ALG4,
             "return D_hat, D_listing, v_tilde_max, W, eta",
             "return D_listing, D_listing, v_tilde_max, W, eta",
             (STEPS + "::test_erratum_1_listing_below_the_diameter",)),
    Mutation("alg4-no-outer-factor", "Alg. 4", ALG4,
             "* (1.0 + eps) * v_tilde_max\n", "* v_tilde_max\n",
             (STEPS + "::test_alg4_steps_by_hand",)),
    Mutation("alg4-inner-factor", "Alg. 4", ALG4,
             "(1.0 + 2.0 * eta * (1.0 + eps) * v_tilde_max)",
             "(1.0 + eta * (1.0 + eps) * v_tilde_max)",
             (LEMMAS + "::test_lemma_9_over_many_random_instances",)),
    Mutation("alg4-sample-to-eta", "Alg. 4", ALG4,
             "sample_until_radius(run, delta, eps / W / 2.0)",
             "sample_until_radius(run, delta, eps / W)",
             (STEPS + "::test_alg4_steps_by_hand",)),
    Mutation("alg4-mu-eps", "Alg. 4", ALG4,
             "unit, delta, eps / 2.0, max_iter", "unit, delta, eps, max_iter",
             (STEPS + "::test_alg4_evi_accuracy_and_sampling_on_a_loop",)),
    Mutation("alg4-stop-rule", "Alg. 4", ALG4,
             "while v_tilde_max > W:", "while v_tilde_max > 2.0 * W:",
             (STEPS + "::test_alg4_steps_by_hand",)),
    Mutation("search-mu-coarse", "SEARCH", "reference/range_search.py",
             "mu = iota * eps / (6.0 * scale)", "mu = iota * eps / (2.0 * scale)",
             (STEPS + "::test_search_steps_by_hand",)),
    Mutation("search-stop-rule", "SEARCH", "reference/range_search.py",
             "        if v_tilde_max <= scale:\n            return out, scale",
             "        if v_tilde_max <= 2.0 * scale:\n            return out, scale",
             (STEPS + "::test_search_steps_by_hand",)),
    Mutation("search-iota-mean", "SEARCH", "reference/range_search.py",
             "iota = float(costs.min())", "iota = float(costs.mean())",
             ("tests/test_algorithms.py::test_allocation_is_eq_6", STEPS + "::test_alg3_steps_by_hand")),
    Mutation("alg1-accuracy-halved", "Alg. 1", "reference/algorithms.py",
             "out, scale = search_rounds(kernels, run, costs, eps, delta, alpha, max_iter)",
             "out, scale = search_rounds(kernels, run, costs, eps / 2.0, delta, alpha, max_iter)",
             (STEPS + "::test_search_steps_by_hand",)),
    Mutation("alg3-search-at-eps", "Alg. 3", "reference/algorithms.py",
             "perturbed, eps / 2.0, delta", "perturbed, eps, delta",
             (STEPS + "::test_alg3_steps_by_hand",)),
    Mutation("alg3-nu-doubled", "Alg. 3", "reference/algorithms.py",
             "nu = eps / (2.0 * theta * D_hat)", "nu = eps / (theta * D_hat)",
             (STEPS + "::test_alg3_steps_by_hand",)),
    Mutation("alg3-costs-unperturbed", "Alg. 3", "reference/algorithms.py",
             "perturbed = np.maximum(costs, nu)", "perturbed = np.maximum(costs, nu / 2.0)",
             (STEPS + "::test_alg3_steps_by_hand",)),
    Mutation("lemma5-sqrt-halved", "Lemma 5", "reference/lemma5.py",
             "RADIUS_SQRT_FACTOR = 4.0", "RADIUS_SQRT_FACTOR = 2.0",
             (LEMMAS + "::test_lemma_5_radius_where_the_square_root_dominates",
              LEMMAS + "::test_lemma_5_coverage_at_the_promised_rate")),
    Mutation("lemma5-sqrt-halved-compiled", "Lemma 5", "fast/_lemma5.pxd",
             "return 4.0 * sqrt(p_hat * log_term / n_plus)",
             "return 2.0 * sqrt(p_hat * log_term / n_plus)",
             (LEMMAS + "::test_lemma_5_radius_where_the_square_root_dominates",)),
    Mutation("lemma5-linear-halved", "Lemma 5", "reference/lemma5.py",
             "RADIUS_LINEAR_FACTOR = 28.0", "RADIUS_LINEAR_FACTOR = 14.0",
             (LEMMAS + "::test_lemma_5_radius_where_the_square_root_dominates",)),
    Mutation("lemma5-log-S-plus-1", "Lemma 5", "reference/lemma5.py",
             "return np.log(n_states * n_actions * n_plus / delta)",
             "return np.log((n_states + 1) * n_actions * n_plus / delta)",
             (LEMMAS + "::test_lemma_5_radius_where_the_square_root_dominates",)),
    Mutation("phi-cube-to-square", "phi", "reference/allocation.py",
             "X**3 * G / (y * eps**2) * l1", "X**2 * G / (y * eps**2) * l1",
             ("tests/test_algorithms.py::test_allocation_is_eq_6",)),
    Mutation("phi-l2-unsquared", "phi", "reference/allocation.py",
             "X**2 * G / y**2 * l2**2", "X**2 * G / y**2 * l2",
             ("tests/test_algorithms.py::test_allocation_is_eq_6",)),
    Mutation("phi-l1-without-eps", "phi", "reference/allocation.py",
             "l1 = math.log(X * S * A / (y * eps * delta))",
             "l1 = math.log(X * S * A / (y * delta))",
             ("tests/test_algorithms.py::test_allocation_is_eq_6",)),
    Mutation("evi-stop-strict", "EVI", "reference/evi.py",
             "        if residual <= mu:\n            break",
             "        if residual <= mu / 2.0:\n            break",
             ("tests/test_evi.py", STEPS + "::test_evi_stopping_rule_by_hand_on_a_loop")),
    Mutation("pour-goal-last-reference", "EVI", "reference/kernels.py",
             "goal_first = np.concatenate([[S], np.arange(S)])",
             "goal_first = np.concatenate([np.arange(S), [S]])",
             ("tests/test_evi.py", STEPS + "::test_evi_stopping_rule_by_hand_on_a_loop")),
    Mutation("pour-ties-high-index-reference", "EVI", "reference/kernels.py",
             "return np.append(S, np.lexsort((np.arange(S), v_ext[:S])))",
             "return np.append(S, np.lexsort((-np.arange(S), v_ext[:S])))",
             ("tests/test_evi.py", "tests/test_robust.py")),
    Mutation("pour-ties-high-index-compiled", "EVI", "fast/_order.pxd",
             "return va < vb or (va == vb and ia < ib)",
             "return va < vb or (va == vb and ia > ib)",
             ("tests/test_evi.py", "tests/test_fast_compiled.py")),
    Mutation("pour-goal-last-compiled", "EVI", "fast/_order.pxd",
             "    keys[0] = _order_bits(0.0)\n    ids[0] = S\n",
             "    keys[0] = _order_bits(0.0 if S == 0 else v[0])\n    ids[0] = 0 if S else S\n",
             ("tests/test_evi.py", "tests/test_fast_compiled.py")),
    Mutation("box-bernstein-is-paper", "box kinds", "reference/evi.py",
             '    if kind != "paper":\n        return confidence.confidence_boxes',
             '    if kind not in ("paper", "bernstein"):\n        return confidence.confidence_boxes',
             ("tests/test_confidence_by_hand.py", "tests/test_confidence.py")),
    Mutation("box-bernstein-linear", "box kinds", "reference/box_kinds.py",
             "7.0 * level / (3.0 * (n - 1.0))", "7.0 * level / (6.0 * (n - 1.0))",
             ("tests/test_confidence_by_hand.py", "tests/test_confidence.py")),
    Mutation("box-kl-level", "box kinds", "reference/box_kinds.py",
             "    level=_union_level(2.0),", "    level=_union_level(1.0),",
             ("tests/test_confidence_by_hand.py", "tests/test_confidence.py")),
    Mutation("certificate-gap-doubled", "certificate", "reference/certified.py",
             "return bool((self.relative_gap if relative else self.gap) <= eps)",
             "return bool((self.relative_gap if relative else self.gap) <= 2.0 * eps)",
             ("tests/test_certified.py",)),
    Mutation("certificate-alg3-target", "certificate", "reference/range_search.py",
             "target = eps if theta is None else eps / 2.0", "target = eps",
             (STEPS + "::test_alg3_certified_flag_is_the_certificate_at_half_eps",)),
    Mutation("rounding-count-stored-only", "check rounding", ROUNDING,
             "    return k + unseen, free", "    return k, free", (EXACT_POURS,)),
    Mutation("rounding-adversary-scale-ascending", "check rounding", ROUNDING,
             "    if descending or np.any(w_ext < 0):", "    if np.any(w_ext < 0):",
             (EXACT_POURS,)),
    Mutation("rounding-bound-hundredth", "check rounding", ROUNDING,
             "    return ((8.0 * touched + 32.0) * UNIT_ROUNDOFF",
             "    return ((8.0 * touched + 32.0) * UNIT_ROUNDOFF / 100.0", (EXACT_POURS,)),
)


def apply(mutation, root):
    """Write ``mutation`` into the copy at ``root``; False when its text is stale."""
    path = root / mutation.path
    text = path.read_text()
    if text.count(mutation.old) != 1:
        return False
    path.write_text(text.replace(mutation.old, mutation.new))
    return True


def run_one(mutation, python):
    """Apply ``mutation`` to a fresh copy, rebuild if needed, run its tests.

    Returns
    -------
    outcome : str
        ``"caught"``, ``"survived"``, ``"error"`` or ``"stale"``.
    detail : str
        The first failing test, or the tail of the output.
    seconds : float
    """
    start = time.monotonic()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CI": "1"}
    with tempfile.TemporaryDirectory(prefix="sspgm-mutant-") as tmp:
        root = Path(tmp) / "repo"
        shutil.copytree(ROOT, root, ignore=IGNORED, copy_function=shutil.copy2)
        if not apply(mutation, root):
            return "stale", f"text not found once in {mutation.path}", 0.0
        env["PYTHONPATH"] = str(root)
        nice = ["nice", "-n", "5"]
        try:
            if mutation.path.endswith((".pyx", ".pxd", ".h")):
                build = subprocess.run(nice + [python, "setup.py", "build_ext", "--inplace", "-q"],
                                       cwd=root, env=env, capture_output=True, text=True,
                                       timeout=TIMEOUT)
                if build.returncode:
                    return "error", "build failed: " + build.stderr[-300:], time.monotonic() - start
            test = subprocess.run(
                nice + [python, "-m", "pytest", "-x", "-q", "-rf", "-p", "no:cacheprovider",
                        *mutation.tests],
                cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return "error", f"timeout after {TIMEOUT} s", time.monotonic() - start
    seconds = time.monotonic() - start
    if test.returncode == 0:
        return "survived", "", seconds
    failed = re.findall(r"^FAILED (\S+)", test.stdout, flags=re.M)
    if test.returncode == 1 and failed:
        return "caught", failed[0], seconds
    return "error", test.stdout[-300:].replace("\n", " "), seconds


PAGE = """# Mutation testing

This page is written by `benchmarks/mutations.py --report docs/mutations.md` (run on
demand, not in CI). Each row is one named error written into a temporary copy of the
repository (the compiled kernels rebuilt there when it touches a `.pyx` or `.pxd`); the
tests listed for it in the script then run with `pytest -x`. "caught" names the first
test that failed. The errors cover Alg. 1-4, SEARCH, Lemma 5's radius (in Python and in
the compiled kernels), the allocation function phi, EVI's stopping rule and pour order
(both backends), the box kinds, the certificate and the rounding bound of its Bellman
checks.

Two of them cannot be caught by a simulation of the property the code implements, and are
caught by a hand computation instead: Lemma 5's box is wider than the sampling error by
many standard deviations at every sample size, so a halved square-root term still covers
the true kernel (`test_lemma_5_radius_where_the_square_root_dominates`); and at a few dozen
samples per pair the paper's and the Bernstein boxes are both `[0, 1]`
(`tests/test_confidence_by_hand.py` uses a million samples). A third kind is left out: the
rounding bound of the Bellman checks cannot be caught when it is too small by a constant
factor above about 1/16, since no input's rounding reaches it (`docs/check-rounding.md`);
the rows `rounding-*` are errors of its shape, and one of a hundredth.

{table}
"""
"""The page ``--report`` writes."""


def table(rows):
    """A Markdown table of ``(mutation, outcome, detail, seconds)`` rows."""
    lines = ["| mutation | area | file | outcome | caught by |", "|---|---|---|---|---|"]
    for mutation, outcome, detail, _ in rows:
        lines.append(f"| `{mutation.name}` | {mutation.area} | `{mutation.path}` | {outcome} | "
                     f"{('`' + detail + '`') if detail else ''} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("select", nargs="*",
                        help="run the mutations whose name or area contains one of these")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--report", type=Path, help="also write the Markdown table to this file")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter with the test dependencies (default: this one)")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS
              if not args.select or any(s in m.name or s in m.area for s in args.select)]
    if args.list:
        for m in chosen:
            text = (ROOT / m.path).read_text() if (ROOT / m.path).exists() else ""
            state = "" if text.count(m.old) == 1 else "  STALE"
            print(f"{m.name:36s} {m.area:12s} {m.path}{state}  <- {' '.join(m.tests)}")
        return 0
    rows = []
    for mutation in chosen:
        outcome, detail, seconds = run_one(mutation, args.python)
        rows.append((mutation, outcome, detail, seconds))
        print(f"{mutation.name:36s} {outcome:9s} {seconds:7.1f} s  {detail}", flush=True)
    report = table(rows)
    print()
    print(report)
    if args.report:
        args.report.write_text(PAGE.format(table=report))
    return 0 if all(outcome == "caught" for _, outcome, _, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
