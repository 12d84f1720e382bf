// SPDX-License-Identifier: Apache-2.0
/* src/arch/vil.h — the `vil` config (VisionLSTM v1 network, mLSTM blocks, docs/math.md 7) as the modules read it
 * (m->cfg.vil). Parsed, validated and described by src/arch/vil.c. */
#ifndef VKVIT_ARCH_VIL_H
#define VKVIT_ARCH_VIL_H

#include "common.h"

/* Flavours: an index into the row's flavour list ("seed", "nxai"). */
enum {
    VKVIT_FLAVOUR_SEED,                     /* seed-004 numerics (docs/math.md 7.1) */
    VKVIT_FLAVOUR_NXAI                      /* official NX-AI numerics (docs/math.md 7.2) */
};

typedef struct vkvit__vil_config {
    uint32_t image_size[2];
    uint32_t patch_size;
    uint32_t in_chans;                      /* 3 */
    uint32_t dim;                           /* D */
    uint32_t depth;                         /* block i runs forward for even i, reversed for odd i */
    uint32_t inner_dim;                     /* E = ceil(2D / 64) * 64 */
    uint32_t num_heads;                     /* NH memory heads; divides E */
    uint32_t qkv_block_size;                /* 4 */
    uint32_t conv_kernel;                   /* causal depthwise conv1d kernel */
    /* pooling: "bilateral_avg" is the only value */
    double norm_eps, head_norm_eps;
    uint32_t num_classes;

    /* derived */
    uint32_t grid[2];                       /* [Hp, Wp] */
    uint32_t num_tokens;                    /* S = Hp * Wp (no CLS) */
    uint32_t head_dim;                      /* DH = E / NH */
    uint32_t num_proj_heads;                /* NP = E / qkv_block_size */
} vkvit__vil_config;

#endif /* VKVIT_ARCH_VIL_H */
