// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
// ---------------------------------------------------------------------------------------------------------------
// GEMM for CPU Vulkan devices (Mesa llvmpipe/lavapipe), same contract as gemm.comp:
//     D[b][m][n] = epilogue( sum_k A[b][m][k] * B[b][n][k] )             A: (M, K)  B: (N, K)  D: (M, N)
//
// Why this layout (measured on Mesa 22.3 llvmpipe, AVX2, subgroup size 8; see docs in the GEMM report):
//   * Every SSBO (and shared-memory) load is a per-lane scalar loop with a bounds check and a variable-index
//     vector insert that LLVM lowers through the stack (a store-forwarding stall per element): ~20-40 CPU cycles
//     per float per lane, whether the address is uniform or not. A vector FMA costs ~0.5 cycle. So the kernel is
//     built to load each float exactly once per subgroup and reuse it as often as possible:
//       - lane l owns the output columns n0 + l + 8j (j < TN): B is loaded per lane (its own rows of B, vec4 along
//         K) and each loaded B float feeds one FMA per output row of the tile;
//       - A is loaded with the 8 lanes spread along K (lane l holds A[m][k0+4l .. k0+4l+3]) and each float is
//         handed to all lanes with subgroupShuffle (one vpermd: cheaper than subgroupBroadcast on llvmpipe),
//         feeding TN FMAs per lane.
//   * The order of the products (VKVIT_GEMM_CPU_LANE). LLVM's schedulers, left alone, compute the unrolled row
//     column by column (two of the TN sums over all 64 k, then the next two), so each of the 64 broadcast A values
//     is spilled once and reloaded three times: on a Zen 4 core the loop was bound by its loads into the FP
//     registers (llvm-mca: 626 cycles per row and chunk, 413 vmovaps). The shuffles of lane L therefore take their
//     source index through `dep & p.zero`, where p.zero is a push constant the host always sets to 0 and dep the
//     bits of every running sum two lanes earlier: a data dependency LLVM cannot see through, which keeps the
//     products lane by lane with all TN sums in registers (71 vmovaps, 522 cycles; `vkvit bench gemm` 1.10-1.15x).
//   * acc is stored [TN][BM + 1]: NIR splits it into TN arrays (its column index is always constant), and with
//     [BM][TN] those lay 8 KiB apart, so the per-lane stores of one column and the loads of the next shared their
//     address bits 0-11 (4K aliasing: a false store-to-load dependency per element). The padding row moves each
//     array by 32 bytes (1.05-1.15x more, and the variants with an epilogue no longer 1.25x slower than without).
//   * No shared memory and no barrier (barriers turn the shader into coroutines that spill state).
//   * The output rows are a *dynamic* loop over the accumulator array acc[*][i], so the unrolled code is one row x
//     one 64-k chunk: the pipeline compiles in one to two seconds, and rows past M cost nothing (no M padding
//     waste). acc is a private array at a loop-dependent index: llvmpipe reads it lane by lane and writes it with
//     a masked scalar store per lane and element (about a third of the time at K = 384 with 32-k chunks, measured
//     with perf on the JIT code), so K goes in 64-k chunks (32 where that pads K less; 96 measured slower: the B
//     chunk outgrows L1), the first chunk starts from zero and the last applies the epilogue and stores D
//     (gemm_chunk): acc is written K / 64 - 1 times per row, never when K <= 64.
//   * llvmpipe runs both sides of an `if` under a lane mask (and a loop body at least once): choices that do not
//     depend on the lane are specialization constants or separate function copies, not branches.
//
// Tile: one subgroup (= one workgroup of 8 invocations) computes BM rows x (8*TN) columns, K in chunks of 32 * KCH.
// Grid: (ceil(N / (8*TN)), ceil(M / BM), batch), z = outer * n_inner + inner (two-level batch, src/ops/gemm.h).
// Any M, N, K: vec4 loads when the host finds K, the A/B row strides and every batch's A/B start offsets multiples
// of 4 (specialization constant VEC4: a runtime branch would cost both paths, see gemm_chunk), otherwise a
// scalar-load path (same structure); columns past N clamp their loads and skip stores.
// ---------------------------------------------------------------------------------------------------------------
// B_F16: the B operand (the weights) is stored as fp16 (GL_EXT_shader_16bit_storage: storage and conversion only,
// no fp16 arithmetic, so only storageBuffer16BitAccess is required); accumulation stays fp32.
// F16_MATH (implies B_F16; needs shaderFloat16 + storageBuffer16BitAccess): fp16 arithmetic, as in gemm.comp. B stays
// in fp16 registers (f16vec4, no conversion); each lane converts its A vec4 to fp16 and packs it into two uints
// (packFloat2x16), which subgroupShuffle hands to every lane (a plain 32-bit shuffle: no
// shaderSubgroupExtendedTypes needed); products go into an f16vec2 partial sum per output with packed FMAs and are
// added into the fp32 accumulator every F16_CHUNK = 16 k (after lanes 0-3 and after lanes 4-7 of a 32-k chunk).
// Chunk and error bound: gemm.comp and src/ops/gemm.h (VKVIT_GEMM_F16_CHUNK).
#if defined(F16_MATH) && F16_MATH
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#undef B_F16
#define B_F16 1
#endif
#if defined(TEXEL) && TEXEL
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#if defined(B_F16) && B_F16
#extension GL_EXT_shader_16bit_storage : require
#define B_TYPE float16_t
#define B4_TYPE f16vec4
#else
#define B4_TYPE vec4
#endif
#include "types.glsl"

layout(constant_id = 0) const uint BM = 256;        // output rows per workgroup (<= 256)
layout(constant_id = 2) const bool HAS_BIAS = false;
layout(constant_id = 3) const uint ACT = 0;         // epilogue (gemm_epilogue.glsl)
layout(constant_id = 4) const bool HAS_SCALE = false;
layout(constant_id = 5) const bool HAS_RESIDUAL = false;
// CAUSAL: work the caller allows skipping (VKVIT_GEMM_CAUSAL_* in gemm.h; the mLSTM's quadratic form): 0 none;
// 1 A[m][k] = 0 for k > m, 2 A[m][k] = 0 for k < m (so a K chunk skips the rows it adds nothing to);
// 3 D[m][n] for n > m, 4 D[m][n] for n < m is not needed (so a tile skips the rows that need none of its columns,
// leaving their D as it was).
// PAIRS (TEXEL only): D is written as 64-bit pairs of columns (2c, 2c + 1). The host sets it where D's row stride and
// every batch's D start are even and N is even, or odd with column N free to overwrite (vkvit__gemm_push_pairs): a
// pair is wholly inside the matrix or ends on that spare column.
#if defined(GEMM_TN)
// The build-time unrolled variants (shaders/variants.cmake, GEMM_TN / GEMM_KCH): TN and KCH fixed, with the vec4
// loads, the pair stores and no causal skipping, and every loop over them unrolled by spirv-opt. lavapipe (Mesa 22.3)
// unrolls the spec-constant loops itself at pipeline creation, 0.2-0.3 s of NIR passes per GEMM pipeline; handed the
// unrolled code it creates the pipeline 2-3x faster, and the JIT code is the same. The host's spec entries 1 and 6-9
// are then unused.
const uint TN = GEMM_TN;
const bool VEC4 = true;
const uint KCH = GEMM_KCH;
const uint CAUSAL = 0;
const bool PAIRS = true;
#else
layout(constant_id = 1) const uint TN = 32;         // output columns per lane (<= 32); workgroup: 8*TN columns
layout(constant_id = 6) const bool VEC4 = false;    // vec4 loads (alignment above); false: the scalar-load path
layout(constant_id = 7) const uint KCH = 2;         // K chunk: KCH 32-k slices (1 or 2; the host's bk / 32)
layout(constant_id = 8) const uint CAUSAL = 0;
layout(constant_id = 9) const bool PAIRS = false;
#endif
// ONE_CHUNK: K <= 32 * KCH (the host's vkvit__gemm_one_chunk), so the one chunk is both the first and the last: acc
// is never read or written. Without it the row loop still read acc (per lane) and then selected zero over it
// (measure with `vkvit bench gemm --shape 256x256x64`; figures in docs/logs/2026-12-02-kernel-choices.md).
layout(constant_id = 10) const bool ONE_CHUNK = false;

layout(local_size_x = 8) in;                        // one llvmpipe SIMD vector (subgroup size 8)

#if defined(TEXEL) && TEXEL
// A and B are uniform texel buffers (RGBA32F; B RGBA16F when B_F16), read with texelFetch: element e is component
// e % 4 of texel e / 4. llvmpipe gathers a texel fetch into SIMD registers, while it turns every SSBO load into a
// per-lane scalar loop that goes through the stack (measured on Mesa 22.3: ~11 ns vs ~220 ns per vec4 per
// subgroup). Binding offsets are texel-aligned (the graph's tensors start on 256-byte boundaries).
layout(binding = 0) uniform samplerBuffer tex_a;
layout(binding = 1) uniform samplerBuffer tex_b;
#else
layout(binding = 0, std430) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 0, std430) readonly buffer A4 { vec4 data_a4[]; };
layout(binding = 1, std430) readonly buffer B { B_TYPE data_b[]; };
layout(binding = 1, std430) readonly buffer B4 { B4_TYPE data_b4[]; };
#endif
layout(binding = 3, std430) writeonly buffer D { D_TYPE data_d[]; };
#if defined(TEXEL) && TEXEL
// llvmpipe stores a storage-buffer element per lane in a scalar loop with a bounds check (~18 instructions a lane,
// the same for 4 bytes or 8): D's 64 floats a row took 8 % of a K = 384 GEMM and a third at K = 64. PAIRS halves
// the iterations: every lane gathers two adjacent columns with shuffles and stores them as one uint64_t.
layout(binding = 3, std430) writeonly buffer D2 { uint64_t data_d2[]; };
#endif

#include "gemm_push.glsl"

#include "gemm_epilogue.glsl"

// Private arrays sized by the specialised tile (BM x TN accumulators), not by the largest one: NVIDIA's driver
// refuses to compile 36 KiB of per-invocation arrays ("failed to validate local memory"), and the tests run every
// variant on every device.
#define MAX_BM BM
#define MAX_TN TN
#define KC4 8                                       // a K slice in vec4s: 8 lanes x vec4 = 32 k

ACC_TYPE acc[MAX_TN][MAX_BM + 1];                  // running sums between K chunks; + 1: no 4K aliasing (above)

#if defined(TEXEL) && TEXEL
float fetch1(const bool IS_A, uint e) {
    const vec4 t = IS_A ? texelFetch(tex_a, int(e >> 2)) : texelFetch(tex_b, int(e >> 2));
    return t[e & 3u];
}
#define FETCH4(IS_A, t) ((IS_A) ? texelFetch(tex_a, int(t)) : texelFetch(tex_b, int(t)))
#else
float fetch1(const bool IS_A, uint e) { return IS_A ? float(data_a[e]) : float(data_b[e]); }
#define FETCH4(IS_A, t) ((IS_A) ? data_a4[t] : vec4(data_b4[t]))
#endif

// Four consecutive k of row `row_off` (element offset of the row in A, or in B when !IS_A), starting at k = 4*k4;
// zeros past K. VEC: the row start and K are multiples of 4, so one vec4 load (clamped to the row, masked) does it.
vec4 load_row4(const bool IS_A, const bool VEC, uint row_off, uint k4) {
    if (VEC) {
        const uint kq = p.K / 4;
        const vec4 v = FETCH4(IS_A, row_off / 4 + min(k4, kq - 1));
        return !IS_A || k4 < kq ? v : vec4(0.0);
    }
    vec4 v;
    [[unroll]] for (uint c = 0; c < 4; c++) {
        const uint k = 4 * k4 + c;
        const float x = fetch1(IS_A, row_off + min(k, p.K - 1));
        v[c] = !IS_A || k < p.K ? x : 0.0;
    }
    return v;
}
#define load_a(VEC, row_off, k4) load_row4(true, VEC, row_off, k4)
#define load_b(VEC, row_off, k4) load_row4(false, VEC, row_off, k4)

#if defined(F16_MATH) && F16_MATH
// Four consecutive k of B row `row_off` as fp16, as load_b (zeros past K).
f16vec4 load_b16(const bool VEC, uint row_off, uint k4) {
#if defined(TEXEL) && TEXEL
    return f16vec4(load_b(VEC, row_off, k4));       // the RGBA16F texel, exact through fp32
#else
    if (VEC) {
        const uint kq = p.K / 4;
        const f16vec4 v = data_b4[row_off / 4 + min(k4, kq - 1)];
        return k4 < kq ? v : f16vec4(0.0);
    }
    f16vec4 v;
    [[unroll]] for (uint c = 0; c < 4; c++) {
        const uint k = 4 * k4 + c;
        const float16_t x = data_b[row_off + min(k, p.K - 1)];
        v[c] = k < p.K ? x : float16_t(0.0);
    }
    return v;
#endif
}
#define B_CHUNK_TYPE f16vec4
#define LOAD_B_CHUNK load_b16
#else
#define B_CHUNK_TYPE vec4
#define LOAD_B_CHUNK load_b
#endif

// t[0..TN) += this lane's columns of A row `av` (lane l holds A[m][k + 4l .. k + 4l + 3]) x the 32-k slice
// b[*][c .. c + 8) of this lane's B rows: each A float is handed to every lane with subgroupShuffle(x, L).
#if defined(F16_MATH) && F16_MATH
// fp16 products: A converted to fp16 and packed in two uints per lane (a plain 32-bit shuffle, no
// shaderSubgroupExtendedTypes), f16vec2 partial sums added into the fp32 t every 16 k (VKVIT_GEMM_F16_CHUNK).
#define VKVIT_GEMM_CPU_LANE16(L)                                                                      \
    {                                                                                                 \
        const f16vec2 s01 = unpackFloat2x16(subgroupShuffle(ap.x, L));                                \
        const f16vec2 s23 = unpackFloat2x16(subgroupShuffle(ap.y, L));                                \
        [[unroll]] for (uint j = 0; j < TN; j++) {                                                    \
            part[j] = fma(s01, b[j][c + L].xy, part[j]);                                              \
            part[j] = fma(s23, b[j][c + L].zw, part[j]);                                              \
        }                                                                                             \
    }
#define VKVIT_GEMM_CPU_FLUSH16                                                                        \
    [[unroll]] for (uint j = 0; j < TN; j++) {                                                        \
        t[j] += float(part[j].x) + float(part[j].y);                                                  \
        part[j] = f16vec2(0.0);                                                                       \
    }
#define VKVIT_GEMM_CPU_SLICE(av, c)                                                                   \
    {                                                                                                 \
        const f16vec4 ah = f16vec4(av);                                                               \
        const uvec2 ap = uvec2(packFloat2x16(ah.xy), packFloat2x16(ah.zw));                           \
        f16vec2 part[MAX_TN];                                                                         \
        [[unroll]] for (uint j = 0; j < TN; j++) part[j] = f16vec2(0.0);                              \
        VKVIT_GEMM_CPU_LANE16(0) VKVIT_GEMM_CPU_LANE16(1) VKVIT_GEMM_CPU_LANE16(2) VKVIT_GEMM_CPU_LANE16(3) \
        VKVIT_GEMM_CPU_FLUSH16                      /* k .. k + 15 */                                 \
        VKVIT_GEMM_CPU_LANE16(4) VKVIT_GEMM_CPU_LANE16(5) VKVIT_GEMM_CPU_LANE16(6) VKVIT_GEMM_CPU_LANE16(7) \
        VKVIT_GEMM_CPU_FLUSH16                      /* k + 16 .. k + 31 */                            \
    }
#else
// Lane L's four A values reach every lane through shuffles from lane L + (dep_old & zmask), zmask = p.zero and
// dep_old the bits of every running sum after lane L - 2: the ordering dependency of the header. Each sum takes its
// products one k at a time.
#define VKVIT_GEMM_CPU_LANE(L)                                                                        \
    {                                                                                                 \
        const uint src = L + (dep_old & zmask);                                                       \
        [[unroll]] for (uint q = 0; q < 4; q++) {                                                     \
            const float sq = subgroupShuffle(av[q], src);                                             \
            [[unroll]] for (uint j = 0; j < TN; j++) t[j] += sq * b[j][c + L][q];                     \
        }                                                                                             \
        dep_old = dep_new;                                                                            \
        dep_new = 0;                                                                                  \
        [[unroll]] for (uint j = 0; j < TN; j++) dep_new |= floatBitsToUint(t[j]);                    \
    }
#define VKVIT_GEMM_CPU_SLICE(av, c)                                                                   \
    {                                                                                                 \
        VKVIT_GEMM_CPU_LANE(0) VKVIT_GEMM_CPU_LANE(1) VKVIT_GEMM_CPU_LANE(2) VKVIT_GEMM_CPU_LANE(3)   \
        VKVIT_GEMM_CPU_LANE(4) VKVIT_GEMM_CPU_LANE(5) VKVIT_GEMM_CPU_LANE(6) VKVIT_GEMM_CPU_LANE(7)   \
    }
#endif

// Row m of D from its finished sums t (this lane's columns n0 + lane + 8 j), through the epilogue.
void gemm_store_row(ACC_TYPE t[MAX_TN], uint m, uint n0, uint d_off, uint outer, uint inner, float col_bias[MAX_TN],
                    float col_scale[MAX_TN]) {
    const uint lane = gl_SubgroupInvocationID;
    uint j_plain = 0;                               // the first column block stored one float per lane
#if defined(TEXEL) && TEXEL
    if (PAIRS) {
        // Columns n0 + 16q .. + 15 are t[2q] (lane l: column 16q + l) and t[2q + 1] (16q + 8 + l); lane l stores
        // columns 16q + 2l and 16q + 2l + 1, from lanes 2l and 2l + 1 of t[2q] (l < 4) or of t[2q + 1] (l >= 4).
        // The shuffles take every lane's epilogue (its residual read included) before any lane stores, so an
        // in-place residual (R = D) still reads each element before it is written.
        [[unroll]] for (uint q = 0; q < TN / 2; q++) {
            const uint na = n0 + 16 * q + lane, nb = na + 8;
            const float ea = gemm_epilogue_col(t[2 * q], col_bias[2 * q], col_scale[2 * q], outer, inner, m,
                                               min(na, p.N - 1));
            const float eb = gemm_epilogue_col(t[2 * q + 1], col_bias[2 * q + 1], col_scale[2 * q + 1], outer, inner,
                                               m, min(nb, p.N - 1));
            // Every lane shuffles both blocks and then selects: a shuffle inside `lane < 4 ? .. : ..` would run with
            // half the lanes inactive and read the other half, which is undefined (it gave NaN on llvmpipe, varying
            // with the host's ISA and with semantics-preserving spirv-opt passes; docs/kernels.md).
            const uint src_lo = (2 * lane) & 7u, src_hi = (2 * lane + 1) & 7u;
            const vec2 pair_lo = subgroupShuffle(vec2(ea, eb), src_lo);
            const vec2 pair_hi = subgroupShuffle(vec2(ea, eb), src_hi);
            const float lo = lane < 4 ? pair_lo.x : pair_lo.y;
            const float hi = lane < 4 ? pair_hi.x : pair_hi.y;
            const uint n = n0 + 16 * q + 2 * lane;  // even: n + 1 < N, or n + 1 = N, the spare column
            if (n < p.N)
                data_d2[(d_off + m * p.stride_d + n) / 2] =
                    packUint2x32(uvec2(floatBitsToUint(lo), floatBitsToUint(hi)));
        }
        j_plain = TN / 2 * 2;                       // an odd TN leaves its last block
    }
#endif
    [[unroll]] for (uint j = j_plain; j < TN; j++) {
        const uint n = n0 + 8 * j + lane;
        if (n < p.N)
            data_d[d_off + m * p.stride_d + n] =
                D_TYPE(gemm_epilogue_col(t[j], col_bias[j], col_scale[j], outer, inner, m, n));
    }
}

// One K chunk (KCH x 32 k from vec4 index c0) of the workgroup's tile. This lane's B rows for the chunk (TN x 8 * KCH
// vec4) are loaded once and feed every output row; the rows are a dynamic loop whose running sums live in acc[*][i]
// between chunks. acc is a private array at a loop-dependent index, which llvmpipe reads lane by lane and writes
// with a masked scalar store per lane and element (the costly part); so nothing initialises it (the first chunk
// selects zero over what it reads), and the LAST chunk applies the epilogue and stores D instead of writing acc:
// a GEMM with K <= 32 * KCH never writes acc. (llvmpipe runs both sides of an `if` under a lane mask, its masked
// stores included, hence two copies of this function rather than a branch on the chunk index.)
void gemm_chunk(const bool VEC, const bool LAST, uint c0, uint a_off, uint m0, uint i_lo, uint i_hi, uint n0,
                uint d_off, uint outer, uint inner, uint b_rows[MAX_TN], float col_bias[MAX_TN],
                float col_scale[MAX_TN]) {
    const uint lane = gl_SubgroupInvocationID;
    B_CHUNK_TYPE b[MAX_TN][KC4 * KCH];
    [[unroll]] for (uint j = 0; j < TN; j++)
        [[unroll]] for (uint c = 0; c < KC4 * KCH; c++) b[j][c] = LOAD_B_CHUNK(VEC, b_rows[j], c0 + c);
    // The next row's A is loaded while this row computes (hides its cache misses). Rows i_lo .. i_hi - 1 of the tile.
    const uint i_last = i_hi > i_lo ? i_hi - 1 : 0; // the last row to read (row 0 of the tile when there is none)
    vec4 a_next[KCH];
    [[unroll]] for (uint h = 0; h < KCH; h++)
        a_next[h] = load_a(VEC, a_off + (m0 + min(i_lo, i_last)) * p.stride_a, c0 + 8 * h + lane);
    const uint zmask = p.zero;                      // read once here: llvmpipe runs no LICM
    [[dont_unroll]] for (uint i = i_lo; i < i_hi; i++) {
        uint dep_old = 0, dep_new = 0;
        vec4 a_row[KCH];
        [[unroll]] for (uint h = 0; h < KCH; h++) a_row[h] = a_next[h];
        const uint i_next = min(i + 1, i_last);
        [[unroll]] for (uint h = 0; h < KCH; h++)
            a_next[h] = load_a(VEC, a_off + (m0 + i_next) * p.stride_a, c0 + 8 * h + lane);
        // The row's first chunk starts from zero: chunk 0, or (CAUSAL 2) the chunk whose k range holds m.
        const bool first = ONE_CHUNK || c0 == 0 || (CAUSAL == 2 && m0 + i >= 4 * c0);
        ACC_TYPE t[MAX_TN];
        [[unroll]] for (uint j = 0; j < TN; j++) t[j] = first ? 0.0 : acc[j][i];
        [[unroll]] for (uint h = 0; h < KCH; h++) {
            const vec4 av = a_row[h];
            const uint c = 8 * h;
            VKVIT_GEMM_CPU_SLICE(av, c)
        }
        if (LAST) {
            gemm_store_row(t, m0 + i, n0, d_off, outer, inner, col_bias, col_scale);
        } else {
            [[unroll]] for (uint j = 0; j < TN; j++) acc[j][i] = t[j];
        }
    }
}

// Stores rows i_lo .. i_hi - 1 of the tile without computing: their running sums (from_acc), or zero sums.
void gemm_store_rows(uint i_lo, uint i_hi, const bool from_acc, uint m0, uint n0, uint d_off, uint outer, uint inner,
                     float col_bias[MAX_TN], float col_scale[MAX_TN]) {
    [[dont_unroll]] for (uint i = i_lo; i < i_hi; i++) {
        ACC_TYPE t[MAX_TN];
        [[unroll]] for (uint j = 0; j < TN; j++) t[j] = from_acc ? acc[j][i] : 0.0;
        gemm_store_row(t, m0 + i, n0, d_off, outer, inner, col_bias, col_scale);
    }
}

// The rows of the tile that K chunk [k0, k1) adds something to (CAUSAL 1, 2), within [i_lo, i_hi).
void chunk_rows(uint m0, uint k0, uint k1, inout uint i_lo, inout uint i_hi) {
    if (CAUSAL == 1) i_lo = max(i_lo, min(i_hi, k0 > m0 ? k0 - m0 : 0));          // rows m >= k0
    if (CAUSAL == 2) i_hi = min(i_hi, k1 > m0 ? k1 - m0 : 0);                     // rows m <= k1 - 1
}

// The workgroup's tile: every chunk but the last (a loop llvmpipe enters once, masked off, when there is none),
// then the last.
void gemm_tile(const bool VEC, uint a_off, uint m0, uint m_count, uint n0, uint d_off, uint outer, uint inner,
               uint b_rows[MAX_TN], float col_bias[MAX_TN], float col_scale[MAX_TN]) {
    const uint k4_end = (p.K + 3) / 4, CH = 32 * KCH;
    const uint c_last = ONE_CHUNK ? 0 : (k4_end - 1) / (KC4 * KCH) * (KC4 * KCH);
    // The rows that need any of this tile's columns (CAUSAL 3, 4); the others are skipped, D left as it was.
    uint r_lo = 0, r_hi = m_count;
    if (CAUSAL == 3) r_lo = min(m_count, n0 > m0 ? n0 - m0 : 0);                  // rows m >= n0
    if (CAUSAL == 4) r_hi = min(m_count, n0 + 8 * TN > m0 ? n0 + 8 * TN - m0 : 0); // rows m <= n0 + 8 TN - 1
    if (!ONE_CHUNK) {
        for (uint c0 = 0; c0 < c_last; c0 += KC4 * KCH) {
            uint i_lo = r_lo, i_hi = r_hi;
            chunk_rows(m0, 4 * c0, 4 * c0 + CH, i_lo, i_hi);
            gemm_chunk(VEC, false, c0, a_off, m0, i_lo, i_hi, n0, d_off, outer, inner, b_rows, col_bias, col_scale);
        }
    }
    uint i_lo = r_lo, i_hi = r_hi;
    chunk_rows(m0, 4 * c_last, p.K, i_lo, i_hi);
    gemm_chunk(VEC, true, c_last, a_off, m0, i_lo, i_hi, n0, d_off, outer, inner, b_rows, col_bias, col_scale);
    // Rows the last chunk adds nothing to: their sums are complete (CAUSAL 1), or they never had any (CAUSAL 2:
    // rows m >= K).
    if (CAUSAL == 1) gemm_store_rows(r_lo, i_lo, true, m0, n0, d_off, outer, inner, col_bias, col_scale);
    if (CAUSAL == 2) gemm_store_rows(i_hi, r_hi, false, m0, n0, d_off, outer, inner, col_bias, col_scale);
}

void main() {
    const uint lane = gl_SubgroupInvocationID;
    const uint m0 = gl_WorkGroupID.y * BM;
    const uint n0 = gl_WorkGroupID.x * 8 * TN;
    const uint m_count = min(BM, p.M - m0);
    // Two-level batch (push constants): z = outer * n_inner + inner.
    const uint n_inner = max(p.n_inner, 1u);
    const uint outer = gl_WorkGroupID.z / n_inner, inner = gl_WorkGroupID.z % n_inner;
    const uint a_off = p.a_offset + outer * p.batch_stride_a + inner * p.inner_stride_a;
    const uint b_off = p.b_offset + outer * p.batch_stride_b + inner * p.inner_stride_b;
    const uint d_off = p.d_offset + outer * p.batch_stride_d + inner * p.inner_stride_d;

    uint b_rows[MAX_TN];                            // element offset of each of this lane's B rows (clamped to N)
    float col_bias[MAX_TN], col_scale[MAX_TN];      // the epilogue's per-column terms, read once (SSBO reads are slow)
    [[unroll]] for (uint j = 0; j < TN; j++) {
        const uint n = min(n0 + 8 * j + lane, p.N - 1);
        b_rows[j] = b_off + n * p.stride_b;
        col_bias[j] = gemm_column_bias(n);
        col_scale[j] = gemm_column_scale(n);
    }
    gemm_tile(VEC4, a_off, m0, m_count, n0, d_off, outer, inner, b_rows, col_bias, col_scale);
}
