// SPDX-License-Identifier: Apache-2.0
/* example_app.h — the examples' own Vulkan set-up, as a renderer would do it: its instance (the validation layer and
 * synchronization validation when asked), its device (the extensions vkvit asks for, the features the device has),
 * its compute queue with timestamps, and a memory-type lookup. Header-only: each example is one translation unit
 * that defines EXAMPLE_NAME (the prefix of its messages) before including it, after vkvit.h and volk.h. */
#ifndef VKVIT_EXAMPLE_APP_H
#define VKVIT_EXAMPLE_APP_H

#ifndef EXAMPLE_NAME
#error "define EXAMPLE_NAME before including example_app.h"
#endif

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VK_CHECK(call)                                                                                        \
    do {                                                                                                      \
        VkResult r_ = (call);                                                                                 \
        if (r_ != VK_SUCCESS) {                                                                               \
            fprintf(stderr, EXAMPLE_NAME ": %s failed with VkResult %d (line %d)\n", #call, (int)r_, __LINE__); \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)

#define VKVIT_CHECK(call)                                                                                     \
    do {                                                                                                      \
        vkvit_result r_ = (call);                                                                             \
        if (r_ != VKVIT_OK) {                                                                                 \
            fprintf(stderr, EXAMPLE_NAME ": %s: %s\n", vkvit_result_name(r_), vkvit_last_error());             \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)

/* ------------------------------------------------------------------------------------------------------------
 * The app's Vulkan setup, as a renderer would do it
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct app {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice pd;
    VkDevice device;
    uint32_t family;
    VkQueue queue;
    float timestamp_period_ns;
    uint32_t timestamp_bits;                /* the queue family's timestampValidBits */
    VkPhysicalDeviceMemoryProperties mem;
    /* what the app enabled, handed to vkvit */
    VkPhysicalDeviceVulkan11Features f11;
    VkPhysicalDeviceVulkan12Features f12;
    VkPhysicalDeviceFeatures2 enabled;
    const char *exts[16];
    uint32_t n_exts;
    uint32_t api;
    uint32_t layer_version;                 /* the validation layer's specVersion; 0 without --validation */
} app;

static unsigned g_validation_messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                    VkDebugUtilsMessageTypeFlagsEXT types,
                                                    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)types, (void)user;
    if (severity & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
        g_validation_messages++;
        fprintf(stderr, "[validation] %s\n", data->pMessage);
    }
    return VK_FALSE;
}

static void app_create_instance(app *a, bool validation) {
    if (volkInitialize() != VK_SUCCESS) {
        fprintf(stderr, EXAMPLE_NAME ": no Vulkan loader\n");
        exit(77);
    }
    a->api = volkGetInstanceVersion() >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2 : VK_API_VERSION_1_1;
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkDebugUtilsMessengerCreateInfoEXT mi = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity =
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_validation,
    };
    VkValidationFeaturesEXT vf = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, .pNext = &mi,
                                  .enabledValidationFeatureCount = 1, .pEnabledValidationFeatures = &sync};
    VkApplicationInfo info = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = EXAMPLE_NAME,
                              .apiVersion = a->api};
    VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pNext = validation ? &vf : NULL,
                               .pApplicationInfo = &info, .enabledLayerCount = validation ? 1 : 0,
                               .ppEnabledLayerNames = layers, .enabledExtensionCount = validation ? 1 : 0,
                               .ppEnabledExtensionNames = exts};
    VkResult r = vkCreateInstance(&ii, NULL, &a->instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
        fprintf(stderr, EXAMPLE_NAME ": no Vulkan driver\n");
        exit(77);
    }
    if (r == VK_ERROR_LAYER_NOT_PRESENT) {
        fprintf(stderr, EXAMPLE_NAME ": --validation needs VK_LAYER_KHRONOS_validation (vulkan-validationlayers)\n");
        exit(1);
    }
    VK_CHECK(r);
    volkLoadInstanceOnly(a->instance);
    if (validation) VK_CHECK(vkCreateDebugUtilsMessengerEXT(a->instance, &mi, NULL, &a->messenger));
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    VkLayerProperties *lp = calloc(n ? n : 1, sizeof *lp);
    if (validation && lp && vkEnumerateInstanceLayerProperties(&n, lp) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            if (!strcmp(lp[i].layerName, layers[0])) a->layer_version = lp[i].specVersion;
    free(lp);
}

/* The first device with a compute queue; extensions vkvit asks for where present; every feature vkvit can use
 * that the device has. */
static void app_create_device(app *a) {
    uint32_t n = 1;
    VkResult r = vkEnumeratePhysicalDevices(a->instance, &n, &a->pd);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0) {
        fprintf(stderr, EXAMPLE_NAME ": no Vulkan device\n");
        exit(77);
    }
    VkQueueFamilyProperties qf[16];
    uint32_t nq = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(a->pd, &nq, qf);
    for (a->family = 0; a->family < nq; a->family++)
        if ((qf[a->family].queueFlags & VK_QUEUE_COMPUTE_BIT) && qf[a->family].timestampValidBits) break;
    if (a->family == nq) {
        fprintf(stderr, EXAMPLE_NAME ": no compute queue with timestamps\n");
        exit(77);
    }
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(a->pd, &props);
    a->timestamp_period_ns = props.limits.timestampPeriod;
    a->timestamp_bits = qf[a->family].timestampValidBits;
    vkGetPhysicalDeviceMemoryProperties(a->pd, &a->mem);
    if (props.apiVersion < a->api) a->api = props.apiVersion;

    /* 1. Extensions: what vkvit asks for, where the device has it. A validation layer older than Vulkan 1.3.255
     * (Debian 12's is 1.3.239) does not know VK_KHR_cooperative_matrix and warns when it is enabled, so under one
     * the app leaves it out (vkvit then uses NVIDIA's extension or its scalar kernels). */
    const char *wanted[16];
    uint32_t n_wanted = vkvit_required_device_extensions(wanted, 16), n_avail = 0;
    vkEnumerateDeviceExtensionProperties(a->pd, NULL, &n_avail, NULL);
    VkExtensionProperties *avail = calloc(n_avail ? n_avail : 1, sizeof *avail);
    vkEnumerateDeviceExtensionProperties(a->pd, NULL, &n_avail, avail);
    const bool old_layer = a->layer_version && a->layer_version < VK_MAKE_API_VERSION(0, 1, 3, 255);
    for (uint32_t i = 0; i < n_wanted && i < 16; i++) {
        if (old_layer && !strcmp(wanted[i], "VK_KHR_cooperative_matrix")) continue;
        for (uint32_t j = 0; j < n_avail; j++)
            if (!strcmp(wanted[i], avail[j].extensionName)) a->exts[a->n_exts++] = wanted[i];
    }
    free(avail);

    /* 2. Features (Vulkan 1.2 structs; a 1.1 device enables none and vkvit falls back). */
    a->f11 = (VkPhysicalDeviceVulkan11Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    a->f12 = (VkPhysicalDeviceVulkan12Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    a->enabled = (VkPhysicalDeviceFeatures2){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    if (a->api >= VK_API_VERSION_1_2) {
        VkPhysicalDeviceVulkan12Features has12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
        VkPhysicalDeviceVulkan11Features has11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                                  .pNext = &has12};
        VkPhysicalDeviceFeatures2 has = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &has11};
        vkGetPhysicalDeviceFeatures2(a->pd, &has);
        a->f11.storageBuffer16BitAccess = has11.storageBuffer16BitAccess;
        a->f12.shaderFloat16 = has12.shaderFloat16;
        a->f12.timelineSemaphore = has12.timelineSemaphore;
        a->enabled.features.shaderInt64 = has.features.shaderInt64; /* vkvit's CPU kernels store 64-bit words */
        a->f11.pNext = &a->f12;
        a->enabled.pNext = &a->f11;
    }
    /* Extensions promoted to core in the device's version must not be enabled twice alongside the 1.2 structs. */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < a->n_exts; i++) {
        bool core12 = a->api >= VK_API_VERSION_1_2 && (!strcmp(a->exts[i], "VK_KHR_16bit_storage") ||
                                                      !strcmp(a->exts[i], "VK_KHR_shader_float16_int8") ||
                                                      !strcmp(a->exts[i], "VK_KHR_timeline_semaphore") ||
                                                      !strcmp(a->exts[i], "VK_KHR_driver_properties"));
        if (!core12) a->exts[kept++] = a->exts[i];
    }
    a->n_exts = kept;

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = a->family,
                                  .queueCount = 1, .pQueuePriorities = &prio};
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &a->enabled,
                             .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi, .enabledExtensionCount = a->n_exts,
                             .ppEnabledExtensionNames = a->exts};
    VK_CHECK(vkCreateDevice(a->pd, &di, NULL, &a->device));
    volkLoadDevice(a->device);
    vkGetDeviceQueue(a->device, a->family, 0, &a->queue);
}

static uint32_t app_memory_type(const app *a, uint32_t bits, VkMemoryPropertyFlags want) {
    for (uint32_t i = 0; i < a->mem.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (a->mem.memoryTypes[i].propertyFlags & want) == want) return i;
    fprintf(stderr, EXAMPLE_NAME ": no memory type with flags 0x%x\n", want);
    exit(1);
}

#endif
