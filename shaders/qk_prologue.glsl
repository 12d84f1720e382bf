// SPDX-License-Identifier: Apache-2.0
// ---------------------------------------------------------------------------------------------------------------
// The q/k prologue of attention, written once for both paths (attention.comp: the fused kernel stages rows into
// shared memory; attention_prep.comp: the unfused path writes q~ / k~ for the GEMMs):
//
//   MODE 0 (ViT5Attention):  y = RoPE(x * w), factor = rsqrt(mean(x^2) + eps) of the RAW row (QK_NORM; w = q_norm /
//                            k_norm weight), i.e. RoPE(RMSNorm_w(x)); without QK_NORM w = 1 and factor = 1
//   MODE 1 (generic):        y = RoPE(x), factor = 1 / max(||y||, eps) (QK_NORM: parameter-free L2 AFTER RoPE)
// RoPE is linear and both norms are one scalar per (token, head), so a row is rotated pair by pair while the sums of
// squares accumulate, and multiplied by its factor afterwards. Equal to the reference up to rounding.
// RoPE from the compact (cos, sin) table (src/model/rope.c), angle index c >> 1 for channel c:
//   ROPE 1 split_half (nvsubq, docs/math.md 1.4): inside each of ROPE_AXES parts of DA = DK/ROPE_AXES channels,
//          cl < DA/2 pairs with cl + DA/2 (sign -) and that one with cl (sign +), each channel with ITS OWN angle
//          (upstream)
//   ROPE 2 adjacent (paper, docs/math.md 6.1): 2i pairs with 2i+1 (sign - on 2i), both angle i
//
// The includer declares the constants DK, MODE, QK_NORM, ROPE, ROPE_AXES and the push constant p.eps, and defines
//   QKP_W(i)      norm weight i (q_norm.weight at 0 .. DK-1, k_norm.weight at DK .. 2*DK-1; MODE 0 with QK_NORM)
//   QKP_CS(t, a)  the (cos, sin) vec2 of angle index a of token t (ROPE != 0)
// ---------------------------------------------------------------------------------------------------------------
#ifndef VKVIT_QK_PROLOGUE_GLSL
#define VKVIT_QK_PROLOGUE_GLSL

// Pair number `pr` (< DK/2) -> its two channels: `c` takes sign -, `c2` sign +.
void pair_channels(uint pr, out uint c, out uint c2) {
    if (ROPE == 1) {
        const uint hq = DK / ROPE_AXES / 2;
        c = (pr / hq) * (DK / ROPE_AXES) + pr % hq;
        c2 = c + hq;
    } else {
        c = 2 * pr;
        c2 = c + 1;
    }
}

// The factor of a row from the sums of squares of its raw (ss_raw) and rotated (ss_rot) values (QK_NORM only).
float norm_factor(float ss_raw, float ss_rot) {
    if (MODE == 0) return inversesqrt(ss_raw / float(DK) + p.eps);
    return 1.0 / max(sqrt(ss_rot), p.eps);
}

// One channel pair (c, c2) of a q (is_q) or k row of token t with raw values (x, x2): weight, then RoPE (when
// `rotate`: rows past the sequence end hold zeros and read no table row). Returns the pair as stored before the
// factor; adds the squares of the raw and of the rotated values to ss_raw / ss_rot.
vec2 qk_pair(const bool is_q, uint t, uint c, uint c2, float x, float x2, bool rotate, inout float ss_raw,
             inout float ss_rot) {
    ss_raw += x * x + x2 * x2;
    if (MODE == 0 && QK_NORM) {
        const uint w0 = is_q ? 0 : DK;
        x *= QKP_W(w0 + c);
        x2 *= QKP_W(w0 + c2);
    }
    float y = x, y2 = x2;
    if (ROPE != 0 && rotate) {
        const vec2 cs = QKP_CS(t, c >> 1), cs2 = QKP_CS(t, c2 >> 1);
        y = x * cs.x - x2 * cs.y;
        y2 = x2 * cs2.x + x * cs2.y;
    }
    ss_rot += y * y + y2 * y2;
    return vec2(y, y2);
}

#endif
