/* vkvit run: run a model on a tensor from a safetensors file and write the logits — the tool for checking vkvit
 * against any PyTorch model.
 *
 *   vkvit run --model FILE --input IN.safetensors --output OUT.safetensors [--device N]
 *
 * IN holds `input` [B, H, W, 3] (float32/16/bf16, already normalised) and, for resnet models with a condition mixer,
 * `condition` ([B, C] or [B, Tc, C]); OUT receives `logits` [B, classes] (F32). */
#include "cli.h"
#include "model/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run_usage(FILE *f) {
    fprintf(f, "usage: vkvit run --model FILE --input IN.safetensors --output OUT.safetensors [options]\n\n"
               "Runs the model on the tensor `input` [B, H, W, 3] (channels-last, already normalised) of IN and\n"
               "writes `logits` [B, classes] as float32 to OUT. The batch size is taken from the input.\n"
               "Models that take a condition (resnet with a condition mixer) read it from the tensor `condition`\n"
               "of IN: [B, C] or [B, Tc, C] as the model says; other models ignore a `condition` tensor.\n\n"
               "options:\n"
               "  --model FILE      vkvit model file (required)\n"
               "  --input FILE      safetensors file with a tensor named `input` (required)\n"
               "  --output FILE     safetensors file to write (required; replaced atomically)\n"
               "  --device DEV      Vulkan device index or name substring (default: $VKVIT_DEVICE, else the\n"
               "                    first discrete, integrated, virtual, then CPU device)\n"
               "  --help            this text\n\n"
               "exit codes: 0 success, 1 usage error, 2 bad input (file, model), 3 no Vulkan device, 4 runtime failure\n");
}

/* Writes a one-tensor F32 safetensors file. */
static vkvit_result write_logits(const char *path, const float *data, const vkvit_shape *shape) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < shape->ndim; i++) n *= shape->dims[i];
    char header[256];
    int len = snprintf(header, sizeof header, "{\"logits\":{\"dtype\":\"F32\",\"shape\":[%u,%u],\"data_offsets\":[0,%llu]}}",
                       shape->dims[0], shape->dims[1], (unsigned long long)(n * 4));
    while (len % 8) header[len++] = ' ';
    size_t total = 8 + (size_t)len + (size_t)n * 4;
    uint8_t *buf = malloc(total);
    if (!buf) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of memory writing '%s'", path);
    uint64_t hl = (uint64_t)len;
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(hl >> (8 * i));
    memcpy(buf + 8, header, (size_t)len);
    memcpy(buf + 8 + len, data, (size_t)n * 4); /* little-endian hosts only, like the rest of vkvit */
    vkvit_result r = vkvit__write_file_atomic(path, buf, total);
    free(buf);
    return r;
}

int vkvit_cli_run(int argc, char **argv) {
    const char *model_path = NULL, *in_path = NULL, *out_path = NULL, *device = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            run_usage(stdout);
            return CLI_OK;
        } else if (!strcmp(a, "--model") && i + 1 < argc) {
            model_path = argv[++i];
        } else if (!strcmp(a, "--input") && i + 1 < argc) {
            in_path = argv[++i];
        } else if (!strcmp(a, "--output") && i + 1 < argc) {
            out_path = argv[++i];
        } else if (!strcmp(a, "--device") && i + 1 < argc) {
            device = argv[++i];
        } else {
            fprintf(stderr, "vkvit run: unknown or incomplete option '%s'\n", a);
            run_usage(stderr);
            return CLI_USAGE;
        }
    }
    if (!model_path || !in_path || !out_path) {
        fprintf(stderr, "vkvit run: --model, --input and --output are required\n");
        run_usage(stderr);
        return CLI_USAGE;
    }

    int rc = CLI_OK;
    vkvit_result r;
    uint8_t *data = NULL;
    size_t size = 0;
    float *input = NULL, *logits = NULL, *condition = NULL;
    vkvit__safetensors st = {0};
    vkvit_ctx *ctx = NULL;
    vkvit_model *model = NULL;
    vkvit_session *s = NULL;
#define FAIL(r_)                                                                                              \
    do {                                                                                                      \
        fprintf(stderr, "vkvit run: %s\n", vkvit_last_error());                                               \
        rc = vkvit_cli_exit_code(r_);                                                                         \
        goto done;                                                                                            \
    } while (0)

    if ((r = vkvit__read_file(in_path, (size_t)4 << 30, &data, &size)) != VKVIT_OK) FAIL(r);
    if ((r = vkvit__safetensors_parse(data, size, in_path, &st)) != VKVIT_OK) FAIL(r);
    const vkvit__st_tensor *t = vkvit__safetensors_find(&st, "input");
    if (!t) {
        r = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s' has no tensor named 'input'", in_path);
        FAIL(r);
    }
    if (t->ndim != 4 || t->shape[3] != 3 || t->shape[0] == 0) {
        r = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': input must be [B, H, W, 3], got %u dims", in_path, t->ndim);
        FAIL(r);
    }
    input = malloc(t->numel * sizeof(float));
    if (!input) {
        r = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the input");
        FAIL(r);
    }
    vkvit__st_convert_f32(t->dtype, data + t->offset, t->numel, input);

    if ((r = vkvit_ctx_create(&(vkvit_ctx_desc){.label = "vkvit run", .device = device}, &ctx)) != VKVIT_OK) FAIL(r);
    if ((r = vkvit_model_create(ctx, &(vkvit_model_desc){.path = model_path}, &model)) != VKVIT_OK) FAIL(r);
    vkvit_model_info info;
    vkvit_model_get_info(model, &info);
    if (t->shape[1] != info.image_height || t->shape[2] != info.image_width) {
        r = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': input is %llux%llu, the model takes %ux%u", in_path,
                         (unsigned long long)t->shape[1], (unsigned long long)t->shape[2], info.image_height,
                         info.image_width);
        FAIL(r);
    }
    if (t->shape[0] > 4096) {
        r = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': batch %llu is above 4096", in_path,
                         (unsigned long long)t->shape[0]);
        FAIL(r);
    }
    if ((r = vkvit_session_create(model, &(vkvit_session_desc){.batch = (uint32_t)t->shape[0]}, &s)) != VKVIT_OK)
        FAIL(r);
    /* The condition: required exactly when the session has one, with exactly its shape. */
    vkvit_shape cs = vkvit_session_condition_shape(s);
    const vkvit__st_tensor *ct = vkvit__safetensors_find(&st, "condition");
    if (cs.ndim > 0) {
        char want[64];
        if (cs.ndim == 2) snprintf(want, sizeof want, "[%u, %u]", cs.dims[0], cs.dims[1]);
        else snprintf(want, sizeof want, "[%u, %u, %u]", cs.dims[0], cs.dims[1], cs.dims[2]);
        if (!ct) {
            r = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "model '%s' needs a condition %s, but '%s' has no tensor "
                             "named 'condition'", model_path, want, in_path);
            FAIL(r);
        }
        bool same = ct->ndim == cs.ndim;
        for (uint32_t d = 0; same && d < cs.ndim; d++) same = ct->shape[d] == cs.dims[d];
        if (!same) {
            char got[96] = "[";
            for (uint32_t d = 0; d < ct->ndim && d < 4; d++)
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%llu", d ? ", " : "",
                         (unsigned long long)ct->shape[d]);
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s]", ct->ndim > 4 ? ", ..." : "");
            r = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': condition is %s, model '%s' needs %s", in_path, got,
                             model_path, want);
            FAIL(r);
        }
        condition = malloc(ct->numel * sizeof(float));
        if (!condition) {
            r = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the condition");
            FAIL(r);
        }
        vkvit__st_convert_f32(ct->dtype, data + ct->offset, ct->numel, condition);
        if ((r = vkvit_session_set_condition(s, condition, ct->numel)) != VKVIT_OK) FAIL(r);
    } else if (ct) {
        fprintf(stderr, "vkvit run: note: model '%s' takes no condition; the tensor 'condition' of '%s' is ignored\n",
                model_path, in_path);
    }
    vkvit_shape os = vkvit_session_output_shape(s);
    size_t n_out = (size_t)os.dims[0] * os.dims[1];
    logits = malloc(n_out * sizeof(float));
    if (!logits) {
        r = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the logits");
        FAIL(r);
    }
    if ((r = vkvit_session_set_input(s, input, t->numel)) != VKVIT_OK || (r = vkvit_session_run(s)) != VKVIT_OK ||
        (r = vkvit_session_get_output(s, logits, n_out)) != VKVIT_OK)
        FAIL(r);
    if ((r = write_logits(out_path, logits, &os)) != VKVIT_OK) FAIL(r);
    vkvit_device_info dev;
    vkvit_ctx_device_info(ctx, &dev);
    printf("vkvit run: %s (%s/%s) on %s: logits [%u, %u] -> %s\n", model_path, info.architecture, info.flavour,
           dev.name, os.dims[0], os.dims[1], out_path);
#undef FAIL
done:
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
    vkvit__safetensors_free(&st);
    free(data);
    free(input);
    free(condition);
    free(logits);
    return rc;
}
