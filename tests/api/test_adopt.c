// SPDX-License-Identifier: Apache-2.0
/* Adopt mode: a "host application" creates its own instance (validation + synchronization validation on) and
 * device, hands them to vkvit, vkvit runs a GEMM on the host's queue, the ctx is destroyed, and the host device
 * must still work afterwards (vkvit destroyed nothing of the host's). */
#include "host_util.h"
#include "ops/gemm.h"

static void adopt_runs_gemm(host *h) {
    VkPhysicalDeviceFeatures2 enabled = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    vkvit_host_device hd = {
        .instance = h->instance, .physical_device = h->pd, .device = h->device,
        .queue_family_index = h->family, .queue = h->queue, .get_instance_proc_addr = vkGetInstanceProcAddr,
        .api_version = VK_API_VERSION_1_2, .enabled_features = &enabled,
    };
    vkvit_ctx *ctx = NULL;
    vkvit_ctx_desc desc = {.label = "adopted", .host = &hd, .pipeline_cache_dir = "", .log = vt_log};
    MUST(vkvit_ctx_create(&desc, &ctx));
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    CHECK(info.adopted == 1, "info.adopted = %d", info.adopted);
    CHECK(info.fp16_storage == 0, "fp16 storage reported although the host did not enable it");

    /* A small GEMM on the host's queue: 33x17x9 with bias. */
    enum { M = 33, N = 17, K = 9 };
    float a[M * K], b[N * K], bias[N], d[M * N];
    double want[M * N];
    vt_fill_rand(a, M * K);
    vt_fill_rand(b, N * K);
    vt_fill_rand(bias, N);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = bias[n];
            for (int k = 0; k < K; k++) s += (double)a[m * K + k] * b[n * K + k];
            want[m * N + n] = s;
        }
    vkvit__buffer ba, bb, bbias, bd;
    MUST(vkvit__buffer_create(ctx, sizeof a, VKVIT_MEM_DEVICE, "A", &ba));
    MUST(vkvit__buffer_create(ctx, sizeof b, VKVIT_MEM_DEVICE, "B", &bb));
    MUST(vkvit__buffer_create(ctx, sizeof bias, VKVIT_MEM_DEVICE, "bias", &bbias));
    MUST(vkvit__buffer_create(ctx, sizeof d, VKVIT_MEM_DEVICE, "D", &bd));
    MUST(vkvit__buffer_upload(ctx, &ba, 0, a, sizeof a));
    MUST(vkvit__buffer_upload(ctx, &bb, 0, b, sizeof b));
    MUST(vkvit__buffer_upload(ctx, &bbias, 0, bias, sizeof bias));
    MUST(vkvit__buffer_fill(ctx, &bd, 0, sizeof d, VT_NAN_BITS));
    vkvit__gemm_config cfg = vkvit__gemm_pick(ctx, M, N, K);
    vkvit__kernel k;
    MUST(vkvit__gemm_kernel_create(ctx, &cfg, &(vkvit__gemm_epilogue){.bias = true}, "gemm", &k));
    vkvit__descriptors pool;
    VkDescriptorSet set;
    MUST(vkvit__descriptors_create(ctx, 1, &pool));
    vkvit__binding binds[6] = {{&ba, 0, 0}, {&bb, 0, 0}, {&bbias, 0, 0}, {&bd, 0, 0}, {&bbias, 0, 0}, {&bd, 0, 0}};
    MUST(vkvit__descriptor_set_create(ctx, &pool, &k, binds, &set));
    VkCommandBuffer cmd;
    MUST(vkvit__cmd_begin(ctx, &cmd));
    vkvit__gemm_push push = {.M = M, .N = N, .K = K, .stride_a = K, .stride_b = K, .stride_d = N};
    vkvit__gemm_record(ctx, cmd, &k, &cfg, set, &push, 1);
    MUST(vkvit__cmd_submit_wait(ctx, cmd));
    MUST(vkvit__buffer_download(ctx, &bd, 0, d, sizeof d));
    double err = vt_max_rel_err(d, want, M * N, NULL);
    printf("adopted-device gemm 33x17x9: max rel err %.3g\n", err);
    CHECK(err <= 1e-5, "max rel err %.3g", err);

    vkvit__descriptors_destroy(ctx, &pool);
    vkvit__kernel_destroy(ctx, &k);
    vkvit__buffer_destroy(ctx, &ba);
    vkvit__buffer_destroy(ctx, &bb);
    vkvit__buffer_destroy(ctx, &bbias);
    vkvit__buffer_destroy(ctx, &bd);
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "vkvit counted messages in adopt mode (it has no messenger)");
    vkvit_ctx_destroy(ctx);
}

static void adopt_rejects_incomplete_host(host *h) {
    vkvit_host_device hd = {.instance = h->instance, .physical_device = h->pd, .device = h->device,
                            .queue_family_index = h->family, .queue = VK_NULL_HANDLE,
                            .get_instance_proc_addr = vkGetInstanceProcAddr};
    vkvit_ctx *ctx = (vkvit_ctx *)1;
    vkvit_result r = vkvit_ctx_create(&(vkvit_ctx_desc){.host = &hd}, &ctx);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT, "got %s", vkvit_result_name(r));
    CHECK(ctx == NULL, "*out must be NULL on failure");
    CHECK(strstr(vkvit_last_error(), "host.queue") != NULL, "message: %s", vkvit_last_error());

    /* A family index the device does not have: refused with the count, nothing created or destroyed on the host's
     * device (the ctx is torn down before vkvit loaded its function table). */
    hd.queue = h->queue;
    hd.queue_family_index = 1000;
    ctx = (vkvit_ctx *)1;
    r = vkvit_ctx_create(&(vkvit_ctx_desc){.host = &hd}, &ctx);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && ctx == NULL, "family 1000: got %s", vkvit_result_name(r));
    CHECK(strstr(vkvit_last_error(), "host.queue_family_index 1000 is not a queue family") != NULL, "message: %s",
          vkvit_last_error());
}

/* The CPU kernels' texel path stores 64-bit words, so an adopted CPU device keeps it only where the host enabled
 * shaderInt64: off (with the reason in `workarounds`) on the host device, which enabled no features, and on (on
 * lavapipe, whose texel buffers qualify) on a second device of the same instance that enables it. */
static void adopt_texel_path_needs_int64(host *h) {
    vkvit_ctx *ctx = host_adopt(h, "no int64");
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    const bool cpu = ctx->policy.cpu_kernels;
    CHECK(!info.texel_reads_in_use && !ctx->policy.texel_reads, "texel path on although the host enabled no shaderInt64");
    CHECK(!cpu || strstr(info.workarounds, "shaderInt64"), "workarounds do not say why texel reads are off: %s",
          info.workarounds);
    vkvit_ctx_destroy(ctx);

    VkPhysicalDeviceFeatures has;
    vkGetPhysicalDeviceFeatures(h->pd, &has);
    const VkPhysicalDeviceFeatures2 enabled = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                               .features = {.shaderInt64 = VK_TRUE}};
    host t;
    if (!has.shaderInt64 || !host_device_with(h, &enabled, &t)) {
        printf("the device cannot enable shaderInt64: the enabled case is not run\n");
        return;
    }
    ctx = host_adopt_with(&t, &enabled, "int64");
    MUST(vkvit_ctx_device_info(ctx, &info));
    printf("adopted %s device with shaderInt64: texel reads %d\n", cpu ? "CPU" : "GPU", info.texel_reads_in_use);
    CHECK(!strstr(info.workarounds, "shaderInt64"), "workarounds still blame shaderInt64: %s", info.workarounds);
    if (strstr(info.driver_name, "llvmpipe") || strstr(info.name, "llvmpipe"))
        CHECK(info.texel_reads_in_use && ctx->policy.texel_reads, "lavapipe adopted with shaderInt64 lacks texel reads");
    vkvit_ctx_destroy(ctx);
    t.vk.vkDestroyDevice(t.device, NULL);
}

int main(void) {
    host h;
    host_create(&h);
    adopt_runs_gemm(&h);
    adopt_texel_path_needs_int64(&h);
    adopt_rejects_incomplete_host(&h);
    CHECK(host_device_works(&h), "the host device no longer works after vkvit_ctx_destroy");
    host_destroy(&h);
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
