// SPDX-License-Identifier: Apache-2.0
/* A program that uses an installed (or vendored) vkvit and nothing else of its source tree: it includes <vkvit.h>,
 * creates a ctx, loads a model (from its path, or with --memory from bytes it read itself), classifies one picture it
 * paints itself (a 96 x 64 RGBA gradient, pre-processed on the GPU) and prints the top-1 class. Exit 0 on success.
 * tools/consumer_check.sh builds it against vkvit in three ways (find_package, pkg-config, add_subdirectory), each
 * shared and static, and runs every build.
 *
 *     consumer MODEL.vkvit [--memory] */
#include <vkvit.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                           \
    do {                                                                                                      \
        vkvit_result r_ = (call);                                                                             \
        if (r_ != VKVIT_OK) {                                                                                 \
            fprintf(stderr, "consumer: %s failed: %s: %s\n", #call, vkvit_result_name(r_), vkvit_last_error()); \
            return 1;                                                                                         \
        }                                                                                                     \
    } while (0)

static void *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = n > 0 ? malloc((size_t)n) : NULL;
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *size = p ? (size_t)n : 0;
    return p;
}

static int classify(vkvit_ctx *ctx, const char *path, int from_memory) {
    vkvit_model_desc md = {.path = path};
    void *bytes = NULL;
    if (from_memory) {
        size_t size = 0;
        bytes = read_all(path, &size);
        if (!bytes) {
            fprintf(stderr, "consumer: cannot read %s\n", path);
            return 1;
        }
        md = (vkvit_model_desc){.data = bytes, .size = size, .label = path};
    }
    vkvit_model *model = NULL;
    vkvit_result r = vkvit_model_create(ctx, &md, &model);
    free(bytes); /* vkvit keeps nothing of it */
    CHECK(r);
    vkvit_session *s = NULL;
    CHECK(vkvit_session_create(model, &(vkvit_session_desc){.batch = 1, .top_k = 1}, &s));

    enum { W = 96, H = 64 };
    static uint8_t pixels[W * H * 4];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t *p = pixels + 4 * (y * W + x);
            p[0] = (uint8_t)(x * 255 / W), p[1] = (uint8_t)(y * 255 / H), p[2] = 128, p[3] = 255;
        }
    vkvit_image img = {.pixels = pixels, .width = W, .height = H, .format = VKVIT_PIXEL_RGBA8};
    CHECK(vkvit_session_set_images(s, 0, &img, 1));
    CHECK(vkvit_session_run(s));
    uint32_t cls = 0;
    float prob = 0.0f;
    CHECK(vkvit_session_get_top_k(s, &cls, &prob, 1));
    const char *label = vkvit_model_label(model, cls);
    printf("top-1: class %u (%s), p = %.4f\n", cls, label ? label : "?", (double)prob);
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    return prob > 0.0f && prob <= 1.0f ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: consumer MODEL.vkvit [--memory]\n");
        return 2;
    }
    vkvit_ctx *ctx = NULL;
    CHECK(vkvit_ctx_create(&(vkvit_ctx_desc){.label = "consumer"}, &ctx));
    int rc = classify(ctx, argv[1], argc > 2 && strcmp(argv[2], "--memory") == 0);
    uint32_t messages = vkvit_ctx_validation_messages(ctx, 0);
    vkvit_ctx_destroy(ctx);
    if (messages) {
        fprintf(stderr, "consumer: %u validation messages\n", messages);
        return 1;
    }
    return rc;
}
