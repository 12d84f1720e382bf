// SPDX-License-Identifier: Apache-2.0
/* src/ops/topk — the softmax + top-K node after the classifier head (shaders/topk.comp). */
#ifndef VKVIT_OPS_TOPK_H
#define VKVIT_OPS_TOPK_H

#include "graph/graph.h"

/* Softmax + top-K of logits [B, N] into a new OUTPUT tensor of 2 * B * K 32-bit words: classes uint32 [B, K], then
 * probabilities float [B, K] (shaders/topk.comp). 1 <= K <= min(VKVIT_MAX_TOP_K, N). */
uint32_t vkvit__op_topk(vkvit__graph *g, const char *name, uint32_t logits, uint32_t B, uint32_t N, uint32_t K);

#endif /* VKVIT_OPS_TOPK_H */
