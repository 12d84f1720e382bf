// SPDX-License-Identifier: Apache-2.0
/* The vkvit_model object: a validated model file's config, its weights looked up by state_dict name, and the
 * weights on the device as up to two images, one per weights dtype a session asks for (vkvit__build_opts.weights):
 *
 *   image F32 (fp32 sessions)             every weight in fp32
 *   image F16 (fp16, fp16-math sessions)  the GEMM operands (file tensors that are 2-D, and 4-D "*.weight"
 *                                         convolution kernels) in fp16; every other weight (norms, biases, tokens,
 *                                         position embeddings, the constants) in fp32
 *
 * An image is made from the file's bytes when the first session that needs it is created (vkvit__model_acquire):
 * fp32 as the file's values widened; fp16 the file's fp16 tensors copied as they are and its fp32 / bf16 ones
 * narrowed with round-to-nearest-even (vkvit__f32_to_f16_array). Nothing is read back from the device. The model
 * keeps what it needs for that: the open file (read with pread), or for a model from memory a copy of its bytes,
 * and the architecture's constant tables.
 *
 * Residency rule: an image stays on the device while a live session uses it, and the image of the most recently
 * created session stays when none is alive (so a second session of the same precision reuses it); creating a
 * session frees the other image when no live session uses it. So an fp32-only user holds one fp32 image, an
 * fp16-only user one fp16 image (with the fp32 norms, biases and tables its sessions read), and only a user with
 * live sessions of both kinds holds both. vkvit_model_create itself uploads nothing: it reads and checks every
 * tensor (non-finite values are refused there) and lays both images out.
 *
 * Architecture code may add constant tensors (host-precomputed tables such as the RoPE cos/sin) that live in both
 * images under names starting with "const.". */
#ifndef VKVIT_MODEL_MODEL_H
#define VKVIT_MODEL_MODEL_H

#include "graph/graph.h"
#include "model/config.h"
#include "model/model_file.h"

enum { VKVIT_IMAGE_F32, VKVIT_IMAGE_F16, VKVIT_N_IMAGES };

typedef struct vkvit__weight {
    const char *name;                       /* in the model's name arena */
    uint64_t offset[VKVIT_N_IMAGES];        /* bytes into each image (VKVIT_ARENA_ALIGN aligned, or right after the
                                               tensor it is packed after) */
    uint64_t numel;
    uint32_t source;                        /* file tensor index (model.file.st), or n_tensors + constant index */
    bool gemm_operand;                      /* fp16 in image F16 (a file tensor: 2-D, or a 4-D "*.weight") */
    uint32_t ndim;
    uint32_t shape[VKVIT_MAX_DIMS];
} vkvit__weight;

/* One of the model's device images of its weights. */
typedef struct vkvit__weight_image {
    uint64_t bytes;                         /* its layout's size (whether resident or not) */
    vkvit__buffer buffer;                   /* resident when buffer.buffer is not VK_NULL_HANDLE */
    uint32_t sessions;                      /* live sessions reading it (under vkvit_model.lock) */
} vkvit__weight_image;

struct vkvit_model {
    vkvit_ctx *ctx;
    char label[256];
    vkvit__model_config cfg;
    vkvit__weight *weights;                 /* sorted by name */
    uint32_t n_weights;
    char *names;
    vkvit__model_file file;                 /* kept open: the images are made from its bytes */
    uint8_t *file_copy;                     /* a model from memory: the copy of the caller's bytes `file` reads */
    struct vkvit__constant *consts;         /* the architecture's constant tables (host copies) */
    uint32_t n_consts;
    vkvit__weight_image images[VKVIT_N_IMAGES];
    vkvit__mutex *lock;                     /* images: making, freeing and their session counts */
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

/* The weight called `name` added to graph g as a WEIGHT tensor of the image for g->opts.weights, in that image's
 * dtype for it (F16 for a GEMM operand of an fp16 session, else F32); a missing name fails the graph (sticky). */
uint32_t vkvit__model_weight(vkvit__graph *g, const vkvit_model *m, const char *name);
/* Same with printf-style name formatting, e.g. vkvit__model_weightf(g, m, "blocks.%u.mlp_norm.weight", i). */
uint32_t vkvit__model_weightf(vkvit__graph *g, const vkvit_model *m, const char *fmt, ...) VKVIT_PRINTF(3, 4);

/* Two weights stored back to back (vkvit__arch_ops.packed_after), as one weight tensor called `label` whose rows
 * are the first's, then the second's (same trailing dims and dtype): one GEMM reads both. VKVIT_NONE, and no
 * failure, when the model does not hold them so (a test's hand-made model): the caller then uses them one by one. */
uint32_t vkvit__model_weight_rows_pair(vkvit__graph *g, const vkvit_model *m, const char *first, const char *second,
                                       const char *label);

/* A new session's weights: makes the image for `weights` (a vkvit__build_opts.weights) from the file's bytes unless
 * it is resident, counts the session on it, and frees the other image when no live session uses it (the rule
 * above). Thread-safe. Errors: VKVIT_ERROR_UNSUPPORTED (fp16 disabled or missing on the device; a GEMM weight
 * beyond the fp16 range: "... outside the fp16 range; use fp32"), _OUT_OF_DEVICE_MEMORY, _IO (the file shrank). */
vkvit_result vkvit__model_acquire(vkvit_model *m, vkvit__dtype weights);
/* A destroyed session's: the count taken by vkvit__model_acquire. */
void vkvit__model_release(vkvit_model *m, vkvit__dtype weights);
/* The image for `weights` (resident while a session holds it). */
static inline const vkvit__buffer *vkvit__model_image(const vkvit_model *m, vkvit__dtype weights) {
    return &m->images[weights == VKVIT_ELEM_F16 ? VKVIT_IMAGE_F16 : VKVIT_IMAGE_F32].buffer;
}
/* Device bytes of the model's resident images. */
uint64_t vkvit__model_resident_bytes(vkvit_model *m);

/* True when the model has a weight called `name`. */
bool vkvit__model_has(const vkvit_model *m, const char *name);

#endif /* VKVIT_MODEL_MODEL_H */
