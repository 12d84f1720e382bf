#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// The seed's outnorm statistics (SPEC 7.1 quirk 6): nn.GroupNorm(NP, E) on the cell output seen as [B, E, S], so
// group g (channels G*g .. G*g+G-1) of image b takes its mean and biased variance over G channels x ALL S tokens:
//   stats[(b*NP + g)*2 + 0] = mean,  stats[(b*NP + g)*2 + 1] = rsqrt(var + eps)
// This is the second pass the chunked scan needs: no token is final before the whole sequence is scanned.
// Two passes over the data (mean, then squared deviations) in fp32. One workgroup per (g, b).
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

#define REDUCE_WG WG
#include "reduce.glsl"

// TEXEL=1 (CPU devices with caps.texel_reads): the read-only inputs are uniform texel buffers (RGBA32F), which
// llvmpipe reads with SIMD gathers instead of a per-lane scalar loop (see gemm_cpu.comp); NAME_r(i) reads element i.
#if defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_0;
#define data_h_r(e) texelFetch(tex_0, int((e) >> 2))[(e) & 3u]
#else
layout(binding = 0, std430) readonly buffer H { float data_h[]; };       // [B*S, E]
#define data_h_r(i) float(data_h[i])
#endif
layout(binding = 1, std430) writeonly buffer St { float data_st[]; };    // [B, NP, 2]

layout(push_constant) uniform Push {
    uint S, E, G;                                     // tokens, channels, channels per group
    float eps;
} p;

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint g = gl_WorkGroupID.x, b = gl_WorkGroupID.y, NP = p.E / p.G;
    const uint n = p.S * p.G;
    const uint base = b * p.S * p.E + g * p.G;
    float s = 0.0;
    [[dont_unroll]] for (uint i = tid; i < n; i += WG) s += data_h_r(base + (i / p.G) * p.E + i % p.G);
    const float mean = reduce_sum(s) / float(n);
    float sq = 0.0;
    [[dont_unroll]] for (uint i = tid; i < n; i += WG) {
        const float d = data_h_r(base + (i / p.G) * p.E + i % p.G) - mean;
        sq += d * d;
    }
    const float var = reduce_sum(sq) / float(n);
    if (tid == 0) {
        data_st[(b * NP + g) * 2 + 0] = mean;
        data_st[(b * NP + g) * 2 + 1] = inversesqrt(var + p.eps);
    }
}
