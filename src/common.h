// SPDX-License-Identifier: Apache-2.0
/* Internal helpers shared by every part of the library: the error channel, checked arithmetic, small utilities.
 * Nothing here touches Vulkan. */
#ifndef VKVIT_COMMON_H
#define VKVIT_COMMON_H

#include "vkvit.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#  define VKVIT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#  define VKVIT_PRINTF(a, b)
#endif

#define VKVIT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define VKVIT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define VKVIT_MAX(a, b) ((a) > (b) ? (a) : (b))
#define VKVIT_CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

/* Formats one sentence into the thread-local error buffer and returns `code`, so a failing path reads
 *     return vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "model '%s': tensor %s has %u dims", ...); */
vkvit_result vkvit__error(vkvit_result code, const char *fmt, ...) VKVIT_PRINTF(2, 3);
vkvit_result vkvit__verror(vkvit_result code, const char *fmt, va_list ap);

/* Prefixes the current error sentence with "<context>: " (used when an inner failure is reported by an outer
 * function that knows which object it was working on). Returns `code`. */
vkvit_result vkvit__error_prefix(vkvit_result code, const char *fmt, ...) VKVIT_PRINTF(2, 3);

/* Clears the thread-local error sentence. */
void vkvit__error_clear(void);

/* Programmer misuse (a broken internal invariant, not bad input): report file:line and abort through a hook.
 * Bad input never reaches an assert; it gets a vkvit_result. */
void vkvit__assert_fail(const char *expr, const char *file, int line);
#define VKVIT_ASSERT(x) ((x) ? (void)0 : vkvit__assert_fail(#x, __FILE__, __LINE__))

/* Overflow-checked size arithmetic: return false on overflow. */
static inline bool vkvit__mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}
static inline bool vkvit__add_size(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return false;
    *out = a + b;
    return true;
}

/* Reads a whole file into a malloc'ed buffer (caller frees). Fails with VKVIT_ERROR_IO and a sentence naming
 * the path. Refuses files larger than max_bytes (VKVIT_ERROR_INVALID_ARGUMENT). */
vkvit_result vkvit__read_file(const char *path, size_t max_bytes, uint8_t **data, size_t *size);

/* A regular file open for reading, of `size` bytes when it was opened. Model files are read with pread(), never
 * mapped: another process that shrinks a mapped file turns every later read of the lost pages into SIGBUS, which
 * kills the host process (a library must not install a signal handler behind the application's back), whereas a
 * short read is an error with a sentence. Implemented in src/vk/platform.c, the one file with operating-system
 * calls. A zeroed struct is a closed file. */
typedef struct vkvit__file {
    int fd;
    bool is_open;
    uint64_t size;
} vkvit__file;

/* Opens `path` without blocking (O_NONBLOCK | O_CLOEXEC) and refuses anything but a regular file (a FIFO, device,
 * directory or socket gets VKVIT_ERROR_IO and a sentence at once, and so does a file that reports 0 bytes but reads
 * as data, as those under /proc and /sys do). Files above max_bytes: VKVIT_ERROR_INVALID_ARGUMENT. */
vkvit_result vkvit__file_open(const char *path, size_t max_bytes, vkvit__file *f);
/* Reads exactly n bytes at byte `offset` into dst (pread: any thread, concurrently; short reads and EINTR
 * retried). A file that ends before them (it shrank since it was opened: "the file shrank while vkvit read it:
 * ...") or a read error is VKVIT_ERROR_IO; the caller prefixes the sentence with the file's name. */
vkvit_result vkvit__file_read_at(const vkvit__file *f, uint64_t offset, void *dst, size_t n);
/* Closes the file; accepts a zeroed (closed) one and leaves it zeroed. */
void vkvit__file_close(vkvit__file *f);

/* What a path names (stat, following symbolic links), for the driver-manifest check (src/vk/loader_check.c), which
 * treats files and folders differently. */
typedef enum vkvit__path_kind {
    VKVIT__PATH_MISSING = 0, /* absent, or cannot be examined */
    VKVIT__PATH_FILE,        /* a regular file */
    VKVIT__PATH_DIR,
    VKVIT__PATH_OTHER,       /* a FIFO, device, socket */
} vkvit__path_kind;
vkvit__path_kind vkvit__path_kind_of(const char *path);
/* Calls fn(user, "<dir>/<name>") for each entry of folder `dir` whose name ends in `suffix` and is longer than it
 * (readdir order), until fn returns something other than VKVIT_OK, which is returned. A folder that cannot be opened,
 * and a name too long for a path: skipped, VKVIT_OK. */
vkvit_result vkvit__dir_each(const char *dir, const char *suffix, vkvit_result (*fn)(void *user, const char *path),
                             void *user);

/* Host memory of vkvit's own for a CPU device's buffers (src/vk/memory.c imports it with
 * VK_EXT_external_memory_host): `size` bytes (a multiple of VKVIT_HUGE_PAGE_BYTES) of zeroed anonymous memory at a
 * VKVIT_HUGE_PAGE_BYTES-aligned address, advised to the OS as huge pages (Linux: madvise MADV_HUGEPAGE; a refusal
 * is ignored, the advice is only a speed hint). Its first writes then take one page fault per 2 MiB instead of one
 * per 4 KiB. The advice lives and dies with this mapping, never touching memory vkvit does not own. NULL where
 * there is no mmap or the OS refuses. */
#define VKVIT_HUGE_PAGE_BYTES ((size_t)2 << 20)
void *vkvit__huge_alloc(size_t size);
/* Unmaps what vkvit__huge_alloc returned (`size` as passed to it); accepts NULL. */
void vkvit__huge_free(void *p, size_t size);

/* Writes a file atomically (temp file + rename). */
vkvit_result vkvit__write_file_atomic(const char *path, const void *data, size_t size);

/* Creates a directory and its parents (like mkdir -p). */
vkvit_result vkvit__mkdir_p(const char *path);

/* Monotonic wall clock in nanoseconds. */
uint64_t vkvit__now_ns(void);
/* Milliseconds from t0 (a vkvit__now_ns value) to now: the start-up phase timings of the INFO log. */
double vkvit__ms_since(uint64_t t0);

/* A mutex (platform.c): the ctx's queue lock. create returns NULL when out of memory. */
typedef struct vkvit__mutex vkvit__mutex;
vkvit__mutex *vkvit__mutex_create(void);
void vkvit__mutex_destroy(vkvit__mutex *m);
void vkvit__mutex_lock(vkvit__mutex *m);
void vkvit__mutex_unlock(vkvit__mutex *m);

/* Runs fn(user, i) for every i in [0, n), on up to `threads` threads (the caller's included; more threads than n
 * or than the machine's online CPUs are not started). Returns when every call has returned. Where a thread
 * cannot be started its share runs on the others: never fails. fn must not touch what another i touches. */
void vkvit__parallel_for(uint32_t n, uint32_t threads, void (*fn)(void *user, uint32_t i), void *user);

#endif /* VKVIT_COMMON_H */
