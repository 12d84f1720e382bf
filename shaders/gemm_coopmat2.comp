// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// GEMM on VK_NV_cooperative_matrix2's tensor layouts, same contract as gemm_coopmat.comp (fp16-math sessions):
//     D[b][m][n] = epilogue( sum_k A[b][m][k] * B[b][n][k] )             A: (M, K) fp32   B: (N, K) fp16
// A is rounded to fp16, the products are fp16 x fp16 with fp32 sums (16 x 16 accumulator fragments), the epilogue
// (bias, activation, LayerScale, residual: gemm_epilogue.glsl) runs in fp32: the same error bound as
// gemm_coopmat.comp's.
//
// What cooperative_matrix2 changes: B's fragments and D's stores go through tensor layouts, (N, K) and (M, N) with
// the buffers' row strides, whose loads are clamped (elements outside the tensor read as 0,
// gl_CooperativeMatrixClampModeConstantNV) and whose stores drop the elements outside it, so odd M, N, K, strides
// and offsets need no padded copies and no bounds tests; B^T (K x N) is B's layout read through a transposing view.
// The epilogue is a per-element function of the accumulator fragment (coopMatPerElementNV), which gets the
// element's row and column. A stays staged through shared memory: a tensor load does not convert fp32 to fp16
// (only a decode function could, through buffer references), so the workgroup rounds A's tile to fp16 as it stores
// it, zeros outside M and K, and the warps load their A fragments from there (coopMatLoad).
//
// Tile (TILE=64, src/ops/gemm.c's coopmat tiles): 64 x 64 of D per workgroup, 2 x 2 warps of 32 x 32 (2 x 2
// fragments of 16 x 16), k-steps of 32 (BK). A warp is one subgroup of the device's size (WARP, a specialization
// constant; the pipeline requires full subgroups of that size where size control exists); the fragments are
// subgroup-scoped. Needs the device's cooperativeMatrixFlexibleDimensions, cooperativeMatrixTensorAddressing and
// cooperativeMatrixPerElementOperations features, VK_KHR_cooperative_matrix's 16x16x16 fp16 shape, the Vulkan
// memory model, and SPIR-V 1.6 (glslang emits GL_NV_cooperative_matrix2 only for --target-env vulkan1.3). Grid:
// (ceil(N / 64), ceil(M / 64), batch), the batch index split in two levels as in gemm.comp.
// ---------------------------------------------------------------------------------------------------------------
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#define B_TYPE float16_t
#include "types.glsl"

#if TILE != 64
#error gemm_coopmat2.comp has the 64 x 64 tile
#endif
#define FS 16                                       // fragment side: 16 x 16 x 16 products
#define BM 64
#define BN 64
#define BK 32
#define WTM 32                                      // a warp's rows and columns
#define WTN 32
#define FRAG_M (WTM / FS)
#define FRAG_N (WTN / FS)
#define SA (BK + 8)                                 // shared row stride of A's tile, in halves (80 bytes)

layout(constant_id = 0) const bool HAS_BIAS = false;
layout(constant_id = 1) const uint ACT = 0;         // epilogue (gemm_epilogue.glsl)
layout(constant_id = 2) const bool HAS_SCALE = false;
layout(constant_id = 3) const bool HAS_RESIDUAL = false;
layout(constant_id = 4) const bool CORRUPT = false; // test hook: adds 1 to every output (the self-check must fail)
layout(constant_id = 5) const uint WARP = 32;       // the subgroup size (src/ops/gemm.c)
layout(constant_id = 6) const uint WG_SIZE = 128;   // WARP x 4 warps
layout(local_size_x_id = 6) in;

layout(binding = 0, std430) readonly buffer A { float data_a[]; };
layout(binding = 1, std430) readonly buffer B { float16_t data_b[]; };
layout(binding = 3, std430) writeonly buffer D { D_TYPE data_d[]; };

#include "gemm_push.glsl"

#include "gemm_epilogue.glsl"

#define FRAG_A coopmat<float16_t, gl_ScopeSubgroup, FS, FS, gl_MatrixUseA>
#define FRAG_B coopmat<float16_t, gl_ScopeSubgroup, FS, FS, gl_MatrixUseB>
#define FRAG_ACC coopmat<float, gl_ScopeSubgroup, FS, FS, gl_MatrixUseAccumulator>

shared float16_t sh_a[BM * SA];                     // A's tile of one k-step, [m][k], fp16

// The epilogue of the element at (row, col) of the fragment whose first element is D's (m0, n0): elements outside
// M x N are dropped by the store, but must not read the residual past its matrix.
float epilogue_element(const in uint row, const in uint col, const in float v, const in uint m0,
                       const in uint n0, const in uint outer, const in uint inner) {
    const uint m = m0 + row, n = n0 + col;
    if (m >= p.M || n >= p.N) return v;
    return gemm_epilogue(v + (CORRUPT ? 1.0 : 0.0), outer, inner, m, n);
}

void main() {
    const uint m_base = gl_WorkGroupID.y * BM;
    const uint n_base = gl_WorkGroupID.x * BN;
    const uint n_inner = max(p.n_inner, 1u);
    const uint outer = gl_WorkGroupID.z / n_inner, inner = gl_WorkGroupID.z % n_inner;
    const uint a_off = p.a_offset + outer * p.batch_stride_a + inner * p.inner_stride_a;
    const uint b_off = p.b_offset + outer * p.batch_stride_b + inner * p.inner_stride_b;
    const uint d_off = p.d_offset + outer * p.batch_stride_d + inner * p.inner_stride_d;
    const uint warp = gl_SubgroupID;
    const uint wm = (warp / 2) * WTM, wn = (warp % 2) * WTN; // this warp's part of the tile

    // B (N x K, row stride stride_b) and D (M x N, row stride stride_d) as clamped tensors; B^T through a view.
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> layout_b =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    layout_b = setTensorLayoutDimensionNV(layout_b, p.N, p.K);
    layout_b = setTensorLayoutStrideNV(layout_b, p.stride_b, 1);
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> layout_d =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    layout_d = setTensorLayoutDimensionNV(layout_d, p.M, p.N);
    layout_d = setTensorLayoutStrideNV(layout_d, p.stride_d, 1);
    tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);

    FRAG_ACC acc[FRAG_M][FRAG_N];
    [[unroll]] for (uint i = 0; i < FRAG_M; i++)
        [[unroll]] for (uint j = 0; j < FRAG_N; j++) acc[i][j] = FRAG_ACC(0.0);

    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        barrier();                                  // the previous step's A fragments are loaded
        for (uint e = gl_LocalInvocationIndex; e < BM * BK; e += WG_SIZE) {
            const uint r = e / BK, c = e % BK, m = m_base + r, k = k0 + c;
            sh_a[r * SA + c] = float16_t(m < p.M && k < p.K ? data_a[a_off + m * p.stride_a + k] : 0.0);
        }
        barrier();
        [[unroll]] for (uint kk = 0; kk < BK; kk += FS) {
            FRAG_A fa[FRAG_M];
            FRAG_B fb[FRAG_N];
            [[unroll]] for (uint i = 0; i < FRAG_M; i++)
                coopMatLoad(fa[i], sh_a, (wm + FS * i) * SA + kk, SA, gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint j = 0; j < FRAG_N; j++) {
                FRAG_B f;                           // glslang 15.2 crashes on a tensor load into fb[j] directly
                coopMatLoadTensorNV(f, data_b, b_off,
                                    sliceTensorLayoutNV(layout_b, n_base + wn + FS * j, FS, k0 + kk, FS), transposed);
                fb[j] = f;
            }
            [[unroll]] for (uint i = 0; i < FRAG_M; i++)
                [[unroll]] for (uint j = 0; j < FRAG_N; j++) acc[i][j] = coopMatMulAdd(fa[i], fb[j], acc[i][j]);
        }
    }

    [[unroll]] for (uint i = 0; i < FRAG_M; i++) {
        [[unroll]] for (uint j = 0; j < FRAG_N; j++) {
            const uint m0 = m_base + wm + FS * i, n0 = n_base + wn + FS * j;
            FRAG_ACC d;
            coopMatPerElementNV(d, acc[i][j], epilogue_element, m0, n0, outer, inner);
            coopMatStoreTensorNV(d, data_d, d_off, sliceTensorLayoutNV(layout_d, m0, FS, n0, FS));
        }
    }
}
