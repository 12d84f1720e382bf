// SPDX-License-Identifier: Apache-2.0
/* vkvit bench: model benchmark (`vkvit bench gemm`, the GEMM micro-benchmark, is cmd_bench_gemm.c).
 *
 *   vkvit bench --model FILE [--batch N] [--precision fp32|fp16|fp16-math] [--repeat N | --duration S] [--warmup N]
 *               [--slices MS[,MS...]] [--json]
 *
 * A model benchmark reports the latency distribution of vkvit_session_run (submit + wait: p50, p90, p99, max,
 * standard deviation; with --duration also the drift between the first and last 10 % of runs), throughput, the
 * host CPU time per inference, the GPU time per node kind from timestamp queries (a second, profiled session so
 * the timed runs carry no timestamps), the arena / weight bytes, and each memory heap's usage and budget before and
 * after the sessions are created (VK_EXT_memory_budget; without it the heap sizes). With --slices, the inference
 * in slices under each GPU-time budget (vkvit_session_plan_slices from one set of profiled node times,
 * vkvit_session_run_slices): the slice count, each slice's measured GPU time against the budget, and the logits
 * against a whole run's. */
#include "bench_stats.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------------------------------------------------
 * Model benchmark
 * ------------------------------------------------------------------------------------------------------------ */

enum { OPT_REPEAT = 256, OPT_WARMUP, OPT_JSON, OPT_PRECISION, OPT_DEVICE, OPT_DURATION, OPT_SLICES };
#define MAX_SLICE_BUDGETS 8

static void model_usage(FILE *f) {
    fprintf(f, "usage: vkvit bench --model FILE [options]\n\n"
               "Runs the model repeatedly on random input (and a random condition for models that take one) and\n"
               "reports latency (p50 / p90 / p99 / max, standard deviation), throughput, host CPU time per\n"
               "inference, GPU time per node kind (timestamp queries) and memory. --duration S runs for S seconds\n"
               "instead of --repeat times and also reports the drift: the median of the last 10 %% of runs against\n"
               "the median of the first 10 %% (thermal throttling, clocks, memory growth).\n\n"
               "options:\n"
               "  -m, --model FILE    vkvit model file (required)\n"
               "  -b, --batch N       images per inference (default 1, at most 4096)\n"
               "  --precision P       fp32 (default), fp16 (fp16 weights) or fp16-math (fp16 GEMM arithmetic)\n"
               "  --repeat N          timed runs (default 10, at most 100000)\n"
               "  --duration S        run for S seconds (0 < S <= 86400) instead of --repeat (default: off)\n"
               "  --warmup N          untimed runs first (default 2, at most 1000)\n"
               "  --slices MS[,MS...] also run the inference in slices under each GPU-time budget (ms, up to 8):\n"
               "                      the slice count, each slice's GPU time against the budget, the logits\n"
               "                      against a whole run's (vkvit_session_plan_slices / _run_slices)\n"
               "  --device DEV        Vulkan device index or name substring (default: $VKVIT_DEVICE, else the\n"
               "                      first discrete, integrated, virtual, then CPU device)\n"
               "  --json              one JSON object (default: text)\n"
               "  -h, --help          this text\n\n"
               "exit codes: 0 success, 1 usage error, 2 bad model file, 3 no Vulkan device, 4 runtime failure\n");
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct kind_time {
    const char *kind;
    double ms;
    uint32_t nodes;
} kind_time;

/* A pseudo-random fill in [-1, 1) (fixed, so runs compare). */
static void fill_random(float *x, size_t n, uint32_t seed) {
    uint32_t st = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        st = st * 1664525u + 1013904223u;
        x[i] = (float)(st >> 8) / (float)(1u << 23) - 1.0f;
    }
}

typedef struct bench_args {
    const char *path, *device;
    uint32_t repeat, warmup, batch;
    int json;
    double duration;                        /* seconds; 0: --repeat runs */
    vkvit_precision precision;
    double budgets[MAX_SLICE_BUDGETS];      /* --slices, ms */
    uint32_t n_budgets;
} bench_args;

/* Returns CLI_OK, -1 after --help, or the exit code after printing the reason. */
static int parse_args(int argc, char **argv, bench_args *a) {
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},       {"batch", required_argument, NULL, 'b'},
        {"precision", required_argument, NULL, OPT_PRECISION}, {"repeat", required_argument, NULL, OPT_REPEAT},
        {"warmup", required_argument, NULL, OPT_WARMUP}, {"duration", required_argument, NULL, OPT_DURATION},
        {"device", required_argument, NULL, OPT_DEVICE}, {"json", no_argument, NULL, OPT_JSON},
        {"slices", required_argument, NULL, OPT_SLICES},
        {"help", no_argument, NULL, 'h'},              {NULL, 0, NULL, 0}};
    *a = (bench_args){.repeat = 10, .warmup = 2, .batch = 1, .precision = VKVIT_PRECISION_FP32};
    int repeat_given = 0;
    cli_opts o;
    cli_opts_init(&o, "bench", argc, argv, "m:b:h", longopts);
    for (int c; (c = cli_opts_next(&o)) != -1;) {
        switch (c) {
        case 'h': model_usage(stdout); return -1;
        case 'm': a->path = o.arg; break;
        case 'b': if (!cli_opt_u32(&o, 1, 4096, &a->batch)) return CLI_USAGE; break;
        case OPT_PRECISION: if (!cli_opt_precision(&o, &a->precision)) return CLI_USAGE; break;
        case OPT_REPEAT: if (!cli_opt_u32(&o, 1, 100000, &a->repeat)) return CLI_USAGE; repeat_given = 1; break;
        case OPT_WARMUP: if (!cli_opt_u32(&o, 0, 1000, &a->warmup)) return CLI_USAGE; break;
        case OPT_DEVICE: a->device = o.arg; break;
        case OPT_JSON: a->json = 1; break;
        case OPT_DURATION: {
            char *end = NULL;
            a->duration = strtod(o.arg, &end);
            /* decimal seconds only (strtod also takes hex floats and "inf") */
            if (end == o.arg || *end || strpbrk(o.arg, "xXnN") || !(a->duration > 0 && a->duration <= 86400))
                return cli_usage_error("bench", "--duration wants seconds in (0, 86400], got '%s'", o.arg);
            break;
        }
        case OPT_SLICES: {
            const char *p = o.arg;
            for (a->n_budgets = 0;; p++) {
                char *end = NULL;
                double ms = strtod(p, &end);
                if (a->n_budgets == MAX_SLICE_BUDGETS || end == p || (*end && *end != ',') || strpbrk(p, "xXnN") ||
                    !(ms > 0 && ms <= 1e6))
                    return cli_usage_error("bench", "--slices wants up to %d budgets in ms, each in (0, 1e6], "
                                           "comma-separated, got '%s'", MAX_SLICE_BUDGETS, o.arg);
                a->budgets[a->n_budgets++] = ms;
                if (!*end) break;
                p = end;
            }
            break;
        }
        default: return CLI_USAGE;
        }
    }
    if (o.first_operand < argc) return cli_usage_error("bench", "unexpected argument '%s'", argv[o.first_operand]);
    if (!a->path) return cli_usage_error("bench", "--model FILE is required (or: vkvit bench gemm)");
    if (repeat_given && a->duration > 0)
        return cli_usage_error("bench", "--repeat N and --duration S exclude each other");
    return CLI_OK;
}

/* One budget of --slices: the plan, each slice's measured GPU time, the logits' equality with a whole run's. */
typedef struct slice_run {
    vkvit_slice_plan plan;
    double *ms;                             /* [plan.slice_count] measured, in slice order */
    double *planned;                        /* [plan.slice_count] the plan's times */
    double median_ms, max_ms;
    uint32_t within;                        /* slices measured within the budget */
    int equal;                              /* logits equal to the whole run's, bit for bit */
} slice_run;

/* One model benchmark: the timed session and its profiled twin, their inputs, and what was measured. */
typedef struct bench_job {
    bench_args a;
    vkvit_ctx *ctx;
    vkvit_model *model;
    vkvit_session *s, *sp;                  /* timed; profiled (timestamps) */
    float *input, *cond;
    int conditioned;                        /* the model takes a (random) condition */
    double *lat;                            /* [n_lat] run latencies, ms, in run order until sorted */
    uint32_t n_lat, cap_lat;
    double wall_s, cpu_ms;                  /* the timed runs' wall time; host CPU time per run */
    uint32_t tenth;                         /* runs in each drift median */
    double drift_first, drift_last, drift_pct;
    cli_stats st;
    kind_time kinds[32];                    /* GPU time per node kind, one profiled run */
    uint32_t n_kinds;
    double gpu_total;
    /* the memory heaps before the two sessions are created (ctx and model exist: the model uploads nothing yet) and
     * after, so the report shows what the sessions took (weights, arenas, staging) */
    vkvit_memory_heap heaps_before[VKVIT_MAX_MEMORY_HEAPS], heaps_after[VKVIT_MAX_MEMORY_HEAPS];
    uint32_t n_heaps;
    int budget_reported;
    slice_run slices[MAX_SLICE_BUDGETS];    /* --slices: one per budget */
    double node_total_ms;                   /* the node times the plans share, summed */
} bench_job;

/* Both sessions, on the same random input (and a random condition for models that take one). */
static vkvit_result prepare(bench_job *j) {
    vkvit_session_desc sd = {.label = "bench", .batch = j->a.batch, .precision = j->a.precision};
    vkvit_result r = vkvit_session_create(j->model, &sd, &j->s);
    if (r != VKVIT_OK) return r;
    sd.profile = 1;
    sd.label = "bench (profiled)";
    if ((r = vkvit_session_create(j->model, &sd, &j->sp))) return r;
    vkvit_shape is = vkvit_session_input_shape(j->s);
    size_t n_in = (size_t)is.dims[0] * is.dims[1] * is.dims[2] * is.dims[3];
    j->cap_lat = j->a.duration > 0 ? 1024 : j->a.repeat;
    j->input = malloc(n_in * sizeof(float));
    j->lat = malloc((size_t)j->cap_lat * sizeof(double));
    if (!j->input || !j->lat) return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    fill_random(j->input, n_in, 1);
    if ((r = vkvit_session_set_input(j->s, j->input, n_in)) || (r = vkvit_session_set_input(j->sp, j->input, n_in)))
        return r;
    vkvit_shape cs = vkvit_session_condition_shape(j->s);
    if (!(j->conditioned = cs.ndim > 0)) return VKVIT_OK;
    size_t n_cond = 1;
    for (uint32_t d = 0; d < cs.ndim; d++) n_cond *= cs.dims[d];
    if (!(j->cond = malloc(n_cond * sizeof *j->cond))) return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    fill_random(j->cond, n_cond, 2);
    if ((r = vkvit_session_set_condition(j->s, j->cond, n_cond))) return r;
    return vkvit_session_set_condition(j->sp, j->cond, n_cond);
}

/* The warm-up runs, then --repeat timed runs or as many as --duration allows; then the drift (before sorting) and
 * the latency statistics. */
static vkvit_result time_runs(bench_job *j) {
    vkvit_result r;
    for (uint32_t i = 0; i < j->a.warmup; i++)
        if ((r = vkvit_session_run(j->s))) return r;
    const double cpu0 = cpu_seconds();
    const uint64_t start = cli_now_ns(), stop = start + (uint64_t)(j->a.duration * 1e9);
    for (;;) {
        if (j->a.duration > 0 ? cli_now_ns() >= stop && j->n_lat > 0 : j->n_lat == j->a.repeat) break;
        if (j->n_lat == j->cap_lat) {
            if (j->cap_lat >= (1u << 26)) break; /* 67 M runs: enough for any drift */
            double *grown = realloc(j->lat, (size_t)j->cap_lat * 2 * sizeof *j->lat);
            if (!grown) return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
            j->lat = grown;
            j->cap_lat *= 2;
        }
        uint64_t t0 = cli_now_ns();
        if ((r = vkvit_session_run(j->s))) return r;
        j->lat[j->n_lat++] = (double)(cli_now_ns() - t0) * 1e-6;
    }
    j->wall_s = (double)(cli_now_ns() - start) * 1e-9;
    j->cpu_ms = (cpu_seconds() - cpu0) * 1e3 / j->n_lat;
    /* Drift: the median of the last 10 % of runs against the first 10 %. */
    j->tenth = j->n_lat / 10 ? j->n_lat / 10 : 1;
    j->drift_first = cli_median(j->lat, j->tenth);
    j->drift_last = cli_median(j->lat + j->n_lat - j->tenth, j->tenth);
    j->drift_pct = 100.0 * (j->drift_last - j->drift_first) / j->drift_first;
    j->st = cli_stats_of(j->lat, j->n_lat);
    return VKVIT_OK;
}

/* GPU time per node kind, from one profiled run. */
static vkvit_result profile_kinds(bench_job *j) {
    vkvit_result r = vkvit_session_run(j->sp);
    if (r) return r;
    uint32_t n_nodes = 0;
    vkvit_session_profile(j->sp, NULL, 0, &n_nodes);
    vkvit_profile_entry *prof = calloc(n_nodes ? n_nodes : 1, sizeof *prof);
    if (!prof) return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if ((r = vkvit_session_profile(j->sp, prof, n_nodes, &n_nodes))) {
        free(prof);
        return r;
    }
    for (uint32_t i = 0; i < n_nodes; i++) {
        uint32_t k = 0;
        while (k < j->n_kinds && strcmp(j->kinds[k].kind, prof[i].kind)) k++;
        if (k == j->n_kinds && j->n_kinds < 32) j->kinds[j->n_kinds++] = (kind_time){prof[i].kind, 0, 0};
        if (k < j->n_kinds) {
            j->kinds[k].ms += prof[i].ms;
            j->kinds[k].nodes++;
        }
        j->gpu_total += prof[i].ms;
    }
    free(prof);
    return VKVIT_OK;
}

/* --slices on the profiled session: node times profiled once, then per budget a plan from them, one inference in
 * slices (each its own submission, timestamps around it) and its logits against the whole run's. */
static vkvit_result bench_slices(bench_job *j) {
    vkvit_result r;
    vkvit_session_stats ss;
    vkvit_shape os = vkvit_session_output_shape(j->sp);
    const size_t n_out = (size_t)os.dims[0] * os.dims[1];
    if ((r = vkvit_session_get_stats(j->sp, &ss))) return r;
    double *times = calloc(ss.nodes ? ss.nodes : 1, sizeof *times);
    float *whole = malloc(n_out * sizeof *whole), *sliced = malloc(n_out * sizeof *sliced);
    if (!times || !whole || !sliced) {
        r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        goto done;
    }
    vkvit_slice_plan first;
    if ((r = vkvit_session_plan_slices(j->sp, &(vkvit_slice_plan_desc){.budget_ms = j->a.budgets[0], .profile_runs = 5,
                                                                         .times_out = times, .node_count = ss.nodes},
                                       &first)))
        goto done;
    j->node_total_ms = first.total_ms;
    if ((r = vkvit_session_run(j->sp)) || (r = vkvit_session_get_output(j->sp, whole, n_out))) goto done;
    for (uint32_t b = 0; b < j->a.n_budgets; b++) {
        slice_run *sr = &j->slices[b];
        if ((r = vkvit_session_plan_slices(j->sp, &(vkvit_slice_plan_desc){.budget_ms = j->a.budgets[b],
                                                                            .node_ms = times, .node_count = ss.nodes},
                                           &sr->plan)))
            goto done;
        const uint32_t n = sr->plan.slice_count;
        sr->ms = calloc(n, sizeof *sr->ms);
        sr->planned = calloc(n, sizeof *sr->planned);
        double *sorted = calloc(n, sizeof *sorted);
        if (!sr->ms || !sr->planned || !sorted) {
            free(sorted);
            r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
            goto done;
        }
        for (size_t i = 0; i < n_out; i++) sliced[i] = NAN;
        if ((r = vkvit_session_run_slices(j->sp, sr->ms)) || (r = vkvit_session_get_output(j->sp, sliced, n_out))) {
            free(sorted);
            goto done;
        }
        sr->equal = memcmp(whole, sliced, n_out * sizeof *whole) == 0;
        for (uint32_t i = 0; i < n; i++) {
            vkvit_slice_info info;
            if ((r = vkvit_session_slice_info(j->sp, i, &info))) {
                free(sorted);
                goto done;
            }
            sr->planned[i] = info.planned_ms;
            sorted[i] = sr->ms[i];
            sr->within += sr->ms[i] <= j->a.budgets[b];
        }
        sr->median_ms = cli_median(sorted, n);
        cli_sort(sorted, n);
        sr->max_ms = n ? sorted[n - 1] : 0;
        free(sorted);
    }
done:
    free(times), free(whole), free(sliced);
    return r;
}

static void slices_json(cJSON *doc, const bench_job *j) {
    if (!j->a.n_budgets) {
        cJSON_AddNullToObject(doc, "slices");
        return;
    }
    cJSON *o = cJSON_AddObjectToObject(doc, "slices");
    cJSON_AddItemToObject(o, "node_total_ms", cli_jnum(j->node_total_ms));
    cJSON *arr = cJSON_AddArrayToObject(o, "budgets");
    for (uint32_t b = 0; b < j->a.n_budgets; b++) {
        const slice_run *sr = &j->slices[b];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "budget_ms", cli_jnum(j->a.budgets[b]));
        cJSON_AddNumberToObject(e, "slices", sr->plan.slice_count);
        cJSON_AddNumberToObject(e, "over_budget", sr->plan.over_budget);
        cJSON_AddItemToObject(e, "largest_planned_ms", cli_jnum(sr->plan.largest_ms));
        cJSON_AddItemToObject(e, "median_ms", cli_jnum(sr->median_ms));
        cJSON_AddItemToObject(e, "max_ms", cli_jnum(sr->max_ms));
        cJSON_AddNumberToObject(e, "within_budget", sr->within);
        cJSON_AddBoolToObject(e, "logits_equal", sr->equal);
        cJSON *pl = cJSON_AddArrayToObject(e, "planned_ms"), *ms = cJSON_AddArrayToObject(e, "measured_ms");
        for (uint32_t i = 0; i < sr->plan.slice_count; i++) {
            cJSON_AddItemToArray(pl, cli_jnum(sr->planned[i]));
            cJSON_AddItemToArray(ms, cli_jnum(sr->ms[i]));
        }
        cJSON_AddItemToArray(arr, e);
    }
}

static void slices_text(const bench_job *j) {
    if (!j->a.n_budgets) return;
    printf("slices      node times profiled once (median of 5 runs): %.3f ms in all; each budget one inference in "
           "slices, each its own submission\n", j->node_total_ms);
    for (uint32_t b = 0; b < j->a.n_budgets; b++) {
        const slice_run *sr = &j->slices[b];
        printf("  budget %7.3f ms  %4u slices (%u single nodes above it, the largest planned %.3f ms); measured "
               "per slice median %.3f ms, max %.3f ms, %u of %u within; logits %s\n", j->a.budgets[b],
               sr->plan.slice_count, sr->plan.over_budget, sr->plan.largest_ms, sr->median_ms, sr->max_ms,
               sr->within, sr->plan.slice_count, sr->equal ? "equal to the whole run's bit for bit" : "DIFFER");
    }
}

static int print_json(const bench_job *j, const vkvit_model_info *mi, const vkvit_session_stats *ss,
                      const char *device, double ips, double gflops) {
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddItemToObject(doc, "model", cli_jstr(j->a.path));
    cJSON_AddStringToObject(doc, "architecture", mi->architecture);
    cJSON_AddStringToObject(doc, "flavour", mi->flavour);
    cJSON_AddItemToObject(doc, "device", cli_jstr(device));
    cJSON_AddNumberToObject(doc, "batch", j->a.batch);
    cJSON_AddStringToObject(doc, "precision", cli_precision_name(j->a.precision));
    cJSON_AddNumberToObject(doc, "warmup", j->a.warmup);
    if (j->a.duration > 0) cJSON_AddItemToObject(doc, "duration_s", cli_jnum(j->a.duration));
    else cJSON_AddNullToObject(doc, "duration_s");
    cJSON_AddItemToObject(doc, "wall_s", cli_jnum(j->wall_s));
    cli_stats_json(doc, &j->st);
    cJSON_AddItemToObject(doc, "images_per_s", cli_jnum(ips));
    cJSON_AddItemToObject(doc, "gflops", cli_jnum(gflops));
    cJSON_AddItemToObject(doc, "host_cpu_ms", cli_jnum(j->cpu_ms));
    cJSON_AddItemToObject(doc, "gpu_ms", cli_jnum(j->gpu_total));
    if (j->a.duration > 0) {
        cJSON *d = cJSON_AddObjectToObject(doc, "drift");
        cJSON_AddNumberToObject(d, "runs_each", j->tenth);
        cJSON_AddItemToObject(d, "first_median_ms", cli_jnum(j->drift_first));
        cJSON_AddItemToObject(d, "last_median_ms", cli_jnum(j->drift_last));
        cJSON_AddItemToObject(d, "percent", cli_jnum(j->drift_pct));
    } else {
        cJSON_AddNullToObject(doc, "drift");
    }
    cJSON_AddNumberToObject(doc, "arena_bytes", (double)ss->arena_bytes);
    cJSON_AddNumberToObject(doc, "sum_activation_bytes", (double)ss->sum_activation_bytes);
    cJSON_AddNumberToObject(doc, "largest_activation_bytes", (double)ss->largest_activation_bytes);
    cJSON_AddNumberToObject(doc, "weight_bytes", (double)ss->weight_bytes);
    cJSON_AddNumberToObject(doc, "nodes", ss->nodes);
    cJSON_AddNumberToObject(doc, "barriers", ss->barriers);
    cJSON_AddNumberToObject(doc, "pipelines", ss->pipelines);
    cJSON_AddNumberToObject(doc, "sub_batch", ss->sub_batch);
    cJSON_AddBoolToObject(doc, "memory_budget", j->budget_reported);
    cJSON *heaps = cJSON_AddArrayToObject(doc, "memory_heaps");
    for (uint32_t h = 0; h < j->n_heaps; h++) {
        const vkvit_memory_heap *b = &j->heaps_before[h], *a = &j->heaps_after[h];
        cJSON *hj = cJSON_CreateObject();
        cJSON_AddNumberToObject(hj, "index", h);
        cJSON_AddNumberToObject(hj, "size", (double)a->size);
        cJSON_AddBoolToObject(hj, "device_local", a->device_local);
        cJSON_AddNumberToObject(hj, "budget_before", (double)b->budget);
        cJSON_AddNumberToObject(hj, "budget_after", (double)a->budget);
        if (j->budget_reported) {
            cJSON_AddNumberToObject(hj, "usage_before", (double)b->usage);
            cJSON_AddNumberToObject(hj, "usage_after", (double)a->usage);
        } else {
            cJSON_AddNullToObject(hj, "usage_before");
            cJSON_AddNullToObject(hj, "usage_after");
        }
        cJSON_AddItemToArray(heaps, hj);
    }
    cJSON *by = cJSON_AddObjectToObject(doc, "gpu_ms_by_kind");
    for (uint32_t k = 0; k < j->n_kinds; k++) cJSON_AddItemToObject(by, j->kinds[k].kind, cli_jnum(j->kinds[k].ms));
    slices_json(doc, j);
    return cli_json_print("bench", doc, 0);
}

static void print_text(const bench_job *j, const vkvit_model_info *mi, const vkvit_session_stats *ss,
                       const char *device, double ips, double gflops) {
    const cli_stats *st = &j->st;
    const vkvit_precision precision = j->a.precision;
    printf("model       ");
    cli_put_clean(stdout, j->a.path, 300);
    printf(" (%s/%s), %.2f GFLOP per image\n", mi->architecture, mi->flavour, mi->flops * 1e-9);
    printf("device      ");
    cli_put_clean(stdout, device, 256);
    printf("\nbatch       %u, %s, %u run%s in %.2f s after %u warm-up%s\n", j->a.batch,
           precision == VKVIT_PRECISION_FP16        ? "fp16 weights (fp32 activations)"
           : precision == VKVIT_PRECISION_FP16_MATH ? "fp16 weights and GEMM arithmetic (fp32 sums of 16-k chunks)"
                                                    : "fp32", st->n,
           st->n == 1 ? "" : "s", j->wall_s, j->a.warmup, j->conditioned ? ", random condition" : "");
    printf("latency     p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms, min %.3f ms, stddev %.3f ms\n",
           st->p50, st->p90, st->p99, st->max, st->min, st->stddev);
    printf("throughput  %.2f images/s, %.2f GFLOP/s (at the median)\n", ips, gflops);
    if (j->a.duration > 0)
        printf("drift       %+.1f %% (median of the last %u runs %.3f ms vs the first %u %.3f ms)\n", j->drift_pct,
               j->tenth, j->drift_last, j->tenth, j->drift_first);
    printf("host CPU    %.3f ms per inference (submit + wait)\n", j->cpu_ms);
    printf("memory      arena %.2f MiB (sum of all intermediates %.2f MiB, largest %.2f MiB), weights %.2f MiB\n",
           ss->arena_bytes / 1048576.0, ss->sum_activation_bytes / 1048576.0,
           ss->largest_activation_bytes / 1048576.0, ss->weight_bytes / 1048576.0);
    for (uint32_t h = 0; h < j->n_heaps; h++) {
        const vkvit_memory_heap *b = &j->heaps_before[h], *a = &j->heaps_after[h];
        if (!j->budget_reported) {
            printf("heap %-2u     %.2f GiB%s, budget: not reported by the driver (the heap size is the limit)\n", h,
                   a->size / 1073741824.0, a->device_local ? " device-local" : "");
            continue;
        }
        printf("heap %-2u     %.2f GiB%s: in use %.1f MiB before the sessions, %.1f MiB after (%+.1f MiB), budget "
               "%.2f GiB before, %.2f GiB after (VK_EXT_memory_budget)\n", h, a->size / 1073741824.0,
               a->device_local ? " device-local" : "", b->usage / 1048576.0, a->usage / 1048576.0,
               ((double)a->usage - (double)b->usage) / 1048576.0, b->budget / 1073741824.0, a->budget / 1073741824.0);
    }
    printf("graph       %u dispatches, %u barriers, %u pipelines", ss->nodes, ss->barriers, ss->pipelines);
    if (ss->sub_batch < ss->batch)
        printf(", batch run as sub-batches of %u (device dispatch / storage-buffer limits)", ss->sub_batch);
    printf("\n");
    printf("GPU time by node kind (one profiled run, %.3f ms total):\n", j->gpu_total);
    for (uint32_t k = 0; k < j->n_kinds; k++)
        printf("  %-12s %9.3f ms  %5.1f %%  (%u nodes)\n", j->kinds[k].kind, j->kinds[k].ms,
               j->gpu_total > 0 ? 100 * j->kinds[k].ms / j->gpu_total : 0.0, j->kinds[k].nodes);
}

/* The report: one JSON object or the text; returns the exit code. */
static int report(const bench_job *j) {
    vkvit_model_info mi;
    vkvit_session_stats ss;
    vkvit_device_info dev;
    vkvit_ctx_device_info(j->ctx, &dev);
    vkvit_model_get_info(j->model, &mi);
    vkvit_session_get_stats(j->s, &ss);
    const double ips = j->a.batch * 1e3 / j->st.p50;
    const double gflops = (double)mi.flops * j->a.batch / (j->st.p50 * 1e6);
    int rc = CLI_OK;
    if (j->a.json) rc = print_json(j, &mi, &ss, dev.name, ips, gflops);
    else print_text(j, &mi, &ss, dev.name, ips, gflops), slices_text(j);
    for (uint32_t b = 0; b < j->a.n_budgets && rc == CLI_OK; b++)
        if (!j->slices[b].equal) rc = cli_fail("bench", cli_error(VKVIT_ERROR_VULKAN, "the logits in slices under "
                                                                  "%.3f ms differ from a whole run's", j->a.budgets[b]));
    return rc;
}

static int bench_model(int argc, char **argv) {
    bench_job j = {0};
    int rc = parse_args(argc, argv, &j.a);
    if (rc != CLI_OK) return rc < 0 ? cli_finish_stdout("bench", CLI_OK) : rc;
    vkvit_ctx_desc cd = {.device = j.a.device, .log = cli_log_stderr, .log_user = "vkvit bench"};
    vkvit_result r = cli_open_model(&cd, j.a.path, &j.ctx, &j.model);
    if (r == VKVIT_OK) r = vkvit_ctx_memory_heaps(j.ctx, j.heaps_before, VKVIT_MAX_MEMORY_HEAPS, &j.n_heaps, NULL);
    if (r == VKVIT_OK) r = prepare(&j);
    if (r == VKVIT_OK)
        r = vkvit_ctx_memory_heaps(j.ctx, j.heaps_after, VKVIT_MAX_MEMORY_HEAPS, &j.n_heaps, &j.budget_reported);
    j.n_heaps = j.n_heaps < VKVIT_MAX_MEMORY_HEAPS ? j.n_heaps : VKVIT_MAX_MEMORY_HEAPS;
    if (r == VKVIT_OK) r = time_runs(&j);
    if (r == VKVIT_OK) r = profile_kinds(&j);
    if (r == VKVIT_OK && j.a.n_budgets) r = bench_slices(&j);
    rc = r != VKVIT_OK ? cli_fail("bench", r) : report(&j);
    for (uint32_t b = 0; b < MAX_SLICE_BUDGETS; b++) free(j.slices[b].ms), free(j.slices[b].planned);
    free(j.lat);
    free(j.input);
    free(j.cond);
    vkvit_session_destroy(j.sp);
    vkvit_session_destroy(j.s);
    vkvit_model_destroy(j.model);
    vkvit_ctx_destroy(j.ctx);
    return cli_finish_stdout("bench", rc);
}

int vkvit_cli_bench(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "gemm")) return vkvit_cli_bench_gemm(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        model_usage(stdout); /* both forms, each with every flag and its default */
        printf("\n");
        vkvit_cli_bench_gemm_usage(stdout);
        return cli_finish_stdout("bench", CLI_OK);
    }
    return bench_model(argc, argv);
}
