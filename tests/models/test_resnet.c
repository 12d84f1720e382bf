// SPDX-License-Identifier: Apache-2.0
/* Whole conditioned ClassificationResNets (docs/model-format.md `resnet`) against PyTorch: every
 * tests/golden/models/resnet_*.vkvit runs through the public API (model -> session with the golden's batch ->
 * set_input (+ set_condition) -> run -> get_output into NaN-filled buffers) and its logits must match the golden's
 * within 1e-4 relative to their scale (fp32), and within 1e-2 with fp16 weights. Also: a second run gives identical
 * logits, recording into the caller's command buffer gives the same logits, a session whose model
 * needs a condition refuses to run without one and rejects a wrong count, a model without a condition mixer has no
 * condition input, and validation stays silent. (Load-time config errors are covered by test_model_file.) */
#include "golden_util.h"
#include "model/model.h"
#include "test_util.h"

#define GOLDEN_DIR VKVIT_SOURCE_DIR "/tests/golden/models"

typedef struct golden_io {
    float *input, *condition, *logits;
    size_t n_in, n_cond, n_out;
    uint32_t in_shape[4];
    uint32_t cond_ndim, cond_shape[3];
} golden_io;

/* fp16 sessions need fp16 storage, which a device (or profile) of the Vulkan 1.1 minimum lacks: their checks are
 * skipped there (the fp32 ones still run). */
static bool fp16_sessions(vkvit_ctx *ctx) {
    vkvit_device_info info;
    return vkvit_ctx_device_info(ctx, &info) == VKVIT_OK && info.fp16_in_use;
}

static void read_io(const char *stem, golden_io *io) {
    char io_path[4608];
    snprintf(io_path, sizeof io_path, "%s/%s.io.safetensors", GOLDEN_DIR, stem);
    vt_golden g;
    vt_golden_open(io_path, &g);
    memset(io, 0, sizeof *io);
    io->input = vt_golden_f32_req(&g, "input", &io->n_in);
    io->logits = vt_golden_f32_req(&g, "logits", &io->n_out);
    io->condition = vt_golden_f32(&g, "condition", &io->n_cond);
    for (int i = 0; i < 4; i++) io->in_shape[i] = (uint32_t)vt_golden_shape(&g, "input")->shape[i];
    if (io->condition) {
        const vkvit__st_tensor *t = vt_golden_shape(&g, "condition");
        io->cond_ndim = t->ndim;
        for (uint32_t i = 0; i < t->ndim && i < 3; i++) io->cond_shape[i] = (uint32_t)t->shape[i];
    }
    vt_golden_close(&g);
}

static void free_io(golden_io *io) {
    free(io->input), free(io->condition), free(io->logits);
}

/* A one-token condition makes the condition mixer's query projection and norm dead (src/arch/resnet.c host_only):
 * they are not on the device; with more condition tokens they are. */
static void check_host_only(const vkvit_model *m, const char *stem) {
    const vkvit__resnet_config *c = &m->cfg.resnet;
    if (!c->cond.enabled) return;
    const bool one_key = c->condition_tokens <= 1;
    uint32_t listed = 0;
    for (uint32_t i = 0; i < m->n_weights; i++)
        listed += strstr(m->weights[i].name, "condition_mixer.q_proj.weight") != NULL;
    CHECK(listed == (one_key ? 0 : c->depth), "%s: %u condition-mixer q_proj weights on the device for %u blocks "
          "and %u condition tokens", stem, listed, c->depth, c->condition_tokens);
}

static void run_golden(vkvit_ctx *ctx, const char *stem) {
    char model_path[4608];
    snprintf(model_path, sizeof model_path, "%s/%s.vkvit", GOLDEN_DIR, stem);
    golden_io io;
    read_io(stem, &io);

    vkvit_model *model = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = model_path}, &model));
    check_host_only(model, stem);
    vkvit_model_info info;
    MUST(vkvit_model_get_info(model, &info));
    CHECK(!strcmp(info.architecture, "resnet") && !strcmp(info.flavour, "generic"), "%s: %s/%s", stem,
          info.architecture, info.flavour);
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = io.in_shape[0]}, &s));
    vkvit_shape is = vkvit_session_input_shape(s), os = vkvit_session_output_shape(s);
    vkvit_shape cs = vkvit_session_condition_shape(s);
    CHECK(is.ndim == 4 && is.dims[0] == io.in_shape[0] && is.dims[1] == io.in_shape[1] &&
              is.dims[2] == io.in_shape[2] && is.dims[3] == 3,
          "%s: input shape [%u, %u, %u, %u]", stem, is.dims[0], is.dims[1], is.dims[2], is.dims[3]);
    CHECK(os.ndim == 2 && os.dims[0] * os.dims[1] == io.n_out, "%s: output shape", stem);
    if (io.condition) {
        bool same = cs.ndim == io.cond_ndim;
        for (uint32_t i = 0; same && i < cs.ndim; i++) same = cs.dims[i] == io.cond_shape[i];
        CHECK(same, "%s: condition shape has %u dims [%u, %u, %u], the golden's %u", stem, cs.ndim, cs.dims[0],
              cs.dims[1], cs.dims[2], io.cond_ndim);
    } else {
        CHECK(cs.ndim == 0, "%s: a model without a condition mixer reports a condition of %u dims", stem, cs.ndim);
        float one = 1.0f;
        vkvit_result r = vkvit_session_set_condition(s, &one, 1);
        CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "takes no condition"),
              "%s: set_condition on a model without one: %s: %s", stem, vkvit_result_name(r), vkvit_last_error());
    }

    float *got = malloc(io.n_out * sizeof(float));
    double *ref = malloc(io.n_out * sizeof(double));
    for (size_t i = 0; i < io.n_out; i++) {
        ref[i] = io.logits[i];
        got[i] = NAN;
    }
    MUST(vkvit_session_set_input(s, io.input, io.n_in));
    if (io.condition) {
        /* Not set yet: run refuses with a sentence. A wrong count is refused too and sets nothing. */
        vkvit_result r = vkvit_session_run(s);
        CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "needs a condition"),
              "%s: run without a condition: %s: %s", stem, vkvit_result_name(r), vkvit_last_error());
        r = vkvit_session_set_condition(s, io.condition, io.n_cond - 1);
        CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "floats given"),
              "%s: condition with a wrong count: %s: %s", stem, vkvit_result_name(r), vkvit_last_error());
        r = vkvit_session_run(s);
        CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT, "%s: run after a refused condition: %s", stem, vkvit_result_name(r));
        MUST(vkvit_session_set_condition(s, io.condition, io.n_cond));
    }
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, got, io.n_out));
    size_t worst = 0;
    double err = vt_max_rel_err(got, ref, io.n_out, &worst);
    vkvit_session_stats st;
    MUST(vkvit_session_get_stats(s, &st));
    printf("%-40s batch %u  condition %-10s logits max rel err %.3g  (%u nodes, %u barriers, %u pipelines)\n", stem,
           io.in_shape[0], io.condition ? (io.cond_ndim == 2 ? "[B, C]" : "[B, Tc, C]") : "none", err, st.nodes,
           st.barriers, st.pipelines);
    CHECK(err <= 1e-4, "%s: max rel err %.3g at %zu (got %.7g, want %.7g)", stem, err, worst, got[worst], ref[worst]);

    /* Replaying the recorded command buffer gives the same logits. */
    float *again = malloc(io.n_out * sizeof(float));
    for (size_t i = 0; i < io.n_out; i++) again[i] = NAN;
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, again, io.n_out));
    CHECK(memcmp(again, got, io.n_out * sizeof(float)) == 0, "%s: second run differs", stem);

    /* The condition matters: a different condition changes the logits (when there is one). */
    if (io.condition) {
        float *c2 = malloc(io.n_cond * sizeof(float));
        for (size_t i = 0; i < io.n_cond; i++) c2[i] = io.condition[i] * -0.5f + 0.25f;
        MUST(vkvit_session_set_condition(s, c2, io.n_cond));
        MUST(vkvit_session_run(s));
        MUST(vkvit_session_get_output(s, again, io.n_out));
        CHECK(memcmp(again, got, io.n_out * sizeof(float)) != 0, "%s: the condition does not change the logits", stem);
        free(c2);
    }

    /* fp16 weights (fp32 activations and accumulation): within 1e-2. */
    if (fp16_sessions(ctx)) {
        vkvit_session *s16 = NULL;
        MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = io.in_shape[0], .precision = VKVIT_PRECISION_FP16},
                                  &s16));
        for (size_t i = 0; i < io.n_out; i++) again[i] = NAN;
        MUST(vkvit_session_set_input(s16, io.input, io.n_in));
        if (io.condition) MUST(vkvit_session_set_condition(s16, io.condition, io.n_cond));
        MUST(vkvit_session_run(s16));
        MUST(vkvit_session_get_output(s16, again, io.n_out));
        double err16 = vt_max_rel_err(again, ref, io.n_out, &worst);
        CHECK(err16 <= 1e-2, "%s (fp16 weights): max rel err %.3g at %zu", stem, err16, worst);
        vkvit_session_destroy(s16);
    }

    free(again), free(got), free(ref);
    free_io(&io);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
}

/* vkvit_session_record into a command buffer of our own (vkvit's ctx, its queue): input and condition set before
 * the submission, logits as with vkvit_session_run. */
static void record_into_own_command_buffer(vkvit_ctx *ctx, const char *stem) {
    char model_path[4608];
    snprintf(model_path, sizeof model_path, "%s/%s.vkvit", GOLDEN_DIR, stem);
    golden_io io;
    read_io(stem, &io);
    vkvit_model *model = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = model_path}, &model));
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = io.in_shape[0]}, &s));
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .queueFamilyIndex = vkvit_ctx_queue_family(ctx)};
    CHECK(ctx->vk.vkCreateCommandPool(ctx->device, &pi, NULL, &pool) == VK_SUCCESS, "command pool");
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    CHECK(ctx->vk.vkAllocateCommandBuffers(ctx->device, &ai, &cmd) == VK_SUCCESS, "command buffer");
    VkFence fence = VK_NULL_HANDLE;
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    CHECK(ctx->vk.vkCreateFence(ctx->device, &fi, NULL, &fence) == VK_SUCCESS, "fence");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    ctx->vk.vkBeginCommandBuffer(cmd, &bi);
    MUST(vkvit_session_record(s, cmd));
    ctx->vk.vkEndCommandBuffer(cmd);
    MUST(vkvit_session_set_input(s, io.input, io.n_in));
    if (io.condition) MUST(vkvit_session_set_condition(s, io.condition, io.n_cond));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    CHECK(ctx->vk.vkQueueSubmit(ctx->queue, 1, &si, fence) == VK_SUCCESS, "submit");
    ctx->vk.vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, UINT64_MAX);
    float *got = malloc(io.n_out * sizeof(float));
    double *ref = malloc(io.n_out * sizeof(double));
    for (size_t i = 0; i < io.n_out; i++) got[i] = NAN, ref[i] = io.logits[i];
    MUST(vkvit_session_get_output(s, got, io.n_out));
    size_t worst = 0;
    double err = vt_max_rel_err(got, ref, io.n_out, &worst);
    printf("%-40s recorded into our command buffer: logits max rel err %.3g\n", stem, err);
    CHECK(err <= 1e-4, "%s (recorded): max rel err %.3g at %zu", stem, err, worst);
    ctx->vk.vkDestroyFence(ctx->device, fence, NULL);
    ctx->vk.vkDestroyCommandPool(ctx->device, pool, NULL);
    free(got), free(ref);
    free_io(&io);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
}

int main(int argc, char **argv) {
    vkvit_ctx *ctx = vt_ctx();
    char **paths = NULL;
    size_t n = vt_golden_list("tests/golden/models/resnet_*.vkvit", &paths);
    CHECK(n >= 7, "found %zu resnet golden models", n);
    for (size_t i = 0; i < n; i++) {
        const char *base = strrchr(paths[i], '/') ? strrchr(paths[i], '/') + 1 : paths[i];
        char stem[256];
        snprintf(stem, sizeof stem, "%.*s", (int)(strlen(base) - 6), base);
        if (argc < 2 || strstr(stem, argv[1])) run_golden(ctx, stem);
    }
    vt_golden_list_free(paths, n);
    if (argc < 2) record_into_own_command_buffer(ctx, "resnet_all_swiglu_tc3_rope_qkn_causal");
    return vt_finish(ctx);
}
