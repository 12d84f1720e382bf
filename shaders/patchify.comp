// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// im2col for a stride-P, kernel-P, padding-0 convolution on a channels-last image, so the patch embedding runs as
// a GEMM against the PyTorch Conv2d weight [C_out, C_in, P, P] viewed as [C_out, C_in*P*P]:
//   out[b*Np + py*Wp + px][c*P*P + ky*P + kx] = img[b][py*P + ky][px*P + kx][c]       img: (B, H, W, C_in)
// One invocation per run of P outputs that share (row, c, ky): the P values kx = 0 .. P - 1, consecutive in the
// output, every Cin-th in the image. Grid-stride loop over the B * Hp * Wp * Cin * P runs. (One invocation per
// element spent 1.9 ms of ViT-5-S/16's 120 on lavapipe, which runs each of its eight integer divisions as a scalar
// loop over the SIMD lanes; per run of P = 16 they are 16x fewer: 0.34 ms.)
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(local_size_x_id = 0) in;    // the host's ops_elementwise_wg: 256, or the device's limit below it

layout(binding = 0, std430) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 1, std430) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Push {
    uint B, H, W, Cin, P, Hp, Wp;
    uint total;                                       // B * Hp * Wp * Cin * P * P
} p;

void main() {
    const uint runs = p.total / p.P;                  // B * Hp * Wp * Cin * P runs of P outputs
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint r = gl_GlobalInvocationID.x; r < runs; r += stride) {
        const uint ky = r % p.P, rc = r / p.P;        // rc = row * Cin + c
        const uint c = rc % p.Cin, row = rc / p.Cin;
        const uint b = row / (p.Hp * p.Wp), tile = row % (p.Hp * p.Wp);
        const uint py = tile / p.Wp, px = tile % p.Wp;
        const uint src = ((b * p.H + py * p.P + ky) * p.W + px * p.P) * p.Cin + c;
        const uint dst = r * p.P;                     // = row * K + c * P * P + ky * P
        for (uint kx = 0; kx < p.P; kx++) data_d[dst + kx] = D_TYPE(float(data_a[src + kx * p.Cin]));
    }
}
