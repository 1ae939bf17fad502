"""Result objects: immutable records with named fields (scipy.optimize style)."""

from dataclasses import dataclass, fields

import numpy as np

__all__ = ["Result"]


@dataclass(frozen=True, repr=False)
class Result:
    """Base of every result object: attribute access and a readable summary.

    Subclasses are frozen dataclasses; ``repr`` lists each field, showing
    arrays by shape and a few values.
    """

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
