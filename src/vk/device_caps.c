// SPDX-License-Identifier: Apache-2.0
/* What a physical device has: extensions, features, limits, the driver-identity table (CPU devices), the
 * cooperative-matrix shapes, and the facts struct (facts.h, vkvit__caps) the policy room reads. No choice is made
 * here: what vkvit uses of these is src/policy/policy.c's. */
#include "vk/device_caps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool vkvit__ext_has(const vkvit__ext_list *l, const char *name) {
    for (uint32_t i = 0; i < l->n; i++)
        if (strcmp(l->props[i].extensionName, name) == 0) return true;
    return false;
}

vkvit__ext_list vkvit__device_exts(VkPhysicalDevice pd) {
    vkvit__ext_list l = {0};
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &l.n, NULL) != VK_SUCCESS || l.n == 0) return l;
    l.props = calloc(l.n, sizeof *l.props);
    if (!l.props || vkEnumerateDeviceExtensionProperties(pd, NULL, &l.n, l.props) != VK_SUCCESS) l.n = 0;
    return l;
}

/* The driver-identity table: CPU devices (llvmpipe, lavapipe, SwiftShader), which x86 gives no fp16 arithmetic
 * (emulated, slow). */
static bool is_cpu_device(const vkvit_device_info *info, VkDriverId driver) {
    return info->device_type == VK_PHYSICAL_DEVICE_TYPE_CPU || driver == VK_DRIVER_ID_MESA_LLVMPIPE ||
           driver == VK_DRIVER_ID_GOOGLE_SWIFTSHADER;
}

/* Whether the device offers a cooperative-matrix extension (`ext`) with its cooperativeMatrix feature (queried
 * through the feature struct of type `stype`), and the vulkanMemoryModel feature (core 1.2,
 * VK_KHR_vulkan_memory_model before): glslang compiles GL_NV_ and GL_KHR_cooperative_matrix to SPIR-V in the Vulkan
 * memory model (their loads and stores carry memory-scope operands), which needs that feature enabled. The NV and
 * KHR feature structs have the same members (sType, pNext, cooperativeMatrix, cooperativeMatrixRobustBufferAccess),
 * so one struct serves both. */
static bool coopmat_feature(VkPhysicalDevice pd, const vkvit__ext_list *exts, uint32_t api, const char *ext,
                            VkStructureType stype) {
    if (!vkvit__ext_has(exts, ext)) return false;
    if (api < VK_API_VERSION_1_2 && !vkvit__ext_has(exts, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME)) return false;
    VkPhysicalDeviceVulkanMemoryModelFeatures mm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {.sType = stype, .pNext = &mm};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &cm};
    vkGetPhysicalDeviceFeatures2(pd, &f);
    return cm.cooperativeMatrix == VK_TRUE && mm.vulkanMemoryModel == VK_TRUE;
}
bool vkvit__nv_coopmat_feature(VkPhysicalDevice pd, const vkvit__ext_list *exts, uint32_t api) {
    return coopmat_feature(pd, exts, api, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME,
                           VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
}
bool vkvit__khr_coopmat_feature(VkPhysicalDevice pd, const vkvit__ext_list *exts, uint32_t api) {
    return coopmat_feature(pd, exts, api, VKVIT_KHR_COOPMAT_EXTENSION_NAME,
                           VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR);
}

/* Whether VK_NV_cooperative_matrix lists the shape gemm_coopmat.comp uses: fp16 A/B, fp32 C/D, 16x16x16, subgroup
 * scope. */
static bool nv_coopmat_f16_shape(VkPhysicalDevice pd) {
    if (!vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) return false;
    VkCooperativeMatrixPropertiesNV cm[64];
    uint32_t n = 0;
    if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, NULL) != VK_SUCCESS) return false;
    n = n < 64 ? n : 64;
    for (uint32_t k = 0; k < n; k++)
        cm[k] = (VkCooperativeMatrixPropertiesNV){.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV};
    const VkResult r = vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, cm);
    for (uint32_t k = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && k < n; k++)
        if (cm[k].MSize == 16 && cm[k].NSize == 16 && cm[k].KSize == 16 &&
            cm[k].AType == VK_COMPONENT_TYPE_FLOAT16_NV && cm[k].BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
            cm[k].CType == VK_COMPONENT_TYPE_FLOAT32_NV && cm[k].DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
            cm[k].scope == VK_SCOPE_SUBGROUP_NV)
            return true;
    return false;
}

/* The fp16 x fp16 + fp32 subgroup-scope shapes, without saturation, that VK_KHR_cooperative_matrix lists and
 * gemm_coopmat.comp has fragments for (facts.h, VKVIT_COOPMAT_SHAPE_*). */
static uint32_t khr_coopmat_f16_shapes(VkPhysicalDevice pd) {
    const VkInstance instance = volkGetLoadedInstance();
    const PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR get =
        instance ? (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)vkGetInstanceProcAddr(
                       instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
                 : NULL;
    if (!get) return 0;
    VkCooperativeMatrixPropertiesKHR cm[64];
    uint32_t n = 0;
    if (get(pd, &n, NULL) != VK_SUCCESS) return 0;
    n = n < 64 ? n : 64;
    for (uint32_t k = 0; k < n; k++)
        cm[k] = (VkCooperativeMatrixPropertiesKHR){.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR};
    const VkResult r = get(pd, &n, cm);
    static const struct { uint32_t m, n, k, bit; } known[] = {
        {16, 16, 16, VKVIT_COOPMAT_SHAPE_16X16X16},
        {8, 8, 8, VKVIT_COOPMAT_SHAPE_8X8X8},
        {8, 16, 16, VKVIT_COOPMAT_SHAPE_8X16X16},
        {8, 8, 16, VKVIT_COOPMAT_SHAPE_8X8X16},
    };
    uint32_t shapes = 0;
    for (uint32_t k = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && k < n; k++) {
        if (cm[k].AType != VK_COMPONENT_TYPE_FLOAT16_KHR || cm[k].BType != VK_COMPONENT_TYPE_FLOAT16_KHR ||
            cm[k].CType != VK_COMPONENT_TYPE_FLOAT32_KHR || cm[k].ResultType != VK_COMPONENT_TYPE_FLOAT32_KHR ||
            cm[k].saturatingAccumulation || cm[k].scope != VK_SCOPE_SUBGROUP_KHR)
            continue;
        for (size_t s = 0; s < VKVIT_ARRAY_LEN(known); s++)
            if (cm[k].MSize == known[s].m && cm[k].NSize == known[s].n && cm[k].KSize == known[s].k)
                shapes |= known[s].bit;
    }
    return shapes;
}

/* The heaps of `pd`: with `budget` (VK_EXT_memory_budget listed, and enabled where a logical device exists) budget
 * and usage from VkPhysicalDeviceMemoryBudgetPropertiesEXT, else budget = size and usage = 0. `sizes` (NULL: the
 * device's) gives the heaps' count and sizes, as a device profile may have clamped them; every budget is at most
 * its heap's size, so the figures agree with the heaps vkvit allocates against. */
static uint32_t read_heaps(VkPhysicalDevice pd, bool budget, const VkPhysicalDeviceMemoryProperties *sizes,
                           vkvit_memory_heap *out) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 mp2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                             .pNext = budget ? &b : NULL};
    vkGetPhysicalDeviceMemoryProperties2(pd, &mp2); /* core in Vulkan 1.1, which vkvit requires */
    const VkPhysicalDeviceMemoryProperties *mp = sizes ? sizes : &mp2.memoryProperties;
    const uint32_t n = VKVIT_MIN(mp->memoryHeapCount, (uint32_t)VKVIT_MAX_MEMORY_HEAPS);
    for (uint32_t h = 0; h < n; h++) {
        const uint64_t size = mp->memoryHeaps[h].size;
        out[h] = (vkvit_memory_heap){
            .size = size,
            .budget = budget ? VKVIT_MIN((uint64_t)b.heapBudget[h], size) : size,
            .usage = budget ? b.heapUsage[h] : 0,
            .device_local = (mp->memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0,
        };
    }
    return n;
}

void vkvit__memory_heaps_read(const vkvit_ctx *ctx, vkvit_memory_heap *out, uint32_t *count) {
    *count = read_heaps(ctx->physical_device, ctx->caps.memory_budget, &ctx->mem_props, out);
    /* a test's smaller budget (vkvit__test_hooks.heap_budget): what a nearly full device would report */
    for (uint32_t h = 0; ctx->test_hooks.heap_budget && h < *count; h++)
        out[h].budget = VKVIT_MIN(out[h].budget, ctx->test_hooks.heap_budget);
}

/* VK_NV_cooperative_matrix2's features, all VK_FALSE where the device does not offer the extension. */
static vkvit__coopmat2_features coopmat2_features(VkPhysicalDevice pd, const vkvit__ext_list *exts) {
    vkvit__coopmat2_features f2 = {.sType = VKVIT_STRUCTURE_TYPE_COOPMAT2_FEATURES_NV};
    if (!vkvit__ext_has(exts, VKVIT_NV_COOPMAT2_EXTENSION_NAME)) return f2;
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f2};
    vkGetPhysicalDeviceFeatures2(pd, &f);
    f2.pNext = NULL;
    return f2;
}

/* Fills the facts of `info` (its *_in_use fields and workarounds are the policy's) and `facts` for one physical
 * device, as offered (before a logical device narrows them). */
void vkvit__query_device(VkPhysicalDevice pd, uint32_t instance_api, bool khr_layer_too_old, vkvit_device_info *info,
                         vkvit__caps *facts) {
    memset(info, 0, sizeof *info);
    vkvit__ext_list exts = vkvit__device_exts(pd);

    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);
    uint32_t api = props.apiVersion < instance_api ? props.apiVersion : instance_api;

    VkPhysicalDeviceDriverProperties driver = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceSubgroupSizeControlPropertiesEXT sgc_props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
    VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                                             .pNext = NULL};
    bool has_driver_props = api >= VK_API_VERSION_1_2 || vkvit__ext_has(&exts, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    bool has_sgc = api >= VK_API_VERSION_1_3 || vkvit__ext_has(&exts, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    void *chain = &sg;
    if (has_driver_props) { driver.pNext = chain; chain = &driver; }
    if (has_sgc) { sgc_props.pNext = chain; chain = &sgc_props; }
    VkPhysicalDeviceProperties2 props2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = chain};
    vkGetPhysicalDeviceProperties2(pd, &props2);

    VkPhysicalDevice16BitStorageFeatures f16s = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16a = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT sgc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
    VkPhysicalDeviceTimelineSemaphoreFeatures tl = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
    bool has_f16a = api >= VK_API_VERSION_1_2 || vkvit__ext_has(&exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    bool has_tl = api >= VK_API_VERSION_1_2 || vkvit__ext_has(&exts, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME);
    chain = &f16s;
    if (has_f16a) { f16a.pNext = chain; chain = &f16a; }
    if (has_sgc) { sgc.pNext = chain; chain = &sgc; }
    if (has_tl) { tl.pNext = chain; chain = &tl; }
    VkPhysicalDeviceFeatures2 feats2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = chain};
    vkGetPhysicalDeviceFeatures2(pd, &feats2);

    snprintf(info->name, sizeof info->name, "%s", props.deviceName);
    if (has_driver_props) {
        snprintf(info->driver_name, sizeof info->driver_name, "%s", driver.driverName);
        snprintf(info->driver_info, sizeof info->driver_info, "%s", driver.driverInfo);
    }
    info->vendor_id = props.vendorID;
    info->device_id = props.deviceID;
    info->driver_version = props.driverVersion;
    info->api_version = props.apiVersion;
    info->device_type = (int)props.deviceType;
    info->fp16_storage = f16s.storageBuffer16BitAccess == VK_TRUE;
    info->fp16_arithmetic = has_f16a && f16a.shaderFloat16 == VK_TRUE;
    info->subgroup_size = sg.subgroupSize;
    info->subgroup_arithmetic = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                                (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    /* Size control for vkvit is both features and the compute stage among those that take a required size. */
    info->subgroup_size_control = has_sgc && sgc.subgroupSizeControl && sgc.computeFullSubgroups &&
                                  (sgc_props.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
    if (info->subgroup_size_control) {
        info->subgroup_size_min = sgc_props.minSubgroupSize;
        info->subgroup_size_max = sgc_props.maxSubgroupSize;
    }
    info->cooperative_matrix = vkvit__ext_has(&exts, "VK_KHR_cooperative_matrix");
    info->cooperative_matrix_nv = vkvit__ext_has(&exts, "VK_NV_cooperative_matrix");
    info->timeline_semaphore = has_tl && tl.timelineSemaphore;
    info->timestamp_period_ns = props.limits.timestampPeriod;
    info->max_shared_memory = props.limits.maxComputeSharedMemorySize;
    info->max_workgroup_invocations = props.limits.maxComputeWorkGroupInvocations;
    info->max_storage_buffer_range = props.limits.maxStorageBufferRange;
    for (int d = 0; d < 3; d++) info->max_workgroup_count[d] = props.limits.maxComputeWorkGroupCount[d];

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties *qf = calloc(nq ? nq : 1, sizeof *qf);
    if (qf) {
        vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
        for (uint32_t i = 0; i < nq; i++)
            if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && qf[i].timestampValidBits > 0) info->timestamps = 1;
        free(qf);
    }
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    for (uint32_t i = 0; i < mp.memoryHeapCount; i++)
        if ((mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && mp.memoryHeaps[i].size > info->device_local_bytes)
            info->device_local_bytes = mp.memoryHeaps[i].size;

    info->memory_budget = vkvit__ext_has(&exts, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    info->memory_heap_count = read_heaps(pd, info->memory_budget, NULL, info->memory_heaps);

    memset(facts, 0, sizeof *facts);
    facts->memory_budget = info->memory_budget;
    facts->cpu_device = is_cpu_device(info, has_driver_props ? driver.driverID : (VkDriverId)0);
    facts->no_f16_arithmetic_quirk = facts->cpu_device;
    facts->fp16_storage = info->fp16_storage;
    facts->fp16_math = info->fp16_arithmetic;
    facts->subgroup_size = info->subgroup_size;
    facts->subgroup_size_min = info->subgroup_size_min;
    facts->subgroup_size_max = info->subgroup_size_max;
    facts->subgroup_size_control = info->subgroup_size_control;
    facts->subgroup_arithmetic = info->subgroup_arithmetic;
    const VkSubgroupFeatureFlags shuffle = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
    facts->subgroup_shuffle = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (sg.supportedOperations & shuffle) == shuffle;
    facts->cooperative_matrix_nv = info->cooperative_matrix_nv;
    facts->cooperative_matrix_khr = info->cooperative_matrix;
    facts->coopmat_nv_usable = vkvit__nv_coopmat_feature(pd, &exts, props.apiVersion);
    facts->coopmat_khr_usable = vkvit__khr_coopmat_feature(pd, &exts, props.apiVersion);
    facts->coopmat_nv_f16_16x16x16 = facts->cooperative_matrix_nv && nv_coopmat_f16_shape(pd);
    facts->coopmat_khr_shapes = VKVIT_HAVE_KHR_COOPMAT && facts->coopmat_khr_usable ? khr_coopmat_f16_shapes(pd) : 0;
    facts->khr_layer_too_old = khr_layer_too_old;
    const vkvit__coopmat2_features f2 = coopmat2_features(pd, &exts);
    facts->cooperative_matrix2_nv = vkvit__ext_has(&exts, VKVIT_NV_COOPMAT2_EXTENSION_NAME);
    facts->coopmat2_flexible = f2.cooperativeMatrixFlexibleDimensions == VK_TRUE;
    facts->coopmat2_workgroup_scope = f2.cooperativeMatrixWorkgroupScope == VK_TRUE;
    facts->coopmat2_tensor = facts->coopmat_khr_usable && api >= VK_API_VERSION_1_3 && facts->coopmat2_flexible &&
                             f2.cooperativeMatrixTensorAddressing == VK_TRUE &&
                             f2.cooperativeMatrixPerElementOperations == VK_TRUE;
    facts->huge_page_import = facts->cpu_device && vkvit__huge_page_import_possible(pd, &exts);
    facts->max_shared_memory = props.limits.maxComputeSharedMemorySize;
    facts->max_workgroup_invocations = props.limits.maxComputeWorkGroupInvocations;
    for (int d = 0; d < 3; d++) {
        facts->max_workgroup_size[d] = props.limits.maxComputeWorkGroupSize[d];
        facts->max_workgroup_count[d] = props.limits.maxComputeWorkGroupCount[d];
    }
    facts->max_storage_buffer_range = props.limits.maxStorageBufferRange;
    facts->max_storage_buffers_per_stage = props.limits.maxPerStageDescriptorStorageBuffers;
    /* Texel-buffer operand reads (facts.h, texel_buffers): CPU devices only, and only where every tensor a storage
     * buffer can hold also fits a texel view in both formats (RGBA32F, RGBA16F) at every offset a storage buffer
     * can be bound at, and shaderInt64 is there (the texel kernels write pairs of floats as 64-bit words). */
    VkFormatProperties f32, f16;
    vkGetPhysicalDeviceFormatProperties(pd, VK_FORMAT_R32G32B32A32_SFLOAT, &f32);
    vkGetPhysicalDeviceFormatProperties(pd, VK_FORMAT_R16G16B16A16_SFLOAT, &f16);
    const VkFormatFeatureFlags utb = VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT;
    facts->texel_buffers = facts->cpu_device && (f32.bufferFeatures & utb) &&
                               (f16.bufferFeatures & utb) &&
                               (uint64_t)props.limits.maxTexelBufferElements * 8 >= props.limits.maxStorageBufferRange &&
                               props.limits.minTexelBufferOffsetAlignment <=
                                   VKVIT_MAX(props.limits.minStorageBufferOffsetAlignment, 4) &&
                               feats2.features.shaderInt64;
    free(exts.props);
}


/* Whether a CPU device's buffers can import vkvit's own huge-page host memory (memory.c, import_huge_pages): the
 * device has VK_EXT_external_memory_host, takes host allocations for buffers of vkvit's usage, and its import
 * alignment divides a huge page. vkvit then enables the extension on the device it creates (not in adopt mode). */
bool vkvit__huge_page_import_possible(VkPhysicalDevice pd, const vkvit__ext_list *exts) {
    if (!vkvit__ext_has(exts, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME)) return false;
    VkPhysicalDeviceExternalBufferInfo bi = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO,
        .usage = VKVIT_BUFFER_USAGE | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT, /* every buffer's, at most */
        .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
    };
    VkExternalBufferProperties bp = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
    vkGetPhysicalDeviceExternalBufferProperties(pd, &bi, &bp); /* core in Vulkan 1.1, which vkvit requires */
    const VkExternalMemoryFeatureFlags f = bp.externalMemoryProperties.externalMemoryFeatures;
    /* importable, and without a dedicated allocation (memory.c makes none) */
    if (!(f & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT) || (f & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT))
        return false;
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &hp};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    const VkDeviceSize a = hp.minImportedHostPointerAlignment;
    return a && VKVIT_HUGE_PAGE_BYTES % a == 0;
}

/* The facts after device creation: what vkvit enabled on its own device (or the host on its device, adopt mode:
 * info already narrowed) instead of what the physical device offers. */
void vkvit__caps_narrow(vkvit_ctx *ctx) {
    vkvit__caps *c = &ctx->caps;
    const vkvit_device_info *i = &ctx->info;
    c->fp16_storage = i->fp16_storage != 0;
    c->fp16_math = i->fp16_arithmetic != 0;
    c->subgroup_size_control = i->subgroup_size_control != 0;
    c->subgroup_size_min = i->subgroup_size_min;
    c->subgroup_size_max = i->subgroup_size_max;
    c->coopmat_nv_usable = ctx->coopmat_nv_enabled;
    c->coopmat_khr_usable = ctx->coopmat_khr_enabled;
    if (!ctx->coopmat_khr_enabled) c->coopmat_khr_shapes = 0;
    c->coopmat2_tensor = c->coopmat2_tensor && ctx->coopmat_nv2_enabled && ctx->coopmat_khr_enabled;
    c->texel_buffers = c->texel_buffers && ctx->int64_enabled;
    c->huge_page_import = ctx->huge_page_import;
}
