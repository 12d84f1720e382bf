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
//                   src_row_words words from word src_offset (set_images' upload buffer, or a host's VkBuffer);
//                   or, with p.yuv set, the byte planes of an NV12 / I420 frame in it, converted to RGB as
//                   include/vkvit.h (vkvit_yuv_encoding) says
// Both: pixel (x, y) of the oriented picture (p.orientation: quarter turns clockwise, then a mirror) is read from
// the stored pixel it shows (stored_of); the geometry is the oriented picture's.
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

// The parameters a fetch needs, read from the parameter block once per invocation: loads from a storage buffer
// inside the tap loop are not hoisted by every compiler (lavapipe gathers them per lane), unlike push constants.
struct source_desc {
    uint flags, orientation, yuv;
    uint src_offset, src_row_words;                 // RGBA words
    uint y_byte, y_row_bytes, c0_byte, c1_byte, c_row_bytes;
};

// The stored pixel that pixel (x, y) of the oriented picture (the stored one turned clockwise by `quarter turns`,
// then mirrored) shows; W x H is the oriented size.
ivec2 stored_of(int x, int y, uint orientation, int W, int H) {
    if ((orientation & 4u) != 0u) x = W - 1 - x;
    const uint turns = orientation & 3u;
    if (turns == 1u) return ivec2(y, W - 1 - x);          // 90: stored (sx, sy) shows at (H_s - 1 - sy, sx)
    if (turns == 2u) return ivec2(W - 1 - x, H - 1 - y);
    if (turns == 3u) return ivec2(H - 1 - y, x);          // 270: stored (sx, sy) shows at (sy, W_s - 1 - sx)
    return ivec2(x, y);
}

#if !SOURCE_IMAGE
float byte_at(uint a) { return float((data_src[a >> 2] >> ((a & 3u) * 8u)) & 0xffu); }

// A YUV 4:2:0 sample as RGB in [0, 1] (include/vkvit.h, vkvit_yuv_encoding; tools/reference/yuv.py).
vec3 yuv_rgb(ivec2 s, source_desc d) {
    const uint x = uint(s.x), y = uint(s.y), cx = x >> 1, cy = y >> 1;
    const float Y = byte_at(d.y_byte + y * d.y_row_bytes + x);
    float Cb, Cr;
    if ((d.yuv & PREPROCESS_YUV_NV12) != 0u) {
        const uint a = d.c0_byte + cy * d.c_row_bytes + 2u * cx;
        Cb = byte_at(a);
        Cr = byte_at(a + 1u);
    } else {
        Cb = byte_at(d.c0_byte + cy * d.c_row_bytes + cx);
        Cr = byte_at(d.c1_byte + cy * d.c_row_bytes + cx);
    }
    const bool full = (d.yuv & PREPROCESS_YUV_FULL) != 0u, bt709 = (d.yuv & PREPROCESS_YUV_BT709) != 0u;
    const float yl = full ? Y / 255.0 : (Y - 16.0) / 219.0;
    const float cb = (Cb - 128.0) / (full ? 255.0 : 224.0), cr = (Cr - 128.0) / (full ? 255.0 : 224.0);
    const float kr = bt709 ? 0.2126 : 0.299, kb = bt709 ? 0.0722 : 0.114;
    const float r = yl + 2.0 * (1.0 - kr) * cr, b = yl + 2.0 * (1.0 - kb) * cb;
    const float g = (yl - kr * r - kb * b) / (1.0 - kr - kb);
    return clamp(vec3(r, g, b), 0.0, 1.0);
}
#endif

// Pixel (x, y) of the oriented picture (W x H) as float RGB.
vec3 fetch(int x, int y, int W, int H, source_desc d) {
    const ivec2 s = stored_of(x, y, d.orientation, W, H);
#if SOURCE_IMAGE
    vec3 v = texelFetch(src_image, s, 0).rgb;
    if ((d.flags & 2u) != 0u) {
        const vec3 lo = v * 12.92, hi = 1.055 * pow(v, vec3(1.0 / 2.4)) - 0.055;
        v = mix(hi, lo, lessThanEqual(v, vec3(0.0031308)));
    }
    return round(clamp(v, 0.0, 1.0) * 255.0) / 255.0;
#else
    if (d.yuv != 0u) return yuv_rgb(s, d);
    const uint w = data_src[d.src_offset + uint(s.y) * d.src_row_words + uint(s.x)];
    const vec3 v = vec3(float(w & 0xffu), float((w >> 8) & 0xffu), float((w >> 16) & 0xffu)) / 255.0;
    return (d.flags & 1u) != 0u ? v.bgr : v;
#endif
}

void main() {
    const uint i = gl_GlobalInvocationID.x, r = gl_GlobalInvocationID.y;
    const uint crop_w = p.crop_w, flags = p.flags;
    if (i >= crop_w || r >= p.n_rows) return;
    const resample_axis ax = resample_axis(p.in_w, p.out_w, p.base_x, p.n0_x);
    int j0, j1, num, den;
    axis_taps(ax, i, j0, j1, num, den);
    const int y = int(p.row_start + r), W = p.in_w, H = p.in_h;
    const source_desc d = source_desc(flags, p.orientation, p.yuv, p.src_offset,
                                      p.src_row_words, p.y_byte, p.y_row_bytes, p.c0_byte, p.c1_byte, p.c_row_bytes);
    vec3 acc = vec3(0.0);
    float wsum = 0.0;
    [[dont_unroll]] for (int j = j0; j < j1; j++) {
        const float w = axis_weight(ax, j, num, den);
        acc += w * fetch(j, y, W, H, d);
        wsum += w;
    }
    if (wsum != 0.0) acc /= wsum;
    const uint o = (r * crop_w + i) * 3u;
    data_scratch[o] = acc.r;
    data_scratch[o + 1] = acc.g;
    data_scratch[o + 2] = acc.b;
}
