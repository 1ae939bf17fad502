/* The elementwise updates of the chain solve's BiCGSTAB steps (fast/_poured.pyx, _bicgstab).
 *
 * Private C helper of fast/_poured.pyx. The vectors are distinct blocks of the solve's
 * scratch space, never overlapping, which `restrict` tells the compiler, so each loop
 * runs on vector registers (two or more entries an instruction, the divisions
 * included). Every entry gets the operations of the scalar loop, in its order, each
 * rounded once (IEEE division and the build's -ffp-contract=off: no fused multiply-add,
 * and the AVX target below has none): the same floats on any instructions. On x86-64
 * with GCC or Clang each loop is compiled twice, for the baseline of the target and for
 * AVX (four entries a division instead of two), and the CPU the module runs on picks
 * one (`__builtin_cpu_supports`); elsewhere it is compiled once, for the target.
 */
#ifndef SSPGM_KRYLOV_H
#define SSPGM_KRYLOV_H

#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define SSPGM_RESTRICT __restrict__
#else
#define SSPGM_RESTRICT
#endif

#if defined(__GNUC__) && defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target)
#define SSPGM_KRYLOV_AVX 1
#endif
#endif

/* p = r + beta (p - omega v), then y = p / precond. */
#define SSPGM_KRYLOV_DIRECTION(name, attributes)                                            \
    static attributes void name(int64_t n, const double *SSPGM_RESTRICT r,                  \
                                double *SSPGM_RESTRICT p, const double *SSPGM_RESTRICT v,   \
                                const double *SSPGM_RESTRICT precond,                       \
                                double *SSPGM_RESTRICT y, double beta, double omega)        \
    {                                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                   \
            double pi = r[i] + beta * (p[i] - omega * v[i]);                                \
            p[i] = pi;                                                                      \
            y[i] = pi / precond[i];                                                         \
        }                                                                                   \
    }

/* s = r - alpha v, e = e + alpha y, then y = s / precond. */
#define SSPGM_KRYLOV_HALF_STEP(name, attributes)                                            \
    static attributes void name(int64_t n, const double *SSPGM_RESTRICT r,                  \
                                const double *SSPGM_RESTRICT v,                             \
                                const double *SSPGM_RESTRICT precond,                       \
                                double *SSPGM_RESTRICT s, double *SSPGM_RESTRICT e,         \
                                double *SSPGM_RESTRICT y, double alpha)                     \
    {                                                                                       \
        for (int64_t i = 0; i < n; i++) {                                                   \
            double si = r[i] - alpha * v[i];                                                \
            s[i] = si;                                                                      \
            e[i] = e[i] + alpha * y[i];                                                     \
            y[i] = si / precond[i];                                                         \
        }                                                                                   \
    }

SSPGM_KRYLOV_DIRECTION(krylov_direction_base, )
SSPGM_KRYLOV_HALF_STEP(krylov_half_step_base, )

#ifdef SSPGM_KRYLOV_AVX
SSPGM_KRYLOV_DIRECTION(krylov_direction_avx, __attribute__((target("avx"))))
SSPGM_KRYLOV_HALF_STEP(krylov_half_step_avx, __attribute__((target("avx"))))
#endif

static inline void krylov_direction(int64_t n, const double *r, double *p, const double *v,
                                    const double *precond, double *y, double beta,
                                    double omega)
{
#ifdef SSPGM_KRYLOV_AVX
    if (__builtin_cpu_supports("avx")) {
        krylov_direction_avx(n, r, p, v, precond, y, beta, omega);
        return;
    }
#endif
    krylov_direction_base(n, r, p, v, precond, y, beta, omega);
}

static inline void krylov_half_step(int64_t n, const double *r, const double *v,
                                    const double *precond, double *s, double *e, double *y,
                                    double alpha)
{
#ifdef SSPGM_KRYLOV_AVX
    if (__builtin_cpu_supports("avx")) {
        krylov_half_step_avx(n, r, v, precond, s, e, y, alpha);
        return;
    }
#endif
    krylov_half_step_base(n, r, v, precond, s, e, y, alpha);
}

#endif
