/* vkvit classify: the K most probable classes of each image file.
 *
 *   vkvit classify IMG... [--model FILE] [--top K] [--batch N] [--json] [--device DEV]
 *                  [--precision fp32|fp16|fp16-math]
 *                  [--condition FILE]
 *
 * Images are read whole (a file, a pipe, or `-` for standard input; cli_read_input), decoded on the host
 * (image_decode.c: PNG, JPEG, BMP, GIF, TGA -> RGBA8), pre-processed on the GPU as the model file says
 * (vkvit_session_set_images) and read out with the GPU's softmax + top-K (vkvit_session_get_top_k). Images run in
 * batches of up to --batch good images (a last, shorter batch repeats its last image in the unused slots); each
 * batch's results are printed as soon as it finishes. A bad image gets one line on stderr and is left out; the
 * others are still classified, and the exit code is then 2. */
#include "cli.h"
#include "image_decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLASSIFY_DEFAULT_BATCH 32u
#define CLASSIFY_MAX_BATCH 256u
#define CLASSIFY_DEFAULT_TOP 5u
#define LABEL_MAX 60u                       /* characters of a label shown in the table */
#define PATH_MAX_SHOWN 200u                 /* characters of an image name shown in the table */

static void classify_usage(FILE *f) {
    fprintf(f, "usage: vkvit classify IMAGE... [options]\n\n"
               "Prints the most probable classes of each image (PNG, JPEG, BMP, GIF, TGA, WebP; any bit depth,\n"
               "grey, palette or alpha). IMAGE may be `-` for standard input, or a pipe such as /dev/stdin or <(...).\n"
               "Images are resized, centre-cropped and normalised on the GPU as the model file's `preprocess` says\n"
               "(docs/preprocessing.md); softmax and top-K run on the GPU. Results are printed batch by batch as\n"
               "each finishes; a progress line with an ETA goes to stderr when it is a terminal.\n\n"
               "options:\n"
               "  -m, --model FILE      vkvit model file (docs/model-format.md; default: the bundled CIFAR-10\n"
               "                        ViT-5, %s, from <prefix>/share/vkvit/models/ next to the\n"
               "                        installed binary, else the source tree's assets/models/)\n"
               "  -k, --top K           classes per image (default %u; clamped to the model's class count and %u)\n"
               "  -b, --batch N         images per inference (default %u, at most %u)\n"
               "  --json                one JSON document on stdout (default: a table)\n"
               "  --features            with --json: each image also gets \"features\", the pooled features the\n"
               "                        classifier head reads (an embedding for retrieval; include/vkvit.h)\n"
               "  --precision P         fp32 (default), fp16 (fp16 weights, fp32 activations) or fp16-math (fp16\n"
               "                        weights and GEMM arithmetic; attention, norms, softmax stay fp32)\n"
               "  --condition FILE      for models that take a condition (resnet with a condition mixer): a\n"
               "                        safetensors file with a float tensor `condition` of the session's shape\n"
               "                        with R rows, [R, C] or [R, Tc, C]: R = 1 (the same condition for every\n"
               "                        image) or R = the number of IMAGE arguments (row i for the i-th image);\n"
               "                        default: none (such models then refuse to run)\n"
               "  --device DEV          Vulkan device index or name substring (default: $VKVIT_DEVICE, else the\n"
               "                        first discrete, integrated, virtual, then CPU device)\n"
               "  -h, --help            this text\n\n"
               "Options may come before or after the images; `--` ends them.\n\n"
               "exit codes: 0 every image classified; 1 usage error; 2 bad input: an image could not be read or\n"
               "decoded (one line on stderr each; the other images are still classified and printed), or the\n"
               "model or condition file is missing or bad; 3 no Vulkan device; 4 runtime failure (also: the\n"
               "output could not be written)\n",
            CLI_BUNDLED_MODEL, CLASSIFY_DEFAULT_TOP, VKVIT_MAX_TOP_K, CLASSIFY_DEFAULT_BATCH, CLASSIFY_MAX_BATCH);
}

/* What one image on the command line came to. */
typedef struct image_result {
    const char *path;
    int ok;                                 /* 0: bad image, `error` says why */
    char *error;
    uint32_t width, height;
    uint32_t *classes;                      /* [top] */
    float *probs;                           /* [top] */
    float *features;                        /* [n_features] with --features, else NULL */
} image_result;

typedef struct classify_args {
    const char **paths;
    uint32_t n_paths;
    const char *model_path, *device, *condition_path;
    uint32_t top, batch;
    int json, features;
    vkvit_precision precision;
} classify_args;

enum { OPT_JSON = 256, OPT_PRECISION, OPT_DEVICE, OPT_CONDITION, OPT_FEATURES };

/* Returns CLI_OK, -1 after --help, or the exit code after printing the reason. */
static int parse_args(int argc, char **argv, classify_args *a) {
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},      {"top", required_argument, NULL, 'k'},
        {"batch", required_argument, NULL, 'b'},      {"json", no_argument, NULL, OPT_JSON},
        {"precision", required_argument, NULL, OPT_PRECISION}, {"device", required_argument, NULL, OPT_DEVICE},
        {"condition", required_argument, NULL, OPT_CONDITION}, {"help", no_argument, NULL, 'h'},
        {"features", no_argument, NULL, OPT_FEATURES},
        {NULL, 0, NULL, 0}};
    *a = (classify_args){.top = CLASSIFY_DEFAULT_TOP, .batch = CLASSIFY_DEFAULT_BATCH,
                         .precision = VKVIT_PRECISION_FP32};
    cli_opts o;
    cli_opts_init(&o, "classify", argc, argv, "m:k:b:h", longopts);
    for (int c; (c = cli_opts_next(&o)) != -1;) {
        switch (c) {
        case 'h': classify_usage(stdout); return -1;
        case 'm': a->model_path = o.arg; break;
        case 'k': if (!cli_opt_u32(&o, 1, 1000000, &a->top)) return CLI_USAGE; break;
        case 'b': if (!cli_opt_u32(&o, 1, CLASSIFY_MAX_BATCH, &a->batch)) return CLI_USAGE; break;
        case OPT_JSON: a->json = 1; break;
        case OPT_FEATURES: a->features = 1; break;
        case OPT_PRECISION: if (!cli_opt_precision(&o, &a->precision)) return CLI_USAGE; break;
        case OPT_DEVICE: a->device = o.arg; break;
        case OPT_CONDITION: a->condition_path = o.arg; break;
        default: return CLI_USAGE;
        }
    }
    a->n_paths = (uint32_t)(argc - o.first_operand);
    a->paths = (const char **)(argv + o.first_operand);
    if (a->n_paths == 0) return cli_usage_error("classify", "no image given");
    if (a->features && !a->json) return cli_usage_error("classify", "--features needs --json");
    uint32_t stdin_uses = 0;
    for (uint32_t i = 0; i < a->n_paths; i++) stdin_uses += !strcmp(a->paths[i], "-");
    if (a->condition_path && !strcmp(a->condition_path, "-")) stdin_uses++;
    if (stdin_uses > 1) return cli_usage_error("classify", "standard input ('-') can be read only once");
    return CLI_OK;
}

/* Records a bad image: one line on stderr now, the sentence kept for --json. */
static void image_failed(image_result *res) {
    const char *why = cli_last_error();
    cli_print_error("classify", why);
    res->ok = 0;
    res->error = strdup(why);
}

/* Reads and decodes one image argument (a file, a pipe, or `-`). */
static vkvit_result load_image(const char *path, cli_image *img) {
    memset(img, 0, sizeof *img);
    uint8_t *data = NULL;
    size_t size = 0;
    vkvit_result r = cli_read_input(path, CLI_IMAGE_MAX_FILE_BYTES, &data, &size);
    if (r == VKVIT_ERROR_INVALID_ARGUMENT) return VKVIT_ERROR_BAD_IMAGE; /* above the size cap; the sentence says so */
    if (r != VKVIT_OK) return r;
    r = cli_image_decode(data, size, cli_input_name(path), img);
    free(data);
    return r;
}

/* The output as it streams: the table (header once, before the first row) or the JSON document (head once, then one
 * element per image, closed at the end). */
typedef struct printer {
    int json;
    int started;                            /* the header / the document's head is out */
    uint32_t n_printed;                     /* JSON elements so far */
    size_t path_w, label_w;                 /* table column widths, in characters */
    uint32_t top;
    uint32_t n_features;                    /* --features: the width F of each image's vector */
    const vkvit_model *model;
    cJSON *head;                            /* JSON: the document without "images" */
    uint32_t n_nan;                         /* text: probabilities that were not numbers (warned about at the end) */
} printer;

static const char *label_of(const vkvit_model *model, uint32_t c, char *fallback, size_t cap) {
    const char *label = vkvit_model_label(model, c);
    if (label) return label;
    snprintf(fallback, cap, "class %u", c);
    return fallback;
}

static void print_start(printer *p) {
    if (p->started) return;
    p->started = 1;
    if (p->json) {
        char *text = cli_json_line(p->head);
        size_t n = text ? strlen(text) : 0;
        if (n >= 2 && text[n - 1] == '}') text[n - 1] = '\0'; /* reopened: "images" follows */
        fputs(text ? text : "{", stdout);
        fputs(text && n > 2 ? ", \"images\": [" : "\"images\": [", stdout);
        free(text);
        return;
    }
    fputs("image", stdout);
    for (size_t i = 5; i < p->path_w; i++) fputc(' ', stdout);
    fputs("  rank  class", stdout);
    for (size_t i = 5; i < p->label_w; i++) fputc(' ', stdout);
    fputs("  probability\n", stdout);
}

static void print_result(printer *p, const image_result *ir) {
    if (!p->json) {
        if (!ir->ok) return; /* its line is on stderr */
        print_start(p);
        for (uint32_t k = 0; k < p->top; k++) {
            char fallback[32];
            cli_put_clean_padded(stdout, k == 0 ? ir->path : "", PATH_MAX_SHOWN, p->path_w);
            printf("  %4u  ", k + 1);
            cli_put_clean_padded(stdout, label_of(p->model, ir->classes[k], fallback, sizeof fallback), LABEL_MAX,
                                 p->label_w);
            if (isfinite(ir->probs[k])) {
                printf("  %9.2f %%\n", 100.0 * ir->probs[k]);
            } else {
                printf("  %9s  \n", "NaN"); /* not "-nan %": the logits were not finite */
                p->n_nan++;
            }
        }
        return;
    }
    print_start(p);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "image", cli_jstr(ir->path));
    if (!ir->ok) {
        cJSON_AddItemToObject(o, "error", cli_jstr(ir->error ? ir->error : ""));
    } else {
        cJSON_AddNumberToObject(o, "width", ir->width);
        cJSON_AddNumberToObject(o, "height", ir->height);
        cJSON *top = cJSON_AddArrayToObject(o, "top");
        for (uint32_t k = 0; k < p->top; k++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "rank", k + 1);
            cJSON_AddNumberToObject(e, "class", ir->classes[k]);
            cJSON_AddItemToObject(e, "label", cli_jstr(vkvit_model_label(p->model, ir->classes[k])));
            cJSON_AddItemToObject(e, "probability", cli_jfloat(ir->probs[k]));
            cJSON_AddItemToArray(top, e);
        }
        if (ir->features) {
            cJSON *f = cJSON_AddArrayToObject(o, "features");
            for (uint32_t i = 0; i < p->n_features; i++) cJSON_AddItemToArray(f, cli_jfloat(ir->features[i]));
        }
    }
    char *text = cli_json_line(o);
    cJSON_Delete(o);
    printf("%s\n  %s", p->n_printed++ ? "," : "", text ? text : "null");
    free(text);
}

static void print_end(printer *p) {
    if (p->json && p->head) {
        print_start(p);
        fputs("\n]}\n", stdout);
    }
}

/* A progress line on stderr (a terminal): done / total, rate, ETA. `clear` erases it. */
static void progress(uint32_t done, uint32_t total, uint64_t t0, int clear) {
    if (clear) {
        fputs("\r\033[K", stderr);
        return;
    }
    double s = (double)(cli_now_ns() - t0) * 1e-9;
    double rate = s > 0 ? done / s : 0;
    double eta = rate > 0 ? (total - done) / rate : 0;
    fprintf(stderr, "\r\033[Kvkvit classify: %u / %u images, %.1f images/s, ETA %um%02us", done, total, rate,
            (unsigned)(eta / 60), (unsigned)eta % 60);
    fflush(stderr);
}

int vkvit_cli_classify(int argc, char **argv) {
    classify_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_OK) return rc < 0 ? cli_finish_stdout("classify", CLI_OK) : rc;
    char bundled[4096];
    if (!a.model_path) {
        if (!cli_find_bundled_model(CLI_BUNDLED_MODEL, bundled, sizeof bundled)) {
            fprintf(stderr, "vkvit classify: no --model given and the bundled model %s is not installed (looked "
                            "at %s)\n", CLI_BUNDLED_MODEL, bundled);
            return CLI_BAD_INPUT;
        }
        a.model_path = bundled;
    }

    vkvit_result r;
    vkvit_ctx *ctx = NULL;
    vkvit_model *model = NULL;
    vkvit_session *s = NULL;
    image_result *res = calloc(a.n_paths, sizeof *res);
    cli_image *chunk = calloc(a.batch, sizeof *chunk);
    uint32_t *chunk_of = calloc(a.batch, sizeof *chunk_of); /* chunk slot -> index into res */
    uint32_t *classes = NULL;
    float *probs = NULL, *cond_file = NULL, *cond = NULL, *feats = NULL;
    uint32_t cond_rows = 0;
    size_t cond_row = 0;
    uint32_t n_bad = 0, batch = 0;
    printer pr = {.json = a.json};
    int tty = isatty(STDERR_FILENO);
    uint64_t t0 = cli_now_ns();
#define FAIL(r_)                                                                                              \
    do {                                                                                                      \
        cli_print_error("classify", cli_last_error());                                                        \
        rc = vkvit_cli_exit_code(r_);                                                                         \
        goto done;                                                                                            \
    } while (0)
    if (!res || !chunk || !chunk_of) {
        r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %u results", a.n_paths);
        FAIL(r);
    }
    for (uint32_t i = 0; i < a.n_paths; i++) res[i].path = a.paths[i];
    /* the model path first: a FIFO, a device or a foreign file is refused before any device work */
    if ((r = cli_sniff_model(a.model_path)) != VKVIT_OK) FAIL(r);
    /* The ctx's own label is the default; the log callback prefixes its lines with "vkvit classify". */
    vkvit_ctx_desc cd = {.device = a.device, .log = cli_log_stderr, .log_user = "vkvit classify"};
    if ((r = vkvit_ctx_create(&cd, &ctx)) != VKVIT_OK) FAIL(r);
    if ((r = vkvit_model_create(ctx, &(vkvit_model_desc){.path = a.model_path}, &model)) != VKVIT_OK) FAIL(r);
    vkvit_model_info info;
    vkvit_model_get_info(model, &info);
    uint32_t top = CLI_MIN(CLI_MIN(a.top, info.num_classes), VKVIT_MAX_TOP_K);

    /* Column widths from what will be printed: every image name, every label (or its "class N" stand-in). */
    pr.model = model;
    pr.top = top;
    pr.path_w = 5;
    pr.label_w = 5;
    for (uint32_t i = 0; i < a.n_paths; i++) pr.path_w = CLI_MAX(pr.path_w, cli_clean_width(a.paths[i], PATH_MAX_SHOWN));
    for (uint32_t c = 0; c < info.num_classes; c++) {
        char fallback[32];
        pr.label_w = CLI_MAX(pr.label_w, cli_clean_width(label_of(model, c, fallback, sizeof fallback), LABEL_MAX));
    }
    if (a.json) {
        vkvit_device_info dev;
        vkvit_ctx_device_info(ctx, &dev);
        pr.head = cJSON_CreateObject();
        cJSON_AddItemToObject(pr.head, "model", cli_jstr(a.model_path));
        cJSON_AddItemToObject(pr.head, "device", cli_jstr(dev.name));
        cJSON_AddStringToObject(pr.head, "precision", cli_precision_name(a.precision));
        cJSON_AddNumberToObject(pr.head, "top", top);
    }

    uint32_t next = 0, printed = 0; /* the next path to decode; results printed so far */
    while (next < a.n_paths) {
        /* Decode up to a batch of good images (and at most CLI_CHUNK_MAX_BYTES of pixels, so a batch of large photos
         * is never all held at once); bad ones are reported and skipped. */
        uint32_t count = 0, limit = s ? batch : a.batch;
        uint64_t max_pixels = 0, bytes = 0;
        while (count < limit && next < a.n_paths && bytes < CLI_CHUNK_MAX_BYTES) {
            image_result *ir = &res[next];
            if (tty) progress(0, 0, 0, 1);
            if ((r = load_image(ir->path, &chunk[count])) != VKVIT_OK) {
                if (r == VKVIT_ERROR_OUT_OF_HOST_MEMORY) FAIL(r);
                image_failed(ir);
                n_bad++;
            } else {
                ir->width = chunk[count].width;
                ir->height = chunk[count].height;
                max_pixels = CLI_MAX(max_pixels, (uint64_t)ir->width * ir->height);
                bytes += (uint64_t)ir->width * ir->height * 4;
                chunk_of[count++] = next;
            }
            next++;
        }
        if (count > 0 && !s) {
            /* The first batch holds every good image, or as many as --batch (or the memory cap) allows: its size is
             * the session's batch. */
            batch = count;
            vkvit_session_desc sd = {.label = "classify", .batch = batch, .precision = a.precision, .top_k = top,
                                     .max_image_pixels = max_pixels, .features = a.features};
            if ((r = vkvit_session_create(model, &sd, &s)) != VKVIT_OK) FAIL(r);
            if (a.features) {
                pr.n_features = vkvit_session_feature_shape(s).dims[1];
                if (!(feats = malloc((size_t)batch * pr.n_features * sizeof *feats))) {
                    r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the features");
                    FAIL(r);
                }
            }
            classes = malloc((size_t)batch * top * sizeof *classes);
            probs = malloc((size_t)batch * top * sizeof *probs);
            if (!classes || !probs) {
                r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %u results", batch);
                FAIL(r);
            }
            vkvit_shape cs = vkvit_session_condition_shape(s);
            char want[64];
            if (cs.ndim > 0) {
                cs.dims[0] = 1;
                cli_shape_text(&cs, want, sizeof want);
                if (!a.condition_path) {
                    rc = cli_usage_error("classify", "model '%s' takes a condition %s per image: give it with "
                                         "--condition FILE", a.model_path, want);
                    goto done;
                }
                if ((r = cli_read_condition(a.condition_path, cs, &cond_file, &cond_rows)) != VKVIT_OK) FAIL(r);
                if (cond_rows != 1 && cond_rows != a.n_paths) {
                    r = cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': the condition has %u rows: give 1 (for every "
                                  "image) or %u (one per image)", cli_input_name(a.condition_path), cond_rows,
                                  a.n_paths);
                    FAIL(r);
                }
                cond_row = 1;
                for (uint32_t d = 1; d < cs.ndim; d++) cond_row *= cs.dims[d];
                if (!(cond = malloc((size_t)batch * cond_row * sizeof *cond))) {
                    r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the condition");
                    FAIL(r);
                }
            } else if (a.condition_path) {
                fprintf(stderr, "vkvit classify: note: model '%s' takes no condition; --condition is ignored\n",
                        a.model_path);
            }
        }
        if (count > 0) {
            /* One upload per slot (the library's sentence then names one image); a short last batch repeats its last
             * image in the unused slots, whose results are not read. */
            for (uint32_t slot = 0; slot < batch; slot++) {
                uint32_t i = CLI_MIN(slot, count - 1);
                vkvit_image view = cli_image_view(&chunk[i]);
                if ((r = vkvit_session_set_images(s, slot, &view, 1)) != VKVIT_OK) FAIL(r);
                if (cond)
                    memcpy(cond + (size_t)slot * cond_row,
                           cond_file + (cond_rows == 1 ? 0 : (size_t)chunk_of[i] * cond_row), cond_row * sizeof *cond);
            }
            if (cond && (r = vkvit_session_set_condition(s, cond, (size_t)batch * cond_row)) != VKVIT_OK) FAIL(r);
            if ((r = vkvit_session_run(s)) != VKVIT_OK) FAIL(r);
            if ((r = vkvit_session_get_top_k(s, classes, probs, (size_t)batch * top)) != VKVIT_OK) FAIL(r);
            if (feats && (r = vkvit_session_get_features(s, feats, (size_t)batch * pr.n_features)) != VKVIT_OK)
                FAIL(r);
            for (uint32_t i = 0; i < count; i++) {
                image_result *ir = &res[chunk_of[i]];
                ir->classes = malloc(top * sizeof *ir->classes);
                ir->probs = malloc(top * sizeof *ir->probs);
                if (!ir->classes || !ir->probs) {
                    r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the results");
                    FAIL(r);
                }
                memcpy(ir->classes, classes + (size_t)i * top, top * sizeof *classes);
                memcpy(ir->probs, probs + (size_t)i * top, top * sizeof *probs);
                if (feats) {
                    if (!(ir->features = malloc(pr.n_features * sizeof *feats))) {
                        r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the results");
                        FAIL(r);
                    }
                    memcpy(ir->features, feats + (size_t)i * pr.n_features, pr.n_features * sizeof *feats);
                }
                ir->ok = 1;
            }
            for (uint32_t i = 0; i < count; i++) cli_image_free(&chunk[i]);
        }
        /* Stream: everything up to `next` is final. */
        if (tty) progress(0, 0, 0, 1);
        for (; printed < next; printed++) print_result(&pr, &res[printed]);
        cli_flush_stdout();
        if (cli_stdout_failed()) { /* nobody reads the rest (`| head`): stop, cli_finish_stdout says why */
            rc = CLI_FAILURE;
            goto done;
        }
        if (tty && next < a.n_paths) progress(next, a.n_paths, t0, 0);
    }
    rc = n_bad ? CLI_BAD_INPUT : CLI_OK;
#undef FAIL
done:
    if (tty) progress(0, 0, 0, 1);
    print_end(&pr); /* a JSON document is always closed, even after a failure */
    cJSON_Delete(pr.head);
    if (a.json) cli_json_warn_non_finite("classify");
    if (pr.n_nan)
        fprintf(stderr, "vkvit classify: warning: %u probabilit%s printed as NaN: the model's logits were not "
                        "finite numbers\n", pr.n_nan, pr.n_nan == 1 ? "y" : "ies");
    if (chunk)
        for (uint32_t i = 0; i < a.batch; i++) cli_image_free(&chunk[i]);
    if (res)
        for (uint32_t i = 0; i < a.n_paths; i++)
            free(res[i].error), free(res[i].classes), free(res[i].probs), free(res[i].features);
    free(res);
    free(chunk);
    free(chunk_of);
    free(classes);
    free(probs);
    free(feats);
    free(cond_file);
    free(cond);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
    return cli_finish_stdout("classify", rc);
}
