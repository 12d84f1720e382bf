#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Prologue of the unfused (GEMM-based) attention path: turns the q/k/v sources into the three GEMM operands
//
//     q~ [B, H, Tq, DK]   = factor * RoPE(x * w) * q_scale        (x = raw q row of one (b, h, token))
//     k~ [B, H, Tkv, DK]  = factor * RoPE(x * w)                  (the same with the k row)
//     vT [B, H, DK, vt_stride] : vT[b, h, d, j] = v[b, j, h*DK + d] for j < Tkv, 0 for Tkv <= j < vt_stride
//
// so that S = q~ k~^T and O = softmax(S) vT^T are both GEMMs in the nn.Linear layout (A [M, K] times B [N, K]^T,
// both K-contiguous), with the softmax scale already folded into q~. The numerics are attention.comp's, from the
// same include (shaders/qk_prologue.glsl): QK-RMSNorm then RoPE (MODE 0), or RoPE then the L2 norm (MODE 1).
// RoPE needs the same token index for q and k rows (Tq == Tkv when ROPE != 0).
//
// Sources (element strides/offsets in the push constants; the fused ViT-5 qkv [B*T, 3C] is bound three times with
// stride 3C and offsets 0, C, 2C):
//   q: data_q[b * q_batch_stride + t * q_stride + q_offset + h*DK + c]   (t < Tq; k, v the same with k_*/v_*)
//
// Work split: one invocation per (b, token t), looping over the H heads; grid (ceil(max(Tq, vt_stride) / WG_SIZE),
// 1, B), WG_SIZE consecutive tokens per workgroup. Why this suits llvmpipe: its 8-lane SIMD vector then holds 8
// tokens, every lane runs the same uniform loops over heads and channels (no divergence, no shared memory, no
// barrier: nothing is exchanged between lanes), and SSBO loads -- ~20-40 cycles per float per lane there, while
// arithmetic is almost free -- are minimised: each q/k/v float is loaded once, and the token's RoPE row and the two
// norm weight vectors are loaded once per token into private arrays and reused for all H heads (private arrays
// with a lane-uniform dynamic index are cheap stack accesses on llvmpipe). The rotated row is kept in a private
// array until its norm factor is known, then stored as vec4s. A workgroup's vT stores are WG_SIZE consecutive
// floats of one vT row (coalesced on GPUs). Memory loops are [[dont_unroll]] (unrolled, llvmpipe compiles slowly).
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(constant_id = 0) const uint DK = 64;         // head dim, a multiple of 4 (<= 256)
layout(constant_id = 1) const uint WG_SIZE = 8;     // tokens per workgroup (8 = one llvmpipe SIMD vector)
layout(constant_id = 2) const uint MODE = 0;        // 0 ViT5Attention (RMSNorm -> RoPE), 1 generic (RoPE -> L2)
layout(constant_id = 3) const bool QK_NORM = false;
layout(constant_id = 4) const uint ROPE = 0;        // 0 none, 1 split_half, 2 adjacent
layout(constant_id = 5) const uint ROPE_AXES = 2;   // split_half: axis parts of a head

layout(local_size_x_id = 1) in;

// Inputs: storage buffers, or where TEXEL=1 (CPU devices with caps.texel_reads) uniform texel buffers (RGBA32F),
// which llvmpipe reads with SIMD gathers instead of a per-lane scalar loop (see gemm_cpu.comp).
#if defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_q;
layout(binding = 1) uniform samplerBuffer tex_k;
layout(binding = 2) uniform samplerBuffer tex_v;
layout(binding = 3) uniform samplerBuffer tex_rope;
layout(binding = 4) uniform samplerBuffer tex_w;
#define READ1(t, e) texelFetch(t, int((e) >> 2))[(e) & 3u]
#define read_q(e) READ1(tex_q, e)
#define read_k(e) READ1(tex_k, e)
#define read_v(e) READ1(tex_v, e)
#define read_w(e) READ1(tex_w, e)
vec2 read_rope(uint i) {
    const vec4 t = texelFetch(tex_rope, int(i >> 1));
    return (i & 1u) != 0 ? t.zw : t.xy;
}
#else
layout(binding = 0, std430) readonly buffer Q { float data_q[]; };
layout(binding = 1, std430) readonly buffer K { float data_k[]; };
layout(binding = 2, std430) readonly buffer V { float data_v[]; };
layout(binding = 3, std430) readonly buffer Rope { vec2 rope_cs[]; };
layout(binding = 4, std430) readonly buffer W { float data_w[]; };     // q_norm.weight then k_norm.weight
#define read_q(e) data_q[e]
#define read_k(e) data_k[e]
#define read_v(e) data_v[e]
#define read_w(e) data_w[e]
#define read_rope(i) rope_cs[i]
#endif
layout(binding = 5, std430) writeonly buffer QO { vec4 data_qo[]; };  // q~ [B, H, Tq, DK]
layout(binding = 6, std430) writeonly buffer KO { vec4 data_ko[]; };  // k~ [B, H, Tkv, DK]
layout(binding = 7, std430) writeonly buffer VT { float data_vt[]; }; // vT [B, H, DK, vt_stride]

layout(push_constant) uniform Push {
    uint Tq, Tkv;
    uint n_heads;                                   // H: heads of DK channels per token
    uint q_stride, q_offset, q_batch_stride;
    uint k_stride, k_offset, k_batch_stride;
    uint v_stride, v_offset, v_batch_stride;
    uint vt_stride;                                 // row stride of vT (>= Tkv); columns Tkv.. are zeroed
    float q_scale;                                  // softmax scale, folded into q~
    float eps;                                      // RMSNorm eps (MODE 0) or the L2 floor (MODE 1)
} p;

const uint HALF = DK / 2;
const uint DK4 = DK / 4;

float y_row[DK];                                    // the rotated row before its norm factor
vec2 cs_row[HALF];                                  // this token's (cos, sin) per angle index
float w_row[2 * DK];                                // q_norm.weight, k_norm.weight (MODE 0 with QK_NORM)

#define QKP_W(i) w_row[i]
#define QKP_CS(t, a) cs_row[a]
#include "qk_prologue.glsl"

// The prologue of one row (token t; element `base` = its channel 0), written to q~ (is_q) or k~ at vec4 index dst4.
void prologue(const bool is_q, uint base, uint dst4, float out_scale) {
    float ss_raw = 0.0, ss_rot = 0.0;
    [[dont_unroll]] for (uint pr = 0; pr < HALF; pr++) {
        uint c, c2;
        pair_channels(pr, c, c2);
        const float x = is_q ? read_q(base + c) : read_k(base + c);
        const float x2 = is_q ? read_q(base + c2) : read_k(base + c2);
        const vec2 y = qk_pair(is_q, 0, c, c2, x, x2, true, ss_raw, ss_rot);
        y_row[c] = y.x;
        y_row[c2] = y.y;
    }
    float f = out_scale;
    if (QK_NORM) f *= norm_factor(ss_raw, ss_rot);
    [[dont_unroll]] for (uint d4 = 0; d4 < DK4; d4++) {
        const vec4 v = vec4(y_row[4 * d4], y_row[4 * d4 + 1], y_row[4 * d4 + 2], y_row[4 * d4 + 3]) * f;
        if (is_q) data_qo[dst4 + d4] = v;
        else data_ko[dst4 + d4] = v;
    }
}

void main() {
    const uint t = gl_GlobalInvocationID.x, b = gl_WorkGroupID.z, H = p.n_heads;
    const bool has_q = t < p.Tq, has_k = t < p.Tkv;
    if (ROPE != 0 && (has_q || has_k)) {
        [[dont_unroll]] for (uint a = 0; a < HALF; a++) cs_row[a] = read_rope(t * HALF + a);
    }
    if (MODE == 0 && QK_NORM && (has_q || has_k)) {
        [[dont_unroll]] for (uint c = 0; c < 2 * DK; c++) w_row[c] = read_w(c);
    }
    [[dont_unroll]] for (uint h = 0; h < H; h++) {
        const uint bh = b * H + h;
        if (has_q) prologue(true, b * p.q_batch_stride + t * p.q_stride + p.q_offset + h * DK, (bh * p.Tq + t) * DK4,
                            p.q_scale);
        if (has_k) prologue(false, b * p.k_batch_stride + t * p.k_stride + p.k_offset + h * DK,
                            (bh * p.Tkv + t) * DK4, 1.0);
        if (t < p.vt_stride) {
            const uint src = b * p.v_batch_stride + t * p.v_stride + p.v_offset + h * DK;
            const uint dst = bh * DK * p.vt_stride + t;
            if (has_k) {
                [[dont_unroll]] for (uint d = 0; d < DK; d++) data_vt[dst + d * p.vt_stride] = read_v(src + d);
            } else {
                [[dont_unroll]] for (uint d = 0; d < DK; d++) data_vt[dst + d * p.vt_stride] = 0.0;
            }
        }
    }
}
