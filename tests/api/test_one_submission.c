// SPDX-License-Identifier: Apache-2.0
/* One inference of a batch of pictures, pre-processing included, is one queue submission (issue 13): the
 * pre-processing is nodes of the session's graph, dispatched indirectly with counts and geometry that
 * vkvit_session_set_images writes into mapped memory, so set_images submits nothing and vkvit_session_run submits
 * the one recorded command buffer.
 *
 * The ctx's vkQueueSubmit is wrapped to count calls (as test_threads.c wraps it). Two checks, each on 32 random
 * pictures of 12 sizes (down- and upscaling, odd sizes, elongated 700 x 9 and 9 x 700, RGBA and BGRA, padded rows):
 *   pixels   the pre-processing nodes alone (a graph of them, like the front of a session's) into a NaN-poisoned
 *            input: one submission for the 32 pictures, every slot within 1e-5 of the C reference of
 *            tests/preprocess_ref.h (the tolerance of test_preprocess)
 *   windows  pictures together larger than one binding reaches (maxStorageBufferRange): slots bind the upload
 *            buffer from their own region, still one submission, still within 1e-5 (on devices with a small range)
 *   logits   a session of the golden vit5_nvsubq_cls_r4 (32 x 32, bicubic) at batch 32 with top-K, pictures set one
 *            slot per call as the CLI does (the upload buffer grows: the documented exception, still no
 *            submission): exactly one vkQueueSubmit from the first set_images to get_top_k, and logits within 1e-4
 *            relative of the C reference's floats through set_input (test_gpu_input's tolerance); then a second
 *            inference mixing set_input (every slot) and set_images (half the slots, new pictures): again one
 *            submission, the named slots pre-processed and the others keeping set_input's floats.
 *   lazy     a session created with max_image_pixels = 0 (and profile = 1): its first set_images adds the nodes
 *            (the documented exception: the recording is prepared and recorded again); the run is still one
 *            submission, its logits match the reference's, and the profile lists the pre-processing nodes first.
 * Synchronization validation must stay silent. */
#include "ops/preprocess.h"
#include "preprocess_ref.h"
#include "test_util.h"

#include <stdatomic.h>

#define MODEL VKVIT_SOURCE_DIR "/tests/golden/models/vit5_nvsubq_cls_r4"
#define N 32
#define SIDE 32 /* the model's input and resize_shorter */
#define K 5

static PFN_vkQueueSubmit real_queue_submit;
static atomic_int submissions;

static VKAPI_ATTR VkResult VKAPI_CALL counting_queue_submit(VkQueue q, uint32_t n, const VkSubmitInfo *s, VkFence f) {
    atomic_fetch_add(&submissions, 1);
    return real_queue_submit(q, n, s, f);
}

static const float MEAN[3] = {0.485f, 0.456f, 0.406f}, STD[3] = {0.229f, 0.224f, 0.225f};

typedef struct pic {
    uint32_t width, height, pad;
    bool bgra;
    uint8_t *px;
} pic;

static void make_pictures(pic *p, uint32_t seed) {
    static const uint32_t sizes[12][2] = {{64, 48}, {40, 50}, {32, 32}, {7, 3},   {300, 200}, {33, 250},
                                          {1, 1},   {45, 45}, {97, 73}, {700, 9}, {9, 700},   {61, 47}};
    for (uint32_t i = 0; i < N; i++) {
        const uint32_t s = (i + seed) % 12;
        p[i] = (pic){.width = sizes[s][0], .height = sizes[s][1], .pad = (i % 5 == 0) ? 8 : 0, .bgra = i % 3 == 1};
        const size_t n = (size_t)(p[i].width * 4 + p[i].pad) * p[i].height;
        p[i].px = malloc(n);
        for (size_t j = 0; j < n; j++) p[i].px[j] = (uint8_t)vt_rand_u32();
    }
}

static vkvit_image view_of(const pic *p) {
    return (vkvit_image){.pixels = p->px, .width = p->width, .height = p->height,
                         .row_bytes = p->pad ? p->width * 4 + p->pad : 0,
                         .format = p->bgra ? VKVIT_PIXEL_BGRA8 : VKVIT_PIXEL_RGBA8};
}

/* The C reference's input for picture p, as floats. */
static void reference(const pic *p, const float *mean, const float *std, float *out) {
    const size_t per = SIDE * SIDE * 3;
    double *ref = malloc(per * sizeof *ref);
    ref_preprocess(p->px, p->width, p->height, p->width * 4 + p->pad, p->bgra, SIDE, SIDE, SIDE, true, mean, std, ref);
    for (size_t j = 0; j < per; j++) out[j] = (float)ref[j];
    free(ref);
}

static double max_rel(const float *got, const float *want, size_t n) {
    double scale = 0.0, d = 0.0;
    for (size_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(want[i]));
        const double e = fabs((double)got[i] - want[i]);
        d = isnan(e) ? INFINITY : fmax(d, e);
    }
    return scale > 0 ? d / scale : d;
}

/* ------------------------------------------------------------------------------------------------------------
 * The nodes alone: 32 pictures pre-processed in one submission, pixel-exact against the reference
 * ------------------------------------------------------------------------------------------------------------ */

/* `n` pictures through the nodes alone (slots 0 .. n-1) in one submission; each slot within 1e-5 of the reference.
 * Returns the number of submissions set_images + the run took. */
static int nodes_case(vkvit_ctx *ctx, const char *name, const pic *p, uint32_t n, uint64_t max_pixels) {
    vkvit__imgproc_config cfg = {.crop_h = SIDE, .crop_w = SIDE, .resize_shorter = SIDE, .bicubic = true};
    memcpy(cfg.mean, MEAN, sizeof MEAN);
    memcpy(cfg.std, STD, sizeof STD);
    vkvit__graph g;
    vkvit__graph_init(&g, ctx);
    const uint32_t input = vkvit__graph_tensor(&g, VKVIT_TENSOR_INPUT, "input", 4, (uint32_t[4]){n, SIDE, SIDE, 3});
    vkvit__plan_stats stats;
    MUST(vkvit__plan(&g, &stats));
    const size_t per = SIDE * SIDE * 3, total = n * per;
    vkvit__buffer arena;
    MUST(vkvit__buffer_create(ctx, stats.arena_bytes, VKVIT_MEM_DEVICE, "test input", &arena));
    MUST(vkvit__buffer_fill(ctx, &arena, 0, total * sizeof(float), VT_NAN_BITS));
    vkvit__imgproc ip;
    MUST(vkvit__imgproc_create(ctx, &cfg, n, max_pixels, &ip));
    vkvit__imgproc_add_nodes(&ip, &g, input, &arena);
    MUST(vkvit__graph_error(&g));
    vkvit__record_target tg = {.weights = &arena, .arena = &arena};
    vkvit__imgproc_target(&ip, &tg);
    vkvit__recording rec;
    MUST(vkvit__record_prepare(ctx, &g, &tg, false, &rec));

    vkvit_image *ims = malloc(n * sizeof *ims);
    for (uint32_t i = 0; i < n; i++) ims[i] = view_of(&p[i]);
    atomic_store(&submissions, 0);
    bool rebind = false;
    MUST(vkvit__imgproc_set_images(&ip, 0, ims, n, "test", &rebind));
    CHECK(atomic_load(&submissions) == 0, "%s: set_images submitted %d times", name, atomic_load(&submissions));
    if (rebind) vkvit__record_rebind(ctx, &g, &tg, &rec);
    uint32_t windows = 0; /* slots that bind the upload buffer from their own region */
    for (uint32_t i = 0; i < n; i++) windows += g.tensors[ip.t_upload[i]].offset != 0;
    if (windows) printf("%s: %u slot(s) bind the upload buffer from their own region\n", name, windows);
    if (ip.upload_end > ctx->limits.maxStorageBufferRange)
        CHECK(windows > 0, "%s: the pictures end past one binding's reach but no slot has its own window", name);
    VkCommandBuffer cmd;
    MUST(vkvit__cmd_begin(ctx, &cmd));
    vkvit__cmd_barrier_prior_work(ctx, cmd);
    vkvit__record_nodes(ctx, &g, &tg, &rec, cmd);
    MUST(vkvit__cmd_submit_wait(ctx, cmd));
    const int subs = atomic_load(&submissions);

    float *got = malloc(total * sizeof *got), *want = malloc(per * sizeof *want);
    MUST(vkvit__buffer_download(ctx, &arena, 0, got, total * sizeof *got));
    double worst = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        reference(&p[i], MEAN, STD, want);
        double err = 0.0;
        for (size_t j = 0; j < per; j++) {
            const double d = fabs((double)got[i * per + j] - want[j]);
            err = isnan(d) ? INFINITY : fmax(err, d);
        }
        CHECK(err <= 1e-5, "%s: slot %u (%u x %u%s): max |gpu - c| %.3g", name, i, p[i].width, p[i].height,
              p[i].bgra ? " BGRA" : "", err);
        worst = fmax(worst, err);
    }
    printf("%s: %u pictures pre-processed in %d queue submission(s), max |gpu - c| %.2e (tolerance 1e-5)\n", name, n,
           subs, worst);
    free(got), free(want), free(ims);
    vkvit__record_free(ctx, &rec);
    vkvit__imgproc_destroy(&ip);
    vkvit__buffer_destroy(ctx, &arena);
    vkvit__graph_free(&g);
    return subs;
}

static void nodes_alone(vkvit_ctx *ctx) {
    pic p[N];
    make_pictures(p, 0);
    const int subs = nodes_case(ctx, "nodes alone", p, N, 300 * 200);
    CHECK(subs == 1, "%d submissions for %d pictures, want 1", subs, N);
    for (uint32_t i = 0; i < N; i++) free(p[i].px);
}

/* Pictures together larger than one storage-buffer binding reaches (maxStorageBufferRange; 128 MiB on lavapipe):
 * the slots whose picture ends past it bind the upload buffer from their own region. Devices with a range above
 * 256 MiB would need gigabytes of pictures: skipped there. */
static void upload_windows(vkvit_ctx *ctx) {
    const uint64_t range = ctx->limits.maxStorageBufferRange;
    const uint32_t w = 4000, h = 3000;
    const uint64_t bytes = (uint64_t)w * h * 4;
    if (range > ((uint64_t)1 << 28)) {
        printf("upload windows: skipped (maxStorageBufferRange %llu bytes)\n", (unsigned long long)range);
        return;
    }
    const uint32_t n = (uint32_t)(range / bytes) + 1;
    pic *p = calloc(n, sizeof *p);
    for (uint32_t i = 0; i < n; i++) {
        p[i] = (pic){.width = w, .height = h, .bgra = i == n - 1};
        p[i].px = malloc(bytes);
        uint32_t *words = (uint32_t *)p[i].px;
        for (uint64_t j = 0; j < bytes / 4; j++) words[j] = vt_rand_u32();
    }
    CHECK(n * bytes > range, "the pictures fit one binding");
    const int subs = nodes_case(ctx, "upload windows", p, n, (uint64_t)w * h);
    CHECK(subs == 1, "upload windows: %d submissions, want 1", subs);
    for (uint32_t i = 0; i < n; i++) free(p[i].px);
    free(p);
}

/* ------------------------------------------------------------------------------------------------------------
 * A session: one submission per inference of 32 pictures, the same logits as the reference's floats
 * ------------------------------------------------------------------------------------------------------------ */

static void session_logits(vkvit_ctx *ctx) {
    vkvit_model *model = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODEL ".vkvit"}, &model));
    vkvit_model_info info;
    MUST(vkvit_model_get_info(model, &info));
    CHECK(info.image_height == SIDE && info.image_width == SIDE && info.resize_shorter == SIDE && info.bicubic,
          "unexpected test model");
    float mean[3], std[3];
    for (int c = 0; c < 3; c++) mean[c] = info.mean[c], std[c] = info.std[c];
    const uint32_t classes = info.num_classes;
    pic p[N], q[N];
    make_pictures(p, 0);
    make_pictures(q, 5);
    uint64_t max_pixels = 0;
    for (uint32_t i = 0; i < N; i++) max_pixels = VKVIT_MAX(max_pixels, (uint64_t)p[i].width * p[i].height);
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = N, .top_k = K, .max_image_pixels = max_pixels},
                              &s));
    const size_t per = SIDE * SIDE * 3, n_out = (size_t)N * classes;
    float *logits = malloc(n_out * sizeof *logits), *want = malloc(n_out * sizeof *want);
    float *input = malloc(N * per * sizeof *input);
    uint32_t top_c[N * K];
    float top_p[N * K];

    /* 1. 32 pictures, one slot per call (the CLI's way), one run. */
    atomic_store(&submissions, 0);
    for (uint32_t i = 0; i < N; i++) {
        vkvit_image im = view_of(&p[i]);
        MUST(vkvit_session_set_images(s, i, &im, 1));
    }
    const int before_run = atomic_load(&submissions);
    MUST(vkvit_session_run(s));
    for (size_t i = 0; i < n_out; i++) logits[i] = NAN;
    MUST(vkvit_session_get_output(s, logits, n_out));
    MUST(vkvit_session_get_top_k(s, top_c, top_p, N * K));
    int subs = atomic_load(&submissions);
    printf("session: %d pictures set (%d submissions) and classified: %d queue submission(s) in all\n", N, before_run,
           subs);
    CHECK(before_run == 0, "set_images submitted %d times", before_run);
    CHECK(subs == 1, "one inference of %d pictures took %d submissions, want 1", N, subs);
    /* Top-1 agrees with the logits (the GPU's softmax + top-K ran in the same submission). */
    for (uint32_t i = 0; i < N; i++) {
        uint32_t best = 0;
        for (uint32_t c = 1; c < classes; c++)
            if (logits[i * classes + c] > logits[i * classes + best]) best = c;
        CHECK(top_c[i * K] == best || logits[i * classes + top_c[i * K]] == logits[i * classes + best],
              "image %u: top-1 %u, argmax %u", i, top_c[i * K], best);
    }
    /* The same batch through the C reference's floats. */
    for (uint32_t i = 0; i < N; i++) reference(&p[i], mean, std, input + i * per);
    MUST(vkvit_session_set_input(s, input, N * per));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, want, n_out));
    double err = max_rel(logits, want, n_out);
    printf("session: logits vs C-reference input, max rel err %.3g (tolerance 1e-4)\n", err);
    CHECK(err <= 1e-4, "set_images logits differ from the reference input's by %.3g", err);

    /* 2. set_input for every slot, then new pictures in the even slots: one submission; the odd slots keep
     * set_input's floats. */
    MUST(vkvit_session_set_input(s, input, N * per));
    atomic_store(&submissions, 0);
    for (uint32_t i = 0; i < N; i += 2) {
        vkvit_image im = view_of(&q[i]);
        MUST(vkvit_session_set_images(s, i, &im, 1));
    }
    MUST(vkvit_session_run(s));
    for (size_t i = 0; i < n_out; i++) logits[i] = NAN;
    MUST(vkvit_session_get_output(s, logits, n_out));
    subs = atomic_load(&submissions);
    CHECK(subs == 1, "the mixed inference took %d submissions, want 1", subs);
    for (uint32_t i = 0; i < N; i += 2) reference(&q[i], mean, std, input + i * per);
    MUST(vkvit_session_set_input(s, input, N * per));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, want, n_out));
    err = max_rel(logits, want, n_out);
    printf("session: set_input + set_images of half the slots vs reference, max rel err %.3g\n", err);
    CHECK(err <= 1e-4, "mixed inference: logits differ from the reference input's by %.3g", err);

    free(logits), free(want), free(input);
    for (uint32_t i = 0; i < N; i++) free(p[i].px), free(q[i].px);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
}

static void lazy_session(vkvit_ctx *ctx) {
    enum { LB = 4 };
    vkvit_model *model = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODEL ".vkvit"}, &model));
    vkvit_model_info info;
    MUST(vkvit_model_get_info(model, &info));
    float mean[3], std[3];
    for (int c = 0; c < 3; c++) mean[c] = info.mean[c], std[c] = info.std[c];
    const uint32_t classes = info.num_classes;
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = LB, .profile = 1}, &s));
    vkvit_session_stats st0, st1;
    MUST(vkvit_session_get_stats(s, &st0));
    pic p[N];
    make_pictures(p, 3);
    vkvit_image ims[LB];
    for (uint32_t i = 0; i < LB; i++) ims[i] = view_of(&p[i]);
    /* The first set_images of a lazy session is the documented exception: it adds the nodes and records again,
     * and on a CPU device (shaders compiled at their first dispatch) it also submits the warm-up of the new
     * pipelines (vkvit__record_warmup), so that the run itself stays one submission without a JIT stall. */
    vkvit_device_info dev;
    vkvit_ctx_device_info(ctx, &dev);
    const int warmups = dev.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 1 : 0;
    /* A run before the pre-processing exists: its times can be read, and not after the first set_images, which
     * records the session again with a new timer pool (vkvit_session_profile would wait on unwritten queries). */
    {
        const size_t n_in = (size_t)LB * SIDE * SIDE * 3;
        float *zeros = calloc(n_in, sizeof *zeros);
        MUST(vkvit_session_set_input(s, zeros, n_in));
        free(zeros);
    }
    MUST(vkvit_session_run(s));
    vkvit_profile_entry before_images[4];
    uint32_t n_before = 0;
    MUST(vkvit_session_profile(s, before_images, 4, &n_before));
    CHECK(n_before == st0.nodes, "profile before set_images: %u entries for %u nodes", n_before, st0.nodes);
    /* Arguments refused before the pre-processing is added: no nodes, no submission (found by an API sweep: each
     * refusal cost a pipeline build and a warm-up, ~0.7 s). */
    atomic_store(&submissions, 0);
    vkvit_result r = vkvit_session_set_images(s, 0, NULL, 1);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "images is NULL"), "NULL images: %s",
          vkvit_result_name(r));
    r = vkvit_session_set_images(s, LB - 1, ims, 2);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "outside the batch"),
          "slots past the batch: %s", vkvit_result_name(r));
    MUST(vkvit_session_get_stats(s, &st1));
    CHECK(st1.nodes == st0.nodes && atomic_load(&submissions) == 0,
          "refused set_images calls added %u nodes and made %d submissions", st1.nodes - st0.nodes,
          atomic_load(&submissions));
    atomic_store(&submissions, 0);
    MUST(vkvit_session_set_images(s, 0, ims, LB));
    const int subs_set = atomic_load(&submissions);
    vkvit_result rp = vkvit_session_profile(s, before_images, 4, &n_before);
    CHECK(rp == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "recorded again"),
          "profile after the first set_images, before a run: %s: %s", vkvit_result_name(rp), vkvit_last_error());
    CHECK(subs_set == warmups, "lazy session: the first set_images made %d submissions, want %d", subs_set, warmups);
    atomic_store(&submissions, 0);
    MUST(vkvit_session_run(s));
    const int subs = atomic_load(&submissions);
    CHECK(subs == 1, "lazy session: %d submissions, want 1", subs);
    MUST(vkvit_session_get_stats(s, &st1));
    CHECK(st1.nodes == st0.nodes + 2 * LB, "lazy session: %u nodes after set_images, %u before", st1.nodes, st0.nodes);
    vkvit_profile_entry prof[2 * LB];
    uint32_t n_prof = 0;
    MUST(vkvit_session_profile(s, prof, 2 * LB, &n_prof));
    CHECK(n_prof == st1.nodes, "profile has %u entries for %u nodes", n_prof, st1.nodes);
    for (uint32_t i = 0; i < 2 * LB; i++)
        CHECK(!strcmp(prof[i].kind, "preprocess"), "profile entry %u is '%s' (%s)", i, prof[i].label, prof[i].kind);
    const size_t per = SIDE * SIDE * 3, n_out = (size_t)LB * classes;
    float *logits = malloc(n_out * sizeof *logits), *want = malloc(n_out * sizeof *want);
    float *input = malloc(LB * per * sizeof *input);
    MUST(vkvit_session_get_output(s, logits, n_out));
    for (uint32_t i = 0; i < LB; i++) reference(&p[i], mean, std, input + i * per);
    MUST(vkvit_session_set_input(s, input, LB * per));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, want, n_out));
    const double err = max_rel(logits, want, n_out);
    printf("lazy session: nodes %u -> %u, one submission, logits max rel err %.3g\n", st0.nodes, st1.nodes, err);
    CHECK(err <= 1e-4, "lazy session: logits differ from the reference input's by %.3g", err);
    free(logits), free(want), free(input);
    for (uint32_t i = 0; i < N; i++) free(p[i].px);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
}

int main(void) {
    vkvit_ctx *ctx = vt_ctx();
    real_queue_submit = ctx->vk.vkQueueSubmit;
    ctx->vk.vkQueueSubmit = counting_queue_submit;
    nodes_alone(ctx);
    upload_windows(ctx);
    session_logits(ctx);
    lazy_session(ctx);
    ctx->vk.vkQueueSubmit = real_queue_submit;
    return vt_finish(ctx);
}
