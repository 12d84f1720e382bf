// SPDX-License-Identifier: Apache-2.0
// ---------------------------------------------------------------------------------------------------------------
// Workgroup-wide reductions, the one reduction every statistics shader uses (norm, GRN, the seed's GroupNorm, the
// top-K softmax).
//
//   REDUCE_T reduce_sum(REDUCE_T v)    every invocation passes its partial sum and gets the workgroup total back
//   REDUCE_T reduce_max(REDUCE_T v)    the same with max (componentwise for vectors)
//
// The includer defines, before `#include "reduce.glsl"`:
//   REDUCE_WG   the workgroup size (a constant or specialization constant; a power of two for the tree)
//   REDUCE_T    float or vec2 (vec2: two sums at once, e.g. sum and sum of squares)
// Two variants of each including shader are built (shaders/variants.cmake), chosen by the host from
// vkvit__caps.subgroup_in_use (ops_reduce_variant, src/ops/op_util.h):
//   SUBGROUP=0  shared-memory tree (log2 WG barrier steps): the original reduction, bit for bit
//   SUBGROUP=1  subgroupAdd (subgroupMax) within each subgroup, then one shared-memory slot per subgroup,
//               combined in subgroup order by every invocation (the same order in all, so all get the same value).
//               Partial subgroups (a workgroup smaller than, or not a multiple of, the subgroup size) are exact:
//               subgroupAdd sums the active invocations and gl_NumSubgroups counts the partial one.
// The subgroup variant declares GroupNonUniformArithmetic, so it must only be created where the device reports
// VK_SUBGROUP_FEATURE_ARITHMETIC_BIT for compute (a capability in a module is invalid even in dead code; that is
// why this is a build-time define and not a specialization constant). Statistics stay fp32 either way; only the
// order of the additions differs between the variants.
// Call from uniform control flow (it contains barriers). It ends with a barrier, so it can be called again at once.
// ---------------------------------------------------------------------------------------------------------------
#ifndef VKVIT_REDUCE_GLSL
#define VKVIT_REDUCE_GLSL

#ifndef SUBGROUP
#define SUBGROUP 0
#endif
#ifndef REDUCE_T
#define REDUCE_T float
#endif

#if SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

shared REDUCE_T red_sh[REDUCE_WG];

const uint REDUCE_ADD = 0, REDUCE_MAX = 1;

REDUCE_T reduce_combine(REDUCE_T a, REDUCE_T b, const uint op) { return op == REDUCE_MAX ? max(a, b) : a + b; }

REDUCE_T reduce_op(REDUCE_T v, const uint op) {
#if SUBGROUP
    const REDUCE_T s = op == REDUCE_MAX ? subgroupMax(v) : subgroupAdd(v);
    if (subgroupElect()) red_sh[gl_SubgroupID] = s;
    barrier();
    REDUCE_T r = red_sh[0];
    for (uint i = 1; i < gl_NumSubgroups; i++) r = reduce_combine(r, red_sh[i], op);
#else
    const uint tid = gl_LocalInvocationID.x;
    red_sh[tid] = v;
    barrier();
    for (uint s = REDUCE_WG / 2; s > 0; s >>= 1) {
        if (tid < s) red_sh[tid] = reduce_combine(red_sh[tid], red_sh[tid + s], op);
        barrier();
    }
    const REDUCE_T r = red_sh[0];
#endif
    barrier();                                        // everyone has read the result before red_sh is reused
    return r;
}

REDUCE_T reduce_sum(REDUCE_T v) { return reduce_op(v, REDUCE_ADD); }
REDUCE_T reduce_max(REDUCE_T v) { return reduce_op(v, REDUCE_MAX); }

#endif
