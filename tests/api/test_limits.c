// SPDX-License-Identifier: Apache-2.0
/* Device limits (issue 12.3): a batch whose dispatches exceed maxComputeWorkGroupCount, or whose activations or
 * weights exceed maxStorageBufferRange, still runs and still matches PyTorch; what cannot be split is refused at
 * session creation with a sentence.
 *
 * The limits of a real device (65,535 workgroups, 128 MiB on lavapipe) need thousands of images or 200 MB
 * weights to reach, so the test shrinks the ctx's copy of them after creation, exactly as a small device would
 * report them, and runs the golden models (every architecture, conditions included) at their golden batch:
 *
 *   grid_limit     maxComputeWorkGroupCount[1] set below (batch x tokens): the session must split the batch
 *   range_limit    maxStorageBufferRange set so the whole batch's activations and the largest GEMM weights exceed
 *                  it: sub-batches for the activations, GEMM weights as row blocks
 *   refused        a range below one image's activations: VKVIT_ERROR_UNSUPPORTED naming tensor, size and limit
 *
 * Every run: NaN-poisoned output, logits vs the golden (max rel err <= 1e-4, the whole-model tolerance), zero
 * validation messages (synchronization validation on). */
#include "golden_util.h"
#include "test_util.h"

#include "model/model.h"

#define MODELS VKVIT_SOURCE_DIR "/tests/golden/models/"
#define TOL 1e-4

typedef struct golden_io {
    float *input, *condition, *logits;
    size_t n_in, n_cond, n_out;
    uint32_t batch;
} golden_io;

static void io_load(const char *stem, golden_io *io) {
    char path[512];
    snprintf(path, sizeof path, MODELS "%s.io.safetensors", stem);
    vt_golden g;
    vt_golden_open(path, &g);
    memset(io, 0, sizeof *io);
    io->input = vt_golden_f32_req(&g, "input", &io->n_in);
    io->logits = vt_golden_f32_req(&g, "logits", &io->n_out);
    io->condition = vt_golden_f32(&g, "condition", &io->n_cond);
    io->batch = (uint32_t)vt_golden_shape(&g, "input")->shape[0];
    vt_golden_close(&g);
}

static void io_free(golden_io *io) { free(io->input), free(io->condition), free(io->logits); }

/* Creates a session under the ctx's current limits, runs the golden batch and checks the logits. Returns the
 * session's stats through `st` (nodes, arena). */
static void run_golden(vkvit_ctx *ctx, const char *stem, const char *what, vkvit_session_stats *st) {
    char path[512];
    snprintf(path, sizeof path, MODELS "%s.vkvit", stem);
    golden_io io;
    io_load(stem, &io);
    vkvit_model *m = NULL;
    vkvit_session *s = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = path}, &m));
    vkvit_result r = vkvit_session_create(m, &(vkvit_session_desc){.batch = io.batch, .label = what}, &s);
    CHECK(r == VKVIT_OK, "%s %s: session: %s", stem, what, vkvit_last_error());
    if (r == VKVIT_OK) {
        MUST(vkvit_session_set_input(s, io.input, io.n_in));
        if (io.condition) MUST(vkvit_session_set_condition(s, io.condition, io.n_cond));
        float *got = malloc(io.n_out * sizeof *got);
        for (size_t i = 0; i < io.n_out; i++) got[i] = NAN;
        MUST(vkvit_session_run(s));
        MUST(vkvit_session_get_output(s, got, io.n_out));
        double *want = malloc(io.n_out * sizeof *want);
        for (size_t i = 0; i < io.n_out; i++) want[i] = io.logits[i];
        double err = vt_max_rel_err(got, want, io.n_out, NULL);
        CHECK(err <= TOL, "%s %s: logits max rel err %.3g", stem, what, err);
        MUST(vkvit_session_get_stats(s, st));
        printf("%-40s %-12s batch %u as sub-batches of %u, %u nodes: max rel err %.2g\n", stem, what, io.batch,
               st->sub_batch, st->nodes, err);
        free(got);
        free(want);
    }
    vkvit_session_destroy(s);
    vkvit_model_destroy(m);
    io_free(&io);
}

static void check_model(vkvit_ctx *ctx, const char *stem) {
    const VkPhysicalDeviceLimits real = ctx->limits;
    vkvit_session_stats whole, st;
    run_golden(ctx, stem, "unsplit", &whole);
    const uint32_t batch = whole.batch;
    CHECK(whole.sub_batch == batch, "%s: the golden batch was split under the real limits (%u of %u)", stem,
          whole.sub_batch, batch);
    const uint64_t per_image = whole.largest_activation_bytes / batch;
    if (batch < 2) goto refused; /* a golden of one image has nothing to split */

    /* Grid: the largest y grid (the norms: one workgroup per row of batch x tokens on GPUs, per eight (row, group)
     * pairs on CPU devices) one workgroup too many. */
    ctx->limits.maxComputeWorkGroupCount[1] = whole.largest_grid[1] - 1;
    run_golden(ctx, stem, "grid", &st);
    CHECK(st.sub_batch < batch && st.largest_grid[1] <= ctx->limits.maxComputeWorkGroupCount[1],
          "%s: grid limit %u: sub-batch %u of %u, largest y grid %u", stem, ctx->limits.maxComputeWorkGroupCount[1],
          st.sub_batch, batch, st.largest_grid[1]);
    ctx->limits = real;

    /* Range: one image's largest activation (so the batch splits), below the largest GEMM weight (so it runs as
     * row blocks): more nodes than the sub-batches alone would make. */
    ctx->limits.maxStorageBufferRange = (uint32_t)VKVIT_MIN(per_image, whole.largest_weight_binding - 1);
    run_golden(ctx, stem, "range", &st);
    CHECK(st.sub_batch < batch && st.nodes > whole.nodes * (batch / st.sub_batch),
          "%s: range limit %u: sub-batch %u of %u, %u nodes (unsplit %u)", stem, ctx->limits.maxStorageBufferRange,
          st.sub_batch, batch, st.nodes, whole.nodes);
    ctx->limits = real;

refused:
    /* Refused: below one image's largest activation. */
    ctx->limits.maxStorageBufferRange = (uint32_t)(per_image / 2);
    char path[512];
    snprintf(path, sizeof path, MODELS "%s.vkvit", stem);
    vkvit_model *m = NULL;
    vkvit_session *s = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = path}, &m));
    vkvit_result r = vkvit_session_create(m, &(vkvit_session_desc){.batch = batch}, &s);
    CHECK(r == VKVIT_ERROR_UNSUPPORTED && strstr(vkvit_last_error(), "maxStorageBufferRange"), "%s: %s: %s", stem,
          vkvit_result_name(r), vkvit_last_error());
    printf("%-40s %-12s %s\n", stem, "refused", vkvit_last_error());
    vkvit_session_destroy(s);
    vkvit_model_destroy(m);
    ctx->limits = real;
}

int main(void) {
    vkvit_ctx *ctx = vt_ctx();
    static const char *const stems[] = {"vit5_nvsubq_cls_r4", "vit5_nvsubq_regconcat_r9", "vit5_paper_cls_r4",
                                        "vil_seed", "vil_nxai", "resnet_all_glu_global_c48",
                                        "resnet_seq_cond_global_qkn_causal"};
    for (size_t i = 0; i < sizeof stems / sizeof stems[0]; i++) check_model(ctx, stems[i]);
    return vt_finish(ctx);
}
