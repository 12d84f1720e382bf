// SPDX-License-Identifier: Apache-2.0
/* startup_time — what an application waits for before its first inference: ctx, model and session creation
 * (every pipeline is created in vkvit_session_create, none later), and the first run.
 *
 *   startup_time --model FILE --cache-dir DIR [--precision fp32|fp16|fp16-math] [--batch N] [--log]
 *
 * Run it twice with the same --cache-dir: the first run starts cold (no pipeline cache file; vkvit_ctx_destroy
 * writes one), the second warm (vkvit_ctx_create loads it into the VkPipelineCache every pipeline is created
 * through). lab/startup_bench.sh does that for a list of models and prints the table in docs/embedding.md.
 * Prints one line of key=value pairs (milliseconds of wall time). --log prints vkvit's INFO log to stderr: where
 * ctx, model and session creation spend their time (instance, device, pipeline cache, weight upload, pipelines). */
#include "vkvit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

#define CHECK_OK(call)                                                                                        \
    do {                                                                                                      \
        vkvit_result r_ = (call);                                                                             \
        if (r_ != VKVIT_OK) {                                                                                 \
            fprintf(stderr, "startup_time: %s: %s\n", vkvit_result_name(r_), vkvit_last_error());             \
            return r_ == VKVIT_ERROR_NO_LOADER || r_ == VKVIT_ERROR_NO_DEVICE ? 77 : 1;                        \
        }                                                                                                     \
    } while (0)

static void log_to_stderr(void *user, int level, const char *message) {
    (void)user;
    const char *what = level == VKVIT_LOG_ERROR ? "error" : level == VKVIT_LOG_WARNING ? "warning" : "info";
    fprintf(stderr, "startup_time: [%s] %s\n", what, message);
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *cache_dir = NULL;
    vkvit_precision precision = VKVIT_PRECISION_FP32;
    uint32_t batch = 1;
    int log = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) model_path = argv[++i];
        else if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc) cache_dir = argv[++i];
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--log")) log = 1;
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc) {
            const char *p = argv[++i];
            precision = !strcmp(p, "fp16")        ? VKVIT_PRECISION_FP16
                        : !strcmp(p, "fp16-math") ? VKVIT_PRECISION_FP16_MATH
                                                  : VKVIT_PRECISION_FP32;
        } else {
            model_path = NULL;
            break;
        }
    }
    if (!model_path || !cache_dir || batch < 1) {
        fprintf(stderr, "usage: startup_time --model FILE --cache-dir DIR [--precision fp32|fp16|fp16-math] "
                        "[--batch N] [--log]\n");
        return 2;
    }

    double t0 = now_ms();
    vkvit_ctx *ctx = NULL;
    CHECK_OK(vkvit_ctx_create(&(vkvit_ctx_desc){.label = "startup_time", .pipeline_cache_dir = cache_dir,
                                               .log = log ? log_to_stderr : NULL}, &ctx));
    double t1 = now_ms();
    vkvit_model *model = NULL;
    CHECK_OK(vkvit_model_create(ctx, &(vkvit_model_desc){.path = model_path}, &model));
    double t2 = now_ms();
    vkvit_session *s = NULL;
    CHECK_OK(vkvit_session_create(model, &(vkvit_session_desc){.batch = batch, .precision = precision}, &s));
    double t3 = now_ms();
    vkvit_shape in = vkvit_session_input_shape(s);
    size_t n = 1;
    for (uint32_t i = 0; i < in.ndim; i++) n *= in.dims[i];
    float *x = calloc(n, sizeof(float));
    CHECK_OK(vkvit_session_set_input(s, x, n));
    vkvit_shape cs = vkvit_session_condition_shape(s); /* resnet models with a condition mixer: a zero condition */
    size_t nc = cs.ndim ? 1 : 0;
    for (uint32_t i = 0; i < cs.ndim; i++) nc *= cs.dims[i];
    float *cond = nc ? calloc(nc, sizeof(float)) : NULL;
    if (nc) CHECK_OK(vkvit_session_set_condition(s, cond, nc));
    free(cond);
    double t4 = now_ms();
    CHECK_OK(vkvit_session_run(s));
    double t5 = now_ms();
    CHECK_OK(vkvit_session_run(s));
    double t6 = now_ms();
    vkvit_session_stats st;
    CHECK_OK(vkvit_session_get_stats(s, &st));
    vkvit_device_info info;
    CHECK_OK(vkvit_ctx_device_info(ctx, &info));
    vkvit_model_info mi;
    CHECK_OK(vkvit_model_get_info(model, &mi));
    printf("model=%s device=\"%s\" pipelines=%u ctx_ms=%.1f model_ms=%.1f session_ms=%.1f first_run_ms=%.1f "
           "second_run_ms=%.1f",
           mi.name, info.name, st.pipelines, t1 - t0, t2 - t1, t3 - t2, t5 - t4, t6 - t5);
    free(x);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    double t7 = now_ms();
    vkvit_ctx_destroy(ctx); /* saves the pipeline cache */
    double t8 = now_ms();
    printf(" ctx_destroy_ms=%.1f\n", t8 - t7);
    return 0;
}
