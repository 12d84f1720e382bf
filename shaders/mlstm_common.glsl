// SPDX-License-Identifier: Apache-2.0
// ---------------------------------------------------------------------------------------------------------------
// Shared by the four phases of the chunked mLSTM scan (docs/math.md 7.3): mlstm_chunk.comp (per-chunk summaries),
// mlstm_carry.comp (sequential combine over chunks), mlstm_inter.comp (the carried part C^T q of every output),
// mlstm_scan.comp (per-chunk outputs).
//
// Why phases and not one sequential loop over the chunks: besides the parallelism (every chunk of every head
// is a workgroup in phases 1 and 3), llvmpipe (lavapipe) caps the loop iterations of one shader invocation at
// 65535 in total (gallivm's loop limiter) and silently leaves the loops after that; a single kernel scanning 1000+
// tokens crosses it. Each phase here does work bounded by one chunk, or by n_chunks * DH / 4 (the combine).
//
// Tokens are in PROCESSING order pp = 0 .. S-1: the original row is t = pp (forward) or S-1-pp (reversed block).
// Chunk c covers pp = c*L .. min(c*L + L, S) - 1.
//
// Per-chunk record in the state buffer (R = DH*DH + DH + 4 floats), record ((b*NH + h)*n_chunks + c):
//   [0, DH*DH)        C: after phase 1 the chunk's own sum  sum_j e^(beta_e - beta_j + li_j - mu_c) k'_j v_j^T
//                     (row d = key channel, column = value channel); after phase 2 the state carried INTO the chunk
//   [DH*DH, +DH)      n: likewise with k'_j
//   +DH + 0           g    = beta_e, the chunk's summed log forget gate          (phase 1)
//   +DH + 1           mu_c = max_j (beta_e - beta_j + li_j), the chunk's own max  (phase 1)
//   +DH + 2           mu   = exact running max carried into the chunk            (phase 2)
//   +DH + 3           have = 1 when a state is carried in (every chunk but the first)
// ---------------------------------------------------------------------------------------------------------------
#ifndef VKVIT_MLSTM_COMMON_GLSL
#define VKVIT_MLSTM_COMMON_GLSL

layout(constant_id = 0) const uint VT = 8;            // lanes per workgroup (carry, scan: value columns)
layout(constant_id = 1) const uint L = 16;            // chunk length
layout(constant_id = 2) const uint DH = 64;           // head dim (keys and values)
layout(constant_id = 3) const bool NXAI = false;      // NX-AI numerics instead of the seed's
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint S, NH, reverse, n_chunks;
    uint qkv_stride, q_off, k_off, v_off;             // element (row, ch) of q = data_qkv[row*qkv_stride + q_off + ch]
    uint gate_stride, i_off, f_off;                   // ipre of head h at data_g[row*gate_stride + i_off + h]
    uint h_stride;                                    // h (row, h*DH + d) at data_h[row*h_stride + h*DH + d]
} p;

const float LN_1E_MINUS_6 = -13.815510558;
const float NEG_BIG = -3.0e38;

uint rec_size() { return DH * DH + DH + 4; }
uint rec_base(uint b, uint h, uint c) { return ((b * p.NH + h) * p.n_chunks + c) * rec_size(); }

// The original row of processing position pp of image b.
uint row_of(uint b, uint pp) { return b * p.S + (p.reverse != 0 ? p.S - 1 - pp : pp); }

float log1p_accurate(float x) {                       // log(1 + x) without losing small x (x >= 0)
    const float u = 1.0 + x;
    return u == 1.0 ? x : log(u) * (x / (u - 1.0));
}

// Log input gate li and log forget gate lf of the flavour (docs/math.md 7.1 quirks 1-2; 7.2).
void log_gates(float ipre, float fpre, out float li, out float lf) {
    if (NXAI) {
        li = ipre;
        lf = min(fpre, 0.0) - log1p_accurate(exp(-abs(fpre)));     // logsigmoid
    } else {
        li = max(ipre, LN_1E_MINUS_6);                              // log(max(exp(ipre), 1e-6)) without overflow
        lf = log(max(1.0 / (1.0 + exp(-fpre)), 1e-6));
    }
}

#endif
