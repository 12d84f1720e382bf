// SPDX-License-Identifier: Apache-2.0
/* Memory planning: liveness per root tensor, then one arena.
 *
 * Inputs and outputs are placed first, one after another, and never share their bytes (the host reads and
 * writes them around a run, so nothing may alias them). Every other activation lives from the first node that
 * touches it to the last, and the activations are placed offline, greedy by size (the strategy of TFLite's and
 * MNN's planners): largest first, each at the tightest gap left by the already placed activations whose lifetimes
 * overlap its own, else just above them. An online best-fit free list fragments on transformer blocks (ViT-5-S:
 * the attention scores did not fit where qkv had been, and the arena was 3.3x the largest activation); greedy by
 * size packs it into 2.3x. Because the whole graph is known, planning is done once before anything is allocated.
 *
 * Cost: each activation is checked against the activations live at the nodes of its lifetime, found through one
 * list per node, so planning takes O(sum over activations of lifetime x live set) -- linear in depth for the
 * graphs the builders make (a block's intermediates die inside the block; the residual stream is one tensor). */
#include "graph/graph.h"

#include <stdlib.h>
#include <string.h>

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

typedef struct span {
    uint64_t begin, end; /* arena bytes [begin, end) */
} span;

static int span_by_begin(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Placement order: larger first; equal sizes by first use, then by id, so the plan is deterministic. */
typedef struct order_key {
    uint64_t bytes;
    uint32_t first_use, id;
} order_key;

static int by_size_then_first_use(const void *a, const void *b) {
    const order_key *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    if (x->first_use != y->first_use) return x->first_use < y->first_use ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The lowest offset >= `base` of the tightest gap between `conflicts` (sorted by begin) that holds `size`; if
 * none does, the end of the highest conflict. */
static uint64_t tightest_gap(const span *conflicts, uint32_t n, uint64_t base, uint64_t size) {
    uint64_t cursor = base, best = UINT64_MAX, best_gap = UINT64_MAX;
    for (uint32_t i = 0; i < n; i++) {
        if (conflicts[i].begin > cursor) {
            uint64_t gap = conflicts[i].begin - cursor;
            if (gap >= size && gap < best_gap) best = cursor, best_gap = gap;
        }
        cursor = VKVIT_MAX(cursor, conflicts[i].end);
    }
    return best != UINT64_MAX ? best : cursor;
}

/* Liveness of root tensors: the first and last node that touches them or any view of them. */
static void compute_liveness(vkvit__graph *g) {
    for (uint32_t t = 0; t < g->n_tensors; t++) g->tensors[t].first_use = g->tensors[t].last_use = VKVIT_NONE;
    for (uint32_t n = 0; n < g->n_nodes; n++)
        for (uint32_t b = 0; b < g->nodes[n].n_bindings; b++) {
            vkvit__tensor *r = &g->tensors[vkvit__graph_root(g, g->nodes[n].bindings[b].tensor, NULL)];
            if (r->first_use == VKVIT_NONE) r->first_use = n;
            r->last_use = n;
        }
}

/* Places the activations `ids` (n of them, all with a first use) at offsets >= base; returns the arena's end. */
static vkvit_result place_activations(vkvit__graph *g, const uint32_t *ids, uint32_t n, uint64_t base, uint64_t *end) {
    *end = base;
    if (n == 0) return VKVIT_OK;
    /* One list per node of the placed activations live there: start[k] .. start[k] + fill[k] in `live`. */
    uint64_t *start = calloc((size_t)g->n_nodes + 1, sizeof *start);
    uint32_t *fill = calloc((size_t)g->n_nodes, sizeof *fill);
    uint32_t *seen = malloc((size_t)g->n_tensors * sizeof *seen); /* the last placement that counted a tensor */
    span *conflicts = malloc((size_t)n * sizeof *conflicts);
    order_key *order = malloc((size_t)n * sizeof *order);
    uint32_t *live = NULL;
    vkvit_result res = VKVIT_OK;
    if (start && fill && seen && conflicts && order) {
        uint64_t total = 0;
        for (uint32_t i = 0; i < n; i++) {
            const vkvit__tensor *x = &g->tensors[ids[i]];
            order[i] = (order_key){x->bytes, x->first_use, ids[i]};
            for (uint32_t k = x->first_use; k <= x->last_use; k++) start[k]++;
            total += (uint64_t)x->last_use - x->first_use + 1;
        }
        uint64_t at = 0;
        for (uint32_t k = 0; k < g->n_nodes; k++) { /* counts -> where each node's list starts */
            uint64_t count = start[k];
            start[k] = at;
            at += count;
        }
        if (total <= SIZE_MAX / sizeof *live) live = malloc((size_t)(total ? total : 1) * sizeof *live);
    }
    if (!live) res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "plan: out of host memory");
    if (res == VKVIT_OK) {
        memset(seen, 0xff, (size_t)g->n_tensors * sizeof *seen);
        qsort(order, n, sizeof *order, by_size_then_first_use);
        for (uint32_t i = 0; i < n; i++) {
            vkvit__tensor *x = &g->tensors[order[i].id];
            uint64_t size = align_up(x->bytes, VKVIT_ARENA_ALIGN);
            uint32_t n_conflicts = 0;
            for (uint32_t k = x->first_use; k <= x->last_use; k++)
                for (uint32_t j = 0; j < fill[k]; j++) {
                    uint32_t other = live[start[k] + j];
                    if (seen[other] == i) continue;
                    seen[other] = i;
                    const vkvit__tensor *y = &g->tensors[other];
                    conflicts[n_conflicts++] = (span){y->offset, y->offset + align_up(y->bytes, VKVIT_ARENA_ALIGN)};
                }
            qsort(conflicts, n_conflicts, sizeof *conflicts, span_by_begin);
            x->offset = tightest_gap(conflicts, n_conflicts, base, size);
            *end = VKVIT_MAX(*end, x->offset + size);
            for (uint32_t k = x->first_use; k <= x->last_use; k++) live[start[k] + fill[k]++] = order[i].id;
        }
    }
    free(start);
    free(fill);
    free(seen);
    free(conflicts);
    free(order);
    free(live);
    return res;
}

vkvit_result vkvit__plan(vkvit__graph *g, vkvit__plan_stats *stats) {
    vkvit_result res = vkvit__graph_error(g);
    if (res != VKVIT_OK) return res;
    memset(stats, 0, sizeof *stats);
    compute_liveness(g);

    /* Inputs and outputs first, side by side, for the whole run. */
    uint64_t base = 0;
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        vkvit__tensor *x = &g->tensors[t];
        if (x->view_of == VKVIT_NONE && (x->kind == VKVIT_TENSOR_INPUT || x->kind == VKVIT_TENSOR_OUTPUT)) {
            x->offset = base;
            base += align_up(x->bytes, VKVIT_ARENA_ALIGN);
            stats->sum_activation_bytes += x->bytes;
        }
    }
    /* The activations some node touches, above them. */
    uint32_t *ids = malloc(((size_t)g->n_tensors + 1) * sizeof *ids), n_ids = 0;
    if (!ids) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "plan: out of host memory");
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        const vkvit__tensor *x = &g->tensors[t];
        if (x->view_of != VKVIT_NONE || x->kind != VKVIT_TENSOR_ACTIVATION || x->first_use == VKVIT_NONE) continue;
        ids[n_ids++] = t;
        stats->sum_activation_bytes += x->bytes;
        stats->largest_activation_bytes = VKVIT_MAX(stats->largest_activation_bytes, x->bytes);
        stats->n_activations++;
    }
    res = place_activations(g, ids, n_ids, base, &stats->arena_bytes);
    free(ids);
    /* Views inherit their root's placement. */
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        vkvit__tensor *x = &g->tensors[t];
        if (x->view_of == VKVIT_NONE) continue;
        uint64_t off;
        uint32_t r = vkvit__graph_root(g, t, &off);
        x->offset = g->tensors[r].offset + off;
    }
    return res;
}
