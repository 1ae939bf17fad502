"""The command line's wording: unknown options, one-line errors, verdicts, round times, resumes."""

import re

import pytest

import reference
from sspgm.cli import main


def _run(capsys, *argv):
    """``(status, out, err)`` of ``sspgm argv``, argparse's own exits included."""
    try:
        status = main(list(argv))
    except SystemExit as exc:
        status = exc.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _one_line_error(err, prog):
    assert err.count("\n") == 1 and err.startswith(f"{prog}: error: ")
    assert "usage:" not in err and len(err) < 300


@pytest.mark.parametrize(("argv", "close"), [
    (["solve", "--esp", "0.1"], "--eps (an option of the command)"),
    (["solve", "--row", "4"], "--rows (a parameter of instance 'gridworld')"),
    (["info", "chain", "--nn", "4"], "--n (a parameter of instance 'chain')"),
])
def test_an_unknown_option_is_named_with_its_closest_match(capsys, argv, close):
    status, out, err = _run(capsys, *argv)
    assert status == 2 and out == ""
    _one_line_error(err, f"sspgm {argv[0]}")
    unknown = next(token for token in argv if token.startswith("--"))
    assert f"unknown option {unknown}; did you mean {close}?" in err
    assert "unknown parameter" not in err
    assert ("Parameters of instance" in err) == ("a parameter of instance" in close)


@pytest.mark.parametrize("command", ["solve", "info"])
def test_an_unknown_spec_key_is_named_as_the_specs_key(capsys, command):
    status, out, err = _run(capsys, command, "garnet:n_states=4,n_action=3", "--eps", "0.5")
    assert status == 2 and out == ""
    _one_line_error(err, f"sspgm {command}")
    assert ("unknown key 'n_action' in instance spec 'garnet:n_states=4,n_action=3'; "
            "did you mean n_actions? Keys of instance 'garnet': n_states, n_actions, "
            "branching, c_min, seed, sparse.") in err
    assert "option" not in err


def test_an_option_far_from_every_name_gets_no_guess(capsys):
    status, _, err = _run(capsys, "solve", "--zzzzzz", "1")
    assert status == 2 and "unknown option --zzzzzz." in err and "did you mean" not in err


@pytest.mark.parametrize("argv", [
    ["solve", "--eps"],
    ["solve", "--method", "nope"],
    ["solve", "--eps", "x"],
    ["bounds", "--B", "1"],
    ["info", "--show"],
    ["nope"],
    [],
])
def test_argparse_errors_are_one_line_with_status_2(capsys, argv):
    status, out, err = _run(capsys, *argv)
    prog = "sspgm" if not argv or argv[0] == "nope" else f"sspgm {argv[0]}"
    assert status == 2 and out == ""
    _one_line_error(err, prog)
    assert f"(see `{prog} --help`)" in err


def test_unrecognized_arguments_of_a_command_suggest_its_option(capsys):
    status, _, err = _run(capsys, "bounds", "--eps", "0.1", "--B", "1", "--cmin", "0.5",
                          "--latx")
    assert status == 2
    _one_line_error(err, "sspgm bounds")
    assert "did you mean --latex" in err


@pytest.mark.parametrize(("argv", "hint"), [
    (["bounds", "--eps", "0.1", "--B", "1", "--cmin", "0.5", "-json"],
     "did you mean --json (for -json)?"),
    (["bounds", "--eps", "0.1", "--B", "1", "--cmin", "0.5", "-eps=3"],
     "did you mean --eps (for -eps)?"),
    (["validate", "--jsn"], "did you mean --json (for --jsn)?"),
])
def test_single_dash_long_options_and_every_command_get_a_hint(capsys, argv, hint):
    status, _, err = _run(capsys, *argv)
    assert status == 2
    _one_line_error(err, f"sspgm {argv[0]}")
    assert hint in err


def test_a_negative_number_is_not_taken_for_a_misspelt_option(capsys):
    status, _, err = _run(capsys, "bounds", "--eps", "0.1", "--B", "1", "--cmin", "0.5", "-1")
    assert status == 2 and "unrecognized arguments: -1 (" in err and "did you mean" not in err


@pytest.mark.parametrize(("argv", "message"), [
    (["info", "garnet:n_states=x"], "key n_states=x in 'garnet:n_states=x': expected an integer."),
    (["info", "garnet:n_states=4,n_actions=2,branching=2,seed=x"],
     "key seed=x in 'garnet:n_states=4,n_actions=2,branching=2,seed=x': expected an integer."),
    (["info", "gridworld:goal=3"], "key goal=3 in 'gridworld:goal=3': expected a cell `row,col`."),
    (["info", "gridworld:success=no"],
     "key success=no in 'gridworld:success=no': expected a real number."),
    (["info", "garnet", "--n-states", "x"],
     "parameter --n-states of 'garnet': cannot parse 'x' (expected an integer)."),
    (["info", "garnet:n_states=4,n_actions=2,branching=2,instance_seed=3"],
     "unknown key 'instance_seed' in instance spec "
     "'garnet:n_states=4,n_actions=2,branching=2,instance_seed=3'; did you mean seed?"),
])
def test_a_bad_spec_value_is_named_in_the_specs_terms(capsys, argv, message):
    status, out, err = _run(capsys, *argv)
    assert status == 2 and out == ""
    _one_line_error(err, "sspgm info")
    assert message in err
    assert "invalid literal" not in err and "a cell `row,col` or `none`" not in err


def test_a_misspelt_required_option_is_named_with_the_missing_one(capsys):
    status, _, err = _run(capsys, "bounds", "--esp", "0.1", "--B", "10", "--cmin", "0.5")
    assert status == 2
    _one_line_error(err, "sspgm bounds")
    assert "required: --eps; --esp is not an option: did you mean --eps?" in err


def test_a_failed_answer_prints_its_true_gap(capsys):
    status, out, _ = _run(capsys, "solve", "--eps", "1", "--alpha", "2", "--backend", "fast")
    ssp = reference.gridworld()
    with pytest.warns(reference.NotCertifiedWarning):
        res = reference.solve(ssp, ssp.costs, 1.0, 0.1, alpha=2.0, seed=0)
    assert status == 1
    assert f"(NOT certified: gap {res.certificate.gap:,.6g} > 1)" in out
    assert "gap <= 1" not in out


def test_headers_show_alpha_only_for_the_method_using_it(capsys):
    _, paper, _ = _run(capsys, "solve", "chain", "--eps", "0.5", "--alpha", "10")
    _, certified, _ = _run(capsys, "solve", "chain", "--eps", "0.5", "--method", "certified")
    assert "alpha = 10" in paper.splitlines()[1]
    assert certified.splitlines()[1].startswith("solve_certified: eps = 0.5")
    assert "alpha" not in certified.splitlines()[1]


def _round_times(out):
    times = []
    for value, unit in re.findall(r"^  round: .* (\d+\.\d+) (ms|s)$", out, flags=re.MULTILINE):
        times.append(float(value) / (1000 if unit == "ms" else 1))
    return times


def test_certified_rounds_show_their_time(capsys):
    status, out, _ = _run(capsys, "solve", "chain", "--eps", "0.3", "--method", "certified",
                          "--backend", "fast")
    times = _round_times(out)
    assert status == 0 and len(times) == out.count("  round: ") > 1
    assert all(t > 0 for t in times)


class _Stop(Exception):
    pass


def test_a_resumed_run_says_so(capsys, tmp_path):
    path = tmp_path / "run.ckpt"
    ssp = reference.chain(3)
    seen = []

    def stop_after_three(round_):
        seen.append(round_)
        if len(seen) == 3:
            raise _Stop

    with pytest.raises(_Stop):
        reference.solve_certified(ssp, ssp.costs, 0.3, 0.1, seed=0, checkpoint=path,
                                  callback=stop_after_three)
    status, out, _ = _run(capsys, "solve", "chain", "--n", "3", "--eps", "0.3", "--method",
                          "certified", "--checkpoint", str(path), "--backend", "fast")
    whole = reference.solve_certified(ssp, ssp.costs, 0.3, 0.1, seed=0)
    assert status == 0
    assert f"checkpoint {path} exists: resuming its run" in out
    assert (f"resumed from {path}: 3 of the {len(whole.history)} rounds were run before"
            in out)
    assert out.count("  round: ") == len(whole.history) - 3


def test_a_fresh_run_with_a_checkpoint_does_not_claim_a_resume(capsys, tmp_path):
    status, out, _ = _run(capsys, "solve", "chain", "--eps", "0.5", "--alpha", "10",
                          "--checkpoint", str(tmp_path / "new.ckpt"))
    assert status == 0 and "resum" not in out
