/* vkvit_session: build the architecture's graph, plan one arena, create every pipeline and descriptor set, record
 * the whole inference once. A run is one queue submission of that command buffer.
 *
 * Recorded command buffer:
 *   1. a memory dependency on everything submitted before (the previous run wrote the arena this one reuses)
 *   2. inputs (the image, and the condition of resnet models with a condition mixer): host-visible arena (UMA,
 *      CPU devices): the host writes them in place before the submit; otherwise a copy from a persistent
 *      host-visible staging buffer per input
 *   3. every node, with data-flow barriers (graph/record.c)
 *   4. output: made visible to the host, through a readback buffer when the arena is not host-visible */
#include "graph/graph.h"
#include "model/model.h"
#include "modules/modules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vkvit_session {
    vkvit_model *model;
    vkvit_ctx *ctx;
    char label[64];
    uint32_t batch;
    vkvit__graph graph;
    vkvit__plan_stats plan;
    vkvit__buffer arena;
    vkvit__buffer in_staging, out_staging;  /* only when the arena is not host-visible */
    vkvit__buffer cond_staging;             /* the same for the condition (models that take one) */
    bool direct;                            /* host reads/writes the arena's input/output in place */
    vkvit__recording rec;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    uint32_t input, output;                 /* graph tensors */
    uint32_t condition;                     /* graph tensor, VKVIT_NONE when the model takes no condition */
    bool condition_set;                     /* vkvit_session_set_condition succeeded at least once */
    bool ran;
};

static vkvit_shape shape_of(const vkvit__tensor *t) {
    vkvit_shape s = {.ndim = t->ndim};
    for (uint32_t i = 0; i < t->ndim; i++) s.dims[i] = t->shape[i];
    return s;
}

static void build_graph(vkvit_session *s) {
    vkvit__graph *g = &s->graph;
    s->condition = VKVIT_NONE;
    switch (s->model->cfg.arch) {
    case VKVIT_ARCH_VIT5: vkvit__vit5_build(g, s->model, s->batch, &s->input, &s->output); break;
    case VKVIT_ARCH_VIL: vkvit__vil_build(g, s->model, s->batch, &s->input, &s->output); break;
    case VKVIT_ARCH_RESNET:
        vkvit__resnet_build(g, s->model, s->batch, &s->input, &s->condition, &s->output);
        break;
    default:
        vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "session: architecture %s has no kernels yet",
                          vkvit__arch_name(s->model->cfg.arch));
    }
}

static vkvit__record_target target_of(const vkvit_session *s) {
    return (vkvit__record_target){
        .weights = &s->model->buffer,
        .weights_f16 = s->model->has_f16 ? &s->model->buffer_f16 : NULL,
        .arena = &s->arena,
    };
}

static void record(vkvit_session *s) {
    vkvit_ctx *ctx = s->ctx;
    VkCommandBuffer cmd = s->cmd;
    const vkvit__tensor *in = &s->graph.tensors[s->input], *out = &s->graph.tensors[s->output];
    vkvit__record_target tg = target_of(s);

    /* 1. Order against every earlier submission on the queue that touched the arena. */
    vkvit__cmd_barrier_prior_work(ctx, cmd);

    /* 2. Inputs. */
    if (!s->direct) {
        VkBufferCopy region = {.srcOffset = 0, .dstOffset = in->offset, .size = in->bytes};
        ctx->vk.vkCmdCopyBuffer(cmd, s->in_staging.buffer, s->arena.buffer, 1, &region);
        vkvit__cmd_barrier(ctx, cmd, &s->arena, in->offset, in->bytes, VK_PIPELINE_STAGE_TRANSFER_BIT,
                           VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
        if (s->condition != VKVIT_NONE) {
            const vkvit__tensor *c = &s->graph.tensors[s->condition];
            VkBufferCopy cr = {.srcOffset = 0, .dstOffset = c->offset, .size = c->bytes};
            ctx->vk.vkCmdCopyBuffer(cmd, s->cond_staging.buffer, s->arena.buffer, 1, &cr);
            vkvit__cmd_barrier(ctx, cmd, &s->arena, c->offset, c->bytes, VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                               VK_ACCESS_SHADER_READ_BIT);
        }
    }
    /* 3. The graph. */
    vkvit__record_nodes(ctx, &s->graph, &tg, &s->rec, cmd);
    /* 4. Output. */
    if (!s->direct) {
        vkvit__cmd_barrier(ctx, cmd, &s->arena, out->offset, out->bytes, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
        VkBufferCopy region = {.srcOffset = out->offset, .dstOffset = 0, .size = out->bytes};
        ctx->vk.vkCmdCopyBuffer(cmd, s->arena.buffer, s->out_staging.buffer, 1, &region);
        vkvit__cmd_barrier(ctx, cmd, &s->out_staging, 0, out->bytes, VK_PIPELINE_STAGE_TRANSFER_BIT,
                           VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    } else {
        vkvit__cmd_barrier(ctx, cmd, &s->arena, out->offset, out->bytes, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    }
}

vkvit_result vkvit_session_create(vkvit_model *model, const vkvit_session_desc *desc_in, vkvit_session **out) {
    vkvit_result res = VKVIT_OK;
    vkvit__error_clear();
    if (!out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_create: out is NULL");
    *out = NULL;
    if (!model) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_create: model is NULL");
    vkvit_session_desc desc = desc_in ? *desc_in : (vkvit_session_desc){0};
    vkvit_ctx *ctx = model->ctx;
    if (desc.batch == 0) desc.batch = 1;
    if (desc.batch > 4096)
        return vkvit__ctx_fail(ctx, vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                                                 "vkvit_session_create: batch %u is above the limit of 4096", desc.batch));
    if (desc.precision != VKVIT_PRECISION_DEFAULT && desc.precision != VKVIT_PRECISION_FP32 &&
        desc.precision != VKVIT_PRECISION_FP16)
        return vkvit__ctx_fail(ctx, vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                                                 "vkvit_session_create: unknown precision %d", (int)desc.precision));

    vkvit_session *s = calloc(1, sizeof *s);
    if (!s) return vkvit__ctx_fail(ctx, vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_session_create: out of memory"));
    s->model = model;
    s->ctx = ctx;
    s->batch = desc.batch;
    snprintf(s->label, sizeof s->label, "%s", desc.label ? desc.label : "vkvit session");
    vkvit__graph_init(&s->graph, ctx);
    if (desc.precision == VKVIT_PRECISION_FP16) {
        /* fp16 storage of the GEMM weights, fp32 activations and accumulation (DESIGN.md precision policy). */
        if ((res = vkvit__model_prepare_f16(model)) != VKVIT_OK) goto fail;
        s->graph.f16_weights = true;
    }

    build_graph(s);
    if ((res = vkvit__plan(&s->graph, &s->plan)) != VKVIT_OK) goto fail;
    if ((res = vkvit__buffer_create(ctx, s->plan.arena_bytes, VKVIT_MEM_DEVICE, "vkvit arena", &s->arena)) != VKVIT_OK)
        goto fail;
    s->direct = s->arena.mapped && s->arena.coherent;
    if (!s->direct) {
        const vkvit__tensor *in = &s->graph.tensors[s->input], *o = &s->graph.tensors[s->output];
        if ((res = vkvit__buffer_create(ctx, in->bytes, VKVIT_MEM_UPLOAD, "vkvit input", &s->in_staging)) != VKVIT_OK ||
            (res = vkvit__buffer_create(ctx, o->bytes, VKVIT_MEM_READBACK, "vkvit output", &s->out_staging)) != VKVIT_OK)
            goto fail;
        if (s->condition != VKVIT_NONE &&
            (res = vkvit__buffer_create(ctx, s->graph.tensors[s->condition].bytes, VKVIT_MEM_UPLOAD, "vkvit condition",
                                        &s->cond_staging)) != VKVIT_OK)
            goto fail;
    }
    vkvit__record_target tg = target_of(s);
    if ((res = vkvit__record_prepare(ctx, &s->graph, &tg, desc.profile != 0, &s->rec)) != VKVIT_OK) goto fail;

    VkCommandPoolCreateInfo pool_info = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                         .queueFamilyIndex = ctx->queue_family};
    VkCommandBufferAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                         .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    /* Signaled: "no run in flight", so destroy can always wait on it. */
    VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, .flags = VK_FENCE_CREATE_SIGNALED_BIT};
    VK_TRY(ctx->vk.vkCreateCommandPool(ctx->device, &pool_info, NULL, &s->pool));
    alloc.commandPool = s->pool;
    VK_TRY(ctx->vk.vkAllocateCommandBuffers(ctx->device, &alloc, &s->cmd));
    VK_TRY(ctx->vk.vkCreateFence(ctx->device, &fence_info, NULL, &s->fence));
    VK_TRY(ctx->vk.vkBeginCommandBuffer(s->cmd, &begin));
    record(s);
    VK_TRY(ctx->vk.vkEndCommandBuffer(s->cmd));
    *out = s;
    return VKVIT_OK;
fail:
    vkvit__error_prefix(res, "vkvit_session_create '%s'", s->label);
    vkvit_session_destroy(s);
    return vkvit__ctx_fail(ctx, res);
}

void vkvit_session_destroy(vkvit_session *s) {
    if (!s) return;
    vkvit_ctx *ctx = s->ctx;
    if (s->fence) {
        ctx->vk.vkWaitForFences(ctx->device, 1, &s->fence, VK_TRUE, UINT64_MAX);
        ctx->vk.vkDestroyFence(ctx->device, s->fence, NULL);
    }
    if (s->pool) ctx->vk.vkDestroyCommandPool(ctx->device, s->pool, NULL);
    vkvit__record_free(ctx, &s->rec);
    vkvit__buffer_destroy(ctx, &s->arena);
    vkvit__buffer_destroy(ctx, &s->in_staging);
    vkvit__buffer_destroy(ctx, &s->out_staging);
    vkvit__buffer_destroy(ctx, &s->cond_staging);
    vkvit__graph_free(&s->graph);
    free(s);
}

vkvit_shape vkvit_session_input_shape(const vkvit_session *s) {
    return s ? shape_of(&s->graph.tensors[s->input]) : (vkvit_shape){0};
}

vkvit_shape vkvit_session_condition_shape(const vkvit_session *s) {
    return s && s->condition != VKVIT_NONE ? shape_of(&s->graph.tensors[s->condition]) : (vkvit_shape){0};
}

vkvit_shape vkvit_session_output_shape(const vkvit_session *s) {
    return s ? shape_of(&s->graph.tensors[s->output]) : (vkvit_shape){0};
}

static vkvit_result check_count(const vkvit_session *s, uint32_t t, size_t count, const char *fn) {
    uint64_t n = vkvit__numel(&s->graph.tensors[t]);
    if (count != n)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': %zu floats given, the tensor holds %llu", fn,
                            s->label, count, (unsigned long long)n);
    return VKVIT_OK;
}

vkvit_result vkvit_session_set_input(vkvit_session *s, const float *src, size_t count) {
    if (!s || !src) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_set_input: NULL argument");
    vkvit_result res = check_count(s, s->input, count, "vkvit_session_set_input");
    if (res != VKVIT_OK) return res;
    /* Earlier runs have completed (run waits), so the host may write. */
    const vkvit__tensor *in = &s->graph.tensors[s->input];
    void *dst = s->direct ? (uint8_t *)s->arena.mapped + in->offset : s->in_staging.mapped;
    memcpy(dst, src, count * sizeof(float));
    return VKVIT_OK;
}

vkvit_result vkvit_session_set_condition(vkvit_session *s, const float *src, size_t count) {
    if (!s || !src) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_set_condition: NULL argument");
    if (s->condition == VKVIT_NONE)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "vkvit_session_set_condition '%s': model '%s' takes no condition (its condition mixer is "
                            "identity)", s->label, s->model->label);
    vkvit_result res = check_count(s, s->condition, count, "vkvit_session_set_condition");
    if (res != VKVIT_OK) return res;
    const vkvit__tensor *c = &s->graph.tensors[s->condition];
    void *dst = s->direct ? (uint8_t *)s->arena.mapped + c->offset : s->cond_staging.mapped;
    memcpy(dst, src, count * sizeof(float));
    s->condition_set = true;
    return VKVIT_OK;
}

/* A model with an active condition mixer cannot run before its condition was set. */
static vkvit_result check_condition(const vkvit_session *s, const char *fn) {
    if (s->condition != VKVIT_NONE && !s->condition_set)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "%s '%s': model '%s' needs a condition; call vkvit_session_set_condition first", fn,
                            s->label, s->model->label);
    return VKVIT_OK;
}

vkvit_result vkvit_session_run(vkvit_session *s) {
    if (!s) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_run: session is NULL");
    if (check_condition(s, "vkvit_session_run") != VKVIT_OK) return VKVIT_ERROR_INVALID_ARGUMENT;
    vkvit_ctx *ctx = s->ctx;
    vkvit_result res = VKVIT_OK;
    VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &s->cmd};
    VK_TRY(ctx->vk.vkResetFences(ctx->device, 1, &s->fence));
    VK_TRY(ctx->vk.vkQueueSubmit(ctx->queue, 1, &submit, s->fence));
    VK_TRY(ctx->vk.vkWaitForFences(ctx->device, 1, &s->fence, VK_TRUE, UINT64_MAX));
    s->ran = true;
    return VKVIT_OK;
fail:
    vkvit__error_prefix(res, "vkvit_session_run '%s'", s->label);
    return vkvit__ctx_fail(ctx, res);
}

vkvit_result vkvit_session_record(vkvit_session *s, VkCommandBuffer cmd) {
    if (!s || !cmd) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_record: NULL argument");
    VkCommandBuffer own = s->cmd;
    s->cmd = cmd;
    record(s);
    s->cmd = own;
    s->ran = true; /* the caller waits for its own submission before reading the output */
    return VKVIT_OK;
}

vkvit_result vkvit_session_get_output(vkvit_session *s, float *dst, size_t count) {
    if (!s || !dst) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_output: NULL argument");
    vkvit_result res = check_count(s, s->output, count, "vkvit_session_get_output");
    if (res != VKVIT_OK) return res;
    if (!s->ran) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_output '%s': no run yet", s->label);
    const vkvit__tensor *o = &s->graph.tensors[s->output];
    const vkvit__buffer *b = s->direct ? &s->arena : &s->out_staging;
    uint64_t off = s->direct ? o->offset : 0;
    if (!b->coherent) {
        VkMappedMemoryRange range = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = b->memory, .size = VK_WHOLE_SIZE};
        s->ctx->vk.vkInvalidateMappedMemoryRanges(s->ctx->device, 1, &range);
    }
    memcpy(dst, (const uint8_t *)b->mapped + off, count * sizeof(float));
    return VKVIT_OK;
}

vkvit_result vkvit_session_get_stats(const vkvit_session *s, vkvit_session_stats *out) {
    if (!s || !out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_stats: NULL argument");
    *out = (vkvit_session_stats){
        .arena_bytes = s->plan.arena_bytes,
        .sum_activation_bytes = s->plan.sum_activation_bytes,
        .largest_activation_bytes = s->plan.largest_activation_bytes,
        .weight_bytes = s->model->buffer.size,
        .nodes = s->graph.n_nodes,
        .barriers = s->rec.n_barriers,
        .pipelines = s->rec.n_kernels,
    };
    return VKVIT_OK;
}

vkvit_result vkvit_session_profile(const vkvit_session *s, vkvit_profile_entry *out, uint32_t cap, uint32_t *count) {
    if (!s || !count) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_profile: NULL argument");
    *count = s->graph.n_nodes;
    if (!s->rec.profiled)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_profile '%s': created without profile = 1", s->label);
    if (!s->ran) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_profile '%s': no run yet", s->label);
    uint32_t n = VKVIT_MIN(cap, s->graph.n_nodes);
    for (uint32_t i = 0; i < n && out; i++) {
        uint64_t ticks[2] = {0, 0}; /* available: the run waited for its fence */
        VkResult vr = s->ctx->vk.vkGetQueryPoolResults(s->ctx->device, s->rec.timer.pool, 2 * i, 2, sizeof ticks, ticks,
                                                       sizeof ticks[0], VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
        if (vr != VK_SUCCESS) return vkvit__vk_error(vr, "vkGetQueryPoolResults", __func__, s->label);
        double ms = (double)(ticks[1] - ticks[0]) * s->ctx->info.timestamp_period_ns * 1e-6;
        out[i] = (vkvit_profile_entry){s->graph.nodes[i].label, s->graph.nodes[i].kind, ms};
    }
    return VKVIT_OK;
}
