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
// Tiles (TILE, a define; src/ops/gemm.c picks one per GEMM by how many workgroups it makes):
//   TILE=32   32 x 32 of D per workgroup, one warp of 32 invocations (2 x 2 fragments of 16 x 16): enough
//             workgroups for small GEMMs (ViT at batch 1: 201 rows, 384 columns);
//   TILE=64   64 x 64, 2 x 2 warps, each warp 32 x 32 = 2 x 2 fragments;
//   TILE=128  128 x 128, 2 x 4 warps (256 invocations), each warp 64 x 32 = 4 x 2 fragments: twice the matrix
//             products per staged element, for GEMMs with enough tiles to fill the GPU (batch 64+, 4096^3).
// Per 32-k step the workgroup stages A (fp32 -> fp16) and B (fp16) into shared memory, [row][k] with a row stride of
// 40 halves (80 bytes: 16-byte aligned rows, and the 8-half pad spreads rows over banks), zeros outside M, N and K;
// each invocation moves 4 (TILE=32: 8) vec4s of A and as many f16vec4s of B, loaded from global memory into registers one step ahead
// (the loads of step k+1 are in flight during the matrix products of step k). Each warp then runs 2 k-steps of
// its fragments' multiply-adds (B's fragments read column-major from the [n][k] tile, i.e. B^T). The epilogue goes
// fragment by fragment through a 16 x 20 fp32 staging tile per warp, and writes D with bounds checks: any M, N, K,
// strides and offsets (vec4 loads when K, the row strides and this batch's offsets are multiples of 4, scalar loads
// otherwise). Grid: (ceil(N / TILE), ceil(M / TILE), batch), the batch index split in two levels as in gemm.comp.
//
// Variants (shaders/variants.cmake), each at both tiles:
//   COOPMAT_NV=1  GL_NV_cooperative_matrix (fcoopmatNV<16|32, gl_ScopeSubgroup, 16, 16>): devices whose
//                 VK_NV_cooperative_matrix lists fp16 x fp16 + fp32 at 16x16x16 and whose subgroups have 32
//                 invocations (one warp = one subgroup). Built when the configured glslang compiles it; its
//                 SPIR-V uses the Vulkan memory model (the device enables vulkanMemoryModel).
//   COOPMAT_KHR=1 the same kernel on GL_KHR_cooperative_matrix (coopmat<float16_t | float, gl_ScopeSubgroup, 16, 16,
//                 use>): devices whose VK_KHR_cooperative_matrix lists fp16 x fp16 + fp32 at 16x16x16 at subgroup
//                 scope and whose subgroups have 32 invocations (NVIDIA; AMD in wave32). Built when the configured
//                 glslang compiles GL_KHR_cooperative_matrix (>= 13; not Debian 12's 12.0); Vulkan memory model too.
//   COOPMAT_NV=0  the same tiling, staging and epilogue with each warp's matrix products in plain fp32 arithmetic
//                 (invocation l of a warp owns rows l, l + 32, ... of its warp tile): VKVIT_COOPMAT_EMULATE=1 runs it
//                 on any device with fp16 arithmetic, so that everything but the cooperative-matrix instructions is
//                 tested on lavapipe.
// ---------------------------------------------------------------------------------------------------------------
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#if defined(COOPMAT_KHR) && COOPMAT_KHR
#define COOPMAT_HW 1                                // matrix products on the device's cooperative matrices
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
// 16 x 16 fragments: A (fp16, rows x k), B (fp16, k x columns), accumulators (fp32).
#define FRAG_A coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define FRAG_B coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define FRAG_ACC coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define LOAD_ROWS(f, buf, off, stride) coopMatLoad(f, buf, off, stride, gl_CooperativeMatrixLayoutRowMajor)
#define LOAD_COLS(f, buf, off, stride) coopMatLoad(f, buf, off, stride, gl_CooperativeMatrixLayoutColumnMajor)
#define MUL_ADD(a, b, c) coopMatMulAdd(a, b, c)
#define STORE_ROWS(f, buf, off, stride) coopMatStore(f, buf, off, stride, gl_CooperativeMatrixLayoutRowMajor)
#elif defined(COOPMAT_NV) && COOPMAT_NV
#define COOPMAT_HW 1
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#define FRAG_A fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FRAG_B fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FRAG_ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define LOAD_ROWS(f, buf, off, stride) coopMatLoadNV(f, buf, off, stride, false)
#define LOAD_COLS(f, buf, off, stride) coopMatLoadNV(f, buf, off, stride, true)
#define MUL_ADD(a, b, c) coopMatMulAddNV(a, b, c)
#define STORE_ROWS(f, buf, off, stride) coopMatStoreNV(f, buf, off, stride, false)
#else
#define COOPMAT_HW 0                                // emulated: plain arithmetic, any device with fp16 math
#endif
#define B_TYPE float16_t
#include "types.glsl"

layout(constant_id = 0) const bool HAS_BIAS = false;
layout(constant_id = 1) const uint ACT = 0;         // epilogue (gemm_epilogue.glsl)
layout(constant_id = 2) const bool HAS_SCALE = false;
layout(constant_id = 3) const bool HAS_RESIDUAL = false;
layout(constant_id = 4) const bool CORRUPT = false; // test hook: adds 1 to every output (the self-check must fail)

#if TILE == 128
#define WARPS_M 2
#define WARPS_N 4
#define FRAG_M 4                                    // 16-row fragments per warp
#define FRAG_N 2                                    // 16-column fragments per warp
#elif TILE == 64
#define WARPS_M 2
#define WARPS_N 2
#define FRAG_M 2
#define FRAG_N 2
#elif TILE == 32
#define WARPS_M 1
#define WARPS_N 1
#define FRAG_M 2
#define FRAG_N 2
#else
#error TILE must be 32, 64 or 128
#endif
#define WARP 32
#define WG_SIZE (WARP * WARPS_M * WARPS_N)
#define WTM (16 * FRAG_M)                           // a warp's rows
#define WTN (16 * FRAG_N)                           // a warp's columns
#define BM (WARPS_M * WTM)
#define BN (WARPS_N * WTN)
#define BK 32
#define SA (BK + 8)                                 // shared row stride of the A and B tiles, in halves
#define SF 20                                       // row stride of a warp's 16 x 16 fp32 staging tile, in floats
#define A_PER (BM * BK / 4 / WG_SIZE)               // vec4s of A each invocation stages per k-step (4 or 8)
#define B_PER (BN * BK / 4 / WG_SIZE)               // f16vec4s of B (4 or 8)
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
shared float sh_c[WARPS_M * WARPS_N * 16 * SF];     // per warp: one 16 x 16 fragment of accumulators, for the epilogue

vec4 reg_a[A_PER];                                  // the next k-step's A and B, on their way to shared memory
f16vec4 reg_b[B_PER];

// Element idx of a tile (BM or BN rows x BK / 4 vec4s): row idx / 8, k offset 4 (idx % 8) within the k-step.
void load_a(const bool VEC, uint base, uint r0, uint k0) {
    [[unroll]] for (uint i = 0; i < A_PER; i++) {
        const uint idx = gl_LocalInvocationIndex + i * WG_SIZE;
        const uint m = r0 + idx / (BK / 4), k = k0 + 4 * (idx % (BK / 4));
        vec4 v = vec4(0.0);
        if (m < p.M) {
            const uint e = base + m * p.stride_a + k;
            if (VEC) {
                if (k < p.K) v = data_a4[e / 4];    // K % 4 == 0: the whole vec4 is inside the row
            } else {
                [[unroll]] for (uint c = 0; c < 4; c++) v[c] = k + c < p.K ? data_a[e + c] : 0.0;
            }
        }
        reg_a[i] = v;
    }
}

void load_b(const bool VEC, uint base, uint r0, uint k0) {
    [[unroll]] for (uint i = 0; i < B_PER; i++) {
        const uint idx = gl_LocalInvocationIndex + i * WG_SIZE;
        const uint n = r0 + idx / (BK / 4), k = k0 + 4 * (idx % (BK / 4));
        f16vec4 v = f16vec4(0.0);
        if (n < p.N) {
            const uint e = base + n * p.stride_b + k;
            if (VEC) {
                if (k < p.K) v = data_b4[e / 4];
            } else {
                [[unroll]] for (uint c = 0; c < 4; c++) v[c] = k + c < p.K ? data_b[e + c] : float16_t(0.0);
            }
        }
        reg_b[i] = v;
    }
}

void store_tiles() {
    [[unroll]] for (uint i = 0; i < A_PER; i++) {
        const uint idx = gl_LocalInvocationIndex + i * WG_SIZE;
        const uint s = (idx / (BK / 4)) * SA + 4 * (idx % (BK / 4));
        const f16vec4 v = f16vec4(reg_a[i]);
        sh_a[s] = v.x, sh_a[s + 1] = v.y, sh_a[s + 2] = v.z, sh_a[s + 3] = v.w;
    }
    [[unroll]] for (uint i = 0; i < B_PER; i++) {
        const uint idx = gl_LocalInvocationIndex + i * WG_SIZE;
        const uint s = (idx / (BK / 4)) * SA + 4 * (idx % (BK / 4));
        const f16vec4 v = reg_b[i];
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

#if COOPMAT_HW
    const uint warp = gl_SubgroupID;                // the host selects this variant only for 32-wide subgroups
    const uint lane = gl_SubgroupInvocationID;
#else
    const uint warp = gl_LocalInvocationIndex / WARP;
    const uint lane = gl_LocalInvocationIndex % WARP;
#endif
    const uint wm = (warp / WARPS_N) * WTM, wn = (warp % WARPS_N) * WTN; // this warp's part of the tile

#if COOPMAT_HW
    FRAG_ACC acc[FRAG_M][FRAG_N];
    [[unroll]] for (uint i = 0; i < FRAG_M; i++)
        [[unroll]] for (uint j = 0; j < FRAG_N; j++) acc[i][j] = FRAG_ACC(0.0);
#else
    float acc[WTM / WARP][WTN];                     // lane owns warp rows lane + 32 q, all WTN columns
    [[unroll]] for (uint q = 0; q < WTM / WARP; q++)
        [[unroll]] for (uint j = 0; j < WTN; j++) acc[q][j] = 0.0;
#endif

    if (vec_a) load_a(true, a_off, m_base, 0);
    else load_a(false, a_off, m_base, 0);
    if (vec_b) load_b(true, b_off, n_base, 0);
    else load_b(false, b_off, n_base, 0);
    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        barrier();                                  // every warp is done with the previous step's tiles
        store_tiles();
        barrier();
        if (k0 + BK < p.K) {                        // the next step's loads overlap this step's products
            if (vec_a) load_a(true, a_off, m_base, k0 + BK);
            else load_a(false, a_off, m_base, k0 + BK);
            if (vec_b) load_b(true, b_off, n_base, k0 + BK);
            else load_b(false, b_off, n_base, k0 + BK);
        }
#if COOPMAT_HW
        [[unroll]] for (uint kk = 0; kk < BK; kk += 16) {
            FRAG_A fa[FRAG_M];
            FRAG_B fb[FRAG_N];
            [[unroll]] for (uint i = 0; i < FRAG_M; i++) LOAD_ROWS(fa[i], sh_a, (wm + 16 * i) * SA + kk, SA);
            // B^T (k x n) is the [n][k] tile read column-major.
            [[unroll]] for (uint j = 0; j < FRAG_N; j++) LOAD_COLS(fb[j], sh_b, (wn + 16 * j) * SA + kk, SA);
            [[unroll]] for (uint i = 0; i < FRAG_M; i++)
                [[unroll]] for (uint j = 0; j < FRAG_N; j++) acc[i][j] = MUL_ADD(fa[i], fb[j], acc[i][j]);
        }
#else
        for (uint kk = 0; kk < BK; kk++) {
            [[unroll]] for (uint q = 0; q < WTM / WARP; q++) {
                const float a = float(sh_a[(wm + lane + WARP * q) * SA + kk]);
                [[unroll]] for (uint j = 0; j < WTN; j++) acc[q][j] += a * float(sh_b[(wn + j) * SA + kk]);
            }
        }
#endif
    }

    // Epilogue, one 16 x 16 fragment at a time through this warp's staging tile; lanes take consecutive columns
    // (16-float runs of a row of D). The barriers are the workgroup's (the emulated warps span several subgroups).
    const uint stage = warp * 16 * SF;
    [[unroll]] for (uint i = 0; i < FRAG_M; i++) {
        [[unroll]] for (uint j = 0; j < FRAG_N; j++) {
            barrier();                              // the previous fragment's staging tile is read
#if COOPMAT_HW
            STORE_ROWS(acc[i][j], sh_c, stage, SF);
#else
            [[unroll]] for (uint q = 0; q < WTM / WARP; q++) {
                const uint r = lane + WARP * q;     // this lane's warp row
                if (r / 16 == i)
                    [[unroll]] for (uint c = 0; c < 16; c++) sh_c[stage + (r % 16) * SF + c] = acc[q][16 * j + c];
            }
#endif
            barrier();
            [[unroll]] for (uint e = 0; e < 8; e++) {
                const uint idx = lane + WARP * e, rr = idx / 16, cc = idx % 16;
                const uint m = m_base + wm + 16 * i + rr, n = n_base + wn + 16 * j + cc;
                if (m < p.M && n < p.N) {
                    const float v = sh_c[stage + rr * SF + cc] + (CORRUPT ? 1.0 : 0.0);
                    data_d[d_off + m * p.stride_d + n] = D_TYPE(gemm_epilogue(v, outer, inner, m, n));
                }
            }
        }
    }
}
