/* What a physical device has and what vkvit will use of it (device_caps.c): its extensions and features, the
 * quirk table, the VKVIT_DISABLE_* switches, the cooperative-matrix probes and the capability struct the op builders
 * read. device.c asks these questions when it picks, creates or adopts a device. Internal to src/vk/. */
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

/* What the caller asked vkvit not to use: the ctx desc and the environment, read once per ctx creation (and once
 * per vkvit_enumerate_devices call, so `vkvit info` shows what a ctx would use). */
typedef struct vkvit__overrides {
    bool f16;                               /* vkvit_ctx_desc.disable_f16 or VKVIT_DISABLE_F16=1 */
    bool subgroup;                          /* VKVIT_DISABLE_SUBGROUP=1 */
    bool coopmat;                           /* VKVIT_DISABLE_COOPMAT=1 */
    bool texel;                             /* VKVIT_DISABLE_TEXEL=1 */
    bool unrolled;                          /* VKVIT_DISABLE_UNROLLED=1 (the generic CPU GEMM shader everywhere) */
    bool huge_pages;                        /* VKVIT_DISABLE_HUGE_PAGES=1 (CPU devices: the driver's own memory) */
    bool coopmat_emulate;                   /* VKVIT_COOPMAT_EMULATE=1 (a test path: see caps.coopmat_emulated) */
    bool coopmat_khr;                       /* VKVIT_COOPMAT_KHR=1: the KHR kernel where both it and NV's can run */
    /* Not asked for but imposed: vkvit's own instance runs a validation layer older than VK_KHR_cooperative_matrix
     * (Vulkan 1.3.255). Such a layer copies vkCreateDevice's pNext chain and drops the structs it does not know, the
     * KHR feature struct among them, so the device runs the KHR kernel without the feature enabled. Seen with
     * Debian 12's layer (1.3.239) on an H100, 2026-11-26: every output of the self-check wrong. */
    bool khr_layer_too_old;
} vkvit__overrides;

vkvit__overrides vkvit__read_overrides(int disable_f16);
int vkvit__env_flag(const char *name);                   /* set, non-empty and not "0" */

/* Whether the device offers VK_NV_ / VK_KHR_cooperative_matrix with its feature and the Vulkan memory model. */
bool vkvit__nv_coopmat_feature(VkPhysicalDevice pd, const vkvit__ext_list *exts, uint32_t api);
bool vkvit__khr_coopmat_feature(VkPhysicalDevice pd, const vkvit__ext_list *exts, uint32_t api);

/* Appends ", text" (or "text" to an empty list) to a comma-separated list of `cap` bytes, truncating. */
void vkvit__add_workaround(char *list, size_t cap, const char *text);

/* Fills `info` (and optionally the quirk bits) for one physical device, as a ctx would use it under `off`. */
void vkvit__query_device(VkPhysicalDevice pd, uint32_t instance_api, vkvit__overrides off, vkvit_device_info *info,
                         uint32_t *quirks_out);

/* Whether a CPU device can import vkvit's own huge-page host memory for its buffers (memory.c). */
bool vkvit__huge_page_import_possible(VkPhysicalDevice pd, const vkvit__ext_list *exts);

/* ctx->caps from ctx->info after adopt-mode narrowing (vk.h, vkvit__caps). */
void vkvit__fill_caps(vkvit_ctx *ctx, vkvit__overrides off);

#endif
