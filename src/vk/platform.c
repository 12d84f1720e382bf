/* The only operating-system calls of the library (files, directories, the clock), kept here so that a port
 * (Windows, Android's app sandbox) has one file to change. POSIX: Linux, Android, macOS. */
#define _POSIX_C_SOURCE 200809L

#include "common.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

vkvit_result vkvit__read_file(const char *path, size_t max_bytes, uint8_t **data, size_t *size) {
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return vkvit__error(VKVIT_ERROR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return vkvit__error(VKVIT_ERROR_IO, "'%s' is not a regular file", path);
    }
    if ((uint64_t)st.st_size > (uint64_t)max_bytes) {
        fclose(f);
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "'%s' is %lld bytes, more than the limit of %zu bytes",
                            path, (long long)st.st_size, max_bytes);
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate %zu bytes to read '%s'", n, path);
    }
    size_t got = fread(buf, 1, n, f);
    int err = ferror(f);
    fclose(f);
    if (got != n || err) {
        free(buf);
        return vkvit__error(VKVIT_ERROR_IO, "short read on '%s': %zu of %zu bytes", path, got, n);
    }
    *data = buf;
    *size = n;
    return VKVIT_OK;
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
