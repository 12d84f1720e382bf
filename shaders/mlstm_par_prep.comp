// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// mLSTM in its quadratic (parallel) form, step 1 of 4 (docs/math.md 7.1 / 7.2 as written; src/ops/mlstm.c chooses this
// form on CPU devices for S <= 256): the operands of the two GEMMs and the decay rows (mlstm_decay.comp), from
// qkv [rows, 3E] and the gate pre-activations [rows, 2 NH]. Per (b, h) = workgroup z:
//   vT[bh][d][t]  = v[b*S + t][h*DH + d]     for t < S in ORIGINAL token order, 0 for S <= t < S_pad (= S rounded up
//                                           to 4): the B operand of P vT^T, whose K = S_pad then reads zeros
//   gl[bh][0][t]   = li, the log input gate of token t                 (docs/math.md 7.1 quirk 1 / 7.2: raw ipre)
//   gl[bh][1][t]   = F = lf_0 + ... + lf_pp, the inclusive cumsum of the log forget gate in processing order up to
//                    t's processing position pp; both in ORIGINAL token order t, rows of S_pad (zeros past S), so
//                    mlstm_decay.comp reads them as vec4s along its columns
// Invocation l writes tokens 4l .. 4l+3 of every row d of vT, one vec4 store per d, from one vec4 read of four
// channels per token (the host takes this form only for DH % 4 == 0, E % 4 == 0: every v row starts on a vec4),
// grid-striding over S_pad / 4; few, long workgroups (llvmpipe pays per workgroup).
// Invocation 0 of workgroup x = 0 also runs the cumsum, sequentially in token order (as torch.cumsum).
// WRITE_VT false: the prep wrote vT already (mlstm_prep.comp, VT_OUT); only the cumsums run (one workgroup per
// (b, h)), and binding 2 is not touched.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"
#include "mlstm_common.glsl"

#if defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_0;
#define qkv4_r(i) texelFetch(tex_0, int(i))
layout(binding = 1) uniform samplerBuffer tex_1;
#define data_g_r(e) texelFetch(tex_1, int((e) >> 2))[(e) & 3u]
#else
layout(binding = 0, std430) readonly buffer Qkv { vec4 data_qkv4[]; };
layout(binding = 1, std430) readonly buffer Gt { float data_g[]; };
#define qkv4_r(i) data_qkv4[i]
#define data_g_r(i) data_g[i]
#endif
layout(binding = 2, std430) writeonly buffer Vt { vec4 data_vt4[]; };  // [B*NH*DH, S_pad], S_pad % 4 == 0
layout(binding = 3, std430) writeonly buffer Gl { float data_gl[]; };   // [B*NH, 2, S_pad]

layout(constant_id = 4) const bool WRITE_VT = true;

void main() {
    const uint bh = gl_WorkGroupID.z, h = bh % p.NH, b = bh / p.NH;
    const uint S_pad = (p.S + 3) & ~3u;
    if (gl_WorkGroupID.x == 0 && gl_LocalInvocationID.x == 0) {
        float F = 0.0;
        [[dont_unroll]] for (uint pp = 0; pp < p.S; pp++) {
            const uint row = row_of(b, pp);
            float li, lf;
            log_gates(data_g_r(row * p.gate_stride + p.i_off + h), data_g_r(row * p.gate_stride + p.f_off + h), li, lf);
            F += lf;
            const uint t = row - b * p.S;
            data_gl[bh * 2 * S_pad + t] = li;
            data_gl[bh * 2 * S_pad + S_pad + t] = F;
        }
        [[dont_unroll]] for (uint t = p.S; t < S_pad; t++) {
            data_gl[bh * 2 * S_pad + t] = 0.0;
            data_gl[bh * 2 * S_pad + S_pad + t] = 0.0;
        }
    }
    if (!WRITE_VT) return;
    const uint vb = p.v_off + h * DH, T4 = S_pad / 4;
    for (uint t4 = gl_GlobalInvocationID.x; t4 < T4; t4 += gl_NumWorkGroups.x * VT) {
        uint src4[4];                                 // the four tokens' v rows in vec4s (clamped: padding writes 0)
        [[unroll]] for (uint u = 0; u < 4; u++)
            src4[u] = ((b * p.S + min(4 * t4 + u, p.S - 1)) * p.qkv_stride + vb) / 4;
        // Channels d4 .. d4 + 3 of the four tokens: four vec4 reads, transposed into four vec4 stores along t.
        [[dont_unroll]] for (uint d4 = 0; d4 < DH / 4; d4++) {
            vec4 r[4];
            [[unroll]] for (uint u = 0; u < 4; u++) r[u] = 4 * t4 + u < p.S ? qkv4_r(src4[u] + d4) : vec4(0.0);
            [[unroll]] for (uint o = 0; o < 4; o++)
                data_vt4[(bh * DH + 4 * d4 + o) * T4 + t4] = vec4(r[0][o], r[1][o], r[2][o], r[3][o]);
        }
    }
}
