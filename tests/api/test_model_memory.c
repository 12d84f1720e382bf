// SPDX-License-Identifier: Apache-2.0
/* Models from memory (vkvit_model_desc.data / size) through the public API:
 *   - every golden model (every .vkvit under tests/golden/models) created from a heap copy of its bytes gives logits bit-identical
 *     to the same model created from its path, on the same fresh random input (and condition); the copy is freed and
 *     overwritten right after vkvit_model_create returns, so a model that kept a pointer into it reads garbage (and
 *     AddressSanitizer reports it);
 *   - corrupt bytes (truncations, a flipped byte in the header) get the same result and the same sentence from memory
 *     (labelled with the path) as from a file;
 *   - both or neither of path and data: VKVIT_ERROR_INVALID_ARGUMENT; a FIFO, /dev/zero, /dev/null and a directory as
 *     the path: VKVIT_ERROR_IO at once (the FIFO used to block forever); /proc/self/status (st_size 0, reads as data):
 *     VKVIT_ERROR_IO named as such, not "0 bytes long".
 * Needs a Vulkan device (exit 77 = skipped without one); validation on and silent. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODELS VKVIT_SOURCE_DIR "/tests/golden/models"

static uint8_t *slurp(const char *path, size_t *size) {
    uint8_t *data = NULL;
    if (vkvit__read_file(path, (size_t)1 << 30, &data, size) != VKVIT_OK) {
        fprintf(stderr, "FATAL: %s\n", vkvit_last_error());
        exit(1);
    }
    return data;
}

/* Creates a model from `desc`, runs one inference on input/condition drawn from `seed`, returns malloc'ed logits. */
static float *logits_of(vkvit_ctx *ctx, const vkvit_model_desc *desc, uint8_t *forget, size_t forget_size,
                        uint32_t seed, size_t *count) {
    vkvit_model *model = NULL;
    MUST(vkvit_model_create(ctx, desc, &model));
    if (forget) memset(forget, 0xA5, forget_size); /* vkvit keeps nothing of the caller's bytes */
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = 1}, &s));
    vkvit_shape in = vkvit_session_input_shape(s), out = vkvit_session_output_shape(s),
                cond = vkvit_session_condition_shape(s);
    size_t n_in = 1, n_out = 1, n_cond = cond.ndim ? 1 : 0;
    for (uint32_t i = 0; i < in.ndim; i++) n_in *= in.dims[i];
    for (uint32_t i = 0; i < out.ndim; i++) n_out *= out.dims[i];
    for (uint32_t i = 0; i < cond.ndim; i++) n_cond *= cond.dims[i];
    vt_rng_state = seed;
    float *x = malloc(n_in * sizeof *x), *c = malloc((n_cond ? n_cond : 1) * sizeof *c), *y = malloc(n_out * sizeof *y);
    vt_fill_rand(x, n_in);
    vt_fill_rand(c, n_cond);
    MUST(vkvit_session_set_input(s, x, n_in));
    if (n_cond) MUST(vkvit_session_set_condition(s, c, n_cond));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, y, n_out));
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    free(x);
    free(c);
    *count = n_out;
    return y;
}

static void golden_models_from_memory_match_their_files(vkvit_ctx *ctx) {
    DIR *d = opendir(MODELS);
    CHECK(d != NULL, "cannot open %s", MODELS);
    if (!d) return;
    int models = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 7 || strcmp(e->d_name + len - 6, ".vkvit") != 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", MODELS, e->d_name);
        size_t size, n_file, n_mem;
        uint8_t *bytes = slurp(path, &size);
        uint32_t seed = 1234u + (uint32_t)models;
        float *from_file = logits_of(ctx, &(vkvit_model_desc){.path = path}, NULL, 0, seed, &n_file);
        float *from_mem = logits_of(ctx, &(vkvit_model_desc){.data = bytes, .size = size, .label = e->d_name}, bytes,
                                    size, seed, &n_mem);
        CHECK(n_file == n_mem && memcmp(from_file, from_mem, n_file * sizeof(float)) == 0,
              "%s: logits from memory differ from the file's (%zu vs %zu values)", e->d_name, n_mem, n_file);
        printf("ok   %s: %zu logits bit-identical from memory\n", e->d_name, n_file);
        free(from_file);
        free(from_mem);
        free(bytes);
        models++;
    }
    closedir(d);
    CHECK(models >= 10, "only %d golden models found in %s", models, MODELS);
}

static void corrupt_bytes_get_the_file_sentences(vkvit_ctx *ctx) {
    char path[1024];
    snprintf(path, sizeof path, "%s/vit5_nvsubq_cls_r4.vkvit", MODELS);
    size_t size;
    uint8_t *good = slurp(path, &size);
    char tmp[] = "/tmp/vkvit_test_memory_XXXXXX";
    int fd = mkstemp(tmp);
    CHECK(fd >= 0, "mkstemp");
    close(fd);
    size_t hn = 0;
    for (int i = 0; i < 8; i++) hn |= (size_t)good[i] << (8 * i);
    /* (length, byte offset to flip or SIZE_MAX, new byte) */
    const struct { size_t len, at; uint8_t to; } cases[] = {
        {0, SIZE_MAX, 0}, {7, SIZE_MAX, 0}, {8 + hn / 2, SIZE_MAX, 0}, {size - 1, SIZE_MAX, 0},
        {size, 8, '['}, {size, 8 + hn / 3, 0}, {size, 8 + hn / 2, '"'}, {size, 8 + hn - 1, 'x'}, {size, 0, 0xff},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *img = malloc(cases[i].len ? cases[i].len : 1);
        memcpy(img, good, cases[i].len);
        if (cases[i].at != SIZE_MAX) img[cases[i].at] = cases[i].to;
        FILE *f = fopen(tmp, "wb");
        fwrite(img, 1, cases[i].len, f);
        fclose(f);
        vkvit_model *a = NULL, *b = NULL;
        vkvit_result ra = vkvit_model_create(ctx, &(vkvit_model_desc){.path = tmp}, &a);
        char sa[1024];
        snprintf(sa, sizeof sa, "%s", vkvit_last_error());
        vkvit_result rb = vkvit_model_create(ctx, &(vkvit_model_desc){.data = img, .size = cases[i].len, .label = tmp}, &b);
        CHECK(ra != VKVIT_OK && ra == rb && strcmp(sa, vkvit_last_error()) == 0 && !a && !b,
              "case %zu: file %s '%s'; memory %s '%s'", i, vkvit_result_name(ra), sa, vkvit_result_name(rb),
              vkvit_last_error());
        vkvit_model_destroy(a);
        vkvit_model_destroy(b);
        free(img);
    }
    remove(tmp);

    vkvit_model *m = NULL;
    CHECK(vkvit_model_create(ctx, &(vkvit_model_desc){.path = path, .data = good, .size = size}, &m) ==
              VKVIT_ERROR_INVALID_ARGUMENT && !m && strstr(vkvit_last_error(), "both set"),
          "both: %s", vkvit_last_error());
    CHECK(vkvit_model_create(ctx, &(vkvit_model_desc){.label = "nothing"}, &m) == VKVIT_ERROR_INVALID_ARGUMENT && !m,
          "neither: %s", vkvit_last_error());
    CHECK(vkvit_model_create(ctx, &(vkvit_model_desc){.data = good, .size = 3}, &m) == VKVIT_ERROR_BAD_MODEL_FILE &&
              strstr(vkvit_last_error(), "model 'model in memory': the file is 3 bytes long"),
          "default label: %s", vkvit_last_error());
    free(good);
}

static void special_files_are_refused_at_once(vkvit_ctx *ctx) {
    char dir[] = "/tmp/vkvit_test_special_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/model.vkvit", dir);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    const char *paths[] = {fifo, "/dev/zero", "/dev/null", dir};
    alarm(30); /* a blocking open would hang here: the alarm fails the test instead */
    for (size_t i = 0; i < 4; i++) {
        struct stat sb; /* a device replaced by a regular file on a shared machine is skipped, not failed */
        if (strncmp(paths[i], "/dev/", 5) == 0 && (stat(paths[i], &sb) != 0 || !S_ISCHR(sb.st_mode))) {
            fprintf(stderr, "skipping %s: not a character device here\n", paths[i]);
            continue;
        }
        vkvit_model *m = NULL;
        uint64_t t0 = vkvit__now_ns();
        vkvit_result r = vkvit_model_create(ctx, &(vkvit_model_desc){.path = paths[i]}, &m);
        double ms = (double)(vkvit__now_ns() - t0) / 1e6;
        CHECK(r == VKVIT_ERROR_IO && !m && strstr(vkvit_last_error(), "vkvit reads only regular files") && ms < 1000,
              "%s: %s '%s' after %.1f ms", paths[i], vkvit_result_name(r), vkvit_last_error(), ms);
    }
    alarm(0);
    remove(fifo);
    rmdir(dir);
    /* A file of /proc reports st_size 0 but reads as data: named as such, not called "0 bytes long". */
    vkvit_model *m = NULL;
    vkvit_result r = vkvit_model_create(ctx, &(vkvit_model_desc){.path = "/proc/self/status"}, &m);
    const char *e = vkvit_last_error();
    CHECK(r == VKVIT_ERROR_IO && !m && !strstr(e, "0 bytes long") &&
              strstr(e, "'/proc/self/status' is not a regular file with a size: it reports 0 bytes but reads as data, "
                        "as files under /proc and /sys do; vkvit reads only regular files"),
          "/proc/self/status: %s '%s'", vkvit_result_name(r), e);
}

int main(void) {
    vkvit_ctx *ctx = vt_ctx();
    special_files_are_refused_at_once(ctx);
    corrupt_bytes_get_the_file_sentences(ctx);
    golden_models_from_memory_match_their_files(ctx);
    return vt_finish(ctx);
}
