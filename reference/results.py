"""Result objects: immutable records with named fields (scipy.optimize style).

Every result shares one vocabulary (``docs/backends.md``, "Result vocabulary"):
``values`` and ``policy`` where a result has them, ``v_tilde`` for optimistic
values, ``n_iter`` for the sweeps (or evaluations) an iterative method made,
and ``converged`` and ``message`` on every result returned by a public
function.
"""

from dataclasses import dataclass, fields

import numpy as np

__all__ = ["Result"]


@dataclass(frozen=True, repr=False)
class Result:
    """Base of every result object: attribute and mapping access, read-only arrays, a summary.

    Subclasses are frozen dataclasses. Their array fields are made read-only
    when the result is built; ``result["name"]`` and ``dict(result)`` read the
    fields by name; ``repr`` lists each field, showing arrays by shape and a
    few values.
    """

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                value.setflags(write=False)

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray) and value.size > 8:
                shown = f"array(shape={value.shape}, dtype={value.dtype})"
            elif isinstance(value, (list, tuple)) and len(value) > 3:
                shown = f"[{len(value)} items]"
            else:
                shown = repr(value)
            lines.append(f"    {f.name}={shown},")
        lines.append(")")
        return "\n".join(lines)

    def keys(self):
        """Names of the fields, in order."""
        return [f.name for f in fields(self)]

    def __getitem__(self, name):
        """The field ``name`` (so ``dict(result)`` works); :class:`KeyError` if there is none."""
        if name not in self.keys():
            raise KeyError(name)
        return getattr(self, name)
