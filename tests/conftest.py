"""Shared fixtures: every behavioural test runs on both backends."""

import importlib

import pytest

BACKEND_NAMES = ("reference", "fast")


@pytest.fixture(params=BACKEND_NAMES, ids=BACKEND_NAMES)
def backend(request):
    """The backend module under test: ``reference`` or ``fast`` (same public API)."""
    return importlib.import_module(request.param)
