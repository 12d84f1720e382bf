// SPDX-License-Identifier: Apache-2.0
/* vkvit inspect FILE [--json]: what a model file holds — architecture, shapes, parameters, FLOPs, classes,
 * preprocessing, dtypes. Everything comes from vkvit_describe_model (include/vkvit.h), which reads and validates
 * the whole file without a device; --json prints its document as it is, the text is rendered from it and its
 * "summary" (vkvit_describe_model_ex), so this file knows no architecture. */
#include "cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW_LABELS 5

static void usage(FILE *f) {
    fprintf(f,
            "usage: vkvit inspect FILE [--json]\n"
            "\n"
            "Reads a vkvit model file (safetensors + `vkvit` metadata, docs/model-format.md), checks its header\n"
            "and every tensor's dtype, shape and byte range (the weight values are checked when a model is loaded)\n"
            "and describes it: architecture and flavour, input size, patch grid and token count, width / depth /\n"
            "heads, parameter count, FLOPs per image (the seed flop_count formulas, as docs/model-format.md lists\n"
            "them per architecture), classes and labels (the first %d in text, all in JSON), preprocessing\n"
            "(docs/preprocessing.md), the dtype mix and the file size. No GPU is used. A file that is not a\n"
            "model is named by what it looks like (an image, a PyTorch checkpoint, ...).\n"
            "\n"
            "options:\n"
            "  --json       print one JSON object instead of text (default: text)\n"
            "  -h, --help   this help\n"
            "\n"
            "exit codes: 0 success, 1 usage error, 2 bad, unreadable or unsupported model file (the reason is one\n"
            "sentence on stderr), 4 out of memory, an internal inconsistency, or the output could not be written\n",
            SHOW_LABELS);
}

/* 9412799616 -> "9,412,799,616" */
static const char *thousands(uint64_t v, char *buf, size_t cap) {
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    size_t at = 0;
    for (int i = 0; i < n && at + 2 < cap; i++) {
        if (i > 0 && (n - i) % 3 == 0) buf[at++] = ',';
        buf[at++] = digits[i];
    }
    buf[at] = '\0';
    return buf;
}

/* Field access on the description (a missing field reads as 0 / "" / false: the document is vkvit's own). */
static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}
static uint32_t u32(const cJSON *o, const char *key) { return (uint32_t)num(o, key); }
static uint64_t u64(const cJSON *o, const char *key) { return (uint64_t)num(o, key); }
static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}
static const cJSON *obj(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }
static uint32_t at(const cJSON *o, const char *key, int i) {
    const cJSON *v = cJSON_GetArrayItem(obj(o, key), i);
    return cJSON_IsNumber(v) ? (uint32_t)v->valuedouble : 0;
}

/* "FLOPs ... per image (2.35 GFLOPs; attention 1,234 and block 5,678 per block)": the per-block terms are those the
 * description names (summary.flops_per_block). */
static void print_flops(const cJSON *d) {
    char a[32], b[32];
    const cJSON *fb = obj(d, "flops_breakdown");
    const uint64_t total = u64(d, "flops");
    const double f = (double)total;
    const char *unit = f >= 1e9 ? "GFLOPs" : f >= 1e6 ? "MFLOPs" : "kFLOPs";
    const double scaled = f >= 1e9 ? f * 1e-9 : f >= 1e6 ? f * 1e-6 : f * 1e-3;
    printf("FLOPs          %s per image (%.2f %s; ", thousands(total, a, sizeof a), scaled, unit);
    const cJSON *term;
    int i = 0;
    cJSON_ArrayForEach(term, obj(obj(d, "summary"), "flops_per_block"))
        printf("%s%s %s", i++ ? ", " : "", str(term, "name"), thousands(u64(fb, str(term, "key")), b, sizeof b));
    printf(" and block %s per block)\n", thousands(u64(fb, "block"), b, sizeof b));
}

static void print_labels(const cJSON *d) {
    const cJSON *labels = obj(d, "labels");
    int n_labels = cJSON_GetArraySize(labels);
    printf("classes        %u", u32(d, "num_classes"));
    if (n_labels) {
        printf(": ");
        for (int i = 0; i < n_labels && i < SHOW_LABELS; i++) {
            const cJSON *l = cJSON_GetArrayItem(labels, i);
            if (i) printf(", ");
            cli_put_clean(stdout, cJSON_IsString(l) ? l->valuestring : "", 40);
        }
        if (n_labels > SHOW_LABELS) printf(", ... (--json lists all %d)", n_labels);
    } else {
        printf(" (no labels in the file)");
    }
    printf("\n");
}

static void print_text(const cJSON *d) {
    char a[32];
    printf("file           ");
    cli_put_clean(stdout, str(d, "file"), 300);
    printf(" (%s bytes, format_version %u)\n", thousands(u64(d, "file_size"), a, sizeof a), u32(d, "format_version"));
    printf("name           ");
    cli_put_clean(stdout, str(d, "name")[0] ? str(d, "name") : "(none)", 120);
    printf("\n");
    const cJSON *line; /* the architecture's own lines, as the library words them */
    cJSON_ArrayForEach(line, obj(obj(d, "summary"), "lines")) {
        printf("%-15s", str(line, "key"));
        cli_put_clean(stdout, str(line, "text"), 1024);
        printf("\n");
    }
    printf("parameters     %s\n", thousands(u64(d, "params"), a, sizeof a));
    print_flops(d);
    print_labels(d);
    const cJSON *pp = obj(d, "preprocess"), *mean = obj(pp, "mean"), *std = obj(pp, "std");
#define AT(a_, i_) (cJSON_GetArrayItem(a_, i_) ? cJSON_GetArrayItem(a_, i_)->valuedouble : 0.0)
    printf("preprocess     shorter side -> %u (%s), centre crop %u x %u, mean [%.4g, %.4g, %.4g], std [%.4g, %.4g, "
           "%.4g]\n", u32(pp, "resize_shorter"), str(pp, "interpolation"), at(pp, "image_size", 0),
           at(pp, "image_size", 1), AT(mean, 0), AT(mean, 1), AT(mean, 2), AT(std, 0), AT(std, 1), AT(std, 2));
#undef AT
    const cJSON *t = obj(d, "tensors");
    printf("tensors        %u (", u32(t, "count"));
    bool first = true;
    static const char *const dtypes[] = {"F32", "F16", "BF16"};
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
        if (!u32(t, dtypes[k])) continue;
        printf("%s%u %s", first ? "" : ", ", u32(t, dtypes[k]), dtypes[k]);
        first = false;
    }
    printf("), %s bytes of data\n", thousands(u64(t, "data_bytes"), a, sizeof a));
}

enum { OPT_JSON = 256 };

int vkvit_cli_inspect(int argc, char **argv) {
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    bool json = false;
    cli_opts o;
    cli_opts_init(&o, "inspect", argc, argv, "h", longopts);
    for (int c; (c = cli_opts_next(&o)) != -1;) {
        switch (c) {
        case 'h': usage(stdout); return cli_finish_stdout("inspect", CLI_OK);
        case OPT_JSON: json = true; break;
        default: return CLI_USAGE;
        }
    }
    if (o.first_operand == argc) return cli_usage_error("inspect", "no FILE given");
    if (argc - o.first_operand > 1)
        return cli_usage_error("inspect", "one FILE only (got '%s' and '%s')", argv[o.first_operand],
                               argv[o.first_operand + 1]);
    const char *path = argv[o.first_operand];
    if (cli_sniff_model(path) != VKVIT_OK) {
        cli_print_error("inspect", cli_last_error());
        return CLI_BAD_INPUT;
    }
    char *text = NULL; /* the text is rendered from the document and its summary (the architecture's words) */
    vkvit_result r = vkvit_describe_model_ex(&(vkvit_model_desc){.path = path}, json ? 0 : VKVIT_DESCRIBE_SUMMARY, &text);
    if (r != VKVIT_OK) {
        cli_print_error("inspect", cli_last_error());
        return r == VKVIT_ERROR_OUT_OF_HOST_MEMORY ? CLI_FAILURE : CLI_BAD_INPUT;
    }
    int rc = CLI_OK;
    if (json) {
        printf("%s\n", text);
    } else {
        cJSON *d = cJSON_Parse(text);
        if (!d) {
            fprintf(stderr, "vkvit inspect: out of memory reading the description of '%s'\n", path);
            rc = CLI_FAILURE;
        } else {
            print_text(d);
            cJSON_Delete(d);
        }
    }
    vkvit_free(text);
    return cli_finish_stdout("inspect", rc);
}
