// SPDX-License-Identifier: Apache-2.0
/* src/vk/submission.h — what a session needs of Vulkan around its recorded work (src/session*.c), so that it makes
 * no Vulkan call itself:
 *
 *   submission.c  one reusable command buffer with its pool and a fence: create (fence signaled: nothing in
 *                 flight), begin / end a recording, submit under the ctx's queue lock, poll, wait, destroy; and the
 *                 host's view of what a submission wrote into non-coherent mapped memory (vkvit__buffer_invalidate)
 *   cmd.c         buffer copies and timestamp ticks (additions to vk/vk.h's command-buffer section)
 *
 * Results are VkResult where the caller tells "not ready" from failure itself, else vkvit_result with the call's
 * sentence (VK_TRY). */
#ifndef VKVIT_VK_SUBMISSION_H
#define VKVIT_VK_SUBMISSION_H

#include "vk/vk.h"

typedef struct vkvit__submission {
    VkCommandPool pool;
    VkCommandBuffer cmd;                    /* primary, re-recordable, submitted any number of times */
    VkFence fence;                          /* signaled when no submission of cmd is in flight */
} vkvit__submission;

/* The pool (on the ctx's queue family), the command buffer and the fence, created signaled. On failure nothing is
 * left (*out zeroed). */
vkvit_result vkvit__submission_create(vkvit_ctx *ctx, vkvit__submission *out);
/* Waits for the last submission (if any) and destroys everything; a zeroed submission is a no-op. */
void vkvit__submission_destroy(vkvit_ctx *ctx, vkvit__submission *sub);
/* Resets the pool and begins recording cmd (no work may be in flight). */
vkvit_result vkvit__submission_begin(vkvit_ctx *ctx, vkvit__submission *sub);
vkvit_result vkvit__submission_end(vkvit_ctx *ctx, vkvit__submission *sub);
/* Resets the fence and submits cmd to `queue` under the ctx's queue lock (vkvit__queue_submit), the fence to signal
 * on completion. `sync`: NULL, or a VkSubmitInfo carrying the waits, signals and pNext chain (its command-buffer
 * fields are ignored). */
vkvit_result vkvit__submission_submit(vkvit_ctx *ctx, vkvit__submission *sub, VkQueue queue, const VkSubmitInfo *sync);
/* VK_SUCCESS when nothing is in flight, VK_NOT_READY while a submission is, else the driver's error. Never waits. */
VkResult vkvit__submission_poll(vkvit_ctx *ctx, const vkvit__submission *sub);
/* Waits for the last submission (VK_SUCCESS at once when none is in flight). */
VkResult vkvit__submission_wait(vkvit_ctx *ctx, const vkvit__submission *sub);

/* Makes the device's writes to a host-visible buffer visible to host reads of its mapping (completed work only):
 * a no-op on coherent memory. */
void vkvit__buffer_invalidate(vkvit_ctx *ctx, const vkvit__buffer *buf);

/* cmd.c: copies `size` bytes from [src_offset ..) of src to [dst_offset ..) of dst (the caller's barriers order
 * them). */
void vkvit__cmd_copy(vkvit_ctx *ctx, VkCommandBuffer cmd, VkBuffer src, VkDeviceSize src_offset, VkBuffer dst,
                     VkDeviceSize dst_offset, VkDeviceSize size);
/* cmd.c: the raw ticks of queries [first, first + n) (64-bit, waiting for them: read after the work completed).
 * Ticks times ctx->info.timestamp_period_ns are nanoseconds. */
VkResult vkvit__timer_read_ticks(vkvit_ctx *ctx, const vkvit__timer *t, uint32_t first, uint32_t n, uint64_t *ticks);

#endif /* VKVIT_VK_SUBMISSION_H */
