// SPDX-License-Identifier: Apache-2.0
/* The driver manifests named in the environment, checked before the Vulkan loader reads them (loader_check.c). */
#ifndef VKVIT_LOADER_CHECK_H
#define VKVIT_LOADER_CHECK_H

#include "common.h"
#include "policy/env.h"

/* Refuses the driver manifests named by VK_DRIVER_FILES (else VK_ICD_FILENAMES, its older name) and
 * VK_ADD_DRIVER_FILES (':'-separated; each a manifest, or a folder whose *.json files the loader reads) that the
 * loader cannot use: text that is not JSON, another root than an object, or a member the loader reads as a string
 * (file_format_version, ICD.library_path, ICD.api_version) or an object (ICD) that is something else. Debian 12's
 * loader (1.3.239) answers the first with VK_ERROR_OUT_OF_HOST_MEMORY, crashes on a JSON array and aborts on a number
 * as library_path. VKVIT_ERROR_NO_DEVICE with a sentence naming the file, the variable and what is wrong with it.
 * Entries that are missing, unreadable, larger than 1 MiB or not files are left to the loader (which skips missing
 * ones); the manifests the loader finds on its own (/usr/share/vulkan/icd.d, ...) are not looked at. For the
 * instances vkvit creates (vkvit_ctx_create without a host, vkvit_enumerate_devices), before any loader call; never
 * in adopt mode, where the instance is the host's. */
vkvit_result vkvit__check_driver_manifests(const vkvit__env *env); /* the variables as env read them */

#endif /* VKVIT_LOADER_CHECK_H */
