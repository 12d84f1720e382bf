// SPDX-License-Identifier: Apache-2.0
/* A ctx from start to finish of its creation: the environment read once (policy/env.c), the Vulkan side (vk/device.h:
 * instance, device choice, logical device or the host's), the device's facts (vk/device_caps.c), the kernel policy
 * on them (policy/policy.c), the one-shot command pool and the pipeline cache. Also vkvit_enumerate_devices, which
 * shows for each device what a ctx would use. */
#include "policy/policy.h"
#include "policy/profiles.h"
#include "self_check.h"
#include "vk/device.h"
#include "vk/device_caps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A test's device profile (VKVIT_DEVICE_PROFILE, policy/profiles.h): the facts and the public info as that device
 * would show them. */
static vkvit_result profile_facts(const vkvit__env *env, vkvit__caps *f, vkvit_device_info *i) {
    const vkvit__device_profile *p = vkvit__profile_find(env->device_profile);
    if (!p) {
        char names[256];
        vkvit__profile_names(names, sizeof names);
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "VKVIT_DEVICE_PROFILE=%s: no such profile (%s)",
                            env->device_profile, names);
    }
    vkvit__profile_clamp(p, f);
    i->fp16_storage = f->fp16_storage;
    i->fp16_arithmetic = f->fp16_math;
    i->subgroup_arithmetic = f->subgroup_arithmetic;
    i->subgroup_size_control = f->subgroup_size_control;
    i->subgroup_size_min = f->subgroup_size_min;
    i->subgroup_size_max = f->subgroup_size_max;
    i->cooperative_matrix = f->cooperative_matrix_khr;
    i->cooperative_matrix_nv = f->cooperative_matrix_nv;
    i->max_shared_memory = f->max_shared_memory;
    i->max_workgroup_invocations = f->max_workgroup_invocations;
    i->max_storage_buffer_range = f->max_storage_buffer_range;
    return VKVIT_OK;
}

/* ... and the limits the graph reads (ctx->limits) too. */
static vkvit_result apply_profile(vkvit_ctx *ctx) {
    vkvit_result res = profile_facts(&ctx->env, &ctx->caps, &ctx->info);
    if (res != VKVIT_OK) return res;
    const vkvit__caps *f = &ctx->caps;
    VkPhysicalDeviceLimits *l = &ctx->limits;
    l->maxComputeSharedMemorySize = f->max_shared_memory;
    l->maxComputeWorkGroupInvocations = f->max_workgroup_invocations;
    for (int d = 0; d < 3; d++) l->maxComputeWorkGroupSize[d] = f->max_workgroup_size[d];
    l->maxPerStageDescriptorStorageBuffers = f->max_storage_buffers_per_stage;
    l->maxStorageBufferRange = (uint32_t)VKVIT_MIN(f->max_storage_buffer_range, 0xffffffffull);
    return VKVIT_OK;
}

vkvit_result vkvit_ctx_create(const vkvit_ctx_desc *desc_in, vkvit_ctx **out) {
    vkvit_result res = VKVIT_OK;
    vkvit__error_clear();
    if (!out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: out is NULL");
    *out = NULL;
    vkvit_ctx_desc desc = desc_in ? *desc_in : (vkvit_ctx_desc){0};
    if (desc.host && (res = vkvit__host_device_check(desc.host)) != VKVIT_OK) return res;
    if ((unsigned)desc.queue_priority > VKVIT_QUEUE_PRIORITY_HIGH)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: queue_priority = %d is not a "
                            "vkvit_queue_priority", (int)desc.queue_priority);
    if (desc.host && desc.queue_priority)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: queue_priority is set but the host's queue "
                            "keeps the priority the host created it with (adopt mode)");

    vkvit_ctx *ctx = calloc(1, sizeof *ctx);
    vkvit__mutex *queue_lock = ctx ? vkvit__mutex_create() : NULL;
    vkvit__mutex *log_lock = ctx ? vkvit__mutex_create() : NULL;
    vkvit__mutex *kernel_lock = ctx ? vkvit__mutex_create() : NULL;
    vkvit__mutex *oneshot_lock = ctx ? vkvit__mutex_create() : NULL;
    if (!queue_lock || !log_lock || !kernel_lock || !oneshot_lock) {
        vkvit__mutex_destroy(queue_lock);
        vkvit__mutex_destroy(log_lock);
        vkvit__mutex_destroy(kernel_lock);
        vkvit__mutex_destroy(oneshot_lock);
        free(ctx);
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_ctx_create: out of host memory");
    }
    ctx->queue_lock = queue_lock;
    ctx->log_lock = log_lock;
    ctx->kernel_lock = kernel_lock;
    ctx->oneshot_lock = oneshot_lock;
    snprintf(ctx->label, sizeof ctx->label, "%s", desc.label ? desc.label : "vkvit ctx");
    ctx->log = desc.log;
    ctx->log_user = desc.log_user;
    vkvit__env_read(&ctx->env); /* the environment, once: every later step reads this snapshot */
    atomic_init(&ctx->validation_messages, 0u);
    atomic_init(&ctx->pipeline_ns, 0u);
    const uint64_t t0 = vkvit__now_ns(); /* phase times for the INFO log: instance, device, pipeline cache */
    double instance_ms = 0, device_ms = 0;
    if (ctx->env.device_profile[0] && !vkvit__profile_find(ctx->env.device_profile)) {
        res = profile_facts(&ctx->env, &ctx->caps, &ctx->info); /* the sentence, before any Vulkan object exists */
        goto fail;
    }

    uint32_t instance_api;
    if (desc.host) {
        const vkvit_host_device *h = desc.host;
        volkInitializeCustom(h->get_instance_proc_addr);
        ctx->instance = h->instance;
        volkLoadInstanceOnly(ctx->instance);
        ctx->physical_device = h->physical_device;
        ctx->device = h->device;
        ctx->queue = h->queue;
        ctx->queue_family = h->queue_family_index;
        ctx->has_debug_utils = vkSetDebugUtilsObjectNameEXT != NULL;
        instance_api = h->api_version ? h->api_version : VK_API_VERSION_1_1;
        ctx->instance_api = instance_api;
    } else {
        const bool validation = desc.validation > 0 || (desc.validation == 0 && ctx->env.validation);
        if ((res = vkvit__instance_create(ctx, validation, &ctx->env)) != VKVIT_OK) goto fail;
        if ((res = vkvit__device_pick(ctx, desc.device ? desc.device : ctx->env.device)) != VKVIT_OK) goto fail;
        instance_api = ctx->instance_api; /* vkvit__instance_create's */
        instance_ms = vkvit__ms_since(t0);
    }

    int validation_on = ctx->info.validation;
    const bool khr_layer_too_old = !desc.host && validation_on && vkvit__layer_spec_version("VK_LAYER_KHRONOS_validation") <
                                                                      VK_MAKE_API_VERSION(0, 1, 3, 255);
    vkvit__query_device(ctx->physical_device, instance_api, khr_layer_too_old, &ctx->info, &ctx->caps);
    const vkvit__policy_request req = {.disable_f16 = desc.disable_f16 != 0, .adopted = desc.host != NULL};
    ctx->info.validation = validation_on;
    if (desc.host && (res = vkvit__host_queue_family_check(ctx, desc.host->queue_family_index)) != VKVIT_OK) goto fail;
    if (ctx->info.api_version < VK_API_VERSION_1_1) {
        res = vkvit__error(VKVIT_ERROR_UNSUPPORTED, "device '%s' supports Vulkan %u.%u; vkvit needs 1.1", ctx->info.name,
                           VK_API_VERSION_MAJOR(ctx->info.api_version), VK_API_VERSION_MINOR(ctx->info.api_version));
        goto fail;
    }
    vkvit__device_read_limits(ctx);

    if (desc.host) {
        vkvit__device_adopt(ctx, desc.host);
    } else {
        /* The policy on the offered facts says which optional features to enable; on the enabled ones, below, it
         * is the ctx's. */
        vkvit__policy offered;
        vkvit__policy_choose(&ctx->caps, &ctx->env, req, &offered);
        const vkvit__device_wants wants = {.khr_coopmat = offered.enable_khr_coopmat,
                                           .nv2_coopmat = offered.enable_nv2_coopmat,
                                           .huge_pages = offered.enable_huge_pages, .int64 = offered.texel_reads,
                                           .queue_priority = (int)desc.queue_priority,
                                           .queue_priority_strict = desc.queue_priority_strict != 0};
        if ((res = vkvit__device_create(ctx, wants)) != VKVIT_OK) goto fail;
        device_ms = vkvit__ms_since(t0) - instance_ms;
    }
    vkvit__caps_narrow(ctx);
    if (ctx->env.device_profile[0] && (res = apply_profile(ctx)) != VKVIT_OK) goto fail;
    /* the heaps as the ctx sees them: the enabled VK_EXT_memory_budget (or none), the profile's heap sizes */
    ctx->info.memory_budget = ctx->caps.memory_budget;
    vkvit__memory_heaps_read(ctx, ctx->info.memory_heaps, &ctx->info.memory_heap_count);
    vkvit__policy_choose(&ctx->caps, &ctx->env, req, &ctx->policy);
    ctx->self_check_key = vkvit__self_check_key(ctx);
    vkvit__policy_to_info(&ctx->policy, &ctx->info);
    vkvit__policy_describe(&ctx->policy, &ctx->caps, &ctx->env, req, ctx->info.workarounds, sizeof ctx->info.workarounds);
    if (desc.host && ctx->caps.cpu_device && !ctx->int64_enabled && !ctx->env.disable_texel)
        vkvit__ctx_add_workaround(ctx, "texel reads off: the host did not enable shaderInt64");
    vkvit__device_note_priority(ctx);
    if ((res = vkvit__device_finish(ctx, desc.host == NULL)) != VKVIT_OK) goto fail;

    const uint64_t t_cache = vkvit__now_ns();
    if ((res = vkvit__pipeline_cache_open(ctx, desc.pipeline_cache_dir ? desc.pipeline_cache_dir : ctx->env.cache_dir)) !=
        VKVIT_OK)
        goto fail;
    vkvit__ctx_log(ctx, VKVIT_LOG_INFO, "ctx '%s' on '%s' ready in %.1f ms (loader, instance and device choice %.1f, "
                   "device %.1f, pipeline cache %.1f)", ctx->label, ctx->info.name, vkvit__ms_since(t0), instance_ms,
                   device_ms, vkvit__ms_since(t_cache));
    *out = ctx;
    return VKVIT_OK;
fail:
    vkvit__error_prefix(res, "vkvit_ctx_create '%s'", ctx->label);
    vkvit__ctx_fail(ctx, res);
    vkvit_ctx_destroy(ctx);
    return res;
}



vkvit_result vkvit_ctx_device_info(const vkvit_ctx *ctx, vkvit_device_info *out) {
    if (!ctx || !out) {
        vkvit_result res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_device_info: NULL argument");
        return ctx ? vkvit__ctx_fail(ctx, res) : res;
    }
    *out = ctx->info;
    return VKVIT_OK;
}

vkvit_result vkvit_ctx_memory_heaps(const vkvit_ctx *ctx, vkvit_memory_heap *out, uint32_t cap, uint32_t *count,
                                    int *budget_reported) {
    if (!ctx || !count) {
        vkvit_result res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_memory_heaps: NULL %s",
                                        ctx ? "count" : "ctx");
        return ctx ? vkvit__ctx_fail(ctx, res) : res;
    }
    vkvit_memory_heap heaps[VKVIT_MAX_MEMORY_HEAPS];
    uint32_t n = 0;
    vkvit__memory_heaps_read(ctx, heaps, &n);
    for (uint32_t h = 0; out && h < n && h < cap; h++) out[h] = heaps[h];
    *count = n;
    if (budget_reported) *budget_reported = ctx->caps.memory_budget;
    return VKVIT_OK;
}

vkvit_result vkvit_enumerate_devices(vkvit_device_info *out, uint32_t cap, uint32_t *count) {
    vkvit_result res = VKVIT_OK;
    if (!count) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_enumerate_devices: count is NULL");
    *count = 0;
    vkvit_ctx tmp;
    memset(&tmp, 0, sizeof tmp);
    snprintf(tmp.label, sizeof tmp.label, "vkvit info");
    vkvit__env env;
    vkvit__env_read(&env);
    if ((res = vkvit__instance_create(&tmp, false, &env)) != VKVIT_OK) return res;
    uint32_t n = 0;
    VkPhysicalDevice *pds = NULL;
    if ((res = vkvit__physical_devices(&tmp, &pds, &n)) != VKVIT_OK) goto fail;
    for (uint32_t i = 0; i < n && out && i < cap; i++) { /* what a ctx on it would use, before device creation */
        vkvit__caps facts;
        vkvit__policy policy;
        vkvit__query_device(pds[i], tmp.instance_api, false, &out[i], &facts);
        vkvit__device_queue_facts(pds[i], UINT32_MAX, &out[i]);
        if (env.device_profile[0] && (res = profile_facts(&env, &facts, &out[i])) != VKVIT_OK) goto fail;
        vkvit__policy_choose(&facts, &env, (vkvit__policy_request){0}, &policy);
        vkvit__policy_to_info(&policy, &out[i]);
        vkvit__policy_describe(&policy, &facts, &env, (vkvit__policy_request){0}, out[i].workarounds,
                               sizeof out[i].workarounds);
    }
    *count = n;
fail:
    free(pds);
    vkvit__instance_destroy(&tmp);
    return res;
}
