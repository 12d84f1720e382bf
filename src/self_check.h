// SPDX-License-Identifier: Apache-2.0
/* The first-use self-check of the device-sensitive kernel variants the policy chose (src/self_check.c), beside the
 * cooperative-matrix GEMM's own (coopmat_guard.h). Called by session creation with the session's precision. */
#ifndef VKVIT_SELF_CHECK_H
#define VKVIT_SELF_CHECK_H

#include "common.h"

/* The variants checked, as bits (vkvit__test_hooks.self_check_corrupt takes a mask of them). */
typedef enum vkvit__self_check_variant {
    VKVIT_SELF_CHECK_SUBGROUP_REDUCTIONS = 1u << 0, /* policy.subgroup_reductions: the *_subgroup norm statistics */
    VKVIT_SELF_CHECK_TEXEL_READS = 1u << 1,         /* policy.texel_reads: CPU kernels' texelFetch operand reads */
    VKVIT_SELF_CHECK_CPU_GEMM = 1u << 2,            /* policy.gemm_cpu (with cpu_kernels): the 8-lane shuffle GEMM */
    VKVIT_SELF_CHECK_SUBGROUP_ATTENTION = 1u << 3,  /* policy.subgroup_shuffles (GPU kernels): the fused attention
                                                       with rows split over subgroup lanes */
    VKVIT_SELF_CHECK_FP16_GEMM = 1u << 4,           /* policy.fp16: GEMMs on fp16 weights, fp32 arithmetic */
    VKVIT_SELF_CHECK_FP16_MATH = 1u << 5,           /* policy.fp16_math: GEMMs in fp16 arithmetic (the tiled or CPU
                                                       kernel; the cooperative-matrix one is coopmat_guard.c's) */
} vkvit__self_check_variant;

/* Drivers ship subgroup, texel-buffer and fp16 bugs that only some devices show, so before the first session of a
 * ctx is built, one small random problem per variant in use goes through the op builder, planner and recorder a
 * session uses and is compared with a double-precision C reference, at the variant's tolerance:
 *   norm       LayerNorm of 7 rows of 300 channels (not a multiple of any subgroup size), fresh weight and bias:
 *              subgroup reductions, then texel reads;
 *   fp32 GEMM  37 x 70 x 96 (edges of every tile): texel reads, then the CPU GEMM;
 *   attention  causal fused attention, 1 image of 45 tokens, 2 heads of 64 channels (GPU kernels split each row
 *              over 4 lanes there): subgroup shuffles;
 *   fp16 GEMM  the same GEMM on fp16 weights (fp32 sums), then in fp16 arithmetic (cooperative matrices off for it).
 * On a mismatch (or when the problem cannot be built or run) the first suspect variant still on is switched off
 * for the ctx (the policy field and vkvit_device_info's *_in_use) and the problem is run again, until it passes or
 * no suspect is left; each switched-off variant is named in info.workarounds ("... failed its self-check (...):
 * ...") and in one warning to the log callback. Each problem runs once per ctx (policy.self_checked), at the
 * first session that needs it: the fp16 GEMM at the first fp16 or fp16-math session, the fp16-arithmetic one at
 * the first fp16-math session, the others at the first session. Never fails: its verdict is the policy. The test hook vkvit__test_hooks.self_check_corrupt adds 1 to every output of a problem while a
 * variant of the mask runs it, so that tests can prove each fallback. */
void vkvit__self_check(vkvit_ctx *ctx, vkvit_precision precision);

/* Verdicts on disk. Where the ctx has an on-disk pipeline cache (vkvit_ctx_desc.pipeline_cache_dir, by default
 * $VKVIT_CACHE_DIR or ~/.cache/vkvit), each problem's verdict is kept beside it, in
 * self-check-<vendor>-<device>-<driver version>-<pipelineCacheUUID>.txt, so that a later process on the same device,
 * driver and vkvit build takes it instead of compiling and running the problem again (on lavapipe 0.1-0.9 s of every
 * first session). A verdict is taken only under the same key (vkvit__self_check_key: the vkvit version, every
 * kernel's SPIR-V, the device facts the kernels' shapes depend on, the device profile and the policy at ctx
 * creation) and only for the same variants running the problem; a failed variant is switched off again with its
 * sentence, which then names the file. Corrupt, truncated or foreign files are ignored (the problems run); the
 * file is written atomically, best effort. Never with the test hook self_check_corrupt set. */
uint64_t vkvit__self_check_key(const vkvit_ctx *ctx);

#endif /* VKVIT_SELF_CHECK_H */
