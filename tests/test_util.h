// SPDX-License-Identifier: Apache-2.0
/* Test harness shared by the CTest executables (header-only).
 *
 *   vt_ctx()            a ctx with the validation layer on (synchronization validation included); exits 77
 *                       (CTest "skipped") when there is no Vulkan loader or device, fails when the layer is missing.
 *                       VKVIT_VALIDATION=0 in the environment is the one opt-out: tools/gpu_check.sh reruns the
 *                       tensor-core tests on the KHR kernel without a layer older than that extension
 *   vt_finish(ctx)      fails the test if any validation message was seen, prints "N passed, M failed", returns
 *                       the exit code
 *   CHECK(cond, ...)    records a failure with file:line and a formatted explanation, keeps going
 *   vt_rand_*           a fixed-seed PCG32 stream for fresh random inputs
 *   vt_max_rel_err      max |got - want| / max(|want|) over a tensor (NaN counts as infinite error)
 */
#ifndef VKVIT_TEST_UTIL_H
#define VKVIT_TEST_UTIL_H

#include "vk/vk.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int vt_passed, vt_failed;

#define CHECK(cond, ...)                                                                                      \
    do {                                                                                                      \
        if (cond) {                                                                                           \
            vt_passed++;                                                                                      \
        } else {                                                                                              \
            vt_failed++;                                                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                   \
            fprintf(stderr, __VA_ARGS__);                                                                     \
            fputc('\n', stderr);                                                                              \
        }                                                                                                     \
    } while (0)

/* A call that must succeed; on failure print the library's sentence and stop the test. */
#define MUST(call)                                                                                            \
    do {                                                                                                      \
        vkvit_result r_ = (call);                                                                             \
        if (r_ != VKVIT_OK) {                                                                                 \
            fprintf(stderr, "FATAL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, vkvit_result_name(r_),  \
                    vkvit_last_error());                                                                      \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)

static inline void vt_log(void *user, int level, const char *msg) {
    (void)user;
    fprintf(stderr, "[vkvit %s] %s\n", level == VKVIT_LOG_ERROR ? "error" : level == VKVIT_LOG_WARNING ? "warning" : "info",
            msg);
}

static inline vkvit_ctx *vt_ctx_with(vkvit_ctx_desc desc) {
    if (!desc.label) desc.label = "test ctx";
    if (!desc.validation) {
        const char *v = getenv("VKVIT_VALIDATION");
        desc.validation = v && strcmp(v, "0") == 0 ? -1 : 1;
    }
    if (!desc.log) desc.log = vt_log;
    if (!desc.pipeline_cache_dir) desc.pipeline_cache_dir = ""; /* tests never share state through the disk */
    vkvit_ctx *ctx = NULL;
    vkvit_result r = vkvit_ctx_create(&desc, &ctx);
    if (r == VKVIT_ERROR_NO_LOADER || r == VKVIT_ERROR_NO_DEVICE) {
        fprintf(stderr, "SKIP: %s\n", vkvit_last_error());
        exit(77);
    }
    if (r != VKVIT_OK) {
        fprintf(stderr, "FATAL: vkvit_ctx_create: %s: %s\n", vkvit_result_name(r), vkvit_last_error());
        exit(1);
    }
    vkvit_device_info info;
    vkvit_ctx_device_info(ctx, &info);
    fprintf(stderr, "device: %s (%s), validation %s\n", info.name, info.driver_name, info.validation ? "on" : "off");
    return ctx;
}

static inline vkvit_ctx *vt_ctx(void) { return vt_ctx_with((vkvit_ctx_desc){0}); }

static inline int vt_finish(vkvit_ctx *ctx) {
    if (ctx) {
        uint32_t n = vkvit_ctx_validation_messages(ctx, 0);
        CHECK(n == 0, "%u validation message(s); first: %s", n, n ? ctx->validation_log[0] : "");
        vkvit_ctx_destroy(ctx);
    }
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}

/* ------------------------------------------------------------------------------------------------------------
 * Random numbers (PCG32), fixed seed per test so failures reproduce
 * ------------------------------------------------------------------------------------------------------------ */

static uint64_t vt_rng_state = 0x853c49e6748fea9bull;

static inline uint32_t vt_rand_u32(void) {
    uint64_t old = vt_rng_state;
    vt_rng_state = old * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

/* Uniform in [-1, 1). */
static inline float vt_rand_f(void) { return (float)((double)vt_rand_u32() / 2147483648.0 - 1.0); }

static inline void vt_fill_rand(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = vt_rand_f();
}

/* max |got - want| / max |want|; a NaN anywhere makes it infinite. `worst` receives the index of the largest
 * absolute difference. */
static inline double vt_max_rel_err(const float *got, const double *want, size_t n, size_t *worst) {
    double scale = 0.0, maxdiff = 0.0;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (isnan(got[i]) || isnan(d)) {
            if (worst) *worst = i;
            return INFINITY;
        }
        if (d > maxdiff) {
            maxdiff = d;
            w = i;
        }
    }
    if (worst) *worst = w;
    return scale > 0 ? maxdiff / scale : maxdiff;
}

#define VT_NAN_BITS 0x7fc00000u

#endif /* VKVIT_TEST_UTIL_H */
