// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// GRN statistics (ConvNeXt-V2, docs/math.md 2.5), step 1 of 2: for each image b
//   g[c]    = sqrt( sum_t x[b,t,c]^2 )                 L2 over the token axis
//   nx[b,c] = g[c] / ( mean_c' g[c'] + 1e-6 )          eps added to the channel mean
// One workgroup per image: each invocation owns channels c = tid, tid + WG, ...; the channel mean is a
// workgroup reduction (shaders/reduce.glsl). x: (B, T, C) -> nx: (B, C).
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

#define REDUCE_WG WG
#include "reduce.glsl"

layout(binding = 0, std430) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 1, std430) writeonly buffer D { float data_d[]; };

layout(push_constant) uniform Push {
    uint T, C;
    float eps;
} p;

void main() {
    const uint tid = gl_LocalInvocationID.x, b = gl_WorkGroupID.x;
    const uint base = b * p.T * p.C;
    float gsum = 0.0;
    for (uint c = tid; c < p.C; c += WG) {
        float s = 0.0;
        for (uint t = 0; t < p.T; t++) {
            const float v = float(data_a[base + t * p.C + c]);
            s += v * v;
        }
        gsum += sqrt(s);
    }
    const float denom = reduce_sum(gsum) / float(p.C) + p.eps;
    for (uint c = tid; c < p.C; c += WG) {
        float s = 0.0;
        for (uint t = 0; t < p.T; t++) {
            const float v = float(data_a[base + t * p.C + c]);
            s += v * v;
        }
        data_d[b * p.C + c] = sqrt(s) / denom;
    }
}
