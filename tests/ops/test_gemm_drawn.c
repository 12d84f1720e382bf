// SPDX-License-Identifier: Apache-2.0
/* GEMM at drawn shapes: every kernel variant the policy can choose on this device, at shapes drawn from a seeded
 * generator rather than a fixed table (a fixed table missed a CPU GEMM that gave NaN at 256 x 256 x 192 and at
 * 1024^3: docs/kernels.md, "Drawn shapes").
 *
 * Each case goes through vkvit_bench_gemm, the path of a model's linear layer (graph node, planner, recorder): A
 * and W are fresh pseudo-random data, D is poisoned with NaN first, and D is compared with double-precision loops
 * on every element up to 64 x 64, else on a 64 x 64 grid that includes the first and last row and column, at
 * |D - ref| <= 1e-5 sum_k |a w| (5e-3 with fp16 arithmetic). The validation layer (synchronization validation on)
 * must stay silent.
 *
 * What is drawn, per case:
 *   - M, N and K: multiples of every tile and chunk (32 .. 1024), sizes one to three off them, classifier-head
 *     widths 1 .. 24, and sizes uniform in 1 .. 1100; K spans one chunk to many; M N K at most 2^28;
 *   - the configuration: the device's own choice (most cases), and the other paths of the CPU kernel (the generic
 *     shader instead of a build-time unrolled one, scalar loads, single stores, running sums, a random tile), the
 *     shared-memory kernel, fp16 weights and fp16 arithmetic;
 *   - on CPU devices with texel reads, a second ctx with VKVIT_DISABLE_TEXEL=1 takes some cases (storage-buffer
 *     operands, the path GPUs take).
 *
 * Environment: VKVIT_TEST_SEED (default: drawn from the clock; printed first, so any failure can be rerun exactly),
 * VKVIT_TEST_CASES (default 160). CTest runs it at lavapipe's three subgroup sizes (LP_NATIVE_VECTOR_WIDTH 128,
 * 256, 512: subgroups of 4, 8 and 16). */
#include "test_util.h"

#include <time.h>

#define MAX_MNK ((uint64_t)1 << 28) /* bounds one case's time on llvmpipe (~10-60 ms of GEMM) */
/* fp16 arithmetic is emulated on CPU devices, and their cooperative matrices (Mesa 26's lavapipe) reduce lane by lane:
 * fp16-math cases at most this size (the draws above it stay fp32). */
#define MAX_MNK_F16_MATH ((uint64_t)1 << 22)

/* A side length: a tile multiple, one near it, a head width, or anything. */
static uint32_t draw_side(void) {
    static const uint32_t tiles[] = {32, 64, 96, 128, 192, 256, 320, 384, 448, 512, 768, 1024};
    const uint32_t kind = vt_rand_u32() % 20;
    const uint32_t t = tiles[vt_rand_u32() % VKVIT_ARRAY_LEN(tiles)];
    if (kind < 7) return t;                                                   /* 35 %: a multiple of every tile */
    if (kind < 11) {                                                          /* 20 %: 1 .. 3 off one */
        const uint32_t d = 1 + vt_rand_u32() % 3;
        return vt_rand_u32() % 2 ? t + d : t - d;
    }
    if (kind < 16) return 1 + vt_rand_u32() % 24;                             /* 25 %: a head, an odd width */
    return 1 + vt_rand_u32() % 1100;                                          /* 20 %: anything */
}

typedef struct drawn_case {
    vkvit_gemm_bench_desc d;
    const char *what; /* the configuration, as `vkvit bench gemm --config` would spell it */
    char tile[48];
} drawn_case;

/* cpu_kernel: whether this device's policy takes the CPU kernel (subgroups of 8 on a CPU device); elsewhere the CPU
 * kernel's switches do not apply (the benchmark refuses them for the kernel that runs), and those draws take the
 * device's own choice instead. */
static drawn_case draw_case(const vkvit_device_info *info, bool cpu_kernel, uint32_t index) {
    drawn_case c = {.d = {.repeat = 1, .seed = index}, .what = "auto"};
    do {
        c.d.m = draw_side(), c.d.n = draw_side(), c.d.k = draw_side();
    } while ((uint64_t)c.d.m * c.d.n * c.d.k > MAX_MNK);
    const uint64_t mnk = (uint64_t)c.d.m * c.d.n * c.d.k;
    const uint32_t kind = vt_rand_u32() % 100;
    const uint32_t tile_draws[3] = {vt_rand_u32(), vt_rand_u32(), vt_rand_u32()}; /* drawn always: same stream */
    if (kind < 50 || (!cpu_kernel && kind < 80)) return c;
    if (kind < 58) c.d.flags = VKVIT_GEMM_BENCH_GENERIC, c.what = "generic";
    else if (kind < 63) c.d.flags = VKVIT_GEMM_BENCH_SCALAR_LOADS, c.what = "scalar-loads";
    else if (kind < 68) c.d.flags = VKVIT_GEMM_BENCH_SINGLE_STORES, c.what = "single-stores";
    else if (kind < 72) c.d.flags = VKVIT_GEMM_BENCH_RUNNING_SUMS, c.what = "running-sums";
    else if (kind < 80) {
        /* a CPU-kernel tile (gemm_cpu.comp: bm 1..256, tn 1..8 here, bk 32 or 64) */
        c.d.kernel = VKVIT_GEMM_KERNEL_CPU;
        c.d.tile = (vkvit_gemm_tile){.bm = 1 + tile_draws[0] % 256, .tn = 1 + tile_draws[1] % 8,
                                     .bk = tile_draws[2] % 2 ? 32 : 64};
        snprintf(c.tile, sizeof c.tile, "kernel=cpu,bm=%u,tn=%u,bk=%u", c.d.tile.bm, c.d.tile.tn, c.d.tile.bk);
        c.what = c.tile;
    } else if (kind < 88) c.d.kernel = VKVIT_GEMM_KERNEL_SHARED, c.what = "kernel=shared";
    else if (kind < 96) c.d.precision = info->fp16_in_use ? VKVIT_PRECISION_FP16 : VKVIT_PRECISION_FP32, c.what = "auto";
    else if (mnk <= MAX_MNK_F16_MATH && info->fp16_in_use && info->fp16_arithmetic)
        c.d.precision = VKVIT_PRECISION_FP16_MATH;
    return c;
}

static const char *precision_name(vkvit_precision p) {
    return p == VKVIT_PRECISION_FP16 ? "fp16" : p == VKVIT_PRECISION_FP16_MATH ? "fp16-math" : "fp32";
}

static const char *kernel_name(vkvit_gemm_kernel k) {
    return k == VKVIT_GEMM_KERNEL_CPU ? "cpu" : k == VKVIT_GEMM_KERNEL_SHARED ? "shared"
           : k == VKVIT_GEMM_KERNEL_COOPMAT ? "coopmat" : "auto";
}

/* Runs one case; returns whether it ran (a configuration this device refuses, e.g. the CPU kernel where subgroups
 * are not 8 lanes, is skipped with its sentence). */
static bool run_case(vkvit_ctx *ctx, const char *ctx_name, const drawn_case *c, uint32_t index) {
    vkvit_gemm_bench_result r;
    const vkvit_result res = vkvit_bench_gemm(ctx, &c->d, &r);
    if (res == VKVIT_ERROR_UNSUPPORTED) {
        printf("case %3u %-8s %5ux%5ux%5u %-9s %-30s refused: %s\n", index, ctx_name, c->d.m, c->d.n, c->d.k,
               precision_name(c->d.precision), c->what, vkvit_last_error());
        return false;
    }
    CHECK(res == VKVIT_OK, "case %u (%s, %ux%ux%u, %s, %s): %s: %s", index, ctx_name, c->d.m, c->d.n, c->d.k,
          precision_name(c->d.precision), c->what, vkvit_result_name(res), vkvit_last_error());
    if (res != VKVIT_OK) return true;
    printf("case %3u %-8s %5ux%5ux%5u %-9s %-30s ran %s %ux%ux%u/%ux%u%s%s%s%s%s  worst %.2g  %llu of %llu wrong\n",
           index, ctx_name, c->d.m, c->d.n, c->d.k, precision_name(c->d.precision), c->what, kernel_name(r.kernel),
           r.tile.bm, r.tile.bn, r.tile.bk, r.tile.tm, r.tile.tn, r.texel_reads ? " texel" : "",
           r.vec4_loads ? " vec4" : r.kernel == VKVIT_GEMM_KERNEL_CPU ? " scalar" : "", r.pair_stores ? " pairs" : "",
           r.unrolled ? " unrolled" : "", r.one_chunk ? " one-chunk" : "", r.max_error,
           (unsigned long long)r.mismatches, (unsigned long long)r.checked);
    CHECK(r.mismatches == 0 && r.checked > 0,
          "case %u (%s ctx): %ux%ux%u %s config '%s' on the %s kernel: %llu of %llu checked elements wrong (worst "
          "%.3g x sum|ab|); rerun with VKVIT_TEST_SEED and this case's index", index, ctx_name, c->d.m, c->d.n,
          c->d.k, precision_name(c->d.precision), c->what, kernel_name(r.kernel), (unsigned long long)r.mismatches,
          (unsigned long long)r.checked, r.max_error);
    return true;
}

int main(void) {
    const char *seed_env = getenv("VKVIT_TEST_SEED"), *cases_env = getenv("VKVIT_TEST_CASES");
    const uint32_t seed = seed_env && *seed_env ? (uint32_t)strtoul(seed_env, NULL, 0)
                                                : (uint32_t)time(NULL) ^ ((uint32_t)clock() << 16);
    const uint32_t n_cases = cases_env && *cases_env ? (uint32_t)strtoul(cases_env, NULL, 0) : 160;
    printf("seed %u, %u cases (VKVIT_TEST_SEED=%u reruns exactly these)\n", seed, n_cases, seed);
    fflush(stdout);
    /* ... and into the build folder, where .ci/run prints it (CTest keeps no output of a test that passed). */
    FILE *seeds = fopen(VKVIT_BINARY_DIR "/test_gemm_drawn.seeds", "a");
    if (seeds) {
        const char *width = getenv("LP_NATIVE_VECTOR_WIDTH");
        fprintf(seeds, "test_gemm_drawn: VKVIT_TEST_SEED=%u VKVIT_TEST_CASES=%u%s%s\n", seed, n_cases,
                width ? " LP_NATIVE_VECTOR_WIDTH=" : "", width ? width : "");
        fclose(seeds);
    }
    vt_rng_state = 0x853c49e6748fea9bull ^ ((uint64_t)seed << 17) ^ seed;
    (void)vt_rand_u32();

    vkvit_ctx *ctx = vt_ctx();
    vkvit_device_info info;
    vkvit_ctx_device_info(ctx, &info);
    if (getenv("VKVIT_COOPMAT_NV2") && ctx->policy.coopmat != VKVIT_COOPMAT_NV2) { /* test_gemm_drawn_nv2 */
        printf("SKIP: VKVIT_COOPMAT_NV2=1, but the NV cooperative-matrix-2 kernel does not run here (workarounds: "
               "%s)\n", info.workarounds);
        vkvit_ctx_destroy(ctx);
        return 77;
    }
    printf("device: %s, subgroup size %u, texel reads %s\n", info.name, info.subgroup_size,
           info.texel_reads_in_use ? "yes" : "no");
    /* Storage-buffer operands on a CPU device that would read texels: a ctx of its own takes every fifth case. */
    vkvit_ctx *ssbo = NULL;
    if (info.texel_reads_in_use) {
        setenv("VKVIT_DISABLE_TEXEL", "1", 1);
        ssbo = vt_ctx();
        unsetenv("VKVIT_DISABLE_TEXEL");
    }
    /* Which kernel the policy takes here: one small product with the device's own choice. */
    vkvit_gemm_bench_result probe;
    MUST(vkvit_bench_gemm(ctx, &(vkvit_gemm_bench_desc){.m = 8, .n = 8, .k = 8, .repeat = 1}, &probe));
    const bool cpu_kernel = probe.kernel == VKVIT_GEMM_KERNEL_CPU;
    printf("the policy takes the %s kernel here\n", kernel_name(probe.kernel));
    uint32_t ran = 0;
    for (uint32_t i = 0; i < n_cases; i++) {
        const drawn_case c = draw_case(&info, cpu_kernel, i);
        const bool on_ssbo = ssbo && i % 5 == 4;
        ran += run_case(on_ssbo ? ssbo : ctx, on_ssbo ? "no-texel" : "default", &c, i);
        fflush(stdout);
    }
    CHECK(ran >= n_cases / 2, "only %u of %u drawn cases ran on this device", ran, n_cases);
    printf("seed %u: %u of %u cases ran\n", seed, ran, n_cases);
    if (ssbo) {
        const uint32_t n = vkvit_ctx_validation_messages(ssbo, 0);
        CHECK(n == 0, "no-texel ctx: %u validation message(s); first: %s", n, n ? ssbo->validation_log[0] : "");
        vkvit_ctx_destroy(ssbo);
    }
    return vt_finish(ctx);
}
