// SPDX-License-Identifier: Apache-2.0
/* The model's weight images (src/model/model.h): made from the file's bytes, never read back from the device, and
 * resident only as the residency rule says.
 *   - vkvit_model_create uploads nothing and reads nothing back; an fp16 session's creation reads nothing back
 *     (ctx counter `downloads`, vkvit__buffer_download) and leaves exactly the fp16 image resident;
 *   - the fp16 image equals, bit for bit, what the readback path made before it (the fp32 image downloaded, each GEMM
 *     operand narrowed with vkvit__f32_to_f16_array); the file's fp16 tensors are in it as the file stores them, its
 *     fp32 ones rounded to nearest even (checked against the compiler's _Float16 conversion where it has one); every
 *     other weight is the same fp32 bytes in both images;
 *   - a model from memory whose 2-D fp32 weight holds fresh random values (seed printed: ties between two fp16
 *     neighbours, fp16 subnormals, signed zeros; VKVIT_TEST_SEED=S reruns a seed) gets the same checks;
 *   - residency: an fp16-only user holds the fp16 image alone, an fp32-only user the fp32 image alone; live sessions
 *     of both kinds hold both; a new fp32 session frees the fp16 image once no fp16 session lives.
 * The host buffers are poisoned (0xff bytes: NaN) before each download. Needs a Vulkan device with fp16 storage
 * (exit 77 without a device; fp16-less devices check the fp32 half); validation on and silent. */
#include "test_util.h"

#include "model/model.h"
#include "model/safetensors.h"
#include "self_check.h"

#include <time.h>

#define GOLDEN VKVIT_SOURCE_DIR "/tests/golden/models"
#define BUNDLED VKVIT_SOURCE_DIR "/assets/models"

static unsigned downloads(vkvit_ctx *ctx) { return atomic_load(&ctx->counters.downloads); }

static uint8_t *download_image(vkvit_ctx *ctx, vkvit_model *m, uint32_t image) {
    vkvit__buffer *b = &m->images[image].buffer;
    uint8_t *bytes = malloc((size_t)VKVIT_MAX(b->size, 1));
    memset(bytes, 0xff, (size_t)b->size);
    MUST(vkvit__buffer_download(ctx, b, 0, bytes, b->size));
    return bytes;
}

static bool gemm_operand_by_rule(const vkvit__weight *w) {
    const size_t len = strlen(w->name);
    return strncmp(w->name, "const.", 6) != 0 &&
           (w->ndim == 2 || (w->ndim == 4 && len >= 7 && !strcmp(w->name + len - 7, ".weight")));
}

/* The images' layouts follow the rule: GEMM operands 2 bytes an element in the fp16 image, everything else 4. */
static void check_layout(const vkvit_model *m, const char *stem) {
    uint64_t lo[2] = {0, 0}, hi[2] = {0, 0};
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < m->n_weights; i++) {
        const vkvit__weight *w = &m->weights[i];
        wrong += w->gemm_operand != gemm_operand_by_rule(w);
        for (int im = 0; im < 2; im++) {
            const uint64_t b = w->numel * (im == 1 && w->gemm_operand ? 2 : 4);
            lo[im] += b;
            hi[im] += (b + VKVIT_ARENA_ALIGN - 1) / VKVIT_ARENA_ALIGN * VKVIT_ARENA_ALIGN;
        }
    }
    CHECK(wrong == 0, "%s: %u weights with the wrong fp16-image dtype", stem, wrong);
    /* what the readback path kept for fp16 sessions: the whole fp32 buffer plus an fp16 copy of every 2-D weight (the
     * 2-D constants included) and convolution kernel, each on a VKVIT_ARENA_ALIGN boundary */
    uint64_t copies = 0;
    for (uint32_t i = 0; i < m->n_weights; i++) {
        const vkvit__weight *w = &m->weights[i];
        const size_t len = strlen(w->name);
        if (w->ndim == 2 || (w->ndim == 4 && len >= 7 && !strcmp(w->name + len - 7, ".weight")))
            copies += (w->numel * 2 + VKVIT_ARENA_ALIGN - 1) / VKVIT_ARENA_ALIGN * VKVIT_ARENA_ALIGN;
    }
    printf("%s: device weight bytes of an fp16 session: %llu (the readback path's fp32 buffer + fp16 copies: %llu + "
           "%llu); of an fp32 session: %llu\n", stem, (unsigned long long)m->images[VKVIT_IMAGE_F16].bytes,
           (unsigned long long)m->images[VKVIT_IMAGE_F32].bytes, (unsigned long long)copies,
           (unsigned long long)m->images[VKVIT_IMAGE_F32].bytes);
    for (int im = 0; im < 2; im++)
        CHECK(m->images[im].bytes >= lo[im] && m->images[im].bytes <= hi[im],
              "%s: image %d of %llu bytes outside [%llu, %llu]", stem, im, (unsigned long long)m->images[im].bytes,
              (unsigned long long)lo[im], (unsigned long long)hi[im]);
}

/* The two images compared with each other and with the file (both resident). */
static void check_images(vkvit_ctx *ctx, vkvit_model *m, const void *file_bytes, size_t file_size, const char *stem) {
    uint8_t *f32 = download_image(ctx, m, VKVIT_IMAGE_F32), *f16 = download_image(ctx, m, VKVIT_IMAGE_F16);
    vkvit__model_file mf;
    MUST(vkvit__model_file_load(NULL, file_bytes, file_size, stem, &mf));
    uint32_t readback_diff = 0, stored_diff = 0, rne_diff = 0, f32_diff = 0, operands = 0, stored = 0, narrowed = 0;
    uint64_t largest = 0;
    for (uint32_t i = 0; i < m->n_weights; i++) largest = VKVIT_MAX(largest, m->weights[i].numel);
    uint16_t *want = malloc((size_t)largest * 2);
    for (uint32_t i = 0; i < m->n_weights; i++) {
        const vkvit__weight *w = &m->weights[i];
        const float *a = (const float *)(f32 + w->offset[VKVIT_IMAGE_F32]);
        const uint8_t *b = f16 + w->offset[VKVIT_IMAGE_F16];
        if (!w->gemm_operand) {
            f32_diff += memcmp(a, b, (size_t)w->numel * 4) != 0;
            continue;
        }
        operands++;
        /* the readback path: the fp32 image's values narrowed on the host */
        CHECK(vkvit__f32_to_f16_array(a, want, (size_t)w->numel), "%s: '%s' out of the fp16 range", stem, w->name);
        readback_diff += memcmp(want, b, (size_t)w->numel * 2) != 0;
        const vkvit__st_tensor *t = vkvit__model_file_tensor(&mf, w->name);
        if (t && t->dtype == VKVIT_ST_F16) { /* as the file stores it */
            stored++;
            stored_diff += memcmp(mf.data + t->offset, b, (size_t)w->numel * 2) != 0;
        }
#ifdef __FLT16_MAX__
        else if (t) { /* an independent round-to-nearest-even: the compiler's */
            narrowed++;
            for (uint64_t k = 0; k < w->numel; k++) {
                const _Float16 h = (_Float16)a[k];
                uint16_t bits, got;
                memcpy(&bits, &h, 2);
                memcpy(&got, b + 2 * k, 2);
                rne_diff += bits != got;
            }
        }
#endif
    }
    printf("%s: %u GEMM operands (%u stored fp16, %u narrowed and checked against _Float16), %u fp32 weights\n", stem,
           operands, stored, narrowed, m->n_weights - operands);
    CHECK(operands > 0, "%s: no GEMM operand", stem);
    CHECK(readback_diff == 0, "%s: %u GEMM weights differ from the readback path's fp16 copy", stem, readback_diff);
    CHECK(stored_diff == 0, "%s: %u fp16 file tensors not copied as stored", stem, stored_diff);
    CHECK(rne_diff == 0, "%s: %u elements differ from _Float16 rounding", stem, rne_diff);
    CHECK(f32_diff == 0, "%s: %u fp32 weights differ between the images", stem, f32_diff);
    free(want);
    vkvit__model_file_close(&mf);
    free(f32);
    free(f16);
}

static vkvit_session *session(vkvit_model *m, vkvit_precision p) {
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(m, &(vkvit_session_desc){.precision = p}, &s));
    return s;
}

static bool resident(const vkvit_model *m, uint32_t image) { return m->images[image].buffer.buffer != VK_NULL_HANDLE; }

/* One model through the residency rule, from a copy of its bytes in memory (`bytes` is overwritten after creation:
 * the model keeps its own). */
static void check_model(vkvit_ctx *ctx, uint8_t *bytes, size_t size, const char *stem, bool fp16) {
    uint8_t *keep = malloc(size);
    memcpy(keep, bytes, size);
    vkvit_model *m = NULL;
    unsigned d0 = downloads(ctx);
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.data = bytes, .size = size, .label = stem}, &m));
    memset(bytes, 0xa5, size);
    CHECK(downloads(ctx) == d0 && vkvit__model_resident_bytes(m) == 0,
          "%s: model creation: %u downloads, %llu resident bytes", stem, downloads(ctx) - d0,
          (unsigned long long)vkvit__model_resident_bytes(m));
    check_layout(m, stem);
    if (fp16) {
        vkvit_session *h = session(m, VKVIT_PRECISION_FP16);
        CHECK(downloads(ctx) == d0, "%s: the fp16 session's creation read back %u times", stem, downloads(ctx) - d0);
        CHECK(vkvit__model_resident_bytes(m) == m->images[VKVIT_IMAGE_F16].bytes && !resident(m, VKVIT_IMAGE_F32),
              "%s: fp16 only: %llu resident bytes, the fp16 image is %llu", stem,
              (unsigned long long)vkvit__model_resident_bytes(m), (unsigned long long)m->images[VKVIT_IMAGE_F16].bytes);
        vkvit_session *h2 = session(m, VKVIT_PRECISION_FP16); /* reuses the image */
        CHECK(downloads(ctx) == d0 && vkvit__model_resident_bytes(m) == m->images[VKVIT_IMAGE_F16].bytes,
              "%s: a second fp16 session", stem);
        vkvit_session *f = session(m, VKVIT_PRECISION_FP32);
        CHECK(resident(m, VKVIT_IMAGE_F32) && resident(m, VKVIT_IMAGE_F16) &&
                  vkvit__model_resident_bytes(m) == m->images[0].bytes + m->images[1].bytes,
              "%s: live sessions of both kinds hold both images", stem);
        check_images(ctx, m, keep, size, stem);
        vkvit_session_destroy(h);
        vkvit_session_destroy(h2);
        vkvit_session *f2 = session(m, VKVIT_PRECISION_FP32); /* no fp16 session lives: its image goes */
        CHECK(!resident(m, VKVIT_IMAGE_F16) && vkvit__model_resident_bytes(m) == m->images[VKVIT_IMAGE_F32].bytes,
              "%s: fp16 image still resident without an fp16 session", stem);
        vkvit_session_destroy(f);
        vkvit_session_destroy(f2);
        h = session(m, VKVIT_PRECISION_FP16_MATH); /* made again from the file's bytes, the fp32 one freed */
        CHECK(!resident(m, VKVIT_IMAGE_F32) && vkvit__model_resident_bytes(m) == m->images[VKVIT_IMAGE_F16].bytes,
              "%s: fp16-math after fp32 sessions", stem);
        vkvit_session_destroy(h);
    } else {
        vkvit_session *f = session(m, VKVIT_PRECISION_FP32);
        CHECK(!resident(m, VKVIT_IMAGE_F16) && vkvit__model_resident_bytes(m) == m->images[VKVIT_IMAGE_F32].bytes,
              "%s: fp32 only: %llu resident bytes", stem, (unsigned long long)vkvit__model_resident_bytes(m));
        vkvit_session_destroy(f);
    }
    vkvit_model_destroy(m);
    free(keep);
}

/* Fresh random fp32 values in the model's first 2-D fp32 tensor: fp16 values exactly, ties between two fp16
 * neighbours, values between them, fp16 subnormals and signed zeros. */
static void randomize_a_weight(uint8_t *bytes, size_t size, uint32_t seed) {
    vkvit__model_file mf;
    MUST(vkvit__model_file_load(NULL, bytes, size, "random", &mf));
    const vkvit__st_tensor *t = NULL;
    for (uint32_t i = 0; i < mf.st.n_tensors && !t; i++)
        if (mf.st.tensors[i].ndim == 2 && mf.st.tensors[i].dtype == VKVIT_ST_F32) t = &mf.st.tensors[i];
    CHECK(t != NULL, "no 2-D fp32 tensor");
    vt_rng_state = seed;
    for (uint64_t k = 0; t && k < t->numel; k++) {
        const uint32_t r = vt_rand_u32();
        uint16_t h = (uint16_t)(r & 0xffff);
        if ((h & 0x7c00) == 0x7c00) h &= 0xbfff; /* finite, and below the largest binade */
        float v = vkvit__f16_to_f32(h);
        uint32_t bits;
        memcpy(&bits, &v, 4);
        /* Ties and values between neighbours only below the largest finite fp16 (65504): above it they round to
         * infinity, which the loader rightly refuses. */
        const bool below_max = (h & 0x7fff) < 0x7bff;
        switch ((r >> 16) & 3) {
        case 0: break;                                          /* an fp16 value */
        case 1: if ((h & 0x7c00) >= 0x0400 && below_max) bits |= 0x1000; break; /* a tie (13 dropped bits) */
        case 2: if ((h & 0x7c00) >= 0x0400 && below_max) bits |= (r >> 18) & 0x1fff; break; /* in between */
        case 3: bits &= 0x807fffffu; bits |= (r >> 20) ? 0x33000000u : 0; break; /* tiny: subnormal range or zero */
        }
        memcpy(&v, &bits, 4);
        memcpy(bytes + t->offset + 4 * k, &v, 4);
    }
    vkvit__model_file_close(&mf);
}

int main(void) {
    vkvit_ctx *ctx = vt_ctx();
    /* the first-use self-check (src/self_check.c) reads its own problems' results back at the ctx's first sessions:
     * run here, before any count, so that the counts are the weights' alone */
    vkvit__self_check(ctx, VKVIT_PRECISION_FP16_MATH);
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    const bool fp16 = info.fp16_in_use != 0;
    if (!fp16) printf("fp16 not in use on '%s': the fp32 half only\n", info.name);
    static const char *const paths[] = {
        BUNDLED "/vit5_cifar10.vkvit", BUNDLED "/vil_cifar10.vkvit", GOLDEN "/vit5_nvsubq_cls_r4.vkvit",
        GOLDEN "/vil_seed.vkvit", GOLDEN "/resnet_all_glu_global_c48.vkvit",
    };
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(paths); i++) {
        uint8_t *bytes = NULL;
        size_t size = 0;
        MUST(vkvit__read_file(paths[i], (size_t)1 << 30, &bytes, &size));
        const char *stem = strrchr(paths[i], '/') + 1;
        check_model(ctx, bytes, size, stem, fp16);
        if (i == 2) { /* the same golden with random values in a 2-D fp32 weight */
            free(bytes);
            MUST(vkvit__read_file(paths[i], (size_t)1 << 30, &bytes, &size));
            const char *seed_env = getenv("VKVIT_TEST_SEED");
            const uint32_t seed = seed_env ? (uint32_t)strtoul(seed_env, NULL, 10) : (uint32_t)time(NULL);
            printf("random weight values: seed %u (rerun: VKVIT_TEST_SEED=%u)\n", seed, seed);
            randomize_a_weight(bytes, size, seed);
            check_model(ctx, bytes, size, "vit5_nvsubq_cls_r4 (random 2-D weight)", fp16);
        }
        free(bytes);
    }
    /* From a path too: the fp16 session reads the file (pread), nothing back from the device. */
    vkvit_model *m = NULL;
    unsigned d0 = downloads(ctx);
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = paths[0]}, &m));
    if (fp16) {
        vkvit_session *h = session(m, VKVIT_PRECISION_FP16);
        CHECK(downloads(ctx) == d0 && vkvit__model_resident_bytes(m) == m->images[VKVIT_IMAGE_F16].bytes,
              "from a path: %u downloads, %llu resident bytes", downloads(ctx) - d0,
              (unsigned long long)vkvit__model_resident_bytes(m));
        vkvit_session_destroy(h);
    }
    vkvit_model_destroy(m);
    return vt_finish(ctx);
}
