// SPDX-License-Identifier: Apache-2.0
/* vkvit_bench_gemm (include/vkvit.h "GEMM micro-benchmark"), through the public API only: shapes of 1, odd sizes,
 * and sizes past the 64 x 64 check grid give per-run GPU times, a median inside them, GFLOP/s, and a result that
 * agrees with the plain-C reference on every checked element (each shape with fresh inputs: a new seed), at every
 * precision the device runs (fp32; fp16 weights; fp16 arithmetic, whose relative error must stay within the
 * documented 5e-3 and also show that fp16 products really ran: above fp32's 1e-5 on the larger shapes), up to the
 * most runs a description may ask for (128 timed after 128 warm-up); bad
 * descriptions are refused with a sentence naming the field. Kernel tuning: the CPU and shared-memory kernels run
 * on any device, with tiles other than the automatic ones and the CPU kernel's paths switched off, report what ran
 * and still match the reference; tiles outside a kernel's rules are refused. Validation-clean (vt_finish). */
#include "test_util.h"

typedef struct bench_case {
    uint32_t m, n, k, repeat, warmup;
} bench_case;

int main(void) {
    vkvit_ctx *ctx = vt_ctx();
    const uint32_t seed = 20261123; /* fixed, so a failure reproduces; each case adds its index */
    static const bench_case cases[] = {
        {1, 1, 1, 1, 0}, {33, 17, 9, 3, 1}, {8, 8, 8, 0, 2}, {65, 70, 130, 2, 0}, {201, 96, 384, 3, 1},
        {4, 4, 4, 128, 128}, /* the most runs a description may ask for: 512 timestamps (once failed past 256) */
    };
    vkvit_device_info info;
    vkvit_ctx_device_info(ctx, &info);
    static const vkvit_precision precisions[] = {VKVIT_PRECISION_FP32, VKVIT_PRECISION_FP16,
                                                 VKVIT_PRECISION_FP16_MATH};
    for (size_t pc = 0; pc < 3 * (sizeof cases / sizeof cases[0]); pc++) {
        const size_t c = pc % (sizeof cases / sizeof cases[0]);
        const vkvit_precision precision = precisions[pc / (sizeof cases / sizeof cases[0])];
        const bench_case *bc = &cases[c];
        vkvit_gemm_bench_desc d = {.m = bc->m, .n = bc->n, .k = bc->k, .repeat = bc->repeat, .warmup = bc->warmup,
                                   .seed = seed + (uint32_t)pc, .precision = precision};
        vkvit_gemm_bench_result res;
        vkvit_result r = vkvit_bench_gemm(ctx, &d, &res);
        const bool runs_here = precision == VKVIT_PRECISION_FP32 ? true
                               : precision == VKVIT_PRECISION_FP16 ? info.fp16_in_use
                                                                   : info.fp16_in_use && info.fp16_arithmetic;
        if (!runs_here) {
            CHECK(r == VKVIT_ERROR_UNSUPPORTED, "precision %d on a device without it: %s", (int)precision,
                  vkvit_result_name(r));
            continue;
        }
        CHECK(r == VKVIT_OK, "%ux%ux%u precision %d: %s %s", bc->m, bc->n, bc->k, (int)precision,
              vkvit_result_name(r), vkvit_last_error());
        if (r != VKVIT_OK) continue;
        const uint32_t runs = bc->repeat ? bc->repeat : 10; /* 0 = the default */
        double lo = INFINITY, hi = 0;
        bool finite = true;
        for (uint32_t i = 0; i < res.runs; i++) {
            finite = finite && isfinite(res.ms[i]) && res.ms[i] > 0;
            lo = fmin(lo, res.ms[i]);
            hi = fmax(hi, res.ms[i]);
        }
        CHECK(res.runs == runs && finite && res.median_ms >= lo && res.median_ms <= hi, "%ux%ux%u: %u runs, median "
              "%g in [%g, %g]", bc->m, bc->n, bc->k, res.runs, res.median_ms, lo, hi);
        CHECK(fabs(res.gflops - 2.0 * bc->m * bc->n * bc->k / (res.median_ms * 1e6)) <= 1e-9 * res.gflops,
              "%ux%ux%u: gflops %g", bc->m, bc->n, bc->k, res.gflops);
        const uint64_t want_checked = (uint64_t)(bc->m < 64 ? bc->m : 64) * (bc->n < 64 ? bc->n : 64);
        const double tolerance = precision == VKVIT_PRECISION_FP16_MATH ? 5e-3 : 1e-5;
        CHECK(res.checked == want_checked && res.mismatches == 0 && res.max_error <= tolerance && res.dispatches == 1,
              "%ux%ux%u precision %d: checked %llu (want %llu), %llu mismatches, max relative diff %g, %u "
              "dispatches", bc->m, bc->n, bc->k, (int)precision, (unsigned long long)res.checked,
              (unsigned long long)want_checked, (unsigned long long)res.mismatches, res.max_error, res.dispatches);
        if (precision == VKVIT_PRECISION_FP16_MATH && bc->k >= 130)
            CHECK(res.max_error > 1e-5, "%ux%ux%u fp16-math: max relative diff %g is fp32's: fp16 products ran?",
                  bc->m, bc->n, bc->k, res.max_error);
    }

    /* Kernel tuning: every case runs, matches the reference on fresh inputs and reports the kernel and tile that ran
     * (fields the case leaves 0 are the automatic ones: only the given ones are compared). A K that is not a multiple
     * of 4 keeps the CPU kernel off its vec4 loads, an odd N off its pair stores (the benchmark's D has no spare
     * column). */
    static const struct {
        uint32_t m, n, k;
        vkvit_gemm_kernel kernel;
        vkvit_gemm_tile tile, want;
        uint32_t flags;
        vkvit_precision precision;
    } tuned[] = {
        {65, 70, 132, VKVIT_GEMM_KERNEL_CPU, {.bm = 64, .tn = 4, .bk = 32}, {64, 32, 32, 1, 4}, 0, 0},
        {65, 70, 130, VKVIT_GEMM_KERNEL_CPU, {.bn = 16}, {0, 16, 0, 1, 2}, 0, 0},
        {65, 71, 132, VKVIT_GEMM_KERNEL_CPU, {.bm = 32, .tn = 4}, {32, 32, 0, 1, 4}, 0, 0},
        {201, 96, 384, VKVIT_GEMM_KERNEL_CPU, {.bm = 7, .tn = 3, .bk = 64}, {7, 24, 64, 1, 3}, 0, 0},
        {64, 64, 64, VKVIT_GEMM_KERNEL_CPU, {0}, {0}, VKVIT_GEMM_BENCH_SCALAR_LOADS, 0},
        {64, 64, 64, VKVIT_GEMM_KERNEL_CPU, {0}, {0}, VKVIT_GEMM_BENCH_SINGLE_STORES, 0},
        {64, 64, 64, VKVIT_GEMM_KERNEL_CPU, {0}, {0}, VKVIT_GEMM_BENCH_SCALAR_LOADS | VKVIT_GEMM_BENCH_SINGLE_STORES,
         VKVIT_PRECISION_FP16},
        {33, 17, 9, VKVIT_GEMM_KERNEL_SHARED, {0}, {64, 64, 16, 4, 4}, 0, 0},
        {33, 17, 9, VKVIT_GEMM_KERNEL_SHARED, {32, 32, 16, 2, 2}, {32, 32, 16, 2, 2}, 0, 0},
        {70, 40, 50, VKVIT_GEMM_KERNEL_SHARED, {16, 8, 8, 1, 1}, {16, 8, 8, 1, 1}, 0, 0},
        {70, 40, 50, VKVIT_GEMM_KERNEL_SHARED, {128, 64, 16, 8, 4}, {128, 64, 16, 8, 4}, 0, VKVIT_PRECISION_FP16},
        {70, 40, 64, VKVIT_GEMM_KERNEL_SHARED, {32, 32, 32, 4, 4}, {32, 32, 32, 4, 4}, 0, VKVIT_PRECISION_FP16_MATH},
        /* the shared kernel's automatic tiles for large GEMMs (src/ops/gemm.c), then the largest one in fp16 math */
        {1030, 1100, 20, VKVIT_GEMM_KERNEL_SHARED, {0}, {128, 64, 16, 8, 4}, 0, 0},
        {1030, 2050, 1030, VKVIT_GEMM_KERNEL_SHARED, {0}, {128, 128, 16, 8, 8}, 0, 0},
        {130, 140, 64, VKVIT_GEMM_KERNEL_SHARED, {128, 128, 16, 8, 8}, {128, 128, 16, 8, 8}, 0, VKVIT_PRECISION_FP16_MATH},
        {70, 40, 64, VKVIT_GEMM_KERNEL_CPU, {.bm = 32, .tn = 2}, {32, 16, 0, 1, 2}, 0, VKVIT_PRECISION_FP16_MATH},
        /* tn 8 in fp32 arithmetic (fp32 or fp16 weights): the build-time unrolled variants (64- and 32-k chunks),
         * and the generic shader in their place; an odd K keeps them off (scalar loads) */
        {130, 136, 200, VKVIT_GEMM_KERNEL_CPU, {.bm = 64, .tn = 8, .bk = 64}, {64, 64, 64, 1, 8}, 0, 0},
        {130, 136, 200, VKVIT_GEMM_KERNEL_CPU, {.bm = 64, .tn = 8, .bk = 32}, {64, 64, 32, 1, 8}, 0, 0},
        {130, 136, 200, VKVIT_GEMM_KERNEL_CPU, {.tn = 8}, {0, 64, 0, 1, 8}, VKVIT_GEMM_BENCH_GENERIC, 0},
        {130, 136, 201, VKVIT_GEMM_KERNEL_CPU, {.tn = 8}, {0, 64, 0, 1, 8}, 0, 0},
        {130, 136, 200, VKVIT_GEMM_KERNEL_CPU, {.tn = 8}, {0, 64, 0, 1, 8}, 0, VKVIT_PRECISION_FP16},
        /* K in one chunk (attention's Q K^T): no running sums, unless asked for; 33..64 k in one 64-k chunk */
        {201, 208, 64, VKVIT_GEMM_KERNEL_CPU, {0}, {0, 56, 64, 1, 7}, 0, 0},
        {201, 208, 64, VKVIT_GEMM_KERNEL_CPU, {0}, {0, 56, 64, 1, 7}, VKVIT_GEMM_BENCH_RUNNING_SUMS, 0},
        {70, 64, 40, VKVIT_GEMM_KERNEL_CPU, {.bk = 64}, {0, 64, 64, 1, 8}, 0, 0},
        {70, 64, 40, VKVIT_GEMM_KERNEL_CPU, {.bk = 32}, {0, 64, 32, 1, 8}, 0, 0},
        {70, 64, 32, VKVIT_GEMM_KERNEL_CPU, {.bk = 32}, {0, 64, 32, 1, 8}, 0, 0},     /* the 32-k unrolled variant */
    };
    /* The library's reading of VKVIT_DISABLE_UNROLLED ("0" or empty: not disabled), as `vkvit info` shows it. */
    const bool unrolled_built =
        VKVIT_HAVE_GEMM_CPU_UNROLLED && !strstr(info.workarounds, "unrolled CPU GEMM variants disabled by request");
    for (size_t i = 0; i < sizeof tuned / sizeof tuned[0]; i++) {
        const vkvit_precision precision = tuned[i].precision ? tuned[i].precision : VKVIT_PRECISION_FP32;
        if ((precision == VKVIT_PRECISION_FP16 && !info.fp16_in_use) ||
            (precision == VKVIT_PRECISION_FP16_MATH && !(info.fp16_in_use && info.fp16_arithmetic)))
            continue;
        vkvit_gemm_bench_desc d = {.m = tuned[i].m, .n = tuned[i].n, .k = tuned[i].k, .repeat = 2,
                                   .seed = seed + 100 + (uint32_t)i, .precision = precision,
                                   .kernel = tuned[i].kernel, .tile = tuned[i].tile, .flags = tuned[i].flags};
        vkvit_gemm_bench_result res;
        vkvit_result r = vkvit_bench_gemm(ctx, &d, &res);
        CHECK(r == VKVIT_OK, "tuned case %zu: %s %s", i, vkvit_result_name(r), vkvit_last_error());
        if (r != VKVIT_OK) continue;
        const vkvit_gemm_tile *w = &tuned[i].want, *t = &res.tile;
        const bool tile_ok = (!w->bm || t->bm == w->bm) && (!w->bn || t->bn == w->bn) && (!w->bk || t->bk == w->bk) &&
                             (!w->tm || t->tm == w->tm) && (!w->tn || t->tn == w->tn) &&
                             (res.kernel != VKVIT_GEMM_KERNEL_CPU || (t->bn == 8 * t->tn && t->tm == 1));
        const double tolerance = precision == VKVIT_PRECISION_FP16_MATH ? 5e-3 : 1e-5;
        CHECK(res.kernel == tuned[i].kernel && tile_ok && res.mismatches == 0 && res.checked > 0 &&
              res.max_error <= tolerance,
              "tuned case %zu: kernel %d (want %d), tile %ux%ux%u/%ux%u, %llu of %llu checked elements wrong (max "
              "relative diff %g)", i, (int)res.kernel, (int)tuned[i].kernel, t->bm, t->bn, t->bk, t->tm, t->tn,
              (unsigned long long)res.mismatches, (unsigned long long)res.checked, res.max_error);
        const bool cpu = res.kernel == VKVIT_GEMM_KERNEL_CPU;
        const bool even = tuned[i].k % 4 == 0, pairs = cpu && info.texel_reads_in_use && tuned[i].n % 2 == 0;
        CHECK(res.texel_reads == (cpu && info.texel_reads_in_use) &&
              res.vec4_loads == (cpu && even && !(tuned[i].flags & VKVIT_GEMM_BENCH_SCALAR_LOADS)) &&
              res.pair_stores == (pairs && !(tuned[i].flags & VKVIT_GEMM_BENCH_SINGLE_STORES)),
              "tuned case %zu: texel %d, vec4 %d, pairs %d", i, res.texel_reads, res.vec4_loads, res.pair_stores);
        const bool unrolled = unrolled_built && res.texel_reads && res.vec4_loads && res.pair_stores &&
                              precision != VKVIT_PRECISION_FP16_MATH && t->tn == 8 &&
                              !(tuned[i].flags & VKVIT_GEMM_BENCH_GENERIC);
        CHECK(res.unrolled == unrolled, "tuned case %zu: unrolled %d, expected %d", i, res.unrolled, unrolled);
        const bool one_chunk = cpu && tuned[i].k <= t->bk && !(tuned[i].flags & VKVIT_GEMM_BENCH_RUNNING_SUMS);
        CHECK(res.one_chunk == one_chunk, "tuned case %zu: one chunk %d, expected %d", i, res.one_chunk, one_chunk);
    }
    /* The automatic choice reports itself too: never AUTO, and a CPU tile of 8 lanes. */
    {
        vkvit_gemm_bench_result res;
        const vkvit_gemm_bench_desc d = {.m = 201, .n = 96, .k = 384, .repeat = 1};
        vkvit_result r = vkvit_bench_gemm(ctx, &d, &res);
        CHECK(r == VKVIT_OK && res.kernel != VKVIT_GEMM_KERNEL_AUTO && res.tile.bm && res.tile.bn && res.tile.bk &&
              (res.kernel != VKVIT_GEMM_KERNEL_CPU || res.tile.bn == 8 * res.tile.tn),
              "automatic: %s, kernel %d, tile %ux%ux%u/%ux%u", vkvit_result_name(r), (int)res.kernel, res.tile.bm,
              res.tile.bn, res.tile.bk, res.tile.tm, res.tile.tn);
    }

    /* Bad descriptions: INVALID_ARGUMENT, a sentence naming what broke the rule, and a zeroed result. */
    static const struct {
        vkvit_gemm_bench_desc d;
        const char *needle;
    } bad[] = {
        {{.m = 0, .n = 4, .k = 4}, "m = 0"},
        {{.m = 4, .n = 65537, .k = 4}, "n = 65537"},
        {{.m = 65536, .n = 65536, .k = 1}, "2^28"},
        {{.m = 4, .n = 4, .k = 4, .repeat = 129}, "repeat 129"},
        {{.m = 4, .n = 4, .k = 4, .warmup = 129}, "warmup 129"},
        {{.m = 4, .n = 4, .k = 4, .precision = (vkvit_precision)7}, "precision 7"},
        {{.m = 4, .n = 4, .k = 4, .kernel = (vkvit_gemm_kernel)7}, "kernel 7"},
        {{.m = 4, .n = 4, .k = 4, .flags = 16}, "unknown bits 0x10"},
        {{.m = 4, .n = 4, .k = 4, .kernel = VKVIT_GEMM_KERNEL_CPU, .tile = {.bm = 257}}, "bm 1..256"},
        {{.m = 4, .n = 4, .k = 4, .kernel = VKVIT_GEMM_KERNEL_CPU, .tile = {.tn = 33}}, "tn 1..32"},
        {{.m = 4, .n = 4, .k = 4, .kernel = VKVIT_GEMM_KERNEL_CPU, .tile = {.bk = 48}}, "bk 32 or 64"},
        {{.m = 4, .n = 4, .k = 4, .kernel = VKVIT_GEMM_KERNEL_CPU, .tile = {.bn = 20}}, "(bn = 8 tn)"},
        {{.m = 4, .n = 4, .k = 4, .kernel = VKVIT_GEMM_KERNEL_CPU, .tile = {.tm = 2}}, "(tm 1)"},
        {{.m = 4, .n = 4, .k = 4, .kernel = VKVIT_GEMM_KERNEL_CPU, .tile = {.tn = 64}}, "tn 1..32"},
        {{.m = 4, .n = 4, .k = 4, .kernel = VKVIT_GEMM_KERNEL_SHARED, .tile = {.tm = 3}}, "tm and tn 1..8 dividing"},
        {{.m = 4, .n = 4, .k = 4, .kernel = VKVIT_GEMM_KERNEL_SHARED, .tile = {.tn = 9, .bn = 72}}, "tm and tn 1..8"},
        {{.m = 4, .n = 4, .k = 4, .kernel = VKVIT_GEMM_KERNEL_SHARED, .tile = {.bk = 64}}, "at most 2048"},
        {{.m = 4, .n = 4, .k = 4, .kernel = VKVIT_GEMM_KERNEL_SHARED, .tile = {.bm = 256, .bn = 256, .bk = 8, .tm = 1,
          .tn = 1}}, "invocations"},
        {{.m = 4, .n = 4, .k = 4, .kernel = VKVIT_GEMM_KERNEL_SHARED, .flags = VKVIT_GEMM_BENCH_SINGLE_STORES},
         "the shared kernel has none"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vkvit_gemm_bench_result res;
        memset(&res, 0xff, sizeof res);
        vkvit_result r = vkvit_bench_gemm(ctx, &bad[i].d, &res);
        CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), bad[i].needle) && res.runs == 0,
              "bad desc %zu: %s '%s'", i, vkvit_result_name(r), vkvit_last_error());
    }
    /* The cooperative-matrix kernel: fp16 arithmetic only, and only where the device runs it. */
    {
        vkvit_gemm_bench_result res;
        vkvit_result r = vkvit_bench_gemm(ctx, &(vkvit_gemm_bench_desc){.m = 4, .n = 4, .k = 4,
                                                                        .kernel = VKVIT_GEMM_KERNEL_COOPMAT}, &res);
        CHECK(r == VKVIT_ERROR_UNSUPPORTED && strstr(vkvit_last_error(), "not fp16-math") && res.runs == 0,
              "coopmat at fp32: %s '%s'", vkvit_result_name(r), vkvit_last_error());
        if (info.fp16_in_use && info.fp16_arithmetic && !info.cooperative_matrix_in_use) {
            r = vkvit_bench_gemm(ctx, &(vkvit_gemm_bench_desc){.m = 4, .n = 4, .k = 4,
                                                              .precision = VKVIT_PRECISION_FP16_MATH,
                                                              .kernel = VKVIT_GEMM_KERNEL_COOPMAT}, &res);
            CHECK(r == VKVIT_ERROR_UNSUPPORTED && strstr(vkvit_last_error(), "has none"),
                  "coopmat without cooperative matrices: %s '%s'", vkvit_result_name(r), vkvit_last_error());
        }
    }
    vkvit_gemm_bench_result res;
    CHECK(vkvit_bench_gemm(NULL, &(vkvit_gemm_bench_desc){.m = 1, .n = 1, .k = 1}, &res) ==
              VKVIT_ERROR_INVALID_ARGUMENT, "NULL ctx");
    CHECK(vkvit_bench_gemm(ctx, NULL, &res) == VKVIT_ERROR_INVALID_ARGUMENT, "NULL desc");
    CHECK(vkvit_bench_gemm(ctx, &(vkvit_gemm_bench_desc){.m = 1, .n = 1, .k = 1}, NULL) ==
              VKVIT_ERROR_INVALID_ARGUMENT, "NULL result");
    return vt_finish(ctx);
}
