// SPDX-License-Identifier: Apache-2.0
/* vkvit info: every Vulkan device, its features, and what vkvit uses and works around on it. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *type_name(int t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
    }
}

static const char *yes(int b) { return b ? "yes" : "no"; }

/* One feature: does the device have it, does vkvit use it, and why (not). */
typedef struct feature {
    const char *name;
    int available, used;
    char why[200];
} feature;

enum { N_FEATURES = 6 };

static void features_of(const vkvit_device_info *d, feature f[N_FEATURES]) {
    int cpu_quirk = strstr(d->workarounds, "no-fp16-arithmetic") != NULL;
    int disabled = strstr(d->workarounds, "fp16 disabled") != NULL;
    f[0] = (feature){"fp16 storage", d->fp16_storage, d->fp16_in_use, ""};
    snprintf(f[0].why, sizeof f[0].why, "%s",
             d->fp16_in_use ? "fp16 weights in sessions with precision fp16 or fp16-math"
             : disabled    ? "disabled by VKVIT_DISABLE_F16=1 (or the ctx's disable_f16)"
                           : "the device lacks storageBuffer16BitAccess: sessions with precision fp16 are refused (use fp32)");
    /* fp16 arithmetic: the GEMMs of sessions with precision fp16-math (VKVIT_PRECISION_FP16_MATH), which need
     * shaderFloat16 and fp16 storage in use. "used" says vkvit would run them here without a workaround against it;
     * on CPU devices (no-fp16-arithmetic: emulated, slower than fp16) they run only when asked for. */
    const int f16_math = d->fp16_arithmetic && d->fp16_in_use;
    f[1] = (feature){"fp16 arithmetic", d->fp16_arithmetic, f16_math && !cpu_quirk, ""};
    snprintf(f[1].why, sizeof f[1].why, "%s",
             !d->fp16_arithmetic ? "the device lacks shaderFloat16: sessions with precision fp16-math are refused"
             : disabled          ? "disabled by VKVIT_DISABLE_F16=1 (or the ctx's disable_f16): fp16-math is refused"
             : !f16_math         ? "fp16-math also needs fp16 storage, which the device lacks: it is refused"
             : cpu_quirk ? "workaround no-fp16-arithmetic: emulated on this CPU device, slower than fp16; runs only "
                           "when asked for (precision fp16-math)"
                         : "GEMMs of sessions with precision fp16-math: fp16 products, fp32 sums of 16-k chunks "
                           "(attention, norms, softmax stay fp32)");
    const int coopmat = d->cooperative_matrix || d->cooperative_matrix_nv;
    f[2] = (feature){"cooperative matrix", coopmat, d->cooperative_matrix_in_use, ""};
    snprintf(f[2].why, sizeof f[2].why, "%s",
             strstr(d->workarounds, "VKVIT_DISABLE_COOPMAT") ? "disabled by VKVIT_DISABLE_COOPMAT=1"
             : strstr(d->workarounds, "failed its self-check") ? "failed its self-check: GEMMs run the tiled shader"
             : strstr(d->workarounds, "VKVIT_COOPMAT_EMULATE") ? "emulated (VKVIT_COOPMAT_EMULATE=1, a test path): "
                                                                 "fp16-math GEMMs run the coopmat tiling in plain "
                                                                 "arithmetic"
             : d->cooperative_matrix_in_use && strstr(d->workarounds, "cooperative matrix 2 (VKVIT_COOPMAT_NV2")
                 ? "GEMMs of sessions with precision fp16-math (NV cooperative matrix 2: tensor layouts on the "
                   "device's flexible fragments, asked for with VKVIT_COOPMAT_NV2=1), self-checked at first use"
             : d->cooperative_matrix_in_use && d->cooperative_matrix_khr_kernel
                 ? "GEMMs of sessions with precision fp16-math (KHR, fp16 x fp16 + fp32 fragments of the device's "
                   "listed shape, 16x16x16 or 8x8x8), self-checked at first use"
             : d->cooperative_matrix_in_use ? "GEMMs of sessions with precision fp16-math (NV, fp16 x fp16 + fp32, "
                                              "16x16x16), self-checked at first use"
             : coopmat ? "present, not usable by vkvit here (see workarounds; the NV kernel needs fp16 16x16x16 at "
                         "subgroup scope and 32-wide subgroups, the KHR one 16x16x16 or 8x8x8, and both fp16 "
                         "arithmetic)"
                       : "not present: GEMM runs its tiled shader variant");
    f[4] = (feature){"subgroup arithmetic", d->subgroup_arithmetic, d->subgroup_in_use, ""};
    snprintf(f[4].why, sizeof f[4].why, "%s",
             d->subgroup_in_use ? "reductions in norms, GRN and the mLSTM GroupNorm use subgroupAdd"
             : strstr(d->workarounds, "VKVIT_DISABLE_SUBGROUP") ? "disabled by VKVIT_DISABLE_SUBGROUP=1"
             : "not present in compute shaders: reductions use shared memory");
    const int cpu = strstr(d->workarounds, "cpu-device") != NULL;
    f[5] = (feature){"texel reads", cpu, d->texel_reads_in_use, ""};
    snprintf(f[5].why, sizeof f[5].why, "%s",
             d->texel_reads_in_use ? "CPU kernels read inputs with texelFetch (SIMD gathers on llvmpipe)"
             : strstr(d->workarounds, "VKVIT_DISABLE_TEXEL") ? "disabled by VKVIT_DISABLE_TEXEL=1"
             : strstr(d->workarounds, "shaderInt64") ? "the host did not enable shaderInt64 (64-bit stores)"
             : cpu ? "texel buffers do not reach as far as storage buffers, or no shaderInt64"
                   : "GPUs read storage buffers (only CPU devices gain from texel reads)");
    f[3] = (feature){"timestamps", d->timestamps, d->timestamps, ""};
    snprintf(f[3].why, sizeof f[3].why, "%s",
             d->timestamps ? "per-node GPU times for `vkvit bench` and profiled sessions"
                           : "no per-node GPU times (bench reports wall-clock only)");
}

static void usage(FILE *f) {
    fprintf(f, "usage: vkvit info [--json]\n\n"
               "Lists every Vulkan device with its name, driver and Vulkan version, its limits vkvit cares about,\n"
               "and for each feature vkvit decides on (fp16 storage, fp16 arithmetic, cooperative matrix,\n"
               "timestamps, subgroup arithmetic, texel reads) whether the device has it, whether vkvit uses it, and why; then the\n"
               "workarounds (quirks) vkvit applies on the device. Each memory heap with its size and, where the driver\n"
               "reports them (VK_EXT_memory_budget), this process's budget and usage of it.\n\n"
               "options:\n"
               "  --json       one JSON object on stdout (default: text)\n"
               "  -h, --help   this text\n\n"
               "exit codes: 0 success, 1 usage error, 3 no Vulkan loader or device, 4 runtime failure\n");
}

enum { OPT_JSON = 256 };

/* "a (x, y), b" -> ["a (x, y)", "b"]: the workarounds split at the commas outside parentheses. */
static void add_workarounds(cJSON *w, const char *workarounds) {
    char item[512];
    size_t at = 0;
    int depth = 0;
    for (const char *c = workarounds;; c++) {
        if (*c == '\0' || (*c == ',' && depth == 0)) {
            item[at] = '\0';
            if (at) cJSON_AddItemToArray(w, cli_jstr(item));
            at = 0;
            if (*c == '\0') break;
            while (c[1] == ' ') c++;
            continue;
        }
        depth += (*c == '(') - (*c == ')');
        if (at + 1 < sizeof item) item[at++] = *c;
    }
}

/* The queue family's kind, as `vkvit info` words it. */
static const char *queue_kind(const vkvit_device_info *d) {
    return d->queue_compute_only ? "compute-only" : (d->queue_flags & VK_QUEUE_GRAPHICS_BIT) ? "graphics+compute"
                                                                                            : "compute";
}

/* The VkQueueFlags vkvit reports, lower-case names. */
static const struct {
    VkQueueFlags bit;
    const char *name;
} k_queue_flags[] = {{VK_QUEUE_GRAPHICS_BIT, "graphics"}, {VK_QUEUE_COMPUTE_BIT, "compute"},
                     {VK_QUEUE_TRANSFER_BIT, "transfer"}, {VK_QUEUE_SPARSE_BINDING_BIT, "sparse"}};

/* Device i as a member of the JSON document's "devices". */
static cJSON *device_json(uint32_t i, const vkvit_device_info *d, const feature *f) {
    cJSON *dj = cJSON_CreateObject();
    char api[32];
    snprintf(api, sizeof api, "%u.%u.%u", VK_API_VERSION_MAJOR(d->api_version), VK_API_VERSION_MINOR(d->api_version),
             VK_API_VERSION_PATCH(d->api_version));
    cJSON_AddNumberToObject(dj, "index", i);
    cJSON_AddItemToObject(dj, "name", cli_jstr(d->name));
    cJSON_AddStringToObject(dj, "type", type_name(d->device_type));
    cJSON_AddNumberToObject(dj, "vendor_id", d->vendor_id);
    cJSON_AddNumberToObject(dj, "device_id", d->device_id);
    cJSON_AddItemToObject(dj, "driver", cli_jstr(d->driver_name));
    cJSON_AddItemToObject(dj, "driver_info", cli_jstr(d->driver_info));
    cJSON_AddStringToObject(dj, "vulkan", api);
    cJSON *fo = cJSON_AddObjectToObject(dj, "features");
    for (int k = 0; k < N_FEATURES; k++) {
        char key[32];
        snprintf(key, sizeof key, "%s", f[k].name);
        for (char *c = key; *c; c++) if (*c == ' ') *c = '_';
        cJSON *e = cJSON_AddObjectToObject(fo, key);
        cJSON_AddBoolToObject(e, "available", f[k].available);
        cJSON_AddBoolToObject(e, "used", f[k].used);
        cJSON_AddStringToObject(e, "why", f[k].why);
    }
    cJSON *sg = cJSON_AddObjectToObject(dj, "subgroup");
    cJSON_AddNumberToObject(sg, "size", d->subgroup_size);
    cJSON_AddBoolToObject(sg, "size_control", d->subgroup_size_control);
    cJSON_AddNumberToObject(sg, "min", d->subgroup_size_min);
    cJSON_AddNumberToObject(sg, "max", d->subgroup_size_max);
    cJSON_AddBoolToObject(sg, "arithmetic", d->subgroup_arithmetic);
    cJSON_AddBoolToObject(dj, "timeline_semaphore", d->timeline_semaphore);
    cJSON_AddItemToObject(dj, "timestamp_period_ns", cli_jnum(d->timestamp_period_ns));
    cJSON_AddNumberToObject(dj, "max_shared_memory", d->max_shared_memory);
    cJSON_AddNumberToObject(dj, "max_workgroup_invocations", d->max_workgroup_invocations);
    cJSON_AddNumberToObject(dj, "device_local_bytes", (double)d->device_local_bytes);
    cJSON *q = cJSON_AddObjectToObject(dj, "queue");
    cJSON_AddNumberToObject(q, "family", d->queue_family_index);
    cJSON_AddStringToObject(q, "kind", queue_kind(d));
    cJSON *qf = cJSON_AddArrayToObject(q, "flags");
    for (size_t k = 0; k < sizeof k_queue_flags / sizeof *k_queue_flags; k++)
        if (d->queue_flags & k_queue_flags[k].bit) cJSON_AddItemToArray(qf, cJSON_CreateString(k_queue_flags[k].name));
    /* the heaps; without VK_EXT_memory_budget the budget is the heap's size and the usage unknown (null) */
    cJSON_AddBoolToObject(dj, "memory_budget", d->memory_budget);
    cJSON *heaps = cJSON_AddArrayToObject(dj, "memory_heaps");
    for (uint32_t h = 0; h < d->memory_heap_count && h < VKVIT_MAX_MEMORY_HEAPS; h++) {
        const vkvit_memory_heap *m = &d->memory_heaps[h];
        cJSON *hj = cJSON_CreateObject();
        cJSON_AddNumberToObject(hj, "index", h);
        cJSON_AddNumberToObject(hj, "size", (double)m->size);
        cJSON_AddBoolToObject(hj, "device_local", m->device_local);
        cJSON_AddNumberToObject(hj, "budget", (double)m->budget);
        if (d->memory_budget) cJSON_AddNumberToObject(hj, "usage", (double)m->usage);
        else cJSON_AddNullToObject(hj, "usage");
        cJSON_AddItemToArray(heaps, hj);
    }
    add_workarounds(cJSON_AddArrayToObject(dj, "workarounds"), d->workarounds);
    return dj;
}

/* Device i as text. */
static void print_device(uint32_t i, const vkvit_device_info *d, const feature *f) {
    printf("device %u: ", i);
    cli_put_clean(stdout, d->name, 256);
    printf("\n  type               %s (vendor 0x%04x, device 0x%04x)\n", type_name(d->device_type), d->vendor_id,
           d->device_id);
    printf("  driver             ");
    cli_put_clean(stdout, d->driver_name[0] ? d->driver_name : "(unknown)", 256);
    printf(" ");
    cli_put_clean(stdout, d->driver_info, 256);
    printf("\n  vulkan             %u.%u.%u\n", VK_API_VERSION_MAJOR(d->api_version),
           VK_API_VERSION_MINOR(d->api_version), VK_API_VERSION_PATCH(d->api_version));
    printf("  subgroup size      %u", d->subgroup_size);
    if (d->subgroup_size_control) printf(" (size control %u..%u)", d->subgroup_size_min, d->subgroup_size_max);
    printf(", subgroup arithmetic %s", yes(d->subgroup_arithmetic));
    printf("\n  timeline semaphore %s\n", yes(d->timeline_semaphore));
    printf("  timestamp period   %.3g ns/tick\n", d->timestamp_period_ns);
    printf("  shared memory      %u bytes per workgroup, %u invocations max\n", d->max_shared_memory,
           d->max_workgroup_invocations);
    printf("  device memory      %.1f GiB\n", (double)d->device_local_bytes / (1u << 30));
    printf("  queue              family %u, %s (", d->queue_family_index, queue_kind(d));
    for (size_t k = 0, first = 1; k < sizeof k_queue_flags / sizeof *k_queue_flags; k++)
        if (d->queue_flags & k_queue_flags[k].bit) printf("%s%s", first ? "" : " ", k_queue_flags[k].name), first = 0;
    printf(")\n");
    for (uint32_t h = 0; h < d->memory_heap_count && h < VKVIT_MAX_MEMORY_HEAPS; h++) {
        const vkvit_memory_heap *m = &d->memory_heaps[h];
        printf("  memory heap %-2u     %.2f GiB%s, ", h, (double)m->size / (1u << 30),
               m->device_local ? " device-local" : "");
        if (d->memory_budget)
            printf("budget %.2f GiB, in use %.1f MiB (VK_EXT_memory_budget)\n", (double)m->budget / (1u << 30),
                   (double)m->usage / (1u << 20));
        else
            printf("budget: not reported by the driver (the heap size is the limit)\n");
    }
    printf("  feature              device  vkvit uses  why\n");
    for (int k = 0; k < N_FEATURES; k++)
        printf("  %-20s %-7s %-11s %s\n", f[k].name, yes(f[k].available), yes(f[k].used), f[k].why);
    printf("  workarounds        %s\n", d->workarounds[0] ? d->workarounds : "none");
}

/* Every device the loader lists, malloc'ed in *devs (none: a sentence and CLI_NO_DEVICE). Returns the exit code. */
static int list_devices(vkvit_device_info **devs, uint32_t *n) {
    /* vkvit_enumerate_devices checks the driver manifests the environment names before the loader reads them */
    vkvit_result r = vkvit_enumerate_devices(NULL, 0, n);
    if (r != VKVIT_OK) return cli_fail("info", r);
    if (*n == 0) {
        fprintf(stderr, "vkvit info: no Vulkan device found (is a Vulkan driver installed?)\n");
        return CLI_NO_DEVICE;
    }
    if (!(*devs = calloc(*n, sizeof **devs))) return CLI_FAILURE;
    if ((r = vkvit_enumerate_devices(*devs, *n, n)) != VKVIT_OK) return cli_fail("info", r);
    return CLI_OK;
}

int vkvit_cli_info(int argc, char **argv) {
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int json = 0;
    cli_opts o;
    cli_opts_init(&o, "info", argc, argv, "h", longopts);
    for (int c; (c = cli_opts_next(&o)) != -1;) {
        switch (c) {
        case 'h': usage(stdout); return cli_finish_stdout("info", CLI_OK);
        case OPT_JSON: json = 1; break;
        default: return CLI_USAGE;
        }
    }
    if (o.first_operand < argc) return cli_usage_error("info", "unexpected argument '%s'", argv[o.first_operand]);
    vkvit_device_info *devs = NULL;
    uint32_t n = 0;
    int rc = list_devices(&devs, &n);
    if (rc != CLI_OK) {
        free(devs);
        return rc;
    }
    cJSON *doc = json ? cJSON_CreateObject() : NULL, *arr = json ? cJSON_AddArrayToObject(doc, "devices") : NULL;
    if (json) {
        char version[32];
        snprintf(version, sizeof version, "%d.%d.%d", VKVIT_VERSION_MAJOR, VKVIT_VERSION_MINOR, VKVIT_VERSION_PATCH);
        cJSON_AddStringToObject(doc, "vkvit_version", version);
    }
    for (uint32_t i = 0; i < n; i++) {
        feature f[N_FEATURES];
        features_of(&devs[i], f);
        if (json) cJSON_AddItemToArray(arr, device_json(i, &devs[i], f));
        else print_device(i, &devs[i], f);
    }
    if (json) rc = cli_json_print("info", doc, 1);
    free(devs);
    return cli_finish_stdout("info", rc);
}
