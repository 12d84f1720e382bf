// SPDX-License-Identifier: Apache-2.0
/* GRN (see grn.h): push-constant mirrors of shaders/grn_stats.comp and grn_apply.comp, their graph nodes. */
#include "ops/grn.h"

#include "ops/op_util.h"

#include <stdio.h>

/* Mirrors the `p` block of shaders/grn_stats.comp. */
typedef struct grn_stats_push {
    uint32_t T, C;
    float eps;
} grn_stats_push;
VKVIT_PUSH_MIRROR(grn_stats_push, 3);

/* Mirrors the `p` block of shaders/grn_apply.comp. */
typedef struct grn_apply_push {
    uint32_t B, T, C;
} grn_apply_push;
VKVIT_PUSH_MIRROR(grn_apply_push, 3);

void vkvit__op_grn_residual(vkvit__graph *g, const char *name, uint32_t a, uint32_t gamma, uint32_t beta, uint32_t ls,
                            uint32_t x, uint32_t B, uint32_t T, uint32_t C, float eps) {
    if (g->error) return;
    char label[64];
    snprintf(label, sizeof label, "%s.stats", name);
    uint32_t shape[2] = {B, C};
    uint32_t nx = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, label, 2, shape);
    uint32_t wg = ops_row_wg(g->ctx);
    vkvit__kernel_desc ks = {
        .shader = ops_reduce_variant(g->ctx, VKVIT_SHADER_GRN_STATS_F32, VKVIT_SHADER_GRN_STATS_F32_SUBGROUP),
        .n_buffers = 2, .push_size = sizeof(grn_stats_push), .n_spec = 1, .spec = {wg},
    };
    grn_stats_push ps = {T, C, eps};
    vkvit__node_binding bs[2] = {rd(a), wr(nx)};
    vkvit__graph_node(g, label, "grn", &ks, bs, 2, &ps, sizeof ps, B, 1, 1);

    vkvit__kernel_desc ka = {.shader = VKVIT_SHADER_GRN_APPLY_F32_F32, .n_buffers = 6,
                             .push_size = sizeof(grn_apply_push), .n_spec = 2,
                             .spec = {ls != VKVIT_NONE, ops_elementwise_wg(g->ctx)}};
    grn_apply_push pa = {B, T, C};
    vkvit__node_binding ba[6] = {rd(a), rd(nx), rd(gamma), rd(beta), rd(or_dummy(ls, gamma)), rdwr(x)};
    const uint32_t groups = groups_for((uint64_t)B * T * C, ka.spec[1]);
    if (g->ctx->policy.packed_bindings)
        ops_packed_node(g, name, "grn", &ka, VKVIT_SHADER_GRN_APPLY_F32_F32_PACKED, ba, 6, &pa, sizeof pa, groups, 1, 1);
    else
        vkvit__graph_node(g, name, "grn", &ka, ba, 6, &pa, sizeof pa, groups, 1, 1);
}
