// SPDX-License-Identifier: Apache-2.0
/* The cooperative-matrix GEMM of fp16-math sessions (shaders/gemm_coopmat.comp): its first-use self-check
 * (src/coopmat_guard.c) and its selection. On a device without cooperative matrices (lavapipe) the emulated kernel
 * stands in, as VKVIT_COOPMAT_EMULATE=1 would make it; on one that uses the NV kernel, that kernel is tested.
 *   - the guard is a no-op where cooperative matrices are not in use;
 *   - a correct kernel passes: it stays in use, nothing is logged, and fp16-math GEMMs (vkvit_bench_gemm, which
 *     builds the same graph node a session does) really run it: with the kernel's test hook switched on afterwards
 *     (every output + 1), their results turn wrong;
 *   - a wrong kernel (the hook on before the check) is switched off for the ctx: caps and device info say so, the
 *     workarounds name the self-check, exactly one warning reaches the log callback, and fp16-math GEMMs are right
 *     again (the tiled kernel); the guard runs once per ctx.
 * Validation-clean (vt_finish). The kernel's numerics over the shape sweep are in test_gemm, whole networks in
 * test_fp16_math.py. */
#include "coopmat_guard.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

static int self_check_warnings;

static void log_fn(void *user, int level, const char *msg) {
    vt_log(user, level, msg);
    if (level == VKVIT_LOG_WARNING && strstr(msg, "self-check")) self_check_warnings++;
}

/* One fp16-math GEMM through vkvit_bench_gemm; returns its mismatch count (the run itself must succeed). */
static uint64_t gemm_mismatches(vkvit_ctx *ctx, uint32_t m, uint32_t n, uint32_t k) {
    const vkvit_gemm_bench_desc d = {.m = m, .n = n, .k = k, .repeat = 1, .seed = 7,
                                     .precision = VKVIT_PRECISION_FP16_MATH};
    vkvit_gemm_bench_result r;
    const vkvit_result res = vkvit_bench_gemm(ctx, &d, &r);
    CHECK(res == VKVIT_OK, "bench gemm %ux%ux%u fp16-math: %s %s", m, n, k, vkvit_result_name(res), vkvit_last_error());
    return res == VKVIT_OK ? r.mismatches : UINT64_MAX;
}

int main(void) {
    unsetenv("VKVIT_COOPMAT_EMULATE");
    unsetenv("VKVIT_DISABLE_COOPMAT");
    vkvit_ctx *ctx = vt_ctx_with((vkvit_ctx_desc){.log = log_fn});
    vkvit__policy *c = &ctx->policy;
    if (!c->fp16_math) {
        printf("SKIP: no fp16 arithmetic: fp16-math, and with it the cooperative-matrix GEMM, does not run here\n");
        vkvit_ctx_destroy(ctx);
        return 77;
    }
    if (getenv("VKVIT_COOPMAT_NV2") && c->coopmat != VKVIT_COOPMAT_NV2) { /* test_coopmat_nv2: that kernel only */
        printf("SKIP: VKVIT_COOPMAT_NV2=1, but the NV cooperative-matrix-2 kernel does not run here (workarounds: "
               "%s)\n", ctx->info.workarounds);
        vkvit_ctx_destroy(ctx);
        return 77;
    }
    const bool hw = c->coopmat == VKVIT_COOPMAT_NV || c->coopmat == VKVIT_COOPMAT_KHR || c->coopmat == VKVIT_COOPMAT_NV2;
    printf("cooperative matrices on this device: %s\n", !hw ? "none: testing the emulated kernel"
                                                      : c->coopmat == VKVIT_COOPMAT_KHR ? "the KHR kernel"
                                                      : c->coopmat == VKVIT_COOPMAT_NV2 ? "the NV cooperative-matrix-2 kernel"
                                                                                        : "the NV kernel");

    if (c->coopmat == VKVIT_COOPMAT_NONE) {
        vkvit__coopmat_guard(ctx);
        CHECK(!c->coopmat_checked && c->coopmat == VKVIT_COOPMAT_NONE, "the guard ran without cooperative matrices");
        c->coopmat = VKVIT_COOPMAT_EMULATED; /* what VKVIT_COOPMAT_EMULATE=1 sets up */
        ctx->info.cooperative_matrix_in_use = 1;
    }

    /* A correct kernel passes and is what fp16-math GEMMs run. */
    vkvit__coopmat_guard(ctx);
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    CHECK(c->coopmat_checked && c->coopmat != VKVIT_COOPMAT_NONE && info.cooperative_matrix_in_use, "a correct kernel "
          "failed its self-check: %s", info.workarounds);
    CHECK(self_check_warnings == 0 && !strstr(info.workarounds, "self-check"), "warnings %d, workarounds: %s",
          self_check_warnings, info.workarounds);
    CHECK(gemm_mismatches(ctx, 100, 90, 64) == 0, "fp16-math GEMM on cooperative matrices is wrong");
    ctx->test_hooks.coopmat_corrupt = true;
    CHECK(gemm_mismatches(ctx, 100, 90, 64) > 0, "with the kernel's test hook on the result is still right: "
          "fp16-math GEMMs do not run the cooperative-matrix kernel");

    /* A wrong kernel is switched off, once, with one warning. */
    c->coopmat_checked = false;
    vkvit__coopmat_guard(ctx);
    MUST(vkvit_ctx_device_info(ctx, &info));
    CHECK(c->coopmat_checked && c->coopmat == VKVIT_COOPMAT_NONE && !info.cooperative_matrix_in_use,
          "a wrong kernel stayed in use");
    CHECK(strstr(info.workarounds, "cooperative matrix failed its self-check") != NULL, "workarounds: %s",
          info.workarounds);
    CHECK(self_check_warnings == 1, "%d self-check warnings reached the log, want 1", self_check_warnings);
    printf("workarounds after the failed check: %s\n", info.workarounds);
    CHECK(gemm_mismatches(ctx, 100, 90, 64) == 0, "after the failed check fp16-math GEMMs are still wrong");
    vkvit__coopmat_guard(ctx);
    CHECK(self_check_warnings == 1 && c->coopmat == VKVIT_COOPMAT_NONE, "the guard ran twice");
    return vt_finish(ctx);
}
