// SPDX-License-Identifier: Apache-2.0
/* The first-use self-check of the cooperative-matrix GEMM (src/coopmat_guard.c). */
#ifndef VKVIT_COOPMAT_GUARD_H
#define VKVIT_COOPMAT_GUARD_H

#include "common.h"

/* Drivers ship cooperative-matrix bugs, so before the first fp16-math GEMM of a ctx runs on cooperative matrices
 * (policy.coopmat), four random problems go through it and are compared with double-precision
 * loops: one on the vec4 load path with partial tiles (70 x 72 x 80), one on the scalar path (33 x 65 x 30), both
 * on the 32 x 32 tile, and two large enough for the 64 x 64 (520 x 1040 x 40) and 128 x 128 (1040 x 2000 x 48)
 * tiles, at the tolerance of fp16 arithmetic (vkvit_bench_gemm; up to 4096 sampled outputs each). On a mismatch, or when the kernel cannot be created or run,
 * cooperative matrices are switched off for the ctx (policy.coopmat and vkvit_device_info.cooperative_matrix_in_use), the
 * reason joins info.workarounds and goes to the log callback as one warning, and the fp16-math GEMMs use the tiled
 * kernels. Runs once per ctx (policy.coopmat_checked); a no-op where cooperative matrices are not in use. Needs the
 * whole ctx, like session creation, which calls it. Never fails: its verdict is the policy's coopmat. */
void vkvit__coopmat_guard(vkvit_ctx *ctx);

/* vkvit_bench_gemm without the self-check and its once-per-ctx bookkeeping (src/bench.c): one GEMM of `desc` (its
 * kernel and tile as given) checked against double loops. The self-check runs its problems through it. */
vkvit_result vkvit__gemm_bench_run(vkvit_ctx *ctx, const vkvit_gemm_bench_desc *desc, vkvit_gemm_bench_result *out);

#endif /* VKVIT_COOPMAT_GUARD_H */
