// SPDX-License-Identifier: Apache-2.0
/* A one-shot graph runner for op-level tests (header-only).
 *
 *   vt_graph r;  vt_graph_begin(&r, ctx);
 *   uint32_t w = vt_graph_weight(&r, "w", data, 2, shape);   host data -> weight image (256-byte aligned), WEIGHT tensor
 *   uint32_t x = vt_graph_input(&r, "x", data, 2, shape);    INPUT tensor; data uploaded at its planned offset
 *   ... build nodes on r.g with the op builders / module builders ...
 *   vt_graph_output(&r, y);                                   an ACTIVATION becomes OUTPUT (planned, never aliased)
 *   vt_graph_run(&r);                                         plan, NaN-poisoned arena, prepare, record, submit, wait
 *   float *got = vt_graph_download(&r, y);                    any arena tensor (malloc'ed floats)
 *   vt_graph_end(&r);
 *
 * The weight image can also be filled without a graph tensor (vt_graph_stage returns the byte offset), for tests
 * that hand-build a vkvit_model whose weight table points into it.
 *
 * The command buffer is what a session records: a global memory barrier first (the fill and the uploads were
 * transfer writes of earlier submissions), the graph's nodes with their data-flow barriers, and a global barrier
 * making every compute write visible to the transfer reads of vkvit__buffer_download. Everything runs on the
 * validation-enabled ctx of test_util.h, so a missing barrier shows up as a synchronization-validation message. */
#ifndef VKVIT_TEST_GRAPH_UTIL_H
#define VKVIT_TEST_GRAPH_UTIL_H

#include "graph/graph.h"
#include "test_util.h"

#include <time.h>

#define VT_GRAPH_MAX_INPUTS 16

/* Totals over every vt_graph_run of the process (pipeline creation dominates on llvmpipe). */
static struct {
    unsigned graphs, kernels, unique;
    double prepare_s, run_s;
    vkvit__kernel_desc seen[512];
} vt_graph_stats;

static inline bool vt_kernel_same(const vkvit__kernel_desc *a, const vkvit__kernel_desc *b) {
    return a->shader == b->shader && a->n_buffers == b->n_buffers && a->push_size == b->push_size &&
           a->n_spec == b->n_spec && memcmp(a->spec, b->spec, a->n_spec * sizeof a->spec[0]) == 0;
}

static inline double vt_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct vt_graph {
    vkvit_ctx *ctx;
    vkvit__graph g;
    uint8_t *wimage;                        /* host weight image */
    size_t wbytes, wcap;
    struct {
        uint32_t t;
        float *data;                        /* owned copy */
    } inputs[VT_GRAPH_MAX_INPUTS];
    uint32_t n_inputs;
    vkvit__plan_stats plan;
    vkvit__buffer weights, arena;
    vkvit__recording rec;
    bool ran;
} vt_graph;

static inline void vt_graph_begin(vt_graph *r, vkvit_ctx *ctx) {
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    vkvit__graph_init(&r->g, ctx);
}

/* Appends numel floats to the weight image at a VKVIT_ARENA_ALIGN-aligned offset; returns the byte offset. */
static inline uint64_t vt_graph_stage(vt_graph *r, const float *data, size_t numel) {
    size_t off = (r->wbytes + VKVIT_ARENA_ALIGN - 1) / VKVIT_ARENA_ALIGN * VKVIT_ARENA_ALIGN;
    size_t end = off + numel * sizeof(float);
    if (end > r->wcap) {
        size_t cap = r->wcap ? r->wcap : 4096;
        while (cap < end) cap *= 2;
        uint8_t *p = realloc(r->wimage, cap);
        if (!p) {
            fprintf(stderr, "FATAL: vt_graph_stage: out of memory\n");
            exit(1);
        }
        memset(p + r->wcap, 0, cap - r->wcap);
        r->wimage = p, r->wcap = cap;
    }
    if (numel) memcpy(r->wimage + off, data, numel * sizeof(float));
    r->wbytes = end;
    return off;
}

static inline uint32_t vt_graph_weight(vt_graph *r, const char *name, const float *data, uint32_t ndim,
                                       const uint32_t *shape) {
    size_t n = 1;
    for (uint32_t i = 0; i < ndim; i++) n *= shape[i];
    uint64_t off = vt_graph_stage(r, data, n);
    return vkvit__graph_weight_at(&r->g, VKVIT_TENSOR_WEIGHT, name, off, ndim, shape);
}

static inline uint32_t vt_graph_input(vt_graph *r, const char *name, const float *data, uint32_t ndim,
                                      const uint32_t *shape) {
    uint32_t t = vkvit__graph_tensor(&r->g, VKVIT_TENSOR_INPUT, name, ndim, shape);
    if (t == VKVIT_NONE) return t;
    if (r->n_inputs == VT_GRAPH_MAX_INPUTS) {
        fprintf(stderr, "FATAL: vt_graph_input: more than %d inputs\n", VT_GRAPH_MAX_INPUTS);
        exit(1);
    }
    size_t bytes = (size_t)r->g.tensors[t].bytes;
    float *copy = malloc(bytes ? bytes : 4);
    if (!copy) exit(1);
    if (data) memcpy(copy, data, bytes);
    else memset(copy, 0, bytes);
    r->inputs[r->n_inputs].t = t;
    r->inputs[r->n_inputs].data = copy;
    r->n_inputs++;
    return t;
}

static inline void vt_graph_output(vt_graph *r, uint32_t t) {
    if (t == VKVIT_NONE || r->g.error) return;
    uint32_t root = vkvit__graph_root(&r->g, t, NULL);
    if (r->g.tensors[root].kind == VKVIT_TENSOR_ACTIVATION) r->g.tensors[root].kind = VKVIT_TENSOR_OUTPUT;
}

static inline void vt_graph_barrier_all(vkvit_ctx *ctx, VkCommandBuffer cmd) {
    vkvit__cmd_barrier_prior_work(ctx, cmd);
}

/* Plans, allocates, uploads and runs the graph once. Returns VKVIT_OK or the first error (sentence in
 * vkvit_last_error()); the caller decides whether that is fatal. */
static inline vkvit_result vt_graph_run(vt_graph *r) {
    vkvit_ctx *ctx = r->ctx;
    vkvit_result res = vkvit__graph_error(&r->g);
    if (res != VKVIT_OK) return res;
    if ((res = vkvit__plan(&r->g, &r->plan)) != VKVIT_OK) return res;
    /* Weights: one device buffer (at least one alignment unit so an op-free test still has a buffer). */
    if (r->wbytes == 0) vt_graph_stage(r, NULL, 0);
    VkDeviceSize wsize = (r->wbytes + VKVIT_ARENA_ALIGN - 1) / VKVIT_ARENA_ALIGN * VKVIT_ARENA_ALIGN;
    if (wsize == 0) wsize = VKVIT_ARENA_ALIGN;
    if ((res = vkvit__buffer_create(ctx, wsize, VKVIT_MEM_DEVICE, "test weights", &r->weights)) != VKVIT_OK) return res;
    if (r->wbytes && (res = vkvit__buffer_upload(ctx, &r->weights, 0, r->wimage, r->wbytes)) != VKVIT_OK) return res;
    /* Arena: NaN everywhere, then the inputs at their planned offsets. */
    VkDeviceSize asize = r->plan.arena_bytes ? r->plan.arena_bytes : VKVIT_ARENA_ALIGN;
    if ((res = vkvit__buffer_create(ctx, asize, VKVIT_MEM_DEVICE, "test arena", &r->arena)) != VKVIT_OK) return res;
    if ((res = vkvit__buffer_fill(ctx, &r->arena, 0, asize, VT_NAN_BITS)) != VKVIT_OK) return res;
    for (uint32_t i = 0; i < r->n_inputs; i++) {
        const vkvit__tensor *t = &r->g.tensors[r->inputs[i].t];
        if ((res = vkvit__buffer_upload(ctx, &r->arena, t->offset, r->inputs[i].data, t->bytes)) != VKVIT_OK)
            return res;
    }
    vkvit__record_target tg = {.weights = &r->weights, .weights_f16 = NULL, .arena = &r->arena};
    double t0 = vt_now_s();
    if ((res = vkvit__record_prepare(ctx, &r->g, &tg, false, &r->rec)) != VKVIT_OK) return res;
    r->ran = true; /* rec must be freed from here on */
    double t1 = vt_now_s();
    VkCommandBuffer cmd;
    if ((res = vkvit__cmd_begin(ctx, &cmd)) != VKVIT_OK) return res;
    vt_graph_barrier_all(ctx, cmd);
    vkvit__record_nodes(ctx, &r->g, &tg, &r->rec, cmd);
    vt_graph_barrier_all(ctx, cmd);
    res = vkvit__cmd_submit_wait(ctx, cmd);
    vt_graph_stats.graphs++;
    vt_graph_stats.kernels += r->g.n_kernels;
    for (uint32_t k = 0; k < r->g.n_kernels; k++) {
        bool found = false;
        for (unsigned j = 0; j < vt_graph_stats.unique && !found; j++)
            found = vt_kernel_same(&vt_graph_stats.seen[j], &r->g.kernels[k]);
        if (!found && vt_graph_stats.unique < 512) vt_graph_stats.seen[vt_graph_stats.unique++] = r->g.kernels[k];
    }
    vt_graph_stats.prepare_s += t1 - t0;
    vt_graph_stats.run_s += vt_now_s() - t1;
    if (getenv("VT_GRAPH_VERBOSE"))
        fprintf(stderr, "  [graph: %u nodes, %u kernels, prepare %.2f s, run %.2f s]\n", r->g.n_nodes, r->g.n_kernels,
                t1 - t0, vt_now_s() - t1);
    return res;
}

/* The tensor's contents after the run (any arena tensor, view or root), malloc'ed. */
static inline float *vt_graph_download(vt_graph *r, uint32_t t) {
    const vkvit__tensor *x = &r->g.tensors[t];
    float *out = malloc(x->bytes ? (size_t)x->bytes : 4);
    if (!out) exit(1);
    MUST(vkvit__buffer_download(r->ctx, &r->arena, x->offset, out, x->bytes));
    return out;
}

static inline void vt_graph_end(vt_graph *r) {
    if (r->ran) vkvit__record_free(r->ctx, &r->rec);
    if (r->arena.buffer) vkvit__buffer_destroy(r->ctx, &r->arena);
    if (r->weights.buffer) vkvit__buffer_destroy(r->ctx, &r->weights);
    for (uint32_t i = 0; i < r->n_inputs; i++) free(r->inputs[i].data);
    free(r->wimage);
    vkvit__graph_free(&r->g);
    memset(r, 0, sizeof *r);
}

#endif /* VKVIT_TEST_GRAPH_UTIL_H */
