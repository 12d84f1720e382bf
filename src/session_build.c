// SPDX-License-Identifier: Apache-2.0
/* A session's graph: the architecture's network for the batch, as sub-batches when a device limit needs them,
 * the GPU top-K after the head, the pre-processing nodes of pictures, and the record target. */
#include "session.h"
#include "ops/topk.h"
#include "modules/modules.h"

#include <string.h>

/* One network for `batch` images: its input, condition (VKVIT_NONE when the model takes none), logits and, when
 * the session outputs them, a copy of the pooled features the classifier head reads (else VKVIT_NONE). */
/* The final tokens the builder marked (g->tokens), copied into the session's three token outputs (tokens[0 .. 2]:
 * the patch grid [B, Hp, Wp, C] or [B, T, C], the CLS row [B, C], the registers [B, R, C]; VKVIT_NONE where the
 * network has none), each batch-major so that sub-batches are parts of them. */
static void build_token_outputs(vkvit_session *s, uint32_t batch, uint32_t tokens[3]) {
    vkvit__graph *g = &s->graph;
    const vkvit__token_marks k = g->tokens;
    if (g->error) return;
    if (k.t == VKVIT_NONE) {
        vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "session: this architecture has no token output");
        return;
    }
    const uint32_t C = k.C, T = k.T, Np = k.grid_h * k.grid_w;
    tokens[0] = k.image_layout
                    ? vkvit__graph_tensor(g, VKVIT_TENSOR_OUTPUT, "tokens.patches", 4, (uint32_t[4]){batch, k.grid_h, k.grid_w, C})
                    : vkvit__graph_tensor(g, VKVIT_TENSOR_OUTPUT, "tokens.patches", 3, (uint32_t[3]){batch, Np, C});
    vkvit__op_copy_rows(g, "tokens.patches", (vkvit__mat){k.t, k.patch0 * C, C, T * C},
                        (vkvit__mat){tokens[0], 0, C, Np * C}, batch, Np, C);
    if (k.cls != VKVIT_NONE) {
        tokens[1] = vkvit__graph_tensor(g, VKVIT_TENSOR_OUTPUT, "tokens.cls", 2, (uint32_t[2]){batch, C});
        vkvit__op_copy_rows(g, "tokens.cls", (vkvit__mat){k.t, k.cls * C, C, T * C}, (vkvit__mat){tokens[1], 0, C, C},
                            batch, 1, C);
    }
    if (k.n_regs) {
        tokens[2] = vkvit__graph_tensor(g, VKVIT_TENSOR_OUTPUT, "tokens.registers", 3, (uint32_t[3]){batch, k.n_regs, C});
        vkvit__op_copy_rows(g, "tokens.registers", (vkvit__mat){k.t, k.reg0 * C, C, T * C},
                            (vkvit__mat){tokens[2], 0, C, k.n_regs * C}, batch, k.n_regs, C);
    }
}

static void build_network(vkvit_session *s, uint32_t batch, uint32_t *in, uint32_t *cond, uint32_t *out,
                          uint32_t *features, uint32_t tokens[3]) {
    vkvit__graph *g = &s->graph;
    *cond = VKVIT_NONE;
    *features = VKVIT_NONE;
    tokens[0] = tokens[1] = tokens[2] = VKVIT_NONE;
    g->features = VKVIT_NONE;
    g->want_tokens = s->want_tokens;
    g->tokens = (vkvit__token_marks){.t = VKVIT_NONE, .cls = VKVIT_NONE};
    /* The architecture's network (src/arch/<name>.c -> its builder in src/modules/). */
    vkvit__arch_ops_of(s->model->cfg.arch)->build(g, s->model, batch, in, cond, out);
    if (s->want_tokens) build_token_outputs(s, batch, tokens);
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
        build_network(s, s->batch, &s->input, &s->condition, &s->output, &s->features, s->tokens);
        return;
    }
    vkvit__graph *g = &s->graph;
    for (uint32_t first = 0; first < s->batch && !g->error; first += sub) {
        uint32_t in, cond, out, feat, tok[3], first_node = g->n_nodes;
        build_network(s, VKVIT_MIN(sub, s->batch - first), &in, &cond, &out, &feat, tok);
        if (first == 0) {
            s->input = whole_batch_like(s, in);
            s->condition = cond == VKVIT_NONE ? VKVIT_NONE : whole_batch_like(s, cond);
            s->output = whole_batch_like(s, out);
            s->features = feat == VKVIT_NONE ? VKVIT_NONE : whole_batch_like(s, feat);
            for (int i = 0; i < 3; i++) s->tokens[i] = tok[i] == VKVIT_NONE ? VKVIT_NONE : whole_batch_like(s, tok[i]);
        }
        attach_part(s, s->input, in, first, true, first_node);
        if (cond != VKVIT_NONE) attach_part(s, s->condition, cond, first, true, first_node);
        attach_part(s, s->output, out, first, false, first_node);
        if (feat != VKVIT_NONE) attach_part(s, s->features, feat, first, false, first_node);
        for (int i = 0; i < 3; i++)
            if (tok[i] != VKVIT_NONE) attach_part(s, s->tokens[i], tok[i], first, false, first_node);
    }
}

/* Builds the session's graph. Dispatch sizes and activation sizes grow with the batch, and a device bounds both
 * (maxComputeWorkGroupCount, maxStorageBufferRange: 128 MiB on lavapipe and some mobile GPUs). When the whole
 * batch exceeds either, the batch is halved until every dispatch and every binding fits, and runs as sub-batches
 * (one submission still); what one image alone exceeds is refused with a sentence. */
void vkvit__session_build_graph(vkvit_session *s) {
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

vkvit__record_target vkvit__session_target(const vkvit_session *s) {
    vkvit__record_target tg = {
        .weights = vkvit__model_image(s->model, s->graph.opts.weights),
        .arena = &s->arena,
    };
    if (s->img.ctx) vkvit__imgproc_target(&s->img, &tg);
    return tg;
}

/* The pre-processing nodes for set_images / record_ex, writing the input tensor in the arena as the model file's
 * `preprocess` says (src/ops/preprocess.c), before the network. Created with the session when max_image_pixels > 0
 * (call after planning, before preparing the recording), else by the first set_images (its documented exception,
 * which then prepares and records the session again), so sessions that never see a picture pay nothing. */
vkvit_result vkvit__session_create_imgproc(vkvit_session *s, uint64_t max_image_pixels) {
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
