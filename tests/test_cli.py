"""The ``sspgm`` command line as a whole: lazy imports, ``--version``, exit statuses, errors."""

import re
import subprocess
import sys

import numpy as np
import pytest

import sspgm
import sspgm.cli
from reference.errors import ConvergenceError
from sspgm.cli import EXTRAS, MissingExtraError, import_extra, main


def _run_python(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def _help_in_fresh_interpreter(argv):
    """Run ``main(argv)`` for a help text in a new interpreter; returns ``(stdout, heavy)``.

    ``heavy`` lists the numerical libraries, and the packages built on them, that the
    run loaded.
    """
    code = (
        "import sys\n"
        "from sspgm.cli import main\n"
        "try:\n"
        f"    main({list(argv)!r})\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0\n"
        "print(sorted(m for m in ('numpy', 'scipy', 'sympy', 'reference', 'bounds', 'fast')"
        " if m in sys.modules))\n"
    )
    proc = _run_python(code)
    assert proc.returncode == 0, proc.stderr
    *lines, heavy = proc.stdout.splitlines()
    return "\n".join(lines), heavy


def test_help_imports_no_numerical_library():
    out, heavy = _help_in_fresh_interpreter(["--help"])
    assert heavy == "[]"
    assert "solve" in out and "sspgm[validate]" in out


@pytest.mark.parametrize("command", list(sspgm.cli.COMMANDS))
def test_command_help_imports_no_numerical_library(command):
    # Building a sub-command's parser and printing its help loads no numerical library (the
    # instance list is read from the builders' source).
    out, heavy = _help_in_fresh_interpreter([command, "--help"])
    assert heavy == "[]"
    assert f"usage: sspgm {command}" in out


def test_version_reports_version_backends_and_openmp(capsys):
    import fast

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"sspgm {sspgm.__version__}"
    assert out[2].startswith("backend reference: available")
    openmp = "yes" if fast.OPENMP else "no"
    assert out[3].startswith(f"backend fast: compiled, OpenMP {openmp}")
    if fast.OPENMP:
        assert out[3].endswith(f"{fast.get_num_threads()} thread"
                               f"{'s' * (fast.get_num_threads() != 1)}")


@pytest.mark.parametrize(("n", "end"), [(1, ", 1 thread"), (2, ", 2 threads")])
def test_version_counts_threads_in_words(capsys, n, end):
    import fast

    if not fast.OPENMP:
        pytest.skip("fast was built without OpenMP: the line names no thread count")
    previous = fast.set_num_threads(n)
    try:
        with pytest.raises(SystemExit):
            main(["--version"])
    finally:
        fast.set_num_threads(previous)
    assert capsys.readouterr().out.splitlines()[3].endswith(end)


def test_version_without_the_compiled_backend_says_it_is_not_built():
    code = (
        "import sys; sys.modules['fast._evi'] = None\n"
        "from sspgm.cli import main\n"
        "main(['--version'])\n"
    )
    proc = _run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert "backend reference: available" in proc.stdout
    assert "backend fast: not built: the `fast` backend needs its compiled" in proc.stdout


def test_fast_backend_missing_is_one_line_and_exit_2():
    code = (
        "import sys; sys.modules['fast._evi'] = None\n"
        "from sspgm.cli import main\n"
        "sys.exit(main(['solve', 'chain', '--backend', 'fast']))\n"
    )
    proc = _run_python(code)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("sspgm solve: error: the `fast` backend needs")


def test_unknown_command_exits_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["nope"])
    assert info.value.code == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_solve_exits_1_when_the_exact_error_exceeds_eps(backend, capsys, monkeypatch):
    true_values = backend.policy_values
    monkeypatch.setattr(backend, "policy_values",
                        lambda ssp, policy: np.asarray(true_values(ssp, policy)) + 0.5)
    status = main(["solve", "chain", "--n", "3", "--eps", "0.2", "--alpha", "10",
                   "--backend", backend.__name__])
    captured = capsys.readouterr()
    assert status == 1
    assert "= 0.5 (ABOVE eps = 0.2)" in captured.out
    assert re.search(r"\(certified: gap [0-9.e-]+ <= 0.2\)", captured.out)
    assert captured.err == "sspgm solve: checks that failed: exact error within eps\n"


@pytest.mark.parametrize("error, shown", [
    (ConvergenceError("EVI did not converge in 5 sweeps."), "EVI did not converge in 5 sweeps."),
    (OverflowError("int too large to convert"), "numeric overflow: int too large to convert"),
    (MemoryError("Unable to allocate 298. GiB\nfor an array"),
     "not enough memory: Unable to allocate 298. GiB for an array"),
    (MemoryError(), "not enough memory"),
    (PermissionError(13, "Permission denied", "/x/run.ckpt"), "/x/run.ckpt: Permission denied"),
])
def test_runtime_errors_are_one_line_with_exit_2(backend, capsys, monkeypatch, error, shown):
    def failing_solve(*args, **kwargs):
        raise error

    monkeypatch.setattr(backend, "solve", failing_solve)
    assert main(["solve", "chain", "--backend", backend.__name__]) == 2
    assert capsys.readouterr().err == f"sspgm solve: error: {shown}\n"


def test_ctrl_c_exits_130(backend, capsys, monkeypatch):
    def interrupted_solve(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(backend, "solve", interrupted_solve)
    assert main(["solve", "chain", "--backend", backend.__name__]) == 130
    assert capsys.readouterr().err == "sspgm solve: interrupted\n"


def test_a_bug_is_not_hidden_as_a_user_error(backend, monkeypatch):
    def broken_solve(*args, **kwargs):
        raise KeyError("bug")

    monkeypatch.setattr(backend, "solve", broken_solve)
    with pytest.raises(KeyError):
        main(["solve", "chain", "--backend", backend.__name__])


@pytest.mark.parametrize("where, message", [
    ("missing/run.ckpt", "must be in an existing directory"),
    ("afile/run.ckpt", "must be in an existing directory"),
    (".", "must be a file; got the directory"),
])
def test_bad_checkpoint_path_refused_before_the_first_round(backend, capsys, monkeypatch,
                                                            tmp_path, where, message):
    (tmp_path / "afile").write_text("not a directory")
    calls = []
    monkeypatch.setattr(backend, "solve", lambda *a, **k: calls.append(a))
    status = main(["solve", "chain", "--checkpoint", str(tmp_path / where),
                   "--backend", backend.__name__])
    err = capsys.readouterr().err
    assert status == 2 and calls == []
    assert err.startswith("sspgm solve: error: `--checkpoint`") and message in err
    assert err.count("\n") == 1


def test_import_extra_names_the_extra_and_its_install_command():
    assert import_extra("json", "validate").__name__ == "json"
    for extra in EXTRAS:
        with pytest.raises(MissingExtraError) as info:
            import_extra("sspgm_no_such_module.sub", extra)
        message = str(info.value)
        assert message.startswith("`sspgm_no_such_module` is not installed")
        assert f"pip install 'sspgm[{extra}]'" in message
    with pytest.raises(ValueError, match="`extra` must be one of"):
        import_extra("json", "plots")


def test_missing_extra_in_a_command_is_one_line_and_exit_2(backend, capsys, monkeypatch):
    def needs_extra(*args, **kwargs):
        import_extra("sspgm_no_such_module", "validate")

    monkeypatch.setattr(backend, "solve", needs_extra)
    assert main(["solve", "chain", "--backend", backend.__name__]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sspgm solve: error: `sspgm_no_such_module` is not installed")
    assert err.endswith("`pip install 'sspgm[validate]'`.\n") and err.count("\n") == 1


@pytest.mark.parametrize("module, extra", [("tqdm", "validate"), ("tqdm.auto", "validate"),
                                           ("gymnasium", "gym"), ("distributed", "dask")])
def test_an_optional_module_not_found_names_its_extra(backend, capsys, monkeypatch, module,
                                                      extra):
    def missing_module(*args, **kwargs):
        raise ModuleNotFoundError(f"No module named {module!r}", name=module)

    monkeypatch.setattr(backend, "solve", missing_module)
    assert main(["solve", "chain", "--backend", backend.__name__]) == 2
    top = module.split(".")[0]
    assert capsys.readouterr().err == (
        f"sspgm solve: error: `{top}` is not installed: it comes with the `{extra}` extra "
        f"({EXTRAS[extra]}); install it with `pip install 'sspgm[{extra}]'`.\n"
    )
