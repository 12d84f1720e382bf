// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Chunked mLSTM scan, phase 2 of 4 (docs/math.md 7.3; layout in mlstm_common.glsl): the sequential part. Walks the
// chunks in processing order with the carried state (mu, C, n), mu the EXACT running max (never clamped), and replaces
// each chunk's own summary by the state carried INTO it, then folds the summary in:
//   mu' = max(g + mu, mu_c)
//   C'  = e^(g + mu - mu') C + e^(mu_c - mu') C_c          n' likewise          (empty state: C' = C_c, mu' = mu_c)
// One workgroup per (value tile, b*NH + h); lane l owns column tile*VT + l of C (kept in a private array: on
// llvmpipe a private array indexed alike in every lane costs one vector access, shared memory a gather) and, in
// tile 0, the rows d = l, l + VT, ... of n (shared memory). Lanes never share data, so there is no barrier. The inner
// loops are unrolled by 4 to stay far below llvmpipe's per-invocation loop limit for long sequences.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"
#include "mlstm_common.glsl"

layout(binding = 0, std430) buffer St { float data_st[]; };
// Reads: through binding 0, or where TEXEL=1 (CPU devices with caps.texel_reads) through binding 1, a uniform texel
// buffer (RGBA32F) of the same range, which llvmpipe gathers instead of loading lane by lane (gemm_cpu.comp). Each
// element is read before it is written, by the invocation that writes it; g and mu_c are never written here.
#if defined(TEXEL) && TEXEL
layout(binding = 1) uniform samplerBuffer tex_st;
#define st_r(e) texelFetch(tex_st, int((e) >> 2))[(e) & 3u]
#else
#define st_r(e) data_st[e]
#endif

shared float sh_n[DH];

void main() {
    const uint lid = gl_LocalInvocationID.x, tile = gl_WorkGroupID.x;
    const uint h = gl_WorkGroupID.z % p.NH, b = gl_WorkGroupID.z / p.NH;
    const uint col = tile * VT + lid;
    const bool has_col = col < DH;
    float cst[DH];                                    // the carried column of C
    [[dont_unroll]] for (uint d = 0; d < DH; d++) cst[d] = 0.0;
    for (uint d = lid; d < DH; d += VT) sh_n[d] = 0.0;
    bool have = false;
    float mu = 0.0;
    [[dont_unroll]] for (uint c = 0; c < p.n_chunks; c++) {
        const uint base = rec_base(b, h, c), sc = base + DH * DH + DH;
        const float g = st_r(sc), mu_c = st_r(sc + 1);
        const float mu_new = have ? max(g + mu, mu_c) : mu_c;
        const float a = have ? exp(g + mu - mu_new) : 0.0, w = exp(mu_c - mu_new);
        if (has_col) {
            [[dont_unroll]] for (uint d0 = 0; d0 < DH; d0 += 4) {
                [[unroll]] for (uint u = 0; u < 4; u++) {
                    const uint d = d0 + u;
                    if (d < DH) {
                        const uint i = base + d * DH + col;
                        const float own = st_r(i), carried = cst[d];
                        data_st[i] = carried;
                        cst[d] = a * carried + w * own;
                    }
                }
            }
        }
        if (tile == 0) {
            [[dont_unroll]] for (uint d0 = lid; d0 < DH; d0 += 4 * VT) {
                [[unroll]] for (uint u = 0; u < 4; u++) {
                    const uint d = d0 + u * VT;
                    if (d < DH) {
                        const uint i = base + DH * DH + d;
                        const float own = st_r(i), carried = sh_n[d];
                        data_st[i] = carried;
                        sh_n[d] = a * carried + w * own;
                    }
                }
            }
            if (lid == 0) {
                data_st[sc + 2] = mu;
                data_st[sc + 3] = have ? 1.0 : 0.0;
            }
        }
        mu = mu_new;
        have = true;
    }
}
