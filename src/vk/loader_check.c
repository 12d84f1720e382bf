// SPDX-License-Identifier: Apache-2.0
/* Driver manifests named in the environment, read and judged before the Vulkan loader reads them: the loader of
 * Debian 12 turns a broken one into "out of host memory", a crash or an abort of the whole process, and a library
 * must not take its host down over an environment variable (loader_check.h has the rules). */
#include "vk/loader_check.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#define LIST_SEPARATOR ';'
#else
#define LIST_SEPARATOR ':'
#endif

#define MANIFEST_MAX_BYTES ((size_t)1 << 20)


/* What in a manifest's text (n bytes) the loader trips over, or NULL when it can read it. */
static const char *manifest_problem(const char *text, size_t n) {
    cJSON *root = cJSON_ParseWithLength(text, n);
    const cJSON *object = cJSON_IsObject(root) ? root : NULL; /* members are looked up in objects only */
    const cJSON *icd = cJSON_GetObjectItemCaseSensitive(object, "ICD");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(object, "file_format_version");
    const cJSON *icd_object = cJSON_IsObject(icd) ? icd : NULL;
    const cJSON *library = cJSON_GetObjectItemCaseSensitive(icd_object, "library_path");
    const cJSON *api = cJSON_GetObjectItemCaseSensitive(icd_object, "api_version");
    const char *problem = !root                                 ? "it is not JSON"
                          : !object                             ? "it is JSON, but not an object"
                          : version && !cJSON_IsString(version) ? "its \"file_format_version\" is not a string"
                          : icd && !cJSON_IsObject(icd)         ? "its \"ICD\" is not an object"
                          : library && !cJSON_IsString(library) ? "its \"ICD\".\"library_path\" is not a string"
                          : api && !cJSON_IsString(api)         ? "its \"ICD\".\"api_version\" is not a string"
                                                                : NULL;
    cJSON_Delete(root);
    return problem;
}

/* One manifest file; `user` is the variable that named it (or its folder). */
static vkvit_result check_manifest(void *user, const char *path) {
    const char *var = user;
    uint8_t *text = NULL;
    size_t n = 0;
    if (vkvit__read_file(path, MANIFEST_MAX_BYTES, &text, &n) != VKVIT_OK) {
        vkvit__error_clear(); /* unreadable, too large or not a file: the loader's to judge */
        return VKVIT_OK;
    }
    const char *problem = manifest_problem((const char *)text, n);
    free(text);
    if (!problem) return VKVIT_OK;
    return vkvit__error(VKVIT_ERROR_NO_DEVICE, "no usable Vulkan device: '%s' (from %s) is not a Vulkan driver "
                        "manifest: %s, and the Vulkan loader cannot use it", path, var, problem);
}

vkvit_result vkvit__check_driver_manifests(const vkvit__env *env) {
    const char *vars[2] = {env->driver_files_var, "VK_ADD_DRIVER_FILES"};
    const char *values[2] = {env->driver_files, env->add_driver_files};
    for (size_t v = 0; v < VKVIT_ARRAY_LEN(vars); v++) {
        for (const char *list = values[v]; list && *list;) {
            const char *sep = strchr(list, LIST_SEPARATOR);
            const size_t len = sep ? (size_t)(sep - list) : strlen(list);
            char entry[PATH_MAX];
            if (len > 0 && len < sizeof entry) {
                memcpy(entry, list, len);
                entry[len] = '\0';
                vkvit_result r = VKVIT_OK;
                switch (vkvit__path_kind_of(entry)) {
                case VKVIT__PATH_DIR: r = vkvit__dir_each(entry, ".json", check_manifest, (void *)vars[v]); break;
                case VKVIT__PATH_FILE: r = check_manifest((void *)vars[v], entry); break;
                default: break; /* missing (the loader skips it) or not a file */
                }
                if (r != VKVIT_OK) return r;
            }
            list = sep ? sep + 1 : NULL;
        }
    }
    return VKVIT_OK;
}
