/* Vision-LSTM (SPEC 7; network per SPEC 7.2 "v1" and 9.12), both flavours: the seed's numerics (7.1) and the
 * official NX-AI numerics (7.2). Token rows stay in their original order in every block; a reversed block's conv
 * and scan read mirrored indices (no flip is ever materialised).
 *
 *   img [B, H, W, 3] --patchify + GEMM(patch_embed.proj, + bias) + pos_embed--> x [B, S, D]     (row-major patches)
 *   x += cell_i(norm1_i(x)), i = 0 .. depth-1 (even i forward, odd i reversed)
 *   v  = (legacy_norm(x[:, 0]) + legacy_norm(x[:, S-1])) / 2                                   bilateral_avg
 *   logits = head(norm(v))
 *
 * The cell, reading top to bottom like mLSTMCell.forward (tools/reference/mlstm.py):
 *   up    = xn · W_upᵀ                              [B*S, 2E]   GEMM; xm = up[:, :E], z = up[:, E:]
 *   a,qkv = conv1d -> silu, headwise q/k (from a), v (from xm)   shaders/mlstm_prep.comp
 *   gates = qkv · W_igᵀ + b_ig | qkv · W_fgᵀ + b_fg [B*S, 2NH]  one GEMM (the loader packs fgate after igate; fp32)
 *   h     = chunked mLSTM scan (SPEC 7.3)           [B*S, E]    shaders/mlstm_{chunk,carry,inter,scan}.comp
 *   hn    = seed: GroupNorm(E/4) over 4 ch x S tokens (fused below) | NX-AI: per-token per-head LN, (1 + w)
 *   o     = (hn + skip ⊙ a) ⊙ silu(z)               [B*S, E]    shaders/mlstm_out.comp
 *   y     = o · W_downᵀ (⊙ layerscale[:D], seed) (+ y: the block's residual add, in the GEMM epilogue) */
#include "modules/modules.h"

#include "ops/ops.h"

#include <stdio.h>

/* Weights by state_dict name under the caller's prefix ("blocks.3.mlstm.", or "w." in tests). */
#define WEIGHT(name) vkvit__model_weightf(g, m, "%s%s", wprefix, name)
#define GEMM_WEIGHT(name) vkvit__model_gemm_weightf(g, m, "%s%s", wprefix, name) /* fp16 in fp16 sessions */

void vkvit__mlstm_cell(vkvit__graph *g, const vkvit_model *m, const vkvit__mlstm_desc *d, const char *wprefix,
                       uint32_t xn, uint32_t B, uint32_t S, bool reverse, uint32_t y, bool accumulate,
                       vkvit__mlstm_aux *aux) {
    const uint32_t D = d->dim, E = d->inner_dim, NH = d->num_heads, rows = B * S;
    if (aux) aux->gates = aux->h = VKVIT_NONE;
    if (g->error) return;

    uint32_t up = vkvit__op_linear(g, "proj_up", xn, GEMM_WEIGHT("proj_up.weight"), VKVIT_NONE, VKVIT_ACT_NONE);

    vkvit__mlstm_prep_op prep = {
        .up = up, .conv_w = WEIGHT("conv1d.weight"), .conv_b = WEIGHT("conv1d.bias"), .wq = WEIGHT("q_proj.weight"),
        .wk = WEIGHT("k_proj.weight"), .wv = WEIGHT("v_proj.weight"), .B = B, .S = S, .E = E, .K = d->conv_kernel,
        .reverse = reverse,
    };
    uint32_t a, qkv;
    vkvit__op_mlstm_prep(g, "conv_qkv", &prep, &a, &qkv);

    /* Gate pre-activations side by side: ipre in columns 0..NH-1, fpre in NH..2NH-1. The gates stay fp32 in fp16
     * sessions (DESIGN: mLSTM gates and normaliser state in fp32). */
    uint32_t gates_shape[2] = {rows, 2 * NH};
    uint32_t gates = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "gates", 2, gates_shape);
    /* One GEMM with N = 2 NH where the loader stored fgate's weight and bias right after igate's (src/arch/vil.c:
     * packed_after): on CPU devices a GEMM with N = NH = 4 leaves half of the kernel's 8 lanes idle, and two of them
     * cost about twice one of N = 8. Otherwise (a hand-made model, the tests' staged weights) one GEMM per gate. */
    char wi[256], wf[256], bi[256], bf[256];
    snprintf(wi, sizeof wi, "%sigate.weight", wprefix);
    snprintf(wf, sizeof wf, "%sfgate.weight", wprefix);
    snprintf(bi, sizeof bi, "%sigate.bias", wprefix);
    snprintf(bf, sizeof bf, "%sfgate.bias", wprefix);
    const uint32_t w_if = vkvit__model_weight_rows_pair(g, m, wi, wf, "igate+fgate.weight");
    const uint32_t b_if = vkvit__model_weight_rows_pair(g, m, bi, bf, "igate+fgate.bias");
    if (w_if != VKVIT_NONE && b_if != VKVIT_NONE) {
        vkvit__gemm_op op = {
            .a = vkvit__mat_dense(qkv, rows, 3 * E), .w = w_if, .bias = b_if,
            .d = vkvit__mat_dense(gates, rows, 2 * NH), .M = rows, .N = 2 * NH, .K = 3 * E, .batch = 1,
            .scale = VKVIT_NONE, .residual = {VKVIT_NONE, 0, 0, 0},
        };
        vkvit__op_gemm(g, "gates", &op);
    }
    for (uint32_t k = 0; k < 2 && (w_if == VKVIT_NONE || b_if == VKVIT_NONE); k++) {
        const char *gate = k ? "fgate" : "igate";
        vkvit__gemm_op op = {
            .a = vkvit__mat_dense(qkv, rows, 3 * E), .w = WEIGHT(k ? "fgate.weight" : "igate.weight"),
            .bias = WEIGHT(k ? "fgate.bias" : "igate.bias"),
            .d = {gates, k * NH, 2 * NH, rows * 2 * NH}, .M = rows, .N = NH, .K = 3 * E, .batch = 1,
            .scale = VKVIT_NONE, .residual = {VKVIT_NONE, 0, 0, 0},
        };
        vkvit__op_gemm(g, gate, &op);
    }

    vkvit__mlstm_scan_op scan = {.qkv = qkv, .gates = gates, .B = B, .S = S, .E = E, .NH = NH, .reverse = reverse,
                                 .nxai = d->nxai, .chunk = d->chunk};
    uint32_t h = vkvit__op_mlstm_scan(g, "scan", &scan);

    vkvit__mlstm_out_op out = {.h = h, .a = a, .up = up, .skip = WEIGHT("learnable_skip"), .gn_weight = VKVIT_NONE,
                               .gn_bias = VKVIT_NONE, .B = B, .S = S, .E = E, .eps = 1e-5f};
    if (d->nxai) { /* MultiHeadLayerNorm: per token, per memory head over DH channels, scale 1 + w, no bias */
        uint32_t hn_shape[2] = {rows, E};
        uint32_t hn = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "outnorm", 2, hn_shape);
        vkvit__norm_op norm = {
            .kind = VKVIT_NORM_LAYER, .C = E, .group = E / NH, .rows = rows, .rows_per_batch = rows,
            .in = vkvit__mat_dense(h, rows, E), .out = vkvit__mat_dense(hn, rows, E),
            .weight = WEIGHT("outnorm.weight"), .bias = VKVIT_NONE, .one_plus_w = true, .eps = 1e-5f,
        };
        vkvit__op_norm(g, "outnorm", &norm);
        out.h = hn;
    } else { /* the sequence-wide GroupNorm is fused into the epilogue kernel (after a statistics pass) */
        out.gn_weight = WEIGHT("outnorm.weight");
        out.gn_bias = WEIGHT("outnorm.bias");
    }
    uint32_t o = vkvit__op_mlstm_out(g, "skip_gate", &out);

    /* proj_down; the seed's layerscale has E entries of which the GEMM's per-column scale reads the first D. */
    vkvit__gemm_op down = {
        .a = vkvit__mat_dense(o, rows, E), .w = GEMM_WEIGHT("proj_down.weight"), .bias = VKVIT_NONE,
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
    vkvit__mlstm_cell(g, m, d, cell_prefix, xn, B, S, reverse, x, true, NULL);
}

#undef WEIGHT
#undef GEMM_WEIGHT

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
        .a = vkvit__mat_dense(v, B, D), .w = vkvit__model_gemm_weight(g, m, "head.weight"),
        .bias = vkvit__model_weight(g, m, "head.bias"), .d = vkvit__mat_dense(logits, B, c->num_classes),
        .M = B, .N = c->num_classes, .K = D, .batch = 1, .scale = VKVIT_NONE, .residual = {VKVIT_NONE, 0, 0, 0},
    };
    vkvit__op_gemm(g, "head", &head);
    *input = img;
    *output = logits;
}
