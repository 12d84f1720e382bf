// SPDX-License-Identifier: Apache-2.0
/* A session's recorded work and its submission.
 *
 * Recorded command buffer:
 *   1. a memory dependency on everything submitted before (the previous run wrote the arena this one reuses)
 *   2. inputs (the image, and the condition of resnet models with a condition mixer): host-visible arena (UMA,
 *      CPU devices): the host writes them in place before the submit; otherwise a copy from a persistent
 *      host-visible staging buffer per input
 *   3. every node, with data-flow barriers (graph/record.c). Sessions that take pictures start with the
 *      pre-processing nodes (src/ops/preprocess.c: per slot, two indirect dispatches whose counts and geometry
 *      set_images writes into mapped memory; 0 for a slot without a picture, which keeps what step 2 put there);
 *      vkvit_session_record_ex records the host's VkImages / VkBuffers through the same nodes of their slots.
 *      With top_k, the softmax + top-K node is the last
 *   4. outputs (logits, then the top-K words): made visible to the host, through a readback buffer when the arena
 *      is not host-visible; or, for record_ex with a host output, copied into the host's buffer
 *
 * Runs: vkvit_session_run (submit and wait), vkvit_session_submit (include/vkvit.h "Submission on the host's
 * queue": host semaphores around the same command buffer, no waiting; the session's fence tracks "in flight"),
 * and the host's own command buffers (vkvit_session_record / _record_ex). */
#include "session.h"

/* Step 4 with a host output buffer (vkvit_session_record_ex): the logits or the top-K words copied into it. */
static void record_host_output(vkvit_session *s, VkCommandBuffer cmd, const vkvit_host_output *ho) {
    vkvit_ctx *ctx = s->ctx;
    const vkvit__tensor *o = &s->graph.tensors[ho->kind == VKVIT_OUTPUT_TOP_K ? s->topk : s->output];
    const vkvit__buffer host = {.buffer = ho->buffer};
    vkvit__cmd_barrier(ctx, cmd, &s->arena, o->offset, o->bytes, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    vkvit__cmd_copy(ctx, cmd, s->arena.buffer, o->offset, ho->buffer, ho->offset, o->bytes);
    vkvit__cmd_barrier(ctx, cmd, &host, ho->offset, o->bytes, VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_ACCESS_TRANSFER_WRITE_BIT, ho->dst_stage ? ho->dst_stage : VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                       ho->dst_access ? ho->dst_access : VK_ACCESS_MEMORY_READ_BIT);
}

/* io: the host inputs and output of vkvit_session_record_ex (already checked), or NULL. Nodes [first, end) only
 * for a slice (session.h): step 1 always, step 2 with the first node, step 4 with the last. */
void vkvit__session_record_part(vkvit_session *s, VkCommandBuffer cmd, const vkvit_record_desc *io, uint32_t first,
                                uint32_t end) {
    vkvit_ctx *ctx = s->ctx;
    const vkvit__tensor *in = &s->graph.tensors[s->input], *out = &s->graph.tensors[s->output];
    vkvit__record_target tg = vkvit__session_target(s);

    /* 1. Order against every earlier submission on the queue that touched the arena. */
    vkvit__cmd_barrier_prior_work(ctx, cmd);

    /* 2. Inputs. */
    if (first == 0 && !s->direct) {
        vkvit__cmd_copy(ctx, cmd, s->in_staging.buffer, 0, s->arena.buffer, in->offset, in->bytes);
        vkvit__cmd_barrier(ctx, cmd, &s->arena, in->offset, in->bytes, VK_PIPELINE_STAGE_TRANSFER_BIT,
                           VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT); /* + host inputs' slots below */
        if (s->condition != VKVIT_NONE) {
            const vkvit__tensor *c = &s->graph.tensors[s->condition];
            vkvit__cmd_copy(ctx, cmd, s->cond_staging.buffer, 0, s->arena.buffer, c->offset, c->bytes);
            vkvit__cmd_barrier(ctx, cmd, &s->arena, c->offset, c->bytes, VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                               VK_ACCESS_SHADER_READ_BIT);
        }
    }
    /* 3. The graph: pre-processing first (host images and buffers of vkvit_session_record_ex through the nodes of
     * their slots), then the network. */
    const vkvit__node_swap *swaps = NULL;
    const uint32_t n_swaps = s->img.ctx ? vkvit__imgproc_prepare_inputs(&s->img, io, &swaps) : 0;
    vkvit__record_node_range(ctx, &s->graph, &tg, &s->rec, cmd, swaps, n_swaps, first, end);
    if (end < s->graph.n_nodes) return; /* a slice before the last: no output yet */
    /* 4. Output: the logits, then the top-K words when the session has them (out_staging holds both, back to back),
     * or what the host asked for in its own buffer. */
    if (io && io->output.kind != VKVIT_OUTPUT_NONE) {
        record_host_output(s, cmd, &io->output);
        return;
    }
    uint64_t staged = 0;
    const uint32_t host_outputs[3] = {s->output, s->topk, s->features}; /* out_staging's order (staged_offset) */
    for (uint32_t i = 0; i < 3; i++) {
        if (host_outputs[i] == VKVIT_NONE) continue;
        out = &s->graph.tensors[host_outputs[i]];
        if (!s->direct) {
            vkvit__cmd_barrier(ctx, cmd, &s->arena, out->offset, out->bytes, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                               VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
            vkvit__cmd_copy(ctx, cmd, s->arena.buffer, out->offset, s->out_staging.buffer, staged, out->bytes);
            vkvit__cmd_barrier(ctx, cmd, &s->out_staging, staged, out->bytes, VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
            staged += out->bytes;
        } else {
            vkvit__cmd_barrier(ctx, cmd, &s->arena, out->offset, out->bytes, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                               VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
        }
    }
}

static void record(vkvit_session *s, VkCommandBuffer cmd, const vkvit_record_desc *io) {
    vkvit__session_record_part(s, cmd, io, 0, s->graph.n_nodes);
}

/* Records the session's own command buffer again (idle session): after set_images replaced a buffer the
 * pre-processing nodes bind, or added them. */
vkvit_result vkvit__session_rerecord(vkvit_session *s) {
    vkvit_result res = vkvit__submission_begin(s->ctx, &s->sub);
    if (res != VKVIT_OK) return res;
    record(s, s->sub.cmd, NULL);
    return vkvit__submission_end(s->ctx, &s->sub);
}

/* A session submitted with vkvit_session_submit is in flight until its fence signals; its arena and staging
 * buffers must not be touched (or resubmitted) until then. Never waits. */
vkvit_result vkvit__session_check_idle(const vkvit_session *s, const char *fn) {
    VkResult vr = vkvit__submission_poll(s->ctx, &s->sub);
    if (vr == VK_SUCCESS) return VKVIT_OK;
    if (vr == VK_NOT_READY)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "%s '%s': the session is still in flight from vkvit_session_submit; wait for its semaphore "
                            "or fence (or vkvit_session_poll() == 1) first", fn, s->label);
    return vkvit__vk_error(vr, "vkGetFenceStatus", fn, s->label);
}

/* A model with an active condition mixer cannot run before its condition was set. */
static vkvit_result check_condition(const vkvit_session *s, const char *fn) {
    if (s->condition != VKVIT_NONE && !s->condition_set)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "%s '%s': model '%s' needs a condition; call vkvit_session_set_condition first", fn,
                            s->label, s->model->label);
    return VKVIT_OK;
}

static vkvit_result run(vkvit_session *s) {
    if (!s) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_run: session is NULL");
    if (check_condition(s, "vkvit_session_run") != VKVIT_OK) return VKVIT_ERROR_INVALID_ARGUMENT;
    vkvit_ctx *ctx = s->ctx;
    vkvit_result res = vkvit__session_check_idle(s, "vkvit_session_run");
    if (res != VKVIT_OK) return res;
    if ((res = vkvit__submission_submit(ctx, &s->sub, ctx->queue, NULL)) != VKVIT_OK) goto fail;
    VK_TRY(vkvit__submission_wait(ctx, &s->sub));
    s->ran = true;
    s->timed = true;
    return VKVIT_OK;
fail:
    return vkvit__error_prefix(res, "vkvit_session_run '%s'", s->label);
}

vkvit_result vkvit_session_run(vkvit_session *s) {
    return logged(s, run(s));
}

vkvit_result vkvit_session_record(vkvit_session *s, VkCommandBuffer cmd) {
    if (!s || !cmd) return logged(s, vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_record: NULL argument"));
    record(s, cmd, NULL);
    s->ran = true; /* the caller waits for its own submission before reading the output */
    s->timed = false;
    return VKVIT_OK;
}

static vkvit_result check_submit_desc(const vkvit_session *s, const vkvit_submit_desc *d) {
    const char *fn = "vkvit_session_submit";
    if (d->wait_count > VKVIT_MAX_SUBMIT_SEMAPHORES || d->signal_count > VKVIT_MAX_SUBMIT_SEMAPHORES)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': %u waits and %u signals given, at most %u each", fn,
                            s->label, d->wait_count, d->signal_count, VKVIT_MAX_SUBMIT_SEMAPHORES);
    if ((d->wait_count && !d->waits) || (d->signal_count && !d->signals))
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "%s '%s': wait_count or signal_count is set but its array is NULL", fn, s->label);
    bool timeline = s->ctx->info.timeline_semaphore != 0;
    for (uint32_t i = 0; i < d->wait_count + d->signal_count; i++) {
        bool wait = i < d->wait_count;
        uint32_t j = wait ? i : i - d->wait_count;
        VkSemaphore sem = wait ? d->waits[j].semaphore : d->signals[j].semaphore;
        uint64_t value = wait ? d->waits[j].value : d->signals[j].value;
        if (!sem)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': %s[%u].semaphore is VK_NULL_HANDLE", fn,
                                s->label, wait ? "waits" : "signals", j);
        if (value && !timeline)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                                "%s '%s': %s[%u].value is %llu but ctx '%s' has no timeline semaphores (the device "
                                "lacks them or the host did not enable timelineSemaphore); use binary semaphores with "
                                "value 0 and a fence", fn, s->label, wait ? "waits" : "signals", j,
                                (unsigned long long)value, s->ctx->label);
    }
    return VKVIT_OK;
}

static vkvit_result submit(vkvit_session *s, const vkvit_submit_desc *desc) {
    if (!s) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_submit: session is NULL");
    vkvit_submit_desc d = desc ? *desc : (vkvit_submit_desc){0};
    vkvit_ctx *ctx = s->ctx;
    vkvit_result res = check_submit_desc(s, &d);
    if (res == VKVIT_OK) res = check_condition(s, "vkvit_session_submit");
    if (res == VKVIT_OK) res = vkvit__session_check_idle(s, "vkvit_session_submit");
    if (res != VKVIT_OK) return res;

    /* Fixed-size arrays on the stack: nothing is allocated per submission. */
    VkSemaphore wait_sems[VKVIT_MAX_SUBMIT_SEMAPHORES], signal_sems[VKVIT_MAX_SUBMIT_SEMAPHORES];
    uint64_t wait_values[VKVIT_MAX_SUBMIT_SEMAPHORES], signal_values[VKVIT_MAX_SUBMIT_SEMAPHORES];
    VkPipelineStageFlags wait_stages[VKVIT_MAX_SUBMIT_SEMAPHORES];
    for (uint32_t i = 0; i < d.wait_count; i++) {
        wait_sems[i] = d.waits[i].semaphore;
        wait_values[i] = d.waits[i].value;
        wait_stages[i] = d.waits[i].stages ? d.waits[i].stages
                                           : VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    }
    for (uint32_t i = 0; i < d.signal_count; i++) {
        signal_sems[i] = d.signals[i].semaphore;
        signal_values[i] = d.signals[i].value;
    }
    /* Timeline values ride along whenever the ctx has timeline semaphores; binary semaphores ignore them. */
    VkTimelineSemaphoreSubmitInfo values = {
        .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
        .waitSemaphoreValueCount = d.wait_count,
        .pWaitSemaphoreValues = wait_values,
        .signalSemaphoreValueCount = d.signal_count,
        .pSignalSemaphoreValues = signal_values,
    };
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .pNext = ctx->info.timeline_semaphore && (d.wait_count || d.signal_count) ? &values : NULL,
        .waitSemaphoreCount = d.wait_count,
        .pWaitSemaphores = wait_sems,
        .pWaitDstStageMask = wait_stages,
        .signalSemaphoreCount = d.signal_count,
        .pSignalSemaphores = signal_sems,
    };
    VkQueue queue = d.queue ? d.queue : ctx->queue;
    if ((res = vkvit__submission_submit(ctx, &s->sub, queue, &submit)) != VKVIT_OK) goto fail;
    s->ran = true; /* in flight from here on, whatever happens to the host's fence below */
    s->timed = true;  /* complete once the session is idle: vkvit_session_profile checks */
    /* The host's fence: an empty submission signals it once everything before it on the queue has finished. */
    if (d.fence) VK_TRY(vkvit__queue_submit(ctx, queue, 0, NULL, d.fence));
    return VKVIT_OK;
fail:
    return vkvit__error_prefix(res, "vkvit_session_submit '%s'", s->label);
}

vkvit_result vkvit_session_submit(vkvit_session *s, const vkvit_submit_desc *desc) {
    return logged(s, submit(s, desc));
}

int vkvit_session_poll(const vkvit_session *s) {
    if (!s) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_poll: session is NULL");
    VkResult vr = vkvit__submission_poll(s->ctx, &s->sub);
    if (vr == VK_SUCCESS) return 1;
    if (vr == VK_NOT_READY) return 0;
    return logged(s, vkvit__vk_error(vr, "vkGetFenceStatus", "vkvit_session_poll", s->label));
}

vkvit_result vkvit_session_wait(vkvit_session *s) {
    if (!s) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_wait: session is NULL");
    VkResult vr = vkvit__submission_wait(s->ctx, &s->sub);
    if (vr != VK_SUCCESS) return logged(s, vkvit__vk_error(vr, "vkWaitForFences", "vkvit_session_wait", s->label));
    return VKVIT_OK;
}

vkvit_result vkvit_session_record_ex(vkvit_session *s, VkCommandBuffer cmd, const vkvit_record_desc *desc) {
    const char *fn = "vkvit_session_record_ex";
    if (!s || !cmd) return logged(s, vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: NULL argument", fn));
    vkvit_result res = VKVIT_OK;
    if (desc) {
        const vkvit_host_output *o = &desc->output;
        if (o->kind != VKVIT_OUTPUT_NONE && o->kind != VKVIT_OUTPUT_LOGITS && o->kind != VKVIT_OUTPUT_TOP_K)
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': output.kind = %d is unknown", fn, s->label,
                               (int)o->kind);
        else if (o->kind == VKVIT_OUTPUT_TOP_K && s->topk == VKVIT_NONE)
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': a top-K output needs a session created with "
                               "top_k > 0", fn, s->label);
        else if (o->kind != VKVIT_OUTPUT_NONE && (!o->buffer || o->offset % 4))
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': output.buffer must be a VkBuffer and "
                               "output.offset (%llu) a multiple of 4", fn, s->label, (unsigned long long)o->offset);
        else if (o->kind != VKVIT_OUTPUT_NONE &&
                 !vkvit__host_buffer_holds(s->ctx, o->buffer, o->offset, vkvit_session_output_bytes(s, o->kind)))
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': output.offset %llu + %llu bytes of output run "
                               "past the end of output.buffer", fn, s->label, (unsigned long long)o->offset,
                               (unsigned long long)vkvit_session_output_bytes(s, o->kind));
        else if ((desc->image_count || desc->pixels_count) && (res = check_takes_images(s, fn)) == VKVIT_OK) {
            /* either count alone: their sum may wrap to 0 (vkvit__imgproc_check_inputs sums in 64 bits) */
            if (!s->img.ctx)
                res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': host inputs need a session created with "
                                   "max_image_pixels > 0 (nothing is created at record time)", fn, s->label);
            else {
                res = vkvit__imgproc_check_inputs(&s->img, desc, subject_of(s, fn).text);
            }
        }
    }
    if (res != VKVIT_OK) return logged(s, res);
    record(s, cmd, desc);
    if (!desc || desc->output.kind == VKVIT_OUTPUT_NONE) s->ran = true; /* the caller waits before reading */
    s->timed = false;
    return VKVIT_OK;
}

static vkvit_result read_profile(const vkvit_session *s, vkvit_profile_entry *out, uint32_t cap, uint32_t *count) {
    if (!s || !count) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_profile: NULL argument");
    if (!s->rec.profiled)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_profile '%s': created without profile = 1", s->label);
    if (!s->ran) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_profile '%s': no run yet", s->label);
    if (!s->timed)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_profile '%s': no times since the session was "
                            "last recorded into a host command buffer (vkvit_session_record / _record_ex, whose work "
                            "vkvit cannot see complete) or recorded again by its first set_images; run or submit "
                            "first", s->label);
    vkvit_result res = vkvit__session_check_idle(s, "vkvit_session_profile");
    if (res != VKVIT_OK) return res;
    uint32_t n = VKVIT_MIN(cap, s->graph.n_nodes);
    for (uint32_t i = 0; i < n && out; i++) {
        uint64_t ticks[2] = {0, 0}; /* available: the run waited for its fence */
        VkResult vr = vkvit__timer_read_ticks(s->ctx, &s->rec.timer, 2 * i, 2, ticks);
        if (vr != VK_SUCCESS) return vkvit__vk_error(vr, "vkGetQueryPoolResults", "vkvit_session_profile", s->label);
        double ms = (double)vkvit__ticks_elapsed(ticks[0], ticks[1], s->ctx->timestamp_valid_bits) *
                    s->ctx->info.timestamp_period_ns * 1e-6; /* a counter of timestampValidBits may wrap between */
        out[i] = (vkvit_profile_entry){s->graph.nodes[i].label, s->graph.nodes[i].kind, ms};
    }
    *count = s->graph.n_nodes;
    return VKVIT_OK;
}

vkvit_result vkvit_session_profile(const vkvit_session *s, vkvit_profile_entry *out, uint32_t cap, uint32_t *count) {
    return logged(s, read_profile(s, out, cap, count));
}
