// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Tiled GEMM in the nn.Linear layout, batched:
//     D[b][m][n] = epilogue( sum_k A[b][m][k] * B[b][n][k] )             A: (M, K)  B: (N, K)  D: (M, N)
// (epilogue: + bias, activation, * per-column scale, + residual; see gemm_epilogue.glsl)
// Both operands are K-contiguous (row-major activations times a PyTorch weight matrix), so each workgroup
// stages a BM x BK tile of A and a BN x BK tile of B in shared memory, transposed to [k][m] / [k][n] so the
// inner product loop reads contiguous rows, and each invocation accumulates a TM x TN register tile.
// Any M, N, K: loads outside the matrix read 0, stores outside are skipped.
// Workgroup: (BM/TM) * (BN/TN) invocations; grid: (ceil(N/BN), ceil(M/BM), batch). The batch index z is split as
// z = outer * n_inner + inner, each level with its own element strides (src/ops/gemm.h, vkvit__gemm_push).
// ---------------------------------------------------------------------------------------------------------------
// B_F16: the B operand (the weights) is stored as fp16 (GL_EXT_shader_16bit_storage: storage and conversion only,
// no fp16 arithmetic, so only storageBuffer16BitAccess is required); accumulation stays fp32.
// F16_MATH (implies B_F16; needs shaderFloat16 + storageBuffer16BitAccess): fp16 arithmetic. A is converted to fp16
// when it is staged, the tiles hold (k, k+1) pairs as f16vec2, and each invocation keeps an f16vec2 partial sum per
// output (products of even k in .x, odd k in .y: one packed FMA per pair) over F16_CHUNK = 16 consecutive k, then
// adds both halves into its fp32 accumulator. Why 16 (see src/ops/gemm.h, VKVIT_GEMM_F16_CHUNK): each fp16 half
// sums 8 products, so the fp16 rounding error per output is at most ~(8 + 2) * 2^-11 * sum_k |a_k b_k| whatever K
// is (K = 1536 summed in fp16 alone would allow 770 * 2^-11: no correct digit), and a partial sum cannot overflow
// unless a product does. The epilogue (bias, GELU, LayerScale, residual) runs on the fp32 sum.
#if defined(F16_MATH) && F16_MATH
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#undef B_F16
#define B_F16 1
#define F16_CHUNK 16
#endif
#if defined(B_F16) && B_F16
#extension GL_EXT_shader_16bit_storage : require
#define B_TYPE float16_t
#define B4_TYPE f16vec4
#else
#define B4_TYPE vec4
#endif
#include "types.glsl"

layout(constant_id = 0) const uint BM = 64;
layout(constant_id = 1) const uint BN = 64;
layout(constant_id = 2) const uint BK = 16;
layout(constant_id = 3) const uint TM = 4;
layout(constant_id = 4) const uint TN = 4;
layout(constant_id = 5) const bool HAS_BIAS = false;
layout(constant_id = 6) const uint WG_SIZE = 256;   // must equal (BM/TM) * (BN/TN)
layout(constant_id = 7) const uint ACT = 0;         // epilogue (gemm_epilogue.glsl)
layout(constant_id = 8) const bool HAS_SCALE = false;
layout(constant_id = 9) const bool HAS_RESIDUAL = false;

layout(local_size_x_id = 6) in;

// PACKED: A, B, bias, D, scale, residual (logical bindings 0-5) through the arena and weights buffers of
// shaders/packed.glsl (devices with 4 storage buffers per stage); fp32 only.
#if defined(PACKED) && PACKED
#if defined(B_F16) && B_F16
#error "the packed GEMM is fp32"
#endif
#define PACKED_N 6
#include "packed.glsl"
#define A_AT(e) PK_READ(0, e)
#define B_AT(e) PK_READ(1, e)
#define D_AT(e) PK_ARENA(3, e)
#else
layout(binding = 0, std430) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 1, std430) readonly buffer B { B_TYPE data_b[]; };
layout(binding = 3, std430) writeonly buffer D { D_TYPE data_d[]; };
#define A_AT(e) data_a[e]
#define B_AT(e) data_b[e]
#define D_AT(e) data_d[e]
#endif

#include "gemm_push.glsl"

#include "gemm_epilogue.glsl"

// Sized for the largest tiles any variant uses (BK*BM and BK*BN floats: src/ops/gemm.c checks
// bk * max(bm, bn) <= 2048).
#if defined(F16_MATH) && F16_MATH
shared f16vec2 sh_a[8 * 128];                       // [BK/2][BM]: A(m, k0 + 2kp), A(m, k0 + 2kp + 1) in fp16
shared f16vec2 sh_b[8 * 128];                       // [BK/2][BN]
#else
shared float sh_a[16 * 128];
shared float sh_b[16 * 128];
#endif

#define MAX_TM 8
#define MAX_TN 8

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint threads_n = BN / TN;
    const uint tn0 = (tid % threads_n) * TN;         // this invocation's first column inside the tile
    const uint tm0 = (tid / threads_n) * TM;         // and first row
    const uint m_base = gl_WorkGroupID.y * BM;
    const uint n_base = gl_WorkGroupID.x * BN;
    // Two-level batch (push constants): z = outer * n_inner + inner.
    const uint n_inner = max(p.n_inner, 1u);
    const uint outer = gl_WorkGroupID.z / n_inner, inner = gl_WorkGroupID.z % n_inner;
    const uint a_off = p.a_offset + outer * p.batch_stride_a + inner * p.inner_stride_a;
    const uint b_off = p.b_offset + outer * p.batch_stride_b + inner * p.inner_stride_b;
    const uint d_off = p.d_offset + outer * p.batch_stride_d + inner * p.inner_stride_d;

    ACC_TYPE acc[MAX_TM][MAX_TN];
    [[unroll]] for (uint i = 0; i < MAX_TM; i++)
        [[unroll]] for (uint j = 0; j < MAX_TN; j++) acc[i][j] = 0.0;

#if defined(F16_MATH) && F16_MATH
    f16vec2 part[MAX_TM][MAX_TN];                   // fp16 partial sums of the current F16_CHUNK k (even k, odd k)
    [[unroll]] for (uint i = 0; i < MAX_TM; i++)
        [[unroll]] for (uint j = 0; j < MAX_TN; j++) part[i][j] = f16vec2(0.0);
    const uint BK2 = BK / 2;
    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        // Stage pairs: sh_a[kp][m] = fp16(A[m_base+m][k0+2kp], A[..][k0+2kp+1]), likewise B (already fp16).
        for (uint idx = tid; idx < BM * BK2; idx += WG_SIZE) {
            const uint kp = idx % BK2, mm = idx / BK2;
            const uint m = m_base + mm, k = k0 + 2 * kp;
            const uint row = a_off + m * p.stride_a;
            const float x0 = (m < p.M && k < p.K) ? float(A_AT(row + k)) : 0.0;
            const float x1 = (m < p.M && k + 1 < p.K) ? float(A_AT(row + k + 1)) : 0.0;
            sh_a[kp * BM + mm] = f16vec2(x0, x1);
        }
        for (uint idx = tid; idx < BN * BK2; idx += WG_SIZE) {
            const uint kp = idx % BK2, nn = idx / BK2;
            const uint n = n_base + nn, k = k0 + 2 * kp;
            const uint row = b_off + n * p.stride_b;
            const float16_t y0 = (n < p.N && k < p.K) ? B_AT(row + k) : float16_t(0.0);
            const float16_t y1 = (n < p.N && k + 1 < p.K) ? B_AT(row + k + 1) : float16_t(0.0);
            sh_b[kp * BN + nn] = f16vec2(y0, y1);
        }
        barrier();
        [[unroll]] for (uint kp = 0; kp < BK2; kp++) {
            f16vec2 a[MAX_TM], b[MAX_TN];
            [[unroll]] for (uint i = 0; i < TM; i++) a[i] = sh_a[kp * BM + tm0 + i];
            [[unroll]] for (uint j = 0; j < TN; j++) b[j] = sh_b[kp * BN + tn0 + j];
            [[unroll]] for (uint i = 0; i < TM; i++)
                [[unroll]] for (uint j = 0; j < TN; j++) part[i][j] = fma(a[i], b[j], part[i][j]);
            if ((kp + 1) % (F16_CHUNK / 2) == 0) {  // end of a chunk (BK is a multiple of F16_CHUNK): into fp32
                [[unroll]] for (uint i = 0; i < TM; i++)
                    [[unroll]] for (uint j = 0; j < TN; j++) {
                        acc[i][j] += float(part[i][j].x) + float(part[i][j].y);
                        part[i][j] = f16vec2(0.0);
                    }
            }
        }
        barrier();
    }
#else
    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        // Stage A[m_base.., k0..] -> sh_a[k][m] and B[n_base.., k0..] -> sh_b[k][n]; consecutive invocations read
        // consecutive k (coalesced global reads).
        for (uint idx = tid; idx < BM * BK; idx += WG_SIZE) {
            const uint kk = idx % BK, mm = idx / BK;
            const uint m = m_base + mm, k = k0 + kk;
            sh_a[kk * BM + mm] = (m < p.M && k < p.K) ? float(A_AT(a_off + m * p.stride_a + k)) : 0.0;
        }
        for (uint idx = tid; idx < BN * BK; idx += WG_SIZE) {
            const uint kk = idx % BK, nn = idx / BK;
            const uint n = n_base + nn, k = k0 + kk;
            sh_b[kk * BN + nn] = (n < p.N && k < p.K) ? float(B_AT(b_off + n * p.stride_b + k)) : 0.0;
        }
        barrier();
        [[unroll]] for (uint kk = 0; kk < BK; kk++) {
            float a[MAX_TM], b[MAX_TN];
            [[unroll]] for (uint i = 0; i < TM; i++) a[i] = sh_a[kk * BM + tm0 + i];
            [[unroll]] for (uint j = 0; j < TN; j++) b[j] = sh_b[kk * BN + tn0 + j];
            [[unroll]] for (uint i = 0; i < TM; i++)
                [[unroll]] for (uint j = 0; j < TN; j++) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        barrier();
    }
#endif

    [[unroll]] for (uint i = 0; i < TM; i++) {
        const uint m = m_base + tm0 + i;
        if (m >= p.M) break;
        [[unroll]] for (uint j = 0; j < TN; j++) {
            const uint n = n_base + tn0 + j;
            if (n < p.N) {
                D_AT(d_off + m * p.stride_d + n) = D_TYPE(gemm_epilogue(acc[i][j], outer, inner, m, n));
            }
        }
    }
}
