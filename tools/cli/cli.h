/* The vkvit command-line tool: one file per subcommand, each `int vkvit_cli_<name>(int argc, char **argv)` with
 * argv[0] the subcommand name. Exit codes: 0 success, 1 usage error, 2 bad input (file, model, image),
 * 3 no usable Vulkan device or loader, 4 runtime failure. */
#ifndef VKVIT_CLI_H
#define VKVIT_CLI_H

#include "vkvit.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum { CLI_OK = 0, CLI_USAGE = 1, CLI_BAD_INPUT = 2, CLI_NO_DEVICE = 3, CLI_FAILURE = 4 };

/* Maps a library result to the CLI's exit code. */
int vkvit_cli_exit_code(vkvit_result r);

int vkvit_cli_info(int argc, char **argv);
int vkvit_cli_bench(int argc, char **argv);
int vkvit_cli_bench_gemm(int argc, char **argv); /* `vkvit bench gemm` (cmd_bench_gemm.c) */
void vkvit_cli_bench_gemm_usage(FILE *f);
int vkvit_cli_inspect(int argc, char **argv);
int vkvit_cli_run(int argc, char **argv);
int vkvit_cli_classify(int argc, char **argv);
int vkvit_cli_eval(int argc, char **argv);

/* Helpers shared by the subcommands (cli_common.c). */

#define CLI_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define CLI_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CLI_MAX(a, b) ((a) > (b) ? (a) : (b))

#if defined(__GNUC__)
#  define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#  define CLI_PRINTF(a, b)
#endif

/* ------------------------------------------------------------------------------------------------------------
 * The CLI's error channel. The library explains its own failures (vkvit_last_error()); the CLI's own failures (a
 * file it reads, an image it decodes, a tensor of the wrong shape) get their sentence from cli_error, so every
 * failure, whoever met it, is printed the same way:  cli_print_error("run", cli_last_error());
 * ------------------------------------------------------------------------------------------------------------ */

/* Formats one sentence for a failure of the CLI's own and returns `code`, as the library does for its calls:
 *     return cli_error(VKVIT_ERROR_IO, "cannot open '%s': %s", name, strerror(errno)); */
vkvit_result cli_error(vkvit_result code, const char *fmt, ...) CLI_PRINTF(2, 3);
/* The sentence of the latest failure: cli_error's when it ran after the library's sentence last changed, else
 * vkvit_last_error() (the library failed since; "" when nothing failed). Never NULL; valid until the next vkvit or
 * cli_error call. */
const char *cli_last_error(void);

/* Monotonic wall clock in nanoseconds (latency and throughput figures). */
uint64_t cli_now_ns(void);



/* The bundled demo model, used when classify / eval get no --model. */
#define CLI_BUNDLED_MODEL "vit5_cifar10.vkvit"

/* Finds a bundled model file: first next to the installed binary (<prefix>/bin/vkvit ->
 * <prefix>/share/vkvit/models/<file>, found through /proc/self/exe on Linux), then in the source tree the binary was
 * built from (<source>/assets/models/<file>). Returns 1 and the path in `path`, or 0 with the places looked at,
 * ", "-separated, in `path`. */
int cli_find_bundled_model(const char *file, char *path, size_t cap);

/* Parses "fp32" / "fp16"; returns 0 for anything else. */
vkvit_precision cli_parse_precision(const char *s);
const char *cli_precision_name(vkvit_precision p);

/* Parses a decimal integer in [lo, hi] (the whole string: digits only, no sign or blanks, no wrap-around: values
 * above 2^64 - 1 fail like any other out-of-range value); returns 0 on failure. */
int cli_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out);
int cli_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* Writes `s` as a JSON string literal (quotes, escapes, control characters as \u00XX; valid UTF-8 as it is, every
 * byte that is not part of valid UTF-8 as U+FFFD). */
void cli_json_string(FILE *f, const char *s);

/* A vkvit_ctx_desc.log callback that prints warnings (validation messages when VKVIT_VALIDATION=1) to stderr,
 * prefixed with `user` (a "vkvit <command>" string). Errors are not printed: the command prints the sentence of
 * the failing call's result itself. */
void cli_log_stderr(void *user, int level, const char *message);

/* ------------------------------------------------------------------------------------------------------------
 * Option parsing: one getopt_long loop for every subcommand, one error style.
 *
 *     cli_opts o;
 *     cli_opts_init(&o, "classify", argc, argv, "hm:k:", longopts);
 *     for (int c; (c = cli_opts_next(&o)) != -1;)
 *         switch (c) { case 'm': model = o.arg; break; ... case '?': return CLI_USAGE; }
 *     operands: argv[o.first_operand .. argc - 1]
 *
 * `--name=value` and `--name value`, short flags (`-m FILE`, `-mFILE`), unique prefixes of long names, options
 * after operands, and `--` (everything after it is an operand; `-` alone is an operand: standard input) all work.
 * Errors print one line, "vkvit CMD: <what> (try 'vkvit CMD --help')", and cli_opts_next returns '?'.
 * ------------------------------------------------------------------------------------------------------------ */
typedef struct cli_opts {
    const char *cmd;                        /* "classify", "bench gemm": names the command in messages */
    int argc;
    char **argv;
    char shortopts[64];                     /* ':' + the caller's short options */
    const struct option *longopts;
    const char *arg;                        /* the value of the option just returned (NULL when it takes none) */
    char name[64];                          /* that option as spelled: "--top" or "-k" */
    int first_operand;                      /* valid once cli_opts_next returned -1 */
} cli_opts;

void cli_opts_init(cli_opts *o, const char *cmd, int argc, char **argv, const char *shortopts,
                   const struct option *longopts);
/* The next option's `val`; -1 when the options are done; '?' after an error line was printed. */
int cli_opts_next(cli_opts *o);
/* Prints "vkvit CMD: <message> (try 'vkvit CMD --help')" and returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The current option's value as an integer in [lo, hi], or a usage error naming the option and echoing the value
 * (returns 0). */
int cli_opt_u32(cli_opts *o, uint32_t lo, uint32_t hi, uint32_t *out);
/* The current option's value as fp32 / fp16, or a usage error (returns 0). */
int cli_opt_precision(cli_opts *o, vkvit_precision *out);

/* ------------------------------------------------------------------------------------------------------------
 * Files in and out
 * ------------------------------------------------------------------------------------------------------------ */

/* Reads an input whole into a malloc'ed buffer: "-" is standard input; anonymous pipes (/dev/stdin of a pipe,
 * <(...)) are read to their end; regular files are checked against the cap before reading. At most max_bytes in
 * every case. Errors (with a sentence naming the input): VKVIT_ERROR_IO (missing, unreadable, a directory, a named
 * FIFO, a device such as /dev/zero), VKVIT_ERROR_INVALID_ARGUMENT (larger than max_bytes). */
vkvit_result cli_read_input(const char *path, size_t max_bytes, uint8_t **data, size_t *size);
/* How messages name an input: "standard input" for "-", else the path. */
const char *cli_input_name(const char *path);

/* Writes `size` bytes to `path`: "-" is standard output; a regular file (after resolving symlinks) or a new file
 * is written atomically (a temporary file next to the real file, then rename); anything else (a device such as
 * /dev/null or /dev/full, a FIFO) is opened and written in place. Every write error is reported:
 * VKVIT_ERROR_IO with a sentence. */
vkvit_result cli_write_output(const char *path, const void *data, size_t size);

/* The same, for an output written piece by piece over a command's run: cli_out_open before any work (a path that
 * cannot be written then costs nothing; a regular or new file gets its temporary file now and is not touched
 * before cli_out_commit renames the temporary over it), cli_out_write as results come, then cli_out_commit, or
 * cli_out_abort on failure (the temporary is removed; an existing file keeps its content). Errors: VKVIT_ERROR_IO
 * with a sentence; after a failed write the others fail too. */
typedef struct cli_out_file {
    const char *path;                       /* as given; "-" is standard output */
    char real[PATH_MAX];                    /* symlinks resolved */
    char tmp[PATH_MAX + 32];                /* the temporary file, "" when written in place */
    int fd, in_place, replace, error;
    unsigned mode;                          /* the replaced file's permission bits */
} cli_out_file;
vkvit_result cli_out_open(cli_out_file *o, const char *path);
/* Whether both paths exist and name the same file (device and inode: links and symlinks included). */
int cli_same_file(const char *a, const char *b);
vkvit_result cli_out_write(cli_out_file *o, const void *data, size_t size);
vkvit_result cli_out_commit(cli_out_file *o);
void cli_out_abort(cli_out_file *o);

/* Reads a safetensors input whole (cli_read_input: `-` is standard input; above max_bytes is
 * VKVIT_ERROR_BAD_MODEL_FILE), refuses what is plainly not safetensors (cli_sniff_safetensors) and parses it with
 * vkvit_tensor_file_create (the library's strict reader). On success free *bytes after vkvit_tensor_file_destroy. */
vkvit_result cli_open_tensor_file(const char *path, size_t max_bytes, uint8_t **bytes, vkvit_tensor_file **file);
/* Tensor `index` of `file` as fp32 in a malloc'ed array of info->count floats (`what` names it if memory runs out). */
vkvit_result cli_read_tensor_f32(const vkvit_tensor_file *file, uint32_t index, const vkvit_tensor_info *info,
                                 const char *what, float **out);
/* "[d0, d1, ...]" of a tensor's shape; returns buf. */
const char *cli_dims_text(const uint64_t *shape, uint32_t ndim, char *buf, size_t cap);

/* Reads the float tensor `condition` of a safetensors file (`-`: standard input) for a session whose condition
 * shape is `cs` ([B, C] or [B, Tc, C]): the tensor must have cs's rank and trailing dims; its first dim is the number
 * of rows R, returned in *rows with the R * (elements per row) floats in *out (malloc'ed). Errors: VKVIT_ERROR_IO,
 * VKVIT_ERROR_BAD_MODEL_FILE (not safetensors, no tensor `condition`, wrong shape), VKVIT_ERROR_OUT_OF_HOST_MEMORY. */
vkvit_result cli_read_condition(const char *path, vkvit_shape cs, float **out, uint32_t *rows);
/* "[2, 32]" */
const char *cli_shape_text(const vkvit_shape *s, char *buf, size_t cap);

/* Before a model file goes to the reader: when its first bytes cannot start a safetensors file (8-byte header
 * length, then '{') it returns VKVIT_ERROR_BAD_MODEL_FILE with a sentence saying what the file looks like by its
 * magic bytes (PNG, JPEG, GIF, WebP, BMP, a PyTorch zip checkpoint, a pickle, HDF5, gzip, ONNX, GGUF, ...), so the
 * user does not meet "header length 727905341920923785 is above the limit". VKVIT_ERROR_IO for a path that cannot be
 * opened or is not a regular file (a FIFO, a device, a directory: the library's sentence), so that the commands refuse
 * it before creating a Vulkan context (a GPU driver takes a second to start). VKVIT_OK otherwise (short or unreadable
 * files: the reader reports those). */
vkvit_result cli_sniff_model(const char *path);
/* The same on the first n bytes of an input already read; `kind` completes "'NAME' is not <kind>". */
vkvit_result cli_sniff_safetensors(const uint8_t *bytes, size_t n, const char *name, const char *kind);

/* Flushes stdout and checks it for errors (a full disk, a closed pipe, /dev/full): prints one sentence and returns
 * CLI_FAILURE, else returns rc unchanged. Every command's last call. */
int cli_finish_stdout(const char *cmd, int rc);
/* fflush(stdout) for output printed piece by piece; an error is remembered for cli_finish_stdout. */
void cli_flush_stdout(void);
/* Whether standard output has failed (a closed pipe: SIGPIPE is ignored, main.c): streaming commands stop their
 * work then, as SIGPIPE used to stop them, and cli_finish_stdout reports it. */
int cli_stdout_failed(void);

/* ------------------------------------------------------------------------------------------------------------
 * Strings from model files and file names on a terminal
 * ------------------------------------------------------------------------------------------------------------ */

/* Writes `s` for a terminal: control characters (C0, DEL, C1), bidirectional overrides and bytes that are not
 * valid UTF-8 become '?'; at most `max` characters, then "...". NULL writes "(null)". */
void cli_put_clean(FILE *f, const char *s, size_t max);
/* Prints "vkvit CMD: <sentence>" on stderr, the sentence sanitised as cli_put_clean does (it may quote a file name
 * or a label). */
void cli_print_error(const char *cmd, const char *sentence);
/* The number of characters cli_put_clean(s, max) writes. */
size_t cli_clean_width(const char *s, size_t max);
/* cli_put_clean, then spaces up to `width` characters. */
void cli_put_clean_padded(FILE *f, const char *s, size_t max, size_t width);

/* ------------------------------------------------------------------------------------------------------------
 * JSON output: every document the CLI prints (classify, bench, run, info, inspect) is built with cJSON.
 * ------------------------------------------------------------------------------------------------------------ */

/* A JSON string of `s` (NULL: null); bytes that are not valid UTF-8 become U+FFFD, so the document is always
 * valid UTF-8 whatever a file name or label holds. */
cJSON *cli_jstr(const char *s);
/* A malloc'ed copy of s with every byte that is not valid UTF-8 replaced by U+FFFD (NULL when out of memory). */
char *cli_utf8_fix(const char *s);
/* A JSON number; NaN and infinities become null and are counted for cli_json_print's warning. */
cJSON *cli_jnum(double v);
/* A float as JSON with at most 9 significant digits (exact for a float); non-finite as cli_jnum. */
cJSON *cli_jfloat(float v);
/* `item` on one line with a space after each ':' and ',' ({"rank": 1, "class": 3}); malloc'ed (free), NULL when out
 * of memory. */
char *cli_json_line(const cJSON *item);
/* Prints `doc` (pretty, or one line as cli_json_line) and a newline on stdout, then deletes it; warns on stderr once when
 * non-finite numbers were written as null. Returns CLI_OK, or CLI_FAILURE when out of memory. */
int cli_json_print(const char *cmd, cJSON *doc, int pretty);
/* Prints cli_json_print's warning now (for documents printed piece by piece); nothing when all were finite. */
void cli_json_warn_non_finite(const char *cmd);

#endif
