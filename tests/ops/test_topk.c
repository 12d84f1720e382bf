// SPDX-License-Identifier: Apache-2.0
/* Softmax + top-K on the GPU (shaders/topk.comp via vkvit__op_topk; vkvit_session_get_top_k) against a plain-C
 * double-precision reference: the same K classes in the same order (most probable first, equal logits to the lower
 * class index) and probabilities within 2e-6 absolute. Outputs start poisoned with NaN. Cases: random logits over
 * 1000 classes, heavy ties, K = 1, K = num_classes, all-equal rows, batch above one workgroup, and a whole session
 * (golden model, batch 2) whose top-K must agree with its own logits. */
#include "golden_util.h"
#include "graph_util.h"
#include "ops/topk.h"

#define PROB_TOL 2e-6

/* The reference: softmax in double, then a stable selection sort on (logit desc, index asc). */
static void ref_topk(const float *logits, uint32_t B, uint32_t N, uint32_t K, uint32_t *classes, double *probs) {
    for (uint32_t b = 0; b < B; b++) {
        const float *x = logits + (size_t)b * N;
        double m = -INFINITY, l = 0.0;
        for (uint32_t j = 0; j < N; j++) m = fmax(m, x[j]);
        for (uint32_t j = 0; j < N; j++) l += exp((double)x[j] - m);
        for (uint32_t k = 0; k < K; k++) {
            int best = -1;
            for (uint32_t j = 0; j < N; j++) {
                bool taken = false;
                for (uint32_t t = 0; t < k && !taken; t++) taken = classes[b * K + t] == j;
                if (!taken && (best < 0 || x[j] > x[best])) best = (int)j; /* strict: ties keep the lower index */
            }
            classes[b * K + k] = (uint32_t)best;
            probs[b * K + k] = exp((double)x[best] - m) / l;
        }
    }
}

/* Compares a GPU result (classes then probabilities, 2*B*K words) with the reference; returns the max error. */
static double compare(const char *name, const uint32_t *got_c, const float *got_p, const float *logits, uint32_t B,
                      uint32_t N, uint32_t K) {
    uint32_t *want_c = malloc((size_t)B * K * sizeof *want_c);
    double *want_p = malloc((size_t)B * K * sizeof *want_p);
    ref_topk(logits, B, N, K, want_c, want_p);
    double err = 0.0;
    uint32_t bad = 0;
    for (uint32_t i = 0; i < B * K; i++) {
        if (got_c[i] != want_c[i] && bad++ < 3)
            fprintf(stderr, "  %s: row %u rank %u: class %u, want %u (logits %.9g vs %.9g)\n", name, i / K, i % K,
                    got_c[i], want_c[i], got_c[i] < N ? logits[(i / K) * N + got_c[i]] : NAN,
                    logits[(i / K) * N + want_c[i]]);
        double d = fabs((double)got_p[i] - want_p[i]);
        err = isnan(d) ? INFINITY : fmax(err, d);
    }
    printf("%-28s B=%-3u N=%-5u K=%-3u classes %s, probabilities max abs err %.3g\n", name, B, N, K,
           bad ? "DIFFER" : "equal", err);
    CHECK(bad == 0, "%s: %u class indices differ", name, bad);
    CHECK(err <= PROB_TOL, "%s: probability error %.3g > %g", name, err, PROB_TOL);
    free(want_c), free(want_p);
    return err;
}

/* One top-K node on `logits` [B, N]. */
static void op_case(vkvit_ctx *ctx, const char *name, const float *logits, uint32_t B, uint32_t N, uint32_t K) {
    vt_graph r;
    vt_graph_begin(&r, ctx);
    uint32_t shape[2] = {B, N};
    uint32_t x = vt_graph_input(&r, "logits", logits, 2, shape);
    uint32_t y = vkvit__op_topk(&r.g, "top_k", x, B, N, K);
    MUST(vt_graph_run(&r));
    float *words = vt_graph_download(&r, y);
    uint32_t *classes = malloc((size_t)B * K * sizeof *classes);
    memcpy(classes, words, (size_t)B * K * sizeof *classes);
    compare(name, classes, words + (size_t)B * K, logits, B, N, K);
    free(classes), free(words);
    vt_graph_end(&r);
}

static float *rand_logits(uint32_t n, float scale) {
    float *x = malloc(n * sizeof *x);
    for (uint32_t i = 0; i < n; i++) x[i] = scale * vt_rand_f();
    return x;
}

static void op_cases(vkvit_ctx *ctx) {
    float *x = rand_logits(3 * 1000, 8.0f);
    op_case(ctx, "random_1000_classes", x, 3, 1000, 5);
    op_case(ctx, "random_1000_k32", x, 3, 1000, 32);
    free(x);

    /* Heavy ties: integer logits 0..3, so every rank is a tie broken by the class index. */
    x = malloc(2 * 50 * sizeof *x);
    for (int i = 0; i < 100; i++) x[i] = (float)(vt_rand_u32() % 4);
    op_case(ctx, "ties", x, 2, 50, 10);
    free(x);

    /* All equal: the first K classes, each with probability 1/N. */
    x = calloc(40, sizeof *x);
    op_case(ctx, "all_equal", x, 1, 40, 32);
    free(x);

    x = rand_logits(7, 3.0f);
    op_case(ctx, "k1", x, 1, 7, 1);
    free(x);

    /* K = num_classes: the whole row sorted, probabilities summing to 1. */
    x = rand_logits(2 * 32, 30.0f);
    op_case(ctx, "k_equals_classes", x, 2, 32, 32);
    free(x);

    /* More rows than one workgroup (64), a class count that is not a power of two. */
    x = rand_logits(67 * 13, 5.0f);
    op_case(ctx, "batch67", x, 67, 13, 13);
    free(x);

    /* Large logits: the max subtraction keeps exp finite. */
    x = rand_logits(1000, 1.0f);
    for (int i = 0; i < 1000; i++) x[i] = 1000.0f + 50.0f * x[i];
    op_case(ctx, "large_logits", x, 1, 1000, 5);
    free(x);
}

static void op_rejects_bad_k(vkvit_ctx *ctx) {
    const uint32_t bad[3][2] = {{0, 10}, {11, 10}, {VKVIT_MAX_TOP_K + 1, 1000}};
    for (int i = 0; i < 3; i++) {
        vt_graph r;
        vt_graph_begin(&r, ctx);
        uint32_t shape[2] = {1, bad[i][1]};
        uint32_t x = vt_graph_input(&r, "logits", NULL, 2, shape);
        uint32_t y = vkvit__op_topk(&r.g, "top_k", x, 1, bad[i][1], bad[i][0]);
        vkvit_result res = vkvit__graph_error(&r.g);
        CHECK(y == VKVIT_NONE && res == VKVIT_ERROR_INVALID_ARGUMENT, "K = %u of %u classes accepted (%s)", bad[i][0],
              bad[i][1], vkvit_result_name(res));
        CHECK(strstr(vkvit_last_error(), "top_k") != NULL, "message: %s", vkvit_last_error());
        vt_graph_end(&r);
    }
}

#define MODEL VKVIT_SOURCE_DIR "/tests/golden/models/vit5_nvsubq_cls_r4"

/* A session with top_k: its get_top_k agrees with the reference top-K of its own logits. */
static void session_top_k(vkvit_ctx *ctx) {
    vkvit_model *model = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODEL ".vkvit"}, &model));
    vkvit_model_info info;
    MUST(vkvit_model_get_info(model, &info));
    const uint32_t B = 2, K = info.num_classes < 5 ? info.num_classes : 5;
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = B, .top_k = K}, &s));
    vkvit_shape in = vkvit_session_input_shape(s);
    size_t n_in = (size_t)in.dims[0] * in.dims[1] * in.dims[2] * in.dims[3];
    float *x = rand_logits((uint32_t)n_in, 1.0f);
    MUST(vkvit_session_set_input(s, x, n_in));
    MUST(vkvit_session_run(s));
    float *logits = malloc((size_t)B * info.num_classes * sizeof *logits);
    MUST(vkvit_session_get_output(s, logits, (size_t)B * info.num_classes));
    uint32_t classes[2 * 32];
    float probs[2 * 32];
    for (uint32_t i = 0; i < B * K; i++) classes[i] = UINT32_MAX, probs[i] = NAN;
    MUST(vkvit_session_get_top_k(s, classes, probs, (size_t)B * K));
    compare("session_vit5_nvsubq_cls_r4", classes, probs, logits, B, info.num_classes, K);

    vkvit_result r = vkvit_session_get_top_k(s, classes, probs, (size_t)B * K + 1);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT, "a wrong count got %s", vkvit_result_name(r));
    vkvit_session *bad = NULL;
    r = vkvit_session_create(model, &(vkvit_session_desc){.top_k = info.num_classes + 1}, &bad);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && bad == NULL, "top_k above num_classes got %s", vkvit_result_name(r));
    vkvit_session *plain = NULL;
    MUST(vkvit_session_create(model, NULL, &plain));
    r = vkvit_session_get_top_k(plain, classes, probs, 1);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT, "get_top_k without top_k got %s", vkvit_result_name(r));
    vkvit_session_destroy(plain);
    free(x), free(logits);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
}

int main(void) {
    vkvit_ctx *ctx = vt_ctx();
    op_cases(ctx);
    op_rejects_bad_k(ctx);
    session_top_k(ctx);
    return vt_finish(ctx);
}
