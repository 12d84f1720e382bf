// SPDX-License-Identifier: Apache-2.0
/* What a physical device has (device_caps.c): its extensions, features and limits, the driver-identity table, the
 * cooperative-matrix probes and the facts struct (facts.h) the policy room reads. device.c asks these questions when it picks, creates or adopts a device. Internal to src/vk/. */
#ifndef VKVIT_VK_DEVICE_CAPS_H
#define VKVIT_VK_DEVICE_CAPS_H

#include "vk/vk.h"

/* VK_KHR_cooperative_matrix arrived in Vulkan headers 1.3.255; Debian 12 ships 1.3.239 (and a volk without its
 * function). The definitions of the registry, for building against older headers; the function is fetched with
 * vkGetInstanceProcAddr. */
#define VKVIT_KHR_COOPMAT_EXTENSION_NAME "VK_KHR_cooperative_matrix"
#ifndef VK_KHR_cooperative_matrix
typedef enum VkComponentTypeKHR {
    VK_COMPONENT_TYPE_FLOAT16_KHR = 0,
    VK_COMPONENT_TYPE_FLOAT32_KHR = 1,
    VK_COMPONENT_TYPE_MAX_ENUM_KHR = 0x7FFFFFFF
} VkComponentTypeKHR;
typedef enum VkScopeKHR {
    VK_SCOPE_SUBGROUP_KHR = 3,
    VK_SCOPE_MAX_ENUM_KHR = 0x7FFFFFFF
} VkScopeKHR;
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR ((VkStructureType)1000506000)
#define VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR ((VkStructureType)1000506001)
typedef struct VkCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    VkComponentTypeKHR AType, BType, CType, ResultType;
    VkBool32 saturatingAccumulation;
    VkScopeKHR scope;
} VkCooperativeMatrixPropertiesKHR;
typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
typedef VkResult(VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
    VkPhysicalDevice, uint32_t *, VkCooperativeMatrixPropertiesKHR *);
#endif

typedef struct vkvit__ext_list {
    VkExtensionProperties *props;
    uint32_t n;
} vkvit__ext_list;

bool vkvit__ext_has(const vkvit__ext_list *l, const char *name);
vkvit__ext_list vkvit__device_exts(VkPhysicalDevice pd); /* the caller frees .props */

/* VK_NV_cooperative_matrix2 arrived in Vulkan headers 1.3.298; Debian 12 ships 1.3.239: its feature struct, as the
 * registry defines it. */
#define VKVIT_NV_COOPMAT2_EXTENSION_NAME "VK_NV_cooperative_matrix2"
typedef struct vkvit__coopmat2_features {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrixWorkgroupScope;
    VkBool32 cooperativeMatrixFlexibleDimensions;
    VkBool32 cooperativeMatrixReductions;
    VkBool32 cooperativeMatrixConversions;
    VkBool32 cooperativeMatrixPerElementOperations;
    VkBool32 cooperativeMatrixTensorAddressing;
    VkBool32 cooperativeMatrixBlockLoads;
} vkvit__coopmat2_features;
#define VKVIT_STRUCTURE_TYPE_COOPMAT2_FEATURES_NV ((VkStructureType)1000593000)

/* Whether the device offers VK_NV_ / VK_KHR_cooperative_matrix with its feature and the Vulkan memory model. */
bool vkvit__nv_coopmat_feature(VkPhysicalDevice pd, const vkvit__ext_list *exts, uint32_t api);
bool vkvit__khr_coopmat_feature(VkPhysicalDevice pd, const vkvit__ext_list *exts, uint32_t api);

/* Fills the facts of `info` (not its *_in_use fields or workarounds: the policy's) and `facts` for one physical
 * device as offered. khr_layer_too_old: the instance's validation layer predates VK_KHR_cooperative_matrix. */
void vkvit__query_device(VkPhysicalDevice pd, uint32_t instance_api, bool khr_layer_too_old, vkvit_device_info *info,
                         vkvit__caps *facts);

/* Whether a CPU device can import vkvit's own huge-page host memory for its buffers (memory.c). */
bool vkvit__huge_page_import_possible(VkPhysicalDevice pd, const vkvit__ext_list *exts);

/* The memory heaps now: size from ctx->mem_props (a device profile's, if it clamps them), budget and usage from
 * VK_EXT_memory_budget where ctx->caps.memory_budget holds (the budget at most the size), else budget = size and
 * usage = 0. *count heaps, at most VKVIT_MAX_MEMORY_HEAPS. */
void vkvit__memory_heaps_read(const vkvit_ctx *ctx, vkvit_memory_heap *out, uint32_t *count);

/* ctx->caps narrowed to what is enabled on the logical device (vkvit's own, or the host's: ctx->info narrowed). */
void vkvit__caps_narrow(vkvit_ctx *ctx);

#endif
