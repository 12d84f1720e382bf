// SPDX-License-Identifier: Apache-2.0
/* src/ops/grn — global response normalisation (ConvNeXt-V2 GRN) of the residual blocks: per-image channel
 * statistics (shaders/grn_stats.comp, reduction through shaders/reduce.glsl), then the fused apply + LayerScale +
 * residual add (shaders/grn_apply.comp). */
#ifndef VKVIT_OPS_GRN_H
#define VKVIT_OPS_GRN_H

#include "ops/mat.h"

/* GRN on the mixer output a [B, T, C] fused with LayerScale and the residual add into x (in place):
 * x += ls ⊙ (gamma ⊙ (a ⊙ nx) + beta + a). gamma_beta: the two [C] weights; ls: [C] or VKVIT_NONE. */
void vkvit__op_grn_residual(vkvit__graph *g, const char *name, uint32_t a, uint32_t gamma, uint32_t beta, uint32_t ls,
                            uint32_t x, uint32_t B, uint32_t T, uint32_t C, float eps);

#endif /* VKVIT_OPS_GRN_H */
