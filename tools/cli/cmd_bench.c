/* vkvit bench: model benchmark (`vkvit bench gemm`, the GEMM micro-benchmark, is cmd_bench_gemm.c).
 *
 *   vkvit bench --model FILE [--batch N] [--precision fp32|fp16|fp16-math] [--repeat N | --duration S] [--warmup N]
 *               [--json]
 *
 * A model benchmark reports the latency distribution of vkvit_session_run (submit + wait: p50, p90, p99, max,
 * standard deviation; with --duration also the drift between the first and last 10 % of runs), throughput, the
 * host CPU time per inference, the GPU time per node kind from timestamp queries (a second, profiled session so
 * the timed runs carry no timestamps), and the arena / weight bytes. */
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

enum { OPT_REPEAT = 256, OPT_WARMUP, OPT_JSON, OPT_PRECISION, OPT_DEVICE, OPT_DURATION };

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
    int repeat_given = 0;
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
        case OPT_REPEAT: if (!cli_opt_u32(&o, 1, 100000, &repeat)) return CLI_USAGE; repeat_given = 1; break;
        case OPT_WARMUP: if (!cli_opt_u32(&o, 0, 1000, &warmup)) return CLI_USAGE; break;
        case OPT_DEVICE: device = o.arg; break;
        case OPT_JSON: json = 1; break;
        case OPT_DURATION: {
            char *end = NULL;
            duration = strtod(o.arg, &end);
            /* decimal seconds only (strtod also takes hex floats and "inf") */
            if (end == o.arg || *end || strpbrk(o.arg, "xXnN") || !(duration > 0 && duration <= 86400))
                return cli_usage_error("bench", "--duration wants seconds in (0, 86400], got '%s'", o.arg);
            break;
        }
        default: return CLI_USAGE;
        }
    }
    if (o.first_operand < argc) return cli_usage_error("bench", "unexpected argument '%s'", argv[o.first_operand]);
    if (!path) return cli_usage_error("bench", "--model FILE is required (or: vkvit bench gemm)");
    if (repeat_given && duration > 0)
        return cli_usage_error("bench", "--repeat N and --duration S exclude each other");
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
    double drift_first = cli_median(lat, tenth), drift_last = cli_median(lat + n_lat - tenth, tenth);
    double drift_pct = 100.0 * (drift_last - drift_first) / drift_first;
    cli_stats st = cli_stats_of(lat, n_lat);

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
        cli_stats_json(doc, &st);
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
    if (argc >= 2 && !strcmp(argv[1], "gemm")) return vkvit_cli_bench_gemm(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        model_usage(stdout); /* both forms, each with every flag and its default */
        printf("\n");
        vkvit_cli_bench_gemm_usage(stdout);
        return cli_finish_stdout("bench", CLI_OK);
    }
    return bench_model(argc, argv);
}
