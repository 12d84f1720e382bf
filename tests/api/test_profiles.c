// SPDX-License-Identifier: Apache-2.0
/* The device profiles (VKVIT_DEVICE_PROFILE, src/policy/profiles.c), each in a ctx of its own:
 *   - the ctx reports the profile's limits and features clamped to the real device's (vkvit_device_info, ctx->caps
 *     and the limits the graph reads, ctx->limits): every limit the lower of the two, every feature both's, never
 *     above what the same device shows without a profile;
 *   - the bundled model (tools/cli/cli.h's CLI_BUNDLED_MODEL) runs under every profile, those of 4 storage buffers
 *     per stage through the packed-bindings kernels (a refusal fails the test, and is reported with the limit or
 *     feature its sentence names). assets/images/cat.png comes out as cat (class 3) by the top-K and by the logits' argmax, and the logits of
 *     the picture and of a fresh random input [1, H, W, 3] (uniform in [-1, 1), seed printed; argv[1] replays one)
 *     match those of the same device without a profile within 1e-3 of the largest logit (other kernels: other
 *     summation orders; fp32 throughout). Every measured run follows a run on a NaN input, so stale results show
 *     as NaN, and the host copies are NaN-filled before each read;
 *   - an unknown name fails ctx creation (VKVIT_ERROR_INVALID_ARGUMENT) with a sentence naming it and every known
 *     profile.
 * Each ctx has the validation layer on (VKVIT_VALIDATION=0 is vt_ctx's one opt-out) and must log no message. */
#include "test_util.h"

#include "policy/profiles.h"

#include <time.h>

/* stb_image for the PNG alone. It declares functions static that it never defines under STB_IMAGE_STATIC, which GCC
 * reports at the end of the file, so -Wunused-function stays off for the whole file. */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wtype-limits"
#pragma GCC diagnostic ignored "-Wshadow"
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#define STBI_FAILURE_USERMSG
#include <stb_image.h>
#pragma GCC diagnostic pop

/* tools/cli/cli.h's CLI_BUNDLED_MODEL, in the source tree's assets/models/ */
#define BUNDLED_MODEL VKVIT_SOURCE_DIR "/assets/models/vit5_cifar10.vkvit"
#define CAT_IMAGE VKVIT_SOURCE_DIR "/assets/images/cat.png"
#define CAT_CLASS 3u
#define LOGIT_TOL 1e-3

/* Every row of the table; the test fails when the table has one more or one less. */
static const char *const k_names[] = {"gpu",          "vulkan-1.1-minimum", "android-baseline-2022", "mali-valhall",
                                      "adreno-7xx",   "intel-xe",           "amd-rdna3",             "apple-m1"};

/* What one ctx ran: the session's result and sentence, and the logits it produced. */
typedef struct run_result {
    vkvit_result create;
    char sentence[512];
    uint32_t top_class;
    float *rand_logits, *cat_logits; /* [classes] each */
} run_result;

typedef struct inputs {
    float *rand_in;
    size_t in_count;
    uint8_t *cat_pixels;
    int cat_w, cat_h;
} inputs;

static size_t shape_count(vkvit_shape s) {
    size_t n = 1;
    for (uint32_t d = 0; d < s.ndim; d++) n *= s.dims[d];
    return n;
}

static void fill_nan(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = NAN;
}

static uint32_t argmax(const float *x, size_t n) {
    uint32_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = (uint32_t)i;
    return best;
}

static bool all_nan(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isnan(x[i])) return false;
    return true;
}

/* max |got - want| / max |want|, infinite on a NaN */
static double logits_err(const float *got, const float *want, size_t n) {
    double scale = 0.0, diff = 0.0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs((double)want[i]));
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (isnan(d)) return INFINITY;
        diff = fmax(diff, d);
    }
    return scale > 0.0 ? diff / scale : diff;
}

/* A run on a NaN input (its logits must all be NaN), so that whatever the next run leaves stale shows. */
static void poison_run(vkvit_session *s, const char *what, float *nan_in, size_t in_count, float *out,
                       size_t classes) {
    fill_nan(nan_in, in_count);
    MUST(vkvit_session_set_input(s, nan_in, in_count));
    MUST(vkvit_session_run(s));
    fill_nan(out, classes);
    MUST(vkvit_session_get_output(s, out, classes));
    CHECK(all_nan(out, classes), "%s: a NaN input gave a finite logit", what);
}

/* The bundled model in `ctx`, its results into `r` (the logits allocated there, [classes] each). */
static void run_model(vkvit_ctx *ctx, const char *what, const inputs *in, size_t classes, run_result *r) {
    memset(r, 0, sizeof *r);
    r->rand_logits = malloc(classes * sizeof(float));
    r->cat_logits = malloc(classes * sizeof(float));
    if (!r->rand_logits || !r->cat_logits) {
        fprintf(stderr, "FATAL: out of host memory\n");
        exit(1);
    }
    fill_nan(r->rand_logits, classes);
    fill_nan(r->cat_logits, classes);
    vkvit_model *m = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = BUNDLED_MODEL, .label = "bundled"}, &m));
    vkvit_session *s = NULL;
    r->create = vkvit_session_create(m, &(vkvit_session_desc){.label = what, .batch = 1, .top_k = 1}, &s);
    if (r->create != VKVIT_OK) {
        snprintf(r->sentence, sizeof r->sentence, "%s", vkvit_last_error());
        vkvit_model_destroy(m);
        return;
    }
    size_t in_count = shape_count(vkvit_session_input_shape(s));
    CHECK(in_count == in->in_count, "%s: input of %zu floats, expected %zu", what, in_count, in->in_count);
    CHECK(shape_count(vkvit_session_output_shape(s)) == classes, "%s: output is not [1, %zu]", what, classes);
    float *nan_in = malloc(in->in_count * sizeof(float)), *scratch = malloc(classes * sizeof(float));
    if (!nan_in || !scratch) {
        fprintf(stderr, "FATAL: out of host memory\n");
        exit(1);
    }

    poison_run(s, what, nan_in, in->in_count, scratch, classes);
    MUST(vkvit_session_set_input(s, in->rand_in, in->in_count));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, r->rand_logits, classes));

    poison_run(s, what, nan_in, in->in_count, scratch, classes);
    vkvit_image img = {.pixels = in->cat_pixels, .width = (uint32_t)in->cat_w, .height = (uint32_t)in->cat_h,
                       .format = VKVIT_PIXEL_RGBA8};
    MUST(vkvit_session_set_images(s, 0, &img, 1));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, r->cat_logits, classes));
    uint32_t cls = 0xffffffffu;
    float prob = NAN;
    MUST(vkvit_session_get_top_k(s, &cls, &prob, 1));
    r->top_class = cls;
    CHECK(isfinite(prob) && prob > 0.0f && prob <= 1.0f, "%s: top-1 probability %g", what, (double)prob);

    free(nan_in);
    free(scratch);
    vkvit_session_destroy(s);
    vkvit_model_destroy(m);
}

static void end_ctx(vkvit_ctx *ctx, const char *what) {
    uint32_t n = vkvit_ctx_validation_messages(ctx, 0);
    CHECK(n == 0, "%s: %u validation message(s); first: %s", what, n, n ? ctx->validation_log[0] : "");
    vkvit_ctx_destroy(ctx);
}

#define MIN_OF(a, b) ((a) < (b) ? (a) : (b))

/* The ctx's facts under profile p against the device's own (real). */
static void check_clamp(const char *name, const vkvit__device_profile *p, const vkvit__caps *real, vkvit_ctx *ctx) {
    const vkvit__caps *c = &ctx->caps;
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
#define LIMIT(field)                                                                                                 \
    do {                                                                                                             \
        CHECK(c->field == MIN_OF(real->field, p->field), "%s: " #field " %llu, expected min(device %llu, profile "   \
              "%llu)", name, (unsigned long long)c->field, (unsigned long long)real->field,                          \
              (unsigned long long)p->field);                                                                         \
        CHECK(c->field <= real->field, "%s: " #field " above the device's", name);                                   \
    } while (0)
    LIMIT(max_shared_memory);
    LIMIT(max_workgroup_invocations);
    LIMIT(max_workgroup_size[0]);
    LIMIT(max_workgroup_size[1]);
    LIMIT(max_workgroup_size[2]);
    LIMIT(max_storage_buffers_per_stage);
    LIMIT(max_storage_buffer_range);
#undef LIMIT
#define FEATURE(cap, prof)                                                                                           \
    CHECK(c->cap == (real->cap && p->prof), "%s: " #cap " %d, device %d, profile %d", name, c->cap, real->cap, p->prof)
    FEATURE(fp16_storage, fp16_storage);
    FEATURE(fp16_math, fp16_math);
    FEATURE(subgroup_arithmetic, subgroup_arithmetic);
    FEATURE(subgroup_shuffle, subgroup_shuffle);
    FEATURE(subgroup_size_control, subgroup_size_control);
    FEATURE(cooperative_matrix_khr, cooperative_matrix);
    FEATURE(cooperative_matrix_nv, cooperative_matrix);
#undef FEATURE
    if (!c->subgroup_size_control)
        CHECK(c->subgroup_size_min == 0 && c->subgroup_size_max == 0, "%s: a subgroup size range without size control",
              name);
    /* the public info says the same */
    CHECK(info.max_shared_memory == c->max_shared_memory, "%s: info.max_shared_memory %u", name,
          info.max_shared_memory);
    CHECK(info.max_workgroup_invocations == c->max_workgroup_invocations, "%s: info.max_workgroup_invocations %u", name,
          info.max_workgroup_invocations);
    CHECK(info.max_storage_buffer_range == c->max_storage_buffer_range, "%s: info.max_storage_buffer_range %llu", name,
          (unsigned long long)info.max_storage_buffer_range);
    CHECK(!!info.fp16_storage == c->fp16_storage, "%s: info.fp16_storage %d", name, info.fp16_storage);
    CHECK(!!info.fp16_arithmetic == c->fp16_math, "%s: info.fp16_arithmetic %d", name, info.fp16_arithmetic);
    CHECK(!!info.subgroup_arithmetic == c->subgroup_arithmetic, "%s: info.subgroup_arithmetic %d", name,
          info.subgroup_arithmetic);
    CHECK(!!info.subgroup_size_control == c->subgroup_size_control, "%s: info.subgroup_size_control %d", name,
          info.subgroup_size_control);
    CHECK(!!info.cooperative_matrix == c->cooperative_matrix_khr, "%s: info.cooperative_matrix %d", name,
          info.cooperative_matrix);
    CHECK(!!info.cooperative_matrix_nv == c->cooperative_matrix_nv, "%s: info.cooperative_matrix_nv %d", name,
          info.cooperative_matrix_nv);
    /* ... and so do the limits the graph and the kernels read */
    const VkPhysicalDeviceLimits *l = &ctx->limits;
    CHECK(l->maxComputeSharedMemorySize == c->max_shared_memory, "%s: limits.maxComputeSharedMemorySize %u", name,
          l->maxComputeSharedMemorySize);
    CHECK(l->maxComputeWorkGroupInvocations == c->max_workgroup_invocations,
          "%s: limits.maxComputeWorkGroupInvocations %u", name, l->maxComputeWorkGroupInvocations);
    for (int d = 0; d < 3; d++)
        CHECK(l->maxComputeWorkGroupSize[d] == c->max_workgroup_size[d], "%s: limits.maxComputeWorkGroupSize[%d] %u",
              name, d, l->maxComputeWorkGroupSize[d]);
    CHECK(l->maxPerStageDescriptorStorageBuffers == c->max_storage_buffers_per_stage,
          "%s: limits.maxPerStageDescriptorStorageBuffers %u", name, l->maxPerStageDescriptorStorageBuffers);
    CHECK(l->maxStorageBufferRange == MIN_OF(c->max_storage_buffer_range, 0xffffffffull),
          "%s: limits.maxStorageBufferRange %u", name, l->maxStorageBufferRange);
}

/* The limit or feature a refusal names, and whether the profile took it away from the device. */
static const char *refusal_reason(const char *sentence, const vkvit__device_profile *p, const vkvit__caps *real,
                                  bool *taken_away) {
    struct {
        const char *name;
        bool lowered;
    } k[] = {
        {"maxPerStageDescriptorStorageBuffers", p->max_storage_buffers_per_stage < real->max_storage_buffers_per_stage},
        {"maxComputeSharedMemorySize", p->max_shared_memory < real->max_shared_memory},
        {"maxComputeWorkGroupInvocations", p->max_workgroup_invocations < real->max_workgroup_invocations},
        {"maxComputeWorkGroupSize", p->max_workgroup_size[0] < real->max_workgroup_size[0] ||
                                        p->max_workgroup_size[1] < real->max_workgroup_size[1] ||
                                        p->max_workgroup_size[2] < real->max_workgroup_size[2]},
        {"maxStorageBufferRange", p->max_storage_buffer_range < real->max_storage_buffer_range},
        {"storageBuffer16BitAccess", !p->fp16_storage && real->fp16_storage},
        {"shaderFloat16", !p->fp16_math && real->fp16_math},
    };
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(k); i++)
        if (strstr(sentence, k[i].name)) {
            *taken_away = k[i].lowered;
            return k[i].name;
        }
    *taken_away = false;
    return NULL;
}

/* The failed ctx's log: validation messages (the layer reports objects left alive when the instance goes) counted. */
static unsigned g_failed_ctx_validation;
static void failed_ctx_log(void *user, int level, const char *msg) {
    vt_log(user, level, msg);
    if (strstr(msg, "Validation")) g_failed_ctx_validation++;
}

static void check_unknown_name(void) {
    const char *bad = "no-such-gpu-2026";
    setenv("VKVIT_DEVICE_PROFILE", bad, 1);
    const char *v = getenv("VKVIT_VALIDATION");
    vkvit_ctx *ctx = NULL;
    vkvit_result r = vkvit_ctx_create(&(vkvit_ctx_desc){.label = "unknown profile",
                                                        .validation = v && strcmp(v, "0") == 0 ? -1 : 1,
                                                        .log = failed_ctx_log, .pipeline_cache_dir = ""},
                                      &ctx);
    const char *msg = vkvit_last_error();
    printf("unknown profile: %s: %s\n", vkvit_result_name(r), msg);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && !ctx, "VKVIT_DEVICE_PROFILE=%s created a ctx (%s)", bad,
          vkvit_result_name(r));
    CHECK(strstr(msg, bad) != NULL, "the sentence does not name '%s': %s", bad, msg);
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(k_names); i++)
        CHECK(strstr(msg, k_names[i]) != NULL, "the sentence does not name the profile %s: %s", k_names[i], msg);
    CHECK(g_failed_ctx_validation == 0, "the failed ctx creation logged %u validation message(s)",
          g_failed_ctx_validation);
    if (ctx) vkvit_ctx_destroy(ctx);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);
    printf("seed %llu (test_profiles %llu replays it)\n", (unsigned long long)seed, (unsigned long long)seed);
    vt_rng_state = seed * 0x9e3779b97f4a7c15ull + 1;

    /* the table is the list above, no more, no less */
    char names[512], want[512] = "";
    vkvit__profile_names(names, sizeof names);
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(k_names); i++) {
        CHECK(vkvit__profile_find(k_names[i]) != NULL, "no profile %s", k_names[i]);
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? ", " : "", k_names[i]);
    }
    CHECK(strcmp(names, want) == 0, "the table's profiles are '%s', the test knows '%s'", names, want);

    inputs in = {0};
    int comp = 0;
    in.cat_pixels = stbi_load(CAT_IMAGE, &in.cat_w, &in.cat_h, &comp, 4);
    if (!in.cat_pixels) {
        fprintf(stderr, "FATAL: %s: %s\n", CAT_IMAGE, stbi_failure_reason());
        return 1;
    }

    /* the device as it is */
    unsetenv("VKVIT_DEVICE_PROFILE");
    vkvit_ctx *ctx = vt_ctx();
    vkvit__caps real = ctx->caps;
    size_t classes = 0;
    {
        vkvit_model *m = NULL;
        vkvit_session *s = NULL;
        MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = BUNDLED_MODEL}, &m));
        MUST(vkvit_session_create(m, &(vkvit_session_desc){.label = "shapes"}, &s));
        in.in_count = shape_count(vkvit_session_input_shape(s));
        classes = shape_count(vkvit_session_output_shape(s));
        vkvit_session_destroy(s);
        vkvit_model_destroy(m);
    }
    in.rand_in = malloc(in.in_count * sizeof(float));
    if (!in.rand_in) return 1;
    vt_fill_rand(in.rand_in, in.in_count);
    run_result ref;
    run_model(ctx, "no profile", &in, classes, &ref);
    CHECK(ref.create == VKVIT_OK, "the device itself refuses the bundled model: %s", ref.sentence);
    end_ctx(ctx, "no profile");
    if (ref.create != VKVIT_OK) return vt_finish(NULL);
    CHECK(ref.top_class == CAT_CLASS && argmax(ref.cat_logits, classes) == CAT_CLASS,
          "no profile: cat.png is class %u (argmax %u)", ref.top_class, argmax(ref.cat_logits, classes));
    printf("%-22s %-9s %s\n", "profile", "model", "why / top-1, logits err (random input, cat.png)");

    for (size_t i = 0; i < VKVIT_ARRAY_LEN(k_names); i++) {
        const char *name = k_names[i];
        const vkvit__device_profile *p = vkvit__profile_find(name);
        if (!p) continue;
        setenv("VKVIT_DEVICE_PROFILE", name, 1);
        ctx = vt_ctx();
        check_clamp(name, p, &real, ctx);
        run_result r;
        run_model(ctx, name, &in, classes, &r);
        if (r.create == VKVIT_OK) {
            double e_rand = logits_err(r.rand_logits, ref.rand_logits, classes);
            double e_cat = logits_err(r.cat_logits, ref.cat_logits, classes);
            printf("%-22s %-9s class %u, %.2e, %.2e\n", name, "runs", r.top_class, e_rand, e_cat);
            CHECK(r.top_class == CAT_CLASS, "%s: cat.png is class %u", name, r.top_class);
            CHECK(argmax(r.cat_logits, classes) == CAT_CLASS, "%s: cat.png's logits peak at %u", name,
                  argmax(r.cat_logits, classes));
            CHECK(e_rand <= LOGIT_TOL, "%s: random-input logits off by %.3g (tolerance %g)", name, e_rand, LOGIT_TOL);
            CHECK(e_cat <= LOGIT_TOL, "%s: cat.png logits off by %.3g (tolerance %g)", name, e_cat, LOGIT_TOL);
        } else {
            bool taken = false;
            const char *why = refusal_reason(r.sentence, p, &real, &taken);
            printf("%-22s %-9s %s: %s\n", name, "refused", why ? why : "(no limit named)", r.sentence);
            CHECK(r.create == VKVIT_ERROR_UNSUPPORTED, "%s: session refused with %s, not VKVIT_ERROR_UNSUPPORTED", name,
                  vkvit_result_name(r.create));
            CHECK(why != NULL, "%s: the refusal names no limit: %s", name, r.sentence);
            CHECK(taken, "%s: the refusal names %s, which the profile does not lower: %s", name, why ? why : "-",
                  r.sentence);
        }
        /* every profile runs it: the 4-storage-buffer ones (vulkan-1.1-minimum, android-baseline-2022, mali-valhall,
         * adreno-7xx) through the packed-bindings kernels (policy.packed_bindings, shaders/packed.glsl) */
        CHECK(r.create == VKVIT_OK, "%s: the profile's limits refuse the bundled model: %s", name, r.sentence);
        free(r.rand_logits);
        free(r.cat_logits);
        end_ctx(ctx, name);
    }

    check_unknown_name();
    unsetenv("VKVIT_DEVICE_PROFILE");
    free(ref.rand_logits);
    free(ref.cat_logits);
    free(in.rand_in);
    stbi_image_free(in.cat_pixels);
    return vt_finish(NULL);
}
