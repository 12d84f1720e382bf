// SPDX-License-Identifier: Apache-2.0
/* Recording into the host's command buffer: a host application (own instance + device, validation and
 * synchronization validation on) records its own transfer work, then a vkvit inference, into one command buffer
 * per "frame", submits it on its queue with its own fence, and reads the logits after waiting. Three frames in a
 * row must match the golden logits and leave both the host's and vkvit's validation silent. */
#include "host_util.h"
#include "golden_util.h"

#define MODEL VKVIT_SOURCE_DIR "/tests/golden/models/vit5_nvsubq_cls_r4"

static void host_records_vkvit_into_its_frames(host *h) {
    vkvit_ctx *ctx = host_adopt(h, "embedded");
    vkvit_model *model = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODEL ".vkvit"}, &model));

    vt_golden io;
    vt_golden_open(MODEL ".io.safetensors", &io);
    size_t n_in = 0, n_out = 0;
    float *input = vt_golden_f32_req(&io, "input", &n_in);
    float *want = vt_golden_f32_req(&io, "logits", &n_out);
    uint32_t batch = (uint32_t)vt_golden_shape(&io, "input")->shape[0];

    vkvit_session *s = NULL;
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = batch}, &s));
    MUST(vkvit_session_set_input(s, input, n_in));

    /* The host's own resources: a command pool on the family vkvit uses, and a buffer it clears every frame. */
    CHECK(vkvit_ctx_queue_family(ctx) == h->family, "queue family %u, host %u", vkvit_ctx_queue_family(ctx), h->family);
    VkCommandPool pool;
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = h->family};
    h->vk.vkCreateCommandPool(h->device, &pi, NULL, &pool);
    VkCommandBuffer cmd;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    h->vk.vkAllocateCommandBuffers(h->device, &ai, &cmd);
    vkvit__buffer scratch;
    MUST(vkvit__buffer_create(ctx, 4096, VKVIT_MEM_DEVICE, "host scratch", &scratch));
    VkFence fence;
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    h->vk.vkCreateFence(h->device, &fi, NULL, &fence);

    float *got = malloc(n_out * sizeof(float));
    for (int frame = 0; frame < 3; frame++) {
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        h->vk.vkResetCommandBuffer(cmd, 0);
        h->vk.vkBeginCommandBuffer(cmd, &bi);
        h->vk.vkCmdFillBuffer(cmd, scratch.buffer, 0, 4096, (uint32_t)frame); /* the host's own frame work */
        MUST(vkvit_session_record(s, cmd));
        h->vk.vkEndCommandBuffer(cmd);
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
        h->vk.vkResetFences(h->device, 1, &fence);
        CHECK(h->vk.vkQueueSubmit(h->queue, 1, &si, fence) == VK_SUCCESS, "submit");
        h->vk.vkWaitForFences(h->device, 1, &fence, VK_TRUE, UINT64_MAX);
        for (size_t i = 0; i < n_out; i++) got[i] = NAN;
        MUST(vkvit_session_get_output(s, got, n_out));
        double *ref = malloc(n_out * sizeof(double));
        for (size_t i = 0; i < n_out; i++) ref[i] = want[i];
        double err = vt_max_rel_err(got, ref, n_out, NULL);
        printf("frame %d: vkvit recorded into the host's command buffer, logits max rel err %.3g\n", frame, err);
        CHECK(err <= 1e-4, "frame %d: max rel err %.3g", frame, err);
        free(ref);
    }
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "vkvit counted validation messages");
    h->vk.vkDestroyFence(h->device, fence, NULL);
    h->vk.vkDestroyCommandPool(h->device, pool, NULL);
    vkvit__buffer_destroy(ctx, &scratch);
    free(got), free(input), free(want);
    vt_golden_close(&io);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
}

int main(void) {
    host h;
    host_create(&h);
    host_records_vkvit_into_its_frames(&h);
    CHECK(host_device_works(&h), "the host device no longer works");
    host_destroy(&h);
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
