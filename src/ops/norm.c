// SPDX-License-Identifier: Apache-2.0
/* Norms (see norm.h): the push-constant mirror of shaders/norm.comp, the reduction variant, graph nodes. */
#include "ops/norm.h"

#include "ops/op_util.h"

/* Mirrors the `p` block of shaders/norm.comp. */
typedef struct norm_push {
    uint32_t C, G, rows_per_batch;
    uint32_t in_offset, in_row_stride, in_batch_stride;
    uint32_t out_offset, out_row_stride, out_batch_stride;
    float eps;
    uint32_t rows;                                   /* all rows (the CPU work split's grid-stride bound) */
} norm_push;
VKVIT_PUSH_MIRROR(norm_push, 11);

void vkvit__op_norm(vkvit__graph *g, const char *name, const vkvit__norm_op *op) {
    if (g->error) return;
    if (op->group == 0 || op->C % op->group || op->rows_per_batch == 0 || op->rows % op->rows_per_batch) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "norm '%s': group %u must divide C %u", name, op->group, op->C);
        return;
    }
    /* CPU devices: one invocation per (row, group), eight side by side (shaders/norm.comp); GPUs: a workgroup each */
    const bool per_invocation = g->ctx->policy.cpu_kernels;
    uint32_t wg = ops_row_wg(g->ctx);
    while (!per_invocation && wg > 8 && wg / 2 >= op->group) wg /= 2;
    vkvit__kernel_desc kd = {
        .shader = ops_reduce_variant(g->ctx, VKVIT_SHADER_NORM_F32_F32, VKVIT_SHADER_NORM_F32_F32_SUBGROUP),
        .n_buffers = 4, .push_size = sizeof(norm_push), .n_spec = 6,
        .spec = {wg, op->kind, op->one_plus_w, op->bias != VKVIT_NONE, op->weight != VKVIT_NONE, per_invocation},
    };
    if (ops_texel_inputs(g->ctx, &kd, 3)) /* x, weight, bias */
        kd.shader = ops_reduce_variant(g->ctx, VKVIT_SHADER_NORM_F32_F32_TEXEL, VKVIT_SHADER_NORM_F32_F32_SUBGROUP_TEXEL);
    norm_push p = {
        .C = op->C, .G = op->group, .rows_per_batch = op->rows_per_batch,
        .in_offset = op->in.offset, .in_row_stride = op->in.stride, .in_batch_stride = op->in.batch_stride,
        .out_offset = op->out.offset, .out_row_stride = op->out.stride, .out_batch_stride = op->out.batch_stride,
        .eps = op->eps, .rows = op->rows,
    };
    vkvit__node_binding b[4] = {rd(op->in.t), rd(or_dummy(op->weight, op->in.t)),
                                rd(or_dummy(op->bias, or_dummy(op->weight, op->in.t))), wr(op->out.t)};
    if (op->out.t == op->in.t) b[3].access |= VKVIT_READ;
    if (per_invocation) /* y grows with the rows, as below: the session splits a batch beyond the device's y limit */
        vkvit__graph_node(g, name, "norm", &kd, b, 4, &p, sizeof p, 1,
                          (uint32_t)VKVIT_CEIL_DIV((uint64_t)op->rows * (op->C / op->group), wg), 1);
    else
        vkvit__graph_node(g, name, "norm", &kd, b, 4, &p, sizeof p, op->C / op->group, op->rows, 1);
}

uint32_t vkvit__op_rmsnorm(vkvit__graph *g, const char *name, uint32_t x, uint32_t weight, float eps) {
    if (g->error) return VKVIT_NONE;
    const vkvit__tensor t = vkvit__graph_get(g, x);
    uint32_t C = t.shape[t.ndim - 1], rows = (uint32_t)(vkvit__numel(&t) / C);
    uint32_t y = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, t.ndim, t.shape);
    vkvit__norm_op op = {
        .kind = VKVIT_NORM_RMS, .C = C, .group = C, .rows = rows, .rows_per_batch = rows,
        .in = {x, 0, C, rows * C}, .out = {y, 0, C, rows * C}, .weight = weight, .bias = VKVIT_NONE, .eps = eps,
    };
    vkvit__op_norm(g, name, &op);
    return y;
}
