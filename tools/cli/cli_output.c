// SPDX-License-Identifier: Apache-2.0
/* Writing outputs: atomic replacement of regular files (a temporary next to the file, then rename), in-place
 * writes to devices and FIFOs, and the signal handlers that remove an interrupted run's temporary file. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
