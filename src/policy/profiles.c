/* The device profiles of tests (profiles.h). Values: the Vulkan specification's required limits
 * ("Required Limits" table, Vulkan 1.1), the Khronos profiles (KhronosGroup/Vulkan-Profiles, its profiles folder) and
 * the reports of real devices in the public Vulkan hardware database (gpuinfo.org); docs/gpu.md lists each row's. */
#include "policy/profiles.h"

#include <stdio.h>
#include <string.h>

#define U32_ANY 0xffffffffu
#define U64_ANY 0xffffffffffffffffull

static const vkvit__device_profile k_profiles[] = {
    /* lavapipe as it is, with the kernels GPUs take: every golden through the GPU kernels on this machine */
    {"gpu", "the device itself", true, U32_ANY, U32_ANY, {U32_ANY, U32_ANY, U32_ANY}, U32_ANY, U64_ANY, true, true,
     true, true, true, true},
    /* the least a Vulkan 1.1 device must offer: no fp16, no subgroup arithmetic or shuffles, no size control */
    {"vulkan-1.1-minimum", "Vulkan 1.1 specification, Required Limits", true, 16384, 128, {128, 128, 64}, 4,
     134217728ull, false, false, false, false, false, false},
    /* Android devices that pass the Android baseline 2022 profile: the 1.1 limits, 16-bit storage, no more */
    {"android-baseline-2022", "Khronos VP_ANDROID_baseline_2022", true, 16384, 128, {128, 128, 64}, 4,
     134217728ull, true, false, false, false, false, false},
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
    }
}
