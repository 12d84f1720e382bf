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
               "Models that take a condition (resnet with a condition mixer) read it from --condition FILE, else\n"
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

enum { OPT_CONDITION = 256, OPT_PRECISION, OPT_DEVICE, OPT_JSON, OPT_FEATURES };

int vkvit_cli_run(int argc, char **argv) {
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},     {"input", required_argument, NULL, 'i'},
        {"output", required_argument, NULL, 'o'},    {"condition", required_argument, NULL, OPT_CONDITION},
        {"precision", required_argument, NULL, OPT_PRECISION}, {"device", required_argument, NULL, OPT_DEVICE},
        {"json", no_argument, NULL, OPT_JSON},       {"help", no_argument, NULL, 'h'},
        {"features", no_argument, NULL, OPT_FEATURES},
        {NULL, 0, NULL, 0}};
    const char *model_path = NULL, *in_path = NULL, *out_path = NULL, *device = NULL, *cond_path = NULL;
    vkvit_precision precision = VKVIT_PRECISION_FP32;
    int json = 0, want_features = 0;
    cli_opts o;
    cli_opts_init(&o, "run", argc, argv, "m:i:o:h", longopts);
    for (int c; (c = cli_opts_next(&o)) != -1;) {
        switch (c) {
        case 'h': run_usage(stdout); return cli_finish_stdout("run", CLI_OK);
        case 'm': model_path = o.arg; break;
        case 'i': in_path = o.arg; break;
        case 'o': out_path = o.arg; break;
        case OPT_CONDITION: cond_path = o.arg; break;
        case OPT_PRECISION: if (!cli_opt_precision(&o, &precision)) return CLI_USAGE; break;
        case OPT_DEVICE: device = o.arg; break;
        case OPT_JSON: json = 1; break;
        case OPT_FEATURES: want_features = 1; break;
        default: return CLI_USAGE;
        }
    }
    if (o.first_operand < argc) return cli_usage_error("run", "unexpected argument '%s'", argv[o.first_operand]);
    if (!model_path || !in_path || !out_path)
        return cli_usage_error("run", "--model, --input and --output are required");
    if (cond_path && !strcmp(cond_path, "-") && !strcmp(in_path, "-"))
        return cli_usage_error("run", "standard input ('-') can be read only once");
    if (!strcmp(out_path, "-") && isatty(STDOUT_FILENO))
        return cli_usage_error("run", "--output - writes a binary safetensors file: redirect standard output to a "
                               "file or a pipe");
    if (!out_path[0]) return cli_usage_error("run", "--output is empty: give a file, or '-' for standard output");
    /* The output must not replace a file the run reads: the model, the input, the condition (the same path, or the
     * same file through a symbolic or hard link: the same device and inode). The input would otherwise be replaced
     * by its own logits. */
    if (cli_same_file(out_path, model_path))
        return cli_usage_error("run", "--output '%s' is the model file; give another path", out_path);
    const int out_is_file = strcmp(out_path, "-") != 0; /* '-' is standard output, never a file named '-' */
    if (out_is_file && strcmp(in_path, "-") && (!strcmp(out_path, in_path) || cli_same_file(out_path, in_path)))
        return cli_usage_error("run", "--output '%s' is the input file; give another path", out_path);
    if (out_is_file && cond_path && strcmp(cond_path, "-") &&
        (!strcmp(out_path, cond_path) || cli_same_file(out_path, cond_path)))
        return cli_usage_error("run", "--output '%s' is the condition file; give another path", out_path);
    FILE *summary = strcmp(out_path, "-") ? stdout : stderr; /* stdout carries the tensor file then */
    /* The output is opened before any work (a path that cannot be written costs nothing); an existing file is
     * replaced only once the run has succeeded (cli_out_commit). */
    cli_out_file out;
    if (cli_out_open(&out, out_path) != VKVIT_OK) {
        cli_print_error("run", cli_last_error());
        cli_out_abort(&out);
        return CLI_FAILURE; /* the output cannot be written: a runtime failure, not bad input */
    }

    int rc = CLI_OK;
    vkvit_result r;
    uint8_t *data = NULL;
    float *input = NULL, *logits = NULL, *condition = NULL, *features = NULL;
    vkvit_tensor_file *tf = NULL;
    vkvit_ctx *ctx = NULL;
    vkvit_model *model = NULL;
    vkvit_session *s = NULL;
#define FAIL(r_)                                                                                              \
    do {                                                                                                      \
        cli_print_error("run", cli_last_error());                                                             \
        rc = vkvit_cli_exit_code(r_);                                                                         \
        goto done;                                                                                            \
    } while (0)

    const char *in_name = cli_input_name(in_path);
    if ((r = cli_open_tensor_file(in_path, (size_t)4 << 30, &data, &tf)) != VKVIT_OK) FAIL(r);
    const int64_t in_at = vkvit_tensor_file_find(tf, "input");
    vkvit_tensor_info in_info;
    if (in_at < 0 || vkvit_tensor_file_info(tf, (uint32_t)in_at, &in_info) != VKVIT_OK) {
        r = cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s' has no tensor named 'input'", in_name);
        FAIL(r);
    }
    const vkvit_tensor_info *t = &in_info;
    if (t->ndim != 4 || t->shape[3] != 3 || t->shape[0] == 0) {
        char got[96];
        cli_dims_text(t->shape, t->ndim, got, sizeof got);
        if (t->ndim == 4 && t->shape[1] == 3 && t->shape[3] != 3)
            r = cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': input is %s, which looks like NCHW (channels first); "
                          "vkvit takes channels-last [B, H, W, 3]: in PyTorch, x.permute(0, 2, 3, 1).contiguous()",
                          in_name, got);
        else
            r = cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': input is %s; vkvit takes [B, H, W, 3] "
                          "(channels-last)", in_name, got);
        FAIL(r);
    }
    if ((r = cli_read_tensor_f32(tf, (uint32_t)in_at, t, "the input", &input)) != VKVIT_OK) FAIL(r);

    /* the model path first: a FIFO, a device or a foreign file is refused before any device work */
    if ((r = cli_sniff_model(model_path)) != VKVIT_OK) FAIL(r);
    vkvit_ctx_desc cd = {.device = device, .log = cli_log_stderr, .log_user = "vkvit run"};
    if ((r = vkvit_ctx_create(&cd, &ctx)) != VKVIT_OK) FAIL(r);
    if ((r = vkvit_model_create(ctx, &(vkvit_model_desc){.path = model_path}, &model)) != VKVIT_OK) FAIL(r);
    vkvit_model_info info;
    vkvit_model_get_info(model, &info);
    if (t->shape[1] != info.image_height || t->shape[2] != info.image_width) {
        r = cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': input is %llux%llu, the model takes %ux%u", in_name,
                      (unsigned long long)t->shape[1], (unsigned long long)t->shape[2], info.image_height,
                      info.image_width);
        FAIL(r);
    }
    if (t->shape[0] > 4096) {
        r = cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': batch %llu is above 4096", in_name,
                      (unsigned long long)t->shape[0]);
        FAIL(r);
    }
    vkvit_session_desc sd = {.label = "run", .batch = (uint32_t)t->shape[0], .precision = precision,
                             .features = want_features};
    if ((r = vkvit_session_create(model, &sd, &s)) != VKVIT_OK) FAIL(r);
    /* The condition: required exactly when the session has one; [B, ...] or one row [1, ...] for every image. */
    vkvit_shape cs = vkvit_session_condition_shape(s);
    if (cs.ndim > 0) {
        char want[64];
        cli_shape_text(&cs, want, sizeof want);
        float *rows_f = NULL;
        uint32_t rows = 0;
        const char *from = cond_path ? cli_input_name(cond_path) : in_name;
        if (cond_path) {
            if ((r = cli_read_condition(cond_path, cs, &rows_f, &rows)) != VKVIT_OK) FAIL(r);
        } else {
            const int64_t cond_at = vkvit_tensor_file_find(tf, "condition");
            vkvit_tensor_info cond_info;
            if (cond_at < 0 || vkvit_tensor_file_info(tf, (uint32_t)cond_at, &cond_info) != VKVIT_OK) {
                r = cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "model '%s' needs a condition %s, but '%s' has no tensor "
                              "named 'condition' (give one with --condition FILE)", model_path, want, in_name);
                FAIL(r);
            }
            const vkvit_tensor_info *ct = &cond_info;
            bool same = ct->ndim == cs.ndim && ct->shape[0] >= 1;
            for (uint32_t d = 1; same && d < cs.ndim; d++) same = ct->shape[d] == cs.dims[d];
            if (!same) {
                char got[96];
                cli_dims_text(ct->shape, ct->ndim, got, sizeof got);
                r = cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': condition is %s, model '%s' needs %s", in_name,
                              got, model_path, want);
                FAIL(r);
            }
            rows = (uint32_t)CLI_MIN(ct->shape[0], (uint64_t)UINT32_MAX);
            if ((r = cli_read_tensor_f32(tf, (uint32_t)cond_at, ct, "the condition", &rows_f)) != VKVIT_OK) FAIL(r);
        }
        if (rows != 1 && rows != cs.dims[0]) {
            free(rows_f);
            r = cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': the condition has %u rows; model '%s' with batch %u "
                          "needs %s (or one row for every image)", from, rows, model_path, cs.dims[0], want);
            FAIL(r);
        }
        size_t row = 1;
        for (uint32_t d = 1; d < cs.ndim; d++) row *= cs.dims[d];
        if (!(condition = malloc((size_t)cs.dims[0] * row * sizeof(float)))) {
            free(rows_f);
            r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the condition");
            FAIL(r);
        }
        for (uint32_t b = 0; b < cs.dims[0]; b++)
            memcpy(condition + b * row, rows_f + (rows == 1 ? 0 : b * row), row * sizeof(float));
        free(rows_f);
        if ((r = vkvit_session_set_condition(s, condition, (size_t)cs.dims[0] * row)) != VKVIT_OK) FAIL(r);
    } else if (cond_path || vkvit_tensor_file_find(tf, "condition") >= 0) {
        fprintf(stderr, "vkvit run: note: model '%s' takes no condition; the condition %s is ignored\n", model_path,
                cond_path ? "given with --condition" : "tensor of the input file");
    }
    vkvit_shape os = vkvit_session_output_shape(s);
    size_t n_out = (size_t)os.dims[0] * os.dims[1];
    logits = malloc(n_out * sizeof(float));
    if (!logits) {
        r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the logits");
        FAIL(r);
    }
    vkvit_shape fs = vkvit_session_feature_shape(s);
    const size_t n_feat = want_features ? (size_t)fs.dims[0] * fs.dims[1] : 0;
    if (want_features && !(features = malloc(n_feat * sizeof(float)))) {
        r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the features");
        FAIL(r);
    }
    if ((r = vkvit_session_set_input(s, input, (size_t)t->count)) != VKVIT_OK || (r = vkvit_session_run(s)) != VKVIT_OK ||
        (r = vkvit_session_get_output(s, logits, n_out)) != VKVIT_OK ||
        (want_features && (r = vkvit_session_get_features(s, features, n_feat)) != VKVIT_OK))
        FAIL(r);
    if ((r = write_outputs(&out, logits, &os, features, &fs)) != VKVIT_OK) {
        cli_print_error("run", cli_last_error());
        rc = CLI_FAILURE; /* the output could not be written: a runtime failure, not bad input */
        goto done;
    }
    vkvit_device_info dev;
    vkvit_ctx_device_info(ctx, &dev);
    if (json) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddItemToObject(doc, "model", cli_jstr(model_path));
        cJSON_AddStringToObject(doc, "architecture", info.architecture);
        cJSON_AddStringToObject(doc, "flavour", info.flavour);
        cJSON_AddItemToObject(doc, "input", cli_jstr(in_path));
        cJSON_AddItemToObject(doc, "output", cli_jstr(out_path));
        cJSON_AddItemToObject(doc, "device", cli_jstr(dev.name));
        cJSON_AddStringToObject(doc, "precision", cli_precision_name(precision));
        const double shape[2] = {os.dims[0], os.dims[1]};
        cJSON_AddItemToObject(doc, "logits_shape", cJSON_CreateDoubleArray(shape, 2));
        size_t bad = 0;
        for (size_t i = 0; i < n_out; i++) bad += !isfinite(logits[i]);
        cJSON_AddNumberToObject(doc, "non_finite_logits", (double)bad);
        char *text = cli_json_line(doc);
        cJSON_Delete(doc);
        if (text) fprintf(summary, "%s\n", text);
        free(text);
    } else {
        fputs("vkvit run: ", summary); /* names from the command line and the driver: sanitised for a terminal */
        cli_put_clean(summary, model_path, 300);
        fprintf(summary, " (%s/%s) on ", info.architecture, info.flavour);
        cli_put_clean(summary, dev.name, 256);
        fprintf(summary, ", %s: logits [%u, %u] -> ", cli_precision_name(precision), os.dims[0], os.dims[1]);
        cli_put_clean(summary, strcmp(out_path, "-") ? out_path : "standard output", 300);
        fputc('\n', summary);
    }
    {
        size_t bad = 0;
        for (size_t i = 0; i < n_out; i++) bad += !isfinite(logits[i]);
        if (bad) fprintf(stderr, "vkvit run: warning: %zu of %zu logits are NaN or infinite\n", bad, n_out);
    }
#undef FAIL
done:
    cli_out_abort(&out); /* nothing once committed; else the temporary file goes, an existing file stays */
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
    vkvit_tensor_file_destroy(tf);
    free(data);
    free(input);
    free(condition);
    free(logits);
    free(features);
    return cli_finish_stdout("run", rc);
}
