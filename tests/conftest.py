"""Shared fixtures: every behavioural test runs on both backends.

Hypothesis runs with its default (random) profile for developers, so that
every run explores new examples. When the environment variable ``CI`` is set
(CI sets ``CI=true``), the ``ci`` profile is loaded instead: examples derived
from each test's name (``derandomize``), no example database carried between
runs, no deadline (the machine is shared, so timings vary), and the
reproduction blob printed with any failure. A green CI run is then green on
every rerun of the same commit.
"""

import importlib
import os

import pytest
from hypothesis import settings

BACKEND_NAMES = ("reference", "fast")

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(params=BACKEND_NAMES, ids=BACKEND_NAMES)
def backend(request):
    """The backend module under test: ``reference`` or ``fast`` (same public API)."""
    return importlib.import_module(request.param)
