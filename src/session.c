// SPDX-License-Identifier: Apache-2.0
/* vkvit_session: build the architecture's graph, plan one arena, create every pipeline and descriptor set, record
 * the whole inference once (src/session.h lists the files). This file: creation, destruction, shapes and stats. */
#include "session.h"
#include "coopmat_guard.h"
#include "self_check.h"

#include <stdlib.h>
#include <string.h>

vkvit_result vkvit_session_create(vkvit_model *model, const vkvit_session_desc *desc_in, vkvit_session **out) {
    vkvit_result res = VKVIT_OK;
    vkvit__error_clear();
    if (!out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_create: out is NULL");
    *out = NULL;
    if (!model) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_create: model is NULL");
    vkvit_session_desc desc = desc_in ? *desc_in : (vkvit_session_desc){0};
    vkvit_ctx *ctx = model->ctx;
    if (desc.batch == 0) desc.batch = 1;
    if (desc.batch > 4096)
        return vkvit__ctx_fail(ctx, vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                                                 "vkvit_session_create: batch %u is above the limit of 4096", desc.batch));
    if (desc.precision != VKVIT_PRECISION_DEFAULT && desc.precision != VKVIT_PRECISION_FP32 &&
        desc.precision != VKVIT_PRECISION_FP16 && desc.precision != VKVIT_PRECISION_FP16_MATH)
        return vkvit__ctx_fail(ctx, vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                                                 "vkvit_session_create: unknown precision %d", (int)desc.precision));

    vkvit_session *s = calloc(1, sizeof *s);
    if (!s) return vkvit__ctx_fail(ctx, vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_session_create: out of memory"));
    s->model = model;
    atomic_fetch_add(&model->sessions, 1); /* vkvit_session_destroy (on every path from here) gives it back */
    s->ctx = ctx;
    s->batch = desc.batch;
    snprintf(s->label, sizeof s->label, "%s", desc.label ? desc.label : "vkvit session");
    s->top_k = desc.top_k;
    s->want_features = desc.features != 0;
    s->features = VKVIT_NONE;
    s->want_tokens = desc.tokens != 0;
    s->tokens[0] = s->tokens[1] = s->tokens[2] = VKVIT_NONE;
    const vkvit__build_opts opts = vkvit__build_opts_of(desc.precision); /* this graph's and every rebuild's */
    vkvit__graph_init_opts(&s->graph, ctx, &opts);
    vkvit__self_check(ctx, desc.precision); /* once per ctx and variant: before this graph or the checks below
                                                 read the policy */
    if (desc.precision == VKVIT_PRECISION_FP16_MATH && !ctx->policy.fp16_math) {
        const char *missing =
            ctx->policy.self_check_failed & (VKVIT_SELF_CHECK_FP16_GEMM | VKVIT_SELF_CHECK_FP16_MATH)
                ? "fp16 GEMMs, which failed their first-use self-check on this device (vkvit_device_info.workarounds)"
            : ctx->caps.fp16_storage && !ctx->policy.fp16 ? "fp16, which is disabled (VKVIT_DISABLE_F16=1 or ctx desc disable_f16)"
            : !ctx->caps.fp16_math ? "shaderFloat16, which this device does not offer (or the host did not enable); "
                                     "use fp16 or fp32"
                                   : "storageBuffer16BitAccess, which this device does not offer (or the host did not "
                                     "enable); use fp32";
        res = vkvit__error(VKVIT_ERROR_UNSUPPORTED, "precision fp16-math needs %s", missing);
        goto fail;
    }
    /* Phase times for the INFO log (start-up: docs/embedding.md). */
    const uint64_t t0 = vkvit__now_ns();
    const uint64_t pipeline_ns0 = atomic_load(&ctx->pipeline_ns);
    const uint32_t pipelines0 = atomic_load(&ctx->counters.pipelines);
    double guard_ms = 0, f16_ms = 0;
    if (desc.precision == VKVIT_PRECISION_FP16_MATH) { /* before the GEMMs pick kernels */
        vkvit__coopmat_guard(ctx);
        guard_ms = vkvit__ms_since(t0);
    }
    {
        /* The model's weights in this session's dtype (fp16 GEMM weights for FP16 and FP16_MATH: include/vkvit.h,
         * vkvit_precision), made from the file's bytes unless another session made them (src/model/model.h). */
        const uint64_t t_f16 = vkvit__now_ns();
        if ((res = vkvit__model_acquire(model, opts.weights)) != VKVIT_OK) goto fail;
        s->holds_weights = true;
        f16_ms = vkvit__ms_since(t_f16);
    }

    vkvit__session_build_graph(s);
    if ((res = vkvit__plan(&s->graph, &s->plan)) != VKVIT_OK) goto fail;
    if ((res = vkvit__buffer_create(ctx, s->plan.arena_bytes, VKVIT_MEM_DEVICE, "vkvit arena", &s->arena)) != VKVIT_OK)
        goto fail;
    s->direct = s->arena.mapped && s->arena.coherent;
    if (!s->direct) {
        const vkvit__tensor *in = &s->graph.tensors[s->input];
        if ((res = vkvit__buffer_create(ctx, in->bytes, VKVIT_MEM_UPLOAD, "vkvit input", &s->in_staging)) != VKVIT_OK ||
            (res = vkvit__buffer_create(ctx, vkvit__session_staged_offset(s, VKVIT_NONE), VKVIT_MEM_READBACK, "vkvit output",
                                        &s->out_staging)) != VKVIT_OK)
            goto fail;
        if (s->condition != VKVIT_NONE &&
            (res = vkvit__buffer_create(ctx, s->graph.tensors[s->condition].bytes, VKVIT_MEM_UPLOAD, "vkvit condition",
                                        &s->cond_staging)) != VKVIT_OK)
            goto fail;
    }
    if (desc.max_image_pixels && takes_images(s) && (res = vkvit__session_create_imgproc(s, desc.max_image_pixels)) != VKVIT_OK)
        goto fail;
    s->profile = desc.profile != 0;
    vkvit__record_target tg = vkvit__session_target(s);
    const uint64_t t_prepare = vkvit__now_ns();
    if ((res = vkvit__record_prepare(ctx, &s->graph, &tg, desc.profile != 0, &s->rec)) != VKVIT_OK) goto fail;
    const double prepare_ms = vkvit__ms_since(t_prepare);
    const uint64_t t_record = vkvit__now_ns();

    /* The fence is created signaled: "no run in flight", so destroy can always wait on it. */
    if ((res = vkvit__submission_create(ctx, &s->sub)) != VKVIT_OK || (res = vkvit__session_rerecord(s)) != VKVIT_OK) goto fail;
    /* CPU devices compile each shader at its first dispatch: do that here, not in the first run. */
    const double record_ms = vkvit__ms_since(t_record);
    if (ctx->caps.cpu_device && (res = vkvit__record_warmup(ctx, &s->graph, &tg, &s->rec, 0)) != VKVIT_OK) goto fail;
    vkvit__ctx_log(ctx, VKVIT_LOG_INFO, "session '%s' ready in %.1f ms (cooperative-matrix self-check %.1f, model "
                   "weights %.1f, %u pipelines (%u new, the others shared with the ctx's other sessions) and "
                   "descriptor sets %.1f of which vkCreateComputePipelines %.1f, recording %.1f, CPU warm-up run "
                   "%.1f)", s->label, vkvit__ms_since(t0), guard_ms, f16_ms, s->rec.n_kernels,
                   atomic_load(&ctx->counters.pipelines) - pipelines0, prepare_ms,
                   (double)(atomic_load(&ctx->pipeline_ns) - pipeline_ns0) * 1e-6, record_ms,
                   vkvit__ms_since(t_record) - record_ms);
    *out = s;
    return VKVIT_OK;
fail:
    vkvit__error_prefix(res, "vkvit_session_create '%s'", s->label);
    vkvit_session_destroy(s);
    return vkvit__ctx_fail(ctx, res);
}

void vkvit_session_destroy(vkvit_session *s) {
    if (!s) return;
    vkvit_ctx *ctx = s->ctx;
    vkvit_model *model = s->model;
    vkvit__submission_destroy(ctx, &s->sub); /* waits for a run in flight first */
    vkvit__imgproc_destroy(&s->img);
    vkvit__session_slices_free(s);
    vkvit__record_free(ctx, &s->rec);
    vkvit__buffer_destroy(ctx, &s->arena);
    vkvit__buffer_destroy(ctx, &s->in_staging);
    vkvit__buffer_destroy(ctx, &s->out_staging);
    vkvit__buffer_destroy(ctx, &s->cond_staging);
    if (s->holds_weights) vkvit__model_release(model, s->graph.opts.weights);
    vkvit__graph_free(&s->graph);
    free(s);
    atomic_fetch_sub(&model->sessions, 1); /* last: the model outlives everything above */
}

vkvit_shape vkvit_session_input_shape(const vkvit_session *s) {
    return s ? shape_of(&s->graph.tensors[s->input]) : (vkvit_shape){0};
}

vkvit_shape vkvit_session_condition_shape(const vkvit_session *s) {
    return s && s->condition != VKVIT_NONE ? shape_of(&s->graph.tensors[s->condition]) : (vkvit_shape){0};
}

vkvit_shape vkvit_session_output_shape(const vkvit_session *s) {
    return s ? shape_of(&s->graph.tensors[s->output]) : (vkvit_shape){0};
}

vkvit_shape vkvit_session_feature_shape(const vkvit_session *s) {
    return s && s->features != VKVIT_NONE ? shape_of(&s->graph.tensors[s->features]) : (vkvit_shape){0};
}

static vkvit_result get_stats(const vkvit_session *s, vkvit_session_stats *out) {
    if (!s || !out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_session_get_stats: NULL argument");
    *out = (vkvit_session_stats){
        .arena_bytes = s->plan.arena_bytes,
        .sum_activation_bytes = s->plan.sum_activation_bytes,
        .largest_activation_bytes = s->plan.largest_activation_bytes,
        .weight_bytes = vkvit__model_image(s->model, s->graph.opts.weights)->size,
        .nodes = s->graph.n_nodes,
        .barriers = s->rec.n_barriers,
        .pipelines = s->rec.n_kernels,
        .batch = s->batch,
        .sub_batch = s->sub_batch,
    };
    for (uint32_t n = 0; n < s->graph.n_nodes; n++) {
        const vkvit__node *node = &s->graph.nodes[n];
        for (int d = 0; d < 3; d++) out->largest_grid[d] = VKVIT_MAX(out->largest_grid[d], node->groups[d]);
        for (uint32_t b = 0; b < node->n_bindings; b++) {
            const vkvit__tensor *t = &s->graph.tensors[node->bindings[b].tensor];
            if (vkvit__is_weight(t->kind)) out->largest_weight_binding = VKVIT_MAX(out->largest_weight_binding, t->bytes);
        }
    }
    return VKVIT_OK;
}

vkvit_result vkvit_session_get_stats(const vkvit_session *s, vkvit_session_stats *out) {
    return logged(s, get_stats(s, out));
}
