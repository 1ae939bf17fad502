# The pour order of the compiled kernels of the ``fast`` backend, written once for the EVI
# sweeps and kernel pieces (``fast/_evi.pyx``, ``fast/_pieces.pyx``) and the pours over
# confidence boxes (``fast/_robust.pyx``).
#
# The order: ascending value, ties to the lower index, the goal (index ``S``) keyed ``-1`` so
# it comes first among equal values (:func:`_before`); the adversary's order is the same on
# the negated values (:func:`before_in`). Stored entries of a pair are sorted by their
# rank in the order through packed keys (:func:`_entry_key`). EVI sorts a prefix of the
# order (:func:`_pour_order`: a heap, a radix sort, or the repair of the last sweep's prefix);
# the certificates' pours keep the whole order and repair it by insertion
# (:func:`repair_whole_order`).

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from ._linalg cimport PREFETCH_MIN_STATES


cdef enum:
    # Longest run sorted by insertion; longer runs are heap-sorted (``O(k log k)``).
    SORT_SMALL = 24


cdef inline bint _before(double va, Py_ssize_t ia, double vb, Py_ssize_t ib) noexcept nogil:
    """Order of the pour: ascending value, then ascending index (the goal has index -1)."""
    return va < vb or (va == vb and ia < ib)


cdef inline void _swap_keys(double* hv, Py_ssize_t* hi, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """Swap the ``(value, index)`` keys at positions ``a`` and ``b``."""
    cdef double tv = hv[a]
    cdef Py_ssize_t ti = hi[a]
    hv[a] = hv[b]
    hi[a] = hi[b]
    hv[b] = tv
    hi[b] = ti


cdef inline void _sift_down(double* hv, Py_ssize_t* hi, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """Restore the max-heap (by :func:`_before`) below position ``i``."""
    cdef Py_ssize_t child, big
    while True:
        child = 2 * i + 1
        if child >= n:
            return
        big = child
        if child + 1 < n and _before(hv[child], hi[child], hv[child + 1], hi[child + 1]):
            big = child + 1
        if not _before(hv[i], hi[i], hv[big], hi[big]):
            return
        _swap_keys(hv, hi, i, big)
        i = big


cdef inline Py_ssize_t _smallest_order(const double* v, Py_ssize_t S, Py_ssize_t m, double* hv,
                                Py_ssize_t* hi) noexcept nogil:
    """First ``m`` next states of the pour order of ``v`` (length ``S``), goal first.

    A max-heap of the ``m`` best ``(value, index)`` keys, the goal keyed
    ``(0, -1)``: ``O(S log m)``. On return ``hi[t]`` is the ``t``-th next state
    (the goal as ``S``) and ``hv[t]`` its value, for ``t`` below the returned
    length ``min(m, S+1)``.
    """
    cdef Py_ssize_t n, i, j, p
    hv[0] = 0.0
    hi[0] = -1
    n = 1
    for i in range(S):
        if n < m:
            hv[n] = v[i]
            hi[n] = i
            j = n
            n = n + 1
            while j > 0:
                p = (j - 1) // 2
                if not _before(hv[p], hi[p], hv[j], hi[j]):
                    break
                _swap_keys(hv, hi, j, p)
                j = p
        elif _before(v[i], i, hv[0], hi[0]):
            hv[0] = v[i]
            hi[0] = i
            _sift_down(hv, hi, n, 0)
    j = n
    while j > 1:
        j = j - 1
        _swap_keys(hv, hi, 0, j)
        _sift_down(hv, hi, j, 0)
    for j in range(n):
        if hi[j] < 0:
            hi[j] = S
    return n


cdef enum:
    # Bits of a key sorted by one pass of :func:`_radix_order`, its buckets, and its passes.
    RADIX_BITS = 8
    RADIX_BUCKETS = 256
    RADIX_PASSES = 8
    # :func:`_pour_order` sorts afresh by :func:`_radix_order` when the prefix is at least
    # ``1 / RADIX_SHARE`` of the next states (below, the heap's ``O(S log prefix)`` is less).
    RADIX_SHARE = 8


cdef inline uint64_t _order_bits(double x) noexcept nogil:
    """An integer that sorts as ``x`` (not a NaN): ``-0.0`` as ``+0.0`` (``x + 0.0``), then
    the bits of a negative value flipped and the sign bit of the others set."""
    cdef uint64_t b
    x = x + 0.0
    memcpy(&b, &x, sizeof(b))
    return b ^ ((0 - (b >> 63)) | (<uint64_t>1 << 63))


cdef inline void _radix_sort(uint64_t** keys, Py_ssize_t** ids, uint64_t** keys_to,
                             Py_ssize_t** ids_to, Py_ssize_t n) noexcept nogil:
    """Stable least-significant-digit radix sort of ``(*keys)[:n]``, carrying ``(*ids)[:n]``,
    between the two buffers of each: on return ``*keys`` and ``*ids`` point at the sorted
    ones (the pointers swap at each pass that moves entries). ``O(n)`` a pass; a pass whose
    digit is the same for every key moves nothing and is skipped."""
    cdef Py_ssize_t count[RADIX_PASSES][RADIX_BUCKETS]
    cdef Py_ssize_t t, p, d, total, c
    cdef uint64_t k
    cdef uint64_t* swap_k
    cdef Py_ssize_t* swap_i
    if n <= 0:
        return
    memset(count, 0, sizeof(count))
    for t in range(n):
        k = keys[0][t]
        for p in range(RADIX_PASSES):
            count[p][(k >> (RADIX_BITS * p)) & (RADIX_BUCKETS - 1)] += 1
    for p in range(RADIX_PASSES):
        if count[p][(keys[0][0] >> (RADIX_BITS * p)) & (RADIX_BUCKETS - 1)] == n:
            continue
        total = 0
        for d in range(RADIX_BUCKETS):
            c = count[p][d]
            count[p][d] = total
            total = total + c
        for t in range(n):
            k = keys[0][t]
            d = (k >> (RADIX_BITS * p)) & (RADIX_BUCKETS - 1)
            c = count[p][d]
            count[p][d] = c + 1
            keys_to[0][c] = k
            ids_to[0][c] = ids[0][t]
        swap_k = keys[0]
        keys[0] = keys_to[0]
        keys_to[0] = swap_k
        swap_i = ids[0]
        ids[0] = ids_to[0]
        ids_to[0] = swap_i


cdef inline bint _radix_order(const double* v, Py_ssize_t S, Py_ssize_t m, double* val,
                       Py_ssize_t* idx) noexcept nogil:
    """First ``m`` next states of the pour order of ``v`` (length ``S``), goal first, as
    :func:`_smallest_order` writes them; returns False (and writes nothing) on a NaN value
    or when its scratch space cannot be allocated.

    A stable least-significant-digit radix sort of all ``S+1`` keys
    (:func:`_order_bits`) from the goal and the states in ascending index, so
    equal values keep the goal first and then ascending indices: ``O(S)``
    a pass, and no branch on the values. A pass whose digit is the same for
    every key moves nothing and is skipped.
    """
    cdef Py_ssize_t n = S + 1, t
    cdef size_t bytes_keys = n * sizeof(uint64_t), bytes_ids = n * sizeof(Py_ssize_t)
    cdef char* block = <char*>malloc(2 * (bytes_keys + bytes_ids))
    cdef uint64_t* keys
    cdef uint64_t* keys_to
    cdef Py_ssize_t* ids
    cdef Py_ssize_t* ids_to
    cdef bint nan = False
    cdef double x
    if block == NULL:
        return False
    keys = <uint64_t*>block
    keys_to = keys + n
    ids = <Py_ssize_t*>(block + 2 * bytes_keys)
    ids_to = ids + n
    keys[0] = _order_bits(0.0)
    ids[0] = S
    for t in range(S):
        x = v[t]
        nan = nan | (x != x)
        keys[t + 1] = _order_bits(x)
        ids[t + 1] = t
    if nan:
        free(block)
        return False
    _radix_sort(&keys, &ids, &keys_to, &ids_to, n)
    for t in range(m if m < n else n):
        idx[t] = ids[t]
        val[t] = 0.0 if ids[t] == S else v[ids[t]]
    free(block)
    return True


# ---------------------------------------------------------------------------
# Sorting short runs of (rank, item) pairs


cdef inline void _swap(Py_ssize_t* keys, Py_ssize_t* items, Py_ssize_t a,
                       Py_ssize_t b) noexcept nogil:
    cdef Py_ssize_t t = keys[a]
    keys[a] = keys[b]
    keys[b] = t
    t = items[a]
    items[a] = items[b]
    items[b] = t


cdef inline void _sift_keys(Py_ssize_t* keys, Py_ssize_t* items, Py_ssize_t root,
                            Py_ssize_t end) noexcept nogil:
    """Restore the max-heap of ``keys[:end]`` below ``root`` (items follow their keys)."""
    cdef Py_ssize_t child
    while True:
        child = 2 * root + 1
        if child >= end:
            return
        if child + 1 < end and keys[child] < keys[child + 1]:
            child = child + 1
        if keys[root] >= keys[child]:
            return
        _swap(keys, items, root, child)
        root = child


cdef inline void _sort_by_key(Py_ssize_t* keys, Py_ssize_t* items, Py_ssize_t n) noexcept nogil:
    """Sort ``(keys, items)`` ascending by distinct keys: insertion below
    :data:`SORT_SMALL`, heap sort above (``O(n log n)``)."""
    cdef Py_ssize_t i, j, end
    cdef Py_ssize_t k, it
    if n <= SORT_SMALL:
        for i in range(1, n):
            k = keys[i]
            it = items[i]
            j = i
            while j > 0 and keys[j - 1] > k:
                keys[j] = keys[j - 1]
                items[j] = items[j - 1]
                j = j - 1
            keys[j] = k
            items[j] = it
        return
    i = n // 2
    while i > 0:
        i = i - 1
        _sift_keys(keys, items, i, n)
    end = n
    while end > 1:
        end = end - 1
        _swap(keys, items, 0, end)
        _sift_keys(keys, items, 0, end)


cdef enum:
    # Bits of a packed entry key below its rank.
    KEY_SHIFT = 32
    # Entries sorted by the network of :func:`_sort_net`.
    SORT_NET = 4


cdef inline int64_t _entry_key(Py_ssize_t rank, Py_ssize_t position) noexcept nogil:
    """Key of a stored entry: its rank in the pour order (below ``2**31``) above its position
    in the pair's row (below ``2**32``), so keys sort by rank."""
    return (<int64_t>rank << KEY_SHIFT) | position


cdef inline Py_ssize_t _entry_rank(int64_t key) noexcept nogil:
    """The rank packed in a key of :func:`_entry_key`."""
    return <Py_ssize_t>(key >> KEY_SHIFT)


cdef inline Py_ssize_t _entry_position(int64_t key) noexcept nogil:
    """The position packed in a key of :func:`_entry_key`."""
    return <Py_ssize_t>(key & ((<int64_t>1 << KEY_SHIFT) - 1))


cdef inline void _exchange(int64_t* keys, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """Put the smaller of ``keys[a]`` and ``keys[b]`` at ``a``, without a branch."""
    cdef int64_t x = keys[a], y = keys[b]
    keys[a] = x if x < y else y
    keys[b] = y if x < y else x


cdef inline void _sort_net(int64_t* keys) noexcept nogil:
    """Sort ``keys[:4]`` by an optimal sorting network (five exchanges, no branch)."""
    _exchange(keys, 0, 1)
    _exchange(keys, 2, 3)
    _exchange(keys, 0, 2)
    _exchange(keys, 1, 3)
    _exchange(keys, 1, 2)


cdef inline void _sort_keys(int64_t* keys, Py_ssize_t n) noexcept nogil:
    """Sort distinct ``keys[:n]`` ascending: insertion below :data:`SORT_SMALL`, heap sort
    above (``O(n log n)``)."""
    cdef Py_ssize_t i, j, end, root, child
    cdef int64_t k
    if n <= SORT_SMALL:
        for i in range(1, n):
            k = keys[i]
            j = i
            while j > 0 and keys[j - 1] > k:
                keys[j] = keys[j - 1]
                j = j - 1
            keys[j] = k
        return
    end = n
    i = n // 2
    while end > 1:
        if i > 0:
            i = i - 1
            root = i
        else:
            end = end - 1
            k = keys[0]
            keys[0] = keys[end]
            keys[end] = k
            root = 0
        while True:
            child = 2 * root + 1
            if child >= end:
                break
            if child + 1 < end and keys[child] < keys[child + 1]:
                child = child + 1
            if keys[root] >= keys[child]:
                break
            k = keys[root]
            keys[root] = keys[child]
            keys[child] = k
            root = child



cdef struct Order:
    const double* v      # v_ext, shape (S+1,), v[S] = 0
    const Py_ssize_t* idx  # the pour order prefix, length n (goal as S)
    const double* val    # v of each entry of the prefix
    const double* cum_v  # prefix sums of val, length n+1
    const int* rank      # rank[idx[t]] = t inside the prefix, S+1 outside
    Py_ssize_t n         # at least 1
    Py_ssize_t goal      # S
    double last_v        # value and key (goal -1) of the last state of the prefix
    Py_ssize_t last_k
    bint by_rank         # whether a stored entry's rank tells if it is inside the prefix


cdef inline Py_ssize_t _key(Py_ssize_t j, Py_ssize_t goal) noexcept nogil:
    return -1 if j == goal else j


cdef inline Py_ssize_t _repair_order(const double* v, Py_ssize_t S, Py_ssize_t n, Py_ssize_t room,
                              double* val, Py_ssize_t* idx, int* rank) noexcept nogil:
    """The ``n`` first next states of the pour order of ``v``, from the ``n`` an earlier sweep
    left in ``idx`` (their ranks in ``rank``, ``S+1`` for the other states); returns ``n``,
    or 0 when they must be sorted afresh.

    Every state outside the earlier prefix that comes before its last state
    (under ``v``) joins it, then an insertion sort orders the lot, whose first
    ``n`` are the new prefix: the others come after ``n`` states, so after
    the prefix. ``O(S + n + inversions)``, the earlier order being nearly the
    new one when ``v`` changes little. The states are scanned without a branch
    on their values: each one is written after the kept ones and kept when it
    joins. Gives up (0) when ``room - n`` states or more join, when the sort
    would take more than ``9 n`` moves, or on a NaN value; :func:`_pour_order`
    then sorts afresh.
    Works on keys (the goal as -1) and writes the goal back as ``S``; the
    states that leave the prefix get the rank ``S+1`` again.
    """
    cdef double last_v = 0.0, vi
    cdef Py_ssize_t last_k = 0, t, i, j, k, e = n, moves = 0, budget = 9 * n
    cdef bint nan = False
    for t in range(n):
        j = idx[t]
        if j == S:
            vi = 0.0
            j = -1
        else:
            vi = v[j]
        if vi != vi:
            return 0
        val[t] = vi
        idx[t] = j
        if t == 0 or _before(last_v, last_k, vi, j):
            last_v = vi
            last_k = j
    if rank[S] >= n and _before(0.0, -1, last_v, last_k):
        val[e] = 0.0
        idx[e] = -1
        e = e + 1
        if e == room:
            return 0
    for i in range(S):
        vi = v[i]
        nan = nan | (vi != vi)
        val[e] = vi
        idx[e] = i
        e = e + ((rank[i] >= n) & ((vi < last_v) | ((vi == last_v) & (i < last_k))))
        if e == room:
            return 0
    if nan:
        return 0
    for t in range(1, e):
        vi = val[t]
        k = idx[t]
        j = t
        while j > 0 and _before(vi, k, val[j - 1], idx[j - 1]):
            val[j] = val[j - 1]
            idx[j] = idx[j - 1]
            j = j - 1
        moves = moves + (t - j)
        if moves > budget:
            return 0
        val[j] = vi
        idx[j] = k
    for t in range(e):
        if idx[t] < 0:
            idx[t] = S
        if t >= n:
            rank[idx[t]] = <int>(S + 1)
    return n


cdef inline void _pour_order(Order* o, const double* v_ext, Py_ssize_t S, Py_ssize_t prefix,
                      Py_ssize_t known, Py_ssize_t room, double* val, Py_ssize_t* idx,
                      double* cum_v, int* rank) noexcept nogil:
    """Sort the ``prefix`` first next states of the pour order of ``v_ext`` into ``o``:
    their indices, values, prefix sums of the values and ranks.

    When an earlier sweep left ``known > 0`` of them in ``idx`` (with their
    ranks), :func:`_repair_order` starts from those; otherwise, or when it
    gives up, they are sorted afresh: by the radix sort of :func:`_radix_order`
    (``O(S)``) when ``prefix`` is at least ``S / RADIX_SHARE``, else (or on a
    NaN value) by the heap of :func:`_smallest_order` (``O(S log prefix)``).
    Each gives the one order of the pour (ties to the lower index). ``rank``
    (``(S+1,)``) holds ``S+1`` outside the prefix, before and after.
    """
    cdef Py_ssize_t t, n = 0
    if known > 0:
        n = _repair_order(v_ext, S, known, room, val, idx, rank)
    if n == 0:
        for t in range(S + 1):
            rank[t] = <int>(S + 1)
        if prefix * RADIX_SHARE >= S and _radix_order(v_ext, S, prefix, val, idx):
            n = min(prefix, S + 1)
        else:
            n = _smallest_order(v_ext, S, prefix, val, idx)
    cum_v[0] = 0.0
    for t in range(n):
        cum_v[t + 1] = cum_v[t] + val[t]
        rank[idx[t]] = <int>t
    o.v = v_ext
    o.idx = idx
    o.val = val
    o.cum_v = cum_v
    o.rank = rank
    o.n = n
    o.goal = S
    o.last_v = val[n - 1]
    o.last_k = _key(idx[n - 1], S)
    o.by_rank = S < PREFETCH_MIN_STATES


cdef inline bint before_in(const double* v, int64_t a, int64_t b, bint descending) noexcept nogil:
    """Whether next state ``a`` comes before ``b`` in the pour order of ``v`` (``v`` without a
    NaN): :func:`_before` on the values, or on the negated values when ``descending`` (the
    adversary's order: decreasing value), ties to the lower index either way."""
    if descending:
        return _before(-v[a], a, -v[b], b)
    return _before(v[a], a, v[b], b)


cdef inline bint repair_whole_order(const double* values, int64_t* order, Py_ssize_t n_next,
                                    bint descending, int64_t budget) noexcept nogil:
    """Sort the permutation ``order`` of the ``n_next = S+1`` next states in place into the
    pour order of ``values`` (:func:`before_in`), by insertion, the goal already in its place
    (first, or last when ``descending``). Returns False, with ``order`` a permutation in any
    order, on a NaN value or when the insertions would move more than ``budget`` entries."""
    cdef Py_ssize_t S = n_next - 1, first = 0 if descending else 1
    cdef Py_ssize_t t, u
    cdef int64_t key, moves = 0
    cdef bint done = True
    for t in range(n_next):
        if values[t] != values[t]:
            done = False
    t = first + 1
    while done and t < first + S:
        key = order[t]
        u = t - 1
        while u >= first and before_in(values, key, order[u], descending):
            order[u + 1] = order[u]
            u = u - 1
            moves = moves + 1
        order[u + 1] = key
        done = moves <= budget
        t = t + 1
    return done


cdef struct WholeOrder:
    # The whole pour order of a value vector, for the pours over confidence boxes.
    const int64_t* order      # next state at each position
    const int64_t* rank       # position of each next state
    const double* cum_v       # prefix sums of the finite values along the order
    const int64_t* cum_inf    # prefix counts of the infinite values along the order
    const double* v           # values, shape (S+1,)
