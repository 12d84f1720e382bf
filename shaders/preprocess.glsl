// SPDX-License-Identifier: Apache-2.0
// ---------------------------------------------------------------------------------------------------------------
// Resampling geometry and filters shared by preprocess_h.comp and preprocess_v.comp: PIL's separable resampling
// (libImaging/Resample.c, precompute_coeffs) in exact integer arithmetic.
//
// One axis resizes `in` source pixels to `out`; output pixel xx has its centre at c = (xx + 0.5) * in / out (source
// pixel units), filter scale fs = max(in / out, 1), support S * fs (S = 2 bicubic, 1 bilinear), taps
// j = floor(c - S*fs + 0.5) .. floor(c + S*fs + 0.5) - 1 clipped to [0, in), weights filter((j - c + 0.5) / fs)
// normalised to sum 1. Only the crop's output pixels xx = crop0 + i are computed. The host (src/image/preprocess.c)
// passes an integer `base` and n0 = 2*out*(c(crop0) - base) in [0, 2*out), so that for crop index i
//     num  = 2*out*(c - base) = n0 + 2*in*i                                   (an exact integer)
//     taps:   base + floor((num + out -/+ S*D) / (2*out))        D = 2*max(in, out)
//     weight: filter((2*out*(j - base) + out - num) / D)
// Every quantity is an integer below 2^31 (the host refuses geometry that would not be), so the tap bounds are
// exact and the filter argument has one float rounding, whatever the image size; float positions would lose
// ~1e-3 pixel at 16384.
//
// Per-picture geometry is data, not push constants: one parameter block per batch slot (binding 2, written by the
// host into mapped memory before each submission), which also holds the two passes' indirect dispatch counts. So
// one recorded command buffer serves pictures of any size (src/ops/preprocess.c, docs/preprocessing.md).
// ---------------------------------------------------------------------------------------------------------------
#ifndef VKVIT_PREPROCESS_GLSL
#define VKVIT_PREPROCESS_GLSL

#include "types.glsl"

layout(constant_id = 0) const bool BICUBIC = true;  // else bilinear (triangle)

const int SUPPORT = BICUBIC ? 2 : 1;

// One batch slot's parameters; mirrors vkvit__preprocess_params in src/ops/preprocess.h (144 bytes). The geometry
// (in_w, in_h, the rows) is the oriented picture's: the horizontal pass maps each of its pixels back to the stored
// one (preprocess_h.comp, stored_of).
layout(binding = 2, std430) readonly buffer Params {
    uint h_groups_x, h_groups_y, h_groups_z;        // VkDispatchIndirectCommand of the horizontal pass (0: no picture)
    uint v_groups_x, v_groups_y, v_groups_z;        // ... and of the vertical pass
    uint src_offset, src_row_words;                 // RGBA buffer source: first pixel (words) and row stride (words)
    uint flags;                                     // bit 0: BGRA byte order (buffer); bit 1: sRGB view (image)
    uint row_start, n_rows;                         // source rows [row_start, row_start + n_rows) in the scratch
    uint crop_w, crop_h;                            // output columns and rows
    uint dst_offset;                                // element offset of the slot in the input
    int in_w, out_w, base_x, n0_x;                  // x axis
    int in_h, out_h, base_y, n0_y;                  // y axis
    float mean_r, mean_g, mean_b;
    float std_r, std_g, std_b;
    uint orientation;                               // bits 0-1: clockwise quarter turns; bit 2: mirror after them
    uint yuv;                                       // 0: RGBA / BGRA words; else PREPROCESS_YUV_* bits
    uint y_byte, y_row_bytes;                       // YUV: the Y plane's first byte and row stride (bytes)
    uint c0_byte, c1_byte, c_row_bytes;             // the chroma planes (NV12: c0 only, Cb Cr pairs)
    uint params_pad;
} p;

// p.yuv: the layout, the matrix and the range (src/ops/preprocess.h, VKVIT_PREPROCESS_YUV_*).
const uint PREPROCESS_YUV_NV12 = 1u, PREPROCESS_YUV_I420 = 2u, PREPROCESS_YUV_BT709 = 4u, PREPROCESS_YUV_FULL = 8u;

// PIL's filters: bicubic with a = -0.5 (Keys), bilinear = triangle.
float resample_filter(float x) {
    x = abs(x);
    if (BICUBIC) {
        const float a = -0.5;
        if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
        if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
        return 0.0;
    }
    return x < 1.0 ? 1.0 - x : 0.0;
}

// floor(n / d) for d > 0 (GLSL leaves signed division of negative operands loosely specified).
int floor_div(int n, int d) { return n >= 0 ? n / d : -((-n + d - 1) / d); }

struct resample_axis {
    int in_size, out_size, base, n0;
};

// Taps [j0, j1) of crop index i, and the numerator `num` and denominator `den` its weights need.
void axis_taps(resample_axis a, uint i, out int j0, out int j1, out int num, out int den) {
    num = a.n0 + 2 * a.in_size * int(i);
    den = 2 * max(a.in_size, a.out_size);
    const int two_out = 2 * a.out_size, sd = SUPPORT * den;
    j0 = max(a.base + floor_div(num + a.out_size - sd, two_out), 0);
    j1 = min(a.base + floor_div(num + a.out_size + sd, two_out), a.in_size);
}

float axis_weight(resample_axis a, int j, int num, int den) {
    return resample_filter(float(2 * a.out_size * (j - a.base) + a.out_size - num) / float(den));
}

#endif
