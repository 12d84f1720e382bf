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

layout(binding = 2, std430) readonly buffer Bias { float data_bias[]; };
layout(binding = 4, std430) readonly buffer Scale { float data_scale[]; };
layout(binding = 5, std430) readonly buffer Res { D_TYPE data_r[]; };

float gemm_epilogue(float v, uint outer, uint inner, uint m, uint n) {
    if (HAS_BIAS) v += data_bias[p.n_offset + n];
    v = vkvit_activation(ACT, v);
    if (HAS_SCALE) v *= data_scale[p.n_offset + n];
    if (HAS_RESIDUAL)
        v += float(data_r[p.r_offset + outer * p.r_batch_stride + inner * p.r_inner_stride + m * p.r_stride + n]);
    return v;
}
