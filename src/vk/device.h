// SPDX-License-Identifier: Apache-2.0
/* The steps of a ctx's Vulkan side (device.c), in the order src/ctx.c takes them: instance (own device) or the host's
 * objects (adopt mode), physical-device choice, logical device with the optional features the policy wants. */
#ifndef VKVIT_VK_DEVICE_H
#define VKVIT_VK_DEVICE_H

#include "vk/vk.h"

/* The optional device features vkvit enables on a device it creates (from vkvit__policy's enable_* choices). */
typedef struct vkvit__device_wants {
    bool khr_coopmat;                       /* VK_KHR_cooperative_matrix + its feature (+ the Vulkan memory model) */
    bool nv2_coopmat;                       /* VK_NV_cooperative_matrix2's tensor addressing, flexible dimensions and
                                               per-element operations (with khr_coopmat) */
    bool huge_pages;                        /* VK_EXT_external_memory_host, where the device takes vkvit's huge pages */
    bool int64;                             /* shaderInt64 (the texel kernels store 64-bit words) */
    int queue_priority;                     /* vkvit_queue_priority */
    bool queue_priority_strict;             /* refuse rather than fall back to the default priority */
} vkvit__device_wants;

/* The loader and vkvit's own instance; `validation`: the Khronos layer (required). The driver manifests env names
 * are checked first, before any loader call reads them (loader_check.h). */
vkvit_result vkvit__instance_create(vkvit_ctx *ctx, bool validation, const vkvit__env *env);
/* The physical device: `want` an index or a name substring, NULL or "" the first discrete, integrated, virtual, CPU
 * device with Vulkan 1.1 compute. */
vkvit_result vkvit__device_pick(vkvit_ctx *ctx, const char *want);
/* vkvit's logical device with the features ctx->info lists and `wants`; sets ctx->queue_family, coopmat_*_enabled,
 * huge_page_import and int64_enabled. */
vkvit_result vkvit__device_create(vkvit_ctx *ctx, vkvit__device_wants wants);
/* Adopt mode: ctx->info narrowed to what the host enabled; coopmat_*_enabled and int64_enabled as the host's. */
void vkvit__device_adopt(vkvit_ctx *ctx, const vkvit_host_device *h);
vkvit_result vkvit__host_device_check(const vkvit_host_device *h);
vkvit_result vkvit__host_queue_family_check(vkvit_ctx *ctx, uint32_t family);
/* The queue fields of `info` (queue_family_index, queue_flags, queue_compute_only) for family `family` of pd, or for
 * the family vkvit's own device would take when family is UINT32_MAX. */
void vkvit__device_queue_facts(VkPhysicalDevice pd, uint32_t family, vkvit_device_info *info);
/* After the policy wrote the workarounds: names a requested global priority that is not in force. */
void vkvit__device_note_priority(vkvit_ctx *ctx);
/* ctx->limits, max_allocation, pipeline_cache_uuid and mem_props from the physical device. */
void vkvit__device_read_limits(vkvit_ctx *ctx);
/* The device function table, the queue (own_device: vkvit's queue 0 of queue_family; else the host's), the one-shot
 * command pool and fence. */
vkvit_result vkvit__device_finish(vkvit_ctx *ctx, bool own_device);
/* The instance's physical devices (*out: the caller frees it). */
vkvit_result vkvit__physical_devices(vkvit_ctx *ctx, VkPhysicalDevice **out, uint32_t *count);
void vkvit__instance_destroy(vkvit_ctx *ctx);
/* The spec version of an instance layer, 0 when it is not installed. */
uint32_t vkvit__layer_spec_version(const char *name);

#endif /* VKVIT_VK_DEVICE_H */
