"""The ``sspgm`` command line: one sub-command per module of :mod:`sspgm.commands`.

Only the module of the sub-command being run is imported, and a sub-command
module imports numpy, scipy, sympy and the packages built on them only in the
function that runs the command, so ``sspgm --help`` and ``sspgm COMMAND
--help`` stay fast (none of them is loaded; the instance list of the help is
read from the builders' source, :mod:`sspgm.instance_help`).

Exit status: 0 on success; 1 when ``solve``'s answer fails one of its checks
(see :mod:`sspgm.commands.solve`); 2 on any error the user can cause (bad
arguments or input, a missing optional dependency, an unreadable or unwritable
file, a method that did not converge, an overflow, not enough memory), printed
as one line without a traceback; 130 on Ctrl-C.
"""

import argparse
import importlib
import sys

__all__ = [
    "COMMANDS", "EXTRAS", "EXTRA_MODULES", "MissingExtraError", "OneLineParser",
    "default_backend", "import_extra", "main", "build_parser", "option_strings", "version_report",
]

COMMANDS = {
    "info": "describe an instance: S, A, Gamma, c_min, D, B*, V* and an optimal policy",
    "solve": "compute an eps-optimal policy from the generative model of an instance",
    "bounds": "evaluate the sample-complexity bounds",
    "validate": "check the theorems on instances (sweep, summary, plots)",
}
"""Sub-command name -> the one-line help shown by ``sspgm --help``."""

EXTRAS = {
    "validate": "the sweeps, progress bars and plots of `sspgm validate`",
    "gym": "gymnasium's CliffWalking, FrozenLake and Taxi instances",
    "dask": "`sspgm validate --scheduler` and `sspgm solve --scheduler` on a Dask cluster",
}
"""Optional-dependency group (``pip install 'sspgm[NAME]'``) -> what it enables."""

EXTRA_MODULES = {
    "matplotlib": "validate",
    "tqdm": "validate",
    "joblib": "validate",
    "gymnasium": "gym",
    "dask": "dask",
    "distributed": "dask",
}
"""Top-level module of an optional dependency -> the extra that installs it. A
``ModuleNotFoundError`` for one of them reaching :func:`main` is reported with
the extra to install, as :func:`import_extra` does."""

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""


def import_extra(module, extra):
    """Import and return ``module``, an optional dependency of the extra ``extra``.

    Parameters
    ----------
    module : str
        Dotted name of the module to import, e.g. ``"tqdm.auto"``.
    extra : str
        The optional-dependency group of ``pyproject.toml`` that installs it
        (a key of :data:`EXTRAS`).

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    MissingExtraError
        If the module cannot be imported; the message names the module, the
        extra and the command that installs it. The command line prints it
        as one line and exits with status 2.

    Examples
    --------
    >>> import_extra("json", "validate").__name__
    'json'
    >>> import_extra("not_a_module", "validate")
    Traceback (most recent call last):
    ...
    sspgm.cli.MissingExtraError: `not_a_module` is not installed: ... `pip install 'sspgm[validate]'`.
    """
    if extra not in EXTRAS:
        raise ValueError(f"`extra` must be one of {tuple(EXTRAS)}; got {extra!r}.")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(_missing_extra_message(module, extra)) from exc


def _missing_extra_message(module, extra):
    top = module.split(".")[0]
    return (
        f"`{top}` is not installed: it comes with the `{extra}` extra ({EXTRAS[extra]}); "
        f"install it with `pip install 'sspgm[{extra}]'`."
    )


class OneLineParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose errors are one line: what is wrong, and where
    the help is (the usage is in ``--help``, not repeated with every error). Exit status 2.

    Examples
    --------
    >>> import contextlib, io
    >>> parser = OneLineParser(prog="sspgm demo")
    >>> _ = parser.add_argument("--eps", type=float)
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err):
    ...     try:
    ...         parser.parse_args(["--eps", "x"])
    ...     except SystemExit as exc:
    ...         print(exc.code)
    2
    >>> print(err.getvalue(), end="")
    sspgm demo: error: argument --eps: invalid float value: 'x' (see `sspgm demo --help`)
    """

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message):
        if message.startswith("the following arguments are required"):
            message += _misspelt(getattr(self, "_given", ()), option_strings(self))
        self.exit(EXIT_USER_ERROR, f"{self.prog}: error: {' '.join(message.split())} "
                  f"(see `{self.prog} --help`)\n")


def default_backend(name):
    """``name``, or when it is None the backend ``import sspgm`` uses (``fast`` when built).

    Examples
    --------
    >>> default_backend("reference")
    'reference'
    >>> default_backend(None) in ("fast", "reference")
    True
    """
    if name is not None:
        return name
    import sspgm

    return str(sspgm.backend)


def option_strings(parser):
    """Every option string of ``parser`` (``--eps``, ``-h``, ...), for close-match hints.

    Examples
    --------
    >>> parser = OneLineParser(prog="demo")
    >>> _ = parser.add_argument("--eps")
    >>> option_strings(parser)
    ('-h', '--help', '--eps')
    """
    return tuple(option for action in parser._actions for option in action.option_strings)


class _VersionAction(argparse.Action):
    """``--version``: print :func:`version_report` and exit."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_report())
        parser.exit()


def version_report():
    """The lines of ``sspgm --version``: versions, backends, OpenMP and threads.

    Returns
    -------
    str
        The version of sspgm and of Python, numpy, scipy and sympy; then one
        line per backend: ``reference`` is always there; ``fast`` is either
        compiled (with or without OpenMP, and the threads its sweeps use) or
        not built, with the reason.

    See Also
    --------
    load_backend : import a backend by name.

    Examples
    --------
    The report of ``sspgm --version``, whose first line is the version:

    >>> import sspgm
    >>> lines = version_report().splitlines()
    >>> lines[0] == f"sspgm {sspgm.__version__}", lines[2]
    (True, 'backend reference: available (numpy/scipy, single-threaded)')
    """
    from importlib import metadata

    from sspgm import __version__

    deps = ", ".join(f"{name} {metadata.version(name)}" for name in ("numpy", "scipy", "sympy"))
    lines = [
        f"sspgm {__version__}",
        f"Python {sys.version.split()[0]}, {deps}",
        "backend reference: available (numpy/scipy, single-threaded)",
    ]
    try:
        import fast
    except ImportError as exc:
        lines.append(f"backend fast: not built: {_one_line(exc)}")
    else:
        if fast.OPENMP:
            n = fast.get_num_threads()
            lines.append(f"backend fast: compiled, OpenMP yes, {n} thread{'s' * (n != 1)}")
        else:
            lines.append("backend fast: compiled, OpenMP no (the C compiler had none at build "
                         "time): single-threaded")
    return "\n".join(lines)


def build_parser(command=None):
    """Return the top-level parser.

    Parameters
    ----------
    command : str or None, default None
        The sub-command about to run: its module is imported and its full
        parser registered. The other sub-commands are registered by name and
        help line only, so that nothing heavy is imported for them.

    See Also
    --------
    main : parses the arguments with it and runs the command.

    Examples
    --------
    >>> build_parser("bounds").parse_args(["bounds", "--eps", "0.1", "--B", "10"]).eps
    0.1
    """
    parser = OneLineParser(
        prog="sspgm",
        description="Stochastic shortest path with a generative model "
        "(Tarbouriech et al., ALT 2021).",
        epilog="Optional extras: "
        + "; ".join(f"sspgm[{name}]: {what}" for name, what in EXTRAS.items())
        + ". Exit status: 0 success, 1 an answer that fails its checks (solve), "
        "2 an error in the arguments or input, 130 interrupted.",
    )
    parser.add_argument("--version", action=_VersionAction,
                        help="print the version, the backends, OpenMP and threads, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, help_line in COMMANDS.items():
        if name == command:
            importlib.import_module(f"sspgm.commands.{name}").register(sub)
        else:
            sub.add_parser(name, help=help_line, add_help=False)
    return parser


def _misspelt(tokens, options):
    """``"; --esp is not an option: did you mean --eps?"`` for the first option in ``tokens``
    that ``options`` lacks and that is close to one of them; else ``""``."""
    from sspgm.suggest import first_misspelt

    found = first_misspelt(tokens, options)
    return f"; {found[0]} is not an option: did you mean {found[1]}?" if found else ""


def _unrecognized(extra, options):
    """The error for arguments no option takes, with the closest option of the command."""
    from sspgm.suggest import first_misspelt

    text = f"unrecognized arguments: {' '.join(extra)}"
    found = first_misspelt(extra, options)
    return f"{text}; did you mean {found[1]} (for {found[0]})?" if found else text


def _subparser(parser, command):
    """The parser of ``command`` in the top-level ``parser``."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def _requested_command(argv):
    """The first argument that is not an option (the top level has no option values)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def _one_line(exc):
    """``exc`` as one line of text, without the exception class for the usual errors."""
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if missing and missing.split(".")[0] in EXTRA_MODULES:
        text = _missing_extra_message(missing, EXTRA_MODULES[missing.split(".")[0]])
    elif isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror if exc.filename is None else f"{exc.filename}: {exc.strerror}"
    elif isinstance(exc, MemoryError):
        text = f"not enough memory: {exc}" if str(exc) else "not enough memory"
    elif isinstance(exc, OverflowError):
        text = f"numeric overflow: {exc}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _is_user_error(exc):
    """Whether ``exc`` is an error the user can cause (printed as one line, exit status 2)."""
    if isinstance(exc, (ValueError, OverflowError, MemoryError, OSError, ImportError)):
        return True
    errors = sys.modules.get("reference.errors")
    return errors is not None and isinstance(exc, errors.ConvergenceError)


def main(argv=None):
    """Run the command line; returns the process exit status (see the module docstring).

    See Also
    --------
    build_parser : the parser.

    Examples
    --------
    ``main`` returns the exit status instead of exiting; errors print one line
    on standard error:

    >>> main(["info", "tradeoff"])
    instance: tradeoff()
    ...
      V*(0) = 0.2   action 1
    0
    >>> main(["bounds", "--eps", "2", "--B", "10", "--cmin", "0.5"])
    2
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _requested_command(argv)
    try:
        parser = build_parser(command)
        args, extra = parser.parse_known_args(argv)
        if extra and not getattr(args, "accepts_extra", False):
            prog = f"sspgm {command}"
            options = option_strings(_subparser(parser, command))
            print(f"{prog}: error: {_unrecognized(extra, options)} "
                  f"(see `{prog} --help`)", file=sys.stderr)
            return EXIT_USER_ERROR
        args.extra = extra
        return args.run(args) or 0
    except KeyboardInterrupt:
        print(f"sspgm {command}: interrupted" if command else "sspgm: interrupted",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        sys.stderr.close()
        return 0
    except Exception as exc:
        if not _is_user_error(exc):
            raise
        print(f"sspgm {command}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
