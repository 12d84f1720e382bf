// SPDX-License-Identifier: Apache-2.0
/* src/ops/glu — gated MLP activations between an MLP's two linears (shaders/glu.comp). */
#ifndef VKVIT_OPS_GLU_H
#define VKVIT_OPS_GLU_H

#include "ops/mat.h"

typedef enum vkvit__glu_kind {
    VKVIT_GLU = 0,                          /* a[:h] * sigmoid(a[h:]) */
    VKVIT_SWIGLU = 1,                       /* silu(a[:h]) * a[h:] */
} vkvit__glu_kind;

/* a dense [rows, 2*Hd] -> a new [rows, Hd]. */
uint32_t vkvit__op_glu(vkvit__graph *g, const char *name, uint32_t a, vkvit__glu_kind kind);

#endif /* VKVIT_OPS_GLU_H */
