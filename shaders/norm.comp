// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Row normalisation over groups of G channels (G = C: a plain norm over the row; G = DH: a per-head norm).
//   RMS (MODE 0):  y = x * rsqrt(mean(x^2) + eps) * w                      (nvsubq RMSNorm)
//   LN  (MODE 1):  y = (x - mean) * rsqrt(var + eps) * w (+ b)             (biased variance, as PyTorch)
//   ONE_PLUS_W:    the scale is (1 + w) instead of w (NX-AI LayerNorm, MultiHeadLayerNorm)
// Statistics in fp32. One workgroup per (row, group); rows are addressed as
//   element (r, c) = offset + (r / rows_per_batch) * batch_stride + (r % rows_per_batch) * row_stride + c
// so a readout can normalise e.g. only the CLS row of every image without a copy.
// GPUs: one workgroup per (row, group), the statistics a workgroup reduction; grid (n_groups, n_rows, 1).
// CPU devices (ROW_PER_INVOCATION): one invocation per (row, group) i = row * n_groups + group, WG of them side by
// side in llvmpipe's SIMD vector running the same loops: no reduction, no barrier, and a workgroup (a task switch on
// llvmpipe) per WG (row, group) pairs instead of one per pair; grid (1, ceil(n_rows * n_groups / WG), 1), so the y
// grid still grows with the batch (the session splits a batch whose grid exceeds the device's limits).
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint MODE = 0;          // 0 RMS, 1 LayerNorm
layout(constant_id = 2) const bool ONE_PLUS_W = false;
layout(constant_id = 3) const bool HAS_BIAS = false;
layout(constant_id = 4) const bool HAS_WEIGHT = true;
layout(constant_id = 5) const bool ROW_PER_INVOCATION = false;
layout(local_size_x_id = 0) in;

#define REDUCE_WG WG
#define REDUCE_T vec2
#include "reduce.glsl"

// Inputs x, weight [C] and bias [C]: storage buffers, or where TEXEL=1 (CPU devices with caps.texel_reads) uniform
// texel buffers (RGBA32F), which llvmpipe reads with SIMD gathers instead of a per-lane scalar loop (gemm_cpu.comp).
#if defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_a;
layout(binding = 1) uniform samplerBuffer tex_w;
layout(binding = 2) uniform samplerBuffer tex_bias;
#define READ1(t, e) texelFetch(t, int((e) >> 2))[(e) & 3u]
#define READ4(t, e) texelFetch(t, int((e) >> 2))
#define read_a(e) READ1(tex_a, e)
#define read_w(e) READ1(tex_w, e)
#define read_bias(e) READ1(tex_bias, e)
#define read_a4(e) READ4(tex_a, e)
#define read_w4(e) READ4(tex_w, e)
#define read_bias4(e) READ4(tex_bias, e)
#else
layout(binding = 0, std430) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 0, std430) readonly buffer A4 { vec4 data_a4[]; };
layout(binding = 1, std430) readonly buffer W { float data_w[]; };     // [C] (indexed by channel)
layout(binding = 1, std430) readonly buffer W4 { vec4 data_w4[]; };
layout(binding = 2, std430) readonly buffer Bi { float data_bias[]; }; // [C]
layout(binding = 2, std430) readonly buffer Bi4 { vec4 data_bias4[]; };
#define read_a(e) float(data_a[e])
#define read_w(e) data_w[e]
#define read_bias(e) data_bias[e]
#define read_a4(e) data_a4[(e) >> 2]
#define read_w4(e) data_w4[(e) >> 2]
#define read_bias4(e) data_bias4[(e) >> 2]
#endif
layout(binding = 3, std430) writeonly buffer D { D_TYPE data_d[]; };
layout(binding = 3, std430) writeonly buffer D4 { vec4 data_d4[]; };

layout(push_constant) uniform Push {
    uint C, G;                                        // row length, group length (G divides C)
    uint rows_per_batch;
    uint in_offset, in_row_stride, in_batch_stride;
    uint out_offset, out_row_stride, out_batch_stride;
    float eps;
    uint rows;                                        // rows in all (ROW_PER_INVOCATION: the last workgroup's bound)
} p;

// The normalisation of one (row r, group) by one invocation (ROW_PER_INVOCATION; VEC: G and every offset and stride
// are multiples of 4). The same formulas as the workgroup path below.
void norm_one(const bool VEC, uint r, uint group) {
    const uint rb = r / p.rows_per_batch, rr = r - rb * p.rows_per_batch;
    const uint in_base = p.in_offset + rb * p.in_batch_stride + rr * p.in_row_stride + group * p.G;
    const uint out_base = p.out_offset + rb * p.out_batch_stride + rr * p.out_row_stride + group * p.G;
    const uint step = VEC ? 4 : 1;
    float s = 0.0, sq = 0.0;
    [[dont_unroll]] for (uint c = 0; c < p.G; c += step) {
        const vec4 v = VEC ? read_a4(in_base + c) : vec4(read_a(in_base + c), 0.0, 0.0, 0.0);
        s += (v.x + v.y) + (v.z + v.w);
        sq += dot(v, v);
    }
    const float mean = s / float(p.G);
    float inv;
    if (MODE == 0) {
        inv = inversesqrt(sq / float(p.G) + p.eps);
    } else {
        float dev = 0.0;
        [[dont_unroll]] for (uint c = 0; c < p.G; c += step) {
            const vec4 v = VEC ? read_a4(in_base + c) - mean : vec4(read_a(in_base + c) - mean, 0.0, 0.0, 0.0);
            dev += dot(v, v);
        }
        inv = inversesqrt(dev / float(p.G) + p.eps);
    }
    const float shift = MODE == 0 ? 0.0 : mean;
    [[dont_unroll]] for (uint c = 0; c < p.G; c += step) {
        const uint ch = group * p.G + c;
        if (VEC) {
            vec4 w = HAS_WEIGHT ? read_w4(ch) : vec4(1.0);
            if (ONE_PLUS_W) w += 1.0;
            vec4 y = (read_a4(in_base + c) - shift) * inv * w;
            if (HAS_BIAS) y += read_bias4(ch);
            data_d4[(out_base + c) >> 2] = y;
        } else {
            float w = HAS_WEIGHT ? read_w(ch) : 1.0;
            if (ONE_PLUS_W) w += 1.0;
            float y = (read_a(in_base + c) - shift) * inv * w;
            if (HAS_BIAS) y += read_bias(ch);
            data_d[out_base + c] = D_TYPE(y);
        }
    }
}

void main() {
    if (ROW_PER_INVOCATION) {
        const uint n_groups = p.C / p.G, total = p.rows * n_groups;
        const bool vec = ((p.G | p.in_offset | p.in_row_stride | p.in_batch_stride | p.out_offset | p.out_row_stride |
                           p.out_batch_stride) & 3u) == 0;
        const uint i = gl_WorkGroupID.y * WG + gl_LocalInvocationID.x, r = i / n_groups;
        if (i >= total) return;
        if (vec) norm_one(true, r, i - r * n_groups);
        else norm_one(false, r, i - r * n_groups);
        return;
    }
    const uint tid = gl_LocalInvocationID.x;
    const uint group = gl_WorkGroupID.x, r = gl_WorkGroupID.y;
    const uint rb = r / p.rows_per_batch, rr = r % p.rows_per_batch;
    const uint in_base = p.in_offset + rb * p.in_batch_stride + rr * p.in_row_stride + group * p.G;
    const uint out_base = p.out_offset + rb * p.out_batch_stride + rr * p.out_row_stride + group * p.G;

    // Two-pass-free statistics: sum and sum of squares in fp32 (rows are at most a few thousand channels).
    // LayerNorm subtracts the mean afterwards from a second read, which keeps var = E[(x - mean)^2] accurate.
    // VEC: the group, its input and output starts are multiples of 4: each invocation takes 4 channels at a time.
    const bool VEC = ((p.G | in_base | out_base) & 3u) == 0;
    float s = 0.0, sq = 0.0;
    if (VEC) {
        for (uint c = 4 * tid; c < p.G; c += 4 * WG) {
            const vec4 v = read_a4(in_base + c);
            s += (v.x + v.y) + (v.z + v.w);
            sq += dot(v, v);
        }
    } else {
        for (uint c = tid; c < p.G; c += WG) {
            const float v = read_a(in_base + c);
            s += v;
            sq += v * v;
        }
    }
    const vec2 tot = reduce_sum(vec2(s, sq));        // (sum, sum of squares), shaders/reduce.glsl
    const float mean = tot.x / float(p.G);
    float inv;
    if (MODE == 0) {
        inv = inversesqrt(tot.y / float(p.G) + p.eps);
    } else {
        float dev = 0.0;
        if (VEC) {
            for (uint c = 4 * tid; c < p.G; c += 4 * WG) {
                const vec4 v = read_a4(in_base + c) - mean;
                dev += dot(v, v);
            }
        } else {
            for (uint c = tid; c < p.G; c += WG) {
                const float v = read_a(in_base + c) - mean;
                dev += v * v;
            }
        }
        inv = inversesqrt(reduce_sum(vec2(dev, 0.0)).x / float(p.G) + p.eps);
    }
    const float shift = MODE == 0 ? 0.0 : mean;
    if (VEC) {
        for (uint c = 4 * tid; c < p.G; c += 4 * WG) {
            const uint ch = group * p.G + c;
            vec4 w = HAS_WEIGHT ? read_w4(ch) : vec4(1.0);
            if (ONE_PLUS_W) w += 1.0;
            vec4 y = (read_a4(in_base + c) - shift) * inv * w;
            if (HAS_BIAS) y += read_bias4(ch);
            data_d4[(out_base + c) >> 2] = y;
        }
        return;
    }
    for (uint c = tid; c < p.G; c += WG) {
        const uint ch = group * p.G + c;
        float w = HAS_WEIGHT ? read_w(ch) : 1.0;
        if (ONE_PLUS_W) w += 1.0;
        float y = (read_a(in_base + c) - shift) * inv * w;
        if (HAS_BIAS) y += read_bias(ch);
        data_d[out_base + c] = D_TYPE(y);
    }
}
