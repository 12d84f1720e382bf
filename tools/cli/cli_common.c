/* Helpers shared by the CLI's subcommands: finding the bundled model, flag parsing, JSON strings, the log
 * callback. The one platform call of the CLI (/proc/self/exe) lives here. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Appends `s` to the ", "-separated list in buf. */
static void append_looked(char *buf, size_t cap, const char *s) {
    size_t n = strlen(buf);
    if (n + 1 < cap && snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", s) >= (int)(cap - n))
        buf[cap - 1] = '\0'; /* cut: the list is only for the error sentence */
}

int cli_find_bundled_model(const char *file, char *path, size_t cap) {
    char looked[2048] = "";
    char candidate[4096];
#if defined(__linux__)
    /* Installed layout: <prefix>/bin/vkvit and <prefix>/share/vkvit/models/. */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            int len = snprintf(candidate, sizeof candidate, "%s/../share/vkvit/models/%s", exe, file);
            if (len > 0 && len < (int)sizeof candidate && is_regular_file(candidate)) {
                snprintf(path, cap, "%s", candidate);
                return 1;
            }
            append_looked(looked, sizeof looked, candidate);
        }
    }
#endif
#if defined(VKVIT_SOURCE_DIR)
    /* Build tree: the source tree this binary was configured from. */
    int len = snprintf(candidate, sizeof candidate, "%s/assets/models/%s", VKVIT_SOURCE_DIR, file);
    if (len > 0 && len < (int)sizeof candidate && is_regular_file(candidate)) {
        snprintf(path, cap, "%s", candidate);
        return 1;
    }
    append_looked(looked, sizeof looked, candidate);
#endif
    snprintf(path, cap, "%s", looked[0] ? looked : "(no search location on this platform)");
    return 0;
}

vkvit_precision cli_parse_precision(const char *s) {
    if (!strcmp(s, "fp32")) return VKVIT_PRECISION_FP32;
    if (!strcmp(s, "fp16")) return VKVIT_PRECISION_FP16;
    return VKVIT_PRECISION_DEFAULT;
}

const char *cli_precision_name(vkvit_precision p) { return p == VKVIT_PRECISION_FP16 ? "fp16" : "fp32"; }

int cli_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out) {
    if (!s || *s < '0' || *s > '9') return 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0' || v < lo || v > hi) return 0;
    *out = (uint32_t)v;
    return 1;
}

void cli_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}

void cli_log_stderr(void *user, int level, const char *message) {
    /* Errors also come back as a result code with the same sentence, which the command prints itself. */
    if (level != VKVIT_LOG_WARNING) return;
    fprintf(stderr, "%s: warning: %s\n", user ? (const char *)user : "vkvit", message);
}
