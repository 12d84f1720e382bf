// SPDX-License-Identifier: Apache-2.0
/* vkvit bench gemm: the GEMM micro-benchmark per shape (vkvit_bench_gemm: the session's GEMM node, GPU timestamps
 * around each run, the result checked against a plain-C reference).
 *
 *   vkvit bench gemm [--shape MxNxK]... [--precision P] [--repeat N] [--warmup N] [--config CONF]
 *                    [--versus CONF [--rounds N]] [--device DEV] [--json]
 *
 * --config times another kernel, tile or CPU-kernel path than the device's own (kernel tuning; sessions always run
 * the automatic choice). --versus times two configurations alternately within this one process, round by round
 * (A B, B A, A B, ...), and reports the median of the per-round ratios: on a host whose speed drifts between
 * processes (shared caches, other tenants), two separate runs cannot show a 10 % difference, adjacent calls can. */
#include "bench_stats.h"
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
    uint32_t M, N, K;
} shape;

/* A kernel configuration: the tuning fields of vkvit_gemm_bench_desc, and the text it came from. */
typedef struct gemm_config {
    vkvit_gemm_kernel kernel;
    vkvit_gemm_tile tile;
    uint32_t flags;
    const char *text;
} gemm_config;

#define MAX_ROUNDS 100u

/* The library's name of a kernel (vkvit_gemm_kernel_name, the one table of them), "?" for none. */
static const char *kernel_name(vkvit_gemm_kernel k) {
    const char *name = vkvit_gemm_kernel_name(k);
    return name ? name : "?";
}

void vkvit_cli_bench_gemm_usage(FILE *f) {
    fprintf(f, "usage: vkvit bench gemm [options]\n\n"
               "Times the GEMM kernel (nn.Linear layout, Y = X W^T) with GPU timestamps and prints, per shape,\n"
               "the median (p50), p90, p99 and maximum time, the standard deviation, GFLOP/s at the median and\n"
               "the kernel that ran (its tile bm x bn x bk / tm x tn, and on CPU devices which paths it took).\n"
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
               "  --config CONF   kernel tuning: the kernel, tile and paths to time instead of the device's own\n"
               "                  (default: auto). CONF is 'auto' or comma-separated items: kernel=auto|cpu|shared|\n"
               "                  coopmat, bm=N, bn=N, bk=N, tm=N, tn=N (0: automatic), scalar-loads (CPU kernel:\n"
               "                  no vec4 loads), single-stores (CPU kernel: no 64-bit pair stores of D), generic\n"
               "                  (CPU kernel: the generic shader, not a build-time unrolled variant), running-sums\n"
               "                  (CPU kernel: the running sums between K chunks even where K fits one chunk).\n"
               "                  The tile rules of each kernel are in include/vkvit.h (vkvit_gemm_tile).\n"
               "  --versus CONF   time the --config (A) and CONF (B) alternately, --rounds rounds of --repeat runs\n"
               "                  each (A B, then B A, ...), and print both medians over the rounds and the median\n"
               "                  of the per-round ratios B / A with its 25th-75th percentile range\n"
               "  --rounds N      rounds of --versus, in pairs (A B, B A): even, default 8, at most 100; --versus\n"
               "                  also needs --warmup of at least 1 (drivers compile a pipeline at its first run)\n"
               "  --device DEV    Vulkan device index or name substring (default: $VKVIT_DEVICE, else the first\n"
               "                  discrete, integrated, virtual, then CPU device)\n"
               "  --json          one JSON object per shape (default: a table)\n"
               "  -h, --help      this text\n\n"
               "examples:\n"
               "  vkvit bench gemm --shape 201x1536x384 --versus bm=128\n"
               "  vkvit bench gemm --shape 256x256x64 --versus single-stores --rounds 12     (CPU devices)\n"
               "  vkvit bench gemm --config kernel=shared,bm=128,bn=128,bk=16,tm=8,tn=8 --shape 4096x4096x4096\n\n"
               "exit codes: 0 success, 1 usage error (a tile its kernel refuses included), 2 a precision or\n"
               "kernel the device does not run, 3 no Vulkan device, 4 runtime failure (a wrong result included)\n");
}

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

/* Prints a usage error about a CONF; returns 0 (parse_config's failure). */
static int conf_error(const char *fmt, ...) CLI_PRINTF(1, 2);
static int conf_error(const char *fmt, ...) {
    char sentence[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sentence, sizeof sentence, fmt, ap);
    va_end(ap);
    cli_usage_error("bench gemm", "%s", sentence);
    return 0;
}

/* CONF of --config / --versus (see the usage). Whether a tile suits its kernel is the library's rule: a bad one
 * fails the command with the library's sentence. Returns 0 after a usage error naming the item. */
static int parse_config(const char *option, const char *text, gemm_config *out) {
    static const char *const grammar = "'auto' or comma-separated items: kernel=auto|cpu|shared|coopmat, bm=N, "
                                       "bn=N, bk=N, tm=N, tn=N, scalar-loads, single-stores, generic, "
                                       "running-sums";
    *out = (gemm_config){.text = text};
    char buf[256];
    const size_t len = strlen(text);
    if (len == 0 || len >= sizeof buf || text[0] == ',' || text[len - 1] == ',' || strstr(text, ",,"))
        return conf_error("%s wants %s (at most %zu characters), got '%s'", option, grammar, sizeof buf - 1, text);
    if (!strcmp(text, "auto")) return 1;
    memcpy(buf, text, len + 1);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        const char *value = eq ? eq + 1 : NULL;
        if (eq) *eq = '\0';
        uint32_t *field = !eq                   ? NULL
                          : !strcmp(item, "bm") ? &out->tile.bm
                          : !strcmp(item, "bn") ? &out->tile.bn
                          : !strcmp(item, "bk") ? &out->tile.bk
                          : !strcmp(item, "tm") ? &out->tile.tm
                          : !strcmp(item, "tn") ? &out->tile.tn
                                                : NULL;
        if (!eq && !strcmp(item, "auto")) {
            /* nothing: the automatic values stay */
        } else if (!eq && !strcmp(item, "scalar-loads")) {
            out->flags |= VKVIT_GEMM_BENCH_SCALAR_LOADS;
        } else if (!eq && !strcmp(item, "single-stores")) {
            out->flags |= VKVIT_GEMM_BENCH_SINGLE_STORES;
        } else if (!eq && !strcmp(item, "generic")) {
            out->flags |= VKVIT_GEMM_BENCH_GENERIC;
        } else if (!eq && !strcmp(item, "running-sums")) {
            out->flags |= VKVIT_GEMM_BENCH_RUNNING_SUMS;
        } else if (eq && !strcmp(item, "kernel")) {
            int k = -1;
            for (int i = 0; vkvit_gemm_kernel_name((vkvit_gemm_kernel)i); i++)
                if (!strcmp(value, vkvit_gemm_kernel_name((vkvit_gemm_kernel)i))) k = i;
            if (k < 0)
                return conf_error("%s: kernel=%s: not auto, cpu, shared or coopmat", option, value);
            out->kernel = (vkvit_gemm_kernel)k;
        } else if (field) {
            if (!cli_parse_u32(value, 0, 4096, field))
                return conf_error("%s: %s=%s: a number in [0, 4096] (0: automatic)", option, item, value);
        } else {
            if (eq) *eq = '=';
            return conf_error("%s: unknown item '%s' (CONF: %s)", option, item, grammar);
        }
    }
    return 1;
}

/* The kernel that ran: "cpu 256x64x64/1x8 texel vec4 pairs", "cpu 256x56x64/1x7 texel vec4 pairs one-chunk",
 * "shared 64x64x16/4x4", "coopmat 64x64x32". */
static void describe_kernel(const vkvit_gemm_bench_result *r, char *buf, size_t cap) {
    const vkvit_gemm_tile *t = &r->tile;
    const char *name = kernel_name(r->kernel);
    int n = snprintf(buf, cap, "%s %ux%ux%u", name, t->bm, t->bn, t->bk);
    if (n >= 0 && (size_t)n < cap && r->kernel != VKVIT_GEMM_KERNEL_COOPMAT)
        n += snprintf(buf + n, cap - n, "/%ux%u", t->tm, t->tn);
    if (n >= 0 && (size_t)n < cap && r->kernel == VKVIT_GEMM_KERNEL_CPU)
        snprintf(buf + n, cap - n, "%s%s%s%s%s", r->texel_reads ? " texel" : "", r->vec4_loads ? " vec4" : " scalar",
                 r->pair_stores ? " pairs" : "", r->unrolled ? " unrolled" : "", r->one_chunk ? " one-chunk" : "");
}

static void add_kernel_json(cJSON *o, const gemm_config *cfg, const vkvit_gemm_bench_result *r) {
    cJSON_AddStringToObject(o, "config", cfg->text);
    cJSON_AddStringToObject(o, "kernel", kernel_name(r->kernel));
    cJSON *t = cJSON_AddObjectToObject(o, "tile");
    if (t) {
        cJSON_AddNumberToObject(t, "bm", r->tile.bm);
        cJSON_AddNumberToObject(t, "bn", r->tile.bn);
        cJSON_AddNumberToObject(t, "bk", r->tile.bk);
        cJSON_AddNumberToObject(t, "tm", r->tile.tm);
        cJSON_AddNumberToObject(t, "tn", r->tile.tn);
    }
    cJSON_AddBoolToObject(o, "texel_reads", r->texel_reads);
    cJSON_AddBoolToObject(o, "vec4_loads", r->vec4_loads);
    cJSON_AddBoolToObject(o, "pair_stores", r->pair_stores);
    cJSON_AddBoolToObject(o, "unrolled", r->unrolled);
    cJSON_AddBoolToObject(o, "one_chunk", r->one_chunk);
}

/* Times one shape in one configuration. A result outside the reference's tolerance fails the command: a fast
 * wrong kernel is no benchmark. */
static vkvit_result time_gemm(vkvit_ctx *ctx, shape s, vkvit_precision precision, uint32_t warmup, uint32_t repeat,
                              const gemm_config *cfg, cli_stats *out, vkvit_gemm_bench_result *res) {
    vkvit_gemm_bench_desc d = {.m = s.M, .n = s.N, .k = s.K, .repeat = repeat, .warmup = warmup, .seed = 1,
                               .precision = precision, .kernel = cfg->kernel, .tile = cfg->tile,
                               .flags = cfg->flags};
    vkvit_result r = vkvit_bench_gemm(ctx, &d, res);
    if (r != VKVIT_OK) return cli_error(r, "gemm %ux%ux%u, config '%s': %s", s.M, s.N, s.K, cfg->text,
                                        vkvit_last_error());
    if (res->mismatches)
        return cli_error(VKVIT_ERROR_VULKAN, "gemm %ux%ux%u (config '%s') gives wrong results on this device: %llu of "
                         "%llu checked elements differ from the plain-C reference by more than its tolerance "
                         "(largest relative error %.3g)", s.M, s.N, s.K, cfg->text,
                         (unsigned long long)res->mismatches, (unsigned long long)res->checked, res->max_error);
    *out = cli_stats_of(res->ms, res->runs);
    return VKVIT_OK;
}

static double gflops_at(shape s, double ms) { return 2.0 * s.M * s.N * s.K / (ms * 1e6); }

static const char *op_name(vkvit_precision precision) {
    return precision == VKVIT_PRECISION_FP16 ? "gemm_w16" : precision == VKVIT_PRECISION_FP16_MATH ? "gemm_f16"
                                                                                                   : "gemm_f32";
}

/* The fields every JSON object of this command starts with: op, precision, M, N, K and the device. */
static cJSON *shape_doc(vkvit_ctx *ctx, shape s, vkvit_precision precision) {
    vkvit_device_info dev;
    vkvit_ctx_device_info(ctx, &dev);
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "op", op_name(precision));
    cJSON_AddStringToObject(doc, "precision", cli_precision_name(precision));
    cJSON_AddNumberToObject(doc, "M", s.M);
    cJSON_AddNumberToObject(doc, "N", s.N);
    cJSON_AddNumberToObject(doc, "K", s.K);
    cJSON_AddItemToObject(doc, "device", cli_jstr(dev.name));
    return doc;
}

/* The table's header, printed with its first row, so that a configuration the library refuses fails with its
 * sentence alone. */
typedef struct table_header {
    int due;                                /* not printed yet (never with --json) */
    const char *device;
    vkvit_precision precision;
    const gemm_config *a, *b;               /* b: the --versus configuration, else NULL */
    uint32_t rounds, repeat;
} table_header;

static void put_header(table_header *h) {
    if (!h->due) return;
    h->due = 0;
    printf("device: ");
    cli_put_clean(stdout, h->device, 256);
    if (h->b)
        printf(", %s GEMM; A '%s' against B '%s', %u rounds of %u runs each, alternated (A B, B A, ...)\n"
               "%-22s %10s %10s %8s  %11s  %s\n", cli_precision_name(h->precision), h->a->text, h->b->text,
               h->rounds, h->repeat, "shape (MxNxK)", "A GFLOP/s", "B GFLOP/s", "B / A", "p25-p75",
               "kernels A | B");
    else
        printf(", %s GEMM\n%-22s %9s %9s %9s %9s %9s %10s  %s\n", cli_precision_name(h->precision), "shape (MxNxK)",
               "p50 ms", "p90 ms", "p99 ms", "max ms", "stddev", "GFLOP/s", "kernel");
}

/* One shape, one configuration: a table row or a JSON object. */
static vkvit_result bench_one(vkvit_ctx *ctx, shape s, vkvit_precision precision, uint32_t warmup, uint32_t repeat,
                              const gemm_config *cfg, int json, table_header *header, int *rc) {
    cli_stats st;
    vkvit_gemm_bench_result br;
    vkvit_result r = time_gemm(ctx, s, precision, warmup, repeat, cfg, &st, &br);
    if (r != VKVIT_OK) return r;
    const double gflops = gflops_at(s, st.p50);
    char name[64], kernel[96];
    snprintf(name, sizeof name, "%ux%ux%u", s.M, s.N, s.K);
    describe_kernel(&br, kernel, sizeof kernel);
    if (!json) {
        put_header(header);
        printf("%-22s %9.3f %9.3f %9.3f %9.3f %9.3f %10.2f  %s\n", name, st.p50, st.p90, st.p99, st.max, st.stddev,
               gflops, kernel);
        return VKVIT_OK;
    }
    cJSON *doc = shape_doc(ctx, s, precision);
    cli_stats_json(doc, &st);
    cJSON_AddItemToObject(doc, "gflops", cli_jnum(gflops));
    cJSON_AddNumberToObject(doc, "repeat", repeat);
    cJSON_AddNumberToObject(doc, "checked_elements", (double)br.checked);
    cJSON_AddItemToObject(doc, "max_relative_diff", cli_jnum(br.max_error));
    add_kernel_json(doc, cfg, &br);
    /* fp16-math GEMMs on cooperative matrices: in use after the ctx's first-use self-check (vkvit.h) */
    cJSON_AddBoolToObject(doc, "cooperative_matrix", br.kernel == VKVIT_GEMM_KERNEL_COOPMAT);
    *rc = cli_json_print("bench", doc, 0);
    return VKVIT_OK;
}

/* One shape, A against B: `rounds` rounds, each timing both (A B in even rounds, B A in odd ones, so a drift during
 * a round favours neither), GFLOP/s at each call's median. Reports both medians over the rounds and the median of
 * the per-round ratios B / A with its 25th and 75th percentiles. */
static vkvit_result bench_versus(vkvit_ctx *ctx, shape s, vkvit_precision precision, uint32_t warmup, uint32_t repeat,
                                 const gemm_config *a, const gemm_config *b, uint32_t rounds, int json,
                                 table_header *header, int *rc) {
    double ga[MAX_ROUNDS], gb[MAX_ROUNDS], ratio[MAX_ROUNDS];
    vkvit_gemm_bench_result ra, rb;
    for (uint32_t i = 0; i < rounds; i++) {
        for (int side = 0; side < 2; side++) {
            const bool run_a = (side == 0) == (i % 2 == 0);
            cli_stats st;
            vkvit_gemm_bench_result *res = run_a ? &ra : &rb;
            vkvit_result r = time_gemm(ctx, s, precision, warmup, repeat, run_a ? a : b, &st, res);
            if (r != VKVIT_OK) return r;
            (run_a ? ga : gb)[i] = res->gflops; /* at the call's median (the mean of the middle two for even runs) */
        }
        ratio[i] = gb[i] / ga[i];
    }
    const double med_a = cli_median(ga, rounds), med_b = cli_median(gb, rounds);
    const double med_ratio = cli_median(ratio, rounds);
    double sorted[MAX_ROUNDS];
    memcpy(sorted, ratio, rounds * sizeof *sorted);
    cli_sort(sorted, rounds);
    const double p25 = cli_percentile(sorted, rounds, 25), p75 = cli_percentile(sorted, rounds, 75);
    char name[64], ka[96], kb[96];
    snprintf(name, sizeof name, "%ux%ux%u", s.M, s.N, s.K);
    describe_kernel(&ra, ka, sizeof ka);
    describe_kernel(&rb, kb, sizeof kb);
    if (!json) {
        put_header(header);
        printf("%-22s %10.2f %10.2f %8.3f  %5.3f-%5.3f  %s | %s\n", name, med_a, med_b, med_ratio, p25, p75, ka, kb);
        return VKVIT_OK;
    }
    cJSON *doc = shape_doc(ctx, s, precision);
    cJSON_AddNumberToObject(doc, "rounds", rounds);
    cJSON_AddNumberToObject(doc, "repeat", repeat);
    const struct {
        const char *key;
        const gemm_config *cfg;
        const vkvit_gemm_bench_result *res;
        const double *gflops;
        double median;
    } sides[2] = {{"a", a, &ra, ga, med_a}, {"b", b, &rb, gb, med_b}};
    for (int i = 0; i < 2; i++) {
        cJSON *o = cJSON_AddObjectToObject(doc, sides[i].key);
        if (!o) continue;
        add_kernel_json(o, sides[i].cfg, sides[i].res);
        cJSON_AddItemToObject(o, "gflops", cli_jnum(sides[i].median));
        cJSON *list = cJSON_AddArrayToObject(o, "gflops_per_round");
        for (uint32_t r = 0; list && r < rounds; r++) cJSON_AddItemToArray(list, cli_jnum(sides[i].gflops[r]));
    }
    cJSON_AddItemToObject(doc, "ratio", cli_jnum(med_ratio));
    cJSON_AddItemToObject(doc, "ratio_p25", cli_jnum(p25));
    cJSON_AddItemToObject(doc, "ratio_p75", cli_jnum(p75));
    *rc = cli_json_print("bench", doc, 0);
    return VKVIT_OK;
}

enum { OPT_SHAPE = 256, OPT_REPEAT, OPT_WARMUP, OPT_JSON, OPT_PRECISION, OPT_CONFIG, OPT_VERSUS, OPT_ROUNDS,
       OPT_DEVICE };

typedef struct gemm_args {
    vkvit_precision precision;
    shape shapes[32];
    int n_shapes, json, versus;
    uint32_t repeat, warmup, rounds;
    gemm_config config, other;              /* --config; --versus */
    const char *device;
} gemm_args;

/* The options' combinations, and the default shapes when none was given. Returns CLI_OK or CLI_USAGE. */
static int check_args(gemm_args *a, int rounds_given) {
    if (rounds_given && !a->versus) return cli_usage_error("bench gemm", "--rounds goes with --versus");
    if (a->versus && a->rounds % 2)
        return cli_usage_error("bench gemm", "--rounds %u: --versus runs rounds in pairs (A B, then B A), so an even "
                               "number", a->rounds);
    if (a->versus && a->warmup == 0)
        return cli_usage_error("bench gemm", "--versus needs --warmup of at least 1: a driver may compile the pipeline "
                               "in the first run, and each configuration is built afresh every round");
    if (a->n_shapes == 0) {
        static const shape defaults[] = {{1024, 1024, 1024}, {201, 1152, 384}, {201, 384, 1536}, {201, 1536, 384}};
        memcpy(a->shapes, defaults, sizeof defaults);
        a->n_shapes = (int)CLI_ARRAY_LEN(defaults);
    }
    return CLI_OK;
}

/* Returns CLI_OK, -1 after --help, or the exit code after printing the reason. */
static int parse_args(int argc, char **argv, gemm_args *a) {
    static const struct option longopts[] = {
        {"shape", required_argument, NULL, OPT_SHAPE},   {"repeat", required_argument, NULL, OPT_REPEAT},
        {"warmup", required_argument, NULL, OPT_WARMUP}, {"json", no_argument, NULL, OPT_JSON},
        {"precision", required_argument, NULL, OPT_PRECISION}, {"config", required_argument, NULL, OPT_CONFIG},
        {"versus", required_argument, NULL, OPT_VERSUS}, {"rounds", required_argument, NULL, OPT_ROUNDS},
        {"device", required_argument, NULL, OPT_DEVICE}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    *a = (gemm_args){.precision = VKVIT_PRECISION_FP32, .repeat = 10, .warmup = 2, .rounds = 8,
                     .config = {.text = "auto"}, .other = {.text = "auto"}};
    int rounds_given = 0;
    cli_opts o;
    cli_opts_init(&o, "bench gemm", argc, argv, "h", longopts);
    for (int c; (c = cli_opts_next(&o)) != -1;) {
        switch (c) {
        case 'h': vkvit_cli_bench_gemm_usage(stdout); return -1;
        case OPT_JSON: a->json = 1; break;
        case OPT_PRECISION: if (!cli_opt_precision(&o, &a->precision)) return CLI_USAGE; break;
        case OPT_REPEAT: if (!cli_opt_u32(&o, 1, 128, &a->repeat)) return CLI_USAGE; break;
        case OPT_WARMUP: if (!cli_opt_u32(&o, 0, 128, &a->warmup)) return CLI_USAGE; break;
        case OPT_ROUNDS: if (!cli_opt_u32(&o, 1, MAX_ROUNDS, &a->rounds)) return CLI_USAGE; rounds_given = 1; break;
        case OPT_CONFIG: if (!parse_config("--config", o.arg, &a->config)) return CLI_USAGE; break;
        case OPT_VERSUS: if (!parse_config("--versus", o.arg, &a->other)) return CLI_USAGE; a->versus = 1; break;
        case OPT_DEVICE: a->device = o.arg; break;
        case OPT_SHAPE:
            if (a->n_shapes == (int)CLI_ARRAY_LEN(a->shapes))
                return cli_usage_error("bench gemm", "at most %zu --shape options", CLI_ARRAY_LEN(a->shapes));
            if (!parse_shape(o.arg, &a->shapes[a->n_shapes]))
                return cli_usage_error("bench gemm", "--shape wants MxNxK with each in [1, 65536] and each matrix "
                                       "under 2^28 elements, got '%s'", o.arg);
            a->n_shapes++;
            break;
        default: return CLI_USAGE;
        }
    }
    if (o.first_operand < argc)
        return cli_usage_error("bench gemm", "unexpected argument '%s'", argv[o.first_operand]);
    return check_args(a, rounds_given);
}

int vkvit_cli_bench_gemm(int argc, char **argv) {
    gemm_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_OK) return rc < 0 ? cli_finish_stdout("bench", CLI_OK) : rc;
    vkvit_ctx *ctx = NULL;
    vkvit_ctx_desc cd = {.device = a.device, .log = cli_log_stderr, .log_user = "vkvit bench gemm"};
    vkvit_result r = vkvit_ctx_create(&cd, &ctx);
    if (r != VKVIT_OK) return cli_fail("bench gemm", r);
    vkvit_device_info dev;
    vkvit_ctx_device_info(ctx, &dev);
    table_header header = {.due = !a.json, .device = dev.name, .precision = a.precision, .a = &a.config,
                           .b = a.versus ? &a.other : NULL, .rounds = a.rounds, .repeat = a.repeat};
    for (int i = 0; i < a.n_shapes && rc == CLI_OK && !cli_stdout_failed(); i++) {
        r = a.versus ? bench_versus(ctx, a.shapes[i], a.precision, a.warmup, a.repeat, &a.config, &a.other, a.rounds,
                                    a.json, &header, &rc)
                     : bench_one(ctx, a.shapes[i], a.precision, a.warmup, a.repeat, &a.config, a.json, &header, &rc);
        if (r != VKVIT_OK) rc = cli_fail("bench gemm", r);
        cli_flush_stdout();
    }
    vkvit_ctx_destroy(ctx);
    return cli_finish_stdout("bench", rc);
}
