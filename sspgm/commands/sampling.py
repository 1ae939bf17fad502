"""Where ``sspgm solve`` samples: a user's simulator, local worker processes, a Dask cluster.

``--simulator MODULE:FUNCTION`` names a simulator ``step(s, a, rng)`` (or, with
``--batched``, ``step_batch(s, a, n, rng)``) of ``--states S`` states and
``--actions A`` actions, with the costs of ``--costs PATH`` (a ``.npy`` array
of shape ``(S, A)``; every cost 1 by default: the expected time to the goal).
``--workers N`` samples on ``N`` local processes and ``--scheduler ADDRESS``
on a Dask cluster, through :class:`reference.ParallelGenerativeModel`; an
instance is then sampled by its :class:`reference.KernelSimulator`.
"""

import contextlib
import importlib
import os
import sys

from sspgm.cli import import_extra


def add_arguments(parser):
    """Add the sampling options to the ``solve`` parser."""
    group = parser.add_argument_group(
        "sampling on workers",
        "Without --simulator the instance is sampled; with --workers or --scheduler the draws "
        "come from per-pair counter-based streams (ParallelGenerativeModel), so the result does "
        "not depend on the number of workers.",
    )
    group.add_argument("--simulator", metavar="MODULE:FUNCTION", default=None,
                       help="your simulator step(s, a, rng) -> next state (goal = S), "
                       "importable from the current directory or the environment")
    group.add_argument("--batched", action="store_true",
                       help="the simulator is step_batch(s, a, n, rng) -> n next states")
    group.add_argument("--states", type=int, default=None, metavar="S",
                       help="--simulator: number of non-goal states")
    group.add_argument("--actions", type=int, default=None, metavar="A",
                       help="--simulator: number of actions")
    group.add_argument("--costs", default=None, metavar="PATH",
                       help="--simulator: .npy array of the costs, shape (S, A), in [0, 1] "
                       "(default: all 1)")
    where = group.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=None, metavar="N",
                       help="sample on N local worker processes")
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="sample on the Dask cluster of this scheduler (the dask extra)")
    group.add_argument("--chunk", type=int, default=16384, metavar="N",
                       help="samples per task sent to a worker (default: 16384)")


def load_simulator(spec):
    """The function named ``MODULE:FUNCTION`` (the current directory importable first)."""
    from reference.errors import ParameterError

    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise ParameterError(f"`--simulator` must be MODULE:FUNCTION; got {spec!r}.")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ParameterError(f"`--simulator` {spec!r}: cannot import {module_name!r} "
                             f"({type(exc).__name__}: {exc}).") from exc
    function = module
    for part in name.split("."):
        function = getattr(function, part, None)
    if not callable(function):
        raise ParameterError(f"`--simulator` {spec!r}: {module_name!r} has no callable {name!r}.")
    return function


def simulator_problem(args):
    """``(step, S, A, costs)`` of ``--simulator``, checked."""
    import numpy as np

    from reference.errors import ParameterError

    if args.states is None or args.actions is None:
        raise ParameterError("`--simulator` needs `--states S` and `--actions A`.")
    step = load_simulator(args.simulator)
    costs = np.ones((args.states, args.actions))
    if args.costs is not None:
        try:
            costs = np.load(args.costs, allow_pickle=False)
        except ValueError as exc:
            raise ParameterError(f"`--costs` {args.costs!r} is not a .npy array: {exc}") from None
    return step, args.states, args.actions, costs


@contextlib.contextmanager
def sampling_model(args, ssp=None, name=None, simulator=None):
    """The generative model ``solve`` samples, closed (its processes or client) on exit.

    With ``ssp`` (an instance named ``name``): the instance itself, or with
    ``--workers`` / ``--scheduler`` a parallel model of its kernel. Without:
    a parallel model of ``simulator`` (``(step, S, A)`` of ``--simulator``, from
    :func:`simulator_problem`), in this process unless ``--workers`` or
    ``--scheduler`` says otherwise. Yields ``(model, description)``.
    """
    import reference
    from reference.errors import ParameterError

    if ssp is None and simulator is None:
        raise ParameterError("sampling_model needs `ssp` (an instance) or `simulator` (the "
                             "(step, S, A) of simulator_problem); got neither.")
    for option, value in (("--workers", args.workers), ("--chunk", args.chunk)):
        if value is not None and value < 1:
            raise ParameterError(f"`{option}` must be an integer >= 1; got {value}.")
    if ssp is not None and args.workers is None and args.scheduler is None:
        yield ssp, "this process"
        return
    if ssp is not None:
        step, batched = reference.KernelSimulator(ssp), True
        S, A, identity = ssp.n_states, ssp.n_actions, f"sspgm instance {name}"
    else:
        step, S, A = simulator
        batched, identity = args.batched, args.simulator
    with contextlib.ExitStack() as stack:
        executor, where = None, "this process"
        if args.workers is not None:
            executor, where = args.workers, f"{args.workers} local worker process(es)"
        elif args.scheduler is not None:
            distributed = import_extra("distributed", "dask")
            client = stack.enter_context(distributed.Client(args.scheduler))
            executor = client.get_executor()
            where = f"the Dask cluster at {args.scheduler} ({len(client.nthreads())} workers)"
        model = reference.ParallelGenerativeModel(
            None if batched else step, S, A, executor=executor, chunk=args.chunk,
            step_batch=step if batched else None, identity=identity,
        )
        stack.enter_context(model)
        yield model, f"{where}, chunks of {args.chunk} samples"


@contextlib.contextmanager
def worker_tracebacks():
    """Print to standard error the worker's traceback of a simulator that raised, then re-raise
    (the command line prints the error itself as one line)."""
    from reference.parallel import WorkerTraceback

    try:
        yield
    except Exception as exc:
        cause = exc
        while cause is not None and not isinstance(cause, WorkerTraceback):
            cause = cause.__cause__
        if cause is not None:
            print(f"the simulator's traceback on its worker:{cause}", file=sys.stderr)
        raise
