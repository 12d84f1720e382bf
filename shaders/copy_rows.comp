// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Strided row copy, batched: for b < B, r < n_rows, c < C:
//   D[d_offset + b*d_batch_stride + r*d_row_stride + c] = A[a_offset + b*a_batch_stride + r*a_row_stride + c]
// With a_batch_stride = 0 it broadcasts learned tokens (CLS, registers) into every image of the batch.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(local_size_x_id = 0) in;    // the host's ops_elementwise_wg: 256, or the device's limit below it

layout(binding = 0, std430) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 1, std430) buffer D { D_TYPE data_d[]; };   // read-write: other rows of D are left untouched

layout(push_constant) uniform Push {
    uint B, n_rows, C;
    uint a_offset, a_row_stride, a_batch_stride;
    uint d_offset, d_row_stride, d_batch_stride;
} p;

void main() {
    const uint total = p.B * p.n_rows * p.C;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
        const uint c = i % p.C, r = (i / p.C) % p.n_rows, b = i / (p.C * p.n_rows);
        data_d[p.d_offset + b * p.d_batch_stride + r * p.d_row_stride + c] =
            D_TYPE(float(data_a[p.a_offset + b * p.a_batch_stride + r * p.a_row_stride + c]));
    }
}
