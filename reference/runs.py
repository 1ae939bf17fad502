"""One run of the paper's algorithms: samples, generator, history, checkpoint, shared checks.

A :class:`Run` holds the sample store and the random generator of one call of
:func:`~reference.range_search.search`, :func:`~reference.diameter_estimate.estimate_diameter`
or :func:`~reference.algorithms.solve`, records each :class:`Round` (calling the
callback and rewriting the checkpoint), and resumes from a checkpoint of the
same run. The argument checks the algorithms share, and EVI with the
convergence they require, are here too.
"""

import hashlib
import numbers
import os
import sys
from dataclasses import asdict, dataclass, field, fields

from ._checks import (
    INT64_MAX,
    check_costs,
    check_counts_log_term,
    check_int,
    check_policy,
    check_real,
    check_real_dtype,
    make_rng,
)
from .evi import _iterate
from .confidence import check_level
from .errors import CheckpointError, ConvergenceError, ParameterError
from .generative import SampleStore, TabularGenerativeModel, model_fingerprint
from .generative.files import CheckpointLock, check_regular, remove_stale_temporaries
from .model import SSP
from .results import Record

__all__ = ["Round"]


@dataclass(frozen=True, repr=False)
class Round(Record):
    """Diagnostics of one round of SEARCH (Alg. 2) or of the diameter estimate (Alg. 4).

    Attributes
    ----------
    phase : str
        ``"search"`` or ``"diameter"``.
    scale : float
        The guess of the round: ``Delta`` (SEARCH) or ``W`` (Alg. 4).
    target : int
        Fewest samples of any pair after the round's sampling (``ceil(phi)``
        in SEARCH).
    Gamma_hat : int
        Largest empirical support after the sampling.
    evi_n_iter : int
        Sweeps of the round's EVI (``j + 1`` when it stopped at ``j``).
    v_tilde_max : float
        ``max_s v_tilde(s)``, compared with ``scale`` by the stopping test.
    n_calls : int
        Generative-model calls made so far by the run.
    seconds : float
        Wall time of the round (ignored when rounds are compared).
    """

    phase: str
    scale: float
    target: int
    Gamma_hat: int
    evi_n_iter: int
    v_tilde_max: float
    n_calls: int
    seconds: float = field(compare=False)


class Run:
    """Samples, generator, history and checkpoint of one run; resumes from a checkpoint.

    A new run with a checkpoint writes it before its first round (an
    unwritable path fails at once, and a run killed in its first round
    resumes like any other). A resumed checkpoint must hold this run's
    parameters and samples of this model (:func:`_check_same_run`). Every
    batch of calls is recorded in the checkpoint's ledger before it is drawn
    (:meth:`~reference.generative.SampleStore.track_calls`), so the calls of a
    round lost before its checkpoint are counted on resume. The store of a run
    without a checkpoint is never saved, so it holds no model fingerprint.
    ``round_type`` is the record class of the history (rebuilt from a checkpoint
    by keyword): :class:`Round` for the paper's algorithms. ``warm`` maps names
    to policies (int64 ``(S,)``) that the last recorded round started from:
    saved with it and restored (checked) on resume, so that a resumed run
    recomputes that round from the same starts, bit for bit.

    A checkpoint path that exists and is not a regular file (a directory, a
    FIFO, a device) is refused before anything is read. The run holds an
    exclusive lock on its checkpoint (:class:`~reference.generative.files.CheckpointLock`,
    POSIX only) for its lifetime, so a second run on it is refused at once;
    under the lock, the temporary files of a save killed before its rename are
    removed.
    """

    def __init__(self, model, params, seed, callback, checkpoint, round_type=Round):
        self.model = model
        self.callback = callback
        self.checkpoint = checkpoint
        self.params = params
        self.lock = None
        if checkpoint is not None:
            path = os.path.abspath(os.fspath(checkpoint))
            check_regular(path, f"`checkpoint` {path!r}")
            self.lock = CheckpointLock(path, sys._getframe(1))
            remove_stale_temporaries(path)
        if checkpoint is not None and os.path.exists(checkpoint):
            self.store, self.rng, meta = SampleStore.load(checkpoint)
            _check_same_run(checkpoint, meta.get("params"), params, self.store, model)
            self.history = _saved_rounds(checkpoint, meta.get("history"), round_type)
            self.warm = _saved_warm(checkpoint, meta.get("warm", {}), model)
        else:
            fingerprint = None if checkpoint is None else model_fingerprint(model)
            self.store = SampleStore(model.n_states, model.n_actions, fingerprint=fingerprint)
            self.rng = make_rng(seed)
            self.history = []
            self.warm = {}
            if checkpoint is not None:
                self._save()
        if checkpoint is not None:
            self.store.track_calls(checkpoint)

    def check_budget(self, budget, more, what):
        """Refuse to draw ``more`` calls for ``what`` if they would pass ``budget`` (or None)."""
        made = self.store.calls_made
        if budget is not None and made + more > budget:
            raise ParameterError(
                f"`budget` = {budget} calls cannot pay for {what} ({more} calls): {made} were "
                "already made, some by a run killed before its checkpoint."
            )

    def rounds(self, phase):
        """The recorded rounds of one phase (``"search"`` or ``"diameter"``), in order."""
        return [r for r in self.history if r.phase == phase]

    def start_round(self, label):
        """Name the round about to sample (e.g. ``"SEARCH round 2 (Delta = 4)"``) in the
        errors raised from inside the model."""
        self.store.context = label

    def record(self, round_):
        """Append ``round_`` to the history, rewrite the checkpoint, call the callback."""
        self.history.append(round_)
        if self.checkpoint is not None:
            self._save()
        if self.callback is not None:
            self.callback(round_)

    def _save(self):
        meta = {"params": self.params, "history": [asdict(r) for r in self.history],
                "warm": {name: policy.tolist() for name, policy in self.warm.items()}}
        self.store.save(self.checkpoint, self.rng, meta)


def _check_same_run(path, saved, params, store, model):
    """Raise unless the checkpoint holds this call's ``params`` and samples of ``model``."""
    if not isinstance(saved, dict):
        raise CheckpointError(f"`checkpoint` {os.fspath(path)!r} holds no run parameters.")
    for key, value in params.items():
        if saved.get(key) != value:
            raise ParameterError(
                f"`checkpoint` {os.fspath(path)!r} belongs to another run: it has {key} = "
                f"{saved.get(key)!r}, this call has {key} = {value!r}."
            )
    store.check_model(model, f"`checkpoint` {os.fspath(path)!r}")


def _saved_rounds(path, history, round_type):
    """The rounds a checkpoint records, or a :class:`CheckpointError` naming a malformed one."""
    names = sorted(f.name for f in fields(round_type))
    if not isinstance(history, list):
        raise CheckpointError(f"`checkpoint` {os.fspath(path)!r} holds no list of rounds.")
    for i, entry in enumerate(history):
        if not isinstance(entry, dict) or sorted(entry) != names:
            raise CheckpointError(
                f"`checkpoint` {os.fspath(path)!r} has a malformed round {i}: it must hold "
                f"exactly the fields {names}."
            )
    return [round_type(**entry) for entry in history]


def _saved_warm(path, warm, model):
    """The start policies a checkpoint records, or a :class:`CheckpointError`."""
    if not isinstance(warm, dict):
        raise CheckpointError(f"`checkpoint` {os.fspath(path)!r} has malformed start policies.")
    out = {}
    for name, policy in warm.items():
        try:
            out[name] = check_policy(policy, model.n_states, model.n_actions)
        except (ValueError, TypeError, OverflowError) as exc:
            raise CheckpointError(
                f"`checkpoint` {os.fspath(path)!r} has a malformed start policy {name!r}: {exc}"
            ) from None
    return out


def as_model(model):
    """The ``model`` argument as a generative model (an SSP is wrapped)."""
    if isinstance(model, SSP):
        return TabularGenerativeModel(model)
    needed = ("n_states", "n_actions", "sample")
    if not all(hasattr(model, name) for name in needed):
        raise ParameterError(
            "`model` must be an SSP or a generative model with `n_states`, `n_actions` "
            f"and `sample(s, a, n, rng)`; got {type(model).__name__}."
        )
    return model


def check_model_costs(costs, model):
    """The ``costs`` argument as float64 ``(S, A)`` in ``[0, 1]``, sizes of ``model``."""
    check_real_dtype("costs", costs)
    return check_costs("costs", costs, model.n_states, model.n_actions, "`model`")


def checked_budget(budget, low, kind, n_states, n_actions, delta):
    """``budget`` (None, or an integer ``>= low``), refused when a pair of that many samples
    (``2^63 - 1`` without a budget) would overflow the log term of the boxes ``kind`` at
    ``delta`` (:func:`reference.confidence.check_level`)."""
    if budget is not None:
        budget = check_int("budget", budget, low=low)
    check_level(kind, budget or INT64_MAX, n_states, n_actions, delta,
                "`budget`, else 2^63 - 1, per pair")
    return budget


def check_accuracy(eps, delta):
    """``eps`` in ``(0, 1]`` and ``delta`` in ``(0, 1)``, as floats."""
    eps = check_real("eps", eps, 0.0, 1.0, low_open=True)
    delta = check_real("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    return eps, delta


def run_params(algorithm, model, costs, eps, delta, theta, alpha, seed):
    """What identifies a run in its checkpoint (a resumed run must match every entry)."""
    digest = None if costs is None else hashlib.sha256(costs.tobytes()).hexdigest()
    return {
        "algorithm": algorithm,
        "n_states": model.n_states,
        "n_actions": model.n_actions,
        "costs_sha256": digest,
        "eps": eps,
        "delta": delta,
        "theta": theta,
        "alpha": alpha,
        "seed": int(seed) if isinstance(seed, numbers.Integral) else None,
    }


def converged_evi(kernels, run, costs, delta, mu, max_iter, where):
    """EVI on the run's samples; a :class:`ConvergenceError` naming ``where`` if it fails.

    The counts are the store's (:meth:`~reference.generative.SampleStore.counts`):
    the store built them from answers it checked, so EVI does not check them again
    (:func:`reference.evi._iterate`), nor the other arguments, which the public
    function running the run checked (``costs`` float64 ``(S, A)``, ``delta`` in
    ``(0, 1)``, ``max_iter >= 1``) or computed (``mu > 0``). Only the log term
    of ``delta`` is checked, against these counts (they grow each round).
    """
    counts = run.store.counts()
    check_counts_log_term(counts.table, delta)
    out = _iterate(kernels, counts, counts.table, costs, delta, mu, max_iter)
    if not out.converged:
        raise ConvergenceError(
            f"EVI did not converge in {where} (mu = {mu:.3g}, max_iter = {max_iter}): "
            f"{out.message} Raise `max_iter`; no policy is returned from a non-converged EVI."
        )
    return out
