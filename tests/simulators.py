"""Simulators for the parallel generative model's tests, importable by worker processes, and
the helpers its tests share."""

import os

import numpy as np

import reference


class WalkStep:
    """A ``step(s, a, rng)``: one uniform per call, ``s + 1`` with
    probability ``p`` (action 0) or ``p / 2`` (other actions), else ``s``."""

    def __init__(self, p=0.8):
        self.p = p

    def __call__(self, s, a, rng):
        return s + 1 if rng.random() < (self.p if a == 0 else self.p / 2) else s


class DieOnce:
    """A ``step_batch`` that ends its worker process at its first call in a process other
    than the one that made it, once (a marker file records it), then behaves as ``inner``."""

    def __init__(self, inner, marker, always=False):
        self.inner, self.marker, self.always = inner, os.fspath(marker), always
        self.driver = os.getpid()

    def __call__(self, s, a, n, rng):
        if os.getpid() != self.driver:
            if self.always:
                os._exit(3)
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                os._exit(3)
        return self.inner(s, a, n, rng)


class RaiseAt:
    """A ``step_batch`` raising ``ValueError`` for the pair ``(s, a)``."""

    def __init__(self, inner, s, a):
        self.inner, self.s, self.a = inner, s, a

    def __call__(self, s, a, n, rng):
        if (s, a) == (self.s, self.a):
            raise ValueError(f"no dynamics at ({s}, {a})")
        return self.inner(s, a, n, rng)


def chain_simulator(n_states=3):
    """The ``step_batch`` of ``reference.chain(n_states)`` and the instance."""
    ssp = reference.chain(n_states, p=0.8)
    return reference.KernelSimulator(ssp), ssp


def reference_draws(simulator, s, a, n, n_actions, word, block_size, repeat=0):
    """The next states of the ``repeat``-th request entry of ``(s, a)`` by the documented
    scheme, written out with numpy's Philox: block ``b`` on key ``(word, s*A + a)`` and
    counter ``(0, 0, b, repeat)``."""
    pair = s * n_actions + a
    draws = [np.zeros(0, dtype=np.int64)]
    for b in range(-(-n // block_size)):
        bit_generator = np.random.Philox(key=np.array([word, pair], dtype=np.uint64),
                                         counter=np.array([0, 0, b, repeat], dtype=np.uint64))
        length = min(block_size, n - b * block_size)
        draws.append(np.asarray(simulator(s, a, length, np.random.Generator(bit_generator))))
    return np.concatenate(draws)


ALGORITHMS = {
    "solve": lambda b, model, ssp, **kw: b.solve(model, ssp.costs, 0.2, 0.1, seed=0, **kw),
    "solve_certified": lambda b, model, ssp, **kw: b.solve_certified(model, ssp.costs, 0.2, 0.1,
                                                                     seed=0, **kw),
    "estimate_diameter": lambda b, model, ssp, **kw: b.estimate_diameter(model, 0.5, 0.1,
                                                                         seed=0, **kw),
    "plug_in": lambda b, model, ssp, **kw: b.plug_in(model, ssp.costs, 1000, seed=0),
}
"""The algorithms run on a model of ``chain_simulator()`` by the tests (name -> call)."""


def same(a, b):
    """Assert two results are equal field by field (arrays bit for bit), ``seconds`` aside."""
    if isinstance(a, reference.results.Record):
        assert type(a) is type(b) and list(a.keys()) == list(b.keys())
        for key in a.keys():
            if key != "seconds":
                same(a[key], b[key])
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    elif hasattr(a, "toarray"):
        same(a.toarray(), b.toarray())
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b)
    else:
        assert a == b


class Stop(Exception):
    """Raised by the callback of :func:`stop_after`."""


def stop_after(k):
    """A callback raising :class:`Stop` at the ``k``-th round (a run killed after it)."""
    seen = []

    def callback(round_):
        seen.append(round_)
        if len(seen) == k:
            raise Stop

    return callback


def _load_unless_on_a_worker(driver):
    if os.getpid() != driver:
        raise ModuleNotFoundError("No module named 'private_simulator'")
    return UnloadableOnWorkers()


class UnloadableOnWorkers:
    """A ``step_batch`` whose pickle loads in the process that made it and fails in any
    other, as a simulator whose module the workers lack."""

    def __init__(self):
        self.driver = os.getpid()

    def __reduce__(self):
        return _load_unless_on_a_worker, (self.driver,)

    def __call__(self, s, a, n, rng):
        return np.full(n, s)


class KilledAfter:
    """A tabular model that is interrupted right after its ``k``-th batch of samples."""

    def __init__(self, backend, ssp, k):
        self.inner = backend.TabularGenerativeModel(ssp)
        self.n_states, self.n_actions = ssp.n_states, ssp.n_actions
        self.k = k
        self.batches = 0
        self.drawn = 0

    @property
    def fingerprint(self):
        return self.inner.fingerprint

    def sample_pairs(self, pairs, n, rng):
        out = self.inner.sample_pairs(pairs, n, rng)
        self.batches += 1
        self.drawn += int(np.sum(n))
        if self.batches == self.k:
            raise KeyboardInterrupt
        return out

    def sample(self, s, a, n, rng):
        raise AssertionError("the store draws in batches")
