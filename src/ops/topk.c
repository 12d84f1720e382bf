/* The classification readout node: softmax + top-K per image (shaders/topk.comp), after the classifier head. Its
 * output is an OUTPUT tensor of the graph, so the planner never aliases it and the recorder orders it after the
 * head's GEMM like any other node. */
#include "ops/topk.h"
#include "ops/op_util.h"

/* Mirrors the `p` block of shaders/topk.comp. */
typedef struct topk_push {
    uint32_t rows, n, k;
} topk_push;

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
    topk_push p = {B, N, K};
    vkvit__node_binding b[2] = {rd(logits), wr(out)};
    vkvit__graph_node(g, name, "top_k", &kd, b, 2, &p, sizeof p, VKVIT_CEIL_DIV(B, 64u), 1, 1);
    return g->error ? VKVIT_NONE : out;
}
