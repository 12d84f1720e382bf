// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Image pre-processing, pass 2 of 2: vertical resampling of the horizontal pass's rows, centre crop and
// normalisation, straight into one batch slot of the network input [B, H, W, 3] (channels-last):
//
//   v = sum_j w_j * scratch[((j - row_start) * crop_w + x) * 3 + ch] / sum_j w_j
//   dst[dst_offset + (y * crop_w + x) * 3 + ch] = (v - mean[ch]) / std[ch]                 y < crop_h, x < crop_w
//
// The crop's first row is folded into the axis geometry (preprocess.glsl), so y is already the crop row.
// One invocation per output pixel; 3 channels each. Dispatched indirectly: the host writes the count.
// ---------------------------------------------------------------------------------------------------------------
#include "preprocess.glsl"

layout(local_size_x = 16, local_size_y = 4) in;

layout(binding = 0, std430) readonly buffer Scratch { float data_scratch[]; };
layout(binding = 1, std430) writeonly buffer D { float data_d[]; };

// binding 2: the slot's parameters `p` (preprocess.glsl); row_start is the source row of scratch row 0

void main() {
    const uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    // The parameters read once (not inside the tap loop: see preprocess_h.comp's fetch).
    const uint crop_w = p.crop_w, row_start = p.row_start;
    if (x >= crop_w || y >= p.crop_h) return;
    const resample_axis ax = resample_axis(p.in_h, p.out_h, p.base_y, p.n0_y);
    int j0, j1, num, den;
    axis_taps(ax, y, j0, j1, num, den);
    vec3 acc = vec3(0.0);
    float wsum = 0.0;
    [[dont_unroll]] for (int j = j0; j < j1; j++) {
        const float w = axis_weight(ax, j, num, den);
        const uint s = ((uint(j) - row_start) * crop_w + x) * 3u;
        acc += w * vec3(data_scratch[s], data_scratch[s + 1], data_scratch[s + 2]);
        wsum += w;
    }
    if (wsum != 0.0) acc /= wsum;
    const uint o = p.dst_offset + (y * crop_w + x) * 3u;
    data_d[o] = (acc.r - p.mean_r) / p.std_r;
    data_d[o + 1] = (acc.g - p.mean_g) / p.std_g;
    data_d[o + 2] = (acc.b - p.mean_b) / p.std_b;
}
