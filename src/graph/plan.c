/* Memory planning: liveness per root tensor, then one arena.
 *
 * Inputs and outputs are placed first and never freed (the host reads and writes them around a run, so nothing
 * may alias them). Every other activation is allocated when a node first touches it and released after the last
 * node that touches it, in a best-fit free list kept sorted by offset so neighbours merge. Because the whole
 * graph is known, this one pass both measures the arena and assigns offsets; the arena is then allocated once. */
#include "graph/graph.h"

#include <stdlib.h>
#include <string.h>

typedef struct block {
    uint64_t offset, size;
} block;

typedef struct free_list {
    block *blocks;
    uint32_t n, cap;
    uint64_t end; /* high-water mark: the arena size */
} free_list;

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static bool fl_insert(free_list *fl, uint32_t at, block b) {
    if (fl->n == fl->cap) {
        uint32_t ncap = fl->cap ? fl->cap * 2 : 64;
        block *p = realloc(fl->blocks, ncap * sizeof *p);
        if (!p) return false;
        fl->blocks = p;
        fl->cap = ncap;
    }
    memmove(&fl->blocks[at + 1], &fl->blocks[at], (fl->n - at) * sizeof *fl->blocks);
    fl->blocks[at] = b;
    fl->n++;
    return true;
}

static void fl_remove(free_list *fl, uint32_t at) {
    memmove(&fl->blocks[at], &fl->blocks[at + 1], (fl->n - at - 1) * sizeof *fl->blocks);
    fl->n--;
}

/* Best fit among free blocks; a free block at the end of the arena may be grown instead of extending past it. */
static uint64_t fl_alloc(free_list *fl, uint64_t size) {
    int best = -1;
    for (uint32_t i = 0; i < fl->n; i++)
        if (fl->blocks[i].size >= size && (best < 0 || fl->blocks[i].size < fl->blocks[best].size)) best = (int)i;
    if (best >= 0) {
        block *b = &fl->blocks[best];
        uint64_t off = b->offset;
        b->offset += size;
        b->size -= size;
        if (b->size == 0) fl_remove(fl, (uint32_t)best);
        return off;
    }
    if (fl->n && fl->blocks[fl->n - 1].offset + fl->blocks[fl->n - 1].size == fl->end) {
        uint64_t off = fl->blocks[fl->n - 1].offset; /* grow the trailing free block */
        fl->end = off + size;
        fl_remove(fl, fl->n - 1);
        return off;
    }
    uint64_t off = fl->end;
    fl->end += size;
    return off;
}

/* The first free block whose offset is >= `offset` (binary search: the list is sorted by offset). */
static uint32_t fl_lower_bound(const free_list *fl, uint64_t offset) {
    uint32_t lo = 0, hi = fl->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (fl->blocks[mid].offset < offset) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static bool fl_free(free_list *fl, uint64_t offset, uint64_t size) {
    uint32_t i = fl_lower_bound(fl, offset);
    if (!fl_insert(fl, i, (block){offset, size})) return false;
    if (i + 1 < fl->n && fl->blocks[i].offset + fl->blocks[i].size == fl->blocks[i + 1].offset) { /* merge right */
        fl->blocks[i].size += fl->blocks[i + 1].size;
        fl_remove(fl, i + 1);
    }
    if (i > 0 && fl->blocks[i - 1].offset + fl->blocks[i - 1].size == fl->blocks[i].offset) { /* merge left */
        fl->blocks[i - 1].size += fl->blocks[i].size;
        fl_remove(fl, i);
    }
    return true;
}

/* Tensor ids bucketed by a node index (counting sort): the ids of bucket n are ids[start[n] .. start[n + 1]). */
typedef struct buckets {
    uint32_t *start, *ids;
} buckets;

static bool bucket_by(const vkvit__graph *g, const uint32_t *roots, uint32_t n_roots, bool by_last, buckets *out) {
    out->start = calloc((size_t)g->n_nodes + 2, sizeof *out->start);
    out->ids = malloc(((size_t)n_roots + 1) * sizeof *out->ids);
    if (!out->start || !out->ids) return false;
    for (uint32_t i = 0; i < n_roots; i++) {
        const vkvit__tensor *x = &g->tensors[roots[i]];
        out->start[(by_last ? x->last_use : x->first_use) + 2]++;
    }
    for (uint32_t n = 2; n < g->n_nodes + 2; n++) out->start[n] += out->start[n - 1];
    for (uint32_t i = 0; i < n_roots; i++) {
        const vkvit__tensor *x = &g->tensors[roots[i]];
        out->ids[out->start[(by_last ? x->last_use : x->first_use) + 1]++] = roots[i];
    }
    return true;
}

static void buckets_free(buckets *b) {
    free(b->start);
    free(b->ids);
}

vkvit_result vkvit__plan(vkvit__graph *g, vkvit__plan_stats *stats) {
    vkvit_result res = vkvit__graph_error(g);
    if (res != VKVIT_OK) return res;
    memset(stats, 0, sizeof *stats);

    /* Liveness of root tensors: the first and last node that touches them or any view of them, in one pass over
     * the bindings. The activations are then bucketed by first and by last use, so planning costs O(nodes +
     * tensors) plus the free-list operations (binary search by offset; best fit over the few free blocks). */
    for (uint32_t t = 0; t < g->n_tensors; t++) g->tensors[t].first_use = g->tensors[t].last_use = VKVIT_NONE;
    for (uint32_t n = 0; n < g->n_nodes; n++)
        for (uint32_t b = 0; b < g->nodes[n].n_bindings; b++) {
            vkvit__tensor *r = &g->tensors[vkvit__graph_root(g, g->nodes[n].bindings[b].tensor, NULL)];
            if (r->first_use == VKVIT_NONE) r->first_use = n;
            r->last_use = n;
        }

    free_list fl = {0};
    /* Inputs and outputs first, for the whole run. */
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        vkvit__tensor *x = &g->tensors[t];
        if (x->view_of == VKVIT_NONE && (x->kind == VKVIT_TENSOR_INPUT || x->kind == VKVIT_TENSOR_OUTPUT)) {
            x->offset = fl_alloc(&fl, align_up(x->bytes, VKVIT_ARENA_ALIGN));
            stats->sum_activation_bytes += x->bytes;
        }
    }
    /* Activations by liveness. Per node: allocate what starts here, then free what ends here. */
    uint32_t *roots = malloc(((size_t)g->n_tensors + 1) * sizeof *roots), n_roots = 0;
    buckets first = {0}, last = {0};
    if (roots) {
        for (uint32_t t = 0; t < g->n_tensors; t++) {
            const vkvit__tensor *x = &g->tensors[t];
            if (x->view_of == VKVIT_NONE && x->kind == VKVIT_TENSOR_ACTIVATION && x->first_use != VKVIT_NONE)
                roots[n_roots++] = t;
        }
    }
    if (!roots || !bucket_by(g, roots, n_roots, false, &first) || !bucket_by(g, roots, n_roots, true, &last))
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "plan: out of host memory");
    for (uint32_t n = 0; n < g->n_nodes && res == VKVIT_OK; n++) {
        for (uint32_t i = first.start[n]; i < first.start[n + 1]; i++) {
            vkvit__tensor *x = &g->tensors[first.ids[i]];
            x->offset = fl_alloc(&fl, align_up(x->bytes, VKVIT_ARENA_ALIGN));
            stats->sum_activation_bytes += x->bytes;
            stats->largest_activation_bytes = VKVIT_MAX(stats->largest_activation_bytes, x->bytes);
            stats->n_activations++;
        }
        for (uint32_t i = last.start[n]; i < last.start[n + 1] && res == VKVIT_OK; i++) {
            vkvit__tensor *x = &g->tensors[last.ids[i]];
            if (!fl_free(&fl, x->offset, align_up(x->bytes, VKVIT_ARENA_ALIGN)))
                res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "plan: out of host memory");
        }
    }
    buckets_free(&first);
    buckets_free(&last);
    free(roots);
    /* Views inherit their root's placement. */
    for (uint32_t t = 0; t < g->n_tensors; t++) {
        vkvit__tensor *x = &g->tensors[t];
        if (x->view_of == VKVIT_NONE) continue;
        uint64_t off;
        uint32_t r = vkvit__graph_root(g, t, &off);
        x->offset = g->tensors[r].offset + off;
    }
    stats->arena_bytes = fl.end;
    free(fl.blocks);
    return res;
}
