// SPDX-License-Identifier: Apache-2.0
/* src/policy — the one room of kernel policy. It turns the device's facts (vk/facts.h), the environment (env.h,
 * read once) and the ctx description into one value, vkvit__policy, that every op builder reads to choose its
 * kernels; nothing else decides which kernel family runs. A session's precision is the build context of its graph
 * (graph.h); builders combine the two.
 *
 *   env.c     the environment table, read once per ctx
 *   policy.c  the choices: fp16, subgroup reductions, texel reads, the CPU GEMM, the cooperative-matrix kernel and
 *             its warp and fragments, the attention path, the tile override, the optional device features vkvit
 *             enables for them, the workaround text `vkvit info` prints, and the public *_in_use fields
 *
 * Test overrides (vkvit__test_hooks) live apart, so that no policy field is ever a test's toy. */
#ifndef VKVIT_POLICY_POLICY_H
#define VKVIT_POLICY_POLICY_H

#include "common.h"
#include "policy/env.h"
#include "vk/facts.h"

/* Shared memory of shaders/gemm_coopmat.comp at its 64 x 64 tile, the one every device with cooperative matrices
 * must fit (the 32 and 128 tiles, which need more, are chosen where they fit: vkvit__gemm_pick_coopmat): two
 * buffers of fp16 A and B tiles of 64 rows x 40 halves. src/ops/gemm.c checks it against its tile formula. */
#define VKVIT_COOPMAT_SHARED_BYTES (2u * 2 * 64 * 40 * 2)

/* Which cooperative-matrix GEMM fp16-math GEMMs run on. */
typedef enum vkvit__coopmat_kernel {
    VKVIT_COOPMAT_NONE = 0,                 /* the shared-memory or CPU kernel */
    VKVIT_COOPMAT_NV,                       /* GL_NV_cooperative_matrix: 16x16x16, 32-wide subgroups (tested on H100) */
    VKVIT_COOPMAT_KHR,                      /* GL_KHR_cooperative_matrix: the listed shape (16x16x16, 8x16x16, 8x8x16, 8x8x8) */
    VKVIT_COOPMAT_EMULATED,                 /* the tiling with plain-arithmetic products (VKVIT_COOPMAT_EMULATE) */
    VKVIT_COOPMAT_NV2,                      /* GL_NV_cooperative_matrix2's tensor layouts (gemm_coopmat2.comp): on
                                               request (VKVIT_COOPMAT_NV2=1) until a GPU has timed it */
} vkvit__coopmat_kernel;

/* The shapes the emulated kernel implements (shaders/variants.cmake: gemm_coopmat_emu*). */
#define VKVIT_COOPMAT_EMULATED_SHAPES                                                                                  \
    (VKVIT_COOPMAT_SHAPE_16X16X16 | VKVIT_COOPMAT_SHAPE_8X16X16 | VKVIT_COOPMAT_SHAPE_8X8X16)

/* M, N, K of one VKVIT_COOPMAT_SHAPE_* bit and the subgroup size its fragments need (0: any of 4 to 64); false for
 * anything else. */
bool vkvit__coopmat_shape_dims(uint32_t shape, uint32_t *m, uint32_t *n, uint32_t *k, uint32_t *lanes);

/* What a caller asked for besides the environment (vkvit_ctx_desc). */
typedef struct vkvit__policy_request {
    bool disable_f16;                       /* vkvit_ctx_desc.disable_f16 */
    bool adopted;                           /* the host's device (adopt mode): vkvit enables nothing */
} vkvit__policy_request;

/* The kernel policy of one ctx. */
typedef struct vkvit__policy {
    bool cpu_kernels;                       /* CPU device: few large workgroups, per-invocation rows, register tiles */
    bool fp16;                              /* fp16 storage in use: fp16 and fp16-math sessions can be built */
    bool fp16_math;                         /* fp16 arithmetic too (fp16-math sessions) */
    bool subgroup_reductions;               /* the *_subgroup reductions (shaders/reduce.glsl) */
    bool subgroup_shuffles;                 /* kernels that split rows over a subgroup's lanes (the fused attention's
                                               SUBGROUP variant): shuffles, and size control so that their
                                               pipelines get full subgroups of the size their split assumes */
    bool texel_reads;                       /* CPU kernels read their hot-loop operands with texelFetch (llvmpipe
                                               gathers those in SIMD registers; an SSBO load there is a per-lane
                                               scalar loop, ~20x slower). Never on GPUs. */
    bool gemm_cpu;                          /* the CPU GEMM can run: subgroups of exactly 8 lanes with shuffles
                                               (shaders/gemm_cpu.comp is one such subgroup): the default size, or
                                               8 requested through size control; with cpu_kernels GEMMs take it */
    bool packed_bindings;                   /* kernels that bind more tensors than the device has storage buffers
                                               per stage (fewer than VKVIT_POLICY_KERNEL_BUFFERS: the Vulkan minimum
                                               of 4, older Mali / Adreno drivers) take their packed variant: the arena
                                               and the weights as two storage buffers (shaders/packed.glsl). Then no
                                               CPU GEMM or cooperative-matrix kernel (they have none) */
    bool gemm_cpu_unrolled;                 /* texel_reads and the build's spirv-opt unrolled CPU GEMM variants
                                               (VKVIT_HAVE_GEMM_CPU_UNROLLED), not disabled (VKVIT_DISABLE_UNROLLED) */
    vkvit__coopmat_kernel coopmat;          /* fp16-math GEMMs on cooperative matrices: tentative until the first-use
                                               self-check (coopmat_guard.c) has compared it with double loops, NONE
                                               after a failed one */
    bool coopmat_checked;                   /* the self-check ran */
    uint32_t self_checked;                  /* the problems of the first-use self-check of the other variants that
                                               ran (self_check.c), one bit each */
    uint32_t self_check_failed;             /* the variants it switched off (vkvit__self_check_variant bits) */
    uint32_t coopmat_warp;                  /* the subgroup size one warp of the kernel is: the size its shape needs
                                               (Intel's M = 8 shapes: 8 or 16), else 32 where size control offers it
                                               (RDNA3's wave32 beside its default 64), else the default size;
                                               requested with full subgroups where size control exists */
    uint32_t coopmat_shape;                 /* the fragments' shape, one VKVIT_COOPMAT_SHAPE_* bit (vk/facts.h): the
                                               best the device lists (KHR), 16x16x16 (NV), or for the emulated kernel
                                               the best it implements that the device profile lists */
    uint32_t coopmat_tile;                  /* VKVIT_COOPMAT_TILE: that tile wherever it fits; 0 the size-based pick */
    uint32_t attention;                     /* VKVIT_ATTENTION (env.h values): 0 the size- and device-based path */
    char attention_text[32];                /* its text, for the sentence that refuses a bad one */
    /* Optional device features vkvit enables for these choices on a device it creates. */
    bool enable_khr_coopmat;                /* VK_KHR_cooperative_matrix: only where its kernel is the choice */
    bool enable_nv2_coopmat;                /* VK_NV_cooperative_matrix2 (+ KHR's): where the NV2 kernel is */
    bool enable_huge_pages;                 /* VK_EXT_external_memory_host for CPU devices' large buffers */
} vkvit__policy;

/* The most storage buffers a normal kernel variant binds (src/ops/op_util.h checks it against VKVIT_MAX_BINDINGS). */
#define VKVIT_POLICY_KERNEL_BUFFERS 8u

/* Turns packed bindings on in `p`, with what follows from them (policy.packed_bindings): choose_policy's rule for
 * devices of few storage buffers, and the op tests' way to run the packed variants on any device. */
void vkvit__policy_pack_bindings(vkvit__policy *p);

/* Test-only switches that change what kernels compute, kept out of the policy. Set by tests through the ctx
 * (ctx->test_hooks) before a session is built. */
typedef struct vkvit__test_hooks {
    bool coopmat_corrupt;                   /* the cooperative-matrix kernel adds 1 to every output (proves that the
                                               self-check and the tests catch a wrong kernel) */
    uint32_t self_check_corrupt;            /* a mask of vkvit__self_check_variant: the self-check's problems come out
                                               wrong (every output + 1) while such a variant runs them (proves
                                               each fallback) */
    uint64_t heap_budget;                   /* nonzero: every memory heap's budget at most this many bytes (what a
                                               nearly full device reports: proves the budget refusal) */
} vkvit__test_hooks;

/* The policy for a device with these facts. `facts` before device creation gives the features to enable; after it
 * (narrowed to what is enabled), the ctx's policy. Pure: reads only its arguments. */
void vkvit__policy_choose(const vkvit__caps *facts, const vkvit__env *env, vkvit__policy_request req,
                          vkvit__policy *out);

/* The comma-separated workaround text of vkvit_device_info (what vkvit does not use, and why) into out[cap]. */
void vkvit__policy_describe(const vkvit__policy *p, const vkvit__caps *facts, const vkvit__env *env,
                            vkvit__policy_request req, char *out, size_t cap);

/* The public *_in_use fields of vkvit_device_info from a policy. */
void vkvit__policy_to_info(const vkvit__policy *p, vkvit_device_info *info);

#endif /* VKVIT_POLICY_POLICY_H */
