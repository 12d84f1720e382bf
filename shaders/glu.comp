// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Gated MLP activations between layer1 and layer2 (docs/math.md 4.1): a [rows, 2*Hd] -> h [rows, Hd], per row
//   MODE 0 glu:     h[c] = a[c] * sigmoid(a[Hd + c])        (F.glu: the gate is the SECOND half)
//   MODE 1 swiglu:  h[c] = silu(a[c]) * a[Hd + c]           (chunk(2) -> (u, g); g * silu(u): SiLU on the FIRST half)
// sigmoid(x) = 1 / (1 + exp(-x)), silu(x) = x / (1 + exp(-x)) as in activations.glsl. Grid-stride loop over
// rows * Hd outputs, so any size works with a capped grid.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(constant_id = 0) const uint MODE = 0;        // 0 glu, 1 swiglu

layout(local_size_x_id = 1) in;    // the host's ops_elementwise_wg: 256, or the device's limit below it

layout(binding = 0, std430) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 1, std430) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Push {
    uint rows, Hd;
} p;

void main() {
    const uint total = p.rows * p.Hd;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
        const uint r = i / p.Hd, c = i % p.Hd;
        const float first = float(data_a[r * 2u * p.Hd + c]);
        const float second = float(data_a[r * 2u * p.Hd + p.Hd + c]);
        float h;
        if (MODE == 0u) h = first * (1.0 / (1.0 + exp(-second)));
        else h = second * (first / (1.0 + exp(-first)));
        data_d[i] = D_TYPE(h);
    }
}
