// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Mean over n_rows consecutive rows of each image (GAP readout over the patch tokens only):
//   D[b][c] = (1/n_rows) * sum_{r < n_rows} A[a_offset + b*a_batch_stride + r*C + c]
// One invocation per (b, c), fp32 accumulation.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(local_size_x = 64) in;

layout(binding = 0, std430) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 1, std430) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Push {
    uint B, n_rows, C, a_offset, a_batch_stride;
} p;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= p.B * p.C) return;
    const uint b = i / p.C, c = i % p.C;
    const uint base = p.a_offset + b * p.a_batch_stride + c;
    float s = 0.0;
    for (uint r = 0; r < p.n_rows; r++) s += float(data_a[base + r * p.C]);
    data_d[i] = D_TYPE(s / float(p.n_rows));
}
