// SPDX-License-Identifier: Apache-2.0
/* A stand-in "host application" for embedding tests (header-only): it creates its own instance with the validation
 * layer and synchronization validation, its own device with the extensions vkvit asks for, and a compute queue —
 * as a renderer would — and counts every validation message on its instance. */
#ifndef VKVIT_HOST_UTIL_H
#define VKVIT_HOST_UTIL_H

#include "test_util.h"

static unsigned host_messages;

static inline VKAPI_ATTR VkBool32 VKAPI_CALL host_debug(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)types, (void)user;
    if (sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
        host_messages++;
        fprintf(stderr, "[host validation] %s\n", data->pMessage);
    }
    return VK_FALSE;
}

typedef struct host {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice pd;
    VkDevice device;
    uint32_t family;
    VkQueue queue;
    struct VolkDeviceTable vk;
} host;

static inline void host_create(host *h) {
    memset(h, 0, sizeof *h);
    if (volkInitialize() != VK_SUCCESS) {
        fprintf(stderr, "SKIP: no Vulkan loader\n");
        exit(77);
    }
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                        .enabledValidationFeatureCount = 1, .pEnabledValidationFeatures = enables};
    VkDebugUtilsMessengerCreateInfoEXT mi = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = host_debug,
    };
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "host app",
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pNext = &features,
                               .pApplicationInfo = &app, .enabledLayerCount = 1, .ppEnabledLayerNames = layers,
                               .enabledExtensionCount = 1, .ppEnabledExtensionNames = exts};
    features.pNext = &mi;
    if (vkCreateInstance(&ii, NULL, &h->instance) != VK_SUCCESS) {
        fprintf(stderr, "FATAL: host vkCreateInstance failed (is vulkan-validationlayers installed?)\n");
        exit(1);
    }
    volkLoadInstanceOnly(h->instance);
    mi.pNext = NULL;
    vkCreateDebugUtilsMessengerEXT(h->instance, &mi, NULL, &h->messenger);
    uint32_t n = 1;
    VkResult r = vkEnumeratePhysicalDevices(h->instance, &n, &h->pd);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0) {
        fprintf(stderr, "SKIP: no Vulkan device\n");
        exit(77);
    }
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(h->pd, &nq, NULL);
    VkQueueFamilyProperties qf[16];
    nq = nq > 16 ? 16 : nq;
    vkGetPhysicalDeviceQueueFamilyProperties(h->pd, &nq, qf);
    for (h->family = 0; h->family < nq && !(qf[h->family].queueFlags & VK_QUEUE_COMPUTE_BIT); h->family++) {}

    /* The host enables what vkvit asks for (when the device has it) before creating its device — except
     * VK_KHR_cooperative_matrix under a validation layer older than the extension (Vulkan 1.3.255; Debian 12's is
     * 1.3.239), which warns that it does not know it: a KHR build on an H100 failed five embedding tests so. */
    const char *wanted[16];
    uint32_t n_wanted = vkvit_required_device_extensions(wanted, 16);
    uint32_t layer_version = 0, n_layers = 0;
    vkEnumerateInstanceLayerProperties(&n_layers, NULL);
    VkLayerProperties *lp = calloc(n_layers ? n_layers : 1, sizeof *lp);
    if (lp && vkEnumerateInstanceLayerProperties(&n_layers, lp) == VK_SUCCESS)
        for (uint32_t i = 0; i < n_layers; i++)
            if (!strcmp(lp[i].layerName, "VK_LAYER_KHRONOS_validation")) layer_version = lp[i].specVersion;
    free(lp);
    const bool layer_knows_khr_coopmat = layer_version >= VK_MAKE_API_VERSION(0, 1, 3, 255);
    uint32_t n_avail = 0;
    vkEnumerateDeviceExtensionProperties(h->pd, NULL, &n_avail, NULL);
    VkExtensionProperties *avail = calloc(n_avail, sizeof *avail);
    vkEnumerateDeviceExtensionProperties(h->pd, NULL, &n_avail, avail);
    const char *enable[16];
    uint32_t n_enable = 0;
    for (uint32_t i = 0; i < n_wanted; i++) {
        if (!layer_knows_khr_coopmat && !strcmp(wanted[i], "VK_KHR_cooperative_matrix")) continue;
        for (uint32_t j = 0; j < n_avail; j++)
            if (!strcmp(wanted[i], avail[j].extensionName)) enable[n_enable++] = wanted[i];
    }
    free(avail);
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = h->family,
                                  .queueCount = 1, .pQueuePriorities = &prio};
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qi, .enabledExtensionCount = n_enable,
                             .ppEnabledExtensionNames = enable};
    if (vkCreateDevice(h->pd, &di, NULL, &h->device) != VK_SUCCESS) {
        fprintf(stderr, "FATAL: host vkCreateDevice failed\n");
        exit(1);
    }
    volkLoadDeviceTable(&h->vk, h->device);
    h->vk.vkGetDeviceQueue(h->device, h->family, 0, &h->queue);
}

/* The host still owns a working device: allocate, record, submit and wait on its own. */
static inline bool host_device_works(host *h) {
    VkCommandPool pool;
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, .queueFamilyIndex = h->family};
    if (h->vk.vkCreateCommandPool(h->device, &pi, NULL, &pool) != VK_SUCCESS) return false;
    VkCommandBuffer cmd;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    bool ok = h->vk.vkAllocateCommandBuffers(h->device, &ai, &cmd) == VK_SUCCESS;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    ok = ok && h->vk.vkBeginCommandBuffer(cmd, &bi) == VK_SUCCESS && h->vk.vkEndCommandBuffer(cmd) == VK_SUCCESS;
    VkFence fence;
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    ok = ok && h->vk.vkCreateFence(h->device, &fi, NULL, &fence) == VK_SUCCESS;
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    ok = ok && h->vk.vkQueueSubmit(h->queue, 1, &si, fence) == VK_SUCCESS &&
         h->vk.vkWaitForFences(h->device, 1, &fence, VK_TRUE, UINT64_MAX) == VK_SUCCESS;
    h->vk.vkDestroyFence(h->device, fence, NULL);
    h->vk.vkDestroyCommandPool(h->device, pool, NULL);
    return ok;
}

/* Destroys the host's device and instance; fails the test if the host saw any validation message. */
static inline void host_destroy(host *h) {
    h->vk.vkDestroyDevice(h->device, NULL);
    vkDestroyDebugUtilsMessengerEXT(h->instance, h->messenger, NULL);
    vkDestroyInstance(h->instance, NULL);
    CHECK(host_messages == 0, "%u validation messages on the host instance", host_messages);
}

/* A second device on the host's instance and physical device with `features` enabled, as a renderer that wants
 * them would create it (its own queue of the same family); false if the driver refuses. The caller destroys it
 * with t->vk.vkDestroyDevice. */
static inline bool host_device_with(const host *h, const VkPhysicalDeviceFeatures2 *features, host *t) {
    *t = *h;
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = h->family,
                                  .queueCount = 1, .pQueuePriorities = &prio};
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = features,
                             .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi};
    if (vkCreateDevice(h->pd, &di, NULL, &t->device) != VK_SUCCESS) return false;
    volkLoadDeviceTable(&t->vk, t->device);
    t->vk.vkGetDeviceQueue(t->device, t->family, 0, &t->queue);
    return true;
}

/* vkvit adopting a host device, told which features the host enabled (`features`: the VkPhysicalDeviceFeatures2
 * chain; NULL: none beyond core 1.1). */
static inline vkvit_ctx *host_adopt_with(host *h, const VkPhysicalDeviceFeatures2 *features, const char *label) {
    static const VkPhysicalDeviceFeatures2 none = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    vkvit_host_device hd = {
        .instance = h->instance, .physical_device = h->pd, .device = h->device,
        .queue_family_index = h->family, .queue = h->queue, .get_instance_proc_addr = vkGetInstanceProcAddr,
        .api_version = VK_API_VERSION_1_2, .enabled_features = features ? features : &none,
    };
    vkvit_ctx *ctx = NULL;
    vkvit_ctx_desc desc = {.label = label, .host = &hd, .pipeline_cache_dir = "", .log = vt_log};
    MUST(vkvit_ctx_create(&desc, &ctx));
    return ctx;
}

/* vkvit adopting the host's device, which enabled no features. */
static inline vkvit_ctx *host_adopt(host *h, const char *label) { return host_adopt_with(h, NULL, label); }

#endif /* VKVIT_HOST_UTIL_H */
