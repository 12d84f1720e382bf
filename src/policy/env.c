// SPDX-License-Identifier: Apache-2.0
/* The one place the library reads its environment (env.h). */
#include "policy/env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const vkvit__env_var k_table[] = {
    {"VKVIT_DEVICE", "the device a ctx takes: an index into vkvit_enumerate_devices' list or a substring of its name"},
    {"VKVIT_VALIDATION", "1: the Khronos validation layer (with synchronization validation) on vkvit's own instance"},
    {"VKVIT_CACHE_DIR", "the folder of the on-disk pipeline cache (else $XDG_CACHE_HOME/vkvit, else ~/.cache/vkvit)"},
    {"XDG_CACHE_HOME", "see VKVIT_CACHE_DIR"},
    {"HOME", "see VKVIT_CACHE_DIR"},
    {"VKVIT_DISABLE_F16", "1: no fp16 storage or arithmetic (fp16 sessions are refused, fp32 ones unchanged)"},
    {"VKVIT_DISABLE_SUBGROUP", "1: reductions through shared memory instead of subgroup operations"},
    {"VKVIT_DISABLE_COOPMAT", "1: fp16-math GEMMs on the shared-memory kernel instead of cooperative matrices"},
    {"VKVIT_DISABLE_TEXEL", "1: CPU devices' kernels read storage buffers instead of uniform texel buffers"},
    {"VKVIT_DISABLE_UNROLLED", "1: the generic CPU GEMM shader instead of the build-time unrolled variants"},
    {"VKVIT_DISABLE_HUGE_PAGES", "1: CPU devices' large buffers in the driver's memory, not vkvit's huge pages"},
    {"VKVIT_COOPMAT_EMULATE", "1: the cooperative-matrix GEMM tiling with plain arithmetic (a test path)"},
    {"VKVIT_COOPMAT_KHR", "1: the VK_KHR_cooperative_matrix kernel where the NV one could run too"},
    {"VKVIT_COOPMAT_NV2", "1: the VK_NV_cooperative_matrix2 (tensor-layout) kernel where it can run (not yet timed)"},
    {"VKVIT_COOPMAT_TILE", "32, 64 or 128: that cooperative-matrix GEMM tile wherever it fits (tuning and tests)"},
    {"VKVIT_ATTENTION", "fused or gemm: that attention path wherever the op names none; another value is refused"},
    {"VKVIT_DEVICE_PROFILE", "tests: the device seen through a profile's limits and features (gpu, vulkan-1.1-minimum, "
                             "android-baseline-2022, ...: docs/gpu.md), gpu profiles with the GPU kernels"},
    {"VK_DRIVER_FILES", "the Vulkan loader's: checked for broken driver manifests before the loader reads them"},
    {"VK_ICD_FILENAMES", "the older name of VK_DRIVER_FILES"},
    {"VK_ADD_DRIVER_FILES", "the Vulkan loader's: checked as VK_DRIVER_FILES is"},
    {NULL, NULL},
};

const vkvit__env_var *vkvit__env_table(void) { return k_table; }

static int flag(const char *name) {
    const char *v = getenv(name);
    return v && v[0] && strcmp(v, "0") != 0;
}

/* The loader's reading of a variable: on glibc secure_getenv, which gives NULL in a set-user-ID or set-group-ID
 * process, as the loader's own reading does (so vkvit checks exactly what the loader will read). */
static const char *loader_getenv(const char *name) {
#if defined(__GLIBC__)
    return secure_getenv(name);
#else
    return getenv(name);
#endif
}

static void copy(char *out, size_t cap, const char *v) { snprintf(out, cap, "%s", v ? v : ""); }

void vkvit__env_read(vkvit__env *out) {
    memset(out, 0, sizeof *out);
    out->disable_f16 = flag("VKVIT_DISABLE_F16");
    out->disable_subgroup = flag("VKVIT_DISABLE_SUBGROUP");
    out->disable_coopmat = flag("VKVIT_DISABLE_COOPMAT");
    out->disable_texel = flag("VKVIT_DISABLE_TEXEL");
    out->disable_unrolled = flag("VKVIT_DISABLE_UNROLLED");
    out->disable_huge_pages = flag("VKVIT_DISABLE_HUGE_PAGES");
    out->coopmat_emulate = flag("VKVIT_COOPMAT_EMULATE");
    out->coopmat_khr = flag("VKVIT_COOPMAT_KHR");
    out->coopmat_nv2 = flag("VKVIT_COOPMAT_NV2");
    out->validation = flag("VKVIT_VALIDATION");
    const char *att = getenv("VKVIT_ATTENTION");
    if (att && *att) {
        out->attention = !strcmp(att, "fused") ? 1 : !strcmp(att, "gemm") ? 2 : VKVIT_ENV_BAD;
        copy(out->attention_text, sizeof out->attention_text, att);
    }
    const char *tile = getenv("VKVIT_COOPMAT_TILE");
    if (tile && (!strcmp(tile, "32") || !strcmp(tile, "64") || !strcmp(tile, "128"))) out->coopmat_tile = (uint32_t)atoi(tile);
    copy(out->device, sizeof out->device, getenv("VKVIT_DEVICE"));
    copy(out->device_profile, sizeof out->device_profile, getenv("VKVIT_DEVICE_PROFILE"));
    const char *dir = getenv("VKVIT_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n = 0;
    if (dir && dir[0]) n = snprintf(out->cache_dir, sizeof out->cache_dir, "%s", dir);
    else if (xdg && xdg[0]) n = snprintf(out->cache_dir, sizeof out->cache_dir, "%s/vkvit", xdg);
    else if (home && home[0]) n = snprintf(out->cache_dir, sizeof out->cache_dir, "%s/.cache/vkvit", home);
    if (n < 0 || (size_t)n >= sizeof out->cache_dir) out->cache_dir[0] = '\0'; /* too long: no default cache */
    const char *drivers = loader_getenv("VK_DRIVER_FILES");
    out->driver_files_var = drivers && drivers[0] ? "VK_DRIVER_FILES" : "VK_ICD_FILENAMES";
    out->driver_files = loader_getenv(out->driver_files_var);
    out->add_driver_files = loader_getenv("VK_ADD_DRIVER_FILES");
}
