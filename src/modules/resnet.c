// SPDX-License-Identifier: Apache-2.0
/* Conditioned ClassificationResNet (docs/model-format.md `resnet`; tools/reference/generic.py; seeds 002, 003):
 *
 *   img [B, H, W, 3] --patchify + GEMM(patch_embed) (+ bias) (+ pos_embed)--> x [B, T, C]    (T = Hp * Wp)
 *   x = block_i(x, condition), i = 0 .. depth-1     (every block has the one `block` config)
 *   v = mean of x over the T positions              (readout "gap")
 *   logits = out_proj(out_norm(v))
 *
 * Each ResidualBlock (docs/math.md 3.1) runs up to three branches; an identity branch adds no node and no residual add.
 * vkvit__rn_block_build is the block over any channels-last (B, *spatial, C) grid of rank 1 to 3 (the network
 * calls it with its 2-D patch grid; tests/models/test_residual_block.c with the op goldens' 1-, 2- and 3-D grids):
 *
 *   x += out_proj(Attention(chunk3(qkv_proj(input_norm(x)))))                         sequence mixer
 *   x += out_proj(Attention(q_proj(condition_mixer_norm(x)), chunk2(kv_proj(cond))))  condition mixer
 *   x += layer2(act(layer1(mlp_norm(x))))                                            MLP
 *
 * Bias, activation and residual add are GEMM epilogues (the out_proj / layer2 GEMMs write x in place); glu and
 * swiglu gate with a small kernel between layer1 and layer2. The generic Attention (RoPE from a host table over
 * the block's grid, one split-half part per axis; L2 qk-norm; causal) is the fused attention kernel. A condition
 * of exactly one token (a global [B, C] condition, or condition_tokens = 1) has one key, so the softmax is
 * identically 1 and the branch is out_proj(V) at every position: one GEMM whose A operand is V's row with row
 * stride 0 — no q_proj, no attention. */
#include "modules/modules.h"

#include "model/rope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

vkvit_result vkvit__rn_rope_constant(const vkvit__resnet_config *c, const uint32_t *shape, uint32_t ndim,
                                     const char *name, vkvit__constant *out) {
    memset(out, 0, sizeof *out);
    if (!c->seq.enabled || !c->seq.num_heads || c->dim % c->seq.num_heads)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "resnet rope: the sequence mixer is off or dim %u is not a "
                            "multiple of its %u heads", c->dim, c->seq.num_heads);
    if (ndim < 1 || ndim > 3)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "resnet rope: %u spatial dims (1 to 3 supported)", ndim);
    const uint32_t dk = c->dim / c->seq.num_heads;
    uint64_t T = 1;
    for (uint32_t a = 0; a < ndim; a++) T *= shape[a];
    if (T == 0 || T > (1u << 24))
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "resnet rope: %llu grid tokens", (unsigned long long)T);
    snprintf(out->name, sizeof out->name, "%s", name);
    out->ndim = 3;
    out->shape[0] = (uint32_t)T;
    out->shape[1] = dk / 2;
    out->shape[2] = 2;
    out->data = malloc((size_t)T * dk * sizeof(float));
    if (!out->data) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "resnet: out of host memory for the RoPE table");
    return vkvit__rope_grid_table(shape, ndim, dk, (float)c->seq.rope_base, out->data);
}

vkvit_result vkvit__resnet_constants(const vkvit__model_file *mf, vkvit__constant **out, uint32_t *n) {
    const vkvit__resnet_config *c = &mf->cfg.resnet;
    *out = NULL;
    *n = 0;
    if (!c->seq.enabled || !c->seq.rope) return VKVIT_OK;
    vkvit__constant *k = calloc(1, sizeof *k);
    if (!k) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "resnet: out of host memory for constants");
    *out = k;
    *n = 1;
    /* Compact split-half RoPE table over the 2-D patch grid: [T, dk/2, 2] (cos, sin). */
    return vkvit__rn_rope_constant(c, c->grid, 2, "const.rope", k);
}

/* norm(x) of the dense [rows, C] x into a new tensor (node and tensor `label`), or x itself for identity (no node).
 * `prefix` names the weights: "<prefix>.weight" (+ "<prefix>.bias" for a layernorm with bias). */
static uint32_t rn_norm(vkvit__graph *g, const vkvit_model *m, const char *label, const char *prefix,
                        const vkvit__rn_norm_config *nc, uint32_t x, uint32_t rows, uint32_t C) {
    if (g->error) return VKVIT_NONE;
    if (nc->kind == VKVIT_RN_NORM_IDENTITY) return x;
    const bool layer = nc->kind == VKVIT_RN_NORM_LAYERNORM;
    uint32_t shape[2] = {rows, C};
    uint32_t y = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, label, 2, shape);
    vkvit__norm_op op = {
        .kind = layer ? VKVIT_NORM_LAYER : VKVIT_NORM_RMS, .C = C, .group = C, .rows = rows, .rows_per_batch = rows,
        .in = {x, 0, C, rows * C}, .out = {y, 0, C, rows * C},
        .weight = vkvit__model_weightf(g, m, "%s.weight", prefix),
        .bias = layer && nc->bias ? vkvit__model_weightf(g, m, "%s.bias", prefix) : VKVIT_NONE, .eps = (float)nc->eps,
    };
    vkvit__op_norm(g, label, &op);
    return y;
}

uint32_t vkvit__rn_tokens(const vkvit__rn_block_desc *b) {
    uint32_t T = 1;
    for (uint32_t a = 0; a < b->ndim && a < 3; a++) T *= b->shape[a];
    return T;
}

/* The checks every builder below starts with; false after a (sticky) graph error. */
static bool rn_check(vkvit__graph *g, const vkvit__rn_block_desc *b) {
    if (g->error) return false;
    const vkvit__resnet_config *c = b->cfg;
    if (b->ndim < 1 || b->ndim > 3 || vkvit__rn_tokens(b) == 0 || b->B == 0 || c->dim == 0) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "resnet block: batch %u, dim %u, %u spatial dims "
                          "(1 to 3, none empty)", b->B, c->dim, b->ndim);
        return false;
    }
    if ((c->seq.enabled && (!c->seq.num_heads || c->dim % c->seq.num_heads)) ||
        (c->cond.enabled && (!c->cond.num_heads || c->dim % c->cond.num_heads))) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "resnet block: dim %u is not a multiple of the heads",
                          c->dim);
        return false;
    }
    if (c->seq.enabled && c->seq.rope != (b->rope != VKVIT_NONE)) {
        vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "resnet block: the sequence mixer %s RoPE but %s table "
                          "was given", c->seq.rope ? "uses" : "does not use", b->rope == VKVIT_NONE ? "no" : "a");
        return false;
    }
    return true;
}

void vkvit__rn_sequence_mixer(vkvit__graph *g, const vkvit_model *m, const vkvit__rn_block_desc *b,
                              const char *wprefix, const char *label, uint32_t xn, uint32_t out, bool accumulate) {
    if (!rn_check(g, b)) return;
    const vkvit__resnet_config *c = b->cfg;
    const uint32_t C = c->dim, T = vkvit__rn_tokens(b), B = b->B, rows = B * T;
    char name[128];
#define NAME(s) (snprintf(name, sizeof name, "%s." s, label), name)
    uint32_t qkv = vkvit__op_linear(g, NAME("qkv_proj"), xn, vkvit__model_weightf(g, m, "%sqkv_proj.weight", wprefix),
                                    c->seq.bias ? vkvit__model_weightf(g, m, "%sqkv_proj.bias", wprefix) : VKVIT_NONE,
                                    VKVIT_ACT_NONE);
    vkvit__attention_op att = {
        .q = {qkv, 0, 3 * C, T * 3 * C}, .k = {qkv, C, 3 * C, T * 3 * C}, .v = {qkv, 2 * C, 3 * C, T * 3 * C},
        .B = B, .Tq = T, .Tkv = T, .C = C, .heads = c->seq.num_heads,
        .rope = c->seq.rope ? b->rope : VKVIT_NONE, .rope_axes = b->ndim,
        .qk_norm = c->seq.qk_norm, .causal = c->seq.causal,
    };
    uint32_t o = vkvit__op_attention(g, NAME("attention"), &att);
    vkvit__gemm_op proj = {
        .a = vkvit__mat_dense(o, rows, C), .w = vkvit__model_weightf(g, m, "%sout_proj.weight", wprefix),
        .bias = c->seq.bias ? vkvit__model_weightf(g, m, "%sout_proj.bias", wprefix) : VKVIT_NONE,
        .d = vkvit__mat_dense(out, rows, C), .M = rows, .N = C, .K = C, .batch = 1,
        .scale = VKVIT_NONE, .residual = {accumulate ? out : VKVIT_NONE, 0, C, rows * C},
    };
    vkvit__op_gemm(g, NAME("out_proj"), &proj);
#undef NAME
}

void vkvit__rn_condition_mixer(vkvit__graph *g, const vkvit_model *m, const vkvit__rn_block_desc *b,
                               const char *wprefix, const char *label, uint32_t xn, uint32_t cond, uint32_t out,
                               bool accumulate) {
    if (!rn_check(g, b)) return;
    const vkvit__resnet_config *c = b->cfg;
    const uint32_t C = c->dim, T = vkvit__rn_tokens(b), B = b->B, rows = B * T;
    const uint32_t Tc = c->condition_tokens ? c->condition_tokens : 1;
    char name[128];
#define NAME(s) (snprintf(name, sizeof name, "%s." s, label), name)
    uint32_t c2d_shape[2] = {B * Tc, C};
    uint32_t c2d = vkvit__graph_view(g, cond, "condition", 0, 2, c2d_shape);
    uint32_t kv = vkvit__op_linear(g, NAME("kv_proj"), c2d, vkvit__model_weightf(g, m, "%skv_proj.weight", wprefix),
                                   VKVIT_NONE, VKVIT_ACT_NONE); /* [B*Tc, 2C]: K columns 0..C, V columns C..2C */
    const uint32_t res = accumulate ? out : VKVIT_NONE;
    vkvit__gemm_op proj = {
        .w = vkvit__model_weightf(g, m, "%sout_proj.weight", wprefix), .bias = VKVIT_NONE,
        .N = C, .K = C, .scale = VKVIT_NONE,
    };
    if (Tc == 1) {
        /* One key: softmax == 1, the mixer output is V at every query position (independent of x). Per image,
         * out_proj reads V's one row T times (A row stride 0) and adds it to the T rows of x. The norm and
         * q_proj do not influence the result and are not computed. */
        proj.a = (vkvit__mat){kv, C, 0, 2 * C};
        proj.d = (vkvit__mat){out, 0, C, T * C};
        proj.residual = (vkvit__mat){res, 0, C, T * C};
        proj.M = T;
        proj.batch = B;
    } else {
        uint32_t q = vkvit__op_linear(g, NAME("q_proj"), xn, vkvit__model_weightf(g, m, "%sq_proj.weight", wprefix),
                                      VKVIT_NONE, VKVIT_ACT_NONE);
        vkvit__attention_op att = {
            .q = {q, 0, C, T * C}, .k = {kv, 0, 2 * C, Tc * 2 * C}, .v = {kv, C, 2 * C, Tc * 2 * C},
            .B = B, .Tq = T, .Tkv = Tc, .C = C, .heads = c->cond.num_heads, .rope = VKVIT_NONE,
            .qk_norm = c->cond.qk_norm, .causal = c->cond.causal,
        };
        uint32_t o = vkvit__op_attention(g, NAME("attention"), &att);
        proj.a = vkvit__mat_dense(o, rows, C);
        proj.d = vkvit__mat_dense(out, rows, C);
        proj.residual = (vkvit__mat){res, 0, C, rows * C};
        proj.M = rows;
        proj.batch = 1;
    }
    vkvit__op_gemm(g, NAME("out_proj"), &proj);
#undef NAME
}

void vkvit__rn_block_build(vkvit__graph *g, const vkvit_model *m, const vkvit__rn_block_desc *b, const char *prefix,
                           uint32_t x, uint32_t cond) {
    if (!rn_check(g, b)) return;
    const vkvit__resnet_config *c = b->cfg;
    const uint32_t C = c->dim, T = vkvit__rn_tokens(b), rows = b->B * T;
    char wp[96], np[96];
#define NORM(name, cfg, src) \
    (snprintf(np, sizeof np, "%s" name, prefix), rn_norm(g, m, name, np, cfg, src, rows, C))
    uint32_t x2d_shape[2] = {rows, C};
    uint32_t x2d = vkvit__graph_view(g, x, "x", 0, 2, x2d_shape);

    /* ---- sequence mixer: x += out_proj(Attention(chunk3(qkv_proj(input_norm(x))))) ---- */
    if (c->seq.enabled) {
        uint32_t xn = NORM("input_norm", &c->input_norm, x2d);
        snprintf(wp, sizeof wp, "%ssequence_mixer.", prefix);
        vkvit__rn_sequence_mixer(g, m, b, wp, "sequence_mixer", xn, x2d, true);
    }

    /* ---- condition mixer: x += out_proj(Attention(q_proj(norm(x)), K, V)), [K | V] = kv_proj(cond) ---- */
    if (c->cond.enabled) {
        /* A one-token condition makes the branch independent of x: no norm (see vkvit__rn_condition_mixer). */
        const bool one_key = c->condition_tokens <= 1;
        uint32_t cn = one_key ? VKVIT_NONE : NORM("condition_mixer_norm", &c->condition_mixer_norm, x2d);
        snprintf(wp, sizeof wp, "%scondition_mixer.", prefix);
        vkvit__rn_condition_mixer(g, m, b, wp, "condition_mixer", cn, cond, x2d, true);
    }

    /* ---- MLP: x += layer2(act(layer1(mlp_norm(x)))) ---- */
    if (c->mlp.enabled) {
        const uint32_t Hd = c->mlp.hidden;
        const vkvit__rn_activation a = c->mlp.activation;
        const bool gated = a == VKVIT_RN_ACT_GLU || a == VKVIT_RN_ACT_SWIGLU;
        const vkvit__act act = a == VKVIT_RN_ACT_RELU ? VKVIT_ACT_RELU
                               : a == VKVIT_RN_ACT_GELU ? VKVIT_ACT_GELU
                               : a == VKVIT_RN_ACT_SILU ? VKVIT_ACT_SILU
                                                        : VKVIT_ACT_NONE;
        uint32_t xn = NORM("mlp_norm", &c->mlp_norm, x2d);
        uint32_t h = vkvit__op_linear(g, "mlp.layer1", xn, vkvit__model_weightf(g, m, "%smlp.layer1.weight", prefix),
                                      c->mlp.bias ? vkvit__model_weightf(g, m, "%smlp.layer1.bias", prefix) : VKVIT_NONE,
                                      act);
        if (gated) h = vkvit__op_glu(g, "mlp.gate", h, a == VKVIT_RN_ACT_GLU ? VKVIT_GLU : VKVIT_SWIGLU);
        vkvit__gemm_op l2 = {
            .a = vkvit__mat_dense(h, rows, Hd), .w = vkvit__model_weightf(g, m, "%smlp.layer2.weight", prefix),
            .bias = c->mlp.bias ? vkvit__model_weightf(g, m, "%smlp.layer2.bias", prefix) : VKVIT_NONE,
            .d = vkvit__mat_dense(x2d, rows, C), .M = rows, .N = C, .K = Hd, .batch = 1,
            .scale = VKVIT_NONE, .residual = vkvit__mat_dense(x2d, rows, C),
        };
        vkvit__op_gemm(g, "mlp.layer2", &l2);
    }
#undef NORM
}

void vkvit__resnet_block(vkvit__graph *g, const vkvit_model *m, uint32_t i, uint32_t x, uint32_t cond, uint32_t B) {
    const vkvit__resnet_config *c = &m->cfg.resnet;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "blocks.%u.", i);
    vkvit__graph_scope(g, "blocks.%u", i);
    vkvit__rn_block_desc b = {
        .cfg = c, .B = B, .ndim = 2, .shape = {c->grid[0], c->grid[1], 1},
        .rope = c->seq.enabled && c->seq.rope ? vkvit__model_weight(g, m, "const.rope") : VKVIT_NONE,
    };
    vkvit__rn_block_build(g, m, &b, prefix, x, cond);
    vkvit__graph_scope(g, NULL);
}

void vkvit__resnet_build(vkvit__graph *g, const vkvit_model *m, uint32_t B, uint32_t *input, uint32_t *condition,
                         uint32_t *output) {
    const vkvit__resnet_config *c = &m->cfg.resnet;
    const uint32_t C = c->dim, T = c->num_tokens, P = c->patch_size;
    const uint32_t H = c->image_size[0], W = c->image_size[1], Cin = c->in_chans;

    uint32_t img_shape[4] = {B, H, W, Cin};
    uint32_t img = vkvit__graph_tensor(g, VKVIT_TENSOR_INPUT, "input", 4, img_shape);
    uint32_t cond = VKVIT_NONE;
    if (c->cond.enabled) { /* [B, C] (global, condition_tokens 0) or [B, Tc, C] */
        uint32_t cond_shape[3] = {B, c->condition_tokens, C};
        if (c->condition_tokens == 0) cond_shape[1] = C;
        cond = vkvit__graph_tensor(g, VKVIT_TENSOR_INPUT, "condition", c->condition_tokens ? 3 : 2, cond_shape);
    }
    uint32_t x_shape[3] = {B, T, C};
    uint32_t x = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "x", 3, x_shape);

    /* Patch embedding (+ bias) (+ pos_embed [1, Hp, Wp, C] = [1, T, C]) into x. */
    vkvit__patch_embed_op pe = {
        .prefix = "patch_embed", .img = img, .batch = B, .height = H, .width = W, .in_chans = Cin, .patch = P,
        .dim = C, .bias = c->bias.patch_embed,
        .pos_embed = c->pos_embed ? vkvit__model_weight(g, m, "pos_embed") : VKVIT_NONE,
        .dst = vkvit__mat_dense(x, T, C),
    };
    vkvit__patch_embed(g, m, &pe);

    for (uint32_t i = 0; i < c->depth; i++) vkvit__resnet_block(g, m, i, x, cond, B);

    /* The final tokens (vkvit_session_get_tokens): out_norm on every position, timm's forward_features. */
    if (g->want_tokens)
        g->tokens = (vkvit__token_marks){
            .t = rn_norm(g, m, "tokens.out_norm", "out_norm", &c->out_norm, x, B * T, C), .T = T, .C = C,
            .patch0 = 0, .grid_h = c->grid[0], .grid_w = c->grid[1], .cls = VKVIT_NONE};

    /* GAP over the T positions, out_norm on the pooled vector, head. */
    uint32_t v = vkvit__op_mean_rows(g, "gap", (vkvit__mat){x, 0, C, T * C}, B, T, C);
    v = rn_norm(g, m, "out_norm", "out_norm", &c->out_norm, v, B, C);
    uint32_t logits = vkvit__classifier_head(g, m, v, B, C, c->num_classes, c->bias.head);
    *input = img;
    *condition = cond;
    *output = logits;
}
