// SPDX-License-Identifier: Apache-2.0
/* Device profiles for tests (VKVIT_DEVICE_PROFILE=NAME, policy/env.c): the device facts vkvit sees, clamped to a real
 * family's published limits and features, and optionally the GPU kernels instead of a CPU device's, so that lavapipe
 * runs the paths an Android phone, a Mali or an RDNA3 GPU would take, under their limits. The table and the sources
 * of its values: profiles.c and docs/gpu.md ("Device profiles"). A profile only takes away: a limit above the real
 * device's stays the device's, a feature the device lacks stays absent. Subgroup sizes cannot be emulated this way
 * (lavapipe's come from LP_NATIVE_VECTOR_WIDTH), nor memory heaps (lavapipe has one). */
#ifndef VKVIT_POLICY_PROFILES_H
#define VKVIT_POLICY_PROFILES_H

#include "common.h"
#include "vk/facts.h"

typedef struct vkvit__device_profile {
    const char *name;
    const char *source;                     /* where the values come from */
    bool gpu_kernels;                       /* GPU mode: the kernels GPUs take, not the CPU-device choices */
    uint32_t max_shared_memory;             /* maxComputeSharedMemorySize */
    uint32_t max_workgroup_invocations;     /* maxComputeWorkGroupInvocations */
    uint32_t max_workgroup_size[3];         /* maxComputeWorkGroupSize */
    uint32_t max_storage_buffers_per_stage; /* maxPerStageDescriptorStorageBuffers */
    uint64_t max_storage_buffer_range;      /* maxStorageBufferRange */
    bool fp16_storage, fp16_math;           /* storageBuffer16BitAccess, shaderFloat16 */
    bool subgroup_arithmetic, subgroup_shuffle, subgroup_size_control;
    bool cooperative_matrix;                /* any cooperative-matrix extension */
    uint32_t coopmat_shapes;                /* the VKVIT_COOPMAT_SHAPE_* its cooperative-matrix properties list (vk/
                                               facts.h); the emulated kernel (VKVIT_COOPMAT_EMULATE) takes its shape
                                               from them */
} vkvit__device_profile;

/* The profile called `name`, NULL when there is none (vkvit__profile_names lists them). */
const vkvit__device_profile *vkvit__profile_find(const char *name);
/* "name1, name2, ..." of every profile into out[cap]. */
void vkvit__profile_names(char *out, size_t cap);
/* The facts as the profile's device would show them: every limit the lower of the two, every feature both's. */
void vkvit__profile_clamp(const vkvit__device_profile *p, vkvit__caps *facts);

#endif /* VKVIT_POLICY_PROFILES_H */
