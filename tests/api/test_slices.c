// SPDX-License-Identifier: Apache-2.0
/* One inference in slices under a GPU-time budget (vkvit_session_plan_slices / _record_slice / _slice_info), on a
 * host device with the validation layer and synchronization validation (tests/host_util.h); both the host's
 * instance and vkvit must stay silent.
 *
 *   sliced_bundled   the bundled vit5_cifar10.vkvit (fp32 session), a fresh random input (seed printed): a whole
 *                    run's logits; then profiled plans (a session created with profile = 0: the temporary query
 *                    pool) under an eighth of a first pass's total: from a second pass, and from the first
 *                    pass's times (times_out, summing to its total; at least 4 slices), each slice within the
 *                    budget or one node alone; each slice of the latter recorded into the host's command buffer after the host's own work
 *                    (a fill of its buffer) and submitted as its own frame, after a NaN-input run poisoned the
 *                    arena and the output: logits equal to the whole run's bit for bit (memcmp). Recording the
 *                    slices creates and allocates nothing (vkvit__ctx_counters). Then every node a slice of its own
 *                    (host times 1 ms, budget 0.5 ms: each over the budget, named in the plan's sentence), all
 *                    recorded into one command buffer with host fills between: bit for bit again.
 *   sliced_golden    the golden ViT-5 (batch 2), session created with profile = 1 (its own timestamps): a plan
 *                    from a profiling pass's times under a sixth of their total (at least 3 slices); the sliced logits against the PyTorch
 *                    golden (max rel err <= EU_TOL) and bit for bit against the whole run; the session's profile
 *                    still reads after. Then vkvit_session_run_slices: bit for bit, every slice timed, the profile
 *                    refused until the next run, which runs the whole recording again (bit for bit).
 *   greedy_cut       host times: all 1 ms under 3 ms gives ceil(nodes / 3) slices of 3; random times (0..2 ms, a
 *                    drawn budget in 0.5..4 ms, 20 draws): the slices cover the nodes in order, each sums its
 *                    nodes' times and stays within the budget unless it is one node above it, and no slice could
 *                    have taken the next slice's first node (the fewest slices).
 *   rejects          budgets 0, -1, NaN, inf; node_count off by one; a negative or NaN time; profile_runs 65;
 *                    record_slice and slice_info without a plan, out of range, out of order; a failed plan leaves
 *                    no plan behind. Each with its sentence. */
#include "embed_util.h"

#include <time.h>

#define BUNDLED VKVIT_SOURCE_DIR "/assets/models/vit5_cifar10.vkvit"

typedef struct rig {
    host *h;
    vkvit_ctx *ctx;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    vkvit__buffer scratch;                  /* the host's buffer its own work writes between slices */
} rig;

static void begin(rig *r) {
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    r->h->vk.vkResetCommandBuffer(r->cmd, 0);
    r->h->vk.vkBeginCommandBuffer(r->cmd, &bi);
}

static void end_submit_wait(rig *r) {
    r->h->vk.vkEndCommandBuffer(r->cmd);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &r->cmd};
    r->h->vk.vkResetFences(r->h->device, 1, &r->fence);
    CHECK(r->h->vk.vkQueueSubmit(r->h->queue, 1, &si, r->fence) == VK_SUCCESS, "host submit");
    r->h->vk.vkWaitForFences(r->h->device, 1, &r->fence, VK_TRUE, UINT64_MAX);
}

/* The host's own frame work: a fill of its buffer (a transfer write the next frame's fill overwrites). */
static void host_work(rig *r, uint32_t value) {
    VkBufferMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                               .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                               .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                               .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                               .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .buffer = r->scratch.buffer,
                               .size = VK_WHOLE_SIZE};
    r->h->vk.vkCmdPipelineBarrier(r->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL,
                                  1, &b, 0, NULL);
    r->h->vk.vkCmdFillBuffer(r->cmd, r->scratch.buffer, 0, VK_WHOLE_SIZE, value);
}

/* Every slice of the plan: one frame each (host work, the slice, its own submission) or all in one command
 * buffer (host work between the slices). */
static void run_sliced(rig *r, vkvit_session *s, uint32_t n, bool one_buffer) {
    if (one_buffer) begin(r);
    for (uint32_t i = 0; i < n; i++) {
        if (!one_buffer) begin(r);
        host_work(r, 0x3f800000u + i);
        vkvit_result res = vkvit_session_record_slice(s, r->cmd, i);
        CHECK(res == VKVIT_OK, "record_slice %u of %u: %s", i, n, vkvit_last_error());
        if (!one_buffer) end_submit_wait(r);
    }
    if (one_buffer) end_submit_wait(r);
}

static void check_plan(vkvit_session *s, const vkvit_slice_plan *p, double budget, const char *what) {
    uint32_t next = 0, over = 0;
    double total = 0;
    for (uint32_t i = 0; i < p->slice_count; i++) {
        vkvit_slice_info si;
        MUST(vkvit_session_slice_info(s, i, &si));
        CHECK(si.first_node == next && si.node_count > 0, "%s: slice %u starts at node %u (want %u), %u nodes", what,
              i, si.first_node, next, si.node_count);
        CHECK(si.planned_ms <= budget || (si.node_count == 1 && si.over_budget),
              "%s: slice %u (%u nodes from '%s') plans %.4f ms over the budget %.4f ms", what, i, si.node_count,
              si.first_label, si.planned_ms, budget);
        next = si.first_node + si.node_count;
        over += si.over_budget != 0;
        total += si.planned_ms;
    }
    CHECK(next == p->nodes, "%s: the slices cover %u of %u nodes", what, next, p->nodes);
    CHECK(over == p->over_budget, "%s: %u slices flagged over the budget, the plan says %u", what, over,
          p->over_budget);
    CHECK(fabs(total - p->total_ms) <= 1e-9 * fmax(1, p->total_ms), "%s: slices sum to %.6f ms, plan total %.6f",
          what, total, p->total_ms);
    CHECK((p->over_budget == 0) == (p->message[0] == 0), "%s: %u over budget but message '%s'", what, p->over_budget,
          p->message);
}

static void get_logits(vkvit_session *s, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = NAN;
    MUST(vkvit_session_get_output(s, out, n));
}

static void sliced_bundled(host *h, uint32_t seed) {
    rig r = {.h = h, .ctx = host_adopt(h, "slices bundled")};
    vkvit_model *model = NULL;
    vkvit_session *s = NULL;
    MUST(vkvit_model_create(r.ctx, &(vkvit_model_desc){.path = BUNDLED}, &model));
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.label = "bundled"}, &s));
    MUST(vkvit__buffer_create(r.ctx, 65536, VKVIT_MEM_DEVICE, "host scratch", &r.scratch));
    r.cmd = host_cmd(h, &r.pool);
    r.fence = host_fence(h);
    vkvit_shape is = vkvit_session_input_shape(s), os = vkvit_session_output_shape(s);
    const size_t n_in = (size_t)is.dims[0] * is.dims[1] * is.dims[2] * is.dims[3], n_out = (size_t)os.dims[0] * os.dims[1];
    float *input = malloc(n_in * sizeof *input), *whole = malloc(n_out * sizeof *whole),
          *sliced = malloc(n_out * sizeof *sliced);
    vt_rng_state = 0x853c49e6748fea9bull ^ seed;
    vt_fill_rand(input, n_in);
    MUST(vkvit_session_set_input(s, input, n_in));
    MUST(vkvit_session_run(s));
    get_logits(s, whole, n_out);
    vkvit_session_stats st;
    MUST(vkvit_session_get_stats(s, &st));

    /* A profiling pass first (its times through times_out); then plans under an eighth of their total: one from
     * a second profiling pass (timed anew, so its count is the machine's), one from the first pass's times. */
    vkvit_slice_plan p1, prof, p;
    double *times = malloc(st.nodes * sizeof *times);
    for (uint32_t i = 0; i < st.nodes; i++) times[i] = NAN;
    MUST(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = 1e9, .profile_runs = 3,
                                                               .times_out = times, .node_count = st.nodes}, &p1));
    CHECK(p1.slice_count == 1 && p1.nodes == st.nodes && p1.total_ms > 0, "an unbounded budget: %u slices, %u nodes "
          "of %u, %.3f ms", p1.slice_count, p1.nodes, st.nodes, p1.total_ms);
    double sum = 0;
    for (uint32_t i = 0; i < st.nodes; i++) sum += times[i];
    CHECK(fabs(sum - p1.total_ms) <= 1e-9 * p1.total_ms, "times_out sums to %.6f ms, the plan's total is %.6f", sum,
          p1.total_ms);
    const double budget = p1.total_ms / 8;
    MUST(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = budget}, &prof));
    check_plan(s, &prof, budget, "bundled profiled");
    MUST(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = budget, .node_ms = times,
                                                               .node_count = st.nodes}, &p));
    free(times);
    printf("bundled: %u nodes, profiled total %.3f ms; budget %.3f ms -> %u slices (largest %.3f ms, %u over budget; "
           "a second profiling pass: %.3f ms, %u slices)\n", p.nodes, p.total_ms, budget, p.slice_count, p.largest_ms,
           p.over_budget, prof.total_ms, prof.slice_count);
    if (p.message[0]) printf("  %s\n", p.message);
    CHECK(p.slice_count >= 4 && p.total_ms == p1.total_ms, "an eighth of the profiled total %.3f ms gave %u slices "
          "(plan total %.3f)", p1.total_ms, p.slice_count, p.total_ms);
    check_plan(s, &p, budget, "bundled from times_out");

    eu_poison(s, n_in, n_out);
    MUST(vkvit_session_set_input(s, input, n_in));
    vkvit__counts before = vkvit__ctx_counters(r.ctx);
    run_sliced(&r, s, p.slice_count, false);
    vkvit__counts after = vkvit__ctx_counters(r.ctx);
    CHECK(eu_counts_equal(&before, &after, "record_slice"), "recording slices created or allocated something");
    get_logits(s, sliced, n_out);
    CHECK(memcmp(whole, sliced, n_out * sizeof *whole) == 0, "bundled, %u slices in %u frames: logits differ from "
          "the whole run (first: %.9g vs %.9g)", p.slice_count, p.slice_count, sliced[0], whole[0]);
    printf("bundled: %u slices, one per frame: logits %s the whole run's\n", p.slice_count,
           memcmp(whole, sliced, n_out * sizeof *whole) ? "DIFFER from" : "equal bit for bit to");

    /* Every node above the budget: a slice each, all in one command buffer. */
    double *ones = malloc(st.nodes * sizeof *ones);
    for (uint32_t i = 0; i < st.nodes; i++) ones[i] = 1.0;
    MUST(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = 0.5, .node_ms = ones,
                                                               .node_count = st.nodes}, &p));
    CHECK(p.slice_count == st.nodes && p.over_budget == st.nodes, "every node over the budget: %u slices, %u over, "
          "of %u nodes", p.slice_count, p.over_budget, st.nodes);
    CHECK(strstr(p.message, "alone") && strstr(p.message, "bundled") && strstr(p.message, "'"),
          "the over-budget sentence: '%s'", p.message);
    check_plan(s, &p, 0.5, "bundled node by node");
    eu_poison(s, n_in, n_out);
    MUST(vkvit_session_set_input(s, input, n_in));
    run_sliced(&r, s, p.slice_count, true);
    get_logits(s, sliced, n_out);
    CHECK(memcmp(whole, sliced, n_out * sizeof *whole) == 0, "bundled, a slice per node in one command buffer: logits "
          "differ from the whole run");
    printf("bundled: %u one-node slices in one command buffer: logits %s the whole run's\n", p.slice_count,
           memcmp(whole, sliced, n_out * sizeof *whole) ? "DIFFER from" : "equal bit for bit to");

    free(ones), free(input), free(whole), free(sliced);
    h->vk.vkDestroyFence(h->device, r.fence, NULL);
    h->vk.vkDestroyCommandPool(h->device, r.pool, NULL);
    vkvit__buffer_destroy(r.ctx, &r.scratch);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    CHECK(vkvit_ctx_validation_messages(r.ctx, 0) == 0, "vkvit's validation messages");
    vkvit_ctx_destroy(r.ctx);
}

static void sliced_golden(host *h, const eu_golden *g) {
    rig r = {.h = h, .ctx = host_adopt(h, "slices golden")};
    vkvit_model *model = NULL;
    vkvit_session *s = NULL;
    MUST(vkvit_model_create(r.ctx, &(vkvit_model_desc){.path = EU_MODEL ".vkvit"}, &model));
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.label = "golden", .batch = g->batch, .profile = 1}, &s));
    MUST(vkvit__buffer_create(r.ctx, 65536, VKVIT_MEM_DEVICE, "host scratch", &r.scratch));
    r.cmd = host_cmd(h, &r.pool);
    r.fence = host_fence(h);
    float *whole = malloc(g->n_out * sizeof *whole), *sliced = malloc(g->n_out * sizeof *sliced);
    MUST(vkvit_session_set_input(s, g->input, g->n_in));
    MUST(vkvit_session_run(s));
    eu_check(s, g->logits, g->n_out, "golden whole run");
    get_logits(s, whole, g->n_out);

    vkvit_slice_plan p1, p;
    vkvit_session_stats st;
    MUST(vkvit_session_get_stats(s, &st));
    double *times = malloc(st.nodes * sizeof *times);
    MUST(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = 1e9, .profile_runs = 1,
                                                               .times_out = times, .node_count = st.nodes}, &p1));
    const double budget = p1.total_ms / 6;
    MUST(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = budget, .node_ms = times,
                                                               .node_count = st.nodes}, &p));
    free(times);
    printf("golden: %u nodes, profiled total %.3f ms; budget %.3f ms -> %u slices\n", p.nodes, p.total_ms, budget,
           p.slice_count);
    CHECK(p.slice_count >= 3, "a sixth of the profiled total %.3f ms gave %u slices", p.total_ms, p.slice_count);
    check_plan(s, &p, budget, "golden profiled");
    uint32_t n_prof = 0;
    vkvit_result res = vkvit_session_profile(s, NULL, 0, &n_prof);
    CHECK(res == VKVIT_OK && n_prof == p.nodes, "profile after the plan's pass: %s, %u entries", vkvit_last_error(),
          n_prof);

    eu_poison(s, g->n_in, g->n_out);
    MUST(vkvit_session_set_input(s, g->input, g->n_in));
    run_sliced(&r, s, p.slice_count, false);
    double err = eu_check(s, g->logits, g->n_out, "golden in slices");
    get_logits(s, sliced, g->n_out);
    CHECK(memcmp(whole, sliced, g->n_out * sizeof *whole) == 0, "golden, %u slices: logits differ from the whole run",
          p.slice_count);
    printf("golden: %u slices: max rel err vs PyTorch %.3g (tolerance %.0e), %s the whole run's\n", p.slice_count, err,
           EU_TOL, memcmp(whole, sliced, g->n_out * sizeof *whole) ? "DIFFERENT from" : "bit for bit");

    /* vkvit_session_run_slices: the same slices, each its own submission of vkvit's, timed. */
    double *ms = malloc(p.slice_count * sizeof *ms);
    for (uint32_t i = 0; i < p.slice_count; i++) ms[i] = NAN;
    eu_poison(s, g->n_in, g->n_out);
    MUST(vkvit_session_set_input(s, g->input, g->n_in));
    MUST(vkvit_session_run_slices(s, ms));
    get_logits(s, sliced, g->n_out);
    CHECK(memcmp(whole, sliced, g->n_out * sizeof *whole) == 0, "golden, run_slices: logits differ from the whole run");
    uint32_t timed = 0;
    for (uint32_t i = 0; i < p.slice_count; i++) timed += ms[i] > 0 && isfinite(ms[i]);
    CHECK(timed == p.slice_count, "run_slices timed %u of %u slices", timed, p.slice_count);
    res = vkvit_session_profile(s, NULL, 0, &n_prof);
    CHECK(res == VKVIT_ERROR_INVALID_ARGUMENT, "profile after run_slices -> %s", vkvit_result_name(res));
    MUST(vkvit_session_run(s)); /* the whole recording is back */
    get_logits(s, sliced, g->n_out);
    CHECK(memcmp(whole, sliced, g->n_out * sizeof *whole) == 0, "golden, run after run_slices: logits differ");
    CHECK(vkvit_session_profile(s, NULL, 0, &n_prof) == VKVIT_OK, "profile after a run: %s", vkvit_last_error());
    printf("golden: run_slices: %u slices timed (first %.3f ms), logits bit for bit\n", p.slice_count, ms[0]);
    free(ms);

    free(whole), free(sliced);
    h->vk.vkDestroyFence(h->device, r.fence, NULL);
    h->vk.vkDestroyCommandPool(h->device, r.pool, NULL);
    vkvit__buffer_destroy(r.ctx, &r.scratch);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    CHECK(vkvit_ctx_validation_messages(r.ctx, 0) == 0, "vkvit's validation messages");
    vkvit_ctx_destroy(r.ctx);
}

static void greedy_cut(host *h, uint32_t seed) {
    vkvit_ctx *ctx = host_adopt(h, "slices cut");
    vkvit_model *model = NULL;
    vkvit_session *s = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = EU_MODEL ".vkvit"}, &model));
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.label = "cut"}, &s));
    vkvit_session_stats st;
    MUST(vkvit_session_get_stats(s, &st));
    const uint32_t n = st.nodes;
    double *t = malloc(n * sizeof *t);
    for (uint32_t i = 0; i < n; i++) t[i] = 1.0;
    vkvit_slice_plan p;
    MUST(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = 3.0, .node_ms = t, .node_count = n}, &p));
    CHECK(p.slice_count == (n + 2) / 3 && p.over_budget == 0 && p.largest_ms == 3.0,
          "%u nodes of 1 ms under 3 ms: %u slices (want %u), %u over, largest %g", n, p.slice_count, (n + 2) / 3,
          p.over_budget, p.largest_ms);
    check_plan(s, &p, 3.0, "ones");
    vt_rng_state = 0x2545f4914f6cdd1dull ^ seed;
    for (int draw = 0; draw < 20; draw++) {
        for (uint32_t i = 0; i < n; i++) t[i] = vt_rand_f() + 1.0; /* 0 .. 2 ms */
        const double budget = 0.5 + 1.75 * (vt_rand_f() + 1.0);  /* 0.5 .. 4 ms */
        MUST(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = budget, .node_ms = t,
                                                                   .node_count = n}, &p));
        check_plan(s, &p, budget, "random times");
        for (uint32_t i = 0; i + 1 < p.slice_count; i++) {
            vkvit_slice_info a, b;
            MUST(vkvit_session_slice_info(s, i, &a));
            MUST(vkvit_session_slice_info(s, i + 1, &b));
            CHECK(a.planned_ms + t[b.first_node] > budget, "draw %d: slice %u (%.4f ms) could have taken node %u "
                  "(%.4f ms) under %.4f ms", draw, i, a.planned_ms, b.first_node, t[b.first_node], budget);
        }
    }
    printf("greedy cut: 20 random draws checked (%u nodes)\n", n);
    free(t);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "vkvit's validation messages");
    vkvit_ctx_destroy(ctx);
}

static void expect_refused(vkvit_result r, const char *needle, const char *what) {
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), needle), "%s -> %s: '%s' (want '%s')", what,
          vkvit_result_name(r), vkvit_last_error(), needle);
}

static void rejects(host *h) {
    rig r = {.h = h, .ctx = host_adopt(h, "slices rejects")};
    vkvit_model *model = NULL;
    vkvit_session *s = NULL;
    MUST(vkvit_model_create(r.ctx, &(vkvit_model_desc){.path = EU_MODEL ".vkvit"}, &model));
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.label = "rejects"}, &s));
    r.cmd = host_cmd(h, &r.pool);
    vkvit_session_stats st;
    MUST(vkvit_session_get_stats(s, &st));
    const uint32_t n = st.nodes;
    double *t = malloc((n + 1) * sizeof *t);
    for (uint32_t i = 0; i <= n; i++) t[i] = 1.0;
    vkvit_slice_info si;
    begin(&r);
    expect_refused(vkvit_session_record_slice(s, r.cmd, 0), "no slice plan", "record_slice without a plan");
    expect_refused(vkvit_session_run_slices(s, NULL), "no slice plan", "run_slices without a plan");
    expect_refused(vkvit_session_slice_info(s, 0, &si), "no slice plan", "slice_info without a plan");
    const double bad[] = {0, -1, NAN, INFINITY};
    for (int i = 0; i < 4; i++)
        expect_refused(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = bad[i]}, NULL),
                       "budget_ms", "a bad budget");
    expect_refused(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = 1, .node_ms = t,
                                                                         .node_count = n + 1}, NULL),
                   "node_count", "node_count off by one");
    expect_refused(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = 1, .profile_runs = 65}, NULL),
                   "profile_runs", "65 profile runs");
    expect_refused(vkvit_session_plan_slices(NULL, &(vkvit_slice_plan_desc){.budget_ms = 1}, NULL), "NULL",
                   "a NULL session");
    expect_refused(vkvit_session_plan_slices(s, NULL, NULL), "NULL", "a NULL desc");
    expect_refused(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = 1, .times_out = t,
                                                                         .node_count = n - 1}, NULL),
                   "node_count", "times_out with node_count off by one");
    MUST(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = 2.5, .node_ms = t, .node_count = n}, NULL));
    t[3] = -1;
    expect_refused(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = 1, .node_ms = t,
                                                                         .node_count = n}, NULL),
                   "node_ms[3]", "a negative time");
    expect_refused(vkvit_session_record_slice(s, r.cmd, 0), "no slice plan", "record_slice after a failed plan");
    t[3] = NAN;
    expect_refused(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = 1, .node_ms = t,
                                                                         .node_count = n}, NULL),
                   "node_ms[3]", "a NaN time");
    t[3] = 1.0;
    vkvit_slice_plan p;
    MUST(vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = 2.5, .node_ms = t, .node_count = n}, &p));
    CHECK(p.slice_count == (n + 1) / 2 && p.slice_count >= 3, "1 ms nodes under 2.5 ms: %u slices of %u nodes",
          p.slice_count, n);
    expect_refused(vkvit_session_slice_info(s, p.slice_count, &si), "slice", "slice_info out of range");
    expect_refused(vkvit_session_record_slice(s, r.cmd, p.slice_count), "of a plan", "record_slice out of range");
    expect_refused(vkvit_session_record_slice(s, r.cmd, 1), "out of order", "slice 1 first");
    expect_refused(vkvit_session_record_slice(s, NULL, 0), "NULL", "a NULL command buffer");
    double ms[64];
    expect_refused(vkvit_session_run_slices(s, ms), "profile = 1", "run_slices with times, profile = 0");
    /* 0, 0 again (start over), 1, 1 again (the one just recorded), then 3 skips 2 */
    MUST(vkvit_session_record_slice(s, r.cmd, 0));
    MUST(vkvit_session_record_slice(s, r.cmd, 0));
    MUST(vkvit_session_record_slice(s, r.cmd, 1));
    MUST(vkvit_session_record_slice(s, r.cmd, 1));
    if (p.slice_count > 3) expect_refused(vkvit_session_record_slice(s, r.cmd, 3), "out of order", "slice 3 after 1");
    r.h->vk.vkEndCommandBuffer(r.cmd); /* never submitted */
    free(t);
    h->vk.vkDestroyCommandPool(h->device, r.pool, NULL);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    CHECK(vkvit_ctx_validation_messages(r.ctx, 0) == 0, "vkvit's validation messages");
    vkvit_ctx_destroy(r.ctx);
}

int main(void) {
    const char *env = getenv("VKVIT_TEST_SEED");
    const uint32_t seed = env ? (uint32_t)strtoul(env, NULL, 0) : (uint32_t)time(NULL);
    printf("seed %u (VKVIT_TEST_SEED=%u reruns it)\n", seed, seed);
    host h;
    host_create(&h);
    eu_golden g;
    eu_golden_load(&g);
    rejects(&h);
    greedy_cut(&h, seed);
    sliced_golden(&h, &g);
    sliced_bundled(&h, seed);
    CHECK(host_messages == 0, "%u host validation messages", host_messages);
    eu_golden_free(&g);
    host_destroy(&h);
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
