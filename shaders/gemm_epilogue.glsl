// SPDX-License-Identifier: Apache-2.0
// ---------------------------------------------------------------------------------------------------------------
// The GEMM epilogue shared by gemm.comp and gemm_cpu.comp, applied to each accumulated output element of batch
// (outer, inner) (see the two-level batch of the push constants), row m, column n:
//     v = act(acc + bias[n_offset + n]) * scale[n_offset + n] + R[r_offset + outer * r_batch_stride + inner * r_inner_stride + m * r_stride + n]
// (each term only when its specialization constant is on). R may alias D (a residual stream updated in place):
// the same invocation reads R(b, m, n) before it writes D(b, m, n), and no buffer is declared `restrict`.
// Requires: spec constants HAS_BIAS, ACT, HAS_SCALE, HAS_RESIDUAL; bindings 2 (bias), 4 (scale), 5 (residual);
// push fields r_offset, r_stride, r_batch_stride, r_inner_stride, n_offset.
// ---------------------------------------------------------------------------------------------------------------
#include "activations.glsl"

#if defined(PACKED) && PACKED   // logical bindings 2, 4, 5 through shaders/packed.glsl (gemm.comp's packed variant)
#define BIAS_AT(e) PK_READ(2, e)
#define SCALE_AT(e) PK_READ(4, e)
#define R_AT(e) PK_READ(5, e)
#else
layout(binding = 2, std430) readonly buffer Bias { float data_bias[]; };
layout(binding = 4, std430) readonly buffer Scale { float data_scale[]; };
layout(binding = 5, std430) readonly buffer Res { D_TYPE data_r[]; };
#define BIAS_AT(e) data_bias[e]
#define SCALE_AT(e) data_scale[e]
#define R_AT(e) data_r[e]
#endif

// The per-column terms, for a kernel that reads them once per column rather than once per output (gemm_cpu.comp).
float gemm_column_bias(uint n) { return HAS_BIAS ? BIAS_AT(p.n_offset + n) : 0.0; }
float gemm_column_scale(uint n) { return HAS_SCALE ? SCALE_AT(p.n_offset + n) : 1.0; }

float gemm_epilogue_col(float v, float bias, float scale, uint outer, uint inner, uint m, uint n) {
    if (HAS_BIAS) v += bias;
    v = vkvit_activation(ACT, v);
    if (HAS_SCALE) v *= scale;
    if (HAS_RESIDUAL)
        v += float(R_AT(p.r_offset + outer * p.r_batch_stride + inner * p.r_inner_stride + m * p.r_stride + n));
    return v;
}

float gemm_epilogue(float v, uint outer, uint inner, uint m, uint n) {
    return gemm_epilogue_col(v, gemm_column_bias(n), gemm_column_scale(n), outer, inner, m, n);
}
