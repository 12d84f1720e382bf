// SPDX-License-Identifier: Apache-2.0
/* Gated activations (see glu.h): the push-constant mirror of shaders/glu.comp and its graph node. */
#include "ops/glu.h"

#include "ops/op_util.h"

/* Mirrors the `p` block of shaders/glu.comp. */
typedef struct glu_push {
    uint32_t rows, Hd;
} glu_push;
VKVIT_PUSH_MIRROR(glu_push, 2);

uint32_t vkvit__op_glu(vkvit__graph *g, const char *name, uint32_t a, vkvit__glu_kind kind) {
    if (g->error) return VKVIT_NONE;
    const vkvit__tensor t = vkvit__graph_get(g, a);
    uint32_t C2 = t.shape[t.ndim - 1], rows = (uint32_t)(vkvit__numel(&t) / C2);
    if (C2 % 2)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "glu '%s': %u channels cannot be halved", name, C2);
    uint32_t shape[2] = {rows, C2 / 2};
    uint32_t h = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2, shape);
    vkvit__kernel_desc kd = {.shader = VKVIT_SHADER_GLU_F32_F32, .n_buffers = 2, .push_size = sizeof(glu_push),
                             .n_spec = 2, .spec = {(uint32_t)kind, ops_elementwise_wg(g->ctx)}};
    glu_push p = {rows, C2 / 2};
    vkvit__node_binding b[2] = {rd(a), wr(h)};
    vkvit__graph_node(g, name, "glu", &kd, b, 2, &p, sizeof p, groups_for((uint64_t)rows * (C2 / 2), kd.spec[1]), 1, 1);
    return h;
}
