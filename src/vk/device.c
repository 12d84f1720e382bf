// SPDX-License-Identifier: Apache-2.0
/* The ctx's Vulkan objects: loader, instance and validation layer, physical-device choice, logical device — or
 * adoption of a host application's device — and their teardown (device.h). What a device has: device_caps.c; what
 * vkvit uses of it: src/policy/; the order of it all at ctx creation: src/ctx.c; errors and log messages: log.c. */
#include "vk/device.h"
#include "vk/device_caps.h"
#include "vk/loader_check.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------------------
 * Loader and instance
 * ------------------------------------------------------------------------------------------------------------ */

static vkvit_result load_loader(void) {
    static int loaded; /* volk's globals are process-wide; loading twice is harmless but pointless */
    if (loaded) return VKVIT_OK;
    if (volkInitialize() != VK_SUCCESS)
        return vkvit__error(VKVIT_ERROR_NO_LOADER,
                            "no Vulkan loader found (libvulkan.so.1); install the Vulkan loader and a driver, e.g. "
                            "Debian packages libvulkan1 and mesa-vulkan-drivers");
    loaded = 1;
    return VKVIT_OK;
}

/* The Vulkan header version a layer was built against (its specVersion), 0 when the layer is not installed. */
uint32_t vkvit__layer_spec_version(const char *name) {
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkLayerProperties *props = calloc(n, sizeof *props);
    if (!props) return 0;
    uint32_t version = 0;
    if (vkEnumerateInstanceLayerProperties(&n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !version; i++)
            if (strcmp(props[i].layerName, name) == 0) version = props[i].specVersion ? props[i].specVersion : 1;
    free(props);
    return version;
}

static bool has_instance_ext(const char *name) {
    uint32_t n = 0;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || n == 0) return false;
    VkExtensionProperties *props = calloc(n, sizeof *props);
    if (!props) return false;
    bool found = false;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(props[i].extensionName, name) == 0;
    free(props);
    return found;
}


/* Loads the loader and creates vkvit's own instance. `validation`: 1 required, 0 off. The driver manifests the
 * environment names are checked first, before any loader call reads them (loader_check.h). */
vkvit_result vkvit__instance_create(vkvit_ctx *ctx, bool validation, const vkvit__env *env) {
    vkvit_result res = vkvit__check_driver_manifests(env);
    if (res == VKVIT_OK) res = load_loader();
    if (res != VKVIT_OK) return res;
    const char *layers[1];
    uint32_t n_layers = 0;
    const char *exts[4];
    uint32_t n_exts = 0;

    if (validation) {
        if (!vkvit__layer_spec_version("VK_LAYER_KHRONOS_validation"))
            return vkvit__error(VKVIT_ERROR_UNSUPPORTED,
                                "validation requested but VK_LAYER_KHRONOS_validation is not installed "
                                "(Debian package vulkan-validationlayers)");
        layers[n_layers++] = "VK_LAYER_KHRONOS_validation";
    }
    ctx->has_debug_utils = has_instance_ext(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    if (ctx->has_debug_utils) exts[n_exts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    if (validation && !ctx->has_debug_utils)
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "validation requested but VK_EXT_debug_utils is missing");

    uint32_t loader_version = volkGetInstanceVersion();
    uint32_t api = loader_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3
                 : loader_version >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2
                                                        : VK_API_VERSION_1_1;
    if (loader_version < VK_API_VERSION_1_1)
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "the Vulkan loader supports only Vulkan %u.%u; vkvit needs 1.1",
                            VK_API_VERSION_MAJOR(loader_version), VK_API_VERSION_MINOR(loader_version));

    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = ctx->label,
        .pEngineName = "vkvit",
        .engineVersion = VK_MAKE_VERSION(VKVIT_VERSION_MAJOR, VKVIT_VERSION_MINOR, VKVIT_VERSION_PATCH),
        .apiVersion = api,
    };
    ctx->instance_api = api;
    /* Synchronization validation catches missing or wrong barriers; vkvit's tests require it to stay silent. */
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .enabledValidationFeatureCount = 1,
        .pEnabledValidationFeatures = enables,
    };
    VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = vkvit__validation_callback,
        .pUserData = ctx,
    };
    if (validation) messenger_info.pNext = &features; /* also covers vkCreateInstance/vkDestroyInstance */
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = validation ? &messenger_info : NULL,
        .pApplicationInfo = &app,
        .enabledLayerCount = n_layers,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = n_exts,
        .ppEnabledExtensionNames = exts,
    };
    VkResult vr = vkCreateInstance(&info, NULL, &ctx->instance);
    if (vr == VK_ERROR_INCOMPATIBLE_DRIVER)
        return vkvit__error(VKVIT_ERROR_NO_DEVICE, "no Vulkan device found: the loader has no driver (vkCreateInstance "
                            "returned VK_ERROR_INCOMPATIBLE_DRIVER); install one, e.g. Debian mesa-vulkan-drivers");
    if (vr != VK_SUCCESS) return vkvit__vk_error(vr, "vkCreateInstance", __func__, NULL);
    ctx->owns_instance = true;
    volkLoadInstanceOnly(ctx->instance);
    if (validation) {
        messenger_info.pNext = NULL;
        VK_TRY(vkCreateDebugUtilsMessengerEXT(ctx->instance, &messenger_info, NULL, &ctx->messenger));
    }
    ctx->info.validation = validation;
    return VKVIT_OK;
fail:
    return res;
}


/* ------------------------------------------------------------------------------------------------------------
 * Physical-device choice
 * ------------------------------------------------------------------------------------------------------------ */

static bool icontains(const char *hay, const char *needle) {
    size_t nh = strlen(hay), nn = strlen(needle);
    for (size_t i = 0; i + nn <= nh; i++) {
        size_t j = 0;
        while (j < nn && tolower((unsigned char)hay[i + j]) == tolower((unsigned char)needle[j])) j++;
        if (j == nn) return true;
    }
    return false;
}

static int compute_family(VkPhysicalDevice pd) {
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    VkQueueFamilyProperties *qf = calloc(n ? n : 1, sizeof *qf);
    if (!qf) return -1;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, qf);
    int best = -1;
    /* Prefer a compute family with timestamps; a dedicated (non-graphics) one first. */
    for (uint32_t pass = 0; pass < 2 && best < 0; pass++)
        for (uint32_t i = 0; i < n && best < 0; i++) {
            bool compute = qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT;
            bool dedicated = !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT);
            if (compute && qf[i].timestampValidBits > 0 && (pass == 1 || dedicated)) best = (int)i;
        }
    for (uint32_t i = 0; i < n && best < 0; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) best = (int)i;
    free(qf);
    return best;
}

vkvit_result vkvit__device_pick(vkvit_ctx *ctx, const char *want) {
    vkvit_result res = VKVIT_OK;
    uint32_t n = 0;
    VK_TRY(vkEnumeratePhysicalDevices(ctx->instance, &n, NULL));
    if (n == 0) return vkvit__error(VKVIT_ERROR_NO_DEVICE, "no Vulkan device found (is a Vulkan driver installed?)");
    VkPhysicalDevice *pds = calloc(n, sizeof *pds);
    if (!pds) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory listing %u devices", n);
    res = vkEnumeratePhysicalDevices(ctx->instance, &n, pds) == VK_SUCCESS ? VKVIT_OK : VKVIT_ERROR_VULKAN;
    int chosen = -1;
    if (res == VKVIT_OK && want && want[0]) {
        /* All decimal digits: an index, compared as text when it is too long for a number (no wrap, no clamp). */
        size_t digits = strspn(want, "0123456789");
        if (want[digits] == '\0') {
            unsigned long long idx = digits <= 9 ? strtoull(want, NULL, 10) : ULLONG_MAX;
            if (idx >= n)
                res = vkvit__error(VKVIT_ERROR_NO_DEVICE, "device index %s requested but there %s %u device%s (0 to %u)",
                                   want, n == 1 ? "is" : "are", n, n == 1 ? "" : "s", n - 1);
            else
                chosen = (int)idx;
        } else {
            for (uint32_t i = 0; i < n && chosen < 0; i++) {
                VkPhysicalDeviceProperties p;
                vkGetPhysicalDeviceProperties(pds[i], &p);
                if (icontains(p.deviceName, want)) chosen = (int)i;
            }
            if (chosen < 0) res = vkvit__error(VKVIT_ERROR_NO_DEVICE, "no Vulkan device name contains '%s'", want);
        }
    } else if (res == VKVIT_OK) {
        /* The first GPU in the loader's order, else the first other device: the loader (and Mesa's device-select
         * layer, and Windows' GPU preference) puts the system's default GPU first, which on a laptop is often the
         * integrated one the user asked for, not the first discrete GPU. */
        for (int gpu_pass = 1; gpu_pass >= 0 && chosen < 0; gpu_pass--)
            for (uint32_t i = 0; i < n && chosen < 0; i++) {
                VkPhysicalDeviceProperties p;
                vkGetPhysicalDeviceProperties(pds[i], &p);
                const bool gpu = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                                 p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
                                 p.deviceType == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU;
                if (gpu == (gpu_pass == 1) && p.apiVersion >= VK_API_VERSION_1_1 && compute_family(pds[i]) >= 0)
                    chosen = (int)i;
            }
        if (chosen < 0) res = vkvit__error(VKVIT_ERROR_NO_DEVICE, "none of the %u Vulkan devices supports Vulkan 1.1 compute", n);
    }
    if (res == VKVIT_OK) ctx->physical_device = pds[chosen];
    free(pds);
    return res;
fail:
    return res;
}

/* ------------------------------------------------------------------------------------------------------------
 * Logical device
 * ------------------------------------------------------------------------------------------------------------ */

static const char *const k_optional_exts[] = {
    VK_KHR_16BIT_STORAGE_EXTENSION_NAME,            /* core in 1.1, listed for 1.0-era hosts */
    VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME,      /* core in 1.2 */
    VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME,    /* core in 1.3 */
    VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME,       /* core in 1.2 */
    VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME,        /* core in 1.2 */
    VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME,        /* never core: the tensor-core GEMM of fp16-math sessions */
#if VKVIT_HAVE_KHR_COOPMAT
    VKVIT_KHR_COOPMAT_EXTENSION_NAME,               /* never core: the same GEMM on the cross-vendor extension (builds
                                                       with the KHR kernel only: others leave it off, as tested) */
#endif
    VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME,      /* core in 1.2: the memory model that GEMM's SPIR-V declares */
    VK_EXT_MEMORY_BUDGET_EXTENSION_NAME,            /* never core: heap budgets and usage (vkvit_ctx_memory_heaps,
                                                       the budget check of memory.c) */
};

/* The Vulkan version that made an extension of k_optional_exts core (0: never), so it is not enabled by name. */
static uint32_t ext_core_since(const char *e) {
    if (strcmp(e, VK_KHR_16BIT_STORAGE_EXTENSION_NAME) == 0) return VK_API_VERSION_1_1;
    if (strcmp(e, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME) == 0) return VK_API_VERSION_1_3;
    if (strcmp(e, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0) return 0;
    if (strcmp(e, VKVIT_KHR_COOPMAT_EXTENSION_NAME) == 0) return 0;
    if (strcmp(e, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME) == 0) return 0;
    return VK_API_VERSION_1_2;
}

uint32_t vkvit_required_device_extensions(const char **names, uint32_t cap) {
    uint32_t n = (uint32_t)VKVIT_ARRAY_LEN(k_optional_exts);
    for (uint32_t i = 0; names && i < n && i < cap; i++) names[i] = k_optional_exts[i];
    return n;
}

vkvit_result vkvit__device_create(vkvit_ctx *ctx, vkvit__device_wants wants) {
    vkvit_result res = VKVIT_OK;
    int fam = compute_family(ctx->physical_device);
    if (fam < 0) return vkvit__error(VKVIT_ERROR_NO_DEVICE, "device '%s' has no compute queue", ctx->info.name);
    ctx->queue_family = (uint32_t)fam;

    vkvit__ext_list exts = vkvit__device_exts(ctx->physical_device);
    /* What is core is what both the device and the instance speak: a 1.1 loader (Android 9 to 12) with a 1.3 driver
     * needs the extensions of 1.2 and 1.3 enabled like any other, or their feature structs reach a device that
     * never enabled them. */
    const uint32_t api = VKVIT_MIN(ctx->info.api_version, ctx->instance_api);
    const char *enable[VKVIT_ARRAY_LEN(k_optional_exts) + 3]; /* + huge pages, + the global priority, + NV coopmat2 */
    uint32_t n_enable = 0;
    /* VK_KHR_cooperative_matrix only where its kernel was chosen (query_device: no NV kernel, or VKVIT_COOPMAT_KHR=1):
     * a device that runs NV's keeps the extension set tested on the H100, and validation layers older than the
     * extension (Debian 12's 1.3.239) see nothing they do not know. */
    const bool khr = wants.khr_coopmat;
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(k_optional_exts); i++) {
        const char *e = k_optional_exts[i];
        const uint32_t since = ext_core_since(e);
        const bool core = since && api >= since;
        if (!khr && strcmp(e, VKVIT_KHR_COOPMAT_EXTENSION_NAME) == 0) continue;
        if (!core && vkvit__ext_has(&exts, e)) enable[n_enable++] = e;
    }
    ctx->huge_page_import = wants.huge_pages && vkvit__huge_page_import_possible(ctx->physical_device, &exts);
    if (ctx->huge_page_import) enable[n_enable++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    ctx->coopmat_nv_enabled = vkvit__nv_coopmat_feature(ctx->physical_device, &exts, api);
    ctx->coopmat_khr_enabled = khr && vkvit__khr_coopmat_feature(ctx->physical_device, &exts, api);
    /* VK_NV_cooperative_matrix2 only where its kernel was chosen (VKVIT_COOPMAT_NV2=1 on a device with its
     * features: the facts' coopmat2_tensor), on top of KHR's. */
    ctx->coopmat_nv2_enabled = wants.nv2_coopmat && ctx->coopmat_khr_enabled && ctx->caps.coopmat2_tensor;
    if (ctx->coopmat_nv2_enabled) enable[n_enable++] = VKVIT_NV_COOPMAT2_EXTENSION_NAME;
    /* A global priority (vkvit_ctx_desc.queue_priority): either extension gives the same create-info struct. */
    const char *prio_ext = vkvit__ext_has(&exts, VK_KHR_GLOBAL_PRIORITY_EXTENSION_NAME) ? VK_KHR_GLOBAL_PRIORITY_EXTENSION_NAME
                           : vkvit__ext_has(&exts, VK_EXT_GLOBAL_PRIORITY_EXTENSION_NAME) ? VK_EXT_GLOBAL_PRIORITY_EXTENSION_NAME
                                                                                          : NULL;
    free(exts.props);
    const VkQueueGlobalPriorityKHR prio_want = wants.queue_priority == VKVIT_QUEUE_PRIORITY_LOW
                                                   ? VK_QUEUE_GLOBAL_PRIORITY_LOW_KHR
                                                   : VK_QUEUE_GLOBAL_PRIORITY_HIGH_KHR;
    if (wants.queue_priority && !prio_ext) {
        ctx->info.queue_priority_fallback = 1;
        if (wants.queue_priority_strict)
            return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "device '%s' lists neither %s nor %s, so its queue cannot get "
                                "the %s global priority asked for (queue_priority_strict)", ctx->info.name,
                                VK_KHR_GLOBAL_PRIORITY_EXTENSION_NAME, VK_EXT_GLOBAL_PRIORITY_EXTENSION_NAME,
                                prio_want == VK_QUEUE_GLOBAL_PRIORITY_LOW_KHR ? "low" : "high");
    }
    if (wants.queue_priority && prio_ext) enable[n_enable++] = prio_ext;

    /* Enable exactly the features vkvit__query_device() found. */
    VkPhysicalDevice16BitStorageFeatures f16s = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
                                                 .storageBuffer16BitAccess = ctx->info.fp16_storage};
    VkPhysicalDeviceShaderFloat16Int8Features f16a = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
        .shaderFloat16 = ctx->info.fp16_arithmetic};
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT sgc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT,
        .subgroupSizeControl = ctx->info.subgroup_size_control,
        .computeFullSubgroups = ctx->info.subgroup_size_control};
    VkPhysicalDeviceTimelineSemaphoreFeatures tl = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
                                                    .timelineSemaphore = ctx->info.timeline_semaphore};
    void *chain = &f16s;
    if (ctx->info.fp16_arithmetic) { f16a.pNext = chain; chain = &f16a; }
    if (ctx->info.subgroup_size_control) { sgc.pNext = chain; chain = &sgc; }
    if (ctx->info.timeline_semaphore) { tl.pNext = chain; chain = &tl; }
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, .cooperativeMatrix = VK_TRUE};
    VkPhysicalDeviceVulkanMemoryModelFeatures mm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES, .vulkanMemoryModel = VK_TRUE};
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cmk = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, .cooperativeMatrix = VK_TRUE};
    if (ctx->coopmat_nv_enabled) { cm.pNext = chain; chain = &cm; }
    if (ctx->coopmat_khr_enabled) { cmk.pNext = chain; chain = &cmk; }
    if (ctx->coopmat_nv_enabled || ctx->coopmat_khr_enabled) { mm.pNext = chain; chain = &mm; }
    vkvit__coopmat2_features cm2 = {.sType = VKVIT_STRUCTURE_TYPE_COOPMAT2_FEATURES_NV,
                                    .cooperativeMatrixFlexibleDimensions = VK_TRUE,
                                    .cooperativeMatrixPerElementOperations = VK_TRUE,
                                    .cooperativeMatrixTensorAddressing = VK_TRUE};
    if (ctx->coopmat_nv2_enabled) { cm2.pNext = chain; chain = &cm2; }
    VkPhysicalDeviceFeatures2 feats = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = chain};
    feats.features.shaderInt64 = wants.int64 ? VK_TRUE : VK_FALSE; /* the texel kernels' stores */
    ctx->int64_enabled = wants.int64;

    float prio = 1.0f;
    VkDeviceQueueGlobalPriorityCreateInfoKHR global = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_GLOBAL_PRIORITY_CREATE_INFO_KHR, .globalPriority = prio_want};
    VkDeviceQueueCreateInfo qinfo = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .pNext = wants.queue_priority && prio_ext ? &global : NULL,
        .queueFamilyIndex = ctx->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &prio,
    };
    VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &feats,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qinfo,
        .enabledExtensionCount = n_enable,
        .ppEnabledExtensionNames = enable,
    };
    VkResult vr = vkCreateDevice(ctx->physical_device, &info, NULL, &ctx->device);
    if (vr == VK_ERROR_NOT_PERMITTED_KHR && qinfo.pNext) {
        /* The driver refuses this priority to this process (HIGH usually needs privileges). */
        ctx->info.queue_priority_fallback = 2;
        if (wants.queue_priority_strict)
            return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "device '%s' refused the %s global priority asked for "
                                "(vkCreateDevice: VK_ERROR_NOT_PERMITTED; queue_priority_strict)", ctx->info.name,
                                prio_want == VK_QUEUE_GLOBAL_PRIORITY_LOW_KHR ? "low" : "high");
        qinfo.pNext = NULL;
        vr = vkCreateDevice(ctx->physical_device, &info, NULL, &ctx->device);
    }
    VK_TRY(vr);
    ctx->info.queue_priority = qinfo.pNext ? (int)prio_want : 0;
    ctx->owns_device = true;
    vkvit__device_queue_facts(ctx->physical_device, ctx->queue_family, &ctx->info);
    return VKVIT_OK;
fail:
    return res;
}

/* Adopt mode: narrow what vkvit uses to what the host enabled. */
void vkvit__device_adopt(vkvit_ctx *ctx, const vkvit_host_device *h) {
    bool fp16s = false, fp16a = false, sgc = false, tl = false, coopmat = false, coopmat_khr = false;
    bool memory_model = false;
    for (const VkBaseInStructure *s = h->enabled_features ? h->enabled_features->pNext : NULL; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR) { /* not in old headers */
            coopmat_khr |= ((const VkPhysicalDeviceCooperativeMatrixFeaturesKHR *)s)->cooperativeMatrix;
            continue;
        }
        switch (s->sType) {
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV:
            coopmat |= ((const VkPhysicalDeviceCooperativeMatrixFeaturesNV *)s)->cooperativeMatrix;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES:
            fp16s |= ((const VkPhysicalDeviceVulkan11Features *)s)->storageBuffer16BitAccess;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES:
            fp16a |= ((const VkPhysicalDeviceVulkan12Features *)s)->shaderFloat16;
            tl |= ((const VkPhysicalDeviceVulkan12Features *)s)->timelineSemaphore;
            memory_model |= ((const VkPhysicalDeviceVulkan12Features *)s)->vulkanMemoryModel;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES:
            memory_model |= ((const VkPhysicalDeviceVulkanMemoryModelFeatures *)s)->vulkanMemoryModel;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES:
            sgc |= ((const VkPhysicalDeviceVulkan13Features *)s)->subgroupSizeControl &&
                   ((const VkPhysicalDeviceVulkan13Features *)s)->computeFullSubgroups;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES:
            fp16s |= ((const VkPhysicalDevice16BitStorageFeatures *)s)->storageBuffer16BitAccess;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES:
            fp16a |= ((const VkPhysicalDeviceShaderFloat16Int8Features *)s)->shaderFloat16;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT:
            sgc |= ((const VkPhysicalDeviceSubgroupSizeControlFeaturesEXT *)s)->subgroupSizeControl &&
                   ((const VkPhysicalDeviceSubgroupSizeControlFeaturesEXT *)s)->computeFullSubgroups;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES:
            tl |= ((const VkPhysicalDeviceTimelineSemaphoreFeatures *)s)->timelineSemaphore;
            break;
        default: break;
        }
    }
    ctx->info.fp16_storage &= fp16s;
    ctx->info.fp16_arithmetic &= fp16a;
    /* The texel kernels store 64-bit words: without the host's shaderInt64 the CPU kernels read storage buffers. */
    ctx->int64_enabled = h->enabled_features && h->enabled_features->features.shaderInt64;
    ctx->info.subgroup_size_control &= sgc;
    ctx->info.timeline_semaphore &= tl;
    /* each cooperative-matrix GEMM needs its extension and its feature both enabled (and the memory model) */
    bool coopmat_ext = false, coopmat_khr_ext = false, budget_ext = false;
    for (uint32_t i = 0; i < h->enabled_device_extension_count && h->enabled_device_extensions; i++) {
        const char *e = h->enabled_device_extensions[i];
        coopmat_ext |= e && strcmp(e, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0;
        coopmat_khr_ext |= e && strcmp(e, VKVIT_KHR_COOPMAT_EXTENSION_NAME) == 0;
        budget_ext |= e && strcmp(e, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME) == 0;
    }
    /* heap budgets only from a device the host enabled VK_EXT_memory_budget on (else: heap sizes) */
    ctx->caps.memory_budget &= budget_ext;
    ctx->info.memory_budget = ctx->caps.memory_budget;
    ctx->coopmat_nv_enabled = coopmat && coopmat_ext && memory_model;
    ctx->coopmat_khr_enabled = coopmat_khr && coopmat_khr_ext && memory_model;
    if (!ctx->info.subgroup_size_control) ctx->info.subgroup_size_min = ctx->info.subgroup_size_max = 0;
    ctx->info.adopted = 1;
}

void vkvit__ctx_add_workaround(vkvit_ctx *ctx, const char *text) {
    char *list = ctx->info.workarounds;
    const size_t n = strlen(list), cap = sizeof ctx->info.workarounds;
    if (n + 1 < cap) snprintf(list + n, cap - n, "%s%s", n ? ", " : "", text);
}


/* ------------------------------------------------------------------------------------------------------------
 * ctx create / destroy
 * ------------------------------------------------------------------------------------------------------------ */

vkvit_result vkvit__host_device_check(const vkvit_host_device *h) {
    if (!h->instance) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: host.instance is NULL");
    if (!h->physical_device)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: host.physical_device is NULL");
    if (!h->device) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: host.device is NULL");
    if (!h->queue) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: host.queue is NULL");
    if (!h->get_instance_proc_addr)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: host.get_instance_proc_addr is NULL");
    return VKVIT_OK;
}

/* The host's queue family must exist and compute; without timestamps on it, vkvit's timers are off
 * (vkvit_device_info.timestamps: vkvit__query_device counted any compute family's). */
vkvit_result vkvit__host_queue_family_check(vkvit_ctx *ctx, uint32_t family) {
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical_device, &n, NULL);
    VkQueueFamilyProperties *qf = calloc(n ? n : 1, sizeof *qf);
    if (!qf) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_ctx_create: out of host memory");
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical_device, &n, qf);
    vkvit_result res = VKVIT_OK;
    if (family >= n)
        res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: host.queue_family_index %u is not a queue "
                           "family of device '%s', which has %u", family, ctx->info.name, n);
    else if (!(qf[family].queueFlags & VK_QUEUE_COMPUTE_BIT))
        res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: host.queue_family_index %u of device '%s' "
                           "has no VK_QUEUE_COMPUTE_BIT", family, ctx->info.name);
    else if (qf[family].timestampValidBits == 0)
        ctx->info.timestamps = 0;
    free(qf);
    if (res == VKVIT_OK) vkvit__device_queue_facts(ctx->physical_device, family, &ctx->info);
    return res;
}

void vkvit__device_queue_facts(VkPhysicalDevice pd, uint32_t family, vkvit_device_info *info) {
    if (family == UINT32_MAX) {
        const int f = compute_family(pd);
        if (f < 0) return;
        family = (uint32_t)f;
    }
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    VkQueueFamilyProperties *qf = calloc(n ? n : 1, sizeof *qf);
    if (!qf) return;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, qf);
    if (family < n) {
        info->queue_family_index = family;
        info->queue_flags = qf[family].queueFlags;
        info->queue_compute_only = (qf[family].queueFlags & VK_QUEUE_COMPUTE_BIT) &&
                                   !(qf[family].queueFlags & VK_QUEUE_GRAPHICS_BIT);
    }
    free(qf);
}

void vkvit__device_note_priority(vkvit_ctx *ctx) {
    if (ctx->info.queue_priority_fallback == 1)
        vkvit__ctx_add_workaround(ctx, "default queue priority: the device lists no VK_KHR/EXT_global_priority");
    else if (ctx->info.queue_priority_fallback == 2)
        vkvit__ctx_add_workaround(ctx, "default queue priority: the driver refused the global priority "
                                       "(VK_ERROR_NOT_PERMITTED)");
}

void vkvit__device_read_limits(vkvit_ctx *ctx) {
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 props2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
    vkGetPhysicalDeviceProperties2(ctx->physical_device, &props2); /* core in Vulkan 1.1, checked above */
    const VkPhysicalDeviceProperties props = props2.properties;
    ctx->limits = props.limits;
    ctx->max_allocation = m3.maxMemoryAllocationSize;
    memcpy(ctx->pipeline_cache_uuid, props.pipelineCacheUUID, VK_UUID_SIZE);
    vkGetPhysicalDeviceMemoryProperties(ctx->physical_device, &ctx->mem_props);

}

vkvit_result vkvit__device_finish(vkvit_ctx *ctx, bool own_device) {
    vkvit_result res = VKVIT_OK;
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical_device, &nq, NULL);
    VkQueueFamilyProperties *qf = calloc(nq ? nq : 1, sizeof *qf);
    if (!qf) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_ctx_create: out of host memory");
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical_device, &nq, qf);
    ctx->timestamp_valid_bits = ctx->queue_family < nq ? VKVIT_MIN(qf[ctx->queue_family].timestampValidBits, 64u) : 0;
    free(qf);
    volkLoadDeviceTable(&ctx->vk, ctx->device);
    if (own_device) ctx->vk.vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);

    VkCommandPoolCreateInfo pool_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT | VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = ctx->queue_family,
    };
    VK_TRY(ctx->vk.vkCreateCommandPool(ctx->device, &pool_info, NULL, &ctx->cmd_pool));
    VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_TRY(ctx->vk.vkCreateFence(ctx->device, &fence_info, NULL, &ctx->fence));

    return VKVIT_OK;
fail:
    return res;
}

vkvit_result vkvit__physical_devices(vkvit_ctx *ctx, VkPhysicalDevice **out, uint32_t *count) {
    vkvit_result res = VKVIT_OK;
    uint32_t n = 0;
    *out = NULL;
    *count = 0;
    VK_TRY(vkEnumeratePhysicalDevices(ctx->instance, &n, NULL));
    VkPhysicalDevice *pds = calloc(n ? n : 1, sizeof *pds);
    if (!pds) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_enumerate_devices: out of host memory");
    if ((res = vkEnumeratePhysicalDevices(ctx->instance, &n, pds) == VK_SUCCESS ? VKVIT_OK : VKVIT_ERROR_VULKAN)) {
        free(pds);
        return vkvit__error(res, "vkEnumeratePhysicalDevices failed");
    }
    *out = pds;
    *count = n;
    return VKVIT_OK;
fail:
    return res;
}

void vkvit__instance_destroy(vkvit_ctx *ctx) {
    if (ctx->instance) vkDestroyInstance(ctx->instance, NULL);
    ctx->instance = VK_NULL_HANDLE;
}

void vkvit_ctx_destroy(vkvit_ctx *ctx) {
    if (!ctx) return;
    const unsigned borrowers = atomic_load(&ctx->borrowers);
    if (borrowers) { /* freeing what they use would turn the caller's order bug into a use-after-free */
        vkvit__ctx_fail(ctx, vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_destroy '%s': %u model(s) created "
                                          "on it are alive; destroy them (after their sessions) first (the ctx is "
                                          "left alive and leaked)", ctx->label, borrowers));
        return;
    }
    /* A host device refused before its function table was loaded carries nothing of vkvit's. */
    if (ctx->device && ctx->vk.vkQueueWaitIdle) {
        if (ctx->queue) vkvit__queue_wait_idle(ctx);
        if (ctx->staging) {
            vkvit__buffer_destroy(ctx, ctx->staging);
            free(ctx->staging);
        }
        vkvit__kernel_table_destroy(ctx); /* empty unless a recording was never freed */
        vkvit__pipeline_cache_save(ctx);
        if (ctx->pipeline_cache) ctx->vk.vkDestroyPipelineCache(ctx->device, ctx->pipeline_cache, NULL);
        if (ctx->fence) ctx->vk.vkDestroyFence(ctx->device, ctx->fence, NULL);
        if (ctx->cmd_pool) ctx->vk.vkDestroyCommandPool(ctx->device, ctx->cmd_pool, NULL);
        if (ctx->owns_device) ctx->vk.vkDestroyDevice(ctx->device, NULL);
    } else if (ctx->device && ctx->owns_device) {
        /* vkvit's own device, refused before its function table was loaded: nothing was created on it yet */
        vkDestroyDevice(ctx->device, NULL);
    }
    if (ctx->messenger) vkDestroyDebugUtilsMessengerEXT(ctx->instance, ctx->messenger, NULL);
    if (ctx->owns_instance && ctx->instance) vkDestroyInstance(ctx->instance, NULL);
    vkvit__mutex_destroy(ctx->kernel_lock);
    vkvit__mutex_destroy(ctx->oneshot_lock);
    vkvit__mutex_destroy(ctx->queue_lock);
    vkvit__mutex_destroy(ctx->log_lock); /* after the instance: destroying it may still log */
    free(ctx);
}

uint32_t vkvit_ctx_queue_family(const vkvit_ctx *ctx) { return ctx ? ctx->queue_family : 0; }
