// SPDX-License-Identifier: Apache-2.0
/* Option parsing (cli_opts: one getopt_long loop and one error style for every subcommand) and the parsers of
 * option values (integers, precisions). */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

vkvit_precision cli_parse_precision(const char *s) {
    if (!strcmp(s, "fp32")) return VKVIT_PRECISION_FP32;
    if (!strcmp(s, "fp16")) return VKVIT_PRECISION_FP16;
    if (!strcmp(s, "fp16-math")) return VKVIT_PRECISION_FP16_MATH;
    return VKVIT_PRECISION_DEFAULT;
}

const char *cli_precision_name(vkvit_precision p) {
    return p == VKVIT_PRECISION_FP16 ? "fp16" : p == VKVIT_PRECISION_FP16_MATH ? "fp16-math" : "fp32";
}

int cli_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
    if (!s || *s < '0' || *s > '9') return 0; /* strtoull would accept " 5", "+5" and "-5" (as 2^64 - 5) */
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE || *end != '\0' || v < lo || v > hi) return 0;
    *out = (uint64_t)v;
    return 1;
}

int cli_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out) {
    uint64_t v;
    if (!cli_parse_u64(s, lo, hi, &v)) return 0;
    *out = (uint32_t)v;
    return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "vkvit %s: %s (try 'vkvit %s --help')\n", cmd, msg, cmd);
    return CLI_USAGE;
}

void cli_opts_init(cli_opts *o, const char *cmd, int argc, char **argv, const char *shortopts,
                   const struct option *longopts) {
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->argc = argc;
    o->argv = argv;
    snprintf(o->shortopts, sizeof o->shortopts, ":%s", shortopts);
    o->longopts = longopts;
    o->first_operand = argc;
    optind = 0; /* glibc: a full re-initialisation */
    opterr = 0; /* the messages are ours */
}

/* The option at argv[i] as spelled, without "=value". */
static void spelled(cli_opts *o, const char *a) {
    size_t n = strcspn(a, "=");
    if (n >= sizeof o->name) n = sizeof o->name - 1;
    memcpy(o->name, a, n);
    o->name[n] = '\0';
}

static const struct option *long_by_val(const cli_opts *o, int val) {
    for (const struct option *l = o->longopts; l && l->name; l++)
        if (l->val == val) return l;
    return NULL;
}

int cli_opts_next(cli_opts *o) {
    int index = -1;
    int c = getopt_long(o->argc, o->argv, o->shortopts, o->longopts, &index);
    o->arg = optarg;
    if (c == -1) {
        o->first_operand = optind;
        return -1;
    }
    const char *prev = optind > 0 && optind <= o->argc ? o->argv[optind - 1] : "";
    if (c == ':') { /* a known option without its value */
        if (!strncmp(prev, "--", 2)) spelled(o, prev);
        else snprintf(o->name, sizeof o->name, "-%c", optopt);
        cli_usage_error(o->cmd, "option '%s' needs a value", o->name);
        return '?';
    }
    if (c == '?') {
        if (optopt == 0) { /* an unknown (or ambiguous) long option */
            spelled(o, prev);
            cli_usage_error(o->cmd, "unknown option '%s'", o->name);
        } else if (!strncmp(prev, "--", 2) && long_by_val(o, optopt)) { /* --flag=value for a flag */
            spelled(o, prev);
            cli_usage_error(o->cmd, "option '%s' takes no value", o->name);
        } else {
            snprintf(o->name, sizeof o->name, "-%c", optopt > 32 && optopt < 127 ? optopt : '?');
            cli_usage_error(o->cmd, "unknown option '%s'", o->name);
        }
        return '?';
    }
    if (index >= 0) snprintf(o->name, sizeof o->name, "--%s", o->longopts[index].name);
    else snprintf(o->name, sizeof o->name, "-%c", c);
    return c;
}

int cli_opt_u32(cli_opts *o, uint32_t lo, uint32_t hi, uint32_t *out) {
    if (cli_parse_u32(o->arg, lo, hi, out)) return 1;
    cli_usage_error(o->cmd, "%s wants an integer in [%u, %u], got '%s'", o->name, lo, hi, o->arg ? o->arg : "");
    return 0;
}

int cli_opt_precision(cli_opts *o, vkvit_precision *out) {
    vkvit_precision p = cli_parse_precision(o->arg ? o->arg : "");
    if (p) {
        *out = p;
        return 1;
    }
    cli_usage_error(o->cmd, "%s is fp32, fp16 or fp16-math, got '%s'", o->name, o->arg ? o->arg : "");
    return 0;
}
