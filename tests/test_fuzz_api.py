"""Fuzzing every public function that takes counts, a model, a path or a number.

The functions are found from the ``__all__`` of ``reference``, ``fast``, ``bounds`` and
``sspgm.validation`` by their signatures: a parameter is *counts* (``counts``), a *model*
(``model``, ``ssp``), a *path* (``checkpoint``, ``path``, ``csv_path``) or a *number* (an
``int``/``float`` default, or a name of :data:`NUMBER_NAMES`). Each example calls one function
with valid values (:data:`EXAMPLES`, by parameter name) except for one or two of those
parameters, given a hostile value of their kind. A function with a required parameter that
has no example is not fuzzed (:func:`targets` lists it).

Each example ends in one outcome (:func:`outcome`):

- ``crash``: the interpreter died; ``hang``: the call ran past :data:`CALL_SECONDS`;
- ``raw``: an exception other than sspgm's own (:class:`reference.errors.SSPValueError`,
  :class:`reference.errors.ConvergenceError`, :class:`bounds.ParameterError`) or an
  ``OSError`` naming a file;
- ``wrong``: a return with NaN in the result, or after a value no function accepts (NaN, a
  string or a complex number for a number), or a file behind a planted link changed;
- ``error``: a clear error of sspgm's; ``ok``: a return.

The examples run in subprocesses (a crash or a hang stays there; :mod:`faulthandler` ends a
call that hangs, even inside compiled code), which write one line per example; the test
asserts no ``crash``, ``hang``, ``raw`` or ``wrong``. ``test_fuzz_public_api`` runs about a
minute of CPU; ``test_fuzz_public_api_long`` (``slow``) many more examples.
"""

import collections
import importlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, seed, settings
from hypothesis import strategies as st

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ("reference", "fast", "bounds", "sspgm.validation")
CALL_SECONDS = 60
OUTCOMES = ("crash", "hang", "raw", "wrong", "error", "ok")

COUNTS_NAMES = {"counts"}
MODEL_NAMES = {"model", "ssp"}
PATH_NAMES = {"checkpoint", "path", "csv_path"}
NUMBER_NAMES = {
    "eps", "delta", "theta", "alpha", "mu", "X", "y", "n_states", "n_actions", "Gamma_hat",
    "branching", "n_per_pair", "budget", "seed", "n", "p_hat", "level", "max_iter", "tol",
    "n_jobs", "gamma", "max_bytes", "max_policies", "D", "B", "cmin", "S", "A", "Gamma", "W",
    "Delta", "D_hat",
}


def _ssp():
    import reference

    return reference.chain(2, 0.8)


def _counts():
    counts = np.zeros((2, 2, 3))
    counts[:, :, 0] = 3
    counts[:, :, 2] = 5
    counts[1, 1, 1] = 2
    return counts


EXAMPLES = {
    "P": lambda: _ssp().P, "c": lambda: _ssp().costs, "ssp": _ssp, "model": _ssp,
    "costs": lambda: np.full((2, 2), 0.5), "policy": lambda: np.zeros(2, dtype=np.int64),
    "counts": _counts, "delta": lambda: 0.1, "eps": lambda: 0.5, "mu": lambda: 0.1,
    "theta": lambda: 2.0, "X": lambda: 2.0, "y": lambda: 0.5, "Gamma_hat": lambda: 2,
    "n_states": lambda: 2, "n_actions": lambda: 2, "branching": lambda: 2,
    "n_per_pair": lambda: 5, "step": lambda: (lambda s, a, rng: 2),
    "store": lambda: importlib.import_module("reference").SampleStore(2, 2),
    "rng": lambda: np.random.default_rng(0), "state": lambda: np.random.default_rng(0)
    .bit_generator.state, "p_hat": lambda: 0.3, "n": lambda: 10.0, "level": lambda: 2.0,
    "path": lambda: os.path.join(tempfile.mkdtemp(), "file"),
    "D": lambda: 4.0, "B": lambda: 3.0, "cmin": lambda: 0.5, "S": lambda: 2, "A": lambda: 2,
    "Gamma": lambda: 2, "W": lambda: 4.0, "Delta": lambda: 2.0, "D_hat": lambda: 4.0,
    "budget": lambda: 4000,
}
"""A valid value of each parameter name (as its functions take it), fresh at each call."""


def _kind(name, parameter):
    if name in COUNTS_NAMES:
        return "counts"
    if name in MODEL_NAMES:
        return "model"
    if name in PATH_NAMES:
        return "path"
    default = parameter.default
    if name in NUMBER_NAMES or (isinstance(default, (int, float)) and not isinstance(default,
                                                                                   bool)):
        return "number"
    return None


def targets(module_name):
    """``(fuzzed, skipped)``: the public callables of ``module_name`` with a fuzzable parameter,
    as ``(name, {parameter: kind}, required names)``, and those lacking an example (name,
    missing parameter)."""
    from reference.results import Record

    module = importlib.import_module(module_name)
    fuzzed, skipped = [], []
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isclass(obj):
            if issubclass(obj, (BaseException, Record)) or getattr(obj, "_is_protocol", False):
                continue
            if obj.__module__.startswith("reference.backend"):
                continue
        elif not callable(obj):
            continue
        try:
            signature = inspect.signature(obj)
        except (TypeError, ValueError):
            continue
        params = signature.parameters
        kinds = {p: _kind(p, params[p]) for p in params if _kind(p, params[p])}
        if not kinds:
            continue
        required = [p for p in params if params[p].default is inspect.Parameter.empty
                    and params[p].kind is not inspect.Parameter.VAR_KEYWORD
                    and params[p].kind is not inspect.Parameter.VAR_POSITIONAL]
        missing = [p for p in required if p not in EXAMPLES]
        if missing:
            skipped.append((name, missing[0]))
        else:
            fuzzed.append((name, kinds, required))
    return fuzzed, skipped


# --- hostile values --------------------------------------------------------------------------

_NUMBERS = [float("nan"), float("inf"), -float("inf"), 0, -1, -0.0, 5e-324, 1e-300, 1e308,
            10**30, 2**63, -(2**63), 1.5, 0.999999999, "1", None, True, complex(0.5, 0),
            np.float32(0.5), np.int8(-3), [1, 2], 10**400]


@st.composite
def _hostile_counts(draw):
    S, A = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    dense = np.array(draw(st.lists(st.integers(0, 6), min_size=S * A * (S + 1),
                                   max_size=S * A * (S + 1))), dtype=np.float64)
    dense = dense.reshape(S, A, S + 1)
    how = draw(st.sampled_from(["value", "dtype", "shape", "csr", "csr-structure"]))
    if how == "value":
        dense.flat[draw(st.integers(0, dense.size - 1))] = draw(st.sampled_from(
            [np.nan, np.inf, -1.0, 1e300, 2.0**62, 0.5, -0.0, 5e-324]))
        return dense
    if how == "dtype":
        return dense.astype(draw(st.sampled_from([np.complex128, object, np.int8, np.uint64,
                                                  np.float32, bool])))
    if how == "shape":
        return draw(st.sampled_from([dense[:, :, :-1], dense[..., None], dense.ravel(),
                                     np.zeros((0, 1, 1)), dense.tolist(), "counts", None]))
    csr = sp.csr_array(dense.reshape(S * A, S + 1))
    if how == "csr":
        data = csr.data.copy()
        if data.size:
            data[draw(st.integers(0, data.size - 1))] = draw(st.sampled_from(
                [np.nan, -2.0, 1e300, 2.0**63, 0.0]))
        return sp.csr_array((data, csr.indices.copy(), csr.indptr.copy()), shape=csr.shape)
    indptr, indices = csr.indptr.astype(np.int64), csr.indices.astype(np.int64)
    part = draw(st.sampled_from(["indices", "indptr"]))
    array = indices if part == "indices" else indptr
    if array.size:
        array[draw(st.integers(0, array.size - 1))] = draw(st.sampled_from(
            [-(2**31), -5, -1, S + 1, 10**6, 2**40]))
    raw = sp.csr_array(csr.shape, dtype=np.float64)
    raw.indptr, raw.indices, raw.data = indptr, indices, csr.data.copy()
    return raw


class _RaisingModel:
    n_states, n_actions = 2, 2

    def sample(self, s, a, n, rng):
        raise FloatingPointError("the simulator broke")


class _LyingModel:
    n_states, n_actions = 2, 2

    def __init__(self, answer):
        self.answer = answer

    def sample(self, s, a, n, rng):
        return self.answer(n)


def _odd_sizes(n_states):
    class Model:
        n_actions = 2

        def sample(self, s, a, n, rng):
            return np.array([0]), np.array([n])

    Model.n_states = n_states
    return Model()


_MODELS = [
    lambda: 42, lambda: None, lambda: "model", lambda: object(),
    lambda: importlib.import_module("reference").chain(3, 0.5), _RaisingModel,
    lambda: _LyingModel(lambda n: (np.array([5]), np.array([n]))),
    lambda: _LyingModel(lambda n: (np.array([0.5]), np.array([n]))),
    lambda: _LyingModel(lambda n: (np.array([0]), np.array([n + 1]))),
    lambda: _LyingModel(lambda n: None),
    lambda: _odd_sizes(0), lambda: _odd_sizes(-1), lambda: _odd_sizes(10**12),
    lambda: _odd_sizes(float("nan")), lambda: _odd_sizes("2"),
]


def _paths(kind, directory):
    victim = os.path.join(directory, "victim")
    with open(victim, "w") as fh:
        fh.write("precious")
    target = os.path.join(directory, "target")
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        os.mkdir(target)
    elif kind == "device":
        target = "/dev/null"
    elif kind == "link-to-victim":
        os.symlink(victim, target)
    elif kind == "links-beside":
        for suffix in (".calls", ".tmp", ".lock"):
            os.symlink(victim, target + suffix)
    elif kind == "garbage":
        with open(target, "wb") as fh:
            fh.write(os.urandom(300) + b"\n")
    elif kind == "huge-cell":
        with open(target, "wb") as fh:
            fh.write(b"a,b\n\"" + b"x" * 200_000 + b"\"\n")
    elif kind == "missing-directory":
        target = os.path.join(directory, "nowhere", "file")
    return target, victim


_PATH_KINDS = ["fifo", "directory", "device", "link-to-victim", "links-beside", "garbage",
               "huge-cell", "missing-directory"]


def _hostile(kind):
    if kind == "number":
        return st.one_of(st.sampled_from(range(len(_NUMBERS))).map(lambda i: ("n", i)),
                         st.floats(allow_nan=False).map(lambda v: ("f", v)),
                         st.integers(-(2**70), 2**70).map(lambda v: ("i", v)))
    if kind == "counts":
        return _hostile_counts().map(lambda v: ("c", v))
    if kind == "model":
        return st.sampled_from(range(len(_MODELS))).map(lambda i: ("m", i))
    return st.sampled_from(_PATH_KINDS).map(lambda v: ("p", v))


def _materialise(token, directory):
    tag, value = token
    if tag == "n":
        return _NUMBERS[value], None
    if tag in ("f", "i", "c"):
        return value, None
    if tag == "m":
        return _MODELS[value](), None
    return _paths(value, directory)


def _describe(token):
    tag, value = token
    if tag == "n":
        return repr(_NUMBERS[value])
    if tag == "m":
        return f"model #{value}"
    if tag == "p":
        return f"path: {value}"
    if tag == "c":
        if sp.issparse(value):
            return f"CSR {value.shape} indices {value.indices.tolist()} indptr " \
                   f"{value.indptr.tolist()} data {value.data.tolist()}"
        return f"counts {getattr(value, 'shape', type(value).__name__)}"
    return repr(value)


def _invalid_everywhere(token):
    if token[0] != "n":
        return False
    value = _NUMBERS[token[1]]
    return isinstance(value, (str, complex)) or (isinstance(value, float) and value != value)


def _has_nan(result):
    values = []
    if isinstance(result, tuple):
        for item in result:
            values.append(item)
    elif hasattr(result, "keys") and hasattr(result, "__getitem__"):
        try:
            values = [result[k] for k in result.keys()]
        except Exception:
            values = []
    else:
        values = [result]
    for value in values:
        if isinstance(value, float) and value != value:
            return True
        if isinstance(value, np.ndarray) and value.dtype.kind == "f" and np.isnan(value).any():
            return True
    return False


def outcome(function, kwargs, tokens, victims):
    """Call ``function(**kwargs)`` and classify the result (module docstring)."""
    from bounds import ParameterError as BoundsParameterError
    from reference.errors import ConvergenceError, SSPValueError

    try:
        result = function(**kwargs)
    except (SSPValueError, ConvergenceError, BoundsParameterError):
        return "error", ""
    except OSError as exc:
        if exc.filename is not None:
            return "error", ""
        return "raw", f"{type(exc).__name__}: {exc}"
    except Exception as exc:
        return "raw", f"{type(exc).__name__}: {str(exc)[:300]}"
    for victim in victims:
        with open(victim) as fh:
            if fh.read() != "precious":
                return "wrong", "a file behind a planted link changed"
    for name, token in tokens.items():
        if _invalid_everywhere(token):
            return "wrong", f"accepted {name} = {_describe(token)}"
    if _has_nan(result):
        return "wrong", "NaN in the result"
    return "ok", ""


def run_examples(module_name, max_examples, seed_value, out_path):
    """Run the examples of ``module_name`` in this process, one JSON line each to ``out_path``;
    the files they make go to ``out_path``'s directory, which the caller removes."""
    import faulthandler
    import warnings

    warnings.simplefilter("ignore")
    tempfile.tempdir = os.path.dirname(out_path)
    module = importlib.import_module(module_name)
    fuzzed, _ = targets(module_name)
    out = open(out_path, "a", buffering=1)

    @st.composite
    def case(draw):
        name, kinds, required = draw(st.sampled_from(fuzzed))
        chosen = draw(st.lists(st.sampled_from(sorted(kinds)), min_size=1, max_size=2,
                               unique=True))
        return name, required, {p: draw(_hostile(kinds[p])) for p in chosen}

    @seed(seed_value)
    @settings(max_examples=max_examples, deadline=None, database=None, derandomize=False)
    @given(example=case())
    def check(example):
        name, required, tokens = example
        function = getattr(module, name)
        params = inspect.signature(function).parameters
        directory = tempfile.mkdtemp()
        kwargs = {p: EXAMPLES[p]() for p in required}
        if "budget" in params and "budget" not in tokens:
            kwargs["budget"] = 4000
        if "checkpoint" in params and "checkpoint" not in tokens:
            kwargs["checkpoint"] = None
        victims = []
        for p, token in tokens.items():
            kwargs[p], victim = _materialise(token, directory)
            if victim is not None:
                victims.append(victim)
        line = {"fn": name, "args": {p: _describe(t) for p, t in tokens.items()}}
        out.write(json.dumps({"start": line}) + "\n")
        faulthandler.dump_traceback_later(CALL_SECONDS, exit=True)
        try:
            got, detail = outcome(function, kwargs, tokens, victims)
        finally:
            faulthandler.cancel_dump_traceback_later()
        out.write(json.dumps({"end": got, "detail": detail}) + "\n")

    check()
    out.write(json.dumps({"done": True}) + "\n")


def fuzz(module_name, max_examples, seed_value=0, restarts=5):
    """Run the examples in subprocesses (restarted after a crash or hang, with a new seed);
    return the list of ``(outcome, function, arguments, detail)``."""
    records = []
    with tempfile.TemporaryDirectory() as directory:
        out_path = os.path.join(directory, "out.jsonl")
        left = max_examples
        for attempt in range(restarts):
            open(out_path, "w").close()
            code = textwrap.dedent(f"""
                import sys
                sys.path.insert(0, "tests")
                import test_fuzz_api
                test_fuzz_api.run_examples({module_name!r}, {left}, {seed_value + attempt},
                                           {out_path!r})
            """)
            proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                                  text=True, timeout=CALL_SECONDS * max(10, left))
            lines = [json.loads(x) for x in open(out_path).read().splitlines() if x.strip()]
            pending = None
            for line in lines:
                if "start" in line:
                    pending = line["start"]
                elif "end" in line:
                    records.append((line["end"], pending["fn"], pending["args"], line["detail"]))
                    pending = None
            if any("done" in line for line in lines):
                break
            if pending is not None:
                kind = "hang" if "Timeout" in proc.stderr else "crash"
                records.append((kind, pending["fn"], pending["args"],
                                f"exit {proc.returncode}: {proc.stderr[-500:]}"))
            elif proc.returncode != 0:
                raise AssertionError(f"the fuzzing process failed: {proc.stderr[-3000:]}")
            left = max_examples - len(records)
            if left <= 0:
                break
    return records


def summary(records):
    """Counts per outcome."""
    counts = collections.Counter(r[0] for r in records)
    return {o: counts.get(o, 0) for o in OUTCOMES}


def _bad(records):
    return [r for r in records if r[0] in ("crash", "hang", "raw", "wrong")]


def test_every_public_callable_with_a_fuzzable_parameter_is_fuzzed_or_listed():
    for module_name in MODULES:
        fuzzed, skipped = targets(module_name)
        names = {f[0] for f in fuzzed}
        assert fuzzed
        if module_name in ("reference", "fast"):
            assert {"solve", "solve_certified", "certify", "confidence_boxes",
                    "extended_value_iteration", "SampleStore", "allocation_function"} <= names
        assert not names & {s[0] for s in skipped}


@pytest.mark.parametrize("module_name, examples", [("reference", 300), ("fast", 300),
                                                  ("bounds", 200), ("sspgm.validation", 16)])
def test_fuzz_public_api(module_name, examples):
    records = fuzz(module_name, examples)
    assert len(records) >= min(examples, 16)
    assert not _bad(records), _bad(records)[:5]


@pytest.mark.slow
@pytest.mark.parametrize("module_name, examples", [("reference", 3000), ("fast", 3000),
                                                  ("bounds", 1000), ("sspgm.validation", 100)])
def test_fuzz_public_api_long(module_name, examples):
    records = fuzz(module_name, examples, seed_value=1000)
    assert len(records) >= min(examples, 16)
    assert not _bad(records), _bad(records)[:5]
