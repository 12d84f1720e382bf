/* vkvit classify: the K most probable classes of each image file.
 *
 *   vkvit classify IMG... [--model FILE] [--top K] [--json] [--device DEV] [--precision fp32|fp16]
 *
 * Images are decoded on the host (image_decode.c: PNG, JPEG, BMP, GIF, TGA -> RGBA8), pre-processed on the GPU as
 * the model file says (vkvit_session_set_images) and read out with the GPU's softmax + top-K
 * (vkvit_session_get_top_k). All good images run as one batch (at most CLASSIFY_MAX_BATCH per run; a last, shorter
 * chunk repeats its last image in the unused slots). A bad image gets one line on stderr and is left out; the
 * others are still classified, and the exit code is then 2. */
#include "cli.h"
#include "common.h"
#include "image_decode.h"

#include <stdlib.h>
#include <string.h>

#define CLASSIFY_MAX_BATCH 32u
#define CLASSIFY_DEFAULT_TOP 5u

static void classify_usage(FILE *f) {
    fprintf(f, "usage: vkvit classify IMAGE... [options]\n\n"
               "Prints the most probable classes of each image (PNG, JPEG, BMP, GIF, TGA; any bit depth, grey,\n"
               "palette or alpha). Images are resized, centre-cropped and normalised on the GPU as the model file's\n"
               "`preprocess` says; softmax and top-K run on the GPU. All images run as one batch (chunks of %u).\n\n"
               "options:\n"
               "  --model FILE      vkvit model file (default: the bundled CIFAR-10 ViT-5, %s, from\n"
               "                    <prefix>/share/vkvit/models/ next to the installed binary, else the source\n"
               "                    tree's assets/models/)\n"
               "  --top K           classes per image (default %u; clamped to the model's class count and %u)\n"
               "  --json            one JSON document on stdout (default: a table)\n"
               "  --precision P     fp32 (default) or fp16 (fp16 weights, fp32 activations)\n"
               "  --device DEV      Vulkan device index or name substring (default: $VKVIT_DEVICE, else the\n"
               "                    first discrete, integrated, virtual, then CPU device)\n"
               "  --help            this text\n\n"
               "exit codes: 0 every image classified; 1 usage error; 2 bad input: an image could not be read or\n"
               "decoded (one line on stderr each; the other images are still classified and printed), or the\n"
               "model file is missing or bad; 3 no Vulkan device; 4 runtime failure\n",
            CLASSIFY_MAX_BATCH, CLI_BUNDLED_MODEL, CLASSIFY_DEFAULT_TOP, VKVIT_MAX_TOP_K);
}

/* What one image on the command line came to. */
typedef struct image_result {
    const char *path;
    int ok;                                 /* 0: bad image, `error` says why */
    char *error;
    uint32_t width, height;
    uint32_t *classes;                      /* [top] */
    float *probs;                           /* [top] */
} image_result;

typedef struct classify_args {
    const char **paths;
    uint32_t n_paths;
    const char *model_path, *device;
    uint32_t top;
    int json;
    vkvit_precision precision;
} classify_args;

/* Returns CLI_OK, or the exit code after printing the reason. */
static int parse_args(int argc, char **argv, classify_args *a) {
    *a = (classify_args){.top = CLASSIFY_DEFAULT_TOP, .precision = VKVIT_PRECISION_FP32};
    a->paths = calloc((size_t)argc, sizeof *a->paths);
    if (!a->paths) {
        fprintf(stderr, "vkvit classify: out of memory\n");
        return CLI_FAILURE;
    }
    int options_done = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (options_done || s[0] != '-' || !strcmp(s, "-")) {
            a->paths[a->n_paths++] = s;
        } else if (!strcmp(s, "--")) {
            options_done = 1;
        } else if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            classify_usage(stdout);
            return -1;
        } else if (!strcmp(s, "--json")) {
            a->json = 1;
        } else if (!strcmp(s, "--model") && i + 1 < argc) {
            a->model_path = argv[++i];
        } else if (!strcmp(s, "--device") && i + 1 < argc) {
            a->device = argv[++i];
        } else if (!strcmp(s, "--top") && i + 1 < argc) {
            if (!cli_parse_u32(argv[++i], 1, 1000000, &a->top)) {
                fprintf(stderr, "vkvit classify: --top wants a positive integer, got '%s'\n", argv[i]);
                return CLI_USAGE;
            }
        } else if (!strcmp(s, "--precision") && i + 1 < argc) {
            if (!(a->precision = cli_parse_precision(argv[++i]))) {
                fprintf(stderr, "vkvit classify: --precision is fp32 or fp16, got '%s'\n", argv[i]);
                return CLI_USAGE;
            }
        } else {
            fprintf(stderr, "vkvit classify: unknown or incomplete option '%s' (vkvit classify --help)\n", s);
            return CLI_USAGE;
        }
    }
    if (a->n_paths == 0) {
        fprintf(stderr, "vkvit classify: no image given (usage: vkvit classify IMAGE... [options])\n");
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* Records a bad image: one line on stderr now, the sentence kept for --json. */
static void image_failed(image_result *res) {
    const char *why = vkvit_last_error();
    fprintf(stderr, "vkvit classify: %s\n", why);
    res->ok = 0;
    res->error = strdup(why);
}

static void print_table(const image_result *res, uint32_t n, uint32_t top, const vkvit_model *model) {
    int w = (int)strlen("image");
    for (uint32_t i = 0; i < n; i++)
        if (res[i].ok && (int)strlen(res[i].path) > w) w = (int)strlen(res[i].path);
    int lw = (int)strlen("class");
    vkvit_model_info info;
    vkvit_model_get_info(model, &info);
    for (uint32_t c = 0; c < info.num_classes; c++) {
        const char *l = vkvit_model_label(model, c);
        if (l && (int)strlen(l) > lw) lw = (int)strlen(l);
    }
    printf("%-*s  rank  %-*s  probability\n", w, "image", lw, "class");
    for (uint32_t i = 0; i < n; i++) {
        if (!res[i].ok) continue;
        for (uint32_t k = 0; k < top; k++) {
            char fallback[32];
            const char *label = vkvit_model_label(model, res[i].classes[k]);
            if (!label) snprintf(fallback, sizeof fallback, "class %u", res[i].classes[k]), label = fallback;
            printf("%-*s  %4u  %-*s  %9.2f %%\n", w, k == 0 ? res[i].path : "", k + 1, lw, label,
                   100.0 * res[i].probs[k]);
        }
    }
}

static void print_json(const image_result *res, uint32_t n, uint32_t top, const vkvit_model *model,
                       const char *model_path, const char *device, vkvit_precision precision) {
    printf("{\"model\": ");
    cli_json_string(stdout, model_path);
    printf(", \"device\": ");
    cli_json_string(stdout, device);
    printf(", \"precision\": \"%s\", \"top\": %u, \"images\": [", cli_precision_name(precision), top);
    for (uint32_t i = 0; i < n; i++) {
        printf("%s\n  {\"image\": ", i ? "," : "");
        cli_json_string(stdout, res[i].path);
        if (!res[i].ok) {
            printf(", \"error\": ");
            cli_json_string(stdout, res[i].error ? res[i].error : "");
            printf("}");
            continue;
        }
        printf(", \"width\": %u, \"height\": %u, \"top\": [", res[i].width, res[i].height);
        for (uint32_t k = 0; k < top; k++) {
            char fallback[32];
            const char *label = vkvit_model_label(model, res[i].classes[k]);
            if (!label) snprintf(fallback, sizeof fallback, "class %u", res[i].classes[k]), label = fallback;
            printf("%s{\"rank\": %u, \"class\": %u, \"label\": ", k ? ", " : "", k + 1, res[i].classes[k]);
            cli_json_string(stdout, label);
            printf(", \"probability\": %.6f}", res[i].probs[k]);
        }
        printf("]}");
    }
    printf("\n]}\n");
}

int vkvit_cli_classify(int argc, char **argv) {
    classify_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_OK) {
        free(a.paths);
        return rc < 0 ? CLI_OK : rc;
    }
    char bundled[4096];
    if (!a.model_path) {
        if (!cli_find_bundled_model(CLI_BUNDLED_MODEL, bundled, sizeof bundled)) {
            fprintf(stderr, "vkvit classify: no --model given and the bundled model %s is not installed (looked "
                            "at %s)\n", CLI_BUNDLED_MODEL, bundled);
            free(a.paths);
            return CLI_BAD_INPUT;
        }
        a.model_path = bundled;
    }

    vkvit_result r;
    vkvit_ctx *ctx = NULL;
    vkvit_model *model = NULL;
    vkvit_session *s = NULL;
    image_result *res = calloc(a.n_paths, sizeof *res);
    cli_image chunk[CLASSIFY_MAX_BATCH] = {{0}};
    uint32_t chunk_of[CLASSIFY_MAX_BATCH];  /* chunk slot -> index into res */
    uint32_t *classes = NULL;
    float *probs = NULL;
    uint32_t n_bad = 0, batch = 0;
#define FAIL(r_)                                                                                              \
    do {                                                                                                      \
        fprintf(stderr, "vkvit classify: %s\n", vkvit_last_error());                                          \
        rc = vkvit_cli_exit_code(r_);                                                                         \
        goto done;                                                                                            \
    } while (0)
    if (!res) {
        r = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %u results", a.n_paths);
        FAIL(r);
    }
    vkvit_ctx_desc cd = {.label = "vkvit classify", .device = a.device, .log = cli_log_stderr,
                         .log_user = "vkvit classify"};
    if ((r = vkvit_ctx_create(&cd, &ctx)) != VKVIT_OK) FAIL(r);
    if ((r = vkvit_model_create(ctx, &(vkvit_model_desc){.path = a.model_path}, &model)) != VKVIT_OK) FAIL(r);
    vkvit_model_info info;
    vkvit_model_get_info(model, &info);
    uint32_t top = VKVIT_MIN(VKVIT_MIN(a.top, info.num_classes), VKVIT_MAX_TOP_K);

    uint32_t next = 0; /* the next path to decode */
    while (next < a.n_paths) {
        /* Decode up to a batch of good images (and at most CLI_CHUNK_MAX_BYTES of pixels, so 32 large photos are
         * never all held at once); bad ones are reported and skipped. */
        uint32_t count = 0, limit = s ? batch : CLASSIFY_MAX_BATCH;
        uint64_t max_pixels = 0, bytes = 0;
        while (count < limit && next < a.n_paths && bytes < CLI_CHUNK_MAX_BYTES) {
            image_result *ir = &res[next];
            ir->path = a.paths[next];
            if ((r = cli_image_load(ir->path, &chunk[count])) != VKVIT_OK) {
                if (r == VKVIT_ERROR_OUT_OF_HOST_MEMORY) FAIL(r);
                image_failed(ir);
                n_bad++;
            } else {
                ir->width = chunk[count].width;
                ir->height = chunk[count].height;
                max_pixels = VKVIT_MAX(max_pixels, (uint64_t)ir->width * ir->height);
                bytes += (uint64_t)ir->width * ir->height * 4;
                chunk_of[count++] = next;
            }
            next++;
        }
        if (count == 0) break;
        if (!s) {
            /* The first chunk holds every good image, or as many as a batch (or the memory cap) allows: its size
             * is the batch. */
            batch = count;
            vkvit_session_desc sd = {.label = "classify", .batch = batch, .precision = a.precision, .top_k = top,
                                     .max_image_pixels = max_pixels};
            if ((r = vkvit_session_create(model, &sd, &s)) != VKVIT_OK) FAIL(r);
            classes = malloc((size_t)batch * top * sizeof *classes);
            probs = malloc((size_t)batch * top * sizeof *probs);
            if (!classes || !probs) {
                r = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %u results", batch);
                FAIL(r);
            }
        }
        /* One upload per slot (the library's sentence then names one image); a short last chunk repeats its last
         * image in the unused slots, whose results are not read. */
        for (uint32_t slot = 0; slot < batch; slot++) {
            uint32_t i = VKVIT_MIN(slot, count - 1);
            vkvit_image view = cli_image_view(&chunk[i]);
            if ((r = vkvit_session_set_images(s, slot, &view, 1)) != VKVIT_OK) FAIL(r);
        }
        if ((r = vkvit_session_run(s)) != VKVIT_OK) FAIL(r);
        if ((r = vkvit_session_get_top_k(s, classes, probs, (size_t)batch * top)) != VKVIT_OK) FAIL(r);
        for (uint32_t i = 0; i < count; i++) {
            image_result *ir = &res[chunk_of[i]];
            ir->classes = malloc(top * sizeof *ir->classes);
            ir->probs = malloc(top * sizeof *ir->probs);
            if (!ir->classes || !ir->probs) {
                r = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the results");
                FAIL(r);
            }
            memcpy(ir->classes, classes + (size_t)i * top, top * sizeof *classes);
            memcpy(ir->probs, probs + (size_t)i * top, top * sizeof *probs);
            ir->ok = 1;
        }
        for (uint32_t i = 0; i < count; i++) cli_image_free(&chunk[i]);
    }

    vkvit_device_info dev;
    vkvit_ctx_device_info(ctx, &dev);
    if (a.json) print_json(res, a.n_paths, top, model, a.model_path, dev.name, a.precision);
    else if (n_bad < a.n_paths) print_table(res, a.n_paths, top, model);
    rc = n_bad ? CLI_BAD_INPUT : CLI_OK;
#undef FAIL
done:
    for (uint32_t i = 0; i < CLASSIFY_MAX_BATCH; i++) cli_image_free(&chunk[i]);
    if (res)
        for (uint32_t i = 0; i < a.n_paths; i++) free(res[i].error), free(res[i].classes), free(res[i].probs);
    free(res);
    free(classes);
    free(probs);
    free(a.paths);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
    return rc;
}
