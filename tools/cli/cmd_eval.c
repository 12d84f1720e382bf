// SPDX-License-Identifier: Apache-2.0
/* vkvit eval: accuracy of a model on a folder of labelled images.
 *
 *   vkvit eval --data DIR [--model FILE] [--batch N] [--limit N] [--json] [--predictions FILE] [--device DEV]
 *              [--precision fp32|fp16|fp16-math] [--class-map FILE]
 *
 * DIR holds test/<class>/<image> (or <class>/<image> directly); each class folder names its class (a label, an
 * index, or a --class-map line: cmd_eval_data.c). Images are taken in a fixed order that cycles through the
 * classes (the first image of every class, then the second, ...), so --limit N keeps the classes balanced. Each
 * batch: decode on the host (image_decode.c; reduced there when above the device's pixel limit),
 * vkvit_session_set_images (GPU resize / crop / normalise), run, top-5 on the GPU (top-1 and top-5 accuracy). */
#include "cmd_eval.h"
#include "image_decode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EVAL_DEFAULT_BATCH 64u
#define EVAL_MAX_BATCH 1024u

static void eval_usage(FILE *f) {
    fprintf(f, "usage: vkvit eval --data DIR [options]\n\n"
               "Classifies every image under DIR/test/<class>/ (or DIR/<class>/ when DIR has no test/ folder) and\n"
               "prints the top-1 and top-5 accuracy, the top-1 accuracy per class and the throughput. A class\n"
               "folder is named by a label of the model (case is ignored), by a class index (0, 17), or by a\n"
               "--class-map line. Images (PNG, JPEG, BMP, GIF, TGA, WebP, PPM / PGM) are taken cycling through the\n"
               "classes in\n"
               "name order, so --limit keeps the classes balanced; other files in class folders are skipped and\n"
               "counted. A progress bar with an ETA goes to stderr when it is a terminal.\n\n"
               "options:\n"
               "  --data DIR           the labelled images (required)\n"
               "  -m, --model FILE     vkvit model file (default: the bundled %s, as for classify)\n"
               "  -b, --batch N        images per inference (default %u, at most %u); a shorter remainder runs\n"
               "                       in a session of its own size, never padded\n"
               "  --limit N            evaluate only the first N images of that order (default: all)\n"
               "  --class-map FILE     class folder -> class index, one 'FOLDER INDEX' line each (ImageNet's\n"
               "                       'n01440764 0' synset style, or 'name index'); '#' starts a comment\n"
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

typedef struct eval_args {
    const char *model_path, *data_dir, *pred_path, *device, *class_map;
    uint32_t batch_max, limit;
    int json;
    vkvit_precision precision;
} eval_args;

/* Returns CLI_OK, -1 after --help, or the exit code after printing the reason. */
static int parse_args(int argc, char **argv, eval_args *a) {
    enum { OPT_JSON = 256, OPT_DATA, OPT_PREDICTIONS, OPT_DEVICE, OPT_LIMIT, OPT_PRECISION, OPT_CLASS_MAP };
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},           {"json", no_argument, NULL, OPT_JSON},
        {"model", required_argument, NULL, 'm'},    {"data", required_argument, NULL, OPT_DATA},
        {"predictions", required_argument, NULL, OPT_PREDICTIONS}, {"device", required_argument, NULL, OPT_DEVICE},
        {"batch", required_argument, NULL, 'b'},    {"limit", required_argument, NULL, OPT_LIMIT},
        {"precision", required_argument, NULL, OPT_PRECISION}, {"class-map", required_argument, NULL, OPT_CLASS_MAP},
        {NULL, 0, NULL, 0},
    };
    *a = (eval_args){.batch_max = EVAL_DEFAULT_BATCH, .precision = VKVIT_PRECISION_FP32};
    cli_opts opts; /* the same parsing as every command: -m / -b short forms, prefixes, --name=value, -- */
    cli_opts_init(&opts, "eval", argc, argv, "m:b:h", longopts);
    for (int c; (c = cli_opts_next(&opts)) != -1;) {
        switch (c) {
        case 'h': eval_usage(stdout); return -1;
        case OPT_JSON: a->json = 1; break;
        case 'm': a->model_path = opts.arg; break;
        case OPT_DATA: a->data_dir = opts.arg; break;
        case OPT_PREDICTIONS: a->pred_path = opts.arg; break;
        case OPT_DEVICE: a->device = opts.arg; break;
        case OPT_CLASS_MAP: a->class_map = opts.arg; break;
        case 'b': if (!cli_opt_u32(&opts, 1, EVAL_MAX_BATCH, &a->batch_max)) return CLI_USAGE; break;
        case OPT_LIMIT: if (!cli_opt_u32(&opts, 1, UINT32_MAX, &a->limit)) return CLI_USAGE; break;
        case OPT_PRECISION: if (!cli_opt_precision(&opts, &a->precision)) return CLI_USAGE; break;
        default: return CLI_USAGE;
        }
    }
    if (opts.first_operand < argc)
        return cli_usage_error("eval", "unexpected argument '%s' (the images are given with --data DIR)",
                               argv[opts.first_operand]);
    if (!a->data_dir) return cli_usage_error("eval", "--data DIR is required");
    return CLI_OK;
}

/* Every output is opened before any work, so a bad path costs nothing and never loses a finished run; an existing
 * file is replaced only when the table is complete (cli_out_commit), and never the model itself. Returns CLI_OK or
 * the exit code after printing the reason. */
static int open_predictions(const eval_args *a, cli_out_file *pred) {
    if (!a->pred_path) return CLI_OK;
    if (!strcmp(a->pred_path, "-"))
        return cli_usage_error("eval", "--predictions wants a file: standard output carries the report");
    struct stat st;
    if (stat(a->pred_path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "vkvit eval: --predictions '%s' is a directory, not a file\n", a->pred_path);
        return CLI_FAILURE; /* an output that cannot be written: exit 4, as for run --output */
    }
    if (cli_same_file(a->pred_path, a->model_path))
        return cli_usage_error("eval", "--predictions '%s' is the model file; give another path", a->pred_path);
    if (cli_out_open(pred, a->pred_path) != VKVIT_OK) {
        fprintf(stderr, "vkvit eval: cannot create the --predictions file: %s\n", cli_last_error());
        cli_out_abort(pred);
        return CLI_FAILURE;
    }
    return CLI_OK;
}

/* One evaluation: the model, the images, the two sessions and a batch's buffers. */
typedef struct eval_job {
    eval_args a;
    vkvit_ctx *ctx;
    vkvit_model *model;
    vkvit_session *s, *tail;                /* full batches; the remainder (list.count % batch), exactly its size */
    eval_list list;
    char root[4096];                        /* the folder of the class folders */
    uint64_t max_pixels;                    /* the largest picture the device takes */
    cli_image *chunk;                       /* [batch] decoded images */
    vkvit_image *views;                     /* [batch] */
    uint32_t *chunk_of;                     /* [batch]: chunk slot -> list index */
    uint32_t *classes;                      /* [batch * top_k] */
    float *probs;                           /* [batch * top_k] */
    eval_class_map map;                     /* --class-map */
    eval_tally t;
} eval_job;

/* Full batches run in `s`; the remainder (list.count % batch images) in `tail`, a session of exactly that size,
 * created here with the other so that neither the timing nor the GPU work includes padding. */
static vkvit_result create_sessions(eval_job *j) {
    vkvit_model_info info;
    vkvit_model_get_info(j->model, &info);
    j->max_pixels = cli_image_device_max_pixels(j->ctx);
    const uint32_t batch = j->t.batch = CLI_MIN(j->a.batch_max, j->list.count);
    j->t.tail_batch = j->list.count % batch;
    const uint32_t k = j->t.top_k = CLI_MIN(5u, info.num_classes);
    j->chunk = calloc(batch, sizeof *j->chunk);
    j->views = calloc(batch, sizeof *j->views);
    j->chunk_of = calloc(batch, sizeof *j->chunk_of);
    j->classes = calloc((size_t)batch * k, sizeof *j->classes);
    j->probs = calloc((size_t)batch * k, sizeof *j->probs);
    j->t.per_class_total = calloc(info.num_classes, sizeof *j->t.per_class_total);
    j->t.per_class_correct = calloc(info.num_classes, sizeof *j->t.per_class_correct);
    if (!j->chunk || !j->views || !j->chunk_of || !j->classes || !j->probs || !j->t.per_class_total ||
        !j->t.per_class_correct)
        return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for a batch of %u", batch);
    vkvit_session_desc sd = {.label = "eval", .batch = batch, .precision = j->a.precision, .top_k = k,
                             .max_image_pixels = (uint64_t)info.image_height * info.image_width};
    vkvit_result r = vkvit_session_create(j->model, &sd, &j->s);
    if (r != VKVIT_OK || !j->t.tail_batch) return r;
    sd.label = "eval (remainder)";
    sd.batch = j->t.tail_batch;
    return vkvit_session_create(j->model, &sd, &j->tail);
}

/* Decodes the images from *next on into the chunk, up to a batch (and CLI_CHUNK_MAX_BYTES of pixels); an unreadable
 * one gets its line on stderr and is counted. Fails only when memory runs out. */
static vkvit_result decode_chunk(eval_job *j, uint32_t *next, uint32_t *count, int show_progress) {
    uint64_t bytes = 0;
    for (*count = 0; *count < j->t.batch && *next < j->list.count && bytes < CLI_CHUNK_MAX_BYTES; ++*next) {
        cli_image *img = &j->chunk[*count];
        /* decoded up to the host's limit, then reduced on the host to the device's (a phone photo) */
        vkvit_result r = cli_image_load_max(j->list.items[*next].path, CLI_IMAGE_HOST_MAX_PIXELS, img);
        if (r == VKVIT_OK && (r = cli_image_reduce(img, j->max_pixels, j->list.items[*next].path)) != VKVIT_OK)
            cli_image_free(img);
        if (r == VKVIT_ERROR_OUT_OF_HOST_MEMORY) return r;
        if (r != VKVIT_OK) {
            if (show_progress) fputc('\n', stderr);
            cli_print_error("eval", cli_last_error());
            j->t.n_bad++;
            continue;
        }
        bytes += (uint64_t)img->width * img->height * 4;
        j->chunk_of[(*count)++] = *next;
    }
    return VKVIT_OK;
}

/* Classifies the chunk's `count` images and tallies them. A short chunk (the remainder, or fewer after unreadable
 * images) runs in the remainder's session when it fits there; only a chunk cut short by the memory cap is padded
 * (repeating its last image). */
static vkvit_result run_chunk(eval_job *j, uint32_t count) {
    vkvit_session *run = count <= j->t.tail_batch ? j->tail : j->s;
    const uint32_t slots = run == j->tail ? j->t.tail_batch : j->t.batch;
    for (uint32_t slot = 0; slot < slots; slot++) j->views[slot] = cli_image_view(&j->chunk[CLI_MIN(slot, count - 1)]);
    j->t.padded += slots - count;
    const uint64_t t0 = cli_now_ns();
    vkvit_result r = vkvit_session_set_images(run, 0, j->views, slots);
    if (r == VKVIT_OK) r = vkvit_session_run(run);
    const uint32_t k = j->t.top_k;
    if (r == VKVIT_OK) r = vkvit_session_get_top_k(run, j->classes, j->probs, (size_t)slots * k);
    if (r != VKVIT_OK) return r;
    j->t.gpu_ns += cli_now_ns() - t0;
    if (run == j->tail) j->t.runs_tail++;
    else j->t.runs_full++;
    for (uint32_t i = 0; i < count; i++) {
        eval_item *it = &j->list.items[j->chunk_of[i]];
        const uint32_t *top = j->classes + (size_t)i * k; /* best first */
        it->predicted = (int32_t)top[0];
        j->t.per_class_total[it->label]++;
        if (top[0] == it->label) j->t.per_class_correct[it->label]++, j->t.n_correct++;
        for (uint32_t r5 = 0; r5 < k; r5++)
            if (top[r5] == it->label) {
                j->t.n_correct_top_k++;
                break;
            }
        cli_image_free(&j->chunk[i]);
    }
    j->t.n_done += count;
    return VKVIT_OK;
}

/* Every image of the list, chunk by chunk, with the progress bar on a terminal. */
static vkvit_result evaluate(eval_job *j) {
    const int show_progress = !j->a.json && isatty(STDERR_FILENO);
    const uint64_t t_start = cli_now_ns();
    for (uint32_t next = 0, count; next < j->list.count;) {
        vkvit_result r = decode_chunk(j, &next, &count, show_progress);
        if (r == VKVIT_OK && count > 0) r = run_chunk(j, count);
        if (r != VKVIT_OK) return r;
        if (show_progress) eval_progress(next, j->list.count, (double)(cli_now_ns() - t_start) * 1e-9);
    }
    j->t.seconds = (double)(cli_now_ns() - t_start) * 1e-9;
    return VKVIT_OK;
}

/* An existing --predictions file must not be one of the images it is about. */
static int predictions_is_an_image(const eval_job *j, const cli_out_file *pred) {
    for (uint32_t i = 0; pred->replace && i < j->list.count; i++)
        if (cli_same_file(j->list.items[i].path, pred->real)) return 1;
    return 0;
}

/* The --predictions table, then the report; returns the exit code. */
static int report(eval_job *j, cli_out_file *pred) {
    vkvit_result r;
    if (j->a.pred_path &&
        ((r = eval_write_predictions(pred, &j->list, j->model)) != VKVIT_OK || (r = cli_out_commit(pred)) != VKVIT_OK)) {
        cli_print_error("eval", cli_last_error());
        return CLI_FAILURE; /* the table could not be written: a runtime failure, not bad input */
    }
    const eval_report e = {.model_path = j->a.model_path, .root = j->root, .model = j->model, .ctx = j->ctx,
                           .precision = j->a.precision, .list = &j->list, .tally = &j->t};
    if (j->a.json && (r = eval_print_json(&e)) != VKVIT_OK) return cli_fail("eval", r);
    if (!j->a.json) eval_print_text(&e);
    if (fflush(stdout) != 0) { /* a runtime failure (as every command's), not bad input */
        (void)cli_error(VKVIT_ERROR_IO, "cannot write the report to standard output: %s", strerror(errno));
        cli_print_error("eval", cli_last_error());
        return CLI_FAILURE;
    }
    return j->t.n_bad ? CLI_BAD_INPUT : CLI_OK;
}

static void job_free(eval_job *j) {
    if (j->chunk)
        for (uint32_t i = 0; i < j->t.batch; i++) cli_image_free(&j->chunk[i]);
    free(j->chunk);
    free(j->views);
    free(j->chunk_of);
    free(j->classes);
    free(j->probs);
    free(j->t.per_class_total);
    free(j->t.per_class_correct);
    eval_list_free(&j->list);
    eval_class_map_free(&j->map);
    vkvit_session_destroy(j->tail);
    vkvit_session_destroy(j->s);
    vkvit_model_destroy(j->model);
    vkvit_ctx_destroy(j->ctx);
}

int vkvit_cli_eval(int argc, char **argv) {
    eval_job j = {0};
    int rc = parse_args(argc, argv, &j.a);
    if (rc != CLI_OK) return rc < 0 ? CLI_OK : rc;
    char bundled[4096];
    if (!(j.a.model_path = cli_model_path("eval", j.a.model_path, bundled, sizeof bundled))) return CLI_BAD_INPUT;
    cli_out_file pred = {.fd = -1};
    if ((rc = open_predictions(&j.a, &pred)) != CLI_OK) return rc;

    vkvit_ctx_desc cd = {.label = "eval", .device = j.a.device, .log = cli_log_stderr, .log_user = "vkvit eval"};
    vkvit_result r = cli_open_model(&cd, j.a.model_path, &j.ctx, &j.model);
    if (r == VKVIT_OK && j.a.class_map) {
        vkvit_model_info info;
        vkvit_model_get_info(j.model, &info);
        r = eval_read_class_map(j.a.class_map, info.num_classes, &j.map);
    }
    if (r == VKVIT_OK) r = eval_collect(j.a.data_dir, j.model, &j.map, j.a.limit, &j.list, j.root, sizeof j.root);
    if (r != VKVIT_OK) rc = cli_fail("eval", r);
    else if (predictions_is_an_image(&j, &pred))
        rc = cli_usage_error("eval", "--predictions '%s' is one of the images under --data; give another path",
                             j.a.pred_path);
    else if ((r = create_sessions(&j)) != VKVIT_OK || (r = evaluate(&j)) != VKVIT_OK) rc = cli_fail("eval", r);
    else rc = report(&j, &pred);
    cli_out_abort(&pred); /* nothing once committed; else the temporary goes and an existing file stays */
    job_free(&j);
    return rc;
}
