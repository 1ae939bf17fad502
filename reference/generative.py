"""Generative models and the store of the samples drawn from them.

A generative model answers "sample a next state of the pair ``(s, a)``" for
any pair, as often as asked (Sec. 2 of the paper). The sample complexity of
every algorithm is the number of such calls, counted exactly (docs/semantics.md,
"Algorithms"): a model that draws ``n`` samples of a pair at once still counts
``n`` calls.
"""

import copy
import functools
import hashlib
import json
import numbers
import os
import warnings
from typing import Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from ._checks import (
    INT64_MAX,
    check_call_budget,
    check_dense_size,
    check_int,
    check_int64_array,
    check_sparse_structure,
    exact_sum,
)
from .errors import (
    CheckpointError,
    GenerativeModelError,
    ParameterError,
    ShapeError,
    SSPValueError,
    UnfingerprintedModelWarning,
)
from .model import DENSE_LIMIT_BYTES, SSP

__all__ = [
    "GenerativeModel",
    "TabularGenerativeModel",
    "SimulatorGenerativeModel",
    "SampleStore",
    "load_rng_state",
    "model_fingerprint",
    "compare_fingerprints",
    "CHECKPOINT_FORMAT",
]

CHECKPOINT_FORMAT = 2
"""Version of the file :meth:`SampleStore.save` writes; :meth:`SampleStore.load` reads only it."""


@runtime_checkable
class GenerativeModel(Protocol):
    """What the algorithms need from a generative model.

    Attributes
    ----------
    n_states : int
        Number ``S`` of non-goal states; next states lie in ``0..S`` (``S`` = goal).
    n_actions : int
        Number ``A`` of actions.
    n_calls : int
        Total number of samples drawn so far (one call per sample).
    calls : ndarray of int64, shape (S, A)
        Samples drawn so far per pair.

    Notes
    -----
    A model may also offer ``sample_pairs(pairs, n, rng)``, many pairs in one
    call with the draws ``sample`` would make pair after pair (see
    :meth:`TabularGenerativeModel.sample_pairs`); :meth:`SampleStore.top_up`
    uses it when present. It is not part of the protocol.

    A model may also carry an ``identity`` string, a name that determines
    its dynamics: checkpoints record it (:func:`model_fingerprint`) and a
    resumed run refuses a model with another one.
    """

    n_states: int
    n_actions: int
    n_calls: int
    calls: np.ndarray

    def sample(self, s, a, n, rng):
        """Draw ``n`` next states of ``(s, a)``, counting ``n`` calls.

        Parameters
        ----------
        s, a : int
            The pair, ``0 <= s < S``, ``0 <= a < A``.
        n : int
            Number of samples, ``>= 0``.
        rng : numpy.random.Generator
            Source of randomness.

        Returns
        -------
        next_states : ndarray of int64, shape (k,)
            Ascending, duplicate-free, in ``0..S``.
        counts : ndarray of int64, shape (k,)
            Positive counts summing to ``n``.
        """


def _check_pair(s, a, n_states, n_actions):
    """Return ``(s, a)`` as ints after checking ``0 <= s < S`` and ``0 <= a < A``."""
    s = check_int("s", s, low=0)
    a = check_int("a", a, low=0)
    if s >= n_states:
        raise ParameterError(f"`s` must be a non-goal state in 0..{n_states - 1}; got {s}.")
    if a >= n_actions:
        raise ParameterError(f"`a` must be an action in 0..{n_actions - 1}; got {a}.")
    return s, a


def _check_pairs(pairs, n, n_states, n_actions):
    """Return ``(pairs, n)`` as int64 arrays of shape ``(m,)`` after checking them.

    ``pairs`` holds flat pair indices ``s*A + a`` in ``0..S*A-1``; ``n`` is an
    integer ``>= 0`` or one such integer per pair.
    """
    n_pairs = n_states * n_actions
    pairs = np.asarray(pairs)
    if pairs.ndim != 1 or (pairs.size and not np.issubdtype(pairs.dtype, np.integer)):
        raise ParameterError(
            "`pairs` must be a 1-d array of integer pair indices s*A + a; got an array of "
            f"shape {pairs.shape} and dtype {pairs.dtype}."
        )
    pairs = pairs.astype(np.int64)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= n_pairs):
        outside = pairs[(pairs < 0) | (pairs >= n_pairs)]
        raise ParameterError(
            f"`pairs` must be pair indices s*A + a in 0..{n_pairs - 1}; got {_listing(outside)}."
        )
    n = np.asarray(n)
    if n.ndim > 1 or (n.size and not np.issubdtype(n.dtype, np.integer)):
        raise ParameterError(
            "`n` must be an integer or a 1-d integer array with one entry per pair; got an "
            f"array of shape {n.shape} and dtype {n.dtype}."
        )
    if n.ndim == 1 and n.shape != pairs.shape:
        raise ShapeError(
            f"`n` must have one entry per pair, shape {pairs.shape}; got {n.shape}."
        )
    if n.dtype == np.uint64 and n.size and n.max() > INT64_MAX:
        raise ParameterError(f"`n` must be at most 2^63 - 1; got {int(n.max())}.")
    n = np.broadcast_to(n, pairs.shape).astype(np.int64)
    if n.size and n.min() < 0:
        raise ParameterError(f"`n` must be >= 0; got {_listing(n[n < 0])}.")
    return pairs, n


def _check_samples(next_states, counts, n_states):
    """Return samples as int64 arrays of shape ``(k,)`` after checking them.

    ``next_states`` must lie in ``0..S`` and ``counts`` be ``>= 0``, with one
    count per next state.
    """
    next_states = np.asarray(next_states, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if next_states.shape != counts.shape or next_states.ndim != 1:
        raise ShapeError(
            "`next_states` and `counts` must be 1-d arrays of the same length; got "
            f"shapes {next_states.shape} and {counts.shape}."
        )
    outside = next_states[(next_states < 0) | (next_states > n_states)]
    if outside.size:
        raise ParameterError(f"`next_states` must lie in 0..{n_states}; got {_listing(outside)}.")
    if (counts < 0).any():
        raise ParameterError(f"`counts` must be >= 0; got {_listing(counts[counts < 0])}.")
    return next_states, counts


def _listing(values, limit=5):
    """The first ``limit`` offending values as a list, and how many more there are."""
    more = values.size - limit
    return f"{values[:limit].tolist()}" + (f" and {more} more" if more > 0 else "")


class _CountingModel:
    """Shared bookkeeping: sizes, call counters and the checks on ``(s, a, n)``."""

    def __init__(self, n_states, n_actions):
        self.n_states = check_int("n_states", n_states, low=1)
        self.n_actions = check_int("n_actions", n_actions, low=1)
        self.calls = np.zeros((self.n_states, self.n_actions), dtype=np.int64)

    @property
    def n_calls(self):
        """Total number of samples drawn so far (an exact Python int)."""
        return exact_sum(self.calls)

    def _check_request(self, s, a, n):
        s, a = _check_pair(s, a, self.n_states, self.n_actions)
        return s, a, check_int("n", n, low=0)


class TabularGenerativeModel(_CountingModel):
    """Generative model of a known :class:`~reference.model.SSP`.

    Parameters
    ----------
    ssp : SSP
        The instance whose kernel is sampled.

    Notes
    -----
    ``sample(s, a, n, rng)`` is one multinomial draw on the support of the
    pair, in the order given by ``ssp.row(s, a)`` (ascending next states):

    .. math::

        (k_1, \\dots, k_m) = \\texttt{rng.multinomial}\\big(n,\\ q / \\textstyle\\sum_i q_i\\big),
        \\qquad (\\mathrm{support}, q) = \\texttt{ssp.row}(s, a),

    and the next states with ``k_i > 0`` are returned. It counts ``n`` calls.
    Any backend reproduces the reference samples by making exactly this call
    with the same generator.

    Examples
    --------
    >>> import numpy as np
    >>> from reference import TabularGenerativeModel, chain
    >>> model = TabularGenerativeModel(chain(3, p=0.8))
    >>> model.sample(0, 0, 100, np.random.default_rng(0))
    (array([0, 1]), array([21, 79]))
    >>> model.n_calls
    100
    """

    def __init__(self, ssp):
        if not isinstance(ssp, SSP):
            raise ParameterError(f"`ssp` must be an SSP; got {type(ssp).__name__}.")
        super().__init__(ssp.n_states, ssp.n_actions)
        self.ssp = ssp
        self._last_layout = None

    def sample(self, s, a, n, rng):
        """Draw ``n`` next states of ``(s, a)`` as one multinomial draw (``n`` calls).

        Parameters
        ----------
        s, a : int
            The pair, ``0 <= s < S``, ``0 <= a < A``.
        n : int
            Number of samples, ``>= 0``.
        rng : numpy.random.Generator
            Source of randomness.

        Returns
        -------
        next_states : ndarray of int64, shape (k,)
            Distinct next states in ``0..S``, ascending.
        counts : ndarray of int64, shape (k,)
            Positive counts summing to ``n``.
        """
        s, a, n = self._check_request(s, a, n)
        support, probs = self.ssp.row(s, a)
        draw = rng.multinomial(n, probs / probs.sum())
        self.calls[s, a] += n
        keep = draw > 0
        return support[keep].astype(np.int64), draw[keep].astype(np.int64)

    @functools.cached_property
    def fingerprint(self):
        """The model's fingerprint: SHA-256 of its kernel's support and of its probabilities.

        See :func:`model_fingerprint`.
        """
        kernel = self._kernel
        support = hashlib.sha256(kernel.indptr.astype("<i8").tobytes())
        support.update(kernel.indices.astype("<i8").tobytes())
        probabilities = hashlib.sha256(kernel.data.astype("<f8").tobytes())
        return {
            "kind": "kernel",
            "n_states": self.n_states,
            "n_actions": self.n_actions,
            "support_sha256": support.hexdigest(),
            "probabilities_sha256": probabilities.hexdigest(),
        }

    @functools.cached_property
    def _kernel(self):
        """The kernel as CSR ``(S*A, S+1)``: the supports and probabilities of ``ssp.row``."""
        return self.ssp.kernel_csr()

    def sample_pairs(self, pairs, n, rng):
        """Draw ``n[i]`` next states of every pair ``pairs[i]``, in the order given.

        The draws are those of :meth:`sample` called pair after pair with the
        same ``rng``: the same ``rng.multinomial`` calls (same ``n``, same
        normalised probabilities), except that a run of consecutive pairs
        with supports of one length ``k`` is drawn by one vectorised call on a
        ``(run, k)`` array, which makes the same draws row after row.

        Parameters
        ----------
        pairs : array_like of int, shape (m,)
            Flat pair indices ``s*A + a``, each in ``0..S*A-1``.
        n : int or array_like of int, shape (m,)
            Samples per pair, ``>= 0`` (``n[i]`` calls for ``pairs[i]``).
        rng : numpy.random.Generator
            Source of randomness.

        Returns
        -------
        indptr : ndarray of int64, shape (m + 1,)
            The samples of ``pairs[i]`` are entries ``indptr[i]:indptr[i+1]``.
        next_states : ndarray of int64, shape (indptr[-1],)
            Distinct next states per pair, ascending, in ``0..S``.
        counts : ndarray of int64, shape (indptr[-1],)
            Positive counts; those of ``pairs[i]`` sum to ``n[i]``.
        """
        pairs, n = _check_pairs(pairs, n, self.n_states, self.n_actions)
        return self._sample_checked(pairs, n, rng)

    def _sample_checked(self, pairs, n, rng):
        """:meth:`sample_pairs` of ``pairs`` and ``n`` as :func:`_check_pairs` returns them.

        Its answer needs no check: the next states of every pair are the stored
        entries of its row of the (checked, canonical) kernel that were drawn, so
        they ascend in ``0..S``, with positive int64 counts summing to ``n[i]``.
        When every next state was drawn, the answer is the layout's (copied).
        """
        offsets, next_states, runs = self._layout(pairs)
        draws = np.empty(offsets[-1], dtype=np.int64)
        for lo, hi, pvals in runs:
            draws[offsets[lo]:offsets[hi]] = rng.multinomial(n[lo:hi], pvals).ravel()
        np.add.at(self.calls.reshape(-1), pairs, n)
        keep = draws > 0
        if keep.all():
            return offsets.copy(), next_states.copy(), draws
        indptr = np.concatenate([[0], np.cumsum(keep)])[offsets]
        return indptr, next_states[keep], draws[keep]

    def _layout(self, pairs):
        """Where the supports of ``pairs`` lie in the draws of :meth:`sample_pairs`.

        ``(offsets, next_states, runs)``: the draws of ``pairs[i]`` are entries
        ``offsets[i]:offsets[i+1]``, of the next states ``next_states`` (int64);
        ``runs`` lists ``(lo, hi, pvals)`` for every run ``pairs[lo:hi]`` of
        supports of one length ``k``, with their probabilities normalised, shape
        ``(hi - lo, k)``. The layout of the last ``pairs`` is kept (read-only)
        and reused when the next ones are the same: SEARCH asks for every pair
        at every top-up.
        """
        last = self._last_layout
        if last is not None and np.array_equal(last[0], pairs):
            return last[1]
        kernel = self._kernel
        starts = kernel.indptr[pairs].astype(np.int64)
        lengths = kernel.indptr[pairs + 1] - starts
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        entries = np.arange(offsets[-1]) + np.repeat(starts - offsets[:-1], lengths)
        probs = kernel.data[entries]
        run_starts = np.flatnonzero(np.diff(lengths, prepend=-1))
        runs = []
        for lo, hi in zip(run_starts, np.append(run_starts[1:], pairs.size)):
            block = probs[offsets[lo]:offsets[hi]].reshape(hi - lo, lengths[lo])
            runs.append((lo, hi, block / block.sum(axis=1, keepdims=True)))
        layout = (offsets, kernel.indices[entries].astype(np.int64), runs)
        for array in (offsets, layout[1], *(pvals for *_, pvals in runs)):
            array.flags.writeable = False
        self._last_layout = (pairs.copy(), layout)
        return layout


class SimulatorGenerativeModel(_CountingModel):
    """Generative model wrapping a black-box simulator.

    Parameters
    ----------
    step : callable
        ``step(s, a, rng) -> next_state``: one sample of ``p(.|s, a)``, an
        integer in ``0..S`` (``S`` is the goal). Called once per sample.
    n_states : int
        Number ``S`` of non-goal states.
    n_actions : int
        Number ``A`` of actions.
    identity : str, optional
        A name that determines the simulator's dynamics (its environment and
        every parameter of it, e.g. ``"FrozenLake-v1 map=4x4 slippery"``).
        Checkpoints record it, and resuming one with a simulator of another
        identity is refused. Without it the simulator is *unfingerprinted*:
        a checkpoint cannot be checked against it, and resuming one warns
        with :class:`UnfingerprintedModelWarning`.

    Raises
    ------
    GenerativeModelError
        From :meth:`sample`, if ``step`` returns anything but an integer in
        ``0..S``; the message names the pair.

    Notes
    -----
    Every call of ``step`` is counted, including one that raises.

    Examples
    --------
    A simulator of a 3-chain whose only action moves forward with probability
    0.8 (state 3 is the goal):

    >>> import numpy as np
    >>> from reference import SimulatorGenerativeModel
    >>> def step(s, a, rng):
    ...     return s + 1 if rng.random() < 0.8 else s
    >>> model = SimulatorGenerativeModel(step, 3, 1)
    >>> model.sample(2, 0, 10, np.random.default_rng(0))
    (array([2, 3]), array([3, 7]))
    >>> model.n_calls
    10
    """

    def __init__(self, step, n_states, n_actions, identity=None):
        if not callable(step):
            raise ParameterError(f"`step` must be callable; got {type(step).__name__}.")
        if identity is not None and not isinstance(identity, str):
            raise ParameterError(
                f"`identity` must be a string or None; got {type(identity).__name__}."
            )
        super().__init__(n_states, n_actions)
        self.step = step
        self.identity = identity

    def sample(self, s, a, n, rng):
        """Call ``step(s, a, rng)`` ``n`` times and tally the next states.

        Parameters
        ----------
        s, a : int
            The pair, ``0 <= s < S``, ``0 <= a < A``.
        n : int
            Number of samples (= calls), ``>= 0``.
        rng : numpy.random.Generator
            Passed to every call of ``step``.

        Returns
        -------
        next_states : ndarray of int64, shape (k,)
            Distinct next states in ``0..S``, ascending.
        counts : ndarray of int64, shape (k,)
            Positive counts summing to ``n``.
        """
        s, a, n = self._check_request(s, a, n)
        draws = np.empty(n, dtype=np.int64)
        for i in range(n):
            self.calls[s, a] += 1
            draws[i] = self._check_state(s, a, self.step(s, a, rng))
        next_states, counts = np.unique(draws, return_counts=True)
        return next_states.astype(np.int64), counts.astype(np.int64)

    def _check_state(self, s, a, nxt):
        ok = isinstance(nxt, numbers.Integral) and not isinstance(nxt, bool)
        if not ok or not 0 <= nxt <= self.n_states:
            raise GenerativeModelError(
                f"`step` must return a next state in 0..{self.n_states} (goal = "
                f"{self.n_states}); for the pair (s, a) = ({s}, {a}) it returned {nxt!r}."
            )
        return int(nxt)


def model_fingerprint(model):
    """The fingerprint of a generative model, recorded in every checkpoint.

    Parameters
    ----------
    model : GenerativeModel

    Returns
    -------
    dict
        JSON-serialisable, with ``kind`` and the sizes ``n_states``,
        ``n_actions``, and:

        - ``kind = "kernel"`` (a :class:`TabularGenerativeModel`): the SHA-256
          of the kernel's support (which next states each pair reaches) and of
          its probabilities, both from its canonical CSR form, so a dense and a
          sparse kernel of one SSP share a fingerprint;
        - ``kind = "declared"`` (a model with an ``identity`` string, such as
          ``SimulatorGenerativeModel(..., identity=...)``): that identity;
        - ``kind = "unfingerprinted"`` (any other model): its class name only;
          nothing about its dynamics can be checked.

        A model wrapping another may expose the inner model's fingerprint as
        its own ``fingerprint`` attribute (a dict of this form); it is then
        returned as it is.

    Examples
    --------
    Two grid worlds that differ only in their success probability share their
    support, not their probabilities; a checkpoint of one is refused for the other:

    >>> from reference import (TabularGenerativeModel, compare_fingerprints, gridworld,
    ...                        model_fingerprint)
    >>> saved = model_fingerprint(TabularGenerativeModel(gridworld()))
    >>> saved["kind"], saved["n_states"], saved["n_actions"]
    ('kernel', 10, 4)
    >>> other = model_fingerprint(TabularGenerativeModel(gridworld(success=0.3)))
    >>> other["support_sha256"] == saved["support_sha256"]
    True
    >>> compare_fingerprints(saved, other, "the checkpoint")
    Traceback (most recent call last):
    ...
    reference.errors.CheckpointError: the checkpoint holds samples of another model: ...probabilities differ...
    """
    sizes = {"n_states": int(model.n_states), "n_actions": int(model.n_actions)}
    declared = getattr(model, "fingerprint", None)
    if isinstance(declared, dict):
        return dict(declared)
    identity = getattr(model, "identity", None)
    if identity is not None:
        return {"kind": "declared", **sizes, "identity": str(identity)}
    kind = type(model)
    return {"kind": "unfingerprinted", **sizes, "type": f"{kind.__module__}.{kind.__qualname__}"}


def _describe_model(fingerprint):
    kind = fingerprint.get("kind")
    if kind == "kernel":
        return f"a known kernel (support {fingerprint.get('support_sha256', '?')[:12]}...)"
    if kind == "declared":
        return f"a model of identity {fingerprint.get('identity')!r}"
    return f"an unfingerprinted {fingerprint.get('type', 'model')}"


def compare_fingerprints(saved, current, where):
    """Raise unless the model that wrote a checkpoint is the model resuming it.

    Parameters
    ----------
    saved : dict or None
        The fingerprint the checkpoint holds (:attr:`SampleStore.fingerprint`).
    current : dict
        :func:`model_fingerprint` of the resuming model.
    where : str
        The checkpoint, named in the messages.

    Returns
    -------
    None

    Raises
    ------
    CheckpointError
        Naming what differs: the sizes, the kind of model, the kernel's support
        (which next states the pairs reach), its probabilities, or the declared
        identity; or that the checkpoint holds no fingerprint.

    Warns
    -----
    UnfingerprintedModelWarning
        When both models are unfingerprinted: the samples are resumed
        unchecked.
    """
    advice = "resume with the model that wrote it, or delete the file to start afresh."
    if not isinstance(saved, dict):
        raise CheckpointError(f"{where} holds no model fingerprint, so its samples cannot be "
                              f"matched to `model`; delete the file to start afresh.")
    for key in ("n_states", "n_actions"):
        if saved.get(key) != current[key]:
            raise CheckpointError(
                f"{where} holds samples of another model: it has {key} = {saved.get(key)!r}, "
                f"`model` has {key} = {current[key]!r}; {advice}"
            )
    if saved.get("kind") != current["kind"]:
        raise CheckpointError(
            f"{where} holds samples of {_describe_model(saved)}, and `model` is "
            f"{_describe_model(current)}; {advice}"
        )
    if current["kind"] == "unfingerprinted":
        warnings.warn(
            f"{where} and `model` declare no identity ({current['type']}), so the checkpoint "
            "cannot be checked against the model; pass `identity=` to the simulator to have it "
            "checked.",
            UnfingerprintedModelWarning,
            stacklevel=3,
        )
        return
    what = {
        "support_sha256": "the kernel's support differs (some pair reaches other next states)",
        "probabilities_sha256": "the kernel's transition probabilities differ",
        "identity": (f"the declared identity differs: {saved.get('identity')!r} in the file, "
                     f"{current.get('identity')!r} for `model`"),
        "streams": (f"its random streams differ: {saved.get('streams')!r} in the file, "
                    f"{current.get('streams')!r} for `model`"),
    }
    for key, difference in what.items():
        if saved.get(key) != current.get(key):
            raise CheckpointError(f"{where} holds samples of another model: {difference}; "
                                  f"{advice}")


class SampleStore:
    r"""Counts ``N(s, a, s')`` of every sample drawn, kept sparse, and the calls made.

    Parameters
    ----------
    n_states : int
        Number ``S`` of non-goal states.
    n_actions : int
        Number ``A`` of actions.
    fingerprint : dict, optional
        :func:`model_fingerprint` of the model the samples come from, saved
        with the counts so that a resumed run can be checked against its
        model (:meth:`check_model`).

    Attributes
    ----------
    context : str
        Where the store is being filled (e.g. ``"SEARCH round 3 (Delta = 8)"``),
        named in every :class:`GenerativeModelError`; empty by default.

    Notes
    -----
    The counts are one CSR matrix of shape ``(S*A, S+1)`` (row ``s*A + a``,
    observed next states only); samples added since it was last read wait in
    a list and are summed into it in one sparse addition when it is read
    (:meth:`counts_csr`, :attr:`Gamma_hat`, :meth:`save`), so merging costs
    nothing per pair. The dense ``(S, A, S+1)`` array is only built by
    :meth:`counts_dense`. Top-ups visit the pairs in the order
    ``(0, 0), (0, 1), ..., (S-1, A-1)``, so a seed fixes the samples. The
    empirical branching factor is

    .. math::

        \hat\Gamma = \max_{s,a} |\{ s' : N(s, a, s') > 0 \}|

    (``0`` before any sample), the ``G`` of eq. 6.

    Every sampling goes through :meth:`draw_pairs`, which checks the model's
    answers (the counts of each pair sum to the number asked, next states
    in ``0..S``, integer dtypes; not those of the ``sample_pairs`` of a
    :class:`TabularGenerativeModel`, correct by construction, see
    :meth:`TabularGenerativeModel._sample_checked`) and refuses, before drawing, a batch that
    would bring the calls made past ``2^63 - 1``. :attr:`calls_made` counts
    every call asked of the model, including those of a round lost when a
    run was killed before its checkpoint (see :meth:`track_calls`).
    """

    def __init__(self, n_states, n_actions, fingerprint=None):
        self.n_states = check_int("n_states", n_states, low=1)
        self.n_actions = check_int("n_actions", n_actions, low=1)
        if fingerprint is not None and not isinstance(fingerprint, dict):
            raise ParameterError(
                f"`fingerprint` must be a dict (see `model_fingerprint`) or None; got "
                f"{type(fingerprint).__name__}."
            )
        self.fingerprint = fingerprint
        self.context = ""
        shape = (self.n_states * self.n_actions, self.n_states + 1)
        self._csr = sp.csr_array(shape, dtype=np.int64)
        self._pending = []
        self._gamma_hat = None
        self._n_pair = np.zeros((self.n_states, self.n_actions), dtype=np.int64)
        self._calls_made = 0
        self._calls_redrawn = 0
        self._ledger = None
        self._loaded_from = None

    @property
    def n_pair(self):
        """Samples per pair ``N(s, a)``, int64 array of shape ``(S, A)`` (a copy)."""
        return self._n_pair.copy()

    @property
    def n_samples(self):
        """Total number of samples stored (an exact Python int)."""
        return exact_sum(self._n_pair)

    @property
    def calls_made(self):
        """Calls asked of models through this store, since the run began.

        Includes the calls of a batch interrupted midway (counted in full)
        and, after :meth:`load`, those a killed run made after its last
        checkpoint, as found in the calls ledger (:meth:`track_calls`).
        Equals :attr:`n_samples` plus :attr:`calls_redrawn` when every batch
        completed.
        """
        return self._calls_made

    @property
    def calls_redrawn(self):
        """Calls made by runs killed after their last checkpoint, whose samples were lost.

        The resumed run draws those samples again (the generator is restored
        to its state at the checkpoint), so these calls are made twice.
        """
        return self._calls_redrawn

    @property
    def Gamma_hat(self):
        """Largest empirical support ``Gamma_hat`` (counted over ``S'``), computed once per
        version of the counts."""
        csr = self.counts_csr()
        if self._gamma_hat is None or self._gamma_hat[0] is not csr:
            self._gamma_hat = (csr, int(np.diff(csr.indptr).max()))
        return self._gamma_hat[1]

    def check_model(self, model, where="the checkpoint"):
        """Raise unless ``model`` is the model whose samples this store holds.

        Parameters
        ----------
        model : GenerativeModel
            The model about to add samples.
        where : str, default "the checkpoint"
            How the store is named in the message (e.g. the file's path).

        Raises
        ------
        CheckpointError
            See :func:`compare_fingerprints`.
        """
        compare_fingerprints(self.fingerprint, model_fingerprint(model), where)

    def _where(self, pair):
        s, a = divmod(int(pair), self.n_actions)
        return f"the pair (s, a) = ({s}, {a})" + (f" in {self.context}" if self.context else "")

    def _merge(self, pairs, lengths, next_states, counts, totals, canonical=False):
        """Queue checked samples, in arrays the store owns: ``pairs[i]`` saw the next
        ``lengths[i]`` entries of ``next_states``, ``counts`` times each, ``totals[i]`` in all;
        ``canonical`` when they are known to be in canonical order (see :func:`_increment`)."""
        self._pending.append((pairs, lengths, next_states, counts, canonical))
        np.add.at(self._n_pair.reshape(-1), pairs, totals)

    def add(self, s, a, next_states, counts):
        """Merge samples of the pair ``(s, a)`` into the store.

        They count as calls (:attr:`calls_made`): samples obtained elsewhere,
        from as many calls.

        Parameters
        ----------
        s, a : int
            The pair.
        next_states : array_like of int, shape (k,)
            Next states in ``0..S`` (repeats are summed).
        counts : array_like of int, shape (k,)
            Their counts, ``>= 0``.
        """
        s, a = _check_pair(s, a, self.n_states, self.n_actions)
        next_states, counts = _check_samples(next_states, counts, self.n_states)
        total = exact_sum(counts)
        self._record_calls(check_call_budget(self._calls_made, total))
        self._merge(np.array([s * self.n_actions + a], dtype=np.int64),
                    np.array([next_states.size], dtype=np.int64), next_states.copy(),
                    counts.copy(), np.array([total], dtype=np.int64))

    def draw(self, model, s, a, n, rng):
        """Draw ``n`` samples of ``(s, a)`` from ``model`` and store them.

        Parameters
        ----------
        model : GenerativeModel
            Source of the samples (``n`` calls).
        s, a : int
            The pair.
        n : int
            Number of samples; nothing is drawn when ``n <= 0``.
        rng : numpy.random.Generator
            Passed to ``model.sample`` (or ``model.sample_pairs``, which
            makes the same draws).
        """
        s, a = _check_pair(s, a, self.n_states, self.n_actions)
        n = check_int("n", n)
        if n > 0:
            self.draw_pairs(model, [s * self.n_actions + a], n, rng)

    def draw_pairs(self, model, pairs, n, rng):
        """Draw ``n[i]`` samples of every pair ``pairs[i]``, in the order given, and store them.

        Uses ``model.sample_pairs`` (one call for all pairs, see
        :meth:`TabularGenerativeModel.sample_pairs`) when the model has it, and
        otherwise ``model.sample`` pair after pair (skipping ``n[i] = 0``);
        either way the model makes the same draws as :meth:`draw` called pair
        after pair. The samples are merged in one operation; when a pair
        fails, those of the pairs before it are kept.

        Parameters
        ----------
        model : GenerativeModel
            Source of the samples (``n.sum()`` calls).
        pairs : array_like of int, shape (m,)
            Flat pair indices ``s*A + a`` (rows of :meth:`counts_csr`).
        n : int or array_like of int, shape (m,)
            Samples per pair, ``>= 0``.
        rng : numpy.random.Generator
            Passed to the model.

        Raises
        ------
        TooLargeError
            Before drawing, if the calls made would pass ``2^63 - 1``.
        GenerativeModelError
            If the model raises (the original exception is the cause) or
            answers with anything but integer next states in ``0..S`` and
            non-negative integer counts summing to ``n[i]`` for every pair;
            the message names the pair and :attr:`context`.
        """
        pairs, n = _check_pairs(pairs, n, self.n_states, self.n_actions)
        self._draw(model, pairs, n, exact_sum(n), rng)

    def _draw(self, model, pairs, n, total, rng):
        """:meth:`draw_pairs` of ``pairs`` and ``n`` as :func:`_check_pairs` returns them,
        ``total`` samples in all."""
        if total == 0:
            return
        made = check_call_budget(self._calls_made, total)
        self._record_calls(made)
        sample_pairs = getattr(model, "sample_pairs", None)
        if getattr(sample_pairs, "__func__", None) is TabularGenerativeModel.sample_pairs:
            self._draw_tabular(model, pairs, n, rng)
            return
        if sample_pairs is not None:
            self._draw_batched(sample_pairs, pairs, n, rng)
            return
        drawn = []
        try:
            for pair, n_i in zip(pairs.tolist(), n.tolist()):
                if n_i > 0:
                    try:
                        answer = model.sample(*divmod(pair, self.n_actions), n_i, rng)
                    except Exception as exc:
                        raise self._model_raised(exc, f"sampling {self._where(pair)}") from exc
                    nxt, cnt = self._check_answer(answer, pair, n_i)
                    drawn.append((pair, nxt.size, nxt, cnt, n_i))
        finally:
            if drawn:
                pairs, lengths, next_states, counts, totals = zip(*drawn)
                self._merge(np.array(pairs, dtype=np.int64), np.array(lengths, dtype=np.int64),
                            np.concatenate(next_states), np.concatenate(counts),
                            np.array(totals, dtype=np.int64))

    def _draw_tabular(self, model, pairs, n, rng):
        """:meth:`_draw_batched` of the ``sample_pairs`` of a :class:`TabularGenerativeModel`
        (not overridden), whose answer the model makes correct (see
        :meth:`TabularGenerativeModel._sample_checked`): it is merged unchecked, and in
        canonical order when ``pairs`` ascend."""
        try:
            indptr, next_states, counts = model._sample_checked(pairs, n, rng)
        except Exception as exc:
            raise self._model_raised(exc, f"sampling {self._batch(pairs)}") from exc
        self._merge(pairs.copy(), np.diff(indptr), next_states, counts, n,
                    canonical=bool((pairs[1:] > pairs[:-1]).all()))

    def _batch(self, pairs):
        """How a message names a batch of ``pairs``: its size and its first pair."""
        return f"a batch of {pairs.size} pair(s) from {self._where(pairs[0])}"

    def _draw_batched(self, sample_pairs, pairs, n, rng):
        where = self._batch(pairs)
        try:
            answer = sample_pairs(pairs, n, rng)
            indptr, next_states, counts = answer
        except Exception as exc:
            raise self._model_raised(exc, f"sampling {where}") from exc
        indptr = _integer_answer(indptr, "indptr", where)
        next_states, counts = self._check_samples_answer(next_states, counts, where)
        lengths = np.diff(indptr) if indptr.ndim == 1 and indptr.size else np.array([-1])
        if (indptr.shape != (pairs.size + 1,) or indptr[0] != 0
                or indptr[-1] != counts.size or (lengths < 0).any()):
            raise GenerativeModelError(
                f"`sample_pairs` must return an `indptr` of shape ({pairs.size + 1},), "
                f"non-decreasing from 0 to {counts.size}; got {_listing(indptr.ravel())} for "
                f"{where}."
            )
        totals = np.diff(np.concatenate([[0], np.cumsum(counts)])[indptr])
        short = np.flatnonzero(totals != n)
        if short.size:
            i = int(short[0])
            got = int(totals[i])
            raise GenerativeModelError(
                f"the model returned {got} sample(s) where {int(n[i])} were asked, for "
                f"{self._where(pairs[i])}; the counts of every pair must sum to the number "
                "asked."
            )
        self._merge(pairs.copy(), lengths, next_states, counts, totals)

    def _model_raised(self, exc, what):
        if isinstance(exc, GenerativeModelError):
            return GenerativeModelError(f"{exc} (while {what})")
        return GenerativeModelError(
            f"the generative model raised {type(exc).__name__} while {what}: {exc}"
        )

    def _check_samples_answer(self, next_states, counts, where):
        next_states = _integer_answer(next_states, "next_states", where)
        counts = _integer_answer(counts, "counts", where)
        if next_states.ndim != 1 or next_states.shape != counts.shape:
            raise GenerativeModelError(
                f"the model must return `next_states` and `counts` as 1-d arrays of one "
                f"length; got shapes {next_states.shape} and {counts.shape} for {where}."
            )
        if next_states.size and (next_states.min() < 0 or next_states.max() > self.n_states):
            outside = next_states[(next_states < 0) | (next_states > self.n_states)]
            raise GenerativeModelError(
                f"the model returned next states outside 0..{self.n_states}: "
                f"{_listing(outside)}, for {where}."
            )
        if counts.size and counts.min() < 0:
            raise GenerativeModelError(
                f"the model returned negative counts {_listing(counts[counts < 0])} for {where}."
            )
        return next_states, counts

    def _check_answer(self, answer, pair, n):
        where = self._where(pair)
        try:
            next_states, counts = answer
        except (TypeError, ValueError):
            raise GenerativeModelError(
                f"`sample` must return a pair (next_states, counts); got "
                f"{type(answer).__name__} for {where}."
            ) from None
        next_states, counts = self._check_samples_answer(next_states, counts, where)
        got = exact_sum(counts)
        if got != n:
            raise GenerativeModelError(
                f"the model returned {got} sample(s) where {n} were asked, for {where}; the "
                "counts must sum to the number asked."
            )
        return next_states, counts

    def top_up(self, model, target, rng):
        """Bring every pair to at least ``target`` samples, pairs in order ``(s, a)``.

        One :meth:`draw_pairs` over the pairs below ``target``, each drawing
        ``target - N(s, a)`` (pairs and numbers the store made, so not checked
        again).

        Parameters
        ----------
        model : GenerativeModel
            Source of the samples.
        target : int
            Samples every pair must hold afterwards.
        rng : numpy.random.Generator
            Passed to the model.

        Returns
        -------
        int
            Number of samples drawn.

        Raises
        ------
        TooLargeError
            Before drawing, if the calls made would pass ``2^63 - 1``.
        """
        target = check_int("target", target)
        held = self._n_pair.reshape(-1)
        below = held < target if target <= INT64_MAX else np.ones(held.size, dtype=bool)
        need_total = target * int(below.sum()) - exact_sum(held[below])
        check_call_budget(self._calls_made, need_total)
        pairs = np.flatnonzero(below)
        self._draw(model, pairs, target - held[pairs], need_total, rng)
        return need_total

    def track_calls(self, path):
        """Record the calls made in a ledger next to the checkpoint ``path``, before each batch.

        The ledger ``path + ".calls"`` receives, before every batch is drawn,
        the calls made once it completes (8 bytes, fsync'ed); :meth:`save`
        empties it, since the checkpoint then holds the count. A run killed
        after its last checkpoint thus leaves the calls it made in the ledger,
        and :meth:`load` adds them to :attr:`calls_made` and
        :attr:`calls_redrawn`.

        Parameters
        ----------
        path : str or os.PathLike
            The checkpoint file. The ledger is kept if this store was loaded
            from ``path`` (a resumed run) and emptied otherwise (a new run),
            which also checks at once that the directory is writable.

        Raises
        ------
        OSError
            If the ledger cannot be created.
        """
        path = os.path.abspath(os.fspath(path))
        ledger = path + _LEDGER_SUFFIX
        if self._loaded_from != path:
            with open(ledger, "wb"):
                pass
        self._ledger = ledger

    def _record_calls(self, made):
        if self._ledger is not None:
            with open(self._ledger, "ab") as fh:
                fh.write(int(made).to_bytes(8, "little", signed=True))
                fh.flush()
                os.fsync(fh.fileno())
        self._calls_made = made

    def counts_csr(self):
        """Counts as a CSR matrix of shape ``(S*A, S+1)``, row ``s*A + a``.

        Returns
        -------
        scipy.sparse.csr_array of int64, shape (S*A, S+1)
            Only observed next states are stored, ascending per row. The
            store does not change it afterwards (a later :meth:`add` makes a
            new matrix); do not modify it.
        """
        if self._pending:
            batch = self._pending[0]
            if len(self._pending) > 1:
                *parts, _ = zip(*self._pending)
                batch = (*(np.concatenate(part) for part in parts), False)
            self._pending = []
            self._csr = _summed(self._csr, *_increment(*batch, self._csr.shape))
        return self._csr

    def count_table(self):
        """The counts as :func:`~reference._checks.count_table` returns them, unchecked.

        The same arrays, bit for bit, as ``count_table(store.counts_csr())``,
        without its checks: the store built its counts from answers it checked
        or that a :class:`TabularGenerativeModel` makes correct (next states in
        ``0..S``, integer counts ``>= 0``, at most ``2^63 - 1`` calls), so they
        hold nothing to refuse.

        Returns
        -------
        scipy.sparse.csr_array of float64, shape (S*A, S+1)
            Canonical (indices sorted, no duplicates, no explicit zeros), int64
            ``indptr`` and ``indices`` (shared with :meth:`counts_csr`: do not modify
            them); a new matrix at every call.
        """
        csr = self.counts_csr()
        return _with_arrays(csr, csr.indptr.astype(np.int64, copy=False),
                            csr.indices.astype(np.int64, copy=False),
                            csr.data.astype(np.float64))

    def counts_dense(self, max_bytes=DENSE_LIMIT_BYTES):
        """Counts as an int64 array of shape ``(S, A, S+1)``.

        Parameters
        ----------
        max_bytes : int, default DENSE_LIMIT_BYTES
            Largest array built (2 GiB by default).

        Returns
        -------
        ndarray of int64, shape (S, A, S+1)

        Raises
        ------
        TooLargeError
            If the array would exceed ``max_bytes``.
        """
        S, A = self.n_states, self.n_actions
        check_dense_size("dense counts", (S, A, S + 1), max_bytes, "use `counts_csr()`.")
        return self.counts_csr().toarray().reshape(S, A, S + 1)

    def save(self, path, rng, meta=None):
        """Write the counts, the generator's state and ``meta`` to ``path`` atomically.

        The file is written to ``path + ".tmp"``, flushed to disk (``fsync``)
        and renamed over ``path``; the directory is then synced, so a crash
        leaves either the old file or the new one. A stale ``.tmp`` of an
        interrupted save is overwritten.

        Parameters
        ----------
        path : str or os.PathLike
            Destination file (NumPy ``.npz`` format, whatever its suffix).
        rng : numpy.random.Generator
            Its ``bit_generator.state`` is saved, so drawing resumes exactly.
        meta : dict, optional
            JSON-serialisable data stored alongside (run parameters, history).
        """
        csr = self.counts_csr()
        header = {
            "format": CHECKPOINT_FORMAT,
            "n_states": self.n_states,
            "n_actions": self.n_actions,
            "fingerprint": self.fingerprint,
            "calls_made": self._calls_made,
            "calls_redrawn": self._calls_redrawn,
            "rng_state": rng.bit_generator.state,
            "meta": meta or {},
        }
        path = os.path.abspath(os.fspath(path))
        tmp = path + _TMP_SUFFIX
        try:
            with open(tmp, "wb") as fh:
                np.savez(
                    fh,
                    header=np.array(json.dumps(header, default=_jsonable)),
                    indptr=csr.indptr.astype(np.int64),
                    indices=csr.indices.astype(np.int64),
                    data=csr.data.astype(np.int64),
                    n_pair=self._n_pair.reshape(-1),
                )
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
        _sync_directory(os.path.dirname(path))
        if self._ledger == path + _LEDGER_SUFFIX:
            with open(self._ledger, "wb"):
                pass

    @classmethod
    def load(cls, path):
        """Read a file written by :meth:`save`, checked as strictly as user input.

        A stale ``path + ".tmp"`` left by a save that was killed is removed,
        and calls recorded in the ledger ``path + ".calls"`` beyond those the
        file holds (a round lost before its checkpoint) are added to
        :attr:`calls_made` and :attr:`calls_redrawn`.

        Parameters
        ----------
        path : str or os.PathLike
            The file.

        Returns
        -------
        store : SampleStore
            The counts, the fingerprint and the calls made.
        rng : numpy.random.Generator
            A generator in the saved state.
        meta : dict
            The saved ``meta``.

        Raises
        ------
        CheckpointError
            If the file is not one :meth:`save` writes in the current format
            (:data:`CHECKPOINT_FORMAT`), or its header or arrays are malformed:
            sizes, dtypes, shapes, an ``indptr`` not starting at 0 or
            decreasing, next states outside ``0..S``, negative counts,
            per-pair totals disagreeing with the saved ``N(s, a)``, fewer calls
            than samples, or a generator state numpy refuses.
        OSError
            If the file cannot be read (missing, a directory, no permission).
        """
        path = os.path.abspath(os.fspath(path))
        where = f"`checkpoint` {path!r}"
        if os.path.exists(path + _TMP_SUFFIX):
            os.remove(path + _TMP_SUFFIX)
        header, arrays = _read_archive(path, where)
        S, A = (_header_int(header, key, where, low=1) for key in ("n_states", "n_actions"))
        indptr, indices, data, n_pair = arrays
        if indptr.shape != (S * A + 1,) or n_pair.shape != (S * A,):
            raise CheckpointError(
                f"{where} is malformed: with S = {S} and A = {A}, `indptr` must have shape "
                f"({S * A + 1},) and `n_pair` shape ({S * A},); got {indptr.shape} and "
                f"{n_pair.shape}."
            )
        store = cls(S, A)
        try:
            csr = _checked_counts(indptr, indices, data, (S * A, S + 1))
        except SSPValueError as exc:
            raise CheckpointError(f"{where} is malformed: {exc}") from None
        totals = np.bincount(np.repeat(np.arange(S * A), np.diff(csr.indptr)),
                             weights=csr.data.astype(np.float64), minlength=S * A)
        if (totals > INT64_MAX).any() or (n_pair < 0).any():
            raise CheckpointError(f"{where} is malformed: some pair holds a negative count or "
                                  "more than 2^63 - 1 samples.")
        row_sums = np.asarray(csr.sum(axis=1)).ravel()
        bad = np.flatnonzero(row_sums != n_pair)
        if bad.size:
            s, a = divmod(int(bad[0]), A)
            raise CheckpointError(
                f"{where} is malformed: the counts of the pair (s, a) = ({s}, {a}) sum to "
                f"{int(row_sums[bad[0]])}, but the file records N(s, a) = {int(n_pair[bad[0]])}."
            )
        store._csr = csr
        store._n_pair = n_pair.reshape(S, A).copy()
        made = _header_int(header, "calls_made", where, low=0)
        redrawn = _header_int(header, "calls_redrawn", where, low=0)
        if made > INT64_MAX or made < store.n_samples + redrawn:
            raise CheckpointError(
                f"{where} is malformed: it records {made} calls made ({redrawn} redrawn) for "
                f"{store.n_samples} samples."
            )
        lost = max(0, _read_ledger(path + _LEDGER_SUFFIX, where) - made)
        store._calls_made = made + lost
        store._calls_redrawn = redrawn + lost
        fingerprint = header.get("fingerprint")
        if fingerprint is not None and not isinstance(fingerprint, dict):
            raise CheckpointError(f"{where} is malformed: its model fingerprint is not a dict.")
        store.fingerprint = fingerprint
        meta = header.get("meta")
        if not isinstance(meta, dict):
            raise CheckpointError(f"{where} is malformed: its `meta` is not a dict.")
        store._loaded_from = path
        try:
            rng = load_rng_state(header.get("rng_state"))
        except ParameterError as exc:
            raise CheckpointError(f"{where} is malformed: {exc}") from None
        return store, rng, meta


_TMP_SUFFIX = ".tmp"
_LEDGER_SUFFIX = ".calls"
_ARRAYS = ("indptr", "indices", "data", "n_pair")
_BIT_GENERATORS = {
    name: getattr(np.random, name) for name in ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
}


def _integer_answer(values, name, where):
    """A model's answer ``values`` as an int64 array, refusing non-integer dtypes."""
    array = np.asarray(values)
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise GenerativeModelError(
            f"the model must return integer `{name}`; got dtype {array.dtype} for {where}."
        )
    if array.dtype == np.uint64 and array.size and array.max() > INT64_MAX:
        raise GenerativeModelError(f"the model returned `{name}` above 2^63 - 1 for {where}.")
    return array.astype(np.int64)


def _read_archive(path, where):
    """The header dict and the four int64 arrays of a store file, or a CheckpointError."""
    try:
        archive = np.load(path, allow_pickle=False)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as exc:
        raise CheckpointError(
            f"{where} is not a sample-store file ({type(exc).__name__}: {exc})."
        ) from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise CheckpointError(f"{where} is not a sample-store file (a single array, not .npz).")
    with archive:
        missing = [key for key in ("header",) + _ARRAYS if key not in archive.files]
        if "header" in missing:
            raise CheckpointError(f"{where} is not a sample-store file (no header).")
        try:
            header = json.loads(str(archive["header"][()]))
        except Exception as exc:
            raise CheckpointError(
                f"{where} has an unreadable header ({type(exc).__name__}: {exc})."
            ) from None
        if not isinstance(header, dict):
            raise CheckpointError(f"{where} has a malformed header (not a JSON object).")
        if header.get("format") != CHECKPOINT_FORMAT:
            raise CheckpointError(
                f"{where} is in format {header.get('format', 1)!r}, written by an earlier "
                f"sspgm without a model fingerprint or a calls count; this version reads "
                f"format {CHECKPOINT_FORMAT} only. Delete the file to start the run afresh."
            )
        if missing:
            raise CheckpointError(f"{where} is malformed: it lacks the arrays {missing}.")
        arrays = []
        for key in _ARRAYS:
            try:
                array = archive[key]
            except Exception as exc:
                raise CheckpointError(
                    f"{where} is corrupt: its array `{key}` cannot be read "
                    f"({type(exc).__name__}: {exc})."
                ) from None
            arrays.append(check_int64_array(f"{where} is malformed: `{key}`", array,
                                            CheckpointError))
    return header, arrays


def _header_int(header, key, where, low):
    value = header.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise CheckpointError(
            f"{where} is malformed: its header must give `{key}` as an integer >= {low}; got "
            f"{value!r}."
        )
    return value


def _increment(pairs, lengths, cols, counts, canonical, shape):
    """The canonical CSR arrays of queued samples, summed: ``pairs[i]`` saw the next
    ``lengths[i]`` entries of ``cols``, ``counts`` times each.

    Samples in canonical order (pairs strictly ascending, columns strictly
    ascending within a pair, no zero count), as a top-up queues them, give the
    arrays directly (``cols`` and ``counts`` are kept, not copied); they are
    checked for it unless ``canonical`` says so already. Others go
    through :class:`scipy.sparse.coo_array`, which sums repeated entries, and
    zero counts are left out. Both give the arrays of one matrix: int64 data,
    canonical.

    Parameters
    ----------
    pairs, lengths : ndarray of int64, shape (m,)
        ``0 <= pairs < shape[0]``, ``lengths >= 0`` summing to ``k``.
    cols, counts : ndarray of int64, shape (k,)
        ``0 <= cols < shape[1]``, ``counts >= 0``.
    canonical : bool
        Whether the samples are known to be in canonical order.
    shape : tuple of int
        ``(M, N)``.

    Returns
    -------
    indptr : ndarray, shape (M + 1,)
    indices, data : ndarray, shape (nnz,)
        ``data`` int64; the index arrays int64 (canonical order) or as scipy builds them.
    """
    if canonical or _in_canonical_order(pairs, lengths, cols, counts):
        indptr = np.zeros(shape[0] + 1, dtype=np.int64)
        indptr[pairs + 1] = lengths
        return np.cumsum(indptr, out=indptr), cols, counts
    rows = np.repeat(pairs, lengths)
    seen = counts > 0
    csr = sp.coo_array((counts[seen], (rows[seen], cols[seen])), shape=shape).tocsr()
    return csr.indptr, csr.indices, csr.data


def _in_canonical_order(pairs, lengths, cols, counts):
    """Whether queued samples (as :func:`_increment` takes them) are in canonical order."""
    ends = np.cumsum(lengths)
    rising = cols[1:] > cols[:-1]
    rising[ends[(ends > 0) & (ends < cols.size)] - 1] = True
    return bool(counts.all() and rising.all() and (pairs[1:] > pairs[:-1]).all())


def _summed(csr, indptr, indices, data):
    """``csr`` plus the canonical CSR arrays of an increment: scipy's sum, array for array.

    Two sums need no sparse addition: onto no counts (the increment is the sum),
    and of an increment storing exactly the entries of ``csr`` (every pair saw
    again exactly the next states it had seen, as the large top-ups of SEARCH do
    once the supports are found), whose counts then add on the structure of
    ``csr``. Each is taken only when the arrays it keeps have the index dtype of
    scipy's sum, the wider of the two.
    """
    wider = np.promote_types(csr.indices.dtype, indices.dtype)
    if not csr.nnz and indices.dtype == wider:
        return _built(csr, indptr, indices, data)
    if (csr.indices.dtype == wider and np.array_equal(csr.indptr, indptr)
            and np.array_equal(csr.indices, indices)):
        return _with_arrays(csr, csr.indptr, csr.indices, csr.data + data)
    return csr + _built(csr, indptr, indices, data)


def _built(like, indptr, indices, data):
    """``scipy.sparse.csr_array((data, indices, indptr), shape=like.shape)`` of canonical
    arrays, ``like`` canonical too: int64 index arrays, which the constructor keeps as they
    are, by :func:`_with_arrays`; others by the constructor."""
    if indptr.dtype == indices.dtype == np.int64:
        return _with_arrays(like, indptr, indices, data)
    return sp.csr_array((data, indices, indptr), shape=like.shape)


def _with_arrays(csr, indptr, indices, data):
    """A shallow copy of the canonical ``csr`` holding the canonical arrays given instead of
    its own, as ``scipy.sparse.csr_array(csr)`` and setting them would give, without the
    constructor's checks: the store made the arrays, so they hold nothing to refuse, and
    the flags ``csr`` may have cached (sorted and canonical indices) are true of them too."""
    out = copy.copy(csr)
    out.indptr, out.indices, out.data = indptr, indices, data
    return out


def _checked_counts(indptr, indices, data, shape):
    """Saved counts as canonical int64 CSR after the checks of user-given sparse counts."""
    if (data < 0).any():
        k = int(np.flatnonzero(data < 0)[0])
        raise ParameterError(f"`data` must hold counts >= 0; got {int(data[k])} at entry {k}.")
    check_sparse_structure("counts", _RawCSR(indptr, indices, data, shape))
    nnz = int(indptr[-1])
    csr = sp.csr_array((data[:nnz], indices[:nnz], indptr), shape=shape)
    csr.sum_duplicates()
    csr.eliminate_zeros()
    return csr


class _RawCSR:
    """The raw arrays of a CSR matrix, for :func:`check_sparse_structure` to read unbuilt."""

    format = "csr"

    def __init__(self, indptr, indices, data, shape):
        self.indptr, self.indices, self.data, self.shape = indptr, indices, data, shape
        self.dtype = data.dtype


def _read_ledger(ledger, where):
    """The last complete record of a calls ledger (0 when there is none)."""
    try:
        with open(ledger, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return 0
    complete = len(raw) - len(raw) % 8
    if not complete:
        return 0
    last = int.from_bytes(raw[complete - 8:complete], "little", signed=True)
    if last < 0:
        raise CheckpointError(f"the calls ledger of {where} is corrupt (a negative count).")
    return last


def _sync_directory(directory):
    """``fsync`` a directory so that a rename in it is durable (a no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot save a {type(value).__name__} in a sample-store file")


def load_rng_state(state):
    """Return a :class:`numpy.random.Generator` whose bit generator is in ``state``.

    Parameters
    ----------
    state : dict
        A ``rng.bit_generator.state`` dictionary (it names its bit generator,
        one of numpy's ``PCG64``, ``PCG64DXSM``, ``MT19937``, ``Philox``,
        ``SFC64``).

    Returns
    -------
    numpy.random.Generator
        Its next draws are those the saved generator would have made.

    Raises
    ------
    ParameterError
        If ``state`` is not such a dictionary or numpy refuses it.
    """
    name = state.get("bit_generator") if isinstance(state, dict) else None
    if name not in _BIT_GENERATORS:
        raise ParameterError(
            f"the generator state must be a dict naming one of {sorted(_BIT_GENERATORS)} as "
            f"`bit_generator`; got {name!r}."
        )
    bit_generator = _BIT_GENERATORS[name]()
    try:
        bit_generator.state = state
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise ParameterError(
            f"the saved {name} state is malformed ({type(exc).__name__}: {exc})."
        ) from None
    return np.random.Generator(bit_generator)
