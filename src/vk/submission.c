// SPDX-License-Identifier: Apache-2.0
/* A session's submission: one command buffer recorded once (and again when its bindings change) and submitted per
 * run, a fence that says whether a run is in flight (vk/submission.h). */
#include "vk/submission.h"

#include <string.h>

vkvit_result vkvit__submission_create(vkvit_ctx *ctx, vkvit__submission *out) {
    vkvit_result res = VKVIT_OK;
    memset(out, 0, sizeof *out);
    const VkCommandPoolCreateInfo pool_info = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                               .queueFamilyIndex = ctx->queue_family};
    VK_TRY(ctx->vk.vkCreateCommandPool(ctx->device, &pool_info, NULL, &out->pool));
    const VkCommandBufferAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                               .commandPool = out->pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                               .commandBufferCount = 1};
    VK_TRY(ctx->vk.vkAllocateCommandBuffers(ctx->device, &alloc, &out->cmd));
    /* Signaled: "no run in flight", so destroy and poll need no special case before the first submission. */
    const VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
                                          .flags = VK_FENCE_CREATE_SIGNALED_BIT};
    VK_TRY(ctx->vk.vkCreateFence(ctx->device, &fence_info, NULL, &out->fence));
    return VKVIT_OK;
fail:
    vkvit__submission_destroy(ctx, out);
    return res;
}

void vkvit__submission_destroy(vkvit_ctx *ctx, vkvit__submission *sub) {
    if (sub->fence) {
        ctx->vk.vkWaitForFences(ctx->device, 1, &sub->fence, VK_TRUE, UINT64_MAX);
        ctx->vk.vkDestroyFence(ctx->device, sub->fence, NULL);
    }
    if (sub->pool) ctx->vk.vkDestroyCommandPool(ctx->device, sub->pool, NULL); /* frees cmd */
    memset(sub, 0, sizeof *sub);
}

vkvit_result vkvit__submission_begin(vkvit_ctx *ctx, vkvit__submission *sub) {
    vkvit_result res = VKVIT_OK;
    const VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VK_TRY(ctx->vk.vkResetCommandPool(ctx->device, sub->pool, 0));
    VK_TRY(ctx->vk.vkBeginCommandBuffer(sub->cmd, &begin));
fail:
    return res;
}

vkvit_result vkvit__submission_end(vkvit_ctx *ctx, vkvit__submission *sub) {
    vkvit_result res = VKVIT_OK;
    VK_TRY(ctx->vk.vkEndCommandBuffer(sub->cmd));
fail:
    return res;
}

vkvit_result vkvit__submission_submit(vkvit_ctx *ctx, vkvit__submission *sub, VkQueue queue, const VkSubmitInfo *sync) {
    vkvit_result res = VKVIT_OK;
    VkSubmitInfo submit = sync ? *sync : (VkSubmitInfo){.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &sub->cmd;
    VK_TRY(ctx->vk.vkResetFences(ctx->device, 1, &sub->fence));
    VK_TRY(vkvit__queue_submit(ctx, queue, 1, &submit, sub->fence));
fail:
    return res;
}

VkResult vkvit__submission_poll(vkvit_ctx *ctx, const vkvit__submission *sub) {
    return ctx->vk.vkGetFenceStatus(ctx->device, sub->fence);
}

VkResult vkvit__submission_wait(vkvit_ctx *ctx, const vkvit__submission *sub) {
    return ctx->vk.vkWaitForFences(ctx->device, 1, &sub->fence, VK_TRUE, UINT64_MAX);
}

void vkvit__buffer_invalidate(vkvit_ctx *ctx, const vkvit__buffer *buf) {
    if (buf->coherent) return;
    const VkMappedMemoryRange range = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = buf->memory,
                                       .size = VK_WHOLE_SIZE};
    ctx->vk.vkInvalidateMappedMemoryRanges(ctx->device, 1, &range);
}
