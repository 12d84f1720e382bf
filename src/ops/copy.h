// SPDX-License-Identifier: Apache-2.0
/* src/ops/copy — data movement between token layouts: patchify (im2col before the patch-embedding GEMM), row
 * copies (CLS / register tokens into the residual stream), row means (pooling). */
#ifndef VKVIT_OPS_COPY_H
#define VKVIT_OPS_COPY_H

#include "ops/mat.h"

/* im2col for a stride-P patch embedding: img [B, H, W, Cin] -> [B * Hp * Wp, Cin * P * P]. */
uint32_t vkvit__op_patchify(vkvit__graph *g, const char *name, uint32_t img, uint32_t B, uint32_t H, uint32_t W,
                            uint32_t Cin, uint32_t P);

/* Copies n_rows rows of C floats for each of B images (src batch_stride 0 broadcasts). dst is updated in place. */
void vkvit__op_copy_rows(vkvit__graph *g, const char *name, vkvit__mat src, vkvit__mat dst, uint32_t B,
                         uint32_t n_rows, uint32_t C);

/* Mean over n_rows rows of each image: src (b, r, c) -> new [B, C]. */
uint32_t vkvit__op_mean_rows(vkvit__graph *g, const char *name, vkvit__mat src, uint32_t B, uint32_t n_rows, uint32_t C);

#endif /* VKVIT_OPS_COPY_H */
