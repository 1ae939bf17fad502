"""Named sympy symbols of the sample-complexity bounds (all positive).

============  ==========================================================
symbol        meaning
============  ==========================================================
``eps``       accuracy :math:`\\epsilon`
``delta``     confidence level :math:`\\delta`
``B``         range of the optimal values :math:`B_\\star`
``cmin``      minimum cost :math:`c_{\\min}`
``S``         number of non-goal states
``A``         number of actions
``Gamma``     branching factor :math:`\\Gamma` (in the allocation function it
              stands for the empirical :math:`\\hat\\Gamma \\le \\Gamma`)
``theta``     slack parameter :math:`\\theta \\ge 1` of Thm. 2
``D``         SSP-diameter
``D_hat``     the diameter estimate :math:`\\hat D` of Alg. 4
``alpha``     numerical constant of the allocation function (eq. 6)
``X``, ``y``  arguments of the allocation function :math:`\\phi(X, y)`
``Delta``     the doubling guess :math:`\\Delta` of SEARCH (Alg. 2)
``W``         the doubling guess :math:`W` of the diameter subroutine (Alg. 4)
============  ==========================================================
"""

import sympy as sp

__all__ = [
    "eps",
    "delta",
    "B",
    "cmin",
    "S",
    "A",
    "Gamma",
    "theta",
    "D",
    "D_hat",
    "alpha",
    "X",
    "y",
    "Delta",
    "W",
    "SYMBOLS",
]

eps, delta, B, cmin = sp.symbols("epsilon delta B c_min", positive=True)
S, A, Gamma, theta, D = sp.symbols("S A Gamma theta D", positive=True)
D_hat, alpha, X, y, Delta, W = sp.symbols("Dhat alpha X y Delta W", positive=True)

SYMBOLS = {
    "eps": eps,
    "delta": delta,
    "B": B,
    "cmin": cmin,
    "S": S,
    "A": A,
    "Gamma": Gamma,
    "theta": theta,
    "D": D,
    "D_hat": D_hat,
    "alpha": alpha,
    "X": X,
    "y": y,
    "Delta": Delta,
    "W": W,
}
"""Python keyword name -> symbol, as used by the calculator's keyword arguments."""
