"""``sspgm info`` and the instance registry behind it."""

import inspect
import re

import numpy as np
import pytest

import reference
import sspgm.cli
from sspgm.instances import (
    DEFAULT_INSTANCE,
    INSTANCES,
    build_instance,
    describe_instance_help,
    draw_grid_policy,
    instance_parameters,
    split_instance_args,
)
from sspgm.gym_adapter import GYM_INSTANCES
from sspgm.instance_help import builder_signature


ENVS_BUILDERS = ("gridworld", "exit_grid", "chain", "tradeoff", "zero_cost_loop", "theta_example", "garnet",
                 "trap", "random_discounted")


def test_registry_holds_the_builders_of_reference_envs():
    for name in ENVS_BUILDERS:
        assert INSTANCES[name] is getattr(reference, name)
    for name, builder in GYM_INSTANCES.items():
        assert INSTANCES[name] is builder


@pytest.mark.parametrize("name", list(INSTANCES))
def test_help_read_from_source_matches_the_builders(name):
    # The help text reads the builders' signatures without importing them; it must say what
    # the imported builders say.
    summary, parameters = builder_signature(name)
    assert summary == inspect.getdoc(INSTANCES[name]).splitlines()[0]
    assert parameters == instance_parameters(name)


@pytest.fixture
def run_cli(capsys):
    """Run ``sspgm`` with the given arguments; return (status, out, err)."""

    def run(*argv):
        status = sspgm.cli.main(list(argv))
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


def _field(out, name):
    match = re.search(rf"^{re.escape(name)} = (\S+)$", out, flags=re.MULTILINE)
    assert match, f"no line `{name} = ...` in:\n{out}"
    return float(match.group(1))


def _values(out):
    return np.array([float(v) for v in re.findall(r"^  V\*\(\d+\) = (\S+)", out, re.MULTILINE)])


def _grid(out, title):
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title)) + 1
    return [line.split() for line in lines[start:start + 3]]


def test_default_instance_reports_sizes_and_optimal_values(backend, run_cli):
    status, out, err = run_cli("info", "--backend", backend.__name__)
    assert status == 0 and err == ""
    ssp = backend.gridworld()
    best = backend.optimal_values(ssp)
    assert _field(out, "S") == 10 and _field(out, "A") == 4
    assert _field(out, "Gamma") == 3 and _field(out, "c_min") == 1
    assert np.allclose(_values(out), best.values, rtol=1e-5)
    assert _field(out, "B*") == pytest.approx(best.values.max(), rel=1e-5)
    assert _field(out, "D") == pytest.approx(backend.diameter(ssp).D, rel=1e-5)


def test_default_instance_draws_the_policy_on_the_grid(backend, run_cli):
    _, out, _ = run_cli("info", "--backend", backend.__name__)
    grid = _grid(out, "optimal policy on the grid")
    assert [len(row) for row in grid] == [4, 4, 4]
    assert grid[0][3] == "G" and grid[1][1] == "#"
    policy = backend.optimal_values(backend.gridworld()).policy
    arrows = [grid[r][c] for r, c in backend.gridworld().meta["state_to_cell"]]
    assert arrows == ["^>v<"[a] for a in policy]


def test_deterministic_grid_values_are_drawn(run_cli):
    status, out, _ = run_cli("info", "--success", "1", "--walls", "none", "--rows", "2")
    assert status == 0
    grid = _grid(out, "V* on the grid")[:2]
    assert grid == [["3.000", "2.000", "1.000", "G"], ["4.000", "3.000", "2.000", "1.000"]]


def test_chain_parameters_are_parsed(backend, run_cli):
    status, out, _ = run_cli("info", "chain", "--n", "4", "--p", "0.5", "--backend",
                             backend.__name__)
    assert status == 0
    assert out.startswith("instance: chain(n=4, p=0.5)")
    assert np.allclose(_values(out), [8, 6, 4, 2])
    assert "optimal policy on the grid" not in out


def test_unknown_parameter_exits_with_status_2(run_cli):
    status, out, err = run_cli("info", "--bogus", "1")
    assert status == 2 and out == ""
    assert "unknown option --bogus" in err
    assert "--rows" in err and "--walls" in err


def test_unknown_instance_lists_the_available_ones(run_cli):
    status, _, err = run_cli("info", "labyrinth")
    assert status == 2
    assert "unknown instance 'labyrinth'" in err
    assert all(name in err for name in INSTANCES)


def test_missing_required_parameters_are_named(run_cli):
    status, _, err = run_cli("info", "garnet", "--n-states", "5")
    assert status == 2
    assert "--n-actions, --branching" in err


def test_invalid_value_reports_the_builder_error(run_cli):
    status, _, err = run_cli("info", "--success", "1.5")
    assert status == 2
    assert "`success` must lie in [0, 1]" in err


def test_help_lists_instances_and_their_parameters(run_cli, capsys):
    with pytest.raises(SystemExit) as info:
        run_cli("info", "--help")
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "--n-states REQUIRED" in out
    assert all(name in out for name in INSTANCES)


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        ([], ("gridworld", [])),
        (["chain"], ("chain", [])),
        (["--n", "4"], ("gridworld", ["--n", "4"])),
        (["chain", "--n", "4"], ("chain", ["--n", "4"])),
    ],
)
def test_split_instance_args(tokens, expected):
    assert DEFAULT_INSTANCE == "gridworld"
    name, rest = split_instance_args(tokens)
    assert (name, rest) == expected


def test_build_instance_parses_each_parameter_type():
    ssp, kwargs = build_instance(
        "gridworld",
        ["--rows", "4", "--success=0.9", "--goal", "0,3", "--walls", "1,1;2,2", "--start", "3,0"],
    )
    assert kwargs == {"rows": 4, "success": 0.9, "goal": (0, 3), "walls": ((1, 1), (2, 2)),
                      "start": (3, 0)}
    assert ssp.n_states == 4 * 4 - 3
    assert ssp.meta["start_state"] == ssp.n_states - 4


@pytest.mark.parametrize(
    ("tokens", "sparse"),
    [(["--sparse"], True), (["--sparse", "false"], False),
     (["--sparse", "--instance-seed", "3"], True)],
)
def test_build_instance_boolean_flags(tokens, sparse):
    base = ["--n_states", "5", "--n-actions", "2", "--branching", "2"]
    ssp, kwargs = build_instance("garnet", base + tokens)
    assert ssp.is_sparse == sparse
    assert kwargs["n_states"] == 5 and kwargs["n_actions"] == 2


@pytest.mark.parametrize(
    ("tokens", "pattern"),
    [
        (["--rows", "2.5"], r"--rows of 'gridworld': cannot parse '2\.5'"),
        (["--goal", "0"], r"--goal of 'gridworld': cannot parse '0'"),
        (["--rows", "3", "--rows", "4"], "--rows of 'gridworld' given twice"),
        (["--rows"], "--rows of 'gridworld' needs a value"),
        (["--rows", "--cols", "3"], "--rows of 'gridworld' needs a value"),
        (["3"], "unexpected argument '3'"),
    ],
)
def test_build_instance_rejects_malformed_tokens(tokens, pattern):
    with pytest.raises(reference.ParameterError, match=pattern):
        build_instance("gridworld", tokens)


def test_non_grid_instance_cannot_be_drawn():
    with pytest.raises(reference.ParameterError, match="no grid layout"):
        draw_grid_policy(reference.chain(), [0] * 10)


def _help_pairs(name):
    """The ``(--flag, default)`` pairs listed under instance ``name`` in the help text."""
    lines = describe_instance_help().splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith(f"  {name}:"))
    shown = lines[i + 1].split()
    return [] if shown == ["(no", "parameters)"] else list(zip(shown[::2], shown[1::2]))


@pytest.mark.parametrize("name", ENVS_BUILDERS)
def test_defaults_shown_in_help_parse_back_to_the_defaults(name):
    required = {"--n-states": "3", "--n-actions": "2", "--branching": "2"}
    tokens = []
    for flag, shown in _help_pairs(name):
        tokens += [flag, required[flag] if shown == "REQUIRED" else shown]
    _, kwargs = build_instance(name, tokens)
    params = instance_parameters(name)
    assert kwargs.keys() == params.keys()
    for key, default in params.items():
        if default is not inspect.Parameter.empty:
            assert kwargs[key] == default
