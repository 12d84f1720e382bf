#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// im2col for a stride-P, kernel-P, padding-0 convolution on a channels-last image, so the patch embedding runs as
// a GEMM against the PyTorch Conv2d weight [C_out, C_in, P, P] viewed as [C_out, C_in*P*P]:
//   out[b*Np + py*Wp + px][c*P*P + ky*P + kx] = img[b][py*P + ky][px*P + kx][c]       img: (B, H, W, C_in)
// One invocation per output element, grid-stride loop.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(local_size_x = 256) in;

layout(binding = 0, std430) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 1, std430) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Push {
    uint B, H, W, Cin, P, Hp, Wp;
    uint total;                                       // B * Hp * Wp * Cin * P * P
} p;

void main() {
    const uint K = p.Cin * p.P * p.P;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.total; i += stride) {
        const uint row = i / K, k = i % K;
        const uint b = row / (p.Hp * p.Wp), tile = row % (p.Hp * p.Wp);
        const uint py = tile / p.Wp, px = tile % p.Wp;
        const uint c = k / (p.P * p.P), kk = k % (p.P * p.P);
        const uint ky = kk / p.P, kx = kk % p.P;
        const uint y = py * p.P + ky, x = px * p.P + kx;
        data_d[i] = D_TYPE(float(data_a[((b * p.H + y) * p.W + x) * p.Cin + c]));
    }
}
