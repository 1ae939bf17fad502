"""bounds: the sample-complexity bounds of Tarbouriech et al. (ALT 2021) in sympy.

* :mod:`bounds.symbols` -- named positive symbols (``eps``, ``B``, ``cmin``, ...).
* :mod:`bounds.expressions` -- one :class:`Bound` per result (Thms. 1-2,
  eqs. 4-5, the lower bound of Sec. 5, Lemma 9, the explicit totals) and the
  allocation function :math:`\\phi` of eq. 6.
* :mod:`bounds.calculator` -- :func:`samp_comp` and friends: floats when
  every parameter is given, sympy expressions in the missing ones otherwise.
* :mod:`bounds.budget` -- :func:`accuracy_for_budget`, the smallest ``eps`` a
  budget of calls certifies.
* :mod:`bounds.run_counts` -- :func:`run_total`, the most calls a finished run
  can have made.
* :class:`ParameterError` -- raised on a parameter out of its domain, missing,
  or not used by the bound asked for (a :class:`ValueError`).
* :mod:`bounds.analysis` -- leading exponent in ``1/eps``, simplified ratios,
  the dominant term, the :math:`\\tilde O` reduction of an explicit expression,
  LaTeX.

Where ``docs/semantics.md`` and the paper differ, that document is implemented
(its "Errata" section lists each difference with its counterexample or
derivation). ``import bounds`` imports neither backend.
"""

from . import analysis, budget, calculator, expressions, run_counts, symbols
from ._checks import ParameterError
from .analysis import *  # noqa: F401,F403
from .budget import *  # noqa: F401,F403
from .calculator import *  # noqa: F401,F403
from .expressions import *  # noqa: F401,F403
from .run_counts import *  # noqa: F401,F403
from .symbols import *  # noqa: F401,F403

__all__ = [
    "ParameterError",
    *symbols.__all__,
    *expressions.__all__,
    *calculator.__all__,
    *budget.__all__,
    *run_counts.__all__,
    *analysis.__all__,
]
