// SPDX-License-Identifier: Apache-2.0
/* ViT5ClassificationNet (docs/math.md 5.1; both flavours, docs/math.md 6):
 *
 *   img [B, H, W, 3] --patchify + GEMM(patch_embed) + pos_embed--> patch rows of x [B, T, C]
 *   x[cls row] = cls_token, x[register rows] = reg_token
 *   x = block_i(x), i = 0 .. depth-1   (with a CLS readout the last block updates only the CLS rows)
 *   v = readout(x): CLS row | mean of the patch rows | neck(registers) flattened
 *   logits = out_proj(out_norm(v))
 *
 * Token layout: nvsubq [patches, CLS, regs], paper [CLS, patches, regs]; registers always last. */
#include "modules/modules.h"

#include "model/rope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Row indices of the token groups inside one image's T rows. */
typedef struct token_rows {
    uint32_t patch0, cls, reg0;
} token_rows;

uint32_t vkvit__vit5_cls_row(const vkvit__vit5_config *c) {
    return c->token_layout == VKVIT_TOKENS_CLS_PATCHES_REGS ? 0 : c->num_patches;
}

static token_rows rows_of(const vkvit__vit5_config *c) {
    const bool cls_first = c->token_layout == VKVIT_TOKENS_CLS_PATCHES_REGS;
    return (token_rows){.patch0 = cls_first && c->has_cls ? 1 : 0, .cls = vkvit__vit5_cls_row(c),
                        .reg0 = c->num_patches + (c->has_cls ? 1 : 0)};
}

vkvit_result vkvit__vit5_constants(const vkvit__model_file *mf, vkvit__constant **out, uint32_t *n) {
    const vkvit__vit5_config *c = &mf->cfg.vit5;
    const uint32_t dk = c->head_dim;
    uint32_t count = 1 + (c->qk_norm ? c->depth : 0);
    vkvit__constant *k = calloc(count, sizeof *k);
    if (!k) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vit5: out of host memory for constants");
    *out = k;

    /* RoPE: [T, dk/2, 2] (cos, sin) of the angle shared by channels 2i and 2i+1 (docs/math.md 1.4, compact form). */
    snprintf(k[0].name, sizeof k[0].name, "const.rope");
    k[0].ndim = 3;
    k[0].shape[0] = c->num_tokens;
    k[0].shape[1] = dk / 2;
    k[0].shape[2] = 2;
    k[0].data = malloc((size_t)c->num_tokens * dk * sizeof(float));
    *n = 1;
    if (!k[0].data) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vit5: out of host memory for the RoPE table");
    vkvit__rope_axial_desc spec = {
        .head_dim = dk, .grid_h = c->grid[0], .grid_w = c->grid[1], .num_registers = c->num_registers,
        .has_cls = c->has_cls, .rope_base = (float)c->rope_base, .reg_rope_base = (float)c->reg_rope_base,
        .layout = c->token_layout,
    };
    vkvit_result res = vkvit__rope_axial_table(&spec, k[0].data);
    if (res != VKVIT_OK) return res;

    /* QK-norm weights side by side, as the attention kernel reads them. */
    for (uint32_t i = 0; c->qk_norm && i < c->depth; i++) {
        vkvit__constant *q = &k[1 + i];
        snprintf(q->name, sizeof q->name, "const.blocks.%u.qk_norm", i);
        q->ndim = 2;
        q->shape[0] = 2;
        q->shape[1] = dk;
        q->data = malloc(2 * dk * sizeof(float));
        *n = 2 + i;
        if (!q->data) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vit5: out of host memory for constants");
        for (uint32_t s = 0; s < 2; s++) {
            char name[96];
            snprintf(name, sizeof name, "blocks.%u.sequence_mixer.%s_norm.weight", i, s ? "k" : "q");
            const vkvit__st_tensor *t = vkvit__model_file_tensor(mf, name);
            if (!t) return vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "model '%s' has no tensor '%s'", mf->label, name);
            if ((res = vkvit__model_file_tensor_f32(mf, t, q->data + s * dk, dk)) != VKVIT_OK) return res;
        }
    }
    return VKVIT_OK;
}

/* The final tokens (vkvit_session_get_tokens), timm's forward_features: out_norm on every token of x [B, T, C]
 * when it normalises C-wide vectors (CLS and GAP readouts; for CLS the CLS row is then exactly the pooled
 * features), else (register_concat: out_norm is R * neck_dim wide, after the neck) x as the last block left it. */
static void vit5_tokens(vkvit__graph *g, const vkvit_model *m, const vkvit__vit5_config *c, uint32_t x, uint32_t B,
                        token_rows rows) {
    const uint32_t C = c->dim, T = c->num_tokens;
    uint32_t tok = x;
    if (c->readout != VKVIT_READOUT_REGISTER_CONCAT) {
        tok = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "tokens.out_norm", 3, (uint32_t[3]){B, T, C});
        vkvit__norm_op norm = {.kind = VKVIT_NORM_RMS, .C = C, .group = C, .rows = B * T, .rows_per_batch = T,
                               .in = {x, 0, C, T * C}, .out = {tok, 0, C, T * C},
                               .weight = vkvit__model_weight(g, m, "out_norm.weight"), .bias = VKVIT_NONE,
                               .eps = (float)c->norm_eps};
        vkvit__op_norm(g, "tokens.out_norm", &norm);
    }
    g->tokens = (vkvit__token_marks){.t = tok, .T = T, .C = C, .patch0 = rows.patch0, .grid_h = c->grid[0],
                                     .grid_w = c->grid[1], .cls = c->has_cls ? rows.cls : VKVIT_NONE,
                                     .reg0 = rows.reg0, .n_regs = c->num_registers, .image_layout = true};
}

void vkvit__vit5_build(vkvit__graph *g, const vkvit_model *m, uint32_t B, uint32_t *input, uint32_t *output) {
    const vkvit__vit5_config *c = &m->cfg.vit5;
    const uint32_t C = c->dim, T = c->num_tokens, Np = c->num_patches, P = c->patch_size, R = c->num_registers;
    const uint32_t H = c->image_size[0], W = c->image_size[1], Cin = c->in_chans;
    const token_rows rows = rows_of(c);
    const float eps = (float)c->norm_eps;

    uint32_t img_shape[4] = {B, H, W, Cin};
    uint32_t img = vkvit__graph_tensor(g, VKVIT_TENSOR_INPUT, "input", 4, img_shape);
    uint32_t x_shape[3] = {B, T, C};
    uint32_t x = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "x", 3, x_shape);

    /* Patch embedding (+ bias, + pos_embed) written straight into the patch rows of x. */
    vkvit__patch_embed_op pe = {
        .prefix = "patch_embed", .img = img, .batch = B, .height = H, .width = W, .in_chans = Cin, .patch = P,
        .dim = C, .bias = c->bias.patch_embed, .pos_embed = vkvit__model_weight(g, m, "pos_embed"),
        .dst = {x, rows.patch0 * C, C, T * C},
    };
    vkvit__patch_embed(g, m, &pe);

    /* Learned tokens, broadcast to every image. */
    if (c->has_cls)
        vkvit__op_copy_rows(g, "cls_token", (vkvit__mat){vkvit__model_weight(g, m, "cls_token"), 0, C, 0},
                            (vkvit__mat){x, rows.cls * C, C, T * C}, B, 1, C);
    if (R > 0)
        vkvit__op_copy_rows(g, "reg_token", (vkvit__mat){vkvit__model_weight(g, m, "reg_token"), 0, C, 0},
                            (vkvit__mat){x, rows.reg0 * C, C, T * C}, B, R, C);

    /* A CLS readout reads one row of the last block's output per image (unless the session outputs every token). */
    for (uint32_t i = 0; i < c->depth; i++)
        vkvit__vit5_block(g, m, i, x, B, i + 1 == c->depth && c->readout == VKVIT_READOUT_CLS && !g->want_tokens);
    if (g->want_tokens) vit5_tokens(g, m, c, x, B, rows);

    /* Readout, then out_norm on the pooled vector (docs/math.md 5.1: norm after readout; for GAP, norm(mean(x))). */
    uint32_t head_in = c->head_in;
    uint32_t v_shape[2] = {B, head_in};
    uint32_t v = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "readout", 2, v_shape);
    uint32_t out_norm = vkvit__model_weight(g, m, "out_norm.weight");
    vkvit__norm_op norm = {.kind = VKVIT_NORM_RMS, .C = head_in, .group = head_in, .rows = B, .rows_per_batch = 1,
                           .out = {v, 0, 0, head_in}, .weight = out_norm, .bias = VKVIT_NONE, .eps = eps};
    if (c->readout == VKVIT_READOUT_CLS) {
        norm.in = (vkvit__mat){x, rows.cls * C, 0, T * C};
    } else if (c->readout == VKVIT_READOUT_GAP) {
        uint32_t mean = vkvit__op_mean_rows(g, "gap", (vkvit__mat){x, rows.patch0 * C, C, T * C}, B, Np, C);
        norm.in = (vkvit__mat){mean, 0, 0, C};
    } else { /* register_concat: neck [c', C] on each register, flattened to [B, R*c'] */
        uint32_t nd = c->neck_dim;
        uint32_t neck_shape[2] = {B * R, nd};
        uint32_t neck = vkvit__graph_tensor(g, VKVIT_TENSOR_ACTIVATION, "neck", 2, neck_shape);
        vkvit__gemm_op op = {
            .a = {x, rows.reg0 * C, C, T * C}, .w = vkvit__model_weight(g, m, "neck.weight"), .bias = VKVIT_NONE,
            .d = {neck, 0, nd, R * nd}, .M = R, .N = nd, .K = C, .batch = B, .scale = VKVIT_NONE,
            .residual = {VKVIT_NONE, 0, 0, 0},
        };
        vkvit__op_gemm(g, "neck", &op);
        norm.in = (vkvit__mat){neck, 0, 0, head_in};
    }
    vkvit__op_norm(g, "out_norm", &norm);

    uint32_t logits = vkvit__classifier_head(g, m, v, B, head_in, c->num_classes, c->bias.head);
    *input = img;
    *output = logits;
}
