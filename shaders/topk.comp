#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Classification readout: softmax over each row of logits and its K most probable classes.
//
//   logits [rows, n] -> out = classes uint32 [rows, k] followed by probabilities float [rows, k]
//   m = max_j x_j,  l = sum_j exp(x_j - m),  p_j = exp(x_j - m) / l          (max-subtracted: no overflow)
//
// Order: most probable first; equal logits go to the lower class index. One invocation per row, two passes over
// it: the max, then the sum with an insertion into a sorted list of the best k (a new value enters only when
// strictly greater than the k-th, and is placed behind every equal value already listed, i.e. behind lower
// indices). O(n) reads per row plus O(k) per insertion; a row of 1000 logits is a few microseconds, far below the
// network before it, so the simple serial form is kept.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

#define MAX_K 32                                    // VKVIT_MAX_TOP_K

layout(local_size_x = 64) in;

layout(binding = 0, std430) readonly buffer A { float data_a[]; };
layout(binding = 1, std430) writeonly buffer D { uint data_d[]; };   // classes, then probability bit patterns

layout(push_constant) uniform Push {
    uint rows, n, k;
} p;

const float NEG_BIG = -3.402823466e38;              // -FLT_MAX

void main() {
    const uint row = gl_GlobalInvocationID.x;
    if (row >= p.rows) return;
    const uint base = row * p.n;
    float m = NEG_BIG;
    [[dont_unroll]] for (uint j = 0; j < p.n; j++) m = max(m, data_a[base + j]);

    float top_v[MAX_K];
    uint top_i[MAX_K];
    uint filled = 0;
    float l = 0.0;
    [[dont_unroll]] for (uint j = 0; j < p.n; j++) {
        const float x = data_a[base + j];
        l += exp(x - m);
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
    const float inv = 1.0 / l;
    const uint probs = p.rows * p.k;
    [[dont_unroll]] for (uint t = 0; t < p.k; t++) {
        data_d[row * p.k + t] = top_i[t];
        data_d[probs + row * p.k + t] = floatBitsToUint(exp(top_v[t] - m) * inv);
    }
}
