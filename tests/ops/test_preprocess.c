// SPDX-License-Identifier: Apache-2.0
/* GPU image pre-processing (src/ops/preprocess.c, shaders/preprocess_{h,v}.comp) against two references:
 *   - the goldens tests/golden/ops/preprocess_*.safetensors (tools/reference/preprocess.py: torchvision's Resize +
 *     CenterCrop + Normalize through PIL's float "F" mode), and
 *   - a plain-C double-precision transcription of PIL's resampling below (ref_preprocess), on fresh random pictures:
 *     up- and downscaling, bicubic and bilinear, odd sizes, padded rows, BGRA, several pictures per call (forcing
 *     the upload buffer to grow and the work to be split), and pictures so elongated (5000 x 1) that float pixel
 *     positions would be off by ~1e-3: the shaders' integer geometry must stay exact there too.
 * Tolerance: 1e-5 absolute on the normalised values. The destination starts as NaN; slots that were not set must
 * stay NaN. Bad arguments get the documented result codes and a sentence. */
#include "golden_util.h"
#include "ops/preprocess.h"
#include "preprocess_ref.h"
#include "test_util.h"

#define TOL 1e-5

static const float MEAN[3] = {0.485f, 0.456f, 0.406f}, STD[3] = {0.229f, 0.224f, 0.225f};

/* ------------------------------------------------------------------------------------------------------------
 * Running the pre-processing nodes into a NaN-poisoned input [batch, H, W, 3]: a graph of those nodes alone,
 * planned, prepared and recorded like a session's (whose graph starts with them), submitted after each set.
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct runner {
    vkvit_ctx *ctx;
    vkvit__imgproc_config cfg;
    uint32_t batch;
    vkvit__graph g;
    uint32_t input;
    vkvit__buffer dst;                      /* the arena: the input alone */
    vkvit__imgproc ip;
    vkvit__recording rec;
} runner;

static vkvit__record_target runner_target(runner *R) {
    vkvit__record_target tg = {.weights = &R->dst, .arena = &R->dst};
    vkvit__imgproc_target(&R->ip, &tg);
    return tg;
}

static void runner_begin(runner *R, vkvit_ctx *ctx, uint32_t r, uint32_t H, uint32_t W, bool bicubic, uint32_t batch,
                         uint64_t max_pixels) {
    memset(R, 0, sizeof *R);
    R->ctx = ctx;
    R->batch = batch;
    R->cfg = (vkvit__imgproc_config){.crop_h = H, .crop_w = W, .resize_shorter = r, .bicubic = bicubic};
    memcpy(R->cfg.mean, MEAN, sizeof MEAN);
    memcpy(R->cfg.std, STD, sizeof STD);
    vkvit__graph_init(&R->g, ctx);
    R->input = vkvit__graph_tensor(&R->g, VKVIT_TENSOR_INPUT, "input", 4, (uint32_t[4]){batch, H, W, 3});
    vkvit__plan_stats stats;
    MUST(vkvit__plan(&R->g, &stats));
    const uint64_t bytes = (uint64_t)batch * H * W * 3 * sizeof(float);
    CHECK(stats.arena_bytes >= bytes && R->g.tensors[R->input].offset == 0, "plan of the input alone");
    MUST(vkvit__buffer_create(ctx, stats.arena_bytes, VKVIT_MEM_DEVICE, "test input", &R->dst));
    MUST(vkvit__buffer_fill(ctx, &R->dst, 0, bytes, VT_NAN_BITS));
    MUST(vkvit__imgproc_create(ctx, &R->cfg, batch, max_pixels, &R->ip));
    vkvit__imgproc_add_nodes(&R->ip, &R->g, R->input, &R->dst);
    MUST(vkvit__graph_error(&R->g));
    CHECK(R->g.n_nodes == 2 * batch, "%u nodes for a batch of %u", R->g.n_nodes, batch);
    vkvit__record_target tg = runner_target(R);
    MUST(vkvit__record_prepare(ctx, &R->g, &tg, false, &R->rec));
}

/* One submission of the nodes (the counts of slots without a picture are 0). */
static void runner_run(runner *R, bool rebind) {
    vkvit__record_target tg = runner_target(R);
    if (rebind) vkvit__record_rebind(R->ctx, &R->g, &tg, &R->rec);
    VkCommandBuffer cmd;
    MUST(vkvit__cmd_begin(R->ctx, &cmd));
    vkvit__cmd_barrier_prior_work(R->ctx, cmd);
    vkvit__record_nodes(R->ctx, &R->g, &tg, &R->rec, cmd);
    MUST(vkvit__cmd_submit_wait(R->ctx, cmd));
}

/* set_images, then a run. */
static vkvit_result runner_set(runner *R, uint32_t first_slot, const vkvit_image *ims, uint32_t count) {
    bool rebind = false;
    vkvit_result r = vkvit__imgproc_set_images(&R->ip, first_slot, ims, count, "test", &rebind);
    if (r == VKVIT_OK) runner_run(R, rebind);
    return r;
}

static float *runner_download(runner *R) {
    const size_t n = (size_t)R->batch * R->cfg.crop_h * R->cfg.crop_w * 3;
    float *out = malloc(n * sizeof *out);
    MUST(vkvit__buffer_download(R->ctx, &R->dst, 0, out, n * sizeof *out));
    return out;
}

static void runner_end(runner *R) {
    vkvit__record_free(R->ctx, &R->rec);
    vkvit__imgproc_destroy(&R->ip);
    vkvit__buffer_destroy(R->ctx, &R->dst);
    vkvit__graph_free(&R->g);
}

/* max |got - want| over n values (NaN: infinite). */
static double max_abs(const float *got, const double *want, size_t n, size_t *worst) {
    double err = 0.0;
    *worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (isnan(d)) d = INFINITY;
        if (d > err) err = d, *worst = i;
    }
    return err;
}

static bool all_nan(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isnan(x[i])) return false;
    return true;
}

static uint8_t *random_pixels(uint32_t width, uint32_t height, uint32_t row_bytes) {
    uint8_t *p = malloc((size_t)row_bytes * height);
    for (size_t i = 0; i < (size_t)row_bytes * height; i++) p[i] = (uint8_t)vt_rand_u32();
    return p;
}

/* ------------------------------------------------------------------------------------------------------------
 * Cases
 * ------------------------------------------------------------------------------------------------------------ */

static void golden_cases(vkvit_ctx *ctx) {
    char **paths;
    size_t n = vt_golden_list("tests/golden/ops/preprocess_*.safetensors", &paths);
    CHECK(n >= 8, "only %zu preprocess goldens", n);
    for (size_t f = 0; f < n; f++) {
        vt_golden g;
        vt_golden_open(paths[f], &g);
        const uint32_t width = (uint32_t)vt_json_num(g.params, "width", 0), height = (uint32_t)vt_json_num(g.params, "height", 0);
        const uint32_t r = (uint32_t)vt_json_num(g.params, "resize_shorter", 0);
        uint64_t size[2] = {0, 0};
        vt_json_dims(g.params, "image_size", size, 2);
        const uint32_t H = (uint32_t)size[0], W = (uint32_t)size[1];
        const bool bicubic = !strcmp(vt_json_str(g.params, "interpolation", ""), "bicubic");
        const bool bgra = !strcmp(vt_json_str(g.params, "format", ""), "bgra");
        size_t n_px, n_out;
        float *px = vt_golden_f32_req(&g, "in.pixels", &n_px);
        float *want = vt_golden_f32_req(&g, "out.input", &n_out);
        CHECK(n_px == (size_t)width * height * 4 && n_out == (size_t)H * W * 3, "%s: shapes", vt_golden_name(&g));
        uint8_t *bytes = malloc(n_px);
        for (size_t i = 0; i < n_px; i++) bytes[i] = (uint8_t)px[i];

        /* Slot 1 of 2: slot 0 must stay poisoned. */
        runner R;
        runner_begin(&R, ctx, r, H, W, bicubic, 2, (uint64_t)width * height);
        vkvit_image im = {.pixels = bytes, .width = width, .height = height,
                          .format = bgra ? VKVIT_PIXEL_BGRA8 : VKVIT_PIXEL_RGBA8};
        MUST(runner_set(&R, 1, &im, 1));
        float *got = runner_download(&R);
        double *want_d = malloc(n_out * sizeof *want_d), *ref = malloc(n_out * sizeof *ref);
        for (size_t i = 0; i < n_out; i++) want_d[i] = want[i];
        ref_preprocess(bytes, width, height, width * 4, bgra, r, H, W, bicubic, MEAN, STD, ref);
        size_t wi, ri;
        const double err = max_abs(got + n_out, want_d, n_out, &wi), err_c = max_abs(got + n_out, ref, n_out, &ri);
        size_t ci;
        const double c_vs_pil = max_abs(want, ref, n_out, &ci);
        printf("%-48s %3ux%-3u -> %ux%u %-8s max |gpu - pil| %.2e  |gpu - c| %.2e  (|c - pil| %.2e)\n",
               vt_golden_name(&g), width, height, H, W, bicubic ? "bicubic" : "bilinear", err, err_c, c_vs_pil);
        CHECK(err <= TOL, "%s: |gpu - pil| %.3g at %zu (got %.7g, want %.7g)", vt_golden_name(&g), err, wi,
              got[n_out + wi], want_d[wi]);
        CHECK(err_c <= TOL, "%s: |gpu - c| %.3g at %zu", vt_golden_name(&g), err_c, ri);
        CHECK(all_nan(got, n_out), "%s: slot 0 was written", vt_golden_name(&g));
        free(got), free(want_d), free(ref), free(bytes), free(px), free(want);
        runner_end(&R);
        vt_golden_close(&g);
    }
    vt_golden_list_free(paths, n);
}

typedef struct pic {
    uint32_t width, height, pad;            /* pad: extra bytes per row */
    bool bgra;
} pic;

/* `count` random pictures into slots 0..count-1 with one call, each checked against the C reference. */
static void random_case(vkvit_ctx *ctx, const char *name, uint32_t r, uint32_t H, uint32_t W, bool bicubic,
                        const pic *pics, uint32_t count, uint64_t max_pixels) {
    runner R;
    runner_begin(&R, ctx, r, H, W, bicubic, count + 1, max_pixels);
    vkvit_image ims[8];
    uint8_t *data[8];
    for (uint32_t i = 0; i < count; i++) {
        const uint32_t row_bytes = pics[i].width * 4 + pics[i].pad;
        data[i] = random_pixels(pics[i].width, pics[i].height, row_bytes);
        ims[i] = (vkvit_image){.pixels = data[i], .width = pics[i].width, .height = pics[i].height,
                               .row_bytes = pics[i].pad ? row_bytes : 0,
                               .format = pics[i].bgra ? VKVIT_PIXEL_BGRA8 : VKVIT_PIXEL_RGBA8};
    }
    MUST(runner_set(&R, 0, ims, count));
    float *got = runner_download(&R);
    const size_t n = (size_t)H * W * 3;
    double *ref = malloc(n * sizeof *ref);
    for (uint32_t i = 0; i < count; i++) {
        ref_preprocess(data[i], pics[i].width, pics[i].height, pics[i].width * 4 + pics[i].pad, pics[i].bgra, r, H, W,
                       bicubic, MEAN, STD, ref);
        size_t wi;
        const double err = max_abs(got + i * n, ref, n, &wi);
        printf("%-28s [%u] %5ux%-5u -> r %-3u crop %ux%u %-8s max |gpu - c| %.2e\n", name, i, pics[i].width,
               pics[i].height, r, H, W, bicubic ? "bicubic" : "bilinear", err);
        CHECK(err <= TOL, "%s[%u]: max abs err %.3g at %zu (got %.7g, want %.7g)", name, i, err, wi, got[i * n + wi],
              ref[wi]);
        free(data[i]);
    }
    CHECK(all_nan(got + count * n, n), "%s: the unused last slot was written", name);
    free(got), free(ref);
    runner_end(&R);
}

static void random_cases(vkvit_ctx *ctx) {
    const pic photo[] = {{300, 200, 0, false}};
    random_case(ctx, "downscale_300x200", 36, 32, 32, true, photo, 1, 300 * 200);
    const pic padded[] = {{123, 77, 12, true}};
    random_case(ctx, "padded_rows_bgra", 40, 40, 40, false, padded, 1, 123 * 77);
    const pic tall[] = {{33, 250, 0, false}};
    random_case(ctx, "tall_33x250", 64, 56, 48, true, tall, 1, 33 * 250);
    /* Several sizes in one call, with an upload buffer of 1000 pixels to start with: it must grow once and the
     * pictures must still land in their own slots. */
    const pic mixed[] = {{64, 48, 0, false}, {7, 3, 4, true}, {48, 64, 0, false}, {1, 1, 0, false}, {90, 30, 0, true}};
    random_case(ctx, "mixed_batch", 32, 32, 32, true, mixed, 5, 1000);
    random_case(ctx, "mixed_batch_bilinear", 32, 24, 32, false, mixed, 5, 0);
    /* Extreme aspect ratios: resized long sides of 160000 pixels; float positions would be ~1e-3 off here. */
    const pic thin[] = {{5000, 1, 0, false}, {1, 5000, 0, true}};
    random_case(ctx, "elongated", 32, 32, 32, true, thin, 2, 5000);
}

/* Crop offsets are Python's round((size - crop) / 2), half to even, as torchvision computes them. */
static void geometry_rounds_half_to_even(void) {
    vkvit__imgproc_config cfg = {.crop_h = 32, .crop_w = 23, .resize_shorter = 32, .bicubic = true};
    vkvit__resize_geometry geo;
    MUST(vkvit__resize_geometry_of(&cfg, 5, 9, &geo)); /* resized 32 x 57 */
    CHECK(geo.x.out == 32 && geo.y.out == 57, "resized %u x %u, want 32 x 57", geo.x.out, geo.y.out);
    CHECK(geo.y.crop0 == 12, "top %u, want round(12.5) = 12", geo.y.crop0);
    CHECK(geo.x.crop0 == 4, "left %u, want round(4.5) = 4", geo.x.crop0);
    cfg.crop_w = 24;
    MUST(vkvit__resize_geometry_of(&cfg, 39, 32, &geo)); /* resized 39 x 32: left round(7.5) = 8 */
    CHECK(geo.x.out == 39 && geo.x.crop0 == 8, "resized width %u, left %u, want 39, 8", geo.x.out, geo.x.crop0);
    MUST(vkvit__resize_geometry_of(&cfg, 1000, 3, &geo)); /* int(32 * 1000 / 3) = 10666 */
    CHECK(geo.x.out == 10666 && geo.y.out == 32, "resized %u x %u, want 10666 x 32", geo.x.out, geo.y.out);
}

static void rejects_bad_pictures(vkvit_ctx *ctx) {
    runner R;
    runner_begin(&R, ctx, 32, 32, 32, true, 2, 0);
    uint8_t px[64] = {0};
    struct {
        vkvit_image im;
        uint32_t slot, count;
        vkvit_result want;
        const char *word;
    } cases[] = {
        {{.pixels = px, .width = 0, .height = 4, .format = VKVIT_PIXEL_RGBA8}, 0, 1, VKVIT_ERROR_BAD_IMAGE, "0 x 4"},
        {{.pixels = px, .width = VKVIT_MAX_IMAGE_SIDE + 1, .height = 1, .format = VKVIT_PIXEL_RGBA8}, 0, 1,
         VKVIT_ERROR_BAD_IMAGE, "16385"},
        {{.pixels = px, .width = 2, .height = 2, .format = (vkvit_pixel_format)7}, 0, 1, VKVIT_ERROR_BAD_IMAGE, "format"},
        {{.pixels = NULL, .width = 2, .height = 2, .format = VKVIT_PIXEL_RGBA8}, 0, 1, VKVIT_ERROR_INVALID_ARGUMENT,
         "NULL"},
        {{.pixels = px, .width = 2, .height = 2, .format = VKVIT_PIXEL_RGBA8}, 2, 1, VKVIT_ERROR_INVALID_ARGUMENT,
         "outside the batch"},
        {{.pixels = px, .width = 2, .height = 2, .format = VKVIT_PIXEL_RGBA8}, 0, 0, VKVIT_ERROR_INVALID_ARGUMENT,
         "count"},
        {{.pixels = px, .width = 4, .height = 2, .row_bytes = 12, .format = VKVIT_PIXEL_RGBA8}, 0, 1,
         VKVIT_ERROR_INVALID_ARGUMENT, "row_bytes"},
    };
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases); i++) {
        vkvit_result r = runner_set(&R, cases[i].slot, &cases[i].im, cases[i].count);
        CHECK(r == cases[i].want, "case %zu: got %s, want %s", i, vkvit_result_name(r), vkvit_result_name(cases[i].want));
        CHECK(strstr(vkvit_last_error(), cases[i].word) != NULL, "case %zu: message '%s' lacks '%s'", i,
              vkvit_last_error(), cases[i].word);
    }
    runner_run(&R, false); /* what the refused calls left in the parameter blocks runs here */
    float *got = runner_download(&R);
    CHECK(all_nan(got, (size_t)2 * 32 * 32 * 3), "a refused picture wrote the destination");
    free(got);
    runner_end(&R);
}

int main(void) {
    vkvit_ctx *ctx = vt_ctx();
    geometry_rounds_half_to_even();
    golden_cases(ctx);
    random_cases(ctx);
    rejects_bad_pictures(ctx);
    return vt_finish(ctx);
}
