// SPDX-License-Identifier: Apache-2.0
/* Host memory per live session, and the pipelines the sessions of a ctx share (vkvit__kernels_acquire):
 *   - 1,000 live sessions of a 145 KB model (tests/golden/models/vil_seed.vkvit) on one ctx: every session after the
 *     first creates no pipeline, descriptor-set layout or shader module (the ctx counters), the ctx's table holds
 *     one variant per kernel with 1,000 references each; the process's resident memory grows by less than 1 MB per
 *     session between the 10th and the 1,000th (2 MB with the validation layer; measured 0.2 and 0.7 MB on
 *     lavapipe: each session made its own pipelines before, 27 MB a session, and 700 sessions took 18.5 GB) and
 *     stays below 3 GiB; the first and the last session give bit-identical logits; after all are destroyed the
 *     table is empty;
 *   - sessions of two models (ViL and a ResNet) share nothing they need not: destroying one model's sessions leaves
 *     the other's variants, with the right counts;
 *   - the first set_images of four sessions on four threads at once (each adds the pre-processing and prepares its
 *     recording again: the one session call that acquires kernels, and warms them up) enters each new variant
 *     once (the two pre-processing passes and record_ex's sampled-image kernel), and the warm-ups do not race on
 *     the ctx's one-shot command pool and fence.
 * Needs a Vulkan device (exit 77 = skipped without one); validation on and silent. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#define MODELS VKVIT_SOURCE_DIR "/tests/golden/models"
static uint32_t N_SESSIONS = 1000; /* the first argument, if any (at least 20) */
/* Bytes of resident memory per live session: measured 0.2 MB on lavapipe, 0.7 MB with the validation layer (its
 * object tracking); the budgets leave 3-5x headroom and are 13-27x below the 27 MB of per-session pipelines. */
#define SESSION_BUDGET (1u << 20)
#define SESSION_BUDGET_VALIDATION (2u << 20)

/* Resident set size in bytes (Linux /proc/self/statm), 0 where there is none. */
static uint64_t rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long pages = 0, resident = 0;
    if (!f) return 0;
    const int got = fscanf(f, "%llu %llu", &pages, &resident);
    fclose(f);
    return got == 2 ? (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void table(vkvit_ctx *ctx, uint32_t *variants, uint32_t *refs) {
    vkvit__kernel_table_stats(ctx, variants, refs);
}

static float *logits(vkvit_session *s, size_t *count) {
    vkvit_shape in = vkvit_session_input_shape(s), out = vkvit_session_output_shape(s);
    size_t n_in = 1, n_out = 1;
    for (uint32_t i = 0; i < in.ndim; i++) n_in *= in.dims[i];
    for (uint32_t i = 0; i < out.ndim; i++) n_out *= out.dims[i];
    float *x = malloc(n_in * sizeof *x), *y = malloc(n_out * sizeof *y);
    vt_rng_state = 77;
    vt_fill_rand(x, n_in);
    MUST(vkvit_session_set_input(s, x, n_in));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, y, n_out));
    free(x);
    *count = n_out;
    return y;
}

static void thousand_sessions_share_their_pipelines(vkvit_ctx *ctx) {
    vkvit_model *model = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODELS "/vil_seed.vkvit"}, &model));
    vkvit_session **s = calloc(N_SESSIONS, sizeof *s);
    uint64_t rss_at_10 = 0;
    /* The ctx's first session also runs the first-use self-check (src/self_check.c), whose objects no later session
     * creates: one session made and destroyed before counting (its kernels go with it, so the loop's first session
     * creates them again). */
    vkvit_session *warm = NULL;
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = 1}, &warm));
    vkvit_session_destroy(warm);
    const vkvit__counts before = vkvit__ctx_counters(ctx);
    vkvit__counts after_first = {0};
    uint32_t kernels = 0;
    const double t0 = now_s();
    for (uint32_t i = 0; i < N_SESSIONS; i++) {
        MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = 1}, &s[i]));
        if (i == 0) {
            after_first = vkvit__ctx_counters(ctx);
            vkvit_session_stats st;
            MUST(vkvit_session_get_stats(s[0], &st));
            kernels = st.pipelines;
        }
        if (i + 1 == 10) rss_at_10 = rss_bytes();
    }
    const double create_s = now_s() - t0;
    const uint64_t rss_at_all = rss_bytes();
    const vkvit__counts after_all = vkvit__ctx_counters(ctx);
    CHECK(after_all.pipelines == after_first.pipelines,
          "sessions 2..%u created %u pipelines (one session uses %u; they are the ctx's to share)", N_SESSIONS,
          after_all.pipelines - after_first.pipelines, kernels);
    /* each later session: what the first created (its descriptor pool, texel views) less the 3 objects of each of
     * its kernels (descriptor-set layout, pipeline layout, shader module) */
    const uint32_t first_objects = after_first.other_objects - before.other_objects;
    CHECK(first_objects > 3 * kernels &&
              after_all.other_objects - after_first.other_objects == (N_SESSIONS - 1) * (first_objects - 3 * kernels),
          "the first session created %u layouts, modules, pools and views; sessions 2..%u %u (want %u each)",
          first_objects, N_SESSIONS, after_all.other_objects - after_first.other_objects, first_objects - 3 * kernels);
    uint32_t variants, refs;
    table(ctx, &variants, &refs);
    CHECK(kernels > 0 && variants == kernels && refs == kernels * N_SESSIONS,
          "the ctx's table holds %u variants and %u references; want %u and %u", variants, refs, kernels,
          kernels * N_SESSIONS);
    if (rss_at_10 && rss_at_all) {
        vkvit_device_info info;
        vkvit_ctx_device_info(ctx, &info);
        const uint32_t budget = info.validation ? SESSION_BUDGET_VALIDATION : SESSION_BUDGET;
        const double per = ((double)rss_at_all - (double)rss_at_10) / (N_SESSIONS - 10);
        printf("     %u live sessions of vil_seed (%u pipelines shared): resident %.0f MB, %.0f KB more per session "
               "after the 10th (budget %u KB, validation %s); created in %.1f s\n", N_SESSIONS, kernels,
               (double)rss_at_all / 1e6, per / 1024, budget / 1024, info.validation ? "on" : "off", create_s);
        CHECK(per < budget, "%.0f KB of resident memory per live session, more than the budget of %u KB", per / 1024,
              budget / 1024);
        CHECK(rss_at_all < ((uint64_t)3 << 30), "%u live sessions take %.2f GB resident, more than 3 GiB", N_SESSIONS,
              (double)rss_at_all / 1e9);
    } else {
        printf("note: no /proc/self/statm; resident memory not measured\n");
    }
    size_t n_first, n_last;
    float *first = logits(s[0], &n_first), *last = logits(s[N_SESSIONS - 1], &n_last);
    CHECK(n_first == n_last && memcmp(first, last, n_first * sizeof *first) == 0,
          "the first and the last session disagree on the same input");
    free(first), free(last);
    for (uint32_t i = 0; i < N_SESSIONS; i++) vkvit_session_destroy(s[i]);
    table(ctx, &variants, &refs);
    CHECK(variants == 0 && refs == 0, "after the last session: %u variants, %u references left", variants, refs);
    free(s);
    vkvit_model_destroy(model);
}

static void two_models_share_only_what_they_have_in_common(vkvit_ctx *ctx) {
    vkvit_model *vil = NULL, *resnet = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODELS "/vil_seed.vkvit"}, &vil));
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODELS "/resnet_mlp_only_gelu_nopos.vkvit"}, &resnet));
    vkvit_session *v[3] = {0}, *r[2] = {0};
    for (int i = 0; i < 3; i++) MUST(vkvit_session_create(vil, &(vkvit_session_desc){.batch = 2}, &v[i]));
    uint32_t vil_variants, refs;
    table(ctx, &vil_variants, &refs);
    CHECK(refs == 3 * vil_variants, "3 ViL sessions hold %u references on %u variants", refs, vil_variants);
    for (int i = 0; i < 2; i++) MUST(vkvit_session_create(resnet, &(vkvit_session_desc){.batch = 2}, &r[i]));
    vkvit_session_stats sv, sr;
    MUST(vkvit_session_get_stats(v[0], &sv));
    MUST(vkvit_session_get_stats(r[0], &sr));
    uint32_t both, refs_both;
    table(ctx, &both, &refs_both);
    const uint32_t common = sv.pipelines + sr.pipelines - both; /* variants both networks use */
    CHECK(both >= sv.pipelines && both <= sv.pipelines + sr.pipelines &&
              refs_both == 3 * sv.pipelines + 2 * sr.pipelines,
          "ViL (%u) and ResNet (%u) sessions: %u variants, %u references", sv.pipelines, sr.pipelines, both, refs_both);
    for (int i = 0; i < 3; i++) vkvit_session_destroy(v[i]);
    uint32_t left, refs_left;
    table(ctx, &left, &refs_left);
    CHECK(left == sr.pipelines && refs_left == 2 * sr.pipelines,
          "after the ViL sessions: %u variants, %u references; want the ResNet's %u and %u", left, refs_left,
          sr.pipelines, 2 * sr.pipelines);
    size_t n0, n1;
    float *a = logits(r[0], &n0), *b = logits(r[1], &n1); /* the survivors still run, and agree */
    CHECK(n0 == n1 && memcmp(a, b, n0 * sizeof *a) == 0, "two sessions of one model disagree");
    free(a), free(b);
    for (int i = 0; i < 2; i++) vkvit_session_destroy(r[i]);
    table(ctx, &left, &refs_left);
    CHECK(left == 0 && refs_left == 0, "after every session: %u variants, %u references", left, refs_left);
    printf("     ViL (%u pipelines) and ResNet (%u) sessions on one ctx: %u variants, %u in common\n", sv.pipelines,
           sr.pipelines, both, common);
    vkvit_model_destroy(vil);
    vkvit_model_destroy(resnet);
}

/* ---------------------------------------------------------------------------------------------------------------
 * The first set_images of several sessions at once: each acquires the pre-processing kernels on its own thread
 * --------------------------------------------------------------------------------------------------------------- */

#define THREADS 4
#define SIDE 12

typedef struct images_job {
    vkvit_session *s;
    pthread_barrier_t *start;
    vkvit_result result;
    char sentence[1024];
} images_job;

static void *first_set_images(void *arg) {
    images_job *job = arg;
    static uint8_t pixels[SIDE * SIDE * 4];
    for (size_t i = 0; i < sizeof pixels; i++) pixels[i] = (uint8_t)(i * 37 + 11);
    vkvit_image im = {.pixels = pixels, .width = SIDE, .height = SIDE, .format = VKVIT_PIXEL_RGBA8};
    pthread_barrier_wait(job->start);
    job->result = vkvit_session_set_images(job->s, 0, &im, 1);
    snprintf(job->sentence, sizeof job->sentence, "%s", vkvit_last_error());
    if (job->result == VKVIT_OK) job->result = vkvit_session_run(job->s);
    return NULL;
}

static void concurrent_first_set_images_share_the_new_kernels(vkvit_ctx *ctx) {
    vkvit_model *model = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODELS "/vil_seed.vkvit"}, &model));
    images_job jobs[THREADS] = {0};
    pthread_t threads[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = 1}, &jobs[i].s));
        jobs[i].start = &start;
    }
    uint32_t before, refs_before;
    table(ctx, &before, &refs_before);
    for (int i = 0; i < THREADS; i++) pthread_create(&threads[i], NULL, first_set_images, &jobs[i]);
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++)
        CHECK(jobs[i].result == VKVIT_OK, "thread %d: %s: %s", i, vkvit_result_name(jobs[i].result), jobs[i].sentence);
    vkvit_session_stats st;
    MUST(vkvit_session_get_stats(jobs[0].s, &st));
    uint32_t after, refs_after;
    table(ctx, &after, &refs_after);
    /* the graph's pipelines (now with the pre-processing's two) and record_ex's sampled-image kernel */
    CHECK(after == st.pipelines + 1 && refs_after == THREADS * (st.pipelines + 1),
          "after %d concurrent first set_images: %u variants (a session uses %u + 1), %u references (want %u)",
          THREADS, after, st.pipelines, refs_after, THREADS * (st.pipelines + 1));
    size_t n0, n1;
    float *a = NULL, *b = NULL;
    { /* the same picture in every session: the same logits */
        vkvit_shape out = vkvit_session_output_shape(jobs[0].s);
        n0 = n1 = out.dims[0] * out.dims[1];
        a = malloc(n0 * sizeof *a), b = malloc(n1 * sizeof *b);
        MUST(vkvit_session_get_output(jobs[0].s, a, n0));
        MUST(vkvit_session_get_output(jobs[THREADS - 1].s, b, n1));
        CHECK(memcmp(a, b, n0 * sizeof *a) == 0, "sessions with the same picture disagree");
    }
    free(a), free(b);
    printf("     %d concurrent first set_images: %u variants before, %u after, each entered once\n", THREADS, before,
           after);
    for (int i = 0; i < THREADS; i++) vkvit_session_destroy(jobs[i].s);
    table(ctx, &after, &refs_after);
    CHECK(after == 0 && refs_after == 0, "after every session: %u variants, %u references", after, refs_after);
    vkvit_model_destroy(model);
}

int main(int argc, char **argv) {
    if (argc > 1) N_SESSIONS = (uint32_t)VKVIT_MAX(atoi(argv[1]), 20);
    vkvit_ctx *ctx = vt_ctx();
    thousand_sessions_share_their_pipelines(ctx);
    two_models_share_only_what_they_have_in_common(ctx);
    concurrent_first_set_images_share_the_new_kernels(ctx);
    return vt_finish(ctx);
}
