// SPDX-License-Identifier: Apache-2.0
/* The CLI's process-wide state: the error channel (cli_error / cli_last_error), the clock, the log callback and
 * the state of standard output (cli_flush_stdout / cli_finish_stdout). */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

/* The CLI is single-threaded. g_lib_seen is the library's sentence when cli_error last ran: while the library's
 * sentence is still that one, the CLI's failure is the latest (the library reports a new failure by writing a new
 * sentence; both are at most 1 KiB). */
static char g_cli_error[1024];
static char g_lib_seen[1024];
static bool g_cli_failed;

vkvit_result cli_error(vkvit_result code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_cli_error, sizeof g_cli_error, fmt, ap);
    va_end(ap);
    snprintf(g_lib_seen, sizeof g_lib_seen, "%s", vkvit_last_error());
    g_cli_failed = true;
    return code;
}

const char *cli_last_error(void) {
    return g_cli_failed && !strcmp(vkvit_last_error(), g_lib_seen) ? g_cli_error : vkvit_last_error();
}

uint64_t cli_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int g_stdout_errno; /* the first error a flush of stdout met */

void cli_flush_stdout(void) {
    errno = 0;
    if (fflush(stdout) != 0 && !g_stdout_errno) g_stdout_errno = errno ? errno : EIO;
}

int cli_stdout_failed(void) { return g_stdout_errno != 0 || ferror(stdout); }

int cli_finish_stdout(const char *cmd, int rc) {
    cli_flush_stdout();
    if (!g_stdout_errno && !ferror(stdout)) return rc;
    fprintf(stderr, "vkvit %s: cannot write the output to standard output: %s\n", cmd,
            strerror(g_stdout_errno ? g_stdout_errno : EIO));
    return CLI_FAILURE;
}

void cli_log_stderr(void *user, int level, const char *message) {
    /* Errors also come back as a result code with the same sentence, which the command prints itself. */
    if (level != VKVIT_LOG_WARNING) return;
    fprintf(stderr, "%s: warning: %s\n", user ? (const char *)user : "vkvit", message);
}
