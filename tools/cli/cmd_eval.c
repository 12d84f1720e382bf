/* vkvit eval: accuracy of a model on a folder of labelled images.
 *
 *   vkvit eval --data DIR [--model FILE] [--batch N] [--limit N] [--json] [--predictions FILE] [--device DEV]
 *              [--precision fp32|fp16|fp16-math]
 *
 * DIR holds test/<class>/<image> (or <class>/<image> directly); each class folder's name must be one of the
 * model's labels. Images are taken in a fixed order that cycles through the classes (the first image of every
 * class, then the second, ...), so --limit N keeps the classes balanced. Each batch: decode on the host
 * (image_decode.c), vkvit_session_set_images (GPU resize / crop / normalise), run, top-1 on the GPU. */
#include "cli.h"
#include "image_decode.h"

#include <cjson/cJSON.h>

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define EVAL_DEFAULT_BATCH 64u
#define EVAL_MAX_BATCH 1024u
#define EVAL_SKIPPED_EXAMPLES 8u

static void eval_usage(FILE *f) {
    fprintf(f, "usage: vkvit eval --data DIR [options]\n\n"
               "Classifies every image under DIR/test/<class>/ (or DIR/<class>/ when DIR has no test/ folder) and\n"
               "prints the accuracy, the accuracy per class and the throughput. Class folder names must be labels\n"
               "of the model. Images (PNG, JPEG, BMP, GIF, TGA, WebP) are taken cycling through the classes in\n"
               "name order, so --limit keeps the classes balanced; other files in class folders are skipped and\n"
               "counted. A progress bar with an ETA goes to stderr when it is a terminal.\n\n"
               "options:\n"
               "  --data DIR           the labelled images (required)\n"
               "  -m, --model FILE     vkvit model file (default: the bundled %s, as for classify)\n"
               "  -b, --batch N        images per inference (default %u, at most %u); a shorter remainder runs\n"
               "                       in a session of its own size, never padded\n"
               "  --limit N            evaluate only the first N images of that order (default: all)\n"
               "  --predictions FILE   also write one line per image: path<TAB>true label<TAB>predicted label\n"
               "                       (predicted is '-' for an unreadable image); default: none. FILE is\n"
               "                       created before any image is evaluated, so a bad path fails at once\n"
               "  --json               one JSON object on stdout, no progress bar (default: text)\n"
               "  --precision P        fp32 (default), fp16 (fp16 weights) or fp16-math (fp16 GEMM arithmetic)\n"
               "  --device DEV         Vulkan device index or name substring (default: $VKVIT_DEVICE, else the\n"
               "                       first discrete, integrated, virtual, then CPU device)\n"
               "  -h, --help           this text\n\n"
               "exit codes: 0 success; 1 usage error; 2 bad input: DIR missing or without images, a class folder\n"
               "that is not a label, a bad model file, or unreadable images (one line on stderr each; the rest are\n"
               "still evaluated and reported); 3 no Vulkan device; 4 runtime failure, or a --predictions FILE\n"
               "that cannot be created or written\n",
            CLI_BUNDLED_MODEL, EVAL_DEFAULT_BATCH, EVAL_MAX_BATCH);
}

typedef struct eval_item {
    char *path;
    uint32_t label;                         /* true class */
    int32_t predicted;                      /* -1: unreadable, or not evaluated */
} eval_item;

typedef struct eval_list {
    eval_item *items;
    uint32_t count, cap;
    uint32_t skipped;                       /* files in class folders that are not supported images */
    char *skipped_examples[EVAL_SKIPPED_EXAMPLES]; /* the first few of them (paths), for the report */
} eval_list;

typedef struct name_list {
    char **names;
    uint32_t count, cap;
} name_list;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void names_free(name_list *l) {
    for (uint32_t i = 0; i < l->count; i++) free(l->names[i]);
    free(l->names);
    *l = (name_list){0};
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int has_image_extension(const char *name) {
    static const char *const exts[] = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tga", ".webp"};
    size_t n = strlen(name);
    for (size_t i = 0; i < CLI_ARRAY_LEN(exts); i++) {
        size_t e = strlen(exts[i]);
        if (n > e && !strcasecmp(name + n - e, exts[i])) return 1;
    }
    return 0;
}

/* The sorted names in `dir` (hidden entries skipped): its subfolders (want_dirs) or its image files. With
 * `skipped` (image files only): files that are not of a supported image type are counted there, and the first
 * EVAL_SKIPPED_EXAMPLES of them (over all calls) kept as paths. */
static vkvit_result list_dir(const char *dir, int want_dirs, name_list *out, eval_list *skipped) {
    *out = (name_list){0};
    DIR *d = opendir(dir);
    if (!d) return cli_error(VKVIT_ERROR_IO, "cannot open the folder '%s': %s", dir, strerror(errno));
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
        if (!want_dirs && skipped && !is_dir(path) && !has_image_extension(e->d_name)) {
            if (skipped->skipped < EVAL_SKIPPED_EXAMPLES && !(skipped->skipped_examples[skipped->skipped] =
                                                                  strdup(path)))
                goto oom;
            skipped->skipped++;
            continue;
        }
        if (want_dirs ? !is_dir(path) : (is_dir(path) || !has_image_extension(e->d_name))) continue;
        if (out->count == out->cap) {
            uint32_t cap = out->cap ? out->cap * 2 : 64;
            char **grown = realloc(out->names, cap * sizeof *grown);
            if (!grown) goto oom;
            out->names = grown;
            out->cap = cap;
        }
        if (!(out->names[out->count] = strdup(e->d_name))) goto oom;
        out->count++;
    }
    closedir(d);
    if (out->count) qsort(out->names, out->count, sizeof *out->names, cmp_str);
    return VKVIT_OK;
oom:
    closedir(d);
    names_free(out);
    return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory listing '%s'", dir);
}

/* Collects DIR's labelled images, cycling through the classes; checks every class folder against the labels.
 * Files of other types in the class folders are counted in out->skipped. */
static vkvit_result collect(const char *data_dir, const vkvit_model *model, uint32_t limit, eval_list *out,
                            char *root, size_t root_cap) {
    if (snprintf(root, root_cap, "%s/test", data_dir) >= (int)root_cap || !is_dir(root))
        snprintf(root, root_cap, "%s", data_dir);
    if (strlen(data_dir) >= root_cap || !is_dir(root)) return cli_error(VKVIT_ERROR_IO, "--data '%s' is not a folder", data_dir);

    vkvit_model_info info;
    vkvit_model_get_info(model, &info);
    if (info.num_labels == 0)
        return cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "the model file has no class labels, so class folders "
                         "cannot be matched to its classes");
    name_list classes;
    vkvit_result r = list_dir(root, 1, &classes, NULL);
    if (r != VKVIT_OK) return r;
    if (classes.count == 0) {
        names_free(&classes);
        return cli_error(VKVIT_ERROR_IO, "'%s' has no class folders (expected <class>/<image> or "
                         "test/<class>/<image>)", root);
    }
    name_list *files = calloc(classes.count, sizeof *files);
    uint32_t *label_of = calloc(classes.count, sizeof *label_of);
    if (!files || !label_of) {
        r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory listing '%s'", root);
        goto done;
    }
    uint32_t total = 0, longest = 0;
    for (uint32_t c = 0; c < classes.count; c++) {
        uint32_t l = 0;
        while (l < info.num_labels && strcmp(vkvit_model_label(model, l), classes.names[c])) l++;
        if (l == info.num_labels) {
            char some[256] = "";
            for (uint32_t k = 0; k < info.num_labels && k < 10; k++)
                snprintf(some + strlen(some), sizeof some - strlen(some), "%s%s", k ? ", " : "",
                         vkvit_model_label(model, k));
            r = cli_error(VKVIT_ERROR_BAD_IMAGE, "class folder '%s/%s' is not one of the model's labels (%s%s)",
                          root, classes.names[c], some, info.num_labels > 10 ? ", ..." : "");
            goto done;
        }
        uint32_t twin = l + 1; /* a label that appears twice (ImageNet's "crane") cannot name one class */
        while (twin < info.num_labels && strcmp(vkvit_model_label(model, twin), classes.names[c])) twin++;
        if (twin < info.num_labels) {
            r = cli_error(VKVIT_ERROR_BAD_IMAGE, "class folder '%s/%s' matches the model's labels %u and %u: eval "
                          "cannot tell which class its images belong to", root, classes.names[c], l, twin);
            goto done;
        }
        label_of[c] = l;
        char dir[4096];
        if (snprintf(dir, sizeof dir, "%s/%s", root, classes.names[c]) >= (int)sizeof dir) {
            r = cli_error(VKVIT_ERROR_IO, "the path '%s/%s' is too long", root, classes.names[c]);
            goto done;
        }
        if ((r = list_dir(dir, 0, &files[c], out)) != VKVIT_OK) goto done;
        total += files[c].count;
        longest = CLI_MAX(longest, files[c].count);
    }
    if (total == 0) {
        r = cli_error(VKVIT_ERROR_IO, "the class folders under '%s' hold no image files (.jpg, .jpeg, .png, "
                      ".bmp, .gif, .tga, .webp)%s", root, out->skipped ? "; other files are skipped" : "");
        goto done;
    }
    uint32_t n = limit ? CLI_MIN(limit, total) : total;
    out->items = calloc(n, sizeof *out->items);
    if (!out->items) {
        r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %u images", n);
        goto done;
    }
    out->cap = n;
    for (uint32_t k = 0; k < longest && out->count < n; k++)
        for (uint32_t c = 0; c < classes.count && out->count < n; c++) {
            if (k >= files[c].count) continue;
            char path[4096];
            if (snprintf(path, sizeof path, "%s/%s/%s", root, classes.names[c], files[c].names[k]) >=
                (int)sizeof path) {
                r = cli_error(VKVIT_ERROR_IO, "the path '%s/%s/%s' is too long", root, classes.names[c],
                              files[c].names[k]);
                goto done;
            }
            eval_item *it = &out->items[out->count];
            if (!(it->path = strdup(path))) {
                r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %u images", n);
                goto done;
            }
            it->label = label_of[c];
            it->predicted = -1;
            out->count++;
        }
done:
    if (files)
        for (uint32_t c = 0; c < classes.count; c++) names_free(&files[c]);
    free(files);
    free(label_of);
    names_free(&classes);
    return r;
}

static void eval_list_free(eval_list *l) {
    for (uint32_t i = 0; i < l->count; i++) free(l->items[i].path);
    for (uint32_t i = 0; i < EVAL_SKIPPED_EXAMPLES; i++) free(l->skipped_examples[i]);
    free(l->items);
    *l = (eval_list){0};
}

/* The progress bar (stderr is a terminal): done / total, the rate so far and the time left at that rate. */
static void progress(uint32_t done, uint32_t total, double seconds) {
    const int width = 30;
    int filled = total ? (int)((uint64_t)done * width / total) : width;
    double rate = seconds > 0 ? done / seconds : 0.0;
    char eta[32] = "ETA --:--";
    if (done == total) {
        snprintf(eta, sizeof eta, "took %u:%02u", (unsigned)(seconds / 60), (unsigned)fmod(seconds, 60.0));
    } else if (rate > 0) {
        double left = (total - done) / rate;
        if (left < 360000) snprintf(eta, sizeof eta, "ETA %u:%02u", (unsigned)(left / 60), (unsigned)fmod(left, 60.0));
    }
    fprintf(stderr, "\r[%.*s%*s] %u/%u  %.1f images/s  %s ", filled, "##############################",
            width - filled, "", done, total, rate, eta);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

/* The --predictions table, one line per image, into `out` (opened before the run: cli_out_open). */
static vkvit_result write_predictions(cli_out_file *out, const eval_list *list, const vkvit_model *model) {
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f) return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the --predictions table");
    fprintf(f, "# path\ttrue\tpredicted\n");
    for (uint32_t i = 0; i < list->count; i++) {
        const eval_item *it = &list->items[i];
        fprintf(f, "%s\t%s\t%s\n", it->path, vkvit_model_label(model, it->label),
                it->predicted < 0 ? "-" : vkvit_model_label(model, (uint32_t)it->predicted));
    }
    const int failed = ferror(f) != 0;
    vkvit_result r = fclose(f) != 0 || failed
                         ? cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the --predictions table")
                         : cli_out_write(out, text, size);
    free(text);
    return r;
}

/* ---- JSON (cJSON): valid UTF-8 strings, null for numbers that are not finite ---- */

/* Adds a string (valid UTF-8, cli_jstr) / a number (null when not finite, cli_jnum); 0 when out of memory. */
static int json_add_string(cJSON *obj, const char *key, const char *value) {
    cJSON *v = cli_jstr(value);
    return v && cJSON_AddItemToObject(obj, key, v);
}

static int json_add_number(cJSON *obj, const char *key, double value) {
    cJSON *v = cli_jnum(value);
    return v && cJSON_AddItemToObject(obj, key, v);
}

/* Writes `s` between `before` and `after` for a terminal (cli_put_clean: valid UTF-8, no control characters or
 * bidirectional overrides). */
static void put_clean(FILE *f, const char *before, const char *s, const char *after) {
    fputs(before, f);
    cli_put_clean(f, s, 4096);
    fputs(after, f);
}

int vkvit_cli_eval(int argc, char **argv) {
    const char *model_path = NULL, *data_dir = NULL, *pred_path = NULL, *device = NULL;
    uint32_t batch_max = EVAL_DEFAULT_BATCH, limit = 0;
    int json = 0;
    vkvit_precision precision = VKVIT_PRECISION_FP32;
    enum { OPT_JSON = 256, OPT_DATA, OPT_PREDICTIONS, OPT_DEVICE, OPT_LIMIT, OPT_PRECISION };
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},           {"json", no_argument, NULL, OPT_JSON},
        {"model", required_argument, NULL, 'm'},    {"data", required_argument, NULL, OPT_DATA},
        {"predictions", required_argument, NULL, OPT_PREDICTIONS}, {"device", required_argument, NULL, OPT_DEVICE},
        {"batch", required_argument, NULL, 'b'},    {"limit", required_argument, NULL, OPT_LIMIT},
        {"precision", required_argument, NULL, OPT_PRECISION}, {NULL, 0, NULL, 0},
    };
    cli_opts opts; /* the same parsing as every command: -m / -b short forms, prefixes, --name=value, -- */
    cli_opts_init(&opts, "eval", argc, argv, "m:b:h", longopts);
    for (int c; (c = cli_opts_next(&opts)) != -1;) {
        switch (c) {
        case 'h': eval_usage(stdout); return CLI_OK;
        case OPT_JSON: json = 1; break;
        case 'm': model_path = opts.arg; break;
        case OPT_DATA: data_dir = opts.arg; break;
        case OPT_PREDICTIONS: pred_path = opts.arg; break;
        case OPT_DEVICE: device = opts.arg; break;
        case 'b': if (!cli_opt_u32(&opts, 1, EVAL_MAX_BATCH, &batch_max)) return CLI_USAGE; break;
        case OPT_LIMIT: if (!cli_opt_u32(&opts, 1, UINT32_MAX, &limit)) return CLI_USAGE; break;
        case OPT_PRECISION: if (!cli_opt_precision(&opts, &precision)) return CLI_USAGE; break;
        default: return CLI_USAGE;
        }
    }
    const int optind_done = opts.first_operand;
    if (optind_done < argc)
        return cli_usage_error("eval", "unexpected argument '%s' (the images are given with --data DIR)", argv[optind_done]);
    if (!data_dir) return cli_usage_error("eval", "--data DIR is required");
    char bundled[4096];
    if (!model_path) {
        if (!cli_find_bundled_model(CLI_BUNDLED_MODEL, bundled, sizeof bundled)) {
            fprintf(stderr, "vkvit eval: no --model given and the bundled model %s is not installed (looked at "
                            "%s)\n", CLI_BUNDLED_MODEL, bundled);
            return CLI_BAD_INPUT;
        }
        model_path = bundled;
    }

    /* Every output is opened before any work, so a bad path costs nothing and never loses a finished run; an
     * existing file is replaced only when the table is complete (cli_out_commit), and never the model itself. */
    cli_out_file pred = {.fd = -1};
    if (pred_path && !strcmp(pred_path, "-"))
        return cli_usage_error("eval", "--predictions wants a file: standard output carries the report");
    if (pred_path) {
        struct stat st;
        if (stat(pred_path, &st) == 0 && S_ISDIR(st.st_mode)) {
            fprintf(stderr, "vkvit eval: --predictions '%s' is a directory, not a file\n", pred_path);
            return CLI_FAILURE; /* an output that cannot be written: exit 4, as for run --output */
        }
        if (cli_same_file(pred_path, model_path))
            return cli_usage_error("eval", "--predictions '%s' is the model file; give another path", pred_path);
        if (cli_out_open(&pred, pred_path) != VKVIT_OK) {
            fprintf(stderr, "vkvit eval: cannot create the --predictions file: %s\n", cli_last_error());
            cli_out_abort(&pred);
            return CLI_FAILURE;
        }
    }

    int rc = CLI_OK;
    vkvit_result r;
    vkvit_ctx *ctx = NULL;
    vkvit_model *model = NULL;
    vkvit_session *s = NULL, *tail = NULL;
    eval_list list = {0};
    cli_image *chunk = NULL;
    vkvit_image *views = NULL;
    uint32_t *chunk_of = NULL, *classes = NULL, *per_class_total = NULL, *per_class_correct = NULL;
    float *probs = NULL;
    cJSON *doc = NULL;
    char *text = NULL;
    int pred_written = 0;
    char root[4096];
#define FAIL(r_)                                                                                              \
    do {                                                                                                      \
        cli_print_error("eval", cli_last_error());                                             \
        rc = vkvit_cli_exit_code(r_);                                                                         \
        goto done;                                                                                            \
    } while (0)
    /* the model path first: a FIFO, a device or a foreign file is refused before any device work */
    if ((r = cli_sniff_model(model_path)) != VKVIT_OK) FAIL(r);
    vkvit_ctx_desc cd = {.label = "eval", .device = device, .log = cli_log_stderr, .log_user = "vkvit eval"};
    if ((r = vkvit_ctx_create(&cd, &ctx)) != VKVIT_OK) FAIL(r);
    if ((r = vkvit_model_create(ctx, &(vkvit_model_desc){.path = model_path}, &model)) != VKVIT_OK) FAIL(r);
    vkvit_model_info info;
    vkvit_model_get_info(model, &info);
    if ((r = collect(data_dir, model, limit, &list, root, sizeof root)) != VKVIT_OK) FAIL(r);
    /* an existing --predictions file must not be one of the images it is about */
    for (uint32_t i = 0; pred.replace && i < list.count; i++)
        if (cli_same_file(list.items[i].path, pred.real)) {
            rc = cli_usage_error("eval", "--predictions '%s' is one of the images under --data; give another path", pred_path);
            goto done;
        }
    const uint64_t max_pixels = cli_image_device_max_pixels(ctx);

    /* Full batches run in `s`; the remainder (list.count % batch images) in `tail`, a session of exactly that
     * size, created here with the other so that neither the timing nor the GPU work includes padding. */
    uint32_t batch = CLI_MIN(batch_max, list.count), tail_batch = list.count % batch;
    chunk = calloc(batch, sizeof *chunk);
    views = calloc(batch, sizeof *views);
    chunk_of = calloc(batch, sizeof *chunk_of);
    classes = calloc(batch, sizeof *classes);
    probs = calloc(batch, sizeof *probs);
    per_class_total = calloc(info.num_classes, sizeof *per_class_total);
    per_class_correct = calloc(info.num_classes, sizeof *per_class_correct);
    if (!chunk || !views || !chunk_of || !classes || !probs || !per_class_total || !per_class_correct) {
        r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for a batch of %u", batch);
        FAIL(r);
    }
    vkvit_session_desc sd = {.label = "eval", .batch = batch, .precision = precision, .top_k = 1,
                             .max_image_pixels = (uint64_t)info.image_height * info.image_width};
    if ((r = vkvit_session_create(model, &sd, &s)) != VKVIT_OK) FAIL(r);
    if (tail_batch) {
        vkvit_session_desc td = sd;
        td.label = "eval (remainder)";
        td.batch = tail_batch;
        if ((r = vkvit_session_create(model, &td, &tail)) != VKVIT_OK) FAIL(r);
    }

    int show_progress = !json && isatty(STDERR_FILENO);
    uint32_t n_bad = 0, n_done = 0, n_correct = 0, runs_full = 0, runs_tail = 0, padded = 0;
    uint64_t t_start = cli_now_ns(), gpu_ns = 0;
    uint32_t next = 0;
    while (next < list.count) {
        uint32_t count = 0;
        uint64_t bytes = 0;
        while (count < batch && next < list.count && bytes < CLI_CHUNK_MAX_BYTES) {
            eval_item *it = &list.items[next];
            if ((r = cli_image_load_max(it->path, max_pixels, &chunk[count])) != VKVIT_OK) {
                if (r == VKVIT_ERROR_OUT_OF_HOST_MEMORY) FAIL(r);
                if (show_progress) fputc('\n', stderr);
                cli_print_error("eval", cli_last_error());
                n_bad++;
            } else {
                bytes += (uint64_t)chunk[count].width * chunk[count].height * 4;
                chunk_of[count++] = next;
            }
            next++;
        }
        if (count > 0) {
            /* A short chunk (the remainder, or fewer after unreadable images) runs in the remainder's session when
             * it fits there; only a chunk cut short by the memory cap is padded (repeating its last image). */
            vkvit_session *run = count <= tail_batch ? tail : s;
            uint32_t slots = run == tail ? tail_batch : batch;
            for (uint32_t slot = 0; slot < slots; slot++)
                views[slot] = cli_image_view(&chunk[CLI_MIN(slot, count - 1)]);
            padded += slots - count;
            uint64_t t0 = cli_now_ns();
            if ((r = vkvit_session_set_images(run, 0, views, slots)) != VKVIT_OK) FAIL(r);
            if ((r = vkvit_session_run(run)) != VKVIT_OK) FAIL(r);
            if ((r = vkvit_session_get_top_k(run, classes, probs, slots)) != VKVIT_OK) FAIL(r);
            gpu_ns += cli_now_ns() - t0;
            if (run == tail) runs_tail++;
            else runs_full++;
            for (uint32_t i = 0; i < count; i++) {
                eval_item *it = &list.items[chunk_of[i]];
                it->predicted = (int32_t)classes[i];
                per_class_total[it->label]++;
                if (classes[i] == it->label) per_class_correct[it->label]++, n_correct++;
                cli_image_free(&chunk[i]);
            }
            n_done += count;
        }
        if (show_progress) progress(next, list.count, (double)(cli_now_ns() - t_start) * 1e-9);
    }
    double seconds = (double)(cli_now_ns() - t_start) * 1e-9, gpu_seconds = (double)gpu_ns * 1e-9;
    double accuracy = n_done ? (double)n_correct / n_done : NAN;
    double ips = seconds > 0 ? n_done / seconds : NAN, gpu_ips = gpu_seconds > 0 ? n_done / gpu_seconds : NAN;
    if (pred_path) {
        if ((r = write_predictions(&pred, &list, model)) != VKVIT_OK || (r = cli_out_commit(&pred)) != VKVIT_OK) {
            cli_print_error("eval", cli_last_error());
            rc = CLI_FAILURE; /* the table could not be written: a runtime failure, not bad input */
            goto done;
        }
        pred_written = 1;
    }

    vkvit_device_info dev;
    vkvit_ctx_device_info(ctx, &dev);
    if (json) {
        doc = cJSON_CreateObject();
        int ok = doc && json_add_string(doc, "model", model_path) && json_add_string(doc, "data", root) &&
                 json_add_string(doc, "device", dev.name) &&
                 cJSON_AddStringToObject(doc, "precision", cli_precision_name(precision)) &&
                 cJSON_AddNumberToObject(doc, "batch", batch) && cJSON_AddNumberToObject(doc, "images", n_done) &&
                 cJSON_AddNumberToObject(doc, "unreadable", n_bad) &&
                 cJSON_AddNumberToObject(doc, "skipped", list.skipped) &&
                 cJSON_AddNumberToObject(doc, "correct", n_correct) && json_add_number(doc, "accuracy", accuracy) &&
                 json_add_number(doc, "seconds", seconds) && json_add_number(doc, "images_per_s", ips) &&
                 json_add_number(doc, "gpu_images_per_s", gpu_ips) &&
                 cJSON_AddNumberToObject(doc, "padded_slots", padded);
        cJSON *arr = ok ? cJSON_AddArrayToObject(doc, "skipped_files") : NULL;
        ok = ok && arr;
        for (uint32_t i = 0; ok && i < CLI_MIN(list.skipped, EVAL_SKIPPED_EXAMPLES); i++) {
            cJSON *item = cli_jstr(list.skipped_examples[i]);
            ok = item && cJSON_AddItemToArray(arr, item);
        }
        cJSON *runs = ok ? cJSON_AddArrayToObject(doc, "runs") : NULL;
        ok = ok && runs;
        for (int k = 0; ok && k < 2; k++) {
            uint32_t b = k ? tail_batch : batch, n = k ? runs_tail : runs_full;
            if (!n) continue;
            cJSON *o = cJSON_CreateObject();
            ok = o && cJSON_AddItemToArray(runs, o) && cJSON_AddNumberToObject(o, "batch", b) &&
                 cJSON_AddNumberToObject(o, "count", n);
        }
        cJSON *pc = ok ? cJSON_AddObjectToObject(doc, "per_class") : NULL;
        ok = ok && pc;
        for (uint32_t c = 0; ok && c < info.num_classes; c++) {
            if (!per_class_total[c]) continue;
            char *label = cli_utf8_fix(vkvit_model_label(model, c));
            cJSON *o = label ? cJSON_CreateObject() : NULL;
            if (o && !cJSON_AddItemToObject(pc, label, o)) cJSON_Delete(o), o = NULL;
            ok = o && cJSON_AddNumberToObject(o, "correct", per_class_correct[c]) &&
                 cJSON_AddNumberToObject(o, "images", per_class_total[c]) &&
                 json_add_number(o, "accuracy", (double)per_class_correct[c] / per_class_total[c]);
            free(label);
        }
        if (!ok || !(text = cJSON_PrintUnformatted(doc))) {
            r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory writing the JSON report");
            FAIL(r);
        }
        printf("%s\n", text);
    } else {
        put_clean(stdout, "model       ", model_path, "");
        printf(" (%s/%s)\n", info.architecture, info.flavour);
        put_clean(stdout, "data        ", root, "");
        printf(": %u images", n_done);
        if (n_bad) printf(" (%u more unreadable)", n_bad);
        if (list.skipped) {
            printf("; %u file%s skipped, not a supported image type", list.skipped, list.skipped == 1 ? "" : "s");
            put_clean(stdout, " (e.g. ", list.skipped_examples[0], ")");
        }
        printf("\n");
        printf("device      %s, %s, batch %u", dev.name, cli_precision_name(precision), batch);
        if (runs_tail) printf(" (the last %u in a batch-%u session)", tail_batch, tail_batch);
        printf("\n");
        if (n_done) printf("accuracy    %.2f %%  (%u / %u)\n", 100.0 * accuracy, n_correct, n_done);
        else printf("accuracy    n/a (no image could be read)\n");
        printf("throughput  %.1f images/s end to end (decode + upload + preprocess + inference), %.1f images/s "
               "on the GPU side (upload + preprocess + inference)\n", isfinite(ips) ? ips : 0.0,
               isfinite(gpu_ips) ? gpu_ips : 0.0);
        printf("per class:\n");
        for (uint32_t c = 0; c < info.num_classes; c++) {
            if (!per_class_total[c]) continue;
            fputs("  ", stdout);
            cli_put_clean_padded(stdout, vkvit_model_label(model, c), 4096, 16);
            printf(" %6.2f %%  (%u / %u)\n", 100.0 * per_class_correct[c] / per_class_total[c], per_class_correct[c],
                   per_class_total[c]);
        }
    }
    if (fflush(stdout) != 0) { /* a runtime failure (as every command's), not bad input */
        (void)cli_error(VKVIT_ERROR_IO, "cannot write the report to standard output: %s", strerror(errno));
        cli_print_error("eval", cli_last_error());
        rc = CLI_FAILURE;
        goto done;
    }
    rc = n_bad ? CLI_BAD_INPUT : CLI_OK;
#undef FAIL
done:
    if (pred_path && !pred_written) cli_out_abort(&pred);
    cJSON_free(text);
    cJSON_Delete(doc);
    if (chunk)
        for (uint32_t i = 0; i < batch_max && i < list.count; i++) cli_image_free(&chunk[i]);
    free(chunk);
    free(views);
    free(chunk_of);
    free(classes);
    free(probs);
    free(per_class_total);
    free(per_class_correct);
    eval_list_free(&list);
    vkvit_session_destroy(tail);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
    return rc;
}
