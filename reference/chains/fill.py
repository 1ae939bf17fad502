r"""The fill-in of the sparse elimination, counted before it is made.

Each round of the sparse elimination of :mod:`reference.chains.explicit`
eliminates an independent set of states ``K`` at once: every state ``i`` with an
edge into ``k in K`` gets an edge to every state ``j`` that ``k`` leads to. The
new block holds at most

.. math::

    \mathrm{nnz}(Q) + \sum_{k \in K} \mathrm{in}(k)\, \mathrm{out}(k)

entries (each product is one possible new entry; the states of ``K`` have no
edges among them, so ``in`` and ``out`` are the column and row counts of
``Q``). The round is refused before it allocates anything when that count is
above :data:`ELIMINATION_MAX_ENTRIES`.
"""

import numpy as np

from ..errors import ConvergenceError

__all__ = []

ELIMINATION_MAX_ENTRIES = 10_000_000
"""Largest count (:func:`round_entries`) of a round of sparse elimination (about 1 GB at the
round's peak)."""

BYTES_PER_ENTRY = 100
"""Peak bytes of a round per counted entry: the block, its slices, the product, their sum
and its coordinate copy (measured on a sparse garnet with ``S = 10^5``), for messages."""


def round_entries(Q, pick):
    """Bound on the stored entries of ``Q`` once the states ``pick`` are eliminated.

    Parameters
    ----------
    Q : CSR, shape (n, n)
        Off-diagonal block, no diagonal stored.
    pick : ndarray of int
        An independent set of its states (no edge between two of them).

    Returns
    -------
    int
        ``Q.nnz`` plus, for every picked state, its in-degree times its out-degree.

    Examples
    --------
    Eliminating the middle of ``0 -> 1 -> 2`` and ``2 -> 1`` links 0 and 2 to 2 (the
    diagonal entry ``2 -> 2`` is dropped later): 3 stored entries plus 2 x 1.

    >>> import numpy as np, scipy.sparse as sp
    >>> from reference.chains import fill
    >>> Q = sp.csr_array((np.full(3, 0.5), ([0, 1, 2], [1, 2, 1])), shape=(3, 3))
    >>> fill.round_entries(Q, np.array([1]))
    5
    """
    out_degree = np.diff(Q.indptr)[pick].astype(np.int64)
    in_degree = np.bincount(Q.indices, minlength=Q.shape[0])[pick].astype(np.int64)
    return int(Q.nnz) + int(np.dot(in_degree, out_degree))


def check_round(Q, pick, names):
    """Raise :class:`ConvergenceError` if the round eliminating ``pick`` could exceed the limit.

    ``names`` are the chain's names of the ``n`` states still present, for the message.
    """
    entries = round_entries(Q, pick)
    if entries > ELIMINATION_MAX_ENTRIES:
        raise ConvergenceError(too_large_message(entries, names))


def name_states(names):
    """The first few of the chain's names ``names`` of some states, for messages."""
    shown = ", ".join(str(int(s)) for s in names[:8])
    return f"[{shown}{', ...' if names.size > 8 else ''}]"


def too_large_message(entries, names):
    """The refusal of an elimination whose next round may hold ``entries`` stored entries."""
    return (
        f"no floating-point solve could be certified on this chain, and its exact elimination "
        f"is refused before its next round: with {names.size} states left "
        f"{name_states(names)}, that round may hold {entries:,} stored entries (about "
        f"{entries * BYTES_PER_ENTRY / 2**30:.1f} GiB at its peak), above "
        f"`ELIMINATION_MAX_ENTRIES` = {ELIMINATION_MAX_ENTRIES:,}."
    )


def out_of_memory_message(names):
    """The refusal of an elimination that ran out of memory on the states ``names``."""
    return (
        f"no floating-point solve could be certified on the {names.size} states "
        f"{name_states(names)}, and their exact elimination ran out of memory."
    )


def refuse_dense(names, rtol, limit):
    """Raise :class:`ConvergenceError`: the dense block of ``names`` is above ``limit`` states."""
    raise ConvergenceError(
        f"no floating-point solve could be certified to relative accuracy {rtol:g} "
        f"on the {names.size} states {name_states(names)}, and their exact elimination "
        f"needs a dense block of {names.size} states, above `ELIMINATION_MAX_STATES` = "
        f"{limit}."
    )
