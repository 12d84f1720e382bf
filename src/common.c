// SPDX-License-Identifier: Apache-2.0
/* The error channel (thread-local sentence + result names) and the assert hook. File and clock helpers: src/vk/platform.c. */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERROR_CAP 1024

static _Thread_local char g_error[ERROR_CAP];

const char *vkvit_result_name(vkvit_result result) {
    switch (result) {
    case VKVIT_OK: return "VKVIT_OK";
    case VKVIT_ERROR_NO_LOADER: return "VKVIT_ERROR_NO_LOADER";
    case VKVIT_ERROR_NO_DEVICE: return "VKVIT_ERROR_NO_DEVICE";
    case VKVIT_ERROR_OUT_OF_HOST_MEMORY: return "VKVIT_ERROR_OUT_OF_HOST_MEMORY";
    case VKVIT_ERROR_OUT_OF_DEVICE_MEMORY: return "VKVIT_ERROR_OUT_OF_DEVICE_MEMORY";
    case VKVIT_ERROR_INVALID_ARGUMENT: return "VKVIT_ERROR_INVALID_ARGUMENT";
    case VKVIT_ERROR_BAD_MODEL_FILE: return "VKVIT_ERROR_BAD_MODEL_FILE";
    case VKVIT_ERROR_IO: return "VKVIT_ERROR_IO";
    case VKVIT_ERROR_VULKAN: return "VKVIT_ERROR_VULKAN";
    case VKVIT_ERROR_UNSUPPORTED: return "VKVIT_ERROR_UNSUPPORTED";
    case VKVIT_ERROR_BAD_IMAGE: return "VKVIT_ERROR_BAD_IMAGE";
    case VKVIT_ERROR_DEVICE_LOST: return "VKVIT_ERROR_DEVICE_LOST";
    }
    return "VKVIT_ERROR_UNKNOWN";
}

const char *vkvit_last_error(void) { return g_error; }

void vkvit__error_clear(void) { g_error[0] = '\0'; }

vkvit_result vkvit__verror(vkvit_result code, const char *fmt, va_list ap) {
    /* Formatted aside first: an argument may be the previous sentence itself (a caller passing vkvit_last_error()
     * back as a label), and vsnprintf into the buffer it reads from is undefined. */
    char sentence[ERROR_CAP];
    vsnprintf(sentence, sizeof sentence, fmt, ap);
    memcpy(g_error, sentence, sizeof g_error);
    return code;
}

vkvit_result vkvit__error(vkvit_result code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vkvit__verror(code, fmt, ap);
    va_end(ap);
    return code;
}

vkvit_result vkvit__error_prefix(vkvit_result code, const char *fmt, ...) {
    char inner[ERROR_CAP], prefix[ERROR_CAP];
    memcpy(inner, g_error, sizeof inner);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Truncation is acceptable here: the sentence is cut at ERROR_CAP bytes. */
    size_t np = strlen(prefix);
    if (np > sizeof g_error - 3) np = sizeof g_error - 3;
    memcpy(g_error, prefix, np);
    memcpy(g_error + np, ": ", 2);
    size_t room = sizeof g_error - np - 3, ni = strlen(inner);
    if (ni > room) ni = room;
    memcpy(g_error + np + 2, inner, ni);
    g_error[np + 2 + ni] = '\0';
    return code;
}

void vkvit__assert_fail(const char *expr, const char *file, int line) {
    fprintf(stderr, "vkvit: internal assertion failed: %s (%s:%d)\n", expr, file, line);
    fflush(stderr);
    abort(); /* programmer error only: never reached by bad input */
}
