// SPDX-License-Identifier: Apache-2.0
/* The THREADING contract of include/vkvit.h, exercised with two threads under the validation layer (its
 * thread-safety checks report unsynchronised use of a VkQueue, command pool or fence) and synchronization
 * validation.
 *
 *   two_ctx_two_threads      two ctx objects, each with its own device and queue, each driven by its own thread from
 *                            model creation to destruction; nothing is shared, nothing is locked.
 *   one_ctx_two_sessions     one adopted host device and queue, two sessions on it, one thread each. Per the
 *                            contract, only the calls that submit to the queue (vkvit_session_submit) are serialised
 *                            by the host's queue lock; set_input, poll and get_output on different sessions run
 *                            concurrently without it. Both sessions are in flight on the one queue at once.
 *   own_ctx_two_sessions     one ctx that vkvit created, two sessions on it, one thread each, calling
 *                            vkvit_session_run with no lock at all: the ctx's queue lock serialises the submissions
 *                            (before it, the layer's threading check reported vkQueueSubmit from two threads). The
 *                            ctx's vkQueueSubmit is wrapped to hold each call open for 1 ms and count the callers
 *                            inside at once, which makes an unsynchronised submission certain, not rare: at most 1.
 * Every frame alternates the batch order of the golden input, is preceded by a NaN poisoning run, and must match the
 * golden logits (max rel err <= 1e-4). The threads record their results; the main thread CHECKs them. */
#include "embed_util.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

enum { FRAMES = 6 };

typedef struct worker {
    const char *name;
    const eu_golden *g;
    vkvit_ctx *ctx;
    vkvit_model *model;                     /* two_ctx: created by the thread; one_ctx: shared */
    vkvit_session *session;                 /* one_ctx: created by the main thread */
    pthread_mutex_t *queue_lock;            /* one_ctx: the host's lock around its queue */
    VkQueue queue;
    double worst_err;                       /* over all frames; INFINITY on a failure */
    char failure[512];
    int frames_done;
    int saw_in_flight;                      /* polls that found the session still running */
    int burst;                              /* extra back-to-back runs after the frames (own_ctx: submit pressure) */
} worker;

static void worker_fail(worker *w, const char *what) {
    if (!w->failure[0]) snprintf(w->failure, sizeof w->failure, "%s: %s: %s", w->name, what, vkvit_last_error());
    w->worst_err = INFINITY;
}

/* One frame: a NaN poisoning run, the frame's input, one inference, the check. */
static bool worker_frame(worker *w, int f, float *got) {
    const eu_golden *g = w->g;
    vkvit_session *s = w->session;
    float *nan_in = malloc(g->n_in * sizeof(float));
    for (size_t i = 0; i < g->n_in; i++) nan_in[i] = NAN;
    bool ok = vkvit_session_set_input(s, nan_in, g->n_in) == VKVIT_OK;
    if (w->queue_lock) pthread_mutex_lock(w->queue_lock); /* run submits to the shared queue */
    ok = ok && vkvit_session_run(s) == VKVIT_OK;
    if (w->queue_lock) pthread_mutex_unlock(w->queue_lock);
    ok = ok && vkvit_session_get_output(s, got, g->n_out) == VKVIT_OK;
    free(nan_in);
    if (!ok) return worker_fail(w, "poisoning run"), false;
    for (size_t i = 0; i < g->n_out; i++)
        if (isfinite(got[i])) return worker_fail(w, "the poisoning run left a finite logit"), false;
    if (vkvit_session_set_input(s, eu_frame_input(g, f), g->n_in) != VKVIT_OK)
        return worker_fail(w, "set_input"), false;
    if (w->queue_lock) {
        pthread_mutex_lock(w->queue_lock);
        vkvit_result r = vkvit_session_submit(s, &(vkvit_submit_desc){.queue = w->queue});
        pthread_mutex_unlock(w->queue_lock);
        if (r != VKVIT_OK) return worker_fail(w, "submit"), false;
        int p;
        while ((p = vkvit_session_poll(s)) == 0) {
            w->saw_in_flight++;
            sched_yield();
        }
        if (p < 0) return worker_fail(w, "poll"), false;
    } else if (vkvit_session_run(s) != VKVIT_OK) {
        return worker_fail(w, "run"), false;
    }
    for (size_t i = 0; i < g->n_out; i++) got[i] = NAN;
    if (vkvit_session_get_output(s, got, g->n_out) != VKVIT_OK) return worker_fail(w, "get_output"), false;
    double err = vt_max_rel_err(got, eu_frame_logits(g, f), g->n_out, NULL);
    if (err > w->worst_err || isnan(err)) w->worst_err = err;
    if (!(err <= EU_TOL)) {
        snprintf(w->failure, sizeof w->failure, "%s: frame %d: logits max rel err %.3g", w->name, f, err);
        return false;
    }
    w->frames_done++;
    return true;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    float *got = malloc(w->g->n_out * sizeof(float));
    bool own = w->session == NULL;
    if (own) {
        vkvit_session_desc sd = {.batch = w->g->batch, .label = w->name};
        if (vkvit_model_create(w->ctx, &(vkvit_model_desc){.path = EU_MODEL ".vkvit"}, &w->model) != VKVIT_OK ||
            vkvit_session_create(w->model, &sd, &w->session) != VKVIT_OK) {
            worker_fail(w, "model / session creation");
            goto done;
        }
    }
    for (int f = 0; f < FRAMES && worker_frame(w, f, got); f++) {}
    for (int i = 0; i < w->burst && !w->failure[0]; i++)
        if (vkvit_session_run(w->session) != VKVIT_OK) worker_fail(w, "burst run");
done:
    if (own) {
        vkvit_session_destroy(w->session);
        vkvit_model_destroy(w->model);
        w->session = NULL;
    }
    free(got);
    return NULL;
}

static void run_workers(worker *ws, int n) {
    pthread_t t[2];
    for (int i = 0; i < n; i++) CHECK(pthread_create(&t[i], NULL, worker_main, &ws[i]) == 0, "pthread_create");
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < n; i++) {
        CHECK(ws[i].failure[0] == 0, "%s", ws[i].failure);
        CHECK(ws[i].frames_done == FRAMES, "%s finished %d of %d frames", ws[i].name, ws[i].frames_done, FRAMES);
        printf("%s: %d frames, worst logits max rel err %.3g, %d polls found it in flight\n", ws[i].name,
               ws[i].frames_done, ws[i].worst_err, ws[i].saw_in_flight);
    }
}

static void two_ctx_two_threads(const eu_golden *g) {
    /* ctx creation touches process-wide loader state (volk): one thread at a time, here the main thread. */
    vkvit_ctx *a = vt_ctx_with((vkvit_ctx_desc){.label = "ctx A"});
    vkvit_ctx *b = vt_ctx_with((vkvit_ctx_desc){.label = "ctx B"});
    worker ws[2] = {{.name = "ctx A thread", .g = g, .ctx = a}, {.name = "ctx B thread", .g = g, .ctx = b}};
    run_workers(ws, 2);
    for (int i = 0; i < 2; i++) {
        vkvit_ctx *c = i ? b : a;
        uint32_t n = vkvit_ctx_validation_messages(c, 0);
        CHECK(n == 0, "%s: %u validation message(s); first: %s", ws[i].name, n, n ? c->validation_log[0] : "");
    }
    vkvit_ctx_destroy(b);
    vkvit_ctx_destroy(a);
}

static void one_ctx_two_sessions(host *h, const eu_golden *g) {
    vkvit_ctx *ctx = host_adopt_with(h, NULL, "shared host device");
    vkvit_model *model = NULL;
    vkvit_session *s[2] = {NULL, NULL};
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = EU_MODEL ".vkvit"}, &model));
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = g->batch, .label = "session 1"}, &s[0]));
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = g->batch, .label = "session 2"}, &s[1]));
    pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
    worker ws[2] = {
        {.name = "session 1 thread", .g = g, .ctx = ctx, .model = model, .session = s[0], .queue_lock = &queue_lock,
         .queue = h->queue},
        {.name = "session 2 thread", .g = g, .ctx = ctx, .model = model, .session = s[1], .queue_lock = &queue_lock,
         .queue = h->queue},
    };
    run_workers(ws, 2);
    vkvit_session_destroy(s[1]);
    vkvit_session_destroy(s[0]);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
}

static PFN_vkQueueSubmit real_queue_submit;
static atomic_int submits_inside, most_inside;

/* The ctx's vkQueueSubmit, held open for 1 ms, counting how many threads are inside at once. */
static VKAPI_ATTR VkResult VKAPI_CALL counting_queue_submit(VkQueue q, uint32_t n, const VkSubmitInfo *s, VkFence f) {
    int inside = atomic_fetch_add(&submits_inside, 1) + 1;
    for (int seen = atomic_load(&most_inside); inside > seen && !atomic_compare_exchange_weak(&most_inside, &seen, inside);) {}
    nanosleep(&(struct timespec){0, 1000000}, NULL);
    VkResult r = real_queue_submit(q, n, s, f);
    atomic_fetch_sub(&submits_inside, 1);
    return r;
}

static void own_ctx_two_sessions(const eu_golden *g) {
    vkvit_ctx *ctx = vt_ctx_with((vkvit_ctx_desc){.label = "own ctx"});
    real_queue_submit = ctx->vk.vkQueueSubmit;
    ctx->vk.vkQueueSubmit = counting_queue_submit;
    vkvit_model *model = NULL;
    vkvit_session *s[2] = {NULL, NULL};
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = EU_MODEL ".vkvit"}, &model));
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = g->batch, .label = "session A"}, &s[0]));
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = g->batch, .label = "session B"}, &s[1]));
    worker ws[2] = {{.name = "session A thread", .g = g, .ctx = ctx, .model = model, .session = s[0], .burst = 200},
                    {.name = "session B thread", .g = g, .ctx = ctx, .model = model, .session = s[1], .burst = 200}};
    run_workers(ws, 2);
    CHECK(atomic_load(&most_inside) == 1, "own ctx: %d threads were inside vkQueueSubmit at once",
          atomic_load(&most_inside));
    ctx->vk.vkQueueSubmit = real_queue_submit;
    uint32_t n = vkvit_ctx_validation_messages(ctx, 0);
    CHECK(n == 0, "own ctx: %u validation message(s); first: %s", n, n ? ctx->validation_log[0] : "");
    vkvit_session_destroy(s[1]);
    vkvit_session_destroy(s[0]);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
}

int main(void) {
    eu_golden g;
    eu_golden_load(&g);
    two_ctx_two_threads(&g);
    own_ctx_two_sessions(&g);
    host h;
    host_create(&h);
    one_ctx_two_sessions(&h, &g);
    CHECK(host_device_works(&h), "the host device no longer works");
    host_destroy(&h);
    eu_golden_free(&g);
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
