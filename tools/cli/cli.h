/* The vkvit command-line tool: one file per subcommand, each `int vkvit_cli_<name>(int argc, char **argv)` with
 * argv[0] the subcommand name. Exit codes: 0 success, 1 usage error, 2 bad input (file, model, image),
 * 3 no usable Vulkan device or loader, 4 runtime failure. */
#ifndef VKVIT_CLI_H
#define VKVIT_CLI_H

#include "vkvit.h"

#include <stdio.h>

enum { CLI_OK = 0, CLI_USAGE = 1, CLI_BAD_INPUT = 2, CLI_NO_DEVICE = 3, CLI_FAILURE = 4 };

/* Maps a library result to the CLI's exit code. */
int vkvit_cli_exit_code(vkvit_result r);

int vkvit_cli_info(int argc, char **argv);
int vkvit_cli_bench(int argc, char **argv);
int vkvit_cli_inspect(int argc, char **argv);
int vkvit_cli_run(int argc, char **argv);
int vkvit_cli_classify(int argc, char **argv);
int vkvit_cli_eval(int argc, char **argv);

/* Helpers shared by the subcommands (cli_common.c). */

/* The bundled demo model, used when classify / eval get no --model. */
#define CLI_BUNDLED_MODEL "vil_cifar10.vkvit"

/* Finds a bundled model file: first next to the installed binary (<prefix>/bin/vkvit ->
 * <prefix>/share/vkvit/models/<file>, found through /proc/self/exe on Linux), then in the source tree the binary was
 * built from (<source>/assets/models/<file>). Returns 1 and the path in `path`, or 0 with the places looked at,
 * ", "-separated, in `path`. */
int cli_find_bundled_model(const char *file, char *path, size_t cap);

/* Parses "fp32" / "fp16"; returns 0 for anything else. */
vkvit_precision cli_parse_precision(const char *s);
const char *cli_precision_name(vkvit_precision p);

/* Parses a decimal integer in [lo, hi] (the whole string); returns 0 on failure. */
int cli_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out);

/* Writes `s` as a JSON string literal (quotes, escapes, control characters as \u00XX; bytes >= 0x80 as they are). */
void cli_json_string(FILE *f, const char *s);

/* A vkvit_ctx_desc.log callback that prints warnings (validation messages when VKVIT_VALIDATION=1) to stderr,
 * prefixed with `user` (a "vkvit <command>" string). Errors are not printed: the command prints the sentence of
 * the failing call's result itself. */
void cli_log_stderr(void *user, int level, const char *message);

#endif
