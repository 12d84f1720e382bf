// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Chunked mLSTM scan, phase 3 of 4 (docs/math.md 7.3; layout in mlstm_common.glsl): the carried-state part of every
// output row, before its stabiliser weight and normaliser (phase 4 applies those):
//   h[t_i, h*DH + v] = sum_d q_i[d] C[d][v]         C = the state carried INTO the chunk (phase 2)
// written at the token's original row (phase 4 reads it back and overwrites it). A small GEMM per chunk
// (rows = the chunk's tokens, K = DH); each lane owns TI x TV blocks in registers. The first chunk has no carried
// state and is skipped. One workgroup of VT lanes per (chunk, b*NH + h); no shared memory, no barrier.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"
#include "mlstm_common.glsl"

#define TI 8     // register block: rows
#define TV 16    // register block: value columns

// TEXEL=1 (CPU devices with caps.texel_reads): the read-only inputs are uniform texel buffers (RGBA32F), which
// llvmpipe reads with SIMD gathers instead of a per-lane scalar loop (see gemm_cpu.comp); NAME_r(i) reads element i.
#if defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_0;
#define data_qkv_r(e) texelFetch(tex_0, int((e) >> 2))[(e) & 3u]
#define data_qkv4_r(i) texelFetch(tex_0, int(i))
layout(binding = 1) uniform samplerBuffer tex_1;
#define data_st_r(e) texelFetch(tex_1, int((e) >> 2))[(e) & 3u]
#define data_st4_r(i) texelFetch(tex_1, int(i))
#else
layout(binding = 0, std430) readonly buffer Qkv { float data_qkv[]; };
layout(binding = 0, std430) readonly buffer Qkv4 { vec4 data_qkv4[]; };  // the same rows, 4 floats a load
layout(binding = 1, std430) readonly buffer St { float data_st[]; };
layout(binding = 1, std430) readonly buffer St4 { vec4 data_st4[]; };
#define data_qkv_r(i) float(data_qkv[i])
#define data_qkv4_r(i) data_qkv4[i]
#define data_st_r(i) float(data_st[i])
#define data_st4_r(i) data_st4[i]
#endif
layout(binding = 2, std430) writeonly buffer Ho { float data_h[]; };

void main() {
    const uint lid = gl_LocalInvocationID.x, c = gl_WorkGroupID.y;
    const uint h = gl_WorkGroupID.z % p.NH, b = gl_WorkGroupID.z / p.NH;
    const uint base = rec_base(b, h, c), sc = base + DH * DH + DH;
    if (data_st_r(sc + 3) == 0.0) return;               // nothing carried into the first chunk
    const uint c0 = c * L, Lc = min(L, p.S - c0);
    const uint nr = (Lc + TI - 1) / TI, nv = (DH + TV - 1) / TV;
    [[dont_unroll]] for (uint tile = lid; tile < nr * nv; tile += VT) {
        const uint i0 = (tile / nv) * TI, v0 = (tile % nv) * TV;
        uint qrow[TI];
        [[unroll]] for (uint u = 0; u < TI; u++) qrow[u] = row_of(b, c0 + min(i0 + u, Lc - 1)) * p.qkv_stride + p.q_off + h * DH;
        float acc[TI][TV];
        [[unroll]] for (uint a = 0; a < TI; a++)
            [[unroll]] for (uint e = 0; e < TV; e++) acc[a][e] = 0.0;
        if (DH % 4 == 0) {                            // rows and records start at multiples of 4: vec4 loads
            [[dont_unroll]] for (uint d4 = 0; d4 < DH / 4; d4++) {
                vec4 qq[TI];
                [[unroll]] for (uint u = 0; u < TI; u++) qq[u] = data_qkv4_r(qrow[u] / 4 + d4);
                [[unroll]] for (uint r = 0; r < 4; r++) {
                    float cc[TV];
                    [[unroll]] for (uint q = 0; q < TV / 4; q++) {
                        const vec4 t = data_st4_r((base + (4 * d4 + r) * DH) / 4 + min(v0 / 4 + q, DH / 4 - 1));
                        [[unroll]] for (uint u = 0; u < 4; u++) cc[4 * q + u] = t[u];
                    }
                    [[unroll]] for (uint a = 0; a < TI; a++)
                        [[unroll]] for (uint e = 0; e < TV; e++) acc[a][e] += qq[a][r] * cc[e];
                }
            }
        } else {
            [[dont_unroll]] for (uint d = 0; d < DH; d++) {
                float qq[TI], cc[TV];
                [[unroll]] for (uint u = 0; u < TI; u++) qq[u] = data_qkv_r(qrow[u] + d);
                [[unroll]] for (uint u = 0; u < TV; u++) cc[u] = data_st_r(base + d * DH + min(v0 + u, DH - 1));
                [[unroll]] for (uint a = 0; a < TI; a++)
                    [[unroll]] for (uint e = 0; e < TV; e++) acc[a][e] += qq[a] * cc[e];
            }
        }
        [[unroll]] for (uint a = 0; a < TI; a++)
            if (i0 + a < Lc)
                [[unroll]] for (uint e = 0; e < TV; e++)
                    if (v0 + e < DH) data_h[row_of(b, c0 + i0 + a) * p.h_stride + h * DH + v0 + e] = acc[a][e];
    }
}
