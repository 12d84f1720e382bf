// SPDX-License-Identifier: Apache-2.0
/* src/ops/attention — multi-head attention: the C mirror of shaders/attention.comp (the flash-style core, tiles per
 * device), the unfused path's prep + row softmax (shaders/attention_prep.comp, softmax_rows.comp; the GEMMs come
 * from ops/gemm.h), and the graph nodes (vkvit__op_rope_attention, vkvit__op_attention).
 *
 *     o[b, i, h*dk + d] = sum_j softmax_j( scale * q~[b,i,h] . k~[b,j,h] ) v[b, j, h*dk + d]
 *
 * with the q/k prologue of either flavour folded in:
 *   VKVIT_ATTENTION_QKNORM_ROPE     ViT5Attention (docs/math.md 1.3): optional QK RMSNorm (weights, eps) BEFORE RoPE;
 *                            scale dk^-0.5.
 *   VKVIT_ATTENTION_GENERIC  generic Attention (docs/math.md 3.2, 9.13): RoPE first, then the optional
 *                            parameter-free L2 norm x / max(||x||, 1e-12); scale exactly 1.0 under qk-norm; optional
 *                            causal mask (key j <= query i, top-left aligned, also for Tq != Tkv).
 * Q, K and V are read through (row stride, column offset, batch stride) triples, so the fused ViT-5 qkv [B, T, 3C]
 * (channel s*C + h*dk + d) is bound three times with offsets 0, C, 2C, and cross-attention reads Q from one tensor
 * and K/V from another with Tkv != Tq.
 *
 * BINDINGS (storage buffers, set 0; offsets inside a buffer go in the push constants, so bind whole buffers):
 *   0  Q source                      float, read
 *   1  K source                      float, read      (0, 1, 2 may be the same buffer)
 *   2  V source                      float, read
 *   3  RoPE table                    compact (cos, sin) table (src/model/rope.h), T * dk floats, row t = token t
 *                                    (the same table for q and k: RoPE needs Tq == Tkv). Any buffer when rope is off.
 *   4  QK-norm weights               2*dk floats: q_norm.weight then k_norm.weight. Read only in QKNORM_ROPE mode with
 *                                    qk_norm; any buffer otherwise.
 *   5  output                        float, written: exactly the Tq x (n_heads*dk) entries the push constants address
 *
 * USAGE
 *     vkvit__attention_config cfg = {.mode = VKVIT_ATTENTION_QKNORM_ROPE, .dk = 64, .qk_norm = true,
 *                                    .rope = VKVIT_ROPE_SPLIT_HALF};
 *     vkvit__attention_kernel_create(ctx, &cfg, "block3 attention", &kernel);       // tiles chosen for the device
 *     vkvit__attention_push push = {.Tq = T, .Tkv = T, .q_stride = 3*C, .q_offset = 0, ..., .scale =
 *                                   vkvit__attention_default_scale(&cfg), .eps = 1e-6f};
 *     vkvit__attention_record(ctx, cmd, &kernel, &cfg, set, &push, n_heads, batch);
 */
#ifndef VKVIT_OPS_ATTENTION_H
#define VKVIT_OPS_ATTENTION_H

#include "ops/mat.h"
#include "ops/rope.h"

typedef enum vkvit__attention_mode {
    VKVIT_ATTENTION_QKNORM_ROPE = 0,               /* RMSNorm(w) -> RoPE */
    VKVIT_ATTENTION_GENERIC = 1,            /* RoPE -> L2 norm */
} vkvit__attention_mode;

/* Mirrors the `p` block of shaders/attention.comp. Strides and offsets count floats. Element addresses:
 *   q: b*q_batch_stride + i*q_stride + q_offset + h*dk + d      (i < Tq)
 *   k, v: the same with k_* / v_* and j < Tkv                   (a batch stride of 0 shares K/V across the batch)
 *   o: b*o_batch_stride + i*o_stride + o_offset + h*dk + d */
typedef struct vkvit__attention_push {
    uint32_t Tq, Tkv;                       /* both >= 1 */
    uint32_t q_stride, q_offset, q_batch_stride;
    uint32_t k_stride, k_offset, k_batch_stride;
    uint32_t v_stride, v_offset, v_batch_stride;
    uint32_t o_stride, o_offset, o_batch_stride;
    float scale;                            /* see vkvit__attention_default_scale */
    float eps;                              /* QKNORM_ROPE: RMSNorm eps (1e-6 in every shipped config); GENERIC: 1e-12 */
} vkvit__attention_push;
VKVIT_PUSH_MIRROR(vkvit__attention_push, 16);

/* What the kernel computes (fixed at pipeline creation as specialization constants) and how it is tiled.
 * Zero tile fields are chosen by the device (vkvit__attention_resolve). */
typedef struct vkvit__attention_config {
    vkvit__attention_mode mode;
    uint32_t dk;                            /* head dim: a multiple of 4, <= 256; with split_half also of
                                               2*rope_axes */
    bool qk_norm;
    vkvit__rope_pairing rope;               /* VKVIT_ROPE_NONE, _SPLIT_HALF or _ADJACENT */
    uint32_t rope_axes;                     /* split_half: axis parts of a head (ViT-5: 2; generic n-D grid: n).
                                               0 = 2. Ignored for the other pairings */
    bool causal;
    /* Tiles (0 = default): */
    uint32_t bq;                            /* query rows per workgroup */
    uint32_t bk;                            /* keys per shared-memory tile; (max(bk, bq) + bk) * dk floats of
                                               shared memory */
    uint32_t kc;                            /* keys per online-softmax chunk (registers); divides bk */
    uint32_t tpr;                           /* invocations per query row; > 1 uses the subgroup-shuffle variant */
    uint32_t rpi;                           /* query rows per invocation; divides bq */
} vkvit__attention_config;

/* The scale the reference uses: 1.0 for the generic Attention with qk-norm, dk^-0.5 otherwise. */
float vkvit__attention_default_scale(const vkvit__attention_config *cfg);

/* Copies `cfg` to *out with every zero field resolved for this device and checks the result: pairing/dk rules,
 * tpr a power of two dividing dk (and > 1 only with subgroup shuffles, tpr <= subgroup size), bk a multiple of kc,
 * shared memory and workgroup-size limits. A pure function of (device, cfg): create and record agree.
 * Errors: VKVIT_ERROR_INVALID_ARGUMENT (a rule broken; the sentence names it), VKVIT_ERROR_UNSUPPORTED (the device
 * cannot hold the requested tiles). */
vkvit_result vkvit__attention_resolve(const vkvit_ctx *ctx, const vkvit__attention_config *cfg,
                                      vkvit__attention_config *out);

/* The kernel description (shader variant, six bindings, push size, specialization constants) of `cfg` for this
 * device, for callers that create pipelines themselves (the graph). Fails as vkvit__attention_resolve does. */
vkvit_result vkvit__attention_kernel_desc(const vkvit_ctx *ctx, const vkvit__attention_config *cfg, const char *label,
                                          vkvit__kernel_desc *out);

/* Creates the pipeline for `cfg` (six bindings, see above). On failure *out is zeroed. */
vkvit_result vkvit__attention_kernel_create(vkvit_ctx *ctx, const vkvit__attention_config *cfg, const char *label,
                                            vkvit__kernel *out);

/* Workgroup counts of one dispatch: (ceil(Tq / bq), n_heads, batch), each of bq / rpi * tpr invocations. `cfg` must
 * be valid (a kernel was created from it). */
void vkvit__attention_groups(const vkvit_ctx *ctx, const vkvit__attention_config *cfg,
                             const vkvit__attention_push *push, uint32_t n_heads, uint32_t batch, uint32_t groups[3]);

/* Records one dispatch (vkvit__attention_groups). `cfg` must be the one the kernel was created with. No barriers
 * are recorded. */
void vkvit__attention_record(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__kernel *k,
                             const vkvit__attention_config *cfg, VkDescriptorSet set,
                             const vkvit__attention_push *push, uint32_t n_heads, uint32_t batch);

/* ------------------------------------------------------------------------------------------------------------
 * Graph nodes
 * ------------------------------------------------------------------------------------------------------------ */

/* How the attention core is computed (vkvit__op_rope_attention). The values match policy.attention (VKVIT_ATTENTION). */
typedef enum vkvit__attention_path {
    VKVIT_ATTENTION_PATH_AUTO = 0,          /* policy.attention (VKVIT_ATTENTION) if set, else gemm on CPU
                                               devices, fused elsewhere */
    VKVIT_ATTENTION_PATH_FUSED = 1,         /* one flash-attention dispatch (shaders/attention.comp) */
    VKVIT_ATTENTION_PATH_GEMM = 2,          /* prep -> GEMM -> row softmax -> GEMM (four dispatches) */
} vkvit__attention_path;

/* ViT5Attention core on the fused qkv [B*T, 3C] (channel s*C + h*dk + d): QK RMSNorm (optional), RoPE, softmax
 * attention with scale dk^-0.5. Returns o [B*T, C] (channel h*dk + d).
 * Two implementations, same numerics (fp32, ~1e-6 apart): the fused flash-attention kernel (one node) and the GEMM
 * path (four nodes: prep, S = q~ k~T, row softmax, S vT^T; B*H*T*ceil4(T) floats of scores), which is ~10x faster
 * on llvmpipe. path AUTO picks: the environment variable VKVIT_ATTENTION=fused|gemm, read once at ctx creation into
 * policy.attention (another value fails the graph build with a sentence), else gemm on CPU devices
 * (policy.cpu_kernels) and fused elsewhere. */
typedef struct vkvit__rope_attention_op {
    uint32_t qkv;
    uint32_t B, T, C, heads;
    uint32_t rope;                          /* compact table [T, dk/2, 2] (src/model/rope.c) */
    vkvit__rope_pairing pairing;
    uint32_t qk_norm;                       /* [2, dk]: q_norm.weight then k_norm.weight, or VKVIT_NONE */
    float qk_norm_eps;
    vkvit__attention_path path;             /* 0 = auto (see vkvit__op_rope_attention) */
} vkvit__rope_attention_op;

uint32_t vkvit__op_rope_attention(vkvit__graph *g, const char *name, const vkvit__rope_attention_op *op);

/* Generic Attention core (docs/math.md 3.2; tools/reference/generic.py Attention), through the fused kernel
 * (shaders/attention.comp, VKVIT_ATTENTION_GENERIC) or, where ViT-5's would take it (VKVIT_ATTENTION, else CPU
 * devices) and there is no causal mask, the unfused path (prep -> GEMM -> row softmax -> GEMM): per head, optional split-half RoPE first (table `rope`, same
 * rows for q and k, so Tq == Tkv), then the optional parameter-free L2 norm (eps 1e-12), scale 1.0 under qk_norm
 * else dk^-0.5, optional causal mask j <= i (top-left aligned, also for Tkv != Tq). Q, K and V are [tokens, C]
 * matrices read through vkvit__mat (offset = column offset of head 0, stride = row stride, batch_stride = per
 * image), so a fused qkv [B*T, 3C] is bound three times and cross-attention reads K/V from another tensor.
 * Returns o [B*Tq, C] (channel h*dk + d). A causal attention always takes the fused kernel (the unfused softmax
 * has no mask). */
typedef struct vkvit__attention_op {
    vkvit__mat q, k, v;
    uint32_t B, Tq, Tkv, C, heads;
    uint32_t rope;                          /* compact table [Tq, dk/2, 2] (src/model/rope.c) or VKVIT_NONE */
    uint32_t rope_axes;                     /* grid axes of the table (split-half parts of a head) */
    bool qk_norm, causal;
} vkvit__attention_op;

uint32_t vkvit__op_attention(vkvit__graph *g, const char *name, const vkvit__attention_op *op);

#endif /* VKVIT_OPS_ATTENTION_H */
