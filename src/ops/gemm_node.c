// SPDX-License-Identifier: Apache-2.0
/* GEMM graph nodes (see gemm.h): vkvit__op_gemm / vkvit__op_linear, with the row split of weights beyond one
 * storage-buffer descriptor's range. Tile choice and kernel descriptions: gemm.c. */
#include "ops/gemm.h"

#include "ops/op_util.h"

/* A weight [N, K] larger than one storage-buffer descriptor can reach (maxStorageBufferRange: 128 MiB on lavapipe
 * and some mobile GPUs) runs as GEMMs over row blocks of it: block j computes output columns [n0, n0 + nc) from
 * weight rows [r0 + n0, r0 + n0 + nc) and bias / scale entries n0 + n, writing into the same D and residual at
 * column n0. r0 = w_offset / K: the GEMM may use a row range of the weight (the mLSTM's proj_up halves). Each
 * block binds a view from its first row's byte offset rounded down to VKVIT_ARENA_ALIGN, and starts w_offset
 * elements into it. Returns false when the weight cannot be split (batched or strided GEMMs, a w_offset inside a
 * row, or one row alone beyond the limit): the recorder then refuses it with a sentence. */
static bool gemm_split_weight_rows(vkvit__graph *g, const char *name, const char *kind, const vkvit__gemm_op *op) {
    const vkvit__tensor w = vkvit__graph_get(g, op->w);
    const uint64_t range = g->ctx->limits.maxStorageBufferRange, elem = vkvit__dtype_size(w.dtype);
    const uint64_t row_bytes = (uint64_t)op->K * elem, r0 = op->w_offset / op->K;
    if (w.bytes <= range || op->batch != 1 || op->w_offset % op->K || (op->w_stride && op->w_stride != op->K) ||
        w.ndim != 2 || w.shape[1] != op->K || r0 + op->N > w.shape[0] || range <= VKVIT_ARENA_ALIGN)
        return false;
    const uint64_t rows = (range - VKVIT_ARENA_ALIGN) / row_bytes; /* room for the lead-in of an aligned start */
    if (rows == 0) return false;
    for (uint64_t n0 = 0; n0 < op->N && !g->error; n0 += rows) {
        const uint32_t nc = (uint32_t)VKVIT_MIN(rows, op->N - n0);
        const uint64_t first = (r0 + n0) * row_bytes, start = first / VKVIT_ARENA_ALIGN * VKVIT_ARENA_ALIGN;
        const uint32_t lead = (uint32_t)((first - start) / elem); /* elements before the block's first row */
        vkvit__gemm_op part = *op;
        part.N = nc;
        part.w = vkvit__graph_view(g, op->w, "rows", start / elem, 1, (uint32_t[1]){lead + nc * op->K});
        part.w_offset = lead;
        part.n_offset = op->n_offset + (uint32_t)n0; /* bias and scale stay whole: [N] floats always fit */
        part.d.offset += (uint32_t)n0;
        if (op->residual.t != VKVIT_NONE) part.residual.offset += (uint32_t)n0;
        vkvit__op_gemm_kind(g, name, kind, &part);
    }
    return true;
}

void vkvit__op_gemm_kind(vkvit__graph *g, const char *name, const char *kind, const vkvit__gemm_op *op) {
    if (g->error) return;
    if (op->K == 0) { /* the kernels' K loops assume at least one chunk */
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "gemm '%s': K = 0 (a product over no input features)", name);
        return;
    }
    if (gemm_split_weight_rows(g, name, kind, op)) return;
    const bool has_res = op->residual.t != VKVIT_NONE;
    vkvit__gemm_config cfg = vkvit__gemm_pick(g->ctx, op->M, op->N, op->K);
    const vkvit__tensor w = vkvit__graph_get(g, op->w);
    const bool f16_math = g->opts.math == VKVIT_ELEM_F16;
    if (w.dtype == VKVIT_ELEM_F16 && !vkvit__is_weight(w.kind) && !f16_math) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "gemm '%s': an fp16 activation as B outside fp16-math", name);
        return;
    }
    if (w.dtype != VKVIT_ELEM_F32 && w.dtype != VKVIT_ELEM_F16) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "gemm '%s': B '%s' is %s, not f32 or f16", name, w.name,
                          vkvit__dtype_name(w.dtype));
        return;
    }
    cfg.b_f16 = w.dtype == VKVIT_ELEM_F16;
    /* fp16-math sessions: the GEMMs on fp16 weights, and the attention GEMMs whose k~ / vT are fp16 */
    cfg.f16_math = cfg.b_f16 && f16_math;
    /* ... which run on cooperative matrices where the device has them (and they passed their self-check) */
    if (cfg.f16_math && (g->ctx->policy.coopmat != VKVIT_COOPMAT_NONE))
        cfg = vkvit__gemm_pick_coopmat(g->ctx, op->M, op->N, op->K, op->batch);
    /* The CPU pick splits the rows of a single column tile only so that the CPU threads get several workgroups; a
     * batch gives them that already, and full-height tiles load each B float once per batch (attention: 6 heads of
     * a 201 x 201 product). Its 128-row tiles for many rows (gemm_pick_cpu) stay. */
    if (cfg.variant == VKVIT_GEMM_KERNEL_CPU && op->batch > 1 && VKVIT_CEIL_DIV(op->N, cfg.bn) == 1) cfg.bm = 256;
    if (op->tuning) {
        const vkvit_result r = vkvit__gemm_tune(g->ctx, op->tuning, op->M, op->N, op->K, op->batch, &cfg);
        if (r != VKVIT_OK) {
            vkvit__graph_fail(g, r, "gemm '%s': %s", name, vkvit_last_error());
            return;
        }
    }
    vkvit__gemm_epilogue ep = {.bias = op->bias != VKVIT_NONE, .act = (uint32_t)op->act,
                               .scale = op->scale != VKVIT_NONE, .residual = has_res, .causal = op->causal};
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
    cfg.vec4 = vkvit__gemm_push_vec4(&p, op->batch);
    cfg.pairs = vkvit__gemm_push_pairs(&p, op->batch, op->d_spare_column);
    cfg.one_chunk = vkvit__gemm_one_chunk(&cfg, &p);
    if (op->tuning) {
        cfg.vec4 &= !(op->tuning->flags & VKVIT_GEMM_BENCH_SCALAR_LOADS);
        cfg.pairs &= !(op->tuning->flags & VKVIT_GEMM_BENCH_SINGLE_STORES);
        cfg.unrolled &= !(op->tuning->flags & VKVIT_GEMM_BENCH_GENERIC);
        cfg.one_chunk &= !(op->tuning->flags & VKVIT_GEMM_BENCH_RUNNING_SUMS);
        op->tuning->chosen = cfg;
    }
    vkvit__kernel_desc kd;
    vkvit_result r = vkvit__gemm_kernel_desc(&cfg, &ep, NULL, &kd);
    if (r != VKVIT_OK) {
        vkvit__graph_fail(g, r, "gemm '%s': %s", name, vkvit_last_error());
        return;
    }
    /* Disabled terms bind some valid tensor; the kernel never reads it. */
    vkvit__node_binding b[VKVIT_GEMM_BINDINGS] = {
        rd(op->a.t), rd(op->w), rd(or_dummy(op->bias, op->w)), wr(op->d.t), rd(or_dummy(op->scale, op->w)),
        rd(has_res ? op->residual.t : op->w),
    };
    if (has_res && op->residual.t == op->d.t) b[3].access |= VKVIT_READ;
    uint32_t groups[3];
    vkvit__gemm_groups(&cfg, &p, op->batch, groups);
    if (g->ctx->policy.packed_bindings) {
        if (kd.shader != VKVIT_SHADER_GEMM_F32_F32) {
            vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "gemm '%s': the packed-bindings GEMM (the device's %u "
                              "storage buffers per stage) is fp32 (B '%s' is %s)", name,
                              g->ctx->caps.max_storage_buffers_per_stage, w.name, vkvit__dtype_name(w.dtype));
            return;
        }
        ops_packed_node(g, name, kind, &kd, VKVIT_SHADER_GEMM_F32_F32_PACKED, b, VKVIT_GEMM_BINDINGS, &p, sizeof p,
                        groups[0], groups[1], groups[2]);
        return;
    }
    vkvit__graph_node(g, name, kind, &kd, b, VKVIT_GEMM_BINDINGS, &p, sizeof p, groups[0], groups[1], groups[2]);
}

void vkvit__op_gemm(vkvit__graph *g, const char *name, const vkvit__gemm_op *op) {
    vkvit__op_gemm_kind(g, name, "gemm", op);
}

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
