// SPDX-License-Identifier: Apache-2.0
/* The ctx's queue and its global priority (issue 58, "The queue and the priority"), with the validation layer on:
 *   - vkvit_device_info names the queue: queue_family_index = vkvit_ctx_queue_family, queue_flags those of that
 *     family (VK_QUEUE_COMPUTE_BIT set), queue_compute_only = compute without graphics; the family is a
 *     compute-only one whenever the device has one with timestamps (the async compute queue), as
 *     vkvit_enumerate_devices says beforehand;
 *   - no priority asked: queue_priority 0, no fallback;
 *   - LOW and HIGH: where the device lists VK_KHR_global_priority or VK_EXT_global_priority, the priority is in
 *     force (128 / 512) or, if the driver refused it, the fallback is 2 and named in the workarounds; where it lists
 *     neither, fallback 1 named in the workarounds, and queue_priority_strict = 1 is refused with a sentence; either
 *     way a session on the ctx gives the same logits as on a default ctx (bit for bit: same kernels) on random
 *     inputs (seed printed, VKVIT_TEST_SEED=S reruns it);
 *   - refused: an unknown vkvit_queue_priority, and a priority in adopt mode (the host's queue keeps its own). */
#include "host_util.h"

#include <time.h>

#define MODEL VKVIT_SOURCE_DIR "/tests/golden/models/vit5_nvsubq_cls_r4.vkvit"

static bool device_lists_priority(VkPhysicalDevice pd) {
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
    VkExtensionProperties *e = calloc(n ? n : 1, sizeof *e);
    vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e);
    bool has = false;
    for (uint32_t i = 0; i < n; i++)
        has |= !strcmp(e[i].extensionName, VK_KHR_GLOBAL_PRIORITY_EXTENSION_NAME) ||
               !strcmp(e[i].extensionName, VK_EXT_GLOBAL_PRIORITY_EXTENSION_NAME);
    free(e);
    return has;
}

static float *logits_of(vkvit_ctx *ctx, const float *input, size_t n_in, size_t *n_out) {
    vkvit_model *m = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODEL}, &m));
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(m, &(vkvit_session_desc){.batch = 2}, &s));
    const vkvit_shape os = vkvit_session_output_shape(s);
    *n_out = (size_t)os.dims[0] * os.dims[1];
    float *out = malloc(*n_out * sizeof *out);
    for (size_t i = 0; i < *n_out; i++) out[i] = NAN;
    MUST(vkvit_session_set_input(s, input, n_in));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, out, *n_out));
    vkvit_session_destroy(s);
    vkvit_model_destroy(m);
    return out;
}

static void check_queue(const char *what, vkvit_ctx *ctx, const vkvit_device_info *info, bool own) {
    VkQueueFamilyProperties qf[32];
    uint32_t n = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical_device, &n, qf);
    const uint32_t fam = vkvit_ctx_queue_family(ctx);
    CHECK(info->queue_family_index == fam && fam < n, "%s: queue_family_index %u, the ctx's %u", what,
          info->queue_family_index, fam);
    CHECK(fam < n && info->queue_flags == qf[fam].queueFlags && (info->queue_flags & VK_QUEUE_COMPUTE_BIT),
          "%s: queue_flags 0x%x", what, info->queue_flags);
    CHECK(info->queue_compute_only == !(info->queue_flags & VK_QUEUE_GRAPHICS_BIT), "%s: queue_compute_only %d", what,
          info->queue_compute_only);
    bool dedicated = false;
    for (uint32_t i = 0; i < n; i++)
        dedicated |= (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) &&
                     qf[i].timestampValidBits > 0;
    CHECK(!own || !dedicated || info->queue_compute_only, "%s: the device has an async compute family, the ctx took family %u",
          what, fam);
    printf("%-24s queue family %u (flags 0x%x, %s), global priority %d, fallback %d; workarounds: %s\n", what, fam,
           info->queue_flags, info->queue_compute_only ? "compute-only" : "graphics+compute", info->queue_priority,
           info->queue_priority_fallback, info->workarounds);
}

int main(void) {
    const char *seed_env = getenv("VKVIT_TEST_SEED");
    const uint32_t seed = seed_env ? (uint32_t)strtoul(seed_env, NULL, 10) : (uint32_t)time(NULL);
    printf("random inputs: seed %u (rerun: VKVIT_TEST_SEED=%u)\n", seed, seed);
    vt_rng_state ^= seed;
    const size_t n_in = 2 * 32 * 32 * 3;
    float *input = malloc(n_in * sizeof *input);
    vt_fill_rand(input, n_in);

    vkvit_ctx *ctx = vt_ctx();
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    check_queue("default", ctx, &info, true);
    CHECK(info.queue_priority == 0 && info.queue_priority_fallback == 0, "default: priority %d, fallback %d",
          info.queue_priority, info.queue_priority_fallback);
    const bool listed = device_lists_priority(ctx->physical_device);
    printf("the device lists %s\n", listed ? "a global-priority extension" : "no global-priority extension");
    /* What vkvit info says beforehand: the same family. */
    uint32_t nd = 0;
    MUST(vkvit_enumerate_devices(NULL, 0, &nd));
    vkvit_device_info *all = calloc(nd, sizeof *all);
    MUST(vkvit_enumerate_devices(all, nd, &nd));
    bool found = false;
    for (uint32_t i = 0; i < nd; i++)
        if (!strcmp(all[i].name, info.name) && all[i].device_id == info.device_id) {
            found = true;
            CHECK(all[i].queue_family_index == info.queue_family_index && all[i].queue_flags == info.queue_flags,
                  "enumerate: family %u flags 0x%x", all[i].queue_family_index, all[i].queue_flags);
        }
    CHECK(found, "enumerate lists the ctx's device");
    free(all);
    size_t n_out = 0;
    float *want = logits_of(ctx, input, n_in, &n_out);
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "validation messages on the default ctx");
    vkvit_ctx_destroy(ctx);

    const struct {
        vkvit_queue_priority p;
        int value;
        const char *name;
    } prios[] = {{VKVIT_QUEUE_PRIORITY_LOW, 128, "low"}, {VKVIT_QUEUE_PRIORITY_HIGH, 512, "high"}};
    for (int k = 0; k < 2; k++) {
        vkvit_ctx *c = vt_ctx_with((vkvit_ctx_desc){.queue_priority = prios[k].p, .label = prios[k].name});
        MUST(vkvit_ctx_device_info(c, &info));
        check_queue(prios[k].name, c, &info, true);
        if (listed) {
            CHECK(info.queue_priority == prios[k].value ||
                      (info.queue_priority == 0 && info.queue_priority_fallback == 2 &&
                       strstr(info.workarounds, "NOT_PERMITTED")),
                  "%s: priority %d, fallback %d", prios[k].name, info.queue_priority, info.queue_priority_fallback);
        } else {
            CHECK(info.queue_priority == 0 && info.queue_priority_fallback == 1 &&
                      strstr(info.workarounds, "global_priority"),
                  "%s: priority %d, fallback %d, workarounds '%s'", prios[k].name, info.queue_priority,
                  info.queue_priority_fallback, info.workarounds);
        }
        float *got = logits_of(c, input, n_in, &n_out);
        CHECK(!memcmp(got, want, n_out * sizeof *got), "%s: logits differ from the default ctx's", prios[k].name);
        free(got);
        CHECK(vkvit_ctx_validation_messages(c, 0) == 0, "%s: validation messages", prios[k].name);
        vkvit_ctx_destroy(c);
        /* Strict: in force, or refused with a sentence. */
        vkvit_ctx *strict = NULL;
        vkvit_result r = vkvit_ctx_create(&(vkvit_ctx_desc){.queue_priority = prios[k].p, .queue_priority_strict = 1,
                                                             .pipeline_cache_dir = ""}, &strict);
        if (r == VKVIT_OK) {
            MUST(vkvit_ctx_device_info(strict, &info));
            CHECK(info.queue_priority == prios[k].value, "%s strict: priority %d", prios[k].name, info.queue_priority);
        } else {
            CHECK(r == VKVIT_ERROR_UNSUPPORTED && strstr(vkvit_last_error(), "global priority") &&
                      (!listed || strstr(vkvit_last_error(), "NOT_PERMITTED")),
                  "%s strict: %s: %s", prios[k].name, vkvit_result_name(r), vkvit_last_error());
            printf("%s strict: refused: %s\n", prios[k].name, vkvit_last_error());
        }
        vkvit_ctx_destroy(strict);
    }
    free(want);

    /* Refusals. */
    vkvit_ctx *bad = NULL;
    vkvit_result r = vkvit_ctx_create(&(vkvit_ctx_desc){.queue_priority = (vkvit_queue_priority)7}, &bad);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && bad == NULL && strstr(vkvit_last_error(), "queue_priority = 7"), "%s",
          vkvit_last_error());
    host h;
    host_create(&h);
    vkvit_host_device hd = {.instance = h.instance, .physical_device = h.pd, .device = h.device,
                            .queue_family_index = h.family, .queue = h.queue,
                            .get_instance_proc_addr = vkGetInstanceProcAddr};
    r = vkvit_ctx_create(&(vkvit_ctx_desc){.host = &hd, .queue_priority = VKVIT_QUEUE_PRIORITY_LOW}, &bad);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && bad == NULL && strstr(vkvit_last_error(), "adopt"), "%s",
          vkvit_last_error());
    vkvit_ctx *adopted = host_adopt(&h, "adopted");
    MUST(vkvit_ctx_device_info(adopted, &info));
    check_queue("adopted", adopted, &info, false);
    vkvit_ctx_destroy(adopted);
    CHECK(host_messages == 0, "%u host validation messages", host_messages);
    host_destroy(&h);
    free(input);
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
