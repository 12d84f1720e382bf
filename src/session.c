/* vkvit_session: build the architecture's graph, plan one arena, create every pipeline and descriptor set, record
 * the whole inference once. A run is one queue submission of that command buffer.
 *
 * Recorded command buffer:
 *   1. a memory dependency on everything submitted before (the previous run wrote the arena this one reuses)
 *   2. inputs (the image, and the condition of resnet models with a condition mixer): host-visible arena (UMA,
 *      CPU devices): the host writes them in place before the submit; otherwise a copy from a persistent
 *      host-visible staging buffer per input
 *   3. every node, with data-flow barriers (graph/record.c). Sessions that take pictures start with the
 *      pre-processing nodes (src/ops/preprocess.c: per slot, two indirect dispatches whose counts and geometry
 *      set_images writes into mapped memory; 0 for a slot without a picture, which keeps what step 2 put there);
 *      vkvit_session_record_ex records the host's VkImages / VkBuffers through the same nodes of their slots.
 *      With top_k, the softmax + top-K node is the last
 *   4. outputs (logits, then the top-K words): made visible to the host, through a readback buffer when the arena
 *      is not host-visible; or, for record_ex with a host output, copied into the host's buffer */
#include "coopmat_guard.h"
#include "graph/graph.h"
#include "ops/preprocess.h"
#include "ops/topk.h"
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
    uint32_t sub_batch;                     /* images per sub-network (= batch unless a device limit split it) */
    bool holds_weights;                     /* counted by the model's image for graph.opts.weights
                                               (vkvit__model_acquire; given back by destroy) */
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
    bool timed;                             /* the timestamps are the last own run's (run / submit), not a host
                                               recording's, whose submission vkvit cannot see complete */
    bool profile;                           /* desc.profile (a re-prepared recording keeps it) */
    /* Images and top-K (src/ops): the pre-processing nodes of set_images / record_ex, and the top-K output. */
    vkvit__imgproc img;                     /* img.ctx NULL until created (create_imgproc) */
    uint32_t top_k;                         /* 0 = none */
    uint32_t topk;                          /* graph tensor [2, B, top_k] words (classes, probabilities), or VKVIT_NONE */
    bool want_features;                     /* desc.features */
    uint32_t features;                      /* graph tensor [B, F]: the pooled pre-logits features, or VKVIT_NONE */
};

static vkvit_shape shape_of(const vkvit__tensor *t) {
    vkvit_shape s = {.ndim = t->ndim};
    for (uint32_t i = 0; i < t->ndim; i++) s.dims[i] = t->shape[i];
    return s;
}

/* Where host output tensor t starts in out_staging: the logits, then the top-K words, then the features, back to
 * back (record(), step 4). With t = VKVIT_NONE: the staging buffer's whole size. */
static uint64_t staged_offset(const vkvit_session *s, uint32_t t) {
    const uint32_t order[3] = {s->output, s->topk, s->features};
    uint64_t off = 0;
    for (uint32_t i = 0; i < 3 && order[i] != t; i++)
        if (order[i] != VKVIT_NONE) off += s->graph.tensors[order[i]].bytes;
    return off;
}

/* Copies `bytes` of host output tensor t, from byte `at` on, to dst: from the arena in place (direct) or from
 * out_staging. */
static void read_host_output(const vkvit_session *s, uint32_t t, uint64_t at, void *dst, size_t bytes) {
    const vkvit__buffer *b = s->direct ? &s->arena : &s->out_staging;
    const uint64_t off = (s->direct ? s->graph.tensors[t].offset : staged_offset(s, t)) + at;
    if (!b->coherent) {
        VkMappedMemoryRange range = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = b->memory,
                                     .size = VK_WHOLE_SIZE};
        s->ctx->vk.vkInvalidateMappedMemoryRanges(s->ctx->device, 1, &range);
    }
    memcpy(dst, (const uint8_t *)b->mapped + off, bytes);
}

/* One network for `batch` images: its input, condition (VKVIT_NONE when the model takes none), logits and, when
 * the session outputs them, a copy of the pooled features the classifier head reads (else VKVIT_NONE). */
static void build_network(vkvit_session *s, uint32_t batch, uint32_t *in, uint32_t *cond, uint32_t *out,
                          uint32_t *features) {
    vkvit__graph *g = &s->graph;
    *cond = VKVIT_NONE;
    *features = VKVIT_NONE;
    g->features = VKVIT_NONE;
    /* The architecture's network (src/arch/<name>.c -> its builder in src/modules/). */
    vkvit__arch_ops_of(s->model->cfg.arch)->build(g, s->model, batch, in, cond, out);
    if (!s->want_features || g->error) return;
    if (g->features == VKVIT_NONE) {
        vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "session: this architecture has no pooled features");
        return;
    }
    /* A copy into an output tensor of its own: the head's input may be a view or be reused by the planner. */
    const vkvit__tensor f = vkvit__graph_get(g, g->features);
    const uint32_t dim = f.shape[f.ndim - 1];
    *features = vkvit__graph_tensor(g, VKVIT_TENSOR_OUTPUT, "features", 2, (uint32_t[2]){batch, dim});
    vkvit__op_copy_rows(g, "features", (vkvit__mat){g->features, 0, dim, 0}, (vkvit__mat){*features, 0, dim, 0}, 1,
                        batch, dim);
}

/* A tensor for the whole batch shaped like the sub-batch tensor `part` (batch first). */
static uint32_t whole_batch_like(vkvit_session *s, uint32_t part) {
    vkvit__graph *g = &s->graph;
    if (g->error) return VKVIT_NONE;
    const vkvit__tensor t = vkvit__graph_get(g, part);
    uint32_t shape[VKVIT_MAX_DIMS];
    memcpy(shape, t.shape, sizeof shape);
    shape[0] = s->batch;
    return vkvit__graph_tensor(g, t.kind, t.name, t.ndim, shape);
}

/* Connects sub-batch tensor `part` (images first_image ..) to the whole-batch tensor `whole`: as a view when its
 * byte offset meets the device's storage-buffer offset alignment, else (an odd image size, logits of 10 classes)
 * through a copy node, which for an input must run before the sub-network that reads it (nodes[first_node]). */
static void attach_part(vkvit_session *s, uint32_t whole, uint32_t part, uint32_t first_image, bool is_input,
                        uint32_t first_node) {
    vkvit__graph *g = &s->graph;
    if (g->error) return;
    const vkvit__tensor t = vkvit__graph_get(g, part);
    const uint32_t per_image = (uint32_t)(vkvit__numel(&t) / t.shape[0]);
    const uint64_t offset = (uint64_t)first_image * per_image;
    if (offset * 4 % VKVIT_MAX(s->ctx->limits.minStorageBufferOffsetAlignment, 4) == 0) {
        vkvit__graph_rebase(g, part, whole, offset);
        return;
    }
    g->tensors[part].kind = VKVIT_TENSOR_ACTIVATION; /* planned like any intermediate */
    const vkvit__mat whole_rows = {whole, (uint32_t)offset, per_image, 0}, part_rows = {part, 0, per_image, 0};
    vkvit__op_copy_rows(g, is_input ? "split input" : "gather output", is_input ? whole_rows : part_rows,
                        is_input ? part_rows : whole_rows, 1, t.shape[0], per_image);
    if (is_input) vkvit__graph_move_last_node(g, first_node);
}

/* The batch as ceil(batch / sub) networks of at most `sub` images, back to back in one graph (the planner reuses
 * one sub-network's activations for the next). Their inputs, conditions and logits are parts of whole-batch
 * tensors, so the host sees one input and one output whatever `sub` is. */
static void build_sub_batches(vkvit_session *s, uint32_t sub) {
    if (sub >= s->batch) {
        build_network(s, s->batch, &s->input, &s->condition, &s->output, &s->features);
        return;
    }
    vkvit__graph *g = &s->graph;
    for (uint32_t first = 0; first < s->batch && !g->error; first += sub) {
        uint32_t in, cond, out, feat, first_node = g->n_nodes;
        build_network(s, VKVIT_MIN(sub, s->batch - first), &in, &cond, &out, &feat);
        if (first == 0) {
            s->input = whole_batch_like(s, in);
            s->condition = cond == VKVIT_NONE ? VKVIT_NONE : whole_batch_like(s, cond);
            s->output = whole_batch_like(s, out);
            s->features = feat == VKVIT_NONE ? VKVIT_NONE : whole_batch_like(s, feat);
        }
        attach_part(s, s->input, in, first, true, first_node);
        if (cond != VKVIT_NONE) attach_part(s, s->condition, cond, first, true, first_node);
        attach_part(s, s->output, out, first, false, first_node);
        if (feat != VKVIT_NONE) attach_part(s, s->features, feat, first, false, first_node);
    }
}

/* Builds the session's graph. Dispatch sizes and activation sizes grow with the batch, and a device bounds both
 * (maxComputeWorkGroupCount, maxStorageBufferRange: 128 MiB on lavapipe and some mobile GPUs). When the whole
 * batch exceeds either, the batch is halved until every dispatch and every binding fits, and runs as sub-batches
 * (one submission still); what one image alone exceeds is refused with a sentence. */
static void build_graph(vkvit_session *s) {
    vkvit__graph *g = &s->graph;
    const uint64_t range = s->ctx->limits.maxStorageBufferRange;
    uint32_t sub = s->batch;
    for (;;) {
        build_sub_batches(s, sub);
        uint32_t widest_t = VKVIT_NONE;
        const uint64_t widest = g->error ? 0 : vkvit__graph_max_activation_binding(g, &widest_t);
        const bool too_large = g->grid_too_large || widest > range;
        if (!too_large) break;
        if (sub == 1) {
            if (!g->error)
                vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "session: activation '%s' is %llu bytes for one image, "
                                  "more than the device's maxStorageBufferRange of %llu bytes",
                                  g->tensors[widest_t].name, (unsigned long long)widest, (unsigned long long)range);
            break;
        }
        sub = (sub + 1) / 2;
        vkvit__graph_reset(g); /* same ctx and build options */
    }
    s->sub_batch = sub;
    if (sub < s->batch && !g->error)
        vkvit__ctx_log(s->ctx, VKVIT_LOG_INFO, "session '%s': batch %u runs as %u sub-batches of at most %u images "
                       "(device dispatch / storage-buffer limits)", s->label, s->batch,
                       (s->batch + sub - 1) / sub, sub);
    /* Softmax + top-K on the GPU after the classifier head (vkvit_session_get_top_k). */
    s->topk = VKVIT_NONE;
    if (s->top_k && !g->error)
        s->topk = vkvit__op_topk(g, "top_k", s->output, s->batch, g->tensors[s->output].shape[1], s->top_k);
}

static vkvit__record_target target_of(const vkvit_session *s) {
    vkvit__record_target tg = {
        .weights = vkvit__model_image(s->model, s->graph.opts.weights),
        .arena = &s->arena,
    };
    if (s->img.ctx) vkvit__imgproc_target(&s->img, &tg);
    return tg;
}

/* Step 4 with a host output buffer (vkvit_session_record_ex): the logits or the top-K words copied into it. */
static void record_host_output(vkvit_session *s, VkCommandBuffer cmd, const vkvit_host_output *ho) {
    vkvit_ctx *ctx = s->ctx;
    const vkvit__tensor *o = &s->graph.tensors[ho->kind == VKVIT_OUTPUT_TOP_K ? s->topk : s->output];
    const vkvit__buffer host = {.buffer = ho->buffer};
    vkvit__cmd_barrier(ctx, cmd, &s->arena, o->offset, o->bytes, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    VkBufferCopy region = {.srcOffset = o->offset, .dstOffset = ho->offset, .size = o->bytes};
    ctx->vk.vkCmdCopyBuffer(cmd, s->arena.buffer, ho->buffer, 1, &region);
    vkvit__cmd_barrier(ctx, cmd, &host, ho->offset, o->bytes, VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_ACCESS_TRANSFER_WRITE_BIT, ho->dst_stage ? ho->dst_stage : VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                       ho->dst_access ? ho->dst_access : VK_ACCESS_MEMORY_READ_BIT);
}

/* io: the host inputs and output of vkvit_session_record_ex (already checked), or NULL. */
static void record(vkvit_session *s, const vkvit_record_desc *io) {
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
                           VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT); /* + host inputs' slots below */
        if (s->condition != VKVIT_NONE) {
            const vkvit__tensor *c = &s->graph.tensors[s->condition];
            VkBufferCopy cr = {.srcOffset = 0, .dstOffset = c->offset, .size = c->bytes};
            ctx->vk.vkCmdCopyBuffer(cmd, s->cond_staging.buffer, s->arena.buffer, 1, &cr);
            vkvit__cmd_barrier(ctx, cmd, &s->arena, c->offset, c->bytes, VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                               VK_ACCESS_SHADER_READ_BIT);
        }
    }
    /* 3. The graph: pre-processing first (host images and buffers of vkvit_session_record_ex through the nodes of
     * their slots), then the network. */
    const vkvit__node_swap *swaps = NULL;
    const uint32_t n_swaps = s->img.ctx ? vkvit__imgproc_prepare_inputs(&s->img, cmd, io, &swaps) : 0;
    vkvit__record_nodes_swapped(ctx, &s->graph, &tg, &s->rec, cmd, swaps, n_swaps);
    /* 4. Output: the logits, then the top-K words when the session has them (out_staging holds both, back to back),
     * or what the host asked for in its own buffer. */
    if (io && io->output.kind != VKVIT_OUTPUT_NONE) {
        record_host_output(s, cmd, &io->output);
        return;
    }
    uint64_t staged = 0;
    const uint32_t host_outputs[3] = {s->output, s->topk, s->features}; /* out_staging's order (staged_offset) */
    for (uint32_t i = 0; i < 3; i++) {
        if (host_outputs[i] == VKVIT_NONE) continue;
        out = &s->graph.tensors[host_outputs[i]];
        if (!s->direct) {
            vkvit__cmd_barrier(ctx, cmd, &s->arena, out->offset, out->bytes, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                               VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
            VkBufferCopy region = {.srcOffset = out->offset, .dstOffset = staged, .size = out->bytes};
            ctx->vk.vkCmdCopyBuffer(cmd, s->arena.buffer, s->out_staging.buffer, 1, &region);
            vkvit__cmd_barrier(ctx, cmd, &s->out_staging, staged, out->bytes, VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
            staged += out->bytes;
        } else {
            vkvit__cmd_barrier(ctx, cmd, &s->arena, out->offset, out->bytes, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                               VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
        }
    }
}

/* Pictures can be pre-processed into the input when it is [B, H, W, 3] with the model file's preprocess size. */
static bool takes_images(const vkvit_session *s) {
    const vkvit__preprocess *pp = &s->model->cfg.preprocess;
    const vkvit__tensor *in = &s->graph.tensors[s->input];
    return in->ndim == 4 && in->shape[1] == pp->image_size[0] && in->shape[2] == pp->image_size[1] && in->shape[3] == 3;
}

/* The pre-processing nodes for set_images / record_ex, writing the input tensor in the arena as the model file's
 * `preprocess` says (src/ops/preprocess.c), before the network. Created with the session when max_image_pixels > 0
 * (call after planning, before preparing the recording), else by the first set_images (its documented exception,
 * which then prepares and records the session again), so sessions that never see a picture pay nothing. */
static vkvit_result create_imgproc(vkvit_session *s, uint64_t max_image_pixels) {
    const vkvit__preprocess *pp = &s->model->cfg.preprocess;
    vkvit__imgproc_config cfg = {
        .crop_h = pp->image_size[0], .crop_w = pp->image_size[1], .resize_shorter = pp->resize_shorter,
        .bicubic = pp->interpolation == VKVIT_INTERP_BICUBIC,
    };
    for (int c = 0; c < 3; c++) {
        cfg.mean[c] = (float)pp->mean[c];
        cfg.std[c] = (float)pp->std[c];
    }
    vkvit_result res = vkvit__imgproc_create(s->ctx, &cfg, s->batch, max_image_pixels, &s->img);
    if (res != VKVIT_OK) return res;
    const vkvit__graph_mark before = vkvit__graph_mark_now(&s->graph);
    vkvit__imgproc_add_nodes(&s->img, &s->graph, s->input, &s->arena);
    if ((res = vkvit__graph_error(&s->graph)) != VKVIT_OK) {
        /* Half-added nodes (they stay at the end on failure) and the sticky error go: the session is as before. */
        vkvit__graph_rollback(&s->graph, before);
        vkvit__imgproc_destroy(&s->img);
    }
    return res;
}

/* Records the session's own command buffer again (idle session): after set_images replaced a buffer the
 * pre-processing nodes bind, or added them. */
static vkvit_result rerecord(vkvit_session *s) {
    vkvit_result res = VKVIT_OK;
    vkvit_ctx *ctx = s->ctx;
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VK_TRY(ctx->vk.vkResetCommandPool(ctx->device, s->pool, 0));
    VK_TRY(ctx->vk.vkBeginCommandBuffer(s->cmd, &begin));
    record(s, NULL);
    VK_TRY(ctx->vk.vkEndCommandBuffer(s->cmd));
fail:
    return res;
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
        desc.precision != VKVIT_PRECISION_FP16 && desc.precision != VKVIT_PRECISION_FP16_MATH)
        return vkvit__ctx_fail(ctx, vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                                                 "vkvit_session_create: unknown precision %d", (int)desc.precision));

    vkvit_session *s = calloc(1, sizeof *s);
    if (!s) return vkvit__ctx_fail(ctx, vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_session_create: out of memory"));
    s->model = model;
    atomic_fetch_add(&model->sessions, 1); /* vkvit_session_destroy (on every path from here) gives it back */
    s->ctx = ctx;
    s->batch = desc.batch;
    snprintf(s->label, sizeof s->label, "%s", desc.label ? desc.label : "vkvit session");
    s->top_k = desc.top_k;
    s->want_features = desc.features != 0;
    s->features = VKVIT_NONE;
    const vkvit__build_opts opts = vkvit__build_opts_of(desc.precision); /* this graph's and every rebuild's */
    vkvit__graph_init_opts(&s->graph, ctx, &opts);
    if (desc.precision == VKVIT_PRECISION_FP16_MATH && !(ctx->caps.fp16_math && ctx->caps.fp16_in_use)) {
        const char *missing =
            ctx->caps.disabled_f16 ? "fp16, which is disabled (VKVIT_DISABLE_F16=1 or ctx desc disable_f16)"
            : !ctx->caps.fp16_math ? "shaderFloat16, which this device does not offer (or the host did not enable); "
                                     "use fp16 or fp32"
                                   : "storageBuffer16BitAccess, which this device does not offer (or the host did not "
                                     "enable); use fp32";
        res = vkvit__error(VKVIT_ERROR_UNSUPPORTED, "precision fp16-math needs %s", missing);
        goto fail;
    }
    /* Phase times for the INFO log (start-up: docs/embedding.md). */
    const uint64_t t0 = vkvit__now_ns();
    const uint64_t pipeline_ns0 = atomic_load(&ctx->pipeline_ns);
    const uint32_t pipelines0 = atomic_load(&ctx->counters.pipelines);
    double guard_ms = 0, f16_ms = 0;
    if (desc.precision == VKVIT_PRECISION_FP16_MATH) { /* before the GEMMs pick kernels */
        vkvit__coopmat_guard(ctx);
        guard_ms = vkvit__ms_since(t0);
    }
    {
        /* The model's weights in this session's dtype (fp16 GEMM weights for FP16 and FP16_MATH: include/vkvit.h,
         * vkvit_precision), made from the file's bytes unless another session made them (src/model/model.h). */
        const uint64_t t_f16 = vkvit__now_ns();
        if ((res = vkvit__model_acquire(model, opts.weights)) != VKVIT_OK) goto fail;
        s->holds_weights = true;
        f16_ms = vkvit__ms_since(t_f16);
    }

    build_graph(s);
    if ((res = vkvit__plan(&s->graph, &s->plan)) != VKVIT_OK) goto fail;
    if ((res = vkvit__buffer_create(ctx, s->plan.arena_bytes, VKVIT_MEM_DEVICE, "vkvit arena", &s->arena)) != VKVIT_OK)
        goto fail;
    s->direct = s->arena.mapped && s->arena.coherent;
    if (!s->direct) {
        const vkvit__tensor *in = &s->graph.tensors[s->input];
        if ((res = vkvit__buffer_create(ctx, in->bytes, VKVIT_MEM_UPLOAD, "vkvit input", &s->in_staging)) != VKVIT_OK ||
            (res = vkvit__buffer_create(ctx, staged_offset(s, VKVIT_NONE), VKVIT_MEM_READBACK, "vkvit output",
                                        &s->out_staging)) != VKVIT_OK)
            goto fail;
        if (s->condition != VKVIT_NONE &&
            (res = vkvit__buffer_create(ctx, s->graph.tensors[s->condition].bytes, VKVIT_MEM_UPLOAD, "vkvit condition",
                                        &s->cond_staging)) != VKVIT_OK)
            goto fail;
    }
    if (desc.max_image_pixels && takes_images(s) && (res = create_imgproc(s, desc.max_image_pixels)) != VKVIT_OK)
        goto fail;
    s->profile = desc.profile != 0;
    vkvit__record_target tg = target_of(s);
    const uint64_t t_prepare = vkvit__now_ns();
    if ((res = vkvit__record_prepare(ctx, &s->graph, &tg, desc.profile != 0, &s->rec)) != VKVIT_OK) goto fail;
    const double prepare_ms = vkvit__ms_since(t_prepare);
    const uint64_t t_record = vkvit__now_ns();

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
    record(s, NULL);
    VK_TRY(ctx->vk.vkEndCommandBuffer(s->cmd));
    /* CPU devices compile each shader at its first dispatch: do that here, not in the first run. */
    const double record_ms = vkvit__ms_since(t_record);
    if (ctx->caps.cpu_device && (res = vkvit__record_warmup(ctx, &s->graph, &tg, &s->rec, 0)) != VKVIT_OK) goto fail;
    vkvit__ctx_log(ctx, VKVIT_LOG_INFO, "session '%s' ready in %.1f ms (cooperative-matrix self-check %.1f, model "
                   "weights %.1f, %u pipelines (%u new, the others shared with the ctx's other sessions) and "
                   "descriptor sets %.1f of which vkCreateComputePipelines %.1f, recording %.1f, CPU warm-up run "
                   "%.1f)", s->label, vkvit__ms_since(t0), guard_ms, f16_ms, s->rec.n_kernels,
                   atomic_load(&ctx->counters.pipelines) - pipelines0, prepare_ms,
                   (double)(atomic_load(&ctx->pipeline_ns) - pipeline_ns0) * 1e-6, record_ms,
                   vkvit__ms_since(t_record) - record_ms);
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
    vkvit_model *model = s->model;
    if (s->fence) {
        ctx->vk.vkWaitForFences(ctx->device, 1, &s->fence, VK_TRUE, UINT64_MAX);
        ctx->vk.vkDestroyFence(ctx->device, s->fence, NULL);
    }
    if (s->pool) ctx->vk.vkDestroyCommandPool(ctx->device, s->pool, NULL);
    vkvit__imgproc_destroy(&s->img);
    vkvit__record_free(ctx, &s->rec);
    vkvit__buffer_destroy(ctx, &s->arena);
    vkvit__buffer_destroy(ctx, &s->in_staging);
    vkvit__buffer_destroy(ctx, &s->out_staging);
    vkvit__buffer_destroy(ctx, &s->cond_staging);
    if (s->holds_weights) vkvit__model_release(model, s->graph.opts.weights);
    vkvit__graph_free(&s->graph);
    free(s);
    atomic_fetch_sub(&model->sessions, 1); /* last: the model outlives everything above */
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

/* Every failed call on a session also reaches its ctx's log callback (include/vkvit.h ERRORS) as one ERROR line:
 * the public functions below pass their result through here. A NULL session has no ctx to tell. */
static vkvit_result logged(const vkvit_session *s, vkvit_result res) {
    return res != VKVIT_OK && s ? vkvit__ctx_fail(s->ctx, res) : res;
}

/* "fn 'label'": how a session call's sentences begin, for the helpers that take only `fn` (src/ops/preprocess.c). */
typedef struct call_subject {
    char text[sizeof "vkvit_session_record_ex ''" + sizeof ((vkvit_session *)0)->label];
} call_subject;

static call_subject subject_of(const vkvit_session *s, const char *fn) {
    call_subject c;
    snprintf(c.text, sizeof c.text, "%s '%s'", fn, s->label);
    return c;
}

static vkvit_result check_count(const vkvit_session *s, uint32_t t, size_t count, const char *fn) {
    uint64_t n = vkvit__numel(&s->graph.tensors[t]);
    if (count != n)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': %zu floats given, the tensor holds %llu", fn,
                            s->label, count, (unsigned long long)n);
    return VKVIT_OK;
}

/* A session submitted with vkvit_session_submit is in flight until its fence signals; its arena and staging
 * buffers must not be touched (or resubmitted) until then. Never waits. */
static vkvit_result check_idle(const vkvit_session *s, const char *fn) {
    VkResult vr = s->ctx->vk.vkGetFenceStatus(s->ctx->device, s->fence);
    if (vr == VK_SUCCESS) return VKVIT_OK;
    if (vr == VK_NOT_READY)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "%s '%s': the session is still in flight from vkvit_session_submit; wait for its semaphore "
                            "or fence (or vkvit_session_poll() == 1) first", fn, s->label);
    return vkvit__vk_error(vr, "vkGetFenceStatus", fn, s->label);
}

static vkvit_result set_input(vkvit_session *s, const float *src, size_t count) {
    if (!s || !src) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_set_input: NULL argument");
    vkvit_result res = check_count(s, s->input, count, "vkvit_session_set_input");
    if (res != VKVIT_OK) return res;
    if ((res = check_idle(s, "vkvit_session_set_input")) != VKVIT_OK) return res;
    /* Earlier runs have completed (run waits), so the host may write. */
    const vkvit__tensor *in = &s->graph.tensors[s->input];
    void *dst = s->direct ? (uint8_t *)s->arena.mapped + in->offset : s->in_staging.mapped;
    memcpy(dst, src, count * sizeof(float));
    vkvit__imgproc_clear(&s->img); /* every slot is set_input's now: no pre-processing overwrites it */
    return VKVIT_OK;
}

vkvit_result vkvit_session_set_input(vkvit_session *s, const float *src, size_t count) {
    return logged(s, set_input(s, src, count));
}

static vkvit_result set_condition(vkvit_session *s, const float *src, size_t count) {
    if (!s || !src) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_set_condition: NULL argument");
    if (s->condition == VKVIT_NONE)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "vkvit_session_set_condition '%s': model '%s' takes no condition (its condition mixer is "
                            "identity)", s->label, s->model->label);
    vkvit_result res = check_count(s, s->condition, count, "vkvit_session_set_condition");
    if (res != VKVIT_OK) return res;
    if ((res = check_idle(s, "vkvit_session_set_condition")) != VKVIT_OK) return res;
    const vkvit__tensor *c = &s->graph.tensors[s->condition];
    void *dst = s->direct ? (uint8_t *)s->arena.mapped + c->offset : s->cond_staging.mapped;
    memcpy(dst, src, count * sizeof(float));
    s->condition_set = true;
    return VKVIT_OK;
}

vkvit_result vkvit_session_set_condition(vkvit_session *s, const float *src, size_t count) {
    return logged(s, set_condition(s, src, count));
}

/* A model with an active condition mixer cannot run before its condition was set. */
static vkvit_result check_condition(const vkvit_session *s, const char *fn) {
    if (s->condition != VKVIT_NONE && !s->condition_set)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "%s '%s': model '%s' needs a condition; call vkvit_session_set_condition first", fn,
                            s->label, s->model->label);
    return VKVIT_OK;
}

static vkvit_result run(vkvit_session *s) {
    if (!s) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_run: session is NULL");
    if (check_condition(s, "vkvit_session_run") != VKVIT_OK) return VKVIT_ERROR_INVALID_ARGUMENT;
    vkvit_ctx *ctx = s->ctx;
    vkvit_result res = check_idle(s, "vkvit_session_run");
    if (res != VKVIT_OK) return res;
    VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &s->cmd};
    VK_TRY(ctx->vk.vkResetFences(ctx->device, 1, &s->fence));
    VK_TRY(vkvit__queue_submit(ctx, ctx->queue, 1, &submit, s->fence));
    VK_TRY(ctx->vk.vkWaitForFences(ctx->device, 1, &s->fence, VK_TRUE, UINT64_MAX));
    s->ran = true;
    s->timed = true;
    return VKVIT_OK;
fail:
    return vkvit__error_prefix(res, "vkvit_session_run '%s'", s->label);
}

vkvit_result vkvit_session_run(vkvit_session *s) {
    return logged(s, run(s));
}

vkvit_result vkvit_session_record(vkvit_session *s, VkCommandBuffer cmd) {
    if (!s || !cmd) return logged(s, vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_record: NULL argument"));
    VkCommandBuffer own = s->cmd;
    s->cmd = cmd;
    record(s, NULL);
    s->cmd = own;
    s->ran = true; /* the caller waits for its own submission before reading the output */
    s->timed = false;
    return VKVIT_OK;
}

static vkvit_result get_output(vkvit_session *s, float *dst, size_t count) {
    if (!s || !dst) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_output: NULL argument");
    vkvit_result res = check_count(s, s->output, count, "vkvit_session_get_output");
    if (res != VKVIT_OK) return res;
    if (!s->ran) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_output '%s': no run yet", s->label);
    if ((res = check_idle(s, "vkvit_session_get_output")) != VKVIT_OK) return res;
    read_host_output(s, s->output, 0, dst, count * sizeof(float));
    return VKVIT_OK;
}

vkvit_result vkvit_session_get_output(vkvit_session *s, float *dst, size_t count) {
    return logged(s, get_output(s, dst, count));
}

vkvit_shape vkvit_session_feature_shape(const vkvit_session *s) {
    return s && s->features != VKVIT_NONE ? shape_of(&s->graph.tensors[s->features]) : (vkvit_shape){0};
}

static vkvit_result get_features(vkvit_session *s, float *dst, size_t count) {
    if (!s || !dst) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_features: NULL argument");
    if (s->features == VKVIT_NONE)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_features '%s': the session was created "
                            "without features (vkvit_session_desc.features = 0)", s->label);
    vkvit_result res = check_count(s, s->features, count, "vkvit_session_get_features");
    if (res != VKVIT_OK) return res;
    if (!s->ran) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_features '%s': no run yet", s->label);
    if ((res = check_idle(s, "vkvit_session_get_features")) != VKVIT_OK) return res;
    read_host_output(s, s->features, 0, dst, count * sizeof(float));
    return VKVIT_OK;
}

vkvit_result vkvit_session_get_features(vkvit_session *s, float *dst, size_t count) {
    return logged(s, get_features(s, dst, count));
}

static vkvit_result get_stats(const vkvit_session *s, vkvit_session_stats *out) {
    if (!s || !out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_stats: NULL argument");
    *out = (vkvit_session_stats){
        .arena_bytes = s->plan.arena_bytes,
        .sum_activation_bytes = s->plan.sum_activation_bytes,
        .largest_activation_bytes = s->plan.largest_activation_bytes,
        .weight_bytes = vkvit__model_image(s->model, s->graph.opts.weights)->size,
        .nodes = s->graph.n_nodes,
        .barriers = s->rec.n_barriers,
        .pipelines = s->rec.n_kernels,
        .batch = s->batch,
        .sub_batch = s->sub_batch,
    };
    for (uint32_t n = 0; n < s->graph.n_nodes; n++) {
        const vkvit__node *node = &s->graph.nodes[n];
        for (int d = 0; d < 3; d++) out->largest_grid[d] = VKVIT_MAX(out->largest_grid[d], node->groups[d]);
        for (uint32_t b = 0; b < node->n_bindings; b++) {
            const vkvit__tensor *t = &s->graph.tensors[node->bindings[b].tensor];
            if (vkvit__is_weight(t->kind)) out->largest_weight_binding = VKVIT_MAX(out->largest_weight_binding, t->bytes);
        }
    }
    return VKVIT_OK;
}

vkvit_result vkvit_session_get_stats(const vkvit_session *s, vkvit_session_stats *out) {
    return logged(s, get_stats(s, out));
}

static vkvit_result read_profile(const vkvit_session *s, vkvit_profile_entry *out, uint32_t cap, uint32_t *count) {
    if (!s || !count) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_profile: NULL argument");
    if (!s->rec.profiled)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_profile '%s': created without profile = 1", s->label);
    if (!s->ran) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_profile '%s': no run yet", s->label);
    if (!s->timed)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_profile '%s': no times since the session was "
                            "last recorded into a host command buffer (vkvit_session_record / _record_ex, whose work "
                            "vkvit cannot see complete) or recorded again by its first set_images; run or submit "
                            "first", s->label);
    vkvit_result res = check_idle(s, "vkvit_session_profile");
    if (res != VKVIT_OK) return res;
    uint32_t n = VKVIT_MIN(cap, s->graph.n_nodes);
    for (uint32_t i = 0; i < n && out; i++) {
        uint64_t ticks[2] = {0, 0}; /* available: the run waited for its fence */
        VkResult vr = s->ctx->vk.vkGetQueryPoolResults(s->ctx->device, s->rec.timer.pool, 2 * i, 2, sizeof ticks, ticks,
                                                       sizeof ticks[0], VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
        if (vr != VK_SUCCESS) return vkvit__vk_error(vr, "vkGetQueryPoolResults", "vkvit_session_profile", s->label);
        double ms = (double)(ticks[1] - ticks[0]) * s->ctx->info.timestamp_period_ns * 1e-6;
        out[i] = (vkvit_profile_entry){s->graph.nodes[i].label, s->graph.nodes[i].kind, ms};
    }
    *count = s->graph.n_nodes;
    return VKVIT_OK;
}

vkvit_result vkvit_session_profile(const vkvit_session *s, vkvit_profile_entry *out, uint32_t cap, uint32_t *count) {
    return logged(s, read_profile(s, out, cap, count));
}

/* ------------------------------------------------------------------------------------------------------------
 * Submission on a host queue (include/vkvit.h "Submission on the host's queue"): the session's own pre-recorded
 * command buffer, host semaphores around it, no waiting. The session's fence tracks "in flight".
 * ------------------------------------------------------------------------------------------------------------ */

static vkvit_result check_submit_desc(const vkvit_session *s, const vkvit_submit_desc *d) {
    const char *fn = "vkvit_session_submit";
    if (d->wait_count > VKVIT_MAX_SUBMIT_SEMAPHORES || d->signal_count > VKVIT_MAX_SUBMIT_SEMAPHORES)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': %u waits and %u signals given, at most %u each", fn,
                            s->label, d->wait_count, d->signal_count, VKVIT_MAX_SUBMIT_SEMAPHORES);
    if ((d->wait_count && !d->waits) || (d->signal_count && !d->signals))
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "%s '%s': wait_count or signal_count is set but its array is NULL", fn, s->label);
    bool timeline = s->ctx->info.timeline_semaphore != 0;
    for (uint32_t i = 0; i < d->wait_count + d->signal_count; i++) {
        bool wait = i < d->wait_count;
        uint32_t j = wait ? i : i - d->wait_count;
        VkSemaphore sem = wait ? d->waits[j].semaphore : d->signals[j].semaphore;
        uint64_t value = wait ? d->waits[j].value : d->signals[j].value;
        if (!sem)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': %s[%u].semaphore is VK_NULL_HANDLE", fn,
                                s->label, wait ? "waits" : "signals", j);
        if (value && !timeline)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                                "%s '%s': %s[%u].value is %llu but ctx '%s' has no timeline semaphores (the device "
                                "lacks them or the host did not enable timelineSemaphore); use binary semaphores with "
                                "value 0 and a fence", fn, s->label, wait ? "waits" : "signals", j,
                                (unsigned long long)value, s->ctx->label);
    }
    return VKVIT_OK;
}

static vkvit_result submit(vkvit_session *s, const vkvit_submit_desc *desc) {
    if (!s) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_submit: session is NULL");
    vkvit_submit_desc d = desc ? *desc : (vkvit_submit_desc){0};
    vkvit_ctx *ctx = s->ctx;
    vkvit_result res = check_submit_desc(s, &d);
    if (res == VKVIT_OK) res = check_condition(s, "vkvit_session_submit");
    if (res == VKVIT_OK) res = check_idle(s, "vkvit_session_submit");
    if (res != VKVIT_OK) return res;

    /* Fixed-size arrays on the stack: nothing is allocated per submission. */
    VkSemaphore wait_sems[VKVIT_MAX_SUBMIT_SEMAPHORES], signal_sems[VKVIT_MAX_SUBMIT_SEMAPHORES];
    uint64_t wait_values[VKVIT_MAX_SUBMIT_SEMAPHORES], signal_values[VKVIT_MAX_SUBMIT_SEMAPHORES];
    VkPipelineStageFlags wait_stages[VKVIT_MAX_SUBMIT_SEMAPHORES];
    for (uint32_t i = 0; i < d.wait_count; i++) {
        wait_sems[i] = d.waits[i].semaphore;
        wait_values[i] = d.waits[i].value;
        wait_stages[i] = d.waits[i].stages ? d.waits[i].stages
                                           : VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    }
    for (uint32_t i = 0; i < d.signal_count; i++) {
        signal_sems[i] = d.signals[i].semaphore;
        signal_values[i] = d.signals[i].value;
    }
    /* Timeline values ride along whenever the ctx has timeline semaphores; binary semaphores ignore them. */
    VkTimelineSemaphoreSubmitInfo values = {
        .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
        .waitSemaphoreValueCount = d.wait_count,
        .pWaitSemaphoreValues = wait_values,
        .signalSemaphoreValueCount = d.signal_count,
        .pSignalSemaphoreValues = signal_values,
    };
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .pNext = ctx->info.timeline_semaphore && (d.wait_count || d.signal_count) ? &values : NULL,
        .waitSemaphoreCount = d.wait_count,
        .pWaitSemaphores = wait_sems,
        .pWaitDstStageMask = wait_stages,
        .commandBufferCount = 1,
        .pCommandBuffers = &s->cmd,
        .signalSemaphoreCount = d.signal_count,
        .pSignalSemaphores = signal_sems,
    };
    VkQueue queue = d.queue ? d.queue : ctx->queue;
    VK_TRY(ctx->vk.vkResetFences(ctx->device, 1, &s->fence));
    VK_TRY(vkvit__queue_submit(ctx, queue, 1, &submit, s->fence));
    s->ran = true; /* in flight from here on, whatever happens to the host's fence below */
    s->timed = true;  /* complete once the session is idle: vkvit_session_profile checks */
    /* The host's fence: an empty submission signals it once everything before it on the queue has finished. */
    if (d.fence) VK_TRY(vkvit__queue_submit(ctx, queue, 0, NULL, d.fence));
    return VKVIT_OK;
fail:
    return vkvit__error_prefix(res, "vkvit_session_submit '%s'", s->label);
}

vkvit_result vkvit_session_submit(vkvit_session *s, const vkvit_submit_desc *desc) {
    return logged(s, submit(s, desc));
}

int vkvit_session_poll(const vkvit_session *s) {
    if (!s) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_poll: session is NULL");
    VkResult vr = s->ctx->vk.vkGetFenceStatus(s->ctx->device, s->fence);
    if (vr == VK_SUCCESS) return 1;
    if (vr == VK_NOT_READY) return 0;
    return logged(s, vkvit__vk_error(vr, "vkGetFenceStatus", "vkvit_session_poll", s->label));
}

vkvit_result vkvit_session_wait(vkvit_session *s) {
    if (!s) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_wait: session is NULL");
    VkResult vr = s->ctx->vk.vkWaitForFences(s->ctx->device, 1, &s->fence, VK_TRUE, UINT64_MAX);
    if (vr != VK_SUCCESS) return logged(s, vkvit__vk_error(vr, "vkWaitForFences", "vkvit_session_wait", s->label));
    return VKVIT_OK;
}

/* ------------------------------------------------------------------------------------------------------------
 * Images and top-K (include/vkvit.h "Images" and "Host images and buffers"; the work is in src/ops/preprocess.c)
 * ------------------------------------------------------------------------------------------------------------ */

static vkvit_result check_takes_images(const vkvit_session *s, const char *fn) {
    if (!takes_images(s))
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED,
                            "%s '%s': model '%s' does not take a 3-channel image of its preprocess.image_size", fn,
                            s->label, s->model->label);
    return VKVIT_OK;
}

/* The first set_images of a session created with max_image_pixels = 0: adds the pre-processing nodes, prepares
 * the recording again (pipelines and descriptor sets for every node) and records it again. On failure the session
 * is as before. */
static vkvit_result add_imgproc(vkvit_session *s) {
    vkvit__graph *g = &s->graph;
    const vkvit__graph_mark before = vkvit__graph_mark_now(g);
    vkvit_result res = create_imgproc(s, 0);
    if (res != VKVIT_OK) return res;
    vkvit__recording rec;
    vkvit__record_target tg = target_of(s);
    if ((res = vkvit__record_prepare(s->ctx, g, &tg, s->profile, &rec)) != VKVIT_OK) {
        /* Back to the network alone: the pre-processing nodes, at the front, go to the end (a rotation in place,
         * which cannot fail) and are dropped with their tensors and kernels. */
        vkvit__graph_move_nodes(g, g->n_nodes - before.n_nodes, 0);
        vkvit__graph_rollback(g, before);
        vkvit__imgproc_destroy(&s->img);
        return res;
    }
    vkvit__record_free(s->ctx, &s->rec);
    s->rec = rec;
    s->timed = false; /* a new timer pool, written by the next run */
    if ((res = rerecord(s)) != VKVIT_OK) return res;
    /* The recording has new pipelines (pre-processing and the network again): compile them now on CPU devices. */
    return s->ctx->caps.cpu_device ? vkvit__record_warmup(s->ctx, g, &tg, &s->rec, 0) : VKVIT_OK;
}

vkvit_result vkvit_session_set_images(vkvit_session *s, uint32_t first_slot, const vkvit_image *images,
                                      uint32_t count) {
    const char *fn = "vkvit_session_set_images";
    if (!s) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: session is NULL", fn);
    const call_subject sub = subject_of(s, fn);
    const char *where = sub.text;
    vkvit_result res = check_takes_images(s, fn);
    if (res == VKVIT_OK) res = check_idle(s, fn);
    /* the cheap argument checks before the first call adds the pre-processing (pipelines, a warm-up: ~0.7 s) */
    if (res == VKVIT_OK) res = vkvit__imgproc_check_args(s->batch, first_slot, images, count, where);
    if (res == VKVIT_OK && !s->img.ctx && (res = add_imgproc(s)) != VKVIT_OK) vkvit__error_prefix(res, "%s", where);
    bool rebind = false;
    if (res == VKVIT_OK) res = vkvit__imgproc_set_images(&s->img, first_slot, images, count, where, &rebind);
    if (res == VKVIT_OK && rebind) {
        /* A buffer the nodes bind was replaced (the documented growth): point the sets at it, record again. */
        vkvit__record_target tg = target_of(s);
        vkvit__record_rebind(s->ctx, &s->graph, &tg, &s->rec);
        if ((res = rerecord(s)) != VKVIT_OK) vkvit__error_prefix(res, "%s", where);
    }
    return res != VKVIT_OK ? logged(s, res) : VKVIT_OK;
}

static vkvit_result get_top_k(vkvit_session *s, uint32_t *classes, float *probabilities, size_t count) {
    const char *fn = "vkvit_session_get_top_k";
    if (!s || !classes || !probabilities) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    if (s->topk == VKVIT_NONE)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': the session was created with top_k = 0", fn,
                            s->label);
    const uint64_t n = (uint64_t)s->batch * s->top_k;
    if (count != n)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': count %zu, the session has batch %u x top_k %u = "
                            "%llu entries", fn, s->label, count, s->batch, s->top_k, (unsigned long long)n);
    if (!s->ran) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': no run yet", fn, s->label);
    vkvit_result res = check_idle(s, fn);
    if (res != VKVIT_OK) return res;
    read_host_output(s, s->topk, 0, classes, n * sizeof(uint32_t));
    read_host_output(s, s->topk, n * sizeof(uint32_t), probabilities, n * sizeof(float));
    return VKVIT_OK;
}

vkvit_result vkvit_session_get_top_k(vkvit_session *s, uint32_t *classes, float *probabilities, size_t count) {
    return logged(s, get_top_k(s, classes, probabilities, count));
}

uint64_t vkvit_session_output_bytes(const vkvit_session *s, vkvit_output_kind kind) {
    if (!s) return 0;
    if (kind == VKVIT_OUTPUT_LOGITS) return s->graph.tensors[s->output].bytes;
    if (kind == VKVIT_OUTPUT_TOP_K && s->topk != VKVIT_NONE) return s->graph.tensors[s->topk].bytes;
    return 0;
}

vkvit_result vkvit_session_record_ex(vkvit_session *s, VkCommandBuffer cmd, const vkvit_record_desc *desc) {
    const char *fn = "vkvit_session_record_ex";
    if (!s || !cmd) return logged(s, vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: NULL argument", fn));
    vkvit_result res = VKVIT_OK;
    if (desc) {
        const vkvit_host_output *o = &desc->output;
        if (o->kind != VKVIT_OUTPUT_NONE && o->kind != VKVIT_OUTPUT_LOGITS && o->kind != VKVIT_OUTPUT_TOP_K)
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': output.kind = %d is unknown", fn, s->label,
                               (int)o->kind);
        else if (o->kind == VKVIT_OUTPUT_TOP_K && s->topk == VKVIT_NONE)
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': a top-K output needs a session created with "
                               "top_k > 0", fn, s->label);
        else if (o->kind != VKVIT_OUTPUT_NONE && (!o->buffer || o->offset % 4))
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': output.buffer must be a VkBuffer and "
                               "output.offset (%llu) a multiple of 4", fn, s->label, (unsigned long long)o->offset);
        else if (o->kind != VKVIT_OUTPUT_NONE &&
                 !vkvit__host_buffer_holds(s->ctx, o->buffer, o->offset, vkvit_session_output_bytes(s, o->kind)))
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': output.offset %llu + %llu bytes of output run "
                               "past the end of output.buffer", fn, s->label, (unsigned long long)o->offset,
                               (unsigned long long)vkvit_session_output_bytes(s, o->kind));
        else if ((desc->image_count || desc->pixels_count) && (res = check_takes_images(s, fn)) == VKVIT_OK) {
            /* either count alone: their sum may wrap to 0 (vkvit__imgproc_check_inputs sums in 64 bits) */
            if (!s->img.ctx)
                res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': host inputs need a session created with "
                                   "max_image_pixels > 0 (nothing is created at record time)", fn, s->label);
            else {
                res = vkvit__imgproc_check_inputs(&s->img, desc, subject_of(s, fn).text);
            }
        }
    }
    if (res != VKVIT_OK) return logged(s, res);
    VkCommandBuffer own = s->cmd;
    s->cmd = cmd;
    record(s, desc);
    s->cmd = own;
    if (!desc || desc->output.kind == VKVIT_OUTPUT_NONE) s->ran = true; /* the caller waits before reading */
    s->timed = false;
    return VKVIT_OK;
}
