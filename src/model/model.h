/* The vkvit_model object: a validated model file's config plus every weight (converted to fp32) in one device
 * buffer, looked up by state_dict name. Architecture code may add constant tensors (host-precomputed tables such as
 * the RoPE cos/sin) that live in the same buffer under names starting with "const.". */
#ifndef VKVIT_MODEL_MODEL_H
#define VKVIT_MODEL_MODEL_H

#include "graph/graph.h"
#include "model/config.h"

typedef struct vkvit__weight {
    const char *name;                       /* in the model's name arena */
    uint64_t offset;                        /* bytes into the weight buffer (VKVIT_ARENA_ALIGN aligned) */
    uint64_t offset_f16;                    /* bytes into the fp16 buffer (GEMM operands: 2-D weights and
                                               convolution kernels, once prepared) */
    uint32_t ndim;
    uint32_t shape[VKVIT_MAX_DIMS];
} vkvit__weight;

struct vkvit_model {
    vkvit_ctx *ctx;
    char label[256];
    vkvit__model_config cfg;
    vkvit__weight *weights;                 /* sorted by name */
    uint32_t n_weights;
    char *names;
    vkvit__buffer buffer;
    vkvit__buffer buffer_f16;               /* fp16 copies of the GEMM operands (2-D weights, convolution kernels),
                                               made by the first fp16 session */
    bool has_f16;
    uint64_t params, flops;
    atomic_uint sessions;                   /* sessions created on this model and not yet destroyed: while any
                                               lives, vkvit_model_destroy logs an error and frees nothing */
};

/* A constant tensor an architecture adds at model creation (owned data, freed by the model loader). */
typedef struct vkvit__constant {
    char name[64];                          /* "const.<something>" */
    uint32_t ndim;
    uint32_t shape[VKVIT_MAX_DIMS];
    float *data;                            /* malloc'ed, numel floats */
} vkvit__constant;

/* The weight called `name` added to graph g as a WEIGHT tensor; a missing name fails the graph (sticky). */
uint32_t vkvit__model_weight(vkvit__graph *g, const vkvit_model *m, const char *name);
/* Same with printf-style name formatting, e.g. vkvit__model_weightf(g, m, "blocks.%u.mlp_norm.weight", i). */
uint32_t vkvit__model_weightf(vkvit__graph *g, const vkvit_model *m, const char *fmt, ...) VKVIT_PRINTF(3, 4);
/* A weight used as a GEMM operand (2-D, or a 4-D convolution kernel viewed as 2-D by its caller): from the fp16
 * buffer when the graph builds an fp16 session (g->opts.weights F16), else the fp32 one. */
uint32_t vkvit__model_gemm_weight(vkvit__graph *g, const vkvit_model *m, const char *name);
uint32_t vkvit__model_gemm_weightf(vkvit__graph *g, const vkvit_model *m, const char *fmt, ...) VKVIT_PRINTF(3, 4);

/* Two fp32 weights stored back to back (vkvit__arch_ops.packed_after), as one weight tensor called `label` whose rows
 * are the first's, then the second's (same trailing dims): one GEMM reads both. VKVIT_NONE, and no failure, when the
 * model does not hold them so (a test's hand-made model): the caller then uses them one by one. */
uint32_t vkvit__model_weight_rows_pair(vkvit__graph *g, const vkvit_model *m, const char *first, const char *second,
                                       const char *label);

/* Creates the fp16 copies of the GEMM operands: 2-D weights and 4-D convolution kernels (once; later calls return
 * at once). */
vkvit_result vkvit__model_prepare_f16(vkvit_model *m);

/* True when the model has a weight called `name`. */
bool vkvit__model_has(const vkvit_model *m, const char *name);

#endif /* VKVIT_MODEL_MODEL_H */
