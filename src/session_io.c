// SPDX-License-Identifier: Apache-2.0
/* A session's host copies: inputs and condition into the arena or the staging buffers, the logits, features and
 * top-K words out of them, and pictures (include/vkvit.h "Images"; the work is in src/ops/preprocess.c). */
#include "session.h"

#include <string.h>

/* Where host output tensor t starts in out_staging: the logits, then the top-K words, then the features, then the
 * tokens, back to back (record(), step 4). With t = VKVIT_NONE: the staging buffer's whole size. */
uint64_t vkvit__session_staged_offset(const vkvit_session *s, uint32_t t) {
    uint32_t order[VKVIT_SESSION_HOST_OUTPUTS];
    host_outputs_of(s, order);
    uint64_t off = 0;
    for (uint32_t i = 0; i < VKVIT_SESSION_HOST_OUTPUTS && order[i] != t; i++)
        if (order[i] != VKVIT_NONE) off += s->graph.tensors[order[i]].bytes;
    return off;
}

/* Copies `bytes` of host output tensor t, from byte `at` on, to dst: from the arena in place (direct) or from
 * out_staging. */
static void read_host_output(const vkvit_session *s, uint32_t t, uint64_t at, void *dst, size_t bytes) {
    const vkvit__buffer *b = s->direct ? &s->arena : &s->out_staging;
    const uint64_t off = (s->direct ? s->graph.tensors[t].offset : vkvit__session_staged_offset(s, t)) + at;
    vkvit__buffer_invalidate(s->ctx, b);
    memcpy(dst, (const uint8_t *)b->mapped + off, bytes);
}

static vkvit_result check_count(const vkvit_session *s, uint32_t t, size_t count, const char *fn) {
    uint64_t n = vkvit__numel(&s->graph.tensors[t]);
    if (count != n)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': %zu floats given, the tensor holds %llu", fn,
                            s->label, count, (unsigned long long)n);
    return VKVIT_OK;
}

static vkvit_result set_input(vkvit_session *s, const float *src, size_t count) {
    if (!s || !src) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_set_input: NULL argument");
    vkvit_result res = check_count(s, s->input, count, "vkvit_session_set_input");
    if (res != VKVIT_OK) return res;
    if ((res = vkvit__session_check_idle(s, "vkvit_session_set_input")) != VKVIT_OK) return res;
    /* Earlier runs have completed (run waits), so the host may write. */
    const vkvit__tensor *in = &s->graph.tensors[s->input];
    void *dst = s->direct ? (uint8_t *)s->arena.mapped + in->offset : s->in_staging.mapped;
    memcpy(dst, src, count * sizeof(float));
    vkvit__imgproc_clear(&s->img); /* every slot is set_input's now: no pre-processing overwrites it */
    return VKVIT_OK;
}

vkvit_result vkvit_session_set_input(vkvit_session *s, const float *src, size_t count) {
    return logged(s, set_input(s, src, count));
}

static vkvit_result set_condition(vkvit_session *s, const float *src, size_t count) {
    if (!s || !src) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_set_condition: NULL argument");
    if (s->condition == VKVIT_NONE)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "vkvit_session_set_condition '%s': model '%s' takes no condition (its condition mixer is "
                            "identity)", s->label, s->model->label);
    vkvit_result res = check_count(s, s->condition, count, "vkvit_session_set_condition");
    if (res != VKVIT_OK) return res;
    if ((res = vkvit__session_check_idle(s, "vkvit_session_set_condition")) != VKVIT_OK) return res;
    const vkvit__tensor *c = &s->graph.tensors[s->condition];
    void *dst = s->direct ? (uint8_t *)s->arena.mapped + c->offset : s->cond_staging.mapped;
    memcpy(dst, src, count * sizeof(float));
    s->condition_set = true;
    return VKVIT_OK;
}

vkvit_result vkvit_session_set_condition(vkvit_session *s, const float *src, size_t count) {
    return logged(s, set_condition(s, src, count));
}

static vkvit_result get_output(vkvit_session *s, float *dst, size_t count) {
    if (!s || !dst) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_output: NULL argument");
    vkvit_result res = check_count(s, s->output, count, "vkvit_session_get_output");
    if (res != VKVIT_OK) return res;
    if (!s->ran) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_output '%s': no run yet", s->label);
    if ((res = vkvit__session_check_idle(s, "vkvit_session_get_output")) != VKVIT_OK) return res;
    read_host_output(s, s->output, 0, dst, count * sizeof(float));
    return VKVIT_OK;
}

vkvit_result vkvit_session_get_output(vkvit_session *s, float *dst, size_t count) {
    return logged(s, get_output(s, dst, count));
}

static vkvit_result get_input(vkvit_session *s, float *dst, size_t count) {
    const char *fn = "vkvit_session_get_input";
    if (!s || !dst) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    vkvit_result res = check_count(s, s->input, count, fn);
    if (res != VKVIT_OK) return res;
    if (!s->direct)
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "%s '%s': the input lives in device-local memory on this device "
                            "and is not copied back", fn, s->label);
    if (!s->ran) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': no run yet", fn, s->label);
    if ((res = vkvit__session_check_idle(s, fn)) != VKVIT_OK) return res;
    read_host_output(s, s->input, 0, dst, count * sizeof(float));
    return VKVIT_OK;
}

vkvit_result vkvit_session_get_input(vkvit_session *s, float *dst, size_t count) {
    return logged(s, get_input(s, dst, count));
}

static vkvit_result get_features(vkvit_session *s, float *dst, size_t count) {
    if (!s || !dst) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_features: NULL argument");
    if (s->features == VKVIT_NONE)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_features '%s': the session was created "
                            "without features (vkvit_session_desc.features = 0)", s->label);
    vkvit_result res = check_count(s, s->features, count, "vkvit_session_get_features");
    if (res != VKVIT_OK) return res;
    if (!s->ran) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_features '%s': no run yet", s->label);
    if ((res = vkvit__session_check_idle(s, "vkvit_session_get_features")) != VKVIT_OK) return res;
    read_host_output(s, s->features, 0, dst, count * sizeof(float));
    return VKVIT_OK;
}

vkvit_result vkvit_session_get_features(vkvit_session *s, float *dst, size_t count) {
    return logged(s, get_features(s, dst, count));
}

static vkvit_result token_layout(const vkvit_session *s, vkvit_token_layout *out, const char *fn) {
    if (!s || !out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    memset(out, 0, sizeof *out);
    if (s->tokens[0] == VKVIT_NONE)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': the session was created without tokens "
                            "(vkvit_session_desc.tokens = 0)", fn, s->label);
    vkvit_shape *parts[3] = {&out->patches, &out->cls, &out->registers};
    uint64_t at = 0;
    for (int i = 0; i < 3; i++) {
        if (i == 1) out->cls_offset = at;
        if (i == 2) out->registers_offset = at;
        if (s->tokens[i] == VKVIT_NONE) continue;
        *parts[i] = shape_of(&s->graph.tensors[s->tokens[i]]);
        at += vkvit__numel(&s->graph.tensors[s->tokens[i]]);
    }
    out->count = at;
    return VKVIT_OK;
}

vkvit_result vkvit_session_token_layout(const vkvit_session *s, vkvit_token_layout *out) {
    return logged(s, token_layout(s, out, "vkvit_session_token_layout"));
}

static vkvit_result get_tokens(vkvit_session *s, float *dst, size_t count) {
    const char *fn = "vkvit_session_get_tokens";
    if (!s || !dst) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    vkvit_token_layout l;
    vkvit_result res = token_layout(s, &l, fn);
    if (res != VKVIT_OK) return res;
    if (count != l.count)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': %zu floats given, the tokens are %llu", fn,
                            s->label, count, (unsigned long long)l.count);
    if (!s->ran) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': no run yet", fn, s->label);
    if ((res = vkvit__session_check_idle(s, fn)) != VKVIT_OK) return res;
    for (int i = 0; i < 3; i++) {
        if (s->tokens[i] == VKVIT_NONE) continue;
        const vkvit__tensor *t = &s->graph.tensors[s->tokens[i]];
        read_host_output(s, s->tokens[i], 0, dst, t->bytes);
        dst += vkvit__numel(t);
    }
    return VKVIT_OK;
}

vkvit_result vkvit_session_get_tokens(vkvit_session *s, float *dst, size_t count) {
    return logged(s, get_tokens(s, dst, count));
}

/* The first set_images of a session created with max_image_pixels = 0: adds the pre-processing nodes, prepares
 * the recording again (pipelines and descriptor sets for every node) and records it again. On failure the session
 * is as before. */
static vkvit_result add_imgproc(vkvit_session *s) {
    vkvit__graph *g = &s->graph;
    const vkvit__graph_mark before = vkvit__graph_mark_now(g);
    vkvit_result res = vkvit__session_create_imgproc(s, 0);
    if (res != VKVIT_OK) return res;
    vkvit__recording rec;
    vkvit__record_target tg = vkvit__session_target(s);
    if ((res = vkvit__record_prepare(s->ctx, g, &tg, s->profile, &rec)) != VKVIT_OK) {
        /* Back to the network alone: the pre-processing nodes, at the front, go to the end (a rotation in place,
         * which cannot fail) and are dropped with their tensors and kernels. */
        vkvit__graph_move_nodes(g, g->n_nodes - before.n_nodes, 0);
        vkvit__graph_rollback(g, before);
        vkvit__imgproc_destroy(&s->img);
        return res;
    }
    vkvit__record_free(s->ctx, &s->rec);
    s->rec = rec;
    s->timed = false; /* a new timer pool, written by the next run */
    if ((res = vkvit__session_rerecord(s)) != VKVIT_OK) return res;
    /* The recording has new pipelines (pre-processing and the network again): compile them now on CPU devices. */
    return s->ctx->caps.cpu_device ? vkvit__record_warmup(s->ctx, g, &tg, &s->rec, 0) : VKVIT_OK;
}

vkvit_result vkvit_session_set_images(vkvit_session *s, uint32_t first_slot, const vkvit_image *images,
                                      uint32_t count) {
    const char *fn = "vkvit_session_set_images";
    if (!s) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: session is NULL", fn);
    const call_subject sub = subject_of(s, fn);
    const char *where = sub.text;
    vkvit_result res = check_takes_images(s, fn);
    if (res == VKVIT_OK) res = vkvit__session_check_idle(s, fn);
    /* the cheap argument checks before the first call adds the pre-processing (pipelines, a warm-up: ~0.7 s) */
    if (res == VKVIT_OK) res = vkvit__imgproc_check_args(s->batch, first_slot, images, count, where);
    if (res == VKVIT_OK && !s->img.ctx && (res = add_imgproc(s)) != VKVIT_OK) vkvit__error_prefix(res, "%s", where);
    bool rebind = false;
    if (res == VKVIT_OK) res = vkvit__imgproc_set_images(&s->img, first_slot, images, count, where, &rebind);
    if (res == VKVIT_OK && rebind) {
        /* A buffer the nodes bind was replaced (the documented growth): point the sets at it, record again. */
        vkvit__record_target tg = vkvit__session_target(s);
        vkvit__record_rebind(s->ctx, &s->graph, &tg, &s->rec);
        if ((res = vkvit__session_rerecord(s)) != VKVIT_OK) vkvit__error_prefix(res, "%s", where);
    }
    return res != VKVIT_OK ? logged(s, res) : VKVIT_OK;
}

static vkvit_result get_top_k(vkvit_session *s, uint32_t *classes, float *probabilities, size_t count) {
    const char *fn = "vkvit_session_get_top_k";
    if (!s || !classes || !probabilities) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    if (s->topk == VKVIT_NONE)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': the session was created with top_k = 0", fn,
                            s->label);
    const uint64_t n = (uint64_t)s->batch * s->top_k;
    if (count != n)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': count %zu, the session has batch %u x top_k %u = "
                            "%llu entries", fn, s->label, count, s->batch, s->top_k, (unsigned long long)n);
    if (!s->ran) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s '%s': no run yet", fn, s->label);
    vkvit_result res = vkvit__session_check_idle(s, fn);
    if (res != VKVIT_OK) return res;
    read_host_output(s, s->topk, 0, classes, n * sizeof(uint32_t));
    read_host_output(s, s->topk, n * sizeof(uint32_t), probabilities, n * sizeof(float));
    return VKVIT_OK;
}

vkvit_result vkvit_session_get_top_k(vkvit_session *s, uint32_t *classes, float *probabilities, size_t count) {
    return logged(s, get_top_k(s, classes, probabilities, count));
}

uint64_t vkvit_session_output_bytes(const vkvit_session *s, vkvit_output_kind kind) {
    if (!s) return 0;
    if (kind == VKVIT_OUTPUT_LOGITS) return s->graph.tensors[s->output].bytes;
    if (kind == VKVIT_OUTPUT_TOP_K && s->topk != VKVIT_NONE) return s->graph.tensors[s->topk].bytes;
    if (kind == VKVIT_OUTPUT_TOKENS) {
        uint64_t bytes = 0;
        for (int i = 0; i < 3; i++)
            if (s->tokens[i] != VKVIT_NONE) bytes += s->graph.tensors[s->tokens[i]].bytes;
        return bytes;
    }
    return 0;
}
