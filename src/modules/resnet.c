/* Conditioned ClassificationResNet (docs/model-format.md `resnet`; tools/reference/generic.py; seeds 002, 003):
 *
 *   img [B, H, W, 3] --patchify + GEMM(patch_embed) (+ bias) (+ pos_embed)--> x [B, T, C]    (T = Hp * Wp)
 *   x = block_i(x, condition), i = 0 .. depth-1     (every block has the one `block` config)
 *   v = mean of x over the T positions              (readout "gap")
 *   logits = out_proj(out_norm(v))
 *
 * Each ResidualBlock (SPEC 3.1) runs up to three branches; an identity branch adds no node and no residual add:
 *
 *   x += out_proj(Attention(chunk3(qkv_proj(input_norm(x)))))                         sequence mixer
 *   x += out_proj(Attention(q_proj(condition_mixer_norm(x)), chunk2(kv_proj(cond))))  condition mixer
 *   x += layer2(act(layer1(mlp_norm(x))))                                            MLP
 *
 * Bias, activation and residual add are GEMM epilogues (the out_proj / layer2 GEMMs write x in place); glu and
 * swiglu gate with a small kernel between layer1 and layer2. The generic Attention (RoPE from a host table over
 * the Hp x Wp grid, L2 qk-norm, causal) is the fused attention kernel. A condition of exactly one token (a global
 * [B, C] condition, or condition_tokens = 1) has one key, so the softmax is identically 1 and the branch is
 * out_proj(V) at every position: one GEMM whose A operand is V's row with row stride 0 — no q_proj, no attention. */
#include "modules/modules.h"

#include "model/rope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

vkvit_result vkvit__resnet_constants(const vkvit__model_file *mf, vkvit__constant **out, uint32_t *n) {
    const vkvit__resnet_config *c = &mf->cfg.resnet;
    *out = NULL;
    *n = 0;
    if (!c->seq.enabled || !c->seq.rope) return VKVIT_OK;
    const uint32_t dk = c->seq_head_dim, T = c->num_tokens;
    vkvit__constant *k = calloc(1, sizeof *k);
    if (!k) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "resnet: out of host memory for constants");
    *out = k;
    *n = 1;
    /* Compact split-half RoPE table over the 2-D patch grid: [T, dk/2, 2] (cos, sin). */
    snprintf(k->name, sizeof k->name, "const.rope");
    k->ndim = 3;
    k->shape[0] = T;
    k->shape[1] = dk / 2;
    k->shape[2] = 2;
    k->data = malloc((size_t)T * dk * sizeof(float));
    if (!k->data) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "resnet: out of host memory for the RoPE table");
    return vkvit__rope_grid_table(c->grid, 2, dk, (float)c->seq.rope_base, k->data);
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

void vkvit__resnet_block(vkvit__graph *g, const vkvit_model *m, uint32_t i, uint32_t x, uint32_t cond, uint32_t B) {
    const vkvit__resnet_config *c = &m->cfg.resnet;
    const uint32_t C = c->dim, T = c->num_tokens, rows = B * T;
    char prefix[96];
    vkvit__graph_scope(g, "blocks.%u", i);
#define WEIGHT(name) vkvit__model_weightf(g, m, "blocks.%u." name, i)
#define GEMM_WEIGHT(name) vkvit__model_gemm_weightf(g, m, "blocks.%u." name, i) /* fp16 in fp16 sessions */
#define NORM(name, cfg, src)                                                                                  \
    (snprintf(prefix, sizeof prefix, "blocks.%u." name, i), rn_norm(g, m, name, prefix, cfg, src, rows, C))
    uint32_t x2d_shape[2] = {rows, C};
    uint32_t x2d = vkvit__graph_view(g, x, "x", 0, 2, x2d_shape);

    /* ---- sequence mixer: x += out_proj(Attention(chunk3(qkv_proj(input_norm(x))))) ---- */
    if (c->seq.enabled) {
        uint32_t xn = NORM("input_norm", &c->input_norm, x2d);
        uint32_t qkv = vkvit__op_linear(g, "sequence_mixer.qkv_proj", xn, GEMM_WEIGHT("sequence_mixer.qkv_proj.weight"),
                                        c->seq.bias ? WEIGHT("sequence_mixer.qkv_proj.bias") : VKVIT_NONE,
                                        VKVIT_ACT_NONE);
        vkvit__attention_op att = {
            .q = {qkv, 0, 3 * C, T * 3 * C}, .k = {qkv, C, 3 * C, T * 3 * C}, .v = {qkv, 2 * C, 3 * C, T * 3 * C},
            .B = B, .Tq = T, .Tkv = T, .C = C, .heads = c->seq.num_heads,
            .rope = c->seq.rope ? vkvit__model_weight(g, m, "const.rope") : VKVIT_NONE, .rope_axes = 2,
            .qk_norm = c->seq.qk_norm, .causal = c->seq.causal,
        };
        uint32_t o = vkvit__op_attention(g, "sequence_mixer.attention", &att);
        vkvit__gemm_op proj = {
            .a = vkvit__mat_dense(o, rows, C), .w = GEMM_WEIGHT("sequence_mixer.out_proj.weight"),
            .bias = c->seq.bias ? WEIGHT("sequence_mixer.out_proj.bias") : VKVIT_NONE,
            .d = vkvit__mat_dense(x2d, rows, C), .M = rows, .N = C, .K = C, .batch = 1,
            .scale = VKVIT_NONE, .residual = vkvit__mat_dense(x2d, rows, C),
        };
        vkvit__op_gemm(g, "sequence_mixer.out_proj", &proj);
    }

    /* ---- condition mixer: x += out_proj(Attention(q_proj(norm(x)), K, V)), [K | V] = kv_proj(cond) ---- */
    if (c->cond.enabled) {
        const uint32_t Tc = c->condition_tokens ? c->condition_tokens : 1;
        uint32_t c2d_shape[2] = {B * Tc, C};
        uint32_t c2d = vkvit__graph_view(g, cond, "condition", 0, 2, c2d_shape);
        uint32_t kv = vkvit__op_linear(g, "condition_mixer.kv_proj", c2d, GEMM_WEIGHT("condition_mixer.kv_proj.weight"),
                                       VKVIT_NONE, VKVIT_ACT_NONE); /* [B*Tc, 2C]: K columns 0..C, V columns C..2C */
        vkvit__gemm_op proj = {
            .w = GEMM_WEIGHT("condition_mixer.out_proj.weight"), .bias = VKVIT_NONE,
            .N = C, .K = C, .scale = VKVIT_NONE, .residual = vkvit__mat_dense(x2d, rows, C),
        };
        if (Tc == 1) {
            /* One key: softmax == 1, the mixer output is V at every query position (independent of x). Per image,
             * out_proj reads V's one row T times (A row stride 0) and adds it to the T rows of x. The norm and
             * q_proj do not influence the result and are not computed. */
            proj.a = (vkvit__mat){kv, C, 0, 2 * C};
            proj.d = (vkvit__mat){x2d, 0, C, T * C};
            proj.residual = (vkvit__mat){x2d, 0, C, T * C};
            proj.M = T;
            proj.batch = B;
        } else {
            uint32_t cn = NORM("condition_mixer_norm", &c->condition_mixer_norm, x2d);
            uint32_t q = vkvit__op_linear(g, "condition_mixer.q_proj", cn, GEMM_WEIGHT("condition_mixer.q_proj.weight"),
                                          VKVIT_NONE, VKVIT_ACT_NONE);
            vkvit__attention_op att = {
                .q = {q, 0, C, T * C}, .k = {kv, 0, 2 * C, Tc * 2 * C}, .v = {kv, C, 2 * C, Tc * 2 * C},
                .B = B, .Tq = T, .Tkv = Tc, .C = C, .heads = c->cond.num_heads, .rope = VKVIT_NONE,
                .qk_norm = c->cond.qk_norm, .causal = c->cond.causal,
            };
            uint32_t o = vkvit__op_attention(g, "condition_mixer.attention", &att);
            proj.a = vkvit__mat_dense(o, rows, C);
            proj.d = vkvit__mat_dense(x2d, rows, C);
            proj.M = rows;
            proj.batch = 1;
        }
        vkvit__op_gemm(g, "condition_mixer.out_proj", &proj);
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
        uint32_t h = vkvit__op_linear(g, "mlp.layer1", xn, GEMM_WEIGHT("mlp.layer1.weight"),
                                      c->mlp.bias ? WEIGHT("mlp.layer1.bias") : VKVIT_NONE, act);
        if (gated) h = vkvit__op_glu(g, "mlp.gate", h, a == VKVIT_RN_ACT_GLU ? VKVIT_GLU : VKVIT_SWIGLU);
        vkvit__gemm_op l2 = {
            .a = vkvit__mat_dense(h, rows, Hd), .w = GEMM_WEIGHT("mlp.layer2.weight"),
            .bias = c->mlp.bias ? WEIGHT("mlp.layer2.bias") : VKVIT_NONE,
            .d = vkvit__mat_dense(x2d, rows, C), .M = rows, .N = C, .K = Hd, .batch = 1,
            .scale = VKVIT_NONE, .residual = vkvit__mat_dense(x2d, rows, C),
        };
        vkvit__op_gemm(g, "mlp.layer2", &l2);
    }
#undef WEIGHT
#undef GEMM_WEIGHT
#undef NORM
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

    /* Patch embedding: Conv2d(P, stride P) as im2col + GEMM against weight [C, Cin*P*P] (+ bias) (+ pos_embed
     * [1, Hp, Wp, C], shared by the batch, as the residual term of the epilogue). */
    uint32_t cols = vkvit__op_patchify(g, "patch_embed.im2col", img, B, H, W, Cin, P);
    uint32_t pe_w = vkvit__model_weight(g, m, "patch_embed.weight");
    uint32_t w2d_shape[2] = {C, Cin * P * P};
    uint32_t pe_w2d = vkvit__graph_view(g, pe_w, "patch_embed.weight[2d]", 0, 2, w2d_shape);
    vkvit__gemm_op pe = {
        .a = vkvit__mat_dense(cols, B * T, Cin * P * P), .w = pe_w2d,
        .bias = c->bias.patch_embed ? vkvit__model_weight(g, m, "patch_embed.bias") : VKVIT_NONE,
        .d = vkvit__mat_dense(x, T, C), .M = T, .N = C, .K = Cin * P * P, .batch = B, .scale = VKVIT_NONE,
        .residual = {c->pos_embed ? vkvit__model_weight(g, m, "pos_embed") : VKVIT_NONE, 0, C, 0},
    };
    pe.a.batch_stride = T * Cin * P * P;
    vkvit__op_gemm(g, "patch_embed", &pe);

    for (uint32_t i = 0; i < c->depth; i++) vkvit__resnet_block(g, m, i, x, cond, B);

    /* GAP over the T positions, out_norm on the pooled vector, head. */
    uint32_t v = vkvit__op_mean_rows(g, "gap", (vkvit__mat){x, 0, C, T * C}, B, T, C);
    v = rn_norm(g, m, "out_norm", "out_norm", &c->out_norm, v, B, C);
    uint32_t logits_shape[2] = {B, c->num_classes};
    uint32_t logits = vkvit__graph_tensor(g, VKVIT_TENSOR_OUTPUT, "logits", 2, logits_shape);
    vkvit__gemm_op head = {
        .a = vkvit__mat_dense(v, B, C), .w = vkvit__model_gemm_weight(g, m, "out_proj.weight"),
        .bias = c->bias.head ? vkvit__model_weight(g, m, "out_proj.bias") : VKVIT_NONE,
        .d = vkvit__mat_dense(logits, B, c->num_classes), .M = B, .N = c->num_classes, .K = C, .batch = 1,
        .scale = VKVIT_NONE, .residual = {VKVIT_NONE, 0, 0, 0},
    };
    vkvit__op_gemm(g, "out_proj", &head);
    *input = img;
    *condition = cond;
    *output = logits;
}
