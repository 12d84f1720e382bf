// SPDX-License-Identifier: Apache-2.0
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
// 1, B), WG_SIZE consecutive tokens per workgroup. On GPUs (HEAD_GRID) one invocation per (b, token, head) instead,
// grid (..., H, B): a token-only grid is ~200 invocations at batch 1, which left the H100 idle (0.37 of ViT-5-S's
// 1.55 ms in fp16-math). Why this suits llvmpipe: its 8-lane SIMD vector then holds 8
// tokens, every lane runs the same uniform loops over heads and channels (no divergence, no shared memory, no
// barrier: nothing is exchanged between lanes), and SSBO loads -- ~20-40 cycles per float per lane there, while
// arithmetic is almost free -- are minimised: each q/k/v float is loaded once, and the token's RoPE row and the two
// norm weight vectors are loaded once per token into private arrays and reused for all H heads. Every loop over
// channels is unrolled, so those arrays (and the rotated row, kept until its norm factor is known, then stored as
// vec4s) are only ever indexed by constants: llvmpipe turns a private array at a loop-dependent index into a
// lane-by-lane gather and a masked scalar store per lane (measured on gemm_cpu.comp). Rows are read as vec4s where
// the host finds every q/k/v row start a multiple of 4 (specialization constant VEC4), else element by element.
// A workgroup's vT stores are WG_SIZE consecutive floats of one vT row (coalesced on GPUs).
//
// KV_F16=1 (fp16-math sessions whose GEMMs run on cooperative matrices): k~ and vT are stored as fp16, the B
// operands of the two attention GEMMs on tensor cores; q~ stays fp32 (the GEMM rounds its A operand as it stages it).
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"
#if defined(KV_F16) && KV_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define KV_TYPE float16_t
#define KV_VEC4 f16vec4
#else
#define KV_TYPE float
#define KV_VEC4 vec4
#endif

layout(constant_id = 0) const uint DK = 64;         // head dim, a multiple of 4 (<= 256)
layout(constant_id = 1) const uint WG_SIZE = 8;     // tokens per workgroup (8 = one llvmpipe SIMD vector)
layout(constant_id = 2) const uint MODE = 0;        // 0 ViT5Attention (RMSNorm -> RoPE), 1 generic (RoPE -> L2)
layout(constant_id = 3) const bool QK_NORM = false;
layout(constant_id = 4) const uint ROPE = 0;        // 0 none, 1 split_half, 2 adjacent
layout(constant_id = 5) const uint ROPE_AXES = 2;   // split_half: axis parts of a head
layout(constant_id = 6) const bool VEC4 = false;    // q/k/v strides, offsets and batch strides are multiples of 4
layout(constant_id = 7) const bool HEAD_GRID = false; // one head per workgroup row (gl_WorkGroupID.y), not a loop

layout(local_size_x_id = 1) in;

// Inputs: storage buffers, or where TEXEL=1 (CPU devices with caps.texel_reads) uniform texel buffers (RGBA32F),
// which llvmpipe reads with SIMD gathers instead of a per-lane scalar loop (see gemm_cpu.comp).
// PACKED: q, k, v, the RoPE table, the norm weights, q~, k~ and vT (logical bindings 0-7) through the arena and
// weights buffers of shaders/packed.glsl (devices with 4 storage buffers per stage; fp32, not with TEXEL).
#if defined(PACKED) && PACKED
#if (defined(TEXEL) && TEXEL) || (defined(KV_F16) && KV_F16)
#error "the packed attention_prep is fp32 storage buffers"
#endif
#define PACKED_N 8
#include "packed.glsl"
#define read_q(e) PK_READ(0, e)
#define read_k(e) PK_READ(1, e)
#define read_v(e) PK_READ(2, e)
#define read_w(e) PK_READ(4, e)
#define read_rope(i) vec2(PK_READ(3, 2 * (i)), PK_READ(3, 2 * (i) + 1))
#define read_q4(i) PK_READ4(0, i)
#define read_k4(i) PK_READ4(1, i)
#define read_v4(i) PK_READ4(2, i)
#define read_w4(i) PK_READ4(4, i)
#define read_rope2(i) PK_READ4(3, i)
#define QO_AT(i) PK_ARENA4(5, i)
#define KO_AT(i) PK_ARENA4(6, i)
#define VT_AT(e) PK_ARENA(7, e)
#elif defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_q;
layout(binding = 1) uniform samplerBuffer tex_k;
layout(binding = 2) uniform samplerBuffer tex_v;
layout(binding = 3) uniform samplerBuffer tex_rope;
layout(binding = 4) uniform samplerBuffer tex_w;
#define READ1(t, e) texelFetch(t, int((e) >> 2))[(e) & 3u]
#define read_q4(i) texelFetch(tex_q, int(i))
#define read_k4(i) texelFetch(tex_k, int(i))
#define read_v4(i) texelFetch(tex_v, int(i))
#define read_w4(i) texelFetch(tex_w, int(i))
#define read_rope2(i) texelFetch(tex_rope, int(i))      /* the (cos, sin) of angles 2i and 2i + 1 */
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
layout(binding = 0, std430) readonly buffer Q4 { vec4 data_q4[]; };
layout(binding = 1, std430) readonly buffer K4 { vec4 data_k4[]; };
layout(binding = 2, std430) readonly buffer V4 { vec4 data_v4[]; };
layout(binding = 3, std430) readonly buffer Rope { vec2 rope_cs[]; };
layout(binding = 3, std430) readonly buffer Rope2 { vec4 rope_cs2[]; };
layout(binding = 4, std430) readonly buffer W { float data_w[]; };     // q_norm.weight then k_norm.weight
layout(binding = 4, std430) readonly buffer W4 { vec4 data_w4[]; };
#define read_q(e) data_q[e]
#define read_k(e) data_k[e]
#define read_v(e) data_v[e]
#define read_w(e) data_w[e]
#define read_rope(i) rope_cs[i]
#define read_q4(i) data_q4[i]
#define read_k4(i) data_k4[i]
#define read_v4(i) data_v4[i]
#define read_w4(i) data_w4[i]
#define read_rope2(i) rope_cs2[i]
#endif
#if !(defined(PACKED) && PACKED)
#define PACKED_PUSH_FIELDS
layout(binding = 5, std430) writeonly buffer QO { vec4 data_qo[]; };  // q~ [B, H, Tq, DK]
layout(binding = 6, std430) writeonly buffer KO { KV_VEC4 data_ko[]; };  // k~ [B, H, Tkv, DK]
layout(binding = 7, std430) writeonly buffer VT { KV_TYPE data_vt[]; }; // vT [B, H, DK, vt_stride]
#define QO_AT(i) data_qo[i]
#define KO_AT(i) data_ko[i]
#define VT_AT(e) data_vt[e]
#endif

layout(push_constant) uniform Push {
    uint Tq, Tkv;
    uint n_heads;                                   // H: heads of DK channels per token
    uint q_stride, q_offset, q_batch_stride;
    uint k_stride, k_offset, k_batch_stride;
    uint v_stride, v_offset, v_batch_stride;
    uint vt_stride;                                 // row stride of vT (>= Tkv); columns Tkv.. are zeroed
    float q_scale;                                  // softmax scale, folded into q~
    float eps;                                      // RMSNorm eps (MODE 0) or the L2 floor (MODE 1)
    PACKED_PUSH_FIELDS                              // PACKED: the 8 tensors' element bases
} p;

const uint HALF = DK / 2;
const uint DK4 = DK / 4;

vec2 cs_row[HALF];                                  // this token's (cos, sin) per angle index
float w_row[2 * DK];                                // q_norm.weight, k_norm.weight (MODE 0 with QK_NORM)

#define QKP_W(i) w_row[i]
#define QKP_CS(t, a) cs_row[a]
#include "qk_prologue.glsl"

// The DK channels of a q (SRC 0), k (1) or v (2) row starting at element `base`.
void read_row(const uint SRC, uint base, out float x[DK]) {
    if (VEC4) {
        [[unroll]] for (uint d4 = 0; d4 < DK4; d4++) {
            const uint i = base / 4 + d4;
            const vec4 v = SRC == 0 ? read_q4(i) : SRC == 1 ? read_k4(i) : read_v4(i);
            x[4 * d4] = v.x, x[4 * d4 + 1] = v.y, x[4 * d4 + 2] = v.z, x[4 * d4 + 3] = v.w;
        }
    } else {
        [[unroll]] for (uint d = 0; d < DK; d++)
            x[d] = SRC == 0 ? read_q(base + d) : SRC == 1 ? read_k(base + d) : read_v(base + d);
    }
}

// The prologue of one row (token t; element `base` = its channel 0), written to q~ (is_q) or k~ at vec4 index dst4.
void prologue(const bool is_q, uint base, uint dst4, float out_scale) {
    float x[DK], y[DK];
    read_row(is_q ? 0 : 1, base, x);
    float ss_raw = 0.0, ss_rot = 0.0;
    [[unroll]] for (uint pr = 0; pr < HALF; pr++) {
        uint c, c2;
        pair_channels(pr, c, c2);
        const vec2 v = qk_pair(is_q, 0, c, c2, x[c], x[c2], true, ss_raw, ss_rot);
        y[c] = v.x;
        y[c2] = v.y;
    }
    float f = out_scale;
    if (QK_NORM) f *= norm_factor(ss_raw, ss_rot);
    [[unroll]] for (uint d4 = 0; d4 < DK4; d4++) {
        const vec4 v = vec4(y[4 * d4], y[4 * d4 + 1], y[4 * d4 + 2], y[4 * d4 + 3]) * f;
        if (is_q) QO_AT(dst4 + d4) = v;
        else KO_AT(dst4 + d4) = KV_VEC4(v);
    }
}

void main() {
    const uint t = gl_GlobalInvocationID.x, b = gl_WorkGroupID.z, H = p.n_heads;
    const bool has_q = t < p.Tq, has_k = t < p.Tkv;
    // Rows past Tq / Tkv read the last token's (and store nothing but vT's zero padding): no branch around the
    // loads, which llvmpipe would run anyway.
    const uint tq = min(t, p.Tq - 1), tk = min(t, p.Tkv - 1);
    if (ROPE != 0) {
        const uint tr = has_q ? tq : tk;              // RoPE needs Tq == Tkv
        [[unroll]] for (uint a2 = 0; a2 < HALF / 2; a2++) {
            const vec4 cs = read_rope2((tr * HALF) / 2 + a2);
            cs_row[2 * a2] = cs.xy;
            cs_row[2 * a2 + 1] = cs.zw;
        }
    }
    if (MODE == 0 && QK_NORM) {
        [[unroll]] for (uint c4 = 0; c4 < 2 * DK4; c4++) {
            const vec4 w = read_w4(c4);
            w_row[4 * c4] = w.x, w_row[4 * c4 + 1] = w.y, w_row[4 * c4 + 2] = w.z, w_row[4 * c4 + 3] = w.w;
        }
    }
    const uint h0 = HEAD_GRID ? gl_WorkGroupID.y : 0, h1 = HEAD_GRID ? h0 + 1 : H;
    [[dont_unroll]] for (uint h = h0; h < h1; h++) {
        const uint bh = b * H + h;
        if (has_q) prologue(true, b * p.q_batch_stride + tq * p.q_stride + p.q_offset + h * DK, (bh * p.Tq + tq) * DK4,
                            p.q_scale);
        if (has_k) prologue(false, b * p.k_batch_stride + tk * p.k_stride + p.k_offset + h * DK,
                            (bh * p.Tkv + tk) * DK4, 1.0);
        if (t < p.vt_stride) {
            float v[DK];
            read_row(2, b * p.v_batch_stride + tk * p.v_stride + p.v_offset + h * DK, v);
            const uint dst = bh * DK * p.vt_stride + t;
            [[unroll]] for (uint d = 0; d < DK; d++) VT_AT(dst + d * p.vt_stride) = KV_TYPE(has_k ? v[d] : 0.0);
        }
    }
}
