#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// mLSTM in its quadratic (parallel) form, step 3 of 4 (after scores = q k^T per (b, h)): the scores become the
// normalised weights of h = P v, in place, exactly as SPEC 7.1 (seed) and 7.2 (NX-AI) write them. Row i (original
// token), column j (original token); pi, pj their processing positions (reversed blocks: S-1-i); s = 1/sqrt(DH):
//   logD_ij = (F_pi - F_pj) + li_pj                     for pj <= pi   (gl from mlstm_par_prep.comp)
//   M_i     = max_j logD_ij ;  m_i = max(M_i, -10) (seed) | M_i (NX-AI)
//   A_ij    = (q_i . k_j) s e^(logD_ij - m_i)           (the seed scales q, NX-AI k: the same product here)
//   seed:   P_ij = A_ij / max(sum_j A_ij, 1)            the signed, stabilised sum
//   NX-AI:  P_ij = A_ij / (max(|sum_j A_ij|, e^(-m_i)) + 1e-6)
// and P_ij = 0 for pj > pi and for the padding columns S <= j < S_pad (the PV GEMM's K is S_pad).
// One invocation per row (grid-stride over the S rows of workgroup z = b*NH + h), VT rows per workgroup: on llvmpipe the 8-lane SIMD vector holds 8 rows
// that run the same uniform loop over j, so the max and the sum need no cross-lane reduction (softmax_rows.comp
// does the same); a row of S <= 256 values lives in a private array indexed alike in every lane.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"
#include "mlstm_common.glsl"

layout(binding = 0, std430) buffer Sc { float data_s[]; };             // [B*NH*S, S_pad], in place
#if defined(TEXEL) && TEXEL
layout(binding = 1) uniform samplerBuffer tex_gl;
#define data_gl_r(e) texelFetch(tex_gl, int((e) >> 2))[(e) & 3u]
layout(binding = 2) uniform samplerBuffer tex_s;                       // binding 0's range: read before written
#define read_s(e) texelFetch(tex_s, int((e) >> 2))[(e) & 3u]
#else
layout(binding = 1, std430) readonly buffer Gl { float data_gl[]; };
#define data_gl_r(e) data_gl[e]
#define read_s(e) data_s[e]
#endif

const uint ROW_MAX = 256;                             // the host picks this form for S <= 256 only
float row_c[ROW_MAX];

void main() {
    const uint S = p.S, S_pad = (S + 3) & ~3u, bh = gl_WorkGroupID.z, g0 = bh * 2 * S;
    const float s = 1.0 / sqrt(float(DH));
    [[dont_unroll]] for (uint i = gl_GlobalInvocationID.x; i < S; i += gl_NumWorkGroups.x * VT) {
        const uint pi = p.reverse != 0 ? S - 1 - i : i, base = (bh * S + i) * S_pad;
        const float Fi = data_gl_r(g0 + S + pi);
        float M = NEG_BIG;
        [[dont_unroll]] for (uint pj = 0; pj < S; pj++) {
            const float x = (Fi - data_gl_r(g0 + S + pj)) + data_gl_r(g0 + pj);
            row_c[pj] = x;
            if (pj <= pi) M = max(M, x);
        }
        const float m = NXAI ? M : max(M, -10.0);
        float den = 0.0;
        [[dont_unroll]] for (uint pj = 0; pj < S; pj++) {
            const uint j = p.reverse != 0 ? S - 1 - pj : pj;
            const float a = pj <= pi ? read_s(base + j) * s * exp(row_c[pj] - m) : 0.0;
            row_c[pj] = a;
            den += a;
        }
        const float norm = NXAI ? max(abs(den), exp(-m)) + 1e-6 : max(den, 1.0);
        [[dont_unroll]] for (uint pj = 0; pj < S; pj++)
            data_s[base + (p.reverse != 0 ? S - 1 - pj : pj)] = row_c[pj] / norm;
        [[dont_unroll]] for (uint j = S; j < S_pad; j++) data_s[base + j] = 0.0;
    }
}
