"""The box kinds of ``confidence_box`` by hand at sample sizes where they differ.

At a few dozen samples per pair the paper's and the Bernstein boxes are both ``[0, 1]``,
so a kind that returned another kind's box would pass; here every box is strictly
inside ``[0, 1]`` and each kind's ends are computed from its formula
(docs/semantics.md and ``confidence_boxes``' Notes).
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp


def _bernstein(q, n, S, A, delta):
    L = math.log(4 * S * A * (S + 1) * n * (n + 1) / delta)
    variance = n * q * (1 - q) / (n - 1)
    return math.sqrt(2 * variance * L / n) + 7 * L / (3 * (n - 1))


def _paper(q, n, S, A, delta):
    L = math.log(S * A * n / delta)
    return 4 * math.sqrt(q * L / n) + 28 * L / n


@pytest.mark.parametrize("kind, width", [("bernstein", _bernstein), ("paper", _paper)])
@pytest.mark.parametrize("dense", [True, False])
def test_each_kind_by_hand_on_large_counts(backend, kind, width, dense):
    n, delta = 10**6, 0.05
    counts = np.zeros((2, 1, 3))
    counts[0, 0] = [0.2 * n, 0.5 * n, 0.3 * n]
    counts[1, 0] = [0, 0.9 * n, 0.1 * n]
    S, A = 2, 1
    given = counts if dense else sp.csr_array(counts.reshape(S * A, S + 1))
    lo, hi = backend.confidence_box(given, delta, kind=kind)
    for s in range(S):
        q = counts[s, 0] / n
        w = np.array([width(x, n, S, A, delta) for x in q])
        assert np.all(w < 0.05)
        np.testing.assert_allclose(lo[s, 0], np.maximum(0, q - w), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(hi[s, 0], q + w, rtol=1e-12)


def test_the_kinds_differ_on_large_counts(backend):
    counts = np.zeros((1, 1, 2))
    counts[0, 0] = [300_000, 700_000]
    boxes = {kind: backend.confidence_box(counts, 0.1, kind=kind)
             for kind in ("paper", "bernstein", "kl")}
    widths = {kind: float((hi - lo)[0, 0, 0]) for kind, (lo, hi) in boxes.items()}
    assert widths["kl"] < widths["bernstein"] < widths["paper"] < 0.05
