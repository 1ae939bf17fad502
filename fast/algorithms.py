"""The paper's algorithms with the compiled kernels of the ``fast`` backend.

The algorithm logic is the reference's private implementations in
:mod:`reference.algorithms`; these public functions only hand them the
compiled kernels (EVI and value iteration). Signatures and docstrings are the
reference's.
"""

from reference import algorithms as _reference
from reference.evi import EVI_MAX_ITER, bernstein_radius_sum

from .evaluation import value_iteration
from .evi import extended_value_iteration

__all__ = ["search", "estimate_diameter", "solve", "plug_in"]

_FAST_KERNELS = _reference._Kernels(
    extended_value_iteration=extended_value_iteration,
    bernstein_radius_sum=bernstein_radius_sum,
    value_iteration=value_iteration,
)


def search(model, costs, eps, delta, alpha=1.0, seed=None, max_iter=EVI_MAX_ITER,
           callback=None, checkpoint=None):
    return _reference._search_public(_FAST_KERNELS, model, costs, eps, delta, alpha, seed,
                                     max_iter, callback, checkpoint)


def estimate_diameter(model, eps, delta, seed=None, max_iter=EVI_MAX_ITER, callback=None,
                      checkpoint=None):
    return _reference._estimate_diameter(_FAST_KERNELS, model, eps, delta, seed, max_iter,
                                         callback, checkpoint)


def solve(model, costs, eps, delta, theta=None, alpha=1.0, seed=None, max_iter=EVI_MAX_ITER,
          callback=None, checkpoint=None):
    return _reference._solve(_FAST_KERNELS, model, costs, eps, delta, theta, alpha, seed,
                             max_iter, callback, checkpoint)


def plug_in(model, costs, n_per_pair, seed=None, tol=1e-8, max_iter=100_000):
    return _reference._plug_in(_FAST_KERNELS, model, costs, n_per_pair, seed, tol, max_iter)


for _public in (search, estimate_diameter, solve, plug_in):
    _public.__doc__ = getattr(_reference, _public.__name__).__doc__
