"""Tests of ``sspgm bounds``: the table of terms, dominant terms and totals."""

import argparse
import re

import pytest
import sympy as sp

import bounds
from reference.errors import ParameterError
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
    _, out = run(["--eps", "0.1", "--B", "10", "--theta", "2", "--D", "5", "--S", "20",
                  "--A", "4", "--Gamma", "3", "--D-hat", "7"], capsys)
    for key in ("thm2", "eq5", "lemma9", "explicit3"):
        assert bounds.BOUNDS[key].title in out
    assert "Thm. 1" not in out
    # Thm. 2's first term: 2*5*1000*3*20*4/0.001
    assert has_row(out, sp.sstr(bounds.THM2.terms[0]), "2.4e+09")
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


def test_latex_output(capsys):
    _, out = run([*PARAMS, "--latex"], capsys)
    assert r"\frac{A B^{3} \Gamma S}{c_{min} \epsilon^{2}} & 4.8 \cdot 10^{7} \\" in out
    assert r"\text{total} & 5.1296 \cdot 10^{7} \\" in out
    assert "**" not in out


@pytest.mark.parametrize("argv, match", [
    (["--eps", "0.1", "--B", "10"], "`--cmin`"),
    (["--eps", "0.1", "--B", "10", "--theta", "2"], "`--theta` and `--D`"),
    (["--eps", "2", "--B", "10", "--cmin", "0.5"], "`eps` must lie in"),
    (["--eps", "0.1", "--B", "-1", "--theta", "2", "--D", "3"], "`B` must lie in"),
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
