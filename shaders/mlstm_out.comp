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

// TEXEL=1 (CPU devices with caps.texel_reads): the read-only inputs are uniform texel buffers (RGBA32F), which
// llvmpipe reads with SIMD gathers instead of a per-lane scalar loop (see gemm_cpu.comp); NAME_r(i) reads element i.
#if defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_0;
#define data_h_r(e) texelFetch(tex_0, int((e) >> 2))[(e) & 3u]
layout(binding = 1) uniform samplerBuffer tex_1;
#define data_st_r(e) texelFetch(tex_1, int((e) >> 2))[(e) & 3u]
layout(binding = 2) uniform samplerBuffer tex_2;
#define data_w_r(e) texelFetch(tex_2, int((e) >> 2))[(e) & 3u]
layout(binding = 3) uniform samplerBuffer tex_3;
#define data_bias_r(e) texelFetch(tex_3, int((e) >> 2))[(e) & 3u]
layout(binding = 4) uniform samplerBuffer tex_4;
#define data_skip_r(e) texelFetch(tex_4, int((e) >> 2))[(e) & 3u]
layout(binding = 5) uniform samplerBuffer tex_5;
#define data_a_r(e) texelFetch(tex_5, int((e) >> 2))[(e) & 3u]
layout(binding = 6) uniform samplerBuffer tex_6;
#define data_up_r(e) texelFetch(tex_6, int((e) >> 2))[(e) & 3u]
#else
layout(binding = 0, std430) readonly buffer H { float data_h[]; };       // [rows, E]
layout(binding = 1, std430) readonly buffer St { float data_st[]; };     // [B, E/G, 2] (SEED_GN)
layout(binding = 2, std430) readonly buffer W { float data_w[]; };       // [E] (SEED_GN)
layout(binding = 3, std430) readonly buffer Bi { float data_bias[]; };   // [E] (SEED_GN)
layout(binding = 4, std430) readonly buffer Sk { float data_skip[]; };   // [E]
layout(binding = 5, std430) readonly buffer A { float data_a[]; };       // [rows, E]
layout(binding = 6, std430) readonly buffer Up { float data_up[]; };     // [rows, 2E]
#define data_h_r(i) float(data_h[i])
#define data_st_r(i) float(data_st[i])
#define data_w_r(i) float(data_w[i])
#define data_bias_r(i) float(data_bias[i])
#define data_skip_r(i) float(data_skip[i])
#define data_a_r(i) float(data_a[i])
#define data_up_r(i) float(data_up[i])
#endif
layout(binding = 7, std430) writeonly buffer D { D_TYPE data_d[]; };     // [rows, E]

layout(push_constant) uniform Push {
    uint rows, S, E, G;
} p;

void main() {
    const uint n = p.rows * p.E;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        const uint row = i / p.E, c = i % p.E;
        float hn = data_h_r(i);
        if (SEED_GN) {
            const uint s = ((row / p.S) * (p.E / p.G) + c / p.G) * 2;
            hn = (hn - data_st_r(s)) * data_st_r(s + 1) * data_w_r(c) + data_bias_r(c);
        }
        const float z = data_up_r(row * 2 * p.E + p.E + c);
        data_d[i] = D_TYPE((hn + data_skip_r(c) * data_a_r(i)) * (z / (1.0 + exp(-z))));
    }
}
