// SPDX-License-Identifier: Apache-2.0
/* vkvit classify: the K most probable classes of each image file.
 *
 *   vkvit classify IMG|DIR... [-r] [--files-from LIST] [--model FILE] [--top K] [--batch N]
 *                  [--format text|json|jsonl|csv|tsv] [-o FILE] [--device DEV]
 *                  [--precision fp32|fp16|fp16-math] [--condition FILE]
 *
 * Images are read whole (a file, a pipe, or `-` for standard input; cli_read_input), decoded on the host
 * (image_decode.c: PNG, JPEG, BMP, GIF, TGA, WebP, PPM / PGM -> RGBA8; an image above the device's pixel limit is
 * reduced on the host with an area filter), pre-processed on the GPU as the model file says (vkvit_session_set_images) and read out with the GPU's softmax + top-K (vkvit_session_get_top_k). Images run in
 * batches of up to --batch good images (a last, shorter batch repeats its last image in the unused slots); each
 * batch's results are printed as soon as it finishes. A bad image gets one line on stderr and is left out; the
 * others are still classified, and the exit code is then 2. Folders give their image files (cli_paths.c). */
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
    fprintf(f, "usage: vkvit classify IMAGE|FOLDER... [options]\n\n"
               "Prints the most probable classes of each image (PNG, JPEG, BMP, GIF, TGA, WebP, binary PPM / PGM;\n"
               "any bit depth, grey, palette or alpha). IMAGE may be `-` for standard input, or a pipe such as\n"
               "/dev/stdin or <(...). A FOLDER gives its image files by extension (dot files left out), sorted.\n"
               "Images are resized, centre-cropped and normalised on the GPU as the model file's `preprocess` says\n"
               "(docs/preprocessing.md); softmax and top-K run on the GPU. Results are printed batch by batch as\n"
               "each finishes; a progress line with an ETA goes to stderr when it is a terminal.\n\n"
               "options:\n"
               "  -m, --model FILE      vkvit model file (docs/model-format.md; default: the bundled CIFAR-10\n"
               "                        ViT-5, %s, from <prefix>/share/vkvit/models/ next to the\n"
               "                        installed binary, else the source tree's assets/models/)\n"
               "  -k, --top K           classes per image (default %u; clamped to the model's class count and %u)\n"
               "  -b, --batch N         images per inference (default %u, at most %u)\n"
               "  -r, --recursive       FOLDER operands: their folders too, each entered once (symlink loops end);\n"
               "                        default: a FOLDER's own files only\n"
               "  --files-from LIST     also the paths in LIST (`-`: standard input), one per line; blank lines and\n"
               "                        lines starting with '#' are skipped (default: none)\n"
               "  --format F            text (the default: a table naming the image on every row), json (one\n"
               "                        document), jsonl (one object per image, each line flushed as its batch\n"
               "                        finishes), csv (RFC 4180: quoted fields, CRLF rows) or tsv (tab, newline,\n"
               "                        CR, backslash escaped as \\t \\n \\r \\\\): one row per image and rank, after\n"
               "                        the header image,rank,class,label,probability\n"
               "  --json                the same as --format json (default: text)\n"
               "  -o, --output FILE     write the output to FILE, atomically: a temporary file renamed at the end,\n"
               "                        removed on failure or Ctrl-C (bad images are no failure: the file holds\n"
               "                        the others); default: standard output\n"
               "  --features            with json or jsonl: each image also gets \"features\", the pooled features\n"
               "                        the classifier head reads (an embedding for retrieval; include/vkvit.h)\n"
               "  --precision P         fp32 (default), fp16 (fp16 weights, fp32 activations) or fp16-math (fp16\n"
               "                        weights and GEMM arithmetic; attention, norms, softmax stay fp32)\n"
               "  --condition FILE      for models that take a condition (those with a condition mixer): a\n"
               "                        safetensors file with a float tensor `condition` of the session's shape\n"
               "                        with R rows, [R, C] or [R, Tc, C]: R = 1 (the same condition for every\n"
               "                        image) or R = the number of images (row i for the i-th image);\n"
               "                        default: none (such models then refuse to run)\n"
               "  --device DEV          Vulkan device index or name substring (default: $VKVIT_DEVICE, else the\n"
               "                        first discrete, integrated, virtual, then CPU device)\n"
               "  -h, --help            this text\n\n"
               "Options may come before or after the images; `--` ends them. Bad images are left out of text, csv\n"
               "and tsv (their line is on stderr); json and jsonl give them an \"error\".\n\n"
               "exit codes: 0 every image classified; 1 usage error; 2 bad input: an image could not be read or\n"
               "decoded (one line on stderr each; the other images are still classified and printed), or the\n"
               "model or condition file is missing or bad; 3 no Vulkan device; 4 runtime failure (also: the\n"
               "output could not be written)\n",
            CLI_BUNDLED_MODEL, CLASSIFY_DEFAULT_TOP, VKVIT_MAX_TOP_K, CLASSIFY_DEFAULT_BATCH, CLASSIFY_MAX_BATCH);
}

/* What one image on the command line came to. */
typedef struct image_result {
    const char *path;
    const char *walk_error;                 /* the folder walk's sentence for this entry (cli_path.error), or NULL */
    int ok;                                 /* 0: bad image, `error` says why */
    char *error;
    uint32_t width, height;
    uint32_t *classes;                      /* [top] */
    float *probs;                           /* [top] */
    float *features;                        /* [n_features] with --features, else NULL */
} image_result;

typedef enum out_format { FORMAT_TEXT, FORMAT_JSON, FORMAT_JSONL, FORMAT_CSV, FORMAT_TSV } out_format;
static const char *const k_format_names[] = {"text", "json", "jsonl", "csv", "tsv"};

typedef struct classify_args {
    cli_path_list list;                     /* every image: operands, folders walked, --files-from */
    uint32_t n_paths;                       /* list.count */
    const char *model_path, *device, *condition_path, *output_path, *files_from;
    uint32_t top, batch;
    int features, recursive;
    out_format format;
    vkvit_precision precision;
} classify_args;

enum { OPT_JSON = 256, OPT_PRECISION, OPT_DEVICE, OPT_CONDITION, OPT_FEATURES, OPT_FORMAT, OPT_FILES_FROM };

/* Returns CLI_OK, -1 after --help, or the exit code after printing the reason. */
static int parse_args(int argc, char **argv, classify_args *a) {
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},      {"top", required_argument, NULL, 'k'},
        {"batch", required_argument, NULL, 'b'},      {"json", no_argument, NULL, OPT_JSON},
        {"precision", required_argument, NULL, OPT_PRECISION}, {"device", required_argument, NULL, OPT_DEVICE},
        {"condition", required_argument, NULL, OPT_CONDITION}, {"help", no_argument, NULL, 'h'},
        {"features", no_argument, NULL, OPT_FEATURES}, {"format", required_argument, NULL, OPT_FORMAT},
        {"output", required_argument, NULL, 'o'}, {"recursive", no_argument, NULL, 'r'},
        {"files-from", required_argument, NULL, OPT_FILES_FROM},
        {NULL, 0, NULL, 0}};
    *a = (classify_args){.top = CLASSIFY_DEFAULT_TOP, .batch = CLASSIFY_DEFAULT_BATCH,
                         .precision = VKVIT_PRECISION_FP32};
    cli_opts o;
    cli_opts_init(&o, "classify", argc, argv, "m:k:b:o:rh", longopts);
    for (int c; (c = cli_opts_next(&o)) != -1;) {
        switch (c) {
        case 'h': classify_usage(stdout); return -1;
        case 'm': a->model_path = o.arg; break;
        case 'k': if (!cli_opt_u32(&o, 1, 1000000, &a->top)) return CLI_USAGE; break;
        case 'b': if (!cli_opt_u32(&o, 1, CLASSIFY_MAX_BATCH, &a->batch)) return CLI_USAGE; break;
        case OPT_JSON: a->format = FORMAT_JSON; break;
        case OPT_FORMAT: {
            size_t f = 0;
            while (f < CLI_ARRAY_LEN(k_format_names) && strcmp(o.arg, k_format_names[f])) f++;
            if (f == CLI_ARRAY_LEN(k_format_names))
                return cli_usage_error("classify", "--format is text, json, jsonl, csv or tsv, got '%s'", o.arg);
            a->format = (out_format)f;
            break;
        }
        case 'o': a->output_path = o.arg; break;
        case 'r': a->recursive = 1; break;
        case OPT_FILES_FROM: a->files_from = o.arg; break;
        case OPT_FEATURES: a->features = 1; break;
        case OPT_PRECISION: if (!cli_opt_precision(&o, &a->precision)) return CLI_USAGE; break;
        case OPT_DEVICE: a->device = o.arg; break;
        case OPT_CONDITION: a->condition_path = o.arg; break;
        default: return CLI_USAGE;
        }
    }
    const int n_operands = argc - o.first_operand;
    if (n_operands == 0 && !a->files_from) return cli_usage_error("classify", "no image given");
    if (a->features && a->format != FORMAT_JSON && a->format != FORMAT_JSONL)
        return cli_usage_error("classify", "--features needs --json (or --format jsonl)");
    uint32_t stdin_uses = 0;
    for (int i = o.first_operand; i < argc; i++) stdin_uses += !strcmp(argv[i], "-");
    if (a->condition_path && !strcmp(a->condition_path, "-")) stdin_uses++;
    if (a->files_from && !strcmp(a->files_from, "-")) stdin_uses++;
    if (stdin_uses > 1) return cli_usage_error("classify", "standard input ('-') can be read only once");
    if (a->output_path && !strcmp(a->output_path, "-")) a->output_path = NULL; /* `-o -`: standard output */
    vkvit_result r = VKVIT_OK;
    for (int i = o.first_operand; i < argc && r == VKVIT_OK; i++) r = cli_paths_add(&a->list, argv[i], a->recursive);
    if (r == VKVIT_OK && a->files_from) r = cli_paths_add_list(&a->list, a->files_from);
    if (r != VKVIT_OK) return cli_fail("classify", r);
    if (a->list.count == 0) return cli_usage_error("classify", "no image given ('%s' lists no path)",
                                                   cli_input_name(a->files_from));
    a->n_paths = a->list.count;
    return CLI_OK;
}

/* Records a bad image: one line on stderr now, the sentence kept for --json. */
static void image_failed(image_result *res) {
    const char *why = cli_last_error();
    cli_print_error("classify", why);
    res->ok = 0;
    res->error = strdup(why);
}

/* Reads and decodes one image argument (a file, a pipe, or `-`): up to CLI_IMAGE_HOST_MAX_PIXELS on the host, then
 * reduced on the host (a box filter) to the device's limit when above it. */
static vkvit_result load_image(image_result *ir, uint64_t device_max_pixels, cli_image *img) {
    memset(img, 0, sizeof *img);
    if (ir->walk_error) return cli_error(VKVIT_ERROR_IO, "%s", ir->walk_error);
    const char *path = ir->path;
    uint8_t *data = NULL;
    size_t size = 0;
    vkvit_result r = cli_read_input(path, CLI_IMAGE_MAX_FILE_BYTES, &data, &size);
    if (r == VKVIT_ERROR_INVALID_ARGUMENT) return VKVIT_ERROR_BAD_IMAGE; /* above the size cap; the sentence says so */
    if (r != VKVIT_OK) return r;
    r = cli_image_decode_max(data, size, cli_input_name(path), CLI_IMAGE_HOST_MAX_PIXELS, img);
    free(data);
    ir->width = img->width; /* the file's size, which --format json reports */
    ir->height = img->height;
    if (r == VKVIT_OK && (r = cli_image_reduce(img, device_max_pixels, cli_input_name(path))) != VKVIT_OK)
        cli_image_free(img);
    return r;
}

/* The output as it streams: the table (header once, before the first row), the JSON document (head once, then one
 * element per image, closed at the end), JSON lines (one object per image), or CSV / TSV rows (header once). Text
 * goes to `f`: stdout, or with -o a memory stream whose bytes go to the temporary file after each batch
 * (printer_flush). */
typedef struct printer {
    out_format format;
    FILE *f;
    cli_out_file *out;                      /* -o: where printer_flush writes; NULL: f is stdout */
    char *buf;                              /* -o: the memory stream's bytes */
    size_t buf_size;
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

/* -o: a fresh memory stream for the next batch's text. */
static vkvit_result printer_open_stream(printer *p) {
    p->buf = NULL;
    p->buf_size = 0;
    if (!(p->f = open_memstream(&p->buf, &p->buf_size)))
        return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the output");
    return VKVIT_OK;
}

/* What was printed so far goes out: stdout is flushed (each jsonl line reaches a pipe as its batch finishes); with -o
 * the memory stream's bytes are written to the temporary file. */
static vkvit_result printer_flush(printer *p) {
    if (!p->out) {
        cli_flush_stdout();
        return VKVIT_OK;
    }
    if (!p->f) return VKVIT_OK;
    const int failed = ferror(p->f) != 0;
    const int closed = fclose(p->f);
    p->f = NULL;
    vkvit_result r = closed != 0 || failed
                         ? cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the output")
                         : cli_out_write(p->out, p->buf, p->buf_size);
    free(p->buf);
    p->buf = NULL;
    return r == VKVIT_OK ? printer_open_stream(p) : r;
}

/* One field of a csv / tsv row, valid UTF-8 as the JSON strings are (cli_utf8_fix). */
static void put_field(printer *p, const char *s) {
    char *fixed = s ? cli_utf8_fix(s) : NULL;
    const char *v = fixed ? fixed : s;
    if (p->format == FORMAT_CSV) cli_put_csv_field(p->f, v);
    else cli_put_tsv_field(p->f, v);
    free(fixed);
}

static void print_start(printer *p) {
    if (p->started) return;
    p->started = 1;
    if (p->format == FORMAT_JSON) {
        char *text = cli_json_line(p->head);
        size_t n = text ? strlen(text) : 0;
        if (n >= 2 && text[n - 1] == '}') text[n - 1] = '\0'; /* reopened: "images" follows */
        fputs(text ? text : "{", p->f);
        fputs(text && n > 2 ? ", \"images\": [" : "\"images\": [", p->f);
        free(text);
        return;
    }
    if (p->format == FORMAT_JSONL) return;
    if (p->format == FORMAT_CSV || p->format == FORMAT_TSV) {
        /* RFC 4180 ends CSV rows with CRLF; TSV rows end with LF */
        fputs(p->format == FORMAT_CSV ? "image,rank,class,label,probability\r\n"
                                      : "image\trank\tclass\tlabel\tprobability\n", p->f);
        return;
    }
    fputs("image", p->f);
    for (size_t i = 5; i < p->path_w; i++) fputc(' ', p->f);
    fputs("  rank  class", p->f);
    for (size_t i = 5; i < p->label_w; i++) fputc(' ', p->f);
    fputs("  probability\n", p->f);
}

/* The table's rows: the image on every row (awk '$2 == 1', cut), padded to the widest name. */
static void print_text(printer *p, const image_result *ir) {
    for (uint32_t k = 0; k < p->top; k++) {
        char fallback[32];
        cli_put_clean_padded(p->f, ir->path, PATH_MAX_SHOWN, p->path_w);
        fprintf(p->f, "  %4u  ", k + 1);
        cli_put_clean_padded(p->f, label_of(p->model, ir->classes[k], fallback, sizeof fallback), LABEL_MAX,
                             p->label_w);
        if (isfinite(ir->probs[k])) {
            fprintf(p->f, "  %9.2f %%\n", 100.0 * ir->probs[k]);
        } else {
            fprintf(p->f, "  %9s  \n", "NaN"); /* not "-nan %": the logits were not finite */
            p->n_nan++;
        }
    }
}

/* csv / tsv: one row per rank; the probability with 9 significant digits (exact for a float), "NaN" when the
 * logits were not finite. */
static void print_rows(printer *p, const image_result *ir) {
    const char sep = p->format == FORMAT_CSV ? ',' : '\t';
    for (uint32_t k = 0; k < p->top; k++) {
        put_field(p, ir->path);
        fprintf(p->f, "%c%u%c%u%c", sep, k + 1, sep, ir->classes[k], sep);
        put_field(p, vkvit_model_label(p->model, ir->classes[k]));
        if (isfinite(ir->probs[k])) fprintf(p->f, "%c%.9g", sep, (double)ir->probs[k]);
        else fprintf(p->f, "%cNaN", sep), p->n_nan++;
        fputs(p->format == FORMAT_CSV ? "\r\n" : "\n", p->f);
    }
}

static void print_result(printer *p, const image_result *ir) {
    if (p->format == FORMAT_TEXT || p->format == FORMAT_CSV || p->format == FORMAT_TSV) {
        if (!ir->ok) return; /* its line is on stderr */
        print_start(p);
        if (p->format == FORMAT_TEXT) print_text(p, ir);
        else print_rows(p, ir);
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
    if (p->format == FORMAT_JSONL) {
        fprintf(p->f, "%s\n", text ? text : "null");
        if (!p->out) cli_flush_stdout(); /* one line per image, as it is known */
    } else {
        fprintf(p->f, "%s\n  %s", p->n_printed++ ? "," : "", text ? text : "null");
    }
    free(text);
}

static void print_end(printer *p) {
    if (p->format == FORMAT_JSON && p->head) {
        print_start(p);
        fputs("\n]}\n", p->f);
    }
}

/* How the progress line is drawn on stderr: not at all (not a terminal), with \r and spaces only (NO_COLOR, TERM=dumb:
 * no escape sequence), or with \r and ESC [ K (erase to the end of the line). */
enum { PROGRESS_OFF, PROGRESS_PLAIN, PROGRESS_ESCAPES };

/* A progress line on stderr: done / total, rate, ETA. `clear` erases it. */
static void progress(int mode, uint32_t done, uint32_t total, uint64_t t0, int clear) {
    static int shown; /* characters of the line on the terminal now */
    if (mode == PROGRESS_OFF) return;
    if (clear) {
        if (!shown) return;
        if (mode == PROGRESS_ESCAPES) fputs("\r\033[K", stderr);
        else fprintf(stderr, "\r%*s\r", shown, "");
        shown = 0;
        return;
    }
    double s = (double)(cli_now_ns() - t0) * 1e-9;
    double rate = s > 0 ? done / s : 0;
    double eta = rate > 0 ? (total - done) / rate : 0;
    char line[160];
    int n = snprintf(line, sizeof line, "vkvit classify: %u / %u images, %.1f images/s, ETA %um%02us", done, total,
                     rate, (unsigned)(eta / 60), (unsigned)eta % 60);
    if (mode == PROGRESS_ESCAPES) fprintf(stderr, "\r\033[K%s", line);
    else fprintf(stderr, "\r%s%*s", line, shown > n ? shown - n : 0, "");
    shown = CLI_MAX(shown, n);
    fflush(stderr);
}

/* One classify run: the model, the session (created for the first batch), the decoded chunk and the results. */
typedef struct classify_job {
    classify_args a;
    vkvit_ctx *ctx;
    vkvit_model *model;
    vkvit_session *s;
    uint32_t batch, top;                    /* the session's batch (0 before it exists); classes per image */
    image_result *res;                      /* [n_paths] */
    cli_image *chunk;                       /* [a.batch] decoded images */
    uint32_t *chunk_of;                     /* [a.batch]: chunk slot -> index into res */
    uint32_t *classes;                      /* [batch * top] */
    float *probs;                           /* [batch * top] */
    float *feats;                           /* [batch * F] with --features */
    float *cond_file, *cond;                /* the condition file's rows; [batch * cond_row] for a run */
    uint32_t cond_rows;
    size_t cond_row;                        /* floats per condition row (0: the model takes none) */
    uint32_t n_bad;
    uint64_t device_max_pixels;             /* the most pixels one image may have on the device */
    int all_tried;                          /* classify_all went through every image (some may be bad): -o's file
                                             * is kept */
    printer pr;
} classify_job;

/* Column widths from what will be printed (every image name, every label or its "class N" stand-in) and, for
 * --json, the document's head. */
static void start_printer(classify_job *j) {
    vkvit_model_info info;
    vkvit_model_get_info(j->model, &info);
    printer *pr = &j->pr;
    pr->model = j->model;
    pr->top = j->top;
    pr->path_w = 5;
    pr->label_w = 5;
    for (uint32_t i = 0; i < j->a.n_paths; i++)
        pr->path_w = CLI_MAX(pr->path_w, cli_clean_width(j->a.list.items[i].path, PATH_MAX_SHOWN));
    for (uint32_t c = 0; c < info.num_classes; c++) {
        char fallback[32];
        pr->label_w = CLI_MAX(pr->label_w, cli_clean_width(label_of(j->model, c, fallback, sizeof fallback), LABEL_MAX));
    }
    if (j->a.format != FORMAT_JSON) return;
    vkvit_device_info dev;
    vkvit_ctx_device_info(j->ctx, &dev);
    pr->head = cJSON_CreateObject();
    cJSON_AddItemToObject(pr->head, "model", cli_jstr(j->a.model_path));
    cJSON_AddItemToObject(pr->head, "device", cli_jstr(dev.name));
    cJSON_AddStringToObject(pr->head, "precision", cli_precision_name(j->a.precision));
    cJSON_AddNumberToObject(pr->head, "top", j->top);
}

/* Decodes up to a batch of good images from *next on (and at most CLI_CHUNK_MAX_BYTES of pixels, so a batch of
 * large photos is never all held at once); bad ones are reported and skipped. Fails only when memory runs out. */
static vkvit_result decode_chunk(classify_job *j, uint32_t *next, uint32_t *count, uint64_t *max_pixels, int tty) {
    const uint32_t limit = j->s ? j->batch : j->a.batch;
    uint64_t bytes = 0;
    *max_pixels = 0;
    for (*count = 0; *count < limit && *next < j->a.n_paths && bytes < CLI_CHUNK_MAX_BYTES; ++*next) {
        image_result *ir = &j->res[*next];
        progress(tty, 0, 0, 0, 1);
        vkvit_result r = load_image(ir, j->device_max_pixels, &j->chunk[*count]);
        if (r == VKVIT_ERROR_OUT_OF_HOST_MEMORY) return r;
        if (r != VKVIT_OK) {
            image_failed(ir);
            j->n_bad++;
            continue;
        }
        const cli_image *img = &j->chunk[*count];
        *max_pixels = CLI_MAX(*max_pixels, (uint64_t)img->width * img->height);
        bytes += (uint64_t)img->width * img->height * 4;
        j->chunk_of[(*count)++] = *next;
    }
    return VKVIT_OK;
}

/* The condition a session with condition shape cs needs: --condition's rows (1, or one per image), or a usage error
 * when none was given. Returns CLI_OK or the exit code after printing the reason. */
static int read_condition(classify_job *j, vkvit_shape cs) {
    char want[64];
    cs.dims[0] = 1;
    cli_shape_text(&cs, want, sizeof want);
    if (!j->a.condition_path)
        return cli_usage_error("classify", "model '%s' takes a condition %s per image: give it with --condition FILE",
                               j->a.model_path, want);
    vkvit_result r = cli_read_condition(j->a.condition_path, cs, &j->cond_file, &j->cond_rows);
    if (r == VKVIT_OK && j->cond_rows != 1 && j->cond_rows != j->a.n_paths)
        r = cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': the condition has %u rows: give 1 (for every image) or %u "
                      "(one per image)", cli_input_name(j->a.condition_path), j->cond_rows, j->a.n_paths);
    if (r != VKVIT_OK) return cli_fail("classify", r);
    j->cond_row = 1;
    for (uint32_t d = 1; d < cs.ndim; d++) j->cond_row *= cs.dims[d];
    if (!(j->cond = malloc((size_t)j->batch * j->cond_row * sizeof *j->cond)))
        return cli_fail("classify", cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the condition"));
    return CLI_OK;
}

/* The first batch holds every good image, or as many as --batch (or the memory cap) allows: its size is the
 * session's batch. Returns CLI_OK or the exit code after printing the reason. */
static int create_session(classify_job *j, uint32_t count, uint64_t max_pixels) {
    j->batch = count;
    vkvit_session_desc sd = {.label = "classify", .batch = j->batch, .precision = j->a.precision, .top_k = j->top,
                             .max_image_pixels = max_pixels, .features = j->a.features};
    vkvit_result r = vkvit_session_create(j->model, &sd, &j->s);
    if (r != VKVIT_OK) return cli_fail("classify", r);
    if (j->a.features) {
        j->pr.n_features = vkvit_session_feature_shape(j->s).dims[1];
        if (!(j->feats = malloc((size_t)j->batch * j->pr.n_features * sizeof *j->feats)))
            return cli_fail("classify", cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the features"));
    }
    j->classes = malloc((size_t)j->batch * j->top * sizeof *j->classes);
    j->probs = malloc((size_t)j->batch * j->top * sizeof *j->probs);
    if (!j->classes || !j->probs)
        return cli_fail("classify", cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %u results",
                                              j->batch));
    vkvit_shape cs = vkvit_session_condition_shape(j->s);
    if (cs.ndim > 0) return read_condition(j, cs);
    if (j->a.condition_path)
        fprintf(stderr, "vkvit classify: note: model '%s' takes no condition; --condition is ignored\n",
                j->a.model_path);
    return CLI_OK;
}

/* Copies slot i's top-K (and features) out of the batch's buffers into its image's result. */
static vkvit_result keep_result(classify_job *j, uint32_t i) {
    image_result *ir = &j->res[j->chunk_of[i]];
    ir->classes = malloc(j->top * sizeof *ir->classes);
    ir->probs = malloc(j->top * sizeof *ir->probs);
    ir->features = j->feats ? malloc(j->pr.n_features * sizeof *j->feats) : NULL;
    if (!ir->classes || !ir->probs || (j->feats && !ir->features))
        return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the results");
    memcpy(ir->classes, j->classes + (size_t)i * j->top, j->top * sizeof *j->classes);
    memcpy(ir->probs, j->probs + (size_t)i * j->top, j->top * sizeof *j->probs);
    if (j->feats) memcpy(ir->features, j->feats + (size_t)i * j->pr.n_features, j->pr.n_features * sizeof *j->feats);
    ir->ok = 1;
    return VKVIT_OK;
}

/* Classifies the chunk's `count` images. One upload per slot (the library's sentence then names one image); a
 * short last batch repeats its last image in the unused slots, whose results are not read. */
static vkvit_result run_chunk(classify_job *j, uint32_t count) {
    vkvit_result r = VKVIT_OK;
    for (uint32_t slot = 0; slot < j->batch && r == VKVIT_OK; slot++) {
        const uint32_t i = CLI_MIN(slot, count - 1);
        vkvit_image view = cli_image_view(&j->chunk[i]);
        r = vkvit_session_set_images(j->s, slot, &view, 1);
        if (j->cond)
            memcpy(j->cond + (size_t)slot * j->cond_row,
                   j->cond_file + (j->cond_rows == 1 ? 0 : (size_t)j->chunk_of[i] * j->cond_row),
                   j->cond_row * sizeof *j->cond);
    }
    if (r == VKVIT_OK && j->cond) r = vkvit_session_set_condition(j->s, j->cond, (size_t)j->batch * j->cond_row);
    if (r == VKVIT_OK) r = vkvit_session_run(j->s);
    if (r == VKVIT_OK) r = vkvit_session_get_top_k(j->s, j->classes, j->probs, (size_t)j->batch * j->top);
    if (r == VKVIT_OK && j->feats)
        r = vkvit_session_get_features(j->s, j->feats, (size_t)j->batch * j->pr.n_features);
    for (uint32_t i = 0; i < count && r == VKVIT_OK; i++) r = keep_result(j, i);
    for (uint32_t i = 0; i < count && r == VKVIT_OK; i++) cli_image_free(&j->chunk[i]);
    return r;
}

/* Decodes, runs and prints batch after batch (everything up to the next undecoded image is final, so it is
 * printed at once). Returns the exit code. */
static int classify_all(classify_job *j, int tty) {
    const uint64_t t0 = cli_now_ns();
    for (uint32_t next = 0, printed = 0; next < j->a.n_paths;) {
        uint32_t count = 0;
        uint64_t max_pixels = 0;
        vkvit_result r = decode_chunk(j, &next, &count, &max_pixels, tty);
        if (r != VKVIT_OK) return cli_fail("classify", r);
        int rc = count > 0 && !j->s ? create_session(j, count, max_pixels) : CLI_OK;
        if (rc != CLI_OK) return rc;
        if (count > 0 && (r = run_chunk(j, count)) != VKVIT_OK) return cli_fail("classify", r);
        progress(tty, 0, 0, 0, 1);
        for (; printed < next; printed++) print_result(&j->pr, &j->res[printed]);
        if ((r = printer_flush(&j->pr)) != VKVIT_OK) return cli_fail("classify", r);
        if (cli_stdout_failed()) return CLI_FAILURE; /* nobody reads the rest (`| head`): cli_finish_stdout says why */
        if (next < j->a.n_paths) progress(tty, next, j->a.n_paths, t0, 0);
    }
    j->all_tried = 1;
    return j->n_bad ? CLI_BAD_INPUT : CLI_OK;
}

/* The end of the output (a JSON document on stdout is always closed, even after a failure; -o's file is renamed into
 * place when every image was tried, else removed), its warnings, and the job's memory and objects. Returns rc, or
 * the exit code of a failed write of -o's file. */
static int finish(classify_job *j, int tty, int rc, int all_tried) {
    progress(tty, 0, 0, 0, 1);
    if (j->pr.f) {
        print_end(&j->pr);
        if (j->pr.out) {
            const int keep = all_tried && (rc == CLI_OK || rc == CLI_BAD_INPUT);
            vkvit_result r = keep ? printer_flush(&j->pr) : VKVIT_OK;
            if (j->pr.f) fclose(j->pr.f);
            free(j->pr.buf);
            if (r == VKVIT_OK && keep) r = cli_out_commit(j->pr.out);
            else cli_out_abort(j->pr.out);
            if (r != VKVIT_OK) { /* an output that cannot be written: exit 4, as for run --output */
                cli_print_error("classify", cli_last_error());
                rc = CLI_FAILURE;
            }
        }
    }
    cJSON_Delete(j->pr.head);
    if (j->a.format == FORMAT_JSON || j->a.format == FORMAT_JSONL) cli_json_warn_non_finite("classify");
    if (j->pr.n_nan)
        fprintf(stderr, "vkvit classify: warning: %u probabilit%s printed as NaN: the model's logits were not "
                        "finite numbers\n", j->pr.n_nan, j->pr.n_nan == 1 ? "y" : "ies");
    if (j->chunk)
        for (uint32_t i = 0; i < j->a.batch; i++) cli_image_free(&j->chunk[i]);
    if (j->res)
        for (uint32_t i = 0; i < j->a.n_paths; i++)
            free(j->res[i].error), free(j->res[i].classes), free(j->res[i].probs), free(j->res[i].features);
    free(j->res);
    free(j->chunk);
    free(j->chunk_of);
    free(j->classes);
    free(j->probs);
    free(j->feats);
    free(j->cond_file);
    free(j->cond);
    vkvit_session_destroy(j->s);
    vkvit_model_destroy(j->model);
    vkvit_ctx_destroy(j->ctx);
    cli_paths_free(&j->a.list);
    return rc;
}

int vkvit_cli_classify(int argc, char **argv) {
    classify_job j = {0};
    int rc = parse_args(argc, argv, &j.a);
    if (rc != CLI_OK) {
        cli_paths_free(&j.a.list);
        return rc < 0 ? cli_finish_stdout("classify", CLI_OK) : rc;
    }
    char bundled[4096];
    if (!(j.a.model_path = cli_model_path("classify", j.a.model_path, bundled, sizeof bundled))) {
        cli_paths_free(&j.a.list);
        return CLI_BAD_INPUT;
    }
    const int tty = !isatty(STDERR_FILENO) ? PROGRESS_OFF
                    : cli_terminal_escapes(STDERR_FILENO) ? PROGRESS_ESCAPES : PROGRESS_PLAIN;
    j.pr.format = j.a.format;
    cli_out_file out;
    if (j.a.output_path) { /* before any work: a path that cannot be written costs no device start */
        vkvit_result r = cli_out_open(&out, j.a.output_path);
        if (r == VKVIT_OK && (r = printer_open_stream(&j.pr)) != VKVIT_OK) cli_out_abort(&out);
        if (r != VKVIT_OK) {
            cli_paths_free(&j.a.list);
            cli_print_error("classify", cli_last_error());
            return CLI_FAILURE; /* an output that cannot be written: exit 4, as for run --output */
        }
        j.pr.out = &out;
    } else {
        j.pr.f = stdout;
    }
    j.res = calloc(j.a.n_paths, sizeof *j.res);
    j.chunk = calloc(j.a.batch, sizeof *j.chunk);
    j.chunk_of = calloc(j.a.batch, sizeof *j.chunk_of);
    /* The ctx's own label is the default; the log callback prefixes its lines with "vkvit classify". */
    vkvit_ctx_desc cd = {.device = j.a.device, .log = cli_log_stderr, .log_user = "vkvit classify"};
    vkvit_result r = !j.res || !j.chunk || !j.chunk_of
                         ? cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %u results", j.a.n_paths)
                         : cli_open_model(&cd, j.a.model_path, &j.ctx, &j.model);
    if (r != VKVIT_OK) {
        rc = cli_fail("classify", r);
    } else {
        for (uint32_t i = 0; i < j.a.n_paths; i++)
            j.res[i].path = j.a.list.items[i].path, j.res[i].walk_error = j.a.list.items[i].error;
        vkvit_model_info info;
        vkvit_model_get_info(j.model, &info);
        j.top = CLI_MIN(CLI_MIN(j.a.top, info.num_classes), VKVIT_MAX_TOP_K);
        j.device_max_pixels = cli_image_device_max_pixels(j.ctx);
        start_printer(&j);
        rc = classify_all(&j, tty);
    }
    rc = finish(&j, tty, rc, j.all_tried);
    return cli_finish_stdout("classify", rc);
}
