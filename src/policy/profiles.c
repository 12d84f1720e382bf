// SPDX-License-Identifier: Apache-2.0
/* The device profiles of tests (profiles.h). Where each row's values come from:
 *   vulkan-1.1-minimum     the Vulkan 1.1 specification, table "Required Limits".
 *   android-baseline-2022  the Khronos Vulkan-Profiles repository (KhronosGroup/Vulkan-Profiles), profile
 *                          VP_ANDROID_vulkan_profile_2022, capability "baseline".
 *   intel-xe, amd-rdna3, apple-m1: device reports of the public Vulkan hardware database (vulkan.gpuinfo.org), as
 *                          that repository ships them with its LunarG desktop profiles (driver and OS at each row);
 *                          where two drivers of the same GPU differ, the lower value or the absent feature.
 *   mali-valhall, adreno-7xx: no report of these GPUs was found in those sources, so every field is the Vulkan 1.1
 *                          guaranteed minimum (as vulkan-1.1-minimum) until one is.
 * docs/gpu.md ("Device profiles") has every value with the path and commit of the report it was read from. A
 * feature here is the one vkvit uses (vk/device_caps.c): subgroup arithmetic / shuffle in the compute stage,
 * subgroupSizeControl with computeFullSubgroups and the compute stage in requiredSubgroupSizeStages, any
 * cooperative-matrix extension. */
#include "policy/profiles.h"

#include <stdio.h>
#include <string.h>

#define U32_ANY 0xffffffffu
#define U64_ANY 0xffffffffffffffffull

/* Vulkan 1.1's required limits: maxComputeSharedMemorySize 16384, maxComputeWorkGroupInvocations 128,
 * maxComputeWorkGroupSize 128 x 128 x 64, maxPerStageDescriptorStorageBuffers 4, maxStorageBufferRange 2^27 */
#define VK11_MIN_LIMITS                                                                                                \
    .max_shared_memory = 16384, .max_workgroup_invocations = 128, .max_workgroup_size = {128, 128, 64},               \
    .max_storage_buffers_per_stage = 4, .max_storage_buffer_range = 134217728ull

static const vkvit__device_profile k_profiles[] = {
    /* lavapipe as it is, with the kernels GPUs take: every golden through the GPU kernels on this machine */
    {.name = "gpu", .source = "the device itself", .gpu_kernels = true, .max_shared_memory = U32_ANY,
     .max_workgroup_invocations = U32_ANY, .max_workgroup_size = {U32_ANY, U32_ANY, U32_ANY},
     .max_storage_buffers_per_stage = U32_ANY, .max_storage_buffer_range = U64_ANY, .fp16_storage = true,
     .fp16_math = true, .subgroup_arithmetic = true, .subgroup_shuffle = true, .subgroup_size_control = true,
     .cooperative_matrix = true},
    /* the least a Vulkan 1.1 device must offer: no fp16, no subgroup arithmetic or shuffles (1.1 requires only the
     * basic subgroup operations), no size control, no cooperative matrices */
    {.name = "vulkan-1.1-minimum", .source = "Vulkan 1.1 specification, Required Limits", .gpu_kernels = true,
     VK11_MIN_LIMITS},
    /* Android devices that pass the Android 2022 profile: the 1.1 limits and no compute feature beyond them (it
     * requires neither storageBuffer16BitAccess nor shaderFloat16 nor subgroup arithmetic) */
    {.name = "android-baseline-2022", .source = "Khronos Vulkan-Profiles VP_ANDROID_vulkan_profile_2022",
     .gpu_kernels = true, VK11_MIN_LIMITS},
    /* Arm Mali Valhall (Mali-G710 / G715): no report found; every field the Vulkan 1.1 guaranteed minimum */
    {.name = "mali-valhall", .source = "not found: the Vulkan 1.1 guaranteed minimum", .gpu_kernels = true,
     VK11_MIN_LIMITS},
    /* Qualcomm Adreno 7xx (Adreno 730 / 740): no report found; every field the Vulkan 1.1 guaranteed minimum */
    {.name = "adreno-7xx", .source = "not found: the Vulkan 1.1 guaranteed minimum", .gpu_kernels = true,
     VK11_MIN_LIMITS},
    /* Intel Arc A770 (Xe-HPG, DG2): the reports of the Windows driver 0.406.609 and of Mesa ANV 26.1.2; the
     * workgroup's z side (64) and maxStorageBufferRange (2^30 - 4) are the Windows driver's (ANV: 1024, 2^32 - 1),
     * the rest agree. VK_KHR_cooperative_matrix on both. */
    {.name = "intel-xe", .source = "gpuinfo.org: Intel Arc A770, Windows 0.406.609 and Mesa ANV 26.1.2",
     .gpu_kernels = true, .max_shared_memory = 49152, .max_workgroup_invocations = 1024,
     .max_workgroup_size = {1024, 1024, 64}, .max_storage_buffers_per_stage = 33554432,
     .max_storage_buffer_range = 1073741820ull, .fp16_storage = true, .fp16_math = true,
     .subgroup_arithmetic = true, .subgroup_shuffle = true, .subgroup_size_control = true,
     .cooperative_matrix = true},
    /* AMD RDNA3: the Radeon RX 7800 XT (Navi 32; no RX 7900 XTX report is in the sources), the reports of AMD's
     * driver 2.0.294 and of Mesa RADV 24.0.99: shared memory 32 KiB is AMD's (RADV 64 KiB), 8388606 storage
     * buffers RADV's (AMD 2^32 - 1), the rest agree. VK_KHR_cooperative_matrix on both. */
    {.name = "amd-rdna3", .source = "gpuinfo.org: AMD Radeon RX 7800 XT, AMD 2.0.294 and Mesa RADV 24.0.99",
     .gpu_kernels = true, .max_shared_memory = 32768, .max_workgroup_invocations = 1024,
     .max_workgroup_size = {1024, 1024, 1024}, .max_storage_buffers_per_stage = 8388606,
     .max_storage_buffer_range = 4294967295ull, .fp16_storage = true, .fp16_math = true,
     .subgroup_arithmetic = true, .subgroup_shuffle = true, .subgroup_size_control = true,
     .cooperative_matrix = true},
    /* Apple M1 through MoltenVK (driver 0.2.2209, macOS 26.5.1; a portability-subset device): 31 storage buffers a
     * stage; subgroupSizeControl and computeFullSubgroups are reported, but requiredSubgroupSizeStages is empty, so
     * no compute shader can require a size; no cooperative-matrix extension. */
    {.name = "apple-m1", .source = "gpuinfo.org: Apple M1, MoltenVK 0.2.2209 on macOS 26.5.1", .gpu_kernels = true,
     .max_shared_memory = 32768, .max_workgroup_invocations = 1024, .max_workgroup_size = {1024, 1024, 1024},
     .max_storage_buffers_per_stage = 31, .max_storage_buffer_range = 4294967295ull, .fp16_storage = true,
     .fp16_math = true, .subgroup_arithmetic = true, .subgroup_shuffle = true, .subgroup_size_control = false,
     .cooperative_matrix = false},
};

const vkvit__device_profile *vkvit__profile_find(const char *name) {
    for (size_t i = 0; name && i < VKVIT_ARRAY_LEN(k_profiles); i++)
        if (strcmp(k_profiles[i].name, name) == 0) return &k_profiles[i];
    return NULL;
}

void vkvit__profile_names(char *out, size_t cap) {
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(k_profiles) && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? ", " : "", k_profiles[i].name);
}

void vkvit__profile_clamp(const vkvit__device_profile *p, vkvit__caps *f) {
    f->max_shared_memory = VKVIT_MIN(f->max_shared_memory, p->max_shared_memory);
    f->max_workgroup_invocations = VKVIT_MIN(f->max_workgroup_invocations, p->max_workgroup_invocations);
    for (int d = 0; d < 3; d++) f->max_workgroup_size[d] = VKVIT_MIN(f->max_workgroup_size[d], p->max_workgroup_size[d]);
    f->max_storage_buffers_per_stage = VKVIT_MIN(f->max_storage_buffers_per_stage, p->max_storage_buffers_per_stage);
    f->max_storage_buffer_range = VKVIT_MIN(f->max_storage_buffer_range, p->max_storage_buffer_range);
    f->fp16_storage &= p->fp16_storage;
    f->fp16_math &= p->fp16_math;
    f->subgroup_arithmetic &= p->subgroup_arithmetic;
    f->subgroup_shuffle &= p->subgroup_shuffle;
    if (!p->subgroup_size_control) {
        f->subgroup_size_control = false;
        f->subgroup_size_min = f->subgroup_size_max = 0;
    }
    if (!p->cooperative_matrix) {
        f->cooperative_matrix_nv = f->cooperative_matrix_khr = false;
        f->coopmat_nv_usable = f->coopmat_khr_usable = false;
        f->coopmat_nv_f16_16x16x16 = false;
        f->coopmat_khr_frag = 0;
        f->cooperative_matrix2_nv = f->coopmat2_tensor = f->coopmat2_flexible = f->coopmat2_workgroup_scope = false;
    }
}
