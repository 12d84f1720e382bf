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

int vkvit_cli_info(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: vkvit info\n\nLists every Vulkan device with its name, driver, Vulkan version, fp16 /\n"
                   "subgroup / cooperative-matrix support, limits vkvit cares about, and the workarounds vkvit\n"
                   "applies on it. No options.\n");
            return CLI_OK;
        }
        fprintf(stderr, "vkvit info: unknown option '%s'\n", argv[i]);
        return CLI_USAGE;
    }
    uint32_t n = 0;
    vkvit_result r = vkvit_enumerate_devices(NULL, 0, &n);
    if (r != VKVIT_OK) {
        fprintf(stderr, "vkvit info: %s\n", vkvit_last_error());
        return vkvit_cli_exit_code(r);
    }
    if (n == 0) {
        fprintf(stderr, "vkvit info: no Vulkan device found (is a Vulkan driver installed?)\n");
        return CLI_NO_DEVICE;
    }
    vkvit_device_info *devs = calloc(n, sizeof *devs);
    if (!devs) return CLI_FAILURE;
    r = vkvit_enumerate_devices(devs, n, &n);
    if (r != VKVIT_OK) {
        fprintf(stderr, "vkvit info: %s\n", vkvit_last_error());
        free(devs);
        return vkvit_cli_exit_code(r);
    }
    for (uint32_t i = 0; i < n; i++) {
        const vkvit_device_info *d = &devs[i];
        printf("device %u: %s\n", i, d->name);
        printf("  type               %s (vendor 0x%04x, device 0x%04x)\n", type_name(d->device_type), d->vendor_id,
               d->device_id);
        printf("  driver             %s %s\n", d->driver_name[0] ? d->driver_name : "(unknown)", d->driver_info);
        printf("  vulkan             %u.%u.%u\n", VK_API_VERSION_MAJOR(d->api_version),
               VK_API_VERSION_MINOR(d->api_version), VK_API_VERSION_PATCH(d->api_version));
        printf("  fp16 storage       %s\n", yes(d->fp16_storage));
        printf("  fp16 arithmetic    %s\n", yes(d->fp16_arithmetic));
        printf("  fp16 used          %s\n", yes(d->fp16_in_use));
        printf("  subgroup size      %u", d->subgroup_size);
        if (d->subgroup_size_control) printf(" (size control %u..%u)", d->subgroup_size_min, d->subgroup_size_max);
        printf(", arithmetic %s\n", yes(d->subgroup_arithmetic));
        printf("  cooperative matrix %s\n", yes(d->cooperative_matrix));
        printf("  timeline semaphore %s\n", yes(d->timeline_semaphore));
        printf("  timestamps         %s (%.3g ns/tick)\n", yes(d->timestamps), d->timestamp_period_ns);
        printf("  shared memory      %u bytes per workgroup, %u invocations max\n", d->max_shared_memory,
               d->max_workgroup_invocations);
        printf("  device memory      %.1f GiB\n", (double)d->device_local_bytes / (1u << 30));
        printf("  workarounds        %s\n", d->workarounds[0] ? d->workarounds : "none");
    }
    free(devs);
    return CLI_OK;
}
