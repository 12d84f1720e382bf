// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// mLSTM in its quadratic (parallel) form, step 3 of 4 (after scores = q k^T per (b, h)): the scores become the
// normalised weights of h = P v, in place, exactly as docs/math.md 7.1 (seed) and 7.2 (NX-AI) write them. Row i
// (original token), column j (original token); pi, pj their processing positions (reversed blocks: S-1-i);
// s = 1/sqrt(DH):
//   logD_ij = (F_pi - F_pj) + li_pj                     for pj <= pi   (gl from mlstm_par_prep.comp)
//   M_i     = max_j logD_ij ;  m_i = max(M_i, -10) (seed) | M_i (NX-AI)
//   A_ij    = (q_i . k_j) s e^(logD_ij - m_i)           (the seed scales q, NX-AI k: the same product here)
//   seed:   P_ij = A_ij / max(sum_j A_ij, 1)            the signed, stabilised sum
//   NX-AI:  P_ij = A_ij / (max(|sum_j A_ij|, e^(-m_i)) + 1e-6)
// and P_ij = 0 for pj > pi and for the padding columns S <= j < S_pad (the PV GEMM's K is S_pad).
// One invocation per row (grid-stride over the S rows of workgroup z = b*NH + h), VT rows per workgroup: on llvmpipe
// the 8-lane SIMD vector holds 8 rows that run the same loops, so the max and the sum need no cross-lane reduction.
// The columns go four at a time in loops unrolled to the specialization constant ROW4 = S_pad / 4, so the row's
// values live in registers (a private array at a loop-dependent index is a per-lane gather and masked scatter on
// llvmpipe), the scores are read and the weights written as vec4s (a store costs per lane and per store, not per
// float, there), and the gate terms of every column (the same for all rows) are read once per workgroup.
// gl (mlstm_par_prep.comp) is in ORIGINAL token order, li at [bh][0][t] and F at [bh][1][t], rows of S_pad.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"
#include "mlstm_common.glsl"

layout(binding = 0, std430) buffer Sc { vec4 data_s4[]; };             // [B*NH*S, S_pad], in place
#if defined(TEXEL) && TEXEL
layout(binding = 1) uniform samplerBuffer tex_gl;
#define gl4_r(i) texelFetch(tex_gl, int(i))
layout(binding = 2) uniform samplerBuffer tex_s;                       // binding 0's range: read before written
#define read_s4(i) texelFetch(tex_s, int(i))
#else
layout(binding = 1, std430) readonly buffer Gl { vec4 data_gl4[]; };   // [B*NH, 2, S_pad]
#define gl4_r(i) data_gl4[i]
#define read_s4(i) data_s4[i]
#endif

layout(constant_id = 4) const uint ROW4 = 64;         // S_pad / 4 (<= 64: the host picks this form for S <= 256)

void main() {
    const uint S = p.S, bh = gl_WorkGroupID.z;
    const float s = 1.0 / sqrt(float(DH));
    // The columns' gate terms li_j and F_j, in original column order (the same for every row).
    vec4 li[ROW4], F[ROW4];
    [[unroll]] for (uint c = 0; c < ROW4; c++) {
        li[c] = gl4_r(bh * 2 * ROW4 + c);
        F[c] = gl4_r(bh * 2 * ROW4 + ROW4 + c);
    }
    [[dont_unroll]] for (uint i = gl_GlobalInvocationID.x; i < S; i += gl_NumWorkGroups.x * VT) {
        const uint base4 = (bh * S + i) * ROW4;
        const float Fi = gl4_r(bh * 2 * ROW4 + ROW4 + i / 4)[i % 4];
        // Column j takes part when its processing position is <= row i's: j <= i forward, j >= i reversed (and
        // j < S: the padding columns are written as zeros).
        vec4 x[ROW4];
        bvec4 on[ROW4];
        float M = NEG_BIG;
        [[unroll]] for (uint c = 0; c < ROW4; c++) {
            const uvec4 j = uvec4(4 * c) + uvec4(0, 1, 2, 3);
            on[c] = bvec4(uvec4(lessThan(j, uvec4(S))) &
                          uvec4(p.reverse != 0 ? greaterThanEqual(j, uvec4(i)) : lessThanEqual(j, uvec4(i))));
            x[c] = (Fi - F[c]) + li[c];
            const vec4 xm = mix(vec4(NEG_BIG), x[c], on[c]);
            M = max(M, max(max(xm.x, xm.y), max(xm.z, xm.w)));
        }
        const float m = NXAI ? M : max(M, -10.0);
        float den = 0.0;
        [[unroll]] for (uint c = 0; c < ROW4; c++) {
            x[c] = mix(vec4(0.0), read_s4(base4 + c) * s * exp(x[c] - m), on[c]);
            den += x[c].x;
            den += x[c].y;
            den += x[c].z;
            den += x[c].w;
        }
        const float norm = NXAI ? max(abs(den), exp(-m)) + 1e-6 : max(den, 1.0);
        [[unroll]] for (uint c = 0; c < ROW4; c++) data_s4[base4 + c] = x[c] / norm;
    }
}
