/* Op builders (see ops.h): push-constant mirrors of the shaders, dispatch geometry, node creation. */
#include "graph/ops.h"

#include "vk/attention.h"
#include "vk/kernels.h"

#include <stdio.h>
#include <stdlib.h>
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

static uint64_t gcd64(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static void gemm_node(vkvit__graph *g, const char *name, const char *kind, const vkvit__gemm_op *op);

/* A weight [N, K] larger than one storage-buffer descriptor can reach (maxStorageBufferRange: 128 MiB on lavapipe
 * and some mobile GPUs) runs as GEMMs over row blocks of it: block j computes output columns [n0, n0 + nc) from
 * weight rows [n0, n0 + nc) and bias / scale entries n0 + n, writing into the same D and residual at column n0.
 * Each block's byte offset stays a multiple of VKVIT_ARENA_ALIGN. Returns false when the weight cannot be split
 * (batched or strided GEMMs, or one row alone beyond the limit): the recorder then refuses it with a sentence. */
static bool gemm_split_weight_rows(vkvit__graph *g, const char *name, const char *kind, const vkvit__gemm_op *op) {
    const vkvit__tensor w = vkvit__graph_get(g, op->w);
    const uint64_t range = g->ctx->limits.maxStorageBufferRange, elem = vkvit__elem_size(w.kind);
    const uint64_t row_bytes = (uint64_t)op->K * elem;
    if (w.bytes <= range || op->batch != 1 || op->w_offset != 0 || (op->w_stride && op->w_stride != op->K) ||
        w.ndim != 2 || w.shape[0] != op->N || w.shape[1] != op->K)
        return false;
    const uint64_t step = VKVIT_ARENA_ALIGN / gcd64(row_bytes, VKVIT_ARENA_ALIGN); /* rows per aligned offset */
    const uint64_t rows = range / row_bytes / step * step;
    if (rows == 0) return false;
    for (uint64_t n0 = 0; n0 < op->N && !g->error; n0 += rows) {
        const uint32_t nc = (uint32_t)VKVIT_MIN(rows, op->N - n0);
        vkvit__gemm_op part = *op;
        part.N = nc;
        part.w = vkvit__graph_view(g, op->w, "rows", n0 * op->K, 2, (uint32_t[2]){nc, op->K});
        part.n_offset = op->n_offset + (uint32_t)n0; /* bias and scale stay whole: [N] floats always fit */
        part.d.offset += (uint32_t)n0;
        if (op->residual.t != VKVIT_NONE) part.residual.offset += (uint32_t)n0;
        gemm_node(g, name, kind, &part);
    }
    return true;
}

/* vkvit__op_gemm with a node kind of the caller's choosing (profiles group nodes by kind). */
static void gemm_node(vkvit__graph *g, const char *name, const char *kind, const vkvit__gemm_op *op) {
    if (g->error) return;
    if (gemm_split_weight_rows(g, name, kind, op)) return;
    const bool has_res = op->residual.t != VKVIT_NONE;
    vkvit__gemm_config cfg = vkvit__gemm_pick(g->ctx, op->M, op->N, op->K);
    cfg.b_f16 = g->tensors[vkvit__graph_root(g, op->w, NULL)].kind == VKVIT_TENSOR_WEIGHT_F16;
    cfg.f16_math = cfg.b_f16 && g->f16_math; /* fp16-math sessions: only GEMMs on fp16 weights (not attention) */
    /* The CPU pick halves bm only so that the CPU threads get two workgroups; a batch gives them that already, and
     * full-height tiles load each B float once per batch (attention: 6 heads of a 201 x 201 product). */
    if (cfg.variant == VKVIT_GEMM_CPU && op->batch > 1) cfg.bm = 256;
    vkvit__gemm_epilogue ep = {.bias = op->bias != VKVIT_NONE, .act = (uint32_t)op->act,
                               .scale = op->scale != VKVIT_NONE, .residual = has_res};
    vkvit__kernel_desc kd;
    vkvit_result r = vkvit__gemm_kernel_desc(&cfg, &ep, NULL, &kd);
    if (r != VKVIT_OK) {
        vkvit__graph_fail(g, r, "gemm '%s': %s", name, vkvit_last_error());
        return;
    }
    const uint32_t n_inner = op->n_inner ? op->n_inner : 1;
    if (op->batch % n_inner) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "gemm '%s': batch %u is not a multiple of n_inner %u",
                          name, op->batch, n_inner);
        return;
    }
    vkvit__gemm_push p = {
        .M = op->M, .N = op->N, .K = op->K,
        .stride_a = op->a.stride, .stride_b = op->w_stride ? op->w_stride : op->K, .stride_d = op->d.stride,
        .batch_stride_a = op->a.batch_stride, .batch_stride_b = op->w_batch_stride,
        .batch_stride_d = op->d.batch_stride,
        .a_offset = op->a.offset, .d_offset = op->d.offset,
        .r_offset = op->residual.offset, .r_stride = op->residual.stride, .r_batch_stride = op->residual.batch_stride,
        .n_inner = n_inner,
        .inner_stride_a = op->inner_stride_a, .inner_stride_b = op->inner_stride_w,
        .inner_stride_d = op->inner_stride_d, .r_inner_stride = op->inner_stride_r,
        .b_offset = op->w_offset,
        .n_offset = op->n_offset,
    };
    /* Disabled terms bind some valid tensor; the kernel never reads it. */
    vkvit__node_binding b[VKVIT_GEMM_BINDINGS] = {
        rd(op->a.t), rd(op->w), rd(or_dummy(op->bias, op->w)), wr(op->d.t), rd(or_dummy(op->scale, op->w)),
        rd(has_res ? op->residual.t : op->w),
    };
    if (has_res && op->residual.t == op->d.t) b[3].access |= VKVIT_READ;
    uint32_t groups[3];
    vkvit__gemm_groups(&cfg, &p, op->batch, groups);
    vkvit__graph_node(g, name, kind, &kd, b, VKVIT_GEMM_BINDINGS, &p, sizeof p, groups[0], groups[1], groups[2]);
}

void vkvit__op_gemm(vkvit__graph *g, const char *name, const vkvit__gemm_op *op) { gemm_node(g, name, "gemm", op); }

uint32_t vkvit__op_linear(vkvit__graph *g, const char *name, uint32_t x, uint32_t w, uint32_t bias, vkvit__act act) {
    if (g->error) return VKVIT_NONE;
    const vkvit__tensor tx = vkvit__graph_get(g, x), tw = vkvit__graph_get(g, w);
    uint32_t K = tx.shape[tx.ndim - 1], rows = (uint32_t)(vkvit__numel(&tx) / K);
    if (tw.ndim != 2 || tw.shape[1] != K)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "linear '%s': weight '%s' is not [N, %u]", name,
                                 tw.name, K);
    uint32_t N = tw.shape[0];
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
    const bool cpu = g->ctx->caps.cpu_device;
    uint32_t wg = cpu ? 8 : 64; /* one SIMD vector on llvmpipe: no idle lanes, cheap barriers */
    while (wg > 8 && wg / 2 >= op->group) wg /= 2;
    vkvit__kernel_desc kd = {
        .shader = g->ctx->caps.subgroup_in_use ? VKVIT_SHADER_NORM_F32_F32_SUBGROUP : VKVIT_SHADER_NORM_F32_F32,
        .n_buffers = 4, .push_size = sizeof(norm_push), .n_spec = 5,
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
    uint32_t wg = g->ctx->caps.cpu_device ? 8 : 64;
    vkvit__kernel_desc ks = {.shader = g->ctx->caps.subgroup_in_use ? VKVIT_SHADER_GRN_STATS_F32_SUBGROUP
                                                                    : VKVIT_SHADER_GRN_STATS_F32,
                             .n_buffers = 2, .push_size = sizeof(grn_stats_push), .n_spec = 1, .spec = {wg}};
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

/* The fused path: one flash-attention dispatch (shaders/attention.comp). */
static void vit5_attention_fused(vkvit__graph *g, const char *name, const vkvit__vit5_attention_op *op, uint32_t o) {
    const uint32_t C = op->C, dk = C / op->heads;
    vkvit__attention_config cfg = {
        .mode = VKVIT_ATTENTION_VIT5, .dk = dk, .qk_norm = op->qk_norm != VKVIT_NONE, .rope = op->pairing,
        .rope_axes = 2,
    };
    vkvit__kernel_desc kd;
    uint32_t groups[3];
    vkvit_result r = vkvit__attention_kernel_desc(g->ctx, &cfg, NULL, &kd);
    if (r != VKVIT_OK) {
        vkvit__graph_fail(g, r, "attention '%s': %s", name, vkvit_last_error());
        return;
    }
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
}

/* Mirrors the `p` block of shaders/attention_prep.comp (element strides and offsets). */
typedef struct attention_prep_push {
    uint32_t Tq, Tkv;
    uint32_t n_heads;
    uint32_t q_stride, q_offset, q_batch_stride;
    uint32_t k_stride, k_offset, k_batch_stride;
    uint32_t v_stride, v_offset, v_batch_stride;
    uint32_t vt_stride;
    float q_scale, eps;
} attention_prep_push;
_Static_assert(sizeof(attention_prep_push) <= VKVIT_MAX_PUSH, "attention_prep push constants");

/* Mirrors the `p` block of shaders/softmax_rows.comp. */
typedef struct softmax_rows_push {
    uint32_t rows, n, n_pad, stride, offset;
} softmax_rows_push;

/* The unfused path (for CPU devices, where one fused kernel runs at ~1 GFLOP/s but the GEMM at 10-16): per
 * (b, h) with Tp = T rounded up to 4 (so both GEMMs take the vec4 path of gemm_cpu.comp):
 *   prep     qkv [B*T, 3C] -> q~ [B, H, T, dk] (RMSNorm, RoPE, * dk^-0.5), k~ [B, H, T, dk], vT [B, H, dk, Tp]
 *            (shaders/attention_prep.comp; vT columns T..Tp-1 are zero)
 *   qk       S [B*H, T, Tp] = q~ k~T                    (GEMM batched over B*H; columns T..Tp-1 untouched)
 *   softmax  S rows in place, columns T..Tp-1 set to 0   (shaders/softmax_rows.comp)
 *   pv       o[b*T + i, h*dk + d] = sum_j S[i, j] vT[d, j]   (GEMM, K = Tp, two-level batch z = b*H + h:
 *            outer b -> T*C, inner h -> dk in o) */
static void vit5_attention_gemm(vkvit__graph *g, const char *name, const vkvit__vit5_attention_op *op, uint32_t o) {
    const uint32_t B = op->B, T = op->T, C = op->C, H = op->heads, dk = C / H, Tp = (T + 3) & ~3u;
    const bool qk_norm = op->qk_norm != VKVIT_NONE;
    if (dk < 4 || dk % 4 || dk > 256) { /* split_half over 2 axes needs dk % 4 == 0 too */
        vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "attention '%s': head dim %u must be a multiple of 4 <= 256",
                          name, dk);
        return;
    }
    if ((uint64_t)B * H * T * Tp > UINT32_MAX / 2) {
        vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "attention '%s': score matrix of %llu floats is too large",
                          name, (unsigned long long)B * H * T * Tp);
        return;
    }
    char label[64];
    uint32_t qk_shape[2] = {B * H * T, dk}, vt_shape[2] = {B * H * dk, Tp}, s_shape[2] = {B * H * T, Tp};
    snprintf(label, sizeof label, "%s.q", name);
    const uint32_t qt = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, label, 2, qk_shape);
    snprintf(label, sizeof label, "%s.k", name);
    const uint32_t kt = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, label, 2, qk_shape);
    snprintf(label, sizeof label, "%s.vT", name);
    const uint32_t vt = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, label, 2, vt_shape);
    snprintf(label, sizeof label, "%s.scores", name);
    const uint32_t st = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, label, 2, s_shape);
    const bool cpu = g->ctx->caps.cpu_device;
    const uint32_t wg = cpu ? 8 : 64; /* CPU: one llvmpipe SIMD vector (8 rows/tokens side by side) */

    /* 1. prep */
    vkvit__kernel_desc kp = {
        .shader = VKVIT_SHADER_ATTENTION_PREP_F32_F32, .n_buffers = 8, .push_size = sizeof(attention_prep_push),
        .n_spec = 6, .spec = {dk, wg, VKVIT_ATTENTION_VIT5, qk_norm, op->pairing, 2},
    };
    vkvit__attention_config scfg = {.mode = VKVIT_ATTENTION_VIT5, .dk = dk, .qk_norm = qk_norm};
    attention_prep_push pp = {
        .Tq = T, .Tkv = T, .n_heads = H,
        .q_stride = 3 * C, .q_offset = 0, .q_batch_stride = T * 3 * C,
        .k_stride = 3 * C, .k_offset = C, .k_batch_stride = T * 3 * C,
        .v_stride = 3 * C, .v_offset = 2 * C, .v_batch_stride = T * 3 * C,
        .vt_stride = Tp, .q_scale = vkvit__attention_default_scale(&scfg), .eps = op->qk_norm_eps,
    };
    const uint32_t rope = or_dummy(op->rope, op->qkv);
    vkvit__node_binding bp[8] = {rd(op->qkv), rd(op->qkv), rd(op->qkv), rd(rope), rd(or_dummy(op->qk_norm, rope)),
                                 wr(qt), wr(kt), wr(vt)};
    snprintf(label, sizeof label, "%s.prep", name);
    vkvit__graph_node(g, label, "attn_prep", &kp, bp, 8, &pp, sizeof pp, VKVIT_CEIL_DIV(Tp, wg), 1, B);

    /* 2. S = q~ k~T per (b, h) */
    vkvit__gemm_op qk = {
        .a = {qt, 0, dk, T * dk}, .w = kt, .bias = VKVIT_NONE, .d = {st, 0, Tp, T * Tp},
        .M = T, .N = T, .K = dk, .batch = B * H, .act = VKVIT_ACT_NONE, .scale = VKVIT_NONE,
        .residual = {VKVIT_NONE, 0, 0, 0}, .w_stride = dk, .w_batch_stride = T * dk,
    };
    snprintf(label, sizeof label, "%s.qk", name);
    gemm_node(g, label, "attn_gemm", &qk);

    /* 3. softmax over each row's T scores, in place */
    vkvit__kernel_desc ks = {.shader = VKVIT_SHADER_SOFTMAX_ROWS_F32_F32, .n_buffers = 1,
                             .push_size = sizeof(softmax_rows_push), .n_spec = 2, .spec = {wg, cpu ? 512 : 0}};
    softmax_rows_push ps = {.rows = B * H * T, .n = T, .n_pad = Tp, .stride = Tp, .offset = 0};
    vkvit__node_binding bs[1] = {rdwr(st)};
    snprintf(label, sizeof label, "%s.softmax", name);
    vkvit__graph_node(g, label, "attn_softmax", &ks, bs, 1, &ps, sizeof ps, groups_for(ps.rows, wg), 1, 1);

    /* 4. o[b, :, h*dk:(h+1)*dk] = S vT^T per (b, h): two-level batch (outer b, inner h) */
    vkvit__gemm_op pv = {
        .a = {st, 0, Tp, H * T * Tp}, .w = vt, .bias = VKVIT_NONE, .d = {o, 0, C, T * C},
        .M = T, .N = dk, .K = Tp, .batch = B * H, .act = VKVIT_ACT_NONE, .scale = VKVIT_NONE,
        .residual = {VKVIT_NONE, 0, 0, 0}, .w_stride = Tp, .w_batch_stride = H * dk * Tp,
        .n_inner = H, .inner_stride_a = T * Tp, .inner_stride_w = dk * Tp, .inner_stride_d = dk,
    };
    snprintf(label, sizeof label, "%s.pv", name);
    gemm_node(g, label, "attn_gemm", &pv);
}

/* Path choice: op->path if set, else the environment variable VKVIT_ATTENTION ("fused" or "gemm"; read at every
 * graph build, so a session created after setenv() sees the new value), else the GEMM path on CPU devices
 * (caps.cpu_device: llvmpipe runs the GEMMs ~10x faster than the fused kernel) and the fused kernel
 * elsewhere. An unknown VKVIT_ATTENTION value fails the graph build with a sentence. */
uint32_t vkvit__op_vit5_attention(vkvit__graph *g, const char *name, const vkvit__vit5_attention_op *op) {
    if (g->error) return VKVIT_NONE;
    vkvit__attention_path path = op->path;
    if (path == VKVIT_ATTENTION_PATH_AUTO) {
        const char *env = getenv("VKVIT_ATTENTION");
        if (env && *env) {
            if (!strcmp(env, "fused")) path = VKVIT_ATTENTION_PATH_FUSED;
            else if (!strcmp(env, "gemm")) path = VKVIT_ATTENTION_PATH_GEMM;
            else
                return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT,
                                         "attention '%s': VKVIT_ATTENTION='%s' is neither 'fused' nor 'gemm'", name, env);
        } else {
            path = g->ctx->caps.cpu_device ? VKVIT_ATTENTION_PATH_GEMM : VKVIT_ATTENTION_PATH_FUSED;
        }
    }
    uint32_t shape[2] = {op->B * op->T, op->C};
    uint32_t o = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2, shape);
    if (path == VKVIT_ATTENTION_PATH_GEMM) vit5_attention_gemm(g, name, op, o);
    else vit5_attention_fused(g, name, op, o);
    return g->error ? VKVIT_NONE : o;
}

/* ------------------------------------------------------------------------------------------------------------
 * Generic attention (fused kernel, VKVIT_ATTENTION_GENERIC)
 * ------------------------------------------------------------------------------------------------------------ */

uint32_t vkvit__op_attention(vkvit__graph *g, const char *name, const vkvit__attention_op *op) {
    if (g->error) return VKVIT_NONE;
    if (op->heads == 0 || op->C % op->heads)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "attention '%s': %u heads do not divide C = %u", name,
                                 op->heads, op->C);
    if (op->rope != VKVIT_NONE && op->Tq != op->Tkv)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT,
                                 "attention '%s': RoPE needs as many keys as queries (Tq %u, Tkv %u)", name, op->Tq,
                                 op->Tkv);
    const uint32_t dk = op->C / op->heads;
    vkvit__attention_config cfg = {
        .mode = VKVIT_ATTENTION_GENERIC, .dk = dk, .qk_norm = op->qk_norm,
        .rope = op->rope != VKVIT_NONE ? VKVIT_ROPE_SPLIT_HALF : VKVIT_ROPE_NONE,
        .rope_axes = op->rope != VKVIT_NONE ? op->rope_axes : 0, .causal = op->causal,
    };
    vkvit__kernel_desc kd;
    vkvit_result r = vkvit__attention_kernel_desc(g->ctx, &cfg, NULL, &kd);
    if (r != VKVIT_OK) return vkvit__graph_fail(g, r, "attention '%s': %s", name, vkvit_last_error());
    uint32_t shape[2] = {op->B * op->Tq, op->C};
    uint32_t o = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2, shape);
    vkvit__attention_push p = {
        .Tq = op->Tq, .Tkv = op->Tkv,
        .q_stride = op->q.stride, .q_offset = op->q.offset, .q_batch_stride = op->q.batch_stride,
        .k_stride = op->k.stride, .k_offset = op->k.offset, .k_batch_stride = op->k.batch_stride,
        .v_stride = op->v.stride, .v_offset = op->v.offset, .v_batch_stride = op->v.batch_stride,
        .o_stride = op->C, .o_offset = 0, .o_batch_stride = op->Tq * op->C,
        .scale = vkvit__attention_default_scale(&cfg), .eps = 1e-12f,
    };
    uint32_t groups[3];
    vkvit__attention_groups(g->ctx, &cfg, &p, op->heads, op->B, groups);
    const uint32_t rope = or_dummy(op->rope, op->q.t);
    vkvit__node_binding b[6] = {rd(op->q.t), rd(op->k.t), rd(op->v.t), rd(rope), rd(rope), wr(o)};
    vkvit__graph_node(g, name, "attention", &kd, b, 6, &p, sizeof p, groups[0], groups[1], groups[2]);
    return g->error ? VKVIT_NONE : o;
}

/* ------------------------------------------------------------------------------------------------------------
 * glu / swiglu (shaders/glu.comp)
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct glu_push {
    uint32_t rows, Hd;
} glu_push;

uint32_t vkvit__op_glu(vkvit__graph *g, const char *name, uint32_t a, vkvit__glu_kind kind) {
    if (g->error) return VKVIT_NONE;
    const vkvit__tensor t = vkvit__graph_get(g, a);
    uint32_t C2 = t.shape[t.ndim - 1], rows = (uint32_t)(vkvit__numel(&t) / C2);
    if (C2 % 2)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "glu '%s': %u channels cannot be halved", name, C2);
    uint32_t shape[2] = {rows, C2 / 2};
    uint32_t h = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2, shape);
    vkvit__kernel_desc kd = {.shader = VKVIT_SHADER_GLU_F32_F32, .n_buffers = 2, .push_size = sizeof(glu_push),
                             .n_spec = 1, .spec = {(uint32_t)kind}};
    glu_push p = {rows, C2 / 2};
    vkvit__node_binding b[2] = {rd(a), wr(h)};
    vkvit__graph_node(g, name, "glu", &kd, b, 2, &p, sizeof p, groups_for((uint64_t)rows * (C2 / 2), 256), 1, 1);
    return h;
}
