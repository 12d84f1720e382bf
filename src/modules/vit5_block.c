// SPDX-License-Identifier: Apache-2.0
/* ViT5ResidualBlock with ViT5Attention (docs/math.md 1.3, 2.2), updating the residual stream x [B, T, C] in place:
 *
 *   xn  = input_norm(x)                                  RMSNorm
 *   qkv = xn · Wqkvᵀ (+b)                                [B*T, 3C], channel s*C + h*dk + d
 *   o   = attention(qkv)                                 QK-RMSNorm, then RoPE, then softmax(q·k·scale)·v
 *   y   = o · Wprojᵀ (+b)
 *   x  += ls_attn ⊙ y                or, with GRN:       x += ls_attn ⊙ grn(y)
 *   x  += ls_mlp ⊙ (gelu(mlp_norm(x) · W1ᵀ (+b1)) · W2ᵀ (+b2))
 *
 * LayerScale, bias and residual add are GEMM epilogues; DropPath is the identity at inference.
 *
 * cls_only (modules.h): from y on, only the B CLS rows (T*C floats apart in x) are computed: ViT-5-S's last block
 * then skips 0.53 of the network's 9.4 GFLOP (the projection and the MLP of 200 of its 201 tokens). */
#include "modules/modules.h"

void vkvit__vit5_block(vkvit__graph *g, const vkvit_model *m, uint32_t i, uint32_t x, uint32_t B, bool cls_only) {
    const vkvit__vit5_config *c = &m->cfg.vit5;
    const uint32_t C = c->dim, T = c->num_tokens, rows = B * T, Hd = c->mlp_hidden;
    const float eps = (float)c->norm_eps;
    /* The rows updated after the attention: all B*T, or the B CLS rows (row cls of each image: stride T*C). */
    const bool only_cls = cls_only && c->has_cls && !c->grn;
    const uint32_t out_rows = only_cls ? B : rows;
    const uint32_t row0 = only_cls ? vkvit__vit5_cls_row(c) * C : 0, row_stride = only_cls ? T * C : C;
    vkvit__graph_scope(g, "blocks.%u", i);
#define WEIGHT(name) vkvit__model_weightf(g, m, "blocks.%u." name, i)
#define GEMM_WEIGHT(name) vkvit__model_weightf(g, m, "blocks.%u." name, i) /* fp16 in fp16 sessions */
#define OPTIONAL(cond, name) ((cond) ? WEIGHT(name) : VKVIT_NONE)

    /* ---- attention branch ---- */
    uint32_t x2d_shape[2] = {rows, C};
    uint32_t x2d = vkvit__graph_view(g, x, "x", 0, 2, x2d_shape);
    uint32_t xn = vkvit__op_rmsnorm(g, "input_norm", x2d, WEIGHT("input_norm.weight"), eps);
    uint32_t qkv = vkvit__op_linear(g, "sequence_mixer.qkv", xn, GEMM_WEIGHT("sequence_mixer.qkv.weight"),
                                    OPTIONAL(c->bias.qkv, "sequence_mixer.qkv.bias"), VKVIT_ACT_NONE);
    vkvit__rope_attention_op att = {
        .qkv = qkv, .B = B, .T = T, .C = C, .heads = c->num_heads,
        .rope = vkvit__model_weight(g, m, "const.rope"),
        .pairing = c->rope_pairing,
        .qk_norm = c->qk_norm ? vkvit__model_weightf(g, m, "const.blocks.%u.qk_norm", i) : VKVIT_NONE,
        .qk_norm_eps = (float)c->qk_norm_eps,
    };
    uint32_t o = vkvit__op_rope_attention(g, "sequence_mixer.attention", &att);
    const vkvit__mat x_out = {x2d, row0, row_stride, 0};   /* the out_rows rows of x this block updates */
    uint32_t ls_attn = OPTIONAL(c->layer_scale, "ls_attn.gamma");
    vkvit__gemm_op proj = {
        .a = {o, row0, row_stride, 0}, .w = GEMM_WEIGHT("sequence_mixer.proj.weight"),
        .bias = OPTIONAL(c->bias.proj, "sequence_mixer.proj.bias"),
        .M = out_rows, .N = C, .K = C, .batch = 1,
    };
    if (c->grn) { /* GRN needs statistics over all tokens of y before LayerScale: y is materialised */
        uint32_t y_shape[2] = {rows, C};
        uint32_t y = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "sequence_mixer.proj", 2, y_shape);
        proj.d = vkvit__mat_dense(y, rows, C);
        proj.scale = VKVIT_NONE;
        proj.residual = (vkvit__mat){VKVIT_NONE, 0, 0, 0};
        vkvit__op_gemm(g, "sequence_mixer.proj", &proj);
        vkvit__op_grn_residual(g, "grn", y, WEIGHT("grn.gamma"), WEIGHT("grn.beta"), ls_attn, x2d, B, T, C, 1e-6f);
    } else {
        proj.d = x_out;
        proj.scale = ls_attn;
        proj.residual = x_out;
        vkvit__op_gemm(g, "sequence_mixer.proj", &proj);
    }

    /* ---- MLP branch ---- */
    uint32_t xn2_shape[2] = {out_rows, C};
    uint32_t xn2 = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "mlp_norm", 2, xn2_shape);
    const vkvit__norm_op mlp_norm = {
        .kind = VKVIT_NORM_RMS, .C = C, .group = C, .rows = out_rows, .rows_per_batch = out_rows, .in = x_out,
        .out = vkvit__mat_dense(xn2, out_rows, C), .weight = WEIGHT("mlp_norm.weight"), .bias = VKVIT_NONE,
        .eps = eps,
    };
    vkvit__op_norm(g, "mlp_norm", &mlp_norm);
    uint32_t h = vkvit__op_linear(g, "mlp.layer1", xn2, GEMM_WEIGHT("mlp.layer1.weight"), OPTIONAL(c->bias.mlp, "mlp.layer1.bias"),
                                  VKVIT_ACT_GELU);
    vkvit__gemm_op l2 = {
        .a = vkvit__mat_dense(h, out_rows, Hd), .w = GEMM_WEIGHT("mlp.layer2.weight"),
        .bias = OPTIONAL(c->bias.mlp, "mlp.layer2.bias"), .d = x_out, .M = out_rows, .N = C, .K = Hd, .batch = 1,
        .scale = OPTIONAL(c->layer_scale, "ls_mlp.gamma"), .residual = x_out,
    };
    vkvit__op_gemm(g, "mlp.layer2", &l2);
#undef WEIGHT
#undef GEMM_WEIGHT
#undef OPTIONAL
    vkvit__graph_scope(g, NULL);
}
