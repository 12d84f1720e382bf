// SPDX-License-Identifier: Apache-2.0
/* The environment vkvit reads: every variable in one table (env.c), read once per ctx creation (and once per
 * vkvit_enumerate_devices call) into a plain snapshot that the rooms below take as an argument. No other file of the
 * library calls getenv (tests/api/test_rooms.py checks that). docs/environment.md lists the variables for users. */
#ifndef VKVIT_POLICY_ENV_H
#define VKVIT_POLICY_ENV_H

#include "common.h"

#define VKVIT_ENV_TEXT_CAP 1024 /* a path or a device name; longer values are cut (and then match nothing) */

typedef struct vkvit__env {
    /* Switches: what the caller asked vkvit not to use (or to use) on this ctx. */
    bool disable_f16;                       /* VKVIT_DISABLE_F16=1: fp32 storage and arithmetic everywhere */
    bool disable_subgroup;                  /* VKVIT_DISABLE_SUBGROUP=1: shared-memory reductions */
    bool disable_coopmat;                   /* VKVIT_DISABLE_COOPMAT=1: no cooperative-matrix GEMM */
    bool disable_texel;                     /* VKVIT_DISABLE_TEXEL=1: CPU kernels read storage buffers */
    bool disable_unrolled;                  /* VKVIT_DISABLE_UNROLLED=1: the generic CPU GEMM shader everywhere */
    bool disable_huge_pages;                /* VKVIT_DISABLE_HUGE_PAGES=1: CPU devices use the driver's memory */
    bool coopmat_emulate;                   /* VKVIT_COOPMAT_EMULATE=1: the emulated cooperative-matrix kernel (test) */
    bool coopmat_khr;                       /* VKVIT_COOPMAT_KHR=1: the KHR kernel where NV's could run too */
    bool coopmat_nv2;                       /* VKVIT_COOPMAT_NV2=1: the NV cooperative-matrix-2 kernel where it runs */
    bool validation;                        /* VKVIT_VALIDATION=1: the Khronos validation layer on vkvit's instance */
    /* Choices. */
    uint32_t attention;                     /* VKVIT_ATTENTION: 0 unset, 1 "fused", 2 "gemm", VKVIT_ENV_BAD other */
    char attention_text[32];                /* its value as given (cut), for the sentence that refuses another */
    uint32_t coopmat_tile;                  /* VKVIT_COOPMAT_TILE: 32, 64 or 128; 0 unset or another value */
    char device[VKVIT_ENV_TEXT_CAP];        /* VKVIT_DEVICE: index or name substring of the device to take; "" */
    char device_profile[64];                /* VKVIT_DEVICE_PROFILE (tests): a profile of policy/profiles.c; "" */
    /* Paths. */
    char cache_dir[VKVIT_ENV_TEXT_CAP];     /* VKVIT_CACHE_DIR, else $XDG_CACHE_HOME/vkvit, else $HOME/.cache/vkvit */
    /* The Vulkan loader's own variables, as it reads them (secure_getenv on glibc), for the manifest check. */
    /* Pointers into the environment itself (lists of paths of any length), valid while it is not changed: used
     * at once, by the instance creation of the same call. */
    const char *driver_files;               /* VK_DRIVER_FILES, else VK_ICD_FILENAMES; NULL when neither is set */
    const char *driver_files_var;           /* the name of the one read ("VK_DRIVER_FILES" or "VK_ICD_FILENAMES") */
    const char *add_driver_files;           /* VK_ADD_DRIVER_FILES, or NULL */
} vkvit__env;

#define VKVIT_ENV_BAD 0xffffffffu

/* Reads every variable of the table into *out. Never fails: an unusable value is recorded as such (VKVIT_ENV_BAD, or
 * a cut text) for the room that uses it to refuse with a sentence. */
void vkvit__env_read(vkvit__env *out);

/* The table, for docs and tests: name, what it does. Ends with a {NULL, NULL} row. */
typedef struct vkvit__env_var {
    const char *name;
    const char *meaning;
} vkvit__env_var;
const vkvit__env_var *vkvit__env_table(void);

#endif /* VKVIT_POLICY_ENV_H */
