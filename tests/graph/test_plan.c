// SPDX-License-Identifier: Apache-2.0
/* Graph builder and memory planner: deterministic CPU logic, exact expectations, one behaviour per test.
 * No GPU: the graph only needs the device limits, so a zeroed ctx with limits filled in stands in. */
#include "test_util.h"
#include "graph/graph.h"

static vkvit_ctx fake_ctx;

static void init_graph(vkvit__graph *g) {
    memset(&fake_ctx, 0, sizeof fake_ctx);
    for (int i = 0; i < 3; i++) fake_ctx.limits.maxComputeWorkGroupCount[i] = 65535;
    vkvit__graph_init(g, &fake_ctx);
}

/* A node reading `in` (may be VKVIT_NONE) and writing `out`, with a fake one-binding-per-tensor kernel. */
static void node(vkvit__graph *g, const char *name, uint32_t in, uint32_t out) {
    vkvit__kernel_desc kd = {.shader = 0, .n_buffers = in == VKVIT_NONE ? 1 : 2};
    vkvit__node_binding b[2];
    uint32_t n = 0;
    if (in != VKVIT_NONE) b[n++] = (vkvit__node_binding){in, VKVIT_READ};
    b[n++] = (vkvit__node_binding){out, VKVIT_WRITE};
    vkvit__graph_node(g, name, "test", &kd, b, n, NULL, 0, 1, 1, 1);
}

static uint32_t act(vkvit__graph *g, const char *name, uint32_t floats) {
    uint32_t shape[1] = {floats};
    return vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 1, shape);
}

static void plan_reuses_freed_block(void) {
    vkvit__graph g;
    init_graph(&g);
    uint32_t a = act(&g, "a", 1024), b = act(&g, "b", 1024), c = act(&g, "c", 1024), d = act(&g, "d", 1024);
    node(&g, "write a", VKVIT_NONE, a);
    node(&g, "a->b", a, b); /* a dies here */
    node(&g, "b->c", b, c); /* c may take a's place */
    node(&g, "c->d", c, d);
    vkvit__plan_stats st;
    MUST(vkvit__plan(&g, &st));
    CHECK(g.tensors[c].offset == g.tensors[a].offset, "c at %llu, a at %llu", (unsigned long long)g.tensors[c].offset,
          (unsigned long long)g.tensors[a].offset);
    CHECK(st.arena_bytes == 2 * 4096, "arena %llu, want two 4 KiB blocks", (unsigned long long)st.arena_bytes);
    CHECK(st.sum_activation_bytes == 4 * 4096, "sum %llu", (unsigned long long)st.sum_activation_bytes);
    vkvit__graph_free(&g);
}

static void plan_never_aliases_live_tensors(void) {
    vkvit__graph g;
    init_graph(&g);
    uint32_t t[6];
    for (int i = 0; i < 6; i++) t[i] = act(&g, "t", 100 + 37 * i);
    node(&g, "0", VKVIT_NONE, t[0]);
    node(&g, "1", t[0], t[1]);
    node(&g, "2", t[0], t[2]); /* t0 lives until here */
    node(&g, "3", t[1], t[3]);
    node(&g, "4", t[2], t[4]);
    node(&g, "5", t[3], t[5]);
    node(&g, "6", t[4], t[5]);
    vkvit__plan_stats st;
    MUST(vkvit__plan(&g, &st));
    for (int i = 0; i < 6; i++)
        for (int j = i + 1; j < 6; j++) {
            const vkvit__tensor *x = &g.tensors[t[i]], *y = &g.tensors[t[j]];
            bool live_together = x->first_use <= y->last_use && y->first_use <= x->last_use;
            bool overlap = x->offset < y->offset + y->bytes && y->offset < x->offset + x->bytes;
            CHECK(!(live_together && overlap), "t%d and t%d are live together and overlap", i, j);
        }
    vkvit__graph_free(&g);
}

static void plan_keeps_inputs_and_outputs_apart(void) {
    vkvit__graph g;
    init_graph(&g);
    uint32_t shape[1] = {256};
    uint32_t in = vkvit__graph_tensor(&g, VKVIT_TENSOR_INPUT, "in", 1, shape);
    uint32_t mid = act(&g, "mid", 256);
    uint32_t out = vkvit__graph_tensor(&g, VKVIT_TENSOR_OUTPUT, "out", 1, shape);
    node(&g, "in->mid", in, mid); /* `in` is never read again, yet its block must not be reused */
    uint32_t mid2 = act(&g, "mid2", 256);
    node(&g, "mid->mid2", mid, mid2);
    node(&g, "mid2->out", mid2, out);
    vkvit__plan_stats st;
    MUST(vkvit__plan(&g, &st));
    const vkvit__tensor *ti = &g.tensors[in], *to = &g.tensors[out], *tm2 = &g.tensors[mid2];
    CHECK(tm2->offset != ti->offset && tm2->offset != to->offset, "mid2 reused an input/output block");
    CHECK(ti->offset != to->offset, "input and output alias");
    vkvit__graph_free(&g);
}

static void plan_places_views_inside_their_parent(void) {
    vkvit__graph g;
    init_graph(&g);
    uint32_t x = act(&g, "x", 1000);
    uint32_t shape[1] = {100};
    uint32_t v = vkvit__graph_view(&g, x, "x[500:600]", 500, 1, shape);
    uint32_t y = act(&g, "y", 100);
    node(&g, "write x", VKVIT_NONE, x);
    node(&g, "v->y", v, y);
    vkvit__plan_stats st;
    MUST(vkvit__plan(&g, &st));
    CHECK(g.tensors[v].offset == g.tensors[x].offset + 2000, "view at %llu, parent at %llu",
          (unsigned long long)g.tensors[v].offset, (unsigned long long)g.tensors[x].offset);
    CHECK(g.tensors[x].last_use == 1, "a view's use extends its parent's life (last_use %u)", g.tensors[x].last_use);
    vkvit__graph_free(&g);
}

static void graph_rejects_view_past_parent(void) {
    vkvit__graph g;
    init_graph(&g);
    uint32_t x = act(&g, "x", 10);
    uint32_t shape[1] = {8};
    uint32_t v = vkvit__graph_view(&g, x, "too far", 5, 1, shape);
    CHECK(v == VKVIT_NONE, "view accepted");
    vkvit_result r = vkvit__graph_error(&g);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "does not fit"), "%s: %s",
          vkvit_result_name(r), vkvit_last_error());
    /* Errors are sticky: later calls do nothing and the first sentence survives. */
    CHECK(act(&g, "later", 4) == VKVIT_NONE, "builder kept going after an error");
    CHECK(strstr(g.error_msg, "too far") != NULL, "first error lost: %s", g.error_msg);
    vkvit__graph_free(&g);
}

static void graph_deduplicates_kernels(void) {
    vkvit__graph g;
    init_graph(&g);
    uint32_t a = act(&g, "a", 4), b = act(&g, "b", 4), c = act(&g, "c", 4);
    node(&g, "1", VKVIT_NONE, a);
    node(&g, "2", a, b);
    node(&g, "3", b, c);
    CHECK(g.n_nodes == 3 && g.n_kernels == 2, "%u nodes, %u kernels (want 3, 2)", g.n_nodes, g.n_kernels);
    vkvit__graph_free(&g);
}

static void graph_rejects_oversized_dispatch(void) {
    vkvit__graph g;
    init_graph(&g);
    uint32_t a = act(&g, "a", 4);
    vkvit__kernel_desc kd = {.n_buffers = 1};
    vkvit__node_binding b = {a, VKVIT_WRITE};
    CHECK(vkvit__graph_node(&g, "huge", "test", &kd, &b, 1, NULL, 0, 70000, 1, 1) == VKVIT_NONE, "accepted");
    CHECK(vkvit__graph_error(&g) == VKVIT_ERROR_UNSUPPORTED, "%s", vkvit_last_error());
    vkvit__graph_free(&g);
}

/* Issue 12: a builder passing another tensor's shape (a pointer into g->tensors) while the table grows. The new
 * tensor is added exactly when the table is full, so the growth moves it; under ASan the old code read freed
 * memory here, and in a release build it could copy garbage. */
static void graph_copies_shape_before_growing(void) {
    vkvit__graph g;
    init_graph(&g);
    uint32_t shape[3] = {7, 11, 13};
    uint32_t x = vkvit__graph_tensor(&g, VKVIT_TENSOR_ACTIVATION, "x", 3, shape);
    while (g.n_tensors < g.cap_tensors) act(&g, "filler", 4);
    uint32_t y = vkvit__graph_tensor(&g, VKVIT_TENSOR_ACTIVATION, g.tensors[x].name, g.tensors[x].ndim,
                                     g.tensors[x].shape);
    MUST(vkvit__graph_error(&g));
    CHECK(g.n_tensors > 64 && g.cap_tensors > 64, "the table did not grow (%u / %u)", g.n_tensors, g.cap_tensors);
    CHECK(g.tensors[y].ndim == 3 && g.tensors[y].shape[0] == 7 && g.tensors[y].shape[1] == 11 &&
              g.tensors[y].shape[2] == 13 && !strcmp(g.tensors[y].name, "x"),
          "copied [%u, %u, %u] '%s'", g.tensors[y].shape[0], g.tensors[y].shape[1], g.tensors[y].shape[2],
          g.tensors[y].name);
    vkvit__graph_free(&g);
}

/* Planning is linear in the graph: a 300,000-node chain (the size of a depth-20,000 ViT-5) plans in well under a
 * second; the old planner scanned every tensor for every node (~9e10 steps here: hours). CTest's timeout on this
 * test turns a quadratic regression into a failure. Every node also reads one smaller tensor that lives for the
 * whole chain (the residual stream), which greedy-by-size places last: it meets all 300,000 others. The placement
 * is the two-block ping-pong plus the stream. */
static void plan_is_linear_in_depth(void) {
    vkvit__graph g;
    init_graph(&g);
    const uint32_t n = 300000;
    uint32_t stream = act(&g, "stream", 16);
    uint32_t prev = act(&g, "t", 64);
    vkvit__kernel_desc kd = {.n_buffers = 3};
    node(&g, "first", stream, prev);
    for (uint32_t i = 1; i < n; i++) {
        uint32_t t = act(&g, "t", 64);
        vkvit__node_binding b[3] = {{prev, VKVIT_READ}, {stream, VKVIT_READ}, {t, VKVIT_WRITE}};
        vkvit__graph_node(&g, "step", "test", &kd, b, 3, NULL, 0, 1, 1, 1);
        prev = t;
    }
    vkvit__plan_stats st;
    MUST(vkvit__plan(&g, &st));
    CHECK(st.arena_bytes == 3 * 256, "arena %llu bytes, want three 256-byte blocks",
          (unsigned long long)st.arena_bytes);
    CHECK(st.n_activations == n + 1, "%u activations planned", st.n_activations);
    vkvit__graph_free(&g);
}

/* The pattern that fragmented the old best-fit free list: a transformer block's attention. `qkv` dies where the
 * prologue writes q, k, v, and the scores (larger than qkv) are born one node later, while the residual stream
 * lives throughout. Greedy by size packs it into the peak of live bytes: x + q + k + v + scores. */
static void plan_packs_attention_to_its_peak(void) {
    vkvit__graph g;
    init_graph(&g);
    uint32_t x = act(&g, "x", 1024), qkv = act(&g, "qkv", 3 * 1024);
    uint32_t q = act(&g, "q", 1024), k = act(&g, "k", 1024), v = act(&g, "v", 1024);
    uint32_t scores = act(&g, "scores", 3 * 1024 + 256), o = act(&g, "o", 1024);
    node(&g, "embed", VKVIT_NONE, x);
    node(&g, "x->qkv", x, qkv);
    vkvit__kernel_desc kd = {.n_buffers = 4};
    vkvit__node_binding prep[4] = {{qkv, VKVIT_READ}, {q, VKVIT_WRITE}, {k, VKVIT_WRITE}, {v, VKVIT_WRITE}};
    vkvit__graph_node(&g, "prep", "test", &kd, prep, 4, NULL, 0, 1, 1, 1);
    vkvit__node_binding qk[3] = {{q, VKVIT_READ}, {k, VKVIT_READ}, {scores, VKVIT_WRITE}};
    vkvit__kernel_desc kd3 = {.shader = 1, .n_buffers = 3}, kd2 = {.shader = 2, .n_buffers = 2};
    vkvit__graph_node(&g, "q k^T", "test", &kd3, qk, 3, NULL, 0, 1, 1, 1);
    vkvit__node_binding pv[3] = {{scores, VKVIT_READ}, {v, VKVIT_READ}, {o, VKVIT_WRITE}};
    vkvit__graph_node(&g, "s v", "test", &kd3, pv, 3, NULL, 0, 1, 1, 1);
    vkvit__node_binding res[2] = {{o, VKVIT_READ}, {x, VKVIT_WRITE}};
    vkvit__graph_node(&g, "x += o", "test", &kd2, res, 2, NULL, 0, 1, 1, 1);
    vkvit__plan_stats st;
    MUST(vkvit__plan(&g, &st));
    const uint64_t peak = 4 * 4096 + (3 * 1024 + 256) * 4; /* x, q, k, v and the scores at "q k^T" */
    CHECK(st.arena_bytes == peak, "arena %llu bytes, want %llu",
          (unsigned long long)st.arena_bytes, (unsigned long long)peak);
    vkvit__graph_free(&g);
}

/* Random graphs: nodes read up to three earlier tensors and write a new one of random size. No two tensors live
 * at the same node may overlap, and the arena is never below the largest sum of live bytes. */
static void plan_random_graphs_never_alias(void) {
    uint32_t seed = 12345;
    for (int trial = 0; trial < 50; trial++) {
        vkvit__graph g;
        init_graph(&g);
        enum { N = 120 };
        uint32_t t[N];
        for (uint32_t i = 0; i < N; i++) {
            seed = seed * 1664525u + 1013904223u;
            t[i] = act(&g, "t", 1 + (seed >> 8) % 5000);
            vkvit__node_binding b[4];
            uint32_t nb = 0;
            for (uint32_t r = 0; r < 3 && i > 0; r++) {
                seed = seed * 1664525u + 1013904223u;
                uint32_t back = 1 + (seed >> 8) % (r == 0 ? 3 : 40); /* mostly recent, sometimes far back */
                if (back <= i) b[nb++] = (vkvit__node_binding){t[i - back], VKVIT_READ};
            }
            b[nb++] = (vkvit__node_binding){t[i], VKVIT_WRITE};
            vkvit__kernel_desc kd = {.shader = nb, .n_buffers = nb};
            vkvit__graph_node(&g, "n", "test", &kd, b, nb, NULL, 0, 1, 1, 1);
        }
        vkvit__plan_stats st;
        MUST(vkvit__plan(&g, &st));
        uint64_t peak = 0;
        for (uint32_t n = 0; n < g.n_nodes; n++) {
            uint64_t live = 0;
            for (uint32_t i = 0; i < N; i++) {
                const vkvit__tensor *x = &g.tensors[t[i]];
                if (x->first_use <= n && n <= x->last_use) live += (x->bytes + 255) / 256 * 256;
            }
            peak = live > peak ? live : peak;
        }
        CHECK(st.arena_bytes >= peak, "trial %d: arena %llu below the live peak %llu", trial,
              (unsigned long long)st.arena_bytes, (unsigned long long)peak);
        for (uint32_t i = 0; i < N; i++)
            for (uint32_t j = i + 1; j < N; j++) {
                const vkvit__tensor *x = &g.tensors[t[i]], *y = &g.tensors[t[j]];
                bool live_together = x->first_use <= y->last_use && y->first_use <= x->last_use;
                bool overlap = x->offset < y->offset + y->bytes && y->offset < x->offset + x->bytes;
                bool inside = x->offset + x->bytes <= st.arena_bytes && y->offset + y->bytes <= st.arena_bytes;
                CHECK(!(live_together && overlap) && inside, "trial %d: t%u and t%u overlap or leave the arena",
                      trial, i, j);
            }
        vkvit__graph_free(&g);
    }
}

static void graph_refuses_too_many_nodes(void) {
    vkvit__graph g;
    init_graph(&g);
    uint32_t a = act(&g, "a", 4);
    for (uint32_t i = 0; i <= VKVIT_GRAPH_MAX_NODES && !g.error; i++) node(&g, "n", VKVIT_NONE, a);
    CHECK(g.n_nodes == VKVIT_GRAPH_MAX_NODES, "%u nodes", g.n_nodes);
    CHECK(vkvit__graph_error(&g) == VKVIT_ERROR_UNSUPPORTED && strstr(vkvit_last_error(), "too deep"), "%s",
          vkvit_last_error());
    vkvit__graph_free(&g);
}

/* move_nodes rotates in place (order kept on both sides); a step that fails half-way is undone by a rollback to
 * a mark: its tensors, nodes and kernels and the sticky error go, and the graph plans as before. */
static void graph_moves_and_rolls_back(void) {
    vkvit__graph g;
    init_graph(&g);
    uint32_t a = act(&g, "a", 4), b = act(&g, "b", 4);
    node(&g, "net0", VKVIT_NONE, a);
    node(&g, "net1", a, b);
    const vkvit__graph_mark mark = vkvit__graph_mark_now(&g);
    uint32_t c = act(&g, "c", 4);
    node(&g, "pre0", VKVIT_NONE, c);
    vkvit__kernel_desc other = {.shader = 1, .n_buffers = 1};
    vkvit__node_binding bc = {c, VKVIT_WRITE};
    vkvit__graph_node(&g, "pre1", "test", &other, &bc, 1, NULL, 0, 1, 1, 1);
    vkvit__graph_move_nodes(&g, mark.n_nodes, 0);
    CHECK(g.n_nodes == 4 && !strcmp(g.nodes[0].label, "pre0") && !strcmp(g.nodes[1].label, "pre1") &&
              !strcmp(g.nodes[2].label, "net0") && !strcmp(g.nodes[3].label, "net1"),
          "rotation order: %s %s %s %s", g.nodes[0].label, g.nodes[1].label, g.nodes[2].label, g.nodes[3].label);
    /* The failing step: a dispatch above the device limit makes the graph's error sticky. */
    vkvit__graph_node(&g, "huge", "test", &other, &bc, 1, NULL, 0, 70000, 1, 1);
    CHECK(vkvit__graph_error(&g) != VKVIT_OK, "no error");
    vkvit__graph_move_nodes(&g, g.n_nodes - mark.n_nodes, 0); /* network back to the front */
    CHECK(g.error != VKVIT_OK, "the error is sticky until the rollback");
    vkvit__graph_rollback(&g, mark);
    CHECK(g.n_tensors == mark.n_tensors && g.n_nodes == 2 && g.n_kernels == mark.n_kernels &&
              !strcmp(g.nodes[0].label, "net0") && !strcmp(g.nodes[1].label, "net1") &&
              vkvit__graph_error(&g) == VKVIT_OK,
          "after rollback: %u tensors, %u nodes (%s, %s), %u kernels", g.n_tensors, g.n_nodes, g.nodes[0].label,
          g.nodes[1].label, g.n_kernels);
    vkvit__plan_stats st;
    CHECK(vkvit__plan(&g, &st) == VKVIT_OK, "plan after rollback: %s", vkvit_last_error());
    vkvit__graph_free(&g);
}

int main(void) {
    graph_moves_and_rolls_back();
    graph_copies_shape_before_growing();
    plan_is_linear_in_depth();
    graph_refuses_too_many_nodes();
    plan_reuses_freed_block();
    plan_packs_attention_to_its_peak();
    plan_random_graphs_never_alias();
    plan_never_aliases_live_tensors();
    plan_keeps_inputs_and_outputs_apart();
    plan_places_views_inside_their_parent();
    graph_rejects_view_past_parent();
    graph_deduplicates_kernels();
    graph_rejects_oversized_dispatch();
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
