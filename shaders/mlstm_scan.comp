// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Chunked mLSTM scan, phase 4 of 4 (docs/math.md 7.3; layout in mlstm_common.glsl): the outputs of one chunk from the
// state carried into it (phase 2) and its carried part C^T q (phase 3, read back from h), exact against the
// quadratic forms of docs/math.md 7.1 (seed) and 7.2 (NX-AI).
// With beta_i the chunk's local inclusive cumsum of the log forget gate, li_j the log input gate, q' = q * qs and
// k' = k * ks (the 1/sqrt(DH) sits on the queries for the seed, on the keys for NX-AI):
//   alpha_i = beta_i + mu                          carried-state log-weight (mu: exact running max)
//   a_ij    = beta_i - beta_j + li_j  (j <= i)     intra-chunk log-weights
//   M_i     = max(alpha_i, max_j a_ij)             the unclamped row max;  m_i = max(M_i, -10) (seed) | M_i (NX-AI)
//   num_i   = e^(alpha_i - m_i) (C^T q'_i) + sum_j e^(a_ij - m_i) (q'_i . k'_j) v_j
//   den_i   = e^(alpha_i - m_i) (q'_i . n) + sum_j e^(a_ij - m_i) (q'_i . k'_j)
//   h_i     = num_i / max(den_i, 1)                                   (seed: the -10 clamp only enters here)
//           = num_i / (max(|den_i|, e^(-M_i)) + 1e-6)                 (NX-AI)
// Each row is written at its ORIGINAL token index (no flip for reversed blocks).
// One workgroup per (value tile, chunk, b*NH + h). The chunk's weighted scores A (4 x 4 blocks per lane) sit in
// shared memory as vec4s; steps are separated by barriers. The outputs O = A V (+ the carried part) are then
//   GPUs:        lane l owns value column tile*VT + l and walks j, reading A's column j four rows per vec4 (every
//                lane the same address: a broadcast). A is stored transposed, sh_A4[j * L4 + i/4][i % 4].
//   CPU devices  (TEXEL) lane u owns row i = u % Lc of a 16-column block: A's row i is the lane's own (one vec4
//                per four j), and V is read as vec4 texels at the same address across the 8 lanes of a SIMD
//                vector (rows), which llvmpipe serves with one gather; a shared-memory load there is a per-lane
//                scalar loop, so the GPU layout costs ~0.5 us per j and 8 columns. A is stored row-major,
//                sh_A4[i * L4 + j/4][j % 4].
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"
#include "mlstm_common.glsl"

// TEXEL=1 (CPU devices with caps.texel_reads): the read-only inputs are uniform texel buffers (RGBA32F), which
// llvmpipe reads with SIMD gathers instead of a per-lane scalar loop (see gemm_cpu.comp); NAME_r(i) reads element i.
#if defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_0;
#define data_qkv_r(e) texelFetch(tex_0, int((e) >> 2))[(e) & 3u]
layout(binding = 1) uniform samplerBuffer tex_1;
#define data_g_r(e) texelFetch(tex_1, int((e) >> 2))[(e) & 3u]
layout(binding = 2) uniform samplerBuffer tex_2;
#define data_st_r(e) texelFetch(tex_2, int((e) >> 2))[(e) & 3u]
#else
layout(binding = 0, std430) readonly buffer Qkv { float data_qkv[]; };
layout(binding = 1, std430) readonly buffer Gt { float data_g[]; };
layout(binding = 2, std430) readonly buffer St { float data_st[]; };
#define data_qkv_r(i) float(data_qkv[i])
#define data_g_r(i) float(data_g[i])
#define data_st_r(i) float(data_st[i])
#endif
layout(binding = 3, std430) buffer Ho { float data_h[]; };         // in: C^T q (phase 3), out: h
#if defined(TEXEL) && TEXEL
layout(binding = 4) uniform samplerBuffer tex_h;                  // the same range as binding 3, read before written
#define A_AT(i, j) sh_A4[(i) * L4 + (j) / 4][(j) % 4]
#else
#define A_AT(i, j) sh_A4[(j) * L4 + (i) / 4][(i) % 4]
#endif

const uint L4 = (L + 3) / 4;                          // vec4s per row (CPU) or column (GPU) of A
shared vec4 sh_A4[L * L4];
#include "mlstm_gates.glsl"

shared float sh_M[L], sh_ws[L], sh_r[L];

void main() {
    const uint lid = gl_LocalInvocationID.x, tile = gl_WorkGroupID.x, c = gl_WorkGroupID.y;
    const uint h = gl_WorkGroupID.z % p.NH, b = gl_WorkGroupID.z / p.NH;
    const uint col = tile * VT + lid;
    const bool has_col = col < DH;
    const float inv_sqrt = 1.0 / sqrt(float(DH));
    const float qs = NXAI ? 1.0 : inv_sqrt, ks = NXAI ? inv_sqrt : 1.0;
    const uint qb = p.q_off + h * DH, kb = p.k_off + h * DH, vb = p.v_off + h * DH;
    const uint c0 = c * L, Lc = min(L, p.S - c0);
    const uint base = rec_base(b, h, c), sc = base + DH * DH + DH;
    const bool have = data_st_r(sc + 3) != 0.0;         // a state is carried in (not the first chunk)
    const float mu = data_st_r(sc + 2);

    // 1. gates of the chunk's tokens
    chunk_gates(b, h, c0, Lc, lid);                   // sh_li, sh_beta (local inclusive cumsum)
    // 2a. exact row max M_i and the carried-state weight e^(alpha_i - m_i)
    for (uint i = lid; i < Lc; i += VT) {
        const float bi = sh_beta[i];
        float M = have ? bi + mu : NEG_BIG;
        [[dont_unroll]] for (uint j = 0; j <= i; j++) M = max(M, bi - sh_beta[j] + sh_li[j]);
        sh_M[i] = M;
        sh_ws[i] = have ? exp(bi + mu - (NXAI ? M : max(M, -10.0))) : 0.0;
    }
    barrier();
    // 2b. weighted intra-chunk scores A_ij = (q'_i . k'_j) e^(a_ij - m_i), zero above the diagonal; 4 x 4 blocks
    const uint nb = (Lc + 3) / 4;
    [[dont_unroll]] for (uint tile = lid; tile < nb * nb; tile += VT) {
        const uint i0 = (tile / nb) * 4, j0 = (tile % nb) * 4;
        float acc[4][4];
        [[unroll]] for (uint a = 0; a < 4; a++)
            [[unroll]] for (uint e = 0; e < 4; e++) acc[a][e] = 0.0;
        if (j0 <= i0) {
            uint qr[4], kr[4];
            [[unroll]] for (uint u = 0; u < 4; u++) {
                qr[u] = row_of(b, c0 + min(i0 + u, Lc - 1)) * p.qkv_stride + qb;
                kr[u] = row_of(b, c0 + min(j0 + u, Lc - 1)) * p.qkv_stride + kb;
            }
            [[dont_unroll]] for (uint d = 0; d < DH; d++) {
                float qq[4], kk[4];
                [[unroll]] for (uint u = 0; u < 4; u++) {
                    qq[u] = data_qkv_r(qr[u] + d);
                    kk[u] = data_qkv_r(kr[u] + d);
                }
                [[unroll]] for (uint a = 0; a < 4; a++)
                    [[unroll]] for (uint e = 0; e < 4; e++) acc[a][e] += qq[a] * kk[e];
            }
        }
        float w[4][4];                                // A_ij of the block, zero above the diagonal and past Lc
        [[unroll]] for (uint a = 0; a < 4; a++) {
            const uint i = i0 + a;
            const float m = i < Lc ? (NXAI ? sh_M[i] : max(sh_M[i], -10.0)) : 0.0;
            [[unroll]] for (uint e = 0; e < 4; e++) {
                const uint j = j0 + e;
                w[a][e] = j <= i && i < Lc ? acc[a][e] * (qs * ks) * exp(sh_beta[i] - sh_beta[j] + sh_li[j] - m) : 0.0;
            }
        }
#if defined(TEXEL) && TEXEL
        [[unroll]] for (uint a = 0; a < 4; a++)
            if (i0 + a < Lc) sh_A4[(i0 + a) * L4 + j0 / 4] = vec4(w[a][0], w[a][1], w[a][2], w[a][3]);
#else
        [[unroll]] for (uint e = 0; e < 4; e++)
            if (j0 + e < Lc) sh_A4[(j0 + e) * L4 + i0 / 4] = vec4(w[0][e], w[1][e], w[2][e], w[3][e]);
#endif
    }
#if !(defined(TEXEL) && TEXEL)
    // The vec4s of column j below row 4 * nb (only when L4 > nb: a short last chunk) are read by (3) too.
    for (uint z = lid; z < Lc * (L4 - nb); z += VT) sh_A4[(z / (L4 - nb)) * L4 + nb + z % (L4 - nb)] = vec4(0.0);
#endif
    barrier();
    // 2c. the normaliser of each row, with q'_i . n from the carried state
    for (uint i = lid; i < Lc; i += VT) {
        float qn = 0.0;
        if (have) {
            const uint qi = row_of(b, c0 + i) * p.qkv_stride + qb;
            [[dont_unroll]] for (uint d = 0; d < DH; d++) qn += data_qkv_r(qi + d) * data_st_r(base + DH * DH + d);
        }
        float den = sh_ws[i] * qn * qs;
        [[dont_unroll]] for (uint j = 0; j <= i; j++) den += A_AT(i, j);
        sh_r[i] = NXAI ? 1.0 / (max(abs(den), exp(-sh_M[i])) + 1e-6) : 1.0 / max(den, 1.0);
    }
    barrier();
#if defined(TEXEL) && TEXEL
    // 3. outputs: lane u owns row i = u % Lc and 16 columns from col0; the intra part sum_j A_ij v_j, four j per
    //    shared load, v_j[col0 ..] as four vec4 texels (when DH % 4 == 0, so rows of v start on a texel), then
    //    e^(alpha_i - m_i) C^T q'_i (phase 3 left C^T q_i in h) and the normaliser
    const uint tile_end = min(DH, tile * VT + VT), n_blocks = (tile_end - tile * VT + 15) / 16;
    [[dont_unroll]] for (uint u = lid; u < Lc * n_blocks; u += VT) {
        const uint i = u % Lc, col0 = tile * VT + (u / Lc) * 16;
        vec4 o[4];
        [[unroll]] for (uint c4 = 0; c4 < 4; c4++) o[c4] = vec4(0.0);
        [[dont_unroll]] for (uint j4 = 0; j4 < nb; j4++) {
            const vec4 a = sh_A4[i * L4 + j4];
            [[unroll]] for (uint e = 0; e < 4; e++) {
                const uint j = j4 * 4 + e;
                if (j < Lc) {
                    const uint vr = row_of(b, c0 + j) * p.qkv_stride + vb;
                    [[unroll]] for (uint c4 = 0; c4 < 4; c4++) {
                        const uint cc = col0 + c4 * 4;
                        vec4 v = vec4(0.0);
                        if (DH % 4 == 0) {
                            if (cc < tile_end) v = texelFetch(tex_0, int((vr + cc) >> 2));
                        } else {
                            [[unroll]] for (uint k = 0; k < 4; k++)
                                if (cc + k < tile_end) v[k] = data_qkv_r(vr + cc + k);
                        }
                        o[c4] += a[e] * v;
                    }
                }
            }
        }
        const uint hr = row_of(b, c0 + i) * p.h_stride + h * DH;
        const float ws = have ? sh_ws[i] * qs : 0.0, r = sh_r[i];
        [[unroll]] for (uint c4 = 0; c4 < 4; c4++)
            [[unroll]] for (uint k = 0; k < 4; k++) {
                const uint cc = col0 + c4 * 4 + k;
                if (cc < tile_end) {
                    const float carried = have ? ws * texelFetch(tex_h, int((hr + cc) >> 2))[(hr + cc) & 3u] : 0.0;
                    data_h[hr + cc] = (carried + o[c4][k]) * r;
                }
            }
    }
#else
    // 3. outputs of the lane's column: the intra part with j outermost (each v_j[col] loaded once, the rows' sums
    //    in a private vec4 array, four rows per shared load), then e^(alpha_i - m_i) C^T q'_i (phase 3 left C^T q_i
    //    in h) and the normaliser
    if (has_col) {
        vec4 o[L4];
        [[unroll]] for (uint i4 = 0; i4 < L4; i4++) o[i4] = vec4(0.0);
        [[dont_unroll]] for (uint j = 0; j < Lc; j++) {
            const float vj = data_qkv_r(row_of(b, c0 + j) * p.qkv_stride + vb + col);
            [[unroll]] for (uint i4 = 0; i4 < L4; i4++) o[i4] += sh_A4[j * L4 + i4] * vj;
        }
        [[unroll]] for (uint i4 = 0; i4 < L4; i4++)
            [[unroll]] for (uint e = 0; e < 4; e++) {
                const uint i = i4 * 4 + e;
                if (i < Lc) {
                    const uint hi = row_of(b, c0 + i) * p.h_stride + h * DH + col;
                    const float carried = have ? sh_ws[i] * data_h[hi] * qs : 0.0;
                    data_h[hi] = (carried + o[i4][e]) * sh_r[i];
                }
            }
    }
#endif
}
