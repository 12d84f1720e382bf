// SPDX-License-Identifier: Apache-2.0
/* Helpers shared by the op builders in src/ops (included by the .c files only, never by a header): node
 * bindings, grid sizes, and the workgroup width of the row reductions. */
#ifndef VKVIT_OPS_OP_UTIL_H
#define VKVIT_OPS_OP_UTIL_H

#include "graph/graph.h"
#include "policy/policy.h"

#include <stdio.h>
#include <string.h>

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

/* Packed bindings (policy.packed_bindings, shaders/packed.glsl): a node of the packed variant `packed_shader` of
 * kernel `kd`, binding its n logical tensors through the arena and weights slots. The element bases follow the
 * push block (the recorder fills them: src/graph/record.c), and bit i of spec constant 15 says that tensor i is a
 * weight. Refuses with a sentence a tensor in another buffer, a written weight, a texel binding, or a push block or
 * spec constants with no room. */
_Static_assert(VKVIT_POLICY_KERNEL_BUFFERS == VKVIT_MAX_BINDINGS, "policy.h's count of a kernel's buffers");
#define VKVIT_PACKED_SPEC 15u
static inline uint32_t ops_packed_node(vkvit__graph *g, const char *name, const char *kind,
                                       const vkvit__kernel_desc *kd, vkvit_shader_id packed_shader,
                                       const vkvit__node_binding *b, uint32_t n, const void *push, uint32_t push_size,
                                       uint32_t gx, uint32_t gy, uint32_t gz) {
    if (g->error) return VKVIT_NONE;
    if (push_size + 4 * n > VKVIT_MAX_PUSH || kd->n_spec > VKVIT_PACKED_SPEC || n > VKVIT_MAX_BINDINGS)
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "'%s': no room for packed bindings (%u push "
                                 "bytes, %u spec constants, %u tensors)", name, push_size, kd->n_spec, n);
    vkvit__kernel_desc d = *kd;
    uint32_t in_weights = 0;
    for (uint32_t i = 0; i < n; i++) {
        const vkvit__tensor t = vkvit__graph_get(g, b[i].tensor), root = vkvit__graph_get(g, vkvit__graph_root(g, b[i].tensor, NULL));
        const bool weight = root.kind == VKVIT_TENSOR_WEIGHT;
        if (root.kind == VKVIT_TENSOR_WEIGHT_F16 || root.kind == VKVIT_TENSOR_EXTERNAL || (weight && b[i].access & VKVIT_WRITE) ||
            t.dtype != VKVIT_ELEM_F32 || kd->texel_format[i] != VK_FORMAT_UNDEFINED)
            return vkvit__graph_fail(g, VKVIT_ERROR_UNSUPPORTED, "'%s': the packed-bindings kernel (the device's %u "
                                     "storage buffers per stage) cannot bind '%s' (%s %s, not an fp32 tensor of the "
                                     "arena or a read weight)", name, g->ctx->caps.max_storage_buffers_per_stage,
                                     t.name, vkvit__dtype_name(t.dtype), b[i].access & VKVIT_WRITE ? "written" : "read");
        in_weights |= (uint32_t)weight << i;
    }
    d.shader = packed_shader;
    d.packed_slots = VKVIT_PACKED_SLOTS;
    d.push_size = push_size + 4 * n;
    for (uint32_t i = kd->n_spec; i < VKVIT_PACKED_SPEC; i++) d.spec[i] = 0; /* ids the shader does not declare */
    d.spec[VKVIT_PACKED_SPEC] = in_weights;
    d.n_spec = VKVIT_PACKED_SPEC + 1;
    uint8_t data[VKVIT_MAX_PUSH] = {0};
    memcpy(data, push, push_size);
    return vkvit__graph_node(g, name, kind, &d, b, n, data, d.push_size, gx, gy, gz);
}

#endif /* VKVIT_OPS_OP_UTIL_H */
