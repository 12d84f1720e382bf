// SPDX-License-Identifier: Apache-2.0
/* Dense token outputs through the C API (issue 58, "Dense outputs"; the values against PyTorch are
 * tests/models/test_tokens.py's): for a golden model of each architecture (ViT-5 with CLS and registers, ViL,
 * a conditioned resnet), on a host application's adopted device (validation + synchronization validation):
 *   - vkvit_session_token_layout: ViT-5 patches [B, Hp, Wp, C], cls [B, C], registers [B, R, C]; ViL and resnet
 *     patches [B, T, C] and no cls / registers; offsets back to back; output_bytes(TOKENS) = count * 4;
 *   - get_tokens after a run (into a NaN-poisoned array) on fresh random inputs (seed printed, VKVIT_TEST_SEED=S
 *     reruns it) is finite, and differs for a different input;
 *   - the logits of a tokens session equal a plain session's within 1e-5 relative (ViT-5's last block then runs on
 *     every token instead of the CLS rows: same math, other GEMM rows);
 *   - record_ex with a VKVIT_OUTPUT_TOKENS host buffer (poisoned, at offset 16) holds exactly get_tokens' floats of
 *     a run on the same input (the same recorded nodes);
 *   - the batch split into sub-batches (a shrunk dispatch limit, as in test_features) gives the same tokens within
 *     1e-5 relative;
 *   - refusals with a sentence: get_tokens / token_layout / a TOKENS host output on a session without tokens, a
 *     wrong count, get_tokens before a run. */
#include "golden_util.h"
#include "host_util.h"
#include "vk/submission.h"

#include <time.h>

#define MODELS VKVIT_SOURCE_DIR "/tests/golden/models/"
#define TOL 1e-5

static const char *STEMS[] = {"vit5_nvsubq_cls_r4", "vil_nxai", "resnet_cond_mlp_tc5_relu_layernorm"};

typedef struct frame {
    host *h;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
} frame;

static void frame_create(host *h, frame *f) {
    f->h = h;
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = h->family};
    h->vk.vkCreateCommandPool(h->device, &pi, NULL, &f->pool);
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = f->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    h->vk.vkAllocateCommandBuffers(h->device, &ai, &f->cmd);
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    h->vk.vkCreateFence(h->device, &fi, NULL, &f->fence);
}

static void frame_destroy(frame *f) {
    f->h->vk.vkDestroyFence(f->h->device, f->fence, NULL);
    f->h->vk.vkDestroyCommandPool(f->h->device, f->pool, NULL);
}

static double max_rel(const float *got, const float *want, size_t n) {
    double scale = 0.0, d = 0.0;
    for (size_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(want[i]));
        const double e = fabs((double)got[i] - want[i]);
        d = isnan(e) ? INFINITY : fmax(d, e);
    }
    return scale > 0 ? d / scale : d;
}

static float *poisoned(size_t n) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}

/* Runs session s on input (and cond) and returns its tokens (malloc'ed, count floats) and logits. */
static float *run_tokens(vkvit_session *s, const float *input, size_t n_in, const float *cond, size_t n_cond,
                         size_t count, float *logits, size_t n_out) {
    float *t = poisoned(count);
    MUST(vkvit_session_set_input(s, input, n_in));
    if (cond) MUST(vkvit_session_set_condition(s, cond, n_cond));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_tokens(s, t, count));
    if (logits) MUST(vkvit_session_get_output(s, logits, n_out));
    return t;
}

static bool shape_is(vkvit_shape s, uint32_t ndim, const uint32_t *dims) {
    if (s.ndim != ndim) return false;
    for (uint32_t i = 0; i < ndim; i++)
        if (s.dims[i] != dims[i]) return false;
    return true;
}

static void check_model(host *h, vkvit_ctx *ctx, const char *stem) {
    char path[512], io_path[512];
    snprintf(path, sizeof path, MODELS "%s.vkvit", stem);
    snprintf(io_path, sizeof io_path, MODELS "%s.io.safetensors", stem);
    vt_golden io, file;
    vt_golden_open(io_path, &io);
    vt_golden_open(path, &file);
    size_t n_in, n_out, n_cond = 0;
    float *golden_in = vt_golden_f32_req(&io, "input", &n_in), *golden_logits = vt_golden_f32_req(&io, "logits", &n_out);
    float *cond = vt_golden_f32(&io, "condition", &n_cond);
    free(golden_in), free(golden_logits);
    const uint32_t batch = (uint32_t)vt_golden_shape(&io, "input")->shape[0];
    const bool vit5 = !strncmp(stem, "vit5", 4);
    float *input = malloc(n_in * sizeof *input), *input2 = malloc(n_in * sizeof *input2);
    vt_fill_rand(input, n_in);
    vt_fill_rand(input2, n_in);

    vkvit_model *m = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = path}, &m));
    vkvit_session *s = NULL, *plain = NULL;
    MUST(vkvit_session_create(m, &(vkvit_session_desc){.batch = batch, .tokens = 1, .label = stem}, &s));
    MUST(vkvit_session_create(m, &(vkvit_session_desc){.batch = batch, .label = "plain"}, &plain));

    /* The layout. */
    vkvit_token_layout l;
    MUST(vkvit_session_token_layout(s, &l));
    const vkvit_shape in_shape = vkvit_session_input_shape(s);
    uint32_t C = l.patches.dims[l.patches.ndim - 1];
    if (vit5) {
        const uint32_t P = (uint32_t)vt_golden_shape(&file, "patch_embed.weight")->shape[3]; /* [C, 3, P, P] */
        const uint32_t hp = in_shape.dims[1] / P, wp = in_shape.dims[2] / P;
        CHECK(shape_is(l.patches, 4, (uint32_t[]){batch, hp, wp, C}), "%s: patches [%u, %u, %u, %u] ndim %u", stem,
              l.patches.dims[0], l.patches.dims[1], l.patches.dims[2], l.patches.dims[3], l.patches.ndim);
        CHECK(shape_is(l.cls, 2, (uint32_t[]){batch, C}), "%s: cls shape", stem);
        CHECK(shape_is(l.registers, 3, (uint32_t[]){batch, 4, C}), "%s: registers shape", stem);
        CHECK(l.cls_offset == (uint64_t)batch * hp * wp * C && l.registers_offset == l.cls_offset + (uint64_t)batch * C &&
                  l.count == l.registers_offset + (uint64_t)batch * 4 * C,
              "%s: offsets %llu %llu count %llu", stem, (unsigned long long)l.cls_offset,
              (unsigned long long)l.registers_offset, (unsigned long long)l.count);
    } else {
        CHECK(l.patches.ndim == 3 && l.patches.dims[0] == batch && l.cls.ndim == 0 && l.registers.ndim == 0,
              "%s: patches ndim %u, cls ndim %u, registers ndim %u", stem, l.patches.ndim, l.cls.ndim,
              l.registers.ndim);
        CHECK(l.cls_offset == l.count && l.registers_offset == l.count &&
                  l.count == (uint64_t)batch * l.patches.dims[1] * C,
              "%s: offsets of absent parts", stem);
    }
    CHECK(vkvit_session_output_bytes(s, VKVIT_OUTPUT_TOKENS) == l.count * 4, "%s: output bytes", stem);
    CHECK(vkvit_session_output_bytes(plain, VKVIT_OUTPUT_TOKENS) == 0, "%s: output bytes without tokens", stem);
    printf("%-40s tokens: %llu floats (C %u)\n", stem, (unsigned long long)l.count, C);

    /* Refusals. */
    float one = 0;
    vkvit_result r = vkvit_session_get_tokens(s, &one, 1);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "floats given"), "%s: wrong count: %s", stem,
          vkvit_last_error());
    float *t0 = poisoned(l.count);
    r = vkvit_session_get_tokens(s, t0, l.count);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "no run yet"), "%s: before a run: %s", stem,
          vkvit_last_error());
    free(t0);
    r = vkvit_session_get_tokens(plain, &one, 1);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "without tokens"), "%s: %s", stem,
          vkvit_last_error());
    vkvit_token_layout none;
    r = vkvit_session_token_layout(plain, &none);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && none.count == 0, "%s: layout without tokens", stem);

    /* Runs: finite tokens, input-dependent, and the logits of the plain session. */
    float *lg = poisoned(n_out), *lg_plain = poisoned(n_out);
    float *t = run_tokens(s, input, n_in, cond, n_cond, l.count, lg, n_out);
    bool finite = true;
    for (uint64_t i = 0; i < l.count; i++) finite = finite && isfinite(t[i]);
    CHECK(finite, "%s: tokens not all finite", stem);
    MUST(vkvit_session_set_input(plain, input, n_in));
    if (cond) MUST(vkvit_session_set_condition(plain, cond, n_cond));
    MUST(vkvit_session_run(plain));
    MUST(vkvit_session_get_output(plain, lg_plain, n_out));
    const double e_logits = max_rel(lg, lg_plain, n_out);
    CHECK(e_logits <= TOL, "%s: logits of the tokens session differ from a plain one's by %.3g", stem, e_logits);
    float *t2 = run_tokens(s, input2, n_in, cond, n_cond, l.count, NULL, 0);
    CHECK(max_rel(t2, t, l.count) > 1e-3, "%s: the tokens do not follow the input", stem);
    free(t2);

    /* record_ex into a host buffer, on the first input again. */
    frame f;
    frame_create(h, &f);
    vkvit__buffer out;
    MUST(vkvit__buffer_create(ctx, 16 + l.count * 4, VKVIT_MEM_READBACK, "host tokens", &out));
    memset(out.mapped, 0xff, (size_t)out.size); /* NaN */
    MUST(vkvit_session_set_input(s, input, n_in));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    h->vk.vkBeginCommandBuffer(f.cmd, &bi);
    vkvit_record_desc rd = {.output = {.kind = VKVIT_OUTPUT_TOKENS, .buffer = out.buffer, .offset = 16,
                                       .dst_stage = VK_PIPELINE_STAGE_HOST_BIT, .dst_access = VK_ACCESS_HOST_READ_BIT}};
    MUST(vkvit_session_record_ex(s, f.cmd, &rd));
    h->vk.vkEndCommandBuffer(f.cmd);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &f.cmd};
    CHECK(h->vk.vkQueueSubmit(h->queue, 1, &si, f.fence) == VK_SUCCESS, "host submit");
    h->vk.vkWaitForFences(h->device, 1, &f.fence, VK_TRUE, UINT64_MAX);
    vkvit__buffer_invalidate(ctx, &out);
    const float *host_t = (const float *)((const uint8_t *)out.mapped + 16);
    CHECK(!memcmp(host_t, t, l.count * 4), "%s: the host buffer's tokens differ from get_tokens' (max rel %.3g)", stem,
          max_rel(host_t, t, l.count));
    const uint32_t *guard = out.mapped;
    CHECK(guard[0] == 0xffffffffu && guard[3] == 0xffffffffu, "%s: bytes before the offset were written", stem);
    /* A TOKENS output on a session without tokens is refused before anything is recorded. */
    h->vk.vkResetCommandBuffer(f.cmd, 0);
    h->vk.vkBeginCommandBuffer(f.cmd, &bi);
    r = vkvit_session_record_ex(plain, f.cmd, &rd);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "tokens = 1"), "%s: %s", stem,
          vkvit_last_error());
    h->vk.vkEndCommandBuffer(f.cmd);
    vkvit__buffer_destroy(ctx, &out);
    frame_destroy(&f);

    /* Sub-batches. */
    if (batch >= 2) {
        vkvit_session_stats st;
        MUST(vkvit_session_get_stats(s, &st));
        const VkPhysicalDeviceLimits real = ctx->limits;
        ctx->limits.maxComputeWorkGroupCount[1] = st.largest_grid[1] - 1;
        vkvit_session *split = NULL;
        MUST(vkvit_session_create(m, &(vkvit_session_desc){.batch = batch, .tokens = 1, .label = "split"}, &split));
        ctx->limits = real;
        MUST(vkvit_session_get_stats(split, &st));
        CHECK(st.sub_batch < batch, "%s: sub-batch %u of %u", stem, st.sub_batch, batch);
        float *ts = run_tokens(split, input, n_in, cond, n_cond, l.count, NULL, 0);
        const double e = max_rel(ts, t, l.count);
        printf("%-40s sub-batches of %u: tokens max rel diff %.3g; logits vs plain session %.3g\n", stem, st.sub_batch,
               e, e_logits);
        CHECK(e <= TOL, "%s: sub-batched tokens differ by %.3g", stem, e);
        free(ts);
        vkvit_session_destroy(split);
    }
    free(t), free(lg), free(lg_plain);
    vkvit_session_destroy(s);
    vkvit_session_destroy(plain);
    vkvit_model_destroy(m);
    free(input), free(input2), free(cond);
    vt_golden_close(&io);
    vt_golden_close(&file);
}

int main(void) {
    const char *seed_env = getenv("VKVIT_TEST_SEED");
    const uint32_t seed = seed_env ? (uint32_t)strtoul(seed_env, NULL, 10) : (uint32_t)time(NULL);
    printf("random inputs: seed %u (rerun: VKVIT_TEST_SEED=%u)\n", seed, seed);
    vt_rng_state = 0x853c49e6748fea9bull ^ seed;
    host h;
    host_create(&h);
    vkvit_ctx *ctx = host_adopt(&h, "tokens");
    for (size_t i = 0; i < sizeof STEMS / sizeof *STEMS; i++) check_model(&h, ctx, STEMS[i]);
    const uint32_t n = vkvit_ctx_validation_messages(ctx, 0);
    CHECK(n == 0, "%u validation message(s)", n);
    vkvit_ctx_destroy(ctx);
    CHECK(host_messages == 0, "%u host validation message(s)", host_messages);
    host_destroy(&h);
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
