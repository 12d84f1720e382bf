#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// GEMM on cooperative matrices (tensor cores), same contract as gemm.comp with fp16 weights:
//     D[b][m][n] = epilogue( sum_k A[b][m][k] * B[b][n][k] )             A: (M, K) fp32   B: (N, K) fp16
// for sessions of precision fp16-math: A is rounded to fp16 as it is staged, every product of two fp16 numbers is
// exact in fp32 and the sums are fp32 (the accumulator fragments), the epilogue (bias, activation, LayerScale,
// residual: gemm_epilogue.glsl) runs in fp32. Error per output <= ~(1 + K 2^-13) 2^-11 sum_k |a_k b_k|, below the
// fp16-math bound of the scalar kernels (VKVIT_GEMM_F16_CHUNK in src/ops/gemm.h).
//
// Workgroup: 128 invocations = four warps of 32, one 64 x 64 tile of D; warp w owns the 32 x 32 quarter at rows
// 32 (w / 2), columns 32 (w % 2): 2 x 2 fragments of 16 x 16. Per 32-k step the workgroup stages A (fp32 -> fp16)
// and B (fp16) into shared memory, [row][k] with a row stride of 40 halves (80 bytes: 16-byte aligned rows, and
// the 8-half pad spreads rows over banks), zeros outside M, N and K; each warp then runs 2 k-steps of 2 x 2 matrix
// multiply-adds (B's fragments read column-major from the [n][k] tile, i.e. B^T). The accumulators go through a
// shared fp32 tile to the epilogue, which writes D with bounds checks: any M, N, K, strides and offsets (vec4
// loads when K, the row strides and this batch's offsets are multiples of 4, scalar loads otherwise).
// Grid: (ceil(N / 64), ceil(M / 64), batch), the batch index split in two levels as in gemm.comp.
//
// Variants (shaders/variants.cmake):
//   COOPMAT_NV=1  GL_NV_cooperative_matrix (fcoopmatNV<16|32, gl_ScopeSubgroup, 16, 16>): devices whose
//                 VK_NV_cooperative_matrix lists fp16 x fp16 + fp32 at 16x16x16 and whose subgroups have 32
//                 invocations (one warp = one subgroup). Built when the configured glslang compiles it.
//   COOPMAT_NV=0  the same tiling, staging and epilogue with each warp's matrix products in plain fp32 arithmetic
//                 (invocation l of a warp owns row l of its 32 x 32 quarter): VKVIT_COOPMAT_EMULATE=1 runs it on
//                 any device with fp16 arithmetic, so that everything but the cooperative-matrix instructions is
//                 tested on lavapipe.
// ---------------------------------------------------------------------------------------------------------------
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#if defined(COOPMAT_NV) && COOPMAT_NV
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#endif
#define B_TYPE float16_t
#include "types.glsl"

layout(constant_id = 0) const bool HAS_BIAS = false;
layout(constant_id = 1) const uint ACT = 0;         // epilogue (gemm_epilogue.glsl)
layout(constant_id = 2) const bool HAS_SCALE = false;
layout(constant_id = 3) const bool HAS_RESIDUAL = false;
layout(constant_id = 4) const bool CORRUPT = false; // test hook: adds 1 to every output (the self-check must fail)

#define BM 64
#define BN 64
#define BK 32
#define WARP 32
#define WG_SIZE 128
#define SA (BK + 8)                                 // shared row stride of the A and B tiles, in halves
#define SC (BN + 4)                                 // shared row stride of the fp32 output tile, in floats
layout(local_size_x = WG_SIZE) in;

layout(binding = 0, std430) readonly buffer A { float data_a[]; };
layout(binding = 0, std430) readonly buffer A4 { vec4 data_a4[]; };
layout(binding = 1, std430) readonly buffer B { float16_t data_b[]; };
layout(binding = 1, std430) readonly buffer B4 { f16vec4 data_b4[]; };
layout(binding = 3, std430) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Push {
    uint M, N, K;
    uint stride_a, stride_b, stride_d;              // row strides in elements
    uint batch_stride_a, batch_stride_b, batch_stride_d;
    uint a_offset, d_offset;                        // element offsets of A and D in their buffers
    uint r_offset, r_stride, r_batch_stride;        // the residual matrix (epilogue)
    uint n_inner;                                   // two-level batch: z = outer * n_inner + inner (0 = 1)
    uint inner_stride_a, inner_stride_b, inner_stride_d, r_inner_stride;
    uint b_offset;                                  // element offset of B in its buffer
    uint n_offset;                                  // column offset into bias and scale (a weight's row block)
} p;

#include "gemm_epilogue.glsl"

shared float16_t sh_a[BM * SA];                     // [m][k] of this k-step, fp16
shared float16_t sh_b[BN * SA];                     // [n][k]
shared float sh_c[BM * SC];                         // [m][n] accumulators, for the epilogue

// Rows r of a BM (or BN) x BK tile starting at element `row0` of a matrix with row stride `stride` and `rows`
// valid rows, into `sh` (A: fp32 rounded to fp16). Each invocation stages vec4s (BM * BK / 4 = 512: four each).
void stage_a(const bool VEC, uint base, uint r0, uint k0) {
    for (uint idx = gl_LocalInvocationIndex; idx < BM * BK / 4; idx += WG_SIZE) {
        const uint r = idx / (BK / 4), k = k0 + 4 * (idx % (BK / 4)), m = r0 + r;
        vec4 v = vec4(0.0);
        if (m < p.M) {
            const uint e = base + m * p.stride_a + k;
            if (VEC) {
                if (k < p.K) v = data_a4[e / 4];    // K % 4 == 0: the whole vec4 is inside the row
            } else {
                [[unroll]] for (uint c = 0; c < 4; c++) v[c] = k + c < p.K ? data_a[e + c] : 0.0;
            }
        }
        const uint s = r * SA + 4 * (idx % (BK / 4));
        sh_a[s] = float16_t(v.x), sh_a[s + 1] = float16_t(v.y);
        sh_a[s + 2] = float16_t(v.z), sh_a[s + 3] = float16_t(v.w);
    }
}

void stage_b(const bool VEC, uint base, uint r0, uint k0) {
    for (uint idx = gl_LocalInvocationIndex; idx < BN * BK / 4; idx += WG_SIZE) {
        const uint r = idx / (BK / 4), k = k0 + 4 * (idx % (BK / 4)), n = r0 + r;
        f16vec4 v = f16vec4(0.0);
        if (n < p.N) {
            const uint e = base + n * p.stride_b + k;
            if (VEC) {
                if (k < p.K) v = data_b4[e / 4];
            } else {
                [[unroll]] for (uint c = 0; c < 4; c++) v[c] = k + c < p.K ? data_b[e + c] : float16_t(0.0);
            }
        }
        const uint s = r * SA + 4 * (idx % (BK / 4));
        sh_b[s] = v.x, sh_b[s + 1] = v.y, sh_b[s + 2] = v.z, sh_b[s + 3] = v.w;
    }
}

void main() {
    const uint m_base = gl_WorkGroupID.y * BM;
    const uint n_base = gl_WorkGroupID.x * BN;
    const uint n_inner = max(p.n_inner, 1u);
    const uint outer = gl_WorkGroupID.z / n_inner, inner = gl_WorkGroupID.z % n_inner;
    const uint a_off = p.a_offset + outer * p.batch_stride_a + inner * p.inner_stride_a;
    const uint b_off = p.b_offset + outer * p.batch_stride_b + inner * p.inner_stride_b;
    const uint d_off = p.d_offset + outer * p.batch_stride_d + inner * p.inner_stride_d;
    const bool vec_a = ((p.K | p.stride_a | a_off) & 3u) == 0;
    const bool vec_b = ((p.K | p.stride_b | b_off) & 3u) == 0;

#if defined(COOPMAT_NV) && COOPMAT_NV
    const uint warp = gl_SubgroupID;                // the host selects this variant only for 32-wide subgroups
#else
    const uint warp = gl_LocalInvocationIndex / WARP;
#endif
    const uint wm = (warp / 2) * 32, wn = (warp % 2) * 32; // this warp's quarter of the tile

#if defined(COOPMAT_NV) && COOPMAT_NV
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[2][2];
    [[unroll]] for (uint i = 0; i < 2; i++)
        [[unroll]] for (uint j = 0; j < 2; j++) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
#else
    const uint lane = gl_LocalInvocationIndex % WARP; // owns row wm + lane, columns wn .. wn + 31
    float acc[32];
    [[unroll]] for (uint j = 0; j < 32; j++) acc[j] = 0.0;
#endif

    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        if (vec_a) stage_a(true, a_off, m_base, k0);
        else stage_a(false, a_off, m_base, k0);
        if (vec_b) stage_b(true, b_off, n_base, k0);
        else stage_b(false, b_off, n_base, k0);
        barrier();
#if defined(COOPMAT_NV) && COOPMAT_NV
        [[unroll]] for (uint kk = 0; kk < BK; kk += 16) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[2], fb[2];
            [[unroll]] for (uint i = 0; i < 2; i++) coopMatLoadNV(fa[i], sh_a, (wm + 16 * i) * SA + kk, SA, false);
            // B^T (k x n) is the [n][k] tile read column-major.
            [[unroll]] for (uint j = 0; j < 2; j++) coopMatLoadNV(fb[j], sh_b, (wn + 16 * j) * SA + kk, SA, true);
            [[unroll]] for (uint i = 0; i < 2; i++)
                [[unroll]] for (uint j = 0; j < 2; j++) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
        }
#else
        for (uint kk = 0; kk < BK; kk++) {
            const float a = float(sh_a[(wm + lane) * SA + kk]);
            [[unroll]] for (uint j = 0; j < 32; j++) acc[j] += a * float(sh_b[(wn + j) * SA + kk]);
        }
#endif
        barrier();
    }

#if defined(COOPMAT_NV) && COOPMAT_NV
    [[unroll]] for (uint i = 0; i < 2; i++)
        [[unroll]] for (uint j = 0; j < 2; j++)
            coopMatStoreNV(acc[i][j], sh_c, (wm + 16 * i) * SC + wn + 16 * j, SC, false);
#else
    [[unroll]] for (uint j = 0; j < 32; j++) sh_c[(wm + lane) * SC + wn + j] = acc[j];
#endif
    barrier();

    // Epilogue: consecutive invocations take consecutive columns of a row (coalesced stores of D).
    for (uint idx = gl_LocalInvocationIndex; idx < BM * BN; idx += WG_SIZE) {
        const uint mm = idx / BN, nn = idx % BN, m = m_base + mm, n = n_base + nn;
        if (m < p.M && n < p.N) {
            const float v = sh_c[mm * SC + nn] + (CORRUPT ? 1.0 : 0.0);
            data_d[d_off + m * p.stride_d + n] = D_TYPE(gemm_epilogue(v, outer, inner, m, n));
        }
    }
}
