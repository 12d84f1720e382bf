// SPDX-License-Identifier: Apache-2.0
/* src/arch/vit5.h — the `vit5` config (ViT5ClassificationNet, docs/math.md 1, 2, 5, 6) as the modules read it
 * (m->cfg.vit5). Parsed, validated and described by src/arch/vit5.c. */
#ifndef VKVIT_ARCH_VIT5_H
#define VKVIT_ARCH_VIT5_H

#include "common.h"
#include "model/rope.h"                     /* vkvit__rope_pairing, vkvit__token_layout */

/* Flavours: an index into the row's flavour list ("nvsubq", "paper"). */
enum {
    VKVIT_FLAVOUR_NVSUBQ,                   /* split_half RoPE, [patches, CLS, regs] */
    VKVIT_FLAVOUR_PAPER                     /* adjacent RoPE, [CLS, patches, regs] */
};

typedef enum vkvit__readout {
    VKVIT_READOUT_CLS,
    VKVIT_READOUT_GAP,
    VKVIT_READOUT_REGISTER_CONCAT
} vkvit__readout;

/* The first block mirrors the JSON keys; the derived block is filled by the parser. */
typedef struct vkvit__vit5_config {
    uint32_t image_size[2];                 /* [H, W] */
    uint32_t patch_size;                    /* P */
    uint32_t in_chans;                      /* 3 */
    uint32_t dim;                           /* C */
    uint32_t depth;
    uint32_t num_heads;                     /* H */
    uint32_t mlp_hidden;                    /* MLP hidden width; GELU (erf) is the only activation */
    uint32_t num_registers;                 /* R: 0 or a perfect square */
    bool has_cls;
    vkvit__readout readout;
    uint32_t neck_dim;                      /* c' for register_concat, else 0 */
    bool qk_norm;
    double norm_eps, qk_norm_eps;
    double rope_base, reg_rope_base;
    vkvit__rope_pairing rope_pairing;
    vkvit__token_layout token_layout;
    bool layer_scale;
    bool grn;
    struct { bool patch_embed, qkv, proj, mlp, head; } bias;
    uint32_t num_classes;

    /* derived */
    uint32_t head_dim;                      /* dk = C / H */
    uint32_t grid[2];                       /* [Hp, Wp] = image_size / P */
    uint32_t num_patches;                   /* Np = Hp * Wp (<= 8192^2) */
    uint32_t num_tokens;                    /* T = Np + has_cls + R (attention never sees Hyena padding) */
    uint32_t head_in;                       /* C, or R * neck_dim for register_concat */
} vkvit__vit5_config;

#endif /* VKVIT_ARCH_VIT5_H */
