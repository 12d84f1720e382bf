/* Tile choice and dispatch geometry for each shader family (see kernels.h). */
#include "vk/kernels.h"

vkvit__gemm_config vkvit__gemm_pick(const vkvit_ctx *ctx, uint32_t M, uint32_t N, uint32_t K) {
    (void)K;
    /* One configuration for now; the per-device table grows with measurements (tools/bench, `vkvit bench gemm`). */
    vkvit__gemm_config c = {.bm = 64, .bn = 64, .bk = 16, .tm = 4, .tn = 4};
    (void)ctx;
    (void)M;
    (void)N;
    return c;
}

vkvit_result vkvit__gemm_kernel_create(vkvit_ctx *ctx, const vkvit__gemm_config *cfg, bool bias, const char *label,
                                       vkvit__kernel *out) {
    vkvit__kernel_desc d = {
        .shader = VKVIT_SHADER_GEMM_F32_F32,
        .n_buffers = 4,
        .push_size = sizeof(vkvit__gemm_push),
        .n_spec = 7,
        .spec = {cfg->bm, cfg->bn, cfg->bk, cfg->tm, cfg->tn, bias, (cfg->bm / cfg->tm) * (cfg->bn / cfg->tn)},
        .label = label,
    };
    return vkvit__kernel_create(ctx, &d, out);
}

void vkvit__gemm_record(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__kernel *k, const vkvit__gemm_config *cfg,
                        VkDescriptorSet set, const vkvit__gemm_push *push, uint32_t batch) {
    vkvit__cmd_dispatch(ctx, cmd, k, set, push, VKVIT_CEIL_DIV(push->N, cfg->bn), VKVIT_CEIL_DIV(push->M, cfg->bm),
                        batch);
}

vkvit_result vkvit__add_kernel_create(vkvit_ctx *ctx, const char *label, vkvit__kernel *out) {
    vkvit__kernel_desc d = {
        .shader = VKVIT_SHADER_ADD_F32_F32,
        .n_buffers = 3,
        .push_size = sizeof(vkvit__add_push),
        .label = label,
    };
    return vkvit__kernel_create(ctx, &d, out);
}

void vkvit__add_record(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__kernel *k, VkDescriptorSet set,
                       const vkvit__add_push *push) {
    uint32_t groups = VKVIT_MIN(VKVIT_CEIL_DIV(push->n, 256u), 65535u);
    vkvit__cmd_dispatch(ctx, cmd, k, set, push, groups ? groups : 1, 1, 1);
}
