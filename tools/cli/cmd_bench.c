/* vkvit bench: kernel micro-benchmarks measured with GPU timestamps (median of repeated runs).
 *
 *   vkvit bench gemm [--shape MxNxK]... [--repeat N] [--warmup N] [--json]
 *   vkvit bench --model FILE [--batch N] [--precision fp32|fp16|fp16-math] [--repeat N | --duration S] [--warmup N]
 *               [--json]
 *
 * A model benchmark reports the latency distribution of vkvit_session_run (submit + wait: p50, p90, p99, max,
 * standard deviation; with --duration also the drift between the first and last 10 % of runs), throughput, the
 * host CPU time per inference, the GPU time per node kind from timestamp queries (a second, profiled session so
 * the timed runs carry no timestamps), and the arena / weight bytes. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct shape {
    uint32_t M, N, K;
} shape;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Latency statistics of n samples (sorted in place). */
typedef struct stats {
    uint32_t n;
    double min, p50, p90, p99, max, mean, stddev;
} stats;

/* Nearest-rank percentile of sorted x[n]. */
static double percentile(const double *x, uint32_t n, double p) {
    uint32_t rank = (uint32_t)ceil(p / 100.0 * n);
    return x[rank ? rank - 1 : 0];
}

static stats compute_stats(double *x, uint32_t n) {
    stats st = {.n = n};
    double sum = 0, sq = 0;
    for (uint32_t i = 0; i < n; i++) sum += x[i];
    st.mean = sum / n;
    for (uint32_t i = 0; i < n; i++) sq += (x[i] - st.mean) * (x[i] - st.mean);
    st.stddev = n > 1 ? sqrt(sq / (n - 1)) : 0.0; /* sample standard deviation */
    qsort(x, n, sizeof *x, cmp_double);
    st.min = x[0];
    st.p50 = percentile(x, n, 50);
    st.p90 = percentile(x, n, 90);
    st.p99 = percentile(x, n, 99);
    st.max = x[n - 1];
    return st;
}

static double median_of(const double *x, uint32_t n) {
    double *c = malloc(n * sizeof *c);
    if (!c) return NAN;
    memcpy(c, x, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double);
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

static void add_stats_json(cJSON *o, const stats *st) {
    cJSON_AddItemToObject(o, "runs", cJSON_CreateNumber(st->n));
    cJSON_AddItemToObject(o, "min_ms", cli_jnum(st->min));
    cJSON_AddItemToObject(o, "median_ms", cli_jnum(st->p50));
    cJSON_AddItemToObject(o, "p50_ms", cli_jnum(st->p50));
    cJSON_AddItemToObject(o, "p90_ms", cli_jnum(st->p90));
    cJSON_AddItemToObject(o, "p99_ms", cli_jnum(st->p99));
    cJSON_AddItemToObject(o, "max_ms", cli_jnum(st->max));
    cJSON_AddItemToObject(o, "mean_ms", cli_jnum(st->mean));
    cJSON_AddItemToObject(o, "stddev_ms", cli_jnum(st->stddev));
}

static void bench_usage(FILE *f) {
    fprintf(f, "usage: vkvit bench gemm [options]\n\n"
               "Times the GEMM kernel (nn.Linear layout, Y = X W^T) with GPU timestamps and prints, per shape,\n"
               "the median (p50), p90, p99 and maximum time, the standard deviation and GFLOP/s at the median.\n"
               "Each shape's result is checked against a plain-C reference (every element up to 64x64, else a\n"
               "64x64 grid of them); a wrong result fails the command (exit 4).\n\n"
               "options:\n"
               "  --shape MxNxK   a shape to measure; repeatable; each of M, N, K in [1, 65536] and each matrix\n"
               "                  under 2^28 elements (default: 1024x1024x1024, 201x1152x384, 201x384x1536,\n"
               "                  201x1536x384)\n"
               "  --precision P   fp32 (default), fp16 (fp16 W, fp32 math: the *_w16 kernel) or fp16-math (fp16 W\n"
               "                  and arithmetic: the *_f16 kernel; needs shaderFloat16)\n"
               "  --repeat N      timed runs per shape (default 10, at most 128)\n"
               "  --warmup N      untimed runs first (default 2, at most 128)\n"
               "  --json          one JSON object per shape (default: a table)\n"
               "  -h, --help      this text\n\n"
               "exit codes: 0 success, 1 usage error, 3 no Vulkan device, 4 runtime failure\n");
}

/* Times one shape with the library's GEMM micro-benchmark (vkvit_bench_gemm: the session's GEMM node, GPU
 * timestamps around each run, the result checked against a plain-C reference). A result outside the reference's
 * tolerance fails the command: a fast wrong kernel is no benchmark. */
static vkvit_result time_gemm(vkvit_ctx *ctx, shape s, vkvit_precision precision, uint32_t warmup, uint32_t repeat,
                              stats *out, vkvit_gemm_bench_result *res) {
    vkvit_gemm_bench_desc d = {.m = s.M, .n = s.N, .k = s.K, .repeat = repeat, .warmup = warmup, .seed = 1,
                               .precision = precision};
    vkvit_result r = vkvit_bench_gemm(ctx, &d, res);
    if (r != VKVIT_OK) return r;
    if (res->mismatches)
        return cli_error(VKVIT_ERROR_VULKAN, "gemm %ux%ux%u gives wrong results on this device: %llu of %llu checked "
                         "elements differ from the plain-C reference by more than its tolerance (largest relative "
                         "error %.3g)", s.M, s.N, s.K, (unsigned long long)res->mismatches,
                         (unsigned long long)res->checked, res->max_error);
    *out = compute_stats(res->ms, res->runs);
    return VKVIT_OK;
}

enum { OPT_SHAPE = 256, OPT_REPEAT, OPT_WARMUP, OPT_JSON, OPT_PRECISION, OPT_DEVICE, OPT_DURATION };

/* "MxNxK": each part digits only, checked for overflow (strtoull) and range, so 4294967297x1x1 is refused, not
 * wrapped to 1x1x1. */
static int parse_shape(const char *text, shape *out) {
    char buf[96];
    if (strlen(text) >= sizeof buf) return 0;
    memcpy(buf, text, strlen(text) + 1);
    uint64_t v[3];
    char *part = buf;
    for (int i = 0; i < 3; i++) {
        char *x = strchr(part, 'x');
        if ((i < 2) != (x != NULL)) return 0;
        if (x) *x = '\0';
        if (!cli_parse_u64(part, 1, 65536, &v[i])) return 0;
        part = x ? x + 1 : part;
    }
    if (v[0] * v[2] > (1u << 28) || v[1] * v[2] > (1u << 28) || v[0] * v[1] > (1u << 28)) return 0;
    *out = (shape){(uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2]};
    return 1;
}

static int bench_gemm(int argc, char **argv) {
    static const struct option longopts[] = {
        {"shape", required_argument, NULL, OPT_SHAPE},   {"repeat", required_argument, NULL, OPT_REPEAT},
        {"warmup", required_argument, NULL, OPT_WARMUP}, {"json", no_argument, NULL, OPT_JSON},
        {"precision", required_argument, NULL, OPT_PRECISION}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    vkvit_precision precision = VKVIT_PRECISION_FP32;
    shape shapes[32];
    int n_shapes = 0, json = 0;
    uint32_t repeat = 10, warmup = 2;
    cli_opts o;
    cli_opts_init(&o, "bench gemm", argc, argv, "h", longopts);
    for (int c; (c = cli_opts_next(&o)) != -1;) {
        switch (c) {
        case 'h': bench_usage(stdout); return cli_finish_stdout("bench", CLI_OK);
        case OPT_JSON: json = 1; break;
        case OPT_PRECISION: if (!cli_opt_precision(&o, &precision)) return CLI_USAGE; break;
        case OPT_REPEAT: if (!cli_opt_u32(&o, 1, 128, &repeat)) return CLI_USAGE; break;
        case OPT_WARMUP: if (!cli_opt_u32(&o, 0, 128, &warmup)) return CLI_USAGE; break;
        case OPT_SHAPE:
            if (n_shapes == (int)CLI_ARRAY_LEN(shapes))
                return cli_usage_error("bench gemm", "at most %zu --shape options", CLI_ARRAY_LEN(shapes));
            if (!parse_shape(o.arg, &shapes[n_shapes]))
                return cli_usage_error("bench gemm", "--shape wants MxNxK with each in [1, 65536] and each matrix "
                                       "under 2^28 elements, got '%s'", o.arg);
            n_shapes++;
            break;
        default: return CLI_USAGE;
        }
    }
    if (o.first_operand < argc)
        return cli_usage_error("bench gemm", "unexpected argument '%s'", argv[o.first_operand]);
    if (n_shapes == 0) {
        static const shape defaults[] = {{1024, 1024, 1024}, {201, 1152, 384}, {201, 384, 1536}, {201, 1536, 384}};
        memcpy(shapes, defaults, sizeof defaults);
        n_shapes = (int)CLI_ARRAY_LEN(defaults);
    }
    vkvit_ctx *ctx = NULL;
    vkvit_ctx_desc cd = {.log = cli_log_stderr, .log_user = "vkvit bench"};
    vkvit_result r = vkvit_ctx_create(&cd, &ctx);
    if (r != VKVIT_OK) {
        cli_print_error("bench", cli_last_error());
        return vkvit_cli_exit_code(r);
    }
    vkvit_device_info dev;
    vkvit_ctx_device_info(ctx, &dev);
    if (!json) {
        printf("device: ");
        cli_put_clean(stdout, dev.name, 256);
        printf(", %s GEMM\n%-22s %9s %9s %9s %9s %9s %10s\n", cli_precision_name(precision), "shape (MxNxK)", "p50 ms", "p90 ms", "p99 ms", "max ms",
               "stddev", "GFLOP/s");
    }
    int rc = CLI_OK;
    for (int i = 0; i < n_shapes; i++) {
        stats st;
        vkvit_gemm_bench_result br;
        r = time_gemm(ctx, shapes[i], precision, warmup, repeat, &st, &br);
        if (r != VKVIT_OK) {
            cli_print_error("bench", cli_last_error());
            rc = vkvit_cli_exit_code(r);
            break;
        }
        double gflops = 2.0 * shapes[i].M * shapes[i].N * shapes[i].K / (st.p50 * 1e6);
        char name[64];
        snprintf(name, sizeof name, "%ux%ux%u", shapes[i].M, shapes[i].N, shapes[i].K);
        if (json) {
            cJSON *doc = cJSON_CreateObject();
            cJSON_AddStringToObject(doc, "op", precision == VKVIT_PRECISION_FP16        ? "gemm_w16"
                                               : precision == VKVIT_PRECISION_FP16_MATH ? "gemm_f16"
                                                                                        : "gemm_f32");
            cJSON_AddStringToObject(doc, "precision", cli_precision_name(precision));
            cJSON_AddNumberToObject(doc, "M", shapes[i].M);
            cJSON_AddNumberToObject(doc, "N", shapes[i].N);
            cJSON_AddNumberToObject(doc, "K", shapes[i].K);
            add_stats_json(doc, &st);
            cJSON_AddItemToObject(doc, "gflops", cli_jnum(gflops));
            cJSON_AddNumberToObject(doc, "repeat", repeat);
            cJSON_AddItemToObject(doc, "device", cli_jstr(dev.name));
            cJSON_AddNumberToObject(doc, "checked_elements", (double)br.checked);
            cJSON_AddItemToObject(doc, "max_relative_diff", cli_jnum(br.max_error));
            /* fp16-math GEMMs on cooperative matrices: in use after the ctx's first-use self-check (vkvit.h) */
            vkvit_ctx_device_info(ctx, &dev);
            cJSON_AddBoolToObject(doc, "cooperative_matrix",
                                  precision == VKVIT_PRECISION_FP16_MATH && dev.cooperative_matrix_in_use);
            if ((rc = cli_json_print("bench", doc, 0)) != CLI_OK) break;
        } else {
            vkvit_ctx_device_info(ctx, &dev);
            printf("%-22s %9.3f %9.3f %9.3f %9.3f %9.3f %10.2f%s\n", name, st.p50, st.p90, st.p99, st.max, st.stddev,
                   gflops, precision == VKVIT_PRECISION_FP16_MATH && dev.cooperative_matrix_in_use ? "  coopmat" : "");
        }
        cli_flush_stdout();
    }
    vkvit_ctx_destroy(ctx);
    return cli_finish_stdout("bench", rc);
}

/* ------------------------------------------------------------------------------------------------------------
 * Model benchmark
 * ------------------------------------------------------------------------------------------------------------ */

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

static int bench_model(int argc, char **argv) {
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},       {"batch", required_argument, NULL, 'b'},
        {"precision", required_argument, NULL, OPT_PRECISION}, {"repeat", required_argument, NULL, OPT_REPEAT},
        {"warmup", required_argument, NULL, OPT_WARMUP}, {"duration", required_argument, NULL, OPT_DURATION},
        {"device", required_argument, NULL, OPT_DEVICE}, {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},              {NULL, 0, NULL, 0}};
    const char *path = NULL, *device = NULL;
    uint32_t repeat = 10, warmup = 2, batch = 1;
    int json = 0;
    double duration = 0;
    vkvit_precision precision = VKVIT_PRECISION_FP32;
    cli_opts o;
    cli_opts_init(&o, "bench", argc, argv, "m:b:h", longopts);
    for (int c; (c = cli_opts_next(&o)) != -1;) {
        switch (c) {
        case 'h': model_usage(stdout); return cli_finish_stdout("bench", CLI_OK);
        case 'm': path = o.arg; break;
        case 'b': if (!cli_opt_u32(&o, 1, 4096, &batch)) return CLI_USAGE; break;
        case OPT_PRECISION: if (!cli_opt_precision(&o, &precision)) return CLI_USAGE; break;
        case OPT_REPEAT: if (!cli_opt_u32(&o, 1, 100000, &repeat)) return CLI_USAGE; break;
        case OPT_WARMUP: if (!cli_opt_u32(&o, 0, 1000, &warmup)) return CLI_USAGE; break;
        case OPT_DEVICE: device = o.arg; break;
        case OPT_JSON: json = 1; break;
        case OPT_DURATION: {
            char *end = NULL;
            duration = strtod(o.arg, &end);
            if (end == o.arg || *end || !(duration > 0 && duration <= 86400))
                return cli_usage_error("bench", "--duration wants seconds in (0, 86400], got '%s'", o.arg);
            break;
        }
        default: return CLI_USAGE;
        }
    }
    if (o.first_operand < argc) return cli_usage_error("bench", "unexpected argument '%s'", argv[o.first_operand]);
    if (!path) return cli_usage_error("bench", "--model FILE is required (or: vkvit bench gemm)");
    int rc = CLI_OK;
    vkvit_result r;
    vkvit_ctx *ctx = NULL;
    vkvit_model *model = NULL;
    vkvit_session *s = NULL, *sp = NULL;
    float *input = NULL, *cond = NULL;
    double *lat = NULL;
    uint32_t n_lat = 0, cap_lat = 0;
    vkvit_profile_entry *prof = NULL;
#define FAIL(r_)                                                                                              \
    do {                                                                                                      \
        cli_print_error("bench", cli_last_error());                                                           \
        rc = vkvit_cli_exit_code(r_);                                                                         \
        goto done;                                                                                            \
    } while (0)
    /* the model path first: a FIFO, a device or a foreign file is refused before any device work */
    if ((r = cli_sniff_model(path)) != VKVIT_OK) FAIL(r);
    vkvit_ctx_desc cd = {.device = device, .log = cli_log_stderr, .log_user = "vkvit bench"};
    if ((r = vkvit_ctx_create(&cd, &ctx))) FAIL(r);
    if ((r = vkvit_model_create(ctx, &(vkvit_model_desc){.path = path}, &model))) FAIL(r);
    vkvit_session_desc sd = {.label = "bench", .batch = batch, .precision = precision};
    if ((r = vkvit_session_create(model, &sd, &s))) FAIL(r);
    sd.profile = 1;
    sd.label = "bench (profiled)";
    if ((r = vkvit_session_create(model, &sd, &sp))) FAIL(r);

    vkvit_shape is = vkvit_session_input_shape(s);
    size_t n_in = (size_t)is.dims[0] * is.dims[1] * is.dims[2] * is.dims[3];
    cap_lat = duration > 0 ? 1024 : repeat;
    input = malloc(n_in * sizeof(float));
    lat = malloc((size_t)cap_lat * sizeof(double));
    if (!input || !lat) {
        r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        FAIL(r);
    }
    fill_random(input, n_in, 1);
    if ((r = vkvit_session_set_input(s, input, n_in)) || (r = vkvit_session_set_input(sp, input, n_in))) FAIL(r);
    /* Conditioned models: a random condition, as the input is random. */
    vkvit_shape cs = vkvit_session_condition_shape(s);
    if (cs.ndim > 0) {
        size_t n_cond = 1;
        for (uint32_t d = 0; d < cs.ndim; d++) n_cond *= cs.dims[d];
        if (!(cond = malloc(n_cond * sizeof *cond))) {
            r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
            FAIL(r);
        }
        fill_random(cond, n_cond, 2);
        if ((r = vkvit_session_set_condition(s, cond, n_cond)) || (r = vkvit_session_set_condition(sp, cond, n_cond)))
            FAIL(r);
    }
    for (uint32_t i = 0; i < warmup; i++)
        if ((r = vkvit_session_run(s))) FAIL(r);
    double cpu0 = cpu_seconds();
    uint64_t start = cli_now_ns(), stop = start + (uint64_t)(duration * 1e9);
    for (;;) {
        if (duration > 0 ? cli_now_ns() >= stop && n_lat > 0 : n_lat == repeat) break;
        if (n_lat == cap_lat) {
            if (cap_lat >= (1u << 26)) break; /* 67 M runs: enough for any drift */
            double *grown = realloc(lat, (size_t)cap_lat * 2 * sizeof *lat);
            if (!grown) {
                r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
                FAIL(r);
            }
            lat = grown;
            cap_lat *= 2;
        }
        uint64_t t0 = cli_now_ns();
        if ((r = vkvit_session_run(s))) FAIL(r);
        lat[n_lat++] = (double)(cli_now_ns() - t0) * 1e-6;
    }
    double wall_s = (double)(cli_now_ns() - start) * 1e-9;
    double cpu_ms = (cpu_seconds() - cpu0) * 1e3 / n_lat;
    /* Drift (before sorting): the median of the last 10 % of runs against the first 10 %. */
    uint32_t tenth = n_lat / 10 ? n_lat / 10 : 1;
    double drift_first = median_of(lat, tenth), drift_last = median_of(lat + n_lat - tenth, tenth);
    double drift_pct = 100.0 * (drift_last - drift_first) / drift_first;
    stats st = compute_stats(lat, n_lat);

    /* GPU time per node kind, from one profiled run. */
    if ((r = vkvit_session_run(sp))) FAIL(r);
    uint32_t n_nodes = 0;
    vkvit_session_profile(sp, NULL, 0, &n_nodes);
    prof = calloc(n_nodes ? n_nodes : 1, sizeof *prof);
    if (!prof) {
        r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        FAIL(r);
    }
    if ((r = vkvit_session_profile(sp, prof, n_nodes, &n_nodes))) FAIL(r);
    kind_time kinds[32];
    uint32_t n_kinds = 0;
    double gpu_total = 0;
    for (uint32_t i = 0; i < n_nodes; i++) {
        uint32_t k = 0;
        while (k < n_kinds && strcmp(kinds[k].kind, prof[i].kind)) k++;
        if (k == n_kinds && n_kinds < 32) kinds[n_kinds++] = (kind_time){prof[i].kind, 0, 0};
        if (k < n_kinds) {
            kinds[k].ms += prof[i].ms;
            kinds[k].nodes++;
        }
        gpu_total += prof[i].ms;
    }
    vkvit_model_info mi;
    vkvit_session_stats ss;
    vkvit_device_info dev;
    vkvit_ctx_device_info(ctx, &dev);
    vkvit_model_get_info(model, &mi);
    vkvit_session_get_stats(s, &ss);
    double ips = batch * 1e3 / st.p50;
    double gflops = (double)mi.flops * batch / (st.p50 * 1e6);
    if (json) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddItemToObject(doc, "model", cli_jstr(path));
        cJSON_AddStringToObject(doc, "architecture", mi.architecture);
        cJSON_AddStringToObject(doc, "flavour", mi.flavour);
        cJSON_AddItemToObject(doc, "device", cli_jstr(dev.name));
        cJSON_AddNumberToObject(doc, "batch", batch);
        cJSON_AddStringToObject(doc, "precision", cli_precision_name(precision));
        cJSON_AddNumberToObject(doc, "warmup", warmup);
        if (duration > 0) cJSON_AddItemToObject(doc, "duration_s", cli_jnum(duration));
        else cJSON_AddNullToObject(doc, "duration_s");
        cJSON_AddItemToObject(doc, "wall_s", cli_jnum(wall_s));
        add_stats_json(doc, &st);
        cJSON_AddItemToObject(doc, "images_per_s", cli_jnum(ips));
        cJSON_AddItemToObject(doc, "gflops", cli_jnum(gflops));
        cJSON_AddItemToObject(doc, "host_cpu_ms", cli_jnum(cpu_ms));
        cJSON_AddItemToObject(doc, "gpu_ms", cli_jnum(gpu_total));
        if (duration > 0) {
            cJSON *d = cJSON_AddObjectToObject(doc, "drift");
            cJSON_AddNumberToObject(d, "runs_each", tenth);
            cJSON_AddItemToObject(d, "first_median_ms", cli_jnum(drift_first));
            cJSON_AddItemToObject(d, "last_median_ms", cli_jnum(drift_last));
            cJSON_AddItemToObject(d, "percent", cli_jnum(drift_pct));
        } else {
            cJSON_AddNullToObject(doc, "drift");
        }
        cJSON_AddNumberToObject(doc, "arena_bytes", (double)ss.arena_bytes);
        cJSON_AddNumberToObject(doc, "sum_activation_bytes", (double)ss.sum_activation_bytes);
        cJSON_AddNumberToObject(doc, "largest_activation_bytes", (double)ss.largest_activation_bytes);
        cJSON_AddNumberToObject(doc, "weight_bytes", (double)ss.weight_bytes);
        cJSON_AddNumberToObject(doc, "nodes", ss.nodes);
        cJSON_AddNumberToObject(doc, "barriers", ss.barriers);
        cJSON_AddNumberToObject(doc, "pipelines", ss.pipelines);
        cJSON_AddNumberToObject(doc, "sub_batch", ss.sub_batch);
        cJSON *by = cJSON_AddObjectToObject(doc, "gpu_ms_by_kind");
        for (uint32_t k = 0; k < n_kinds; k++) cJSON_AddItemToObject(by, kinds[k].kind, cli_jnum(kinds[k].ms));
        rc = cli_json_print("bench", doc, 0);
    } else {
        printf("model       ");
        cli_put_clean(stdout, path, 300);
        printf(" (%s/%s), %.2f GFLOP per image\n", mi.architecture, mi.flavour, mi.flops * 1e-9);
        printf("device      ");
        cli_put_clean(stdout, dev.name, 256);
        printf("\nbatch       %u, %s, %u run%s in %.2f s after %u warm-up%s\n", batch,
               precision == VKVIT_PRECISION_FP16        ? "fp16 weights (fp32 activations)"
               : precision == VKVIT_PRECISION_FP16_MATH ? "fp16 weights and GEMM arithmetic (fp32 sums of 16-k chunks)"
                                                        : "fp32", st.n,
               st.n == 1 ? "" : "s", wall_s, warmup, cs.ndim ? ", random condition" : "");
        printf("latency     p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms, min %.3f ms, stddev %.3f ms\n",
               st.p50, st.p90, st.p99, st.max, st.min, st.stddev);
        printf("throughput  %.2f images/s, %.2f GFLOP/s (at the median)\n", ips, gflops);
        if (duration > 0)
            printf("drift       %+.1f %% (median of the last %u runs %.3f ms vs the first %u %.3f ms)\n", drift_pct,
                   tenth, drift_last, tenth, drift_first);
        printf("host CPU    %.3f ms per inference (submit + wait)\n", cpu_ms);
        printf("memory      arena %.2f MiB (sum of all intermediates %.2f MiB, largest %.2f MiB), weights %.2f MiB\n",
               ss.arena_bytes / 1048576.0, ss.sum_activation_bytes / 1048576.0,
               ss.largest_activation_bytes / 1048576.0, ss.weight_bytes / 1048576.0);
        printf("graph       %u dispatches, %u barriers, %u pipelines", ss.nodes, ss.barriers, ss.pipelines);
        if (ss.sub_batch < ss.batch)
            printf(", batch run as sub-batches of %u (device dispatch / storage-buffer limits)", ss.sub_batch);
        printf("\n");
        printf("GPU time by node kind (one profiled run, %.3f ms total):\n", gpu_total);
        for (uint32_t k = 0; k < n_kinds; k++)
            printf("  %-12s %9.3f ms  %5.1f %%  (%u nodes)\n", kinds[k].kind, kinds[k].ms,
                   gpu_total > 0 ? 100 * kinds[k].ms / gpu_total : 0.0, kinds[k].nodes);
    }
#undef FAIL
done:
    free(prof);
    free(lat);
    free(input);
    free(cond);
    vkvit_session_destroy(sp);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
    return cli_finish_stdout("bench", rc);
}

int vkvit_cli_bench(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "gemm")) return bench_gemm(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        model_usage(stdout); /* both forms, each with every flag and its default */
        printf("\n");
        bench_usage(stdout);
        return cli_finish_stdout("bench", CLI_OK);
    }
    return bench_model(argc, argv);
}
