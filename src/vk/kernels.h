/* The C side of each shader family: push-constant structs (mirroring the `p` block of the .comp file), tile
 * configurations chosen per device, and dispatch helpers. Kept next to the runtime so a shader and its mirror
 * change together. */
#ifndef VKVIT_KERNELS_H
#define VKVIT_KERNELS_H

#include "vk/vk.h"

/* ------------------------------------------------------------------------------------------------------------
 * GEMM (shaders/gemm.comp): D[b] = A[b] (M,K) * B[b] (N,K)^T (+ bias[N])
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct vkvit__gemm_push {
    uint32_t M, N, K;
    uint32_t stride_a, stride_b, stride_d;           /* row strides in elements */
    uint32_t batch_stride_a, batch_stride_b, batch_stride_d;
} vkvit__gemm_push;
_Static_assert(sizeof(vkvit__gemm_push) <= VKVIT_MAX_PUSH, "gemm push constants exceed 128 bytes");

typedef struct vkvit__gemm_config {
    uint32_t bm, bn, bk;                             /* workgroup tile */
    uint32_t tm, tn;                                 /* register tile per invocation */
} vkvit__gemm_config;

/* The tile configuration for this device and problem size. */
vkvit__gemm_config vkvit__gemm_pick(const vkvit_ctx *ctx, uint32_t M, uint32_t N, uint32_t K);

/* Bindings: 0 A, 1 B, 2 bias (any buffer when !bias), 3 D. */
vkvit_result vkvit__gemm_kernel_create(vkvit_ctx *ctx, const vkvit__gemm_config *cfg, bool bias, const char *label,
                                       vkvit__kernel *out);
void vkvit__gemm_record(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__kernel *k, const vkvit__gemm_config *cfg,
                        VkDescriptorSet set, const vkvit__gemm_push *push, uint32_t batch);

/* ------------------------------------------------------------------------------------------------------------
 * Elementwise add (shaders/add.comp): D[i] = A[i] + B[i % n_b]
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct vkvit__add_push {
    uint32_t n, n_b;
} vkvit__add_push;

/* Bindings: 0 A, 1 B, 2 D. */
vkvit_result vkvit__add_kernel_create(vkvit_ctx *ctx, const char *label, vkvit__kernel *out);
void vkvit__add_record(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__kernel *k, VkDescriptorSet set,
                       const vkvit__add_push *push);

#endif /* VKVIT_KERNELS_H */
