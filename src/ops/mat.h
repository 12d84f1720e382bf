// SPDX-License-Identifier: Apache-2.0
/* src/ops/mat — how op builders address a matrix inside a graph tensor, in fp32 elements:
 *     element (b, r, c) = t[offset + b * batch_stride + r * stride + c]
 * which lets e.g. the patch-embedding GEMM write straight into the token rows of the residual stream. */
#ifndef VKVIT_OPS_MAT_H
#define VKVIT_OPS_MAT_H

#include "graph/graph.h"

/* After every push-constant mirror: `n_words` 32-bit members without padding, within the 128 bytes Vulkan
 * guarantees. vkvit__kernel_create also checks the size against the shader's block (read from its SPIR-V). */
#define VKVIT_PUSH_MIRROR(type, n_words)                                                                          \
    _Static_assert(sizeof(type) == 4 * (n_words) && sizeof(type) <= VKVIT_MAX_PUSH,                            \
                   #type ": " #n_words " 32-bit members, at most 128 bytes")

typedef struct vkvit__mat {
    uint32_t t;
    uint32_t offset, stride, batch_stride;
} vkvit__mat;

/* A dense [rows, cols] matrix (batch stride rows*cols) at the start of tensor t. */
static inline vkvit__mat vkvit__mat_dense(uint32_t t, uint32_t rows, uint32_t cols) {
    return (vkvit__mat){t, 0, cols, rows * cols};
}

#endif /* VKVIT_OPS_MAT_H */
