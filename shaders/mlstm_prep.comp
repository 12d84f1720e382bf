// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// mLSTM cell front (docs/math.md 7.1), after proj_up, per token t and projection head p (4 channels c = 4p + i):
//   xc[t, c]  = conv_b[c] + sum_k conv_w[c, k] * xm[src(t, k), c]     causal depthwise conv1d (kernel K)
//   a[t, c]   = silu(xc[t, c])
//   q'[t, 4p+o] = sum_i Wqk[p, o, i] a[t, 4p+i] ;  v[t, 4p+o] = sum_i Wv[p, o, i] xm[t, 4p+i]
// xm = up[:, :E]. Wqk is the q/k fold (src/modules/modules.h, vkvit__mlstm_fold): q' . a_s = q . k_s, so a is
// both the keys and the skip branch, and no separate q and k are stored (on llvmpipe a stored float costs a
// per-lane scalar store; a load is a SIMD gather). Tokens stay at their ORIGINAL index for both directions: a
// reversed block's conv looks at the processing positions pp - (K-1) + k with pp = S-1-t, i.e. original rows
// t + (K-1) - k (no physical flip). Positions before the start of the processing order are zero (causal padding).
// Output: qkv [rows, qkv_stride] = cat(q', a, v) (the scan's q/k/v, and (a, v) the gate input); with VT_OUT,
// qkv = cat(q', a) and v goes transposed into vT [B*NH*DH, S_pad] (vT[bh][d][t], zero for S <= t < S_pad = S
// rounded up to 4): the B operand of the quadratic form's P vT^T (src/ops/mlstm.c), which needs DH % 4 == 0.
//
// One invocation per (projection head p, run of `run` groups of 4 tokens): the head's 4 channels are one vec4 of
// every operand (E % 4 == 0), its 4x4 weight blocks four vec4 rows, each of q', a, v one vec4 store. The
// invocation walks its run in PROCESSING order and keeps the last three xm rows in registers (K <= 4; WINDOW), so
// each xm row is read once, not K + 1 times. Groups are aligned to 4 tokens of the original order (group j holds
// tokens 4j .. 4j+3; reversed blocks visit the groups from the last, each back to front), so with VT_OUT a group
// ends in four vec4 stores along t. Lanes run along p, workgroups along (image, run) (y) and stride over them; a
// run re-reads the three rows before it, so CPU devices take long runs (llvmpipe pays per load and per workgroup),
// GPUs one group (parallelism).
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(local_size_x = 64) in;

// TEXEL=1 (CPU devices with caps.texel_reads): the read-only inputs are uniform texel buffers (RGBA32F), which
// llvmpipe reads with SIMD gathers instead of a per-lane scalar loop (see gemm_cpu.comp). NAME4_r(i) reads vec4 i;
// cw_r(i) float i of the conv weight (whose rows are K floats).
// PACKED: up, the conv weight and bias, wqk, wv, the qkv output and with VT_OUT vT (logical bindings 0-5 or 0-6)
// through the arena and weights buffers of shaders/packed.glsl (devices with 4 storage buffers per stage; no TEXEL).
#if defined(PACKED) && PACKED
#if defined(TEXEL) && TEXEL
#error "the packed mlstm_prep has no TEXEL"
#endif
#if defined(VT_OUT) && VT_OUT
#define PACKED_N 7
#define vt4_w(i) PK_ARENA4(6, i)
#else
#define PACKED_N 6
#endif
#include "packed.glsl"
#define up4_r(i) PK_READ4(0, i)
#define cw_r(i) PK_READ(1, i)
#define cb4_r(i) PK_READ4(2, i)
#define wqk4_r(i) PK_READ4(3, i)
#define wv4_r(i) PK_READ4(4, i)
#define qkv4_w(i) PK_ARENA4(5, i)
#elif defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_0;
layout(binding = 1) uniform samplerBuffer tex_1;
layout(binding = 2) uniform samplerBuffer tex_2;
layout(binding = 3) uniform samplerBuffer tex_3;
layout(binding = 4) uniform samplerBuffer tex_4;
#define up4_r(i) texelFetch(tex_0, int(i))
#define cw_r(e) texelFetch(tex_1, int((e) >> 2))[(e) & 3u]
#define cb4_r(i) texelFetch(tex_2, int(i))
#define wqk4_r(i) texelFetch(tex_3, int(i))
#define wv4_r(i) texelFetch(tex_4, int(i))
#else
layout(binding = 0, std430) readonly buffer Up { vec4 data_up4[]; };    // [rows, up_stride], xm = columns 0..E-1
layout(binding = 1, std430) readonly buffer Cw { float data_cw[]; };    // [E, K]
layout(binding = 2, std430) readonly buffer Cb { vec4 data_cb4[]; };    // [E]
layout(binding = 3, std430) readonly buffer Wqk { vec4 data_wqk4[]; };  // [NP, 4, 4]: row o of head p at 4p + o
layout(binding = 4, std430) readonly buffer Wv { vec4 data_wv4[]; };
#define up4_r(i) data_up4[i]
#define cw_r(i) data_cw[i]
#define cb4_r(i) data_cb4[i]
#define wqk4_r(i) data_wqk4[i]
#define wv4_r(i) data_wv4[i]
#endif
#if !(defined(PACKED) && PACKED)
#define PACKED_PUSH_FIELDS
layout(binding = 5, std430) writeonly buffer Qo { vec4 data_qkv4[]; };  // [rows, qkv_stride]
#define qkv4_w(i) data_qkv4[i]
#endif
#if defined(VT_OUT) && VT_OUT && !(defined(PACKED) && PACKED)
layout(binding = 6, std430) writeonly buffer Vt { vec4 data_vt4[]; };   // [B*NH*DH, S_pad], S_pad / 4 vec4s a row
#define vt4_w(i) data_vt4[i]
#endif

// K <= 4: the sliding window (the K taps are the last K of 4 window slots); larger kernels read their K rows.
layout(constant_id = 0) const bool WINDOW = true;

layout(push_constant) uniform Push {
    uint rows, S, E, K;                               // rows = B * S
    uint up_stride;                                   // 2E (proj_up whole) or E (its xm half)
    uint reverse;                                     // 1: the block processes the sequence back to front
    uint qkv_stride;                                  // 3E, or 2E with VT_OUT
    uint NH;                                          // memory heads (VT_OUT: DH = E / NH, a multiple of 4)
    uint run;                                         // groups of 4 tokens per invocation
    PACKED_PUSH_FIELDS                                // PACKED: the 6 (VT_OUT: 7) tensors' element bases
} p;

vec4 silu(vec4 x) { return x / (1.0 + exp(-x)); }

// xm of original token t of image b (t as a signed index), zero outside 0 .. S-1: the causal padding. The load
// is clamped, not skipped (llvmpipe runs both sides of a branch).
vec4 xm_at(uint b, int t, uint up4_stride, uint ph) {
    const bool inside = t >= 0 && t < int(p.S);
    const vec4 x = up4_r((b * p.S + uint(clamp(t, 0, int(p.S) - 1))) * up4_stride + ph);
    return inside ? x : vec4(0.0);
}

// Tap k of the conv weights of head ph's 4 channels (conv_w rows are K floats: read once per invocation).
vec4 conv_tap(uint ph, uint k) {
    const uint c0 = 4 * ph;
    return vec4(cw_r(c0 * p.K + k), cw_r((c0 + 1) * p.K + k), cw_r((c0 + 2) * p.K + k), cw_r((c0 + 3) * p.K + k));
}

void main() {
    const uint NP = p.E / 4, up4_stride = p.up_stride / 4, q4_stride = p.qkv_stride / 4;
    const uint B = p.rows / p.S, G = (p.S + 3) / 4, runs = (G + p.run - 1) / p.run;
    const bool rev = p.reverse != 0;
    const int dir = rev ? -1 : 1;                     // one step of processing order, in original token index
    for (uint ph = gl_GlobalInvocationID.x; ph < NP; ph += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        // The head's weights, loaded once for all the runs of this invocation. tw[j]: the 4 channels' weights of
        // window slot j = processing position pp - 3 + j (tap k = j - (4 - K) when K <= 4, zero before it).
        const vec4 cb = cb4_r(ph);
        mat4 tw = mat4(0.0);
        if (WINDOW)
            [[unroll]] for (uint j = 0; j < 4; j++) {        // slot j holds tap j - (4 - K); the index is clamped,
                const bool used = j + p.K >= 4u;             // as both sides of a select are read
                const vec4 w = conv_tap(ph, used ? j + p.K - 4u : 0u);
                tw[j] = used ? w : vec4(0.0);
            }
        const mat4 wqk = mat4(wqk4_r(4 * ph), wqk4_r(4 * ph + 1), wqk4_r(4 * ph + 2), wqk4_r(4 * ph + 3));
        const mat4 wv = mat4(wv4_r(4 * ph), wv4_r(4 * ph + 1), wv4_r(4 * ph + 2), wv4_r(4 * ph + 3));
#if defined(VT_OUT) && VT_OUT
        const uint DH = p.E / p.NH, h = 4 * ph / DH, d0 = 4 * ph % DH;
#endif
        for (uint br = gl_WorkGroupID.y; br < B * runs; br += gl_NumWorkGroups.y) {
            const uint b = br / runs, i0 = br % runs * p.run, i1 = min(i0 + p.run, G);
            // The first real token of the run in processing order, and the window of the three before it.
            const uint j0 = rev ? G - 1 - i0 : i0;
            const int t0 = rev ? int(min(4 * j0 + 3, p.S - 1)) : int(4 * j0);
            vec4 w0 = vec4(0.0), w1 = vec4(0.0), w2 = vec4(0.0);
            if (WINDOW) {
                w0 = xm_at(b, t0 - 3 * dir, up4_stride, ph);
                w1 = xm_at(b, t0 - 2 * dir, up4_stride, ph);
                w2 = xm_at(b, t0 - dir, up4_stride, ph);
            }
            for (uint i = i0; i < i1; i++) {
                const uint j = rev ? G - 1 - i : i;
                vec4 vs[4];                           // v of the group's step s (token 4j + s, or 4j + 3 - s reversed)
                [[unroll]] for (uint s = 0; s < 4; s++) {
                    const uint t = 4 * j + (rev ? 3 - s : s);
                    const bool real = t < p.S;        // the last group's padding: skipped, out of the window
                    const uint row = b * p.S + min(t, p.S - 1);
                    const vec4 xm = up4_r(row * up4_stride + ph);
                    vec4 acc = cb;
                    if (WINDOW) {
                        acc += tw[0] * w0 + tw[1] * w1 + tw[2] * w2 + tw[3] * xm;
                        w0 = real ? w1 : w0;
                        w1 = real ? w2 : w1;
                        w2 = real ? xm : w2;
                    } else {
                        [[dont_unroll]] for (uint k = 0; k < p.K; k++) {
                            const int st = int(t) - int(p.K - 1 - k) * dir; // processing position pp - (K-1) + k
                            acc += conv_tap(ph, k) * xm_at(b, st, up4_stride, ph);
                        }
                    }
                    const vec4 a = silu(acc);
                    vec4 q, v;                        // out[o] = sum_i W[p][o][i] in[i]: row o of W
                    [[unroll]] for (uint o = 0; o < 4; o++) {
                        q[o] = dot(wqk[o], a);
                        v[o] = dot(wv[o], xm);
                    }
                    vs[s] = real ? v : vec4(0.0);
                    if (real) {
                        qkv4_w(row * q4_stride + ph) = q;
                        qkv4_w(row * q4_stride + NP + ph) = a;
#if !(defined(VT_OUT) && VT_OUT)
                        qkv4_w(row * q4_stride + 2 * NP + ph) = v;
#endif
                    }
                }
#if defined(VT_OUT) && VT_OUT
                // Tokens 4j .. 4j+3 (slot u holds step s = u, or 3 - u reversed) of channels d0 + o: one vec4 each.
                const uint row0 = ((b * p.NH + h) * DH + d0) * G + j;
                [[unroll]] for (uint o = 0; o < 4; o++)
                    vt4_w(row0 + o * G) = rev ? vec4(vs[3][o], vs[2][o], vs[1][o], vs[0][o])
                                                 : vec4(vs[0][o], vs[1][o], vs[2][o], vs[3][o]);
#endif
            }
        }
    }
}
