"""Each public function checks ``delta`` and ``eps`` once, at its boundary.

Every module of ``reference`` that checks a real number does it through
``check_real`` (imported by name); a wrapper put in each of them counts the
checks of an argument per public call, on both backends (whose run loops are
``reference``'s code on their kernels).
"""

import sys
import warnings

import pytest

import reference
from reference._checks import scalars


@pytest.fixture
def checks(monkeypatch):
    """The names of the real numbers checked since the fixture started, in order."""
    seen = []
    original = scalars.check_real

    def counting(name, *args, **kwargs):
        seen.append(name)
        return original(name, *args, **kwargs)

    for module in list(sys.modules.values()):
        if (getattr(module, "__name__", "").startswith("reference.")
                and getattr(module, "check_real", None) is original):
            monkeypatch.setattr(module, "check_real", counting)
    return seen


RUNS = {
    "alg1": lambda b, ssp: b.solve(ssp, ssp.costs, eps=0.5, delta=0.1, seed=0),
    "alg3": lambda b, ssp: b.solve(ssp, ssp.costs, eps=0.5, delta=0.1, theta=2.0, seed=0),
    "search": lambda b, ssp: b.search(ssp, ssp.costs, eps=0.5, delta=0.1, seed=0),
    "solve_certified": lambda b, ssp: b.solve_certified(ssp, ssp.costs, eps=0.2, delta=0.1,
                                                        seed=0),
    "solve_certified theta": lambda b, ssp: b.solve_certified(ssp, ssp.costs, eps=0.2,
                                                              delta=0.1, theta=2.0, seed=0),
    "estimate_diameter": lambda b, ssp: b.estimate_diameter(ssp, eps=0.5, delta=0.1, seed=0),
    "plug_in": lambda b, ssp: b.plug_in(ssp, ssp.costs, n_per_pair=30, delta=0.1, seed=0),
}
"""Public functions whose inner calls (EVI, the allocation, boxes, certificates, radii) take
``delta``, and ``eps`` but for ``plug_in``."""


@pytest.mark.parametrize("name", RUNS)
def test_a_run_checks_delta_and_eps_once(backend, checks, name):
    ssp = reference.tradeoff()
    del checks[:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        RUNS[name](backend, ssp)
    assert checks.count("delta") == 1, checks
    assert checks.count("eps") == (name != "plug_in"), checks
