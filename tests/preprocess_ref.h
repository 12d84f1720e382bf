// SPDX-License-Identifier: Apache-2.0
/* The C reference of vkvit's image pre-processing (header-only; docs/preprocessing.md): PIL's precompute_coeffs and
 * separable passes (libImaging/Resample.c) transcribed in double precision, with torchvision's output size and
 * centre-crop offsets. Deliberately the plain floating-point form (centres as doubles), independent of the
 * shaders' integer geometry. */
#ifndef VKVIT_TEST_PREPROCESS_REF_H
#define VKVIT_TEST_PREPROCESS_REF_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

static inline double ref_filter(double x, bool bicubic) {
    x = fabs(x);
    if (bicubic) {
        const double a = -0.5;
        if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
        if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
        return 0.0;
    }
    return x < 1.0 ? 1.0 - x : 0.0;
}

/* Taps [*lo, *hi) and normalised weights of output pixel xx when resizing `in` to `out`. */
static inline void ref_coeffs(uint32_t in, uint32_t out, uint32_t xx, bool bicubic, int *lo, int *hi, double *w) {
    const double scale = (double)in / out, fs = scale > 1.0 ? scale : 1.0, support = (bicubic ? 2.0 : 1.0) * fs;
    const double centre = (xx + 0.5) * scale;
    int a = (int)floor(centre - support + 0.5), b = (int)floor(centre + support + 0.5);
    if (a < 0) a = 0;
    if (b > (int)in) b = (int)in;
    double sum = 0.0;
    for (int j = a; j < b; j++) sum += (w[j - a] = ref_filter((j - centre + 0.5) / fs, bicubic));
    for (int j = a; j < b && sum != 0.0; j++) w[j - a] /= sum;
    *lo = a, *hi = b;
}

/* pixels: width x height 4-byte pixels with `row_bytes` stride (bgra: B, G, R, A). out: [H, W, 3]. */
static inline void ref_preprocess(const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t row_bytes, bool bgra,
                                  uint32_t r, uint32_t H, uint32_t W, bool bicubic, const float mean[3],
                                  const float std_[3], double *out) {
    /* torchvision's size: shorter side r, longer int(r * long / short); crop offsets round-half-even. */
    uint32_t ow = r, oh = r;
    if (width < height) oh = (uint32_t)((uint64_t)r * height / width);
    if (height < width) ow = (uint32_t)((uint64_t)r * width / height);
    const double dt = (oh - H) / 2.0, dl = (ow - W) / 2.0;
    const uint32_t top = (uint32_t)nearbyint(dt), left = (uint32_t)nearbyint(dl); /* FE_TONEAREST: half to even */
    double *tmp = malloc((size_t)height * W * 3 * sizeof *tmp);
    double *w = malloc(((size_t)(width > height ? width : height) * 4 + 8) * sizeof *w);
    for (uint32_t x = 0; x < W; x++) {
        int lo, hi;
        ref_coeffs(width, ow, left + x, bicubic, &lo, &hi, w);
        for (uint32_t y = 0; y < height; y++)
            for (int c = 0; c < 3; c++) {
                double s = 0.0;
                for (int j = lo; j < hi; j++) {
                    const uint8_t *px = pixels + (size_t)y * row_bytes + (size_t)j * 4;
                    s += w[j - lo] * (px[bgra ? 2 - c : c] / 255.0);
                }
                tmp[((size_t)y * W + x) * 3 + c] = s;
            }
    }
    for (uint32_t y = 0; y < H; y++) {
        int lo, hi;
        ref_coeffs(height, oh, top + y, bicubic, &lo, &hi, w);
        for (uint32_t x = 0; x < W; x++)
            for (int c = 0; c < 3; c++) {
                double s = 0.0;
                for (int j = lo; j < hi; j++) s += w[j - lo] * tmp[((size_t)j * W + x) * 3 + c];
                out[((size_t)y * W + x) * 3 + c] = (s - (double)mean[c]) / (double)std_[c];
            }
    }
    free(tmp), free(w);
}

#endif /* VKVIT_TEST_PREPROCESS_REF_H */
