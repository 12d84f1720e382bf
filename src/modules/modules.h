// SPDX-License-Identifier: Apache-2.0
/* Module builders: one per model block, each reading top to bottom like the reference forward (tools/reference/).
 * They add nodes to a graph through src/ops/ops.h and never touch Vulkan. */
#ifndef VKVIT_MODULES_H
#define VKVIT_MODULES_H

#include "ops/ops.h"
#include "model/model.h"
#include "model/model_file.h"

/* ---- Patch embedding (patch_embed.c), shared by the networks ------------------------------------------------ */

typedef struct vkvit__patch_embed_op {
    const char *prefix;                     /* weight names: "<prefix>.weight" [C, Cin, P, P], "<prefix>.bias" [C] */
    uint32_t img;                           /* INPUT [B, H, W, Cin] */
    uint32_t batch, height, width, in_chans, patch, dim;
    bool bias;
    uint32_t pos_embed;                     /* [1, Np, C] added to every image, or VKVIT_NONE */
    vkvit__mat dst;                         /* Np rows of C per image (batch_stride between images) */
} vkvit__patch_embed_op;

void vkvit__patch_embed(vkvit__graph *g, const vkvit_model *m, const vkvit__patch_embed_op *op);

/* logits = v [B, in_dim] · out_proj.weightᵀ (+ out_proj.bias): a new OUTPUT tensor [B, classes]. */
uint32_t vkvit__classifier_head(vkvit__graph *g, const vkvit_model *m, uint32_t v, uint32_t B, uint32_t in_dim,
                                uint32_t classes, bool bias);

/* ---- ViT-5 (vit5.c, vit5_block.c) --------------------------------------------------------------------------- */

/* Tensors the kernels want beyond the file's, stored with the weights (freed by the loader):
 *   const.rope                         [T, dk/2, 2]  host-precomputed RoPE (cos, sin), docs/math.md 1.4
 *   const.blocks.{i}.qk_norm           [2, dk]       q_norm.weight then k_norm.weight (one binding of the attention
 *                                                    kernel), when qk_norm */
vkvit_result vkvit__vit5_constants(const vkvit__model_file *mf, vkvit__constant **out, uint32_t *n);

/* The whole ViT5ClassificationNet for batch B: input [B, H, W, 3] -> output logits [B, classes]. */
void vkvit__vit5_build(vkvit__graph *g, const vkvit_model *m, uint32_t B, uint32_t *input, uint32_t *output);

/* One ViT5ResidualBlock updating the residual stream x [B, T, C] in place (docs/math.md 2.2). */
/* Block i on the residual stream x [B, T, C], in place. cls_only: only the CLS row of each image is read after this
 * block (the last block of a CLS readout), so the attention output projection and the MLP run on those B rows alone
 * (K and V still need every token) and the other rows keep the block's input; ignored without a CLS token or with
 * GRN, whose statistics span every token. */
void vkvit__vit5_block(vkvit__graph *g, const vkvit_model *m, uint32_t i, uint32_t x, uint32_t B, bool cls_only);
/* The CLS token's row among an image's T rows: 0 in the paper's layout, num_patches in nvsubq's (docs/math.md 5.1). */
uint32_t vkvit__vit5_cls_row(const vkvit__vit5_config *c);

/* ---- Vision-LSTM (vil.c): mLSTM cell and block, ViL v1 network (docs/math.md 7) ---------------------------- */

typedef struct vkvit__mlstm_desc {
    uint32_t dim, inner_dim, num_heads, conv_kernel;   /* D, E, NH, conv1d kernel (qkv blocks are 4x4) */
    bool nxai;                              /* NX-AI numerics and norms (docs/math.md 7.2), else the seed's (7.1) */
    float norm_eps;                         /* the block LayerNorm (norm1) */
    uint32_t chunk;                         /* scan chunk length; 0 = the device default */
} vkvit__mlstm_desc;

/* Intermediates of a cell, for tests: gates [B*S, 2NH] (ipre | fpre) and where the scan output h [B*S, E] is
 * (a dense tensor, or qkv's first column block: vkvit__mlstm_scan_op.h_over_q). */
typedef struct vkvit__mlstm_aux {
    uint32_t gates;
    vkvit__mat h;
} vkvit__mlstm_aux;

/* The mLSTM block settings of a `vil` model. */
vkvit__mlstm_desc vkvit__vil_mlstm_desc(const vkvit__model_config *cfg);

/* The cell's q/k and gate weights folded on the host (exact algebra, rounded once from double): only products
 * q_t . k_s ever use q and k (the scores, the chunked scan's C q and n . q), and the gates are linear in
 * cat(q, k, v). With a = silu(conv(xm)), q = HW(a; Wq), k = HW(a; Wk), v = HW(xm; Wv) (HW: out[4p+o] =
 * sum_i W[p][o][i] in[4p+i]):
 *   q_t . k_s = q'_t . a_s          q' = HW(a; Mqk),  Mqk[p][j][i] = sum_o Wk[p][o][j] Wq[p][o][i]
 *   gate(cat(q, k, v)) = cat(a, v) . Wgᵀ'   Wg'[n][4p+i] = sum_o Wg[n][4p+o] Wq[p][o][i] + Wg[n][E+4p+o] Wk[p][o][i],
 *                                          Wg'[n][E+c] = Wg[n][2E+c]
 *                      = a . Wg'[n][:E] + xm . Wx[n]   Wx[n][4p+i] = sum_o Wg[n][2E+4p+o] Wv[p][o][i]
 * so the cell stores (q', a, v) instead of a, q, k and v (on llvmpipe every stored float costs a per-lane scalar
 * store) and the gate GEMM's K is 2E instead of 3E; where the quadratic scan takes v transposed (no v rows are
 * stored), the gates come from a and xm instead (two GEMMs of K = E).
 * wq, wk, wv [NP, 4, 4]; wig, wfg [NH, 3E] -> qk_fold [NP, 4, 4], gate_fold [2 NH, 3E] = (Wg'[:, :E], Wg'[:, E:],
 * Wx) (igate rows, then fgate's). */
void vkvit__mlstm_fold(const float *wq, const float *wk, const float *wv, const float *wig, const float *wfg,
                       uint32_t E, uint32_t NH, float *qk_fold, float *gate_fold);

/* Tensors the cell reads beyond the file's (vkvit__mlstm_fold), per block i:
 *   const.blocks.{i}.mlstm.qk_fold     [E/4, 4, 4]
 *   const.blocks.{i}.mlstm.gate_fold   [2 NH, 3E] */
vkvit_result vkvit__vil_constants(const vkvit__model_file *mf, vkvit__constant **out, uint32_t *n);

/* mLSTMCell on xn (dense [B*S, D], original token order) writing its output into y (dense [B*S, D]); with
 * `accumulate` the output is added to y's contents (the block's residual add, in the proj_down epilogue).
 * xn_again (optional): the norm that wrote xn, run again (into a new tensor) for proj_up's second half, so that xn
 * dies after the first half; NULL: the second half reads xn.
 * Weights "<wprefix>proj_up.weight", ... (state_dict names of the cell), and the folds "const.<wprefix>qk_fold",
 * "const.<wprefix>gate_fold" (vkvit__vil_constants). aux (optional) gets intermediates. */
void vkvit__mlstm_cell(vkvit__graph *g, const vkvit_model *m, const vkvit__mlstm_desc *d, const char *wprefix,
                       uint32_t xn, const vkvit__norm_op *xn_again, uint32_t B, uint32_t S, bool reverse,
                       uint32_t y, bool accumulate, vkvit__mlstm_aux *aux);

/* mLSTMBlock: x += cell(norm1(x), reverse), x any tensor of B*S*D floats updated in place. Weights
 * "<wprefix>norm1.weight" and "<wprefix>mlstm.*". */
void vkvit__mlstm_block(vkvit__graph *g, const vkvit_model *m, const vkvit__mlstm_desc *d, const char *wprefix,
                        uint32_t x, uint32_t B, uint32_t S, bool reverse);

/* The whole VisionLSTM for batch B: input [B, H, W, 3] -> output logits [B, classes]. */
void vkvit__vil_build(vkvit__graph *g, const vkvit_model *m, uint32_t B, uint32_t *input, uint32_t *output);

/* ---- resnet: conditioned ClassificationResNet (resnet.c) ---------------------------------------------------- */

/* Constant tensors: const.rope [T, dk/2, 2], the split-half grid RoPE table over Hp x Wp (single base
 * sequence_mixer.rope_base), when the sequence mixer uses RoPE; none otherwise. */
vkvit_result vkvit__resnet_constants(const vkvit__model_file *mf, vkvit__constant **out, uint32_t *n);

/* The whole network for batch B: input [B, H, W, 3] (+ condition [B, C] or [B, Tc, C] when the condition mixer is
 * active, else *condition = VKVIT_NONE) -> output logits [B, classes]. */
void vkvit__resnet_build(vkvit__graph *g, const vkvit_model *m, uint32_t B, uint32_t *input, uint32_t *condition,
                         uint32_t *output);

/* One ResidualBlock of the network: block i on the Hp x Wp patch grid, updating the residual stream x [B, T, C] in
 * place (docs/math.md 3.1); cond is the condition input (VKVIT_NONE when the condition mixer is identity). Labels and
 * weights "blocks.<i>.*"; RoPE from const.rope. A wrapper of vkvit__rn_block_build. */
void vkvit__resnet_block(vkvit__graph *g, const vkvit_model *m, uint32_t i, uint32_t x, uint32_t cond, uint32_t B);

/* ---- the generic ResidualBlock over a 1-, 2- or 3-D token grid (resnet.c) -------------------------------------
 * Inputs are channels-last (B, *spatial, C) flattened row-major to T = prod(spatial) tokens, the layout of
 * tools/reference/generic.py. Module code only: the caller owns the grid, the RoPE table and the weight names. */
typedef struct vkvit__rn_block_desc {
    const vkvit__resnet_config *cfg;        /* the block part only: dim, input_norm, seq, condition_mixer_norm, cond,
                                             * mlp_norm, mlp, condition_tokens (0: condition [B, C]; Tc: [B, Tc, C]) */
    uint32_t B;                             /* batch */
    uint32_t ndim;                          /* spatial rank, 1 to 3 */
    uint32_t shape[3];                      /* spatial extents (first ndim used) */
    uint32_t rope;                          /* when cfg->seq.rope: the compact table [T, dk/2, 2] over this grid
                                             * (vkvit__rn_rope_constant) as a graph tensor; else VKVIT_NONE */
} vkvit__rn_block_desc;

/* T = the product of the spatial extents. */
uint32_t vkvit__rn_tokens(const vkvit__rn_block_desc *b);

/* The sequence mixer's RoPE table over an n-D grid (n = 1..3; dk = dim / seq.num_heads, base seq.rope_base) as a
 * constant called `name` (out->data malloc'ed, also on error paths where it was allocated; the caller frees it).
 * Errors: VKVIT_ERROR_INVALID_ARGUMENT (no sequence mixer, bad grid or head split), VKVIT_ERROR_OUT_OF_HOST_MEMORY. */
vkvit_result vkvit__rn_rope_constant(const vkvit__resnet_config *c, const uint32_t *shape, uint32_t ndim,
                                     const char *name, vkvit__constant *out);

/* The block: x (any tensor of B*T*C floats) updated in place; cond (B*Tc*C floats) when cfg->cond.enabled, else
 * VKVIT_NONE. Weight names are `prefix` + the state_dict name ("blocks.3." in the network, "" for a bare block);
 * node labels are the state_dict names (the caller sets the graph scope). Identity branches add nothing. */
void vkvit__rn_block_build(vkvit__graph *g, const vkvit_model *m, const vkvit__rn_block_desc *b, const char *prefix,
                           uint32_t x, uint32_t cond);

/* QKVSequenceMixer: out (dense [B*T, C]) = out_proj(Attention(chunk3(qkv_proj(xn)))), plus out's previous contents
 * when `accumulate` (the block's residual add; out may then be x itself). Weights "<wprefix>qkv_proj.weight", ...
 * (biases when cfg->seq.bias); nodes "<label>.qkv_proj", "<label>.attention", "<label>.out_proj". */
void vkvit__rn_sequence_mixer(vkvit__graph *g, const vkvit_model *m, const vkvit__rn_block_desc *b,
                              const char *wprefix, const char *label, uint32_t xn, uint32_t out, bool accumulate);

/* QKVConditionMixer: out = out_proj(Attention(q_proj(xn), chunk2(kv_proj(cond)))) (+ out when `accumulate`), no
 * biases, no RoPE. With a one-token condition (condition_tokens 0 or 1) the result is out_proj(V) at every position:
 * xn is not read (pass VKVIT_NONE) and no q_proj or attention node is added. */
void vkvit__rn_condition_mixer(vkvit__graph *g, const vkvit_model *m, const vkvit__rn_block_desc *b,
                               const char *wprefix, const char *label, uint32_t xn, uint32_t cond, uint32_t out,
                               bool accumulate);

#endif /* VKVIT_MODULES_H */
