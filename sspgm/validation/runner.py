"""Running a sweep: one run evaluated exactly into a :class:`~sspgm.validation.rows.Row`, and executors.

:func:`run_one` runs ``solve`` once and evaluates the returned policy
exactly. :func:`run_sweep` checks every configuration first
(:func:`~sspgm.validation.spec.check_runs`), then runs what the rows file
does not yet record, in this process, in local worker processes or on a Dask
cluster, appending each row as it completes. A run that raises is recorded
as a row carrying its exception, and the sweep goes on. Local workers end
when the sweep's process ends, however it ends.
"""

import collections
import contextlib
import dataclasses
import functools
import multiprocessing
import os
import threading
import time
import typing
import warnings

import numpy as np

import bounds
from reference.errors import NotCertifiedWarning, ParameterError
from sspgm import load_backend

from .rows import Row, RowLog
from .spec import check_runs, parse_instance

__all__ = ["run_one", "run_sweep"]

_WATCH_SECONDS = 0.2
"""How often a local worker checks that the sweep's process is still alive."""


_RECORDED_WARNING = NotCertifiedWarning
"""The warning of ``solve`` that a row records (``uncertified``), so it is not shown again."""


class _Reading(typing.NamedTuple):
    policy: np.ndarray
    n_calls: int
    Delta_final: float
    d_hat: float | None
    uncertified: bool
    rounds: int
    calls_diameter: int
    W_final: float | None


def _read(result):
    """What the harness reads from a ``solve`` result.

    With :func:`_round_text`, the one place that names the fields of the
    backends' results, so that a renamed field costs one edit.
    """
    diameter = [r for r in result.history if r.phase == "diameter"]
    return _Reading(
        policy=result.policy,
        n_calls=int(result.n_calls),
        Delta_final=float(result.Delta_final),
        d_hat=None if result.D_hat is None else float(result.D_hat),
        uncertified=not result.certified,
        rounds=sum(r.phase == "search" for r in result.history),
        calls_diameter=int(diameter[-1].n_calls) if diameter else 0,
        W_final=float(diameter[-1].scale) if diameter else None,
    )


def _round_text(round_):
    """A round of ``solve`` (a ``callback`` argument) in a few words: phase, guess, calls."""
    return f"{round_.phase} scale={round_.scale:g} calls={round_.n_calls:.3g}"


@functools.lru_cache(maxsize=64)
def _truth(instance, backend_name, theta):
    r"""The instance and its exact reference quantities, computed once per process.

    Returns
    -------
    ssp : SSP
    target : ndarray of shape (S,)
        :math:`V^\star` (``theta`` is None) or :math:`V^\star_\theta`.
    D : float
        The SSP-diameter.
    B_star : float
        :math:`B_\star`.
    """
    from sspgm.instances import build_instance

    name, tokens = parse_instance(instance)
    ssp, _ = build_instance(name, tokens)
    backend = load_backend(backend_name)
    if theta is None:
        target = backend.optimal_values(ssp).values
    else:
        target = backend.restricted_optimal_values(ssp, theta).values
    return ssp, np.asarray(target), float(backend.diameter(ssp).D), float(backend.b_star(ssp))


def _explicit_total(ssp, spec, reading):
    """The explicit total of the run at its own final guesses, rounding up included.

    Alg. 1: ``S A phi(Delta, c_min)`` at accuracy ``eps``
    (``bounds.samp_comp``, ``"explicit1"``), plus ``S A`` for rounding each
    pair's count up to an integer. Alg. 3: ``bounds.samp_comp_theta``,
    ``"explicit3"``: Alg. 4's total up to its final guess ``W``, plus ``S A
    phi(Delta, max(c_min, nu))`` at accuracy ``eps / 2`` with the run's own
    ``D_hat`` (rounding included).
    """
    common = dict(
        S=ssp.n_states, A=ssp.n_actions, Gamma=ssp.branching, delta=spec.delta,
        alpha=spec.alpha, Delta=reading.Delta_final,
    )
    if spec.theta is None:
        explicit = bounds.samp_comp(spec.eps, B=None, cmin=ssp.c_min, bound="explicit1", **common)
        return float(explicit) + ssp.n_states * ssp.n_actions
    return float(bounds.samp_comp_theta(
        spec.eps, theta=spec.theta, D=None, cmin=ssp.c_min, D_hat=reading.d_hat,
        W=reading.W_final, bound="explicit3", **common,
    ))


def run_one(spec, progress=False):
    """Run ``solve`` once, evaluate the policy exactly, and return the row.

    Parameters
    ----------
    spec : RunSpec
    progress : bool, default False
        Show a tqdm bar over the rounds of ``solve``.

    Returns
    -------
    Row

    Raises
    ------
    Exception
        Whatever ``solve`` or the evaluation raises (:func:`run_sweep`
        records it in the row instead).

    See Also
    --------
    run_sweep : runs many, in parallel, recording each row.

    Notes
    -----
    ``calls`` counts every call of the run; ``calls_diameter`` those made by
    Alg. 3's diameter subroutine (0 for Alg. 1), which Alg. 3 runs at
    accuracy ``eps_diameter = eps``. ``bound`` is the run's explicit total
    at its own final guesses (:func:`_explicit_total`): Alg. 1's ``S A
    phi(Delta, c_min)`` with the rounding up of every pair's count, Alg. 3's
    total of Alg. 4 and SEARCH (``bounds``, ``"explicit3"``).
    ``calls_over_bound = calls / bound``: above 1, the run spent more than
    its explicit total allows.

    ``uncertified`` is True when the result's certificate, computed on the
    run's own samples, does not prove the policy eps-optimal (at ``eps / 2``
    on the perturbed costs for Alg. 3, as ``solve`` tests it).

    Examples
    --------
    >>> from sspgm.validation import RunSpec
    >>> row = run_one(RunSpec("tradeoff", eps=0.2, delta=0.1, seed=0))
    >>> row.success, row.calls <= row.bound, row.error <= row.eps
    (True, True, True)
    """
    ssp, target, D, B_star = _truth(spec.instance, spec.backend, spec.theta)
    backend = load_backend(spec.backend)
    model = backend.TabularGenerativeModel(ssp)
    bar = _bar(progress, desc=f"{spec.instance} eps={spec.eps:g} seed={spec.seed}",
               unit="round", leave=False)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", _RECORDED_WARNING)
            result = backend.solve(
                model, ssp.costs, spec.eps, spec.delta, theta=spec.theta, alpha=spec.alpha,
                seed=spec.seed, callback=_round_callback(bar),
            )
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    reading = _read(result)
    gap = backend.policy_values(ssp, reading.policy) - target
    error = float(np.max(np.abs(gap)) if spec.theta is None else np.max(gap))
    bound = _explicit_total(ssp, spec, reading)
    return Row(
        **dataclasses.asdict(spec),
        success=error <= spec.eps,
        error=error,
        calls=reading.n_calls,
        calls_diameter=reading.calls_diameter,
        bound=bound,
        calls_over_bound=reading.n_calls / bound,
        rounds=reading.rounds,
        uncertified=reading.uncertified,
        Delta_final=reading.Delta_final,
        D_hat=reading.d_hat,
        eps_diameter=None if spec.theta is None else spec.eps,
        D=D,
        B_star=B_star,
        n_states=ssp.n_states,
        n_actions=ssp.n_actions,
        branching=ssp.branching,
        c_min=ssp.c_min,
        seconds=seconds,
    )


def _error_row(spec, text, seconds=0.0):
    return Row(**dataclasses.asdict(spec), exception=" ".join(text.split()), seconds=seconds)


def _guarded_run(spec, progress=False):
    """:func:`run_one`, with an exception recorded in the row instead of raised."""
    start = time.perf_counter()
    try:
        return run_one(spec, progress)
    except Exception as exc:
        return _error_row(spec, f"{type(exc).__name__}: {exc}", time.perf_counter() - start)


class _NoBar:
    """Stands for a tqdm bar when progress is hidden (tqdm need not be installed)."""

    def update(self, n=1):
        pass

    def set_postfix_str(self, text):
        pass

    def close(self):
        pass


def _bar(enabled, **kwargs):
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(**kwargs)


def _round_callback(bar):
    """A ``solve`` callback that advances ``bar`` once per round and shows its guess and calls."""

    def callback(round_):
        bar.set_postfix_str(_round_text(round_))
        bar.update(1)

    return callback


def _watch_parent(parent_pid):
    """Worker initializer: end this process as soon as the sweep's process is gone."""

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(_WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="sspgm-watch-parent", daemon=True).start()


def _pool_rows(specs, n_workers, task):
    """Yield ``task(spec)`` for each of ``specs`` from a fresh pool of worker processes.

    Rows are yielded as they complete.

    Returns (as the generator's value) the specs left without a row because
    a worker process died and broke the pool.
    """
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(
        max_workers=n_workers, mp_context=multiprocessing.get_context("spawn"),
        initializer=_watch_parent, initargs=(os.getpid(),),
    )
    unfinished = []
    try:
        futures = {pool.submit(task, spec): spec for spec in specs}
        for future in as_completed(futures):
            try:
                row = future.result()
            except BrokenProcessPool:
                unfinished.append(futures[future])
                continue
            yield row
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return unfinished


def _local_rows(specs, n_jobs, task=_guarded_run):
    """``task(spec)`` in local worker processes; a run that kills its worker gets an error row.

    When a worker dies, the pool breaks and every unfinished run is retried in
    a fresh pool. A run left unfinished by two breaks is retried alone, and
    recorded as an error if its worker dies again.
    """
    witnessed = collections.Counter()
    remaining = list(specs)
    while remaining:
        alone = [spec for spec in remaining if witnessed[spec] >= 2]
        shared = [spec for spec in remaining if witnessed[spec] < 2]
        remaining = []
        for spec in alone:
            if (yield from _pool_rows([spec], 1, task)):
                yield _error_row(spec, "WorkerDied: the worker process running this "
                                 "configuration alone died (killed by a signal, or out of memory).")
        if shared:
            remaining = yield from _pool_rows(shared, n_jobs, task)
            witnessed.update(remaining)


def _dask_rows(specs, n_jobs, scheduler):
    """Rows from a Dask cluster, through dask.distributed's joblib backend."""
    import joblib
    from dask.distributed import Client

    tasks = (joblib.delayed(_guarded_run)(spec) for spec in specs)
    with Client(scheduler), joblib.parallel_config(backend="dask"):
        yield from joblib.Parallel(n_jobs=n_jobs, return_as="generator_unordered")(tasks)


def _execute(specs, n_jobs, scheduler, progress):
    """Yield the rows of ``specs`` as they complete (any order)."""
    if not specs:
        return
    if scheduler is not None:
        yield from _dask_rows(specs, n_jobs, scheduler)
    elif n_jobs == 1:
        yield from (_guarded_run(spec, progress) for spec in specs)
    else:
        workers = os.cpu_count() if n_jobs == -1 else n_jobs
        yield from _local_rows(specs, min(workers, len(specs)))


def _key(spec):
    return Row(**dataclasses.asdict(spec)).key


def run_sweep(runs, csv_path=None, n_jobs=-1, scheduler=None, progress=True):
    """Run every configuration of a sweep, skipping the runs a rows file already records.

    Parameters
    ----------
    runs : Sweep, or sequence of Sweep and RunSpec
        What to run. Every configuration is checked before any run starts.
    csv_path : str or os.PathLike, optional
        Rows file (:class:`~sspgm.validation.rows.RowLog`): rows are appended
        as they complete, never rewritten, and runs whose key it already holds
        (including runs that raised) are not run again.
    n_jobs : int, default -1
        Local worker processes (-1: one per core; 1: run in this process).
        Workers end with this process.
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:port``): the runs go to the
        cluster through dask.distributed's joblib backend instead.
    progress : bool, default True
        Show a tqdm progress bar over the runs and, for in-process runs, one
        over the rounds of the current ``solve``.

    Returns
    -------
    list of Row
        One row per distinct run, in the order of ``runs``; a run that
        raised has its ``exception`` set.

    Raises
    ------
    ParameterError
        Before any run, on ``n_jobs`` out of range, listing every invalid
        configuration; or when another sweep is writing to ``csv_path``.

    See Also
    --------
    run_one : one run.
    sspgm.validation.summarize : the statistics of the rows.

    Examples
    --------
    >>> from sspgm.validation import Sweep
    >>> rows = run_sweep(Sweep(instances=("tradeoff",), eps=(0.2, 0.1), seeds=(0, 1)),
    ...                  n_jobs=1, progress=False)
    >>> len(rows), all(row.success for row in rows)
    (4, True)
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or (n_jobs != -1 and n_jobs < 1):
        raise ParameterError(f"`n_jobs` must be -1 (one per core) or an integer >= 1; got "
                             f"{n_jobs!r}.")
    specs = check_runs(runs)
    log = None if csv_path is None else RowLog(csv_path)
    with log if log is not None else contextlib.nullcontext():
        done = {} if log is None else {row.key: row for row in log.rows}
        todo = [spec for spec in specs if _key(spec) not in done]
        bar = _bar(progress, total=len(specs), initial=len(specs) - len(todo), desc="sweep",
                   unit="run")
        try:
            for row in _execute(todo, n_jobs, scheduler, progress):
                done[row.key] = row
                if log is not None:
                    log.append(row)
                bar.update(1)
        finally:
            bar.close()
    return [done[_key(spec)] for spec in specs]
