// SPDX-License-Identifier: Apache-2.0
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

/* Helpers shared by the subcommands: cli_common.c (error channel, clock, log callback, standard output) and
 * cli_bundled.c (the bundled model). */

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

/* The steps every command that opens a model shares (cli_model.c). */

/* Prints "vkvit CMD: <cli_last_error()>" on stderr and returns the exit code of `r` (vkvit_cli_exit_code). */
int cli_fail(const char *cmd, vkvit_result r);
/* The model to open: `given`, else the bundled CLI_BUNDLED_MODEL (its path written to buf); NULL when there is
 * none, after printing "vkvit CMD: no --model given and the bundled model ... is not installed (looked at ...)". */
const char *cli_model_path(const char *cmd, const char *given, char *buf, size_t cap);
/* Refuses a model path that is plainly not a model (cli_sniff_model: before any device work), then creates the ctx
 * (*cd) and the model. On failure *ctx and *model hold what was created (destroy them as usual). */
vkvit_result cli_open_model(const vkvit_ctx_desc *cd, const char *path, vkvit_ctx **ctx, vkvit_model **model);

/* A vkvit_ctx_desc.log callback that prints warnings (validation messages when VKVIT_VALIDATION=1) to stderr,
 * prefixed with `user` (a "vkvit <command>" string). Errors are not printed: the command prints the sentence of
 * the failing call's result itself. */
void cli_log_stderr(void *user, int level, const char *message);

/* Flushes stdout and checks it for errors (a full disk, a closed pipe, /dev/full): prints one sentence and returns
 * CLI_FAILURE, else returns rc unchanged. Every command's last call. */
int cli_finish_stdout(const char *cmd, int rc);
/* fflush(stdout) for output printed piece by piece; an error is remembered for cli_finish_stdout. */
void cli_flush_stdout(void);
/* Whether standard output has failed (a closed pipe: SIGPIPE is ignored, main.c): streaming commands stop their
 * work then, as SIGPIPE used to stop them, and cli_finish_stdout reports it. */
int cli_stdout_failed(void);

/* The helpers by concern: option parsing (cli_options.c), inputs, outputs and the model sniffer (cli_input.c,
 * cli_output.c, cli_sniff.c), terminal strings and JSON (cli_utf8.c, cli_json.c). */
#include "cli_io.h"
#include "cli_options.h"
#include "cli_text.h"

#endif
