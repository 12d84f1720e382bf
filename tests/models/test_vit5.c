// SPDX-License-Identifier: Apache-2.0
/* Whole ViT-5 networks of both flavours against PyTorch: every tests/golden/models/vit5_*.vkvit runs through the
 * public API (model -> session -> set_input -> run -> get_output) and its logits must match the golden's within
 * 1e-4 relative to their scale (fp32), once with each attention path (VKVIT_ATTENTION=fused and =gemm, as ctx->policy.attention). Also:
 * arena planning is far below the sum of all intermediates, a second run on the same session gives identical logits,
 * and validation stays silent. */
#include "golden_util.h"
#include "test_util.h"

#include <dirent.h>

#define GOLDEN_DIR VKVIT_SOURCE_DIR "/tests/golden/models"

/* fp16 sessions need fp16 storage, which a device (or profile) of the Vulkan 1.1 minimum lacks: their checks are
 * skipped there (the fp32 ones still run). */
static bool fp16_sessions(vkvit_ctx *ctx) {
    vkvit_device_info info;
    return vkvit_ctx_device_info(ctx, &info) == VKVIT_OK && info.fp16_in_use;
}

/* Runs one golden with the attention path `path` ("fused" or "gemm", through ctx->policy.attention, where
 * vkvit_ctx_create puts VKVIT_ATTENTION and the session's graph build reads it; the previous value is restored
 * afterwards). Returns the node count. */
static uint32_t run_golden(vkvit_ctx *ctx, const char *stem, const char *path) {
    const uint32_t prev = ctx->policy.attention;
    ctx->policy.attention = !strcmp(path, "fused") ? 1 : 2;
    char model_path[4608], io_path[4608];
    snprintf(model_path, sizeof model_path, "%s/%s.vkvit", GOLDEN_DIR, stem);
    snprintf(io_path, sizeof io_path, "%s/%s.io.safetensors", GOLDEN_DIR, stem);
    size_t n_in, n_out;
    vt_golden io;
    vt_golden_open(io_path, &io);
    float *input = vt_golden_f32_req(&io, "input", &n_in);
    float *want = vt_golden_f32_req(&io, "logits", &n_out);
    uint32_t in_shape[4];
    for (int i = 0; i < 4; i++) in_shape[i] = (uint32_t)vt_golden_shape(&io, "input")->shape[i];
    vt_golden_close(&io);

    vkvit_model *model = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = model_path}, &model));
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = in_shape[0]}, &s));
    ctx->policy.attention = prev;
    vkvit_shape is = vkvit_session_input_shape(s), os = vkvit_session_output_shape(s);
    CHECK(is.ndim == 4 && is.dims[0] == in_shape[0] && is.dims[1] == in_shape[1] && is.dims[2] == in_shape[2] &&
              is.dims[3] == 3,
          "%s: input shape [%u, %u, %u, %u]", stem, is.dims[0], is.dims[1], is.dims[2], is.dims[3]);
    CHECK(os.ndim == 2 && os.dims[0] * os.dims[1] == n_out, "%s: output shape", stem);

    float *got = malloc(n_out * sizeof(float));
    double *ref = malloc(n_out * sizeof(double));
    for (size_t i = 0; i < n_out; i++) {
        ref[i] = want[i];
        got[i] = NAN;
    }
    MUST(vkvit_session_set_input(s, input, n_in));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, got, n_out));
    size_t worst = 0;
    double err = vt_max_rel_err(got, ref, n_out, &worst);
    vkvit_session_stats st;
    MUST(vkvit_session_get_stats(s, &st));
    printf("%-28s %-5s attention  batch %u  logits max rel err %.3g  (%u nodes, %u barriers, %u pipelines, "
           "arena %.1f KiB, sum of intermediates %.1f KiB)\n",
           stem, path, in_shape[0], err, st.nodes, st.barriers, st.pipelines, st.arena_bytes / 1024.0,
           st.sum_activation_bytes / 1024.0);
    CHECK(err <= 1e-4, "%s (%s attention): max rel err %.3g at %zu (got %.7g, want %.7g)", stem, path, err, worst,
          got[worst], ref[worst]);
    CHECK(st.arena_bytes < st.sum_activation_bytes, "%s: the planner reused nothing", stem);

    /* Replaying the recorded command buffer gives the same logits. */
    float *again = malloc(n_out * sizeof(float));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, again, n_out));
    CHECK(memcmp(again, got, n_out * sizeof(float)) == 0, "%s: second run differs", stem);

    /* fp16 weights (fp32 activations and accumulation): within 1e-2 of the fp32 reference, and not bit-identical
     * to the fp32 session (the weights really are rounded). */
    if (fp16_sessions(ctx)) {
        vkvit_session *s16 = NULL;
        MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = in_shape[0], .precision = VKVIT_PRECISION_FP16},
                                  &s16));
        float *got16 = malloc(n_out * sizeof(float));
        for (size_t i = 0; i < n_out; i++) got16[i] = NAN;
        MUST(vkvit_session_set_input(s16, input, n_in));
        MUST(vkvit_session_run(s16));
        MUST(vkvit_session_get_output(s16, got16, n_out));
        double err16 = vt_max_rel_err(got16, ref, n_out, &worst);
        printf("%-28s fp16 weights (default attention path)  logits max rel err %.3g\n", stem, err16);
        CHECK(err16 <= 1e-2, "%s (fp16 weights): max rel err %.3g at %zu", stem, err16, worst);
        CHECK(memcmp(got16, got, n_out * sizeof(float)) != 0, "%s: fp16 session gave the fp32 logits bit for bit", stem);
        vkvit_session_destroy(s16);
        free(got16);
    }

    free(again), free(got), free(ref), free(input), free(want);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    return st.nodes;
}

static void session_rejects_bad_input_count(vkvit_ctx *ctx, const char *stem) {
    char path[4608];
    snprintf(path, sizeof path, "%s/%s.vkvit", GOLDEN_DIR, stem);
    vkvit_model *model = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = path}, &model));
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(model, NULL, &s));
    float x[7] = {0};
    vkvit_result r = vkvit_session_set_input(s, x, 7);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "7 floats"), "%s", vkvit_last_error());
    r = vkvit_session_get_output(s, x, 7);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT, "get_output with a wrong count: %s", vkvit_result_name(r));
    vkvit_session *s2 = (vkvit_session *)1;
    r = vkvit_session_create(model, &(vkvit_session_desc){.precision = (vkvit_precision)7}, &s2);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && s2 == NULL, "precision 7: %s", vkvit_result_name(r));
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
}

int main(int argc, char **argv) {
    vkvit_ctx *ctx = vt_ctx();
    DIR *d = opendir(GOLDEN_DIR);
    if (!d) {
        fprintf(stderr, "FATAL: no %s\n", GOLDEN_DIR);
        return 1;
    }
    char stems[32][128];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 32) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "vit5", 4) == 0 && len > 6 && !strcmp(e->d_name + len - 6, ".vkvit")) {
            snprintf(stems[n], sizeof stems[n], "%.*s", (int)(len - 6), e->d_name);
            if (argc < 2 || strstr(stems[n], argv[1])) n++;
        }
    }
    closedir(d);
    CHECK(n >= 4, "found %d vit5 golden models", n);
    for (int i = 0; i < n; i++) {
        uint32_t fused = run_golden(ctx, stems[i], "fused"), gemm = run_golden(ctx, stems[i], "gemm");
        CHECK(gemm > fused, "%s: the gemm attention path has %u nodes, the fused one %u", stems[i], gemm, fused);
    }
    if (n) session_rejects_bad_input_count(ctx, stems[0]);
    return vt_finish(ctx);
}
