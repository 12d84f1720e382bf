// SPDX-License-Identifier: Apache-2.0
/* src/ops/mlstm — op builders of the Vision-LSTM cell (docs/math.md 7): the kernels between proj_up and proj_down. The
 * GEMMs (proj_up, gates, proj_down) and the LayerNorms come from ops/gemm.h and ops/norm.h; src/modules/vil.c
 * strings everything together.
 *
 * Every tensor here is a dense matrix of rows = B * S tokens in ORIGINAL token order, also in reversed blocks:
 * the conv and the scan read mirrored indices instead of flipping the sequence. */
#ifndef VKVIT_OPS_MLSTM_H
#define VKVIT_OPS_MLSTM_H

#include "ops/mat.h"

/* Causal depthwise conv1d (kernel K) + SiLU + the headwise 4x4 projections (shaders/mlstm_prep.comp):
 *   up [B*S, U] (xm = columns 0..E-1; U = 2E for proj_up's whole output, E for its xm half alone) -> a new
 *   qkv [B*S, 3E] = cat(q', a, v) with a = silu(conv(xm)) (the keys and the skip branch), q' = HW(a; wqk) (the
 *   queries with the q/k fold: src/modules/modules.h vkvit__mlstm_fold) and v = HW(xm; wv),
 *   HW: out[4p+o] = sum_i W[p][o][i] in[4p+i].
 * v_transposed: qkv is [B*S, 2E] = cat(q', a) and v goes into a new vT [B*NH*DH, S_pad] instead (vT[b*NH+h][d][t],
 *   S_pad = S rounded up to 4, zeros past S): the operand of the quadratic scan (vkvit__mlstm_scan_op.vt), which
 *   then needs no transpose of its own. Needs (E / NH) % 4 == 0.
 * conv_w [E, 1, K], conv_b [E], wqk / wv [E/4, 4, 4]. */
typedef struct vkvit__mlstm_prep_op {
    uint32_t up, conv_w, conv_b, wqk, wv;
    uint32_t B, S, E, K;
    bool reverse;
    uint32_t NH;                            /* v_transposed only */
    bool v_transposed;
    uint32_t run;                           /* 4-token groups per invocation; 0 = the device's choice (tests pick
                                               the other devices' choice, 1, on CPU devices too) */
} vkvit__mlstm_prep_op;

/* What the prep wrote: qkv (row stride 3E, or 2E with vT) and vT (VKVIT_NONE without). */
typedef struct vkvit__mlstm_prep_out {
    uint32_t qkv, qkv_stride, vt;
} vkvit__mlstm_prep_out;

vkvit__mlstm_prep_out vkvit__op_mlstm_prep(vkvit__graph *g, const char *name, const vkvit__mlstm_prep_op *op);

/* Chunked mLSTM scan (docs/math.md 7.3; shaders/mlstm_{chunk,carry,inter,scan}.comp: per-chunk state summaries in
 * parallel, a sequential carry over the chunks, then every chunk's outputs in parallel; linear in S, exact against
 * the quadratic forms): from qkv [B*S, 3E] (q, k, v column blocks, channel
 * h*DH + d) and gates [B*S, 2*NH] (ipre of head h at column h, fpre at NH + h) to a new h [B*S, E] (channel
 * h*DH + d), each row at its original token index. nxai: NX-AI numerics (docs/math.md 7.2), else the seed's (7.1).
 * chunk: tokens per chunk (0 = the default: 16 on CPU devices, 32 elsewhere; at most 256).
 * On CPU devices with chunk 0, S <= 256 and DH % 4 == 0 the quadratic form of docs/math.md 7.1 / 7.2 runs instead (two
 * GEMMs around shaders/mlstm_decay.comp; several times faster on llvmpipe at ViL's 196 tokens).
 * h_over_q: the caller has no further use for q, so the quadratic form may write h over qkv's q column block (its
 * last GEMM reads only the scores and vT; this keeps a [B*S, E] tensor out of the cell's peak). The chunked scan
 * reads q while it writes h and always writes a new tensor. Returns where h is: {h, 0, E, S*E} or
 * {qkv, 0, qkv_stride, S*qkv_stride}; {VKVIT_NONE} after a failure. */
typedef struct vkvit__mlstm_scan_op {
    uint32_t qkv, gates;
    uint32_t B, S, E, NH;
    bool reverse, nxai, h_over_q;
    uint32_t chunk;
    uint32_t qkv_stride;                    /* qkv's row stride: 0 = 3E; 2E with vt (no v column block) */
    bool v_transposed;                      /* vt is v transposed by the prep (vkvit__mlstm_prep_op.v_transposed),
                                               only where vkvit__mlstm_scan_takes_vt; else qkv's v block is read */
    uint32_t vt;
} vkvit__mlstm_scan_op;

vkvit__mat vkvit__op_mlstm_scan(vkvit__graph *g, const char *name, const vkvit__mlstm_scan_op *op);

/* Whether this scan runs in its quadratic form, which can take v transposed from the prep instead of transposing
 * it itself (op's B, S, E, NH and chunk are read). */
bool vkvit__mlstm_scan_takes_vt(const vkvit__graph *g, const vkvit__mlstm_scan_op *op);

/* The cell's output before proj_down (shaders/mlstm_out.comp, plus shaders/mlstm_gn_stats.comp for the seed):
 *   seed (gn_weight != VKVIT_NONE): hn = GroupNorm(E/4 groups over 4 channels x all S tokens, eps)(h) * w + bias
 *   NX-AI (gn_weight == VKVIT_NONE): hn = h (the caller normalised it per token already)
 *   out = (hn + skip * a) * silu(z)  -> a new [B*S, E], or over h (out_over_h), z the second half of proj_up's
 *   output. Returns where out is ({VKVIT_NONE} after a failure). */
typedef struct vkvit__mlstm_out_op {
    vkvit__mat h, a, z;                     /* [B*S, E] each (h dense or qkv's q block, a qkv's a block, z dense;
                                             * offsets and strides multiples of 4; batch_stride unused: rows run
                                             * on) */
    uint32_t skip;
    uint32_t gn_weight, gn_bias;            /* [E] each (seed), or VKVIT_NONE */
    uint32_t B, S, E;
    float eps;
    bool out_over_h;                        /* the caller has no further use for h: write out over it (each element
                                             * is read, then written, by one invocation; the GroupNorm statistics
                                             * are a node of their own, before) */
} vkvit__mlstm_out_op;

vkvit__mat vkvit__op_mlstm_out(vkvit__graph *g, const char *name, const vkvit__mlstm_out_op *op);

#endif /* VKVIT_OPS_MLSTM_H */
