// SPDX-License-Identifier: Apache-2.0
/* The device profiles of tests (profiles.h). Where each row's values come from:
 *   vulkan-1.1-minimum     the Vulkan 1.1 specification, table "Required Limits".
 *   android-baseline-2022  the Khronos Vulkan-Profiles repository (KhronosGroup/Vulkan-Profiles), profile
 *                          VP_ANDROID_vulkan_profile_2022, capability "baseline".
 *   intel-xe, amd-rdna3, apple-m1: device reports of the public Vulkan hardware database (vulkan.gpuinfo.org), as
 *                          that repository ships them with its LunarG desktop profiles (driver and OS at each row);
 *                          where two drivers of the same GPU differ, the lower value or the absent feature.
 *   mali-valhall, adreno-7xx: no device report of these GPUs is in those sources; the rows are what Mesa's drivers
 *                          for them report (panvk at PAN_ARCH 10, turnip on the A740), read in the Mesa tree as the
 *                          GitHub mirror bminor/mesa-mesa holds it (path and commit at each row). A value the source
 *                          leaves to the kernel or the hardware stays the Vulkan 1.1 minimum.
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
     .cooperative_matrix = true, .coopmat_shapes = U32_ANY},
    /* the least a Vulkan 1.1 device must offer: no fp16, no subgroup arithmetic or shuffles (1.1 requires only the
     * basic subgroup operations), no size control, no cooperative matrices */
    {.name = "vulkan-1.1-minimum", .source = "Vulkan 1.1 specification, Required Limits", .gpu_kernels = true,
     VK11_MIN_LIMITS},
    /* Android devices that pass the Android 2022 profile: the 1.1 limits and no compute feature beyond them (it
     * requires neither storageBuffer16BitAccess nor shaderFloat16 nor subgroup arithmetic) */
    {.name = "android-baseline-2022", .source = "Khronos Vulkan-Profiles VP_ANDROID_vulkan_profile_2022",
     .gpu_kernels = true, VK11_MIN_LIMITS},
    /* Arm Mali Valhall (Mali-G710 / G715: PAN_ARCH 10) as Mesa panvk reports it, src/panfrost/vulkan/
     * panvk_vX_physical_device.c at 07fe297a3e70d3a8a9a908317eea4455885f2fa3: maxComputeSharedMemorySize 32768,
     * maxStorageBufferRange UINT32_MAX (storage buffers are lowered to global memory), 4096 storage buffers a stage
     * (MAX_PER_STAGE_STORAGE_BUFFERS = MAX_PER_SET_STORAGE_BUFFERS from v9 on; the 2^12 that file counts for
     * maxFragmentCombinedOutputResources), subgroups of 16 (pan_subgroup_size at v9+, in panfrost's compiler
     * header) with arithmetic and shuffles in the compute stage, size control (min = max = 16, compute stage
     * required) with computeFullSubgroups, storageBuffer16BitAccess, shaderFloat16 (PAN_ARCH >= 10); no
     * cooperative matrix. maxComputeWorkGroupInvocations and maxComputeWorkGroupSize are the kernel's
     * THREAD_MAX_WORKGROUP_SIZE there, a register no source gives: the Vulkan 1.1 minimum stays. */
    {.name = "mali-valhall", .source = "Mesa panvk (PAN_ARCH 10), bminor/mesa-mesa 07fe297a", .gpu_kernels = true,
     .max_shared_memory = 32768, .max_workgroup_invocations = 128, .max_workgroup_size = {128, 128, 64},
     .max_storage_buffers_per_stage = 4096, .max_storage_buffer_range = 4294967295ull, .fp16_storage = true,
     .fp16_math = true, .subgroup_arithmetic = true, .subgroup_shuffle = true, .subgroup_size_control = true,
     .cooperative_matrix = false},
    /* Qualcomm Adreno 7xx (the A740) as Mesa turnip reports it, src/freedreno/vulkan/tu_device.cc at
     * 01d17481308a74c347b68136bb25d9a8f6624ab6 with the A740 entry of src/freedreno/common/freedreno_devices.py at
     * 7fd99c88b9cd5c0c8c1cb3e92383acac5cb8220b: maxComputeSharedMemorySize cs_shared_mem_size = 32768,
     * maxComputeWorkGroupInvocations threadsize_base 64 x 2 (a7xx: supports_double_threadsize) x max_waves 16 =
     * 2048, maxComputeWorkGroupSize 1024 on each side, maxStorageBufferRange 2^27 (tu_common.h at 4ac666ea: "match
     * the latest Qualcomm driver which is also a hw limit on later gens"), storage buffers a stage
     * max_descriptor_set_size = MAX_SET_SIZE 2^30 / (4 x 16) = 2^24 (tu_descriptor_set.h at 62f0ef34); subgroups of
     * 64 and 128 (default 128) with arithmetic and shuffles in compute, size control in every stage with
     * computeFullSubgroups, storageBuffer16BitAccess (a7xx storage_16bit) and shaderFloat16; no cooperative
     * matrix. */
    {.name = "adreno-7xx", .source = "Mesa turnip (A740), bminor/mesa-mesa 01d17481", .gpu_kernels = true,
     .max_shared_memory = 32768, .max_workgroup_invocations = 2048, .max_workgroup_size = {1024, 1024, 1024},
     .max_storage_buffers_per_stage = 16777216, .max_storage_buffer_range = 134217728ull, .fp16_storage = true,
     .fp16_math = true, .subgroup_arithmetic = true, .subgroup_shuffle = true, .subgroup_size_control = true,
     .cooperative_matrix = false},
    /* Intel Arc A770 (Xe-HPG, DG2): the reports of the Windows driver 0.406.609 and of Mesa ANV 26.1.2; the
     * workgroup's z side (64) and maxStorageBufferRange (2^30 - 4) are the Windows driver's (ANV: 1024, 2^32 - 1),
     * the rest agree. VK_KHR_cooperative_matrix on both; its one fp16 shape is 8 x 8 x 16 at subgroups of 8 (DG2 takes
     * GFX9_FEATURES' list in Mesa's src/intel/dev/intel_device_info.c; Xe2 has 8 x 16 x 16 at 16 instead). */
    {.name = "intel-xe", .source = "gpuinfo.org: Intel Arc A770, Windows 0.406.609 and Mesa ANV 26.1.2",
     .gpu_kernels = true, .max_shared_memory = 49152, .max_workgroup_invocations = 1024,
     .max_workgroup_size = {1024, 1024, 64}, .max_storage_buffers_per_stage = 33554432,
     .max_storage_buffer_range = 1073741820ull, .fp16_storage = true, .fp16_math = true,
     .subgroup_arithmetic = true, .subgroup_shuffle = true, .subgroup_size_control = true,
     .cooperative_matrix = true, .coopmat_shapes = VKVIT_COOPMAT_SHAPE_8X8X16},
    /* AMD RDNA3: the Radeon RX 7800 XT (Navi 32; no RX 7900 XTX report is in the sources), the reports of AMD's
     * driver 2.0.294 and of Mesa RADV 24.0.99: shared memory 32 KiB is AMD's (RADV 64 KiB), 8388606 storage
     * buffers RADV's (AMD 2^32 - 1), the rest agree. VK_KHR_cooperative_matrix on both, fp16 at 16 x 16 x 16. */
    {.name = "amd-rdna3", .source = "gpuinfo.org: AMD Radeon RX 7800 XT, AMD 2.0.294 and Mesa RADV 24.0.99",
     .gpu_kernels = true, .max_shared_memory = 32768, .max_workgroup_invocations = 1024,
     .max_workgroup_size = {1024, 1024, 1024}, .max_storage_buffers_per_stage = 8388606,
     .max_storage_buffer_range = 4294967295ull, .fp16_storage = true, .fp16_math = true,
     .subgroup_arithmetic = true, .subgroup_shuffle = true, .subgroup_size_control = true,
     .cooperative_matrix = true, .coopmat_shapes = VKVIT_COOPMAT_SHAPE_16X16X16},
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
    f->coopmat_khr_shapes &= p->coopmat_shapes;
    f->coopmat_nv_f16_16x16x16 &= (p->coopmat_shapes & VKVIT_COOPMAT_SHAPE_16X16X16) != 0;
    if (!p->cooperative_matrix) {
        f->cooperative_matrix_nv = f->cooperative_matrix_khr = false;
        f->coopmat_nv_usable = f->coopmat_khr_usable = false;
        f->coopmat_nv_f16_16x16x16 = false;
        f->coopmat_khr_shapes = 0;
        f->cooperative_matrix2_nv = f->coopmat2_tensor = f->coopmat2_flexible = f->coopmat2_workgroup_scope = false;
    }
}
