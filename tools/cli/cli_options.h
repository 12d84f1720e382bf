// SPDX-License-Identifier: Apache-2.0
/* Option parsing for the vkvit subcommands (cli_options.c). */
#ifndef VKVIT_CLI_OPTIONS_H
#define VKVIT_CLI_OPTIONS_H

#include "vkvit.h"

#include <getopt.h>
#include <stdint.h>

/* Parses "fp32" / "fp16"; returns 0 for anything else. */
vkvit_precision cli_parse_precision(const char *s);
const char *cli_precision_name(vkvit_precision p);

/* Parses a decimal integer in [lo, hi] (the whole string: digits only, no sign or blanks, no wrap-around: values
 * above 2^64 - 1 fail like any other out-of-range value); returns 0 on failure. */
int cli_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out);
int cli_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

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

#endif
