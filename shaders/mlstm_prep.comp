#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// mLSTM cell front (SPEC 7.1), after proj_up, per token t and projection head p (4 channels c = 4p + i):
//   xc[t, c]  = conv_b[c] + sum_k conv_w[c, k] * xm[src(t, k), c]     causal depthwise conv1d (kernel K)
//   a[t, c]   = silu(xc[t, c])
//   q[t, 4p+o] = sum_i Wq[p, o, i] a[t, 4p+i] ;  k likewise from a ;  v[t, 4p+o] = sum_i Wv[p, o, i] xm[t, 4p+i]
// xm = up[:, :E]. Tokens stay at their ORIGINAL index for both directions: a reversed block's conv looks at the
// processing positions pp - (K-1) + k with pp = S-1-t, i.e. original rows t + (K-1) - k (no physical flip).
// Positions before the start of the processing order are zero (the causal padding).
// Outputs: a [rows, E] (the skip branch) and qkv [rows, 3E] = cat(q, k, v) (the gate input, and the scan's q/k/v).
// One invocation per (row, p). Grid-stride over rows * NP.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(local_size_x = 64) in;

// TEXEL=1 (CPU devices with caps.texel_reads): the read-only inputs are uniform texel buffers (RGBA32F), which
// llvmpipe reads with SIMD gathers instead of a per-lane scalar loop (see gemm_cpu.comp); NAME_r(i) reads element i.
#if defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_0;
#define data_up_r(e) texelFetch(tex_0, int((e) >> 2))[(e) & 3u]
layout(binding = 1) uniform samplerBuffer tex_1;
#define data_cw_r(e) texelFetch(tex_1, int((e) >> 2))[(e) & 3u]
layout(binding = 2) uniform samplerBuffer tex_2;
#define data_cb_r(e) texelFetch(tex_2, int((e) >> 2))[(e) & 3u]
layout(binding = 3) uniform samplerBuffer tex_3;
#define data_wq_r(e) texelFetch(tex_3, int((e) >> 2))[(e) & 3u]
layout(binding = 4) uniform samplerBuffer tex_4;
#define data_wk_r(e) texelFetch(tex_4, int((e) >> 2))[(e) & 3u]
layout(binding = 5) uniform samplerBuffer tex_5;
#define data_wv_r(e) texelFetch(tex_5, int((e) >> 2))[(e) & 3u]
#else
layout(binding = 0, std430) readonly buffer Up { float data_up[]; };     // [rows, up_stride], xm = columns 0..E-1
layout(binding = 1, std430) readonly buffer Cw { float data_cw[]; };     // [E, K]
layout(binding = 2, std430) readonly buffer Cb { float data_cb[]; };     // [E]
layout(binding = 3, std430) readonly buffer Wq { float data_wq[]; };     // [NP, 4, 4]
layout(binding = 4, std430) readonly buffer Wk { float data_wk[]; };
layout(binding = 5, std430) readonly buffer Wv { float data_wv[]; };
#define data_up_r(i) float(data_up[i])
#define data_cw_r(i) float(data_cw[i])
#define data_cb_r(i) float(data_cb[i])
#define data_wq_r(i) float(data_wq[i])
#define data_wk_r(i) float(data_wk[i])
#define data_wv_r(i) float(data_wv[i])
#endif
layout(binding = 6, std430) writeonly buffer Ao { float data_a[]; };     // [rows, E]
layout(binding = 7, std430) writeonly buffer Qo { float data_qkv[]; };   // [rows, 3E]

layout(push_constant) uniform Push {
    uint rows, S, E, K;                               // rows = B * S
    uint up_stride;                                   // 2E
    uint reverse;                                     // 1: the block processes the sequence back to front
} p;

float silu(float x) { return x / (1.0 + exp(-x)); }

void main() {
    const uint NP = p.E / 4;
    const uint n = p.rows * NP;
    for (uint idx = gl_GlobalInvocationID.x; idx < n; idx += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        const uint row = idx / NP, ph = idx % NP;
        const uint b = row / p.S, t = row % p.S;
        const uint pp = p.reverse != 0 ? p.S - 1 - t : t;         // processing position of this token
        const uint c0 = 4 * ph;
        float a[4], xm[4];
        [[unroll]] for (uint i = 0; i < 4; i++) {
            const uint c = c0 + i;
            float acc = data_cb_r(c);
            [[dont_unroll]] for (uint k = 0; k < p.K; k++) {
                if (pp + k < p.K - 1) continue;                       // before the first processed token: zero
                const uint sp = pp + k - (p.K - 1);                   // source processing position
                const uint st = p.reverse != 0 ? p.S - 1 - sp : sp;   // its original token index
                acc += data_cw_r(c * p.K + k) * data_up_r((b * p.S + st) * p.up_stride + c);
            }
            a[i] = silu(acc);
            xm[i] = data_up_r(row * p.up_stride + c);
        }
        const uint w0 = ph * 16;
        [[unroll]] for (uint o = 0; o < 4; o++) {
            float q = 0.0, k = 0.0, v = 0.0;
            [[unroll]] for (uint i = 0; i < 4; i++) {
                q += data_wq_r(w0 + o * 4 + i) * a[i];
                k += data_wk_r(w0 + o * 4 + i) * a[i];
                v += data_wv_r(w0 + o * 4 + i) * xm[i];
            }
            data_a[row * p.E + c0 + o] = a[o];
            data_qkv[row * 3 * p.E + c0 + o] = q;
            data_qkv[row * 3 * p.E + p.E + c0 + o] = k;
            data_qkv[row * 3 * p.E + 2 * p.E + c0 + o] = v;
        }
    }
}
