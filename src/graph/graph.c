// SPDX-License-Identifier: Apache-2.0
/* Graph tables and builder calls (see graph.h). */
#include "graph/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vkvit__graph_init_opts(vkvit__graph *g, vkvit_ctx *ctx, const vkvit__build_opts *opts) {
    memset(g, 0, sizeof *g);
    g->ctx = ctx;
    g->opts = *opts;
    g->features = VKVIT_NONE;
}

void vkvit__graph_init(vkvit__graph *g, vkvit_ctx *ctx) {
    const vkvit__build_opts fp32 = vkvit__build_opts_of(VKVIT_PRECISION_FP32);
    vkvit__graph_init_opts(g, ctx, &fp32);
}

void vkvit__graph_reset(vkvit__graph *g) {
    vkvit_ctx *ctx = g->ctx;
    const vkvit__build_opts opts = g->opts;
    vkvit__graph_free(g);
    vkvit__graph_init_opts(g, ctx, &opts);
}

void vkvit__graph_free(vkvit__graph *g) {
    free(g->tensors);
    free(g->nodes);
    free(g->kernels);
    memset(g, 0, sizeof *g);
}

uint32_t vkvit__graph_fail(vkvit__graph *g, vkvit_result code, const char *fmt, ...) {
    if (g->error == VKVIT_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->error_msg, sizeof g->error_msg, fmt, ap);
        va_end(ap);
        g->error = code;
    }
    return VKVIT_NONE;
}

vkvit_result vkvit__graph_error(const vkvit__graph *g) {
    if (g->error != VKVIT_OK) return vkvit__error(g->error, "%s", g->error_msg);
    return VKVIT_OK;
}

/* Grows an array of `size`-byte elements to hold at least `need`. */
static bool grow(vkvit__graph *g, void **arr, uint32_t *cap, uint32_t need, size_t size) {
    if (need <= *cap) return true;
    uint32_t ncap = *cap ? *cap * 2 : 64;
    while (ncap < need) ncap *= 2;
    void *p = realloc(*arr, (size_t)ncap * size);
    if (!p) {
        vkvit__graph_fail(g, VKVIT_ERROR_OUT_OF_HOST_MEMORY, "graph: out of host memory growing to %u entries", ncap);
        return false;
    }
    *arr = p;
    *cap = ncap;
    return true;
}

/* dst = "scope.name" (or "name"), truncated to cap - 1 bytes. */
static void join_label(char *dst, size_t cap, const char *scope, const char *name) {
    size_t n = 0;
    for (const char *s = scope; s && *s && n + 1 < cap; s++) dst[n++] = *s;
    if (scope && scope[0] && n + 1 < cap) dst[n++] = '.';
    for (const char *s = name; *s && n + 1 < cap; s++) dst[n++] = *s;
    dst[n] = '\0';
}

/* `name` and `shape` may point into the tensor table itself (a builder passing another tensor's shape): both are
 * copied into the new entry before the table grows, so no caller can hand in a pointer that the growth frees. */
static uint32_t add_tensor(vkvit__graph *g, vkvit__tensor_kind kind, vkvit__dtype dtype, const char *name,
                           uint32_t ndim, const uint32_t *shape) {
    if (g->error) return VKVIT_NONE;
    if (ndim == 0 || ndim > VKVIT_MAX_DIMS)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "graph: tensor '%s' has %u dims", name, ndim);
    vkvit__tensor nt;
    memset(&nt, 0, sizeof nt);
    join_label(nt.name, sizeof nt.name, vkvit__is_weight(kind) ? NULL : g->scope, name);
    memcpy(nt.shape, shape, ndim * sizeof *shape);
    uint64_t n = 1;
    for (uint32_t i = 0; i < ndim; i++) {
        if (nt.shape[i] == 0)
            return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "graph: tensor '%s' has a zero dimension", nt.name);
        n *= nt.shape[i];
        if (n > (1ull << 34))
            return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "graph: tensor '%s' is too large", nt.name);
    }
    if (g->n_tensors >= VKVIT_GRAPH_MAX_TENSORS)
        return vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "graph: more than %u tensors (the network is too deep)",
                                 VKVIT_GRAPH_MAX_TENSORS);
    if (!grow(g, (void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1, sizeof *g->tensors)) return VKVIT_NONE;
    vkvit__tensor *t = &g->tensors[g->n_tensors];
    *t = nt;
    t->kind = kind;
    t->dtype = dtype;
    t->ndim = ndim;
    t->bytes = n * vkvit__dtype_size(dtype);
    t->view_of = VKVIT_NONE;
    t->first_use = t->last_use = VKVIT_NONE;
    return g->n_tensors++;
}

uint32_t vkvit__graph_tensor(vkvit__graph *g, vkvit__tensor_kind kind, const char *name, uint32_t ndim,
                             const uint32_t *shape) {
    return add_tensor(g, kind, VKVIT_ELEM_F32, name, ndim, shape);
}

uint32_t vkvit__graph_tensor_typed(vkvit__graph *g, vkvit__tensor_kind kind, vkvit__dtype dtype, const char *name,
                                   uint32_t ndim, const uint32_t *shape) {
    if (dtype != VKVIT_ELEM_F32 && dtype != VKVIT_ELEM_F16 && dtype != VKVIT_ELEM_U8)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "graph: tensor '%s' of an unknown dtype %d", name,
                                 (int)dtype);
    return add_tensor(g, kind, dtype, name, ndim, shape);
}

uint32_t vkvit__graph_weight_at(vkvit__graph *g, vkvit__tensor_kind kind, const char *name, uint64_t offset,
                                uint32_t ndim, const uint32_t *shape) {
    if (!vkvit__is_weight(kind))
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "graph: weight '%s' with a non-weight kind", name);
    uint32_t t = add_tensor(g, kind, kind == VKVIT_TENSOR_WEIGHT_F16 ? VKVIT_ELEM_F16 : VKVIT_ELEM_F32, name, ndim,
                            shape);
    if (t != VKVIT_NONE) g->tensors[t].offset = offset;
    return t;
}

uint32_t vkvit__graph_weight_typed(vkvit__graph *g, vkvit__dtype dtype, const char *name, uint64_t offset,
                                   uint32_t ndim, const uint32_t *shape) {
    uint32_t t = vkvit__graph_tensor_typed(g, VKVIT_TENSOR_WEIGHT, dtype, name, ndim, shape);
    if (t != VKVIT_NONE) g->tensors[t].offset = offset;
    return t;
}

uint32_t vkvit__graph_view(vkvit__graph *g, uint32_t parent, const char *name, uint64_t elem_offset, uint32_t ndim,
                           const uint32_t *shape) {
    if (g->error) return VKVIT_NONE;
    if (parent >= g->n_tensors)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "graph: view '%s' of an invalid tensor", name);
    uint32_t t = add_tensor(g, g->tensors[parent].kind, g->tensors[parent].dtype, name, ndim, shape);
    if (t == VKVIT_NONE) return t;
    vkvit__tensor *v = &g->tensors[t], *p = &g->tensors[parent];
    const uint64_t elem = vkvit__dtype_size(p->dtype);
    if (elem_offset * elem + v->bytes > p->bytes)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT,
                                 "graph: view '%s' (%llu bytes at +%llu) does not fit in '%s' (%llu bytes)", v->name,
                                 (unsigned long long)v->bytes, (unsigned long long)(elem_offset * elem), p->name,
                                 (unsigned long long)p->bytes);
    v->view_of = parent;
    v->view_offset = elem_offset * elem;
    if (vkvit__is_weight(p->kind)) v->offset = p->offset + v->view_offset;
    return t;
}

void vkvit__graph_rebase(vkvit__graph *g, uint32_t t, uint32_t parent, uint64_t elem_offset) {
    if (g->error) return;
    if (t >= g->n_tensors || parent >= g->n_tensors || t == parent) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "graph: rebase of an invalid tensor");
        return;
    }
    vkvit__tensor *v = &g->tensors[t];
    const vkvit__tensor *p = &g->tensors[parent];
    const uint64_t elem = vkvit__dtype_size(p->dtype);
    if (v->view_of != VKVIT_NONE || v->kind != p->kind || v->dtype != p->dtype || elem_offset * elem + v->bytes > p->bytes) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "graph: '%s' cannot become a view of '%s' at +%llu", v->name,
                          p->name, (unsigned long long)(elem_offset * elem));
        return;
    }
    v->view_of = parent;
    v->view_offset = elem_offset * elem;
}

void vkvit__graph_move_last_node(vkvit__graph *g, uint32_t at) {
    if (g->error || g->n_nodes == 0 || at >= g->n_nodes - 1) return;
    vkvit__node last = g->nodes[g->n_nodes - 1];
    memmove(&g->nodes[at + 1], &g->nodes[at], (size_t)(g->n_nodes - 1 - at) * sizeof *g->nodes);
    g->nodes[at] = last;
}

static void reverse_nodes(vkvit__node *n, uint32_t count) {
    for (uint32_t i = 0, j = count; i + 1 < j; i++, j--) {
        vkvit__node t = n[i];
        n[i] = n[j - 1];
        n[j - 1] = t;
    }
}

void vkvit__graph_move_nodes(vkvit__graph *g, uint32_t first, uint32_t at) {
    if (first >= g->n_nodes || at >= first) return;
    /* Rotation in place by three reversals: no allocation, so it cannot fail, and it also runs on a graph with an
     * error (a rollback relies on both). */
    reverse_nodes(&g->nodes[at], first - at);
    reverse_nodes(&g->nodes[first], g->n_nodes - first);
    reverse_nodes(&g->nodes[at], g->n_nodes - at);
}

vkvit__graph_mark vkvit__graph_mark_now(const vkvit__graph *g) {
    return (vkvit__graph_mark){g->n_tensors, g->n_nodes, g->n_kernels, g->error != VKVIT_OK};
}

void vkvit__graph_rollback(vkvit__graph *g, vkvit__graph_mark m) {
    if (m.n_tensors <= g->n_tensors) g->n_tensors = m.n_tensors;
    if (m.n_nodes <= g->n_nodes) g->n_nodes = m.n_nodes;
    if (m.n_kernels <= g->n_kernels) g->n_kernels = m.n_kernels;
    if (!m.had_error) {
        g->error = VKVIT_OK;
        g->error_msg[0] = '\0';
        g->grid_too_large = false;
    }
}

uint64_t vkvit__graph_max_activation_binding(const vkvit__graph *g, uint32_t *tensor) {
    uint64_t best = 0;
    for (uint32_t n = 0; n < g->n_nodes; n++)
        for (uint32_t b = 0; b < g->nodes[n].n_bindings; b++) {
            uint32_t t = g->nodes[n].bindings[b].tensor;
            if (vkvit__is_weight(g->tensors[t].kind) || g->tensors[t].bytes <= best) continue;
            best = g->tensors[t].bytes;
            if (tensor) *tensor = t;
        }
    return best;
}

uint32_t vkvit__graph_root(const vkvit__graph *g, uint32_t t, uint64_t *offset_in_root) {
    uint64_t off = 0;
    while (g->tensors[t].view_of != VKVIT_NONE) {
        off += g->tensors[t].view_offset;
        t = g->tensors[t].view_of;
    }
    if (offset_in_root) *offset_in_root = off;
    return t;
}

void vkvit__graph_scope(vkvit__graph *g, const char *fmt, ...) {
    if (!fmt) {
        g->scope[0] = '\0';
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->scope, sizeof g->scope, fmt, ap);
    va_end(ap);
}

static bool same_kernel(const vkvit__kernel_desc *a, const vkvit__kernel_desc *b) {
    return a->shader == b->shader && a->n_buffers == b->n_buffers && a->push_size == b->push_size &&
           a->n_spec == b->n_spec && memcmp(a->spec, b->spec, a->n_spec * sizeof a->spec[0]) == 0;
}

uint32_t vkvit__graph_node(vkvit__graph *g, const char *name, const char *kind, const vkvit__kernel_desc *kdesc,
                           const vkvit__node_binding *bindings, uint32_t n_bindings, const void *push,
                           uint32_t push_size, uint32_t gx, uint32_t gy, uint32_t gz) {
    if (g->error) return VKVIT_NONE;
    if (n_bindings != kdesc->n_buffers || n_bindings > VKVIT_MAX_BINDINGS || push_size != kdesc->push_size ||
        push_size > VKVIT_MAX_PUSH)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT,
                                 "graph: node '%s': %u bindings / %u push bytes do not match its kernel (%u / %u)", name,
                                 n_bindings, push_size, kdesc->n_buffers, kdesc->push_size);
    for (uint32_t i = 0; i < n_bindings; i++)
        if (bindings[i].tensor >= g->n_tensors)
            return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "graph: node '%s': binding %u has no tensor", name, i);
    if (g->n_nodes >= VKVIT_GRAPH_MAX_NODES)
        return vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED,
                                 "graph: more than %u nodes (the network is too deep for one session)",
                                 VKVIT_GRAPH_MAX_NODES);
    if (gx == 0 || gy == 0 || gz == 0) return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "graph: node '%s' "
                                                                  "has an empty grid %u x %u x %u", name, gx, gy, gz);
    if (gx > g->ctx->limits.maxComputeWorkGroupCount[0] || gy > g->ctx->limits.maxComputeWorkGroupCount[1] ||
        gz > g->ctx->limits.maxComputeWorkGroupCount[2]) {
        g->grid_too_large = true; /* the session may retry with smaller sub-batches (session.c) */
        return vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED,
                                 "graph: node '%s' needs %u x %u x %u workgroups; the device allows %u x %u x %u", name,
                                 gx, gy, gz, g->ctx->limits.maxComputeWorkGroupCount[0],
                                 g->ctx->limits.maxComputeWorkGroupCount[1], g->ctx->limits.maxComputeWorkGroupCount[2]);
    }
    uint32_t k = 0;
    while (k < g->n_kernels && !same_kernel(&g->kernels[k], kdesc)) k++;
    if (k == g->n_kernels) {
        if (!grow(g, (void **)&g->kernels, &g->cap_kernels, g->n_kernels + 1, sizeof *g->kernels)) return VKVIT_NONE;
        g->kernels[g->n_kernels++] = *kdesc;
    }
    if (!grow(g, (void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes)) return VKVIT_NONE;
    vkvit__node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    join_label(n->label, sizeof n->label, g->scope, name);
    n->kind = kind;
    n->kernel = k;
    n->n_bindings = n_bindings;
    memcpy(n->bindings, bindings, n_bindings * sizeof *bindings);
    if (push_size) memcpy(n->push, push, push_size);
    n->groups[0] = gx;
    n->groups[1] = gy;
    n->groups[2] = gz;
    return g->n_nodes++;
}
