// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Chunked mLSTM scan, phase 1 of 4 (docs/math.md 7.3 "per-chunk summaries"; layout in mlstm_common.glsl): each chunk's
// own contribution to the carried state, as if it started from nothing. With beta the local inclusive cumsum of
// the log forget gate, li the log input gate, e the chunk's last token and k' = k * ks (ks = 1/sqrt(DH) for
// NX-AI, 1 for the seed, whose scale sits on the queries):
//   g    = beta_e
//   mu_c = max_j (beta_e - beta_j + li_j)
//   C_c  = sum_j w_j k'_j v_j^T,  w_j = e^(beta_e - beta_j + li_j - mu_c)      [DH, DH]
//   n_c  = sum_j w_j k'_j                                                      [DH]
// One workgroup of VT lanes per (chunk, b*NH + h). C_c is a small GEMM (K = the chunk's tokens); each lane owns
// TD x TV blocks of it in registers, so one loaded float feeds 8-16 FMAs (on llvmpipe every load costs tens of cycles
// per lane; a 1 x 1 block per lane ran ~10x slower).
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"
#include "mlstm_common.glsl"

#define TD 8     // register block: rows
#define TV 16    // register block: value columns

// TEXEL=1 (CPU devices with caps.texel_reads): the read-only inputs are uniform texel buffers (RGBA32F), which
// llvmpipe reads with SIMD gathers instead of a per-lane scalar loop (see gemm_cpu.comp); NAME_r(i) reads element i.
#if defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_0;
#define data_qkv_r(e) texelFetch(tex_0, int((e) >> 2))[(e) & 3u]
#define data_qkv4_r(i) texelFetch(tex_0, int(i))
layout(binding = 1) uniform samplerBuffer tex_1;
#define data_g_r(e) texelFetch(tex_1, int((e) >> 2))[(e) & 3u]
#else
layout(binding = 0, std430) readonly buffer Qkv { float data_qkv[]; };
layout(binding = 0, std430) readonly buffer Qkv4 { vec4 data_qkv4[]; };  // the same rows, 4 floats a load
layout(binding = 1, std430) readonly buffer Gt { float data_g[]; };
#define data_qkv_r(i) float(data_qkv[i])
#define data_qkv4_r(i) data_qkv4[i]
#define data_g_r(i) float(data_g[i])
#endif
layout(binding = 2, std430) writeonly buffer St { float data_st[]; };

#include "mlstm_gates.glsl"

shared float sh_w[L];

void main() {
    const uint lid = gl_LocalInvocationID.x, c = gl_WorkGroupID.y;
    const uint h = gl_WorkGroupID.z % p.NH, b = gl_WorkGroupID.z / p.NH;
    const float ks = NXAI ? 1.0 / sqrt(float(DH)) : 1.0;
    const uint c0 = c * L, Lc = min(L, p.S - c0);

    chunk_gates(b, h, c0, Lc, lid);                   // sh_li, sh_beta (cumsum)
    const float be = sh_beta[Lc - 1];
    float mu_c = NEG_BIG;
    [[dont_unroll]] for (uint j = 0; j < Lc; j++) mu_c = max(mu_c, be - sh_beta[j] + sh_li[j]);
    for (uint j = lid; j < Lc; j += VT) sh_w[j] = exp(be - sh_beta[j] + sh_li[j] - mu_c) * ks;
    barrier();

    // Each invocation copies the chunk's weights into a private array once: on llvmpipe a shared-memory load is a
    // per-lane scalar loop (like an SSBO load), a private array indexed alike in every lane one vector access. The
    // k / v row offsets are recomputed (two integer ops) instead of loaded.
    float w_p[L];
    [[dont_unroll]] for (uint j = 0; j < Lc; j++) w_p[j] = sh_w[j];
    const uint krow0 = p.k_off + h * DH, vrow0 = p.v_off + h * DH;

    const uint base = rec_base(b, h, c);
    const uint nd = (DH + TD - 1) / TD, nv = (DH + TV - 1) / TV;
    [[dont_unroll]] for (uint tile = lid; tile < nd * nv; tile += VT) {
        const uint d0 = (tile / nv) * TD, v0 = (tile % nv) * TV;
        vec4 acc[TD][TV / 4];                         // acc[a][q][u]: row d0 + a, column v0 + 4q + u
        [[unroll]] for (uint a = 0; a < TD; a++)
            [[unroll]] for (uint q = 0; q < TV / 4; q++) acc[a][q] = vec4(0.0);
        [[dont_unroll]] for (uint j = 0; j < Lc; j++) {
            const float w = w_p[j];
            const uint row = row_of(b, c0 + j) * p.qkv_stride, kr = row + krow0, vr = row + vrow0;
            float kk[TD];
            vec4 vv[TV / 4];
            if (DH % 4 == 0) {                        // rows start at multiples of 4: vec4 loads (clamped to the row)
                [[unroll]] for (uint q = 0; q < TD / 4; q++) {
                    const vec4 t = data_qkv4_r(kr / 4 + min(d0 / 4 + q, DH / 4 - 1)) * w;
                    [[unroll]] for (uint u = 0; u < 4; u++) kk[4 * q + u] = t[u];
                }
                [[unroll]] for (uint q = 0; q < TV / 4; q++) vv[q] = data_qkv4_r(vr / 4 + min(v0 / 4 + q, DH / 4 - 1));
            } else {
                [[unroll]] for (uint u = 0; u < TD; u++) kk[u] = data_qkv_r(kr + min(d0 + u, DH - 1)) * w;
                [[unroll]] for (uint q = 0; q < TV / 4; q++)
                    vv[q] = vec4(data_qkv_r(vr + min(v0 + 4 * q, DH - 1)), data_qkv_r(vr + min(v0 + 4 * q + 1, DH - 1)),
                                 data_qkv_r(vr + min(v0 + 4 * q + 2, DH - 1)), data_qkv_r(vr + min(v0 + 4 * q + 3, DH - 1)));
            }
            [[unroll]] for (uint a = 0; a < TD; a++)
                [[unroll]] for (uint q = 0; q < TV / 4; q++) acc[a][q] += kk[a] * vv[q];
        }
        [[unroll]] for (uint a = 0; a < TD; a++)
            [[unroll]] for (uint q = 0; q < TV / 4; q++)
                [[unroll]] for (uint u = 0; u < 4; u++)
                    if (d0 + a < DH && v0 + 4 * q + u < DH) data_st[base + (d0 + a) * DH + v0 + 4 * q + u] = acc[a][q][u];
    }
    for (uint d = lid; d < DH; d += VT) {
        float acc = 0.0;
        [[dont_unroll]] for (uint j = 0; j < Lc; j++) acc += data_qkv_r(row_of(b, c0 + j) * p.qkv_stride + krow0 + d) * w_p[j];
        data_st[base + DH * DH + d] = acc;
    }
    if (lid == 0) {
        data_st[base + DH * DH + DH + 0] = be;
        data_st[base + DH * DH + DH + 1] = mu_c;
    }
}
