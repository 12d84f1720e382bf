// SPDX-License-Identifier: Apache-2.0
/* Helpers for the embedding tests (test_submit, test_threads, test_destroy_order), header-only, on top of
 * host_util.h's stand-in host application.
 *
 *   eu_golden_load(&g)                the golden ViT-5 model's input [B,H,W,3] and logits [B,classes]
 *   eu_reverse_batch(x, n, B, out)    the same tensor with its batch order reversed: frames alternate between the
 *                                     golden input and its reversal, so an output left over from an earlier frame
 *                                     can never pass for the current one
 *   eu_poison(s, n_in, n_out)         a run with a NaN input, checked to leave NaN in every logit: the output is
 *                                     poisoned before the inference under test
 *   eu_check(got, want, n, what)      logits against the golden within EU_TOL (max relative error)
 *   host_timeline_device(h, &t)       a second VkDevice on the host's instance and physical device with the
 *                                     Vulkan 1.2 timelineSemaphore feature enabled (host_create's device enables no
 *                                     features, so adopting it exercises the binary-semaphore fallback)
 *   eu_counts_equal(a, b)             two vkvit__counts snapshots are identical (printed when not)
 */
#ifndef VKVIT_EMBED_UTIL_H
#define VKVIT_EMBED_UTIL_H

#include "golden_util.h"
#include "host_util.h"

#define EU_MODEL VKVIT_SOURCE_DIR "/tests/golden/models/vit5_nvsubq_cls_r4"
#define EU_TOL 1e-4 /* fp32 whole-model tolerance, as in test_record / test_vit5 */

typedef struct eu_golden {
    float *input, *input_reversed;          /* [B, H, W, 3] */
    double *logits, *logits_reversed;       /* [B, classes] */
    size_t n_in, n_out;
    uint32_t batch;
} eu_golden;

static inline void eu_reverse_batch(const void *x, size_t bytes, uint32_t batch, void *out) {
    size_t row = bytes / batch;
    for (uint32_t b = 0; b < batch; b++)
        memcpy((uint8_t *)out + b * row, (const uint8_t *)x + (batch - 1 - b) * row, row);
}

static inline void eu_golden_load(eu_golden *g) {
    vt_golden io;
    vt_golden_open(EU_MODEL ".io.safetensors", &io);
    g->input = vt_golden_f32_req(&io, "input", &g->n_in);
    float *logits = vt_golden_f32_req(&io, "logits", &g->n_out);
    g->batch = (uint32_t)vt_golden_shape(&io, "input")->shape[0];
    vt_golden_close(&io);
    g->input_reversed = malloc(g->n_in * sizeof(float));
    g->logits = malloc(g->n_out * sizeof(double));
    g->logits_reversed = malloc(g->n_out * sizeof(double));
    for (size_t i = 0; i < g->n_out; i++) g->logits[i] = logits[i];
    eu_reverse_batch(g->input, g->n_in * sizeof(float), g->batch, g->input_reversed);
    eu_reverse_batch(g->logits, g->n_out * sizeof(double), g->batch, g->logits_reversed);
    free(logits);
    if (g->batch < 2) {
        fprintf(stderr, "FATAL: %s has batch %u; the embedding tests need 2 or more\n", EU_MODEL, g->batch);
        exit(1);
    }
}

static inline void eu_golden_free(eu_golden *g) {
    free(g->input), free(g->input_reversed), free(g->logits), free(g->logits_reversed);
}

static inline const float *eu_frame_input(const eu_golden *g, int frame) {
    return frame % 2 ? g->input_reversed : g->input;
}
static inline const double *eu_frame_logits(const eu_golden *g, int frame) {
    return frame % 2 ? g->logits_reversed : g->logits;
}

/* Runs the session once on a NaN input and checks every logit came out NaN. */
static inline void eu_poison(vkvit_session *s, size_t n_in, size_t n_out) {
    float *nan_in = malloc(n_in * sizeof(float)), *out = malloc(n_out * sizeof(float));
    for (size_t i = 0; i < n_in; i++) nan_in[i] = NAN;
    MUST(vkvit_session_set_input(s, nan_in, n_in));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, out, n_out));
    size_t finite = 0;
    for (size_t i = 0; i < n_out; i++) finite += isfinite(out[i]) != 0;
    CHECK(finite == 0, "poisoning run left %zu of %zu logits finite", finite, n_out);
    free(nan_in), free(out);
}

static inline double eu_check(vkvit_session *s, const double *want, size_t n_out, const char *what) {
    float *got = malloc(n_out * sizeof(float));
    for (size_t i = 0; i < n_out; i++) got[i] = NAN;
    vkvit_result r = vkvit_session_get_output(s, got, n_out);
    CHECK(r == VKVIT_OK, "%s: get_output: %s", what, vkvit_last_error());
    double err = r == VKVIT_OK ? vt_max_rel_err(got, want, n_out, NULL) : INFINITY;
    CHECK(err <= EU_TOL, "%s: logits max rel err %.3g (tolerance %.0e)", what, err, EU_TOL);
    free(got);
    return err;
}

/* A second device on the host's instance with timeline semaphores enabled, as a Vulkan 1.2 renderer would. */
static inline void host_timeline_device(const host *h, host *t) {
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .timelineSemaphore = VK_TRUE};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
    if (!host_device_with(h, &f, t)) {
        fprintf(stderr, "SKIP: the device cannot enable timelineSemaphore (Vulkan 1.1 without timeline semaphores)\n");
        exit(77);
    }
}

static inline bool eu_counts_equal(const vkvit__counts *a, const vkvit__counts *b, const char *what) {
    if (memcmp(a, b, sizeof *a) == 0) return true;
    fprintf(stderr, "%s: memory allocations %u -> %u, buffers %u -> %u, pipelines %u -> %u, descriptor sets %u -> %u, "
            "command buffers %u -> %u, other objects %u -> %u\n", what, a->memory_allocations, b->memory_allocations,
            a->buffers, b->buffers, a->pipelines, b->pipelines, a->descriptor_sets, b->descriptor_sets,
            a->command_buffers, b->command_buffers, a->other_objects, b->other_objects);
    return false;
}

/* The host's own little helpers: a command pool + buffer on its family, a fence, semaphores. */
static inline VkCommandBuffer host_cmd(host *h, VkCommandPool *pool) {
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = h->family};
    h->vk.vkCreateCommandPool(h->device, &pi, NULL, pool);
    VkCommandBuffer cmd;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = *pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    h->vk.vkAllocateCommandBuffers(h->device, &ai, &cmd);
    return cmd;
}

static inline VkSemaphore host_semaphore(host *h, bool timeline, uint64_t initial) {
    VkSemaphoreTypeCreateInfo type = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE, .initialValue = initial};
    VkSemaphoreCreateInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = timeline ? &type : NULL};
    VkSemaphore s = VK_NULL_HANDLE;
    h->vk.vkCreateSemaphore(h->device, &si, NULL, &s);
    return s;
}

static inline VkFence host_fence(host *h) {
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence f = VK_NULL_HANDLE;
    h->vk.vkCreateFence(h->device, &fi, NULL, &f);
    return f;
}

#endif /* VKVIT_EMBED_UTIL_H */
