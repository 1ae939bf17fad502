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

/* Whether a bit is set among the bit patterns of the SSPGM_SCAN_BLOCK entries at x: a
 * block where none is holds +0.0 only, which is plainly valid. */
#if defined(__GNUC__)
typedef uint64_t sspgm_words __attribute__((vector_size(32), aligned(8)));
typedef int64_t sspgm_lanes __attribute__((vector_size(32), aligned(8)));

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

/* The SSPGM_SCAN_BLOCK entries at x as a bit mask, bit k set when x[k] is not +0.0 or
 * -0.0. */
static inline uint64_t sspgm_block_nonzero(const double *x)
{
    uint64_t mask = 0;
    int k;
    for (k = 0; k < SSPGM_SCAN_BLOCK; k++) {
        uint64_t bits;
        memcpy(&bits, x + k, sizeof bits);
        mask |= (uint64_t)((bits << 1) != 0) << k;
    }
    return mask;
}

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

/* The bits of one vector of four entries that are not +-0.0 (a 64-bit compare of the
 * patterns shifted left by one with zero, its lanes' sign bits gathered). */
__attribute__((target("avx2")))
static inline uint64_t sspgm_zeros_avx2(const double *x)
{
    __m256i bits = _mm256_loadu_si256((const __m256i *)x);
    __m256i zero = _mm256_cmpeq_epi64(_mm256_slli_epi64(bits, 1), _mm256_setzero_si256());
    return (uint64_t)_mm256_movemask_pd(_mm256_castsi256_pd(zero));
}

/* sspgm_block_nonzero with AVX2 instructions. */
__attribute__((target("avx2")))
static inline uint64_t sspgm_block_nonzero_avx2(const double *x)
{
    uint64_t zeros = sspgm_zeros_avx2(x) | (sspgm_zeros_avx2(x + 4) << 4)
                     | (sspgm_zeros_avx2(x + 8) << 8) | (sspgm_zeros_avx2(x + 12) << 12);
    return zeros ^ 0xffff;
}
#endif

/* What the entries read so far tell: `flags`, the OR of b | (b + SSPGM_EXP_STEP) over
 * their bit patterns b, whose sign bit is set when one of them is negative, -0.0,
 * infinite or NaN; and `top`, the largest of their bit patterns as signed integers,
 * which is that of the largest entry when none is. Lanes of four words each, or one
 * word with other compilers. */
#if defined(__GNUC__)
typedef struct {
    sspgm_words flags;
    sspgm_lanes top;
} sspgm_seen;

/* Raise each lane of *top to that of *x where it is larger. */
static SSPGM_ALWAYS_INLINE void sspgm_raise(sspgm_lanes *top, const sspgm_lanes *x)
{
    sspgm_lanes x_above = *x > *top;
    *top = (*x & x_above) | (*top & ~x_above);
}

/* Add the SSPGM_SCAN_BLOCK entries at x to `seen`. */
static SSPGM_ALWAYS_INLINE void sspgm_see_block(sspgm_seen *seen, const double *x)
{
    const sspgm_words step = {SSPGM_EXP_STEP, SSPGM_EXP_STEP, SSPGM_EXP_STEP, SSPGM_EXP_STEP};
    sspgm_words x0, x1, x2, x3;
    sspgm_lanes top01, top23, lanes1, lanes3;
    memcpy(&x0, x, sizeof x0);
    memcpy(&x1, x + 4, sizeof x1);
    memcpy(&x2, x + 8, sizeof x2);
    memcpy(&x3, x + 12, sizeof x3);
    seen->flags |= ((x0 | (x0 + step)) | (x1 | (x1 + step)))
                   | ((x2 | (x2 + step)) | (x3 | (x3 + step)));
    top01 = (sspgm_lanes)x0;
    lanes1 = (sspgm_lanes)x1;
    top23 = (sspgm_lanes)x2;
    lanes3 = (sspgm_lanes)x3;
    sspgm_raise(&top01, &lanes1);
    sspgm_raise(&top23, &lanes3);
    sspgm_raise(&top01, &top23);
    sspgm_raise(&seen->top, &top01);
}

/* Add the entry of bit pattern `bits` to `seen`. */
static SSPGM_ALWAYS_INLINE void sspgm_see_entry(sspgm_seen *seen, uint64_t bits)
{
    seen->flags[0] |= bits | (bits + SSPGM_EXP_STEP);
    seen->top[0] = (int64_t)bits > seen->top[0] ? (int64_t)bits : seen->top[0];
}

/* The flags and the top of `seen`, its lanes merged. */
static inline uint64_t sspgm_seen_flags(const sspgm_seen *seen)
{
    return (seen->flags[0] | seen->flags[1]) | (seen->flags[2] | seen->flags[3]);
}

static inline int64_t sspgm_seen_top(const sspgm_seen *seen)
{
    int64_t top = seen->top[0];
    int k;
    for (k = 1; k < 4; k++) {
        top = seen->top[k] > top ? seen->top[k] : top;
    }
    return top;
}
#else
typedef struct {
    uint64_t flags;
    int64_t top;
} sspgm_seen;

static inline void sspgm_see_entry(sspgm_seen *seen, uint64_t bits)
{
    seen->flags |= bits | (bits + SSPGM_EXP_STEP);
    seen->top = (int64_t)bits > seen->top ? (int64_t)bits : seen->top;
}

static inline void sspgm_see_block(sspgm_seen *seen, const double *x)
{
    int k;
    for (k = 0; k < SSPGM_SCAN_BLOCK; k++) {
        uint64_t bits;
        memcpy(&bits, x + k, sizeof bits);
        sspgm_see_entry(seen, bits);
    }
}

static inline uint64_t sspgm_seen_flags(const sspgm_seen *seen)
{
    return seen->flags;
}

static inline int64_t sspgm_seen_top(const sspgm_seen *seen)
{
    return seen->top;
}
#endif

/* Store the entries of the block of row[start..start + SSPGM_SCAN_BLOCK) that `mask`
 * names (bit k for row[start + k]): their columns at cols[nnz..], their values at
 * data[nnz..], in order; return the new nnz. */
static SSPGM_ALWAYS_INLINE int64_t sspgm_store_block(const double *row, int64_t start,
                                                     uint64_t mask, int64_t nnz,
                                                     int32_t *cols, double *data)
{
    while (mask != 0) {
        int64_t k = start + sspgm_lowest_set(mask);
        mask &= mask - 1;
        cols[nnz] = (int32_t)k;
        memcpy(data + nnz, row + k, sizeof *data);
        nnz++;
    }
    return nnz;
}

typedef uint64_t (*sspgm_block_fn)(const double *);

/* Scan the `n_rows` rows of `row_len` counts at `counts` (C-contiguous).
 *
 * Writes `indptr[0..n_rows]` and, row after row, the column and value of every entry
 * other than +0.0 and -0.0 into `cols` and `data`, which hold max_nnz + SSPGM_SCAN_BLOCK
 * entries. A row is read a run of up to SSPGM_SCAN_RUN blocks at a time: one bit per
 * block (`block_bits`) tells whether any of its entries has a bit set, without a
 * branch; then only the blocks with a bit set are read again (from the cache), their
 * entries checked and those other than +-0.0 (`block_nonzero`) stored. The last
 * SSPGM_SCAN_BLOCK entries of a row whose length is not a multiple of it are read as
 * one more block, of which only the entries after the row's last whole block are
 * stored; a row shorter than a block is read one entry at a time. A block of zero bits
 * holds +0.0 only, plainly valid. Beyond max_nnz entries it stops storing them and
 * returns a number above max_nnz (`indptr` is then partial). Every entry is checked
 * either way: `*valid` is 1 when each is finite with its sign bit clear, else 0;
 * `*largest` is then the largest.
 * Returns the number of stored entries. */
static SSPGM_ALWAYS_INLINE int64_t sspgm_scan_rows(
    sspgm_block_fn block_bits, sspgm_block_fn block_nonzero, const double *counts,
    int64_t n_rows, int64_t row_len, int64_t max_nnz, int64_t *indptr, int32_t *cols,
    double *data, int *valid, double *largest)
{
    const int64_t tail = row_len % SSPGM_SCAN_BLOCK;
    int64_t i, b, k, nnz = 0;
    sspgm_seen seen;
    memset(&seen, 0, sizeof seen);
    indptr[0] = 0;
    for (i = 0; i < n_rows; i++) {
        const double *row = counts + i * row_len;
        if (row_len < SSPGM_SCAN_BLOCK) {
            for (k = 0; k < row_len; k++) {
                uint64_t bits;
                memcpy(&bits, row + k, sizeof bits);
                sspgm_see_entry(&seen, bits);
                if ((bits << 1) != 0 && nnz <= max_nnz) {
                    cols[nnz] = (int32_t)k;
                    memcpy(data + nnz, row + k, sizeof *data);
                    nnz++;
                }
            }
            indptr[i + 1] = nnz;
            continue;
        }
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
                sspgm_see_block(&seen, row + start);
                if (nnz <= max_nnz) {
                    nnz = sspgm_store_block(row, start, block_nonzero(row + start), nnz, cols,
                                            data);
                }
            }
        }
        if (tail != 0 && block_bits(row + row_len - SSPGM_SCAN_BLOCK) != 0) {
            sspgm_see_block(&seen, row + row_len - SSPGM_SCAN_BLOCK);
            if (nnz <= max_nnz) {
                uint64_t mask = block_nonzero(row + row_len - SSPGM_SCAN_BLOCK);
                nnz = sspgm_store_block(row, row_len - SSPGM_SCAN_BLOCK,
                                        mask >> (SSPGM_SCAN_BLOCK - tail)
                                            << (SSPGM_SCAN_BLOCK - tail),
                                        nnz, cols, data);
            }
        }
        indptr[i + 1] = nnz;
    }
    *valid = (sspgm_seen_flags(&seen) & SSPGM_SIGN) == 0;
    *largest = sspgm_double_of_bits((uint64_t)sspgm_seen_top(&seen));
    return nnz;
}

#ifdef SSPGM_AVX2_DISPATCH
__attribute__((target("avx2")))
static int64_t sspgm_scan_rows_avx2(const double *counts, int64_t n_rows, int64_t row_len,
                                    int64_t max_nnz, int64_t *indptr, int32_t *cols,
                                    double *data, int *valid, double *largest)
{
    return sspgm_scan_rows(sspgm_block_bits_avx2, sspgm_block_nonzero_avx2, counts, n_rows,
                           row_len, max_nnz, indptr, cols, data, valid, largest);
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
    return sspgm_scan_rows(sspgm_block_bits, sspgm_block_nonzero, counts, n_rows, row_len,
                           max_nnz, indptr, cols, data, valid, largest);
}

#endif
