// SPDX-License-Identifier: Apache-2.0
/* Reading inputs: whole files, standard input and pipes under a size cap (cli_read_input), and the tensors of a
 * safetensors input through the library's reader (cli_open_tensor_file, cli_read_condition). */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
