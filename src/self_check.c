// SPDX-License-Identifier: Apache-2.0
/* The first-use self-check of the device-sensitive kernel variants: see self_check.h. Each problem is a small graph
 * built with the op builders a session uses (so it runs the variant the policy chose), planned, recorded and run
 * once, its output poisoned with NaN first, then compared with a double-precision reference on the host. */
#include "self_check.h"

#include "graph/graph.h"
#include "model/safetensors.h" /* vkvit__f32_to_f16, vkvit__f16_to_f32 */
#include "ops/ops.h"
#include "vk/vk.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAN_BITS 0x7fc00000u
#define MAX_INPUTS 3

/* ------------------------------------------------------------------------------------------------------------
 * The variants: whether one runs, what switching it off means
 * ------------------------------------------------------------------------------------------------------------ */

static bool variant_on(const vkvit__policy *p, uint32_t v) {
    switch (v) {
    case VKVIT_SELF_CHECK_SUBGROUP_REDUCTIONS: return p->subgroup_reductions;
    case VKVIT_SELF_CHECK_TEXEL_READS: return p->texel_reads;
    case VKVIT_SELF_CHECK_CPU_GEMM: return p->cpu_kernels && p->gemm_cpu;
    case VKVIT_SELF_CHECK_SUBGROUP_ATTENTION: return !p->cpu_kernels && p->subgroup_shuffles;
    case VKVIT_SELF_CHECK_FP16_GEMM: return p->fp16;
    case VKVIT_SELF_CHECK_FP16_MATH: return p->fp16_math;
    default: return false;
    }
}

/* The portable fallback of each variant, and the sentence's two halves. */
static void variant_off(vkvit__policy *p, uint32_t v) {
    switch (v) {
    case VKVIT_SELF_CHECK_SUBGROUP_REDUCTIONS: p->subgroup_reductions = false; break;
    case VKVIT_SELF_CHECK_TEXEL_READS: p->texel_reads = p->gemm_cpu_unrolled = false; break;
    case VKVIT_SELF_CHECK_CPU_GEMM: p->gemm_cpu = false; break;
    case VKVIT_SELF_CHECK_SUBGROUP_ATTENTION: p->subgroup_shuffles = false; break;
    case VKVIT_SELF_CHECK_FP16_GEMM: p->fp16 = p->fp16_math = false; p->coopmat = VKVIT_COOPMAT_NONE; break;
    case VKVIT_SELF_CHECK_FP16_MATH: p->fp16_math = false; p->coopmat = VKVIT_COOPMAT_NONE; break;
    default: break;
    }
}

static const char *variant_name(uint32_t v) {
    switch (v) {
    case VKVIT_SELF_CHECK_SUBGROUP_REDUCTIONS: return "subgroup reductions";
    case VKVIT_SELF_CHECK_TEXEL_READS: return "texel reads";
    case VKVIT_SELF_CHECK_CPU_GEMM: return "CPU GEMM";
    case VKVIT_SELF_CHECK_SUBGROUP_ATTENTION: return "subgroup attention";
    case VKVIT_SELF_CHECK_FP16_GEMM: return "fp16 GEMM";
    case VKVIT_SELF_CHECK_FP16_MATH: return "fp16 arithmetic";
    default: return "?";
    }
}

static const char *variant_fallback(uint32_t v) {
    switch (v) {
    case VKVIT_SELF_CHECK_SUBGROUP_REDUCTIONS: return "norm statistics use shared-memory reductions";
    case VKVIT_SELF_CHECK_TEXEL_READS: return "CPU kernels read storage buffers";
    case VKVIT_SELF_CHECK_CPU_GEMM: return "GEMMs take the shared-memory kernel";
    case VKVIT_SELF_CHECK_SUBGROUP_ATTENTION: return "fused attention keeps each row on one invocation";
    case VKVIT_SELF_CHECK_FP16_GEMM: return "fp16 and fp16-math sessions are refused, fp32 ones run";
    case VKVIT_SELF_CHECK_FP16_MATH: return "fp16-math sessions are refused, fp16 and fp32 ones run";
    default: return "";
    }
}

/* ------------------------------------------------------------------------------------------------------------
 * One problem: a graph, its host inputs, its output, its reference
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct problem {
    char name[64];                          /* "norm 7x300", for the sentence */
    vkvit__graph g;
    uint32_t in[MAX_INPUTS];                /* INPUT tensors and their host data (fp32) */
    float *in_data[MAX_INPUTS];
    uint32_t n_in;
    uint32_t w16;                           /* a WEIGHT_F16 tensor (offset 0 of its own buffer) or VKVIT_NONE */
    uint16_t *w16_data;
    uint32_t out;                           /* the OUTPUT tensor, fp32 */
    size_t n_out;
    double *ref, *scale;                    /* [n_out] reference and the size an error is measured against */
    double tolerance;                       /* |got - ref| <= tolerance * scale */
} problem;

static void problem_free(problem *p) {
    vkvit__graph_free(&p->g);
    for (uint32_t i = 0; i < p->n_in; i++) free(p->in_data[i]);
    free(p->w16_data);
    free(p->ref);
    free(p->scale);
    memset(p, 0, sizeof *p);
}

/* Pseudo-random floats in [-0.5, 0.5) (a 32-bit LCG, reproducible from the seed). */
static void fill_random(float *x, size_t n, uint32_t *state) {
    for (size_t i = 0; i < n; i++) {
        *state = *state * 1664525u + 1013904223u;
        x[i] = (float)(*state >> 8) / (float)(1u << 24) - 0.5f;
    }
}

static float *add_input(problem *p, const char *name, uint32_t rows, uint32_t cols, uint32_t *state) {
    const uint32_t shape[2] = {rows, cols};
    const uint32_t t = vkvit__graph_tensor(&p->g, VKVIT_TENSOR_INPUT, name, 2, shape);
    float *x = malloc((size_t)rows * cols * sizeof *x);
    if (x) fill_random(x, (size_t)rows * cols, state);
    p->in[p->n_in] = t;
    p->in_data[p->n_in++] = x;
    return x;
}

static bool alloc_ref(problem *p, size_t n) {
    p->n_out = n;
    p->ref = calloc(n, sizeof *p->ref);
    p->scale = calloc(n, sizeof *p->scale);
    return p->ref && p->scale;
}

/* Plans, records and runs the problem's graph once; its output into got[n_out]. */
static vkvit_result run_problem(vkvit_ctx *ctx, problem *p, float *got) {
    vkvit__plan_stats plan;
    vkvit__recording rec = {0};
    vkvit__buffer arena = {0}, weights16 = {0};
    const uint64_t w16_bytes = p->w16 != VKVIT_NONE ? vkvit__graph_get(&p->g, p->w16).bytes : 0;
    vkvit_result res = vkvit__graph_error(&p->g);
    if (res == VKVIT_OK) res = vkvit__plan(&p->g, &plan);
    if (res == VKVIT_OK)
        res = vkvit__buffer_create(ctx, plan.arena_bytes, VKVIT_MEM_DEVICE, "vkvit self-check arena", &arena);
    if (res == VKVIT_OK && w16_bytes)
        res = vkvit__buffer_create(ctx, w16_bytes, VKVIT_MEM_DEVICE, "vkvit self-check fp16 weights", &weights16);
    const vkvit__record_target tg = {.weights = &arena, .weights_f16 = w16_bytes ? &weights16 : NULL,
                                     .arena = &arena};
    if (res == VKVIT_OK) res = vkvit__record_prepare(ctx, &p->g, &tg, false, &rec);
    for (uint32_t i = 0; res == VKVIT_OK && i < p->n_in; i++) {
        const vkvit__tensor t = vkvit__graph_get(&p->g, p->in[i]);
        res = vkvit__buffer_upload(ctx, &arena, t.offset, p->in_data[i], t.bytes);
    }
    if (res == VKVIT_OK && w16_bytes) res = vkvit__buffer_upload(ctx, &weights16, 0, p->w16_data, w16_bytes);
    const vkvit__tensor to = vkvit__graph_get(&p->g, p->out);
    if (res == VKVIT_OK) res = vkvit__buffer_fill(ctx, &arena, to.offset, to.bytes, NAN_BITS);
    VkCommandBuffer cmd;
    if (res == VKVIT_OK && (res = vkvit__cmd_begin(ctx, &cmd)) == VKVIT_OK) {
        vkvit__cmd_barrier_prior_work(ctx, cmd);
        vkvit__record_nodes(ctx, &p->g, &tg, &rec, cmd);
        vkvit__cmd_barrier(ctx, cmd, &arena, to.offset, to.bytes, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
        res = vkvit__cmd_submit_wait(ctx, cmd);
    }
    if (res == VKVIT_OK) res = vkvit__buffer_download(ctx, &arena, to.offset, got, p->n_out * sizeof *got);
    vkvit__record_free(ctx, &rec);
    vkvit__buffer_destroy(ctx, &arena);
    vkvit__buffer_destroy(ctx, &weights16);
    return res;
}

/* LayerNorm over rows (vkvit__op_norm, the statistics through shaders/reduce.glsl), 300 channels: not a multiple
 * of any subgroup size, so partial subgroups and the cross-subgroup step both run. */
static bool build_norm(vkvit_ctx *ctx, problem *p) {
    enum { ROWS = 7, C = 300 };
    const float eps = 1e-5f;
    uint32_t state = 20261202u;
    snprintf(p->name, sizeof p->name, "LayerNorm %ux%u", ROWS, C);
    vkvit__graph_init(&p->g, ctx);
    const float *x = add_input(p, "self-check.x", ROWS, C, &state);
    const float *wt = add_input(p, "self-check.norm_w", 1, C, &state);
    const float *bi = add_input(p, "self-check.norm_b", 1, C, &state);
    const uint32_t shape[2] = {ROWS, C};
    p->out = vkvit__graph_tensor(&p->g, VKVIT_TENSOR_OUTPUT, "self-check.y", 2, shape);
    const vkvit__norm_op op = {.kind = VKVIT_NORM_LAYER, .C = C, .group = C, .rows = ROWS, .rows_per_batch = ROWS,
                               .in = vkvit__mat_dense(p->in[0], ROWS, C), .out = vkvit__mat_dense(p->out, ROWS, C),
                               .weight = p->in[1], .bias = p->in[2], .eps = eps};
    vkvit__op_norm(&p->g, "self-check", &op);
    if (!x || !wt || !bi || !alloc_ref(p, (size_t)ROWS * C)) return false;
    p->tolerance = 1e-4;
    for (uint32_t r = 0; r < ROWS; r++) {
        double mean = 0, var = 0;
        for (uint32_t c = 0; c < C; c++) mean += x[r * C + c];
        mean /= C;
        for (uint32_t c = 0; c < C; c++) var += (x[r * C + c] - mean) * (x[r * C + c] - mean);
        const double inv = 1.0 / sqrt(var / C + eps);
        for (uint32_t c = 0; c < C; c++) {
            const double xhat = (x[r * C + c] - mean) * inv;
            p->ref[r * C + c] = xhat * wt[c] + bi[c];
            p->scale[r * C + c] = fabs(xhat * wt[c]) + fabs(bi[c]) + 1e-3;
        }
    }
    return true;
}

/* D = A W^T through vkvit__op_gemm (the kernel sessions take), 37 x 70 x 96: partial tiles on every side. fp16
 * weights where `precision` says so (the reference reads the rounded weights); tolerance that of vkvit_bench_gemm. */
static bool build_gemm(vkvit_ctx *ctx, problem *p, vkvit_precision precision) {
    enum { M = 37, N = 70, K = 96 };
    uint32_t state = 20261203u + (uint32_t)precision;
    const bool w16 = precision != VKVIT_PRECISION_FP32;
    snprintf(p->name, sizeof p->name, "%s GEMM %ux%ux%u", w16 ? precision == VKVIT_PRECISION_FP16 ? "fp16-weight"
                                                                                                 : "fp16-math"
                                                              : "fp32", M, N, K);
    const vkvit__build_opts opts = vkvit__build_opts_of(precision);
    vkvit__graph_init_opts(&p->g, ctx, &opts);
    const float *a = add_input(p, "self-check.a", M, K, &state);
    float *w = NULL;
    const uint32_t shape_w[2] = {N, K}, shape_d[2] = {M, N};
    if (w16) {
        p->w16 = vkvit__graph_weight_at(&p->g, VKVIT_TENSOR_WEIGHT_F16, "self-check.w", 0, 2, shape_w);
        w = malloc((size_t)N * K * sizeof *w);
        p->w16_data = malloc((size_t)N * K * sizeof *p->w16_data);
        if (!w || !p->w16_data) {
            free(w);
            return false;
        }
        fill_random(w, (size_t)N * K, &state);
        for (size_t i = 0; i < (size_t)N * K; i++) {
            p->w16_data[i] = vkvit__f32_to_f16(w[i]);
            w[i] = vkvit__f16_to_f32(p->w16_data[i]);
        }
    } else {
        p->w16 = VKVIT_NONE;
        w = add_input(p, "self-check.w", N, K, &state);
    }
    p->out = vkvit__graph_tensor(&p->g, VKVIT_TENSOR_OUTPUT, "self-check.d", 2, shape_d);
    const vkvit__gemm_op op = {
        .a = vkvit__mat_dense(p->in[0], M, K), .w = w16 ? p->w16 : p->in[1], .bias = VKVIT_NONE,
        .d = vkvit__mat_dense(p->out, M, N), .M = M, .N = N, .K = K, .batch = 1, .act = VKVIT_ACT_NONE,
        .scale = VKVIT_NONE, .residual = {VKVIT_NONE, 0, 0, 0},
    };
    vkvit__op_gemm(&p->g, "self-check", &op);
    const bool ok = a && w && alloc_ref(p, (size_t)M * N);
    p->tolerance = precision == VKVIT_PRECISION_FP16_MATH ? 5e-3 : 1e-5;
    for (uint32_t i = 0; ok && i < M; i++)
        for (uint32_t j = 0; j < N; j++) {
            double ref = 0, scale = 0;
            for (uint32_t k = 0; k < K; k++) {
                const double prod = (double)a[i * K + k] * (double)w[j * K + k];
                ref += prod;
                scale += fabs(prod);
            }
            p->ref[i * N + j] = ref;
            p->scale[i * N + j] = scale;
        }
    if (w16) free(w);
    return ok;
}

/* Causal attention through vkvit__op_attention (a causal mask always takes the fused kernel), on q, k, v of one
 * fused qkv [T, 3C]: 45 tokens (a partial 32-row block), 2 heads of 64 channels, which GPU kernels with subgroup
 * shuffles split over 4 lanes a row. */
static bool build_attention(vkvit_ctx *ctx, problem *p) {
    enum { T = 45, H = 2, DK = 64, C = H * DK };
    uint32_t state = 20261204u;
    snprintf(p->name, sizeof p->name, "causal attention %u tokens x %u heads x %u", T, H, DK);
    vkvit__graph_init(&p->g, ctx);
    const float *qkv = add_input(p, "self-check.qkv", T, 3 * C, &state);
    const uint32_t t = p->in[0];
    const vkvit__attention_op op = {
        .q = {t, 0, 3 * C, T * 3 * C}, .k = {t, C, 3 * C, T * 3 * C}, .v = {t, 2 * C, 3 * C, T * 3 * C},
        .B = 1, .Tq = T, .Tkv = T, .C = C, .heads = H, .rope = VKVIT_NONE, .causal = true,
    };
    p->out = vkvit__op_attention(&p->g, "self-check", &op);
    if (p->out != VKVIT_NONE) p->g.tensors[p->out].kind = VKVIT_TENSOR_OUTPUT; /* read back: never aliased */
    if (!qkv || !alloc_ref(p, (size_t)T * C)) return false;
    p->tolerance = 1e-4;
    const double sc = 1.0 / sqrt((double)DK);
    double s[T];
    for (uint32_t h = 0; h < H; h++)
        for (uint32_t i = 0; i < T; i++) {
            double mx = -INFINITY, sum = 0;
            for (uint32_t j = 0; j <= i; j++) {
                double dot = 0;
                for (uint32_t d = 0; d < DK; d++)
                    dot += (double)qkv[i * 3 * C + h * DK + d] * qkv[j * 3 * C + C + h * DK + d];
                s[j] = dot * sc;
                mx = fmax(mx, s[j]);
            }
            for (uint32_t j = 0; j <= i; j++) sum += s[j] = exp(s[j] - mx);
            for (uint32_t d = 0; d < DK; d++) {
                double o = 0, mag = 0;
                for (uint32_t j = 0; j <= i; j++) {
                    o += s[j] / sum * qkv[j * 3 * C + 2 * C + h * DK + d];
                    mag += s[j] / sum * fabs(qkv[j * 3 * C + 2 * C + h * DK + d]);
                }
                p->ref[i * C + h * DK + d] = o;
                p->scale[i * C + h * DK + d] = mag + 1e-3;
            }
        }
    return true;
}

/* A problem's builder: its graph, inputs and reference on the ctx's policy now; false when out of host memory. */
typedef bool (*build_fn)(vkvit_ctx *ctx, problem *p);
static bool build_gemm_fp32(vkvit_ctx *ctx, problem *p) { return build_gemm(ctx, p, VKVIT_PRECISION_FP32); }
static bool build_gemm_fp16(vkvit_ctx *ctx, problem *p) { return build_gemm(ctx, p, VKVIT_PRECISION_FP16); }
static bool build_gemm_fp16_math(vkvit_ctx *ctx, problem *p) {
    /* the tiled / CPU kernel's fp16 arithmetic: the cooperative-matrix GEMM has its own check (coopmat_guard.c) */
    const vkvit__coopmat_kernel coopmat = ctx->policy.coopmat;
    ctx->policy.coopmat = VKVIT_COOPMAT_NONE;
    const bool ok = build_gemm(ctx, p, VKVIT_PRECISION_FP16_MATH);
    ctx->policy.coopmat = coopmat;
    return ok;
}

/* Builds and runs one problem on the ctx's policy now: "" in why[cap] when it matched its reference, else the
 * sentence. `corrupt`: every output + 1 (the test hook). Returns false when the problem could not run for want of memory (no verdict on any variant), else true with
 * the verdict in why. */
static bool check_once(vkvit_ctx *ctx, build_fn build, bool corrupt, char *why, size_t cap) {
    problem p = {.w16 = VKVIT_NONE};
    why[0] = '\0';
    float *got = NULL;
    vkvit_result res = VKVIT_OK;
    if (!build(ctx, &p) || !(got = malloc((p.n_out ? p.n_out : 1) * sizeof *got))) {
        res = vkvit__graph_error(&p.g);
        if (res == VKVIT_OK) res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    if (res == VKVIT_OK) res = run_problem(ctx, &p, got);
    const bool ran = res != VKVIT_ERROR_OUT_OF_DEVICE_MEMORY && res != VKVIT_ERROR_OUT_OF_HOST_MEMORY;
    if (res != VKVIT_OK) {
        snprintf(why, cap, "%s did not run: %s", p.name, vkvit_last_error());
    } else {
        size_t wrong = 0;
        double worst = 0;
        for (size_t i = 0; i < p.n_out; i++) {
            const double g = (double)got[i] + (corrupt ? 1.0 : 0.0), err = fabs(g - p.ref[i]);
            if (!(err <= p.tolerance * p.scale[i])) wrong++; /* NaN (never written) counts as wrong */
            const double rel = err / p.scale[i];
            if (rel > worst || isnan(rel)) worst = rel;
        }
        if (wrong)
            snprintf(why, cap, "%s: %zu of %zu wrong, worst %.2g x scale, tolerance %.0e", p.name, wrong, p.n_out,
                     worst, p.tolerance);
    }
    free(got);
    problem_free(&p);
    return ran;
}

/* ------------------------------------------------------------------------------------------------------------
 * The check
 * ------------------------------------------------------------------------------------------------------------ */

/* Each problem, the sessions that need it (fp16-weight problems wait for the first session with fp16 weights: each
 * problem's pipelines cost a CPU device hundreds of ms to compile), and the variants it runs, the first suspect
 * first (a variant an earlier problem passed comes last). */
enum { ANY = 0, FP16_WEIGHTS = 1, FP16_MATH = 2 };
static const struct {
    build_fn build;
    int needs;
    uint32_t suspects[2];
} k_checks[] = {
    {build_gemm_fp32, ANY, {VKVIT_SELF_CHECK_TEXEL_READS, VKVIT_SELF_CHECK_CPU_GEMM}},
    {build_norm, ANY, {VKVIT_SELF_CHECK_SUBGROUP_REDUCTIONS, VKVIT_SELF_CHECK_TEXEL_READS}},
    {build_attention, ANY, {VKVIT_SELF_CHECK_SUBGROUP_ATTENTION, 0}},
    {build_gemm_fp16, FP16_WEIGHTS, {VKVIT_SELF_CHECK_FP16_GEMM, 0}},
    {build_gemm_fp16_math, FP16_MATH, {VKVIT_SELF_CHECK_FP16_MATH, 0}},
};

/* The variants of problem c the policy runs now. */
static uint32_t running_of(const vkvit__policy *pol, size_t c) {
    uint32_t running = 0;
    for (int s = 0; s < 2; s++)
        if (k_checks[c].suspects[s] && variant_on(pol, k_checks[c].suspects[s])) running |= k_checks[c].suspects[s];
    return running;
}

static void blame(vkvit_ctx *ctx, uint32_t v, const char *why) {
    variant_off(&ctx->policy, v);
    ctx->policy.self_check_failed |= v;
    char line[1500];
    snprintf(line, sizeof line, "%s failed its self-check (%s): %s", variant_name(v), why, variant_fallback(v));
    vkvit__ctx_add_workaround(ctx, line);
    vkvit__ctx_log(ctx, VKVIT_LOG_WARNING, "%s", line);
}

/* ------------------------------------------------------------------------------------------------------------
 * Verdicts on disk (self_check.h)
 * ------------------------------------------------------------------------------------------------------------ */

#define VERDICT_MAGIC "vkvit first-use self-check verdicts 1"
#define N_CHECKS VKVIT_ARRAY_LEN(k_checks)

typedef struct verdict {
    bool known;
    uint32_t running;                       /* the variants that ran the problem */
    uint32_t failed;                        /* those it switched off */
} verdict;

static uint64_t fnv_bytes(uint64_t h, const void *data, size_t n) {
    const uint8_t *b = data;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t fnv_u32(uint64_t h, uint32_t v) {
    const uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    return fnv_bytes(h, b, sizeof b);
}

/* Field by field (no struct bytes: their padding is not defined). The driver's identity is in the file's name. */
uint64_t vkvit__self_check_key(const vkvit_ctx *ctx) {
    uint64_t h = fnv_bytes(1469598103934665603ull, VERDICT_MAGIC, sizeof VERDICT_MAGIC);
    h = fnv_u32(fnv_u32(fnv_u32(h, VKVIT_VERSION_MAJOR), VKVIT_VERSION_MINOR), VKVIT_VERSION_PATCH);
    for (unsigned i = 0; i < VKVIT_SHADER_COUNT; i++)
        h = fnv_bytes(h, vkvit_spirv_table[i].words, (size_t)vkvit_spirv_table[i].n_words * 4);
    h = fnv_bytes(h, ctx->env.device_profile, strlen(ctx->env.device_profile) + 1);
    const vkvit__caps *c = &ctx->caps;
    const uint32_t facts[] = {c->cpu_device, c->fp16_storage, c->fp16_math, c->subgroup_size, c->subgroup_size_min,
                              c->subgroup_size_max, c->subgroup_size_control, c->subgroup_arithmetic,
                              c->subgroup_shuffle, c->texel_buffers, c->max_shared_memory,
                              c->max_workgroup_invocations, c->max_workgroup_size[0], c->max_workgroup_size[1],
                              c->max_workgroup_size[2], c->max_storage_buffers_per_stage};
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(facts); i++) h = fnv_u32(h, facts[i]);
    const vkvit__policy *p = &ctx->policy;
    const uint32_t policy[] = {p->cpu_kernels, p->fp16, p->fp16_math, p->subgroup_reductions, p->subgroup_shuffles,
                               p->texel_reads, p->gemm_cpu, p->packed_bindings, p->gemm_cpu_unrolled,
                               (uint32_t)p->coopmat, p->coopmat_warp, p->coopmat_shape, p->coopmat_tile,
                               p->attention};
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(policy); i++) h = fnv_u32(h, policy[i]);
    return h;
}

/* <dir>/self-check-<...>.txt beside the pipeline cache <dir>/pipelines-<...>.bin; false without an on-disk cache. */
static bool verdict_path(const vkvit_ctx *ctx, char *path, size_t cap) {
    const char *name = strrchr(ctx->cache_path, '/');
    const size_t dir_len = name ? (size_t)(name - ctx->cache_path) : 0;
    name = name ? name + 1 : ctx->cache_path;
    if (!ctx->cache_path[0] || strncmp(name, "pipelines-", 10) != 0) return false;
    const size_t stem = strlen(name + 10);
    if (stem < 4 || strcmp(name + 10 + stem - 4, ".bin") != 0) return false;
    const int n = snprintf(path, cap, "%.*s/self-check-%.*s.txt", (int)dir_len, ctx->cache_path, (int)(stem - 4),
                           name + 10);
    return n > 0 && (size_t)n < cap;
}

/* The file's verdicts under this ctx's key into v[]; false (v untouched) when there is none to take. */
static bool verdicts_load(vkvit_ctx *ctx, const char *path, verdict v[N_CHECKS]) {
    uint8_t *data = NULL;
    size_t size = 0;
    if (vkvit__read_file(path, 1u << 16, &data, &size) != VKVIT_OK) {
        vkvit__error_clear(); /* none yet: not an error */
        return false;
    }
    char *text = realloc(data, size + 1);
    if (!text) {
        free(data);
        return false;
    }
    text[size] = '\0';
    verdict got[N_CHECKS];
    memset(got, 0, sizeof got);
    bool ok = false;
    unsigned long long key = 0;
    char *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    if (line && !strcmp(line, VERDICT_MAGIC) && (line = strtok_r(NULL, "\n", &save)) &&
        sscanf(line, "key %16llx", &key) == 1 && key == ctx->self_check_key) {
        ok = true;
        while (ok && (line = strtok_r(NULL, "\n", &save))) {
            unsigned c, running, failed;
            int end = 0;
            ok = sscanf(line, "problem %u running %x failed %x%n", &c, &running, &failed, &end) == 3 &&
                 line[end] == '\0' && c < N_CHECKS && !got[c].known && running && !(failed & ~running);
            if (ok) got[c] = (verdict){true, running, failed};
        }
    }
    free(text);
    if (!ok) {
        vkvit__ctx_log(ctx, VKVIT_LOG_INFO, "ignoring the self-check verdicts in '%s' (another build, device "
                       "state or vkvit version, or a damaged file)", path);
        return false;
    }
    memcpy(v, got, sizeof got);
    return true;
}

static void verdicts_save(vkvit_ctx *ctx, const char *path, const verdict v[N_CHECKS]) {
    char text[64 + sizeof VERDICT_MAGIC + N_CHECKS * 48];
    int n = snprintf(text, sizeof text, "%s\nkey %016llx\n", VERDICT_MAGIC, (unsigned long long)ctx->self_check_key);
    for (size_t c = 0; c < N_CHECKS; c++)
        if (v[c].known)
            n += snprintf(text + n, sizeof text - (size_t)n, "problem %zu running %x failed %x\n", c, v[c].running,
                          v[c].failed);
    char dir[1100];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    /* best effort, as the pipeline cache: a read-only cache folder must not fail a session */
    if (vkvit__mkdir_p(dir) != VKVIT_OK || vkvit__write_file_atomic(path, text, (size_t)n) != VKVIT_OK)
        vkvit__ctx_log(ctx, VKVIT_LOG_INFO, "could not save the self-check verdicts: %s", vkvit_last_error());
    vkvit__error_clear();
}

/* Problem c: run; on a mismatch, each suspect switched off alone in turn, the first one without which the problem
 * passes to blame; none alone: all of them. Returns the runs, 0 when memory ran out (no verdict: the bit is
 * cleared, and the next session tries again). */
static uint32_t check_problem(vkvit_ctx *ctx, size_t c) {
    vkvit__policy *pol = &ctx->policy;
    const uint32_t running = running_of(pol, c);
    if (!running) return 0; /* none of its variants in use: the portable kernels, which the suite tests */
    char why[256], again[256];
    const uint32_t hooks = ctx->test_hooks.self_check_corrupt;
    if (!check_once(ctx, k_checks[c].build, (hooks & running) != 0, why, sizeof why)) goto no_verdict;
    uint32_t runs = 1;
    if (!why[0]) return runs;
    for (int s = 0; s < 2; s++) {
        const uint32_t v = k_checks[c].suspects[s];
        if (!(running & v)) continue;
        const vkvit__policy saved = *pol;
        variant_off(pol, v);
        const bool ran = check_once(ctx, k_checks[c].build, (hooks & running_of(pol, c)) != 0, again, sizeof again);
        *pol = saved;
        if (!ran) goto no_verdict;
        runs++;
        if (!again[0]) {
            blame(ctx, v, why);
            return runs;
        }
    }
    for (int s = 0; s < 2; s++)
        if (running & k_checks[c].suspects[s]) blame(ctx, k_checks[c].suspects[s], why);
    return runs;
no_verdict:
    pol->self_checked &= ~(1u << c);
    return 0;
}

void vkvit__self_check(vkvit_ctx *ctx, vkvit_precision precision) {
    vkvit__policy *pol = &ctx->policy;
    const int has = precision == VKVIT_PRECISION_FP16_MATH ? FP16_MATH
                  : precision == VKVIT_PRECISION_FP16      ? FP16_WEIGHTS
                                                           : ANY;
    uint32_t due = 0;
    for (size_t c = 0; c < N_CHECKS; c++)
        if (k_checks[c].needs <= has && !(pol->self_checked >> c & 1u)) due |= 1u << c;
    if (!due) return;
    pol->self_checked |= due; /* before the runs: each problem builds a graph, as a session would */
    const uint64_t t0 = vkvit__now_ns();
    const char *before = ctx->info.workarounds;
    const size_t n_before = strlen(before);
    char path[1100];
    verdict v[N_CHECKS];
    memset(v, 0, sizeof v);
    const bool on_disk = !ctx->test_hooks.self_check_corrupt && verdict_path(ctx, path, sizeof path);
    const bool loaded = on_disk && verdicts_load(ctx, path, v);
    uint32_t runs = 0, taken = 0, fresh = 0;
    for (size_t c = 0; c < N_CHECKS; c++) {
        if (!(due >> c & 1u)) continue;
        const uint32_t running = running_of(pol, c);
        if (loaded && v[c].known && v[c].running == running) { /* the same variants as when it was run */
            char why[sizeof path + 32];
            snprintf(why, sizeof why, "the verdict kept in '%s'", path);
            for (int s = 0; s < 2; s++)
                if (v[c].failed & k_checks[c].suspects[s]) blame(ctx, k_checks[c].suspects[s], why);
            taken++;
            continue;
        }
        const uint32_t failed_before = pol->self_check_failed;
        const uint32_t r = check_problem(ctx, c);
        runs += r;
        if (r) {
            v[c] = (verdict){true, running, pol->self_check_failed & ~failed_before};
            fresh++;
        } else {
            v[c].known = false;
        }
    }
    if (on_disk && fresh) verdicts_save(ctx, path, v);
    vkvit__policy_to_info(pol, &ctx->info);
    const char *off = strlen(before) > n_before ? " (variants switched off: see the warnings)" : "";
    if (taken)
        vkvit__ctx_log(ctx, VKVIT_LOG_INFO, "ctx '%s': first-use self-check, %u problem run(s) and %u verdict(s) "
                       "taken from '%s' in %.1f ms%s", ctx->label, runs, taken, path, vkvit__ms_since(t0), off);
    else if (runs)
        vkvit__ctx_log(ctx, VKVIT_LOG_INFO, "ctx '%s': first-use self-check, %u problem run(s) in %.1f ms%s",
                       ctx->label, runs, vkvit__ms_since(t0), off);
}
