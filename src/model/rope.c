// SPDX-License-Identifier: Apache-2.0
/* Host RoPE tables (see rope.h for the recipe and the compact layout). */
#include "model/rope.h"

#include <math.h>

/* theta[j] = 1 / base^((2j) / da) for j < da/2, in upstream's fp32 op order:
 * arange(0, da, 2).float() / da (fp32 division), base ** that (fp32 pow), 1.0 / that (fp32 reciprocal). */
static void rope_theta(uint32_t da, float base, float *theta) {
    for (uint32_t j = 0; j < da / 2; j++) {
        float exponent = (float)(2 * j) / (float)da;
        float p = powf(base, exponent);
        theta[j] = 1.0f / p;
    }
}

/* One axis part of one token: `n` angles pos * theta[j] (fp32 product), cos/sin in double, rounded to float. */
static void rope_axis(float pos, const float *theta, uint32_t n, float *out) {
    for (uint32_t j = 0; j < n; j++) {
        float angle = pos * theta[j];
        out[2 * j + 0] = (float)cos((double)angle);
        out[2 * j + 1] = (float)sin((double)angle);
    }
}

static bool base_ok(float base) { return isfinite(base) && base > 0.0f; }

static uint32_t isqrt_u32(uint32_t r) {
    uint32_t s = (uint32_t)sqrt((double)r);
    while (s * s > r) s--;
    while ((s + 1) * (s + 1) <= r) s++;
    return s;
}

uint32_t vkvit__rope_axial_tokens(const vkvit__rope_axial_desc *d) {
    return d->grid_h * d->grid_w + (d->has_cls ? 1u : 0u) + d->num_registers;
}

vkvit_result vkvit__rope_axial_table(const vkvit__rope_axial_desc *d, float *out) {
    const uint32_t dk = d->head_dim;
    if (dk == 0 || dk % 4 || dk > 4096)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "rope table: head_dim %u is not a multiple of 4 in [4, 4096]",
                            dk);
    const uint32_t rw = isqrt_u32(d->num_registers);
    if (rw * rw != d->num_registers)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "rope table: num_registers %u is neither 0 nor a perfect square",
                            d->num_registers);
    if (!base_ok(d->rope_base) || !base_ok(d->reg_rope_base))
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "rope table: bases %g / %g must be finite and positive",
                            (double)d->rope_base, (double)d->reg_rope_base);
    if (d->layout != VKVIT_TOKENS_PATCHES_CLS_REGS && d->layout != VKVIT_TOKENS_CLS_PATCHES_REGS)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "rope table: unknown token layout %d", (int)d->layout);
    const uint64_t np64 = (uint64_t)d->grid_h * d->grid_w;
    if (np64 + d->has_cls + d->num_registers == 0 || np64 + d->has_cls + d->num_registers > (1u << 24))
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "rope table: %llu tokens (grid %ux%u, cls %d, %u registers)",
                            (unsigned long long)(np64 + d->has_cls + d->num_registers), d->grid_h, d->grid_w,
                            (int)d->has_cls, d->num_registers);

    const uint32_t nf = dk / 4;             /* frequencies per axis (axis part of dh = dk/2 channels) */
    float theta_patch[1024], theta_reg[1024];
    rope_theta(dk / 2, d->rope_base, theta_patch);
    rope_theta(dk / 2, d->reg_rope_base, theta_reg);

    const uint32_t n_patch = (uint32_t)np64;
    const uint32_t cls_at = d->layout == VKVIT_TOKENS_CLS_PATCHES_REGS ? 0u : n_patch;
    const uint32_t patch0 = d->layout == VKVIT_TOKENS_CLS_PATCHES_REGS && d->has_cls ? 1u : 0u;
    const uint32_t reg0 = n_patch + (d->has_cls ? 1u : 0u);

    /* Row of token t: [nf Y-angles (cos, sin)] [nf X-angles (cos, sin)] = dk floats. */
    for (uint32_t p = 0; p < n_patch; p++) {
        float *row = out + (size_t)(patch0 + p) * dk;
        rope_axis((float)(p / d->grid_w), theta_patch, nf, row);
        rope_axis((float)(p % d->grid_w), theta_patch, nf, row + 2 * nf);
    }
    if (d->has_cls) {
        float *row = out + (size_t)cls_at * dk;
        for (uint32_t a = 0; a < dk / 2; a++) row[2 * a] = 1.0f, row[2 * a + 1] = 0.0f;
    }
    for (uint32_t r = 0; r < d->num_registers; r++) {
        float *row = out + (size_t)(reg0 + r) * dk;
        rope_axis((float)(r / rw), theta_reg, nf, row);
        rope_axis((float)(r % rw), theta_reg, nf, row + 2 * nf);
    }
    return VKVIT_OK;
}

vkvit_result vkvit__rope_grid_table(const uint32_t *shape, uint32_t ndim, uint32_t dk, float base, float *out) {
    if (ndim < 1 || ndim > 3)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "grid rope: %u spatial dims (1 to 3 supported)", ndim);
    if (dk == 0 || dk % (2 * ndim) || dk > 4096)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "grid rope: head_dim %u is not a multiple of 2*ndim = %u in [1, 4096]", dk, 2 * ndim);
    if (!base_ok(base))
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "grid rope: base %g must be finite and positive",
                            (double)base);
    uint64_t T = 1;
    for (uint32_t a = 0; a < ndim; a++) {
        if (shape[a] == 0)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "grid rope: spatial extent of axis %u is 0", a);
        T *= shape[a];
        if (T > (1u << 24))
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "grid rope: more than 2^24 tokens");
    }
    const uint32_t da = dk / ndim, nf = da / 2;
    float theta[2048];
    rope_theta(da, base, theta);
    for (uint32_t t = 0; t < (uint32_t)T; t++) {
        /* Row-major coordinates: the last axis varies fastest (torch.meshgrid indexing="ij", then reshape). */
        uint32_t coord[3], rest = t;
        for (uint32_t a = ndim; a-- > 0;) {
            coord[a] = rest % shape[a];
            rest /= shape[a];
        }
        float *row = out + (size_t)t * dk;
        for (uint32_t a = 0; a < ndim; a++) rope_axis((float)coord[a], theta, nf, row + 2 * nf * a);
    }
    return VKVIT_OK;
}

void vkvit__rope_expand(const float *table, uint32_t tokens, uint32_t dk, float *cos_out, float *sin_out) {
    for (uint32_t t = 0; t < tokens; t++)
        for (uint32_t c = 0; c < dk; c++) {
            const float *cs = table + (size_t)t * dk + 2 * (c >> 1);
            cos_out[(size_t)t * dk + c] = cs[0];
            sin_out[(size_t)t * dk + c] = cs[1];
        }
}
