// SPDX-License-Identifier: Apache-2.0
/* src/arch/resnet.h — the `resnet` config (conditioned ClassificationResNet, seeds 002 and 003) as the modules read
 * it (m->cfg.resnet). Parsed, validated and described by src/arch/resnet.c. */
#ifndef VKVIT_ARCH_RESNET_H
#define VKVIT_ARCH_RESNET_H

#include "common.h"

/* Flavours: an index into the row's flavour list ("generic"). */
enum {
    VKVIT_FLAVOUR_GENERIC                   /* the only flavour */
};

/* Norms and MLP activations (docs/model-format.md `resnet`). Named apart from src/ops kernel enums. */
typedef enum vkvit__rn_norm {
    VKVIT_RN_NORM_IDENTITY,
    VKVIT_RN_NORM_RMSNORM,                  /* w * x * rsqrt(mean(x^2) + eps) */
    VKVIT_RN_NORM_LAYERNORM                 /* biased variance; scale = weight (+ bias when `bias`) */
} vkvit__rn_norm;

typedef struct vkvit__rn_norm_config {
    vkvit__rn_norm kind;
    double eps;                             /* 0 for identity */
    bool bias;                              /* layernorm only */
} vkvit__rn_norm_config;

typedef enum vkvit__rn_activation {
    VKVIT_RN_ACT_RELU,
    VKVIT_RN_ACT_GELU,                      /* exact erf */
    VKVIT_RN_ACT_SILU,
    VKVIT_RN_ACT_GLU,                       /* a[:h] * sigmoid(a[h:]) */
    VKVIT_RN_ACT_SWIGLU                     /* a[h:] * silu(a[:h]) */
} vkvit__rn_activation;

/* patch embed -> depth x ResidualBlock (all blocks share this block config) -> GAP -> out_norm -> out_proj. A branch
 * with enabled == false is identity (its norm is then identity too). */
typedef struct vkvit__resnet_config {
    uint32_t image_size[2];                 /* [H, W] */
    uint32_t patch_size;                    /* P */
    uint32_t in_chans;                      /* 3 */
    uint32_t dim;                           /* C */
    uint32_t depth;
    bool pos_embed;                         /* pos_embed [1, Hp, Wp, C] */
    vkvit__rn_norm_config input_norm;
    struct {
        bool enabled;                       /* QKVSequenceMixer + generic Attention */
        uint32_t num_heads;
        bool qk_norm, rope, causal, bias;
        double rope_base;
    } seq;
    vkvit__rn_norm_config condition_mixer_norm;
    struct {
        bool enabled;                       /* QKVConditionMixer + generic Attention (no RoPE, no biases) */
        uint32_t num_heads;
        bool qk_norm, causal;
    } cond;
    vkvit__rn_norm_config mlp_norm;
    struct {
        bool enabled;
        vkvit__rn_activation activation;
        uint32_t hidden;                    /* Hd */
        bool bias;
    } mlp;
    uint32_t condition_tokens;              /* 0: condition [B, C]; Tc >= 1: [B, Tc, C]; 0 when !cond.enabled */
    uint32_t condition_dim;                 /* == dim when cond.enabled, else 0 */
    /* readout: "gap" is the only value */
    vkvit__rn_norm_config out_norm;
    struct { bool patch_embed, head; } bias;
    uint32_t num_classes;

    /* derived */
    uint32_t grid[2];                       /* [Hp, Wp] */
    uint32_t num_tokens;                    /* T = Hp * Wp */
    uint32_t seq_head_dim, cond_head_dim;   /* C / num_heads of each active attention, else 0 */
    uint32_t mlp_glu_factor;                /* 2 for glu / swiglu, else 1 (0 when the MLP is identity) */
} vkvit__resnet_config;

#endif /* VKVIT_ARCH_RESNET_H */
