// SPDX-License-Identifier: Apache-2.0
/* vkvit_bench_gemm: the GEMM micro-benchmark behind `vkvit bench gemm` (include/vkvit.h documents the contract).
 *
 * The GEMM goes through the same path as every linear layer of a model: vkvit__op_gemm adds the node (variant and
 * tile choice, weight row blocks past maxStorageBufferRange), the planner places A, W and D in one arena, the
 * recorder creates the pipeline and records the nodes with per-node timestamps and data-flow barriers. Then the
 * result is checked against plain-C loops on the host. */
#include "common.h"
#include "coopmat_guard.h"
#include "graph/graph.h"
#include "model/safetensors.h" /* vkvit__f32_to_f16, vkvit__f16_to_f32 */
#include "ops/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIDE 65536u
#define MAX_MATRIX ((uint64_t)1 << 28)      /* elements of A, W or D */
#define CHECK_GRID 64u                      /* rows / columns of D checked when m / n is larger */
#define TOLERANCE 1e-5                      /* |D - ref| <= TOLERANCE * sum_k |a w|: see include/vkvit.h */
#define TOLERANCE_F16_MATH 5e-3             /* the same with fp16 arithmetic: (8 + 2) * 2^-11 at worst */
#define NAN_BITS 0x7fc00000u

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Pseudo-random floats in [-0.5, 0.5) (a 32-bit LCG: fast for 2^28 elements, and reproducible from the seed). */
static void fill_random(float *x, size_t n, uint32_t *state) {
    for (size_t i = 0; i < n; i++) {
        *state = *state * 1664525u + 1013904223u;
        x[i] = (float)(*state >> 8) / (float)(1u << 24) - 0.5f;
    }
}

/* Index `i` of `count` evenly spread over [0, n): all of [0, n) when n <= count, else first and last included. */
static uint32_t spread(uint32_t i, uint32_t count, uint32_t n) {
    return n <= count ? i : (uint32_t)((uint64_t)i * (n - 1) / (count - 1));
}

static vkvit_result validate(const vkvit_ctx *ctx, const vkvit_gemm_bench_desc *d, const vkvit_gemm_bench_result *out) {
    if (!ctx || !d || !out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_bench_gemm: NULL argument");
    const uint32_t side[3] = {d->m, d->n, d->k};
    static const char *const names[3] = {"m", "n", "k"};
    for (int i = 0; i < 3; i++)
        if (side[i] < 1 || side[i] > MAX_SIDE)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_bench_gemm: %s = %u, not in [1, %u]", names[i],
                                side[i], MAX_SIDE);
    const uint64_t a = (uint64_t)d->m * d->k, w = (uint64_t)d->n * d->k, dd = (uint64_t)d->m * d->n;
    if (a > MAX_MATRIX || w > MAX_MATRIX || dd > MAX_MATRIX)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_bench_gemm %ux%ux%u: a matrix has more than 2^28 "
                            "elements (A %llu, W %llu, D %llu)", d->m, d->n, d->k, (unsigned long long)a,
                            (unsigned long long)w, (unsigned long long)dd);
    if (d->repeat > VKVIT_BENCH_MAX_RUNS || d->warmup > VKVIT_BENCH_MAX_RUNS)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_bench_gemm: repeat %u and warmup %u must each be at "
                            "most %u", d->repeat, d->warmup, VKVIT_BENCH_MAX_RUNS);
    if (d->precision < VKVIT_PRECISION_DEFAULT || d->precision > VKVIT_PRECISION_FP16_MATH)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_bench_gemm: unknown precision %d", (int)d->precision);
    if ((d->precision == VKVIT_PRECISION_FP16 || d->precision == VKVIT_PRECISION_FP16_MATH) && !ctx->policy.fp16)
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "vkvit_bench_gemm: fp16 weights need storageBuffer16BitAccess, "
                            "which device '%s' lacks or the ctx disabled", ctx->info.name);
    if (d->precision == VKVIT_PRECISION_FP16_MATH && !ctx->policy.fp16_math)
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "vkvit_bench_gemm: fp16 arithmetic needs shaderFloat16, which "
                            "device '%s' lacks", ctx->info.name);
    if (!ctx->info.timestamps)
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "vkvit_bench_gemm: the queue of device '%s' has no timestamp "
                            "queries", ctx->info.name);
    return VKVIT_OK;
}

/* Compares the sampled elements of D (downloaded row by row) with double-precision dot products of A and W. */
static vkvit_result check(vkvit_ctx *ctx, vkvit__buffer *arena, const vkvit__tensor *td, const float *a,
                          const float *w, uint32_t m, uint32_t n, uint32_t k, double tolerance,
                          vkvit_gemm_bench_result *out) {
    float *row = malloc((size_t)n * sizeof *row);
    if (!row) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_bench_gemm: out of host memory");
    const uint32_t rows = m < CHECK_GRID ? m : CHECK_GRID, cols = n < CHECK_GRID ? n : CHECK_GRID;
    vkvit_result r = VKVIT_OK;
    for (uint32_t ri = 0; ri < rows; ri++) {
        const uint32_t i = spread(ri, CHECK_GRID, m);
        if ((r = vkvit__buffer_download(ctx, arena, td->offset + (uint64_t)i * n * 4, row, (uint64_t)n * 4)))
            break;
        for (uint32_t ci = 0; ci < cols; ci++) {
            const uint32_t j = spread(ci, CHECK_GRID, n);
            double ref = 0, scale = 0;
            for (uint32_t kk = 0; kk < k; kk++) {
                const double p = (double)a[(size_t)i * k + kk] * (double)w[(size_t)j * k + kk];
                ref += p;
                scale += fabs(p);
            }
            const double err = fabs((double)row[j] - ref);
            out->checked++;
            if (!(err <= tolerance * scale)) out->mismatches++; /* NaN (never written) counts as a mismatch */
            const double rel = scale > 0 ? err / scale : err;
            if (rel > out->max_error || isnan(rel)) out->max_error = rel;
        }
    }
    free(row);
    return r;
}

/* What ran: the kernel, its whole tile and the CPU kernel's paths. */
static void report_config(const vkvit__gemm_config *c, vkvit_gemm_bench_result *out) {
    out->kernel = c->variant;
    const bool coopmat = c->variant == VKVIT_GEMM_KERNEL_COOPMAT, cpu = c->variant == VKVIT_GEMM_KERNEL_CPU;
    out->tile = (vkvit_gemm_tile){.bm = c->bm, .bn = c->bn, .bk = c->bk, .tm = coopmat ? 0 : c->tm,
                                  .tn = coopmat ? 0 : c->tn};
    out->texel_reads = cpu && c->texel;
    out->vec4_loads = cpu && c->vec4;
    out->pair_stores = cpu && c->texel && c->pairs;
    out->unrolled = vkvit__gemm_cpu_unrolled(c, VKVIT_GEMM_CAUSAL_NONE);
    out->one_chunk = cpu && c->one_chunk;
}

VKVIT_API vkvit_result vkvit_bench_gemm(vkvit_ctx *ctx, const vkvit_gemm_bench_desc *desc,
                                        vkvit_gemm_bench_result *out) {
    if (out) memset(out, 0, sizeof *out);
    vkvit_result res = validate(ctx, desc, out);
    if (res != VKVIT_OK) return ctx ? vkvit__ctx_fail(ctx, res) : res;
    if (desc->precision == VKVIT_PRECISION_FP16_MATH) vkvit__coopmat_guard(ctx); /* as a session would */
    return vkvit__gemm_bench_run(ctx, desc, out);
}

vkvit_result vkvit__gemm_bench_run(vkvit_ctx *ctx, const vkvit_gemm_bench_desc *desc, vkvit_gemm_bench_result *out) {
    vkvit_result res = validate(ctx, desc, out);
    if (res != VKVIT_OK) return vkvit__ctx_fail(ctx, res);
    memset(out, 0, sizeof *out);
    const uint32_t m = desc->m, n = desc->n, k = desc->k;
    const uint32_t repeat = desc->repeat ? desc->repeat : 10, runs = desc->warmup + repeat;
    vkvit__graph g;
    const vkvit__build_opts opts = vkvit__build_opts_of(desc->precision);
    vkvit__graph_init_opts(&g, ctx, &opts);
    vkvit__plan_stats plan;
    vkvit__recording rec = {0};
    vkvit__buffer arena = {0}, weights16 = {0};
    const bool w16 = desc->precision == VKVIT_PRECISION_FP16 || desc->precision == VKVIT_PRECISION_FP16_MATH;
    float *a = NULL, *w = NULL;
    uint16_t *w_half = NULL;
    double *ns = NULL, *sorted = NULL;
    uint32_t first_node[2 * VKVIT_BENCH_MAX_RUNS + 1]; /* run r's nodes: [first_node[r], first_node[r + 1]) */

    /* The graph: A [m, k] and W [n, k] are inputs (W an fp16 weight of its own buffer at fp16 precisions, as in a
     * session), D [m, n] the output (never aliased by the planner); one GEMM per run, each rewriting D, so the
     * recorder puts a write-after-write barrier between runs. */
    const uint32_t shape_a[2] = {m, k}, shape_w[2] = {n, k}, shape_d[2] = {m, n};
    const uint32_t ta = vkvit__graph_tensor(&g, VKVIT_TENSOR_INPUT, "bench.a", 2, shape_a);
    const uint32_t tw = w16 ? vkvit__graph_weight_at(&g, VKVIT_TENSOR_WEIGHT_F16, "bench.w", 0, 2, shape_w)
                            : vkvit__graph_tensor(&g, VKVIT_TENSOR_INPUT, "bench.w", 2, shape_w);
    const uint32_t td = vkvit__graph_tensor(&g, VKVIT_TENSOR_OUTPUT, "bench.d", 2, shape_d);
    vkvit__gemm_tuning tuning = {.kernel = desc->kernel, .tile = desc->tile, .flags = desc->flags};
    const vkvit__gemm_op op = {
        .a = vkvit__mat_dense(ta, m, k), .w = tw, .bias = VKVIT_NONE, .d = vkvit__mat_dense(td, m, n),
        .M = m, .N = n, .K = k, .batch = 1, .act = VKVIT_ACT_NONE, .scale = VKVIT_NONE,
        .residual = {VKVIT_NONE, 0, 0, 0}, .tuning = &tuning,
    };
    for (uint32_t r = 0; r < runs; r++) {
        first_node[r] = g.n_nodes;
        vkvit__op_gemm(&g, "bench", &op); /* the name an error about the tuning cites */
    }
    first_node[runs] = g.n_nodes;
    if ((res = vkvit__graph_error(&g)) != VKVIT_OK || (res = vkvit__plan(&g, &plan)) != VKVIT_OK) goto done;
    if ((res = vkvit__buffer_create(ctx, plan.arena_bytes, VKVIT_MEM_DEVICE, "vkvit bench arena", &arena)) != VKVIT_OK)
        goto done;
    if (w16 && (res = vkvit__buffer_create(ctx, (uint64_t)n * k * 2, VKVIT_MEM_DEVICE, "vkvit bench fp16 W",
                                           &weights16)) != VKVIT_OK)
        goto done;
    const vkvit__record_target tg = {.weights = &arena, .weights_f16 = w16 ? &weights16 : NULL, .arena = &arena};
    if ((res = vkvit__record_prepare(ctx, &g, &tg, true, &rec)) != VKVIT_OK) goto done;

    /* Inputs, and D poisoned so that an element the kernel never writes cannot pass the check. */
    const vkvit__tensor ga = vkvit__graph_get(&g, ta), gw = vkvit__graph_get(&g, tw), gd = vkvit__graph_get(&g, td);
    a = malloc(ga.bytes);
    w = malloc((size_t)n * k * sizeof *w);
    w_half = w16 ? malloc((size_t)n * k * sizeof *w_half) : NULL;
    ns = malloc(2 * (size_t)g.n_nodes * sizeof *ns);
    sorted = malloc(repeat * sizeof *sorted);
    if (!a || !w || (w16 && !w_half) || !ns || !sorted) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_bench_gemm %ux%ux%u: out of host memory", m, n, k);
        goto done;
    }
    uint32_t state = desc->seed * 2654435761u + 1u;
    fill_random(a, (size_t)m * k, &state);
    fill_random(w, (size_t)n * k, &state);
    for (size_t i = 0; w16 && i < (size_t)n * k; i++) { /* the reference reads the weights the kernel reads */
        w_half[i] = vkvit__f32_to_f16(w[i]);
        w[i] = vkvit__f16_to_f32(w_half[i]);
    }
    if ((res = vkvit__buffer_upload(ctx, &arena, ga.offset, a, ga.bytes)) != VKVIT_OK ||
        (res = w16 ? vkvit__buffer_upload(ctx, &weights16, 0, w_half, (uint64_t)n * k * 2)
                   : vkvit__buffer_upload(ctx, &arena, gw.offset, w, gw.bytes)) != VKVIT_OK ||
        (res = vkvit__buffer_fill(ctx, &arena, gd.offset, gd.bytes, NAN_BITS)) != VKVIT_OK)
        goto done;

    /* Record and run: the uploads before, D made visible to the readback copies after. */
    VkCommandBuffer cmd;
    if ((res = vkvit__cmd_begin(ctx, &cmd)) != VKVIT_OK) goto done;
    vkvit__cmd_barrier_prior_work(ctx, cmd);
    vkvit__record_nodes(ctx, &g, &tg, &rec, cmd);
    vkvit__cmd_barrier(ctx, cmd, &arena, gd.offset, gd.bytes, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    if ((res = vkvit__cmd_submit_wait(ctx, cmd)) != VKVIT_OK) goto done;
    if ((res = vkvit__timer_read_ns(ctx, &rec.timer, 2 * g.n_nodes, ns)) != VKVIT_OK) goto done;

    out->runs = repeat;
    out->dispatches = first_node[1] - first_node[0];
    report_config(&tuning.chosen, out);
    for (uint32_t i = 0; i < repeat; i++) {
        const uint32_t r = desc->warmup + i;
        out->ms[i] = (ns[2 * (first_node[r + 1] - 1) + 1] - ns[2 * first_node[r]]) * 1e-6;
        sorted[i] = out->ms[i];
    }
    qsort(sorted, repeat, sizeof *sorted, cmp_double);
    out->median_ms = repeat % 2 ? sorted[repeat / 2] : 0.5 * (sorted[repeat / 2 - 1] + sorted[repeat / 2]);
    out->gflops = 2.0 * m * n * k / (out->median_ms * 1e6);
    res = check(ctx, &arena, &gd, a, w, m, n, k,
                desc->precision == VKVIT_PRECISION_FP16_MATH ? TOLERANCE_F16_MATH : TOLERANCE, out);
done:
    free(a);
    free(w);
    free(w_half);
    free(ns);
    free(sorted);
    vkvit__record_free(ctx, &rec);
    vkvit__buffer_destroy(ctx, &arena);
    vkvit__buffer_destroy(ctx, &weights16);
    vkvit__graph_free(&g);
    if (res != VKVIT_OK && out) memset(out, 0, sizeof *out);
    return res != VKVIT_OK && ctx ? vkvit__ctx_fail(ctx, res) : res;
}
