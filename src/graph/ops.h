/* Op builders: the bridge between modules (which think in tensors and shapes) and kernels (push constants,
 * specialization constants, workgroup counts). Each call adds one node (or a few) to the graph and returns the
 * output tensor, or VKVIT_NONE after a (sticky) graph error. Modules never touch Vulkan; only this file and
 * src/vk know the shaders' push-constant layouts.
 *
 * Matrices are addressed in fp32 elements: a `vkvit__mat` is a batched row-major matrix inside tensor `t`:
 *     element (b, r, c) = t[offset + b * batch_stride + r * stride + c]
 * which lets e.g. the patch-embedding GEMM write straight into the token rows of the residual stream. */
#ifndef VKVIT_GRAPH_OPS_H
#define VKVIT_GRAPH_OPS_H

#include "graph/graph.h"
#include "model/rope.h"

typedef struct vkvit__mat {
    uint32_t t;
    uint32_t offset, stride, batch_stride;
} vkvit__mat;

/* A dense [rows, cols] matrix (batch stride rows*cols) at the start of tensor t. */
static inline vkvit__mat vkvit__mat_dense(uint32_t t, uint32_t rows, uint32_t cols) {
    return (vkvit__mat){t, 0, cols, rows * cols};
}

/* ------------------------------------------------------------------------------------------------------------
 * GEMM with fused epilogue:  d = act(a · wᵀ + bias) ⊙ scale + residual
 * ------------------------------------------------------------------------------------------------------------ */

typedef enum vkvit__act {
    VKVIT_ACT_NONE = 0,
    VKVIT_ACT_GELU = 1,                     /* exact erf GELU */
    VKVIT_ACT_RELU = 2,
    VKVIT_ACT_SILU = 3,
} vkvit__act;

typedef struct vkvit__gemm_op {
    vkvit__mat a;                           /* [M, K] per batch */
    uint32_t w;                             /* weight [N, K] (nn.Linear layout), shared by the batch */
    uint32_t bias;                          /* [N] or VKVIT_NONE */
    vkvit__mat d;                           /* [M, N] per batch */
    uint32_t M, N, K, batch;
    vkvit__act act;
    uint32_t scale;                         /* [N] per-column scale (LayerScale) or VKVIT_NONE */
    vkvit__mat residual;                    /* added last; .t = VKVIT_NONE for none. May be d itself (in place). */
    /* Optional; zero keeps the defaults above. The B operand in general: element (z, n, k) =
     * w[w_offset + z * w_batch_stride + n * w_stride + k] (w_stride 0 = K; w_batch_stride 0 = shared). */
    uint32_t w_offset, w_stride, w_batch_stride;
    /* Column offset into bias and scale: output column n reads bias[n_offset + n] (a weight's row block). */
    uint32_t n_offset;
    /* Two-level batch (n_inner > 1): batch index z = outer * n_inner + inner (batch = n_outer * n_inner); each
     * operand's `batch_stride` is then its stride per OUTER index and inner_stride_* its stride per INNER index:
     * e.g. per-(image, head) products writing head column blocks of a [B*T, C] output (outer = image: T*C,
     * inner = head: dk). n_inner 0 or 1: a plain batch (offset z * batch_stride). */
    uint32_t n_inner;
    uint32_t inner_stride_a, inner_stride_w, inner_stride_d, inner_stride_r;
} vkvit__gemm_op;

void vkvit__op_gemm(vkvit__graph *g, const char *name, const vkvit__gemm_op *op);

/* y = x · wᵀ (+ bias) for a dense [rows, K] tensor x; returns a new [rows, N] activation. */
uint32_t vkvit__op_linear(vkvit__graph *g, const char *name, uint32_t x, uint32_t w, uint32_t bias, vkvit__act act);

/* ------------------------------------------------------------------------------------------------------------
 * Norms
 * ------------------------------------------------------------------------------------------------------------ */

typedef enum vkvit__norm_kind { VKVIT_NORM_RMS = 0, VKVIT_NORM_LAYER = 1 } vkvit__norm_kind;

typedef struct vkvit__norm_op {
    vkvit__norm_kind kind;
    uint32_t C, group;                      /* row length; statistics per group of `group` channels (group = C) */
    uint32_t rows, rows_per_batch;          /* rows to normalise; rows are grouped per image for addressing */
    vkvit__mat in, out;                     /* stride = row stride, batch_stride = per rows_per_batch rows */
    uint32_t weight, bias;                  /* [C] each, or VKVIT_NONE */
    bool one_plus_w;
    float eps;
} vkvit__norm_op;

void vkvit__op_norm(vkvit__graph *g, const char *name, const vkvit__norm_op *op);

/* RMSNorm of a dense [rows, C] tensor into a new one. */
uint32_t vkvit__op_rmsnorm(vkvit__graph *g, const char *name, uint32_t x, uint32_t weight, float eps);

/* ------------------------------------------------------------------------------------------------------------
 * Data movement and small reductions
 * ------------------------------------------------------------------------------------------------------------ */

/* im2col for a stride-P patch embedding: img [B, H, W, Cin] -> [B * Hp * Wp, Cin * P * P]. */
uint32_t vkvit__op_patchify(vkvit__graph *g, const char *name, uint32_t img, uint32_t B, uint32_t H, uint32_t W,
                            uint32_t Cin, uint32_t P);

/* Copies n_rows rows of C floats for each of B images (src batch_stride 0 broadcasts). dst is updated in place. */
void vkvit__op_copy_rows(vkvit__graph *g, const char *name, vkvit__mat src, vkvit__mat dst, uint32_t B,
                         uint32_t n_rows, uint32_t C);

/* Mean over n_rows rows of each image: src (b, r, c) -> new [B, C]. */
uint32_t vkvit__op_mean_rows(vkvit__graph *g, const char *name, vkvit__mat src, uint32_t B, uint32_t n_rows, uint32_t C);

/* GRN on the mixer output a [B, T, C] fused with LayerScale and the residual add into x (in place):
 * x += ls ⊙ (gamma ⊙ (a ⊙ nx) + beta + a). gamma_beta: the two [C] weights; ls: [C] or VKVIT_NONE. */
void vkvit__op_grn_residual(vkvit__graph *g, const char *name, uint32_t a, uint32_t gamma, uint32_t beta, uint32_t ls,
                            uint32_t x, uint32_t B, uint32_t T, uint32_t C, float eps);

/* ------------------------------------------------------------------------------------------------------------
 * Attention (shaders/attention.comp via src/vk/attention.h)
 * ------------------------------------------------------------------------------------------------------------ */

/* How the attention core is computed (vkvit__op_vit5_attention). */
typedef enum vkvit__attention_path {
    VKVIT_ATTENTION_PATH_AUTO = 0,          /* VKVIT_ATTENTION=fused|gemm if set, else gemm on CPU devices, fused else */
    VKVIT_ATTENTION_PATH_FUSED = 1,         /* one flash-attention dispatch (shaders/attention.comp) */
    VKVIT_ATTENTION_PATH_GEMM = 2,          /* prep -> GEMM -> row softmax -> GEMM (four dispatches) */
} vkvit__attention_path;

/* ViT5Attention core on the fused qkv [B*T, 3C] (channel s*C + h*dk + d): QK RMSNorm (optional), RoPE, softmax
 * attention with scale dk^-0.5. Returns o [B*T, C] (channel h*dk + d).
 * Two implementations, same numerics (fp32, ~1e-6 apart): the fused flash-attention kernel (one node) and the GEMM
 * path (four nodes: prep, S = q~ k~T, row softmax, S vT^T; B*H*T*ceil4(T) floats of scores), which is ~10x faster
 * on llvmpipe. path AUTO picks: environment variable VKVIT_ATTENTION=fused|gemm (read at every graph build, i.e.
 * at session creation; another value fails the build), else gemm on CPU devices (VKVIT_QUIRK_CPU_DEVICE) and
 * fused elsewhere. */
typedef struct vkvit__vit5_attention_op {
    uint32_t qkv;
    uint32_t B, T, C, heads;
    uint32_t rope;                          /* compact table [T, dk/2, 2] (src/model/rope.h) */
    vkvit__rope_pairing pairing;
    uint32_t qk_norm;                       /* [2, dk]: q_norm.weight then k_norm.weight, or VKVIT_NONE */
    float qk_norm_eps;
    vkvit__attention_path path;             /* 0 = auto (see vkvit__op_vit5_attention) */
} vkvit__vit5_attention_op;

uint32_t vkvit__op_vit5_attention(vkvit__graph *g, const char *name, const vkvit__vit5_attention_op *op);

/* Generic Attention core (SPEC 3.2; tools/reference/generic.py Attention), always the fused kernel
 * (shaders/attention.comp, VKVIT_ATTENTION_GENERIC): per head, optional split-half RoPE first (table `rope`, same
 * rows for q and k, so Tq == Tkv), then the optional parameter-free L2 norm (eps 1e-12), scale 1.0 under qk_norm
 * else dk^-0.5, optional causal mask j <= i (top-left aligned, also for Tkv != Tq). Q, K and V are [tokens, C]
 * matrices read through vkvit__mat (offset = column offset of head 0, stride = row stride, batch_stride = per
 * image), so a fused qkv [B*T, 3C] is bound three times and cross-attention reads K/V from another tensor.
 * Returns o [B*Tq, C] (channel h*dk + d). The unfused GEMM path of vkvit__op_vit5_attention has no causal mask, so
 * it is not used here. */
typedef struct vkvit__attention_op {
    vkvit__mat q, k, v;
    uint32_t B, Tq, Tkv, C, heads;
    uint32_t rope;                          /* compact table [Tq, dk/2, 2] (src/model/rope.h) or VKVIT_NONE */
    uint32_t rope_axes;                     /* grid axes of the table (split-half parts of a head) */
    bool qk_norm, causal;
} vkvit__attention_op;

uint32_t vkvit__op_attention(vkvit__graph *g, const char *name, const vkvit__attention_op *op);

/* ------------------------------------------------------------------------------------------------------------
 * Gated MLP activations (shaders/glu.comp)
 * ------------------------------------------------------------------------------------------------------------ */

typedef enum vkvit__glu_kind {
    VKVIT_GLU = 0,                          /* a[:h] * sigmoid(a[h:]) */
    VKVIT_SWIGLU = 1,                       /* silu(a[:h]) * a[h:] */
} vkvit__glu_kind;

/* a dense [rows, 2*Hd] -> a new [rows, Hd]. */
uint32_t vkvit__op_glu(vkvit__graph *g, const char *name, uint32_t a, vkvit__glu_kind kind);

#endif /* VKVIT_GRAPH_OPS_H */
