// SPDX-License-Identifier: Apache-2.0
/* src/arch/arch.h — the one table of architectures.
 *
 * An architecture is one file, src/arch/<name>.c (with its config struct in src/arch/<name>.h), that fills one row:
 * its JSON name and flavours, and the functions that parse + validate its `config`, list its tensor table, count
 * its FLOPs, describe its hyperparameters, derive its constant tables (RoPE) and build its network (through the
 * module builders of src/modules/). Everything outside src/arch/ reaches an architecture through its row:
 *
 *     const vkvit__arch_ops *a = vkvit__arch_ops_of(cfg->arch);
 *     a->tensors(cfg, &table);  a->flops(cfg, &f);  a->build(g, m, batch, &input, &condition, &output);
 *
 * Adding an architecture (docs/model-format.md, "Adding an architecture"): write src/arch/<name>.{c,h}, add one
 * line to VKVIT_ARCHITECTURES below (its #include beside it), add its module builder in src/modules/, and its
 * schema, tensor table and FLOPs to tools/vkvit_file.py. */
#ifndef VKVIT_ARCH_ARCH_H
#define VKVIT_ARCH_ARCH_H

#include "arch/resnet.h"
#include "arch/vil.h"
#include "arch/vit5.h"

/* The rows: X(ENUM_SUFFIX, name). `name` is the JSON spelling, the member of vkvit__model_config that holds the
 * config (vkvit__<name>_config) and the row's symbol (vkvit__arch_<name>, defined in src/arch/<name>.c). */
#define VKVIT_ARCHITECTURES(X)                                                                                 \
    X(VIT5, vit5)     /* ViT5ClassificationNet (docs/math.md 1, 2, 5, 6) */                                   \
    X(VIL, vil)       /* VisionLSTM v1 (docs/math.md 7) */                                                    \
    X(RESNET, resnet) /* conditioned ClassificationResNet (seeds 002, 003) */

typedef enum vkvit__arch {
#define VKVIT_ARCH_ENUM_(id, name) VKVIT_ARCH_##id,
    VKVIT_ARCHITECTURES(VKVIT_ARCH_ENUM_)
#undef VKVIT_ARCH_ENUM_
    VKVIT_ARCH_COUNT
} vkvit__arch;

struct cJSON;
struct vkvit__graph;
struct vkvit__model_config;
struct vkvit__model_file;
struct vkvit__constant;
struct vkvit__flops;
struct vkvit__cfg_parser;                   /* src/arch/arch_kit.h */
struct vkvit__tensor_table;                 /* src/arch/arch_kit.h */

typedef struct vkvit__arch_ops {
    const char *name;                       /* "architecture" in the model file */
    const char *const *flavours;            /* "flavour" spellings; cfg->flavour indexes this list */
    uint32_t n_flavours;
    /* describe's names of vkvit__flops.mixer_per_block and .cond_mixer_per_block (NULL: not described), and the
     * words `vkvit inspect` prints for them ("attention") */
    const char *mixer_flops_name, *cond_mixer_flops_name;
    const char *mixer_flops_text, *cond_mixer_flops_text;

    /* Parses and validates the `config` object (its keys, ranges and the flavour's rules) into cfg's member for
     * this architecture, and sets cfg->image_size and cfg->num_classes. cfg->flavour is already set. Errors: one
     * sentence through p (VKVIT_ERROR_BAD_MODEL_FILE). */
    vkvit_result (*parse)(const struct vkvit__cfg_parser *p, const struct cJSON *config,
                          struct vkvit__model_config *cfg);
    /* The tensor table of docs/model-format.md, in the document's order (vkvit__table_put*). */
    void (*tensors)(const struct vkvit__model_config *cfg, struct vkvit__tensor_table *t);
    /* FLOPs of one image, docs/math.md 8: every term of vkvit__flops but `total` (saturating arithmetic). */
    void (*flops)(const struct vkvit__model_config *cfg, struct vkvit__flops *f);
    /* The hyperparameters, as members of vkvit_describe_model's JSON object o (after architecture / flavour). */
    void (*describe)(const struct vkvit__model_config *cfg, struct cJSON *o);
    /* The architecture's lines of `vkvit inspect`'s text, appended to the array `lines` (vkvit__summary_line):
     * vkvit_describe_model_ex's "summary", so that no tool outside src/arch knows an architecture. */
    void (*summary)(const struct vkvit__model_config *cfg, struct cJSON *lines);

    /* Runtime (absent from reader-only builds such as the fuzzer: VKVIT_ARCH_READER_ONLY). */
    /* Constant tensors added to the weights at model creation (RoPE tables, ...); NULL when there are none. */
    vkvit_result (*constants)(const struct vkvit__model_file *mf, struct vkvit__constant **out, uint32_t *n);
    /* Weights the loader stores back to back: true when file tensor `name` is to follow the tensor whose name this
     * writes into leader[leader_size] directly, with no alignment padding between, so that one GEMM reads both as
     * one matrix (vkvit__model_weight_rows_pair; ViL's igate then fgate). NULL when there are none. */
    bool (*packed_after)(const char *name, char *leader, size_t leader_size);
    /* File tensors the network never reads on the device: `constants` made what it reads from them (ViL's q/k and
     * gate folds, ViT-5's QK-norm pairs), or they cannot change the result (a ClassificationResNet's condition-mixer
     * query and norm under a one-token condition). Read and checked like every tensor (shape, finite values), then
     * neither uploaded nor listed (vkvit__model_weight reports them missing). NULL when there are none. */
    bool (*host_only)(const struct vkvit__model_config *cfg, const char *name);
    /* The network for `batch` images: *input [B, H, W, 3], *condition (left VKVIT_NONE when the model takes none),
     * *output logits [B, classes]; sets g->features to the pooled features the head reads, where it has them. */
    void (*build)(struct vkvit__graph *g, const vkvit_model *m, uint32_t batch, uint32_t *input,
                  uint32_t *condition, uint32_t *output);
} vkvit__arch_ops;

#ifdef VKVIT_ARCH_READER_ONLY
#define VKVIT_ARCH_RUNTIME(...)             /* the reader never builds a network */
#else
#define VKVIT_ARCH_RUNTIME(...) __VA_ARGS__
#endif

/* The rows themselves, one per architecture file. */
#define VKVIT_ARCH_DECLARE_(id, name) extern const vkvit__arch_ops vkvit__arch_##name;
VKVIT_ARCHITECTURES(VKVIT_ARCH_DECLARE_)
#undef VKVIT_ARCH_DECLARE_

/* The row of `arch` (arch < VKVIT_ARCH_COUNT, which the parser guarantees for every config it returns). */
const vkvit__arch_ops *vkvit__arch_ops_of(vkvit__arch arch);

#endif /* VKVIT_ARCH_ARCH_H */
