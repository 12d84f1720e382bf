// SPDX-License-Identifier: Apache-2.0
/* The classification readout node: softmax + top-K per image (shaders/topk.comp), after the classifier head. Its
 * output is an OUTPUT tensor of the graph, so the planner never aliases it and the recorder orders it after the
 * head's GEMM like any other node. */
#include "ops/topk.h"
#include "ops/op_util.h"

/* Mirrors the `p` block of shaders/topk.comp. */
typedef struct topk_push {
    uint32_t rows, n, k, rows_per_wg;
} topk_push;

/* Upper bound of one invocation's loop trips per row of shaders/topk.comp (64 invocations): the max and sum loops
 * (n / 64 each), the insertion into its own list (k per column at worst), the k merge rounds and, per workgroup
 * reduction, the combining loop over the subgroups' partials (subgroup variant) or the tree's 6 steps. */
static uint64_t topk_trips_per_row(uint32_t n, uint32_t k, uint32_t reduce_trips) {
    const uint64_t cols = (n + 63) / 64;
    return 2 * cols + cols * k + (uint64_t)k * (1 + 2 * reduce_trips) + 2 * reduce_trips + 1;
}

uint32_t vkvit__op_topk(vkvit__graph *g, const char *name, uint32_t logits, uint32_t B, uint32_t N, uint32_t K) {
    if (g->error) return VKVIT_NONE;
    if (K == 0 || K > VKVIT_MAX_TOP_K || K > N)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT,
                                 "top_k = %u must be between 1 and min(VKVIT_MAX_TOP_K = %u, num_classes = %u)", K,
                                 VKVIT_MAX_TOP_K, N);
    /* [2, B, K] words: plane 0 the class indices, plane 1 the probabilities. */
    uint32_t shape[3] = {2, B, K};
    uint32_t out = vkvit__graph_tensor(g, VKVIT_TENSOR_OUTPUT, name, 3, shape);
    vkvit__kernel_desc kd = {.shader = ops_reduce_variant(g->ctx, VKVIT_SHADER_TOPK_F32_U32,
                                                          VKVIT_SHADER_TOPK_F32_U32_SUBGROUP),
                             .n_buffers = 2, .push_size = sizeof(topk_push)};
    /* 64 rows per workgroup, fewer on llvmpipe (a driver fact, whatever kernels the policy takes) where one
     * invocation's loop trips would pass gallivm's loop limiter, which silently leaves every loop there. */
    uint32_t rows_per_wg = 64;
    if (g->ctx->caps.cpu_device) {
        const uint32_t sg = g->ctx->caps.subgroup_size_min ? g->ctx->caps.subgroup_size_min : g->ctx->caps.subgroup_size;
        const bool subgroup = kd.shader == VKVIT_SHADER_TOPK_F32_U32_SUBGROUP;
        const uint64_t per_row = topk_trips_per_row(N, K, subgroup ? VKVIT_CEIL_DIV(64u, VKVIT_MAX(sg, 1u)) - 1 : 6);
        if (per_row > VKVIT_LLVMPIPE_LOOP_BUDGET)
            return vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "top-K over %u classes (k %u) would run about %llu "
                                     "loop trips per row in one invocation, past llvmpipe's limit of %u", N, K,
                                     (unsigned long long)per_row, VKVIT_LLVMPIPE_LOOP_BUDGET);
        rows_per_wg = (uint32_t)VKVIT_MIN(64ull, VKVIT_LLVMPIPE_LOOP_BUDGET / per_row);
    }
    rows_per_wg = VKVIT_MAX(rows_per_wg, VKVIT_CEIL_DIV(B, 65535u)); /* at most 65535 workgroups */
    topk_push p = {B, N, K, rows_per_wg};
    vkvit__node_binding b[2] = {rd(logits), wr(out)};
    vkvit__graph_node(g, name, "top_k", &kd, b, 2, &p, sizeof p, VKVIT_CEIL_DIV(B, rows_per_wg), 1, 1);
    return g->error ? VKVIT_NONE : out;
}
