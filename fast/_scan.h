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
/* Blocks tested before the ones with a bit set are read again: one bit each in a word. */
#define SSPGM_SCAN_RUN 64
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

/* The position of the lowest set bit of x, which is not 0. */
static inline int64_t sspgm_lowest_set(uint64_t x)
{
#if defined(__GNUC__)
    return __builtin_ctzll(x);
#else
    int64_t k = 0;
    while ((x & 1) == 0) {
        x >>= 1;
        k++;
    }
    return k;
#endif
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

/* Whether a bit is set among the bit patterns of the SSPGM_SCAN_BLOCK entries at x: a
 * block where none is holds +0.0 only, which is plainly valid. */
#if defined(__GNUC__)
typedef uint64_t sspgm_words __attribute__((vector_size(32), aligned(8)));

static inline uint64_t sspgm_block_bits(const double *x)
{
    sspgm_words x0, x1, x2, x3, any;
    memcpy(&x0, x, sizeof x0);
    memcpy(&x1, x + 4, sizeof x1);
    memcpy(&x2, x + 8, sizeof x2);
    memcpy(&x3, x + 12, sizeof x3);
    any = (x0 | x1) | (x2 | x3);
    return (any[0] | any[1]) | (any[2] | any[3]);
}
#else
static inline uint64_t sspgm_block_bits(const double *x)
{
    uint64_t any = 0;
    int k;
    for (k = 0; k < SSPGM_SCAN_BLOCK; k++) {
        uint64_t bits;
        memcpy(&bits, x + k, sizeof bits);
        any |= bits;
    }
    return any;
}
#endif

#ifdef SSPGM_AVX2_DISPATCH
/* sspgm_block_bits with AVX2 instructions: the test is one VPTEST. */
__attribute__((target("avx2")))
static inline uint64_t sspgm_block_bits_avx2(const double *x)
{
    __m256i x0 = _mm256_loadu_si256((const __m256i *)x);
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(x + 4));
    __m256i x2 = _mm256_loadu_si256((const __m256i *)(x + 8));
    __m256i x3 = _mm256_loadu_si256((const __m256i *)(x + 12));
    __m256i any = _mm256_or_si256(_mm256_or_si256(x0, x1), _mm256_or_si256(x2, x3));
    return !_mm256_testz_si256(any, any);
}
#endif

/* The OR of b | (b + SSPGM_EXP_STEP) over the bit patterns b of the entries x[0..n): its
 * sign bit is set when one of them is negative, -0.0, infinite or NaN. */
static inline uint64_t sspgm_flags_of(const double *x, int64_t n)
{
    uint64_t flags = 0;
    int64_t k;
    for (k = 0; k < n; k++) {
        uint64_t bits;
        memcpy(&bits, x + k, sizeof bits);
        flags |= bits | (bits + SSPGM_EXP_STEP);
    }
    return flags;
}

/* sspgm_flags_of on the SSPGM_SCAN_BLOCK entries at x, as four vectors of four words. */
#if defined(__GNUC__)
static inline uint64_t sspgm_block_flags(const double *x)
{
    const sspgm_words step = {SSPGM_EXP_STEP, SSPGM_EXP_STEP, SSPGM_EXP_STEP, SSPGM_EXP_STEP};
    sspgm_words x0, x1, x2, x3, flags;
    memcpy(&x0, x, sizeof x0);
    memcpy(&x1, x + 4, sizeof x1);
    memcpy(&x2, x + 8, sizeof x2);
    memcpy(&x3, x + 12, sizeof x3);
    flags = ((x0 | (x0 + step)) | (x1 | (x1 + step))) | ((x2 | (x2 + step)) | (x3 | (x3 + step)));
    return (flags[0] | flags[1]) | (flags[2] | flags[3]);
}
#else
static inline uint64_t sspgm_block_flags(const double *x)
{
    return sspgm_flags_of(x, SSPGM_SCAN_BLOCK);
}
#endif

typedef uint64_t (*sspgm_block_fn)(const double *);

/* Scan the `n_rows` rows of `row_len` counts at `counts` (C-contiguous).
 *
 * Writes `indptr[0..n_rows]` and, row after row, the column and value of every entry
 * other than +0.0 and -0.0 into `cols` and `data`, which hold max_nnz + SSPGM_SCAN_BLOCK
 * entries. A row is read a run of up to SSPGM_SCAN_RUN blocks at a time: one bit per
 * block tells whether any of its entries has a bit set, without a branch; then only the
 * blocks with a bit set are read again (from the cache), their entries checked and the
 * columns of those other than +-0.0 stored without a branch; then the values of the
 * row's nonzero entries. A block of zero bits holds +0.0 only, plainly valid. Beyond
 * max_nnz entries it stops storing them and returns a number above max_nnz (`indptr` is
 * then partial). Every entry is read either way: `*valid` is 1 when each is finite with
 * its sign bit clear, else 0; `*largest` is then the largest.
 * Returns the number of stored entries. */
static SSPGM_ALWAYS_INLINE int64_t sspgm_scan_rows(
    sspgm_block_fn block_bits, const double *counts, int64_t n_rows, int64_t row_len,
    int64_t max_nnz, int64_t *indptr, int32_t *cols, double *data, int *valid,
    double *largest)
{
    int64_t i, b, k, nnz = 0;
    uint64_t top = 0, flags = 0;
    indptr[0] = 0;
    for (i = 0; i < n_rows; i++) {
        const double *row = counts + i * row_len;
        for (b = 0; b + SSPGM_SCAN_BLOCK <= row_len; b += SSPGM_SCAN_RUN * SSPGM_SCAN_BLOCK) {
            int64_t j, n_blocks = (row_len - b) / SSPGM_SCAN_BLOCK;
            uint64_t set = 0;
            if (n_blocks > SSPGM_SCAN_RUN) {
                n_blocks = SSPGM_SCAN_RUN;
            }
            for (j = 0; j < n_blocks; j++) {
                set |= (uint64_t)(block_bits(row + b + j * SSPGM_SCAN_BLOCK) != 0) << j;
            }
            while (set != 0) {
                int64_t start = b + sspgm_lowest_set(set) * SSPGM_SCAN_BLOCK;
                set &= set - 1;
                flags |= sspgm_block_flags(row + start);
                if (nnz <= max_nnz) {
                    nnz = sspgm_keep_nonzero(row, start, start + SSPGM_SCAN_BLOCK, nnz, cols);
                }
            }
        }
        b = row_len - row_len % SSPGM_SCAN_BLOCK;
        flags |= sspgm_flags_of(row + b, row_len - b);
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
