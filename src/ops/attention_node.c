// SPDX-License-Identifier: Apache-2.0
/* Attention graph nodes (see attention.h): the ViT-5 core through the fused kernel or the unfused path (prep ->
 * GEMM -> row softmax -> GEMM, with the push-constant mirrors of attention_prep.comp and softmax_rows.comp), and
 * the generic core. The fused kernel's tiles and description: attention.c. */
#include "ops/attention.h"

#include "ops/gemm.h"
#include "ops/op_util.h"

#include <stdio.h>

/* ------------------------------------------------------------------------------------------------------------
 * The ViT-5 attention core (fused or unfused)
 * ------------------------------------------------------------------------------------------------------------ */

/* The fused attention node: its packed-bindings variant under policy.packed_bindings (shaders/packed.glsl; the
 * policy then has no subgroup shuffles, so the kernel is the plain one), else the kernel of `kd`. */
static void attention_node(vkvit__graph *g, const char *name, const vkvit__kernel_desc *kd,
                           const vkvit__node_binding *b, const vkvit__attention_push *p, const uint32_t groups[3]) {
    if (g->ctx->policy.packed_bindings && kd->shader == VKVIT_SHADER_ATTENTION_F32_F32)
        ops_packed_node(g, name, "attention", kd, VKVIT_SHADER_ATTENTION_F32_F32_PACKED, b, 6, p, sizeof *p, groups[0],
                        groups[1], groups[2]);
    else
        vkvit__graph_node(g, name, "attention", kd, b, 6, p, sizeof *p, groups[0], groups[1], groups[2]);
}

/* The fused path: one flash-attention dispatch (shaders/attention.comp). */
static void rope_attention_fused(vkvit__graph *g, const char *name, const vkvit__rope_attention_op *op, uint32_t o) {
    const uint32_t C = op->C, dk = C / op->heads;
    vkvit__attention_config cfg = {
        .mode = VKVIT_ATTENTION_QKNORM_ROPE, .dk = dk, .qk_norm = op->qk_norm != VKVIT_NONE, .rope = op->pairing,
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
    attention_node(g, name, &kd, b, &p, groups);
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
VKVIT_PUSH_MIRROR(attention_prep_push, 15);

/* Mirrors the `p` block of shaders/softmax_rows.comp. */
typedef struct softmax_rows_push {
    uint32_t rows, n, n_pad, stride, offset;
} softmax_rows_push;
VKVIT_PUSH_MIRROR(softmax_rows_push, 5);

/* The unfused path (for CPU devices, where the fused kernel runs several times slower per FLOP than the GEMMs):
 * per (b, h), with Tkp = Tkv rounded up to 4 (so both GEMMs take the vec4 path of gemm_cpu.comp):
 *   prep     q, k, v -> q~ [B, H, Tq, dk] (the prologue of attention.comp: ViT-5's RMSNorm -> RoPE, or the generic
 *            RoPE -> L2 norm; times the softmax scale), k~ [B, H, Tkv, dk], vT [B, H, dk, Tkp]
 *            (shaders/attention_prep.comp; vT columns Tkv..Tkp-1 are zero)
 *   qk       S [B*H, Tq, Tkp] = q~ k~T                  (GEMM batched over B*H; columns Tkv..Tkp-1 untouched)
 *   softmax  S rows in place, columns Tkv..Tkp-1 set to 0 (shaders/softmax_rows.comp)
 *   pv       o[b*Tq + i, h*dk + d] = sum_j S[i, j] vT[d, j]   (GEMM, K = Tkp, two-level batch z = b*H + h:
 *            outer b -> Tq*C, inner h -> dk in o)
 * No causal mask: a causal generic attention takes the fused kernel.
 * kv_f16 (fp16-math sessions whose GEMMs run on cooperative matrices, policy.coopmat): k~ and vT
 * are fp16 (the prep's KV_F16 variant: F16 tensors) and Tkp is Tkv rounded up to
 * 8, so that both GEMMs take the cooperative-matrix kernel with 16-byte B loads; q~, the scores, the softmax and o
 * stay fp32. This is the path of such sessions on every device: the fused kernel has no tensor-core form. */
typedef struct unfused_attention {
    vkvit__mat q, k, v;                     /* sources: column of head 0, row stride, per-image stride */
    uint32_t B, Tq, Tkv, C, heads;
    uint32_t mode;                          /* VKVIT_ATTENTION_QKNORM_ROPE or _GENERIC (attention_prep.comp MODE) */
    bool qk_norm;
    uint32_t qk_norm_w;                     /* [2, dk] weights (ViT-5) or VKVIT_NONE */
    uint32_t rope, rope_pairing, rope_axes; /* table or VKVIT_NONE, vkvit__rope_pairing, split-half axis parts */
    float q_scale, eps;
    bool kv_f16;                            /* k~ and vT in fp16, GEMMs on cooperative matrices */
} unfused_attention;

static void attention_unfused(vkvit__graph *g, const char *name, const unfused_attention *u, uint32_t o) {
    const uint32_t B = u->B, Tq = u->Tq, Tkv = u->Tkv, C = u->C, H = u->heads, dk = C / H;
    const uint32_t Tkp = u->kv_f16 ? (Tkv + 7) & ~7u : (Tkv + 3) & ~3u;
    const vkvit__dtype kv_dtype = u->kv_f16 ? VKVIT_ELEM_F16 : VKVIT_ELEM_F32; /* k~ and vT */
    if ((uint64_t)B * H * VKVIT_MAX(Tq, dk) * Tkp > UINT32_MAX / 2 || (uint64_t)B * H * VKVIT_MAX(Tq, Tkv) * dk > UINT32_MAX / 2) {
        vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "attention '%s': score matrix of %llu floats is too large",
                          name, (unsigned long long)B * H * Tq * Tkp);
        return;
    }
    char label[64];
    const uint32_t qt = ops_intermediate(g, name, "q", B * H * Tq, dk);
    const uint32_t kt = ops_intermediate_typed(g, name, "k", kv_dtype, B * H * Tkv, dk);
    const uint32_t vt = ops_intermediate_typed(g, name, "vT", kv_dtype, B * H * dk, Tkp);
    const uint32_t st = ops_intermediate(g, name, "scores", B * H * Tq, Tkp);
    const bool cpu = g->ctx->policy.cpu_kernels;
    const uint32_t wg = ops_row_wg(g->ctx); /* CPU: one llvmpipe SIMD vector (8 rows/tokens side by side) */

    /* 1. prep */
    vkvit__kernel_desc kp = {
        .shader = VKVIT_SHADER_ATTENTION_PREP_F32_F32, .n_buffers = 8, .push_size = sizeof(attention_prep_push),
        .n_spec = 8,
        .spec = {dk, wg, u->mode, u->qk_norm, u->rope != VKVIT_NONE ? u->rope_pairing : 0, u->rope_axes, 0, !cpu},
    };
    /* VEC4: every q/k/v row starts at a multiple of 4 elements, so rows are read as vec4s */
    uint32_t row_bits = u->q.stride | u->q.offset | u->k.stride | u->k.offset | u->v.stride | u->v.offset;
    if (B > 1) row_bits |= u->q.batch_stride | u->k.batch_stride | u->v.batch_stride;
    kp.spec[6] = (row_bits & 3u) == 0;
    static const vkvit_shader_id prep_shader[2][2] = { /* [kv_f16][texel inputs: q, k, v, rope, w] */
        {VKVIT_SHADER_ATTENTION_PREP_F32_F32, VKVIT_SHADER_ATTENTION_PREP_F32_F32_TEXEL},
        {VKVIT_SHADER_ATTENTION_PREP_F32_F32_KV16, VKVIT_SHADER_ATTENTION_PREP_F32_F32_KV16_TEXEL},
    };
    kp.shader = prep_shader[u->kv_f16][ops_texel_inputs(g->ctx, &kp, 5)];
    attention_prep_push pp = {
        .Tq = Tq, .Tkv = Tkv, .n_heads = H,
        .q_stride = u->q.stride, .q_offset = u->q.offset, .q_batch_stride = u->q.batch_stride,
        .k_stride = u->k.stride, .k_offset = u->k.offset, .k_batch_stride = u->k.batch_stride,
        .v_stride = u->v.stride, .v_offset = u->v.offset, .v_batch_stride = u->v.batch_stride,
        .vt_stride = Tkp, .q_scale = u->q_scale, .eps = u->eps,
    };
    const uint32_t rope = or_dummy(u->rope, u->q.t);
    vkvit__node_binding bp[8] = {rd(u->q.t), rd(u->k.t), rd(u->v.t), rd(rope), rd(or_dummy(u->qk_norm_w, rope)),
                                 wr(qt), wr(kt), wr(vt)};
    snprintf(label, sizeof label, "%s.prep", name);
    /* GPUs: one head per workgroup row (HEAD_GRID); CPU devices loop over the heads (one token per SIMD lane) */
    const uint32_t gx = VKVIT_CEIL_DIV(VKVIT_MAX(Tq, Tkp), wg);
    if (g->ctx->policy.packed_bindings && kp.shader == VKVIT_SHADER_ATTENTION_PREP_F32_F32)
        ops_packed_node(g, label, "attn_prep", &kp, VKVIT_SHADER_ATTENTION_PREP_F32_F32_PACKED, bp, 8, &pp, sizeof pp,
                        gx, cpu ? 1 : H, B);
    else
        vkvit__graph_node(g, label, "attn_prep", &kp, bp, 8, &pp, sizeof pp, gx, cpu ? 1 : H, B);

    /* 2. S = q~ k~T per (b, h) */
    vkvit__gemm_op qk = {
        .a = {qt, 0, dk, Tq * dk}, .w = kt, .bias = VKVIT_NONE, .d = {st, 0, Tkp, Tq * Tkp},
        .M = Tq, .N = Tkv, .K = dk, .batch = B * H, .act = VKVIT_ACT_NONE, .scale = VKVIT_NONE,
        .residual = {VKVIT_NONE, 0, 0, 0}, .w_stride = dk, .w_batch_stride = Tkv * dk,
        .d_spare_column = true, /* column Tkv < Tkp: padding the softmax zeroes */
    };
    snprintf(label, sizeof label, "%s.qk", name);
    vkvit__op_gemm_kind(g, label, "attn_gemm", &qk);

    /* 3. softmax over each row's Tkv scores, in place: one row per invocation on CPU devices (vec4s along the row:
     * Tkp and the offset are multiples of 4), one row per workgroup elsewhere (reductions: shaders/reduce.glsl) */
    const bool row_per_wg = !cpu;
    vkvit__kernel_desc ks = {
        .shader =
            ops_reduce_variant(g->ctx, VKVIT_SHADER_SOFTMAX_ROWS_F32_F32, VKVIT_SHADER_SOFTMAX_ROWS_F32_F32_SUBGROUP),
        .n_buffers = 1, .push_size = sizeof(softmax_rows_push), .n_spec = 2, .spec = {wg, row_per_wg},
    };
    softmax_rows_push ps = {.rows = B * H * Tq, .n = Tkv, .n_pad = Tkp, .stride = Tkp, .offset = 0};
    vkvit__node_binding bs[2] = {rdwr(st), rd(st)};
    if (g->ctx->policy.texel_reads) { /* the scores read through a texel view of the same range (binding 1) */
        ks.shader = ops_reduce_variant(g->ctx, VKVIT_SHADER_SOFTMAX_ROWS_F32_F32_TEXEL,
                                       VKVIT_SHADER_SOFTMAX_ROWS_F32_F32_SUBGROUP_TEXEL);
        ks.n_buffers = 2;
        ks.texel_format[1] = VK_FORMAT_R32G32B32A32_SFLOAT;
    }
    snprintf(label, sizeof label, "%s.softmax", name);
    vkvit__graph_node(g, label, "attn_softmax", &ks, bs, ks.n_buffers, &ps, sizeof ps,
                      groups_for(ps.rows, row_per_wg ? 1 : wg), 1, 1);

    /* 4. o[b, :, h*dk:(h+1)*dk] = S vT^T per (b, h): two-level batch (outer b, inner h) */
    vkvit__gemm_op pv = {
        .a = {st, 0, Tkp, H * Tq * Tkp}, .w = vt, .bias = VKVIT_NONE, .d = {o, 0, C, Tq * C},
        .M = Tq, .N = dk, .K = Tkp, .batch = B * H, .act = VKVIT_ACT_NONE, .scale = VKVIT_NONE,
        .residual = {VKVIT_NONE, 0, 0, 0}, .w_stride = Tkp, .w_batch_stride = H * dk * Tkp,
        .n_inner = H, .inner_stride_a = Tq * Tkp, .inner_stride_w = dk * Tkp, .inner_stride_d = dk,
    };
    snprintf(label, sizeof label, "%s.pv", name);
    vkvit__op_gemm_kind(g, label, "attn_gemm", &pv);
}

/* fp16-math sessions whose GEMMs run on cooperative matrices take the unfused path with fp16 k~ and vT. */
static bool kv_f16_gemms(const vkvit__graph *g) {
    return g->opts.math == VKVIT_ELEM_F16 && g->ctx->policy.coopmat != VKVIT_COOPMAT_NONE;
}

/* The path when the op names none: policy.attention (VKVIT_ATTENTION, read once at ctx creation), else the GEMM
 * path on CPU devices and with kv_f16_gemms, the fused kernel elsewhere (see vkvit__op_rope_attention). */
static vkvit__attention_path auto_path(const vkvit__graph *g) {
    const vkvit__policy *pol = &g->ctx->policy;
    if (pol->attention) return (vkvit__attention_path)pol->attention;
    return pol->cpu_kernels || kv_f16_gemms(g) ? VKVIT_ATTENTION_PATH_GEMM : VKVIT_ATTENTION_PATH_FUSED;
}

/* ViT-5 through the unfused path: q, k, v are column blocks 0, C, 2C of the fused qkv rows. */
static void rope_attention_gemm(vkvit__graph *g, const char *name, const vkvit__rope_attention_op *op, uint32_t o) {
    const uint32_t T = op->T, C = op->C, dk = C / op->heads;
    vkvit__attention_config scfg = {.mode = VKVIT_ATTENTION_QKNORM_ROPE, .dk = dk, .qk_norm = op->qk_norm != VKVIT_NONE};
    const unfused_attention u = {
        .q = {op->qkv, 0, 3 * C, T * 3 * C}, .k = {op->qkv, C, 3 * C, T * 3 * C}, .v = {op->qkv, 2 * C, 3 * C, T * 3 * C},
        .B = op->B, .Tq = T, .Tkv = T, .C = C, .heads = op->heads,
        .mode = VKVIT_ATTENTION_QKNORM_ROPE, .qk_norm = op->qk_norm != VKVIT_NONE, .qk_norm_w = op->qk_norm,
        .rope = op->rope, .rope_pairing = op->pairing, .rope_axes = 2,
        .q_scale = vkvit__attention_default_scale(&scfg), .eps = op->qk_norm_eps, .kv_f16 = kv_f16_gemms(g),
    };
    attention_unfused(g, name, &u, o);
}

/* Path choice: op->path if set, else policy.attention (the environment variable VKVIT_ATTENTION, "fused" or
 * "gemm", read once at ctx creation), else the GEMM path on CPU devices (policy.cpu_kernels: llvmpipe runs the GEMMs
 * ~10x faster than the fused kernel) and in fp16-math sessions on cooperative matrices (kv_f16_gemms: the GEMMs on
 * tensor cores), and the fused kernel elsewhere. Another VKVIT_ATTENTION value fails the graph
 * build with a sentence. */
_Static_assert(VKVIT_ATTENTION_PATH_FUSED == 1 && VKVIT_ATTENTION_PATH_GEMM == 2, "policy.attention values");

/* A head the kernels of both paths can run: a multiple of 4 (split_half RoPE over 2 axes) up to 256 wide. Checked
 * before the path choice, so a model with wider heads fails session creation the same way on every path
 * (VKVIT_ERROR_UNSUPPORTED: the CLI's bad-input exit 2), not as a misconfigured kernel. */
static bool head_dim_ok(vkvit__graph *g, const char *name, uint32_t dk) {
    if (dk >= 4 && dk % 4 == 0 && dk <= 256) return true;
    vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "attention '%s': head dim %u must be a multiple of 4 <= 256", name,
                      dk);
    return false;
}

uint32_t vkvit__op_rope_attention(vkvit__graph *g, const char *name, const vkvit__rope_attention_op *op) {
    if (g->error || !head_dim_ok(g, name, op->heads ? op->C / op->heads : 0)) return VKVIT_NONE;
    const vkvit__policy *pol = &g->ctx->policy;
    vkvit__attention_path path = op->path;
    if (path == VKVIT_ATTENTION_PATH_AUTO) {
        if (pol->attention == VKVIT_ENV_BAD)
            return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT,
                                     "attention '%s': VKVIT_ATTENTION='%s' is neither 'fused' nor 'gemm'", name,
                                     pol->attention_text);
        path = auto_path(g);
        /* A fused kernel the device cannot hold (a head of 128 or more in the guaranteed 16 KiB of shared memory)
         * takes the GEMM path instead of failing: the choice was the library's, not the caller's. */
        const vkvit__attention_config probe = {.mode = VKVIT_ATTENTION_QKNORM_ROPE, .dk = op->C / op->heads,
                                               .qk_norm = op->qk_norm != VKVIT_NONE, .rope = op->pairing, .rope_axes = 2};
        vkvit__attention_config resolved;
        if (path == VKVIT_ATTENTION_PATH_FUSED && vkvit__attention_resolve(g->ctx, &probe, &resolved) != VKVIT_OK) {
            vkvit__error_clear();
            path = VKVIT_ATTENTION_PATH_GEMM;
        }
    }
    uint32_t shape[2] = {op->B * op->T, op->C};
    uint32_t o = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2, shape);
    if (path == VKVIT_ATTENTION_PATH_GEMM) rope_attention_gemm(g, name, op, o);
    else rope_attention_fused(g, name, op, o);
    return g->error ? VKVIT_NONE : o;
}

/* ------------------------------------------------------------------------------------------------------------
 * Generic attention (VKVIT_ATTENTION_GENERIC): the fused kernel, or the unfused path on CPU devices
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
    if (!head_dim_ok(g, name, dk)) return VKVIT_NONE;
    vkvit__attention_config cfg = {
        .mode = VKVIT_ATTENTION_GENERIC, .dk = dk, .qk_norm = op->qk_norm,
        .rope = op->rope != VKVIT_NONE ? VKVIT_ROPE_SPLIT_HALF : VKVIT_ROPE_NONE,
        .rope_axes = op->rope != VKVIT_NONE ? op->rope_axes : 0, .causal = op->causal,
    };
    /* The path as for ViT-5 (policy.attention, else unfused on CPU devices and with kv_f16_gemms), except that a
     * causal mask always takes the fused kernel (the unfused softmax has none). */
    const vkvit__policy *pol = &g->ctx->policy;
    if (pol->attention == VKVIT_ENV_BAD)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT,
                                 "attention '%s': VKVIT_ATTENTION='%s' is neither 'fused' nor 'gemm'", name,
                                 pol->attention_text);
    const vkvit__attention_path path = auto_path(g);
    if (path == VKVIT_ATTENTION_PATH_GEMM && !op->causal) {
        uint32_t shape[2] = {op->B * op->Tq, op->C};
        uint32_t o = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2, shape);
        const unfused_attention u = {
            .q = op->q, .k = op->k, .v = op->v, .B = op->B, .Tq = op->Tq, .Tkv = op->Tkv, .C = op->C,
            .heads = op->heads, .mode = VKVIT_ATTENTION_GENERIC, .qk_norm = op->qk_norm, .qk_norm_w = VKVIT_NONE,
            .rope = op->rope, .rope_pairing = VKVIT_ROPE_SPLIT_HALF, .rope_axes = op->rope_axes,
            .q_scale = vkvit__attention_default_scale(&cfg), .eps = 1e-12f, .kv_f16 = kv_f16_gemms(g),
        };
        attention_unfused(g, name, &u, o);
        return g->error ? VKVIT_NONE : o;
    }
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
    attention_node(g, name, &kd, b, &p, groups);
    return g->error ? VKVIT_NONE : o;
}
