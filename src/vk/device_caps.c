/* What a physical device has and what vkvit will use of it: extensions, features, the quirk table, the
 * VKVIT_DISABLE_* switches, cooperative-matrix probing, the workaround text `vkvit info` prints, and the capability
 * struct (vk.h, vkvit__caps) the op builders choose their kernels by. */
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

/* The quirk table. Matches by driver ID / vendor and states why. */
static uint32_t quirks_for(const vkvit_device_info *info, VkDriverId driver) {
    uint32_t q = 0;
    if (info->device_type == VK_PHYSICAL_DEVICE_TYPE_CPU || driver == VK_DRIVER_ID_MESA_LLVMPIPE ||
        driver == VK_DRIVER_ID_GOOGLE_SWIFTSHADER)
        q |= VKVIT_QUIRK_CPU_DEVICE | VKVIT_QUIRK_NO_F16_ARITHMETIC; /* x86 has no fp16 math: emulated, slow */
    return q;
}

vkvit__overrides vkvit__read_overrides(int disable_f16) {
    return (vkvit__overrides){
        .f16 = disable_f16 || vkvit__env_flag("VKVIT_DISABLE_F16"),
        .subgroup = vkvit__env_flag("VKVIT_DISABLE_SUBGROUP"),
        .coopmat = vkvit__env_flag("VKVIT_DISABLE_COOPMAT"),
        .texel = vkvit__env_flag("VKVIT_DISABLE_TEXEL"),
        .unrolled = vkvit__env_flag("VKVIT_DISABLE_UNROLLED"),
        .huge_pages = vkvit__env_flag("VKVIT_DISABLE_HUGE_PAGES"),
        .coopmat_emulate = vkvit__env_flag("VKVIT_COOPMAT_EMULATE"),
        .coopmat_khr = vkvit__env_flag("VKVIT_COOPMAT_KHR"),
    };
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

/* Whether VK_KHR_cooperative_matrix's property list has gemm_coopmat.comp's shape: fp16 A/B, fp32 C/Result,
 * 16x16x16, subgroup scope, no saturation. */
/* The side of the square fp16 x fp16 + fp32 subgroup-scope shapes the KHR kernel has fragments for: 16 (listed
 * 16x16x16), else 8 (8x8x8), else 0. */
static uint32_t khr_coopmat_f16_shape(VkPhysicalDevice pd) {
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
    uint32_t side = 0;
    for (uint32_t k = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && k < n; k++)
        if ((cm[k].MSize == 16 || cm[k].MSize == 8) && cm[k].NSize == cm[k].MSize && cm[k].KSize == cm[k].MSize &&
            cm[k].AType == VK_COMPONENT_TYPE_FLOAT16_KHR && cm[k].BType == VK_COMPONENT_TYPE_FLOAT16_KHR &&
            cm[k].CType == VK_COMPONENT_TYPE_FLOAT32_KHR && cm[k].ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
            !cm[k].saturatingAccumulation && cm[k].scope == VK_SCOPE_SUBGROUP_KHR)
            side = VKVIT_MAX(side, cm[k].MSize);
    return side;
}

/* Whether the NV kernel can run: built (glslang compiled it), its feature enabled (nv_enabled), its shape listed
 * and 32-wide subgroups (one warp = one subgroup). */
static bool nv_kernel_usable(VkPhysicalDevice pd, bool nv_enabled, const vkvit_device_info *info) {
    return VKVIT_HAVE_NV_COOPMAT && nv_enabled && info->subgroup_size == 32 && nv_coopmat_f16_shape(pd);
}

/* Whether fp16-math GEMMs run on cooperative matrices (before the first-use self-check of src/coopmat_guard.c):
 * the NV kernel where it can run (nv, from nv_kernel_usable), or the KHR one where it is built, its feature enabled
 * (khr_enabled), a shape of its fragments listed (16x16x16 or 8x8x8) and subgroups of 4 to 64 — NV's when both can run, unless VKVIT_COOPMAT_KHR=1
 * (*khr says which) — or on request (VKVIT_COOPMAT_EMULATE=1) the emulated kernel on any device with fp16 math
 * (*emulated). */
static bool coopmat_runs(VkPhysicalDevice pd, bool nv, bool khr_enabled, const vkvit_device_info *info,
                         vkvit__overrides off, bool *emulated, bool *khr) {
    const bool f16_math = info->fp16_arithmetic && info->fp16_in_use && !off.coopmat &&
                          info->max_shared_memory >= VKVIT_COOPMAT_SHARED_BYTES;
    /* The KHR kernel's warp is one subgroup of whatever size the device has (gemm_coopmat.comp's WARP): 32 on NVIDIA
     * and AMD's wave32, 8 on lavapipe; NV's kernel is only used where subgroups are 32 wide, as tested. */
    /* 8 x 8 fragments only at subgroups of 8: Mesa 26.1's lavapipe lists 8x8x8 at every LP_NATIVE_VECTOR_WIDTH, but
     * its lowering takes a matrix side equal to the subgroup size, and at 16 lanes its compiler crashes on them. */
    const uint32_t sg = info->subgroup_size, frag = VKVIT_HAVE_KHR_COOPMAT ? khr_coopmat_f16_shape(pd) : 0;
    const bool khr_ok = VKVIT_HAVE_KHR_COOPMAT && khr_enabled && sg >= 4 && sg <= 64 && 64 % sg == 0 &&
                        (frag == 16 || (frag == 8 && sg == 8));
    *khr = f16_math && khr_ok && (!nv || off.coopmat_khr);
    *emulated = f16_math && !nv && !*khr && off.coopmat_emulate;
    return f16_math && (nv || *khr || *emulated);
}

/* Appends ", text" (or "text" to an empty list) to a comma-separated list of `cap` bytes, truncating. */
void vkvit__add_workaround(char *list, size_t cap, const char *text) {
    const size_t n = strlen(list);
    if (n + 1 < cap) snprintf(list + n, cap - n, "%s%s", n ? ", " : "", text);
}

static void describe_quirks(uint32_t quirks, const vkvit_device_info *info, vkvit__overrides off, char *out, size_t cap) {
    out[0] = '\0';
    size_t n = 0;
#define ADD(s) n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s%s", n ? ", " : "", s)
    if (quirks & VKVIT_QUIRK_CPU_DEVICE) ADD("cpu-device (large register tiles, fp32 kernels)");
    /* shaders/gemm_cpu.comp is written for one subgroup of exactly 8 lanes (src/ops/gemm.h VKVIT_GEMM_CPU_LANES) */
    if ((quirks & VKVIT_QUIRK_CPU_DEVICE) && info->subgroup_size != 8) {
        char line[160];
        snprintf(line, sizeof line, "cpu-gemm-off (subgroups of %u, the CPU GEMM needs 8: GEMMs take the "
                 "shared-memory kernel)", info->subgroup_size);
        ADD(line);
    }
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
void vkvit__query_device(VkPhysicalDevice pd, uint32_t instance_api, vkvit__overrides off, vkvit_device_info *info,
                         uint32_t *quirks_out) {
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
    info->subgroup_size_control = has_sgc && sgc.subgroupSizeControl && sgc.computeFullSubgroups;
    if (info->subgroup_size_control) {
        info->subgroup_size_min = sgc_props.minSubgroupSize;
        info->subgroup_size_max = sgc_props.maxSubgroupSize;
    }
    info->cooperative_matrix = vkvit__ext_has(&exts, "VK_KHR_cooperative_matrix");
    info->cooperative_matrix_nv = vkvit__ext_has(&exts, "VK_NV_cooperative_matrix");
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
    const bool nv = nv_kernel_usable(pd, vkvit__nv_coopmat_feature(pd, &exts, props.apiVersion), info);
    const bool want_khr = VKVIT_HAVE_KHR_COOPMAT && (off.coopmat_khr || !nv);
    const bool ask_khr = want_khr && !off.khr_layer_too_old;
    info->cooperative_matrix_in_use =
        coopmat_runs(pd, nv, ask_khr && vkvit__khr_coopmat_feature(pd, &exts, props.apiVersion), info, off, &emulated, &khr);
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
    if (emulated) vkvit__add_workaround(info->workarounds, sizeof info->workarounds,
                                 "cooperative matrix emulated (VKVIT_COOPMAT_EMULATE, a test path)");
    if (want_khr && off.khr_layer_too_old && vkvit__ext_has(&exts, VKVIT_KHR_COOPMAT_EXTENSION_NAME))
        vkvit__add_workaround(info->workarounds, sizeof info->workarounds,
                       "KHR cooperative-matrix kernel off: the validation layer predates VK_KHR_cooperative_matrix "
                       "and would drop its feature from the device");
    if (quirks_out) *quirks_out = quirks;
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

/* The capability struct the op builders read (vk.h), from the device info after adopt-mode narrowing. */
void vkvit__fill_caps(vkvit_ctx *ctx, vkvit__overrides off) {
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
    c->coopmat_khr_frag = ctx->coopmat_khr_enabled ? khr_coopmat_f16_shape(ctx->physical_device) : 0;
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
