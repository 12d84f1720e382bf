// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
#if SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
// ---------------------------------------------------------------------------------------------------------------
// Flash-style multi-head attention core, fp32 (docs/math.md 1.3 steps 2-5 for ViT-5, 3.2 for the generic Attention):
//
//     o[b][i][h*DK + d] = sum_j softmax_j( scale * q~_i . k~_j ) v_j[d]        i < Tq, j < Tkv (j <= i if CAUSAL)
//
// with the prologue applied to q and k of one head (v is untouched):
//   MODE 0 (ViT5Attention):  x^ = RMSNorm_w(x) = x * rsqrt(mean(x^2) + eps) * w   (QK_NORM, BEFORE RoPE)
//                            x~ = RoPE(x^)
//   MODE 1 (generic):        x^ = RoPE(x)                                          (RoPE FIRST)
//                            x~ = x^ / max(||x^||, eps)                            (QK_NORM, parameter-free L2)
// RoPE:  y[c] = x[c] * cos(a_c) + sgn(c) * x[partner(c)] * sin(a_c),  a_c = table angle `c >> 1` of the token
//   ROPE 1 split_half (nvsubq, docs/math.md 1.4): the head is ROPE_AXES parts of da = DK/ROPE_AXES channels; inside
//          a part channel cl < da/2 pairs with cl + da/2 (sign -), cl >= da/2 with cl - da/2 (sign +). The two
//          channels of a pair use DIFFERENT angles (the upstream quirk: not a rotation); reproduced as is.
//   ROPE 2 adjacent (paper, docs/math.md 6.1): 2i pairs with 2i+1 (sign - on 2i), both use angle i: a true rotation.
// Because RoPE is linear and both norms are one scalar per (token, head), the kernel forms y = RoPE(x * w)
// (w = 1 in MODE 1) and multiplies the row by its norm factor afterwards: rsqrt(mean(x^2) + eps) of the RAW x in
// MODE 0, 1 / max(||y||, eps) of the ROTATED y in MODE 1. Equal to the reference up to rounding.
//
// Shapes (all fp32; element strides and offsets from the push constants):
//   Q   data_q[b * q_batch_stride + i * q_stride + q_offset + h*DK + d]      i < Tq
//   K   data_k[b * k_batch_stride + j * k_stride + k_offset + h*DK + d]      j < Tkv
//   V   data_v[...the same with v_*...]                                      j < Tkv
//       (the fused ViT-5 qkv [B, T, 3C] is bound three times with stride 3C and offsets 0, C, 2C)
//   RoPE rope_cs[t * DK/2 + (c >> 1)] = (cos, sin) of token t (compact table, src/model/rope.h); t = i for q, j for k
//   W   data_w[0 .. DK) = q_norm.weight, data_w[DK .. 2*DK) = k_norm.weight (MODE 0 with QK_NORM only)
//   O   data_o[b * o_batch_stride + i * o_stride + o_offset + h*DK + d]
//
// Work split. Grid (ceil(Tq/BQ), H, B): a workgroup owns BQ query rows of one (b, h). Its (BQ/RPI)*TPR invocations
// form BQ/RPI row groups g of TPR lanes; a group owns the RPI rows g, g + BQ/RPI, ... and lane `lane` of it owns the
// channels d = 4*(lane + TPR*w) + e (w < DK/(4*TPR), e < 4) of those rows' q~ and output accumulators, in registers.
//   CPU devices (llvmpipe): TPR = 1, RPI = 2..4. llvmpipe runs 8 invocations per SIMD vector and executes every
//     shared-memory load as a loop over those lanes, so a K/V value must feed as many FMAs as possible: its address
//     is uniform across the vector (one load per 8 lanes) and each lane uses it for RPI rows.
//   GPUs (the SUBGROUP variant): RPI = 1, TPR = 4..8 lanes per row (fewer registers each, more parallelism);
//     partial dot products are summed with subgroup shuffles, so a row's lanes sit in one subgroup.
// Memory loops are [[dont_unroll]]: unrolled, each memory access becomes such a lane loop, and LLVM's compile time
// on llvmpipe grows from under a second to many seconds per pipeline.
//
// Passes:
//   1. Q: each row group stages its own rows in shared memory with the prologue (pairs split over its lanes; the
//      norm's sum of squares reduced over them), loads them into registers times factor * scale * log2(e).
//   2. One pass over the keys, BK per tile: K staged in shared memory with the same prologue (one invocation per
//      row under QK_NORM, so the norm needs no reduction; else one per channel pair; normalised K is never written
//      back to global memory), V raw; two barriers per tile. Inside a tile the keys are taken KC at a time with
//      the online softmax per query row, in base 2 (log2(e) is folded into q~):
//          s_j   = log2(e) * scale * q~ . k~_j                  (masked keys do not count)
//          m'    = max(m, max_j s_j)                            running max, starts at -FLT_MAX (finite, see below)
//          alpha = 2^(m - m')                                   rescales what was accumulated under the old max
//          l'    = alpha * l + sum_j 2^(s_j - m')               running denominator
//          acc'  = alpha * acc + sum_j 2^(s_j - m') v_j         running numerator
//      This equals softmax(scale q k^T) v in real arithmetic: after all rescales every term of acc and l carries
//      the same factor 2^(-m_final), which cancels in acc / l. Masked keys get p = 0 by a select (never exp of
//      -inf), so a row whose keys so far are all masked keeps m = -FLT_MAX, alpha = 1, l = acc = 0.
//   3. O: each row group writes acc / l of its rows through its own shared-memory rows to global memory.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(constant_id = 0) const uint DK = 64;         // head dim: a multiple of 4 (and of 2*ROPE_AXES for split_half)
layout(constant_id = 1) const uint BQ = 32;         // query rows per workgroup (a multiple of RPI)
layout(constant_id = 2) const uint BK = 64;         // keys per shared-memory tile (a multiple of KC)
layout(constant_id = 3) const uint KC = 1;          // keys per online-softmax chunk
layout(constant_id = 4) const uint TPR = 1;         // invocations per query row (power of two dividing DK/4)
layout(constant_id = 5) const uint WG_SIZE = 8;     // must equal (BQ / RPI) * TPR
layout(constant_id = 6) const uint MODE = 0;        // 0 ViT5Attention, 1 generic Attention
layout(constant_id = 7) const bool QK_NORM = false;
layout(constant_id = 8) const uint ROPE = 0;        // 0 none, 1 split_half, 2 adjacent
layout(constant_id = 9) const uint ROPE_AXES = 2;   // split_half: number of axis parts of the head (1..3)
layout(constant_id = 10) const bool CAUSAL = false; // key j is seen by query i only if j <= i
layout(constant_id = 11) const uint RPI = 4;        // query rows per invocation

layout(local_size_x_id = 5) in;

// PACKED: q, k, v, the RoPE table, the q/k-norm weights and o (logical bindings 0-5) through the arena and weights
// buffers of shaders/packed.glsl (devices with 4 storage buffers per stage).
#if defined(PACKED) && PACKED
#define PACKED_N 6
#include "packed.glsl"
#define Q_AT(e) PK_READ(0, e)
#define K_AT(e) PK_READ(1, e)
#define V_AT(e) PK_READ(2, e)
#define CS_AT(i) vec2(PK_READ(3, 2 * (i)), PK_READ(3, 2 * (i) + 1))
#define W_AT(e) PK_READ(4, e)
#define O_AT(e) PK_ARENA(5, e)
#else
#define PACKED_PUSH_FIELDS
layout(binding = 0, std430) readonly buffer Q { float data_q[]; };
layout(binding = 1, std430) readonly buffer K { float data_k[]; };
layout(binding = 2, std430) readonly buffer V { float data_v[]; };
layout(binding = 3, std430) readonly buffer Rope { vec2 rope_cs[]; };
layout(binding = 4, std430) readonly buffer W { float data_w[]; };
layout(binding = 5, std430) writeonly buffer O { float data_o[]; };
#define Q_AT(e) data_q[e]
#define K_AT(e) data_k[e]
#define V_AT(e) data_v[e]
#define CS_AT(i) rope_cs[i]
#define W_AT(e) data_w[e]
#define O_AT(e) data_o[e]
#endif

layout(push_constant) uniform Push {
    uint Tq, Tkv;
    uint q_stride, q_offset, q_batch_stride;        // element strides / offsets
    uint k_stride, k_offset, k_batch_stride;
    uint v_stride, v_offset, v_batch_stride;
    uint o_stride, o_offset, o_batch_stride;
    float scale;                                    // dk^-0.5, or 1.0 for the generic Attention under qk-norm
    float eps;                                      // RMSNorm eps (MODE 0) or the L2 floor 1e-12 (MODE 1)
    PACKED_PUSH_FIELDS                              // PACKED: the 6 tensors' element bases
} p;

const uint DK4 = DK / 4;                            // vec4 chunks per head
const uint DPT4 = DK4 / TPR;                        // vec4 chunks per invocation and row
const uint HALF = DK / 2;                           // channel pairs; angles per token in the RoPE table
const uint NG = BQ / RPI;                           // row groups (invocations per lane index)
const uint TILE_ROWS = BK > BQ ? BK : BQ;
const float LOG2E = 1.4426950408889634;
const float NEG_BIG = -3.402823466e38;              // -FLT_MAX

// Row-major [row][DK/4] tiles of vec4: a vec4 load moves four channels per instruction. sh_a holds the Q rows
// (pass 1), then each K tile (pass 2), then the O rows (pass 3).
shared vec4 sh_a[TILE_ROWS * DK4];
shared vec4 sh_v[BK * DK4];

// ---------------------------------------------------------------------------------------------------------------
// Prologue staging
// ---------------------------------------------------------------------------------------------------------------

#define QKP_W(i) W_AT(i)
#define QKP_CS(t, a) CS_AT((t) * HALF + (a))
#include "qk_prologue.glsl"

// One channel pair of row `r` of sh_a (token t of Q or K, element `base` = its channel 0): loads, weight, RoPE,
// store; adds the squares of the raw and of the rotated values to ss_raw / ss_rot. Invalid rows store zeros.
void stage_pair(const bool is_q, uint r, uint t, uint base, uint pr, bool valid, inout float ss_raw,
                inout float ss_rot) {
    uint c, c2;
    pair_channels(pr, c, c2);
    float x = 0.0, x2 = 0.0;
    if (valid) {
        if (is_q) {
            x = Q_AT(base + c);
            x2 = Q_AT(base + c2);
        } else {
            x = K_AT(base + c);
            x2 = K_AT(base + c2);
        }
    }
    const vec2 y = qk_pair(is_q, t, c, c2, x, x2, valid, ss_raw, ss_rot);
    sh_a[r * DK4 + (c >> 2)][c & 3] = y.x;
    sh_a[r * DK4 + (c2 >> 2)][c2 & 3] = y.y;
}

// K rows k0 .. k0+nk-1 -> sh_a rows 0 .. nk-1 with the prologue (and the norm factor); rows nk .. BK-1 are zeroed.
void stage_k(uint tid, uint b, uint h, uint k0, uint nk) {
    const uint base0 = b * p.k_batch_stride + p.k_offset + h * DK;
    if (QK_NORM) {
        // One invocation per row: it sees the whole row, so it forms the norm factor without a reduction.
        [[dont_unroll]] for (uint r = tid; r < BK; r += WG_SIZE) {
            const bool valid = r < nk;
            float ss_raw = 0.0, ss_rot = 0.0;
            [[dont_unroll]] for (uint pr = 0; pr < HALF; pr++)
                stage_pair(false, r, k0 + r, base0 + (k0 + r) * p.k_stride, pr, valid, ss_raw, ss_rot);
            const float f = valid ? norm_factor(ss_raw, ss_rot) : 0.0;
            [[dont_unroll]] for (uint d4 = 0; d4 < DK4; d4++) sh_a[r * DK4 + d4] *= f;
        }
    } else {
        // One invocation per channel pair.
        [[dont_unroll]] for (uint idx = tid; idx < BK * HALF; idx += WG_SIZE) {
            const uint r = idx / HALF;
            float unused_raw = 0.0, unused_rot = 0.0;
            stage_pair(false, r, k0 + r, base0 + (k0 + r) * p.k_stride, idx % HALF, r < nk, unused_raw, unused_rot);
        }
    }
}

void stage_v(uint tid, uint b, uint h, uint k0, uint nk) {
    const uint base0 = b * p.v_batch_stride + p.v_offset + h * DK;
    [[dont_unroll]] for (uint idx = tid; idx < BK * DK4; idx += WG_SIZE) {
        const uint r = idx / DK4, d = 4 * (idx % DK4);
        vec4 v = vec4(0.0);
        if (r < nk) {
            const uint at = base0 + (k0 + r) * p.v_stride + d;
            v = vec4(V_AT(at), V_AT(at + 1), V_AT(at + 2), V_AT(at + 3));
        }
        sh_v[idx] = v;
    }
}

// Sum over the TPR invocations of a query row (butterfly over subgroup lanes lane ^ 1, lane ^ 2, ...).
float row_sum(float x) {
#if SUBGROUP
    [[unroll]] for (uint m = 1; m < TPR; m <<= 1) x += subgroupShuffleXor(x, m);
#endif
    return x;
}

// Makes the shared-memory writes of a row's TPR lanes visible to each other (they share a subgroup).
void row_sync() {
#if SUBGROUP
    subgroupMemoryBarrierShared();
    subgroupBarrier();
#endif
}

// ---------------------------------------------------------------------------------------------------------------

void main() {
    const uint tid = gl_LocalInvocationIndex;
#if SUBGROUP
    // Number the row groups by subgroup so that the TPR lanes of a group are lanes of one subgroup.
    const uint g = (gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID) / TPR;
    const uint lane = gl_SubgroupInvocationID % TPR;
#else
    const uint g = tid;
    const uint lane = 0;
#endif
    const uint h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint q0 = gl_WorkGroupID.x * BQ;
    const uint nq = min(BQ, p.Tq - q0);

    // ---- 1. Q rows: q~ = factor * RoPE(q * w) * scale * log2(e) ----------------------------------------------------
    // Each row is staged in sh_a by the TPR lanes that own it (lane takes pairs lane, lane + TPR, ...), so only the
    // row's own lanes exchange data (row_sync); one barrier then protects sh_a from the first K tile.
    const uint q_base0 = b * p.q_batch_stride + p.q_offset + h * DK;
    float qf[RPI];
    [[unroll]] for (uint r = 0; r < RPI; r++) {
        const uint row = g + NG * r;
        float ss_raw = 0.0, ss_rot = 0.0;
        [[dont_unroll]] for (uint pr = lane; pr < HALF; pr += TPR)
            stage_pair(true, row, q0 + row, q_base0 + (q0 + row) * p.q_stride, pr, row < nq, ss_raw, ss_rot);
        qf[r] = p.scale * LOG2E;
        if (QK_NORM) qf[r] *= norm_factor(row_sum(ss_raw), row_sum(ss_rot));
    }
    row_sync();
    vec4 q[RPI][DPT4];
    [[unroll]] for (uint r = 0; r < RPI; r++)
        [[unroll]] for (uint w = 0; w < DPT4; w++) q[r][w] = sh_a[(g + NG * r) * DK4 + lane + TPR * w] * qf[r];
    barrier();

    // ---- 2. One pass over the keys ---------------------------------------------------------------------------------
    vec4 acc[RPI][DPT4];
    float m[RPI], l[RPI];
    [[unroll]] for (uint r = 0; r < RPI; r++) {
        [[unroll]] for (uint w = 0; w < DPT4; w++) acc[r][w] = vec4(0.0);
        m[r] = NEG_BIG;
        l[r] = 0.0;
    }

    // Under CAUSAL no row of this workgroup looks past key q0 + BQ - 1.
    const uint kv_end = CAUSAL ? min(p.Tkv, q0 + BQ) : p.Tkv;
    for (uint k0 = 0; k0 < kv_end; k0 += BK) {
        const uint nk = min(BK, kv_end - k0);
        stage_k(tid, b, h, k0, nk);
        stage_v(tid, b, h, k0, nk);
        barrier();

        for (uint c0 = 0; c0 < nk; c0 += KC) {
            // Scores s[r][jj] = q~_r . k~_(c0+jj): each K chunk is loaded once and used for the RPI rows.
            float s[RPI][KC];
            [[unroll]] for (uint jj = 0; jj < KC; jj++) {
                [[unroll]] for (uint r = 0; r < RPI; r++) s[r][jj] = 0.0;
                [[unroll]] for (uint w = 0; w < DPT4; w++) {
                    const vec4 kv = sh_a[(c0 + jj) * DK4 + lane + TPR * w];
                    [[unroll]] for (uint r = 0; r < RPI; r++) s[r][jj] += dot(q[r][w], kv);
                }
                [[unroll]] for (uint r = 0; r < RPI; r++) s[r][jj] = row_sum(s[r][jj]);
            }
            // Online softmax update per row.
            float pr[RPI][KC];
            [[unroll]] for (uint r = 0; r < RPI; r++) {
                const uint i = q0 + g + NG * r;
                bool ok[KC];
                float m_new = m[r];
                [[unroll]] for (uint jj = 0; jj < KC; jj++) {
                    ok[jj] = c0 + jj < nk && (!CAUSAL || k0 + c0 + jj <= i);
                    m_new = ok[jj] ? max(m_new, s[r][jj]) : m_new;
                }
                const float alpha = exp2(m[r] - m_new);
                m[r] = m_new;
                l[r] *= alpha;
                [[unroll]] for (uint w = 0; w < DPT4; w++) acc[r][w] *= alpha;
                [[unroll]] for (uint jj = 0; jj < KC; jj++) {
                    pr[r][jj] = ok[jj] ? exp2(s[r][jj] - m_new) : 0.0;
                    l[r] += pr[r][jj];
                }
            }
            // acc += p v: each V chunk is loaded once and used for the RPI rows.
            [[unroll]] for (uint jj = 0; jj < KC; jj++)
                [[unroll]] for (uint w = 0; w < DPT4; w++) {
                    const vec4 vv = sh_v[(c0 + jj) * DK4 + lane + TPR * w];
                    [[unroll]] for (uint r = 0; r < RPI; r++) acc[r][w] = fma(vec4(pr[r][jj]), vv, acc[r][w]);
                }
        }
        barrier();
    }

    // ---- 3. O rows: o = acc / l, heads merged as channel h*DK + d (through the row's own sh_a rows) ----------------
    const uint o_base0 = b * p.o_batch_stride + p.o_offset + h * DK;
    [[unroll]] for (uint r = 0; r < RPI; r++) {
        const uint row = g + NG * r;
        const float inv = l[r] > 0.0 ? 1.0 / l[r] : 0.0;
        [[unroll]] for (uint w = 0; w < DPT4; w++) sh_a[row * DK4 + lane + TPR * w] = acc[r][w] * inv;
    }
    row_sync();
    [[unroll]] for (uint r = 0; r < RPI; r++) {
        const uint row = g + NG * r;
        if (row < nq) {
            const uint at = o_base0 + (q0 + row) * p.o_stride;
            [[dont_unroll]] for (uint d = lane; d < DK; d += TPR) O_AT(at + d) = sh_a[row * DK4 + (d >> 2)][d & 3];
        }
    }
}
