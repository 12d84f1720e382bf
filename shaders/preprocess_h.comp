// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
#if SOURCE_IMAGE
#extension GL_EXT_samplerless_texture_functions : require
#endif
// ---------------------------------------------------------------------------------------------------------------
// Image pre-processing, pass 1 of 2: horizontal resampling of 8-bit pixels into a float scratch buffer, only for
// the crop's columns and the source rows the vertical pass will read (preprocess.glsl has the geometry):
//
//   scratch[(r * crop_w + i) * 3 + ch] = sum_j w_j * px(j, row_start + r).ch / sum_j w_j      i < crop_w, r < n_rows
//
// px(x, y) is a pixel as float in [0, 1]: the byte value / 255, no rounding anywhere after that (torchvision's
// Resize on x / 255, i.e. PIL's float resampling). Sources:
//   SOURCE_IMAGE 0  a storage buffer of 32-bit pixels, bytes R, G, B, A (flags bit 0: B, G, R, A), row stride
//                   src_row_words words from word src_offset (set_images' upload buffer, or a host's VkBuffer)
//   SOURCE_IMAGE 1  a host's sampled VkImage, read with texelFetch (no sampler). The fetched value is turned
//                   back into its byte (round(v * 255)) so every driver yields exactly byte / 255; with flags bit 1
//                   (an _SRGB view, which decodes to linear on fetch) it is first re-encoded to sRGB: the model
//                   wants the stored, encoded bytes, as set_images sees them.
// One invocation per (crop column, row); 3 channels each. Dispatched indirectly: the host writes the count.
// ---------------------------------------------------------------------------------------------------------------
#include "preprocess.glsl"

layout(local_size_x = 16, local_size_y = 4) in;

#if SOURCE_IMAGE
layout(binding = 0) uniform texture2D src_image;
#else
layout(binding = 0, std430) readonly buffer Src { uint data_src[]; };
#endif
layout(binding = 1, std430) writeonly buffer Scratch { float data_scratch[]; };

// binding 2: the slot's parameters `p` (preprocess.glsl)

// Pixel x of the source row that starts at word `row` (buffer) or is row y (image). The parameters arrive as
// arguments, read from the parameter block once per invocation: loads from a storage buffer inside the tap loop are
// not hoisted by every compiler (lavapipe gathers them per lane), unlike push constants.
vec3 fetch(int x, int y, uint row, uint flags) {
#if SOURCE_IMAGE
    vec3 v = texelFetch(src_image, ivec2(x, y), 0).rgb;
    if ((flags & 2u) != 0u) {
        const vec3 lo = v * 12.92, hi = 1.055 * pow(v, vec3(1.0 / 2.4)) - 0.055;
        v = mix(hi, lo, lessThanEqual(v, vec3(0.0031308)));
    }
    return round(clamp(v, 0.0, 1.0) * 255.0) / 255.0;
#else
    const uint w = data_src[row + uint(x)];
    const vec3 v = vec3(float(w & 0xffu), float((w >> 8) & 0xffu), float((w >> 16) & 0xffu)) / 255.0;
    return (flags & 1u) != 0u ? v.bgr : v;
#endif
}

void main() {
    const uint i = gl_GlobalInvocationID.x, r = gl_GlobalInvocationID.y;
    const uint crop_w = p.crop_w, flags = p.flags;
    if (i >= crop_w || r >= p.n_rows) return;
    const resample_axis ax = resample_axis(p.in_w, p.out_w, p.base_x, p.n0_x);
    int j0, j1, num, den;
    axis_taps(ax, i, j0, j1, num, den);
    const int y = int(p.row_start + r);
    const uint row = p.src_offset + uint(y) * p.src_row_words;
    vec3 acc = vec3(0.0);
    float wsum = 0.0;
    [[dont_unroll]] for (int j = j0; j < j1; j++) {
        const float w = axis_weight(ax, j, num, den);
        acc += w * fetch(j, y, row, flags);
        wsum += w;
    }
    if (wsum != 0.0) acc /= wsum;
    const uint o = (r * crop_w + i) * 3u;
    data_scratch[o] = acc.r;
    data_scratch[o + 1] = acc.g;
    data_scratch[o + 2] = acc.b;
}
