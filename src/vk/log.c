// SPDX-License-Identifier: Apache-2.0
/* Errors of Vulkan calls, the host's log callback and the validation layer's messages. */
#include "vk/vk.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

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
static void emit_log(const vkvit_ctx *ctx, int level, const char *message) {
    if (!ctx || !ctx->log) return;
    if (ctx->log_lock) vkvit__mutex_lock(ctx->log_lock);
    ctx->log(ctx->log_user, level, message);
    if (ctx->log_lock) vkvit__mutex_unlock(ctx->log_lock);
}

vkvit_result vkvit__ctx_fail(const vkvit_ctx *ctx, vkvit_result code) {
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

VKAPI_ATTR VkBool32 VKAPI_CALL vkvit__validation_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
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
