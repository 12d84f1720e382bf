// SPDX-License-Identifier: Apache-2.0
/* src/ops/norm — RMSNorm / LayerNorm / GroupNorm over rows (shaders/norm.comp: one workgroup per (group, row),
 * statistics in fp32 through shaders/reduce.glsl; the subgroup variant where vkvit__policy.subgroup_reductions). */
#ifndef VKVIT_OPS_NORM_H
#define VKVIT_OPS_NORM_H

#include "ops/mat.h"

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

#endif /* VKVIT_OPS_NORM_H */
