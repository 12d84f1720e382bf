// SPDX-License-Identifier: Apache-2.0
/* The fused attention kernel (see attention.h): config resolution (tiles per device), pipeline creation, dispatch.
 * The graph nodes of both paths are in attention_node.c. */
#include "ops/attention.h"

#include <math.h>

#define ATTN_MAX_DK 256u

float vkvit__attention_default_scale(const vkvit__attention_config *cfg) {
    if (cfg->mode == VKVIT_ATTENTION_GENERIC && cfg->qk_norm) return 1.0f;
    return (float)(1.0 / sqrt((double)cfg->dk));
}

/* The subgroup size the SUBGROUP variant's row split is made for: the device's default, which its pipeline then
 * requires, with full subgroups (policy.subgroup_shuffles needs size control): a driver that would otherwise run
 * it narrower than the size it reports (Intel's) cannot leave rows out. */
static uint32_t split_subgroup_size(const vkvit_ctx *ctx) { return ctx->caps.subgroup_size ? ctx->caps.subgroup_size : 1; }

static bool is_pow2(uint32_t x) { return x && !(x & (x - 1)); }

/* sh_a holds max(bk, bq) rows (Q tile, K tiles, O tile), sh_v bk rows, of dk floats each. */
static size_t shared_bytes(uint32_t bq, uint32_t bk, uint32_t dk) {
    return ((size_t)VKVIT_MAX(bk, bq) + bk) * dk * sizeof(float);
}

vkvit_result vkvit__attention_resolve(const vkvit_ctx *ctx, const vkvit__attention_config *cfg,
                                      vkvit__attention_config *out) {
    vkvit__attention_config c = *cfg;
    const uint32_t dk = c.dk;
    if (c.mode != VKVIT_ATTENTION_QKNORM_ROPE && c.mode != VKVIT_ATTENTION_GENERIC)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "attention: unknown mode %d", (int)c.mode);
    if (dk < 4 || dk % 4 || dk > ATTN_MAX_DK)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "attention: dk %u must be a multiple of 4 in [4, %u]", dk,
                            ATTN_MAX_DK);
    if (c.rope == VKVIT_ROPE_SPLIT_HALF) {
        if (!c.rope_axes) c.rope_axes = 2;
        if (c.rope_axes > 3 || dk % (2 * c.rope_axes))
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                                "attention: split_half RoPE over %u axes (1 to 3) needs dk (%u) to be a multiple "
                                "of %u",
                                c.rope_axes, dk, 2 * c.rope_axes);
    } else if (c.rope == VKVIT_ROPE_NONE || c.rope == VKVIT_ROPE_ADJACENT) {
        c.rope_axes = c.rope_axes ? c.rope_axes : 2; /* unused by the shader; keep one value per config */
    } else {
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "attention: unknown rope pairing %d", (int)c.rope);
    }

    const bool cpu = ctx->policy.cpu_kernels;
    const bool shuffle = ctx->policy.subgroup_shuffles;
    const uint32_t sg = split_subgroup_size(ctx);
    const uint32_t max_shared = ctx->caps.max_shared_memory ? ctx->caps.max_shared_memory : 16384;

    /* CPU devices (llvmpipe) execute every shared-memory load as a loop over the 8 SIMD lanes, so there each K/V
     * value is loaded once per SIMD vector (tpr 1: the addresses are uniform across it) and used for rpi rows per
     * lane: 4 rows up to dk 64, 2 at dk 128 (the unrolled q / accumulator registers, rpi * dk floats each, set
     * LLVM's compile time: about 0.5 to 1.5 s per pipeline this way, several seconds with twice as many). One key
     * per softmax chunk (kc 1) keeps the unrolled body small; bq 32 makes a workgroup one SIMD vector of 8
     * invocations, so a barrier is a single coroutine switch. GPUs: tpr 4..8 invocations per row (about 16
     * channels each, when subgroup shuffles exist), one row per invocation, chunks of 8 keys, bq 32. */
    if (!c.tpr) {
        c.tpr = 1;
        if (!cpu && shuffle)
            while (c.tpr < 8 && c.tpr * 2 <= sg && (dk / 4) % (c.tpr * 2) == 0 && dk / (c.tpr * 2) >= 16) c.tpr *= 2;
    }
    if (!c.rpi) c.rpi = cpu ? VKVIT_MAX(1u, VKVIT_MIN(4u, 256u / dk)) : 1;
    if (!c.bq) c.bq = 32;
    if (!c.kc) c.kc = cpu ? 1 : 8;
    if (!c.bk) {
        /* As many keys per tile as shared memory allows, up to 64 (fewer barriers). */
        c.bk = 64;
        while (c.bk > c.kc && shared_bytes(c.bq, c.bk, dk) > max_shared) c.bk -= c.kc;
    }

    if (!is_pow2(c.tpr) || (dk / 4) % c.tpr)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "attention: tpr %u must be a power of two dividing dk/4 (dk %u)", c.tpr, dk);
    if (!c.bq || !c.kc || !c.bk || !c.rpi || c.bk % c.kc || c.bq % c.rpi || c.kc > 64 || c.rpi > 16)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "attention: tiles bq %u, bk %u, kc %u, rpi %u: all positive, bk a multiple of kc, bq a "
                            "multiple of rpi, kc <= 64, rpi <= 16",
                            c.bq, c.bk, c.kc, c.rpi);
    const uint32_t wg = c.bq / c.rpi * c.tpr;
    if (c.tpr > 1 && (!shuffle || c.tpr > sg || wg % sg))
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED,
                            "attention: tpr %u needs subgroup shuffles (%s), tpr <= subgroup size %u and a workgroup "
                            "(bq / rpi * tpr = %u) that is a multiple of it",
                            c.tpr, shuffle ? "present" : "absent", sg, wg);
    if (shared_bytes(c.bq, c.bk, dk) > max_shared)
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "attention: bq %u, bk %u, dk %u need %zu bytes of shared memory, "
                            "the device has %u", c.bq, c.bk, dk, shared_bytes(c.bq, c.bk, dk), max_shared);
    if (wg > ctx->caps.max_workgroup_invocations)
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "attention: workgroup of %u invocations, the device allows %u",
                            wg, ctx->caps.max_workgroup_invocations);
    *out = c;
    return VKVIT_OK;
}

vkvit_result vkvit__attention_kernel_desc(const vkvit_ctx *ctx, const vkvit__attention_config *cfg, const char *label,
                                          vkvit__kernel_desc *out) {
    vkvit__attention_config c = {0};
    vkvit_result res = vkvit__attention_resolve(ctx, cfg, &c);
    if (res != VKVIT_OK) return vkvit__error_prefix(res, "kernel '%s'", label ? label : "attention");
    *out = (vkvit__kernel_desc){
        .shader = c.tpr > 1 ? VKVIT_SHADER_ATTENTION_F32_F32_SUBGROUP : VKVIT_SHADER_ATTENTION_F32_F32,
        .n_buffers = 6,
        .push_size = sizeof(vkvit__attention_push),
        .full_subgroups = c.tpr > 1,
        .subgroup_size = c.tpr > 1 ? split_subgroup_size(ctx) : 0,
        .n_spec = 12,
        .spec = {c.dk, c.bq, c.bk, c.kc, c.tpr, c.bq / c.rpi * c.tpr, (uint32_t)c.mode, c.qk_norm, (uint32_t)c.rope,
                 c.rope_axes, c.causal, c.rpi},
        .label = label,
    };
    return VKVIT_OK;
}

vkvit_result vkvit__attention_kernel_create(vkvit_ctx *ctx, const vkvit__attention_config *cfg, const char *label,
                                            vkvit__kernel *out) {
    vkvit__kernel_desc d;
    vkvit_result res = vkvit__attention_kernel_desc(ctx, cfg, label, &d);
    if (res != VKVIT_OK) {
        *out = (vkvit__kernel){0};
        return res;
    }
    return vkvit__kernel_create(ctx, &d, out);
}

void vkvit__attention_groups(const vkvit_ctx *ctx, const vkvit__attention_config *cfg,
                             const vkvit__attention_push *push, uint32_t n_heads, uint32_t batch, uint32_t groups[3]) {
    vkvit__attention_config c = {0};
    vkvit_result res = vkvit__attention_resolve(ctx, cfg, &c);
    VKVIT_ASSERT(res == VKVIT_OK); /* a kernel was created from this cfg */
    (void)res;
    VKVIT_ASSERT(push->Tq >= 1 && push->Tkv >= 1);
    groups[0] = VKVIT_CEIL_DIV(push->Tq, c.bq);
    groups[1] = n_heads;
    groups[2] = batch;
}

void vkvit__attention_record(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__kernel *k,
                             const vkvit__attention_config *cfg, VkDescriptorSet set,
                             const vkvit__attention_push *push, uint32_t n_heads, uint32_t batch) {
    uint32_t groups[3];
    vkvit__attention_groups(ctx, cfg, push, n_heads, batch, groups);
    vkvit__cmd_dispatch(ctx, cmd, k, set, push, groups[0], groups[1], groups[2]);
}
