/* One pass over dense counts: whether they are plainly valid (finite, sign bit clear,
 * integers), their largest entry, and their nonzero entries as CSR rows.
 *
 * Private C helper of fast/_boxes.pyx (scan_dense). Only integer operations on the
 * bit patterns of the counts: every result is the same bit for bit whatever
 * instructions run them. Blocks of entries are read as 32-byte vectors with the
 * GCC/Clang vector extensions (plain 64-bit words with other compilers). On x86-64
 * with GCC or Clang the scan is compiled twice, for the baseline of the target and
 * for AVX2 (whose block test is one VPTEST, and whose mask of a block's nonzero
 * entries is four 64-bit compares and VMOVMSKPD), and the CPU the module runs on picks
 * one (`__builtin_cpu_supports`); elsewhere it is compiled once, for the target.
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
#define SSPGM_SIGN ((uint64_t)1 << 63)
/* The bit pattern of +inf as a signed integer: the bits of a float64 with its sign bit
 * clear are at least this when it is +inf or a NaN, below it when finite. */
#define SSPGM_INF_BITS ((int64_t)0x7ff0000000000000)
/* How far ahead of the block it tests the first pass asks for the counts (bytes): about
 * one row of a few hundred entries, from wherever they are to the cache. */
#define SSPGM_PREFETCH_AHEAD 4096

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

/* The bits of the fraction of the float64 whose bit pattern is `bits`: its bits worth less
 * than 1, shifted to the top (sign and exponent shifted out); not 0 exactly when it is
 * finite and not an integer. With the biased exponent k = e + 1023, the bits below 2^0 are
 * the mantissa's last 52 - e when 0 <= e < 52 (a shift by 12 + e = k - 1011 keeps them),
 * all of a nonzero value when e < 0 (it is below 1: a shift by 1 keeps them), none when
 * e >= 52 (a shift of 64 or more; infinities and NaNs included, which the largest bit
 * pattern tells). */
static SSPGM_ALWAYS_INLINE uint64_t sspgm_fraction_bits(uint64_t bits)
{
    uint64_t k = (bits >> 52) & 0x7ff;
    uint64_t shift = k > 1022 ? k - 1011 : 1;
    return shift < 64 ? bits << shift : 0;
}

/* What the entries read tell, kept over the scan: `any`, the OR of their bit patterns
 * (its sign bit set when one is negative or -0.0), and `top`, the largest of their bit
 * patterns as signed integers (at least SSPGM_INF_BITS when one with its sign bit clear
 * is infinite or NaN, else that of the largest entry). Lanes of four words with the
 * GCC/Clang vector extensions, one word with other compilers. */
#if defined(__GNUC__)
typedef uint64_t sspgm_words __attribute__((vector_size(32), aligned(8)));
typedef int64_t sspgm_lanes __attribute__((vector_size(32), aligned(8)));

/* Ask for the two cache lines SSPGM_PREFETCH_AHEAD bytes after the block at x (a hint:
 * an address past the counts is never read). */
static SSPGM_ALWAYS_INLINE void sspgm_prefetch_ahead(const double *x)
{
    __builtin_prefetch((const void *)((uintptr_t)x + SSPGM_PREFETCH_AHEAD));
    __builtin_prefetch((const void *)((uintptr_t)x + SSPGM_PREFETCH_AHEAD + 64));
}

/* The blocks of the run of `n_blocks` at x (at most SSPGM_SCAN_RUN) as a bit mask, bit j
 * set when a bit is set among those of block j (a block where none is holds +0.0 only,
 * which is plainly valid); ORs their bits into *any. Asks for the counts ahead. */
static SSPGM_ALWAYS_INLINE uint64_t sspgm_run_bits(const double *x, int64_t n_blocks,
                                                   sspgm_words *any)
{
    uint64_t set = 0;
    int64_t j;
    for (j = 0; j < n_blocks; j++) {
        sspgm_words x0, x1, x2, x3, block;
        memcpy(&x0, x + j * SSPGM_SCAN_BLOCK, sizeof x0);
        memcpy(&x1, x + j * SSPGM_SCAN_BLOCK + 4, sizeof x1);
        memcpy(&x2, x + j * SSPGM_SCAN_BLOCK + 8, sizeof x2);
        memcpy(&x3, x + j * SSPGM_SCAN_BLOCK + 12, sizeof x3);
        sspgm_prefetch_ahead(x + j * SSPGM_SCAN_BLOCK);
        block = (x0 | x1) | (x2 | x3);
        *any |= block;
        set |= (uint64_t)(((block[0] | block[1]) | (block[2] | block[3])) != 0) << j;
    }
    return set;
}

/* Raise each lane of *top to that of *x where it is larger. */
static SSPGM_ALWAYS_INLINE void sspgm_raise(sspgm_lanes *top, const sspgm_lanes *x)
{
    sspgm_lanes x_above = *x > *top;
    *top = (*x & x_above) | (*top & ~x_above);
}

/* OR sspgm_fraction_bits of the SSPGM_SCAN_BLOCK entries at x into the lanes of
 * *fraction. */
static SSPGM_ALWAYS_INLINE void sspgm_block_fraction(sspgm_words *fraction, const double *x)
{
    int i;
    for (i = 0; i < SSPGM_SCAN_BLOCK; i += 4) {
        sspgm_words bits;
        sspgm_lanes k, shift;
        memcpy(&bits, x + i, sizeof bits);
        k = (sspgm_lanes)((bits >> 52) & 0x7ff);
        shift = ((k - 1012) & (k > 1022)) + 1;
        *fraction |= (bits << (sspgm_words)(shift & 63)) & (sspgm_words)(shift < 64);
    }
}

/* Raise *top to the bit patterns of the SSPGM_SCAN_BLOCK entries at x. */
static SSPGM_ALWAYS_INLINE void sspgm_raise_block(sspgm_lanes *top, const double *x)
{
    sspgm_lanes x0, x1, x2, x3;
    memcpy(&x0, x, sizeof x0);
    memcpy(&x1, x + 4, sizeof x1);
    memcpy(&x2, x + 8, sizeof x2);
    memcpy(&x3, x + 12, sizeof x3);
    sspgm_raise(&x0, &x1);
    sspgm_raise(&x2, &x3);
    sspgm_raise(&x0, &x2);
    sspgm_raise(top, &x0);
}

/* The OR of the lanes of *any, and the largest lane of *top. */
static inline uint64_t sspgm_words_or(const sspgm_words *any)
{
    return ((*any)[0] | (*any)[1]) | ((*any)[2] | (*any)[3]);
}

static inline int64_t sspgm_lanes_max(const sspgm_lanes *top)
{
    int64_t largest = (*top)[0];
    int k;
    for (k = 1; k < 4; k++) {
        largest = (*top)[k] > largest ? (*top)[k] : largest;
    }
    return largest;
}
#else
typedef uint64_t sspgm_words;
typedef int64_t sspgm_lanes;

static inline uint64_t sspgm_run_bits(const double *x, int64_t n_blocks, sspgm_words *any)
{
    uint64_t set = 0;
    int64_t j;
    int k;
    for (j = 0; j < n_blocks; j++) {
        uint64_t block = 0;
        for (k = 0; k < SSPGM_SCAN_BLOCK; k++) {
            uint64_t bits;
            memcpy(&bits, x + j * SSPGM_SCAN_BLOCK + k, sizeof bits);
            block |= bits;
        }
        *any |= block;
        set |= (uint64_t)(block != 0) << j;
    }
    return set;
}

static inline void sspgm_block_fraction(sspgm_words *fraction, const double *x)
{
    int k;
    for (k = 0; k < SSPGM_SCAN_BLOCK; k++) {
        uint64_t bits;
        memcpy(&bits, x + k, sizeof bits);
        *fraction |= sspgm_fraction_bits(bits);
    }
}

static inline void sspgm_raise_block(sspgm_lanes *top, const double *x)
{
    int k;
    for (k = 0; k < SSPGM_SCAN_BLOCK; k++) {
        int64_t bits;
        memcpy(&bits, x + k, sizeof bits);
        *top = bits > *top ? bits : *top;
    }
}

static inline uint64_t sspgm_words_or(const sspgm_words *any)
{
    return *any;
}

static inline int64_t sspgm_lanes_max(const sspgm_lanes *top)
{
    return *top;
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
/* sspgm_run_bits with AVX2 instructions: the test of a block is one VPTEST. */
__attribute__((target("avx2")))
static inline uint64_t sspgm_run_bits_avx2(const double *x, int64_t n_blocks,
                                           sspgm_words *any)
{
    __m256i seen = (__m256i)*any;
    uint64_t set = 0;
    int64_t j;
    for (j = 0; j < n_blocks; j++) {
        const double *block = x + j * SSPGM_SCAN_BLOCK;
        __m256i x0 = _mm256_loadu_si256((const __m256i *)block);
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(block + 4));
        __m256i x2 = _mm256_loadu_si256((const __m256i *)(block + 8));
        __m256i x3 = _mm256_loadu_si256((const __m256i *)(block + 12));
        __m256i bits = _mm256_or_si256(_mm256_or_si256(x0, x1), _mm256_or_si256(x2, x3));
        sspgm_prefetch_ahead(block);
        seen = _mm256_or_si256(seen, bits);
        set |= (uint64_t)!_mm256_testz_si256(bits, bits) << j;
    }
    *any = (sspgm_words)seen;
    return set;
}

/* The entries of one vector of four that are +-0.0, as four bits (a 64-bit compare of
 * their bit patterns shifted left by one with zero, its lanes' sign bits gathered). */
__attribute__((target("avx2")))
static inline uint64_t sspgm_zeros_avx2(const double *x)
{
    __m256i bits = _mm256_loadu_si256((const __m256i *)x);
    __m256i zero = _mm256_cmpeq_epi64(_mm256_slli_epi64(bits, 1), _mm256_setzero_si256());
    return (uint64_t)_mm256_movemask_pd(_mm256_castsi256_pd(zero));
}

/* sspgm_block_fraction with AVX2 instructions: VPSLLVQ gives 0 for a shift of 64 or more,
 * as sspgm_fraction_bits does (a lane with its sign bit set may give other bits than
 * sspgm_fraction_bits, but such an entry is invalid whatever they are). */
__attribute__((target("avx2")))
static inline void sspgm_block_fraction_avx2(sspgm_words *fraction, const double *x)
{
    __m256i seen = (__m256i)*fraction;
    const __m256i below = _mm256_set1_epi64x(1022), offset = _mm256_set1_epi64x(1012),
                  one = _mm256_set1_epi64x(1);
    int i;
    for (i = 0; i < SSPGM_SCAN_BLOCK; i += 4) {
        __m256i bits = _mm256_loadu_si256((const __m256i *)(x + i));
        __m256i k = _mm256_srli_epi64(bits, 52);
        __m256i above = _mm256_cmpgt_epi64(k, below);
        __m256i shift = _mm256_add_epi64(_mm256_and_si256(_mm256_sub_epi64(k, offset), above),
                                         one);
        seen = _mm256_or_si256(seen, _mm256_sllv_epi64(bits, shift));
    }
    *fraction = (sspgm_words)seen;
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

/* Store the entries of the block of row[start..start + SSPGM_SCAN_BLOCK) that `mask`
 * names (bit k for row[start + k]): their columns at cols[nnz..], their values at
 * data[nnz..], in order, raising *top to their bit patterns as signed integers and ORing
 * the bits of their fractions into *fraction (the entries not named are +-0.0, whose
 * fractions are 0); return the new nnz. The first is stored without a branch (when the mask is empty, the last
 * entry of the block, +-0.0, is written and not counted). */
static SSPGM_ALWAYS_INLINE int64_t sspgm_store_block(const double *row, int64_t start,
                                                     uint64_t mask, int64_t nnz,
                                                     int32_t *cols, double *data,
                                                     int64_t *top, uint64_t *fraction)
{
    int64_t k = start + sspgm_lowest_set(mask | ((uint64_t)1 << (SSPGM_SCAN_BLOCK - 1)));
    int64_t bits;
    memcpy(&bits, row + k, sizeof bits);
    cols[nnz] = (int32_t)k;
    memcpy(data + nnz, &bits, sizeof bits);
    *top = bits > *top ? bits : *top;
    *fraction |= sspgm_fraction_bits((uint64_t)bits);
    nnz += mask != 0;
    mask &= mask - 1;
    while (mask != 0) {
        k = start + sspgm_lowest_set(mask);
        mask &= mask - 1;
        memcpy(&bits, row + k, sizeof bits);
        cols[nnz] = (int32_t)k;
        memcpy(data + nnz, &bits, sizeof bits);
        *top = bits > *top ? bits : *top;
        *fraction |= sspgm_fraction_bits((uint64_t)bits);
        nnz++;
    }
    return nnz;
}

typedef uint64_t (*sspgm_run_fn)(const double *, int64_t, sspgm_words *);
typedef uint64_t (*sspgm_block_fn)(const double *);
typedef void (*sspgm_fraction_fn)(sspgm_words *, const double *);

/* Scan the `n_rows` rows of `row_len` counts at `counts` (C-contiguous).
 *
 * Writes `indptr[0..n_rows]` and, row after row, the column and value of every entry
 * other than +0.0 and -0.0 into `cols` and `data`, which hold max_nnz + SSPGM_SCAN_BLOCK
 * entries. A row is read a run of up to SSPGM_SCAN_RUN blocks at a time (`run_bits`):
 * one bit per block tells whether any of its entries has a bit set, without a branch,
 * and the OR of all their bits is kept; then only the blocks with a bit set are read
 * again (from the cache), and their entries other than +-0.0 (`block_nonzero`) stored
 * with the largest of their bit patterns and the OR of the bits of their fractions kept. The last SSPGM_SCAN_BLOCK entries of a
 * row whose length is not a multiple of it are read as one more block, of which only
 * the entries after the row's last whole block are stored; a row shorter than a block
 * is read one entry at a time. A block of zero bits holds +0.0 only, plainly valid.
 * Beyond max_nnz entries it stops storing them and returns a number above max_nnz
 * (`indptr` is then partial), and keeps the largest bit pattern of the blocks with a
 * bit set, and the OR of the bits of their fractions, instead. Every entry is checked
 * either way: `*valid` is 1 when each is finite with its sign bit clear (no sign bit in
 * the OR, the largest pattern below SSPGM_INF_BITS) and an integer (no bit in the OR of
 * the fractions), else 0; `*largest` is then the largest.
 * Returns the number of stored entries. */
static SSPGM_ALWAYS_INLINE int64_t sspgm_scan_rows(
    sspgm_run_fn run_bits, sspgm_block_fn block_nonzero, sspgm_fraction_fn block_fraction,
    const double *counts,
    int64_t n_rows, int64_t row_len, int64_t max_nnz, int64_t *indptr, int32_t *cols,
    double *data, int *valid, double *largest)
{
    const int64_t tail = row_len % SSPGM_SCAN_BLOCK;
    int64_t i, b, k, nnz = 0, top = 0;
    uint64_t any = 0, fraction = 0;
    sspgm_words any_lanes, fraction_lanes;
    sspgm_lanes top_lanes;
    memset(&any_lanes, 0, sizeof any_lanes);
    memset(&fraction_lanes, 0, sizeof fraction_lanes);
    memset(&top_lanes, 0, sizeof top_lanes);
    indptr[0] = 0;
    for (i = 0; i < n_rows; i++) {
        const double *row = counts + i * row_len;
        if (row_len < SSPGM_SCAN_BLOCK) {
            for (k = 0; k < row_len; k++) {
                int64_t bits;
                memcpy(&bits, row + k, sizeof bits);
                any |= (uint64_t)bits;
                top = bits > top ? bits : top;
                fraction |= sspgm_fraction_bits((uint64_t)bits);
                if (((uint64_t)bits << 1) != 0 && nnz <= max_nnz) {
                    cols[nnz] = (int32_t)k;
                    memcpy(data + nnz, &bits, sizeof bits);
                    nnz++;
                }
            }
            indptr[i + 1] = nnz;
            continue;
        }
        for (b = 0; b + SSPGM_SCAN_BLOCK <= row_len; b += SSPGM_SCAN_RUN * SSPGM_SCAN_BLOCK) {
            int64_t n_blocks = (row_len - b) / SSPGM_SCAN_BLOCK;
            uint64_t set = run_bits(row + b, n_blocks < SSPGM_SCAN_RUN ? n_blocks : SSPGM_SCAN_RUN,
                                    &any_lanes);
            while (set != 0) {
                int64_t start = b + sspgm_lowest_set(set) * SSPGM_SCAN_BLOCK;
                set &= set - 1;
                if (nnz <= max_nnz) {
                    nnz = sspgm_store_block(row, start, block_nonzero(row + start), nnz, cols,
                                            data, &top, &fraction);
                } else {
                    sspgm_raise_block(&top_lanes, row + start);
                    block_fraction(&fraction_lanes, row + start);
                }
            }
        }
        b = row_len - SSPGM_SCAN_BLOCK;
        if (tail != 0 && run_bits(row + b, 1, &any_lanes) != 0) {
            if (nnz <= max_nnz) {
                nnz = sspgm_store_block(row, b,
                                        block_nonzero(row + b) >> (SSPGM_SCAN_BLOCK - tail)
                                            << (SSPGM_SCAN_BLOCK - tail),
                                        nnz, cols, data, &top, &fraction);
            } else {
                sspgm_raise_block(&top_lanes, row + b);
                block_fraction(&fraction_lanes, row + b);
            }
        }
        indptr[i + 1] = nnz;
    }
    any |= sspgm_words_or(&any_lanes);
    fraction |= sspgm_words_or(&fraction_lanes);
    top = sspgm_lanes_max(&top_lanes) > top ? sspgm_lanes_max(&top_lanes) : top;
    *valid = (any & SSPGM_SIGN) == 0 && top < SSPGM_INF_BITS && fraction == 0;
    *largest = sspgm_double_of_bits((uint64_t)top);
    return nnz;
}

#ifdef SSPGM_AVX2_DISPATCH
__attribute__((target("avx2")))
static int64_t sspgm_scan_rows_avx2(const double *counts, int64_t n_rows, int64_t row_len,
                                    int64_t max_nnz, int64_t *indptr, int32_t *cols,
                                    double *data, int *valid, double *largest)
{
    return sspgm_scan_rows(sspgm_run_bits_avx2, sspgm_block_nonzero_avx2,
                           sspgm_block_fraction_avx2, counts, n_rows, row_len, max_nnz, indptr,
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
    return sspgm_scan_rows(sspgm_run_bits, sspgm_block_nonzero, sspgm_block_fraction, counts,
                           n_rows, row_len, max_nnz, indptr, cols, data, valid, largest);
}

#endif
