/* vkvit bench: kernel micro-benchmarks measured with GPU timestamps (median of repeated runs).
 *
 *   vkvit bench gemm [--shape MxNxK]... [--repeat N] [--warmup N] [--json]
 *
 * Model benchmarks (`vkvit bench --model FILE`) arrive with the graph runtime. */
#include "cli.h"
#include "vk/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
               "  --json          one JSON object per shape instead of a table\n"
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
    vkvit__binding binds[4] = {{&a, 0, 0}, {&b, 0, 0}, {&bias, 0, 0}, {&d, 0, 0}};
    if ((res = vkvit__gemm_kernel_create(ctx, &cfg, false, "bench gemm", &k)) ||
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

int vkvit_cli_bench(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "gemm")) return bench_gemm(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: vkvit bench gemm [options]     (vkvit bench gemm --help)\n"
               "       model benchmarks (--model FILE) arrive with the graph runtime\n");
        return CLI_OK;
    }
    fprintf(stderr, "usage: vkvit bench gemm [options]   (see vkvit bench gemm --help)\n");
    return CLI_USAGE;
}
