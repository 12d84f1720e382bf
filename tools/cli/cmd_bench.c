/* vkvit bench: kernel micro-benchmarks measured with GPU timestamps (median of repeated runs).
 *
 *   vkvit bench gemm [--shape MxNxK]... [--repeat N] [--warmup N] [--json]
 *   vkvit bench --model FILE [--batch N] [--precision fp32|fp16] [--repeat N] [--warmup N] [--json]
 *
 * A model benchmark reports the median wall-clock latency of vkvit_session_run (submit + wait), throughput, the
 * host CPU time per inference, the GPU time per node kind from timestamp queries (a second, profiled session so
 * the timed runs carry no timestamps), and the arena / weight bytes. */
#include "cli.h"
#include "vk/kernels.h"

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

static void bench_usage(FILE *f) {
    fprintf(f, "usage: vkvit bench gemm [options]\n\n"
               "Times the fp32 GEMM kernel (nn.Linear layout, Y = X W^T) with GPU timestamps and prints the median\n"
               "time and GFLOP/s per shape.\n\n"
               "options:\n"
               "  --shape MxNxK   a shape to measure; repeatable (default: 1024x1024x1024, 201x1152x384,\n"
               "                  201x384x1536, 201x1536x384)\n"
               "  --repeat N      timed runs per shape (default 10)\n"
               "  --warmup N      untimed runs first (default 2)\n"
               "  --json          one JSON object per shape (default: a table)\n"
               "  --help          this text\n\n"
               "exit codes: 0 success, 1 usage error, 3 no Vulkan device, 4 runtime failure\n");
}

/* Times one shape: `repeat` dispatches in one command buffer, a timestamp before and after each, a barrier
 * between them (each run rewrites the same output). */
static vkvit_result time_gemm(vkvit_ctx *ctx, shape s, int warmup, int repeat, double *median_ms) {
    vkvit_result res;
    vkvit__buffer a = {0}, b = {0}, bias = {0}, d = {0};
    vkvit__kernel k = {0};
    vkvit__timer t = {0};
    VkDescriptorPool pool = VK_NULL_HANDLE;
    double *ns = NULL, *dt = NULL;
    size_t na = (size_t)s.M * s.K, nb = (size_t)s.N * s.K, nd = (size_t)s.M * s.N;
    float *host = malloc(VKVIT_MAX(na, nb) * 4);
    if (!host) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "bench: out of host memory");
    for (size_t i = 0; i < VKVIT_MAX(na, nb); i++) host[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;

    if ((res = vkvit__buffer_create(ctx, na * 4, VKVIT_MEM_DEVICE, "bench A", &a)) ||
        (res = vkvit__buffer_create(ctx, nb * 4, VKVIT_MEM_DEVICE, "bench B", &b)) ||
        (res = vkvit__buffer_create(ctx, (size_t)s.N * 4, VKVIT_MEM_DEVICE, "bench bias", &bias)) ||
        (res = vkvit__buffer_create(ctx, nd * 4, VKVIT_MEM_DEVICE, "bench D", &d)) ||
        (res = vkvit__buffer_upload(ctx, &a, 0, host, na * 4)) ||
        (res = vkvit__buffer_upload(ctx, &b, 0, host, nb * 4)) ||
        (res = vkvit__buffer_fill(ctx, &bias, 0, (size_t)s.N * 4, 0)))
        goto done;
    vkvit__gemm_config cfg = vkvit__gemm_pick(ctx, s.M, s.N, s.K);
    VkDescriptorSet set;
    vkvit__binding binds[6] = {{&a, 0, 0}, {&b, 0, 0}, {&bias, 0, 0}, {&d, 0, 0}, {&bias, 0, 0}, {&d, 0, 0}};
    if ((res = vkvit__gemm_kernel_create(ctx, &cfg, &(vkvit__gemm_epilogue){0}, "bench gemm", &k)) ||
        (res = vkvit__descriptor_pool_create(ctx, 1, &pool)) ||
        (res = vkvit__descriptor_set_create(ctx, pool, &k, binds, &set)) ||
        (res = vkvit__timer_create(ctx, 2u * (uint32_t)repeat, &t)))
        goto done;
    vkvit__gemm_push push = {.M = s.M, .N = s.N, .K = s.K, .stride_a = s.K, .stride_b = s.K, .stride_d = s.N};
    for (int pass = 0; pass < 2; pass++) { /* pass 0: warm-up, pass 1: timed */
        int n = pass ? repeat : warmup;
        if (n == 0) continue;
        VkCommandBuffer cmd;
        if ((res = vkvit__cmd_begin(ctx, &cmd)) != VKVIT_OK) goto done;
        if (pass) vkvit__cmd_timer_reset(ctx, cmd, &t);
        for (int i = 0; i < n; i++) {
            if (i) vkvit__cmd_barrier_compute(ctx, cmd, &d, 0, VK_WHOLE_SIZE);
            if (pass) vkvit__cmd_timestamp(ctx, cmd, &t, 2u * (uint32_t)i);
            vkvit__gemm_record(ctx, cmd, &k, &cfg, set, &push, 1);
            if (pass) vkvit__cmd_timestamp(ctx, cmd, &t, 2u * (uint32_t)i + 1);
        }
        if ((res = vkvit__cmd_submit_wait(ctx, cmd)) != VKVIT_OK) goto done;
    }
    ns = malloc(sizeof(double) * 2 * (size_t)repeat);
    dt = malloc(sizeof(double) * (size_t)repeat);
    if (!ns || !dt) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "bench: out of host memory");
        goto done;
    }
    if ((res = vkvit__timer_read_ns(ctx, &t, 2u * (uint32_t)repeat, ns)) != VKVIT_OK) goto done;
    for (int i = 0; i < repeat; i++) dt[i] = (ns[2 * i + 1] - ns[2 * i]) * 1e-6;
    qsort(dt, (size_t)repeat, sizeof *dt, cmp_double);
    *median_ms = dt[repeat / 2];
done:
    free(ns);
    free(dt);
    free(host);
    vkvit__timer_destroy(ctx, &t);
    if (pool) ctx->vk.vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkvit__kernel_destroy(ctx, &k);
    vkvit__buffer_destroy(ctx, &a);
    vkvit__buffer_destroy(ctx, &b);
    vkvit__buffer_destroy(ctx, &bias);
    vkvit__buffer_destroy(ctx, &d);
    return res;
}

static int bench_gemm(int argc, char **argv) {
    shape shapes[32];
    int n_shapes = 0, repeat = 10, warmup = 2, json = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            bench_usage(stdout);
            return CLI_OK;
        } else if (!strcmp(arg, "--json")) {
            json = 1;
        } else if ((!strcmp(arg, "--repeat") || !strcmp(arg, "--warmup")) && i + 1 < argc) {
            int v = atoi(argv[++i]);
            if (v < (arg[2] == 'r' ? 1 : 0) || v > 128) {
                fprintf(stderr, "vkvit bench: %s must be in [%d, 128]\n", arg, arg[2] == 'r' ? 1 : 0);
                return CLI_USAGE;
            }
            *(arg[2] == 'r' ? &repeat : &warmup) = v;
        } else if (!strcmp(arg, "--shape") && i + 1 < argc) {
            unsigned m, n, k;
            char extra;
            if (sscanf(argv[++i], "%ux%ux%u%c", &m, &n, &k, &extra) != 3 || !m || !n || !k || m > 65536 ||
                n > 65536 || k > 65536 || (uint64_t)m * k > (1u << 28) || (uint64_t)n * k > (1u << 28) ||
                (uint64_t)m * n > (1u << 28)) {
                fprintf(stderr, "vkvit bench: --shape wants MxNxK with each in [1, 65536] and each matrix under "
                                "2^28 elements, got '%s'\n", argv[i]);
                return CLI_USAGE;
            }
            if (n_shapes == (int)VKVIT_ARRAY_LEN(shapes)) {
                fprintf(stderr, "vkvit bench: at most %zu shapes\n", VKVIT_ARRAY_LEN(shapes));
                return CLI_USAGE;
            }
            shapes[n_shapes++] = (shape){m, n, k};
        } else {
            fprintf(stderr, "vkvit bench gemm: unknown or incomplete option '%s'\n", arg);
            bench_usage(stderr);
            return CLI_USAGE;
        }
    }
    if (n_shapes == 0) {
        static const shape defaults[] = {{1024, 1024, 1024}, {201, 1152, 384}, {201, 384, 1536}, {201, 1536, 384}};
        memcpy(shapes, defaults, sizeof defaults);
        n_shapes = (int)VKVIT_ARRAY_LEN(defaults);
    }
    vkvit_ctx *ctx = NULL;
    vkvit_result r = vkvit_ctx_create(&(vkvit_ctx_desc){.label = "vkvit bench"}, &ctx);
    if (r != VKVIT_OK) {
        fprintf(stderr, "vkvit bench: %s\n", vkvit_last_error());
        return vkvit_cli_exit_code(r);
    }
    if (!json) printf("device: %s\n%-22s %10s %10s\n", ctx->info.name, "shape (MxNxK)", "median ms", "GFLOP/s");
    int rc = CLI_OK;
    for (int i = 0; i < n_shapes; i++) {
        double ms = 0;
        r = time_gemm(ctx, shapes[i], warmup, repeat, &ms);
        if (r != VKVIT_OK) {
            fprintf(stderr, "vkvit bench: %s\n", vkvit_last_error());
            rc = vkvit_cli_exit_code(r);
            break;
        }
        double gflops = 2.0 * shapes[i].M * shapes[i].N * shapes[i].K / (ms * 1e6);
        char name[64];
        snprintf(name, sizeof name, "%ux%ux%u", shapes[i].M, shapes[i].N, shapes[i].K);
        if (json)
            printf("{\"op\": \"gemm_f32\", \"M\": %u, \"N\": %u, \"K\": %u, \"median_ms\": %.4f, \"gflops\": %.2f, "
                   "\"repeat\": %d, \"device\": \"%s\"}\n",
                   shapes[i].M, shapes[i].N, shapes[i].K, ms, gflops, repeat, ctx->info.name);
        else
            printf("%-22s %10.3f %10.2f\n", name, ms, gflops);
    }
    vkvit_ctx_destroy(ctx);
    return rc;
}

/* ------------------------------------------------------------------------------------------------------------
 * Model benchmark
 * ------------------------------------------------------------------------------------------------------------ */

static void model_usage(FILE *f) {
    fprintf(f, "usage: vkvit bench --model FILE [options]\n\n"
               "Runs the model repeatedly on random input and reports median latency, throughput, host CPU time per\n"
               "inference, GPU time per node kind (timestamp queries) and memory.\n\n"
               "options:\n"
               "  --model FILE        vkvit model file (required)\n"
               "  --batch N           images per inference (default 1)\n"
               "  --precision P       fp32 (default) or fp16\n"
               "  --repeat N          timed runs (default 10)\n"
               "  --warmup N          untimed runs first (default 2)\n"
               "  --device DEV        Vulkan device index or name substring (default: $VKVIT_DEVICE, else the\n"
               "                      first discrete, integrated, virtual, then CPU device)\n"
               "  --json              one JSON object (default: text)\n"
               "  --help              this text\n\n"
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

static int bench_model(int argc, char **argv) {
    const char *path = NULL, *device = NULL;
    int repeat = 10, warmup = 2, json = 0;
    uint32_t batch = 1;
    vkvit_precision precision = VKVIT_PRECISION_FP32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            model_usage(stdout);
            return CLI_OK;
        } else if (!strcmp(a, "--model") && i + 1 < argc) {
            path = argv[++i];
        } else if (!strcmp(a, "--device") && i + 1 < argc) {
            device = argv[++i];
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--batch") && i + 1 < argc) {
            long v = strtol(argv[++i], NULL, 10);
            if (v < 1 || v > 4096) {
                fprintf(stderr, "vkvit bench: --batch must be in [1, 4096]\n");
                return CLI_USAGE;
            }
            batch = (uint32_t)v;
        } else if (!strcmp(a, "--precision") && i + 1 < argc) {
            const char *v = argv[++i];
            if (!strcmp(v, "fp32")) precision = VKVIT_PRECISION_FP32;
            else if (!strcmp(v, "fp16")) precision = VKVIT_PRECISION_FP16;
            else {
                fprintf(stderr, "vkvit bench: --precision is fp32 or fp16, got '%s'\n", v);
                return CLI_USAGE;
            }
        } else if ((!strcmp(a, "--repeat") || !strcmp(a, "--warmup")) && i + 1 < argc) {
            int v = atoi(argv[++i]);
            if (v < (a[2] == 'r' ? 1 : 0) || v > 1000) {
                fprintf(stderr, "vkvit bench: %s must be in [%d, 1000]\n", a, a[2] == 'r' ? 1 : 0);
                return CLI_USAGE;
            }
            *(a[2] == 'r' ? &repeat : &warmup) = v;
        } else {
            fprintf(stderr, "vkvit bench: unknown or incomplete option '%s'\n", a);
            model_usage(stderr);
            return CLI_USAGE;
        }
    }
    if (!path) {
        fprintf(stderr, "vkvit bench: --model FILE is required\n");
        return CLI_USAGE;
    }
    int rc = CLI_OK;
    vkvit_result r;
    vkvit_ctx *ctx = NULL;
    vkvit_model *model = NULL;
    vkvit_session *s = NULL, *sp = NULL;
    float *input = NULL;
    double *lat = NULL;
    vkvit_profile_entry *prof = NULL;
#define FAIL(r_)                                                                                              \
    do {                                                                                                      \
        fprintf(stderr, "vkvit bench: %s\n", vkvit_last_error());                                             \
        rc = vkvit_cli_exit_code(r_);                                                                         \
        goto done;                                                                                            \
    } while (0)
    if ((r = vkvit_ctx_create(&(vkvit_ctx_desc){.label = "vkvit bench", .device = device}, &ctx))) FAIL(r);
    if ((r = vkvit_model_create(ctx, &(vkvit_model_desc){.path = path}, &model))) FAIL(r);
    vkvit_session_desc sd = {.label = "bench", .batch = batch, .precision = precision};
    if ((r = vkvit_session_create(model, &sd, &s))) FAIL(r);
    sd.profile = 1;
    sd.label = "bench (profiled)";
    if ((r = vkvit_session_create(model, &sd, &sp))) FAIL(r);

    vkvit_shape is = vkvit_session_input_shape(s);
    size_t n_in = (size_t)is.dims[0] * is.dims[1] * is.dims[2] * is.dims[3];
    input = malloc(n_in * sizeof(float));
    lat = malloc((size_t)repeat * sizeof(double));
    if (!input || !lat) {
        r = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        FAIL(r);
    }
    for (size_t i = 0; i < n_in; i++) input[i] = (float)((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
    if ((r = vkvit_session_set_input(s, input, n_in)) || (r = vkvit_session_set_input(sp, input, n_in))) FAIL(r);
    for (int i = 0; i < warmup; i++)
        if ((r = vkvit_session_run(s))) FAIL(r);
    double cpu0 = cpu_seconds();
    for (int i = 0; i < repeat; i++) {
        uint64_t t0 = vkvit__now_ns();
        if ((r = vkvit_session_run(s))) FAIL(r);
        lat[i] = (double)(vkvit__now_ns() - t0) * 1e-6;
    }
    double cpu_ms = (cpu_seconds() - cpu0) * 1e3 / repeat;
    qsort(lat, (size_t)repeat, sizeof *lat, cmp_double);
    double median = lat[repeat / 2];

    /* GPU time per node kind, from one profiled run. */
    if ((r = vkvit_session_run(sp))) FAIL(r);
    uint32_t n_nodes = 0;
    vkvit_session_profile(sp, NULL, 0, &n_nodes);
    prof = calloc(n_nodes ? n_nodes : 1, sizeof *prof);
    if (!prof) {
        r = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
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
    vkvit_session_stats st;
    vkvit_model_get_info(model, &mi);
    vkvit_session_get_stats(s, &st);
    double ips = batch * 1e3 / median;
    double gflops = (double)mi.flops * batch / (median * 1e6);
    if (json) {
        printf("{\"model\": \"%s\", \"architecture\": \"%s\", \"flavour\": \"%s\", \"device\": \"%s\", \"batch\": %u, "
               "\"precision\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f, \"images_per_s\": %.3f, "
               "\"gflops\": %.3f, \"host_cpu_ms\": %.4f, \"gpu_ms\": %.4f, \"arena_bytes\": %llu, "
               "\"sum_activation_bytes\": %llu, \"largest_activation_bytes\": %llu, \"weight_bytes\": %llu, "
               "\"nodes\": %u, \"barriers\": %u, \"pipelines\": %u, \"gpu_ms_by_kind\": {",
               path, mi.architecture, mi.flavour, ctx->info.name, batch, precision == VKVIT_PRECISION_FP16 ? "fp16" : "fp32",
               median, lat[0], ips, gflops, cpu_ms, gpu_total, (unsigned long long)st.arena_bytes,
               (unsigned long long)st.sum_activation_bytes, (unsigned long long)st.largest_activation_bytes,
               (unsigned long long)st.weight_bytes, st.nodes, st.barriers, st.pipelines);
        for (uint32_t k = 0; k < n_kinds; k++) printf("%s\"%s\": %.4f", k ? ", " : "", kinds[k].kind, kinds[k].ms);
        printf("}}\n");
    } else {
        printf("model       %s (%s/%s), %.2f GFLOP per image\n", path, mi.architecture, mi.flavour, mi.flops * 1e-9);
        printf("device      %s\n", ctx->info.name);
        printf("batch       %u, %s, %d runs after %d warm-up\n", batch,
               precision == VKVIT_PRECISION_FP16 ? "fp16 weights (fp32 activations)" : "fp32", repeat, warmup);
        printf("latency     median %.3f ms, min %.3f ms  (%.2f images/s, %.2f GFLOP/s)\n", median, lat[0], ips, gflops);
        printf("host CPU    %.3f ms per inference (submit + wait)\n", cpu_ms);
        printf("memory      arena %.2f MiB (sum of all intermediates %.2f MiB, largest %.2f MiB), weights %.2f MiB\n",
               st.arena_bytes / 1048576.0, st.sum_activation_bytes / 1048576.0,
               st.largest_activation_bytes / 1048576.0, st.weight_bytes / 1048576.0);
        printf("graph       %u dispatches, %u barriers, %u pipelines\n", st.nodes, st.barriers, st.pipelines);
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
    vkvit_session_destroy(sp);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
    return rc;
}

int vkvit_cli_bench(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "gemm")) return bench_gemm(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        model_usage(stdout); /* both forms, each with every flag and its default */
        printf("\n");
        bench_usage(stdout);
        return CLI_OK;
    }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--model")) return bench_model(argc, argv);
    fprintf(stderr, "usage: vkvit bench --model FILE [options] | vkvit bench gemm [options]   (--help for each)\n");
    return CLI_USAGE;
}
