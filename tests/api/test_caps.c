// SPDX-License-Identifier: Apache-2.0
/* The device's facts (vkvit__caps, src/vk/facts.h) and the kernel policy on them (vkvit__policy,
 * src/policy/policy.h): filled once at ctx creation, mirrored in vkvit_device_info, and the environment overrides VKVIT_DISABLE_SUBGROUP / VKVIT_DISABLE_COOPMAT /
 * VKVIT_DISABLE_F16 / VKVIT_DISABLE_TEXEL switch the matching feature off and say so in the workarounds string; VKVIT_ATTENTION is read
 * there too (policy.attention), and a value other than fused / gemm fails the attention op with a sentence.
 * Also: a push-constant mirror of the wrong size is refused at pipeline creation, and CPU devices bind large buffers
 * to huge-page host memory of vkvit's own unless VKVIT_DISABLE_HUGE_PAGES=1. */
#include "ops/attention.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void caps_mirror_device_info(void) {
    unsetenv("VKVIT_COOPMAT_EMULATE");
    unsetenv("VKVIT_DISABLE_TEXEL");
    unsetenv("VKVIT_DISABLE_SUBGROUP");
    unsetenv("VKVIT_DISABLE_COOPMAT");
    unsetenv("VKVIT_DISABLE_F16");
    vkvit_ctx *ctx = vt_ctx();
    const vkvit__caps *c = &ctx->caps;
    const vkvit__policy *p = &ctx->policy;
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    CHECK(p->cpu_kernels == c->cpu_device, "cpu_kernels %d on a device whose cpu_device is %d", p->cpu_kernels,
          c->cpu_device);
    CHECK(c->subgroup_arithmetic == (info.subgroup_arithmetic != 0), "subgroup_arithmetic");
    CHECK(p->subgroup_reductions == c->subgroup_arithmetic && info.subgroup_in_use == p->subgroup_reductions,
          "subgroup_in_use %d (info %d) with arithmetic %d and no override", p->subgroup_reductions, info.subgroup_in_use,
          c->subgroup_arithmetic);
    CHECK(p->fp16 == (info.fp16_in_use != 0) && c->fp16_storage == (info.fp16_storage != 0) &&
              c->fp16_math == (info.fp16_arithmetic != 0),
          "fp16 caps disagree with the device info");
    CHECK(c->subgroup_size == info.subgroup_size && c->max_shared_memory == info.max_shared_memory &&
              c->max_workgroup_invocations == info.max_workgroup_invocations &&
              c->max_storage_buffer_range == info.max_storage_buffer_range,
          "limits disagree with the device info");
    CHECK(c->cooperative_matrix_nv == (info.cooperative_matrix_nv != 0) &&
              c->cooperative_matrix_khr == (info.cooperative_matrix != 0),
          "cooperative-matrix presence disagrees with the device info");
    CHECK((p->coopmat != VKVIT_COOPMAT_NONE) == (info.cooperative_matrix_in_use != 0), "cooperative_matrix_in_use %d, "
          "info %d", (p->coopmat != VKVIT_COOPMAT_NONE), info.cooperative_matrix_in_use);
    /* Without VKVIT_COOPMAT_EMULATE only the NV or the KHR kernel can be in use: on a device listing its shape, the
     * KHR one only where NV's cannot run or VKVIT_COOPMAT_KHR=1 asks for it. */
    const bool nv_shape = c->cooperative_matrix_nv && c->coopmat_nv_f16_16x16x16;
    const bool khr_shape = c->cooperative_matrix_khr && c->coopmat_khr_shapes != 0;
    CHECK(!(p->coopmat == VKVIT_COOPMAT_EMULATED) && (!(p->coopmat != VKVIT_COOPMAT_NONE) ||
                                   (c->fp16_math && (p->coopmat == VKVIT_COOPMAT_KHR   ? khr_shape
                                                     : p->coopmat == VKVIT_COOPMAT_NV2 ? c->coopmat2_tensor
                                                                                       : nv_shape))),
          "cooperative matrices in use (emulated %d, KHR %d) on a device without that kernel's shape",
          (p->coopmat == VKVIT_COOPMAT_EMULATED), (p->coopmat == VKVIT_COOPMAT_KHR));
    /* coopmat_khr_enabled: the build has the KHR kernel and the device its extension and features */
    CHECK((p->coopmat == VKVIT_COOPMAT_KHR) == (info.cooperative_matrix_khr_kernel != 0) && (!(p->coopmat == VKVIT_COOPMAT_KHR) || ctx->coopmat_khr_enabled),
          "coopmat_khr %d, info %d, KHR enabled %d", (p->coopmat == VKVIT_COOPMAT_KHR), info.cooperative_matrix_khr_kernel,
          ctx->coopmat_khr_enabled);
    const char *want_khr = getenv("VKVIT_COOPMAT_KHR");
    if ((p->coopmat != VKVIT_COOPMAT_NONE) && khr_shape && ctx->coopmat_khr_enabled && want_khr && !strcmp(want_khr, "1"))
        CHECK((p->coopmat == VKVIT_COOPMAT_KHR), "VKVIT_COOPMAT_KHR=1 on a device listing the KHR shape, yet the NV kernel is in use");
    CHECK(p->texel_reads == (info.texel_reads_in_use != 0), "texel_reads %d, info %d", p->texel_reads,
          info.texel_reads_in_use);
    CHECK(!p->texel_reads || c->cpu_device, "texel reads chosen on a GPU");
    CHECK(p->gemm_cpu_unrolled == (VKVIT_HAVE_GEMM_CPU_UNROLLED && p->texel_reads),
          "gemm_cpu_unrolled %d (built with the variants: %d, texel reads %d)", p->gemm_cpu_unrolled,
          VKVIT_HAVE_GEMM_CPU_UNROLLED, p->texel_reads);
    if (info.driver_name[0] && strstr(info.driver_name, "llvmpipe"))
        CHECK(p->texel_reads, "lavapipe (128 M texels, RGBA32F/RGBA16F texel buffers) should read through texels");
    CHECK(!ctx->env.disable_subgroup && !ctx->env.disable_coopmat && !ctx->env.disable_f16, "nothing was disabled");
    CHECK(!strstr(info.workarounds, "by request"), "workarounds: %s", info.workarounds);
    /* VK_NV_cooperative_matrix2's facts: each feature only where the extension is offered, the tensor-layout GEMM's
     * set only with flexible dimensions and a usable KHR feature (the extension builds on it). */
    CHECK(c->cooperative_matrix2_nv || (!c->coopmat2_tensor && !c->coopmat2_flexible && !c->coopmat2_workgroup_scope),
          "cooperative-matrix-2 features without VK_NV_cooperative_matrix2");
    CHECK((p->coopmat == VKVIT_COOPMAT_NV2) == (getenv("VKVIT_COOPMAT_NV2") && c->coopmat2_tensor),
          "NV2 kernel %d with VKVIT_COOPMAT_NV2 %s and tensor-layout facts %d", p->coopmat == VKVIT_COOPMAT_NV2,
          getenv("VKVIT_COOPMAT_NV2") ? getenv("VKVIT_COOPMAT_NV2") : "unset", c->coopmat2_tensor);
    CHECK(!c->coopmat2_tensor || (c->coopmat2_flexible && c->coopmat_khr_usable && ctx->coopmat_nv2_enabled),
          "coopmat2_tensor without flexible dimensions (%d) or a usable KHR feature (%d)", c->coopmat2_flexible,
          c->coopmat_khr_usable);
    printf("device %s: subgroup %u, arithmetic %d, in use %d; coopmat nv %d khr %d; NV coopmat2 %d (tensor addressing "
           "%d, flexible dimensions %d, workgroup scope %d); workarounds: %s\n", info.name, c->subgroup_size,
           c->subgroup_arithmetic, p->subgroup_reductions, c->cooperative_matrix_nv, c->cooperative_matrix_khr,
           c->cooperative_matrix2_nv, c->coopmat2_tensor, c->coopmat2_flexible, c->coopmat2_workgroup_scope,
           info.workarounds);
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "validation messages: %s", ctx->validation_log[0]);
    vkvit_ctx_destroy(ctx);
}

static void overrides_switch_features_off(void) {
    setenv("VKVIT_DISABLE_TEXEL", "1", 1);
    setenv("VKVIT_DISABLE_SUBGROUP", "1", 1);
    setenv("VKVIT_DISABLE_COOPMAT", "1", 1);
    setenv("VKVIT_DISABLE_F16", "1", 1);
    setenv("VKVIT_COOPMAT_EMULATE", "1", 1); /* overridden by VKVIT_DISABLE_COOPMAT (and by fp16 being off) */
    vkvit_ctx *ctx = vt_ctx();
    const vkvit__caps *c = &ctx->caps;
    const vkvit__policy *p = &ctx->policy;
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    CHECK(ctx->env.disable_subgroup && !p->subgroup_reductions && !info.subgroup_in_use, "VKVIT_DISABLE_SUBGROUP=1 ignored");
    CHECK(ctx->env.disable_coopmat && !(p->coopmat != VKVIT_COOPMAT_NONE) && !info.cooperative_matrix_in_use,
          "VKVIT_DISABLE_COOPMAT=1 ignored");
    CHECK(ctx->env.disable_f16 && !p->fp16 && !info.fp16_in_use, "VKVIT_DISABLE_F16=1 ignored");
    CHECK(ctx->env.disable_texel && !p->texel_reads && !info.texel_reads_in_use, "VKVIT_DISABLE_TEXEL=1 ignored");
    CHECK(!p->gemm_cpu_unrolled, "unrolled CPU GEMM variants chosen without texel reads");
    CHECK(!c->cpu_device || strstr(info.workarounds, "texel-buffer operand reads disabled by request"),
          "workarounds do not say texel reads were disabled: %s", info.workarounds);
    CHECK(strstr(info.workarounds, "subgroup reductions disabled by request") &&
              strstr(info.workarounds, "cooperative matrix disabled by request") &&
              strstr(info.workarounds, "fp16 disabled by request"),
          "workarounds do not say why: %s", info.workarounds);
    /* The device's own support is still reported as it is. */
    CHECK(c->subgroup_arithmetic == (info.subgroup_arithmetic != 0), "subgroup_arithmetic changed by the override");
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "validation messages: %s", ctx->validation_log[0]);
    vkvit_ctx_destroy(ctx);

    /* vkvit_enumerate_devices (`vkvit info`) shows the same. */
    vkvit_device_info list[8];
    uint32_t n = 0;
    MUST(vkvit_enumerate_devices(list, 8, &n));
    for (uint32_t i = 0; i < n && i < 8; i++)
        CHECK(!list[i].subgroup_in_use && !list[i].cooperative_matrix_in_use &&
                  strstr(list[i].workarounds, "subgroup reductions disabled by request"),
              "device %u (%s): the override is not reflected: %s", i, list[i].name, list[i].workarounds);

    /* "0" means not disabled. */
    setenv("VKVIT_DISABLE_SUBGROUP", "0", 1);
    ctx = vt_ctx();
    CHECK(!ctx->env.disable_subgroup && ctx->policy.subgroup_reductions == ctx->caps.subgroup_arithmetic,
          "VKVIT_DISABLE_SUBGROUP=0 disabled subgroups");
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "validation messages: %s", ctx->validation_log[0]);
    vkvit_ctx_destroy(ctx);
    unsetenv("VKVIT_DISABLE_SUBGROUP");
    unsetenv("VKVIT_DISABLE_COOPMAT");
    unsetenv("VKVIT_DISABLE_F16");
    unsetenv("VKVIT_DISABLE_TEXEL");
    unsetenv("VKVIT_COOPMAT_EMULATE");

    /* VKVIT_DISABLE_UNROLLED=1: the generic CPU GEMM shader, and `vkvit info` says so where it would have mattered. */
    setenv("VKVIT_DISABLE_UNROLLED", "1", 1);
    ctx = vt_ctx();
    MUST(vkvit_ctx_device_info(ctx, &info));
    CHECK(!ctx->policy.gemm_cpu_unrolled, "VKVIT_DISABLE_UNROLLED=1 ignored");
    CHECK(!ctx->policy.texel_reads || strstr(info.workarounds, "unrolled CPU GEMM variants disabled by request"),
          "workarounds do not say the unrolled variants were disabled: %s", info.workarounds);
    vkvit_ctx_destroy(ctx);
    unsetenv("VKVIT_DISABLE_UNROLLED");
}

static void attention_choice_read_at_ctx_creation(void) {
    static const struct {
        const char *env;
        uint32_t want;
    } cases[] = {{NULL, 0}, {"fused", 1}, {"gemm", 2}, {"bogus", VKVIT_ENV_BAD}};
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases); i++) {
        if (cases[i].env) setenv("VKVIT_ATTENTION", cases[i].env, 1);
        else unsetenv("VKVIT_ATTENTION");
        vkvit_ctx *ctx = vt_ctx();
        unsetenv("VKVIT_ATTENTION"); /* read once: the ctx keeps its choice */
        CHECK(ctx->policy.attention == cases[i].want, "VKVIT_ATTENTION=%s: policy.attention %u, want %u",
              cases[i].env ? cases[i].env : "(unset)", ctx->policy.attention, cases[i].want);
        if (cases[i].want == VKVIT_ENV_BAD) {
            vkvit__graph g;
            vkvit__graph_init(&g, ctx);
            vkvit__rope_attention_op op = {.qkv = VKVIT_NONE, .B = 1, .T = 1, .C = 4, .heads = 1,
                                           .rope = VKVIT_NONE, .qk_norm = VKVIT_NONE};
            uint32_t o = vkvit__op_rope_attention(&g, "attention", &op);
            vkvit_result r = vkvit__graph_error(&g);
            CHECK(o == VKVIT_NONE && r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "'bogus'"),
                  "VKVIT_ATTENTION=bogus: %s: %s", vkvit_result_name(r), vkvit_last_error());
            vkvit__graph_free(&g);
        }
        CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "validation messages: %s", ctx->validation_log[0]);
        vkvit_ctx_destroy(ctx);
    }
}

/* A kernel whose C push-constant mirror does not have its shader's block size is refused with a sentence. */
static void push_mirror_checked_against_shader(void) {
    vkvit_ctx *ctx = vt_ctx();
    const uint32_t block = vkvit__shader_push_size(VKVIT_SHADER_NORM_F32_F32);
    vkvit__kernel k;
    vkvit__kernel_desc d = {.shader = VKVIT_SHADER_NORM_F32_F32, .n_buffers = 4, .push_size = block - 4,
                            .n_spec = 6, .spec = {8, 0, 0, 0, 1, 1}, .label = "short mirror"};
    vkvit_result r = vkvit__kernel_create(ctx, &d, &k);
    CHECK(block == 44 && r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "push-constant block"),
          "norm block %u bytes; a %u-byte mirror: %s: %s", block, block - 4, vkvit_result_name(r), vkvit_last_error());
    d.push_size = block;
    MUST(vkvit__kernel_create(ctx, &d, &k));
    vkvit__kernel_destroy(ctx, &k);
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "validation messages: %s", ctx->validation_log[0]);
    vkvit_ctx_destroy(ctx);
}

/* Whether the mapping that holds `p` carries the huge-page advice (Linux: "hg" in its VmFlags line of
 * /proc/self/smaps); -1 where that cannot be read. */
static int mapping_advised_huge(const void *p) {
#if defined(__linux__)
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int inside = 0, advised = -1;
    while (advised < 0 && fgets(line, sizeof line, f)) {
        unsigned long long begin, end;
        if (sscanf(line, "%llx-%llx ", &begin, &end) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = (uintptr_t)p >= begin && (uintptr_t)p < end;
        else if (inside && strncmp(line, "VmFlags:", 8) == 0)
            advised = strstr(line, " hg") != NULL;
    }
    fclose(f);
    return advised;
#else
    (void)p;
    return -1;
#endif
}

/* CPU devices: a buffer of 4 MiB or more is bound to vkvit's own huge-page host memory (VK_EXT_external_memory_host:
 * lavapipe's device memory is malloc'ed, and advising that would mark the host program's heap), mapped where vkvit
 * mapped it and round-tripping data; a smaller buffer, VKVIT_DISABLE_HUGE_PAGES=1 and GPUs take the driver's memory.
 * Freeing the buffer unmaps the memory. */
static void cpu_buffers_import_huge_pages(void) {
    for (int disabled = 0; disabled < 2; disabled++) {
        if (disabled) setenv("VKVIT_DISABLE_HUGE_PAGES", "1", 1);
        vkvit_ctx *ctx = vt_ctx();
        vkvit_device_info info;
        MUST(vkvit_ctx_device_info(ctx, &info));
        const bool llvmpipe = strstr(info.name, "llvmpipe") != NULL;
#if defined(__linux__)
        CHECK(!llvmpipe || ctx->huge_page_import == !disabled, "device %s, VKVIT_DISABLE_HUGE_PAGES=%d: huge-page import %d",
              info.name, disabled, ctx->huge_page_import);
#endif
        CHECK(!ctx->huge_page_import || (ctx->policy.cpu_kernels && !disabled), "host memory imported on %s (disabled %d)",
              info.name, disabled);
        CHECK(!disabled || strstr(info.workarounds, "huge-page buffer memory disabled by request") ||
                  !ctx->policy.cpu_kernels, "workarounds do not say huge pages were disabled: %s", info.workarounds);

        const VkDeviceSize big = (8u << 20) + 1024, small = 1u << 20;
        vkvit__buffer a, b;
        MUST(vkvit__buffer_create(ctx, big, VKVIT_MEM_DEVICE, "huge-page test", &a));
        MUST(vkvit__buffer_create(ctx, small, VKVIT_MEM_DEVICE, "small test", &b));
        CHECK(!b.host, "a 1 MiB buffer imported host memory");
        if (ctx->huge_page_import) {
            CHECK(a.host && (uintptr_t)a.host % VKVIT_HUGE_PAGE_BYTES == 0 && a.host_size % VKVIT_HUGE_PAGE_BYTES == 0 &&
                      a.host_size >= big && a.mapped == a.host,
                  "imported %p (%zu bytes) mapped at %p", a.host, a.host_size, a.mapped);
            CHECK(mapping_advised_huge(a.host) != 0, "the imported memory is not advised as huge pages");
        } else {
            CHECK(!a.host, "imported host memory without the import enabled");
        }
        uint32_t *data = malloc(big), *back = malloc(big);
        MUST(data && back ? VKVIT_OK : VKVIT_ERROR_OUT_OF_HOST_MEMORY);
        for (size_t i = 0; i < big / 4; i++) data[i] = (uint32_t)(i * 2654435761u);
        MUST(vkvit__buffer_upload(ctx, &a, 0, data, big));
        memset(back, 0, big);
        MUST(vkvit__buffer_download(ctx, &a, 0, back, big));
        CHECK(memcmp(data, back, big) == 0, "the %s buffer did not round-trip", a.host ? "imported" : "allocated");
        free(data);
        free(back);
        void *host = a.host;
        vkvit__buffer_destroy(ctx, &a);
        vkvit__buffer_destroy(ctx, &b);
        CHECK(!host || mapping_advised_huge(host) != 1, "the imported memory stayed mapped after the buffer was freed");
        CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "validation messages: %s", ctx->validation_log[0]);
        vkvit_ctx_destroy(ctx);
    }
    unsetenv("VKVIT_DISABLE_HUGE_PAGES");
}

/* Timestamp differences are taken modulo 2^timestampValidBits (Intel Gen9 has 36): a counter that wraps between two
 * queries still gives the elapsed ticks, and the ctx knows its queue family's bits. */
static void timestamps_wrap_at_valid_bits(void) {
    const uint64_t top36 = ((uint64_t)1 << 36) - 1;
    CHECK(vkvit__ticks_elapsed(top36 - 5, 10, 36) == 16, "36-bit counter wrapped: %llu ticks, want 16",
          (unsigned long long)vkvit__ticks_elapsed(top36 - 5, 10, 36));
    CHECK(vkvit__ticks_elapsed(100, 250, 64) == 150 && vkvit__ticks_elapsed(~(uint64_t)0, 4, 64) == 5,
          "64-bit differences");
    vkvit_ctx *ctx = vt_ctx();
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    CHECK(!info.timestamps || (ctx->timestamp_valid_bits >= 36 && ctx->timestamp_valid_bits <= 64),
          "timestamps on, but the queue family's valid bits read %u", ctx->timestamp_valid_bits);
    vkvit_ctx_destroy(ctx);
}

int main(void) {
    timestamps_wrap_at_valid_bits();
    push_mirror_checked_against_shader();
    cpu_buffers_import_huge_pages();
    caps_mirror_device_info();
    overrides_switch_features_off();
    attention_choice_read_at_ctx_creation();
    return vt_finish(NULL);
}
