/* src/model/config — the `vkvit` metadata entry (docs/model-format.md) parsed and validated into a plain struct.
 *
 * The JSON is untrusted. Every key of `config` is required and unknown `config` keys are rejected (a typo must
 * not silently change the network); unknown keys elsewhere are ignored; a key that appears twice in any object
 * vkvit reads is rejected. Integers are JSON numbers with an integral value (cJSON does not keep the lexeme, so
 * 384.0 and 3.84e2 are read as 384), booleans are true / false. Every dimension is in [1, 65536] (registers,
 * neck_dim: [0, 65536]); image sides are in [1, 8192]. So a hostile file fails on its config before any size is
 * derived from it, and every derived size below fits comfortably in 64 bits.
 *
 * Failures are one sentence naming the field, e.g.
 *     model 'x.vkvit': config.num_heads = 5 does not divide config.dim = 384
 * with VKVIT_ERROR_BAD_MODEL_FILE, or VKVIT_ERROR_UNSUPPORTED for a format_version above 1. */
#ifndef VKVIT_MODEL_CONFIG_H
#define VKVIT_MODEL_CONFIG_H

#include "common.h"
#include "model/rope.h"

#define VKVIT_FORMAT_VERSION 1
#define VKVIT_MODEL_MAX_DIM 65536u          /* any width, depth, head count, class count, ... */
#define VKVIT_MODEL_MAX_IMAGE 8192u         /* any image side (config.image_size, preprocess.resize_shorter) */

typedef enum vkvit__arch {
    VKVIT_ARCH_VIT5,                        /* ViT5ClassificationNet (SPEC.md 1, 2, 5, 6) */
    VKVIT_ARCH_VIL,                         /* VisionLSTM v1 (SPEC.md 7) */
    VKVIT_ARCH_RESNET,                      /* conditioned ClassificationResNet (seeds 002, 003); src/modules/resnet.c */
    VKVIT_ARCH_COUNT
} vkvit__arch;

typedef enum vkvit__flavour {
    VKVIT_FLAVOUR_NVSUBQ,                   /* vit5: split_half RoPE, [patches, CLS, regs] */
    VKVIT_FLAVOUR_PAPER,                    /* vit5: adjacent RoPE, [CLS, patches, regs] */
    VKVIT_FLAVOUR_SEED,                     /* vil: seed-004 numerics (SPEC.md 7.1) */
    VKVIT_FLAVOUR_NXAI,                     /* vil: official NX-AI numerics (SPEC.md 7.2) */
    VKVIT_FLAVOUR_GENERIC,                  /* resnet: the only flavour */
    VKVIT_FLAVOUR_COUNT
} vkvit__flavour;

typedef enum vkvit__readout {
    VKVIT_READOUT_CLS,
    VKVIT_READOUT_GAP,
    VKVIT_READOUT_REGISTER_CONCAT
} vkvit__readout;

/* vkvit__rope_pairing and vkvit__token_layout come from model/rope.h (one definition for config and kernels). */


typedef enum vkvit__interp {
    VKVIT_INTERP_BICUBIC,
    VKVIT_INTERP_BILINEAR
} vkvit__interp;

/* `vit5` config. The first block mirrors the JSON keys; the derived block is filled by the parser. */
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

/* `vil` config (VisionLSTM v1 network, mLSTM blocks). */
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

/* `resnet` norms and MLP activations (docs/model-format.md `resnet`). Named apart from graph/ops.h's kernel enums. */
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

/* `resnet` config: patch embed -> depth x ResidualBlock (all blocks share this block config) -> GAP -> out_norm ->
 * out_proj. A branch with enabled == false is identity (its norm is then identity too). */
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

typedef struct vkvit__preprocess {
    uint32_t image_size[2];                 /* [H, W] = config.image_size */
    uint32_t resize_shorter;                /* >= max(H, W) */
    vkvit__interp interpolation;
    double mean[3], std[3];                 /* in_chans == 3 entries; std > 0 */
} vkvit__preprocess;

typedef struct vkvit__model_config {
    uint32_t format_version;                /* 1 */
    vkvit__arch arch;
    vkvit__flavour flavour;
    char *name;                             /* owned; "" when absent */
    vkvit__preprocess preprocess;
    char **labels;                          /* owned; n_labels == num_classes, or NULL / 0 when absent */
    uint32_t n_labels;
    vkvit__vit5_config vit5;                /* valid when arch == VKVIT_ARCH_VIT5 (zeroed otherwise) */
    vkvit__vil_config vil;                  /* valid when arch == VKVIT_ARCH_VIL (zeroed otherwise) */
    vkvit__resnet_config resnet;            /* valid when arch == VKVIT_ARCH_RESNET (zeroed otherwise) */
} vkvit__model_config;

/* Parses the `vkvit` JSON document json[0 .. len). `label` names the file in error sentences. On success *out is
 * filled (release with vkvit__model_config_free); on failure *out is zeroed and owns nothing.
 * Errors: VKVIT_ERROR_BAD_MODEL_FILE, VKVIT_ERROR_UNSUPPORTED, VKVIT_ERROR_OUT_OF_HOST_MEMORY. */
vkvit_result vkvit__model_config_parse(const char *json, size_t len, const char *label, vkvit__model_config *out);

/* Frees the owned strings. Accepts a zeroed struct; leaves *cfg zeroed. A config may be moved to another owner by
 * copying the struct and zeroing the source (name and labels are the only owned pointers). */
void vkvit__model_config_free(vkvit__model_config *cfg);

/* The JSON spellings: "vit5", "nvsubq", "register_concat", "bicubic", ... */
const char *vkvit__arch_name(vkvit__arch arch);
const char *vkvit__flavour_name(vkvit__flavour flavour);
const char *vkvit__readout_name(vkvit__readout readout);
const char *vkvit__interp_name(vkvit__interp interp);
const char *vkvit__rn_norm_name(vkvit__rn_norm norm);             /* "rmsnorm", "layernorm", "identity" */
const char *vkvit__rn_activation_name(vkvit__rn_activation act);  /* "relu", ..., "swiglu" */

/* Shared by all architectures: the class count of a parsed config. */
uint32_t vkvit__model_num_classes(const vkvit__model_config *cfg);

#endif /* VKVIT_MODEL_CONFIG_H */
