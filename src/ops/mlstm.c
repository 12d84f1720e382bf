// SPDX-License-Identifier: Apache-2.0
/* Op builders of the Vision-LSTM cell (see mlstm.h): push-constant mirrors of shaders/mlstm_*.comp, tile choice,
 * dispatch geometry. */
#include "ops/mlstm.h"

#include "ops/gemm.h"
#include "ops/op_util.h"

#include <stdio.h>

/* ------------------------------------------------------------------------------------------------------------
 * conv1d + SiLU + headwise q/k/v (shaders/mlstm_prep.comp)
 * ------------------------------------------------------------------------------------------------------------ */

/* Mirrors the `p` block of shaders/mlstm_prep.comp. */
typedef struct mlstm_prep_push {
    uint32_t rows, S, E, K, up_stride, reverse, qkv_stride, NH, run;
} mlstm_prep_push;
VKVIT_PUSH_MIRROR(mlstm_prep_push, 9);

vkvit__mlstm_prep_out vkvit__op_mlstm_prep(vkvit__graph *g, const char *name, const vkvit__mlstm_prep_op *op) {
    const vkvit__mlstm_prep_out none = {VKVIT_NONE, 0, VKVIT_NONE};
    if (g->error) return none;
    if (op->E % 4 || op->K == 0 || op->S == 0 ||
        (op->v_transposed && (op->NH == 0 || op->E % op->NH || (op->E / op->NH) % 4))) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "mlstm prep '%s': E = %u is not a multiple of 4, the conv "
                          "kernel or S is 0, or vT with %u heads that do not split E into multiples of 4", name, op->E,
                          op->NH);
        return none;
    }
    const vkvit__tensor up = vkvit__graph_get(g, op->up);
    const uint32_t up_stride = up.shape[up.ndim - 1]; /* 2E: proj_up whole; E: its xm half alone */
    if (up_stride < op->E || up_stride % 4 || vkvit__numel(&up) != (uint64_t)op->B * op->S * up_stride) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "mlstm prep '%s': up '%s' is not [%u, >= %u] with a row "
                          "length that is a multiple of 4", name, up.name, op->B * op->S, op->E);
        return none;
    }
    const uint32_t rows = op->B * op->S, G = VKVIT_CEIL_DIV(op->S, 4), parts = op->v_transposed ? 2 : 3;
    if ((uint64_t)rows * parts * op->E > UINT32_MAX / 4 || (uint64_t)op->B * op->E * G > UINT32_MAX / 16) {
        vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "mlstm prep '%s': %u images of %u tokens x %u channels is too "
                          "large", name, op->B, op->S, op->E);
        return none;
    }
    char label[64];
    vkvit__mlstm_prep_out out = {VKVIT_NONE, parts * op->E, VKVIT_NONE};
    uint32_t qkv_shape[2] = {rows, parts * op->E};
    snprintf(label, sizeof label, "%s.qkv", name);
    out.qkv = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, label, 2, qkv_shape);
    if (op->v_transposed) out.vt = ops_intermediate(g, name, "vT", op->B * op->E, 4 * G);
    vkvit__kernel_desc kd = {.shader = op->v_transposed ? VKVIT_SHADER_MLSTM_PREP_VT_F32_F32
                                                        : VKVIT_SHADER_MLSTM_PREP_F32_F32,
                             .n_buffers = op->v_transposed ? 7 : 6, .push_size = sizeof(mlstm_prep_push),
                             .n_spec = 1, .spec = {op->K <= 4}};
    if (ops_texel_inputs(g->ctx, &kd, 5)) /* up, conv, wqk, wv */
        kd.shader = op->v_transposed ? VKVIT_SHADER_MLSTM_PREP_VT_F32_F32_TEXEL : VKVIT_SHADER_MLSTM_PREP_F32_F32_TEXEL;
    /* Runs of 4-token groups per invocation: long on CPU devices, where each run re-reads the 3 rows before it and
     * llvmpipe pays per load and per workgroup (two runs per image, at most 32 groups: ViL-S's 49 groups in runs of
     * 25 took half the time of runs of 4 with `vkvit bench`), one group elsewhere. Lanes along the E/4 projection
     * heads. */
    const uint32_t run = op->run ? op->run : g->ctx->policy.cpu_kernels ? VKVIT_MIN(VKVIT_CEIL_DIV(G, 2), 32u) : 1;
    mlstm_prep_push p = {rows, op->S, op->E, op->K, up_stride, op->reverse, out.qkv_stride, op->NH, run};
    vkvit__node_binding b[7] = {rd(op->up), rd(op->conv_w), rd(op->conv_b), rd(op->wqk), rd(op->wv), wr(out.qkv),
                                wr(out.vt)};
    const uint32_t gx = groups_for(op->E / 4, 64), gy = groups_for((uint64_t)op->B * VKVIT_CEIL_DIV(G, run), 1);
    if (g->ctx->policy.packed_bindings &&
        (kd.shader == VKVIT_SHADER_MLSTM_PREP_F32_F32 || kd.shader == VKVIT_SHADER_MLSTM_PREP_VT_F32_F32))
        ops_packed_node(g, name, "mlstm_prep", &kd,
                        op->v_transposed ? VKVIT_SHADER_MLSTM_PREP_VT_F32_F32_PACKED : VKVIT_SHADER_MLSTM_PREP_F32_F32_PACKED,
                        b, kd.n_buffers, &p, sizeof p, gx, gy, 1);
    else
        vkvit__graph_node(g, name, "mlstm_prep", &kd, b, kd.n_buffers, &p, sizeof p, gx, gy, 1);
    return g->error ? none : out;
}

/* ------------------------------------------------------------------------------------------------------------
 * Chunked scan, four phases (shaders/mlstm_common.glsl: chunk, carry, inter, scan)
 * ------------------------------------------------------------------------------------------------------------ */

/* Mirrors the `p` block of shaders/mlstm_common.glsl (all four phases). */
typedef struct mlstm_scan_push {
    uint32_t S, NH, reverse, n_chunks;
    uint32_t qkv_stride, q_off, k_off, v_off;
    uint32_t gate_stride, i_off, f_off;
    uint32_t h_stride;
} mlstm_scan_push;
VKVIT_PUSH_MIRROR(mlstm_scan_push, 12);

/* The estimates below (loop trips of one invocation, upper bounds) stay under llvmpipe's loop limiter on CPU
 * devices (op_util.h, VKVIT_LLVMPIPE_LOOP_BUDGET). */

static uint64_t ceil_div64(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
static uint64_t trips_chunk(uint32_t DH, uint32_t WG, uint32_t L) {       /* mlstm_chunk.comp */
    const uint64_t nb = ceil_div64(DH, 8);
    return 4ull * L + ceil_div64(nb * nb, WG) * (L + 1) + (DH / WG + 1) * (uint64_t)(L + 1);
}
static uint64_t trips_carry(uint32_t DH, uint32_t VT, uint32_t n_chunks) { /* mlstm_carry.comp */
    return (uint64_t)DH + DH / VT + 1 + (uint64_t)n_chunks * (DH / 4 + DH / (4 * VT) + 3);
}
static uint64_t trips_inter(uint32_t DH, uint32_t WG, uint32_t L) {       /* mlstm_inter.comp */
    return ceil_div64(ceil_div64(L, 8) * ceil_div64(DH, 8), WG) * (DH + 1);
}
static uint64_t trips_scan(uint32_t DH, uint32_t VT, uint32_t L) {        /* mlstm_scan.comp */
    const uint64_t rows = L / VT + 1, nb = ceil_div64(L, 4);
    return 3ull * L + rows * (L + 1) + ceil_div64(nb * nb, VT) * (DH + 1) + rows * (DH + L + 2) +
           (uint64_t)L * (L + 4);
}

/* The largest power-of-two value tile <= want (and not much wider than DH) whose shared memory fits. */
static uint32_t pick_tile(uint32_t want, uint32_t DH, uint64_t (*shared_bytes)(uint32_t DH, uint32_t VT, uint32_t L),
                          uint32_t L, uint32_t max_shared) {
    uint32_t VT = want;
    while (VT > 8 && VT / 2 >= DH) VT /= 2;
    while (VT > 1 && shared_bytes(DH, VT, L) > max_shared) VT /= 2;
    return VT;
}
static uint64_t shared_chunk(uint32_t DH, uint32_t VT, uint32_t L) { return 4ull * 5ull * L; }
static uint64_t shared_carry(uint32_t DH, uint32_t VT, uint32_t L) { return 4ull * DH; }
static uint64_t shared_scan(uint32_t DH, uint32_t VT, uint32_t L) {   /* sh_AT: L columns of ceil(L/4) vec4s */
    return 4ull * ((uint64_t)L * 4 * ceil_div64(L, 4) + 5ull * L);
}

/* ------------------------------------------------------------------------------------------------------------
 * The quadratic (parallel) form on CPU devices: docs/math.md 7.1 / 7.2 as written, two GEMMs around a row kernel
 * ------------------------------------------------------------------------------------------------------------ */

/* On llvmpipe the chunked scan's four phases cost several times what the quadratic form's GEMMs do at ViL's
 * sequence lengths (ViL-S: 196 tokens, 4 heads of 192: ~640 ms of 1430 per inference against ~100 ms, measured
 * with `vkvit bench`): the chunk states are DH x DH per chunk and head, written and read three times, while the
 * S x S scores per head are small and the GEMMs run on the tuned CPU kernel. GPUs keep the chunked scan (linear in
 * S, states in shared memory), and so does an explicit chunk length (tests run both forms on lavapipe). */
#define MLSTM_QUADRATIC_MAX_S 256u /* = ROW_MAX of shaders/mlstm_decay.comp (a row lives in a private array) */
#define NO_MAT ((vkvit__mat){VKVIT_NONE, 0, 0, 0})     /* where h is after a failure */

static bool use_quadratic(const vkvit_ctx *ctx, const vkvit__mlstm_scan_op *op, uint32_t DH) {
    return ctx->policy.cpu_kernels && op->chunk == 0 && op->S <= MLSTM_QUADRATIC_MAX_S && DH % 4 == 0;
}

/* vT and the gate cumsums (mlstm_par_prep.comp) -> scores = q k^T per (b, h) (GEMM) -> the normalised decay weights
 * in place (mlstm_decay.comp) -> h[b, :, h*DH:(h+1)*DH] = P vT^T (GEMM, two-level batch: outer b, inner h), into a
 * new tensor or over q (op->h_over_q: nothing reads qkv after the scores GEMM). */
static vkvit__mat mlstm_quadratic(vkvit__graph *g, const char *name, const vkvit__mlstm_scan_op *op, uint32_t DH,
                                const mlstm_scan_push *p) {
    const uint32_t B = op->B, S = op->S, E = op->E, NH = op->NH, S_pad = (S + 3) & ~3u, bh = B * NH;
    if ((uint64_t)bh * S * S_pad > UINT32_MAX / 4 || (uint64_t)bh * DH * S_pad > UINT32_MAX / 4 || bh > 65535 ||
        (uint64_t)B * S * 3 * E > UINT32_MAX / 4) {
        vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "mlstm '%s': %u images x %u heads of %u tokens is too large",
                          name, B, NH, S);
        return NO_MAT;
    }
    char label[64];
    uint32_t h_shape[2] = {B * S, E};
    const bool own_vt = !op->v_transposed; /* else the prep wrote vT (vkvit__mlstm_prep_op.v_transposed) */
    const uint32_t vt = own_vt ? ops_intermediate(g, name, "vT", bh * DH, S_pad) : op->vt;
    const uint32_t gl = ops_intermediate(g, name, "gate_cumsum", bh, 2 * S_pad);
    const uint32_t st = ops_intermediate(g, name, "scores", bh * S, S_pad);
    const vkvit__mat h = op->h_over_q ? (vkvit__mat){op->qkv, p->q_off, p->qkv_stride, S * p->qkv_stride}
                                      : vkvit__mat_dense(vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2,
                                                                             h_shape), S, E);

    /* 1. vT (unless the prep wrote it: then one invocation per (b, h) for the cumsums) and the gate cumsums */
    const uint32_t lanes = 64;
    vkvit__kernel_desc k1 = {.shader = VKVIT_SHADER_MLSTM_PAR_PREP_F32, .n_buffers = 4, .push_size = sizeof *p,
                             .n_spec = 5, .spec = {lanes, 1, DH, op->nxai, own_vt}};
    if (ops_texel_inputs(g->ctx, &k1, 2)) k1.shader = VKVIT_SHADER_MLSTM_PAR_PREP_F32_TEXEL; /* qkv, gates */
    /* vT stays a write binding when the prep wrote it: the shader declares it writeonly, and synchronization
     * validation counts the declaration, not what the specialised shader does */
    vkvit__node_binding b1[4] = {rd(op->qkv), rd(op->gates), wr(vt), wr(gl)};
    snprintf(label, sizeof label, "%s.prep", name);
    vkvit__graph_node(g, label, "mlstm_par_prep", &k1, b1, 4, p, sizeof *p,
                      own_vt ? groups_for((uint64_t)S_pad / 4, lanes) : 1, 1, bh);

    /* 2. scores = q k^T per (b, h): q and k read in place from qkv's column blocks */
    vkvit__gemm_op qk = {
        .a = {op->qkv, p->q_off, p->qkv_stride, S * p->qkv_stride}, .w = op->qkv, .bias = VKVIT_NONE,
        .d = {st, 0, S_pad, NH * S * S_pad}, .M = S, .N = S, .K = DH, .batch = bh, .act = VKVIT_ACT_NONE,
        .scale = VKVIT_NONE, .residual = {VKVIT_NONE, 0, 0, 0}, .w_offset = p->k_off, .w_stride = p->qkv_stride,
        .w_batch_stride = S * p->qkv_stride,
        .n_inner = NH, .inner_stride_a = DH, .inner_stride_w = DH, .inner_stride_d = S * S_pad,
        /* only the scores of columns at or before the row's processing position are read (mlstm_decay.comp) */
        .causal = op->reverse ? VKVIT_GEMM_CAUSAL_D_UPPER : VKVIT_GEMM_CAUSAL_D_LOWER,
    };
    snprintf(label, sizeof label, "%s.qk", name);
    vkvit__op_gemm_kind(g, label, "mlstm_gemm", &qk);

    /* 3. decay, stabiliser and normaliser, in place; one row per invocation (8 rows per llvmpipe SIMD vector), its
     *    S_pad / 4 column vec4s unrolled (spec constant 4) */
    vkvit__kernel_desc k3 = {.shader = VKVIT_SHADER_MLSTM_DECAY_F32, .n_buffers = 2, .push_size = sizeof *p,
                             .n_spec = 5, .spec = {8, 1, DH, op->nxai, S_pad / 4}};
    vkvit__node_binding b3[3] = {rdwr(st), rd(gl), rd(st)};
    if (g->ctx->policy.texel_reads) { /* the cumsums, and the scores through a texel view of their range (binding 2) */
        k3.shader = VKVIT_SHADER_MLSTM_DECAY_F32_TEXEL;
        k3.n_buffers = 3;
        k3.texel_format[1] = k3.texel_format[2] = VK_FORMAT_R32G32B32A32_SFLOAT;
    }
    snprintf(label, sizeof label, "%s.decay", name);
    vkvit__graph_node(g, label, "mlstm_decay", &k3, b3, k3.n_buffers, p, sizeof *p, VKVIT_CEIL_DIV(S, 8), 1, bh);

    /* 4. h = P vT^T per (b, h), into the head's column block of h */
    vkvit__gemm_op pv = {
        .a = {st, 0, S_pad, NH * S * S_pad}, .w = vt, .bias = VKVIT_NONE, .d = h,
        .M = S, .N = DH, .K = S_pad, .batch = bh, .act = VKVIT_ACT_NONE, .scale = VKVIT_NONE,
        .residual = {VKVIT_NONE, 0, 0, 0}, .w_stride = S_pad, .w_batch_stride = NH * DH * S_pad,
        .n_inner = NH, .inner_stride_a = S * S_pad, .inner_stride_w = DH * S_pad, .inner_stride_d = DH,
        /* P is zero past the row's processing position (and in the padding columns S .. S_pad - 1 >= every row) */
        .causal = op->reverse ? VKVIT_GEMM_CAUSAL_A_UPPER : VKVIT_GEMM_CAUSAL_A_LOWER,
    };
    snprintf(label, sizeof label, "%s.pv", name);
    vkvit__op_gemm_kind(g, label, "mlstm_gemm", &pv);
    return g->error ? NO_MAT : h;
}

/* The chunked scan's four phases; returns the new h [B*S, E]. */
static uint32_t mlstm_chunked(vkvit__graph *g, const char *name, const vkvit__mlstm_scan_op *op, uint32_t DH,
                              mlstm_scan_push p) {
    const bool cpu = g->ctx->policy.cpu_kernels;
    /* Chunk: 16 tokens on CPU devices, 32 elsewhere. Value tiles of the carry: one 8-lane SIMD vector on CPU
     * devices, else 32 columns, narrowed until the shared memory fits. */
    const uint32_t L = op->chunk ? op->chunk : cpu ? 16 : 32;
    const uint32_t n_chunks = VKVIT_CEIL_DIV(op->S, L);
    const uint32_t want = cpu ? 8 : 32;
    const uint32_t max_shared = g->ctx->caps.max_shared_memory ? g->ctx->caps.max_shared_memory : 16384;
    const uint32_t wg = 64;                    /* chunk summaries and carried parts: lanes own register blocks */
    const uint32_t vt2 = pick_tile(want, DH, shared_carry, L, max_shared);
    /* The outputs (phase 4) recompute the chunk's L x L scores in every value tile: on CPU devices one tile spans
     * the whole head (up to 256 columns) so they are computed once. */
    const uint32_t vt3 = pick_tile(cpu ? 256 : want, DH, shared_scan, L, max_shared);
    if (L > 256 || shared_chunk(DH, wg, L) > max_shared || shared_carry(DH, vt2, L) > max_shared ||
        shared_scan(DH, vt3, L) > max_shared)
        return vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED,
                                 "mlstm scan '%s': head dim %u with chunk %u does not fit the device's %u bytes of "
                                 "shared memory (chunks are at most 256 tokens)", name, DH, L, max_shared);
    if (cpu) {
        const uint64_t worst = VKVIT_MAX(VKVIT_MAX(trips_chunk(DH, wg, L), trips_carry(DH, vt2, n_chunks)),
                                         VKVIT_MAX(trips_inter(DH, wg, L), trips_scan(DH, vt3, L)));
        if (worst > VKVIT_LLVMPIPE_LOOP_BUDGET)
            return vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED,
                                     "mlstm scan '%s': %u tokens with head dim %u and chunk %u need %llu loop trips in "
                                     "one shader invocation, over the %u that CPU drivers (llvmpipe) run", name, op->S,
                                     DH, L, (unsigned long long)worst, VKVIT_LLVMPIPE_LOOP_BUDGET);
    }
    const uint64_t rec = (uint64_t)DH * DH + DH + 4, state_floats = (uint64_t)op->B * op->NH * n_chunks * rec;
    if (state_floats > UINT32_MAX / 4 || (uint64_t)op->B * op->NH > 65535 || n_chunks > 65535)
        return vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "mlstm scan '%s': %u images x %u heads x %u chunks is "
                                 "too large", name, op->B, op->NH, n_chunks);
    const uint32_t rows = op->B * op->S;
    char label[64];
    uint32_t st_shape[2] = {op->B * op->NH * n_chunks, (uint32_t)rec};
    snprintf(label, sizeof label, "%s.state", name);
    uint32_t st = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, label, 2, st_shape);
    uint32_t shape[2] = {rows, op->E};
    uint32_t h = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2, shape);
    p.n_chunks = n_chunks;
    const uint32_t bh = op->B * op->NH;

    /* 1. per-chunk summaries, all chunks in parallel */
    vkvit__kernel_desc k1 = {.shader = VKVIT_SHADER_MLSTM_CHUNK_F32, .n_buffers = 3, .push_size = sizeof p,
                             .n_spec = 4, .spec = {wg, L, DH, op->nxai}};
    if (ops_texel_inputs(g->ctx, &k1, 2)) k1.shader = VKVIT_SHADER_MLSTM_CHUNK_F32_TEXEL; /* qkv, gates */
    vkvit__node_binding b1[3] = {rd(op->qkv), rd(op->gates), wr(st)};
    snprintf(label, sizeof label, "%s.chunks", name);
    vkvit__graph_node(g, label, "mlstm_chunk", &k1, b1, 3, &p, sizeof p, 1, n_chunks, bh);

    /* 2. the carried state, chunk after chunk */
    vkvit__kernel_desc k2 = {.shader = VKVIT_SHADER_MLSTM_CARRY_F32, .n_buffers = 1, .push_size = sizeof p,
                             .n_spec = 4, .spec = {vt2, L, DH, op->nxai}};
    vkvit__node_binding b2[2] = {rdwr(st), rd(st)};
    if (g->ctx->policy.texel_reads) { /* the states read through a texel view of the same range (binding 1) */
        k2.shader = VKVIT_SHADER_MLSTM_CARRY_F32_TEXEL;
        k2.n_buffers = 2;
        k2.texel_format[1] = VK_FORMAT_R32G32B32A32_SFLOAT;
    }
    snprintf(label, sizeof label, "%s.carry", name);
    vkvit__graph_node(g, label, "mlstm_carry", &k2, b2, k2.n_buffers, &p, sizeof p, VKVIT_CEIL_DIV(DH, vt2), 1, bh);

    /* 3. the carried part C^T q of every row, into h, all chunks in parallel */
    vkvit__kernel_desc k3 = {.shader = VKVIT_SHADER_MLSTM_INTER_F32, .n_buffers = 3, .push_size = sizeof p,
                             .n_spec = 4, .spec = {wg, L, DH, op->nxai}};
    if (ops_texel_inputs(g->ctx, &k3, 2)) k3.shader = VKVIT_SHADER_MLSTM_INTER_F32_TEXEL; /* qkv, states */
    vkvit__node_binding b3[3] = {rd(op->qkv), rd(st), wr(h)};
    snprintf(label, sizeof label, "%s.inter", name);
    vkvit__graph_node(g, label, "mlstm_inter", &k3, b3, 3, &p, sizeof p, 1, n_chunks, bh);

    /* 4. outputs, all chunks in parallel (h read back and overwritten) */
    vkvit__kernel_desc k4 = {.shader = VKVIT_SHADER_MLSTM_SCAN_F32_F32, .n_buffers = 4, .push_size = sizeof p,
                             .n_spec = 4, .spec = {vt3, L, DH, op->nxai}};
    if (ops_texel_inputs(g->ctx, &k4, 3)) { /* qkv, gates, states; h read through a texel view of its range */
        k4.shader = VKVIT_SHADER_MLSTM_SCAN_F32_F32_TEXEL;
        k4.n_buffers = 5;
        k4.texel_format[4] = VK_FORMAT_R32G32B32A32_SFLOAT;
    }
    vkvit__node_binding b4[5] = {rd(op->qkv), rd(op->gates), rd(st), rdwr(h), rd(h)};
    vkvit__graph_node(g, name, "mlstm_scan", &k4, b4, k4.n_buffers, &p, sizeof p, VKVIT_CEIL_DIV(DH, vt3), n_chunks,
                      bh);
    return g->error ? VKVIT_NONE : h;
}

vkvit__mat vkvit__op_mlstm_scan(vkvit__graph *g, const char *name, const vkvit__mlstm_scan_op *op) {
    if (g->error) return NO_MAT;
    if (op->NH == 0 || op->E % op->NH || op->S == 0) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "mlstm scan '%s': %u heads do not divide E = %u (or S = 0)",
                          name, op->NH, op->E);
        return NO_MAT;
    }
    const uint32_t DH = op->E / op->NH, qkv_stride = op->qkv_stride ? op->qkv_stride : 3 * op->E;
    const bool quadratic = use_quadratic(g->ctx, op, DH);
    if ((op->v_transposed && !quadratic) || qkv_stride < (op->v_transposed ? 2 : 3) * op->E) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "mlstm scan '%s': v transposed where the scan does not "
                          "take it, or a qkv row stride of %u for E = %u", name, qkv_stride, op->E);
        return NO_MAT;
    }
    const mlstm_scan_push p = {
        .S = op->S, .NH = op->NH, .reverse = op->reverse, .n_chunks = 1,
        .qkv_stride = qkv_stride, .q_off = 0, .k_off = op->E, .v_off = 2 * op->E,
        .gate_stride = 2 * op->NH, .i_off = 0, .f_off = op->NH,
        .h_stride = op->E,
    };
    if (quadratic) return mlstm_quadratic(g, name, op, DH, &p);
    const uint32_t h = mlstm_chunked(g, name, op, DH, p);
    return h == VKVIT_NONE ? NO_MAT : (vkvit__mat){h, 0, op->E, op->S * op->E};
}

bool vkvit__mlstm_scan_takes_vt(const vkvit__graph *g, const vkvit__mlstm_scan_op *op) {
    return op->NH && op->E % op->NH == 0 && use_quadratic(g->ctx, op, op->E / op->NH);
}

/* ------------------------------------------------------------------------------------------------------------
 * outnorm + skip + output gate (shaders/mlstm_gn_stats.comp, mlstm_out.comp)
 * ------------------------------------------------------------------------------------------------------------ */

/* Mirrors the `p` block of shaders/mlstm_gn_stats.comp. */
typedef struct mlstm_gn_push {
    uint32_t S, E, G;
    float eps;
    uint32_t h_offset, h_stride;
} mlstm_gn_push;
VKVIT_PUSH_MIRROR(mlstm_gn_push, 6);

/* Mirrors the `p` block of shaders/mlstm_out.comp. */
typedef struct mlstm_out_push {
    uint32_t rows, S, E, G;
    uint32_t h_offset, h_stride, a_offset, a_stride;
    uint32_t z_offset, z_stride, d_offset, d_stride;
} mlstm_out_push;
VKVIT_PUSH_MIRROR(mlstm_out_push, 12);

vkvit__mat vkvit__op_mlstm_out(vkvit__graph *g, const char *name, const vkvit__mlstm_out_op *op) {
    if (g->error) return NO_MAT;
    const uint32_t G = 4, rows = op->B * op->S; /* GroupNorm(E/4 groups): 4 channels per group */
    const bool seed_gn = op->gn_weight != VKVIT_NONE;
    if (op->E % G || (op->a.offset | op->a.stride | op->h.offset | op->h.stride | op->z.offset | op->z.stride) % 4) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "mlstm out '%s': E = %u, or an offset or row stride of h "
                          "(%u, %u), a (%u, %u) or z (%u, %u) is not a multiple of 4", name, op->E, op->h.offset,
                          op->h.stride, op->a.offset, op->a.stride, op->z.offset, op->z.stride);
        return NO_MAT;
    }
    char label[64];
    uint32_t stats = VKVIT_NONE;
    if (seed_gn) {
        uint32_t st_shape[3] = {op->B, op->E / G, 2};
        snprintf(label, sizeof label, "%s.gn_stats", name);
        stats = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, label, 3, st_shape);
        const uint32_t wg = ops_row_wg(g->ctx);
        vkvit__kernel_desc ks = {
            .shader =
                ops_reduce_variant(g->ctx, VKVIT_SHADER_MLSTM_GN_STATS_F32, VKVIT_SHADER_MLSTM_GN_STATS_F32_SUBGROUP),
            .n_buffers = 2, .push_size = sizeof(mlstm_gn_push), .n_spec = 1, .spec = {wg},
        };
        if (ops_texel_inputs(g->ctx, &ks, 1))
            ks.shader = ops_reduce_variant(g->ctx, VKVIT_SHADER_MLSTM_GN_STATS_F32_TEXEL,
                                           VKVIT_SHADER_MLSTM_GN_STATS_F32_SUBGROUP_TEXEL);
        /* CPU devices with texel reads: one invocation per group, 8 groups a workgroup (within llvmpipe's loop
         * budget). Tied to texel reads, not to the CPU, so that test_vil_notexel keeps the reduction variant of
         * the GPUs tested on lavapipe. */
        const bool lane = g->ctx->policy.texel_reads && 2ull * op->S < VKVIT_LLVMPIPE_LOOP_BUDGET;
        if (lane) ks.shader = VKVIT_SHADER_MLSTM_GN_STATS_LANE_F32_TEXEL;
        mlstm_gn_push ps = {op->S, op->E, G, op->eps, op->h.offset, op->h.stride};
        vkvit__node_binding bs[2] = {rd(op->h.t), wr(stats)};
        vkvit__graph_node(g, label, "mlstm_norm", &ks, bs, 2, &ps, sizeof ps,
                          lane ? VKVIT_CEIL_DIV(op->E / G, wg) : op->E / G, op->B, 1);
    }
    uint32_t shape[2] = {rows, op->E};
    const vkvit__mat out = op->out_over_h ? op->h
                                          : vkvit__mat_dense(vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2,
                                                                                 shape), rows, op->E);
    const bool cpu = g->ctx->policy.cpu_kernels;
    const uint32_t wg = cpu ? 8 : 64;
    vkvit__kernel_desc kd = {.shader = VKVIT_SHADER_MLSTM_OUT_F32_F32, .n_buffers = 8,
                             .push_size = sizeof(mlstm_out_push), .n_spec = 3, .spec = {seed_gn, wg, cpu ? 4 : 1}};
    if (ops_texel_inputs(g->ctx, &kd, 7)) kd.shader = VKVIT_SHADER_MLSTM_OUT_F32_F32_TEXEL; /* every input */
    mlstm_out_push p = {rows, op->S, op->E, G, op->h.offset, op->h.stride, op->a.offset, op->a.stride,
                        op->z.offset, op->z.stride, out.offset, out.stride};
    vkvit__node_binding b[8] = {rd(op->h.t), rd(or_dummy(stats, op->h.t)), rd(or_dummy(op->gn_weight, op->skip)),
                                rd(or_dummy(op->gn_bias, op->skip)), rd(op->skip), rd(op->a.t), rd(op->z.t), wr(out.t)};
    if (op->out_over_h) b[7].access |= VKVIT_READ;
    /* Lanes along the row's E/4 vec4s, workgroups along rows: on CPU devices one 8-lane workgroup spans the row
     * and takes 16 rows, 4 per step (llvmpipe pays per workgroup and per fetch, see the shader), elsewhere one row
     * each. */
    const uint32_t gx = cpu ? 1 : groups_for(op->E / 4, wg);
    const uint32_t gy = cpu ? groups_for(VKVIT_CEIL_DIV(rows, 4), 4) : groups_for(rows, 1);
    if (g->ctx->policy.packed_bindings && kd.shader == VKVIT_SHADER_MLSTM_OUT_F32_F32)
        ops_packed_node(g, name, "mlstm_out", &kd, VKVIT_SHADER_MLSTM_OUT_F32_F32_PACKED, b, 8, &p, sizeof p, gx, gy,
                        1);
    else
        vkvit__graph_node(g, name, "mlstm_out", &kd, b, 8, &p, sizeof p, gx, gy, 1);
    return g->error ? NO_MAT : out;
}
