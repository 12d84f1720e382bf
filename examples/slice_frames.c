// SPDX-License-Identifier: Apache-2.0
/* slice_frames — one inference spread over several frames of a render loop (docs/embedding.md, "Slices").
 *
 * The app owns its instance (validation layer + synchronization validation when asked), device, queue, command
 * buffers, fences and timestamp queries, as examples/embed_frame.c does. vkvit adopts the device; a session's
 * node times are profiled once (vkvit_session_plan_slices' profiling pass, its times kept through times_out), the
 * inference is planned into slices under each GPU-time budget from them, and every frame the app
 *   1. records its own work (here a fill of a 16 MiB buffer, standing in for its rendering),
 *   2. records the next slice of the inference into the same command buffer (vkvit_session_record_slice), with
 *      timestamps around it,
 *   3. submits the frame with its own fence, two frames in flight;
 * a new inference starts (set_input) once the frame that carried the last slice has completed and its logits have
 * been read. Each inference's logits are compared with a whole run's on the same input (vkvit_session_run on a
 * second session), bit for bit; each slice's measured GPU time is set against the budget and the plan's time.
 *
 *   slice_frames [--model FILE] [--budgets MS[,MS...]] [--inferences N] [--warmup N] [--profile-runs N]
 *                [--per-slice] [--validation]
 *
 * Exit codes: 0 ok, 1 error (logits not equal to the whole run's, or any validation message with --validation),
 * 2 usage, 77 no Vulkan device. A slice measured above its budget is reported, not an error: the plan bounds the
 * profiled times, and a device's times vary. */
#include "vkvit.h"

#include <volk.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IN_FLIGHT 2
#define MAX_BUDGETS 8
#define HOST_WORK_BYTES (16u << 20)

#define EXAMPLE_NAME "slice_frames"
#include "example_app.h"

/* ------------------------------------------------------------------------------------------------------------
 * Frames: the app's work, one slice, timestamps around the slice
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct frame {
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool timestamps;                 /* 0: frame start, 1: the app's work done, 2: the slice done */
    int slice;                              /* the slice it carries, -1 = none in flight */
    int inference;
} frame;

typedef struct app_work {
    VkBuffer buffer;                        /* the app's stand-in for its rendering: filled every frame */
    VkDeviceMemory memory;
} app_work;

static uint64_t ticks_between(uint64_t t0, uint64_t t1, uint32_t valid_bits) {
    const uint64_t mask = valid_bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << valid_bits) - 1);
    return (t1 - t0) & mask; /* the counter has timestampValidBits bits and may wrap between two reads */
}

static void frame_record(const app *a, const app_work *w, vkvit_session *s, frame *f, int slice, uint32_t number) {
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    (void)a;
    VK_CHECK(vkResetCommandBuffer(f->cmd, 0));
    VK_CHECK(vkBeginCommandBuffer(f->cmd, &begin));
    vkCmdResetQueryPool(f->cmd, f->timestamps, 0, 3);
    vkCmdWriteTimestamp(f->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, f->timestamps, 0);
    /* The app's own frame work: the last frame's fill must finish first (write after write). */
    VkBufferMemoryBarrier waw = {.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                                 .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                                 .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                                 .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                 .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .buffer = w->buffer,
                                 .size = VK_WHOLE_SIZE};
    vkCmdPipelineBarrier(f->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 1, &waw,
                         0, NULL);
    vkCmdFillBuffer(f->cmd, w->buffer, 0, VK_WHOLE_SIZE, number);
    vkCmdWriteTimestamp(f->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, f->timestamps, 1);
    /* One slice of vkvit's inference: it begins with its own barrier on everything before it. */
    VKVIT_CHECK(vkvit_session_record_slice(s, f->cmd, (uint32_t)slice));
    vkCmdWriteTimestamp(f->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, f->timestamps, 2);
    VK_CHECK(vkEndCommandBuffer(f->cmd));
    f->slice = slice;
}

/* Waits for the frame, returns its slice's GPU time in ms (-1 when it carried none). */
static double frame_finish(const app *a, frame *f) {
    if (f->slice < 0) return -1;
    VK_CHECK(vkWaitForFences(a->device, 1, &f->fence, VK_TRUE, UINT64_MAX));
    uint64_t t[3];
    VK_CHECK(vkGetQueryPoolResults(a->device, f->timestamps, 0, 3, sizeof t, t, sizeof t[0],
                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    f->slice = -1;
    return (double)ticks_between(t[1], t[2], a->timestamp_bits) * a->timestamp_period_ns * 1e-6;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* A pseudo-random input in [-1, 1), different for every inference. */
static void fill_input(float *x, size_t n, uint32_t seed) {
    uint32_t st = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        st = st * 1664525u + 1013904223u;
        x[i] = (float)(st >> 8) / (float)(1u << 23) - 1.0f;
    }
}

typedef struct budget_result {
    double budget_ms;
    vkvit_slice_plan plan;
    double median_ms, max_ms;               /* measured per slice, over all slices and inferences */
    uint32_t within, measured;              /* slices measured within the budget, of all measured */
    uint32_t equal, inferences;             /* inferences whose logits equal the whole run's */
} budget_result;

/* `warmup` inferences first (their logits checked, their times not counted: a first pass through new command
 * buffers costs more on some drivers), then `inferences` measured ones. */
static budget_result run_budget(app *a, frame *fr, const app_work *w, vkvit_session *s, vkvit_session *ref,
                                double budget_ms, const double *node_ms, uint32_t n_nodes, int warmup, int inferences,
                                bool per_slice, uint32_t *frame_number) {
    budget_result r = {.budget_ms = budget_ms, .inferences = (uint32_t)(warmup + inferences)};
    vkvit_shape is = vkvit_session_input_shape(s), os = vkvit_session_output_shape(s);
    const size_t n_in = (size_t)is.dims[0] * is.dims[1] * is.dims[2] * is.dims[3];
    const size_t n_out = (size_t)os.dims[0] * os.dims[1];
    float *input = malloc(n_in * sizeof *input), *want = malloc(n_out * sizeof *want),
          *got = malloc(n_out * sizeof *got);
    if (!input || !want || !got) {
        fprintf(stderr, "slice_frames: out of memory\n");
        exit(1);
    }

    /* Once, on a loading screen: the plan, from the node times profiled at start-up. */
    VKVIT_CHECK(vkvit_session_plan_slices(
        s, &(vkvit_slice_plan_desc){.budget_ms = budget_ms, .node_ms = node_ms, .node_count = n_nodes}, &r.plan));
    const uint32_t n = r.plan.slice_count;
    const int total = warmup + inferences;
    double *measured = calloc((size_t)n * total, sizeof *measured), *sorted = calloc((size_t)n * total, sizeof *sorted);
    /* A run on a NaN input: a slice that did not run cannot leave an earlier inference's logits behind. */
    for (size_t i = 0; i < n_in; i++) input[i] = NAN;
    VKVIT_CHECK(vkvit_session_set_input(s, input, n_in));
    VKVIT_CHECK(vkvit_session_run(s));

    for (int k = 0; k < total; k++) {
        /* The whole run on a second session, for the comparison. */
        fill_input(input, n_in, 1000u * (uint32_t)(*frame_number + 1) + (uint32_t)k);
        VKVIT_CHECK(vkvit_session_set_input(ref, input, n_in));
        VKVIT_CHECK(vkvit_session_run(ref));
        VKVIT_CHECK(vkvit_session_get_output(ref, want, n_out));
        /* The previous inference's last frame has completed (frame_finish below), so the session is idle. */
        VKVIT_CHECK(vkvit_session_set_input(s, input, n_in));
        for (uint32_t i = 0; i < n; i++) {
            frame *f = &fr[*frame_number % IN_FLIGHT];
            if (f->slice >= 0) measured[(size_t)f->inference * n + (uint32_t)f->slice] = frame_finish(a, f);
            VK_CHECK(vkResetFences(a->device, 1, &f->fence));
            frame_record(a, w, s, f, (int)i, *frame_number);
            f->inference = k;
            VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                               .pCommandBuffers = &f->cmd};
            VK_CHECK(vkQueueSubmit(a->queue, 1, &si, f->fence));
            (*frame_number)++;
        }
        /* The frames still in flight, the last slice's included; then the logits. */
        for (int j = 0; j < IN_FLIGHT; j++) {
            frame *f = &fr[(*frame_number + (uint32_t)j) % IN_FLIGHT];
            if (f->slice >= 0) measured[(size_t)f->inference * n + (uint32_t)f->slice] = frame_finish(a, f);
        }
        for (size_t i = 0; i < n_out; i++) got[i] = NAN;
        VKVIT_CHECK(vkvit_session_get_output(s, got, n_out));
        r.equal += memcmp(got, want, n_out * sizeof *got) == 0;
    }
    const double *timed = measured + (size_t)n * warmup; /* the measured inferences */
    for (size_t i = 0; i < (size_t)n * inferences; i++) {
        sorted[i] = timed[i];
        r.within += timed[i] <= budget_ms;
    }
    r.measured = n * (uint32_t)inferences;
    qsort(sorted, r.measured, sizeof *sorted, cmp_double);
    r.median_ms = sorted[r.measured / 2];
    r.max_ms = sorted[r.measured - 1];

    printf("budget %.3f ms: %u slices of %u nodes, %u of them one node above the budget; planned total %.3f ms, "
           "largest slice %.3f ms\n", budget_ms, n, r.plan.nodes, r.plan.over_budget, r.plan.total_ms,
           r.plan.largest_ms);
    if (r.plan.message[0]) printf("  %s\n", r.plan.message);
    printf("  measured GPU time per slice (%u slices x %d inferences): median %.3f ms, max %.3f ms; %u of %u within "
           "the budget\n", n, inferences, r.median_ms, r.max_ms, r.within, r.measured);
    printf("  logits equal to a whole run's bit for bit: %u of %d inferences (%d warm-up + %d measured)\n", r.equal,
           total, warmup, inferences);
    if (per_slice) {
        printf("  slice  nodes  first node                                   planned ms  measured ms (per inference)\n");
        for (uint32_t i = 0; i < n; i++) {
            vkvit_slice_info info;
            VKVIT_CHECK(vkvit_session_slice_info(s, i, &info));
            printf("  %5u  %5u  %-44s %10.3f ", i, info.node_count, info.first_label, info.planned_ms);
            for (int k = 0; k < inferences; k++) printf(" %8.3f", timed[(size_t)k * n + i]);
            printf("%s\n", info.over_budget ? "  (one node above the budget)" : "");
        }
    }
    free(measured), free(sorted), free(input), free(want), free(got);
    return r;
}

static int usage(void) {
    fprintf(stderr, "usage: slice_frames [--model FILE] [--budgets MS[,MS...]] [--inferences N] [--warmup N] "
                    "[--profile-runs N] [--per-slice] [--validation]\n"
                    "  --model FILE     vkvit model file (default: %s)\n"
                    "  --budgets LIST   GPU-time budgets per slice in ms, comma-separated, up to %d (default 1,2)\n"
                    "  --inferences N   inferences per budget, each spread over its slices' frames, 1..100 "
                    "(default 2)\n"
                    "  --warmup N       inferences before those, their times not counted, 0..100 (default 1)\n"
                    "  --profile-runs N the plan's profiling passes, 1..64 (default 3: the median per node)\n"
                    "  --per-slice      print every slice: nodes, first node, planned and measured ms\n"
                    "  --validation     validation layer + synchronization validation on the app's instance; any\n"
                    "                   message fails the run (also $VKVIT_VALIDATION=1)\n",
            SLICE_DEFAULT_MODEL, MAX_BUDGETS);
    return 2;
}

int main(int argc, char **argv) {
    const char *model_path = SLICE_DEFAULT_MODEL;
    double budgets[MAX_BUDGETS] = {1, 2};
    int n_budgets = 2, inferences = 2, warmup = 1, profile_runs = 3;
    const char *env = getenv("VKVIT_VALIDATION");
    bool validation = env && !strcmp(env, "1"), per_slice = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) model_path = argv[++i];
        else if (!strcmp(argv[i], "--inferences") && i + 1 < argc) inferences = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--profile-runs") && i + 1 < argc) profile_runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--budgets") && i + 1 < argc) {
            char *p = argv[++i], *end = NULL;
            for (n_budgets = 0; *p; p = end + (*end == ',')) {
                if (n_budgets == MAX_BUDGETS) return usage();
                budgets[n_budgets] = strtod(p, &end);
                if (end == p || (*end && *end != ',') || !(budgets[n_budgets] > 0 && budgets[n_budgets] < 1e6))
                    return usage();
                n_budgets++;
            }
            if (!n_budgets) return usage();
        } else if (!strcmp(argv[i], "--per-slice")) per_slice = true;
        else if (!strcmp(argv[i], "--validation")) validation = true;
        else return usage();
    }
    if (inferences < 1 || inferences > 100 || warmup < 0 || warmup > 100 || profile_runs < 1 || profile_runs > 64)
        return usage();

    /* The renderer's device, then vkvit on it. */
    app a;
    memset(&a, 0, sizeof a);
    app_create_instance(&a, validation);
    app_create_device(&a);
    vkvit_host_device host = {
        .instance = a.instance, .physical_device = a.pd, .device = a.device, .queue_family_index = a.family,
        .queue = a.queue, .get_instance_proc_addr = vkGetInstanceProcAddr, .api_version = a.api,
        .enabled_device_extensions = a.exts, .enabled_device_extension_count = a.n_exts, .enabled_features = &a.enabled,
    };
    vkvit_ctx *ctx = NULL;
    VKVIT_CHECK(vkvit_ctx_create(&(vkvit_ctx_desc){.label = "slice_frames", .host = &host}, &ctx));
    vkvit_device_info info;
    VKVIT_CHECK(vkvit_ctx_device_info(ctx, &info));
    vkvit_model *model = NULL;
    VKVIT_CHECK(vkvit_model_create(ctx, &(vkvit_model_desc){.path = model_path}, &model));
    vkvit_model_info mi;
    VKVIT_CHECK(vkvit_model_get_info(model, &mi));
    printf("device %s (%s); validation %s\n", info.name, info.driver_name, validation ? "on" : "off");
    printf("model %s: %ux%u input, %.2f GFLOP; %d + %d warm-up inferences per budget, %d frames in flight\n",
           mi.name, mi.image_width, mi.image_height, (double)mi.flops * 1e-9, inferences, warmup, IN_FLIGHT);

    /* Everything is created up front (a loading screen); the frame loop creates and allocates nothing. */
    vkvit_session *s = NULL, *ref = NULL;
    VKVIT_CHECK(vkvit_session_create(model, &(vkvit_session_desc){.label = "sliced"}, &s));
    VKVIT_CHECK(vkvit_session_create(model, &(vkvit_session_desc){.label = "whole"}, &ref));
    VkCommandPool pool;
    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = a.family};
    VK_CHECK(vkCreateCommandPool(a.device, &cpi, NULL, &pool));
    frame fr[IN_FLIGHT];
    for (int i = 0; i < IN_FLIGHT; i++) {
        fr[i] = (frame){.slice = -1};
        VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                           .commandPool = pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                           .commandBufferCount = 1};
        VK_CHECK(vkAllocateCommandBuffers(a.device, &cai, &fr[i].cmd));
        VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        VK_CHECK(vkCreateFence(a.device, &fi, NULL, &fr[i].fence));
        VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                    .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 3};
        VK_CHECK(vkCreateQueryPool(a.device, &qi, NULL, &fr[i].timestamps));
    }
    app_work w;
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = HOST_WORK_BYTES,
                             .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    VK_CHECK(vkCreateBuffer(a.device, &bi, NULL, &w.buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(a.device, w.buffer, &req);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                               .memoryTypeIndex = app_memory_type(&a, req.memoryTypeBits, 0)};
    VK_CHECK(vkAllocateMemory(a.device, &ai, NULL, &w.memory));
    VK_CHECK(vkBindBufferMemory(a.device, w.buffer, w.memory, 0));

    /* The node times, profiled once (the plan's profiling pass on a random input) and planned with for every
     * budget: the budgets' slices then come from the same times. */
    vkvit_session_stats st;
    VKVIT_CHECK(vkvit_session_get_stats(s, &st));
    double *node_ms = calloc(st.nodes, sizeof *node_ms);
    {
        vkvit_shape is = vkvit_session_input_shape(s);
        const size_t n_in = (size_t)is.dims[0] * is.dims[1] * is.dims[2] * is.dims[3];
        float *input = malloc(n_in * sizeof *input);
        fill_input(input, n_in, 0);
        VKVIT_CHECK(vkvit_session_set_input(s, input, n_in));
        free(input);
        vkvit_slice_plan p;
        VKVIT_CHECK(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = budgets[0],
                                                  .profile_runs = (uint32_t)profile_runs, .times_out = node_ms,
                                                  .node_count = st.nodes}, &p));
        printf("node times: %u nodes, %.3f ms in all (median of %d profiled runs per node)\n", st.nodes, p.total_ms,
               profile_runs);
    }
    uint32_t frame_number = 0, not_equal = 0;
    for (int b = 0; b < n_budgets; b++) {
        budget_result r = run_budget(&a, fr, &w, s, ref, budgets[b], node_ms, st.nodes, warmup, inferences,
                                     per_slice, &frame_number);
        not_equal += r.inferences - r.equal;
    }
    printf("%u frames in all\n", frame_number);
    free(node_ms);

    /* Teardown in the documented order: the app waits for its frames, sessions, model, ctx, then its own device. */
    VK_CHECK(vkDeviceWaitIdle(a.device));
    vkvit_session_destroy(s);
    vkvit_session_destroy(ref);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
    for (int i = 0; i < IN_FLIGHT; i++) {
        vkDestroyQueryPool(a.device, fr[i].timestamps, NULL);
        vkDestroyFence(a.device, fr[i].fence, NULL);
    }
    vkDestroyBuffer(a.device, w.buffer, NULL);
    vkFreeMemory(a.device, w.memory, NULL);
    vkDestroyCommandPool(a.device, pool, NULL);
    vkDestroyDevice(a.device, NULL);
    if (a.messenger) vkDestroyDebugUtilsMessengerEXT(a.instance, a.messenger, NULL);
    vkDestroyInstance(a.instance, NULL);
    if (validation) printf("validation messages: %u\n", g_validation_messages);
    if (not_equal) fprintf(stderr, "slice_frames: %u inferences' logits differ from the whole run's\n", not_equal);
    return g_validation_messages || not_equal ? 1 : 0;
}
