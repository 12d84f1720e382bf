// SPDX-License-Identifier: Apache-2.0
/* Pooled features out (issue 17): a session created with desc.features = 1 outputs what the classifier head reads,
 * [B, F] (timm's forward_features + pre-logits), next to unchanged logits.
 *
 * For every golden model (every architecture and readout: ViT-5 CLS / GAP / register concat, both ViL numerics,
 * conditioned resnets) at its golden batch, after NaN-poisoning the outputs:
 *   - the logits still match PyTorch's (max rel err <= 1e-4, the whole-model tolerance);
 *   - the head applied on the host, in double, to the features (logits = features W^T + b, W and b read from the
 *     model file) reproduces PyTorch's logits within the same tolerance: the features are exactly the head's
 *     input, so they match the reference's pre-logits as closely as the logits match its logits;
 *   - the shape is [B, F] with F the head's input width; a session without features refuses get_features;
 *   - with the batch split into sub-batches (a shrunk dispatch limit, as in test_limits) the features are the same.
 * Validation (synchronization validation on) stays silent. */
#include "golden_util.h"
#include "test_util.h"

#define MODELS VKVIT_SOURCE_DIR "/tests/golden/models/"
#define TOL 1e-4

static void check_model(vkvit_ctx *ctx, const char *path) {
    char stem[256], io_path[512];
    snprintf(stem, sizeof stem, "%s", strrchr(path, '/') + 1);
    *strrchr(stem, '.') = '\0';
    snprintf(io_path, sizeof io_path, MODELS "%s.io.safetensors", stem);
    vt_golden io, file;
    vt_golden_open(io_path, &io);
    vt_golden_open(path, &file);
    size_t n_in, n_out, n_cond = 0, n_w, n_b = 0;
    float *input = vt_golden_f32_req(&io, "input", &n_in), *logits = vt_golden_f32_req(&io, "logits", &n_out);
    float *cond = vt_golden_f32(&io, "condition", &n_cond);
    const uint32_t batch = (uint32_t)vt_golden_shape(&io, "input")->shape[0];
    /* The head: out_proj (ViT-5, resnet) or head (ViL), [classes, F]. */
    const char *wname = vt_golden_shape(&file, "head.weight") ? "head.weight" : "out_proj.weight";
    const char *bname = vt_golden_shape(&file, "head.weight") ? "head.bias" : "out_proj.bias";
    float *w = vt_golden_f32_req(&file, wname, &n_w), *bias = vt_golden_f32(&file, bname, &n_b);
    const uint32_t classes = (uint32_t)vt_golden_shape(&file, wname)->shape[0];
    const uint32_t F = (uint32_t)vt_golden_shape(&file, wname)->shape[1];

    vkvit_model *m = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = path}, &m));
    const VkPhysicalDeviceLimits real = ctx->limits;
    float *feats[2] = {NULL, NULL};
    for (int split = 0; split < 2; split++) {
        if (split && batch < 2) break;
        vkvit_session *s = NULL;
        if (split) { /* the largest y grid one workgroup too many: sub-batches (test_limits) */
            vkvit_session_stats st;
            MUST(vkvit_session_create(m, &(vkvit_session_desc){.batch = batch}, &s));
            MUST(vkvit_session_get_stats(s, &st));
            vkvit_session_destroy(s);
            ctx->limits.maxComputeWorkGroupCount[1] = st.largest_grid[1] - 1;
        }
        MUST(vkvit_session_create(m, &(vkvit_session_desc){.batch = batch, .features = 1, .label = stem}, &s));
        vkvit_shape fs = vkvit_session_feature_shape(s);
        CHECK(fs.ndim == 2 && fs.dims[0] == batch && fs.dims[1] == F, "%s: feature shape [%u, %u] (ndim %u), want "
              "[%u, %u]", stem, fs.dims[0], fs.dims[1], fs.ndim, batch, F);
        vkvit_session_stats st;
        MUST(vkvit_session_get_stats(s, &st));
        CHECK(split ? st.sub_batch < batch : st.sub_batch == batch, "%s: sub-batch %u of %u", stem, st.sub_batch,
              batch);
        float *got = malloc(n_out * sizeof *got), *f = malloc((size_t)batch * F * sizeof *f);
        for (size_t i = 0; i < n_out; i++) got[i] = NAN;
        for (size_t i = 0; i < (size_t)batch * F; i++) f[i] = NAN;
        MUST(vkvit_session_set_input(s, input, n_in));
        if (cond) MUST(vkvit_session_set_condition(s, cond, n_cond));
        MUST(vkvit_session_run(s));
        MUST(vkvit_session_get_output(s, got, n_out));
        MUST(vkvit_session_get_features(s, f, (size_t)batch * F));
        double *want = malloc(n_out * sizeof *want), *again = malloc(n_out * sizeof *again);
        for (size_t i = 0; i < n_out; i++) want[i] = logits[i];
        for (uint32_t b = 0; b < batch; b++)
            for (uint32_t c = 0; c < classes; c++) {
                double acc = bias ? bias[c] : 0.0;
                for (uint32_t k = 0; k < F; k++) acc += (double)f[(size_t)b * F + k] * w[(size_t)c * F + k];
                again[(size_t)b * classes + c] = acc;
            }
        float *again_f = malloc(n_out * sizeof *again_f);
        for (size_t i = 0; i < n_out; i++) again_f[i] = (float)again[i];
        double e_logits = vt_max_rel_err(got, want, n_out, NULL), e_feat = vt_max_rel_err(again_f, want, n_out, NULL);
        CHECK(e_logits <= TOL, "%s: logits max rel err %.3g", stem, e_logits);
        CHECK(e_feat <= TOL, "%s: head(features) vs PyTorch logits: max rel err %.3g", stem, e_feat);
        printf("%-40s %s F %4u: logits %.2g, head(features) %.2g\n", stem, split ? "split  " : "whole  ", F, e_logits,
               e_feat);
        if (split) {
            double diff = 0;
            for (size_t i = 0; i < (size_t)batch * F; i++) diff = fmax(diff, fabs((double)f[i] - feats[0][i]));
            CHECK(diff <= 1e-5, "%s: sub-batched features differ by %.3g", stem, diff);
        }
        feats[split] = f;
        free(got), free(want), free(again), free(again_f);
        vkvit_session_destroy(s);
        ctx->limits = real;
    }
    /* Without features: no shape, and get_features says why. */
    vkvit_session *plain = NULL;
    MUST(vkvit_session_create(m, &(vkvit_session_desc){.batch = 1}, &plain));
    float one = 0;
    CHECK(vkvit_session_feature_shape(plain).ndim == 0, "%s: a session without features has a feature shape", stem);
    vkvit_result r = vkvit_session_get_features(plain, &one, 1);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "without features"), "%s: %s", stem,
          vkvit_last_error());
    vkvit_session_destroy(plain);
    vkvit_model_destroy(m);
    free(feats[0]), free(feats[1]);
    free(input), free(logits), free(cond), free(w), free(bias);
    vt_golden_close(&io);
    vt_golden_close(&file);
}

int main(void) {
    vkvit_ctx *ctx = vt_ctx();
    char **paths = NULL;
    size_t n = vt_golden_list("tests/golden/models/*.vkvit", &paths);
    CHECK(n >= 13, "%zu golden models", n);
    for (size_t i = 0; i < n; i++) check_model(ctx, paths[i]);
    vt_golden_list_free(paths, n);
    return vt_finish(ctx);
}
