/* Instance, validation layer, physical-device choice, features and quirks, logical device — or adoption of a
 * host application's device. */
#include "vk/vk.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ------------------------------------------------------------------------------------------------------------
 * Errors and logging
 * ------------------------------------------------------------------------------------------------------------ */

const char *vkvit__vk_result_name(VkResult r) {
    switch (r) {
#define X(n) case n: return #n;
    X(VK_SUCCESS) X(VK_NOT_READY) X(VK_TIMEOUT) X(VK_EVENT_SET) X(VK_EVENT_RESET) X(VK_INCOMPLETE)
    X(VK_ERROR_OUT_OF_HOST_MEMORY) X(VK_ERROR_OUT_OF_DEVICE_MEMORY) X(VK_ERROR_INITIALIZATION_FAILED)
    X(VK_ERROR_DEVICE_LOST) X(VK_ERROR_MEMORY_MAP_FAILED) X(VK_ERROR_LAYER_NOT_PRESENT)
    X(VK_ERROR_EXTENSION_NOT_PRESENT) X(VK_ERROR_FEATURE_NOT_PRESENT) X(VK_ERROR_INCOMPATIBLE_DRIVER)
    X(VK_ERROR_TOO_MANY_OBJECTS) X(VK_ERROR_FORMAT_NOT_SUPPORTED) X(VK_ERROR_FRAGMENTED_POOL)
    X(VK_ERROR_UNKNOWN) X(VK_ERROR_OUT_OF_POOL_MEMORY) X(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    X(VK_ERROR_FRAGMENTATION) X(VK_PIPELINE_COMPILE_REQUIRED)
#undef X
    default: return "VK_RESULT_UNKNOWN";
    }
}

static vkvit_result category(VkResult r) {
    switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: return VKVIT_ERROR_OUT_OF_HOST_MEMORY;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return VKVIT_ERROR_OUT_OF_DEVICE_MEMORY;
    case VK_ERROR_DEVICE_LOST: return VKVIT_ERROR_DEVICE_LOST;
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER: return VKVIT_ERROR_UNSUPPORTED;
    default: return VKVIT_ERROR_VULKAN;
    }
}

vkvit_result vkvit__vk_error(VkResult r, const char *call, const char *func, const char *label) {
    /* Keep only the function name of the call expression: "ctx->vk.vkCreateBuffer(...)" -> "vkCreateBuffer". */
    char name[96];
    const char *p = strstr(call, "vk");
    while (p && p[2] && !isupper((unsigned char)p[2])) p = strstr(p + 2, "vk");
    size_t n = 0;
    if (p)
        while (p[n] && (isalnum((unsigned char)p[n]) || p[n] == '_') && n + 1 < sizeof name) n++;
    memcpy(name, p ? p : call, n);
    name[n] = '\0';
    return vkvit__error(category(r), "%s%s%s: %s failed with %s", func, label ? " " : "", label ? label : "",
                        n ? name : call, vkvit__vk_result_name(r));
}

/* Every call of the host's log callback goes through here: one at a time, since validation messages can arrive on
 * the threads that compile a session's pipelines (vkvit__kernels_create) and the callback need not be reentrant. */
static void emit_log(vkvit_ctx *ctx, int level, const char *message) {
    if (!ctx || !ctx->log) return;
    if (ctx->log_lock) vkvit__mutex_lock(ctx->log_lock);
    ctx->log(ctx->log_user, level, message);
    if (ctx->log_lock) vkvit__mutex_unlock(ctx->log_lock);
}

vkvit_result vkvit__ctx_fail(vkvit_ctx *ctx, vkvit_result code) {
    emit_log(ctx, VKVIT_LOG_ERROR, vkvit_last_error());
    return code;
}

void vkvit__ctx_log(vkvit_ctx *ctx, int level, const char *fmt, ...) {
    if (!ctx || !ctx->log) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit_log(ctx, level, msg);
}

void vkvit__set_object_name(vkvit_ctx *ctx, VkObjectType type, uint64_t handle, const char *name) {
    if (!ctx->has_debug_utils || !vkSetDebugUtilsObjectNameEXT || !name || !handle) return;
    VkDebugUtilsObjectNameInfoEXT info = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
        .objectType = type,
        .objectHandle = handle,
        .pObjectName = name,
    };
    vkSetDebugUtilsObjectNameEXT(ctx->device, &info);
}

/* ------------------------------------------------------------------------------------------------------------
 * Validation messages: counted, the first few kept, forwarded to the log callback
 * ------------------------------------------------------------------------------------------------------------ */

static VKAPI_ATTR VkBool32 VKAPI_CALL debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT types,
                                                     const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                     void *user) {
    vkvit_ctx *ctx = user;
    (void)types;
    if (!(severity & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)))
        return VK_FALSE;
    unsigned i = atomic_fetch_add(&ctx->validation_messages, 1u);
    if (i < VKVIT_VALIDATION_LOG_CAP)
        snprintf(ctx->validation_log[i], sizeof ctx->validation_log[i], "%s", data->pMessage ? data->pMessage : "");
    emit_log(ctx, VKVIT_LOG_WARNING, data->pMessage ? data->pMessage : "(validation message)");
    return VK_FALSE;
}

uint32_t vkvit_ctx_validation_messages(const vkvit_ctx *ctx, int reset) {
    if (!ctx) return 0;
    vkvit_ctx *c = (vkvit_ctx *)ctx;
    return reset ? atomic_exchange(&c->validation_messages, 0u) : atomic_load(&c->validation_messages);
}

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
static uint32_t layer_spec_version(const char *name) {
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

static int env_flag(const char *name) {
    const char *v = getenv(name);
    return v && v[0] && strcmp(v, "0") != 0;
}

/* Creates vkvit's own instance. `validation`: 1 required, 0 off. */
static vkvit_result create_instance(vkvit_ctx *ctx, bool validation) {
    vkvit_result res = VKVIT_OK;
    const char *layers[1];
    uint32_t n_layers = 0;
    const char *exts[4];
    uint32_t n_exts = 0;

    if (validation) {
        if (!layer_spec_version("VK_LAYER_KHRONOS_validation"))
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
        .pfnUserCallback = debug_callback,
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
 * Physical-device features: what the device has, what vkvit uses
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct ext_list {
    VkExtensionProperties *props;
    uint32_t n;
} ext_list;

static bool ext_has(const ext_list *l, const char *name) {
    for (uint32_t i = 0; i < l->n; i++)
        if (strcmp(l->props[i].extensionName, name) == 0) return true;
    return false;
}

static ext_list device_exts(VkPhysicalDevice pd) {
    ext_list l = {0};
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &l.n, NULL) != VK_SUCCESS || l.n == 0) return l;
    l.props = calloc(l.n, sizeof *l.props);
    if (!l.props || vkEnumerateDeviceExtensionProperties(pd, NULL, &l.n, l.props) != VK_SUCCESS) l.n = 0;
    return l;
}

/* The quirk table. Matches by driver ID / vendor and states why. */
static uint32_t quirks_for(const vkvit_device_info *info, VkDriverId driver) {
    uint32_t q = 0;
    if (info->device_type == VK_PHYSICAL_DEVICE_TYPE_CPU || driver == VK_DRIVER_ID_MESA_LLVMPIPE ||
        driver == VK_DRIVER_ID_GOOGLE_SWIFTSHADER)
        q |= VKVIT_QUIRK_CPU_DEVICE | VKVIT_QUIRK_NO_F16_ARITHMETIC; /* x86 has no fp16 math: emulated, slow */
    return q;
}

/* What the caller asked vkvit not to use: the ctx desc and the environment, read once per ctx creation (and once
 * per vkvit_enumerate_devices call, so `vkvit info` shows what a ctx would use). */
typedef struct overrides {
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
} overrides;

static overrides read_overrides(int disable_f16) {
    return (overrides){
        .f16 = disable_f16 || env_flag("VKVIT_DISABLE_F16"),
        .subgroup = env_flag("VKVIT_DISABLE_SUBGROUP"),
        .coopmat = env_flag("VKVIT_DISABLE_COOPMAT"),
        .texel = env_flag("VKVIT_DISABLE_TEXEL"),
        .unrolled = env_flag("VKVIT_DISABLE_UNROLLED"),
        .huge_pages = env_flag("VKVIT_DISABLE_HUGE_PAGES"),
        .coopmat_emulate = env_flag("VKVIT_COOPMAT_EMULATE"),
        .coopmat_khr = env_flag("VKVIT_COOPMAT_KHR"),
    };
}

/* Whether the device offers a cooperative-matrix extension (`ext`) with its cooperativeMatrix feature (queried
 * through the feature struct of type `stype`), and the vulkanMemoryModel feature (core 1.2,
 * VK_KHR_vulkan_memory_model before): glslang compiles GL_NV_ and GL_KHR_cooperative_matrix to SPIR-V in the Vulkan
 * memory model (their loads and stores carry memory-scope operands), which needs that feature enabled. The NV and
 * KHR feature structs have the same members (sType, pNext, cooperativeMatrix, cooperativeMatrixRobustBufferAccess),
 * so one struct serves both. */
static bool coopmat_feature(VkPhysicalDevice pd, const ext_list *exts, uint32_t api, const char *ext,
                            VkStructureType stype) {
    if (!ext_has(exts, ext)) return false;
    if (api < VK_API_VERSION_1_2 && !ext_has(exts, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME)) return false;
    VkPhysicalDeviceVulkanMemoryModelFeatures mm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {.sType = stype, .pNext = &mm};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &cm};
    vkGetPhysicalDeviceFeatures2(pd, &f);
    return cm.cooperativeMatrix == VK_TRUE && mm.vulkanMemoryModel == VK_TRUE;
}
static bool nv_coopmat_feature(VkPhysicalDevice pd, const ext_list *exts, uint32_t api) {
    return coopmat_feature(pd, exts, api, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME,
                           VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
}
static bool khr_coopmat_feature(VkPhysicalDevice pd, const ext_list *exts, uint32_t api) {
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
            cm[k].AType == VK_COMPONENT_TYPE_FLOAT16_NV && cm[k].BType == VK_COMPONENT_TYPE_FLOAT16_NV && cm[k].CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
            cm[k].DType == VK_COMPONENT_TYPE_FLOAT32_NV && cm[k].scope == VK_SCOPE_SUBGROUP_NV)
            return true;
    return false;
}

/* Whether VK_KHR_cooperative_matrix's property list has gemm_coopmat.comp's shape: fp16 A/B, fp32 C/Result,
 * 16x16x16, subgroup scope, no saturation. */
static bool khr_coopmat_f16_shape(VkPhysicalDevice pd) {
    const VkInstance instance = volkGetLoadedInstance();
    const PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR get =
        instance ? (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)vkGetInstanceProcAddr(
                       instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
                 : NULL;
    if (!get) return false;
    VkCooperativeMatrixPropertiesKHR cm[64];
    uint32_t n = 0;
    if (get(pd, &n, NULL) != VK_SUCCESS) return false;
    n = n < 64 ? n : 64;
    for (uint32_t k = 0; k < n; k++)
        cm[k] = (VkCooperativeMatrixPropertiesKHR){.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR};
    const VkResult r = get(pd, &n, cm);
    for (uint32_t k = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && k < n; k++)
        if (cm[k].MSize == 16 && cm[k].NSize == 16 && cm[k].KSize == 16 &&
            cm[k].AType == VK_COMPONENT_TYPE_FLOAT16_KHR && cm[k].BType == VK_COMPONENT_TYPE_FLOAT16_KHR &&
            cm[k].CType == VK_COMPONENT_TYPE_FLOAT32_KHR && cm[k].ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
            !cm[k].saturatingAccumulation && cm[k].scope == VK_SCOPE_SUBGROUP_KHR)
            return true;
    return false;
}

/* Whether the NV kernel can run: built (glslang compiled it), its feature enabled (nv_enabled), its shape listed
 * and 32-wide subgroups (one warp = one subgroup). */
static bool nv_kernel_usable(VkPhysicalDevice pd, bool nv_enabled, const vkvit_device_info *info) {
    return VKVIT_HAVE_NV_COOPMAT && nv_enabled && info->subgroup_size == 32 && nv_coopmat_f16_shape(pd);
}

/* Whether fp16-math GEMMs run on cooperative matrices (before the first-use self-check of src/coopmat_guard.c):
 * the NV kernel where it can run (nv, from nv_kernel_usable), or the KHR one where it is built, its feature enabled
 * (khr_enabled), its shape listed and the subgroups 32 wide — NV's when both can run, unless VKVIT_COOPMAT_KHR=1
 * (*khr says which) — or on request (VKVIT_COOPMAT_EMULATE=1) the emulated kernel on any device with fp16 math
 * (*emulated). */
static bool coopmat_runs(VkPhysicalDevice pd, bool nv, bool khr_enabled, const vkvit_device_info *info,
                         overrides off, bool *emulated, bool *khr) {
    const bool f16_math = info->fp16_arithmetic && info->fp16_in_use && !off.coopmat &&
                          info->max_shared_memory >= VKVIT_COOPMAT_SHARED_BYTES;
    const bool khr_ok = VKVIT_HAVE_KHR_COOPMAT && khr_enabled && info->subgroup_size == 32 && khr_coopmat_f16_shape(pd);
    *khr = f16_math && khr_ok && (!nv || off.coopmat_khr);
    *emulated = f16_math && !nv && !*khr && off.coopmat_emulate;
    return f16_math && (nv || *khr || *emulated);
}

/* Appends ", text" (or "text" to an empty list) to a comma-separated list of `cap` bytes, truncating. */
static void add_workaround(char *list, size_t cap, const char *text) {
    const size_t n = strlen(list);
    if (n + 1 < cap) snprintf(list + n, cap - n, "%s%s", n ? ", " : "", text);
}

static void describe_quirks(uint32_t quirks, const vkvit_device_info *info, overrides off, char *out, size_t cap) {
    out[0] = '\0';
    size_t n = 0;
#define ADD(s) n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s%s", n ? ", " : "", s)
    if (quirks & VKVIT_QUIRK_CPU_DEVICE) ADD("cpu-device (large register tiles, fp32 kernels)");
    if (quirks & VKVIT_QUIRK_NO_F16_ARITHMETIC) ADD("no-fp16-arithmetic");
    if (off.f16) ADD("fp16 disabled by request");
    if (off.subgroup) ADD("subgroup reductions disabled by request (VKVIT_DISABLE_SUBGROUP)");
    else if (!info->subgroup_arithmetic) ADD("no subgroup arithmetic (shared-memory reductions)");
    if (off.texel && (quirks & VKVIT_QUIRK_CPU_DEVICE))
        ADD("texel-buffer operand reads disabled by request (VKVIT_DISABLE_TEXEL)");
    /* The spirv-opt unrolled CPU GEMM variants (shaders/variants.cmake) serve the texel kernels: say why they do not. */
    if (info->texel_reads_in_use && off.unrolled)
        ADD("unrolled CPU GEMM variants disabled by request (VKVIT_DISABLE_UNROLLED)");
    else if (info->texel_reads_in_use && !VKVIT_HAVE_GEMM_CPU_UNROLLED)
        ADD("no unrolled CPU GEMM variants (built without a working spirv-opt or with VKVIT_UNROLL_SHADERS=OFF: "
            "2-3x slower GEMM pipeline creation)");
    if (off.huge_pages && (quirks & VKVIT_QUIRK_CPU_DEVICE))
        ADD("huge-page buffer memory disabled by request (VKVIT_DISABLE_HUGE_PAGES)");
    if (off.coopmat) ADD("cooperative matrix disabled by request (VKVIT_DISABLE_COOPMAT)");
    else if (info->cooperative_matrix_nv && !VKVIT_HAVE_NV_COOPMAT &&
             !(info->cooperative_matrix && VKVIT_HAVE_KHR_COOPMAT))
        ADD("cooperative matrix unused (built without the NV kernel: glslang lacked GL_NV_cooperative_matrix)");
    else if (info->cooperative_matrix && !info->cooperative_matrix_nv && !VKVIT_HAVE_KHR_COOPMAT)
        ADD("cooperative matrix unused (VK_KHR_cooperative_matrix: built without the KHR kernel, glslang < 13)");
#undef ADD
}

/* Fills `info` (and optionally the quirk bits) for one physical device. */
static void query_device(VkPhysicalDevice pd, uint32_t instance_api, overrides off, vkvit_device_info *info,
                         uint32_t *quirks_out) {
    memset(info, 0, sizeof *info);
    ext_list exts = device_exts(pd);

    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);
    uint32_t api = props.apiVersion < instance_api ? props.apiVersion : instance_api;

    VkPhysicalDeviceDriverProperties driver = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceSubgroupSizeControlPropertiesEXT sgc_props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
    VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                                             .pNext = NULL};
    bool has_driver_props = api >= VK_API_VERSION_1_2 || ext_has(&exts, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    bool has_sgc = api >= VK_API_VERSION_1_3 || ext_has(&exts, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
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
    bool has_f16a = api >= VK_API_VERSION_1_2 || ext_has(&exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    bool has_tl = api >= VK_API_VERSION_1_2 || ext_has(&exts, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME);
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
    info->subgroup_size_control = has_sgc && sgc.subgroupSizeControl && sgc.computeFullSubgroups;
    if (info->subgroup_size_control) {
        info->subgroup_size_min = sgc_props.minSubgroupSize;
        info->subgroup_size_max = sgc_props.maxSubgroupSize;
    }
    info->cooperative_matrix = ext_has(&exts, "VK_KHR_cooperative_matrix");
    info->cooperative_matrix_nv = ext_has(&exts, "VK_NV_cooperative_matrix");
    info->subgroup_in_use = info->subgroup_arithmetic && !off.subgroup;
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

    uint32_t quirks = quirks_for(info, has_driver_props ? driver.driverID : (VkDriverId)0);
    info->fp16_in_use = info->fp16_storage && !off.f16;
    bool emulated, khr;
    /* The KHR feature is asked for only where the KHR kernel could be chosen (built, and no NV kernel or
     * VKVIT_COOPMAT_KHR=1): validation layers older than the extension (Debian 12's) flag its feature struct, and a
     * device that runs NV's kernel then sees exactly the calls tested on the H100. */
    const bool nv = nv_kernel_usable(pd, nv_coopmat_feature(pd, &exts, props.apiVersion), info);
    const bool want_khr = VKVIT_HAVE_KHR_COOPMAT && (off.coopmat_khr || !nv);
    const bool ask_khr = want_khr && !off.khr_layer_too_old;
    info->cooperative_matrix_in_use =
        coopmat_runs(pd, nv, ask_khr && khr_coopmat_feature(pd, &exts, props.apiVersion), info, off, &emulated, &khr);
    info->cooperative_matrix_khr_kernel = info->cooperative_matrix_in_use && khr;
    /* Texel-buffer operand reads (vk.h, caps.texel_reads): CPU devices only, and only where every tensor a storage
     * buffer can hold also fits a texel view in both formats (RGBA32F, RGBA16F) at every offset a storage buffer
     * can be bound at, and shaderInt64 is there (the texel kernels write pairs of floats as 64-bit words). */
    VkFormatProperties f32, f16;
    vkGetPhysicalDeviceFormatProperties(pd, VK_FORMAT_R32G32B32A32_SFLOAT, &f32);
    vkGetPhysicalDeviceFormatProperties(pd, VK_FORMAT_R16G16B16A16_SFLOAT, &f16);
    const VkFormatFeatureFlags utb = VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT;
    info->texel_reads_in_use = (quirks & VKVIT_QUIRK_CPU_DEVICE) && !off.texel && (f32.bufferFeatures & utb) &&
                               (f16.bufferFeatures & utb) &&
                               (uint64_t)props.limits.maxTexelBufferElements * 8 >= props.limits.maxStorageBufferRange &&
                               props.limits.minTexelBufferOffsetAlignment <=
                                   VKVIT_MAX(props.limits.minStorageBufferOffsetAlignment, 4) &&
                               feats2.features.shaderInt64;
    describe_quirks(quirks, info, off, info->workarounds, sizeof info->workarounds);
    if (emulated) add_workaround(info->workarounds, sizeof info->workarounds,
                                 "cooperative matrix emulated (VKVIT_COOPMAT_EMULATE, a test path)");
    if (want_khr && off.khr_layer_too_old && ext_has(&exts, VKVIT_KHR_COOPMAT_EXTENSION_NAME))
        add_workaround(info->workarounds, sizeof info->workarounds,
                       "KHR cooperative-matrix kernel off: the validation layer predates VK_KHR_cooperative_matrix "
                       "and would drop its feature from the device");
    if (quirks_out) *quirks_out = quirks;
    free(exts.props);
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

static vkvit_result pick_device(vkvit_ctx *ctx, const char *want) {
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
        static const VkPhysicalDeviceType order[] = {
            VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU,
            VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU, VK_PHYSICAL_DEVICE_TYPE_CPU, VK_PHYSICAL_DEVICE_TYPE_OTHER};
        for (size_t t = 0; t < VKVIT_ARRAY_LEN(order) && chosen < 0; t++)
            for (uint32_t i = 0; i < n && chosen < 0; i++) {
                VkPhysicalDeviceProperties p;
                vkGetPhysicalDeviceProperties(pds[i], &p);
                if (p.deviceType == order[t] && p.apiVersion >= VK_API_VERSION_1_1 && compute_family(pds[i]) >= 0)
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
};

/* The Vulkan version that made an extension of k_optional_exts core (0: never), so it is not enabled by name. */
static uint32_t ext_core_since(const char *e) {
    if (strcmp(e, VK_KHR_16BIT_STORAGE_EXTENSION_NAME) == 0) return VK_API_VERSION_1_1;
    if (strcmp(e, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME) == 0) return VK_API_VERSION_1_3;
    if (strcmp(e, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0) return 0;
    if (strcmp(e, VKVIT_KHR_COOPMAT_EXTENSION_NAME) == 0) return 0;
    return VK_API_VERSION_1_2;
}

uint32_t vkvit_required_device_extensions(const char **names, uint32_t cap) {
    uint32_t n = (uint32_t)VKVIT_ARRAY_LEN(k_optional_exts);
    for (uint32_t i = 0; names && i < n && i < cap; i++) names[i] = k_optional_exts[i];
    return n;
}

/* Whether a CPU device's buffers can import vkvit's own huge-page host memory (memory.c, import_huge_pages): the
 * device has VK_EXT_external_memory_host, takes host allocations for buffers of vkvit's usage, and its import
 * alignment divides a huge page. vkvit then enables the extension on the device it creates (not in adopt mode). */
static bool huge_page_import_possible(VkPhysicalDevice pd, const ext_list *exts) {
    if (!ext_has(exts, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME)) return false;
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

static vkvit_result create_device(vkvit_ctx *ctx, overrides off) {
    vkvit_result res = VKVIT_OK;
    int fam = compute_family(ctx->physical_device);
    if (fam < 0) return vkvit__error(VKVIT_ERROR_NO_DEVICE, "device '%s' has no compute queue", ctx->info.name);
    ctx->queue_family = (uint32_t)fam;

    ext_list exts = device_exts(ctx->physical_device);
    uint32_t api = ctx->info.api_version;
    const char *enable[VKVIT_ARRAY_LEN(k_optional_exts) + 1];
    uint32_t n_enable = 0;
    /* VK_KHR_cooperative_matrix only where its kernel was chosen (query_device: no NV kernel, or VKVIT_COOPMAT_KHR=1):
     * a device that runs NV's keeps the extension set tested on the H100, and validation layers older than the
     * extension (Debian 12's 1.3.239) see nothing they do not know. */
    const bool khr = ctx->info.cooperative_matrix_khr_kernel != 0;
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(k_optional_exts); i++) {
        const char *e = k_optional_exts[i];
        const uint32_t since = ext_core_since(e);
        const bool core = since && api >= since;
        if (!khr && strcmp(e, VKVIT_KHR_COOPMAT_EXTENSION_NAME) == 0) continue;
        if (!core && ext_has(&exts, e)) enable[n_enable++] = e;
    }
    ctx->huge_page_import = (ctx->quirks & VKVIT_QUIRK_CPU_DEVICE) && !off.huge_pages &&
                            huge_page_import_possible(ctx->physical_device, &exts);
    if (ctx->huge_page_import) enable[n_enable++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    ctx->coopmat_nv_enabled = nv_coopmat_feature(ctx->physical_device, &exts, api);
    ctx->coopmat_khr_enabled = khr && khr_coopmat_feature(ctx->physical_device, &exts, api);
    free(exts.props);

    /* Enable exactly the features query_device() found. */
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
    VkPhysicalDeviceFeatures2 feats = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = chain};
    feats.features.shaderInt64 = ctx->info.texel_reads_in_use ? VK_TRUE : VK_FALSE; /* the texel kernels' stores */

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qinfo = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
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
    VK_TRY(vkCreateDevice(ctx->physical_device, &info, NULL, &ctx->device));
    ctx->owns_device = true;
    return VKVIT_OK;
fail:
    return res;
}

/* Adopt mode: narrow what vkvit uses to what the host enabled. */
static void restrict_to_host(vkvit_ctx *ctx, const vkvit_host_device *h) {
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
    if (ctx->info.texel_reads_in_use && !(h->enabled_features && h->enabled_features->features.shaderInt64)) {
        ctx->info.texel_reads_in_use = 0;
        add_workaround(ctx->info.workarounds, sizeof ctx->info.workarounds,
                       "texel reads off: the host did not enable shaderInt64");
    }
    ctx->info.fp16_in_use &= fp16s;
    ctx->info.subgroup_size_control &= sgc;
    ctx->info.timeline_semaphore &= tl;
    /* each cooperative-matrix GEMM needs its extension and its feature both enabled (and the memory model) */
    bool coopmat_ext = false, coopmat_khr_ext = false;
    for (uint32_t i = 0; i < h->enabled_device_extension_count && h->enabled_device_extensions; i++) {
        const char *e = h->enabled_device_extensions[i];
        coopmat_ext |= e && strcmp(e, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0;
        coopmat_khr_ext |= e && strcmp(e, VKVIT_KHR_COOPMAT_EXTENSION_NAME) == 0;
    }
    ctx->coopmat_nv_enabled = coopmat && coopmat_ext && memory_model;
    ctx->coopmat_khr_enabled = coopmat_khr && coopmat_khr_ext && memory_model;
    if (!ctx->info.subgroup_size_control) ctx->info.subgroup_size_min = ctx->info.subgroup_size_max = 0;
    ctx->info.adopted = 1;
}

void vkvit__ctx_add_workaround(vkvit_ctx *ctx, const char *text) {
    add_workaround(ctx->info.workarounds, sizeof ctx->info.workarounds, text);
}

/* The capability struct the op builders read (vk.h), from the device info after adopt-mode narrowing. */
static void fill_caps(vkvit_ctx *ctx, overrides off) {
    const vkvit_device_info *i = &ctx->info;
    vkvit__caps *c = &ctx->caps;
    memset(c, 0, sizeof *c);
    c->cpu_device = (ctx->quirks & VKVIT_QUIRK_CPU_DEVICE) != 0;
    c->fp16_storage = i->fp16_storage != 0;
    c->fp16_math = i->fp16_arithmetic != 0;
    c->fp16_in_use = i->fp16_in_use != 0;
    c->subgroup_size = i->subgroup_size;
    c->subgroup_size_min = i->subgroup_size_min;
    c->subgroup_size_max = i->subgroup_size_max;
    c->subgroup_size_control = i->subgroup_size_control != 0;
    c->subgroup_arithmetic = i->subgroup_arithmetic != 0;
    VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg};
    vkGetPhysicalDeviceProperties2(ctx->physical_device, &props);
    const VkSubgroupFeatureFlags shuffle = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
    c->subgroup_shuffle = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (sg.supportedOperations & shuffle) == shuffle;
    c->subgroup_in_use = i->subgroup_in_use != 0;
    c->cooperative_matrix_nv = i->cooperative_matrix_nv != 0;
    c->cooperative_matrix_khr = i->cooperative_matrix != 0;
    c->coopmat_nv_f16_16x16x16 = c->cooperative_matrix_nv && nv_coopmat_f16_shape(ctx->physical_device);
    c->coopmat_khr_f16_16x16x16 = ctx->coopmat_khr_enabled && khr_coopmat_f16_shape(ctx->physical_device);
    /* Tentative until the first-use self-check (src/coopmat_guard.c) has compared it with double-precision loops. */
    const bool nv = nv_kernel_usable(ctx->physical_device, ctx->coopmat_nv_enabled, i);
    c->cooperative_matrix_in_use = coopmat_runs(ctx->physical_device, nv, ctx->coopmat_khr_enabled, i, off,
                                                &c->coopmat_emulated, &c->coopmat_khr);
    c->coopmat_khr &= c->cooperative_matrix_in_use;
    ctx->info.cooperative_matrix_in_use = c->cooperative_matrix_in_use;
    ctx->info.cooperative_matrix_khr_kernel = c->coopmat_khr;
    c->disabled_f16 = off.f16;
    c->disabled_subgroup = off.subgroup;
    c->disabled_texel = off.texel;
    c->texel_reads = i->texel_reads_in_use != 0;
    /* The build-time unrolled CPU GEMM variants (shaders/variants.cmake), unless VKVIT_DISABLE_UNROLLED=1 (a test
     * and measuring switch: the generic shader in their place). */
    c->gemm_cpu_unrolled = VKVIT_HAVE_GEMM_CPU_UNROLLED && c->texel_reads && !off.unrolled;
    c->disabled_coopmat = off.coopmat;
    c->max_shared_memory = ctx->limits.maxComputeSharedMemorySize;
    c->max_workgroup_invocations = ctx->limits.maxComputeWorkGroupInvocations;
    for (int d = 0; d < 3; d++) c->max_workgroup_count[d] = ctx->limits.maxComputeWorkGroupCount[d];
    c->max_storage_buffer_range = ctx->limits.maxStorageBufferRange;
    /* The attention path override (src/ops/attention.c): read here once, like the VKVIT_DISABLE_* switches. */
    const char *att = getenv("VKVIT_ATTENTION");
    if (att && *att) {
        c->attention_path = !strcmp(att, "fused") ? 1 : !strcmp(att, "gemm") ? 2 : VKVIT_CAPS_BAD_CHOICE;
        snprintf(c->attention_env, sizeof c->attention_env, "%s", att);
    }
    const char *tile = getenv("VKVIT_COOPMAT_TILE");
    if (tile && (!strcmp(tile, "32") || !strcmp(tile, "64") || !strcmp(tile, "128")))
        c->coopmat_tile = (uint32_t)atoi(tile);
}

/* ------------------------------------------------------------------------------------------------------------
 * ctx create / destroy
 * ------------------------------------------------------------------------------------------------------------ */

static vkvit_result validate_host(const vkvit_host_device *h) {
    if (!h->instance) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: host.instance is NULL");
    if (!h->physical_device)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: host.physical_device is NULL");
    if (!h->device) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: host.device is NULL");
    if (!h->queue) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: host.queue is NULL");
    if (!h->get_instance_proc_addr)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: host.get_instance_proc_addr is NULL");
    return VKVIT_OK;
}

vkvit_result vkvit_ctx_create(const vkvit_ctx_desc *desc_in, vkvit_ctx **out) {
    vkvit_result res = VKVIT_OK;
    vkvit__error_clear();
    if (!out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_create: out is NULL");
    *out = NULL;
    vkvit_ctx_desc desc = desc_in ? *desc_in : (vkvit_ctx_desc){0};
    if (desc.host && (res = validate_host(desc.host)) != VKVIT_OK) return res;

    vkvit_ctx *ctx = calloc(1, sizeof *ctx);
    vkvit__mutex *queue_lock = ctx ? vkvit__mutex_create() : NULL;
    vkvit__mutex *log_lock = ctx ? vkvit__mutex_create() : NULL;
    if (!queue_lock || !log_lock) {
        vkvit__mutex_destroy(queue_lock);
        vkvit__mutex_destroy(log_lock);
        free(ctx);
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_ctx_create: out of host memory");
    }
    ctx->queue_lock = queue_lock;
    ctx->log_lock = log_lock;
    snprintf(ctx->label, sizeof ctx->label, "%s", desc.label ? desc.label : "vkvit ctx");
    ctx->log = desc.log;
    ctx->log_user = desc.log_user;
    atomic_init(&ctx->validation_messages, 0u);
    atomic_init(&ctx->pipeline_ns, 0u);
    const uint64_t t0 = vkvit__now_ns(); /* phase times for the INFO log: instance, device, pipeline cache */
    double instance_ms = 0, device_ms = 0;

    uint32_t instance_api;
    if (desc.host) {
        const vkvit_host_device *h = desc.host;
        volkInitializeCustom(h->get_instance_proc_addr);
        ctx->instance = h->instance;
        volkLoadInstanceOnly(ctx->instance);
        ctx->physical_device = h->physical_device;
        ctx->device = h->device;
        ctx->queue = h->queue;
        ctx->queue_family = h->queue_family_index;
        ctx->has_debug_utils = vkSetDebugUtilsObjectNameEXT != NULL;
        instance_api = h->api_version ? h->api_version : VK_API_VERSION_1_1;
    } else {
        if ((res = load_loader()) != VKVIT_OK) goto fail;
        int validation = desc.validation > 0 || (desc.validation == 0 && env_flag("VKVIT_VALIDATION"));
        if ((res = create_instance(ctx, validation)) != VKVIT_OK) goto fail;
        const char *want = desc.device ? desc.device : getenv("VKVIT_DEVICE");
        if ((res = pick_device(ctx, want)) != VKVIT_OK) goto fail;
        instance_api = volkGetInstanceVersion();
        instance_ms = vkvit__ms_since(t0);
    }

    int validation_on = ctx->info.validation;
    overrides off = read_overrides(desc.disable_f16);
    off.khr_layer_too_old = !desc.host && validation_on &&
                            layer_spec_version("VK_LAYER_KHRONOS_validation") < VK_MAKE_API_VERSION(0, 1, 3, 255);
    query_device(ctx->physical_device, instance_api, off, &ctx->info, &ctx->quirks);
    ctx->info.validation = validation_on;
    if (ctx->info.api_version < VK_API_VERSION_1_1) {
        res = vkvit__error(VKVIT_ERROR_UNSUPPORTED, "device '%s' supports Vulkan %u.%u; vkvit needs 1.1", ctx->info.name,
                           VK_API_VERSION_MAJOR(ctx->info.api_version), VK_API_VERSION_MINOR(ctx->info.api_version));
        goto fail;
    }
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 props2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
    vkGetPhysicalDeviceProperties2(ctx->physical_device, &props2); /* core in Vulkan 1.1, checked above */
    const VkPhysicalDeviceProperties props = props2.properties;
    ctx->limits = props.limits;
    ctx->max_allocation = m3.maxMemoryAllocationSize;
    memcpy(ctx->pipeline_cache_uuid, props.pipelineCacheUUID, VK_UUID_SIZE);
    vkGetPhysicalDeviceMemoryProperties(ctx->physical_device, &ctx->mem_props);

    if (desc.host) {
        restrict_to_host(ctx, desc.host);
    } else {
        if ((res = create_device(ctx, off)) != VKVIT_OK) goto fail;
        device_ms = vkvit__ms_since(t0) - instance_ms;
    }
    fill_caps(ctx, off);
    volkLoadDeviceTable(&ctx->vk, ctx->device);
    if (!desc.host) ctx->vk.vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);

    VkCommandPoolCreateInfo pool_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT | VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = ctx->queue_family,
    };
    VK_TRY(ctx->vk.vkCreateCommandPool(ctx->device, &pool_info, NULL, &ctx->cmd_pool));
    VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_TRY(ctx->vk.vkCreateFence(ctx->device, &fence_info, NULL, &ctx->fence));

    const uint64_t t_cache = vkvit__now_ns();
    if ((res = vkvit__pipeline_cache_open(ctx, desc.pipeline_cache_dir)) != VKVIT_OK) goto fail;
    vkvit__ctx_log(ctx, VKVIT_LOG_INFO, "ctx '%s' on '%s' ready in %.1f ms (loader, instance and device choice %.1f, "
                   "device %.1f, pipeline cache %.1f)", ctx->label, ctx->info.name, vkvit__ms_since(t0), instance_ms,
                   device_ms, vkvit__ms_since(t_cache));
    *out = ctx;
    return VKVIT_OK;
fail:
    vkvit__error_prefix(res, "vkvit_ctx_create '%s'", ctx->label);
    vkvit__ctx_fail(ctx, res);
    vkvit_ctx_destroy(ctx);
    return res;
}

void vkvit_ctx_destroy(vkvit_ctx *ctx) {
    if (!ctx) return;
    if (ctx->device) {
        if (ctx->queue) vkvit__queue_wait_idle(ctx);
        if (ctx->staging) {
            vkvit__buffer_destroy(ctx, ctx->staging);
            free(ctx->staging);
        }
        vkvit__pipeline_cache_save(ctx);
        if (ctx->pipeline_cache) ctx->vk.vkDestroyPipelineCache(ctx->device, ctx->pipeline_cache, NULL);
        if (ctx->fence) ctx->vk.vkDestroyFence(ctx->device, ctx->fence, NULL);
        if (ctx->cmd_pool) ctx->vk.vkDestroyCommandPool(ctx->device, ctx->cmd_pool, NULL);
        if (ctx->owns_device) ctx->vk.vkDestroyDevice(ctx->device, NULL);
    }
    if (ctx->messenger) vkDestroyDebugUtilsMessengerEXT(ctx->instance, ctx->messenger, NULL);
    if (ctx->owns_instance && ctx->instance) vkDestroyInstance(ctx->instance, NULL);
    vkvit__mutex_destroy(ctx->queue_lock);
    vkvit__mutex_destroy(ctx->log_lock); /* after the instance: destroying it may still log */
    free(ctx);
}

uint32_t vkvit_ctx_queue_family(const vkvit_ctx *ctx) { return ctx ? ctx->queue_family : 0; }

vkvit_result vkvit_ctx_device_info(const vkvit_ctx *ctx, vkvit_device_info *out) {
    if (!ctx || !out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_ctx_device_info: NULL argument");
    *out = ctx->info;
    return VKVIT_OK;
}

vkvit_result vkvit_enumerate_devices(vkvit_device_info *out, uint32_t cap, uint32_t *count) {
    vkvit_result res = VKVIT_OK;
    if (!count) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_enumerate_devices: count is NULL");
    *count = 0;
    if ((res = load_loader()) != VKVIT_OK) return res;
    vkvit_ctx tmp;
    memset(&tmp, 0, sizeof tmp);
    snprintf(tmp.label, sizeof tmp.label, "vkvit info");
    if ((res = create_instance(&tmp, false)) != VKVIT_OK) return res;
    uint32_t n = 0;
    VkPhysicalDevice *pds = NULL;
    VK_TRY(vkEnumeratePhysicalDevices(tmp.instance, &n, NULL));
    pds = calloc(n ? n : 1, sizeof *pds);
    if (!pds) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_enumerate_devices: out of host memory");
        goto fail;
    }
    VK_TRY(vkEnumeratePhysicalDevices(tmp.instance, &n, pds));
    const overrides off = read_overrides(0);
    for (uint32_t i = 0; i < n && out && i < cap; i++) query_device(pds[i], volkGetInstanceVersion(), off, &out[i], NULL);
    *count = n;
fail:
    free(pds);
    vkDestroyInstance(tmp.instance, NULL);
    return res;
}
