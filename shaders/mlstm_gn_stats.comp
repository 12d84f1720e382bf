// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// The seed's outnorm statistics (docs/math.md 7.1 quirk 6): nn.GroupNorm(NP, E) on the cell output seen as
// [B, E, S], so group g (channels G*g .. G*g+G-1) of image b takes its mean and biased variance over G channels x ALL
// S tokens:
//   stats[(b*NP + g)*2 + 0] = mean,  stats[(b*NP + g)*2 + 1] = rsqrt(var + eps)
// This is the second pass the chunked scan needs: no token is final before the whole sequence is scanned.
// Two passes over the data (mean, then squared deviations) in fp32. One workgroup per (g, b); its invocations
// stride over the group's elements in one flat loop, as vec4s where G, E and the group's start are multiples of 4.
// On llvmpipe a texel fetch is a call whatever part of the texel is used, and an integer division a scalar loop
// per lane, so the vec4s take a quarter of both; a loop over rows with an inner loop over columns measured slower
// still (a dynamic loop costs its entry and exit there). ViL-S: 11.2 -> 4.6-5.0 ms for its 24 statistics nodes.
// LANE_PER_GROUP=1 (texel reads, i.e. CPU devices; G == 4, vec4-aligned h, 2 S under llvmpipe's loop budget):
// one invocation per group instead of a workgroup, walking the S tokens in two passes with a vec4 of partial sums
// (one per channel): no barrier, no reduction, no division, and the 8 lanes of a SIMD vector read 8 adjacent vec4s
// of a row. ViL-S: 3.9 -> 2.0 ms for the 24 nodes (per-node minima of 11 profiled runs).
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

#if !(defined(LANE_PER_GROUP) && LANE_PER_GROUP)
#define REDUCE_WG WG
#include "reduce.glsl"
#endif

// TEXEL=1 (CPU devices with caps.texel_reads): the read-only inputs are uniform texel buffers (RGBA32F), which
// llvmpipe reads with SIMD gathers instead of a per-lane scalar loop (see gemm_cpu.comp); NAME_r(i) reads element i.
#if defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_0;
#define data_h_r(e) texelFetch(tex_0, int((e) >> 2))[(e) & 3u]
#define data_h4_r(e) texelFetch(tex_0, int((e) >> 2))
#else
layout(binding = 0, std430) readonly buffer H { float data_h[]; };       // B*S rows of h_stride from h_offset
layout(binding = 0, std430) readonly buffer H4 { vec4 data_h4[]; };
#define data_h_r(i) float(data_h[i])
#define data_h4_r(e) data_h4[(e) >> 2]
#endif
layout(binding = 1, std430) writeonly buffer St { float data_st[]; };    // [B, NP, 2]

layout(push_constant) uniform Push {
    uint S, E, G;                                     // tokens, channels, channels per group
    float eps;
    uint h_offset, h_stride;                          // where h's rows are (elements; h dense or in the cell's qkv)
} p;

#if !(defined(LANE_PER_GROUP) && LANE_PER_GROUP)
// Sum over the group of f(x) = x - shift (SQUARE: its square), this invocation's share: one flat loop over the
// group's S x G elements (VEC: its S x G/4 vec4s), the row and column of each from one division.
float group_sum(const bool VEC, const bool SQUARE, uint base, float shift) {
    float acc = 0.0;
    if (VEC) {
        const uint G4 = p.G / 4, n4 = p.S * G4;
        [[dont_unroll]] for (uint i = gl_LocalInvocationID.x; i < n4; i += WG) {
            const uint r = i / G4;
            const vec4 d = data_h4_r(base + r * p.h_stride + 4 * (i - r * G4)) - shift;
            acc += SQUARE ? dot(d, d) : (d.x + d.y) + (d.z + d.w);
        }
    } else {
        const uint n = p.S * p.G;
        [[dont_unroll]] for (uint i = gl_LocalInvocationID.x; i < n; i += WG) {
            const uint r = i / p.G;
            const float d = data_h_r(base + r * p.h_stride + (i - r * p.G)) - shift;
            acc += SQUARE ? d * d : d;
        }
    }
    return acc;
}

void main() {
    const uint g = gl_WorkGroupID.x, b = gl_WorkGroupID.y, NP = p.E / p.G;
    const float n = float(p.S * p.G);
    const uint base = p.h_offset + b * p.S * p.h_stride + g * p.G;
    const bool vec = ((p.G | p.h_stride | base) & 3u) == 0;
    const float mean = reduce_sum(vec ? group_sum(true, false, base, 0.0) : group_sum(false, false, base, 0.0)) / n;
    const float var = reduce_sum(vec ? group_sum(true, true, base, mean) : group_sum(false, true, base, mean)) / n;
    if (gl_LocalInvocationID.x == 0) {
        data_st[(b * NP + g) * 2 + 0] = mean;
        data_st[(b * NP + g) * 2 + 1] = inversesqrt(var + p.eps);
    }
}
#else
void main() {
    const uint g = gl_GlobalInvocationID.x, b = gl_WorkGroupID.y, NP = p.E / 4, h4_stride = p.h_stride / 4;
    if (g >= NP) return;
    const uint base4 = (p.h_offset + b * p.S * p.h_stride) / 4 + g;
    const float n = float(p.S * 4);
    vec4 acc = vec4(0.0);
    [[dont_unroll]] for (uint t = 0; t < p.S; t++) acc += data_h4_r(4 * (base4 + t * h4_stride));
    const float mean = ((acc.x + acc.y) + (acc.z + acc.w)) / n;
    acc = vec4(0.0);
    [[dont_unroll]] for (uint t = 0; t < p.S; t++) {
        const vec4 d = data_h4_r(4 * (base4 + t * h4_stride)) - mean;
        acc += d * d;
    }
    const float var = ((acc.x + acc.y) + (acc.z + acc.w)) / n;
    data_st[(b * NP + g) * 2 + 0] = mean;
    data_st[(b * NP + g) * 2 + 1] = inversesqrt(var + p.eps);
}
#endif
