// SPDX-License-Identifier: Apache-2.0
/* vkvit run: run a model on a tensor from a safetensors file and write the logits — the tool for checking vkvit
 * against any PyTorch model.
 *
 *   vkvit run --model FILE --input IN.safetensors --output OUT.safetensors [--condition FILE]
 *             [--precision fp32|fp16|fp16-math] [--json] [--device DEV]
 *
 * IN holds `input` [B, H, W, 3] (float32/16/bf16, already normalised) and, for resnet models with a condition mixer,
 * `condition` ([B, C] or [B, Tc, C]; --condition FILE overrides it); OUT receives `logits` [B, classes] (F32).
 * `-` is standard input / output. */
#include "cli.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void run_usage(FILE *f) {
    fprintf(f, "usage: vkvit run --model FILE --input IN.safetensors --output OUT.safetensors [options]\n\n"
               "Runs the model on the tensor `input` [B, H, W, 3] (channels-last, already normalised) of IN and\n"
               "writes `logits` [B, classes] as float32 to OUT (safetensors; docs/model-format.md describes the\n"
               "format). The batch size is taken from the input. A PyTorch NCHW tensor x becomes channels-last with\n"
               "x.permute(0, 2, 3, 1).\n"
               "Models that take a condition (those with a condition mixer) read it from --condition FILE, else\n"
               "from the tensor `condition` of IN: [B, C] or [B, Tc, C] as the model says, or a single row\n"
               "([1, C] / [1, Tc, C]) used for every image; other models ignore a condition.\n\n"
               "options:\n"
               "  -m, --model FILE    vkvit model file (required)\n"
               "  -i, --input FILE    safetensors file with a tensor named `input` (required; `-`: standard input)\n"
               "  -o, --output FILE   safetensors file to write (required; `-`: standard output). A regular file\n"
               "                      (symlinks followed) is replaced atomically; a device or FIFO is written in\n"
               "                      place. It may not be the model, IN or the condition file\n"
               "  --condition FILE    safetensors file with the tensor `condition` (default: the one in IN)\n"
               "  --precision P       fp32 (default), fp16 (fp16 weights, fp32 activations) or fp16-math (fp16\n"
               "                      weights and GEMM arithmetic; attention, norms, softmax stay fp32)\n"
               "  --features          also write `features` [B, F]: the pooled features the classifier head reads\n"
               "                      (timm's forward_features + pre-logits; include/vkvit.h)\n"
               "  --json              print the summary as one JSON object (default: one line of text; with\n"
               "                      --output - the summary goes to stderr)\n"
               "  --device DEV        Vulkan device index or name substring (default: $VKVIT_DEVICE, else the\n"
               "                      first discrete, integrated, virtual, then CPU device)\n"
               "  -h, --help          this text\n\n"
               "exit codes: 0 success, 1 usage error, 2 bad input (file, model, tensor shape), 3 no Vulkan device,\n"
               "4 runtime failure (also: OUT or standard output could not be written)\n");
}

/* Writes an F32 safetensors file holding `logits` [B, classes] and, when `features` is not NULL, `features`
 * [B, F] after it. */
static vkvit_result write_outputs(cli_out_file *out, const float *logits, const vkvit_shape *ls,
                                  const float *features, const vkvit_shape *fs) {
    const uint64_t nl = (uint64_t)ls->dims[0] * ls->dims[1], nf = features ? (uint64_t)fs->dims[0] * fs->dims[1] : 0;
    char header[512];
    int len = snprintf(header, sizeof header, "{\"logits\":{\"dtype\":\"F32\",\"shape\":[%u,%u],\"data_offsets\":[0,%llu]}",
                       ls->dims[0], ls->dims[1], (unsigned long long)(nl * 4));
    if (features)
        len += snprintf(header + len, sizeof header - (size_t)len,
                        ",\"features\":{\"dtype\":\"F32\",\"shape\":[%u,%u],\"data_offsets\":[%llu,%llu]}",
                        fs->dims[0], fs->dims[1], (unsigned long long)(nl * 4), (unsigned long long)((nl + nf) * 4));
    header[len++] = '}';
    while (len % 8) header[len++] = ' ';
    size_t total = 8 + (size_t)len + (size_t)(nl + nf) * 4;
    uint8_t *buf = malloc(total);
    if (!buf) return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of memory writing '%s'", out->path);
    uint64_t hl = (uint64_t)len;
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(hl >> (8 * i));
    memcpy(buf + 8, header, (size_t)len);
    memcpy(buf + 8 + len, logits, (size_t)nl * 4); /* little-endian hosts only, like the rest of vkvit */
    if (features) memcpy(buf + 8 + len + nl * 4, features, (size_t)nf * 4);
    vkvit_result r = cli_out_write(out, buf, total);
    free(buf);
    return r == VKVIT_OK ? cli_out_commit(out) : r;
}

typedef struct run_args {
    const char *model_path, *in_path, *out_path, *device, *cond_path;
    vkvit_precision precision;
    int json, want_features;
} run_args;

/* The output must not replace a file the run reads: the model, the input, the condition (the same path, or the same
 * file through a symbolic or hard link: the same device and inode). The input would otherwise be replaced by its
 * own logits. Returns CLI_OK or CLI_USAGE after printing the reason. */
static int check_paths(const run_args *a) {
    if (a->cond_path && !strcmp(a->cond_path, "-") && !strcmp(a->in_path, "-"))
        return cli_usage_error("run", "standard input ('-') can be read only once");
    if (!strcmp(a->out_path, "-") && isatty(STDOUT_FILENO))
        return cli_usage_error("run", "--output - writes a binary safetensors file: redirect standard output to a "
                               "file or a pipe");
    if (!a->out_path[0]) return cli_usage_error("run", "--output is empty: give a file, or '-' for standard output");
    if (cli_same_file(a->out_path, a->model_path))
        return cli_usage_error("run", "--output '%s' is the model file; give another path", a->out_path);
    const int out_is_file = strcmp(a->out_path, "-") != 0; /* '-' is standard output, never a file named '-' */
    if (out_is_file && strcmp(a->in_path, "-") &&
        (!strcmp(a->out_path, a->in_path) || cli_same_file(a->out_path, a->in_path)))
        return cli_usage_error("run", "--output '%s' is the input file; give another path", a->out_path);
    if (out_is_file && a->cond_path && strcmp(a->cond_path, "-") &&
        (!strcmp(a->out_path, a->cond_path) || cli_same_file(a->out_path, a->cond_path)))
        return cli_usage_error("run", "--output '%s' is the condition file; give another path", a->out_path);
    return CLI_OK;
}

/* Returns CLI_OK, -1 after --help, or the exit code after printing the reason. */
static int parse_args(int argc, char **argv, run_args *a) {
    enum { OPT_CONDITION = 256, OPT_PRECISION, OPT_DEVICE, OPT_JSON, OPT_FEATURES };
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},     {"input", required_argument, NULL, 'i'},
        {"output", required_argument, NULL, 'o'},    {"condition", required_argument, NULL, OPT_CONDITION},
        {"precision", required_argument, NULL, OPT_PRECISION}, {"device", required_argument, NULL, OPT_DEVICE},
        {"json", no_argument, NULL, OPT_JSON},       {"help", no_argument, NULL, 'h'},
        {"features", no_argument, NULL, OPT_FEATURES},
        {NULL, 0, NULL, 0}};
    *a = (run_args){.precision = VKVIT_PRECISION_FP32};
    cli_opts o;
    cli_opts_init(&o, "run", argc, argv, "m:i:o:h", longopts);
    for (int c; (c = cli_opts_next(&o)) != -1;) {
        switch (c) {
        case 'h': run_usage(stdout); return -1;
        case 'm': a->model_path = o.arg; break;
        case 'i': a->in_path = o.arg; break;
        case 'o': a->out_path = o.arg; break;
        case OPT_CONDITION: a->cond_path = o.arg; break;
        case OPT_PRECISION: if (!cli_opt_precision(&o, &a->precision)) return CLI_USAGE; break;
        case OPT_DEVICE: a->device = o.arg; break;
        case OPT_JSON: a->json = 1; break;
        case OPT_FEATURES: a->want_features = 1; break;
        default: return CLI_USAGE;
        }
    }
    if (o.first_operand < argc) return cli_usage_error("run", "unexpected argument '%s'", argv[o.first_operand]);
    if (!a->model_path || !a->in_path || !a->out_path)
        return cli_usage_error("run", "--model, --input and --output are required");
    return check_paths(a);
}

/* One run: the input file and tensor, the model and session, the outputs. */
typedef struct run_job {
    run_args a;
    const char *in_name;                    /* how messages name the input */
    uint8_t *data;                          /* the input file's bytes, under tf */
    vkvit_tensor_file *tf;
    vkvit_tensor_info in;                   /* the tensor `input` */
    float *input, *condition, *logits, *features;
    vkvit_ctx *ctx;
    vkvit_model *model;
    vkvit_session *s;
    vkvit_shape os, fs;                     /* logits [B, classes]; features [B, F] */
} run_job;

/* The tensor `input` of IN: [B, H, W, 3] (channels-last), as fp32. */
static vkvit_result read_input(run_job *j) {
    vkvit_result r = cli_open_tensor_file(j->a.in_path, (size_t)4 << 30, &j->data, &j->tf);
    if (r != VKVIT_OK) return r;
    const int64_t at = vkvit_tensor_file_find(j->tf, "input");
    const vkvit_tensor_info *t = &j->in;
    if (at < 0 || vkvit_tensor_file_info(j->tf, (uint32_t)at, &j->in) != VKVIT_OK)
        return cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s' has no tensor named 'input'", j->in_name);
    if (t->ndim != 4 || t->shape[3] != 3 || t->shape[0] == 0) {
        char got[96];
        cli_dims_text(t->shape, t->ndim, got, sizeof got);
        if (t->ndim == 4 && t->shape[1] == 3 && t->shape[3] != 3)
            return cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': input is %s, which looks like NCHW (channels first); "
                             "vkvit takes channels-last [B, H, W, 3]: in PyTorch, x.permute(0, 2, 3, 1).contiguous()",
                             j->in_name, got);
        return cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': input is %s; vkvit takes [B, H, W, 3] (channels-last)",
                         j->in_name, got);
    }
    return cli_read_tensor_f32(j->tf, (uint32_t)at, t, "the input", &j->input);
}

/* The input's picture size against the model's, and its batch against the limit; then the session. */
static vkvit_result create_session(run_job *j) {
    vkvit_model_info info;
    vkvit_model_get_info(j->model, &info);
    const vkvit_tensor_info *t = &j->in;
    if (t->shape[1] != info.image_height || t->shape[2] != info.image_width)
        return cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': input is %llux%llu, the model takes %ux%u", j->in_name,
                         (unsigned long long)t->shape[1], (unsigned long long)t->shape[2], info.image_height,
                         info.image_width);
    if (t->shape[0] > 4096)
        return cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': batch %llu is above 4096", j->in_name,
                         (unsigned long long)t->shape[0]);
    vkvit_session_desc sd = {.label = "run", .batch = (uint32_t)t->shape[0], .precision = j->a.precision,
                             .features = j->a.want_features};
    return vkvit_session_create(j->model, &sd, &j->s);
}

/* The rows of the tensor `condition` of IN, for a session whose condition shape is cs ([B, ...]; any row count). */
static vkvit_result condition_of_input(run_job *j, vkvit_shape cs, const char *want, float **rows_f, uint32_t *rows) {
    const int64_t at = vkvit_tensor_file_find(j->tf, "condition");
    vkvit_tensor_info ct;
    if (at < 0 || vkvit_tensor_file_info(j->tf, (uint32_t)at, &ct) != VKVIT_OK)
        return cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "model '%s' needs a condition %s, but '%s' has no tensor named "
                         "'condition' (give one with --condition FILE)", j->a.model_path, want, j->in_name);
    bool same = ct.ndim == cs.ndim && ct.shape[0] >= 1;
    for (uint32_t d = 1; same && d < cs.ndim; d++) same = ct.shape[d] == cs.dims[d];
    if (!same) {
        char got[96];
        cli_dims_text(ct.shape, ct.ndim, got, sizeof got);
        return cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': condition is %s, model '%s' needs %s", j->in_name, got,
                         j->a.model_path, want);
    }
    *rows = (uint32_t)CLI_MIN(ct.shape[0], (uint64_t)UINT32_MAX);
    return cli_read_tensor_f32(j->tf, (uint32_t)at, &ct, "the condition", rows_f);
}

/* The condition: required exactly when the session has one; [B, ...] or one row [1, ...] for every image, from
 * --condition or else from IN. */
static vkvit_result set_condition(run_job *j) {
    vkvit_shape cs = vkvit_session_condition_shape(j->s);
    if (cs.ndim == 0) {
        if (j->a.cond_path || vkvit_tensor_file_find(j->tf, "condition") >= 0)
            fprintf(stderr, "vkvit run: note: model '%s' takes no condition; the condition %s is ignored\n",
                    j->a.model_path, j->a.cond_path ? "given with --condition" : "tensor of the input file");
        return VKVIT_OK;
    }
    char want[64];
    cli_shape_text(&cs, want, sizeof want);
    float *rows_f = NULL;
    uint32_t rows = 0;
    vkvit_result r = j->a.cond_path ? cli_read_condition(j->a.cond_path, cs, &rows_f, &rows)
                                    : condition_of_input(j, cs, want, &rows_f, &rows);
    if (r != VKVIT_OK) return r;
    size_t row = 1;
    for (uint32_t d = 1; d < cs.ndim; d++) row *= cs.dims[d];
    if (rows != 1 && rows != cs.dims[0])
        r = cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': the condition has %u rows; model '%s' with batch %u needs %s "
                      "(or one row for every image)", j->a.cond_path ? cli_input_name(j->a.cond_path) : j->in_name,
                      rows, j->a.model_path, cs.dims[0], want);
    else if (!(j->condition = malloc((size_t)cs.dims[0] * row * sizeof(float))))
        r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the condition");
    for (uint32_t b = 0; r == VKVIT_OK && b < cs.dims[0]; b++)
        memcpy(j->condition + b * row, rows_f + (rows == 1 ? 0 : b * row), row * sizeof(float));
    free(rows_f);
    return r == VKVIT_OK ? vkvit_session_set_condition(j->s, j->condition, (size_t)cs.dims[0] * row) : r;
}

/* Runs the session on the input and reads the logits (and features). */
static vkvit_result infer(run_job *j) {
    j->os = vkvit_session_output_shape(j->s);
    j->fs = vkvit_session_feature_shape(j->s);
    const size_t n_out = (size_t)j->os.dims[0] * j->os.dims[1];
    const size_t n_feat = j->a.want_features ? (size_t)j->fs.dims[0] * j->fs.dims[1] : 0;
    if (!(j->logits = malloc(n_out * sizeof(float))))
        return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the logits");
    if (j->a.want_features && !(j->features = malloc(n_feat * sizeof(float))))
        return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the features");
    vkvit_result r = vkvit_session_set_input(j->s, j->input, (size_t)j->in.count);
    if (r == VKVIT_OK) r = vkvit_session_run(j->s);
    if (r == VKVIT_OK) r = vkvit_session_get_output(j->s, j->logits, n_out);
    if (r == VKVIT_OK && j->a.want_features) r = vkvit_session_get_features(j->s, j->features, n_feat);
    return r;
}

/* The summary (one JSON object or one line; on stderr when the tensor file goes to stdout) and the warning about
 * logits that are not finite. */
static void print_summary(const run_job *j) {
    FILE *summary = strcmp(j->a.out_path, "-") ? stdout : stderr; /* stdout carries the tensor file then */
    vkvit_model_info info;
    vkvit_model_get_info(j->model, &info);
    vkvit_device_info dev;
    vkvit_ctx_device_info(j->ctx, &dev);
    const size_t n_out = (size_t)j->os.dims[0] * j->os.dims[1];
    size_t bad = 0;
    for (size_t i = 0; i < n_out; i++) bad += !isfinite(j->logits[i]);
    if (j->a.json) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddItemToObject(doc, "model", cli_jstr(j->a.model_path));
        cJSON_AddStringToObject(doc, "architecture", info.architecture);
        cJSON_AddStringToObject(doc, "flavour", info.flavour);
        cJSON_AddItemToObject(doc, "input", cli_jstr(j->a.in_path));
        cJSON_AddItemToObject(doc, "output", cli_jstr(j->a.out_path));
        cJSON_AddItemToObject(doc, "device", cli_jstr(dev.name));
        cJSON_AddStringToObject(doc, "precision", cli_precision_name(j->a.precision));
        const double shape[2] = {j->os.dims[0], j->os.dims[1]};
        cJSON_AddItemToObject(doc, "logits_shape", cJSON_CreateDoubleArray(shape, 2));
        cJSON_AddNumberToObject(doc, "non_finite_logits", (double)bad);
        char *text = cli_json_line(doc);
        cJSON_Delete(doc);
        if (text) fprintf(summary, "%s\n", text);
        free(text);
    } else {
        fputs("vkvit run: ", summary); /* names from the command line and the driver: sanitised for a terminal */
        cli_put_clean(summary, j->a.model_path, 300);
        fprintf(summary, " (%s/%s) on ", info.architecture, info.flavour);
        cli_put_clean(summary, dev.name, 256);
        fprintf(summary, ", %s: logits [%u, %u] -> ", cli_precision_name(j->a.precision), j->os.dims[0],
                j->os.dims[1]);
        cli_put_clean(summary, strcmp(j->a.out_path, "-") ? j->a.out_path : "standard output", 300);
        fputc('\n', summary);
    }
    if (bad) fprintf(stderr, "vkvit run: warning: %zu of %zu logits are NaN or infinite\n", bad, n_out);
}

static void job_free(run_job *j) {
    vkvit_session_destroy(j->s);
    vkvit_model_destroy(j->model);
    vkvit_ctx_destroy(j->ctx);
    vkvit_tensor_file_destroy(j->tf);
    free(j->data);
    free(j->input);
    free(j->condition);
    free(j->logits);
    free(j->features);
}

int vkvit_cli_run(int argc, char **argv) {
    run_job j = {0};
    int rc = parse_args(argc, argv, &j.a);
    if (rc != CLI_OK) return rc < 0 ? cli_finish_stdout("run", CLI_OK) : rc;
    /* The output is opened before any work (a path that cannot be written costs nothing); an existing file is
     * replaced only once the run has succeeded (cli_out_commit). */
    cli_out_file out;
    if (cli_out_open(&out, j.a.out_path) != VKVIT_OK) {
        cli_print_error("run", cli_last_error());
        cli_out_abort(&out);
        return CLI_FAILURE; /* the output cannot be written: a runtime failure, not bad input */
    }
    j.in_name = cli_input_name(j.a.in_path);
    vkvit_ctx_desc cd = {.device = j.a.device, .log = cli_log_stderr, .log_user = "vkvit run"};
    vkvit_result r = read_input(&j);
    if (r == VKVIT_OK) r = cli_open_model(&cd, j.a.model_path, &j.ctx, &j.model);
    if (r == VKVIT_OK) r = create_session(&j);
    if (r == VKVIT_OK) r = set_condition(&j);
    if (r == VKVIT_OK) r = infer(&j);
    if (r != VKVIT_OK) {
        rc = cli_fail("run", r);
    } else if (write_outputs(&out, j.logits, &j.os, j.features, &j.fs) != VKVIT_OK) {
        cli_print_error("run", cli_last_error());
        rc = CLI_FAILURE; /* the output could not be written: a runtime failure, not bad input */
    } else {
        print_summary(&j);
    }
    cli_out_abort(&out); /* nothing once committed; else the temporary file goes, an existing file stays */
    job_free(&j);
    return cli_finish_stdout("run", rc);
}
