// SPDX-License-Identifier: Apache-2.0
/* test_backend_ops: one table-driven harness for the single-op graph nodes of src/ops (in the spirit of ggml's
 * test-backend-ops). Each row of `cases` below names an op, its shape parameters, its data types and a tolerance;
 * each op has a builder (random inputs -> graph tensors -> the library's own op builder) and a plain-C
 * double-precision reference.
 *
 *   ./build/test_backend_ops [filter]          correctness (what CTest runs): every case whose name contains
 *                                              `filter` (all without one)
 *   ./build/test_backend_ops packed [filter]   the cases of the ops with packed-bindings variants (GEMM and GRN;
 *                                              shaders/packed.glsl) under the kernel policy of a device with 4
 *                                              storage buffers per stage (policy.packed_bindings), on any device:
 *                                              CTest's test_backend_ops_packed
 *   ./build/test_backend_ops perf [filter]     also times each case with GPU timestamps (the recorder's per-node
 *                                              queries): median over VKVIT_PERF_REPS submissions (default 20) after
 *                                              2 warm-ups; prints us, GB/s and GFLOP/s per case. Not run by CTest.
 *
 * After the table come VKVIT_TEST_CASES (default 48) drawn cases: op, shape and switches drawn from the seed
 * (draw_case). Every case runs through the real graph path (tests/graph_util.h): op builder -> planner -> NaN-filled
 * arena -> record (data-flow barriers) -> submit, on the validation-enabled ctx of test_util.h (synchronization
 * validation on; vt_finish fails on any message). Inputs are fresh random values from a seed that is printed first;
 * VKVIT_TEST_SEED=S reruns those exact inputs (each case draws from its own stream, seeded from S and the case's
 * number, so a filter does not change what a case gets). Every output the op writes starts as NaN: an
 * ACTIVATION output from the poisoned arena, copy_rows' written rows as NaN in the destination's upload. GRN adds
 * onto its residual stream in place, so that one input cannot be poisoned (its statistics tensor is).
 *
 * Error measure: max |got - want| / max |want| over the output (vt_max_rel_err; a NaN anywhere is infinite), at
 * the case's `tol`. tol 0 means bitwise equal (copies). top-K: the same class indices, probabilities within `tol`
 * absolute. Data types: every op reads and writes fp32 (top-K writes uint32 classes + fp32 probabilities); the
 * graph runner has no fp16 weight buffer, so fp16 GEMM weights are tests/ops/test_gemm.c's and test_gemm_drawn.c's.
 *
 * Device choices (work splits, kernels, tiles) are the op builders' own for this device; the harness never sets
 * them. lavapipe's three subgroup sizes are separate CTest entries (test_backend_ops_lp128 / _lp512), and the
 * "[vit5s-b3]" rows run again in GPU mode at the three (test_backend_ops_vit5s_b3_gpu_lp*).
 *
 * Adding a case: a row in `cases` (op, p[] as the op's `params` line names them, flags, dtype, tol). Adding an op:
 * a bo_op value, a build and a ref function, a row of `ops`, and a branch in draw_case (docs/kernels.md, "The op
 * table"). */
#include "graph_util.h"
#include "ops/ops.h"
#include "ops/topk.h"
#include "policy/policy.h"

#include <float.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------------------------
 * The case table
 * ------------------------------------------------------------------------------------------------------------ */

typedef enum bo_op {
    BO_GLU,        /* vkvit__op_glu: a [rows, 2 Hd] -> [rows, Hd] */
    BO_MEAN_ROWS,  /* vkvit__op_mean_rows: mean over rows skip..T-1 of each image of [B, T, C] -> [B, C] */
    BO_COPY_ROWS,  /* vkvit__op_copy_rows: n rows of C from src (row offset so) into dst [B, Td, C] at row od */
    BO_NORM,       /* vkvit__op_norm: rows skip..T-1 of each image of [B, T, C], groups of G -> dense [B (T-skip), C] */
    BO_RMSNORM,    /* vkvit__op_rmsnorm: a dense [rows, C] -> [rows, C] */
    BO_GEMM,       /* vkvit__op_gemm, batch products: act(a [M, K] . w [N, K]^T + bias) * scale + residual -> [M, N] */
    BO_GRN,        /* vkvit__op_grn_residual: x [B, T, C] += ls * (gamma * (a * nx) + beta + a) */
    BO_PATCHIFY,   /* vkvit__op_patchify: img [B, H, W, Cin] -> [B Hp Wp, Cin P P] */
    BO_TOPK,       /* vkvit__op_topk: softmax + top-K of logits [B, N] */
    BO_ATTENTION,  /* vkvit__op_attention: softmax(q k^T / sqrt(dk)) v per head of a fused qkv [B T, 3C] -> [B T, C] */
    BO_N_OPS
} bo_op;

typedef enum bo_dtype {
    BO_F32,        /* fp32 in, fp32 out */
    BO_F32_U32,    /* fp32 in; uint32 indices + fp32 values out (top-K) */
} bo_dtype;

/* Op switches (flags). */
enum {
    F_SWIGLU = 1u << 0,     /* glu: silu(a[:h]) * a[h:] instead of a[:h] * sigmoid(a[h:]) */
    F_LAYER = 1u << 1,      /* norm: LayerNorm (else RMSNorm) */
    F_ONE_PLUS = 1u << 2,   /* norm: scale (1 + w) */
    F_BIAS = 1u << 3,       /* norm, gemm: + bias */
    F_NO_WEIGHT = 1u << 4,  /* norm: no weight (scale 1, or 2 with F_ONE_PLUS) */
    F_SCALE = 1u << 5,      /* gemm: * scale[N] (LayerScale) */
    F_RESIDUAL = 1u << 6,   /* gemm: + residual [M, N]; grn: LayerScale ls [C] */
    F_BROADCAST = 1u << 7,  /* copy_rows: one source image for every destination image (batch stride 0) */
    F_ACT_SHIFT = 8,        /* gemm: activation vkvit__act in bits 8-9 */
    F_W_BATCHED = 1u << 10, /* gemm: a weight matrix per batch index (w [batch, N, K]; else one shared) */
    F_VIT5S_B3 = 1u << 11,  /* any op: a ViT-5-S batch-3 shape; "[vit5s-b3]" in the name, for the filter */
};
#define F_GELU ((uint32_t)VKVIT_ACT_GELU << F_ACT_SHIFT)
#define F_RELU ((uint32_t)VKVIT_ACT_RELU << F_ACT_SHIFT)
#define F_SILU ((uint32_t)VKVIT_ACT_SILU << F_ACT_SHIFT)

typedef struct bo_case {
    bo_op op;
    uint32_t p[6];          /* shape parameters, in the order of the op's `params` */
    uint32_t flags;
    bo_dtype dtype;
    double tol;             /* max relative error (0: bitwise equal); top-K: probabilities, absolute */
} bo_case;

/* fp32 results of double-precision formulas: sums of up to ~1000 terms of size <= 1 stay well inside 1e-5 of the
 * largest output; 2e-6 absolute is test_topk.c's probability bound. */
#define TOL 1e-5
#define TOL_EXACT 0.0
#define TOL_PROB 2e-6

static const bo_case cases[] = {
    /* glu: rows, Hd */
    {BO_GLU, {1, 1}, 0, BO_F32, TOL},
    {BO_GLU, {3, 7}, 0, BO_F32, TOL},
    {BO_GLU, {33, 255}, 0, BO_F32, TOL},
    {BO_GLU, {7, 257}, 0, BO_F32, TOL},
    {BO_GLU, {1, 1}, F_SWIGLU, BO_F32, TOL},
    {BO_GLU, {3, 33}, F_SWIGLU, BO_F32, TOL},
    {BO_GLU, {257, 7}, F_SWIGLU, BO_F32, TOL},
    {BO_GLU, {5, 1536}, F_SWIGLU, BO_F32, TOL},
    /* mean_rows: B, T, C, skip */
    {BO_MEAN_ROWS, {1, 1, 1, 0}, 0, BO_F32, TOL},
    {BO_MEAN_ROWS, {3, 7, 3, 0}, 0, BO_F32, TOL},
    {BO_MEAN_ROWS, {2, 197, 33, 1}, 0, BO_F32, TOL},
    {BO_MEAN_ROWS, {1, 257, 255, 5}, 0, BO_F32, TOL},
    {BO_MEAN_ROWS, {7, 33, 257, 32}, 0, BO_F32, TOL},
    /* copy_rows: B, n_rows, C, src rows Ts (row offset so = Ts - n_rows), dst rows Td, dst row offset od */
    {BO_COPY_ROWS, {1, 1, 1, 1, 1, 0}, 0, BO_F32, TOL_EXACT},
    {BO_COPY_ROWS, {3, 1, 33, 1, 7, 0}, F_BROADCAST, BO_F32, TOL_EXACT},  /* a CLS token into every image */
    {BO_COPY_ROWS, {2, 4, 255, 4, 9, 1}, F_BROADCAST, BO_F32, TOL_EXACT}, /* registers after it */
    {BO_COPY_ROWS, {3, 7, 3, 9, 8, 1}, 0, BO_F32, TOL_EXACT},
    {BO_COPY_ROWS, {2, 33, 257, 33, 33, 0}, 0, BO_F32, TOL_EXACT},
    /* norm: B, T, C, G, skip */
    {BO_NORM, {1, 1, 1, 1, 0}, 0, BO_F32, TOL},
    {BO_NORM, {1, 3, 7, 7, 0}, 0, BO_F32, TOL},
    {BO_NORM, {2, 33, 255, 255, 0}, F_BIAS, BO_F32, TOL},
    {BO_NORM, {1, 7, 768, 64, 0}, F_ONE_PLUS, BO_F32, TOL},
    {BO_NORM, {3, 5, 257, 257, 1}, F_NO_WEIGHT, BO_F32, TOL},
    {BO_NORM, {1, 1, 1, 1, 0}, F_LAYER | F_BIAS, BO_F32, TOL},
    {BO_NORM, {1, 3, 3, 3, 0}, F_LAYER, BO_F32, TOL},
    {BO_NORM, {2, 7, 33, 33, 0}, F_LAYER | F_BIAS, BO_F32, TOL},
    {BO_NORM, {1, 33, 255, 255, 0}, F_LAYER | F_ONE_PLUS, BO_F32, TOL},
    {BO_NORM, {2, 9, 257, 257, 8}, F_LAYER | F_BIAS, BO_F32, TOL},      /* the CLS row of each image (readout) */
    {BO_NORM, {1, 7, 384, 64, 0}, F_LAYER | F_ONE_PLUS, BO_F32, TOL},  /* multi-head LayerNorm */
    {BO_NORM, {2, 3, 12, 4, 0}, F_LAYER | F_NO_WEIGHT | F_BIAS, BO_F32, TOL},
    /* rmsnorm: rows, C */
    {BO_RMSNORM, {1, 1}, 0, BO_F32, TOL},
    {BO_RMSNORM, {7, 33}, 0, BO_F32, TOL},
    {BO_RMSNORM, {33, 384}, 0, BO_F32, TOL},
    /* gemm: M, N, K, batch */
    {BO_GEMM, {1, 1, 1, 1}, 0, BO_F32, TOL},
    {BO_GEMM, {1, 1000, 384, 1}, F_BIAS, BO_F32, TOL},                   /* a classifier head on one image */
    {BO_GEMM, {1, 33, 255, 1}, 0, BO_F32, TOL},
    {BO_GEMM, {3, 7, 33, 1}, F_BIAS | F_RELU, BO_F32, TOL},
    {BO_GEMM, {7, 257, 3, 1}, F_SILU, BO_F32, TOL},
    {BO_GEMM, {33, 64, 257, 1}, F_BIAS | F_GELU, BO_F32, TOL},
    {BO_GEMM, {197, 96, 64, 1}, F_BIAS | F_SCALE | F_RESIDUAL, BO_F32, TOL}, /* an output projection + LayerScale */
    {BO_GEMM, {255, 33, 129, 1}, F_SCALE, BO_F32, TOL},
    {BO_GEMM, {64, 128, 1024, 1}, 0, BO_F32, TOL},
    {BO_GEMM, {6, 33, 17, 4}, F_BIAS | F_RESIDUAL, BO_F32, TOL},      /* a batch on one shared weight */
    {BO_GEMM, {7, 5, 64, 3}, F_W_BATCHED, BO_F32, TOL},               /* per-batch B: attention-like q . k^T */
    {BO_GEMM, {65, 65, 32, 6}, F_W_BATCHED | F_SCALE, BO_F32, TOL},
    /* grn: B, T, C */
    {BO_GRN, {1, 1, 3}, 0, BO_F32, TOL},
    {BO_GRN, {2, 7, 33}, F_RESIDUAL, BO_F32, TOL},
    {BO_GRN, {3, 49, 255}, F_RESIDUAL, BO_F32, TOL},
    {BO_GRN, {1, 33, 257}, 0, BO_F32, TOL},
    /* patchify: B, H, W, Cin, P */
    {BO_PATCHIFY, {1, 1, 1, 1, 1}, 0, BO_F32, TOL_EXACT},
    {BO_PATCHIFY, {3, 10, 7, 1, 3}, 0, BO_F32, TOL_EXACT},
    {BO_PATCHIFY, {2, 33, 35, 3, 16}, 0, BO_F32, TOL_EXACT},
    {BO_PATCHIFY, {1, 224, 224, 3, 16}, 0, BO_F32, TOL_EXACT},
    /* topk: B, N, K */
    {BO_TOPK, {1, 1, 1}, 0, BO_F32_U32, TOL_PROB},
    {BO_TOPK, {3, 7, 3}, 0, BO_F32_U32, TOL_PROB},
    {BO_TOPK, {2, 1000, 5}, 0, BO_F32_U32, TOL_PROB},
    {BO_TOPK, {65, 257, 32}, 0, BO_F32_U32, TOL_PROB},
    /* attention: B, T, C, heads */
    {BO_ATTENTION, {1, 1, 32, 1}, 0, BO_F32, TOL},
    {BO_ATTENTION, {2, 17, 96, 3}, 0, BO_F32, TOL},
    /* ViT-5-S at batch 3, the bench shapes that once failed (F_VIT5S_B3: "[vit5s-b3]" in the name; CMakeLists.txt
     * runs them in GPU mode at subgroups of 4, 8 and 16): 3 x 201 tokens (CLS + 196 patches + 4 registers), C 384,
     * 6 heads of 64, MLP 1536. The block's LayerNorm and GEMMs (qkv, proj + LayerScale + residual, fc1 + GELU,
     * fc2 + LayerScale + residual), the attention core, the unfused path's batched products (S = q k^T and S v,
     * one per image and head: 18) and the classifier head. */
    {BO_NORM, {3, 201, 384, 384, 0}, F_LAYER | F_BIAS | F_VIT5S_B3, BO_F32, TOL},
    {BO_GEMM, {603, 1152, 384, 1}, F_BIAS | F_VIT5S_B3, BO_F32, TOL},
    {BO_GEMM, {603, 384, 384, 1}, F_BIAS | F_SCALE | F_RESIDUAL | F_VIT5S_B3, BO_F32, TOL},
    {BO_GEMM, {603, 1536, 384, 1}, F_BIAS | F_GELU | F_VIT5S_B3, BO_F32, TOL},
    {BO_GEMM, {603, 384, 1536, 1}, F_BIAS | F_SCALE | F_RESIDUAL | F_VIT5S_B3, BO_F32, TOL},
    {BO_ATTENTION, {3, 201, 384, 6}, F_VIT5S_B3, BO_F32, TOL},
    {BO_GEMM, {201, 201, 64, 18}, F_W_BATCHED | F_VIT5S_B3, BO_F32, TOL},
    {BO_GEMM, {201, 64, 201, 18}, F_W_BATCHED | F_VIT5S_B3, BO_F32, TOL},
    {BO_GEMM, {3, 1000, 384, 1}, F_BIAS | F_VIT5S_B3, BO_F32, TOL},
};

/* ------------------------------------------------------------------------------------------------------------
 * One case's host data
 * ------------------------------------------------------------------------------------------------------------ */

#define BO_MAX_HOST 6

typedef struct bo_run {
    const bo_case *c;
    float *host[BO_MAX_HOST]; /* the op's host inputs, in the order its build function creates them */
    size_t n_host[BO_MAX_HOST];
    uint32_t out;             /* the tensor compared with the reference */
    double bytes, flops;      /* minimum memory traffic and nominal arithmetic (perf mode) */
    double err_bound;         /* set by a reference whose fp32 error the inputs' conditioning bounds (LayerNorm
                                 of small groups): the relative error fp32 arithmetic can reach; the case passes
                                 within max(tol, err_bound) */
} bo_run;

static float *host_rand(bo_run *run, int slot, size_t n, float scale) {
    float *x = malloc((n ? n : 1) * sizeof *x);
    if (!x) exit(1);
    for (size_t i = 0; i < n; i++) x[i] = scale * vt_rand_f();
    run->host[slot] = x, run->n_host[slot] = n;
    return x;
}

static uint32_t input(vt_graph *r, bo_run *run, int slot, const char *name, uint32_t ndim, const uint32_t *shape,
                      float scale) {
    size_t n = 1;
    for (uint32_t i = 0; i < ndim; i++) n *= shape[i];
    return vt_graph_input(r, name, host_rand(run, slot, n, scale), ndim, shape);
}

static uint32_t weight(vt_graph *r, bo_run *run, int slot, const char *name, uint32_t ndim, const uint32_t *shape,
                       float scale) {
    size_t n = 1;
    for (uint32_t i = 0; i < ndim; i++) n *= shape[i];
    return vt_graph_weight(r, name, host_rand(run, slot, n, scale), ndim, shape);
}

static uint32_t activation(vt_graph *r, const char *name, uint32_t ndim, const uint32_t *shape) {
    return vkvit__graph_tensor(&r->g, VKVIT_TENSOR_ACTIVATION, name, ndim, shape);
}

/* ------------------------------------------------------------------------------------------------------------
 * glu
 * ------------------------------------------------------------------------------------------------------------ */

static void build_glu(vt_graph *r, bo_run *run) {
    const uint32_t rows = run->c->p[0], Hd = run->c->p[1], shape[2] = {rows, 2 * Hd};
    uint32_t a = input(r, run, 0, "a", 2, shape, 4.0f);
    run->out = vkvit__op_glu(&r->g, "glu", a, run->c->flags & F_SWIGLU ? VKVIT_SWIGLU : VKVIT_GLU);
    run->bytes = 4.0 * rows * 3 * Hd, run->flops = 4.0 * rows * Hd;
}

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static void ref_glu(bo_run *run, double *y) {
    const uint32_t rows = run->c->p[0], Hd = run->c->p[1];
    const float *a = run->host[0];
    for (uint32_t i = 0; i < rows; i++)
        for (uint32_t c = 0; c < Hd; c++) {
            const double u = a[(size_t)i * 2 * Hd + c], v = a[(size_t)i * 2 * Hd + Hd + c];
            y[(size_t)i * Hd + c] = run->c->flags & F_SWIGLU ? u * sigmoid(u) * v : u * sigmoid(v);
        }
}

/* ------------------------------------------------------------------------------------------------------------
 * mean_rows
 * ------------------------------------------------------------------------------------------------------------ */

static void build_mean_rows(vt_graph *r, bo_run *run) {
    const uint32_t B = run->c->p[0], T = run->c->p[1], C = run->c->p[2], skip = run->c->p[3], shape[3] = {B, T, C};
    uint32_t x = input(r, run, 0, "x", 3, shape, 1.0f);
    vkvit__mat src = {x, skip * C, C, T * C};
    run->out = vkvit__op_mean_rows(&r->g, "mean", src, B, T - skip, C);
    run->bytes = 4.0 * B * (T - skip + 1) * C, run->flops = (double)B * (T - skip) * C;
}

static void ref_mean_rows(bo_run *run, double *y) {
    const uint32_t B = run->c->p[0], T = run->c->p[1], C = run->c->p[2], skip = run->c->p[3];
    const float *x = run->host[0];
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t c = 0; c < C; c++) {
            double s = 0.0;
            for (uint32_t t = skip; t < T; t++) s += x[((size_t)b * T + t) * C + c];
            y[(size_t)b * C + c] = s / (T - skip);
        }
}

/* ------------------------------------------------------------------------------------------------------------
 * copy_rows: the destination is an INPUT holding random values outside the rows written (which must survive) and
 * NaN in them (which must all be overwritten).
 * ------------------------------------------------------------------------------------------------------------ */

static void build_copy_rows(vt_graph *r, bo_run *run) {
    const uint32_t *p = run->c->p, B = p[0], n = p[1], C = p[2], Ts = p[3], Td = p[4], od = p[5];
    const bool bcast = run->c->flags & F_BROADCAST;
    const uint32_t so = Ts - n, src_shape[3] = {bcast ? 1 : B, Ts, C}, dst_shape[3] = {B, Td, C};
    uint32_t src = bcast ? weight(r, run, 0, "src", 3, src_shape, 1.0f) : input(r, run, 0, "src", 3, src_shape, 1.0f);
    float *d0 = host_rand(run, 1, (size_t)B * Td * C, 1.0f);
    float nan;
    const uint32_t nan_bits = VT_NAN_BITS;
    memcpy(&nan, &nan_bits, sizeof nan);
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t t = od; t < od + n; t++)
            for (uint32_t c = 0; c < C; c++) d0[((size_t)b * Td + t) * C + c] = nan;
    uint32_t dst = vt_graph_input(r, "dst", d0, 3, dst_shape);
    vkvit__mat ms = {src, so * C, C, bcast ? 0 : Ts * C}, md = {dst, od * C, C, Td * C};
    vkvit__op_copy_rows(&r->g, "copy", ms, md, B, n, C);
    vt_graph_output(r, dst);
    run->out = dst;
    run->bytes = 8.0 * B * n * C, run->flops = 0;
}

static void ref_copy_rows(bo_run *run, double *y) {
    const uint32_t *p = run->c->p, B = p[0], n = p[1], C = p[2], Ts = p[3], Td = p[4], od = p[5];
    const bool bcast = run->c->flags & F_BROADCAST;
    const float *s = run->host[0], *d0 = run->host[1];
    for (size_t i = 0; i < (size_t)B * Td * C; i++) y[i] = d0[i];
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t t = 0; t < n; t++)
            for (uint32_t c = 0; c < C; c++)
                y[((size_t)b * Td + od + t) * C + c] = s[((size_t)(bcast ? 0 : b) * Ts + Ts - n + t) * C + c];
}

/* ------------------------------------------------------------------------------------------------------------
 * Norms
 * ------------------------------------------------------------------------------------------------------------ */

#define RMS_EPS 1e-6f
#define LN_EPS 1e-5f

static void build_norm(vt_graph *r, bo_run *run) {
    const uint32_t *p = run->c->p, B = p[0], T = p[1], C = p[2], G = p[3], skip = p[4], f = run->c->flags;
    const uint32_t rows = B * (T - skip), shape[3] = {B, T, C}, wshape[1] = {C}, oshape[2] = {rows, C};
    uint32_t x = input(r, run, 0, "x", 3, shape, 2.0f);
    /* weight and bias around 1 and 0; their host copies stay NULL when absent */
    uint32_t w = f & F_NO_WEIGHT ? VKVIT_NONE : weight(r, run, 1, "weight", 1, wshape, 1.0f);
    uint32_t bias = f & F_BIAS ? weight(r, run, 2, "bias", 1, wshape, 0.5f) : VKVIT_NONE;
    uint32_t y = activation(r, "y", 2, oshape);
    vkvit__norm_op op = {
        .kind = f & F_LAYER ? VKVIT_NORM_LAYER : VKVIT_NORM_RMS, .C = C, .group = G, .rows = rows,
        .rows_per_batch = T - skip, .in = {x, skip * C, C, T * C}, .out = vkvit__mat_dense(y, T - skip, C),
        .weight = w, .bias = bias, .one_plus_w = f & F_ONE_PLUS, .eps = f & F_LAYER ? LN_EPS : RMS_EPS,
    };
    vkvit__op_norm(&r->g, "norm", &op);
    vt_graph_output(r, y);
    run->out = y;
    run->bytes = 4.0 * (2.0 * rows * C + 2.0 * C), run->flops = 6.0 * rows * C;
}

/* rows of `rows_per_batch` per image; row r of image b at x + (b T + skip + r) C; groups of G channels.
 * Returns the conditioning of the LayerNorm's centring: the largest max|x| / sqrt(var + eps) x |scale| over the
 * groups. fp32's x - mean carries an absolute error of a few ulps of max|x|, which the normalisation multiplies by
 * that factor: a group of 2 channels with close values has var << eps and a factor in the hundreds, so no fp32
 * kernel meets a fixed relative tolerance there (RMSNorm does not subtract: 0). */
static double ref_norm_rows(const float *x, const float *w, const float *bias, uint32_t B, uint32_t T, uint32_t C,
                            uint32_t G, uint32_t skip, bool layer, bool one_plus, double eps, double *y) {
    double cond = 0.0;
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t t = skip; t < T; t++) {
            const float *row = x + ((size_t)b * T + t) * C;
            double *out = y + ((size_t)b * (T - skip) + t - skip) * C;
            for (uint32_t g0 = 0; g0 < C; g0 += G) {
                double mean = 0.0, var = 0.0;
                for (uint32_t c = g0; c < g0 + G; c++) mean += row[c];
                mean /= G;
                for (uint32_t c = g0; c < g0 + G; c++) {
                    const double v = layer ? row[c] - mean : row[c];
                    var += v * v;
                }
                const double inv = 1.0 / sqrt(var / G + eps);
                double xmax = 0.0, smax = 0.0;
                for (uint32_t c = g0; c < g0 + G; c++) {
                    const double scale = (w ? w[c] : 1.0) + (one_plus ? 1.0 : 0.0);
                    out[c] = ((layer ? row[c] - mean : row[c]) * inv) * scale + (bias ? bias[c] : 0.0);
                    xmax = fmax(xmax, fabs(row[c])), smax = fmax(smax, fabs(scale));
                }
                if (layer) cond = fmax(cond, xmax * inv * smax);
            }
        }
    return cond;
}

static void ref_norm(bo_run *run, double *y) {
    const uint32_t *p = run->c->p, f = run->c->flags;
    const double cond = ref_norm_rows(run->host[0], run->host[1], run->host[2], p[0], p[1], p[2], p[3], p[4],
                                      f & F_LAYER, f & F_ONE_PLUS, f & F_LAYER ? LN_EPS : RMS_EPS, y);
    /* 4 ulps of centring error (about 10x what lavapipe shows), amplified by the conditioning, relative to the
     * largest output (as vt_max_rel_err measures) */
    const uint32_t B = p[0], T = p[1], C = p[2], skip = p[4];
    double ymax = 0.0;
    for (size_t i = 0; i < (size_t)B * (T - skip) * C; i++) ymax = fmax(ymax, fabs(y[i]));
    run->err_bound = ymax > 0.0 ? 4.0 * FLT_EPSILON * cond / ymax : 0.0;
}

static void build_rmsnorm(vt_graph *r, bo_run *run) {
    const uint32_t rows = run->c->p[0], C = run->c->p[1], shape[2] = {rows, C}, wshape[1] = {C};
    uint32_t x = input(r, run, 0, "x", 2, shape, 2.0f);
    run->out = vkvit__op_rmsnorm(&r->g, "rmsnorm", x, weight(r, run, 1, "weight", 1, wshape, 1.0f), RMS_EPS);
    run->bytes = 4.0 * (2.0 * rows * C + C), run->flops = 4.0 * rows * C;
}

static void ref_rmsnorm(bo_run *run, double *y) {
    const uint32_t rows = run->c->p[0], C = run->c->p[1];
    ref_norm_rows(run->host[0], run->host[1], NULL, 1, rows, C, C, 0, false, false, RMS_EPS, y);
}

/* ------------------------------------------------------------------------------------------------------------
 * GEMM
 * ------------------------------------------------------------------------------------------------------------ */

static void build_gemm(vt_graph *r, bo_run *run) {
    const uint32_t M = run->c->p[0], N = run->c->p[1], K = run->c->p[2], Z = run->c->p[3], f = run->c->flags;
    const bool wz = f & F_W_BATCHED;
    const uint32_t ashape[3] = {Z, M, K}, wshape[3] = {Z, N, K}, nshape[1] = {N}, dshape[3] = {Z, M, N};
    uint32_t a = input(r, run, 0, "a", 3, ashape, 1.0f);
    uint32_t w = wz ? weight(r, run, 1, "w", 3, wshape, 1.0f) : weight(r, run, 1, "w", 2, wshape + 1, 1.0f);
    uint32_t bias = f & F_BIAS ? weight(r, run, 2, "bias", 1, nshape, 1.0f) : VKVIT_NONE;
    uint32_t scale = f & F_SCALE ? weight(r, run, 3, "scale", 1, nshape, 1.0f) : VKVIT_NONE;
    uint32_t res = f & F_RESIDUAL ? input(r, run, 4, "residual", 3, dshape, 4.0f) : VKVIT_NONE;
    uint32_t d = activation(r, "d", 3, dshape);
    vkvit__gemm_op op = {
        .a = vkvit__mat_dense(a, M, K), .w = w, .bias = bias, .d = vkvit__mat_dense(d, M, N), .M = M, .N = N, .K = K,
        .batch = Z, .act = (vkvit__act)((f >> F_ACT_SHIFT) & 3u), .scale = scale,
        .residual = res != VKVIT_NONE ? vkvit__mat_dense(res, M, N) : (vkvit__mat){VKVIT_NONE, 0, 0, 0},
        .w_batch_stride = wz ? N * K : 0,
    };
    vkvit__op_gemm(&r->g, "gemm", &op);
    vt_graph_output(r, d);
    run->out = d;
    run->bytes = 4.0 * ((double)Z * M * K + (double)(wz ? Z : 1) * N * K +
                        (double)Z * M * N * (res != VKVIT_NONE ? 2 : 1));
    run->flops = 2.0 * Z * M * N * K;
}

static double act_ref(uint32_t act, double x) {
    switch (act) {
    case VKVIT_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case VKVIT_ACT_RELU: return x > 0 ? x : 0.0;
    case VKVIT_ACT_SILU: return x * sigmoid(x);
    default: return x;
    }
}

static void ref_gemm(bo_run *run, double *y) {
    const uint32_t M = run->c->p[0], N = run->c->p[1], K = run->c->p[2], Z = run->c->p[3], f = run->c->flags;
    const float *bias = run->host[2], *scale = run->host[3];
    for (uint32_t z = 0; z < Z; z++) {
        const float *a = run->host[0] + (size_t)z * M * K;
        const float *w = run->host[1] + (f & F_W_BATCHED ? (size_t)z * N * K : 0);
        const float *res = run->host[4] ? run->host[4] + (size_t)z * M * N : NULL;
        double *d = y + (size_t)z * M * N;
        for (uint32_t m = 0; m < M; m++)
            for (uint32_t n = 0; n < N; n++) {
                double s = 0.0;
                for (uint32_t k = 0; k < K; k++) s += (double)a[(size_t)m * K + k] * w[(size_t)n * K + k];
                if (bias) s += bias[n];
                s = act_ref((f >> F_ACT_SHIFT) & 3u, s);
                if (scale) s *= scale[n];
                if (res) s += res[(size_t)m * N + n];
                d[(size_t)m * N + n] = s;
            }
    }
}

/* ------------------------------------------------------------------------------------------------------------
 * GRN + LayerScale + residual
 * ------------------------------------------------------------------------------------------------------------ */

#define GRN_EPS 1e-6f

static void build_grn(vt_graph *r, bo_run *run) {
    const uint32_t B = run->c->p[0], T = run->c->p[1], C = run->c->p[2], shape[3] = {B, T, C}, cshape[1] = {C};
    uint32_t a = input(r, run, 0, "a", 3, shape, 1.0f);
    uint32_t gamma = weight(r, run, 1, "gamma", 1, cshape, 1.0f), beta = weight(r, run, 2, "beta", 1, cshape, 1.0f);
    uint32_t ls = run->c->flags & F_RESIDUAL ? weight(r, run, 3, "ls", 1, cshape, 1.0f) : VKVIT_NONE;
    uint32_t x = input(r, run, 4, "x", 3, shape, 1.0f); /* the residual stream, updated in place */
    vkvit__op_grn_residual(&r->g, "grn", a, gamma, beta, ls, x, B, T, C, GRN_EPS);
    vt_graph_output(r, x);
    run->out = x;
    run->bytes = 4.0 * 3.0 * B * T * C, run->flops = 8.0 * B * T * C;
}

static void ref_grn(bo_run *run, double *y) {
    const uint32_t B = run->c->p[0], T = run->c->p[1], C = run->c->p[2];
    const float *a = run->host[0], *gamma = run->host[1], *beta = run->host[2], *ls = run->host[3], *x = run->host[4];
    double *g = malloc(C * sizeof *g);
    if (!g) exit(1);
    for (uint32_t b = 0; b < B; b++) {
        const float *ab = a + (size_t)b * T * C;
        double mean = 0.0;
        for (uint32_t c = 0; c < C; c++) {
            double s = 0.0;
            for (uint32_t t = 0; t < T; t++) s += (double)ab[(size_t)t * C + c] * ab[(size_t)t * C + c];
            g[c] = sqrt(s);
            mean += g[c];
        }
        mean /= C;
        for (uint32_t t = 0; t < T; t++)
            for (uint32_t c = 0; c < C; c++) {
                const size_t i = ((size_t)b * T + t) * C + c;
                const double nx = g[c] / (mean + GRN_EPS);
                double v = gamma[c] * (a[i] * nx) + beta[c] + a[i];
                if (ls) v *= ls[c];
                y[i] = x[i] + v;
            }
    }
    free(g);
}

/* ------------------------------------------------------------------------------------------------------------
 * patchify (shaders/patchify.comp):
 *   out[b Hp Wp + py Wp + px][c P P + ky P + kx] = img[b][py P + ky][px P + kx][c],  Hp = H / P, Wp = W / P
 * ------------------------------------------------------------------------------------------------------------ */

static void build_patchify(vt_graph *r, bo_run *run) {
    const uint32_t *p = run->c->p, B = p[0], H = p[1], W = p[2], Cin = p[3], P = p[4], shape[4] = {B, H, W, Cin};
    uint32_t img = input(r, run, 0, "img", 4, shape, 1.0f);
    run->out = vkvit__op_patchify(&r->g, "patchify", img, B, H, W, Cin, P);
    vt_graph_output(r, run->out);
    run->bytes = 8.0 * B * (H / P) * (W / P) * Cin * P * P, run->flops = 0;
}

static void ref_patchify(bo_run *run, double *y) {
    const uint32_t *p = run->c->p, B = p[0], H = p[1], W = p[2], Cin = p[3], P = p[4];
    const uint32_t Hp = H / P, Wp = W / P, K = Cin * P * P;
    const float *img = run->host[0];
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t py = 0; py < Hp; py++)
            for (uint32_t px = 0; px < Wp; px++)
                for (uint32_t c = 0; c < Cin; c++)
                    for (uint32_t ky = 0; ky < P; ky++)
                        for (uint32_t kx = 0; kx < P; kx++)
                            y[((size_t)(b * Hp + py) * Wp + px) * K + (c * P + ky) * P + kx] =
                                img[(((size_t)b * H + py * P + ky) * W + px * P + kx) * Cin + c];
}

/* ------------------------------------------------------------------------------------------------------------
 * top-K: the reference writes B*K class indices then B*K probabilities (as test_topk.c: softmax in double, ties to
 * the lower index); compare_topk checks the indices exactly and the probabilities at tol absolute.
 * ------------------------------------------------------------------------------------------------------------ */

static void build_topk(vt_graph *r, bo_run *run) {
    const uint32_t B = run->c->p[0], N = run->c->p[1], K = run->c->p[2], shape[2] = {B, N};
    uint32_t x = input(r, run, 0, "logits", 2, shape, 8.0f);
    run->out = vkvit__op_topk(&r->g, "top_k", x, B, N, K);
    run->bytes = 4.0 * (B * N + 2.0 * B * K), run->flops = 3.0 * B * N;
}

static void ref_topk(bo_run *run, double *y) {
    const uint32_t B = run->c->p[0], N = run->c->p[1], K = run->c->p[2];
    for (uint32_t b = 0; b < B; b++) {
        const float *x = run->host[0] + (size_t)b * N;
        double m = -INFINITY, l = 0.0;
        for (uint32_t j = 0; j < N; j++) m = fmax(m, x[j]);
        for (uint32_t j = 0; j < N; j++) l += exp((double)x[j] - m);
        for (uint32_t k = 0; k < K; k++) {
            int best = -1;
            for (uint32_t j = 0; j < N; j++) {
                bool taken = false;
                for (uint32_t t = 0; t < k && !taken; t++) taken = y[(size_t)b * K + t] == (double)j;
                if (!taken && (best < 0 || x[j] > x[best])) best = (int)j; /* strict: ties keep the lower index */
            }
            y[(size_t)b * K + k] = best;
            y[(size_t)B * K + (size_t)b * K + k] = exp((double)x[best] - m) / l;
        }
    }
}

/* ------------------------------------------------------------------------------------------------------------
 * The op table
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct bo_op_desc {
    const char *name;
    const char *params[6];                  /* names of bo_case.p[] */
    void (*build)(vt_graph *r, bo_run *run); /* random inputs, tensors, the op's node(s); sets run->out */
    void (*ref)(bo_run *run, double *want); /* may set run->err_bound */
} bo_op_desc;

/* ------------------------------------------------------------------------------------------------------------
 * Attention core (generic: no RoPE, no q/k norm, not causal), q, k, v read from one fused qkv tensor
 * ------------------------------------------------------------------------------------------------------------ */

static void build_attention(vt_graph *r, bo_run *run) {
    const uint32_t B = run->c->p[0], T = run->c->p[1], C = run->c->p[2], H = run->c->p[3];
    const uint32_t qshape[2] = {B * T, 3 * C};
    uint32_t qkv = input(r, run, 0, "qkv", 2, qshape, 1.0f);
    const vkvit__attention_op op = {
        .q = {qkv, 0, 3 * C, T * 3 * C}, .k = {qkv, C, 3 * C, T * 3 * C}, .v = {qkv, 2 * C, 3 * C, T * 3 * C},
        .B = B, .Tq = T, .Tkv = T, .C = C, .heads = H, .rope = VKVIT_NONE,
    };
    const uint32_t o = vkvit__op_attention(&r->g, "attention", &op);
    vt_graph_output(r, o);
    run->out = o;
    run->bytes = 4.0 * B * T * 4 * C;
    run->flops = 4.0 * B * T * T * C;
}

static void ref_attention(bo_run *run, double *y) {
    const uint32_t B = run->c->p[0], T = run->c->p[1], C = run->c->p[2], H = run->c->p[3], dk = C / H;
    const float *x = run->host[0];
    double *s = malloc(T * sizeof(double));
    if (!s) exit(1);
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t h = 0; h < H; h++)
            for (uint32_t i = 0; i < T; i++) {
                const float *q = x + ((size_t)b * T + i) * 3 * C + h * dk;
                double mx = -INFINITY, sum = 0.0;
                for (uint32_t j = 0; j < T; j++) {
                    const float *k = x + ((size_t)b * T + j) * 3 * C + C + h * dk;
                    double d = 0.0;
                    for (uint32_t e = 0; e < dk; e++) d += (double)q[e] * k[e];
                    s[j] = d / sqrt((double)dk);
                    mx = fmax(mx, s[j]);
                }
                for (uint32_t j = 0; j < T; j++) sum += s[j] = exp(s[j] - mx);
                double *o = y + ((size_t)b * T + i) * C + h * dk;
                for (uint32_t e = 0; e < dk; e++) {
                    double acc = 0.0;
                    for (uint32_t j = 0; j < T; j++) acc += s[j] * x[((size_t)b * T + j) * 3 * C + 2 * C + h * dk + e];
                    o[e] = acc / sum;
                }
            }
    free(s);
}

static const bo_op_desc ops[BO_N_OPS] = {
    [BO_GLU] = {"glu", {"rows", "Hd"}, build_glu, ref_glu},
    [BO_MEAN_ROWS] = {"mean_rows", {"B", "T", "C", "skip"}, build_mean_rows, ref_mean_rows},
    [BO_COPY_ROWS] = {"copy_rows", {"B", "n", "C", "Ts", "Td", "od"}, build_copy_rows, ref_copy_rows},
    [BO_NORM] = {"norm", {"B", "T", "C", "G", "skip"}, build_norm, ref_norm},
    [BO_RMSNORM] = {"rmsnorm", {"rows", "C"}, build_rmsnorm, ref_rmsnorm},
    [BO_GEMM] = {"gemm", {"M", "N", "K", "batch"}, build_gemm, ref_gemm},
    [BO_GRN] = {"grn", {"B", "T", "C"}, build_grn, ref_grn},
    [BO_PATCHIFY] = {"patchify", {"B", "H", "W", "Cin", "P"}, build_patchify, ref_patchify},
    [BO_TOPK] = {"topk", {"B", "N", "K"}, build_topk, ref_topk},
    [BO_ATTENTION] = {"attention", {"B", "T", "C", "heads"}, build_attention, ref_attention},
};

/* Appends to out[cap] (truncating once full). */
static void append(char *out, size_t cap, const char *fmt, ...) {
    const size_t n = strlen(out);
    if (n + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + n, cap - n, fmt, ap);
    va_end(ap);
}

static void case_name(const bo_case *c, char *out, size_t cap) {
    static const char *const acts[] = {"", " gelu", " relu", " silu"};
    static const struct { uint32_t flag; const char *what; } switches[] = {
        {F_SWIGLU, " swiglu"}, {F_ONE_PLUS, " 1+w"}, {F_NO_WEIGHT, " no-w"}, {F_BIAS, " +b"}, {F_SCALE, " *scale"},
        {F_BROADCAST, " bcast"}, {F_W_BATCHED, " w-batched"},
    };
    const bo_op_desc *d = &ops[c->op];
    const uint32_t f = c->flags;
    out[0] = 0;
    append(out, cap, "%s", d->name);
    if (c->op == BO_NORM) append(out, cap, "%s", f & F_LAYER ? "(ln)" : "(rms)");
    for (int i = 0; i < 6 && d->params[i]; i++) append(out, cap, " %s=%u", d->params[i], c->p[i]);
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(switches); i++)
        if (f & switches[i].flag) append(out, cap, "%s", switches[i].what);
    append(out, cap, "%s", acts[(f >> F_ACT_SHIFT) & 3u]);
    if (f & F_RESIDUAL) append(out, cap, "%s", c->op == BO_GRN ? " *ls" : " +res");
    if (f & F_VIT5S_B3) append(out, cap, " [vit5s-b3]");
}

/* ------------------------------------------------------------------------------------------------------------
 * Drawn cases: after the table, VKVIT_TEST_CASES (default 48) cases whose op, shape and switches are drawn from the
 * seed (a fixed table misses shapes; docs/kernels.md, "Drawn shapes"). Sizes: half from the odd and tile-edge
 * list below, half uniform up to the op's bound; the bounds keep one reference under ~3e7 multiply-adds.
 * ------------------------------------------------------------------------------------------------------------ */

static uint32_t draw_below(uint32_t n) { return n ? vt_rand_u32() % n : 0; } /* [0, n) */

static uint32_t draw_size(uint32_t max) {
    static const uint32_t edges[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65,
                                     127, 128, 129, 255, 256, 257, 383, 384, 385, 511, 512, 513, 767, 768, 1000, 1024};
    if (vt_rand_u32() & 1) {
        uint32_t n = 0;
        while (n < VKVIT_ARRAY_LEN(edges) && edges[n] <= max) n++;
        return edges[draw_below(n)];
    }
    return 1 + draw_below(max);
}

/* A divisor of C: C itself half of the time (a plain norm), else any (a per-head norm). */
static uint32_t draw_divisor(uint32_t C) {
    if (vt_rand_u32() & 1) return C;
    uint32_t divs[64], n = 0;
    for (uint32_t d = 1; d <= C && n < VKVIT_ARRAY_LEN(divs); d++)
        if (C % d == 0) divs[n++] = d;
    return divs[draw_below(n)];
}

static bo_case draw_case(void) {
    bo_case c = {.op = (bo_op)draw_below(BO_N_OPS), .dtype = BO_F32, .tol = TOL};
    uint32_t *p = c.p;
    const uint32_t bits = vt_rand_u32();
    switch (c.op) {
    case BO_GLU:
        p[0] = draw_size(300), p[1] = draw_size(1600), c.flags = bits & F_SWIGLU;
        break;
    case BO_MEAN_ROWS:
        p[0] = draw_size(8), p[1] = draw_size(300), p[2] = draw_size(800), p[3] = bits & 1 ? draw_below(p[1]) : 0;
        break;
    case BO_COPY_ROWS:
        p[0] = draw_size(8), p[1] = draw_size(64), p[2] = draw_size(800);
        p[3] = p[1] + draw_below(3), p[4] = p[1] + draw_below(4), p[5] = draw_below(p[4] - p[1] + 1);
        c.flags = bits & F_BROADCAST, c.tol = TOL_EXACT;
        break;
    case BO_NORM:
        p[0] = draw_size(4), p[1] = draw_size(64), p[2] = draw_size(1024), p[3] = draw_divisor(p[2]);
        p[4] = bits & 1 ? draw_below(p[1]) : 0;
        c.flags = bits & (F_LAYER | F_ONE_PLUS | F_BIAS | F_NO_WEIGHT);
        break;
    case BO_RMSNORM:
        p[0] = draw_size(64), p[1] = draw_size(1024);
        break;
    case BO_GEMM:
        p[1] = draw_size(1100), p[2] = draw_size(1100), p[0] = draw_size(300);
        p[3] = draw_below(4) ? 1 : 2 + draw_below(5); /* a quarter batched, on shared or per-batch weights */
        while ((double)p[0] * p[1] * p[2] * p[3] > 3e7) p[0] = 1 + p[0] / 2;
        c.flags = (bits & (F_BIAS | F_SCALE | F_RESIDUAL | (p[3] > 1 ? F_W_BATCHED : 0))) |
                  (draw_below(4) << F_ACT_SHIFT);
        break;
    case BO_GRN:
        p[0] = draw_size(4), p[1] = draw_size(200), p[2] = draw_size(800), c.flags = bits & F_RESIDUAL;
        break;
    case BO_PATCHIFY:
        p[4] = 1 + draw_below(16), p[0] = draw_size(3), p[3] = 1 + draw_below(4);
        p[1] = p[4] * draw_size(16) + draw_below(p[4]), p[2] = p[4] * draw_size(16) + draw_below(p[4]);
        c.tol = TOL_EXACT;
        break;
    case BO_TOPK:
        p[0] = draw_size(100), p[1] = draw_size(1500), p[2] = 1 + draw_below(VKVIT_MIN(p[1], VKVIT_MAX_TOP_K));
        c.dtype = BO_F32_U32, c.tol = TOL_PROB;
        break;
    case BO_ATTENTION: /* heads of 32, 64 or 128 channels (the kernel's dk) */
        p[3] = 1 + draw_below(4), p[2] = p[3] * (32u << draw_below(3)), p[0] = draw_size(3), p[1] = draw_size(260);
        break;
    default: break;
    }
    return c;
}

/* ------------------------------------------------------------------------------------------------------------
 * Running and comparing
 * ------------------------------------------------------------------------------------------------------------ */

static uint64_t seed_of_case(uint64_t seed, size_t index) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (index + 1); /* splitmix64: one independent stream per case */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static bool compare_topk(const bo_case *c, const float *got, const double *want, double *err, char *why, size_t cap) {
    const uint32_t BK = c->p[0] * c->p[2];
    uint32_t bad = 0, first = 0;
    double e = 0.0;
    for (uint32_t i = 0; i < BK; i++) {
        uint32_t cls;
        memcpy(&cls, &got[i], sizeof cls);
        if ((double)cls != want[i] && bad++ == 0) first = i;
        const double d = fabs((double)got[BK + i] - want[BK + i]);
        e = isnan(d) ? INFINITY : fmax(e, d);
    }
    *err = bad ? INFINITY : e;
    if (bad) {
        uint32_t cls;
        memcpy(&cls, &got[first], sizeof cls);
        snprintf(why, cap, "%u of %u class indices differ (first: rank %u of row %u: %u, want %.0f)", bad, BK,
                 first % c->p[2], first / c->p[2], cls, want[first]);
    } else {
        snprintf(why, cap, "probabilities max abs err %.3g", e);
    }
    return !bad && e <= c->tol;
}

/* GPU time of one submission of the recorded graph: the last node's end minus the first's start (ns). */
static double time_once(vt_graph *r, vkvit__recording *rec) {
    const vkvit__record_target tg = {.weights = &r->weights, .weights_f16 = NULL, .arena = &r->arena};
    VkCommandBuffer cmd;
    MUST(vkvit__cmd_begin(r->ctx, &cmd));
    vt_graph_barrier_all(r->ctx, cmd);
    vkvit__record_nodes(r->ctx, &r->g, &tg, rec, cmd);
    vt_graph_barrier_all(r->ctx, cmd);
    MUST(vkvit__cmd_submit_wait(r->ctx, cmd));
    double ns[2 * 64];
    const uint32_t n = 2 * r->g.n_nodes;
    if (n > VKVIT_ARRAY_LEN(ns)) return NAN;
    MUST(vkvit__timer_read_ns(r->ctx, &rec->timer, n, ns));
    return ns[n - 1] - ns[0];
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median GPU time (ns) of `reps` submissions after 2 warm-ups, on a second, profiled recording of the graph that
 * vt_graph_run ran (same arena and weights; the outputs are rewritten with the same values). */
static double time_case(vt_graph *r, unsigned reps) {
    const vkvit__record_target tg = {.weights = &r->weights, .weights_f16 = NULL, .arena = &r->arena};
    vkvit__recording rec;
    MUST(vkvit__record_prepare(r->ctx, &r->g, &tg, true, &rec));
    double *t = malloc(reps * sizeof *t);
    if (!t) exit(1);
    for (unsigned i = 0; i < 2; i++) time_once(r, &rec);
    for (unsigned i = 0; i < reps; i++) t[i] = time_once(r, &rec);
    qsort(t, reps, sizeof *t, cmp_double);
    const double med = t[reps / 2];
    free(t);
    vkvit__record_free(r->ctx, &rec);
    return med;
}

/* packed mode (main): every case must have run a packed-bindings kernel */
static bool g_packed;

/* Runs case c (number `index`: its inputs continue the stream vt_rng_state holds), compares, and in perf mode
 * times it. */
static void run_case(vkvit_ctx *ctx, const bo_case *c, size_t index, uint64_t seed, bool perf, unsigned reps) {
    char name[160];
    case_name(c, name, sizeof name);
    bo_run run = {.c = c, .out = VKVIT_NONE};
    vt_graph r;
    vt_graph_begin(&r, ctx);
    ops[c->op].build(&r, &run);
    if (g_packed) {
        bool any = false;
        for (uint32_t k = 0; k < r.g.n_kernels; k++) any |= r.g.kernels[k].packed_slots != 0;
        CHECK(any, "%s: no packed-bindings kernel in the graph", name);
    }
    vkvit_result res = vt_graph_run(&r);
    CHECK(res == VKVIT_OK, "%s: graph run: %s: %s", name, vkvit_result_name(res), vkvit_last_error());
    if (res == VKVIT_OK && run.out != VKVIT_NONE) {
        const size_t n = (size_t)(r.g.tensors[run.out].bytes / 4);
        float *got = vt_graph_download(&r, run.out);
        double *want = calloc(n ? n : 1, sizeof *want);
        if (!want) exit(1);
        ops[c->op].ref(&run, want);
        double err;
        char why[200];
        bool ok;
        if (c->dtype == BO_F32_U32) {
            ok = compare_topk(c, got, want, &err, why, sizeof why);
        } else {
            size_t worst = 0;
            err = vt_max_rel_err(got, want, n, &worst);
            ok = err <= fmax(c->tol, run.err_bound);
            snprintf(why, sizeof why, "max rel err %.3g at %zu (got %.9g, want %.9g; fp32 conditioning bound %.3g)",
                     err, worst, n ? got[worst] : 0.0, n ? want[worst] : 0.0, run.err_bound);
        }
        printf("%-3zu %-58s %s err %-9.3g (tol %.0e%s)%s", index, name, c->dtype == BO_F32_U32 ? "abs" : "rel", err,
               fmax(c->tol, run.err_bound), run.err_bound > c->tol ? ", the conditioning's" : "", ok ? "" : "  FAIL");
        CHECK(ok, "case %zu %s (seed %llu): %s, tol %.0e", index, name, (unsigned long long)seed, why, c->tol);
        if (perf && ok) {
            const double ns = time_case(&r, reps);
            printf("  %9.1f us %8.2f GB/s", ns * 1e-3, run.bytes / ns);
            if (run.flops > 0) printf(" %8.2f GFLOP/s", run.flops / ns);
        }
        putchar('\n');
        fflush(stdout);
        free(want);
        free(got);
    }
    vt_graph_end(&r);
    for (int i = 0; i < BO_MAX_HOST; i++) free(run.host[i]);
}

/* packed mode: a node whose tensors each fit one descriptor but whose span in the arena does not is refused at
 * recording with a sentence naming the kernel and the limit (a GEMM of 16 x 16 x 16: A and D 1 KiB each, 256-byte
 * aligned side by side, under a maxStorageBufferRange lowered to 1536 bytes for this graph). */
static void check_packed_span_refusal(vkvit_ctx *ctx) {
    const uint32_t saved = ctx->limits.maxStorageBufferRange, shape[2] = {16, 16};
    float *a = malloc(256 * sizeof *a), *w = malloc(256 * sizeof *w);
    if (!a || !w) exit(1);
    for (int i = 0; i < 256; i++) a[i] = vt_rand_f(), w[i] = vt_rand_f();
    ctx->limits.maxStorageBufferRange = 1536;
    vt_graph r;
    vt_graph_begin(&r, ctx);
    const uint32_t x = vt_graph_input(&r, "a", a, 2, shape), wt = vt_graph_weight(&r, "w", w, 2, shape);
    const uint32_t y = vkvit__op_linear(&r.g, "linear", x, wt, VKVIT_NONE, VKVIT_ACT_NONE);
    vt_graph_output(&r, y);
    const vkvit_result res = vt_graph_run(&r);
    const char *msg = vkvit_last_error();
    printf("packed span refusal: %s: %s\n", vkvit_result_name(res), msg);
    CHECK(res == VKVIT_ERROR_UNSUPPORTED, "a packed GEMM spanning more than maxStorageBufferRange: %s",
          vkvit_result_name(res));
    CHECK(strstr(msg, "gemm_f32_f32_packed") && strstr(msg, "maxStorageBufferRange") && strstr(msg, "1536"),
          "the refusal names no kernel or limit: %s", msg);
    vt_graph_end(&r);
    ctx->limits.maxStorageBufferRange = saved;
    free(a);
    free(w);
}

int main(int argc, char **argv) {
    bool perf = false;
    const char *filter = NULL;
    bool packed = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "perf")) perf = true;
        else if (!strcmp(argv[i], "packed")) packed = true;
        else filter = argv[i];
    }
    const char *s = getenv("VKVIT_TEST_SEED");
    const uint64_t seed = s && *s ? strtoull(s, NULL, 0)
                                  : ((uint64_t)time(NULL) * 1000003u) ^ ((uint64_t)getpid() << 16);
    printf("seed %llu (rerun: VKVIT_TEST_SEED=%llu)\n", (unsigned long long)seed, (unsigned long long)seed);
    unsigned reps = 20;
    const char *rs = getenv("VKVIT_PERF_REPS");
    if (rs && atoi(rs) > 0) reps = (unsigned)atoi(rs);

    vkvit_ctx *ctx = vt_ctx();
    /* packed: the kernel policy of a device with 4 storage buffers per stage (policy.packed_bindings), so that every
     * op that binds more runs its packed variant, on any device */
    if (packed) {
        g_packed = true;
        vkvit__policy_pack_bindings(&ctx->policy);
        printf("packed bindings (policy.packed_bindings): the GEMM and GRN cases through shaders/packed.glsl\n");
    }
    if (perf) {
        vkvit_device_info info;
        vkvit_ctx_device_info(ctx, &info);
        if (!info.timestamps) {
            fprintf(stderr, "perf: device '%s' has no timestamp queries on its compute queue\n", info.name);
            vkvit_ctx_destroy(ctx);
            return 77;
        }
        printf("perf: median of %u submissions per case (VKVIT_PERF_REPS), GPU timestamps\n", reps);
    }
    const char *nc = getenv("VKVIT_TEST_CASES");
    const size_t n_drawn = nc && *nc ? (size_t)strtoul(nc, NULL, 10) : 48;
    size_t n_run = 0;
    const double t0 = vt_now_s();
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases) + n_drawn; i++) {
        vt_rng_state = seed_of_case(seed, i); /* a drawn case draws its shape first, then its inputs */
        const bo_case c = i < VKVIT_ARRAY_LEN(cases) ? cases[i] : draw_case();
        char name[160];
        case_name(&c, name, sizeof name);
        if (filter && !strstr(name, filter)) continue;
        /* packed: the ops whose kernels have a packed variant; the others bind at most 4 buffers and run the
         * kernels of the plain entries */
        if (packed && c.op != BO_GEMM && c.op != BO_GRN) continue;
        run_case(ctx, &c, i, seed, perf, reps);
        n_run++;
    }
    CHECK(n_run > 0, "no case matches '%s'", filter ? filter : "");
    if (packed && !filter) check_packed_span_refusal(ctx);
    printf("%zu cases in %.1f s (seed %llu); %u graphs, %u pipelines (%u distinct), prepare %.1f s, runs %.1f s\n",
           n_run, vt_now_s() - t0, (unsigned long long)seed, vt_graph_stats.graphs, vt_graph_stats.kernels,
           vt_graph_stats.unique, vt_graph_stats.prepare_s, vt_graph_stats.run_s);
    return vt_finish(ctx);
}
