"""Tests of ``sspgm bounds``: the table of terms, dominant terms and totals."""

import argparse
import re
import shutil
import subprocess

import pytest
import sympy as sp

import bounds
from bounds import ParameterError
from sspgm.cli import main
from sspgm.commands import bounds as command

PARAMS = ["--eps", "0.1", "--B", "10", "--cmin", "0.5", "--S", "20", "--A", "4",
          "--Gamma", "3"]


def run(argv, capsys):
    parser = argparse.ArgumentParser(prog="sspgm")
    command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bounds", *argv])
    status = args.run(args)
    return status, capsys.readouterr().out


def has_row(out, label, value):
    """Whether ``out`` has a line ``label <spaces> value``."""
    pattern = rf"^\s*{re.escape(label)}\s+{re.escape(value)}$"
    return re.search(pattern, out, flags=re.MULTILINE) is not None


def test_table_lists_each_term_with_its_value_and_the_total(capsys):
    status, out = run(PARAMS, capsys)
    assert status == 0
    # Thm. 1 by hand: 1000*3*20*4/(0.5*0.01), 100*400*4/(0.5*0.1), 100*3*20*4/0.25
    for term, value in zip(bounds.THM1.terms, ("4.8e+07", "3.2e+06", "96000")):
        assert has_row(out, sp.sstr(term), value)
    assert has_row(out, "total", "5.1296e+07")
    assert f"dominant: {sp.sstr(bounds.THM1.terms[0])}" in out
    for key in ("thm1", "eq4", "lower", "explicit1"):
        assert bounds.BOUNDS[key].title in out
    assert "Thm. 2" not in out


def test_totals_agree_with_the_calculator(capsys):
    _, out = run(PARAMS, capsys)
    explicit = bounds.samp_comp(0.1, 10, 0.5, S=20, A=4, Gamma=3, delta=0.1, bound="explicit1")
    totals = out.split("\ntotals\n")[1]
    assert has_row(totals, bounds.EXPLICIT_CMIN.title, f"{explicit:.6g}")
    assert "Delta = 16" in out


def test_theta_family(capsys):
    _, out = run(["--eps", "0.1", "--B", "5", "--theta", "2", "--D", "5", "--S", "20",
                  "--A", "4", "--Gamma", "3", "--D-hat", "7"], capsys)
    for key in ("thm2", "thm2_proved", "eq5", "lemma9", "explicit4", "explicit3"):
        assert bounds.BOUNDS[key].title in out
    assert "Thm. 1" not in out
    # Thm. 2's first term: 2*5*125*3*20*4/0.001
    assert has_row(out, sp.sstr(bounds.THM2.terms[0]), "3e+08")
    assert "D_hat = 7" in out


def test_missing_parameters_stay_symbolic(capsys):
    _, out = run(["--eps", "0.1", "--B", "10", "--cmin", "0.5"], capsys)
    assert "200400*A*Gamma*S + 2000*A*S**2" in out
    assert "dominant: undetermined (depends on A, Gamma, S)" in out


def test_partly_symbolic_bound(capsys):
    _, out = run(["--eps", "0.1", "--B", "10", "--cmin", "0.5", "--S", "20", "--A", "4"],
                 capsys)
    assert has_row(out, sp.sstr(bounds.THM1.terms[1]), "3.2e+06")
    assert has_row(out, "total", "16032000*Gamma + 3200000.0")
    assert "dominant: undetermined (depends on Gamma)" in out


THETA = ["--eps", "0.1", "--B", "10", "--S", "20", "--A", "4", "--Gamma", "3", "--theta", "5",
         "--D", "12"]


def test_latex_output_is_one_tabular_in_the_papers_notation(capsys):
    _, out = run([*PARAMS, *THETA[-4:], "--latex"], capsys)
    body = [line for line in out.splitlines() if not line.startswith("%")]
    assert body[0] == r"\begin{tabular}{lll}" and body[-1] == r"\end{tabular}"
    assert all(line.endswith(r"\\") for line in body[1:-1] if line != r"\hline")
    assert all(line.count("&") == 2 for line in body if line.endswith(r"\\")
               and not line.startswith(r"\multicolumn"))
    assert all(line.count("$") % 2 == 0 for line in body)
    assert r" & $\frac{A B_\star^{3} \Gamma S}{c_{\min} \epsilon^{2}}$ & $4.8 \cdot 10^{7}$ \\" in out
    assert r" & total & $5.1296 \cdot 10^{7}$ \\" in out
    assert r"\hat D" in out and "Thm.~2 as proved" in out
    assert "**" not in out and "c_{min}" not in out


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no LaTeX engine installed")
def test_latex_output_compiles(capsys, tmp_path):
    _, out = run([*PARAMS, *THETA[-4:], "--latex"], capsys)
    (tmp_path / "table.tex").write_text(out)
    (tmp_path / "doc.tex").write_text(
        "\\documentclass{article}\n\\begin{document}\n\\input{table.tex}\n\\end{document}\n")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:]


def test_alg3_total_counts_the_diameter_subroutine_and_the_cost_floor(capsys):
    _, out = run([*THETA, "--cmin", "0.5"], capsys)
    totals = out.split("\ntotals\n")[1]
    sizes = dict(S=20, A=4, Gamma=3, delta=0.1)
    alg3 = bounds.samp_comp_theta(0.1, 5, 12, 10, cmin=0.5, bound="explicit3", **sizes)
    alg4 = bounds.samp_comp_diameter(0.1, 12, bound="explicit4", **sizes)
    assert has_row(totals, bounds.EXPLICIT_THETA.title, f"{alg3:.6g}")
    assert has_row(totals, bounds.EXPLICIT_DIAMETER.title, f"{alg4:.6g}")
    assert "cost floor max(c_min, nu) = 0.5" in out
    _, zero_cost = run(["--eps", "0.1", "--B", "0", *THETA[4:]], capsys)
    assert has_row(zero_cost.split("\ntotals\n")[1], bounds.THM2.title, "0")


@pytest.mark.parametrize("argv, match", [
    (["--eps", "0.1", "--B", "10"], "`--cmin`"),
    (["--eps", "0.1", "--B", "10", "--theta", "2"], "`--theta` and `--D`"),
    (["--eps", "2", "--B", "10", "--cmin", "0.5"], "`eps` must lie in"),
    (["--eps", "0.1", "--B", "-1", "--theta", "2", "--D", "3"], "`B` must lie in"),
    (["--eps", "0.1", "--B", "4", "--theta", "2", "--D", "3"], "`B` must be <= `D`"),
    (["--eps", "0.1", "--B", "2", "--theta", "2", "--D", "3", "--D-hat", "2"],
     "`D_hat` must be >= `D`"),
    (["--eps", "0.1", "--B", "2", "--cmin", "0.5", "--W", "4"], "`--W` is used by the Alg. 3"),
])
def test_errors(argv, match, capsys):
    with pytest.raises(ParameterError, match=match):
        run(argv, capsys)
    assert capsys.readouterr().out == ""


def test_through_the_sspgm_command_line(capsys):
    assert main(["bounds", *PARAMS]) == 0
    assert has_row(capsys.readouterr().out, "total", "5.1296e+07")
    assert main(["bounds", "--eps", "0.1", "--B", "0.2", "--cmin", "0.5"]) == 2
    assert "`B` must be >= `cmin`" in capsys.readouterr().err


def test_delta_and_Delta_have_distinct_labels_in_the_help():
    parser = argparse.ArgumentParser(prog="sspgm")
    command.register(parser.add_subparsers(dest="command"))
    subparser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    help_text = subparser.choices["bounds"].format_help()
    labels = {flag: re.search(rf"{flag} (\S+)", help_text).group(1)
              for flag in ("--delta", "--Delta")}
    assert labels["--delta"] != labels["--Delta"]


def test_thm2_as_proved_row_uses_the_perturbed_range(capsys):
    argv = ["--eps", "0.1", "--B", "10", "--theta", "5", "--D", "12", "--S", "20", "--A", "4",
            "--Gamma", "3"]
    status, out = run(argv, capsys)
    assert status == 0
    expected = bounds.samp_comp_theta(0.1, 5, 12, S=20, A=4, Gamma=3)
    assert f"{expected:.6g}" in out
    status, out = run([*argv, "--cmin", "0.5"], capsys)
    expected = bounds.samp_comp_theta(0.1, 5, 12, 10, cmin=0.5, S=20, A=4, Gamma=3)
    assert f"{expected:.6g}" in out
