"""Shared fixtures, and which backends a test runs on.

Which backends a test runs on (the rule every test follows):

- A test that takes the ``backend`` fixture runs on both backends, ``reference``
  and ``fast`` (test ids ``[reference]`` and ``[fast]``): that is where their
  behaviour can differ.
- ``@pytest.mark.shared``: every name the test reaches through ``backend`` is
  the very same object in ``reference`` and ``fast`` (``fast`` re-exports the
  modules without kernels: the model, the instances, the generative models,
  exact evaluation, the errors). The test runs once (id ``[shared]``), and
  ``backend`` is then a view of the two backends that checks every attribute
  it hands out: a name that is not the same object in both fails the test and
  names the attribute, so a marker left on a test whose code becomes
  backend-specific is caught the first time it runs (remove the marker then).
- ``@pytest.mark.statistical``: a check over many seeds (a success rate, a
  coverage). It runs on ``fast`` by default; its ``reference`` run carries the
  ``slow`` marker. The differential tests (``tests/test_differential.py``)
  prove that both backends return the same results from the same seed, so the
  ``fast`` run checks the same draws the ``reference`` run would.
- ``@pytest.mark.slow_reference``: the same split for a test that is not a
  check over seeds but whose ``reference`` run repeats, at a large cost, what
  its ``fast`` run checks through code both backends share (a checkpoint's
  refusal around a run of a Python simulator, for instance): the differential
  tests cover what the backends do differently.
- ``@pytest.mark.slow``: not run by default (``pyproject.toml`` adds
  ``-m "not slow"`` to pytest's options, so ``python -m pytest``, the README's
  and CI's command, leaves them out). ``python -m pytest -m slow`` runs them,
  and ``python -m pytest -m ""`` runs every test. A test is marked slow only
  when it repeats what another test run by default already checks (the
  ``reference`` run of the two markers above; a larger size of a case the
  differential tests cover).

Hypothesis runs with its default (random) profile for developers, so that
every run explores new examples. When the environment variable ``CI`` is set
(CI sets ``CI=true``), the ``ci`` profile is loaded instead: examples derived
from each test's name (``derandomize``), no example database carried between
runs, no deadline (the machine is shared, so timings vary), and the
reproduction blob printed with any failure. A green CI run is then green on
every rerun of the same commit.

In a pytest-xdist worker (``PYTEST_XDIST_WORKER`` set) without ``OMP_NUM_THREADS``,
the compiled sweeps run on one thread (:func:`one_thread_per_worker`): the workers
already share the cores, and a parallel sweep waits at its end for a thread another
worker may hold.
"""

import importlib
import os

import pytest
from hypothesis import settings

BACKEND_NAMES = ("reference", "fast")
SHARED = "shared"



def one_thread_per_worker(environ):
    """Set ``OMP_NUM_THREADS=1`` in ``environ`` for a pytest-xdist worker that has no setting.

    The thread default of both backends (``reference.set_num_threads``) reads it,
    so ``set_num_threads(None)`` in a test restores one thread too.
    """
    if environ.get("PYTEST_XDIST_WORKER"):
        environ.setdefault("OMP_NUM_THREADS", "1")


one_thread_per_worker(os.environ)

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


class SharedBackend:
    """The two backends seen as one, for a test marked ``shared``.

    Every attribute is looked up in both ``reference`` and ``fast`` and handed
    out only when it is the same object in both; otherwise the test fails,
    naming the attribute.
    """

    def __getattr__(self, name):
        reference = importlib.import_module("reference")
        fast = importlib.import_module("fast")
        ours, theirs = getattr(reference, name), getattr(fast, name)
        if ours is not theirs:
            pytest.fail(f"backend.{name} is not the same object in reference and fast, so this "
                        "test must run on both: remove its @pytest.mark.shared", pytrace=False)
        return ours

    def __repr__(self):
        return "<the reference and fast backends (shared code)>"


def _parametrized_directly(metafunc, name):
    """Whether the test parametrizes ``name`` itself (``@pytest.mark.parametrize``)."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0]
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if name in names:
            return True
    return False


def pytest_generate_tests(metafunc):
    """Parametrize ``backend`` by the rule of the module docstring."""
    if "backend" not in metafunc.fixturenames or _parametrized_directly(metafunc, "backend"):
        return
    definition = metafunc.definition
    if definition.get_closest_marker("shared"):
        if definition.get_closest_marker("statistical") or definition.get_closest_marker(
                "slow_reference"):
            raise pytest.UsageError(f"{definition.nodeid}: a shared test runs once, so it "
                                    "cannot also be statistical or slow_reference")
        params = [SHARED]
    elif definition.get_closest_marker("statistical") or definition.get_closest_marker(
            "slow_reference"):
        params = [pytest.param("reference", marks=pytest.mark.slow), "fast"]
    else:
        params = list(BACKEND_NAMES)
    metafunc.parametrize("backend", params, indirect=True)


@pytest.fixture
def backend(request):
    """The backend module under test: ``reference`` or ``fast`` (same public API), or for a
    test marked ``shared`` a :class:`SharedBackend`."""
    if request.param == SHARED:
        return SharedBackend()
    return importlib.import_module(request.param)
