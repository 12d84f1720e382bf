// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Row softmax in place, fp32 (the middle step of the unfused attention path):
//
//     S[r][j] = exp(S[r][j] - max_j S[r]) / sum_j exp(S[r][j] - max_j S[r])     j < n
//     S[r][j] = 0                                                              n <= j < n_pad
//
// over `rows` rows of element (r, j) = data_s[offset + r * stride + j]. The zeroed tail [n, n_pad) lets the next
// GEMM run with K = n_pad, a multiple of 4 (vec4 loads), against a vT whose padding columns are zero too.
//
// Two work splits (specialization constant ROW_PER_WG, chosen by the host from vkvit__caps.cpu_device):
//
// CPU devices (ROW_PER_WG false): one invocation per row (grid-stride over rows), WG_SIZE rows per workgroup. On
// llvmpipe the 8-lane SIMD vector then holds 8 rows that run the same uniform loop over j, so the max and the sum
// need no cross-lane reduction, no shared memory and no barrier (all expensive there). Each row is read as vec4s
// (offset, stride and n_pad are multiples of 4: the host lays the scores out so) in two passes: pass 1 the online
// max and sum, m' = max(m, x), l' = l * exp(m - m') + sum exp(x - m') (m starts at -FLT_MAX, finite, so never
// inf - inf; components past n count as -FLT_MAX, whose exp is 0), pass 2 normalises and writes one vec4 per four
// scores. llvmpipe makes every per-element access expensive: a texel fetch is a function call whichever component
// is used, a store a per-lane loop, and a private array at a loop-dependent index a per-lane gather and scatter
// (which a row cached in registers was: about 2x slower on ViT-5-S; docs/logs/2026-12-02-kernel-choices.md).
//
// GPUs (ROW_PER_WG true): one workgroup per row (grid-stride over rows), invocation i on columns i, i + WG_SIZE, ...;
// the max and the sum are workgroup reductions (shaders/reduce.glsl: subgroup arithmetic in the *_subgroup variant,
// the shared-memory tree otherwise). Each invocation writes exactly the columns it read.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(constant_id = 0) const uint WG_SIZE = 8;     // rows per workgroup (8 = one llvmpipe SIMD vector)
layout(constant_id = 1) const bool ROW_PER_WG = false; // true: a workgroup shares each row (GPUs)
layout(local_size_x_id = 0) in;

#define REDUCE_WG WG_SIZE
#define REDUCE_T float
#include "reduce.glsl"

layout(binding = 0, std430) buffer S { float data_s[]; };
layout(binding = 0, std430) buffer S4 { vec4 data_s4[]; };
// Reads: the same scores through binding 0, or where TEXEL=1 (CPU devices with caps.texel_reads) through binding 1,
// a uniform texel buffer (RGBA32F) of the same range, which llvmpipe reads with SIMD gathers instead of a per-lane
// scalar loop (gemm_cpu.comp). Every score is read before this invocation writes it, and by no other invocation.
#if defined(TEXEL) && TEXEL
layout(binding = 1) uniform samplerBuffer tex_s;
#define read_s(e) texelFetch(tex_s, int((e) >> 2))[(e) & 3u]
#define read_s4(i) texelFetch(tex_s, int(i))
#else
#define read_s(e) data_s[e]
#define read_s4(i) data_s4[i]
#endif

layout(push_constant) uniform Push {
    uint rows;                                      // number of rows
    uint n;                                         // softmax length (>= 1)
    uint n_pad;                                     // columns n .. n_pad-1 are set to 0 (n_pad >= n)
    uint stride;                                    // row stride in elements (>= n_pad)
    uint offset;                                    // element offset of row 0
} p;

const float NEG_BIG = -3.402823466e38;              // -FLT_MAX

// One row r shared by the workgroup (ROW_PER_WG).
void softmax_row_wg(uint r) {
    const uint tid = gl_LocalInvocationID.x, base = p.offset + r * p.stride;
    float m = NEG_BIG;
    [[dont_unroll]] for (uint j = tid; j < p.n; j += WG_SIZE) m = max(m, read_s(base + j));
    m = reduce_max(m);
    float l = 0.0;
    [[dont_unroll]] for (uint j = tid; j < p.n; j += WG_SIZE) l += exp(read_s(base + j) - m);
    const float inv = 1.0 / reduce_sum(l);
    [[dont_unroll]] for (uint j = tid; j < p.n; j += WG_SIZE) data_s[base + j] = exp(read_s(base + j) - m) * inv;
    [[dont_unroll]] for (uint j = p.n + tid; j < p.n_pad; j += WG_SIZE) data_s[base + j] = 0.0;
}

void main() {
    if (ROW_PER_WG) {
        [[dont_unroll]] for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) softmax_row_wg(r);
        return;
    }
    const uint step = gl_NumWorkGroups.x * WG_SIZE;
    const uint n4 = (p.n + 3) / 4, np4 = p.n_pad / 4;
    [[dont_unroll]] for (uint r = gl_GlobalInvocationID.x; r < p.rows; r += step) {
        const uint base4 = (p.offset + r * p.stride) / 4;
        float m = NEG_BIG, l = 0.0;
        [[dont_unroll]] for (uint j4 = 0; j4 < n4; j4++) {
            const uint j = 4 * j4;
            const vec4 v = read_s4(base4 + j4);
            const vec4 x = vec4(v.x, j + 1 < p.n ? v.y : NEG_BIG, j + 2 < p.n ? v.z : NEG_BIG,
                                j + 3 < p.n ? v.w : NEG_BIG);
            const float m_new = max(m, max(max(x.x, x.y), max(x.z, x.w)));
            const vec4 e = exp(x - m_new);
            l = l * exp(m - m_new) + ((e.x + e.y) + (e.z + e.w));
            m = m_new;
        }
        const float inv = 1.0 / l;
        [[dont_unroll]] for (uint j4 = 0; j4 < np4; j4++) {
            const uint j = 4 * j4;
            const vec4 y = j4 < n4 ? exp(read_s4(base4 + j4) - m) * inv : vec4(0.0); // read before this write
            // selects, not products: the padding past n may hold anything (NaN * 0 is NaN)
            data_s4[base4 + j4] = vec4(j < p.n ? y.x : 0.0, j + 1 < p.n ? y.y : 0.0, j + 2 < p.n ? y.z : 0.0,
                                       j + 3 < p.n ? y.w : 0.0);
        }
    }
}
