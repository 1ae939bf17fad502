"""Result objects: immutable records with named fields (scipy.optimize style).

Every result shares one vocabulary (``docs/backends.md``, "Result vocabulary"):
``values`` and ``policy`` where a result has them, ``v_tilde`` for optimistic
values, ``n_iter`` for the sweeps (or evaluations) an iterative method made,
``converged`` and ``message`` on every result returned by a public function,
and ``params``, the settings of the call that made it.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

import numpy as np

__all__ = ["NOT_ECHOED", "Params", "Record", "Result"]

NOT_ECHOED = frozenset({"kernels", "model", "ssp", "counts", "costs", "policy", "start",
                        "callback", "checkpoint"})
"""Arguments a result's ``params`` leaves out: the data the call works on (the model or SSP,
the counts, the costs, a policy to evaluate or start from, start values) and the hooks that
never change the result (``callback``, ``checkpoint``)."""


class Params(Mapping):
    """A read-only mapping of the settings a result was computed with (``result.params``).

    Parameters
    ----------
    items : mapping or iterable of (str, value) pairs, optional
        The settings.

    Examples
    --------
    >>> params = Params({"eps": 0.1, "delta": 0.05})
    >>> params["eps"], dict(params)
    (0.1, {'eps': 0.1, 'delta': 0.05})
    """

    __slots__ = ("_items",)

    def __init__(self, items=()):
        self._items = dict(items)

    def __getitem__(self, name):
        return self._items[name]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)

    def __repr__(self):
        return f"Params({self._items!r})"


def call_params(**arguments):
    """The :class:`Params` of a call: its ``arguments`` (after defaulting) but :data:`NOT_ECHOED`."""
    return Params((name, value) for name, value in arguments.items() if name not in NOT_ECHOED)


def echo_params(result, /, **arguments):
    """``result`` with ``params`` set to :func:`call_params` of ``arguments``, if it is a
    :class:`Result`; anything else unchanged.

    Every public function bound to a kernel set passes its result through it
    (:meth:`reference.backend.KernelSet.bind`), so ``params`` is filled at the
    public boundary, with the caller's arguments.
    """
    if isinstance(result, Result):
        return replace(result, params=call_params(**arguments))
    return result


@dataclass(frozen=True, repr=False)
class Record:
    """Base of every result and record: attribute and mapping access, read-only arrays, a summary.

    Subclasses are frozen dataclasses. Their array fields are made read-only
    when the result is built; ``result["name"]`` and ``dict(result)`` read the
    fields by name; ``repr`` lists each field, showing arrays by shape and a
    few values. A record (a round of a run's history, an alternative model)
    derives from it directly; what a public function returns derives from
    :class:`Result`.
    """

    def __post_init__(self):
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False

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


@dataclass(frozen=True, repr=False)
class Result(Record):
    """Base of every result a public function returns: a :class:`Record` with ``params``.

    Attributes
    ----------
    params : Params
        The settings of the call that returned it, after defaulting, as the
        caller gave them: every argument but :data:`NOT_ECHOED`, with the same
        keys on both backends (empty for a function of the data alone, such
        as ``optimal_values(ssp)``). A result inside another one (the
        certificate of a run) holds the settings it was computed with.
    """

    params: Params = field(default_factory=Params, kw_only=True)
