r"""Lemma 5's radius and its constants: a leaf module (it imports nothing of this package).

docs/semantics.md, "Confidence sets and EVI", fixes what Lemma 5 leaves open:
the logarithm is natural, ``S`` in it is the number of non-goal states, and
every next state (the goal included) gets a radius

.. math::

    N^+ = \max(1, N(s,a)),\quad \hat p = N(s,a,s') / N^+,\quad
    L = \log\frac{S A N^+}{\delta},\quad
    \beta = 4 \sqrt{\frac{\hat p L}{N^+}} + \frac{28 L}{N^+}.

This is the one Python copy (the numpy kernels, :func:`reference.evi.bernstein_radius_sum`
and the ``"paper"`` box kind call it); the compiled kernels have their own C copy in
``fast/_lemma5.pxd``, checked against it by the differential tests.
"""

import numpy as np

__all__ = []

RADIUS_SQRT_FACTOR = 4.0
"""The factor 4 of the square-root term of Lemma 5's radius."""

RADIUS_LINEAR_FACTOR = 28.0
"""The factor 28 of the ``L / N^+`` term of Lemma 5's radius."""


def log_term(n_plus, n_states, n_actions, delta):
    """``L = log(S A N^+ / delta)``, elementwise in ``n_plus``."""
    return np.log(n_states * n_actions * n_plus / delta)


def radius(p_hat, log_l, n_plus):
    """Lemma 5's ``beta = 4 sqrt(p_hat L / N^+) + 28 L / N^+``, elementwise (broadcasting)."""
    return (RADIUS_SQRT_FACTOR * np.sqrt(p_hat * log_l / n_plus)
            + RADIUS_LINEAR_FACTOR * log_l / n_plus)
