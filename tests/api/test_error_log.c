// SPDX-License-Identifier: Apache-2.0
/* Failed calls reach the ctx's log callback (include/vkvit.h ERRORS): every refused call on a ctx, model or
 * session sends exactly one VKVIT_LOG_ERROR message, and it is the sentence vkvit_last_error() returns; a call
 * that succeeds sends none, and a NULL object (no ctx to tell) sends none and does not crash.
 *
 * The model is a golden ResidualBlock network with a condition (tests/golden/models), so that a run before
 * vkvit_session_set_condition is refused too; the session has no features, no top-K and no profiling, so that
 * asking for them is refused. Host Vulkan handles are never reached: every call here is refused before. */
#include "test_util.h"

#define MODEL VKVIT_SOURCE_DIR "/tests/golden/models/resnet_cond_mlp_tc5_relu_layernorm.vkvit"

static struct {
    int errors;         /* VKVIT_LOG_ERROR messages since the last expect_* */
    char last[1024];
} g_log;

static void capture_log(void *user, int level, const char *msg) {
    if (level == VKVIT_LOG_ERROR) {
        g_log.errors++;
        snprintf(g_log.last, sizeof g_log.last, "%s", msg);
    } else {
        vt_log(user, level, msg);
    }
}

/* The call just made failed with `want`, and the callback saw its sentence once. */
static void expect_logged(vkvit_result got, vkvit_result want, const char *what) {
    CHECK(got == want, "%s -> %s (want %s): %s", what, vkvit_result_name(got), vkvit_result_name(want),
          vkvit_last_error());
    CHECK(g_log.errors == 1, "%s: %d ERROR messages reached the log callback, want 1", what, g_log.errors);
    CHECK(g_log.errors == 0 || strcmp(g_log.last, vkvit_last_error()) == 0,
          "%s: the callback got \"%s\", vkvit_last_error() says \"%s\"", what, g_log.last, vkvit_last_error());
    g_log.errors = 0;
}

/* The call just made either succeeded or had no ctx to tell: nothing reached the callback. */
static void expect_silent(vkvit_result got, vkvit_result want, const char *what) {
    CHECK(got == want, "%s -> %s (want %s): %s", what, vkvit_result_name(got), vkvit_result_name(want),
          vkvit_last_error());
    CHECK(g_log.errors == 0, "%s: %d ERROR messages (last: %s), want none", what, g_log.errors, g_log.last);
    g_log.errors = 0;
}

static void session_calls(vkvit_model *model) {
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = 1, .label = "log test"}, &s));
    expect_silent(VKVIT_OK, VKVIT_OK, "session create");
    const vkvit_shape in = vkvit_session_input_shape(s), cond = vkvit_session_condition_shape(s),
                      out = vkvit_session_output_shape(s);
    size_t n_in = 1, n_cond = 1, n_out = 1;
    for (uint32_t d = 0; d < in.ndim; d++) n_in *= in.dims[d];
    for (uint32_t d = 0; d < cond.ndim; d++) n_cond *= cond.dims[d];
    for (uint32_t d = 0; d < out.ndim; d++) n_out *= out.dims[d];
    CHECK(cond.ndim > 0, "the model takes no condition; the run-before-condition check needs one");
    float *input = calloc(n_in, sizeof(float)), *condition = calloc(n_cond, sizeof(float));
    float *output = calloc(n_out, sizeof(float));
    uint32_t classes[1], count = 0;
    float probs[1];
    vkvit_profile_entry entry;
    vkvit_session_stats stats;
    VkCommandBuffer fake_cmd = (VkCommandBuffer)(uintptr_t)0x1234; /* refused before any Vulkan call */

    expect_logged(vkvit_session_set_input(s, input, n_in + 1), VKVIT_ERROR_INVALID_ARGUMENT, "set_input count + 1");
    expect_logged(vkvit_session_set_input(s, NULL, n_in), VKVIT_ERROR_INVALID_ARGUMENT, "set_input NULL src");
    expect_silent(vkvit_session_set_input(s, input, n_in), VKVIT_OK, "set_input");
    expect_logged(vkvit_session_run(s), VKVIT_ERROR_INVALID_ARGUMENT, "run before set_condition");
    expect_logged(vkvit_session_submit(s, NULL), VKVIT_ERROR_INVALID_ARGUMENT, "submit before set_condition");
    expect_logged(vkvit_session_get_output(s, output, n_out), VKVIT_ERROR_INVALID_ARGUMENT, "get_output before run");
    expect_logged(vkvit_session_set_condition(s, condition, n_cond - 1), VKVIT_ERROR_INVALID_ARGUMENT,
                  "set_condition count - 1");
    expect_silent(vkvit_session_set_condition(s, condition, n_cond), VKVIT_OK, "set_condition");
    expect_silent(vkvit_session_run(s), VKVIT_OK, "run");
    expect_logged(vkvit_session_get_output(s, output, n_out - 1), VKVIT_ERROR_INVALID_ARGUMENT, "get_output count - 1");
    expect_silent(vkvit_session_get_output(s, output, n_out), VKVIT_OK, "get_output");
    expect_logged(vkvit_session_get_features(s, output, n_out), VKVIT_ERROR_INVALID_ARGUMENT, "get_features unasked");
    expect_logged(vkvit_session_get_top_k(s, classes, probs, 1), VKVIT_ERROR_INVALID_ARGUMENT, "get_top_k unasked");
    count = 12345;
    expect_logged(vkvit_session_profile(s, &entry, 1, &count), VKVIT_ERROR_INVALID_ARGUMENT, "profile unasked");
    CHECK(count == 12345, "a refused vkvit_session_profile wrote *count = %u", count);
    expect_logged(vkvit_session_get_stats(s, NULL), VKVIT_ERROR_INVALID_ARGUMENT, "get_stats NULL out");
    expect_silent(vkvit_session_get_stats(s, &stats), VKVIT_OK, "get_stats");
    expect_logged(vkvit_session_record(s, VK_NULL_HANDLE), VKVIT_ERROR_INVALID_ARGUMENT, "record NULL cmd");
    expect_logged(vkvit_session_record_ex(s, fake_cmd, &(vkvit_record_desc){.output.kind = (vkvit_output_kind)99}),
                  VKVIT_ERROR_INVALID_ARGUMENT, "record_ex unknown output kind");
    VkSemaphore fake_sem = (VkSemaphore)(uintptr_t)0x1234;
    vkvit_semaphore_wait waits[VKVIT_MAX_SUBMIT_SEMAPHORES + 1];
    for (uint32_t i = 0; i < VKVIT_ARRAY_LEN(waits); i++) waits[i] = (vkvit_semaphore_wait){.semaphore = fake_sem};
    expect_logged(vkvit_session_submit(s, &(vkvit_submit_desc){.waits = waits, .wait_count = VKVIT_ARRAY_LEN(waits)}),
                  VKVIT_ERROR_INVALID_ARGUMENT, "submit 17 waits");
    vkvit_image image = {0};
    expect_logged(vkvit_session_set_images(s, 0, &image, 1), VKVIT_ERROR_INVALID_ARGUMENT, "set_images NULL pixels");
    expect_silent((vkvit_result)(vkvit_session_poll(s) == 1 ? VKVIT_OK : VKVIT_ERROR_INVALID_ARGUMENT), VKVIT_OK,
                  "poll");
    expect_silent(vkvit_session_wait(s), VKVIT_OK, "wait");

    /* No session, no ctx: refused, silent. */
    expect_silent(vkvit_session_run(NULL), VKVIT_ERROR_INVALID_ARGUMENT, "run NULL");
    expect_silent(vkvit_session_get_stats(NULL, &stats), VKVIT_ERROR_INVALID_ARGUMENT, "get_stats NULL");
    expect_silent(vkvit_session_submit(NULL, NULL), VKVIT_ERROR_INVALID_ARGUMENT, "submit NULL");
    free(input), free(condition), free(output);
    vkvit_session_destroy(s);
}

int main(void) {
    vkvit_ctx *ctx = vt_ctx_with((vkvit_ctx_desc){.log = capture_log});
    vkvit_model *model = NULL;
    expect_logged(vkvit_model_create(ctx, &(vkvit_model_desc){.path = VKVIT_SOURCE_DIR "/tests/no such file"}, &model),
                  VKVIT_ERROR_IO, "model_create on a missing file");
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODEL}, &model));
    expect_silent(VKVIT_OK, VKVIT_OK, "model create");
    expect_logged(vkvit_model_get_info(model, NULL), VKVIT_ERROR_INVALID_ARGUMENT, "model_get_info NULL out");
    expect_logged(vkvit_ctx_device_info(ctx, NULL), VKVIT_ERROR_INVALID_ARGUMENT, "ctx_device_info NULL out");
    vkvit_gemm_bench_result bench;
    expect_logged(vkvit_bench_gemm(ctx, &(vkvit_gemm_bench_desc){.m = 0, .n = 8, .k = 8}, &bench),
                  VKVIT_ERROR_INVALID_ARGUMENT, "bench_gemm m = 0");
    vkvit_session *s = NULL;
    expect_logged(vkvit_session_create(model, &(vkvit_session_desc){.batch = 5000}, &s), VKVIT_ERROR_INVALID_ARGUMENT,
                  "session_create batch 5000");
    session_calls(model);

    /* Destroying a parent before its children (forbidden by the header) is logged once and frees nothing, so the
     * children keep working instead of reading freed memory (an API sweep found the use-after-free under ASan). */
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.label = "orphan"}, &s));
    vkvit_model_destroy(model);
    CHECK(g_log.errors == 1 && strstr(g_log.last, "session(s) of this model are alive") &&
              !strcmp(g_log.last, vkvit_last_error()),
          "model destroyed before its session: %d ERROR messages, last '%s'", g_log.errors, g_log.last);
    g_log.errors = 0;
    vkvit_ctx_destroy(ctx);
    CHECK(g_log.errors == 1 && strstr(g_log.last, "model(s) created on it are alive") &&
              !strcmp(g_log.last, vkvit_last_error()),
          "ctx destroyed before its model: %d ERROR messages, last '%s'", g_log.errors, g_log.last);
    g_log.errors = 0;
    vkvit_session_stats st;
    expect_silent(vkvit_session_get_stats(s, &st), VKVIT_OK, "a session whose model and ctx were 'destroyed' early");
    vkvit_model_info info;
    expect_silent(vkvit_model_get_info(model, &info), VKVIT_OK, "a model whose ctx was 'destroyed' early");
    vkvit_session_destroy(s); /* the right order now frees everything */
    vkvit_model_destroy(model);
    expect_silent(VKVIT_OK, VKVIT_OK, "destroying in the right order");
    return vt_finish(ctx);
}
