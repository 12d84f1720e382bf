/* Op builders (see ops.h): push-constant mirrors of the shaders, dispatch geometry, node creation. */
#include "graph/ops.h"

#include "vk/attention.h"
#include "vk/kernels.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------------------------------ */

static uint32_t groups_for(uint64_t n, uint32_t per_group) {
    uint64_t g = (n + per_group - 1) / per_group;
    return (uint32_t)(g == 0 ? 1 : g > 65535 ? 65535 : g); /* grid-stride kernels cover the rest */
}

/* Any valid tensor for a binding the kernel ignores (a disabled bias, say): the node still needs a buffer. */
static uint32_t or_dummy(uint32_t t, uint32_t fallback) { return t == VKVIT_NONE ? fallback : t; }

static vkvit__node_binding rd(uint32_t t) { return (vkvit__node_binding){t, VKVIT_READ}; }
static vkvit__node_binding wr(uint32_t t) { return (vkvit__node_binding){t, VKVIT_WRITE}; }
static vkvit__node_binding rdwr(uint32_t t) { return (vkvit__node_binding){t, VKVIT_READ | VKVIT_WRITE}; }

/* ------------------------------------------------------------------------------------------------------------
 * GEMM with epilogue (shaders/gemm.comp, gemm_cpu.comp via src/vk/kernels.h)
 * ------------------------------------------------------------------------------------------------------------ */

void vkvit__op_gemm(vkvit__graph *g, const char *name, const vkvit__gemm_op *op) {
    if (g->error) return;
    const bool has_res = op->residual.t != VKVIT_NONE;
    vkvit__gemm_config cfg = vkvit__gemm_pick(g->ctx, op->M, op->N, op->K);
    vkvit__gemm_epilogue ep = {.bias = op->bias != VKVIT_NONE, .act = (uint32_t)op->act,
                               .scale = op->scale != VKVIT_NONE, .residual = has_res};
    vkvit__kernel_desc kd;
    vkvit_result r = vkvit__gemm_kernel_desc(&cfg, &ep, NULL, &kd);
    if (r != VKVIT_OK) {
        vkvit__graph_fail(g, r, "gemm '%s': %s", name, vkvit_last_error());
        return;
    }
    vkvit__gemm_push p = {
        .M = op->M, .N = op->N, .K = op->K,
        .stride_a = op->a.stride, .stride_b = op->K, .stride_d = op->d.stride,
        .batch_stride_a = op->a.batch_stride, .batch_stride_b = 0, .batch_stride_d = op->d.batch_stride,
        .a_offset = op->a.offset, .d_offset = op->d.offset,
        .r_offset = op->residual.offset, .r_stride = op->residual.stride, .r_batch_stride = op->residual.batch_stride,
    };
    /* Disabled terms bind some valid tensor; the kernel never reads it. */
    vkvit__node_binding b[VKVIT_GEMM_BINDINGS] = {
        rd(op->a.t), rd(op->w), rd(or_dummy(op->bias, op->w)), wr(op->d.t), rd(or_dummy(op->scale, op->w)),
        rd(has_res ? op->residual.t : op->w),
    };
    if (has_res && op->residual.t == op->d.t) b[3].access |= VKVIT_READ;
    uint32_t groups[3];
    vkvit__gemm_groups(&cfg, &p, op->batch, groups);
    vkvit__graph_node(g, name, "gemm", &kd, b, VKVIT_GEMM_BINDINGS, &p, sizeof p, groups[0], groups[1], groups[2]);
}

uint32_t vkvit__op_linear(vkvit__graph *g, const char *name, uint32_t x, uint32_t w, uint32_t bias, vkvit__act act) {
    if (g->error) return VKVIT_NONE;
    const vkvit__tensor *tx = &g->tensors[x], *tw = &g->tensors[w];
    uint32_t K = tx->shape[tx->ndim - 1], rows = (uint32_t)(vkvit__numel(tx) / K);
    if (tw->ndim != 2 || tw->shape[1] != K)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "linear '%s': weight '%s' is not [N, %u]", name,
                                 tw->name, K);
    uint32_t N = tw->shape[0];
    uint32_t shape[2] = {rows, N};
    uint32_t y = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2, shape);
    vkvit__gemm_op op = {
        .a = vkvit__mat_dense(x, rows, K), .w = w, .bias = bias, .d = vkvit__mat_dense(y, rows, N),
        .M = rows, .N = N, .K = K, .batch = 1, .act = act, .scale = VKVIT_NONE, .residual = {VKVIT_NONE, 0, 0, 0},
    };
    vkvit__op_gemm(g, name, &op);
    return y;
}

/* ------------------------------------------------------------------------------------------------------------
 * Norms (shaders/norm.comp)
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct norm_push {
    uint32_t C, G, rows_per_batch;
    uint32_t in_offset, in_row_stride, in_batch_stride;
    uint32_t out_offset, out_row_stride, out_batch_stride;
    float eps;
} norm_push;
_Static_assert(sizeof(norm_push) <= VKVIT_MAX_PUSH, "norm push constants");

void vkvit__op_norm(vkvit__graph *g, const char *name, const vkvit__norm_op *op) {
    if (g->error) return;
    if (op->group == 0 || op->C % op->group || op->rows_per_batch == 0 || op->rows % op->rows_per_batch) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "norm '%s': group %u must divide C %u", name, op->group, op->C);
        return;
    }
    bool cpu = g->ctx->quirks & VKVIT_QUIRK_CPU_DEVICE;
    uint32_t wg = cpu ? 8 : 64; /* one SIMD vector on llvmpipe: no idle lanes, cheap barriers */
    while (wg > 8 && wg / 2 >= op->group) wg /= 2;
    vkvit__kernel_desc kd = {
        .shader = VKVIT_SHADER_NORM_F32_F32, .n_buffers = 4, .push_size = sizeof(norm_push), .n_spec = 5,
        .spec = {wg, op->kind, op->one_plus_w, op->bias != VKVIT_NONE, op->weight != VKVIT_NONE},
    };
    norm_push p = {
        .C = op->C, .G = op->group, .rows_per_batch = op->rows_per_batch,
        .in_offset = op->in.offset, .in_row_stride = op->in.stride, .in_batch_stride = op->in.batch_stride,
        .out_offset = op->out.offset, .out_row_stride = op->out.stride, .out_batch_stride = op->out.batch_stride,
        .eps = op->eps,
    };
    vkvit__node_binding b[4] = {rd(op->in.t), rd(or_dummy(op->weight, op->in.t)),
                                rd(or_dummy(op->bias, or_dummy(op->weight, op->in.t))), wr(op->out.t)};
    if (op->out.t == op->in.t) b[3].access |= VKVIT_READ;
    vkvit__graph_node(g, name, "norm", &kd, b, 4, &p, sizeof p, op->C / op->group, op->rows, 1);
}

uint32_t vkvit__op_rmsnorm(vkvit__graph *g, const char *name, uint32_t x, uint32_t weight, float eps) {
    if (g->error) return VKVIT_NONE;
    const vkvit__tensor *t = &g->tensors[x];
    uint32_t C = t->shape[t->ndim - 1], rows = (uint32_t)(vkvit__numel(t) / C);
    uint32_t y = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, t->ndim, t->shape);
    vkvit__norm_op op = {
        .kind = VKVIT_NORM_RMS, .C = C, .group = C, .rows = rows, .rows_per_batch = rows,
        .in = {x, 0, C, rows * C}, .out = {y, 0, C, rows * C}, .weight = weight, .bias = VKVIT_NONE, .eps = eps,
    };
    vkvit__op_norm(g, name, &op);
    return y;
}

/* ------------------------------------------------------------------------------------------------------------
 * Patchify (shaders/patchify.comp)
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct patchify_push {
    uint32_t B, H, W, Cin, P, Hp, Wp, total;
} patchify_push;

uint32_t vkvit__op_patchify(vkvit__graph *g, const char *name, uint32_t img, uint32_t B, uint32_t H, uint32_t W,
                            uint32_t Cin, uint32_t P) {
    if (g->error) return VKVIT_NONE;
    uint32_t Hp = H / P, Wp = W / P;
    uint64_t total = (uint64_t)B * Hp * Wp * Cin * P * P;
    if (total > UINT32_MAX)
        return vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "patchify '%s': %llu elements exceed 2^32", name,
                                 (unsigned long long)total);
    uint32_t shape[2] = {B * Hp * Wp, Cin * P * P};
    uint32_t cols = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2, shape);
    vkvit__kernel_desc kd = {.shader = VKVIT_SHADER_PATCHIFY_F32_F32, .n_buffers = 2, .push_size = sizeof(patchify_push)};
    patchify_push p = {B, H, W, Cin, P, Hp, Wp, (uint32_t)total};
    vkvit__node_binding b[2] = {rd(img), wr(cols)};
    vkvit__graph_node(g, name, "patchify", &kd, b, 2, &p, sizeof p, groups_for(total, 256), 1, 1);
    return cols;
}

/* ------------------------------------------------------------------------------------------------------------
 * Row copies and means
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct copy_push {
    uint32_t B, n_rows, C;
    uint32_t a_offset, a_row_stride, a_batch_stride;
    uint32_t d_offset, d_row_stride, d_batch_stride;
} copy_push;

void vkvit__op_copy_rows(vkvit__graph *g, const char *name, vkvit__mat src, vkvit__mat dst, uint32_t B,
                         uint32_t n_rows, uint32_t C) {
    if (g->error) return;
    vkvit__kernel_desc kd = {.shader = VKVIT_SHADER_COPY_ROWS_F32_F32, .n_buffers = 2, .push_size = sizeof(copy_push)};
    copy_push p = {B, n_rows, C, src.offset, src.stride, src.batch_stride, dst.offset, dst.stride, dst.batch_stride};
    vkvit__node_binding b[2] = {rd(src.t), rdwr(dst.t)};
    vkvit__graph_node(g, name, "copy", &kd, b, 2, &p, sizeof p, groups_for((uint64_t)B * n_rows * C, 256), 1, 1);
}

typedef struct mean_push {
    uint32_t B, n_rows, C, a_offset, a_batch_stride;
} mean_push;

uint32_t vkvit__op_mean_rows(vkvit__graph *g, const char *name, vkvit__mat src, uint32_t B, uint32_t n_rows, uint32_t C) {
    if (g->error) return VKVIT_NONE;
    uint32_t shape[2] = {B, C};
    uint32_t y = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2, shape);
    vkvit__kernel_desc kd = {.shader = VKVIT_SHADER_MEAN_ROWS_F32_F32, .n_buffers = 2, .push_size = sizeof(mean_push)};
    mean_push p = {B, n_rows, C, src.offset, src.batch_stride};
    vkvit__node_binding b[2] = {rd(src.t), wr(y)};
    vkvit__graph_node(g, name, "pool", &kd, b, 2, &p, sizeof p, VKVIT_CEIL_DIV(B * C, 64u), 1, 1);
    return y;
}

/* ------------------------------------------------------------------------------------------------------------
 * GRN (shaders/grn_stats.comp + grn_apply.comp)
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct grn_stats_push {
    uint32_t T, C;
    float eps;
} grn_stats_push;

typedef struct grn_apply_push {
    uint32_t B, T, C;
} grn_apply_push;

void vkvit__op_grn_residual(vkvit__graph *g, const char *name, uint32_t a, uint32_t gamma, uint32_t beta, uint32_t ls,
                            uint32_t x, uint32_t B, uint32_t T, uint32_t C, float eps) {
    if (g->error) return;
    char label[64];
    snprintf(label, sizeof label, "%s.stats", name);
    uint32_t shape[2] = {B, C};
    uint32_t nx = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, label, 2, shape);
    uint32_t wg = (g->ctx->quirks & VKVIT_QUIRK_CPU_DEVICE) ? 8 : 64;
    vkvit__kernel_desc ks = {.shader = VKVIT_SHADER_GRN_STATS_F32, .n_buffers = 2, .push_size = sizeof(grn_stats_push),
                             .n_spec = 1, .spec = {wg}};
    grn_stats_push ps = {T, C, eps};
    vkvit__node_binding bs[2] = {rd(a), wr(nx)};
    vkvit__graph_node(g, label, "grn", &ks, bs, 2, &ps, sizeof ps, B, 1, 1);

    vkvit__kernel_desc ka = {.shader = VKVIT_SHADER_GRN_APPLY_F32_F32, .n_buffers = 6,
                             .push_size = sizeof(grn_apply_push), .n_spec = 1, .spec = {ls != VKVIT_NONE}};
    grn_apply_push pa = {B, T, C};
    vkvit__node_binding ba[6] = {rd(a), rd(nx), rd(gamma), rd(beta), rd(or_dummy(ls, gamma)), rdwr(x)};
    vkvit__graph_node(g, name, "grn", &ka, ba, 6, &pa, sizeof pa, groups_for((uint64_t)B * T * C, 256), 1, 1);
}

/* ------------------------------------------------------------------------------------------------------------
 * Attention
 * ------------------------------------------------------------------------------------------------------------ */

uint32_t vkvit__op_vit5_attention(vkvit__graph *g, const char *name, const vkvit__vit5_attention_op *op) {
    if (g->error) return VKVIT_NONE;
    const uint32_t C = op->C, dk = C / op->heads;
    vkvit__attention_config cfg = {
        .mode = VKVIT_ATTENTION_VIT5, .dk = dk, .qk_norm = op->qk_norm != VKVIT_NONE, .rope = op->pairing,
        .rope_axes = 2,
    };
    vkvit__kernel_desc kd;
    uint32_t groups[3];
    vkvit_result r = vkvit__attention_kernel_desc(g->ctx, &cfg, NULL, &kd);
    if (r != VKVIT_OK) return vkvit__graph_fail(g, r, "attention '%s': %s", name, vkvit_last_error());
    uint32_t shape[2] = {op->B * op->T, C};
    uint32_t o = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2, shape);
    /* Q, K, V are column blocks 0, C, 2C of the fused qkv rows. */
    vkvit__attention_push p = {
        .Tq = op->T, .Tkv = op->T,
        .q_stride = 3 * C, .q_offset = 0, .q_batch_stride = op->T * 3 * C,
        .k_stride = 3 * C, .k_offset = C, .k_batch_stride = op->T * 3 * C,
        .v_stride = 3 * C, .v_offset = 2 * C, .v_batch_stride = op->T * 3 * C,
        .o_stride = C, .o_offset = 0, .o_batch_stride = op->T * C,
        .scale = vkvit__attention_default_scale(&cfg), .eps = op->qk_norm_eps,
    };
    vkvit__attention_groups(g->ctx, &cfg, &p, op->heads, op->B, groups);
    vkvit__node_binding b[6] = {rd(op->qkv), rd(op->qkv), rd(op->qkv), rd(op->rope), rd(or_dummy(op->qk_norm, op->rope)),
                                wr(o)};
    vkvit__graph_node(g, name, "attention", &kd, b, 6, &p, sizeof p, groups[0], groups[1], groups[2]);
    return o;
}
