// SPDX-License-Identifier: Apache-2.0
/* One inference in slices under a GPU-time budget (include/vkvit.h, "One inference in slices"; docs/embedding.md).
 *
 * The plan is a list of node ranges over the session's one graph: slice i runs nodes [first[i], first[i + 1]).
 * A slice is recorded as the whole inference is (session_submit.c, vkvit__session_record_part): a global memory
 * dependency on all earlier compute and transfer work first, so that the arena writes of earlier slices are
 * visible whatever the host recorded in between; then the nodes with their data-flow barriers (graph/record.c,
 * vkvit__record_node_range); the input copies in slice 0 and the outputs in the last. The same dispatches run on
 * the same data in the same order, so the logits are a whole run's bit for bit.
 *
 * Node times: the host's, or a profiling pass of `runs` runs of the session's own command buffer with a timestamp
 * after every node (recorded again with a temporary query pool when the session was created without profiling).
 * A node's time is from the end of the node before it (timestamp 2n - 1; node 0: its own start) to its own end
 * (2n + 1): its dispatch plus the barrier and launch gap before it, so a slice's times add up to its span. */
#include "session.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROFILE_RUNS 64u

void vkvit__session_slices_free(vkvit_session *s) {
    free(s->slices.first);
    free(s->slices.ms);
    memset(&s->slices, 0, sizeof s->slices);
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Per-node times (ms) from `runs` profiled runs: the median of each node's. */
static vkvit_result profile_nodes(vkvit_session *s, uint32_t runs, double *node_ms) {
    vkvit_ctx *ctx = s->ctx;
    const uint32_t n = s->graph.n_nodes;
    const bool own = s->rec.profiled; /* created with profile = 1: its recording writes the timestamps already */
    const vkvit__timer saved = s->rec.timer;
    vkvit__timer tmp = {0};
    vkvit_result res = VKVIT_OK, res2 = VKVIT_OK;
    double *ns = malloc((size_t)2 * n * sizeof *ns), *all = malloc((size_t)runs * n * sizeof *all);
    if (!ns || !all) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %u node times", n);
        goto done;
    }
    if (!own) {
        if ((res = vkvit__timer_create(ctx, 2 * n, &tmp)) != VKVIT_OK) goto done;
        s->rec.timer = tmp;
        s->rec.profiled = true;
        if ((res = vkvit__session_rerecord(s)) != VKVIT_OK) goto restore;
    }
    for (uint32_t r = 0; r < runs; r++) {
        if ((res = vkvit__submission_submit(ctx, &s->sub, ctx->queue, NULL)) != VKVIT_OK) goto restore;
        VkResult vr = vkvit__submission_wait(ctx, &s->sub);
        if (vr != VK_SUCCESS) {
            res = vkvit__vk_error(vr, "vkWaitForFences", "profiling pass", s->label);
            goto restore;
        }
        s->ran = true;
        s->timed = own; /* the profile of a profiled session is this run's */
        /* nanoseconds after query 0, each modulo 2^timestampValidBits (vkvit__timer_read_ns) */
        if ((res = vkvit__timer_read_ns(ctx, &s->rec.timer, 2 * n, ns)) != VKVIT_OK) goto restore;
        for (uint32_t i = 0; i < n; i++) {
            const double from = i ? ns[2 * i - 1] : ns[0], to = ns[2 * i + 1];
            all[(size_t)i * runs + r] = to > from ? (to - from) * 1e-6 : 0.0;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        double *t = all + (size_t)i * runs;
        qsort(t, runs, sizeof *t, cmp_double);
        node_ms[i] = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
    }
restore:
    if (!own) {
        s->rec.profiled = false;
        s->rec.timer = saved;
        if (tmp.pool) {
            res2 = vkvit__session_rerecord(s); /* before the pool goes: the command buffer named it */
            vkvit__timer_destroy(ctx, &tmp);
        }
    }
done:
    free(ns);
    free(all);
    return res != VKVIT_OK ? res : res2;
}

static vkvit_result check_desc(const vkvit_session *s, const vkvit_slice_plan_desc *d, const char *fn) {
    if (!(d->budget_ms > 0) || !isfinite(d->budget_ms))
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': budget_ms %g is not a positive finite number of "
                            "milliseconds", fn, s->label, d->budget_ms);
    if (d->profile_runs > MAX_PROFILE_RUNS)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': profile_runs %u is above %u", fn, s->label,
                            d->profile_runs, MAX_PROFILE_RUNS);
    if (!d->node_ms && !d->times_out) return VKVIT_OK;
    if (d->node_count != s->graph.n_nodes)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': node_count %u, but the session has %u nodes "
                            "(vkvit_session_get_stats)", fn, s->label, d->node_count, s->graph.n_nodes);
    for (uint32_t i = 0; i < d->node_count && d->node_ms; i++)
        if (!(d->node_ms[i] >= 0) || !isfinite(d->node_ms[i]))
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': node_ms[%u] ('%s') is %g, not a finite time "
                                ">= 0", fn, s->label, i, s->graph.nodes[i].label, d->node_ms[i]);
    return VKVIT_OK;
}

/* Greedy in node order: a slice takes nodes while their times sum to at most the budget (the fewest slices any
 * cut into runs of whole nodes can have); a node above the budget alone is a slice of its own. */
static vkvit_result cut(vkvit_session *s, const double *node_ms, double budget, vkvit_slice_plan *plan) {
    const uint32_t n = s->graph.n_nodes;
    vkvit__slices *sl = &s->slices;
    sl->first = malloc(((size_t)n + 1) * sizeof *sl->first);
    sl->ms = malloc(((size_t)n ? n : 1) * sizeof *sl->ms);
    if (!sl->first || !sl->ms)
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for a plan of %u nodes", n);
    uint32_t start = 0, worst = VKVIT_NONE;
    double acc = 0;
    for (uint32_t i = 0; i <= n; i++) {
        const double t = i < n ? node_ms[i] : 0;
        if (i > start && (i == n || acc + t > budget)) { /* close [start, i) */
            sl->first[sl->count] = start;
            sl->ms[sl->count++] = acc;
            plan->largest_ms = VKVIT_MAX(plan->largest_ms, acc);
            start = i;
            acc = 0;
        }
        if (i == n) break;
        acc += t;
        plan->total_ms += t;
        if (t > budget) {
            plan->over_budget++;
            if (worst == VKVIT_NONE || t > node_ms[worst]) worst = i;
        }
    }
    sl->first[sl->count] = n;
    sl->budget_ms = budget;
    sl->last = VKVIT_NONE;
    plan->slice_count = sl->count;
    plan->nodes = n;
    if (worst != VKVIT_NONE)
        snprintf(plan->message, sizeof plan->message, "vkvit_session_plan_slices '%s': %u node%s alone take%s more "
                 "than the budget of %.4g ms, each a slice of its own; the longest, '%s', takes %.4g ms", s->label,
                 plan->over_budget, plan->over_budget == 1 ? "" : "s", plan->over_budget == 1 ? "s" : "", budget,
                 s->graph.nodes[worst].label, node_ms[worst]);
    return VKVIT_OK;
}

static vkvit_result plan_slices(vkvit_session *s, const vkvit_slice_plan_desc *desc, vkvit_slice_plan *out) {
    const char *fn = "vkvit_session_plan_slices";
    if (!s) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: session is NULL", fn);
    vkvit__session_slices_free(s); /* on every failure below the session keeps no plan */
    if (!desc) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': desc is NULL", fn, s->label);
    vkvit_result res = check_desc(s, desc, fn);
    if (res == VKVIT_OK) res = vkvit__session_check_idle(s, fn);
    if (res == VKVIT_OK && !desc->node_ms && s->condition != VKVIT_NONE && !s->condition_set)
        res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': the profiling pass runs model '%s', which needs a "
                           "condition; call vkvit_session_set_condition first (or pass node_ms)", fn, s->label,
                           s->model->label);
    if (res != VKVIT_OK) return res;
    const uint32_t n = s->graph.n_nodes;
    vkvit_slice_plan plan = {0};
    double *own = NULL;
    const double *node_ms = desc->node_ms;
    if (!node_ms) {
        if (!(own = malloc(((size_t)n ? n : 1) * sizeof *own)))
            return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "%s '%s': out of host memory", fn, s->label);
        if ((res = profile_nodes(s, desc->profile_runs ? desc->profile_runs : 3, own)) != VKVIT_OK) {
            free(own);
            return vkvit__error_prefix(res, "%s '%s': profiling pass", fn, s->label);
        }
        node_ms = own;
    }
    res = cut(s, node_ms, desc->budget_ms, &plan);
    if (res == VKVIT_OK && desc->times_out && desc->times_out != node_ms)
        memcpy(desc->times_out, node_ms, (size_t)n * sizeof *node_ms);
    free(own);
    if (res != VKVIT_OK) {
        vkvit__session_slices_free(s);
        return vkvit__error_prefix(res, "%s '%s'", fn, s->label);
    }
    if (plan.message[0]) vkvit__ctx_log(s->ctx, VKVIT_LOG_WARNING, "%s", plan.message);
    if (out) *out = plan;
    return VKVIT_OK;
}

vkvit_result vkvit_session_plan_slices(vkvit_session *s, const vkvit_slice_plan_desc *desc, vkvit_slice_plan *out) {
    return logged(s, plan_slices(s, desc, out));
}

static vkvit_result slice_info(const vkvit_session *s, uint32_t i, vkvit_slice_info *out) {
    const char *fn = "vkvit_session_slice_info";
    if (!s || !out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    if (!s->slices.count)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': no slice plan (vkvit_session_plan_slices)", fn,
                            s->label);
    if (i >= s->slices.count)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': slice %u of %u", fn, s->label, i, s->slices.count);
    const uint32_t first = s->slices.first[i], count = s->slices.first[i + 1] - first;
    *out = (vkvit_slice_info){
        .first_node = first,
        .node_count = count,
        .planned_ms = s->slices.ms[i],
        .over_budget = count == 1 && s->slices.ms[i] > s->slices.budget_ms,
        .first_label = s->graph.nodes[first].label,
    };
    return VKVIT_OK;
}

vkvit_result vkvit_session_slice_info(const vkvit_session *s, uint32_t index, vkvit_slice_info *out) {
    return logged(s, slice_info(s, index, out));
}

static vkvit_result record_slice(vkvit_session *s, VkCommandBuffer cmd, uint32_t i) {
    const char *fn = "vkvit_session_record_slice";
    if (!s || !cmd) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    vkvit__slices *sl = &s->slices;
    if (!sl->count)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': no slice plan; call vkvit_session_plan_slices "
                            "first", fn, s->label);
    if (i >= sl->count)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': slice %u of a plan of %u", fn, s->label, i,
                            sl->count);
    const uint32_t next = sl->last == VKVIT_NONE || sl->last + 1 == sl->count ? 0 : sl->last + 1;
    if (i != 0 && i != next && i != sl->last)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': slice %u out of order: the next is %u (or 0 to "
                            "start over)", fn, s->label, i, next);
    if (s->condition != VKVIT_NONE && !s->condition_set)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': model '%s' needs a condition; call "
                            "vkvit_session_set_condition first", fn, s->label, s->model->label);
    vkvit__session_record_part(s, cmd, NULL, sl->first[i], sl->first[i + 1]);
    sl->last = i;
    if (i + 1 == sl->count) s->ran = true; /* the caller waits for its submission before reading the output */
    s->timed = false;
    return VKVIT_OK;
}

vkvit_result vkvit_session_record_slice(vkvit_session *s, VkCommandBuffer cmd, uint32_t index) {
    return logged(s, record_slice(s, cmd, index));
}

/* Each slice as its own submission of the session's command buffer, recorded again for it (with two timestamps
 * around it when asked), waited for; then the whole inference recorded again. */
static vkvit_result run_slices(vkvit_session *s, double *slice_ms) {
    const char *fn = "vkvit_session_run_slices";
    if (!s) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: session is NULL", fn);
    vkvit_ctx *ctx = s->ctx;
    const vkvit__slices *sl = &s->slices;
    vkvit_result res = VKVIT_OK, res2;
    if (!sl->count)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': no slice plan; call vkvit_session_plan_slices "
                            "first", fn, s->label);
    if (slice_ms && !s->rec.profiled)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': slice times need a session created with "
                            "profile = 1", fn, s->label);
    if (s->condition != VKVIT_NONE && !s->condition_set)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': model '%s' needs a condition; call "
                            "vkvit_session_set_condition first", fn, s->label, s->model->label);
    if ((res = vkvit__session_check_idle(s, fn)) != VKVIT_OK) return res;
    const bool profiled = s->rec.profiled;
    s->rec.profiled = false; /* no per-node timestamps in the slices: queries 0 and 1 time the slice */
    for (uint32_t i = 0; i < sl->count && res == VKVIT_OK; i++) {
        if ((res = vkvit__submission_begin(ctx, &s->sub)) != VKVIT_OK) break;
        if (slice_ms) {
            vkvit__cmd_timer_reset(ctx, s->sub.cmd, &s->rec.timer);
            vkvit__cmd_timestamp(ctx, s->sub.cmd, &s->rec.timer, 0);
        }
        vkvit__session_record_part(s, s->sub.cmd, NULL, sl->first[i], sl->first[i + 1]);
        if (slice_ms) vkvit__cmd_timestamp(ctx, s->sub.cmd, &s->rec.timer, 1);
        if ((res = vkvit__submission_end(ctx, &s->sub)) != VKVIT_OK ||
            (res = vkvit__submission_submit(ctx, &s->sub, ctx->queue, NULL)) != VKVIT_OK)
            break;
        VkResult vr = vkvit__submission_wait(ctx, &s->sub);
        if (vr == VK_SUCCESS && slice_ms) {
            uint64_t ticks[2] = {0, 0};
            vr = vkvit__timer_read_ticks(ctx, &s->rec.timer, 0, 2, ticks);
            slice_ms[i] = (double)vkvit__ticks_elapsed(ticks[0], ticks[1], ctx->timestamp_valid_bits) *
                          ctx->info.timestamp_period_ns * 1e-6;
        }
        if (vr != VK_SUCCESS) res = vkvit__vk_error(vr, "vkWaitForFences", fn, s->label);
    }
    s->rec.profiled = profiled;
    res2 = vkvit__session_rerecord(s); /* the whole inference again, for run and submit */
    s->ran = true;
    s->timed = false; /* the queries hold slice times now */
    return res != VKVIT_OK ? res : res2;
}

vkvit_result vkvit_session_run_slices(vkvit_session *s, double *slice_ms) {
    return logged(s, run_slices(s, slice_ms));
}
