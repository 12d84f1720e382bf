// SPDX-License-Identifier: Apache-2.0
/* Recording: every descriptor set is created once and every pipeline acquired once from the ctx's shared kernels
 * (vkvit__record_prepare); the node sequence is then recorded with barriers derived from data flow
 * (vkvit__record_nodes).
 *
 * Barrier rule. Between barriers the recorder keeps the byte ranges written ("pending writes") and read ("pending
 * reads") by the nodes recorded so far. Before a node, a barrier is needed when
 *   - the node reads or writes a range overlapping a pending write (read-after-write, write-after-write), or
 *   - the node writes a range overlapping a pending read (write-after-read: the planner reuses freed memory).
 * The barrier then carries one buffer-range memory barrier per pending write (making those writes visible) and,
 * for write-after-read, the execution dependency of the call itself; both pending lists are cleared. Nodes with
 * no such conflict are recorded back to back and may overlap on the GPU.
 *
 * Indirect nodes (vkvit__node.indirect) take their workgroup count from a buffer the host writes before each
 * submission; one barrier at the start makes host writes visible to indirect-command and shader reads. */
#include "graph/graph.h"
#include "vk/descriptors.h"

#include <stdlib.h>
#include <string.h>

typedef struct range {
    VkBuffer buffer;
    uint64_t offset, size;
} range;

/* The buffer holding a tensor: the model's weights (fp32 or fp16), an external buffer or the session arena. */
static const vkvit__buffer *buffer_of(const vkvit__graph *g, const vkvit__record_target *tg, uint32_t tensor) {
    const vkvit__tensor *root = &g->tensors[vkvit__graph_root(g, tensor, NULL)];
    switch (root->kind) {
    case VKVIT_TENSOR_WEIGHT: return tg->weights;
    case VKVIT_TENSOR_WEIGHT_F16: return tg->weights_f16;
    case VKVIT_TENSOR_EXTERNAL: return root->external < VKVIT_MAX_EXTERNAL ? tg->external[root->external] : NULL;
    default: return tg->arena;
    }
}

static range binding_range(const vkvit__graph *g, const vkvit__record_target *tg, uint32_t tensor) {
    const vkvit__tensor *t = &g->tensors[tensor];
    return (range){buffer_of(g, tg, tensor)->buffer, t->offset, t->bytes};
}

static bool overlaps(const range *a, const range *b) {
    return a->buffer == b->buffer && a->offset < b->offset + b->size && b->offset < a->offset + a->size;
}

/* Swap sets: the recording's descriptor sets for node swaps (vkvit__swap_set_desc). */

static const vkvit__kernel *swap_kernel(const vkvit__recording *rec, const vkvit__swap_set_desc *d) {
    return d->own_kernel ? &rec->swap_kernels[d->kernel] : &rec->kernels[d->kernel];
}

static void swap_bindings(const vkvit__graph *g, const vkvit__record_target *tg, const vkvit__recording *rec,
                          const vkvit__swap_set_desc *d, vkvit__binding *binds) {
    for (uint32_t b = 0; b < swap_kernel(rec, d)->n_buffers; b++) {
        const uint32_t t = d->tensors[b];
        binds[b] = t == VKVIT_NONE ? (vkvit__binding){0}
                                   : (vkvit__binding){buffer_of(g, tg, t), g->tensors[t].offset, g->tensors[t].bytes};
    }
}

static vkvit_result swap_sets_create(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *tg,
                                     vkvit__recording *rec) {
    vkvit_result res = VKVIT_OK;
    if (!tg->n_swap_sets) return VKVIT_OK;
    rec->swap_kernels = calloc(tg->n_swap_kernels ? tg->n_swap_kernels : 1, sizeof *rec->swap_kernels);
    rec->swap_sets = calloc(tg->n_swap_sets, sizeof *rec->swap_sets);
    if (!rec->swap_kernels || !rec->swap_sets)
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "record: out of host memory for %u swap sets",
                            tg->n_swap_sets);
    if ((res = vkvit__kernels_acquire(ctx, tg->swap_kernels, tg->n_swap_kernels, rec->swap_kernels)) != VKVIT_OK)
        return res;
    rec->n_swap_kernels = tg->n_swap_kernels;
    uint32_t sampled = 0;
    for (uint32_t i = 0; i < tg->n_swap_sets; i++) {
        const vkvit__swap_set_desc *d = &tg->swap_sets[i];
        if (d->kernel >= (d->own_kernel ? rec->n_swap_kernels : rec->n_kernels))
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "record: swap set %u names kernel %u of %u", i, d->kernel,
                                d->own_kernel ? rec->n_swap_kernels : rec->n_kernels);
        for (uint32_t b = 0; b < swap_kernel(rec, d)->n_buffers; b++) sampled += swap_kernel(rec, d)->sampled_images >> b & 1;
    }
    if ((res = vkvit__descriptors_create_with_images(ctx, tg->n_swap_sets, sampled, &rec->swap_descriptors)) != VKVIT_OK)
        return res;
    for (uint32_t i = 0; i < tg->n_swap_sets; i++) {
        const vkvit__swap_set_desc *d = &tg->swap_sets[i];
        vkvit__binding binds[VKVIT_MAX_BINDINGS];
        swap_bindings(g, tg, rec, d, binds);
        for (uint32_t b = 0; b < swap_kernel(rec, d)->n_buffers; b++)
            if (d->tensors[b] != VKVIT_NONE && !binds[b].buf)
                return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "record: swap set %u binds '%s' but the session has "
                                    "no buffer for it", i, g->tensors[d->tensors[b]].name);
        if ((res = vkvit__descriptor_set_create_partial(ctx, &rec->swap_descriptors, swap_kernel(rec, d), binds,
                                                        &rec->swap_sets[i])) != VKVIT_OK)
            return vkvit__error_prefix(res, "record: swap set %u", i);
        rec->n_swap_sets = i + 1;
    }
    return VKVIT_OK;
}

static void swap_sets_rebind(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *tg,
                             vkvit__recording *rec) {
    for (uint32_t i = 0; i < rec->n_swap_sets && i < tg->n_swap_sets; i++) { /* the target the sets were made for */
        vkvit__binding binds[VKVIT_MAX_BINDINGS];
        swap_bindings(g, tg, rec, &tg->swap_sets[i], binds);
        for (uint32_t b = 0; b < swap_kernel(rec, &tg->swap_sets[i])->n_buffers; b++)
            if (binds[b].buf)
                vkvit__descriptor_write_buffer(ctx, rec->swap_sets[i], b, binds[b].buf->buffer, binds[b].offset,
                                               binds[b].range);
    }
}

/* The swapped nodes' sources: their descriptors (the sets are not in use: the caller's rule), then the barriers
 * from the host's writes to compute-shader reads. */
static void record_swap_sources(vkvit_ctx *ctx, VkCommandBuffer cmd, vkvit__recording *rec,
                                const vkvit__node_swap *swaps, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        const vkvit__swap_source *src = &swaps[i].source;
        if (src->image) {
            vkvit__descriptor_write_image(ctx, rec->swap_sets[swaps[i].set], src->binding, src->view, src->layout);
            const VkImageMemoryBarrier b = {
                .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, .srcAccessMask = src->src_access,
                .dstAccessMask = VK_ACCESS_SHADER_READ_BIT, .oldLayout = src->layout, .newLayout = src->layout,
                .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                .image = src->image, .subresourceRange = src->range,
            };
            ctx->vk.vkCmdPipelineBarrier(cmd, src->src_stage, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, NULL, 0, NULL,
                                         1, &b);
        } else if (src->buffer) {
            vkvit__descriptor_write_buffer(ctx, rec->swap_sets[swaps[i].set], src->binding, src->buffer, src->offset,
                                           src->size);
            const VkBufferMemoryBarrier b = {
                .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER, .srcAccessMask = src->src_access,
                .dstAccessMask = VK_ACCESS_SHADER_READ_BIT, .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .buffer = src->buffer, .offset = src->offset,
                .size = src->size,
            };
            ctx->vk.vkCmdPipelineBarrier(cmd, src->src_stage, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, NULL, 1, &b,
                                         0, NULL);
        }
    }
}

vkvit_result vkvit__record_prepare(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *tg,
                                   bool profile, vkvit__recording *rec) {
    vkvit_result res = vkvit__graph_error(g);
    memset(rec, 0, sizeof *rec);
    if (res != VKVIT_OK) return res;
    rec->kernels = calloc(g->n_kernels ? g->n_kernels : 1, sizeof *rec->kernels);
    rec->sets = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *rec->sets);
    if (!rec->kernels || !rec->sets) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "record: out of host memory");
        goto fail;
    }
    /* the ctx's pipelines for these variants, shared with every other recording (vkvit__kernels_acquire) */
    if ((res = vkvit__kernels_acquire(ctx, g->kernels, g->n_kernels, rec->kernels)) != VKVIT_OK) goto fail;
    rec->n_kernels = g->n_kernels;
    if ((res = vkvit__descriptors_create(ctx, g->n_nodes ? g->n_nodes : 1, &rec->descriptors)) != VKVIT_OK) goto fail;
    uint64_t align = VKVIT_MAX(ctx->limits.minStorageBufferOffsetAlignment, 4);
    for (uint32_t n = 0; n < g->n_nodes; n++) {
        const vkvit__node *node = &g->nodes[n];
        vkvit__binding binds[VKVIT_MAX_BINDINGS];
        for (uint32_t b = 0; b < node->n_bindings; b++) {
            uint32_t t = node->bindings[b].tensor;
            const vkvit__tensor *x = &g->tensors[t];
            const vkvit__buffer *buf = buffer_of(g, tg, t);
            if (x->offset % align) {
                res = vkvit__error(VKVIT_ERROR_UNSUPPORTED,
                                   "record: node '%s' binds '%s' at byte offset %llu, not a multiple of the device's "
                                   "storage-buffer offset alignment %llu",
                                   node->label, x->name, (unsigned long long)x->offset, (unsigned long long)align);
                goto fail;
            }
            if (x->bytes > ctx->limits.maxStorageBufferRange) {
                res = vkvit__error(VKVIT_ERROR_UNSUPPORTED,
                                   "record: node '%s' binds '%s' of %llu bytes; the device's maxStorageBufferRange is "
                                   "%u bytes", node->label, x->name, (unsigned long long)x->bytes,
                                   ctx->limits.maxStorageBufferRange);
                goto fail;
            }
            if (!buf) {
                res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "record: node '%s' binds '%s' but the session has no "
                                   "buffer for it (fp16 weights or an external buffer)", node->label, x->name);
                goto fail;
            }
            if (rec->kernels[node->kernel].texel_format[b] != VK_FORMAT_UNDEFINED &&
                g->tensors[vkvit__graph_root(g, t, NULL)].kind == VKVIT_TENSOR_EXTERNAL) {
                /* vkvit__record_rebind rewrites buffer descriptors only; no texel kernel reads a host buffer */
                res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "record: node '%s' reads external '%s' through a "
                                   "texel binding", node->label, x->name);
                goto fail;
            }
            binds[b] = (vkvit__binding){buf, x->offset, x->bytes};
        }
        if ((res = vkvit__descriptor_set_create(ctx, &rec->descriptors, &rec->kernels[node->kernel], binds,
                                                &rec->sets[n])) != VKVIT_OK) {
            res = vkvit__error_prefix(res, "record: node '%s'", node->label);
            goto fail;
        }
    }
    if ((res = swap_sets_create(ctx, g, tg, rec)) != VKVIT_OK) goto fail;
    if (profile) {
        if ((res = vkvit__timer_create(ctx, 2 * VKVIT_MAX(g->n_nodes, 1u), &rec->timer)) != VKVIT_OK) goto fail;
        rec->profiled = true;
    }
    return VKVIT_OK;
fail:
    vkvit__record_free(ctx, rec);
    return res;
}

void vkvit__record_rebind(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *tg,
                          vkvit__recording *rec) {
    for (uint32_t n = 0; n < g->n_nodes; n++) {
        const vkvit__node *node = &g->nodes[n];
        bool external = false;
        for (uint32_t b = 0; b < node->n_bindings; b++)
            external |= g->tensors[vkvit__graph_root(g, node->bindings[b].tensor, NULL)].kind == VKVIT_TENSOR_EXTERNAL;
        if (!external) continue;
        VkDescriptorBufferInfo infos[VKVIT_MAX_BINDINGS];
        VkWriteDescriptorSet writes[VKVIT_MAX_BINDINGS];
        for (uint32_t b = 0; b < node->n_bindings; b++) {
            const vkvit__tensor *x = &g->tensors[node->bindings[b].tensor];
            infos[b] = (VkDescriptorBufferInfo){buffer_of(g, tg, node->bindings[b].tensor)->buffer, x->offset, x->bytes};
            writes[b] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = rec->sets[n],
                                               .dstBinding = b, .descriptorCount = 1,
                                               .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                               .pBufferInfo = &infos[b]};
        }
        ctx->vk.vkUpdateDescriptorSets(ctx->device, node->n_bindings, writes, 0, NULL);
    }
    swap_sets_rebind(ctx, g, tg, rec);
}

void vkvit__record_free(vkvit_ctx *ctx, vkvit__recording *rec) {
    vkvit__kernels_release(ctx, rec->kernels, rec->n_kernels);
    vkvit__descriptors_destroy(ctx, &rec->descriptors);
    vkvit__kernels_release(ctx, rec->swap_kernels, rec->n_swap_kernels);
    vkvit__descriptors_destroy(ctx, &rec->swap_descriptors);
    free(rec->swap_kernels);
    free(rec->swap_sets);
    if (rec->timer.pool) vkvit__timer_destroy(ctx, &rec->timer);
    free(rec->kernels);
    free(rec->sets);
    memset(rec, 0, sizeof *rec);
}

/* The pending lists hold at most a few dozen ranges between barriers; fixed arrays keep recording allocation-free.
 * When one fills up a barrier is forced, which is always correct. */
#define MAX_PENDING 64

void vkvit__record_nodes(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *tg,
                         vkvit__recording *rec, VkCommandBuffer cmd) {
    vkvit__record_nodes_swapped(ctx, g, tg, rec, cmd, NULL, 0);
}

void vkvit__record_nodes_swapped(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *tg,
                                 vkvit__recording *rec, VkCommandBuffer cmd, const vkvit__node_swap *swaps,
                                 uint32_t n_swaps) {
    vkvit__record_node_range(ctx, g, tg, rec, cmd, swaps, n_swaps, 0, g->n_nodes);
}

void vkvit__record_node_range(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *tg,
                              vkvit__recording *rec, VkCommandBuffer cmd, const vkvit__node_swap *swaps,
                              uint32_t n_swaps, uint32_t first, uint32_t end) {
    range writes[MAX_PENDING], reads[MAX_PENDING];
    uint32_t n_writes = 0, n_reads = 0, next_swap = 0, n_barriers = 0;
    const bool whole = first == 0 && end == g->n_nodes; /* a part has no timestamps and leaves n_barriers alone */
    const bool timed = rec->profiled && whole;
    record_swap_sources(ctx, cmd, rec, swaps, n_swaps);
    if (timed) vkvit__cmd_timer_reset(ctx, cmd, &rec->timer);
    /* Counts and parameters written by the host into mapped memory, read as indirect commands and by shaders. */
    bool any_indirect = false;
    for (uint32_t n = first; n < end && !any_indirect; n++) any_indirect = g->nodes[n].indirect;
    if (any_indirect) {
        VkMemoryBarrier host = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_HOST_WRITE_BIT,
                                .dstAccessMask = VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_SHADER_READ_BIT};
        ctx->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_HOST_BIT,
                                     VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                     &host, 0, NULL, 0, NULL);
    }

    for (uint32_t n = first; n < end; n++) {
        const vkvit__node *node = &g->nodes[n];
        bool need = n_writes + node->n_bindings > MAX_PENDING || n_reads + node->n_bindings > MAX_PENDING;
        for (uint32_t b = 0; b < node->n_bindings && !need; b++) {
            range r = binding_range(g, tg, node->bindings[b].tensor);
            for (uint32_t i = 0; i < n_writes && !need; i++) need = overlaps(&r, &writes[i]);
            if (node->bindings[b].access & VKVIT_WRITE)
                for (uint32_t i = 0; i < n_reads && !need; i++) need = overlaps(&r, &reads[i]);
        }
        if (need) {
            VkBufferMemoryBarrier bars[MAX_PENDING];
            for (uint32_t i = 0; i < n_writes; i++)
                bars[i] = (VkBufferMemoryBarrier){
                    .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                    .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                    .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                    .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                    .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                    .buffer = writes[i].buffer,
                    .offset = writes[i].offset,
                    .size = writes[i].size,
                };
            ctx->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                         0, 0, NULL, n_writes, bars, 0, NULL);
            n_barriers++;
            n_writes = n_reads = 0;
        }
        for (uint32_t b = 0; b < node->n_bindings; b++) {
            range r = binding_range(g, tg, node->bindings[b].tensor);
            if (node->bindings[b].access & VKVIT_WRITE) writes[n_writes++] = r;
            if (node->bindings[b].access & VKVIT_READ) reads[n_reads++] = r;
        }
        if (timed) vkvit__cmd_timestamp(ctx, cmd, &rec->timer, 2 * n);
        const vkvit__kernel *k = &rec->kernels[node->kernel];
        VkDescriptorSet set = rec->sets[n];
        VkBuffer indirect = VK_NULL_HANDLE;
        uint64_t indirect_offset = 0;
        if (node->indirect) {
            const vkvit__tensor *it = &g->tensors[node->indirect_tensor];
            indirect = buffer_of(g, tg, node->indirect_tensor)->buffer;
            indirect_offset = it->offset + node->indirect_offset;
        }
        while (next_swap < n_swaps && swaps[next_swap].node < n) next_swap++;
        if (next_swap < n_swaps && swaps[next_swap].node == n) {
            const vkvit__node_swap *sw = &swaps[next_swap];
            k = swap_kernel(rec, &tg->swap_sets[sw->set]);
            set = rec->swap_sets[sw->set];
            if (node->indirect) indirect = sw->indirect, indirect_offset = sw->indirect_offset;
        }
        if (node->indirect) {
            ctx->vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipeline);
            ctx->vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, 1, &set, 0, NULL);
            if (k->push_size)
                ctx->vk.vkCmdPushConstants(cmd, k->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k->push_size, node->push);
            ctx->vk.vkCmdDispatchIndirect(cmd, indirect, indirect_offset);
        } else {
            vkvit__cmd_dispatch(ctx, cmd, k, set, node->push, node->groups[0], node->groups[1], node->groups[2]);
        }
        if (timed) vkvit__cmd_timestamp(ctx, cmd, &rec->timer, 2 * n + 1);
    }
    if (whole) rec->n_barriers = n_barriers;
}

static vkvit_result warmup(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *tg,
                           vkvit__recording *rec, uint32_t first_kernel) {
    VkCommandBuffer cmd;
    vkvit_result res = vkvit__cmd_begin(ctx, &cmd);
    if (res != VKVIT_OK) return res;
    /* Every command may touch what the one before wrote (and the host's parameter writes): a full barrier each. */
    const VkMemoryBarrier host = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_HOST_WRITE_BIT,
                                  .dstAccessMask = VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_SHADER_READ_BIT};
    ctx->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_HOST_BIT,
                                 VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &host,
                                 0, NULL, 0, NULL);
    const VkMemoryBarrier shader = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                    .srcAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                                    .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    for (uint32_t k = first_kernel; k < rec->n_kernels; k++) {
        uint32_t n = 0;
        while (n < g->n_nodes && g->nodes[n].kernel != k) n++;
        if (n == g->n_nodes) continue;
        const vkvit__node *node = &g->nodes[n];
        const vkvit__kernel *kern = &rec->kernels[k];
        if (node->indirect) {
            ctx->vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, kern->pipeline);
            ctx->vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, kern->layout, 0, 1, &rec->sets[n], 0,
                                            NULL);
            if (kern->push_size)
                ctx->vk.vkCmdPushConstants(cmd, kern->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kern->push_size,
                                           node->push);
            ctx->vk.vkCmdDispatchIndirect(cmd, buffer_of(g, tg, node->indirect_tensor)->buffer,
                                          g->tensors[node->indirect_tensor].offset + node->indirect_offset);
        } else {
            vkvit__cmd_dispatch(ctx, cmd, kern, rec->sets[n], node->push, 1, 1, 1);
        }
        ctx->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                                     1, &shader, 0, NULL, 0, NULL);
    }
    return vkvit__cmd_submit_wait(ctx, cmd);
}

vkvit_result vkvit__record_warmup(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *tg,
                                  vkvit__recording *rec, uint32_t first_kernel) {
    if (first_kernel >= rec->n_kernels) return VKVIT_OK;
    /* the ctx's one-shot command pool and fence: sessions' first set_images may warm up on several threads */
    vkvit__mutex_lock(ctx->oneshot_lock);
    vkvit_result res = warmup(ctx, g, tg, rec, first_kernel);
    vkvit__mutex_unlock(ctx->oneshot_lock);
    return res;
}
