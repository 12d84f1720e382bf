/* vkvit_bench_gemm (include/vkvit.h "GEMM micro-benchmark"), through the public API only: shapes of 1, odd sizes,
 * and sizes past the 64 x 64 check grid give per-run GPU times, a median inside them, GFLOP/s, and a result that
 * agrees with the plain-C reference on every checked element (each shape with fresh inputs: a new seed), at every
 * precision the device runs (fp32; fp16 weights; fp16 arithmetic, whose relative error must stay within the
 * documented 5e-3 and also show that fp16 products really ran: above fp32's 1e-5 on the larger shapes), up to the
 * most runs a description may ask for (128 timed after 128 warm-up); bad
 * descriptions are refused with a sentence naming the field. Validation-clean (vt_finish). */
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
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vkvit_gemm_bench_result res;
        memset(&res, 0xff, sizeof res);
        vkvit_result r = vkvit_bench_gemm(ctx, &bad[i].d, &res);
        CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), bad[i].needle) && res.runs == 0,
              "bad desc %zu: %s '%s'", i, vkvit_result_name(r), vkvit_last_error());
    }
    vkvit_gemm_bench_result res;
    CHECK(vkvit_bench_gemm(NULL, &(vkvit_gemm_bench_desc){.m = 1, .n = 1, .k = 1}, &res) ==
              VKVIT_ERROR_INVALID_ARGUMENT, "NULL ctx");
    CHECK(vkvit_bench_gemm(ctx, NULL, &res) == VKVIT_ERROR_INVALID_ARGUMENT, "NULL desc");
    CHECK(vkvit_bench_gemm(ctx, &(vkvit_gemm_bench_desc){.m = 1, .n = 1, .k = 1}, NULL) ==
              VKVIT_ERROR_INVALID_ARGUMENT, "NULL result");
    return vt_finish(ctx);
}
