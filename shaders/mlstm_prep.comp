#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// mLSTM cell front (SPEC 7.1), after proj_up, per token t and projection head p (4 channels c = 4p + i):
//   xc[t, c]  = conv_b[c] + sum_k conv_w[c, k] * xm[src(t, k), c]     causal depthwise conv1d (kernel K)
//   a[t, c]   = silu(xc[t, c])
//   q'[t, 4p+o] = sum_i Wqk[p, o, i] a[t, 4p+i] ;  v[t, 4p+o] = sum_i Wv[p, o, i] xm[t, 4p+i]
// xm = up[:, :E]. Wqk is the q/k fold (src/modules/modules.h, vkvit__mlstm_fold): q' . a_s = q . k_s, so a is
// both the keys and the skip branch, and no separate q and k are stored (on llvmpipe a stored float costs a
// per-lane scalar store; a load is a SIMD gather). Tokens stay at their ORIGINAL index for both directions: a
// reversed block's conv looks at the processing positions pp - (K-1) + k with pp = S-1-t, i.e. original rows
// t + (K-1) - k (no physical flip). Positions before the start of the processing order are zero (causal padding).
// Output: qkv [rows, 3E] = cat(q', a, v) (the scan's q/k/v, and (a, v) the gate input).
// One invocation per (row, p): the head's 4 channels are one vec4 of every operand (E % 4 == 0), its 4x4 weight
// blocks four vec4 rows, and each of q', a, v one vec4 store. Lanes run along p, workgroups along rows (y) and
// stride over them (on llvmpipe a workgroup costs a task switch and an integer division a scalar loop per lane).
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(local_size_x = 64) in;

// TEXEL=1 (CPU devices with caps.texel_reads): the read-only inputs are uniform texel buffers (RGBA32F), which
// llvmpipe reads with SIMD gathers instead of a per-lane scalar loop (see gemm_cpu.comp). NAME4_r(i) reads vec4 i;
// cw_r(i) float i of the conv weight (whose rows are K floats, so vec4s only when K == 4).
#if defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_0;
layout(binding = 1) uniform samplerBuffer tex_1;
layout(binding = 2) uniform samplerBuffer tex_2;
layout(binding = 3) uniform samplerBuffer tex_3;
layout(binding = 4) uniform samplerBuffer tex_4;
#define up4_r(i) texelFetch(tex_0, int(i))
#define cw4_r(i) texelFetch(tex_1, int(i))
#define cw_r(e) texelFetch(tex_1, int((e) >> 2))[(e) & 3u]
#define cb4_r(i) texelFetch(tex_2, int(i))
#define wqk4_r(i) texelFetch(tex_3, int(i))
#define wv4_r(i) texelFetch(tex_4, int(i))
#else
layout(binding = 0, std430) readonly buffer Up { vec4 data_up4[]; };    // [rows, up_stride], xm = columns 0..E-1
layout(binding = 1, std430) readonly buffer Cw { float data_cw[]; };    // [E, K]
layout(binding = 1, std430) readonly buffer Cw4 { vec4 data_cw4[]; };   // the same, 4 floats a load (K == 4)
layout(binding = 2, std430) readonly buffer Cb { vec4 data_cb4[]; };    // [E]
layout(binding = 3, std430) readonly buffer Wqk { vec4 data_wqk4[]; };  // [NP, 4, 4]: row o of head p at 4p + o
layout(binding = 4, std430) readonly buffer Wv { vec4 data_wv4[]; };
#define up4_r(i) data_up4[i]
#define cw4_r(i) data_cw4[i]
#define cw_r(i) data_cw[i]
#define cb4_r(i) data_cb4[i]
#define wqk4_r(i) data_wqk4[i]
#define wv4_r(i) data_wv4[i]
#endif
layout(binding = 5, std430) writeonly buffer Qo { vec4 data_qkv4[]; };  // [rows, 3E]

layout(push_constant) uniform Push {
    uint rows, S, E, K;                               // rows = B * S
    uint up_stride;                                   // 2E
    uint reverse;                                     // 1: the block processes the sequence back to front
} p;

vec4 silu(vec4 x) { return x / (1.0 + exp(-x)); }

void main() {
    const uint NP = p.E / 4, up4_stride = p.up_stride / 4;
    for (uint ph = gl_GlobalInvocationID.x; ph < NP; ph += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        // The head's weights, loaded once for all the rows of this workgroup.
        const vec4 cb = cb4_r(ph);
        mat4 cw = mat4(0.0);                                      // cw[i][k]: channel 4 ph + i, tap k (K == 4)
        if (p.K == 4) cw = mat4(cw4_r(4 * ph), cw4_r(4 * ph + 1), cw4_r(4 * ph + 2), cw4_r(4 * ph + 3));
        const mat4 wqk = mat4(wqk4_r(4 * ph), wqk4_r(4 * ph + 1), wqk4_r(4 * ph + 2), wqk4_r(4 * ph + 3));
        const mat4 wv = mat4(wv4_r(4 * ph), wv4_r(4 * ph + 1), wv4_r(4 * ph + 2), wv4_r(4 * ph + 3));
        for (uint row = gl_WorkGroupID.y; row < p.rows; row += gl_NumWorkGroups.y) {
            const uint b = row / p.S, t = row % p.S;
            const uint pp = p.reverse != 0 ? p.S - 1 - t : t;     // processing position of this token
            vec4 acc = cb;
            if (p.K == 4) {
                [[unroll]] for (uint k = 0; k < 4; k++) {
                    if (pp + k < 3) continue;                     // before the first processed token: zero
                    const uint sp = pp + k - 3;                   // source processing position
                    const uint st = p.reverse != 0 ? p.S - 1 - sp : sp;   // its original token index
                    acc += vec4(cw[0][k], cw[1][k], cw[2][k], cw[3][k]) * up4_r((b * p.S + st) * up4_stride + ph);
                }
            } else {
                [[dont_unroll]] for (uint k = 0; k < p.K; k++) {
                    if (pp + k < p.K - 1) continue;
                    const uint sp = pp + k - (p.K - 1);
                    const uint st = p.reverse != 0 ? p.S - 1 - sp : sp;
                    const uint c0 = 4 * ph;
                    const vec4 w = vec4(cw_r(c0 * p.K + k), cw_r((c0 + 1) * p.K + k), cw_r((c0 + 2) * p.K + k),
                                        cw_r((c0 + 3) * p.K + k));
                    acc += w * up4_r((b * p.S + st) * up4_stride + ph);
                }
            }
            const vec4 a = silu(acc), xm = up4_r(row * up4_stride + ph);
            vec4 q, v;                                            // out[o] = sum_i W[p][o][i] in[i]: row o of W
            [[unroll]] for (uint o = 0; o < 4; o++) {
                q[o] = dot(wqk[o], a);
                v[o] = dot(wv[o], xm);
            }
            data_qkv4[row * 3 * NP + ph] = q;
            data_qkv4[row * 3 * NP + NP + ph] = a;
            data_qkv4[row * 3 * NP + 2 * NP + ph] = v;
        }
    }
}
