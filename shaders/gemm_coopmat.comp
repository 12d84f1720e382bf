// SPDX-License-Identifier: Apache-2.0
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
//   TILE=32   32 x 32 of D per workgroup (2 x 2 fragments of 16 x 16; 4 x 4 or 4 x 2 of the M = 8 shapes) split in
//             K over 4 warps: each step covers 128 k, each warp multiplies its 32 of them, and the four partial tiles
//             are added in the epilogue.
//             For small GEMMs (ViT at batch 1: 201 rows, 384 columns, K up to 1536), which have few tiles: one warp
//             per tile walking all of K left the GPU waiting on memory (fc2: 48 dependent steps on 84 warps);
//   TILE=64   64 x 64, 2 x 2 warps, each warp 32 x 32 = 2 x 2 fragments (of 16 x 16);
//   TILE=128  128 x 128, 2 x 4 warps (256 invocations), each warp 64 x 32 = 4 x 2 fragments (16 x 16): twice the matrix
//             products per staged element, for GEMMs with enough tiles to fill the GPU (batch 64+, 4096^3).
// Per 32-k step the workgroup stages A (fp32 -> fp16) and B (fp16) into shared memory, [row][k] as uvec4s of 8 halves
// with a row stride of 5 uvec4s (40 halves, 80 bytes: 16-byte stores, and the pad spreads rows over banks), zeros
// outside M, N and K. The tiles are double-buffered: while the warps multiply the fragments of step s out of one
// buffer, the loads of step s + 1 (global -> registers, issued before the products) are stored into the other, so
// one barrier per step suffices. Each invocation moves A_PER groups of 8 A values (two vec4 loads, or scalar loads
// with bounds) and B_PER groups of 8 halves (one uvec4 load when K, B's row stride and offset are multiples of 8).
// Each warp then runs 32 / FK k-steps of its fragments' multiply-adds (B's fragments read column-major from the [n][k]
// tile, i.e. B^T). The epilogue goes fragment by fragment through an FM x (FN + 4) fp32 staging tile per warp (in the
// first A buffer, free by then), and writes D with bounds checks: any M, N, K, strides and offsets. Grid:
// (ceil(N / TILE), ceil(M / TILE), batch), the batch index split in two levels as in gemm.comp.
//
// Variants (shaders/variants.cmake), each at both tiles:
//   COOPMAT_NV=1  GL_NV_cooperative_matrix (fcoopmatNV<16|32, gl_ScopeSubgroup, 16, 16>): devices whose
//                 VK_NV_cooperative_matrix lists fp16 x fp16 + fp32 at 16x16x16 and whose subgroups have 32
//                 invocations (one warp = one subgroup). Built when the configured glslang compiles it; its
//                 SPIR-V uses the Vulkan memory model (the device enables vulkanMemoryModel).
//   COOPMAT_KHR=1 the same kernel on GL_KHR_cooperative_matrix (coopmat<float16_t | float, gl_ScopeSubgroup, FM | FK,
//                 FK | FN, use>): devices whose VK_KHR_cooperative_matrix lists fp16 x fp16 + fp32 at subgroup scope
//                 at the variant's FM x FN x FK (16x16x16: NVIDIA, AMD in wave32; 8x16x16 and 8x8x16: Intel; 8x8x8:
//                 lavapipe), the warp a subgroup of the size the shape needs (src/policy/policy.c). Built when the
//                 configured glslang compiles GL_KHR_cooperative_matrix (>= 13; not Debian 12's 12.0); Vulkan memory
//                 model too.
//   COOPMAT_NV=0  the same tiling, staging, fragment walk and epilogue with each fragment emulated in plain fp32
//                 arithmetic (below: an accumulator is FM x FN / 32 elements per lane of a 32-invocation warp):
//                 VKVIT_COOPMAT_EMULATE=1 runs it on any device with fp16 arithmetic, at 16x16x16 and at Intel's two
//                 M = 8 shapes, so that everything but the cooperative-matrix instructions is tested on lavapipe.
// ---------------------------------------------------------------------------------------------------------------
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// Fragments of FM x FN x FK (M x N x K: A is FM x FK, B FK x FN, the accumulators FM x FN), defines of the variant
// (shaders/variants.cmake), each one a shape a device lists (src/vk/facts.h, VKVIT_COOPMAT_SHAPE_*): 16 x 16 x 16
// (NVIDIA, AMD; the default), 8 x 8 x 8 (lavapipe), 8 x 16 x 16 (Intel Xe2, subgroups of 16) and 8 x 8 x 16 (Intel
// Xe-HPG, subgroups of 8). COOPMAT_FRAG=8 is the old name of 8 x 8 x 8.
#if defined(COOPMAT_FRAG) && COOPMAT_FRAG == 8
#define FM 8
#define FN 8
#define FK 8
#endif
#ifndef FM
#define FM 16
#endif
#ifndef FN
#define FN 16
#endif
#ifndef FK
#define FK 16
#endif
#if (FM != 8 && FM != 16) || (FN != 8 && FN != 16) || (FK != 8 && FK != 16)
#error fragments of 8 or 16 rows, columns and k
#endif
#if defined(COOPMAT_KHR) && COOPMAT_KHR
#define COOPMAT_HW 1                                // matrix products on the device's cooperative matrices
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
// Fragments: A (fp16, FM rows x FK k), B (fp16, FK k x FN columns), accumulators (fp32, FM x FN).
#define FRAG_A coopmat<float16_t, gl_ScopeSubgroup, FM, FK, gl_MatrixUseA>
#define FRAG_B coopmat<float16_t, gl_ScopeSubgroup, FK, FN, gl_MatrixUseB>
#define FRAG_ACC coopmat<float, gl_ScopeSubgroup, FM, FN, gl_MatrixUseAccumulator>
#define LOAD_ROWS(f, buf, off, stride) coopMatLoad(f, buf, off, stride, gl_CooperativeMatrixLayoutRowMajor)
#define LOAD_COLS(f, buf, off, stride) coopMatLoad(f, buf, off, stride, gl_CooperativeMatrixLayoutColumnMajor)
#define MUL_ADD(a, b, c) coopMatMulAdd(a, b, c)
#define STORE_ROWS(f, buf, off, stride) coopMatStore(f, buf, off, stride, gl_CooperativeMatrixLayoutRowMajor)
#elif defined(COOPMAT_NV) && COOPMAT_NV
#if FM != 16 || FN != 16 || FK != 16
#error the NV kernel has 16 x 16 x 16 fragments
#endif
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
#define WTM 64                                      // a warp's rows
#define WTN 32                                      // a warp's columns
#elif TILE == 64
#define WARPS_M 2
#define WARPS_N 2
#define WTM 32
#define WTN 32
#elif TILE == 32
#define WARPS_M 1
#define WARPS_N 1
#define WTM 32
#define WTN 32
#define KSPLIT 4                                    // 4 warps on the same 32 x 32 tile, each a quarter of every k-step
#else
#error TILE must be 32, 64 or 128
#endif
#ifndef KSPLIT
#define KSPLIT 1                                    // warps that share one part of the tile, splitting K
#endif
#if KSPLIT > 1 && WARPS_M * WARPS_N != 1
#error a k-split tile has one warp per k part
#endif
#if COOPMAT_HW
// A warp is one subgroup, of the device's subgroup size (the host sets WARP to it, and WG_SIZE to WARP x the warps of
// the tile, and creates the pipeline with full subgroups of exactly that size: src/ops/gemm.c). The fragments are
// subgroup-scoped, so any size works; NVIDIA's is 32, lavapipe's 4, 8 or 16, AMD's 32 or 64.
layout(constant_id = 5) const uint WARP = 32;
layout(constant_id = 6) const uint WG_SIZE = 32 * WARPS_M * WARPS_N * KSPLIT;
#else
#define WARP 32                                     // an emulated warp: 32 consecutive invocations
#define WG_SIZE (WARP * WARPS_M * WARPS_N * KSPLIT)
#endif
#define FRAG_M (WTM / FM)                           // fragments per warp, down and across
#define FRAG_N (WTN / FN)
#define BM (WARPS_M * WTM)
#define BN (WARPS_N * WTN)
#define BK (32 * KSPLIT)                            // k per step: 32 per warp of a k-split
#define KG (BK / 8)                                 // groups of 8 halves (one uvec4) per tile row and k-step
#ifndef SA_PAD
#define SA_PAD 1                                    // pad rows by one uvec4 (the emulated 128 tile: 0, to fit 32 KiB)
#endif
#define SA (KG + SA_PAD)                            // shared row stride of the A and B tiles, in uvec4s (40 halves)
#define SF (FN + 4)                                 // row stride of a warp's FM x FN fp32 staging tile, in floats
#define A_PER (BM * KG / WG_SIZE)                   // groups of 8 A values each invocation stages per k-step (2)
#define B_PER (BN * KG / WG_SIZE)                   // groups of 8 B halves (2)
#if COOPMAT_HW
layout(local_size_x_id = 6) in;
#else
layout(local_size_x = WG_SIZE) in;
#endif

layout(binding = 0, std430) readonly buffer A { float data_a[]; };
layout(binding = 0, std430) readonly buffer A4 { vec4 data_a4[]; };
layout(binding = 1, std430) readonly buffer B { float16_t data_b[]; };
layout(binding = 1, std430) readonly buffer B8 { uvec4 data_b8[]; };
layout(binding = 3, std430) writeonly buffer D { D_TYPE data_d[]; };

#include "gemm_push.glsl"

#include "gemm_epilogue.glsl"

// Two buffers of [m][k] (A) and [n][k] (B) fp16 tiles, 8 halves per uvec4; after the k loop the first A buffer
// holds the warps' fp32 staging tiles of the epilogue (FM x SF floats = FM x SF / 4 uvec4s per warp).
shared uvec4 sh_a[2 * BM * SA];
shared uvec4 sh_b[2 * BN * SA];
#define STAGE_U4 (FM * SF / 4)                      // uvec4s of one warp's staging tile

vec4 reg_a[A_PER][2];                               // the next k-step's A (fp32) and B (packed fp16), on their way
uvec4 reg_b[B_PER];                                 // to shared memory

// Group idx of a tile (BM or BN rows x KG groups): row idx / KG, k offset 8 (idx % KG) within the k-step.
void load_a(const bool VEC, uint base, uint r0, uint k0) {
    [[unroll]] for (uint i = 0; i < A_PER; i++) {
        const uint idx = gl_LocalInvocationIndex + i * WG_SIZE;
        const uint m = r0 + idx / KG, k = k0 + 8 * (idx % KG);
        vec4 lo = vec4(0.0), hi = vec4(0.0);
        if (m < p.M) {
            const uint e = base + m * p.stride_a + k;
            if (VEC) {                              // K % 4 == 0: each vec4 is inside the row or past its end
                if (k < p.K) lo = data_a4[e / 4];
                if (k + 4 < p.K) hi = data_a4[e / 4 + 1];
            } else {
                [[unroll]] for (uint c = 0; c < 4; c++) {
                    lo[c] = k + c < p.K ? data_a[e + c] : 0.0;
                    hi[c] = k + 4 + c < p.K ? data_a[e + 4 + c] : 0.0;
                }
            }
        }
        reg_a[i][0] = lo;
        reg_a[i][1] = hi;
    }
}

void load_b(const bool VEC, uint base, uint r0, uint k0) {
    [[unroll]] for (uint i = 0; i < B_PER; i++) {
        const uint idx = gl_LocalInvocationIndex + i * WG_SIZE;
        const uint n = r0 + idx / KG, k = k0 + 8 * (idx % KG);
        uvec4 v = uvec4(0);
        if (n < p.N) {
            const uint e = base + n * p.stride_b + k;
            if (VEC) {                              // K % 8 == 0: the whole group is inside the row or past it
                if (k < p.K) v = data_b8[e / 8];
            } else {
                float16_t h[8];
                [[unroll]] for (uint c = 0; c < 8; c++) h[c] = k + c < p.K ? data_b[e + c] : float16_t(0.0);
                [[unroll]] for (uint c = 0; c < 4; c++) v[c] = packFloat2x16(f16vec2(h[2 * c], h[2 * c + 1]));
            }
        }
        reg_b[i] = v;
    }
}

uvec4 pack_halves(vec4 lo, vec4 hi) {
    return uvec4(packFloat2x16(f16vec2(lo.xy)), packFloat2x16(f16vec2(lo.zw)), packFloat2x16(f16vec2(hi.xy)),
                 packFloat2x16(f16vec2(hi.zw)));
}

void store_tiles(uint buf) {
    [[unroll]] for (uint i = 0; i < A_PER; i++) {
        const uint idx = gl_LocalInvocationIndex + i * WG_SIZE;
        sh_a[buf * BM * SA + (idx / KG) * SA + idx % KG] = pack_halves(reg_a[i][0], reg_a[i][1]);
    }
    [[unroll]] for (uint i = 0; i < B_PER; i++) {
        const uint idx = gl_LocalInvocationIndex + i * WG_SIZE;
        sh_b[buf * BN * SA + (idx / KG) * SA + idx % KG] = reg_b[i];
    }
}

#if !COOPMAT_HW
// Emulated fragments, so that the hardware kernels' fragment walk (offsets, k steps, staging, the epilogue's element
// order) runs unchanged on any device: an A or B fragment is the offset of its first row in its staged tile (sh_a,
// sh_b; rows SA uvec4s apart, as the hardware loads read them), an accumulator holds EPL = FM x FN / WARP elements per
// lane, element e of lane l being (l + WARP e) / FN, (l + WARP e) % FN of the fragment.
#define EPL (FM * FN / WARP)
#if EPL < 1 || (FM * FN) % WARP != 0
#error an emulated fragment spreads evenly over the warp's lanes
#endif
struct FragAcc {
    float v[EPL];
};
#define FRAG_A uint
#define FRAG_B uint
#define FRAG_ACC FragAcc
#define LOAD_ROWS(f, buf, off, stride) f = (off)    // A: FM rows of the [m][k] tile from `off`
#define LOAD_COLS(f, buf, off, stride) f = (off)    // B^T: FN rows of the [n][k] tile from `off`
#define MUL_ADD(a, b, c) emu_mul_add(a, b, c)
#define STORE_ROWS(f, buf, off, stride) emu_store(f, off, stride) // buf: always sh_a

// c + A B over the fragment's FK k (FK / 8 uvec4s of each staged row), fp32 products of fp16 values.
FragAcc emu_mul_add(uint a, uint b, FragAcc c) {
    const uint lane = gl_LocalInvocationIndex % WARP;
    [[unroll]] for (uint g = 0; g < FK / 8; g++) {
        [[unroll]] for (uint e = 0; e < EPL; e++) {
            const uint idx = lane + WARP * e;
            const uvec4 av = sh_a[a + (idx / FN) * SA + g], bv = sh_b[b + (idx % FN) * SA + g];
            [[unroll]] for (uint q = 0; q < 4; q++) {
                const vec2 x = vec2(unpackFloat2x16(av[q])), y = vec2(unpackFloat2x16(bv[q]));
                c.v[e] += x.x * y.x;
                c.v[e] += x.y * y.y;
            }
        }
    }
    return c;
}

// The fragment, row-major from uvec4 `off` of sh_a with rows `stride` uvec4s apart (as coopMatStore on uvec4s).
void emu_store(FragAcc f, uint off, uint stride) {
    const uint lane = gl_LocalInvocationIndex % WARP;
    [[unroll]] for (uint e = 0; e < EPL; e++) {
        const uint idx = lane + WARP * e, r = idx / FN, c = idx % FN;
        sh_a[off + r * stride + c / 4][c % 4] = floatBitsToUint(f.v[e]);
    }
}
#endif

void main() {
    const uint m_base = gl_WorkGroupID.y * BM;
    const uint n_base = gl_WorkGroupID.x * BN;
    const uint n_inner = max(p.n_inner, 1u);
    const uint outer = gl_WorkGroupID.z / n_inner, inner = gl_WorkGroupID.z % n_inner;
    const uint a_off = p.a_offset + outer * p.batch_stride_a + inner * p.inner_stride_a;
    const uint b_off = p.b_offset + outer * p.batch_stride_b + inner * p.inner_stride_b;
    const uint d_off = p.d_offset + outer * p.batch_stride_d + inner * p.inner_stride_d;
    const bool vec_a = ((p.K | p.stride_a | a_off) & 3u) == 0;
    const bool vec_b = ((p.K | p.stride_b | b_off) & 7u) == 0;

#if COOPMAT_HW
    const uint warp = gl_SubgroupID;                // the host selects this variant only for 32-wide subgroups
    const uint lane = gl_SubgroupInvocationID;
#else
    const uint warp = gl_LocalInvocationIndex / WARP;
    const uint lane = gl_LocalInvocationIndex % WARP;
#endif
    const uint kw = warp % KSPLIT;                  // this warp's 32 k of every step (KSPLIT > 1)
    const uint wmn = warp / KSPLIT;
    const uint wm = (wmn / WARPS_N) * WTM, wn = (wmn % WARPS_N) * WTN; // this warp's part of the tile

    FRAG_ACC acc[FRAG_M][FRAG_N];
    [[unroll]] for (uint i = 0; i < FRAG_M; i++)
        [[unroll]] for (uint j = 0; j < FRAG_N; j++) {
#if COOPMAT_HW
            acc[i][j] = FRAG_ACC(0.0);
#else
            [[unroll]] for (uint e = 0; e < EPL; e++) acc[i][j].v[e] = 0.0;
#endif
        }

    if (vec_a) load_a(true, a_off, m_base, 0);
    else load_a(false, a_off, m_base, 0);
    if (vec_b) load_b(true, b_off, n_base, 0);
    else load_b(false, b_off, n_base, 0);
    store_tiles(0);
    barrier();
    uint buf = 0;
    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        const bool more = k0 + BK < p.K;
        if (more) {                                 // the next step's loads are in flight during this step's products
            if (vec_a) load_a(true, a_off, m_base, k0 + BK);
            else load_a(false, a_off, m_base, k0 + BK);
            if (vec_b) load_b(true, b_off, n_base, k0 + BK);
            else load_b(false, b_off, n_base, k0 + BK);
        }
        [[unroll]] for (uint kk = 4 * kw; kk < 4 * kw + 4; kk += FK / 8) { // FK halves = FK / 8 uvec4s a step
            FRAG_A fa[FRAG_M];
            FRAG_B fb[FRAG_N];
            [[unroll]] for (uint i = 0; i < FRAG_M; i++)
                LOAD_ROWS(fa[i], sh_a, buf * BM * SA + (wm + FM * i) * SA + kk, SA);
            // B^T (k x n) is the [n][k] tile read column-major.
            [[unroll]] for (uint j = 0; j < FRAG_N; j++)
                LOAD_COLS(fb[j], sh_b, buf * BN * SA + (wn + FN * j) * SA + kk, SA);
            [[unroll]] for (uint i = 0; i < FRAG_M; i++)
                [[unroll]] for (uint j = 0; j < FRAG_N; j++) acc[i][j] = MUL_ADD(fa[i], fb[j], acc[i][j]);
        }
        if (more) store_tiles(buf ^ 1u);            // the other buffer was last read before the previous barrier
        barrier();
        buf ^= 1u;
    }

#if KSPLIT > 1
    // Split K: every warp writes its partial 32 x 32 sums to its own staging tile ([row][col], 8 uvec4s per row, in
    // sh_a: free after the loop's last barrier), then the workgroup adds the KSPLIT partials per output and runs the
    // epilogue, 8 consecutive columns per invocation.
    const uint stage = warp * BM * (BN / 4);
    [[unroll]] for (uint i = 0; i < FRAG_M; i++)
        [[unroll]] for (uint j = 0; j < FRAG_N; j++)
            STORE_ROWS(acc[i][j], sh_a, stage + (FM * i) * (BN / 4) + (FN / 4) * j, BN / 4);
    barrier();
    [[unroll]] for (uint e = 0; e < BM * BN / WG_SIZE; e++) {
        const uint idx = gl_LocalInvocationIndex + WG_SIZE * e, rr = idx / BN, cc = idx % BN;
        const uint m = m_base + rr, n = n_base + cc;
        if (m < p.M && n < p.N) {
            float v = CORRUPT ? 1.0 : 0.0;
            [[unroll]] for (uint w = 0; w < KSPLIT; w++)
                v += uintBitsToFloat(sh_a[w * BM * (BN / 4) + rr * (BN / 4) + cc / 4][cc % 4]);
            data_d[d_off + m * p.stride_d + n] = D_TYPE(gemm_epilogue(v, outer, inner, m, n));
        }
    }
#else
    // Epilogue, one FM x FN fragment at a time through this warp's staging tile (in sh_a, free after the loop's last
    // barrier); lanes take consecutive columns (runs of FN floats of a row of D). The hardware warps are subgroups and
    // sync as such; the emulated warps span several subgroups and use the workgroup's barriers.
    const uint stage = warp * STAGE_U4;
    [[unroll]] for (uint i = 0; i < FRAG_M; i++) {
        [[unroll]] for (uint j = 0; j < FRAG_N; j++) {
#if COOPMAT_HW
            subgroupMemoryBarrierShared();          // the previous fragment's staging tile is read
            subgroupBarrier();
            STORE_ROWS(acc[i][j], sh_a, stage, SF / 4);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
#else
            barrier();
            STORE_ROWS(acc[i][j], sh_a, stage, SF / 4);
            barrier();
#endif
            [[unroll]] for (uint e = 0; e < FM * FN / WARP; e++) { // the fragment, WARP elements at a time
                const uint idx = lane + WARP * e, rr = idx / FN, cc = idx % FN;
                const uint m = m_base + wm + FM * i + rr, n = n_base + wn + FN * j + cc;
                if (m < p.M && n < p.N) {
                    const uint u = sh_a[stage + rr * (SF / 4) + cc / 4][cc % 4];
                    const float v = uintBitsToFloat(u) + (CORRUPT ? 1.0 : 0.0);
                    data_d[d_off + m * p.stride_d + n] = D_TYPE(gemm_epilogue(v, outer, inner, m, n));
                }
            }
        }
    }
#endif
}
