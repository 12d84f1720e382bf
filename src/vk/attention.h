/* src/vk/attention — the C mirror of shaders/attention.comp: the flash-style multi-head attention core.
 *
 *     o[b, i, h*dk + d] = sum_j softmax_j( scale * q~[b,i,h] . k~[b,j,h] ) v[b, j, h*dk + d]
 *
 * with the q/k prologue of either flavour folded in:
 *   VKVIT_ATTENTION_VIT5     ViT5Attention (SPEC 1.3): optional QK RMSNorm (weights, eps) BEFORE RoPE; scale dk^-0.5.
 *   VKVIT_ATTENTION_GENERIC  generic Attention (SPEC 3.2, 9.13): RoPE first, then the optional parameter-free L2
 *                            norm x / max(||x||, 1e-12); scale exactly 1.0 under qk-norm; optional causal mask
 *                            (key j <= query i, top-left aligned, also for Tq != Tkv).
 * Q, K and V are read through (row stride, column offset, batch stride) triples, so the fused ViT-5 qkv [B, T, 3C]
 * (channel s*C + h*dk + d) is bound three times with offsets 0, C, 2C, and cross-attention reads Q from one tensor
 * and K/V from another with Tkv != Tq.
 *
 * BINDINGS (storage buffers, set 0; offsets inside a buffer go in the push constants, so bind whole buffers):
 *   0  Q source                      float, read
 *   1  K source                      float, read      (0, 1, 2 may be the same buffer)
 *   2  V source                      float, read
 *   3  RoPE table                    compact (cos, sin) table of src/model/rope.h, T * dk floats, row t = token t
 *                                    (the same table for q and k: RoPE needs Tq == Tkv). Any buffer when rope is off.
 *   4  QK-norm weights               2*dk floats: q_norm.weight then k_norm.weight. Read only in VIT5 mode with
 *                                    qk_norm; any buffer otherwise.
 *   5  output                        float, written: exactly the Tq x (n_heads*dk) entries the push constants address
 *
 * USAGE
 *     vkvit__attention_config cfg = {.mode = VKVIT_ATTENTION_VIT5, .dk = 64, .qk_norm = true,
 *                                    .rope = VKVIT_ROPE_SPLIT_HALF};
 *     vkvit__attention_kernel_create(ctx, &cfg, "block3 attention", &kernel);       // tiles chosen for the device
 *     vkvit__attention_push push = {.Tq = T, .Tkv = T, .q_stride = 3*C, .q_offset = 0, ..., .scale =
 *                                   vkvit__attention_default_scale(&cfg), .eps = 1e-6f};
 *     vkvit__attention_record(ctx, cmd, &kernel, &cfg, set, &push, n_heads, batch);
 */
#ifndef VKVIT_VK_ATTENTION_H
#define VKVIT_VK_ATTENTION_H

#include "model/rope.h"
#include "vk/vk.h"

typedef enum vkvit__attention_mode {
    VKVIT_ATTENTION_VIT5 = 0,               /* RMSNorm(w) -> RoPE */
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
    float eps;                              /* VIT5: RMSNorm eps (1e-6 in every shipped config); GENERIC: 1e-12 */
} vkvit__attention_push;
_Static_assert(sizeof(vkvit__attention_push) <= VKVIT_MAX_PUSH, "attention push constants exceed 128 bytes");

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

#endif /* VKVIT_VK_ATTENTION_H */
