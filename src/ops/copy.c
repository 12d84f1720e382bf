// SPDX-License-Identifier: Apache-2.0
/* Token copies (see copy.h): push-constant mirrors of shaders/patchify.comp, copy_rows.comp, mean_rows.comp, and
 * their graph nodes. */
#include "ops/copy.h"

#include "ops/op_util.h"

/* ------------------------------------------------------------------------------------------------------------
 * Patchify (shaders/patchify.comp)
 * ------------------------------------------------------------------------------------------------------------ */

/* Mirrors the `p` block of shaders/patchify.comp. */
typedef struct patchify_push {
    uint32_t B, H, W, Cin, P, Hp, Wp, total;
} patchify_push;
VKVIT_PUSH_MIRROR(patchify_push, 8);

uint32_t vkvit__op_patchify(vkvit__graph *g, const char *name, uint32_t img, uint32_t B, uint32_t H, uint32_t W,
                            uint32_t Cin, uint32_t P) {
    if (g->error) return VKVIT_NONE;
    uint32_t Hp = H / P, Wp = W / P;
    uint64_t total = (uint64_t)B * Hp * Wp * Cin * P * P;
    if (total > UINT32_MAX)
        return vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "patchify '%s': %llu elements exceed 2^32", name,
                                 (unsigned long long)total);
    uint32_t shape[2] = {B * Hp * Wp, Cin * P * P};
    uint32_t cols = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2, shape);
    const uint32_t wg = ops_elementwise_wg(g->ctx);
    vkvit__kernel_desc kd = {.shader = VKVIT_SHADER_PATCHIFY_F32_F32, .n_buffers = 2, .push_size = sizeof(patchify_push),
                             .n_spec = 1, .spec = {wg}};
    patchify_push p = {B, H, W, Cin, P, Hp, Wp, (uint32_t)total};
    vkvit__node_binding b[2] = {rd(img), wr(cols)};
    vkvit__graph_node(g, name, "patchify", &kd, b, 2, &p, sizeof p, groups_for(total / P, wg), 1, 1); /* runs of P */
    return cols;
}

/* ------------------------------------------------------------------------------------------------------------
 * Row copies and means
 * ------------------------------------------------------------------------------------------------------------ */

/* Mirrors the `p` block of shaders/copy_rows.comp. */
typedef struct copy_push {
    uint32_t B, n_rows, C;
    uint32_t a_offset, a_row_stride, a_batch_stride;
    uint32_t d_offset, d_row_stride, d_batch_stride;
} copy_push;
VKVIT_PUSH_MIRROR(copy_push, 9);

void vkvit__op_copy_rows(vkvit__graph *g, const char *name, vkvit__mat src, vkvit__mat dst, uint32_t B,
                         uint32_t n_rows, uint32_t C) {
    if (g->error) return;
    const uint32_t wg = ops_elementwise_wg(g->ctx);
    vkvit__kernel_desc kd = {.shader = VKVIT_SHADER_COPY_ROWS_F32_F32, .n_buffers = 2, .push_size = sizeof(copy_push),
                             .n_spec = 1, .spec = {wg}};
    copy_push p = {B, n_rows, C, src.offset, src.stride, src.batch_stride, dst.offset, dst.stride, dst.batch_stride};
    vkvit__node_binding b[2] = {rd(src.t), rdwr(dst.t)};
    vkvit__graph_node(g, name, "copy", &kd, b, 2, &p, sizeof p, groups_for((uint64_t)B * n_rows * C, wg), 1, 1);
}

/* Mirrors the `p` block of shaders/mean_rows.comp. */
typedef struct mean_push {
    uint32_t B, n_rows, C, a_offset, a_batch_stride;
} mean_push;
VKVIT_PUSH_MIRROR(mean_push, 5);

uint32_t vkvit__op_mean_rows(vkvit__graph *g, const char *name, vkvit__mat src, uint32_t B, uint32_t n_rows, uint32_t C) {
    if (g->error) return VKVIT_NONE;
    uint32_t shape[2] = {B, C};
    uint32_t y = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, name, 2, shape);
    vkvit__kernel_desc kd = {.shader = VKVIT_SHADER_MEAN_ROWS_F32_F32, .n_buffers = 2, .push_size = sizeof(mean_push)};
    mean_push p = {B, n_rows, C, src.offset, src.batch_stride};
    vkvit__node_binding b[2] = {rd(src.t), wr(y)};
    vkvit__graph_node(g, name, "pool", &kd, b, 2, &p, sizeof p, VKVIT_CEIL_DIV(B * C, 64u), 1, 1);
    return y;
}
