/* Helpers shared by the CLI's subcommands: finding the bundled model, option parsing, reading inputs and writing
 * outputs, terminal-safe strings, JSON, the log callback. The CLI's platform calls (/proc/self/exe, open/read,
 * realpath, rename) live here. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------------------------
 * Error channel and clock
 * ------------------------------------------------------------------------------------------------------------ */

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

/* ------------------------------------------------------------------------------------------------------------
 * UTF-8
 * ------------------------------------------------------------------------------------------------------------ */

/* Decodes one code point at s (n > 0 bytes left); returns its length (1..4), or 0 for a byte that does not start a
 * valid, shortest-form, non-surrogate sequence. */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) len = 2, v = c & 0x1Fu, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, v = c & 0x0Fu, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, v = c & 0x07u, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

/* Characters a terminal must not receive from a file: C0 controls (ESC, BEL, CR, ...), DEL, C1 controls, and the
 * bidirectional embeddings / overrides / isolates that reorder what follows them. */
static int unsafe_on_terminal(uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

/* Walks the clean form of s: calls put(f, bytes, n) per character; returns the characters written. */
static size_t clean_walk(FILE *f, const char *s, size_t max) {
    if (!s) s = "(null)";
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s), chars = 0;
    while (left && chars < max) {
        uint32_t cp = 0;
        size_t len = utf8_next(p, left, &cp);
        if (len == 0 || unsafe_on_terminal(cp)) {
            if (f) fputc('?', f);
            len = len ? len : 1;
        } else if (f) {
            fwrite(p, 1, len, f);
        }
        p += len;
        left -= len;
        chars++;
    }
    if (left) {
        if (f) fputs("...", f);
        chars += 3;
    }
    return chars;
}

void cli_put_clean(FILE *f, const char *s, size_t max) { (void)clean_walk(f, s, max); }

void cli_print_error(const char *cmd, const char *sentence) {
    fprintf(stderr, "vkvit %s: ", cmd);
    cli_put_clean(stderr, sentence, 4096);
    fputc('\n', stderr);
}

size_t cli_clean_width(const char *s, size_t max) { return clean_walk(NULL, s, max); }

void cli_put_clean_padded(FILE *f, const char *s, size_t max, size_t width) {
    for (size_t n = clean_walk(f, s, max); n < width; n++) fputc(' ', f);
}

char *cli_utf8_fix(const char *s) {
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *o = out;
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    while (n) {
        uint32_t cp;
        size_t len = utf8_next(p, n, &cp);
        if (len == 0) {
            memcpy(o, "\xEF\xBF\xBD", 3);
            o += 3;
            len = 1;
        } else {
            memcpy(o, p, len);
            o += len;
        }
        p += len;
        n -= len;
    }
    *o = '\0';
    return out;
}

void cli_json_string(FILE *f, const char *s) {
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s);
    while (left) {
        uint32_t cp = 0;
        size_t len = utf8_next(p, left, &cp);
        if (len == 0) {
            fputs("\\ufffd", f);
            len = 1;
        } else if (cp == '"') {
            fputs("\\\"", f);
        } else if (cp == '\\') {
            fputs("\\\\", f);
        } else if (cp == '\n') {
            fputs("\\n", f);
        } else if (cp == '\r') {
            fputs("\\r", f);
        } else if (cp == '\t') {
            fputs("\\t", f);
        } else if (cp < 0x20) {
            fprintf(f, "\\u%04x", cp);
        } else {
            fwrite(p, 1, len, f);
        }
        p += len;
        left -= len;
    }
    fputc('"', f);
}

/* ------------------------------------------------------------------------------------------------------------
 * JSON documents
 * ------------------------------------------------------------------------------------------------------------ */

static unsigned g_non_finite; /* numbers written as null since the last cli_json_print */

cJSON *cli_jstr(const char *s) {
    if (!s) return cJSON_CreateNull();
    char *fixed = cli_utf8_fix(s);
    if (!fixed) return NULL;
    cJSON *j = cJSON_CreateString(fixed);
    free(fixed);
    return j;
}

cJSON *cli_jnum(double v) {
    if (!isfinite(v)) {
        g_non_finite++;
        return cJSON_CreateNull();
    }
    return cJSON_CreateNumber(v);
}

char *cli_json_line(const cJSON *item) {
    char *text = item ? cJSON_PrintUnformatted(item) : NULL;
    if (!text) return NULL;
    size_t n = strlen(text), extra = 0;
    int in_string = 0;
    for (size_t i = 0; i < n; i++) { /* one space after each ':' and ',' outside strings */
        if (in_string) {
            if (text[i] == '\\') i++;
            else if (text[i] == '"') in_string = 0;
        } else if (text[i] == '"') {
            in_string = 1;
        } else if (text[i] == ':' || text[i] == ',') {
            extra++;
        }
    }
    char *out = malloc(n + extra + 1), *o = out;
    if (out) {
        in_string = 0;
        for (size_t i = 0; i < n; i++) {
            char c = text[i];
            *o++ = c;
            if (in_string) {
                if (c == '\\' && i + 1 < n) *o++ = text[++i];
                else if (c == '"') in_string = 0;
            } else if (c == '"') {
                in_string = 1;
            } else if (c == ':' || c == ',') {
                *o++ = ' ';
            }
        }
        *o = '\0';
    }
    cJSON_free(text);
    return out;
}

int cli_json_print(const char *cmd, cJSON *doc, int pretty) {
    char *text = doc ? (pretty ? cJSON_Print(doc) : cli_json_line(doc)) : NULL;
    cJSON_Delete(doc);
    if (!text) {
        fprintf(stderr, "vkvit %s: out of memory while building the JSON output\n", cmd);
        return CLI_FAILURE;
    }
    fputs(text, stdout);
    fputc('\n', stdout);
    if (pretty) cJSON_free(text);
    else free(text);
    cli_json_warn_non_finite(cmd);
    return CLI_OK;
}

void cli_json_warn_non_finite(const char *cmd) {
    if (!g_non_finite) return;
    fprintf(stderr, "vkvit %s: warning: %u non-finite number%s (NaN or infinity) written as null in the JSON "
                    "output\n", cmd, g_non_finite, g_non_finite == 1 ? "" : "s");
    g_non_finite = 0;
}

/* ------------------------------------------------------------------------------------------------------------
 * Option parsing
 * ------------------------------------------------------------------------------------------------------------ */

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

/* ------------------------------------------------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------------------------------------------------ */

const char *cli_input_name(const char *path) { return strcmp(path, "-") ? path : "standard input"; }

/* A FIFO with a name in the file system (mkfifo), as opposed to the anonymous pipe behind '-', /dev/stdin or a
 * shell's <(...). Linux names anonymous pipes "pipe:[inode]" in /proc/self/fd; elsewhere every FIFO counts as
 * anonymous (read to the end, as before). */
static bool is_named_pipe(int fd) {
    char link[64], target[256];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 0) return false;
    target[n] = '\0';
    return strncmp(target, "pipe:", 5) != 0;
}

vkvit_result cli_read_input(const char *path, size_t max_bytes, uint8_t **data, size_t *size) {
    *data = NULL;
    *size = 0;
    const char *name = cli_input_name(path);
    int std = !strcmp(path, "-");
    /* O_NONBLOCK: opening a named pipe with no writer must not block (issue 12.9); cleared again below. */
    int fd = std ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return cli_error(VKVIT_ERROR_IO, "cannot open '%s': %s", name, strerror(errno));
    struct stat st;
    vkvit_result r = VKVIT_OK;
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    if (fstat(fd, &st) != 0) {
        r = cli_error(VKVIT_ERROR_IO, "cannot read '%s': %s", name, strerror(errno));
        goto done;
    }
    if (S_ISDIR(st.st_mode)) {
        r = cli_error(VKVIT_ERROR_IO, "'%s' is a directory, not a file", name);
        goto done;
    }
    if (!std && S_ISFIFO(st.st_mode) && is_named_pipe(fd)) {
        r = cli_error(VKVIT_ERROR_IO, "'%s' is a named pipe (FIFO); give the file itself, or '-' and the data on "
                      "standard input", name);
        goto done;
    }
    /* /dev/zero never ends, /dev/urandom neither; standard input may be a terminal (typed or pasted data) */
    if ((S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) && !(std && isatty(fd))) {
        r = cli_error(VKVIT_ERROR_IO, "'%s' is a device, not a file; give the file itself, or '-' and the data on "
                      "standard input", name);
        goto done;
    }
    if (!std) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (S_ISREG(st.st_mode)) {
        if ((uint64_t)st.st_size > (uint64_t)max_bytes) {
            r = cli_error(VKVIT_ERROR_INVALID_ARGUMENT, "'%s' is %lld bytes, more than the limit of %zu bytes",
                          name, (long long)st.st_size, max_bytes);
            goto done;
        }
        cap = (size_t)st.st_size + 1; /* +1: the read that finds the end (or that the file grew) */
    } else {
        cap = 64 << 10; /* a pipe or standard input (a terminal too): read to the end */
    }
    size_t limit = max_bytes + 1; /* one byte more than allowed proves the input too large */
    cap = CLI_MIN(cap, limit);
    for (;;) {
        if (!buf || n == cap) {
            if (buf && cap >= limit) {
                r = cli_error(VKVIT_ERROR_INVALID_ARGUMENT, "'%s' holds more than the limit of %zu bytes", name,
                              max_bytes);
                goto done;
            }
            size_t want = buf ? (cap > limit / 2 ? limit : cap * 2) : cap;
            uint8_t *grown = realloc(buf, want);
            if (!grown) {
                r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate %zu bytes to read '%s'", want,
                              name);
                goto done;
            }
            buf = grown;
            cap = want;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            r = cli_error(VKVIT_ERROR_IO, "cannot read '%s': %s", name, strerror(errno));
            goto done;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    if (n > max_bytes)
        r = cli_error(VKVIT_ERROR_INVALID_ARGUMENT, "'%s' holds more than the limit of %zu bytes", name, max_bytes);
done:
    if (!std) close(fd);
    if (r != VKVIT_OK) {
        free(buf);
        return r;
    }
    *data = buf;
    *size = n;
    return VKVIT_OK;
}

/* Writes everything to fd; returns 0 or an errno. */
static int write_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t put = write(fd, p, n);
        if (put < 0 && errno == EINTR) continue;
        if (put < 0) return errno;
        if (put == 0) return EIO;
        p += put;
        n -= (size_t)put;
    }
    return 0;
}

/* The temporary file of the output being written (cli_out_open .. commit / abort), removed when the command is
 * interrupted (SIGINT, SIGTERM, SIGHUP, SIGQUIT: Ctrl-C, kill, a closed terminal, Ctrl-\) so that an interrupted
 * `eval --predictions` leaves nothing behind; the file it would replace keeps its content. The signal is raised
 * again with its default action afterwards (SIGQUIT still dumps core where core files are on). One at a time: the
 * commands write one such output. The handler goes only where the signal is not ignored (`nohup` ignores SIGHUP, a
 * shell's background job SIGINT), and the name is changed with the signals blocked, so the handler never sees half
 * of it. What no handler can catch (SIGKILL, a crash, a power cut) leaves its temporary behind for the next run that
 * writes the same output: remove_stale_temporaries. */
static const int k_cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static char g_pending_tmp[PATH_MAX + 32];
static volatile sig_atomic_t g_pending;

static void remove_pending_and_reraise(int sig) {
    if (g_pending) unlink(g_pending_tmp); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void set_pending(const char *tmp) {
    static int installed;
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t i = 0; i < CLI_ARRAY_LEN(k_cleanup_signals); i++) sigaddset(&block, k_cleanup_signals[i]);
    sigprocmask(SIG_BLOCK, &block, &old);
    if (tmp && !installed) {
        installed = 1;
        for (size_t i = 0; i < CLI_ARRAY_LEN(k_cleanup_signals); i++) {
            struct sigaction now, act = {.sa_handler = remove_pending_and_reraise};
            sigemptyset(&act.sa_mask);
            if (sigaction(k_cleanup_signals[i], NULL, &now) == 0 && now.sa_handler != SIG_IGN)
                sigaction(k_cleanup_signals[i], &act, NULL);
        }
    }
    g_pending = 0;
    if (tmp) snprintf(g_pending_tmp, sizeof g_pending_tmp, "%s", tmp), g_pending = 1;
    sigprocmask(SIG_SETMASK, &old, NULL);
}

/* The decimal number at *p (no sign, no leading zero, at most 9 digits: a pid or an attempt number); -1 when there
 * is none. Advances *p past it. */
static long parse_name_number(const char **p) {
    const char *s = *p;
    if (*s < '1' || *s > '9') return -1;
    long v = 0;
    for (int digits = 0; *s >= '0' && *s <= '9'; s++) {
        if (++digits > 9) return -1;
        v = v * 10 + (*s - '0');
    }
    *p = s;
    return v;
}

/* Removes the temporaries of `real` that runs killed before they could clean up left behind (SIGKILL, a crash: no
 * handler runs): the entries of its folder named exactly "<name>.tmp.<pid>" or "<name>.tmp.<pid>.<attempt>" (the
 * names cli_out_open gives) that are regular files of this user and whose pid is no live process (kill(pid, 0) says
 * ESRCH). Anything else stays: other outputs' temporaries, names that only look alike, folders and symlinks, and the
 * file of any live pid (a run still writing it, or a reused pid: then the file waits for a later run). A run of
 * another PID namespace sharing the folder (a container) would look dead; its rename then fails with a sentence,
 * and no output is ever half-written. */
static void remove_stale_temporaries(const char *real) {
    const char *slash = strrchr(real, '/');
    const char *base = slash ? slash + 1 : real;
    char dir[PATH_MAX];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == real) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - real), real);
    const size_t base_len = strlen(base);
    DIR *d = base_len ? opendir(dir) : NULL;
    if (!d) return;
    const pid_t self = getpid();
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const char *n = e->d_name;
        if (strncmp(n, base, base_len) != 0 || strncmp(n + base_len, ".tmp.", 5) != 0) continue;
        const char *p = n + base_len + 5;
        const long pid = parse_name_number(&p);
        if (pid <= 0 || (*p == '.' && (++p, parse_name_number(&p) < 0)) || *p != '\0') continue;
        if ((pid_t)pid == self || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive (EPERM too) */
        struct stat st;
        if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
            (void)unlinkat(dirfd(d), n, 0);
    }
    closedir(d);
}

int cli_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

vkvit_result cli_out_open(cli_out_file *o, const char *path) {
    memset(o, 0, sizeof *o);
    o->fd = -1;
    o->path = path;
    if (!strcmp(path, "-")) {
        fflush(stdout);
        o->fd = STDOUT_FILENO;
        o->in_place = 1;
        return VKVIT_OK;
    }
    /* Where the bytes really go: symlinks resolved, so a link is followed rather than replaced. */
    struct stat st;
    int exists = realpath(path, o->real) != NULL && stat(o->real, &st) == 0;
    if (!exists) {
        struct stat lst;
        if (lstat(path, &lst) == 0) {
            /* A dangling symlink (or an unreadable path): create the target through it, in place. */
            exists = 1;
            st.st_mode = S_IFIFO;
        }
        snprintf(o->real, sizeof o->real, "%s", path);
    }
    if (exists && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) return cli_error(VKVIT_ERROR_IO, "cannot write '%s': it is a directory", path);
        /* A device, FIFO or socket: written in place; replacing it with a regular file would be wrong. */
        if ((o->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0)
            return cli_error(VKVIT_ERROR_IO, "cannot open '%s' for writing: %s", path, strerror(errno));
        o->in_place = 1;
        return VKVIT_OK;
    }
    /* A regular file or a new one: a temporary file in the same directory as the real file, renamed over it by
     * cli_out_commit. The file itself is not touched before then. The temporary is a new file (O_EXCL: never one
     * that exists, nor a symlink planted under its name), registered for removal before it exists. */
    o->replace = exists;
    o->mode = exists ? st.st_mode & 07777 : 0;
    remove_stale_temporaries(o->real);
    for (int attempt = 0; o->fd < 0 && attempt < 16; attempt++) {
        if (snprintf(o->tmp, sizeof o->tmp, attempt ? "%s.tmp.%ld.%d" : "%s.tmp.%ld", o->real, (long)getpid(),
                     attempt) >= (int)sizeof o->tmp) {
            o->tmp[0] = '\0';
            return cli_error(VKVIT_ERROR_IO, "cannot write '%s': the path is too long", path);
        }
        set_pending(o->tmp);
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (o->fd < 0 && errno != EEXIST) break;
    }
    if (o->fd < 0) {
        vkvit_result r = cli_error(VKVIT_ERROR_IO, "cannot create '%s': %s", o->tmp, strerror(errno));
        set_pending(NULL);
        o->tmp[0] = '\0';
        return r;
    }
    if (o->replace) (void)fchmod(o->fd, o->mode); /* keep the replaced file's permissions */
    return VKVIT_OK;
}

vkvit_result cli_out_write(cli_out_file *o, const void *data, size_t size) {
    int e = o->error ? o->error : write_all(o->fd, data, size);
    if (e) {
        o->error = e;
        return cli_error(VKVIT_ERROR_IO, "cannot write %s: %s", !strcmp(o->path, "-") ? "to standard output" : o->path,
                         strerror(e));
    }
    return VKVIT_OK;
}

vkvit_result cli_out_commit(cli_out_file *o) {
    int e = o->error;
    if (o->fd >= 0 && o->fd != STDOUT_FILENO) {
        if (!e && o->tmp[0] && fsync(o->fd) != 0 && errno != EINVAL && errno != EROFS) e = errno;
        if (close(o->fd) != 0 && !e) e = errno;
    }
    o->fd = -1;
    if (o->tmp[0]) {
        if (!e && rename(o->tmp, o->real) != 0) e = errno;
        if (e) unlink(o->tmp);
        o->tmp[0] = '\0';
        set_pending(NULL);
    }
    if (e)
        return cli_error(VKVIT_ERROR_IO, "cannot write %s: %s", !strcmp(o->path, "-") ? "to standard output" : o->path,
                         strerror(e));
    return VKVIT_OK;
}

void cli_out_abort(cli_out_file *o) {
    if (o->fd >= 0 && o->fd != STDOUT_FILENO) close(o->fd);
    o->fd = -1;
    if (o->tmp[0]) unlink(o->tmp), set_pending(NULL);
    o->tmp[0] = '\0';
}

vkvit_result cli_write_output(const char *path, const void *data, size_t size) {
    cli_out_file o;
    vkvit_result r = cli_out_open(&o, path);
    if (r == VKVIT_OK && (r = cli_out_write(&o, data, size)) != VKVIT_OK) {
        cli_out_abort(&o);
        return r;
    }
    return r == VKVIT_OK ? cli_out_commit(&o) : r;
}

vkvit_result cli_sniff_model(const char *path) {
    unsigned char b[16] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block here */
    if (fd < 0) return cli_error(VKVIT_ERROR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    const int examined = fstat(fd, &st) == 0;
    if (!examined || !S_ISREG(st.st_mode)) { /* the reader's own sentence, before any device work */
        close(fd);
        const char *what = !examined               ? "something that cannot be examined"
                           : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                           : S_ISDIR(st.st_mode)  ? "a directory"
                           : S_ISCHR(st.st_mode)  ? "a character device"
                           : S_ISBLK(st.st_mode)  ? "a block device"
                                                  : "something else";
        return cli_error(VKVIT_ERROR_IO, "'%s' is not a regular file but %s; vkvit reads only regular files", path,
                         what);
    }
    ssize_t n = read(fd, b, sizeof b);
    close(fd);
    if (n < 0) return VKVIT_OK;
    /* Files of /proc and /sys are regular files whose st_size is 0, their content made as they are read: the reader
     * (which maps st_size bytes) would call them "0 bytes long". */
    if (n > 0 && st.st_size == 0)
        return cli_error(VKVIT_ERROR_IO, "'%s' is not a regular file with a size: it reports 0 bytes but reads as "
                         "data, as files under /proc and /sys do; vkvit reads models only from regular files", path);
    return cli_sniff_safetensors(b, (size_t)n, path,
                                 "a vkvit model (a safetensors file with vkvit metadata, docs/model-format.md)");
}

vkvit_result cli_sniff_safetensors(const uint8_t *bytes, size_t n, const char *name, const char *kind) {
    size_t at = 8; /* the JSON header may start with whitespace, as JSON may */
    while (at < n && (bytes[at] == ' ' || bytes[at] == '\t' || bytes[at] == '\n' || bytes[at] == '\r')) at++;
    uint64_t header_len = 0;
    for (int i = 7; n >= 8 && i >= 0; i--) header_len = header_len << 8 | bytes[i];
    if (n < 9 || (header_len <= ((uint64_t)1 << 32) && (at == n || bytes[at] == '{')))
        return VKVIT_OK; /* short or plausible: the reader says what is wrong */
    unsigned char b[16] = {0};                      /* the magic table looks at up to 16 bytes */
    memcpy(b, bytes, n < sizeof b ? n : sizeof b);
    static const struct {
        const char *magic;
        size_t len, at;
        const char *what;
    } k[] = {
        {"\x89PNG\r\n\x1a\n", 8, 0, "a PNG image"},
        {"\xff\xd8\xff", 3, 0, "a JPEG image"},
        {"GIF8", 4, 0, "a GIF image"},
        {"WEBP", 4, 8, "a WebP image"},
        {"BM", 2, 0, "a BMP image"},
        {"PK\x03\x04", 4, 0, "a ZIP archive, as PyTorch's torch.save writes (.pt / .pth): convert the "
                             "checkpoint with tools/convert.py"},
        {"\x89HDF\r\n\x1a\n", 8, 0, "an HDF5 file (e.g. Keras .h5)"},
        {"\x1f\x8b", 2, 0, "gzip-compressed data: decompress it first"},
        {"GGUF", 4, 0, "a GGUF model (llama.cpp)"},
        {"TFL3", 4, 4, "a TensorFlow Lite model"},
        {"\x93NUMPY", 6, 0, "a NumPy .npy array"},
        {"%PDF", 4, 0, "a PDF document"},
        {"\x7f" "ELF", 4, 0, "an ELF executable"},
    };
    const char *what = NULL;
    for (size_t i = 0; i < CLI_ARRAY_LEN(k) && !what; i++)
        if (!memcmp(b + k[i].at, k[i].magic, k[i].len)) what = k[i].what;
    if (!what && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5)
        what = "a Python pickle (an older PyTorch checkpoint): convert it with tools/convert.py";
    if (!what && b[0] == 0x08 && b[1] < 0x20 && (b[2] == 0x12 || b[2] == 0x3a))
        what = "an ONNX model (protobuf): vkvit reads converted PyTorch checkpoints (tools/convert.py)";
    if (!what && (b[0] == '{' || b[0] == '['))
        what = "JSON text (a safetensors file starts with an 8-byte header length, then its JSON header)";
    if (what)
        return cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s' is not %s: it looks like %s", name, kind, what);
    return cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s' is not %s: a safetensors file starts with an 8-byte header "
                     "length and then '{', this one with %02x %02x %02x %02x %02x %02x %02x %02x %02x", name, kind,
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8]);
}

const char *cli_shape_text(const vkvit_shape *s, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < s->ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%u", d ? ", " : "", s->dims[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

const char *cli_dims_text(const uint64_t *shape, uint32_t ndim, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%llu", d ? ", " : "", (unsigned long long)shape[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

vkvit_result cli_open_tensor_file(const char *path, size_t max_bytes, uint8_t **bytes, vkvit_tensor_file **file) {
    *bytes = NULL;
    *file = NULL;
    const char *name = cli_input_name(path);
    uint8_t *data = NULL;
    size_t size = 0;
    vkvit_result r = cli_read_input(path, max_bytes, &data, &size);
    if (r == VKVIT_ERROR_INVALID_ARGUMENT) r = VKVIT_ERROR_BAD_MODEL_FILE; /* above the cap; the sentence says so */
    if (r == VKVIT_OK && (r = cli_sniff_safetensors(data, size, name, "a safetensors file")) == VKVIT_OK)
        r = vkvit_tensor_file_create(data, size, name, file);
    if (r != VKVIT_OK) {
        free(data);
        return r;
    }
    *bytes = data;
    return VKVIT_OK;
}

vkvit_result cli_read_tensor_f32(const vkvit_tensor_file *file, uint32_t index, const vkvit_tensor_info *info,
                                 const char *what, float **out) {
    *out = NULL;
    if (info->count > SIZE_MAX / sizeof(float))
        return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %s", what);
    float *f = malloc(info->count ? (size_t)info->count * sizeof *f : 1);
    if (!f) return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %s", what);
    vkvit_result r = vkvit_tensor_file_read_f32(file, index, f, (size_t)info->count);
    if (r != VKVIT_OK) {
        free(f);
        return r;
    }
    *out = f;
    return VKVIT_OK;
}

vkvit_result cli_read_condition(const char *path, vkvit_shape cs, float **out, uint32_t *rows) {
    *out = NULL;
    *rows = 0;
    const char *name = cli_input_name(path);
    uint8_t *data = NULL;
    vkvit_tensor_file *tf = NULL;
    vkvit_result r = cli_open_tensor_file(path, (size_t)1 << 30, &data, &tf);
    if (r != VKVIT_OK) return r;
    int64_t at = vkvit_tensor_file_find(tf, "condition");
    vkvit_tensor_info t;
    char want[64], got[96];
    vkvit_shape any = cs;
    any.dims[0] = 0;
    cli_shape_text(&any, want, sizeof want);
    memcpy(want, "[R", 2); /* "[R, 32]": any number of rows */
    if (at < 0 || vkvit_tensor_file_info(tf, (uint32_t)at, &t) != VKVIT_OK) {
        r = cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s' has no tensor named 'condition' (the model wants %s)", name,
                      want);
        goto done;
    }
    bool same = t.ndim == cs.ndim && t.shape[0] >= 1 && t.shape[0] <= 65536;
    for (uint32_t d = 1; same && d < cs.ndim; d++) same = t.shape[d] == cs.dims[d];
    if (!same) {
        cli_dims_text(t.shape, t.ndim, got, sizeof got);
        r = cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s': condition is %s, the model wants %s (R rows, 1 <= R <= 65536)",
                      name, got, want);
        goto done;
    }
    if ((r = cli_read_tensor_f32(tf, (uint32_t)at, &t, "the condition", out)) != VKVIT_OK) goto done;
    *rows = (uint32_t)t.shape[0];
done:
    vkvit_tensor_file_destroy(tf);
    free(data);
    return r;
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

cJSON *cli_jfloat(float v) {
    if (!isfinite(v)) return cli_jnum(v);
    char buf[32];
    snprintf(buf, sizeof buf, "%.9g", v); /* the shortest that round-trips a float, not a double's 17 digits */
    return cJSON_CreateNumber(strtod(buf, NULL));
}

void cli_log_stderr(void *user, int level, const char *message) {
    /* Errors also come back as a result code with the same sentence, which the command prints itself. */
    if (level != VKVIT_LOG_WARNING) return;
    fprintf(stderr, "%s: warning: %s\n", user ? (const char *)user : "vkvit", message);
}
