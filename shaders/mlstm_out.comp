#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// mLSTM cell epilogue before proj_down (SPEC 7.1 / 7.2), elementwise over [rows, E]:
//   hn  = (h - mean[b, c/G]) * rstd[b, c/G] * w[c] + bias[c]     SEED_GN: the seed's sequence-wide GroupNorm
//       = h                                                      else: h already normalised (NX-AI per-token norm)
//   out = (hn + skip[c] * a[row, c]) * silu(z[row, c])           z = up[row, E + c] (the second half of proj_up)
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(constant_id = 0) const bool SEED_GN = true;
layout(local_size_x = 256) in;

layout(binding = 0, std430) readonly buffer H { float data_h[]; };       // [rows, E]
layout(binding = 1, std430) readonly buffer St { float data_st[]; };     // [B, E/G, 2] (SEED_GN)
layout(binding = 2, std430) readonly buffer W { float data_w[]; };       // [E] (SEED_GN)
layout(binding = 3, std430) readonly buffer Bi { float data_bias[]; };   // [E] (SEED_GN)
layout(binding = 4, std430) readonly buffer Sk { float data_skip[]; };   // [E]
layout(binding = 5, std430) readonly buffer A { float data_a[]; };       // [rows, E]
layout(binding = 6, std430) readonly buffer Up { float data_up[]; };     // [rows, 2E]
layout(binding = 7, std430) writeonly buffer D { D_TYPE data_d[]; };     // [rows, E]

layout(push_constant) uniform Push {
    uint rows, S, E, G;
} p;

void main() {
    const uint n = p.rows * p.E;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        const uint row = i / p.E, c = i % p.E;
        float hn = data_h[i];
        if (SEED_GN) {
            const uint s = ((row / p.S) * (p.E / p.G) + c / p.G) * 2;
            hn = (hn - data_st[s]) * data_st[s + 1] * data_w[c] + data_bias[c];
        }
        const float z = data_up[row * 2 * p.E + p.E + c];
        data_d[i] = D_TYPE((hn + data_skip[c] * data_a[i]) * (z / (1.0 + exp(-z))));
    }
}
