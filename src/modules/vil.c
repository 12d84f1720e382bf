// SPDX-License-Identifier: Apache-2.0
/* Vision-LSTM (docs/math.md 7; network per 7.2 "v1" and 9.12), both flavours: the seed's numerics (7.1) and the
 * official NX-AI numerics (7.2). Token rows stay in their original order in every block; a reversed block's conv
 * and scan read mirrored indices (no flip is ever materialised).
 *
 *   img [B, H, W, 3] --patchify + GEMM(patch_embed.proj, + bias) + pos_embed--> x [B, S, D]     (row-major patches)
 *   x += cell_i(norm1_i(x)), i = 0 .. depth-1 (even i forward, odd i reversed)
 *   v  = (legacy_norm(x[:, 0]) + legacy_norm(x[:, S-1])) / 2                                   bilateral_avg
 *   logits = head(norm(v))
 *
 * The cell, reading top to bottom like mLSTMCell.forward (tools/reference/mlstm.py):
 *   xm    = xn · W_up[:E]ᵀ                          [B*S, E]    GEMM (proj_up's first half)
 *   qkv   = (q', a, v): a = silu(conv1d(xm)), q' = headwise(a; q/k fold), v = headwise(xm)   shaders/mlstm_prep.comp
 *           (q' . a_s = q . k_s exactly in real arithmetic: vkvit__mlstm_fold; a serves as the keys and the skip);
 *           where the scan takes its quadratic form (CPU devices) qkv = (q', a) and v goes out transposed (vT)
 *   gates = (a, v) · W_gᵀ' + (b_ig | b_fg)          [B*S, 2NH]  one GEMM over the folded gate weights (fp32);
 *           with vT: a · W_g'[:, :E]ᵀ + xm · W_xᵀ + (b_ig | b_fg), two GEMMs (W_x: the v part folded with v_proj)
 *   h     = mLSTM (docs/math.md 7.3 chunked scan, or the quadratic form on CPU devices) over q', k = a, v   [B*S, E]
 *   hn    = seed: GroupNorm(E/4) over 4 ch x S tokens (fused below) | NX-AI: per-token per-head LN, (1 + w)
 *   z     = xn · W_up[E:]ᵀ                          [B*S, E]    GEMM (proj_up's second half), computed here and
 *           not with xm: z would otherwise be live through the scan, at the cell's peak. In a block, xn is
 *           recomputed for it (norm1 again: 5SD FLOPs) so that xn is not live there either (ViL-S: arena 4.33 ->
 *           3.18 MiB at batch 1)
 *   o     = (hn + skip ⊙ a) ⊙ silu(z)               [B*S, E]    shaders/mlstm_out.comp (NX-AI: over hn)
 *   y     = o · W_downᵀ (⊙ layerscale[:D], seed) (+ y: the block's residual add, in the GEMM epilogue) */
#include "modules/modules.h"

#include "ops/ops.h"

#include <stdio.h>
#include <stdlib.h>

/* Weights by state_dict name under the caller's prefix ("blocks.3.mlstm.", or "w." in tests). */
#define WEIGHT(name) vkvit__model_weightf(g, m, "%s%s", wprefix, name)
#define GEMM_WEIGHT(name) vkvit__model_weightf(g, m, "%s%s", wprefix, name) /* fp16 in fp16 sessions */
#define FOLD(name) vkvit__model_weightf(g, m, "const.%s%s", wprefix, name)        /* vkvit__vil_constants */

void vkvit__mlstm_fold(const float *wq, const float *wk, const float *wv, const float *wig, const float *wfg,
                       uint32_t E, uint32_t NH, float *qk_fold, float *gate_fold) {
    const uint32_t NP = E / 4;
    for (uint32_t p = 0; p < NP; p++)
        for (uint32_t j = 0; j < 4; j++)
            for (uint32_t i = 0; i < 4; i++) {
                double s = 0.0;
                for (uint32_t o = 0; o < 4; o++) s += (double)wk[(p * 4 + o) * 4 + j] * wq[(p * 4 + o) * 4 + i];
                qk_fold[(p * 4 + j) * 4 + i] = (float)s;
            }
    for (uint32_t n = 0; n < 2 * NH; n++) {
        const float *wg = n < NH ? wig + (size_t)n * 3 * E : wfg + (size_t)(n - NH) * 3 * E; /* cat(q, k, v) columns */
        float *out = gate_fold + (size_t)n * 3 * E;
        for (uint32_t p = 0; p < NP; p++)
            for (uint32_t i = 0; i < 4; i++) {
                double s = 0.0, x = 0.0;
                for (uint32_t o = 0; o < 4; o++) {
                    s += (double)wg[4 * p + o] * wq[(p * 4 + o) * 4 + i] +
                         (double)wg[E + 4 * p + o] * wk[(p * 4 + o) * 4 + i];
                    x += (double)wg[2 * E + 4 * p + o] * wv[(p * 4 + o) * 4 + i];
                }
                out[4 * p + i] = (float)s;
                out[2 * E + 4 * p + i] = (float)x;
            }
        for (uint32_t c = 0; c < E; c++) out[E + c] = wg[2 * E + c];
    }
}

vkvit_result vkvit__vil_constants(const vkvit__model_file *mf, vkvit__constant **out, uint32_t *n) {
    const vkvit__vil_config *c = &mf->cfg.vil;
    const uint32_t E = c->inner_dim, NH = c->num_heads, NP = E / 4;
    *n = 0;
    if (c->qkv_block_size != 4 || E % 4) /* the cell's kernels need 4x4 blocks; the builder refuses the rest */
        return VKVIT_OK;
    vkvit__constant *k = calloc((size_t)2 * c->depth, sizeof *k);
    const size_t n_src = (size_t)3 * E * 4 + (size_t)2 * NH * 3 * E; /* q/k/v_proj, igate, fgate of one block */
    float *src = malloc(n_src * sizeof *src);
    *out = k;
    if (!k || !src) {
        free(src);
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vil: out of host memory for the q/k and gate folds");
    }
    float *wq = src, *wk = wq + (size_t)E * 4, *wv = wk + (size_t)E * 4, *wig = wv + (size_t)E * 4,
          *wfg = wig + (size_t)NH * 3 * E;
    vkvit_result res = VKVIT_OK;
    for (uint32_t i = 0; i < c->depth && res == VKVIT_OK; i++) {
        static const char *const names[5] = {"q_proj.weight", "k_proj.weight", "v_proj.weight", "igate.weight",
                                             "fgate.weight"};
        float *const dst[5] = {wq, wk, wv, wig, wfg};
        const size_t count[5] = {(size_t)E * 4, (size_t)E * 4, (size_t)E * 4, (size_t)NH * 3 * E, (size_t)NH * 3 * E};
        for (uint32_t w = 0; w < 5 && res == VKVIT_OK; w++) {
            char name[96];
            snprintf(name, sizeof name, "blocks.%u.mlstm.%s", i, names[w]);
            const vkvit__st_tensor *t = vkvit__model_file_tensor(mf, name);
            res = t ? vkvit__model_file_tensor_f32(mf, t, dst[w], count[w])
                    : vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "model '%s' has no tensor '%s'", mf->label, name);
        }
        vkvit__constant *qk = &k[2 * i], *gf = &k[2 * i + 1];
        snprintf(qk->name, sizeof qk->name, "const.blocks.%u.mlstm.qk_fold", i);
        snprintf(gf->name, sizeof gf->name, "const.blocks.%u.mlstm.gate_fold", i);
        qk->ndim = 3, qk->shape[0] = NP, qk->shape[1] = 4, qk->shape[2] = 4;
        gf->ndim = 2, gf->shape[0] = 2 * NH, gf->shape[1] = 3 * E;
        qk->data = malloc((size_t)E * 4 * sizeof(float));
        gf->data = malloc((size_t)2 * NH * 3 * E * sizeof(float));
        *n = 2 * i + 2;
        if (res == VKVIT_OK && (!qk->data || !gf->data))
            res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vil: out of host memory for the q/k and gate folds");
        if (res == VKVIT_OK) vkvit__mlstm_fold(wq, wk, wv, wig, wfg, E, NH, qk->data, gf->data);
    }
    free(src);
    return res;
}

void vkvit__mlstm_cell(vkvit__graph *g, const vkvit_model *m, const vkvit__mlstm_desc *d, const char *wprefix,
                       uint32_t xn, const vkvit__norm_op *xn_again, uint32_t B, uint32_t S, bool reverse,
                       uint32_t y, bool accumulate, vkvit__mlstm_aux *aux) {
    const uint32_t D = d->dim, E = d->inner_dim, NH = d->num_heads, rows = B * S;
    if (aux) *aux = (vkvit__mlstm_aux){VKVIT_NONE, {VKVIT_NONE, 0, 0, 0}};
    if (g->error) return;

    /* proj_up [2E, D] in two row halves: xm now, z just before it is used (the top comment) */
    const uint32_t half_shape[2] = {rows, E};
    vkvit__gemm_op proj_up = {
        .a = vkvit__mat_dense(xn, rows, D), .w = GEMM_WEIGHT("proj_up.weight"), .bias = VKVIT_NONE,
        .M = rows, .N = E, .K = D, .batch = 1, .scale = VKVIT_NONE, .residual = {VKVIT_NONE, 0, 0, 0},
    };
    const uint32_t up = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "proj_up", 2, half_shape); /* xm */
    proj_up.d = vkvit__mat_dense(up, rows, E);
    vkvit__op_gemm(g, "proj_up", &proj_up);

    /* Where the scan runs in its quadratic form (CPU devices), the prep writes v transposed for it, and no v rows */
    vkvit__mlstm_scan_op scan = {.gates = VKVIT_NONE, .B = B, .S = S, .E = E, .NH = NH, .reverse = reverse,
                                 .nxai = d->nxai, .h_over_q = true, .chunk = d->chunk};
    const bool v_transposed = vkvit__mlstm_scan_takes_vt(g, &scan);
    vkvit__mlstm_prep_op prep = {
        .up = up, .conv_w = WEIGHT("conv1d.weight"), .conv_b = WEIGHT("conv1d.bias"), .wqk = FOLD("qk_fold"),
        .wv = WEIGHT("v_proj.weight"), .B = B, .S = S, .E = E, .K = d->conv_kernel, .reverse = reverse, .NH = NH,
        .v_transposed = v_transposed,
    };
    const vkvit__mlstm_prep_out qkv = vkvit__op_mlstm_prep(g, "conv_qkv", &prep); /* (q', a, v) or (q', a) + vT */
    const uint32_t qs = qkv.qkv_stride;
    const vkvit__mat a = {qkv.qkv, E, qs, rows * qs}; /* a, and (a, v) with K = 2E for the gates */

    /* Gate pre-activations side by side: ipre in columns 0..NH-1, fpre in NH..2NH-1, from (a, v) = columns E..3E-1
     * of qkv and the folded weights [2NH, 3E] (columns 0..2E-1): one GEMM with N = 2 NH (on CPU devices a GEMM with
     * N = NH = 4 leaves half of the kernel's 8 lanes idle). Without v rows (vT), from a (columns 0..E-1) and then
     * xm (columns 2E..3E-1, accumulated): two GEMMs. Their bias is igate's and fgate's, which the loader stores
     * back to back (src/arch/vil.c: packed_after); where they are not (the tests' staged weights), one GEMM (pair)
     * per gate. The gates stay fp32 in fp16 sessions (include/vkvit.h, vkvit_precision: mLSTM gates and normaliser
     * state in fp32). */
    uint32_t gates_shape[2] = {rows, 2 * NH};
    uint32_t gates = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "gates", 2, gates_shape);
    const uint32_t w_gates = FOLD("gate_fold");
    char bi[256], bf[256];
    snprintf(bi, sizeof bi, "%sigate.bias", wprefix);
    snprintf(bf, sizeof bf, "%sfgate.bias", wprefix);
    const uint32_t b_if = vkvit__model_weight_rows_pair(g, m, bi, bf, "igate+fgate.bias");
    for (uint32_t k = 0; k < (b_if != VKVIT_NONE ? 1u : 2u); k++) {
        const uint32_t n = b_if != VKVIT_NONE ? 2 * NH : NH;
        const vkvit__mat d_gates = {gates, k * NH, 2 * NH, rows * 2 * NH};
        const char *label = b_if != VKVIT_NONE ? "gates" : k ? "fgate" : "igate";
        vkvit__gemm_op op = {
            .a = a, .w = w_gates, .w_offset = k * NH * 3 * E, .w_stride = 3 * E,
            .bias = b_if != VKVIT_NONE ? b_if : WEIGHT(k ? "fgate.bias" : "igate.bias"),
            .d = d_gates, .M = rows, .N = n, .K = v_transposed ? E : 2 * E, .batch = 1,
            .scale = VKVIT_NONE, .residual = {VKVIT_NONE, 0, 0, 0},
        };
        vkvit__op_gemm(g, label, &op);
        if (!v_transposed) continue;
        char xlabel[32];
        snprintf(xlabel, sizeof xlabel, "%s_xm", label);
        op.a = vkvit__mat_dense(up, rows, E); /* xm */
        op.w_offset += 2 * E;
        op.bias = VKVIT_NONE;
        op.residual = d_gates;
        vkvit__op_gemm(g, xlabel, &op);
    }

    /* h may take q's place in qkv (q' is dead after the scan; a and v stay where they are) */
    scan.qkv = qkv.qkv, scan.qkv_stride = qs, scan.v_transposed = v_transposed, scan.vt = qkv.vt;
    scan.gates = gates;
    const vkvit__mat h = vkvit__op_mlstm_scan(g, "scan", &scan);

    uint32_t xn_z = xn;
    if (xn_again) {
        const uint32_t xn_shape[2] = {rows, D};
        vkvit__norm_op again = *xn_again;
        xn_z = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "norm1_again", 2, xn_shape);
        again.out = vkvit__mat_dense(xn_z, rows, D);
        vkvit__op_norm(g, "norm1_again", &again);
    }
    const uint32_t z = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "proj_up_z", 2, half_shape);
    proj_up.a = vkvit__mat_dense(xn_z, rows, D);
    proj_up.w_offset = E * D; /* weight rows E .. 2E-1 */
    proj_up.d = vkvit__mat_dense(z, rows, E);
    vkvit__op_gemm(g, "proj_up_z", &proj_up);

    vkvit__mlstm_out_op out = {.h = h, .a = a, .z = vkvit__mat_dense(z, rows, E), .skip = WEIGHT("learnable_skip"),
                               .gn_weight = VKVIT_NONE, .gn_bias = VKVIT_NONE, .B = B, .S = S, .E = E, .eps = 1e-5f};
    if (d->nxai) { /* MultiHeadLayerNorm: per token, per memory head over DH channels, scale 1 + w, no bias */
        uint32_t hn_shape[2] = {rows, E};
        uint32_t hn = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "outnorm", 2, hn_shape);
        vkvit__norm_op norm = {
            .kind = VKVIT_NORM_LAYER, .C = E, .group = E / NH, .rows = rows, .rows_per_batch = rows,
            .in = h, .out = vkvit__mat_dense(hn, rows, E),
            .weight = WEIGHT("outnorm.weight"), .bias = VKVIT_NONE, .one_plus_w = true, .eps = 1e-5f,
        };
        vkvit__op_norm(g, "outnorm", &norm);
        out.h = vkvit__mat_dense(hn, rows, E);
    } else { /* the sequence-wide GroupNorm is fused into the epilogue kernel (after a statistics pass) */
        out.gn_weight = WEIGHT("outnorm.weight");
        out.gn_bias = WEIGHT("outnorm.bias");
    }
    /* NX-AI: o over outnorm's copy of h (dense), which keeps o out of the peak at this node (ViL-S: 3.74 -> 3.18
     * MiB). The seed's h is a column block of qkv: o over it would leave proj_down a strided A to read (proj_down
     * ~10 % slower on llvmpipe), while this node is below the scan's peak anyway. */
    out.out_over_h = d->nxai;
    const vkvit__mat o = vkvit__op_mlstm_out(g, "skip_gate", &out);

    /* proj_down; the seed's layerscale has E entries of which the GEMM's per-column scale reads the first D. */
    vkvit__gemm_op down = {
        .a = o, .w = GEMM_WEIGHT("proj_down.weight"), .bias = VKVIT_NONE,
        .d = vkvit__mat_dense(y, rows, D), .M = rows, .N = D, .K = E, .batch = 1,
        .scale = d->nxai ? VKVIT_NONE : WEIGHT("layerscale"),
        .residual = accumulate ? vkvit__mat_dense(y, rows, D) : (vkvit__mat){VKVIT_NONE, 0, 0, 0},
    };
    vkvit__op_gemm(g, "proj_down", &down);
    if (aux && !g->error) aux->gates = gates, aux->h = h;
}

void vkvit__mlstm_block(vkvit__graph *g, const vkvit_model *m, const vkvit__mlstm_desc *d, const char *wprefix,
                        uint32_t x, uint32_t B, uint32_t S, bool reverse) {
    if (g->error) return;
    const uint32_t D = d->dim, rows = B * S;
    uint32_t xn_shape[2] = {rows, D};
    uint32_t xn = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "norm1", 2, xn_shape);
    vkvit__norm_op norm = {
        .kind = VKVIT_NORM_LAYER, .C = D, .group = D, .rows = rows, .rows_per_batch = rows,
        .in = vkvit__mat_dense(x, rows, D), .out = vkvit__mat_dense(xn, rows, D),
        .weight = WEIGHT("norm1.weight"), .bias = VKVIT_NONE, .one_plus_w = d->nxai, .eps = d->norm_eps,
    };
    vkvit__op_norm(g, "norm1", &norm);
    char cell_prefix[128];
    snprintf(cell_prefix, sizeof cell_prefix, "%smlstm.", wprefix);
    vkvit__mlstm_cell(g, m, d, cell_prefix, xn, &norm, B, S, reverse, x, true, NULL);
}

#undef WEIGHT
#undef GEMM_WEIGHT
#undef FOLD

vkvit__mlstm_desc vkvit__vil_mlstm_desc(const vkvit__model_config *cfg) {
    const vkvit__vil_config *c = &cfg->vil;
    return (vkvit__mlstm_desc){
        .dim = c->dim, .inner_dim = c->inner_dim, .num_heads = c->num_heads, .conv_kernel = c->conv_kernel,
        .nxai = cfg->flavour == VKVIT_FLAVOUR_NXAI, .norm_eps = (float)c->norm_eps, .chunk = 0,
    };
}

void vkvit__vil_build(vkvit__graph *g, const vkvit_model *m, uint32_t B, uint32_t *input, uint32_t *output) {
    const vkvit__vil_config *c = &m->cfg.vil;
    const vkvit__mlstm_desc d = vkvit__vil_mlstm_desc(&m->cfg);
    const uint32_t D = c->dim, S = c->num_tokens, H = c->image_size[0], W = c->image_size[1];

    uint32_t img_shape[4] = {B, H, W, c->in_chans};
    uint32_t img = vkvit__graph_tensor(g, VKVIT_TENSOR_INPUT, "input", 4, img_shape);
    uint32_t x_shape[2] = {B * S, D};
    uint32_t x = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "x", 2, x_shape);

    /* Patch embedding (+ bias) + learned position embedding [1, Hp, Wp, D], row-major tokens, no CLS. */
    vkvit__patch_embed_op pe = {
        .prefix = "patch_embed.proj", .img = img, .batch = B, .height = H, .width = W, .in_chans = c->in_chans,
        .patch = c->patch_size, .dim = D, .bias = true, .pos_embed = vkvit__model_weight(g, m, "pos_embed.embed"),
        .dst = {x, 0, D, S * D},
    };
    vkvit__patch_embed(g, m, &pe);

    for (uint32_t i = 0; i < c->depth; i++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "blocks.%u.", i);
        vkvit__graph_scope(g, "blocks.%u", i);
        vkvit__mlstm_block(g, m, &d, prefix, x, B, S, i % 2 == 1);
        vkvit__graph_scope(g, NULL);
    }

    /* The final tokens (vkvit_session_get_tokens): legacy_norm on every token, as the PyTorch forward applies it
     * before the bilateral average reads the two end tokens. */
    if (g->want_tokens) {
        uint32_t tok = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "tokens.legacy_norm", 2, (uint32_t[2]){B * S, D});
        vkvit__norm_op all = {
            .kind = VKVIT_NORM_LAYER, .C = D, .group = D, .rows = B * S, .rows_per_batch = S,
            .in = {x, 0, D, S * D}, .out = {tok, 0, D, S * D},
            .weight = vkvit__model_weight(g, m, "legacy_norm.weight"), .bias = VKVIT_NONE, .one_plus_w = d.nxai,
            .eps = (float)c->norm_eps,
        };
        vkvit__op_norm(g, "tokens.legacy_norm", &all);
        g->tokens = (vkvit__token_marks){.t = tok, .T = S, .C = D, .patch0 = 0, .grid_h = c->grid[0],
                                         .grid_w = c->grid[1], .cls = VKVIT_NONE};
    }

    /* legacy_norm on tokens 0 and S-1 only (rows_per_batch 2, row stride (S-1)*D), then their average. */
    uint32_t ends_shape[2] = {2 * B, D};
    uint32_t ends = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "legacy_norm", 2, ends_shape);
    vkvit__norm_op ln = {
        .kind = VKVIT_NORM_LAYER, .C = D, .group = D, .rows = 2 * B, .rows_per_batch = 2,
        .in = {x, 0, (S - 1) * D, S * D}, .out = {ends, 0, D, 2 * D},
        .weight = vkvit__model_weight(g, m, "legacy_norm.weight"), .bias = VKVIT_NONE, .one_plus_w = d.nxai,
        .eps = (float)c->norm_eps,
    };
    vkvit__op_norm(g, "legacy_norm", &ln);
    uint32_t pooled = vkvit__op_mean_rows(g, "bilateral_avg", (vkvit__mat){ends, 0, D, 2 * D}, B, 2, D);

    uint32_t v_shape[2] = {B, D};
    uint32_t v = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "norm", 2, v_shape);
    vkvit__norm_op hn = {
        .kind = VKVIT_NORM_LAYER, .C = D, .group = D, .rows = B, .rows_per_batch = 1,
        .in = {pooled, 0, 0, D}, .out = {v, 0, 0, D},
        .weight = vkvit__model_weight(g, m, "norm.weight"), .bias = vkvit__model_weight(g, m, "norm.bias"),
        .eps = (float)c->head_norm_eps,
    };
    vkvit__op_norm(g, "norm", &hn);

    uint32_t logits_shape[2] = {B, c->num_classes};
    uint32_t logits = vkvit__graph_tensor(g, VKVIT_TENSOR_OUTPUT, "logits", 2, logits_shape);
    g->features = v; /* [B, D]: the pre-logits features (vkvit_session_get_features) */
    vkvit__gemm_op head = {
        .a = vkvit__mat_dense(v, B, D), .w = vkvit__model_weight(g, m, "head.weight"),
        .bias = vkvit__model_weight(g, m, "head.bias"), .d = vkvit__mat_dense(logits, B, c->num_classes),
        .M = B, .N = c->num_classes, .K = D, .batch = 1, .scale = VKVIT_NONE, .residual = {VKVIT_NONE, 0, 0, 0},
    };
    vkvit__op_gemm(g, "head", &head);
    *input = img;
    *output = logits;
}
