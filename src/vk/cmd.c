// SPDX-License-Identifier: Apache-2.0
/* Command buffers: one-shot begin/submit/wait, dispatch, buffer-range barriers, timestamp queries. */
#include "vk/submission.h"

#include <string.h>

vkvit_result vkvit__cmd_begin(vkvit_ctx *ctx, VkCommandBuffer *out) {
    vkvit_result res = VKVIT_OK;
    *out = VK_NULL_HANDLE;
    VkCommandBufferAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = ctx->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VK_TRY(ctx->vk.vkAllocateCommandBuffers(ctx->device, &alloc, out));
    VKVIT_COUNT(ctx, command_buffers);
    VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    VK_TRY(ctx->vk.vkBeginCommandBuffer(*out, &begin));
    return VKVIT_OK;
fail:
    vkvit__cmd_abandon(ctx, *out);
    *out = VK_NULL_HANDLE;
    return res;
}

void vkvit__cmd_abandon(vkvit_ctx *ctx, VkCommandBuffer cmd) {
    if (cmd) ctx->vk.vkFreeCommandBuffers(ctx->device, ctx->cmd_pool, 1, &cmd);
}

VkResult vkvit__queue_submit(vkvit_ctx *ctx, VkQueue queue, uint32_t count, const VkSubmitInfo *submits,
                             VkFence fence) {
    vkvit__mutex_lock(ctx->queue_lock);
    VkResult vr = ctx->vk.vkQueueSubmit(queue, count, submits, fence);
    vkvit__mutex_unlock(ctx->queue_lock);
    return vr;
}

VkResult vkvit__queue_wait_idle(vkvit_ctx *ctx) {
    vkvit__mutex_lock(ctx->queue_lock);
    VkResult vr = ctx->vk.vkQueueWaitIdle(ctx->queue);
    vkvit__mutex_unlock(ctx->queue_lock);
    return vr;
}

vkvit_result vkvit__cmd_submit_wait(vkvit_ctx *ctx, VkCommandBuffer cmd) {
    vkvit_result res = VKVIT_OK;
    VK_TRY(ctx->vk.vkEndCommandBuffer(cmd));
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &cmd,
    };
    VK_TRY(ctx->vk.vkResetFences(ctx->device, 1, &ctx->fence));
    VK_TRY(vkvit__queue_submit(ctx, ctx->queue, 1, &submit, ctx->fence));
    VK_TRY(ctx->vk.vkWaitForFences(ctx->device, 1, &ctx->fence, VK_TRUE, UINT64_MAX));
fail:
    vkvit__cmd_abandon(ctx, cmd);
    return res;
}

void vkvit__cmd_dispatch(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__kernel *k, VkDescriptorSet set,
                         const void *push, uint32_t gx, uint32_t gy, uint32_t gz) {
    ctx->vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipeline);
    ctx->vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, 1, &set, 0, NULL);
    if (k->push_size) ctx->vk.vkCmdPushConstants(cmd, k->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k->push_size, push);
    ctx->vk.vkCmdDispatch(cmd, gx, gy, gz);
}

void vkvit__cmd_copy(vkvit_ctx *ctx, VkCommandBuffer cmd, VkBuffer src, VkDeviceSize src_offset, VkBuffer dst,
                     VkDeviceSize dst_offset, VkDeviceSize size) {
    const VkBufferCopy region = {.srcOffset = src_offset, .dstOffset = dst_offset, .size = size};
    ctx->vk.vkCmdCopyBuffer(cmd, src, dst, 1, &region);
}

void vkvit__cmd_barrier(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__buffer *buf, VkDeviceSize offset,
                        VkDeviceSize size, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                        VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
    VkBufferMemoryBarrier b = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
        .srcAccessMask = src_access,
        .dstAccessMask = dst_access,
        .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .buffer = buf->buffer,
        .offset = offset,
        .size = size,
    };
    ctx->vk.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 0, NULL, 1, &b, 0, NULL);
}

void vkvit__cmd_barrier_compute(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__buffer *buf,
                                VkDeviceSize offset, VkDeviceSize size) {
    vkvit__cmd_barrier(ctx, cmd, buf, offset, size, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

void vkvit__cmd_barrier_prior_work(vkvit_ctx *ctx, VkCommandBuffer cmd) {
    VkMemoryBarrier all = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    ctx->vk.vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &all, 0, NULL, 0, NULL);
}

/* ------------------------------------------------------------------------------------------------------------
 * Timestamps
 * ------------------------------------------------------------------------------------------------------------ */

vkvit_result vkvit__timer_create(vkvit_ctx *ctx, uint32_t n, vkvit__timer *out) {
    vkvit_result res = VKVIT_OK;
    memset(out, 0, sizeof *out);
    if (!ctx->info.timestamps)
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "device '%s' has no timestamp queries on its compute queue",
                            ctx->info.name);
    VkQueryPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = n,
    };
    VK_TRY(ctx->vk.vkCreateQueryPool(ctx->device, &info, NULL, &out->pool));
    VKVIT_COUNT(ctx, other_objects);
    out->n = n;
    return VKVIT_OK;
fail:
    return res;
}

void vkvit__timer_destroy(vkvit_ctx *ctx, vkvit__timer *t) {
    if (t->pool) ctx->vk.vkDestroyQueryPool(ctx->device, t->pool, NULL);
    memset(t, 0, sizeof *t);
}

void vkvit__cmd_timer_reset(vkvit_ctx *ctx, VkCommandBuffer cmd, vkvit__timer *t) {
    ctx->vk.vkCmdResetQueryPool(cmd, t->pool, 0, t->n);
}

void vkvit__cmd_timestamp(vkvit_ctx *ctx, VkCommandBuffer cmd, vkvit__timer *t, uint32_t index) {
    ctx->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, t->pool, index);
}

vkvit_result vkvit__timer_read_ns(vkvit_ctx *ctx, vkvit__timer *t, uint32_t n, double *ns) {
    vkvit_result res = VKVIT_OK;
    uint64_t ticks[256], t0 = 0;
    if (n > t->n)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit__timer_read_ns: %u queries requested, pool has %u", n, t->n);
    /* In blocks of the local buffer: a GEMM bench of 128 timed + 128 warm-up runs reads 512 queries. */
    for (uint32_t first = 0; first < n; first += VKVIT_ARRAY_LEN(ticks)) {
        const uint32_t count = VKVIT_MIN(n - first, (uint32_t)VKVIT_ARRAY_LEN(ticks));
        VK_TRY(ctx->vk.vkGetQueryPoolResults(ctx->device, t->pool, first, count, sizeof ticks, ticks, sizeof ticks[0],
                                             VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
        if (first == 0) t0 = ticks[0];
        for (uint32_t i = 0; i < count; i++)
            ns[first + i] = (double)vkvit__ticks_elapsed(t0, ticks[i], ctx->timestamp_valid_bits) *
                            ctx->info.timestamp_period_ns;
    }
    return VKVIT_OK;
fail:
    return res;
}

VkResult vkvit__timer_read_ticks(vkvit_ctx *ctx, const vkvit__timer *t, uint32_t first, uint32_t n, uint64_t *ticks) {
    return ctx->vk.vkGetQueryPoolResults(ctx->device, t->pool, first, n, (size_t)n * sizeof *ticks, ticks,
                                         sizeof *ticks, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
}
