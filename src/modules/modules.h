/* Module builders: one per model block, each reading top to bottom like the reference forward (tools/reference/).
 * They add nodes to a graph through src/graph/ops.h and never touch Vulkan. */
#ifndef VKVIT_MODULES_H
#define VKVIT_MODULES_H

#include "graph/ops.h"
#include "model/model.h"
#include "model/model_file.h"

/* ---- ViT-5 (vit5.c, vit5_block.c) --------------------------------------------------------------------------- */

/* Tensors the kernels want beyond the file's, stored with the weights (freed by the loader):
 *   const.rope                         [T, dk/2, 2]  host-precomputed RoPE (cos, sin), SPEC 1.4
 *   const.blocks.{i}.qk_norm           [2, dk]       q_norm.weight then k_norm.weight (one binding of the attention
 *                                                    kernel), when qk_norm */
vkvit_result vkvit__vit5_constants(const vkvit__model_file *mf, vkvit__constant **out, uint32_t *n);

/* The whole ViT5ClassificationNet for batch B: input [B, H, W, 3] -> output logits [B, classes]. */
void vkvit__vit5_build(vkvit__graph *g, const vkvit_model *m, uint32_t B, uint32_t *input, uint32_t *output);

/* One ViT5ResidualBlock updating the residual stream x [B, T, C] in place (SPEC 2.2). */
void vkvit__vit5_block(vkvit__graph *g, const vkvit_model *m, uint32_t i, uint32_t x, uint32_t B);

/* ---- resnet: conditioned ClassificationResNet (resnet.c) ---------------------------------------------------- */

/* Constant tensors: const.rope [T, dk/2, 2], the split-half grid RoPE table over Hp x Wp (single base
 * sequence_mixer.rope_base), when the sequence mixer uses RoPE; none otherwise. */
vkvit_result vkvit__resnet_constants(const vkvit__model_file *mf, vkvit__constant **out, uint32_t *n);

/* The whole network for batch B: input [B, H, W, 3] (+ condition [B, C] or [B, Tc, C] when the condition mixer is
 * active, else *condition = VKVIT_NONE) -> output logits [B, classes]. */
void vkvit__resnet_build(vkvit__graph *g, const vkvit_model *m, uint32_t B, uint32_t *input, uint32_t *condition,
                         uint32_t *output);

/* One ResidualBlock updating the residual stream x [B, T, C] in place (SPEC 3.1); cond is the condition input
 * (VKVIT_NONE when the condition mixer is identity). */
void vkvit__resnet_block(vkvit__graph *g, const vkvit_model *m, uint32_t i, uint32_t x, uint32_t cond, uint32_t B);

#endif /* VKVIT_MODULES_H */
