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
// Grid: (n_groups, n_rows, 1).
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint MODE = 0;          // 0 RMS, 1 LayerNorm
layout(constant_id = 2) const bool ONE_PLUS_W = false;
layout(constant_id = 3) const bool HAS_BIAS = false;
layout(constant_id = 4) const bool HAS_WEIGHT = true;
layout(local_size_x_id = 0) in;

#define REDUCE_WG WG
#define REDUCE_T vec2
#include "reduce.glsl"

layout(binding = 0, std430) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 1, std430) readonly buffer W { float data_w[]; };     // [C] (indexed by channel)
layout(binding = 2, std430) readonly buffer Bi { float data_bias[]; }; // [C]
layout(binding = 3, std430) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Push {
    uint C, G;                                        // row length, group length (G divides C)
    uint rows_per_batch;
    uint in_offset, in_row_stride, in_batch_stride;
    uint out_offset, out_row_stride, out_batch_stride;
    float eps;
} p;

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint group = gl_WorkGroupID.x, r = gl_WorkGroupID.y;
    const uint rb = r / p.rows_per_batch, rr = r % p.rows_per_batch;
    const uint in_base = p.in_offset + rb * p.in_batch_stride + rr * p.in_row_stride + group * p.G;
    const uint out_base = p.out_offset + rb * p.out_batch_stride + rr * p.out_row_stride + group * p.G;

    // Two-pass-free statistics: sum and sum of squares in fp32 (rows are at most a few thousand channels).
    // LayerNorm subtracts the mean afterwards from a second read, which keeps var = E[(x - mean)^2] accurate.
    float s = 0.0, sq = 0.0;
    for (uint c = tid; c < p.G; c += WG) {
        const float v = float(data_a[in_base + c]);
        s += v;
        sq += v * v;
    }
    const vec2 tot = reduce_sum(vec2(s, sq));        // (sum, sum of squares), shaders/reduce.glsl
    const float mean = tot.x / float(p.G);
    float inv;
    if (MODE == 0) {
        inv = inversesqrt(tot.y / float(p.G) + p.eps);
    } else {
        float dev = 0.0;
        for (uint c = tid; c < p.G; c += WG) {
            const float v = float(data_a[in_base + c]) - mean;
            dev += v * v;
        }
        inv = inversesqrt(reduce_sum(vec2(dev, 0.0)).x / float(p.G) + p.eps);
    }
    const float shift = MODE == 0 ? 0.0 : mean;
    for (uint c = tid; c < p.G; c += WG) {
        const uint ch = group * p.G + c;
        float w = HAS_WEIGHT ? data_w[ch] : 1.0;
        if (ONE_PLUS_W) w += 1.0;
        float y = (float(data_a[in_base + c]) - shift) * inv * w;
        if (HAS_BIAS) y += data_bias[ch];
        data_d[out_base + c] = D_TYPE(y);
    }
}
