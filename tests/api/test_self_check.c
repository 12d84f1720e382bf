// SPDX-License-Identifier: Apache-2.0
/* The first-use self-check of the device-sensitive variants (src/self_check.c, self_check.h):
 *   - on this device as it is, every variant the policy chose passes: after an fp16-math session (the one that
 *     needs every problem) nothing is switched off, no workaround names a self-check, no warning is logged; the
 *     check's time is printed (the INFO line) and the problems run once per ctx (a second session runs none);
 *   - per variant the policy runs here (lavapipe: subgroup reductions, texel reads, the CPU GEMM, fp16 GEMM, fp16
 *     arithmetic; under VKVIT_DEVICE_PROFILE=gpu also the subgroup attention), on a fresh ctx with the test hook
 *     self_check_corrupt set to that variant (its problems' outputs + 1 while it runs them): the first session of
 *     the precision that needs it switches exactly that variant off (policy and vkvit_device_info), the
 *     workarounds say "<variant> failed its self-check", one warning reaches the log callback, and an fp32 session
 *     of a golden ViT-5 (tests/golden/models/vit5_nvsubq_cls_r4.vkvit) still gives PyTorch's logits (max rel err
 *     <= 1e-4, the whole-model tolerance; the output buffer poisoned with NaN first); a failed fp16 GEMM makes fp16
 *     sessions refused (VKVIT_ERROR_UNSUPPORTED), a failed fp16 arithmetic makes fp16-math ones refused while fp16
 *     ones run.
 * The problems' own inputs are fixed (the check runs in production, reproducibly); the golden inputs are the
 * PyTorch reference's. Needs a Vulkan device (exit 77 = skipped without one); validation on and silent. */
#define _POSIX_C_SOURCE 200809L
#include "golden_util.h"
#include "self_check.h"
#include "test_util.h"

#define MODEL VKVIT_SOURCE_DIR "/tests/golden/models/vit5_nvsubq_cls_r4"

static int warnings, ms_lines;

static void log_fn(void *user, int level, const char *msg) {
    if (level == VKVIT_LOG_WARNING && strstr(msg, "failed its self-check")) warnings++;
    if (strstr(msg, "first-use self-check")) {
        ms_lines++;
        printf("  %s\n", msg);
    }
    if (level != VKVIT_LOG_INFO) vt_log(user, level, msg);
}

static bool on(const vkvit__policy *p, uint32_t v) {
    switch (v) {
    case VKVIT_SELF_CHECK_SUBGROUP_REDUCTIONS: return p->subgroup_reductions;
    case VKVIT_SELF_CHECK_TEXEL_READS: return p->texel_reads;
    case VKVIT_SELF_CHECK_CPU_GEMM: return p->cpu_kernels && p->gemm_cpu;
    case VKVIT_SELF_CHECK_SUBGROUP_ATTENTION: return !p->cpu_kernels && p->subgroup_shuffles;
    case VKVIT_SELF_CHECK_FP16_GEMM: return p->fp16;
    case VKVIT_SELF_CHECK_FP16_MATH: return p->fp16_math;
    default: return false;
    }
}

static const struct {
    uint32_t v;
    const char *name;                       /* as the workaround names it */
    vkvit_precision first;                  /* the session whose creation runs its problem */
    const char *profile;                    /* VKVIT_DEVICE_PROFILE for the ctx ("": none) */
} k_variants[] = {
    {VKVIT_SELF_CHECK_SUBGROUP_REDUCTIONS, "subgroup reductions", VKVIT_PRECISION_FP32, ""},
    {VKVIT_SELF_CHECK_TEXEL_READS, "texel reads", VKVIT_PRECISION_FP32, ""},
    {VKVIT_SELF_CHECK_CPU_GEMM, "CPU GEMM", VKVIT_PRECISION_FP32, ""},
    {VKVIT_SELF_CHECK_SUBGROUP_ATTENTION, "subgroup attention", VKVIT_PRECISION_FP32, "gpu"},
    {VKVIT_SELF_CHECK_FP16_GEMM, "fp16 GEMM", VKVIT_PRECISION_FP16, ""},
    {VKVIT_SELF_CHECK_FP16_MATH, "fp16 arithmetic", VKVIT_PRECISION_FP16_MATH, ""},
};

static vkvit_ctx *make_ctx(const char *profile) {
    if (profile[0]) setenv("VKVIT_DEVICE_PROFILE", profile, 1);
    else unsetenv("VKVIT_DEVICE_PROFILE");
    return vt_ctx_with((vkvit_ctx_desc){.log = log_fn});
}

/* The golden's logits from an fp32 session, against PyTorch's; returns the max relative error. */
static double golden_error(vkvit_model *m) {
    vt_golden io;
    vt_golden_open(MODEL ".io.safetensors", &io);
    size_t n_in = 0, n_out = 0;
    float *input = vt_golden_f32_req(&io, "input", &n_in), *want = vt_golden_f32_req(&io, "logits", &n_out);
    const uint32_t batch = (uint32_t)vt_golden_shape(&io, "input")->shape[0];
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(m, &(vkvit_session_desc){.batch = batch, .label = "golden"}, &s));
    float *got = malloc(n_out * sizeof *got);
    double *ref = malloc(n_out * sizeof *ref);
    for (size_t i = 0; i < n_out; i++) got[i] = NAN, ref[i] = want[i];
    MUST(vkvit_session_set_input(s, input, n_in));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, got, n_out));
    const double err = vt_max_rel_err(got, ref, n_out, NULL);
    vkvit_session_destroy(s);
    free(got);
    free(ref);
    free(input);
    free(want);
    vt_golden_close(&io);
    return err;
}

int main(void) {
    unsetenv("VKVIT_DISABLE_SUBGROUP");
    unsetenv("VKVIT_DISABLE_TEXEL");
    unsetenv("VKVIT_DISABLE_F16");

    /* The device as it is: everything passes, once. */
    vkvit_ctx *ctx = make_ctx("");
    const vkvit__policy before = ctx->policy;
    vkvit_model *m = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODEL ".vkvit"}, &m));
    if (ctx->policy.fp16_math) {
        vkvit_session *s = NULL;
        MUST(vkvit_session_create(m, &(vkvit_session_desc){.precision = VKVIT_PRECISION_FP16_MATH}, &s));
        vkvit_session_destroy(s);
    }
    const int lines = ms_lines;
    const double err = golden_error(m);
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(k_variants); i++)
        CHECK(on(&before, k_variants[i].v) == on(&ctx->policy, k_variants[i].v), "%s switched off on a correct "
              "device: %s", k_variants[i].name, info.workarounds);
    CHECK(!strstr(info.workarounds, "self-check") && warnings == 0, "warnings %d, workarounds: %s", warnings,
          info.workarounds);
    CHECK(lines == 1 && ms_lines == 1, "the self-check ran %d times (%d before the golden session), want once",
          ms_lines, lines);
    CHECK(err <= 1e-4, "golden logits: max rel err %.3g", err);
    vkvit_model_destroy(m);
    vt_finish(ctx);

    /* Each variant corrupted: switched off, named, and the golden still right. */
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(k_variants); i++) {
        ctx = make_ctx(k_variants[i].profile);
        const uint32_t v = k_variants[i].v;
        if (!on(&ctx->policy, v)) {
            printf("SKIP %s: not in use on this device%s%s\n", k_variants[i].name,
                   k_variants[i].profile[0] ? " under the profile " : "", k_variants[i].profile);
            vt_finish(ctx);
            continue;
        }
        printf("%s corrupted%s%s:\n", k_variants[i].name, k_variants[i].profile[0] ? ", profile " : "",
               k_variants[i].profile);
        const vkvit__policy p0 = ctx->policy;
        ctx->test_hooks.self_check_corrupt = v;
        warnings = 0;
        MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODEL ".vkvit"}, &m));
        vkvit_session *s = NULL;
        const vkvit_result r = vkvit_session_create(m, &(vkvit_session_desc){.precision = k_variants[i].first}, &s);
        vkvit_session_destroy(s);
        MUST(vkvit_ctx_device_info(ctx, &info));
        printf("  workarounds: %s\n", info.workarounds);
        CHECK(!on(&ctx->policy, v), "%s still in use", k_variants[i].name);
        for (size_t j = 0; j < VKVIT_ARRAY_LEN(k_variants); j++)
            if (j != i && k_variants[j].v != VKVIT_SELF_CHECK_FP16_MATH)
                CHECK(on(&p0, k_variants[j].v) == on(&ctx->policy, k_variants[j].v), "%s corrupted: %s switched "
                      "off too", k_variants[i].name, k_variants[j].name);
        char want[96];
        snprintf(want, sizeof want, "%s failed its self-check", k_variants[i].name);
        CHECK(strstr(info.workarounds, want) != NULL, "workarounds lack '%s': %s", want, info.workarounds);
        CHECK(warnings == 1, "%d self-check warnings, want 1", warnings);
        if (v == VKVIT_SELF_CHECK_FP16_GEMM) {
            CHECK(r == VKVIT_ERROR_UNSUPPORTED && !info.fp16_in_use, "fp16 session after a failed fp16 GEMM: %s, "
                  "fp16_in_use %d", vkvit_result_name(r), info.fp16_in_use);
        } else if (v == VKVIT_SELF_CHECK_FP16_MATH) {
            CHECK(r == VKVIT_ERROR_UNSUPPORTED && strstr(vkvit_last_error(), "failed their first-use self-check"),
                  "fp16-math session after a failed fp16 arithmetic: %s: %s", vkvit_result_name(r),
                  vkvit_last_error());
            MUST(vkvit_session_create(m, &(vkvit_session_desc){.precision = VKVIT_PRECISION_FP16}, &s));
            vkvit_session_destroy(s);
        } else {
            CHECK(r == VKVIT_OK, "session after the fallback: %s %s", vkvit_result_name(r), vkvit_last_error());
        }
        if (v == VKVIT_SELF_CHECK_SUBGROUP_REDUCTIONS) CHECK(!info.subgroup_in_use, "subgroup_in_use still 1");
        if (v == VKVIT_SELF_CHECK_TEXEL_READS) CHECK(!info.texel_reads_in_use, "texel_reads_in_use still 1");
        const double e = golden_error(m);
        printf("  golden logits after the fallback: max rel err %.3g\n", e);
        CHECK(e <= 1e-4, "%s corrupted: golden logits max rel err %.3g", k_variants[i].name, e);
        CHECK(warnings == 1, "later sessions ran the check again: %d warnings", warnings);
        vkvit_model_destroy(m);
        ctx->test_hooks.self_check_corrupt = 0;
        vt_finish(ctx);
    }
    unsetenv("VKVIT_DEVICE_PROFILE");
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
