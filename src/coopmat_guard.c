/* The first-use self-check of the cooperative-matrix GEMM: see coopmat_guard.h. */
#include "coopmat_guard.h"

#include "vk/vk.h"

#include <stdio.h>

void vkvit__coopmat_guard(vkvit_ctx *ctx) {
    vkvit__caps *c = &ctx->caps;
    if (!c->cooperative_matrix_in_use || c->coopmat_checked) return;
    c->coopmat_checked = true; /* before the runs: vkvit_bench_gemm calls this too */
    /* M, N, K and the tile each runs on (imposed as VKVIT_COOPMAT_TILE would, where it fits the device): odd edges of
     * the 32 x 32 tile (vec4 and scalar loads; several of its 128-k steps in the third), then partial 64 x 64 and
     * 128 x 128 tiles over two k-steps */
    static const uint32_t shapes[][4] = {
        {70, 72, 80, 32}, {33, 65, 30, 32}, {40, 48, 300, 32}, {520, 1040, 40, 64}, {1040, 2000, 48, 128},
    };
    const uint32_t user_tile = c->coopmat_tile;
    char why[200] = "";
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && !why[0]; i++) {
        const vkvit_gemm_bench_desc d = {.m = shapes[i][0], .n = shapes[i][1], .k = shapes[i][2], .repeat = 1,
                                         .seed = 20261125u + (uint32_t)i, .precision = VKVIT_PRECISION_FP16_MATH};
        vkvit_gemm_bench_result r;
        c->coopmat_tile = shapes[i][3];
        const vkvit_result res = vkvit_bench_gemm(ctx, &d, &r);
        c->coopmat_tile = user_tile;
        if (res != VKVIT_OK)
            snprintf(why, sizeof why, "%ux%ux%u did not run: %s", d.m, d.n, d.k, vkvit_last_error());
        else if (r.mismatches)
            snprintf(why, sizeof why, "%ux%ux%u: %llu of %llu outputs wrong, worst %.3g x sum|ab|", d.m, d.n, d.k,
                     (unsigned long long)r.mismatches, (unsigned long long)r.checked, r.max_error);
    }
    if (!why[0]) return;
    c->cooperative_matrix_in_use = c->coopmat_khr = false;
    ctx->info.cooperative_matrix_in_use = ctx->info.cooperative_matrix_khr_kernel = 0;
    char line[320];
    snprintf(line, sizeof line, "cooperative matrix failed its self-check (%s): fp16-math GEMMs use the tiled kernel",
             why);
    vkvit__ctx_add_workaround(ctx, line);
    vkvit__ctx_log(ctx, VKVIT_LOG_WARNING, "%s", line);
}
