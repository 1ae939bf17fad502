/* One pass over dense counts: whether they are plainly valid, their largest entry, and
 * their nonzero entries as CSR rows.
 *
 * Private C helper of fast/_evi.pyx (scan_dense). Only integer operations on the
 * bit patterns of the counts: every result is the same bit for bit whatever
 * instructions run them. Blocks of entries are read as 32-byte vectors with the
 * GCC/Clang vector extensions (plain 64-bit words with other compilers). On x86-64
 * with GCC or Clang the scan is compiled twice, for the baseline of the target and
 * for AVX2 (whose block test is one VPTEST), and the CPU the module runs on picks one
 * (`__builtin_cpu_supports`); elsewhere it is compiled once, for the target.
 */
#ifndef SSPGM_SCAN_H
#define SSPGM_SCAN_H

#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target)
#define SSPGM_AVX2_DISPATCH 1
#include <immintrin.h>
#endif
#endif

#if defined(__GNUC__)
#define SSPGM_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define SSPGM_ALWAYS_INLINE inline
#endif

/* Entries read at once: one OR of their bits tells a block of zeros. */
#define SSPGM_SCAN_BLOCK 16
/* The lowest exponent bit: b + SSPGM_EXP_STEP has its sign bit set when the bits b of a
 * float64 with its sign bit clear are those of +inf or a NaN, and clear when finite. */
#define SSPGM_EXP_STEP ((uint64_t)1 << 52)
#define SSPGM_SIGN ((uint64_t)1 << 63)

/* The float64 whose bit pattern is `bits`. */
static inline double sspgm_double_of_bits(uint64_t bits)
{
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* Store the columns of the entries row[b..stop) at cols[nnz..] without a branch, keeping
 * those of the entries that are not +0.0 or -0.0 (the next one overwrites the others);
 * return the new nnz. Writes up to stop - b columns from nnz on, whatever it keeps. */
static inline int64_t sspgm_keep_nonzero(const double *row, int64_t b, int64_t stop,
                                         int64_t nnz, int32_t *cols)
{
    int64_t k;
    for (k = b; k < stop; k++) {
        uint64_t bits;
        memcpy(&bits, row + k, sizeof bits);
        cols[nnz] = (int32_t)k;
        nnz += (bits << 1) != 0;
    }
    return nnz;
}

/* The OR of the bit patterns of SSPGM_SCAN_BLOCK entries at x (the return value), and
 * into the lanes of *flags the OR of b | (b + SSPGM_EXP_STEP) over their bit patterns b,
 * whose sign bit is set when one of them is negative, -0.0, infinite or NaN. */
#if defined(__GNUC__)
typedef uint64_t sspgm_flags __attribute__((vector_size(32), aligned(8)));

static inline uint64_t sspgm_block_bits(const double *x, sspgm_flags *flags)
{
    const sspgm_flags step = {SSPGM_EXP_STEP, SSPGM_EXP_STEP, SSPGM_EXP_STEP, SSPGM_EXP_STEP};
    sspgm_flags x0, x1, x2, x3, any, over;
    memcpy(&x0, x, sizeof x0);
    memcpy(&x1, x + 4, sizeof x1);
    memcpy(&x2, x + 8, sizeof x2);
    memcpy(&x3, x + 12, sizeof x3);
    any = (x0 | x1) | (x2 | x3);
    over = ((x0 + step) | (x1 + step)) | ((x2 + step) | (x3 + step));
    *flags |= any | over;
    return (any[0] | any[1]) | (any[2] | any[3]);
}

static inline uint64_t sspgm_flags_bits(const sspgm_flags *flags)
{
    return ((*flags)[0] | (*flags)[1]) | ((*flags)[2] | (*flags)[3]);
}
#else
typedef uint64_t sspgm_flags;

static inline uint64_t sspgm_block_bits(const double *x, sspgm_flags *flags)
{
    uint64_t any = 0, over = 0;
    int k;
    for (k = 0; k < SSPGM_SCAN_BLOCK; k++) {
        uint64_t bits;
        memcpy(&bits, x + k, sizeof bits);
        any |= bits;
        over |= bits + SSPGM_EXP_STEP;
    }
    *flags |= any | over;
    return any;
}

static inline uint64_t sspgm_flags_bits(const sspgm_flags *flags)
{
    return *flags;
}
#endif

#ifdef SSPGM_AVX2_DISPATCH
/* sspgm_block_bits with AVX2 instructions: the zero test of the block is one VPTEST.
 * Returns whether a bit is set, not the OR itself (the caller tests it against 0). */
__attribute__((target("avx2")))
static inline uint64_t sspgm_block_bits_avx2(const double *x, sspgm_flags *flags)
{
    const __m256i step = _mm256_set1_epi64x((long long)SSPGM_EXP_STEP);
    __m256i x0 = _mm256_loadu_si256((const __m256i *)x);
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(x + 4));
    __m256i x2 = _mm256_loadu_si256((const __m256i *)(x + 8));
    __m256i x3 = _mm256_loadu_si256((const __m256i *)(x + 12));
    __m256i any = _mm256_or_si256(_mm256_or_si256(x0, x1), _mm256_or_si256(x2, x3));
    __m256i over = _mm256_or_si256(
        _mm256_or_si256(_mm256_add_epi64(x0, step), _mm256_add_epi64(x1, step)),
        _mm256_or_si256(_mm256_add_epi64(x2, step), _mm256_add_epi64(x3, step)));
    *flags |= (sspgm_flags)_mm256_or_si256(any, over);
    return !_mm256_testz_si256(any, any);
}
#endif

typedef uint64_t (*sspgm_block_fn)(const double *, sspgm_flags *);

/* Scan the `n_rows` rows of `row_len` counts at `counts` (C-contiguous).
 *
 * Writes `indptr[0..n_rows]` and, row after row, the column and value of every entry
 * other than +0.0 and -0.0 into `cols` and `data`, which hold max_nnz + SSPGM_SCAN_BLOCK
 * entries: the columns of a block of entries with a bit set are stored without a branch,
 * then the values of the row's nonzero entries are read again, from the cache. Beyond
 * max_nnz entries it stops storing them and returns a number above max_nnz (`indptr` is
 * then partial). Every entry is read either way: `*valid` is 1
 * when each is finite with its sign bit clear, else 0; `*largest` is then the largest.
 * Returns the number of stored entries. */
static SSPGM_ALWAYS_INLINE int64_t sspgm_scan_rows(
    sspgm_block_fn block_bits, const double *counts, int64_t n_rows, int64_t row_len,
    int64_t max_nnz, int64_t *indptr, int32_t *cols, double *data, int *valid,
    double *largest)
{
    int64_t i, b, k, nnz = 0;
    uint64_t top = 0, flags = 0;
    sspgm_flags blocks = {0};
    indptr[0] = 0;
    for (i = 0; i < n_rows; i++) {
        const double *row = counts + i * row_len;
        for (b = 0; b + SSPGM_SCAN_BLOCK <= row_len; b += SSPGM_SCAN_BLOCK) {
            if (block_bits(row + b, &blocks) != 0 && nnz <= max_nnz) {
                nnz = sspgm_keep_nonzero(row, b, b + SSPGM_SCAN_BLOCK, nnz, cols);
            }
        }
        for (k = b; k < row_len; k++) {
            uint64_t bits;
            memcpy(&bits, row + k, sizeof bits);
            flags |= bits | (bits + SSPGM_EXP_STEP);
        }
        if (nnz <= max_nnz) {
            nnz = sspgm_keep_nonzero(row, b, row_len, nnz, cols);
            for (k = indptr[i]; k < nnz; k++) {
                uint64_t bits;
                memcpy(&bits, row + cols[k], sizeof bits);
                top = bits > top ? bits : top;
                data[k] = row[cols[k]];
            }
        }
        indptr[i + 1] = nnz;
    }
    if (nnz > max_nnz) {
        for (k = 0; k < n_rows * row_len; k++) {
            uint64_t bits;
            memcpy(&bits, counts + k, sizeof bits);
            top = bits > top ? bits : top;
        }
    }
    flags |= sspgm_flags_bits(&blocks);
    *valid = (flags & SSPGM_SIGN) == 0;
    *largest = sspgm_double_of_bits(top);
    return nnz;
}

#ifdef SSPGM_AVX2_DISPATCH
__attribute__((target("avx2")))
static int64_t sspgm_scan_rows_avx2(const double *counts, int64_t n_rows, int64_t row_len,
                                    int64_t max_nnz, int64_t *indptr, int32_t *cols,
                                    double *data, int *valid, double *largest)
{
    return sspgm_scan_rows(sspgm_block_bits_avx2, counts, n_rows, row_len, max_nnz, indptr,
                           cols, data, valid, largest);
}
#endif

/* sspgm_scan_rows on the instructions of the CPU it runs on. */
static int64_t sspgm_scan_counts(const double *counts, int64_t n_rows, int64_t row_len,
                                 int64_t max_nnz, int64_t *indptr, int32_t *cols,
                                 double *data, int *valid, double *largest)
{
#ifdef SSPGM_AVX2_DISPATCH
    if (__builtin_cpu_supports("avx2")) {
        return sspgm_scan_rows_avx2(counts, n_rows, row_len, max_nnz, indptr, cols, data,
                                    valid, largest);
    }
#endif
    return sspgm_scan_rows(sspgm_block_bits, counts, n_rows, row_len, max_nnz, indptr, cols,
                           data, valid, largest);
}

#endif
