// SPDX-License-Identifier: Apache-2.0
/* The only operating-system calls of the library (files, directories, the clock, the host memory of CPU devices'
 * buffers), kept here so that a port (Windows, Android's app sandbox) has one file to change. POSIX: Linux, Android,
 * macOS. */
#define _POSIX_C_SOURCE 200809L

#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h> /* anonymous mappings only (vkvit__huge_alloc): files are read, never mapped */
#define VKVIT_HAVE_MMAP 1
#endif

/* Opens `path` for reading without blocking and refuses anything but a regular file. A FIFO opened plainly blocks
 * until a writer appears (forever, for a model path that names one), so it is opened with O_NONBLOCK, checked with
 * fstat and only then switched back to blocking reads. Devices (/dev/zero never ends, /dev/null is empty),
 * directories and the size-less files of /proc and /sys get a sentence too. On success *fd is open and *bytes is the
 * file size. */
static vkvit_result open_regular(const char *path, size_t max_bytes, int *fd, size_t *bytes) {
    *fd = -1;
    *bytes = 0;
    int flags = O_RDONLY | O_NONBLOCK;
#ifdef O_CLOEXEC
    flags |= O_CLOEXEC;
#endif
    int f = open(path, flags);
    if (f < 0) return vkvit__error(VKVIT_ERROR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        int e = errno;
        close(f);
        return vkvit__error(VKVIT_ERROR_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        const char *what = S_ISFIFO(st.st_mode)  ? "a FIFO (named pipe)"
                           : S_ISDIR(st.st_mode) ? "a directory"
                           : S_ISCHR(st.st_mode) ? "a character device"
                           : S_ISBLK(st.st_mode) ? "a block device"
#ifdef S_ISSOCK
                           : S_ISSOCK(st.st_mode) ? "a socket"
#endif
                                                 : "something else";
        close(f);
        return vkvit__error(VKVIT_ERROR_IO, "'%s' is not a regular file but %s; vkvit reads only regular files",
                            path, what);
    }
    int fl = fcntl(f, F_GETFL);
    if (fl == -1 || fcntl(f, F_SETFL, fl & ~O_NONBLOCK) == -1) {
        int e = errno;
        close(f);
        return vkvit__error(VKVIT_ERROR_IO, "cannot clear O_NONBLOCK on '%s': %s", path, strerror(e));
    }
    if (st.st_size < 0 || (uint64_t)st.st_size > (uint64_t)max_bytes) {
        close(f);
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "'%s' is %lld bytes, more than the limit of %zu bytes",
                            path, (long long)st.st_size, max_bytes);
    }
    /* Files of /proc and /sys are regular files whose st_size is 0, their content made as they are read: sized by
     * st_size they would be "0 bytes long". One byte read at offset 0 (pread: the offset stays put) tells them from
     * an empty file. */
    uint8_t probe;
    if (st.st_size == 0 && pread(f, &probe, 1, 0) == 1) {
        close(f);
        return vkvit__error(VKVIT_ERROR_IO, "'%s' is not a regular file with a size: it reports 0 bytes but reads as "
                            "data, as files under /proc and /sys do; vkvit reads only regular files", path);
    }
    *fd = f;
    *bytes = (size_t)st.st_size;
    return VKVIT_OK;
}

/* Reads exactly n bytes from fd into buf (retrying short reads and EINTR). */
static vkvit_result read_all(int fd, const char *path, uint8_t *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        size_t want = n - got > ((size_t)1 << 30) ? ((size_t)1 << 30) : n - got;
        ssize_t r = read(fd, buf + got, want);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return vkvit__error(VKVIT_ERROR_IO, "cannot read '%s': %s", path, strerror(errno));
        if (r == 0) return vkvit__error(VKVIT_ERROR_IO, "short read on '%s': %zu of %zu bytes", path, got, n);
        got += (size_t)r;
    }
    return VKVIT_OK;
}

/* Reads the n bytes of open file fd into a malloc'ed buffer (*out, caller frees) and closes fd either way. */
static vkvit_result read_and_close(int fd, const char *path, size_t n, uint8_t **out) {
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate %zu bytes to read '%s'", n, path);
    }
    vkvit_result r = read_all(fd, path, buf, n);
    close(fd);
    if (r != VKVIT_OK) {
        free(buf);
        return r;
    }
    *out = buf;
    return VKVIT_OK;
}

void *vkvit__huge_alloc(size_t size) {
#if defined(VKVIT_HAVE_MMAP) && defined(MAP_ANONYMOUS)
    const size_t align = VKVIT_HUGE_PAGE_BYTES;
    if (size == 0 || size % align || size > SIZE_MAX - align) return NULL;
    /* Map one alignment more than asked and unmap the misaligned head and the rest of the tail. */
    uint8_t *raw = mmap(NULL, size + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
    const size_t head = (size_t)(p - raw), tail = align - head;
    if (head) (void)munmap(raw, head);
    if (tail) (void)munmap(p + size, tail);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    (void)madvise(p, size, MADV_HUGEPAGE);
#endif
    return p;
#else
    (void)size;
    return NULL;
#endif
}

void vkvit__huge_free(void *p, size_t size) {
#if defined(VKVIT_HAVE_MMAP) && defined(MAP_ANONYMOUS)
    if (p) (void)munmap(p, size);
#else
    (void)p, (void)size;
#endif
}

vkvit_result vkvit__read_file(const char *path, size_t max_bytes, uint8_t **data, size_t *size) {
    *data = NULL;
    *size = 0;
    int fd;
    size_t n;
    vkvit_result r = open_regular(path, max_bytes, &fd, &n);
    if (r != VKVIT_OK) return r;
    if ((r = read_and_close(fd, path, n, data)) == VKVIT_OK) *size = n;
    return r;
}

vkvit_result vkvit__file_open(const char *path, size_t max_bytes, vkvit__file *f) {
    memset(f, 0, sizeof *f);
    int fd;
    size_t n;
    vkvit_result r = open_regular(path, max_bytes, &fd, &n);
    if (r != VKVIT_OK) return r;
    f->fd = fd;
    f->size = n;
    f->is_open = true;
    return VKVIT_OK;
}

vkvit_result vkvit__file_read_at(const vkvit__file *f, uint64_t offset, void *dst, size_t n) {
    uint8_t *out = dst;
    size_t got = 0;
    while (got < n) {
        const size_t want = n - got > ((size_t)1 << 30) ? ((size_t)1 << 30) : n - got;
        const ssize_t r = pread(f->fd, out + got, want, (off_t)(offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return vkvit__error(VKVIT_ERROR_IO, "cannot read %zu bytes at byte %llu: %s", n,
                                       (unsigned long long)offset, strerror(errno));
        if (r == 0) { /* end of file before the bytes the file had when it was opened */
            struct stat st;
            const long long now = fstat(f->fd, &st) == 0 ? (long long)st.st_size : -1;
            return vkvit__error(VKVIT_ERROR_IO, "the file shrank while vkvit read it: it was %llu bytes when opened "
                                "and now ends at byte %lld, before the %zu bytes at byte %llu",
                                (unsigned long long)f->size, now, n, (unsigned long long)offset);
        }
        got += (size_t)r;
    }
    return VKVIT_OK;
}

void vkvit__file_close(vkvit__file *f) {
    if (!f) return;
    if (f->is_open) close(f->fd);
    memset(f, 0, sizeof *f);
}

vkvit__path_kind vkvit__path_kind_of(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return VKVIT__PATH_MISSING;
    return S_ISREG(st.st_mode) ? VKVIT__PATH_FILE : S_ISDIR(st.st_mode) ? VKVIT__PATH_DIR : VKVIT__PATH_OTHER;
}

vkvit_result vkvit__dir_each(const char *dir, const char *suffix, vkvit_result (*fn)(void *user, const char *path),
                             void *user) {
    DIR *d = opendir(dir);
    if (!d) return VKVIT_OK;
    const size_t suffix_len = strlen(suffix);
    vkvit_result r = VKVIT_OK;
    for (struct dirent *e; r == VKVIT_OK && (e = readdir(d)) != NULL;) {
        const size_t len = strlen(e->d_name);
        char path[PATH_MAX];
        if (len > suffix_len && !strcmp(e->d_name + len - suffix_len, suffix) &&
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
            r = fn(user, path);
    }
    closedir(d);
    return r;
}

vkvit_result vkvit__write_file_atomic(const char *path, const void *data, size_t size) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "path too long: '%s'", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return vkvit__error(VKVIT_ERROR_IO, "cannot create '%s': %s", tmp, strerror(errno));
    size_t put = fwrite(data, 1, size, f);
    int bad = (put != size) | (fclose(f) != 0);
    if (bad || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return vkvit__error(VKVIT_ERROR_IO, "cannot write '%s': %s", path, strerror(e));
    }
    return VKVIT_OK;
}

vkvit_result vkvit__mkdir_p(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "bad directory path '%s'", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return vkvit__error(VKVIT_ERROR_IO, "cannot create directory '%s': %s", buf, strerror(errno));
            buf[i] = c;
        }
    }
    return VKVIT_OK;
}

uint64_t vkvit__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double vkvit__ms_since(uint64_t t0) {
    return (double)(vkvit__now_ns() - t0) * 1e-6;
}

struct vkvit__mutex {
    pthread_mutex_t m;
};

vkvit__mutex *vkvit__mutex_create(void) {
    vkvit__mutex *m = malloc(sizeof *m);
    if (m && pthread_mutex_init(&m->m, NULL) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

void vkvit__mutex_destroy(vkvit__mutex *m) {
    if (!m) return;
    pthread_mutex_destroy(&m->m);
    free(m);
}

void vkvit__mutex_lock(vkvit__mutex *m) { pthread_mutex_lock(&m->m); }
void vkvit__mutex_unlock(vkvit__mutex *m) { pthread_mutex_unlock(&m->m); }

/* vkvit__parallel_for: the threads take indices from one atomic counter, so a slow item (a large pipeline) does
 * not hold back the items behind it. */
typedef struct parallel_job {
    atomic_uint next;
    uint32_t n;
    void (*fn)(void *user, uint32_t i);
    void *user;
} parallel_job;

static void *parallel_worker(void *arg) {
    parallel_job *job = arg;
    for (uint32_t i; (i = atomic_fetch_add(&job->next, 1u)) < job->n;) job->fn(job->user, i);
    return NULL;
}

void vkvit__parallel_for(uint32_t n, uint32_t threads, void (*fn)(void *user, uint32_t i), void *user) {
    enum { MAX_THREADS = 16 };
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online > 0 && (uint32_t)online < threads) threads = (uint32_t)online;
    threads = VKVIT_MIN(VKVIT_MIN(threads, n), (uint32_t)MAX_THREADS);
    parallel_job job = {.n = n, .fn = fn, .user = user};
    atomic_init(&job.next, 0u);
    pthread_t helpers[MAX_THREADS];
    uint32_t started = 0;
    /* 8 MiB stacks, as glibc's default: musl's 128 KiB is too little for a driver's compiler (LLVM) */
    pthread_attr_t attr;
    const bool sized = pthread_attr_init(&attr) == 0;
    if (sized) pthread_attr_setstacksize(&attr, (size_t)8 << 20);
    while (started + 1 < threads && pthread_create(&helpers[started], sized ? &attr : NULL, parallel_worker, &job) == 0)
        started++;
    if (sized) pthread_attr_destroy(&attr);
    parallel_worker(&job);
    for (uint32_t t = 0; t < started; t++) pthread_join(helpers[t], NULL);
}
