// SPDX-License-Identifier: Apache-2.0
/* src/model/rope — host-precomputed rotary position tables (no Vulkan).
 *
 * Both attention flavours rotate q and k with per-(token, channel) angles that are fixed by the model config, so
 * the tables are built once on the host (docs/math.md 1.4: "do not evaluate sin/cos in GLSL") and uploaded next to the
 * weights. The recipe is upstream's, bit for bit:
 *
 *     theta_j  = 1 / base^((2j) / da)        fp32 division, fp32 pow, fp32 reciprocal      j = 0 .. da/2-1
 *     angle    = pos * theta_j               fp32 product of the fp32 position and the fp32 theta
 *     cos, sin = (float)cos((double)angle), (float)sin((double)angle)
 *
 * where `da` is the number of channels of one grid axis (dk/2 for ViT-5's two axes, dk/n for the generic n-D grid).
 *
 * COMPACT LAYOUT. Inside one axis part, channels 2i and 2i+1 always share theta_i (upstream repeat_interleave), and
 * the parts follow each other (ViT-5: Y-half then X-half). So a head needs only dk/2 distinct angles per token, and
 * channel c uses angle index `c >> 1` whatever the pairing. A table is
 *
 *     float table[T][dk/2][2]       (cos, sin) interleaved; angle index a = c >> 1
 *
 * i.e. T * dk floats, which the attention shader reads as `vec2 rope_cs[T * dk/2]`. vkvit__rope_expand() rebuilds
 * PyTorch's [T, dk] rope_cos / rope_sin buffers from it (the same for both pairings: only the rotation partner
 * differs between split_half and adjacent, not the angle of a channel).
 *
 * Inputs come from a model config that was already validated, but the builders check their arguments anyway and
 * return VKVIT_ERROR_INVALID_ARGUMENT with a sentence (never assert): the register count in particular must be 0 or
 * a perfect square (docs/math.md 9.2). */
#ifndef VKVIT_MODEL_ROPE_H
#define VKVIT_MODEL_ROPE_H

#include "common.h"
#include "ops/rope.h" /* vkvit__rope_pairing */

/* Token order of a ViT-5 sequence (docs/math.md 1.2, 6.2). */
typedef enum vkvit__token_layout {
    VKVIT_TOKENS_PATCHES_CLS_REGS = 0,      /* nvsubq */
    VKVIT_TOKENS_CLS_PATCHES_REGS = 1,      /* paper */
} vkvit__token_layout;

/* ViT-5 tables. Zero fields are NOT defaulted: every field is taken as given (the model config resolves defaults). */
typedef struct vkvit__rope_axial_desc {
    uint32_t head_dim;                      /* dk, a multiple of 4 */
    uint32_t grid_h, grid_w;                /* patch grid Hp x Wp (either may be 0: no patch rows) */
    uint32_t num_registers;                 /* R: 0 or a perfect square; they sit on a sqrt(R) x sqrt(R) grid */
    bool has_cls;                           /* CLS gets the identity rotation (cos 1, sin 0) */
    float rope_base;                        /* patches (upstream default 1e4) */
    float reg_rope_base;                    /* registers (upstream default 100) */
    vkvit__token_layout layout;
} vkvit__rope_axial_desc;

/* T = Hp*Wp + has_cls + R, the number of table rows. */
uint32_t vkvit__rope_axial_tokens(const vkvit__rope_axial_desc *desc);

/* Fills out[T * head_dim] with the compact ViT-5 table (layout above): per token, dk/4 Y-angles then dk/4 X-angles.
 * Patch t (row-major in the grid) has pos_Y = t / Wp, pos_X = t % Wp and rope_base; register r has pos_Y = r / rw,
 * pos_X = r % rw (rw = sqrt R) and reg_rope_base; CLS is the identity.
 * Errors: VKVIT_ERROR_INVALID_ARGUMENT (head_dim not a positive multiple of 4, R not 0 or a perfect square, a base
 * that is not finite and positive, T = 0). */
vkvit_result vkvit__rope_axial_table(const vkvit__rope_axial_desc *desc, float *out);

/* Fills out[T * head_dim] (T = product of shape) with the compact single-base table of the generic Attention over
 * an n-D grid, n = 1, 2 or 3 (tools/reference/generic.py build_grid_rope_tables): the head is cut into n parts of
 * da = dk/n channels, axis 0 first; part a uses the row-major grid coordinate along axis a and theta(da, base).
 * Use it with VKVIT_ROPE_SPLIT_HALF and `axes` = n.
 * Errors: VKVIT_ERROR_INVALID_ARGUMENT (n outside 1..3, a zero extent, head_dim % (2n) != 0, a bad base). */
vkvit_result vkvit__rope_grid_table(const uint32_t *shape, uint32_t ndim, uint32_t head_dim, float base, float *out);

/* Expands a compact table into PyTorch's [T, dk] rope_cos / rope_sin buffers: cos[t][c] = table[t][c >> 1][0]. */
void vkvit__rope_expand(const float *table, uint32_t tokens, uint32_t head_dim, float *cos_out, float *sin_out);

#endif /* VKVIT_MODEL_ROPE_H */
