/* Adopt mode: a "host application" creates its own instance (validation + synchronization validation on) and
 * device, hands them to vkvit, vkvit runs a GEMM on the host's queue, the ctx is destroyed, and the host device
 * must still work afterwards (vkvit destroyed nothing of the host's). */
#include "test_util.h"
#include "vk/kernels.h"

static unsigned host_messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL host_debug(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
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

static void host_create(host *h) {
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

    /* The host enables what vkvit asks for (when the device has it) before creating its device. */
    const char *wanted[16];
    uint32_t n_wanted = vkvit_required_device_extensions(wanted, 16);
    uint32_t n_avail = 0;
    vkEnumerateDeviceExtensionProperties(h->pd, NULL, &n_avail, NULL);
    VkExtensionProperties *avail = calloc(n_avail, sizeof *avail);
    vkEnumerateDeviceExtensionProperties(h->pd, NULL, &n_avail, avail);
    const char *enable[16];
    uint32_t n_enable = 0;
    for (uint32_t i = 0; i < n_wanted; i++)
        for (uint32_t j = 0; j < n_avail; j++)
            if (!strcmp(wanted[i], avail[j].extensionName)) enable[n_enable++] = wanted[i];
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
static bool host_device_works(host *h) {
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

static void adopt_runs_gemm(host *h) {
    VkPhysicalDeviceFeatures2 enabled = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    vkvit_host_device hd = {
        .instance = h->instance, .physical_device = h->pd, .device = h->device,
        .queue_family_index = h->family, .queue = h->queue, .get_instance_proc_addr = vkGetInstanceProcAddr,
        .api_version = VK_API_VERSION_1_2, .enabled_features = &enabled,
    };
    vkvit_ctx *ctx = NULL;
    vkvit_ctx_desc desc = {.label = "adopted", .host = &hd, .pipeline_cache_dir = "", .log = vt_log};
    MUST(vkvit_ctx_create(&desc, &ctx));
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    CHECK(info.adopted == 1, "info.adopted = %d", info.adopted);
    CHECK(info.fp16_storage == 0, "fp16 storage reported although the host did not enable it");

    /* A small GEMM on the host's queue: 33x17x9 with bias. */
    enum { M = 33, N = 17, K = 9 };
    float a[M * K], b[N * K], bias[N], d[M * N];
    double want[M * N];
    vt_fill_rand(a, M * K);
    vt_fill_rand(b, N * K);
    vt_fill_rand(bias, N);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = bias[n];
            for (int k = 0; k < K; k++) s += (double)a[m * K + k] * b[n * K + k];
            want[m * N + n] = s;
        }
    vkvit__buffer ba, bb, bbias, bd;
    MUST(vkvit__buffer_create(ctx, sizeof a, VKVIT_MEM_DEVICE, "A", &ba));
    MUST(vkvit__buffer_create(ctx, sizeof b, VKVIT_MEM_DEVICE, "B", &bb));
    MUST(vkvit__buffer_create(ctx, sizeof bias, VKVIT_MEM_DEVICE, "bias", &bbias));
    MUST(vkvit__buffer_create(ctx, sizeof d, VKVIT_MEM_DEVICE, "D", &bd));
    MUST(vkvit__buffer_upload(ctx, &ba, 0, a, sizeof a));
    MUST(vkvit__buffer_upload(ctx, &bb, 0, b, sizeof b));
    MUST(vkvit__buffer_upload(ctx, &bbias, 0, bias, sizeof bias));
    MUST(vkvit__buffer_fill(ctx, &bd, 0, sizeof d, VT_NAN_BITS));
    vkvit__gemm_config cfg = vkvit__gemm_pick(ctx, M, N, K);
    vkvit__kernel k;
    MUST(vkvit__gemm_kernel_create(ctx, &cfg, &(vkvit__gemm_epilogue){.bias = true}, "gemm", &k));
    VkDescriptorPool pool;
    VkDescriptorSet set;
    MUST(vkvit__descriptor_pool_create(ctx, 1, &pool));
    vkvit__binding binds[6] = {{&ba, 0, 0}, {&bb, 0, 0}, {&bbias, 0, 0}, {&bd, 0, 0}, {&bbias, 0, 0}, {&bd, 0, 0}};
    MUST(vkvit__descriptor_set_create(ctx, pool, &k, binds, &set));
    VkCommandBuffer cmd;
    MUST(vkvit__cmd_begin(ctx, &cmd));
    vkvit__gemm_push push = {.M = M, .N = N, .K = K, .stride_a = K, .stride_b = K, .stride_d = N};
    vkvit__gemm_record(ctx, cmd, &k, &cfg, set, &push, 1);
    MUST(vkvit__cmd_submit_wait(ctx, cmd));
    MUST(vkvit__buffer_download(ctx, &bd, 0, d, sizeof d));
    double err = vt_max_rel_err(d, want, M * N, NULL);
    printf("adopted-device gemm 33x17x9: max rel err %.3g\n", err);
    CHECK(err <= 1e-5, "max rel err %.3g", err);

    ctx->vk.vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkvit__kernel_destroy(ctx, &k);
    vkvit__buffer_destroy(ctx, &ba);
    vkvit__buffer_destroy(ctx, &bb);
    vkvit__buffer_destroy(ctx, &bbias);
    vkvit__buffer_destroy(ctx, &bd);
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "vkvit counted messages in adopt mode (it has no messenger)");
    vkvit_ctx_destroy(ctx);
}

static void adopt_rejects_incomplete_host(host *h) {
    vkvit_host_device hd = {.instance = h->instance, .physical_device = h->pd, .device = h->device,
                            .queue_family_index = h->family, .queue = VK_NULL_HANDLE,
                            .get_instance_proc_addr = vkGetInstanceProcAddr};
    vkvit_ctx *ctx = (vkvit_ctx *)1;
    vkvit_result r = vkvit_ctx_create(&(vkvit_ctx_desc){.host = &hd}, &ctx);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT, "got %s", vkvit_result_name(r));
    CHECK(ctx == NULL, "*out must be NULL on failure");
    CHECK(strstr(vkvit_last_error(), "host.queue") != NULL, "message: %s", vkvit_last_error());
}

int main(void) {
    host h;
    host_create(&h);
    adopt_runs_gemm(&h);
    adopt_rejects_incomplete_host(&h);
    CHECK(host_device_works(&h), "the host device no longer works after vkvit_ctx_destroy");
    h.vk.vkDestroyDevice(h.device, NULL);
    vkDestroyDebugUtilsMessengerEXT(h.instance, h.messenger, NULL);
    vkDestroyInstance(h.instance, NULL);
    CHECK(host_messages == 0, "%u validation messages on the host instance", host_messages);
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
