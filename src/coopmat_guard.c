// SPDX-License-Identifier: Apache-2.0
/* The first-use self-check of the cooperative-matrix GEMM: see coopmat_guard.h. */
#include "coopmat_guard.h"

#include "ops/gemm.h"
#include "vk/vk.h"

#include <stdio.h>

void vkvit__coopmat_guard(vkvit_ctx *ctx) {
    vkvit__policy *p = &ctx->policy;
    if (p->coopmat == VKVIT_COOPMAT_NONE || p->coopmat_checked) return;
    p->coopmat_checked = true; /* before the runs: vkvit_bench_gemm calls this too */
    /* M, N, K and the tile each runs on (where it fits the device, else the one sessions would take): odd edges of
     * the 32 x 32 tile (vec4 and scalar loads; several of its 128-k steps in the third), then partial 64 x 64 and
     * 128 x 128 tiles over two k-steps */
    static const uint32_t shapes[][4] = {
        {70, 72, 80, 32}, {33, 65, 30, 32}, {40, 48, 300, 32}, {520, 1040, 40, 64}, {1040, 2000, 48, 128},
    };
    const bool emulated = p->coopmat == VKVIT_COOPMAT_EMULATED;
    char why[200] = "";
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && !why[0]; i++) {
        /* each problem on its own tile where that fits the device, else on the tile sessions would pick */
        const uint32_t tile = vkvit__gemm_coopmat_tile_fits(ctx, shapes[i][3], emulated) ? shapes[i][3] : 0;
        const vkvit_gemm_bench_desc d = {.m = shapes[i][0], .n = shapes[i][1], .k = shapes[i][2], .repeat = 1,
                                         .seed = 20261125u + (uint32_t)i, .precision = VKVIT_PRECISION_FP16_MATH,
                                         .kernel = VKVIT_GEMM_KERNEL_COOPMAT, .tile = {.bm = tile, .bn = tile}};
        vkvit_gemm_bench_result r;
        const vkvit_result res = vkvit__gemm_bench_run(ctx, &d, &r);
        if (res != VKVIT_OK)
            snprintf(why, sizeof why, "%ux%ux%u did not run: %s", d.m, d.n, d.k, vkvit_last_error());
        else if (r.mismatches)
            snprintf(why, sizeof why, "%ux%ux%u: %llu of %llu outputs wrong, worst %.3g x sum|ab|", d.m, d.n, d.k,
                     (unsigned long long)r.mismatches, (unsigned long long)r.checked, r.max_error);
    }
    if (!why[0]) return;
    p->coopmat = VKVIT_COOPMAT_NONE;
    ctx->info.cooperative_matrix_in_use = ctx->info.cooperative_matrix_khr_kernel = 0;
    uint32_t fm = 16, fn = 16, fk = 16, lanes = 0;
    vkvit__coopmat_shape_dims(p->coopmat_shape, &fm, &fn, &fk, &lanes);
    const uint32_t warp = emulated ? 32 : p->coopmat_warp; /* emulated warps: 32 invocations (gemm_coopmat.comp) */
    char line[360];
    snprintf(line, sizeof line, "cooperative matrix failed its self-check (%ux%ux%u fragments, warp %u; %s): "
             "fp16-math GEMMs use the tiled kernel", fm, fn, fk, warp, why);
    vkvit__ctx_add_workaround(ctx, line);
    vkvit__ctx_log(ctx, VKVIT_LOG_WARNING, "%s", line);
}
