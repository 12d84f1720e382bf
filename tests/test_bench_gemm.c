/* vkvit_bench_gemm (include/vkvit.h "GEMM micro-benchmark"), through the public API only: shapes of 1, odd sizes,
 * and sizes past the 64 x 64 check grid give per-run GPU times, a median inside them, GFLOP/s, and a result that
 * agrees with the plain-C reference on every checked element (each shape with fresh inputs: a new seed); bad
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
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const bench_case *bc = &cases[c];
        vkvit_gemm_bench_desc d = {.m = bc->m, .n = bc->n, .k = bc->k, .repeat = bc->repeat, .warmup = bc->warmup,
                                   .seed = seed + (uint32_t)c};
        vkvit_gemm_bench_result res;
        vkvit_result r = vkvit_bench_gemm(ctx, &d, &res);
        CHECK(r == VKVIT_OK, "%ux%ux%u: %s %s", bc->m, bc->n, bc->k, vkvit_result_name(r), vkvit_last_error());
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
        CHECK(res.checked == want_checked && res.mismatches == 0 && res.max_error <= 1e-5 && res.dispatches == 1,
              "%ux%ux%u: checked %llu (want %llu), %llu mismatches, max relative diff %g, %u dispatches", bc->m,
              bc->n, bc->k, (unsigned long long)res.checked, (unsigned long long)want_checked,
              (unsigned long long)res.mismatches, res.max_error, res.dispatches);
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
