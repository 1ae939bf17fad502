# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
"""Compiled kernels of extended value iteration (Lemma 5 boxes, App. B greedy inner problem).

Private module of the ``fast`` backend; the public functions live in
:mod:`fast.evi`. Every kernel follows ``docs/semantics.md``: the box of
``p(s'|s,a)`` is ``[p_hat - beta, p_hat + beta] ∩ [0, 1]`` with the Bernstein
radius of Lemma 5, and the inner problem starts at the lower ends and pours the
leftover mass into next states in ascending order of ``v`` (goal first, ties to
the lower index), each up to its upper end.

Dense counts have shape ``(S, A, S+1)``; sparse counts are CSR arrays of shape
``(S*A, S+1)`` given as ``(indptr int64, indices int32, data float64)``. A next
state that a pair never reached has the same box ``[0, beta_0]`` for every
such state, so the sparse kernels store one ``beta_0`` per pair and never form
a dense array.
"""

import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport ceil, log, sqrt, INFINITY
from libc.stdint cimport int64_t

from ._linalg cimport sparse_dot


cdef inline double _radius(double p_hat, double log_term, double n_plus) noexcept nogil:
    """Bernstein radius of Lemma 5 for one next state."""
    return 4.0 * sqrt(p_hat * log_term / n_plus) + 28.0 * log_term / n_plus


cdef inline double _n_plus(const double* counts, Py_ssize_t n) noexcept nogil:
    """``N+ = max(1, N(s, a))`` from the counts of one pair."""
    cdef double total = 0.0
    cdef Py_ssize_t k
    for k in range(n):
        total = total + counts[k]
    return total if total > 1.0 else 1.0


def radius_dense(const double[:, :, ::1] counts, double delta, double[:, :, ::1] out):
    """Write the Lemma 5 radius ``beta(s, a, s')`` of dense counts into ``out``."""
    cdef Py_ssize_t S = counts.shape[0], A = counts.shape[1], S1 = counts.shape[2]
    cdef Py_ssize_t s, a, j
    cdef double n_plus, log_term
    with nogil:
        for s in range(S):
            for a in range(A):
                n_plus = _n_plus(&counts[s, a, 0], S1)
                log_term = log(S * A * n_plus / delta)
                for j in range(S1):
                    out[s, a, j] = _radius(counts[s, a, j] / n_plus, log_term, n_plus)


def radius_csr(const int64_t[::1] indptr, const double[::1] data, Py_ssize_t n_states,
               Py_ssize_t n_actions, double delta, double[::1] out, double[::1] out_unseen):
    """Radius of the stored entries (``out``) and of the unseen next states (``out_unseen``)."""
    cdef Py_ssize_t i, k, n_pairs = indptr.shape[0] - 1
    cdef double n_plus, log_term
    with nogil:
        for i in range(n_pairs):
            n_plus = _n_plus(&data[indptr[i]], indptr[i + 1] - indptr[i])
            log_term = log(n_states * n_actions * n_plus / delta)
            out_unseen[i] = _radius(0.0, log_term, n_plus)
            for k in range(indptr[i], indptr[i + 1]):
                out[k] = _radius(data[k] / n_plus, log_term, n_plus)


cdef inline void _box(double p_hat, double beta, double* lo, double* gap) noexcept nogil:
    """Lower end and width of ``[p_hat - beta, p_hat + beta] ∩ [0, 1]``."""
    cdef double low = p_hat - beta
    cdef double high = p_hat + beta
    if low < 0.0:
        low = 0.0
    if high > 1.0:
        high = 1.0
    lo[0] = low
    gap[0] = high - low


def boxes_dense(const double[:, :, ::1] counts, const double[:, :, ::1] beta,
                double[:, :, ::1] lo, double[:, :, ::1] gap, double[:, ::1] mass):
    """Lower ends, widths and leftover mass ``1 - sum lo`` of every dense box."""
    cdef Py_ssize_t S = counts.shape[0], A = counts.shape[1], S1 = counts.shape[2]
    cdef Py_ssize_t s, a, j
    cdef double n_plus, total
    with nogil:
        for s in range(S):
            for a in range(A):
                n_plus = _n_plus(&counts[s, a, 0], S1)
                total = 0.0
                for j in range(S1):
                    _box(counts[s, a, j] / n_plus, beta[s, a, j], &lo[s, a, j], &gap[s, a, j])
                    total = total + lo[s, a, j]
                mass[s, a] = 1.0 - total


def boxes_csr(const int64_t[::1] indptr, const double[::1] data, const double[::1] beta,
              const double[::1] beta_unseen, double[::1] lo, double[::1] gap,
              double[::1] gap_unseen, double[::1] mass):
    """Sparse boxes; returns an upper bound on the pour length of any pair.

    The pour of a pair visits at most its stored entries plus
    ``ceil(mass / gap_unseen)`` unseen next states (each unseen state but the
    last takes its full width), plus two for rounding.
    """
    cdef Py_ssize_t i, k, n_pairs = indptr.shape[0] - 1
    cdef Py_ssize_t steps, longest = 0
    cdef double n_plus, total, unused
    with nogil:
        for i in range(n_pairs):
            n_plus = _n_plus(&data[indptr[i]], indptr[i + 1] - indptr[i])
            total = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                _box(data[k] / n_plus, beta[k], &lo[k], &gap[k])
                total = total + lo[k]
            mass[i] = 1.0 - total
            _box(0.0, beta_unseen[i], &unused, &gap_unseen[i])
            steps = indptr[i + 1] - indptr[i] + 2
            if mass[i] > 0.0:
                steps = steps + <Py_ssize_t>ceil(mass[i] / gap_unseen[i])
            if steps > longest:
                longest = steps
    return longest


cdef inline bint _before(double va, Py_ssize_t ia, double vb, Py_ssize_t ib) noexcept nogil:
    """Order of the pour: ascending value, then ascending rank (the goal has rank -1)."""
    return va < vb or (va == vb and ia < ib)


cdef inline void _sift_down(double* hv, Py_ssize_t* hi, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """Restore the max-heap (by :func:`_before`) below position ``i``."""
    cdef Py_ssize_t child, big
    cdef double tv
    cdef Py_ssize_t ti
    while True:
        child = 2 * i + 1
        if child >= n:
            return
        big = child
        if child + 1 < n and _before(hv[child], hi[child], hv[child + 1], hi[child + 1]):
            big = child + 1
        if not _before(hv[i], hi[i], hv[big], hi[big]):
            return
        tv = hv[i]
        hv[i] = hv[big]
        hv[big] = tv
        ti = hi[i]
        hi[i] = hi[big]
        hi[big] = ti
        i = big


def smallest_order(const double[::1] v, Py_ssize_t m):
    """First ``m`` next states of the pour order for ``v`` of shape ``(S,)``.

    Keeps a max-heap of the ``m`` best ``(value, rank)`` keys, with the goal
    (index ``S``, value 0) ranked before every state: O(S log m).
    """
    cdef Py_ssize_t S = v.shape[0], n, i, j
    cdef double[::1] hv = np.empty(m, dtype=np.float64)
    cdef Py_ssize_t[::1] hi = np.empty(m, dtype=np.intp)
    cdef double tv
    cdef Py_ssize_t ti
    order = np.empty(m, dtype=np.intp)
    cdef Py_ssize_t[::1] out = order
    with nogil:
        hv[0] = 0.0
        hi[0] = -1
        n = 1
        for i in range(S):
            if n < m:
                hv[n] = v[i]
                hi[n] = i
                j = n
                n = n + 1
                while j > 0 and _before(hv[(j - 1) // 2], hi[(j - 1) // 2], hv[j], hi[j]):
                    tv = hv[j]
                    hv[j] = hv[(j - 1) // 2]
                    hv[(j - 1) // 2] = tv
                    ti = hi[j]
                    hi[j] = hi[(j - 1) // 2]
                    hi[(j - 1) // 2] = ti
                    j = (j - 1) // 2
            elif _before(v[i], i, hv[0], hi[0]):
                hv[0] = v[i]
                hi[0] = i
                _sift_down(&hv[0], &hi[0], n, 0)
        j = n
        while j > 0:
            j = j - 1
            out[j] = S if hi[0] < 0 else hi[0]
            hv[0] = hv[j]
            hi[0] = hi[j]
            _sift_down(&hv[0], &hi[0], j, 0)
    return order[:n]


cdef inline double _pour_dense(const double* gap, double mass, const double* v,
                               const Py_ssize_t* order, Py_ssize_t n) noexcept nogil:
    """Value of the mass poured greedily in pour order, stopping once it is spent.

    Whole blocks of four next states are poured at once while they fit in the
    leftover mass (a short dependency chain); the block where the mass runs
    out is poured one state at a time.
    """
    cdef double acc = 0.0
    cdef double g0, g1, g2, g3, block
    cdef Py_ssize_t i = 0, j
    while i + 4 <= n:
        g0 = gap[order[i]]
        g1 = gap[order[i + 1]]
        g2 = gap[order[i + 2]]
        g3 = gap[order[i + 3]]
        block = (g0 + g1) + (g2 + g3)
        if block >= mass:
            break
        acc = acc + ((g0 * v[order[i]] + g1 * v[order[i + 1]])
                     + (g2 * v[order[i + 2]] + g3 * v[order[i + 3]]))
        mass = mass - block
        i = i + 4
    while mass > 0.0 and i < n:
        j = order[i]
        g0 = gap[j]
        if g0 >= mass:
            return acc + mass * v[j]
        acc = acc + g0 * v[j]
        mass = mass - g0
        i = i + 1
    return acc


def sweep_dense(const int64_t[::1] lo_ptr, const int[::1] lo_cols, const double[::1] lo_vals,
                const double[:, :, ::1] gap, const double[:, ::1] mass,
                const double[:, ::1] costs, const double[::1] v, const Py_ssize_t[::1] order,
                double[::1] v_out, Py_ssize_t[::1] policy_out, int n_threads):
    """One EVI sweep on dense boxes: ``v_out(s) = min_a c(s,a) + inner(s, a, v)``.

    The lower ends come as CSR rows ``s*A + a`` holding their positive entries
    (most are 0 once ``beta > p_hat``), so ``lo . v`` skips the zeros; the
    widths ``gap`` stay dense for the pour. ``v`` has shape ``(S+1,)`` with
    ``v[S] = 0``; ``order`` is the full pour order. Ties between actions go to
    the lowest index.
    """
    cdef Py_ssize_t S = gap.shape[0], A = gap.shape[1], S1 = gap.shape[2]
    cdef Py_ssize_t s, a, i, best_a
    cdef double q, best
    for s in prange(S, nogil=True, num_threads=n_threads, schedule="static"):
        best = INFINITY
        best_a = 0
        for a in range(A):
            i = s * A + a
            q = costs[s, a] + (sparse_dot(&lo_vals[lo_ptr[i]], &lo_cols[lo_ptr[i]],
                                          lo_ptr[i + 1] - lo_ptr[i], &v[0])
                               + _pour_dense(&gap[s, a, 0], mass[s, a], &v[0], &order[0], S1))
            if q < best:
                best = q
                best_a = a
        v_out[s] = best
        policy_out[s] = best_a


ctypedef fused item_t:
    double
    Py_ssize_t


cdef inline void _insert_sorted(Py_ssize_t* keys, item_t* items, Py_ssize_t n, Py_ssize_t key,
                                item_t item) noexcept nogil:
    """Insert ``(key, item)`` into the first ``n`` entries, kept ascending by key."""
    cdef Py_ssize_t t = n
    while t > 0 and keys[t - 1] > key:
        keys[t] = keys[t - 1]
        items[t] = items[t - 1]
        t = t - 1
    keys[t] = key
    items[t] = item


cdef inline double _pour_unseen(Py_ssize_t start, Py_ssize_t stop, double width,
                                double* mass, const double* v, const Py_ssize_t* order,
                                const double* cum_v) noexcept nogil:
    """Pour into the unseen next states at pour ranks ``start..stop-1``, all of width ``width``.

    They share one width, so the value of filling ``q`` of them is
    ``width * (cum_v[start + q] - cum_v[start])``; the last one takes what
    is left. Returns the value poured and lowers ``mass``.
    """
    cdef Py_ssize_t length = stop - start, q
    cdef double left
    if length <= 0 or mass[0] <= 0.0:
        return 0.0
    if length * width < mass[0]:
        mass[0] = mass[0] - length * width
        return width * (cum_v[stop] - cum_v[start])
    q = <Py_ssize_t>(mass[0] / width)
    if q >= length:
        mass[0] = 0.0
        return width * (cum_v[stop] - cum_v[start])
    left = mass[0] - q * width
    mass[0] = 0.0
    return width * (cum_v[start + q] - cum_v[start]) + left * v[order[start + q]]


cdef inline double _pour_csr(const int* cols, const double* lo, const double* gap,
                             Py_ssize_t nnz, double gap_unseen, double mass,
                             const double* v, const Py_ssize_t* order, Py_ssize_t n,
                             const Py_ssize_t* rank, const double* cum_v,
                             Py_ssize_t* seen_rank, Py_ssize_t* seen_pos) noexcept nogil:
    """Inner problem of one sparse pair: ``lo . v`` plus the greedy pour.

    The stored next states inside the pour prefix are sorted by pour rank
    (``rank[s'] = -1`` outside it); between two of them lies a run of unseen
    states, poured in one step by :func:`_pour_unseen`. ``seen_rank`` and
    ``seen_pos`` are scratch buffers of length ``nnz``. Cost ``O(nnz^2)``
    at worst (an insertion sort), independent of the pour length.
    """
    cdef double acc = 0.0
    cdef double g
    cdef Py_ssize_t k, m = 0, t, r, start = 0
    for k in range(nnz):
        acc = acc + lo[k] * v[cols[k]]
    if mass <= 0.0:
        return acc
    for k in range(nnz):
        r = rank[cols[k]]
        if r >= 0:
            _insert_sorted(seen_rank, seen_pos, m, r, k)
            m = m + 1
    for t in range(m):
        r = seen_rank[t]
        acc = acc + _pour_unseen(start, r, gap_unseen, &mass, v, order, cum_v)
        if mass <= 0.0:
            return acc
        g = gap[seen_pos[t]]
        if g >= mass:
            return acc + mass * v[order[r]]
        acc = acc + g * v[order[r]]
        mass = mass - g
        start = r + 1
    return acc + _pour_unseen(start, n, gap_unseen, &mass, v, order, cum_v)


def sweep_csr(const int64_t[::1] indptr, const int[::1] cols, const double[::1] lo,
              const double[::1] gap, const double[::1] gap_unseen, const double[::1] mass,
              const double[:, ::1] costs, const double[::1] v, const Py_ssize_t[::1] order,
              Py_ssize_t[::1] rank, Py_ssize_t[:, ::1] scratch, double[::1] v_out,
              Py_ssize_t[::1] policy_out, int n_threads):
    """One EVI sweep on sparse boxes; ``order`` may be a prefix of the pour order.

    The prefix must be at least as long as the bound returned by
    :func:`boxes_csr`. ``rank`` has length ``S+1`` and holds -1 (restored on
    return); ``scratch`` has shape ``(n_threads, 2 * max stored entries of a
    pair)``.
    """
    cdef Py_ssize_t S = costs.shape[0], A = costs.shape[1], n = order.shape[0]
    cdef Py_ssize_t s, a, i, t, best_a, tid, half = scratch.shape[1] // 2
    cdef double q, best
    cdef double[::1] cum_v = np.empty(n + 1, dtype=np.float64)
    with nogil:
        cum_v[0] = 0.0
        for t in range(n):
            rank[order[t]] = t
            cum_v[t + 1] = cum_v[t] + v[order[t]]
    for s in prange(S, nogil=True, num_threads=n_threads, schedule="static"):
        tid = threadid()
        best = INFINITY
        best_a = 0
        for a in range(A):
            i = s * A + a
            q = costs[s, a] + _pour_csr(&cols[indptr[i]], &lo[indptr[i]], &gap[indptr[i]],
                                        indptr[i + 1] - indptr[i], gap_unseen[i], mass[i],
                                        &v[0], &order[0], n, &rank[0], &cum_v[0],
                                        &scratch[tid, 0], &scratch[tid, half])
            if q < best:
                best = q
                best_a = a
        v_out[s] = best
        policy_out[s] = best_a
    with nogil:
        for t in range(n):
            rank[order[t]] = -1


def kernel_dense(const double[:, :, ::1] lo, const double[:, :, ::1] gap,
                 const double[:, ::1] mass, const Py_ssize_t[::1] policy,
                 const Py_ssize_t[::1] order, double[:, ::1] out):
    """Optimistic kernel ``(S, S+1)`` of ``policy``: lower ends plus the greedy pour."""
    cdef Py_ssize_t S = lo.shape[0], S1 = lo.shape[2], s, a, i, j
    cdef double left, g
    with nogil:
        for s in range(S):
            a = policy[s]
            for j in range(S1):
                out[s, j] = lo[s, a, j]
            left = mass[s, a]
            i = 0
            while left > 0.0 and i < S1:
                j = order[i]
                g = gap[s, a, j]
                if g >= left:
                    out[s, j] += left
                    break
                out[s, j] += g
                left = left - g
                i = i + 1


cdef Py_ssize_t _kernel_row(const int* cols, const double* lo, const double* gap,
                            Py_ssize_t nnz, double gap_unseen, double mass,
                            const Py_ssize_t* order, Py_ssize_t n, Py_ssize_t* slot,
                            double* stored, Py_ssize_t* extra_idx,
                            double* extra_val) noexcept nogil:
    """Greedy solution of one sparse pair.

    Writes the probability of each stored entry into ``stored`` and the unseen
    next states that received mass into ``extra_idx``/``extra_val`` (ascending
    by index); returns how many unseen states received mass.
    """
    cdef Py_ssize_t k, i = 0, j, n_extra = 0
    cdef double g, x
    for k in range(nnz):
        stored[k] = lo[k]
        slot[cols[k]] = k
    while mass > 0.0 and i < n:
        j = order[i]
        g = gap_unseen if slot[j] < 0 else gap[slot[j]]
        x = mass if g >= mass else g
        if slot[j] < 0:
            _insert_sorted(extra_idx, extra_val, n_extra, j, x)
            n_extra = n_extra + 1
        else:
            stored[slot[j]] += x
        mass = mass - x
        i = i + 1
    for k in range(nnz):
        slot[cols[k]] = -1
    return n_extra


def kernel_csr(const int64_t[::1] indptr, const int[::1] cols, const double[::1] lo,
               const double[::1] gap, const double[::1] gap_unseen, const double[::1] mass,
               Py_ssize_t n_actions, const Py_ssize_t[::1] policy,
               const Py_ssize_t[::1] order):
    """Optimistic kernel of ``policy`` as CSR parts ``(indptr, indices, data)``, shape (S, S+1).

    Each row holds the positive entries among the pair's stored next states
    and the unseen next states that received mass, ascending by index. Two
    passes: count the entries of each row, then fill them.
    """
    cdef Py_ssize_t S = policy.shape[0], n = order.shape[0]
    cdef Py_ssize_t s, i, k, nnz, n_extra, e, out_k, fill
    cdef Py_ssize_t[::1] slot = np.full(S + 1, -1, dtype=np.intp)
    cdef double[::1] stored = np.empty(S + 1, dtype=np.float64)
    cdef Py_ssize_t[::1] extra_idx = np.empty(S + 1, dtype=np.intp)
    cdef double[::1] extra_val = np.empty(S + 1, dtype=np.float64)
    out_ptr = np.zeros(S + 1, dtype=np.int64)
    cdef int64_t[::1] ptr = out_ptr
    cdef Py_ssize_t[::1] out_idx
    cdef double[::1] out_val
    for fill in range(2):
        if fill:
            indices = np.empty(ptr[S], dtype=np.intp)
            data = np.empty(ptr[S], dtype=np.float64)
            out_idx = indices
            out_val = data
        with nogil:
            for s in range(S):
                i = s * n_actions + policy[s]
                nnz = indptr[i + 1] - indptr[i]
                n_extra = _kernel_row(&cols[indptr[i]], &lo[indptr[i]], &gap[indptr[i]], nnz,
                                      gap_unseen[i], mass[i], &order[0], n, &slot[0],
                                      &stored[0], &extra_idx[0], &extra_val[0])
                if not fill:
                    out_k = n_extra
                    for k in range(nnz):
                        if stored[k] > 0.0:
                            out_k = out_k + 1
                    ptr[s + 1] = ptr[s] + out_k
                    continue
                out_k = ptr[s]
                k = 0
                e = 0
                while k < nnz or e < n_extra:
                    if e == n_extra or (k < nnz and cols[indptr[i] + k] < extra_idx[e]):
                        if stored[k] > 0.0:
                            out_idx[out_k] = cols[indptr[i] + k]
                            out_val[out_k] = stored[k]
                            out_k = out_k + 1
                        k = k + 1
                    else:
                        out_idx[out_k] = extra_idx[e]
                        out_val[out_k] = extra_val[e]
                        out_k = out_k + 1
                        e = e + 1
    return out_ptr, indices, data
