// SPDX-License-Identifier: Apache-2.0
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
#include "arch/arch.h"

#define VKVIT_FORMAT_VERSION 1
#define VKVIT_MODEL_MAX_DIM 65536u          /* any width, depth, head count, class count, ... */
#define VKVIT_MODEL_MAX_IMAGE 8192u         /* any image side (config.image_size, preprocess.resize_shorter) */

/* vkvit__arch (one value per row of the architecture table) and the per-architecture config structs
 * (vkvit__vit5_config, ...) come from src/arch/. */

typedef enum vkvit__interp {
    VKVIT_INTERP_BICUBIC,
    VKVIT_INTERP_BILINEAR
} vkvit__interp;

typedef struct vkvit__preprocess {
    uint32_t image_size[2];                 /* [H, W] = config.image_size */
    uint32_t resize_shorter;                /* >= max(H, W) */
    vkvit__interp interpolation;
    double mean[3], std[3];                 /* in_chans == 3 entries; std > 0 */
} vkvit__preprocess;

typedef struct vkvit__model_config {
    uint32_t format_version;                /* 1 */
    vkvit__arch arch;                       /* its row: vkvit__arch_ops_of(arch) */
    uint32_t flavour;                       /* index into the row's flavours: VKVIT_FLAVOUR_* (src/arch/<name>.h) */
    char *name;                             /* owned; "" when absent */
    uint32_t image_size[2];                 /* config.image_size [H, W] (every architecture has one) */
    uint32_t num_classes;                   /* config.num_classes (every architecture has one) */
    vkvit__preprocess preprocess;
    char **labels;                          /* owned; n_labels == num_classes, or NULL / 0 when absent */
    uint32_t n_labels;
    /* The architecture's own config, e.g. vit5 (vkvit__vit5_config): the member named after the row is valid, the
     * others are zeroed. */
#define VKVIT_ARCH_CONFIG_(id, name) vkvit__##name##_config name;
    VKVIT_ARCHITECTURES(VKVIT_ARCH_CONFIG_)
#undef VKVIT_ARCH_CONFIG_
} vkvit__model_config;

/* Parses the `vkvit` JSON document json[0 .. len). `label` names the file in error sentences. On success *out is
 * filled (release with vkvit__model_config_free); on failure *out is zeroed and owns nothing.
 * Errors: VKVIT_ERROR_BAD_MODEL_FILE, VKVIT_ERROR_UNSUPPORTED, VKVIT_ERROR_OUT_OF_HOST_MEMORY. */
vkvit_result vkvit__model_config_parse(const char *json, size_t len, const char *label, vkvit__model_config *out);

/* Frees the owned strings. Accepts a zeroed struct; leaves *cfg zeroed. A config may be moved to another owner by
 * copying the struct and zeroing the source (name and labels are the only owned pointers). */
void vkvit__model_config_free(vkvit__model_config *cfg);

/* The JSON spellings: "vit5", "nvsubq", "bicubic" ("?" for a value out of range). */
const char *vkvit__arch_name(vkvit__arch arch);
const char *vkvit__flavour_name(vkvit__arch arch, uint32_t flavour);
const char *vkvit__interp_name(vkvit__interp interp);

/* The class count of a parsed config (cfg->num_classes). */
uint32_t vkvit__model_num_classes(const vkvit__model_config *cfg);

#endif /* VKVIT_MODEL_CONFIG_H */
