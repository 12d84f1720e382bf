// SPDX-License-Identifier: Apache-2.0
/* What one x86 core can do for the CPU GEMM's inner loop, as a ceiling for `vkvit bench gemm` on lavapipe
 * (README, "Where the rest goes"). Single-threaded; multiply by the cores lavapipe uses (LP_NUM_THREADS).
 *
 *   cc -O2 -mavx2 -mfma -o /tmp/cpu_ceiling lab/cpu_ceiling.c && /tmp/cpu_ceiling
 *
 * Patterns, alternated over 7 rounds (medians, GFLOP/s of one core, 2 FLOP per multiply-add and lane):
 *   fma-registers  10 independent 8-lane FMA chains: the core's FMA peak
 *   gemm-mul-add   the shape of shaders/gemm_cpu.comp's unrolled loop as llvmpipe compiles it: per k, one A value
 *                  broadcast with a lane permute (subgroupShuffle) and 8 products with B read from a 16 KiB array
 *                  (L1), each a separate multiply and add (llvmpipe emits no FMA)
 *   gemm-fma       the same with FMA, what a native kernel with these loads could do */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 7

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static float sink;

static double fma_registers(void) {
    const __m256 b = _mm256_set1_ps(0.9999f), c = _mm256_set1_ps(1e-4f);
    __m256 a0 = _mm256_set1_ps(0.1f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0;
    const long n = 50000000;
    const double t0 = now();
    for (long k = 0; k < n; k++) {
#define F(x) x = _mm256_fmadd_ps(x, b, c);
        F(a0) F(a1) F(a2) F(a3) F(a4) F(a5) F(a6) F(a7) F(a8) F(a9)
#undef F
        __asm__ volatile("" : "+x"(a0));
    }
    const double s = now() - t0;
    sink += (a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9)[0];
    return n * 10.0 * 16 / s * 1e-9;
}

/* B: 8 columns x 64 k of 8 lanes (16 KiB), column-major like the kernel's per-lane private array. */
static float bmem[8][64][8] __attribute__((aligned(64)));

/* P(j, t): t += a * B[j][k], as a multiply and an add or (FUSED) one FMA. */
#define GEMM_PATTERN(name, P)                                                                                    \
    static double name(void) {                                                                                  \
        __m256 t0 = _mm256_setzero_ps(), t1 = t0, t2 = t0, t3 = t0, t4 = t0, t5 = t0, t6 = t0, t7 = t0;         \
        const __m256 av = _mm256_set_ps(8, 7, 6, 5, 4, 3, 2, 1);                                                \
        const long n = 400000;                                                                                  \
        const double s0 = now();                                                                                \
        for (long it = 0; it < n; it++) {                                                                       \
            for (int k = 0; k < 64; k++) {                                                                      \
                const __m256 a = _mm256_permutevar8x32_ps(av, _mm256_set1_epi32(k & 7));                        \
                P(0, t0) P(1, t1) P(2, t2) P(3, t3) P(4, t4) P(5, t5) P(6, t6) P(7, t7)                         \
            }                                                                                                   \
            __asm__ volatile("" ::: "memory");                                                                  \
        }                                                                                                       \
        const double s = now() - s0;                                                                            \
        sink += (t0 + t1 + t2 + t3 + t4 + t5 + t6 + t7)[0];                                                     \
        return n * 64.0 * 8 * 16 / s * 1e-9;                                                                    \
    }
#define MUL_ADD(j, t) t = _mm256_add_ps(t, _mm256_mul_ps(a, _mm256_load_ps(bmem[j][k])));
#define FMA(j, t) t = _mm256_fmadd_ps(a, _mm256_load_ps(bmem[j][k]), t);
GEMM_PATTERN(gemm_mul_add, MUL_ADD)
GEMM_PATTERN(gemm_fma, FMA)

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void) {
    for (int j = 0; j < 8; j++)
        for (int k = 0; k < 64; k++)
            for (int l = 0; l < 8; l++) bmem[j][k][l] = 1e-6f * (1 + j + k + l);
    static const char *const names[3] = {"fma-registers", "gemm-mul-add", "gemm-fma"};
    double g[3][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        g[0][r] = fma_registers();
        g[1][r] = gemm_mul_add();
        g[2][r] = gemm_fma();
    }
    printf("one core, GFLOP/s over %d alternated rounds: median (min-max)\n", ROUNDS);
    for (int p = 0; p < 3; p++) {
        qsort(g[p], ROUNDS, sizeof g[p][0], cmp);
        printf("  %-14s %6.1f (%.1f-%.1f)\n", names[p], g[p][ROUNDS / 2], g[p][0], g[p][ROUNDS - 1]);
    }
    return sink == 12345.0f; /* keeps the results alive */
}
