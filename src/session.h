// SPDX-License-Identifier: Apache-2.0
/* src/session*.c — one vkvit_session, split by concern (docs/architecture.md):
 *
 *   session.c         lifecycle: create (build, plan, buffers, recording, CPU warm-up), destroy, shapes, stats
 *   session_build.c   the graph: the architecture's network, sub-batches when a device limit needs them, top-K,
 *                     the pre-processing nodes, the record target
 *   session_io.c      host copies: inputs and condition, logits / features / top-K out, set_images
 *   session_submit.c  the recorded command buffer (what it holds), run, submit with host semaphores, poll, wait,
 *                     record / record_ex into a host command buffer, profile
 *   session_slices.c  the inference in slices under a GPU-time budget: the plan (profiled or host node times) and
 *                     one slice recorded into a host command buffer
 *
 * This header holds the session struct and what the files share. No file makes a Vulkan call itself: the command
 * buffer and fence are a vkvit__submission (src/vk/submission.h), the rest goes through src/graph/ and src/vk/. */
#ifndef VKVIT_SESSION_H
#define VKVIT_SESSION_H

#include "graph/graph.h"
#include "ops/preprocess.h"
#include "model/model.h"
#include "vk/submission.h"

#include <stdio.h>

/* A slice plan (vkvit_session_plan_slices): slice i runs nodes [first[i], first[i + 1]), first[count] = n_nodes. */
typedef struct vkvit__slices {
    uint32_t count;                         /* 0: no plan */
    uint32_t *first;                        /* [count + 1] */
    double *ms;                             /* [count] the node times summed (the plan's times) */
    double budget_ms;
    uint32_t last;                          /* the slice recorded last, VKVIT_NONE before any */
} vkvit__slices;

struct vkvit_session {
    vkvit_model *model;
    vkvit_ctx *ctx;
    char label[64];
    uint32_t batch;
    uint32_t sub_batch;                     /* images per sub-network (= batch unless a device limit split it) */
    bool holds_weights;                     /* counted by the model's image for graph.opts.weights
                                               (vkvit__model_acquire; given back by destroy) */
    vkvit__graph graph;
    vkvit__plan_stats plan;
    vkvit__buffer arena;
    vkvit__buffer in_staging, out_staging;  /* only when the arena is not host-visible */
    vkvit__buffer cond_staging;             /* the same for the condition (models that take one) */
    bool direct;                            /* host reads/writes the arena's input/output in place */
    vkvit__recording rec;
    vkvit__submission sub;                  /* the recorded command buffer and its fence (signaled: idle) */
    uint32_t input, output;                 /* graph tensors */
    uint32_t condition;                     /* graph tensor, VKVIT_NONE when the model takes no condition */
    bool condition_set;                     /* vkvit_session_set_condition succeeded at least once */
    bool ran;
    bool timed;                             /* the timestamps are the last own run's (run / submit), not a host
                                               recording's, whose submission vkvit cannot see complete */
    bool profile;                           /* desc.profile (a re-prepared recording keeps it) */
    /* Images and top-K (src/ops): the pre-processing nodes of set_images / record_ex, and the top-K output. */
    vkvit__imgproc img;                     /* img.ctx NULL until created (create_imgproc) */
    uint32_t top_k;                         /* 0 = none */
    uint32_t topk;                          /* graph tensor [2, B, top_k] words (classes, probabilities), or VKVIT_NONE */
    bool want_features;                     /* desc.features */
    uint32_t features;                      /* graph tensor [B, F]: the pooled pre-logits features, or VKVIT_NONE */
    vkvit__slices slices;                   /* session_slices.c; freed by destroy (vkvit__session_slices_free) */
};

static inline vkvit_shape shape_of(const vkvit__tensor *t) {
    vkvit_shape s = {.ndim = t->ndim};
    for (uint32_t i = 0; i < t->ndim; i++) s.dims[i] = t->shape[i];
    return s;
}

/* Every failed call on a session also reaches its ctx's log callback (include/vkvit.h ERRORS) as one ERROR line:
 * the public functions below pass their result through here. A NULL session has no ctx to tell. */
static inline vkvit_result logged(const vkvit_session *s, vkvit_result res) {
    return res != VKVIT_OK && s ? vkvit__ctx_fail(s->ctx, res) : res;
}

/* "fn 'label'": how a session call's sentences begin, for the helpers that take only `fn` (src/ops/preprocess.c). */
typedef struct call_subject {
    char text[sizeof "vkvit_session_record_ex ''" + sizeof ((vkvit_session *)0)->label];
} call_subject;

static inline call_subject subject_of(const vkvit_session *s, const char *fn) {
    call_subject c;
    snprintf(c.text, sizeof c.text, "%s '%s'", fn, s->label);
    return c;
}

/* Pictures can be pre-processed into the input when it is [B, H, W, 3] with the model file's preprocess size. */
static inline bool takes_images(const vkvit_session *s) {
    const vkvit__preprocess *pp = &s->model->cfg.preprocess;
    const vkvit__tensor *in = &s->graph.tensors[s->input];
    return in->ndim == 4 && in->shape[1] == pp->image_size[0] && in->shape[2] == pp->image_size[1] && in->shape[3] == 3;
}

static inline vkvit_result check_takes_images(const vkvit_session *s, const char *fn) {
    if (!takes_images(s))
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED,
                            "%s '%s': model '%s' does not take a 3-channel image of its preprocess.image_size", fn,
                            s->label, s->model->label);
    return VKVIT_OK;
}

/* session_build.c */
/* Builds the session's graph. Dispatch sizes and activation sizes grow with the batch, and a device bounds both
 * (maxComputeWorkGroupCount, maxStorageBufferRange: 128 MiB on lavapipe and some mobile GPUs). When the whole
 * batch exceeds either, the batch is halved until every dispatch and every binding fits, and runs as sub-batches
 * (one submission still); what one image alone exceeds is refused with a sentence. */
void vkvit__session_build_graph(vkvit_session *s);

/* The pre-processing nodes for set_images / record_ex, writing the input tensor in the arena as the model file's
 * `preprocess` says (src/ops/preprocess.c), before the network. Created with the session when max_image_pixels > 0
 * (call after planning, before preparing the recording), else by the first set_images (its documented exception,
 * which then prepares and records the session again), so sessions that never see a picture pay nothing. */
vkvit_result vkvit__session_create_imgproc(vkvit_session *s, uint64_t max_image_pixels);

/* The buffers the recording binds: the model's weights, the arena and the pre-processing's own. */
vkvit__record_target vkvit__session_target(const vkvit_session *s);

/* session_io.c */
/* Where host output tensor t starts in out_staging: the logits, then the top-K words, then the features, back to
 * back (record(), step 4). With t = VKVIT_NONE: the staging buffer's whole size. */
uint64_t vkvit__session_staged_offset(const vkvit_session *s, uint32_t t);

/* session_submit.c */
/* Records nodes [first, end) with what surrounds them (session_submit.c, record's steps): the dependency on earlier
 * work always, the input copies when first == 0, the outputs when end == n_nodes. io as for record_ex, or NULL. */
void vkvit__session_record_part(vkvit_session *s, VkCommandBuffer cmd, const vkvit_record_desc *io, uint32_t first,
                                uint32_t end);

/* session_slices.c */
void vkvit__session_slices_free(vkvit_session *s);

/* Records the session's own command buffer again (idle session): after set_images replaced a buffer the
 * pre-processing nodes bind, or added them. */
vkvit_result vkvit__session_rerecord(vkvit_session *s);

/* A session submitted with vkvit_session_submit is in flight until its fence signals; its arena and staging
 * buffers must not be touched (or resubmitted) until then. Never waits. */
vkvit_result vkvit__session_check_idle(const vkvit_session *s, const char *fn);

#endif /* VKVIT_SESSION_H */
