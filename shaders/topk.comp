// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Classification readout: softmax over each row of logits and its K most probable classes.
//
//   logits [rows, n] -> out = classes uint32 [rows, k] followed by probabilities float [rows, k]
//   m = max_j x_j,  l = sum_j exp(x_j - m),  p_j = exp(x_j - m) / l          (max-subtracted: no overflow)
//
// Order: most probable first; equal logits go to the lower class index. A NaN logit ranks below every number
// (as -inf, lowest index first), so the classes are always valid indices; its row's probabilities are NaN (the
// sum l is), which callers report as not a number.
//
// Work split (the host dispatches ceil(rows / rows_per_wg) workgroups of 64): workgroup w takes rows_per_wg rows one
// after another, all 64 invocations on each row. rows_per_wg is 64 on GPUs; on llvmpipe the host lowers it so that
// one invocation's loop trips stay under gallivm's loop limiter (src/ops/op_util.h, VKVIT_LLVMPIPE_LOOP_BUDGET: at
// subgroups of 4 the 16-subgroup reductions made 64 rows of K = 32 exceed it, and the last rows came out wrong). Invocation i reads columns i, i + 64, ...: the max and the sum are
// workgroup reductions (shaders/reduce.glsl: subgroupMax / subgroupAdd where the device has them, the shared-memory
// tree otherwise), and each invocation keeps a sorted list of its own best k (a value enters only when strictly
// greater than the k-th and goes behind equal values already listed, i.e. behind lower indices). The k winners
// are then merged in k rounds: each round the largest head value (reduce_max), and among the heads holding it
// the lowest class index (reduce_max of -index; exact while n <= 2^24), whose owner moves to its next entry.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

#define MAX_K 32                                    // VKVIT_MAX_TOP_K
#define WG 64
#define REDUCE_WG WG
#define REDUCE_T float
#include "reduce.glsl"

layout(local_size_x = WG) in;

layout(binding = 0, std430) readonly buffer A { float data_a[]; };
layout(binding = 1, std430) writeonly buffer D { uint data_d[]; };   // classes, then probability bit patterns

layout(push_constant) uniform Push {
    uint rows, n, k, rows_per_wg;
} p;

const float NEG_BIG = -3.402823466e38;              // -FLT_MAX

void main() {
    const float NEG_INF = uintBitsToFloat(0xff800000u); // an exhausted list's head: below every logit
    const uint tid = gl_LocalInvocationID.x;
    const uint r0 = gl_WorkGroupID.x * p.rows_per_wg, r1 = min(p.rows, r0 + p.rows_per_wg);
    const uint probs = p.rows * p.k;
    [[dont_unroll]] for (uint row = r0; row < r1; row++) {   // uniform across the workgroup
        const uint base = row * p.n;
        float m = NEG_BIG;
        [[dont_unroll]] for (uint j = tid; j < p.n; j += WG) m = max(m, data_a[base + j]);
        m = reduce_max(m);

        float top_v[MAX_K];
        uint top_i[MAX_K];
        uint filled = 0;
        float l = 0.0;
        [[dont_unroll]] for (uint j = tid; j < p.n; j += WG) {
            const float raw = data_a[base + j];
            l += exp(raw - m);
            // NaN by its bits (not isnan: a compiler may assume no NaNs) ranks as -inf
            const float x = (floatBitsToUint(raw) & 0x7fffffffu) > 0x7f800000u ? NEG_INF : raw;
            if (filled == p.k && !(x > top_v[p.k - 1])) continue;
            uint pos = filled < p.k ? filled : p.k - 1;
            [[dont_unroll]] while (pos > 0 && top_v[pos - 1] < x) {
                top_v[pos] = top_v[pos - 1];
                top_i[pos] = top_i[pos - 1];
                pos--;
            }
            top_v[pos] = x;
            top_i[pos] = j;
            if (filled < p.k) filled++;
        }
        const float inv = 1.0 / reduce_sum(l);

        uint head = 0;
        [[dont_unroll]] for (uint t = 0; t < p.k; t++) {
            const bool live = head < filled;
            const float v = live ? top_v[head] : NEG_INF;
            const float best = reduce_max(v);
            const uint win = uint(-reduce_max(live && v == best ? -float(top_i[head]) : NEG_INF));
            if (live && top_i[head] == win) head++;
            if (tid == 0) {
                data_d[row * p.k + t] = win;
                data_d[probs + row * p.k + t] = floatBitsToUint(exp(best - m) * inv);
            }
        }
    }
}
