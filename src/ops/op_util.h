// SPDX-License-Identifier: Apache-2.0
/* Helpers shared by the op builders in src/ops (included by the .c files only, never by a header): node
 * bindings, grid sizes, and the workgroup width of the row reductions. */
#ifndef VKVIT_OPS_OP_UTIL_H
#define VKVIT_OPS_OP_UTIL_H

#include "graph/graph.h"

#include <stdio.h>

static inline vkvit__node_binding rd(uint32_t t) { return (vkvit__node_binding){t, VKVIT_READ}; }
static inline vkvit__node_binding wr(uint32_t t) { return (vkvit__node_binding){t, VKVIT_WRITE}; }
static inline vkvit__node_binding rdwr(uint32_t t) { return (vkvit__node_binding){t, VKVIT_READ | VKVIT_WRITE}; }

/* A new 2-D activation labelled "<name>.<part>" (an op's intermediate, e.g. "blocks.3.mixer.scores"). */
static inline uint32_t ops_intermediate(vkvit__graph *g, const char *name, const char *part, uint32_t rows,
                                        uint32_t cols) {
    char label[64];
    snprintf(label, sizeof label, "%s.%s", name, part);
    const uint32_t shape[2] = {rows, cols};
    return vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, label, 2, shape);
}

/* The same with `dtype` elements (fp16 intermediates). */
static inline uint32_t ops_intermediate_typed(vkvit__graph *g, const char *name, const char *part, vkvit__dtype dtype,
                                              uint32_t rows, uint32_t cols) {
    char label[64];
    snprintf(label, sizeof label, "%s.%s", name, part);
    const uint32_t shape[2] = {rows, cols};
    return vkvit__graph_tensor_typed(g, VKVIT_TENSOR_ACTIVATION, dtype, label, 2, shape);
}

/* Any valid tensor for a binding the kernel ignores (a disabled bias, say): the node still needs a buffer. */
static inline uint32_t or_dummy(uint32_t t, uint32_t fallback) { return t == VKVIT_NONE ? fallback : t; }

/* llvmpipe leaves every loop of a shader invocation once 65535 iterations have run in total (gallivm's loop
 * limiter), silently: kernels whose trips grow with the work one invocation takes (mlstm, top-K) keep their
 * estimates (loop trips of one invocation, upper bounds) under this on CPU devices. */
#define VKVIT_LLVMPIPE_LOOP_BUDGET 60000u

/* The workgroup of the element-wise grid-stride kernels (patchify, copy_rows, glu, grn_apply): 256 invocations, or
 * the device's limit where it is lower (Vulkan guarantees 128). */
static inline uint32_t ops_elementwise_wg(const vkvit_ctx *ctx) {
    return VKVIT_MIN(256u, VKVIT_MIN(ctx->caps.max_workgroup_invocations, ctx->caps.max_workgroup_size[0]));
}

/* Workgroups for n items at per_group each, at least 1 and at most 65535: the kernels grid-stride over the rest. */
static inline uint32_t groups_for(uint64_t n, uint32_t per_group) {
    uint64_t g = (n + per_group - 1) / per_group;
    return (uint32_t)(g == 0 ? 1 : g > 65535 ? 65535 : g);
}

/* Invocations of a workgroup that reduces one row (shaders/reduce.glsl users: norm, GRN, the mLSTM GroupNorm) or
 * keeps one row per invocation (softmax_rows): one 8-lane SIMD vector on CPU devices (no idle lanes, a barrier is
 * one coroutine switch), 64 elsewhere. */
static inline uint32_t ops_row_wg(const vkvit_ctx *ctx) { return ctx->policy.cpu_kernels ? 8 : 64; }

/* The variant of a shader that includes shaders/reduce.glsl: `subgroup` (built with SUBGROUP=1, subgroup
 * arithmetic) where the device has it and it is not disabled, else `tree` (the shared-memory tree). */
static inline vkvit_shader_id ops_reduce_variant(const vkvit_ctx *ctx, vkvit_shader_id tree, vkvit_shader_id subgroup) {
    return ctx->policy.subgroup_reductions ? subgroup : tree;
}

/* Marks bindings [0, n) of `kd` as RGBA32F uniform texel buffers when the device reads those faster (policy.texel_reads,
 * CPU devices; the shader's *_texel variant declares them as samplerBuffers). Returns whether it did. */
static inline bool ops_texel_inputs(const vkvit_ctx *ctx, vkvit__kernel_desc *kd, uint32_t n) {
    if (!ctx->policy.texel_reads) return false;
    for (uint32_t i = 0; i < n; i++) kd->texel_format[i] = VK_FORMAT_R32G32B32A32_SFLOAT;
    return true;
}

#endif /* VKVIT_OPS_OP_UTIL_H */
