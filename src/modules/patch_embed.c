// SPDX-License-Identifier: Apache-2.0
/* Pieces shared by the networks: the patch embedding at the input and the classifier head at the output.
 *
 * Patch embedding: Conv2d(Cin -> C, kernel P, stride P, padding 0) on a channels-last image
 * as im2col + one GEMM against the PyTorch weight [C, Cin, P, P] viewed as [C, Cin*P*P], with the optional bias and
 * the optional learned position embedding [1, Np, C] (shared by the batch) fused into the GEMM epilogue. The Np
 * patch rows of every image are written straight into `dst` (e.g. the patch rows of a ViT token sequence). */
#include "modules/modules.h"

#include <stdio.h>

void vkvit__patch_embed(vkvit__graph *g, const vkvit_model *m, const vkvit__patch_embed_op *op) {
    const uint32_t K = op->in_chans * op->patch * op->patch;
    const uint32_t Np = (op->height / op->patch) * (op->width / op->patch);
    char name[96];
    uint32_t cols = vkvit__op_patchify(g, "patch_embed.im2col", op->img, op->batch, op->height, op->width,
                                       op->in_chans, op->patch);
    snprintf(name, sizeof name, "%s.weight", op->prefix);
    uint32_t w = vkvit__model_weight(g, m, name); /* fp16 in fp16 sessions (tensor cores in fp16-math ones) */
    uint32_t w2d_shape[2] = {op->dim, K};
    uint32_t w2d = vkvit__graph_view(g, w, "patch_embed.weight[2d]", 0, 2, w2d_shape);
    snprintf(name, sizeof name, "%s.bias", op->prefix);
    vkvit__gemm_op pe = {
        .a = vkvit__mat_dense(cols, Np, K),
        .w = w2d,
        .bias = op->bias ? vkvit__model_weight(g, m, name) : VKVIT_NONE,
        .d = op->dst,
        .M = Np, .N = op->dim, .K = K, .batch = op->batch,
        .scale = VKVIT_NONE,
        .residual = {op->pos_embed, 0, op->dim, 0},
    };
    vkvit__op_gemm(g, "patch_embed", &pe);
}

uint32_t vkvit__classifier_head(vkvit__graph *g, const vkvit_model *m, uint32_t v, uint32_t B, uint32_t in_dim,
                                uint32_t classes, bool bias) {
    uint32_t shape[2] = {B, classes};
    uint32_t logits = vkvit__graph_tensor(g, VKVIT_TENSOR_OUTPUT, "logits", 2, shape);
    g->features = v; /* [B, in_dim]: the pre-logits features (vkvit_session_get_features) */
    vkvit__gemm_op head = {
        .a = vkvit__mat_dense(v, B, in_dim), .w = vkvit__model_weight(g, m, "out_proj.weight"),
        .bias = bias ? vkvit__model_weight(g, m, "out_proj.bias") : VKVIT_NONE,
        .d = vkvit__mat_dense(logits, B, classes), .M = B, .N = classes, .K = in_dim, .batch = 1,
        .scale = VKVIT_NONE, .residual = {VKVIT_NONE, 0, 0, 0},
    };
    vkvit__op_gemm(g, "out_proj", &head);
    return logits;
}
