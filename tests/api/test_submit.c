// SPDX-License-Identifier: Apache-2.0
/* vkvit_session_submit on the host's queue, ordered by the host's semaphores, never waiting.
 *
 *   submit_timeline           a host device with timeline semaphores (Vulkan 1.2 feature enabled): vkvit waits on a
 *                             timeline value and signals the next one. Odd frames submit before the host has
 *                             signalled (wait-before-signal): the session must report itself in flight and refuse
 *                             set_input / get_output / run / a second submit without blocking, until the host
 *                             signals from the CPU. Even frames wait on the host's own queue work. One frame passes a
 *                             host fence. Logits match the golden (max rel err <= 1e-4) every frame, after a NaN
 *                             poisoning run; frames alternate the batch order so a stale output cannot pass.
 *   submit_binary_fallback    the host device created without timeline semaphores: binary semaphores (the host's
 *                             work signals A, vkvit waits A and signals B, the host's next work waits B) and a host
 *                             fence; a timeline value is refused with a sentence.
 *   submit_rejects_bad_desc   NULL semaphores, too many, counts without arrays.
 *   profile_after_record      vkvit_session_profile reads the times of the session's own run or completed submit;
 *                             after a recording into the host's command buffer (submitted or not: vkvit cannot
 *                             see it complete) it refuses with a sentence instead of waiting on queries that may
 *                             never be written, and while a submit is in flight it refuses without blocking.
 *   nothing allocated         vkvit__ctx_counters (every device allocation and Vulkan object src/vk creates) are the
 *                             same before and after all frames: run, submit, record, record_ex (a host pixel buffer
 *                             in, host logits buffer out, checked against set_images + run on the same pixels, max
 *                             rel err <= 1e-5) and set_images within max_image_pixels allocate and create nothing.
 * Both the host's instance (validation + synchronization validation) and vkvit must stay silent. */
#include "embed_util.h"

enum { FRAMES = 4 };

static void host_fill_and_submit(host *h, VkCommandBuffer cmd, VkBuffer scratch, uint32_t value,
                                 const VkSubmitInfo *extra) {
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    h->vk.vkResetCommandBuffer(cmd, 0);
    h->vk.vkBeginCommandBuffer(cmd, &bi);
    h->vk.vkCmdFillBuffer(cmd, scratch, 0, 4096, value); /* stands in for the renderer's frame work */
    h->vk.vkEndCommandBuffer(cmd);
    VkSubmitInfo si = *extra;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    CHECK(h->vk.vkQueueSubmit(h->queue, 1, &si, VK_NULL_HANDLE) == VK_SUCCESS, "host submit");
}

static void expect_in_flight(vkvit_session *s, const eu_golden *g, const char *what) {
    float *out = malloc(g->n_out * sizeof(float));
    CHECK(vkvit_session_poll(s) == 0, "%s: poll says idle although vkvit waits on an unsignalled value", what);
    vkvit_result r = vkvit_session_set_input(s, g->input, g->n_in);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "in flight"), "%s: set_input -> %s: %s", what,
          vkvit_result_name(r), vkvit_last_error());
    r = vkvit_session_get_output(s, out, g->n_out);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "in flight"), "%s: get_output -> %s", what,
          vkvit_result_name(r));
    r = vkvit_session_run(s);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT, "%s: run -> %s", what, vkvit_result_name(r));
    r = vkvit_session_submit(s, NULL);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT, "%s: second submit -> %s", what, vkvit_result_name(r));
    free(out);
}

/* A host pixel buffer pre-processed and classified inside the host's command buffer (vkvit_session_record_ex), the
 * logits copied into a host buffer (poisoned with NaN first), against vkvit's host path on the same pixels
 * (set_images + run): max rel err <= 1e-5. Everything it uses was created before the caller's counter snapshot. */
typedef struct ex_frame {
    vkvit_session *s;                       /* batch 1, max_image_pixels EX_W * EX_H */
    vkvit__buffer pixels, logits;           /* host-owned: RGBA8 [EX_H, EX_W], float [1, classes] */
    uint8_t host_pixels[48 * 64 * 4];
} ex_frame;
enum { EX_W = 64, EX_H = 48 };

static void ex_frame_create(vkvit_ctx *ctx, vkvit_model *model, ex_frame *x) {
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.label = "record_ex", .max_image_pixels = EX_W * EX_H},
                              &x->s));
    for (size_t i = 0; i < sizeof x->host_pixels; i++) x->host_pixels[i] = (uint8_t)(vt_rand_u32() >> 24);
    MUST(vkvit__buffer_create(ctx, sizeof x->host_pixels, VKVIT_MEM_DEVICE, "host pixels", &x->pixels));
    MUST(vkvit__buffer_create(ctx, vkvit_session_output_bytes(x->s, VKVIT_OUTPUT_LOGITS), VKVIT_MEM_DEVICE,
                              "host logits", &x->logits));
    MUST(vkvit__buffer_upload(ctx, &x->pixels, 0, x->host_pixels, sizeof x->host_pixels));
}

static void ex_frame_run(host *h, VkCommandBuffer cmd, VkFence fence, ex_frame *x, size_t n_classes) {
    if (x->logits.mapped) /* UMA / lavapipe: poison through the mapping (no vkvit work, nothing allocated) */
        for (size_t i = 0; i < n_classes; i++) ((float *)x->logits.mapped)[i] = NAN;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkvit_host_pixels px = {.buffer = x->pixels.buffer, .width = EX_W, .height = EX_H, .format = VKVIT_PIXEL_RGBA8,
                            .src_stage = VK_PIPELINE_STAGE_TRANSFER_BIT, .src_access = VK_ACCESS_TRANSFER_WRITE_BIT};
    vkvit_record_desc rd = {.pixels = &px, .pixels_count = 1,
                            .output = {.kind = VKVIT_OUTPUT_LOGITS, .buffer = x->logits.buffer,
                                       .dst_stage = VK_PIPELINE_STAGE_HOST_BIT, .dst_access = VK_ACCESS_HOST_READ_BIT}};
    h->vk.vkResetCommandBuffer(cmd, 0);
    h->vk.vkBeginCommandBuffer(cmd, &bi);
    MUST(vkvit_session_record_ex(x->s, cmd, &rd));
    h->vk.vkEndCommandBuffer(cmd);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    h->vk.vkResetFences(h->device, 1, &fence);
    CHECK(h->vk.vkQueueSubmit(h->queue, 1, &si, fence) == VK_SUCCESS, "host submit of the record_ex frame");
    h->vk.vkWaitForFences(h->device, 1, &fence, VK_TRUE, UINT64_MAX);
    /* The host path on the same pixels (sized up front by max_image_pixels: no allocation either). */
    vkvit_image img = {.pixels = x->host_pixels, .width = EX_W, .height = EX_H, .format = VKVIT_PIXEL_RGBA8};
    MUST(vkvit_session_set_images(x->s, 0, &img, 1));
    MUST(vkvit_session_run(x->s));
}

static void ex_frame_check(vkvit_ctx *ctx, ex_frame *x, size_t n_classes) {
    float *got = malloc(n_classes * sizeof(float)), *ref = malloc(n_classes * sizeof(float));
    double *want = malloc(n_classes * sizeof(double));
    MUST(vkvit__buffer_download(ctx, &x->logits, 0, got, n_classes * sizeof(float)));
    MUST(vkvit_session_get_output(x->s, ref, n_classes));
    for (size_t i = 0; i < n_classes; i++) want[i] = ref[i];
    double err = vt_max_rel_err(got, want, n_classes, NULL);
    printf("record_ex frame (host pixel buffer in, host logits buffer out) vs set_images + run: max rel err %.3g\n",
           err);
    CHECK(err <= 1e-5, "record_ex logits differ from the host path: max rel err %.3g", err);
    free(got), free(ref), free(want);
}

static void ex_frame_destroy(vkvit_ctx *ctx, ex_frame *x) {
    vkvit_session_destroy(x->s);
    vkvit__buffer_destroy(ctx, &x->pixels);
    vkvit__buffer_destroy(ctx, &x->logits);
}

/* A second host device on the same GPU with the timelineSemaphore feature enabled, adopted by a new ctx. */
static vkvit_ctx *adopt_timeline_host(const host *base, host *h, const char *label) {
    host_timeline_device(base, h);
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .timelineSemaphore = VK_TRUE};
    VkPhysicalDeviceFeatures2 enabled = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
    return host_adopt_with(h, &enabled, label);
}

static void submit_timeline(host *base, const eu_golden *g) {
    host h;
    vkvit_ctx *ctx = adopt_timeline_host(base, &h, "timeline host");
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    CHECK(info.timeline_semaphore == 1, "the host enabled timelineSemaphore but the ctx reports %d",
          info.timeline_semaphore);

    vkvit_model *model = NULL;
    vkvit_session *s = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = EU_MODEL ".vkvit"}, &model));
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = g->batch, .label = "timeline"}, &s));
    vkvit__buffer scratch;
    MUST(vkvit__buffer_create(ctx, 4096, VKVIT_MEM_DEVICE, "host scratch", &scratch));
    VkCommandPool pool;
    VkCommandBuffer cmd = host_cmd(&h, &pool);
    VkSemaphore timeline = host_semaphore(&h, true, 0);
    VkFence fence = host_fence(&h);
    CHECK(vkvit_session_poll(s) == 1, "a fresh session must be idle");
    ex_frame *ex = calloc(1, sizeof *ex);
    ex_frame_create(ctx, model, ex);
    size_t n_classes = g->n_out / g->batch;
    vkvit__counts before = vkvit__ctx_counters(ctx);

    for (int f = 0; f < FRAMES; f++) {
        char what[64];
        snprintf(what, sizeof what, "timeline frame %d", f);
        uint64_t ready = 10u * f + 1, done = 10u * f + 2;
        eu_poison(s, g->n_in, g->n_out);
        MUST(vkvit_session_set_input(s, eu_frame_input(g, f), g->n_in));
        vkvit_semaphore_wait w = {.semaphore = timeline, .value = ready};
        vkvit_semaphore_signal d = {.semaphore = timeline, .value = done};
        vkvit_submit_desc desc = {.waits = &w, .wait_count = 1, .signals = &d, .signal_count = 1,
                                  .fence = f == 2 ? fence : VK_NULL_HANDLE, .queue = f == 0 ? VK_NULL_HANDLE : h.queue};
        if (f % 2 == 0) {
            /* The host's frame work signals `ready` from its queue, then vkvit's submission waits on it. */
            VkTimelineSemaphoreSubmitInfo tv = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                                .signalSemaphoreValueCount = 1, .pSignalSemaphoreValues = &ready};
            VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &tv, .signalSemaphoreCount = 1,
                               .pSignalSemaphores = &timeline};
            host_fill_and_submit(&h, cmd, scratch.buffer, (uint32_t)f, &si);
            MUST(vkvit_session_submit(s, &desc));
        } else {
            /* Wait before signal: vkvit is submitted first and must not block; the host signals from the CPU. */
            MUST(vkvit_session_submit(s, &desc));
            expect_in_flight(s, g, what);
            VkSemaphoreSignalInfo sig = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = timeline,
                                         .value = ready};
            CHECK(h.vk.vkSignalSemaphore(h.device, &sig) == VK_SUCCESS, "vkSignalSemaphore");
        }
        VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, .semaphoreCount = 1,
                                  .pSemaphores = &timeline, .pValues = &done};
        CHECK(h.vk.vkWaitSemaphores(h.device, &wi, 120ull * 1000000000ull) == VK_SUCCESS,
              "%s: timeline never reached %llu", what, (unsigned long long)done);
        if (f == 2) {
            CHECK(h.vk.vkWaitForFences(h.device, 1, &fence, VK_TRUE, 120ull * 1000000000ull) == VK_SUCCESS,
                  "%s: the host fence was not signalled", what);
            h.vk.vkResetFences(h.device, 1, &fence);
        }
        /* The timeline says done; the session's own fence was signalled by the same submission. */
        MUST(vkvit_session_wait(s));
        CHECK(vkvit_session_poll(s) == 1, "%s: poll after completion", what);
        double err = eu_check(s, eu_frame_logits(g, f), g->n_out, what);
        printf("%s: submit %s signal, logits max rel err %.3g\n", what,
               f % 2 ? "before the host's CPU" : "after the host's queue", err);
    }
    /* A frame recorded into the host's command buffer allocates nothing either. */
    eu_poison(s, g->n_in, g->n_out);
    MUST(vkvit_session_set_input(s, g->input, g->n_in));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    h.vk.vkResetCommandBuffer(cmd, 0);
    h.vk.vkBeginCommandBuffer(cmd, &bi);
    MUST(vkvit_session_record(s, cmd));
    h.vk.vkEndCommandBuffer(cmd);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    CHECK(h.vk.vkQueueSubmit(h.queue, 1, &si, fence) == VK_SUCCESS, "host submit of the recorded frame");
    h.vk.vkWaitForFences(h.device, 1, &fence, VK_TRUE, UINT64_MAX);
    eu_check(s, g->logits, g->n_out, "recorded frame");
    ex_frame_run(&h, cmd, fence, ex, n_classes);

    vkvit__counts after = vkvit__ctx_counters(ctx);
    CHECK(eu_counts_equal(&before, &after, "timeline frames"),
          "run / submit / record / record_ex / set_images allocated or created Vulkan objects after session creation");
    ex_frame_check(ctx, ex, n_classes); /* after the snapshot: a download may create the staging buffer */
    ex_frame_destroy(ctx, ex);
    free(ex);
    CHECK(before.pipelines > 0 && before.memory_allocations > 0, "the counters count nothing (%u pipelines)",
          before.pipelines);

    h.vk.vkDestroyFence(h.device, fence, NULL);
    h.vk.vkDestroySemaphore(h.device, timeline, NULL);
    h.vk.vkDestroyCommandPool(h.device, pool, NULL);
    vkvit__buffer_destroy(ctx, &scratch);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
    CHECK(host_device_works(&h), "the timeline host device no longer works after vkvit_ctx_destroy");
    h.vk.vkDestroyDevice(h.device, NULL);
}

static void submit_rejects_bad_desc(vkvit_session *s) {
    VkSemaphore fake = (VkSemaphore)(uintptr_t)0x1234; /* never reaches Vulkan: rejected before */
    vkvit_semaphore_wait waits[VKVIT_MAX_SUBMIT_SEMAPHORES + 1];
    for (uint32_t i = 0; i < VKVIT_ARRAY_LEN(waits); i++) waits[i] = (vkvit_semaphore_wait){.semaphore = fake};
    vkvit_submit_desc too_many = {.waits = waits, .wait_count = VKVIT_ARRAY_LEN(waits)};
    vkvit_result r = vkvit_session_submit(s, &too_many);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "at most 16"), "17 waits -> %s: %s",
          vkvit_result_name(r), vkvit_last_error());
    r = vkvit_session_submit(s, &(vkvit_submit_desc){.signal_count = 1});
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "NULL"), "signals NULL -> %s: %s",
          vkvit_result_name(r), vkvit_last_error());
    vkvit_semaphore_signal null_sig = {.semaphore = VK_NULL_HANDLE};
    r = vkvit_session_submit(s, &(vkvit_submit_desc){.signals = &null_sig, .signal_count = 1});
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "signals[0].semaphore"),
          "NULL semaphore -> %s: %s", vkvit_result_name(r), vkvit_last_error());
    r = vkvit_session_submit(NULL, NULL);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT, "NULL session -> %s", vkvit_result_name(r));
    CHECK(vkvit_session_poll(s) == 1, "a rejected submit left the session in flight");
}

static void submit_binary_fallback(host *h, const eu_golden *g) {
    vkvit_ctx *ctx = host_adopt_with(h, NULL, "binary host"); /* host_create enabled no timeline feature */
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    CHECK(info.timeline_semaphore == 0, "the host did not enable timelineSemaphore but the ctx reports %d",
          info.timeline_semaphore);
    vkvit_model *model = NULL;
    vkvit_session *s = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = EU_MODEL ".vkvit"}, &model));
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = g->batch, .label = "binary"}, &s));
    vkvit__buffer scratch;
    MUST(vkvit__buffer_create(ctx, 4096, VKVIT_MEM_DEVICE, "host scratch", &scratch));
    VkCommandPool pool1, pool2;
    VkCommandBuffer before_cmd = host_cmd(h, &pool1), after_cmd = host_cmd(h, &pool2);
    VkSemaphore ready = host_semaphore(h, false, 0), done = host_semaphore(h, false, 0);
    VkFence fence = host_fence(h), after_fence = host_fence(h);
    submit_rejects_bad_desc(s);

    /* A timeline value on a ctx without timeline semaphores is refused with the way out. */
    vkvit_semaphore_wait tw = {.semaphore = ready, .value = 5};
    vkvit_result r = vkvit_session_submit(s, &(vkvit_submit_desc){.waits = &tw, .wait_count = 1});
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "no timeline semaphores"), "-> %s: %s",
          vkvit_result_name(r), vkvit_last_error());
    vkvit__counts before = vkvit__ctx_counters(ctx);

    for (int f = 0; f < FRAMES; f++) {
        char what[64];
        snprintf(what, sizeof what, "binary frame %d", f);
        eu_poison(s, g->n_in, g->n_out);
        MUST(vkvit_session_set_input(s, eu_frame_input(g, f), g->n_in));
        if (f == FRAMES - 1) {
            /* No semaphores, no fence: the session's own fence, seen through poll / wait. */
            MUST(vkvit_session_submit(s, NULL));
            MUST(vkvit_session_wait(s));
        } else {
            VkSubmitInfo sig = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .signalSemaphoreCount = 1,
                                .pSignalSemaphores = &ready};
            host_fill_and_submit(h, before_cmd, scratch.buffer, (uint32_t)f, &sig);
            vkvit_semaphore_wait w = {.semaphore = ready, .stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                                                                    VK_PIPELINE_STAGE_TRANSFER_BIT};
            vkvit_semaphore_signal d = {.semaphore = done};
            MUST(vkvit_session_submit(s, &(vkvit_submit_desc){.waits = &w, .wait_count = 1, .signals = &d,
                                                              .signal_count = 1, .fence = fence}));
            /* The host's next work consumes `done` (a binary semaphore is signalled once, waited once). */
            VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
            VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
            h->vk.vkResetCommandBuffer(after_cmd, 0);
            h->vk.vkBeginCommandBuffer(after_cmd, &bi);
            h->vk.vkEndCommandBuffer(after_cmd);
            VkSubmitInfo wsi = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .waitSemaphoreCount = 1,
                                .pWaitSemaphores = &done, .pWaitDstStageMask = &stage, .commandBufferCount = 1,
                                .pCommandBuffers = &after_cmd};
            CHECK(h->vk.vkQueueSubmit(h->queue, 1, &wsi, after_fence) == VK_SUCCESS, "host submit waiting on done");
            CHECK(h->vk.vkWaitForFences(h->device, 1, &fence, VK_TRUE, 120ull * 1000000000ull) == VK_SUCCESS,
                  "%s: the host fence was not signalled", what);
            CHECK(vkvit_session_poll(s) == 1, "%s: poll after the host fence", what);
            h->vk.vkWaitForFences(h->device, 1, &after_fence, VK_TRUE, UINT64_MAX);
            VkFence both[2] = {fence, after_fence};
            h->vk.vkResetFences(h->device, 2, both);
        }
        double err = eu_check(s, eu_frame_logits(g, f), g->n_out, what);
        printf("%s: %s, logits max rel err %.3g\n", what,
               f == FRAMES - 1 ? "no semaphores, vkvit_session_wait" : "binary semaphores + host fence", err);
    }
    vkvit__counts after = vkvit__ctx_counters(ctx);
    CHECK(eu_counts_equal(&before, &after, "binary frames"), "submit allocated or created Vulkan objects");

    h->vk.vkDestroyFence(h->device, fence, NULL);
    h->vk.vkDestroyFence(h->device, after_fence, NULL);
    h->vk.vkDestroySemaphore(h->device, ready, NULL);
    h->vk.vkDestroySemaphore(h->device, done, NULL);
    h->vk.vkDestroyCommandPool(h->device, pool1, NULL);
    h->vk.vkDestroyCommandPool(h->device, pool2, NULL);
    vkvit__buffer_destroy(ctx, &scratch);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
}

static void profile_after_record(host *base, const eu_golden *g) {
    host h;
    vkvit_ctx *ctx = adopt_timeline_host(base, &h, "profile host");
    vkvit_model *model = NULL;
    vkvit_session *s = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = EU_MODEL ".vkvit"}, &model));
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = g->batch, .profile = 1}, &s));
    vkvit_profile_entry prof[4];
    uint32_t n = 0;
    vkvit_result r = vkvit_session_profile(s, prof, 4, &n);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "no run yet"), "profile before any run: %s",
          vkvit_result_name(r));
    MUST(vkvit_session_set_input(s, g->input, g->n_in));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_profile(s, prof, 4, &n));
    CHECK(n > 4 && prof[0].ms >= 0.0, "profile after a run: %u entries, first %.3f ms", n, prof[0].ms);

    /* Recorded into the host's command buffer and never submitted: the queries are reset and unwritten. */
    VkCommandPool pool;
    VkCommandBuffer cmd = host_cmd(&h, &pool);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    h.vk.vkBeginCommandBuffer(cmd, &bi);
    MUST(vkvit_session_record(s, cmd));
    h.vk.vkEndCommandBuffer(cmd);
    r = vkvit_session_profile(s, prof, 4, &n);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "host command buffer"),
          "profile after a host recording: %s: %s", vkvit_result_name(r), vkvit_last_error());

    /* A submit waiting on an unsignalled timeline value is in flight: refused at once, then read once complete. */
    VkSemaphore timeline = host_semaphore(&h, true, 0);
    vkvit_semaphore_wait w = {.semaphore = timeline, .value = 1};
    MUST(vkvit_session_submit(s, &(vkvit_submit_desc){.waits = &w, .wait_count = 1}));
    r = vkvit_session_profile(s, prof, 4, &n);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "in flight"),
          "profile while a submit is in flight: %s: %s", vkvit_result_name(r), vkvit_last_error());
    VkSemaphoreSignalInfo sig = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = timeline, .value = 1};
    CHECK(h.vk.vkSignalSemaphore(h.device, &sig) == VK_SUCCESS, "vkSignalSemaphore");
    MUST(vkvit_session_wait(s));
    MUST(vkvit_session_profile(s, prof, 4, &n));
    printf("profile: %u nodes after a run and after a completed submit; refused after a host recording and in "
           "flight\n", n);

    h.vk.vkDestroySemaphore(h.device, timeline, NULL);
    h.vk.vkDestroyCommandPool(h.device, pool, NULL);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
    h.vk.vkDestroyDevice(h.device, NULL);
}

int main(void) {
    host h;
    host_create(&h);
    eu_golden g;
    eu_golden_load(&g);
    submit_timeline(&h, &g);
    submit_binary_fallback(&h, &g);
    profile_after_record(&h, &g);
    CHECK(host_device_works(&h), "the host device no longer works after vkvit_ctx_destroy");
    eu_golden_free(&g);
    host_destroy(&h);
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
