// SPDX-License-Identifier: Apache-2.0
/* What a device has: the facts vkvit reads from Vulkan (device_caps.c) and nothing it decides. Plain C, no Vulkan
 * types, so that the policy room (src/policy/) can read them without knowing Vulkan. Filled once per ctx from the
 * physical device, then narrowed to what is enabled on the logical device (vkvit's own, or the host's in adopt mode). */
#ifndef VKVIT_VK_FACTS_H
#define VKVIT_VK_FACTS_H

#include "common.h"

/* Cooperative-matrix shapes M x N x K (fp16 A and B, fp32 accumulators, subgroup scope) that gemm_coopmat.comp has
 * fragments for, as bits of a set. */
#define VKVIT_COOPMAT_SHAPE_16X16X16 (1u << 0) /* NVIDIA, AMD */
#define VKVIT_COOPMAT_SHAPE_8X8X8 (1u << 1)    /* lavapipe (Mesa 26) */
#define VKVIT_COOPMAT_SHAPE_8X16X16 (1u << 2)  /* Intel Xe2 (Battlemage, Lunar Lake): subgroups of 16 */
#define VKVIT_COOPMAT_SHAPE_8X8X16 (1u << 3)   /* Intel Xe-HPG (Arc A-series, DG2): subgroups of 8 */

typedef struct vkvit__caps {
    bool cpu_device;                        /* llvmpipe / lavapipe / SwiftShader, or VK_PHYSICAL_DEVICE_TYPE_CPU */
    bool no_f16_arithmetic_quirk;           /* the driver emulates fp16 arithmetic (x86 CPU devices): slow */
    bool fp16_storage;                      /* storageBuffer16BitAccess enabled */
    bool fp16_math;                         /* shaderFloat16 enabled */
    uint32_t subgroup_size;                 /* default subgroup size */
    uint32_t subgroup_size_min, subgroup_size_max; /* 0 without subgroup size control */
    bool subgroup_size_control;             /* subgroupSizeControl + computeFullSubgroups enabled */
    bool subgroup_arithmetic;               /* VK_SUBGROUP_FEATURE_ARITHMETIC_BIT in the compute stage */
    bool subgroup_shuffle;                  /* BASIC + SHUFFLE in the compute stage */
    bool cooperative_matrix_nv;             /* VK_NV_cooperative_matrix offered */
    bool cooperative_matrix_khr;            /* VK_KHR_cooperative_matrix offered */
    bool coopmat_nv_usable;                 /* ... NV's feature and the Vulkan memory model: offered (before device
                                               creation), then enabled (after) */
    bool coopmat_khr_usable;                /* the same for KHR's */
    bool coopmat_nv_f16_16x16x16;           /* NV properties list fp16 A/B, fp32 C/D, 16x16x16, subgroup scope */
    uint32_t coopmat_khr_shapes;            /* the fp16 x fp16 + fp32 subgroup-scope shapes (M x N x K) the KHR
                                               properties list that gemm_coopmat.comp has fragments for: a set of
                                               VKVIT_COOPMAT_SHAPE_* bits */
    bool cooperative_matrix2_nv;            /* VK_NV_cooperative_matrix2 offered (beside VK_KHR_cooperative_matrix) */
    bool coopmat2_tensor;                   /* ... with the features gemm_coopmat2.comp needs (tensor addressing,
                                               flexible dimensions, per-element operations), KHR's usable, and an
                                               API of 1.3 or more (GL_NV_cooperative_matrix2 is SPIR-V 1.6):
                                               offered, then enabled. Mesa 26.1's lavapipe lists the extension
                                               without tensor addressing */
    bool coopmat2_flexible;                 /* ... cooperativeMatrixFlexibleDimensions offered (lavapipe: yes) */
    bool coopmat2_workgroup_scope;          /* ... cooperativeMatrixWorkgroupScope offered (lavapipe: no; unused) */
    bool khr_layer_too_old;                 /* vkvit's instance runs a validation layer older than
                                               VK_KHR_cooperative_matrix (Vulkan 1.3.255): such a layer drops the KHR
                                               feature struct from vkCreateDevice's chain (seen with Debian 12's
                                               1.3.239 on an H100: every output of the self-check wrong) */
    bool texel_buffers;                     /* CPU device whose uniform texel buffers (RGBA32F and RGBA16F) reach as far
                                               as its storage buffers at every storage offset, with shaderInt64 (the
                                               texel kernels store 64-bit words): enabled on the device */
    bool huge_page_import;                  /* a CPU device that can import vkvit's huge-page host memory
                                               (VK_EXT_external_memory_host, memory.c) */
    uint32_t max_shared_memory;             /* maxComputeSharedMemorySize, bytes */
    uint32_t max_workgroup_invocations;     /* maxComputeWorkGroupInvocations */
    uint32_t max_workgroup_size[3];         /* maxComputeWorkGroupSize */
    uint32_t max_workgroup_count[3];        /* maxComputeWorkGroupCount */
    uint64_t max_storage_buffer_range;      /* maxStorageBufferRange */
    uint32_t max_storage_buffers_per_stage; /* maxPerStageDescriptorStorageBuffers (Vulkan guarantees 4) */
    bool memory_budget;                     /* VK_EXT_memory_budget: listed by the device (before device creation),
                                               then enabled (after: always by vkvit where listed, by the host in adopt
                                               mode). The figures themselves change as memory is allocated, so they
                                               are read when needed (vkvit__memory_heaps_read), not kept here */
} vkvit__caps;

#endif /* VKVIT_VK_FACTS_H */
