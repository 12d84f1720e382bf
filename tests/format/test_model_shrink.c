// SPDX-License-Identifier: Apache-2.0
/* A model file that another process shrinks while vkvit reads it: the host process must survive, and the call
 * must either finish (it read the file before the cut) or fail with a sentence that names the file. vkvit used to
 * map the file and read the mapping, so a truncation in the middle of vkvit_model_create killed the process with
 * SIGBUS (exit 135): it now reads with pread() and a short read is an error.
 *
 *   - read_after_truncation_fails: vkvit__model_file_open on a 30 MB file, the file cut to half, then every
 *     tensor read: VKVIT_ERROR_IO and "shrank" for the tensors past the cut (deterministic: no timing), and those
 *     before it (F32, F16, BF16) exactly as converted from the same bytes in memory;
 *   - truncation_racing_model_create: vkvit_model_create on one thread while this one truncates the file (to 0,
 *     into the header, into the tensors, one byte short) at delays spread over the load's measured duration,
 *     ROUNDS times; at least a few cuts must land during the load (an error), and every result is OK or an error
 *     with a sentence;
 *   - the file restored, the model loads again on the same ctx.
 * Needs a Vulkan device for the racing part (exit 77 = skipped without one); validation on and silent. */
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "model_builder.h"
#include "vk/vk.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

/* A ViT-5 of 10.6 M parameters (30 MB: F32, the qkv weights F16 and the MLP's first layer BF16, so every
 * conversion path reads the file), its tensor table taken from the library's own walk of the config. */
static const char *BIG_DOC =
    "{\"format_version\":1,\"architecture\":\"vit5\",\"flavour\":\"nvsubq\",\"name\":\"vit5-shrink-test\","
    "\"config\":{\"image_size\":[32,32],\"patch_size\":4,\"in_chans\":3,\"dim\":384,\"depth\":6,\"num_heads\":6,"
    "\"mlp_hidden\":1536,\"mlp_activation\":\"gelu\",\"num_registers\":1,\"has_cls\":true,\"readout\":\"cls\","
    "\"neck_dim\":0,\"qk_norm\":true,\"norm_eps\":1e-6,\"qk_norm_eps\":1e-6,\"rope_base\":10000,"
    "\"reg_rope_base\":100,\"rope_pairing\":\"split_half\",\"token_layout\":\"patches_cls_regs\","
    "\"layer_scale\":true,\"grn\":false,"
    "\"bias\":{\"patch_embed\":true,\"qkv\":false,\"proj\":true,\"mlp\":true,\"head\":true},\"num_classes\":10},"
    "\"preprocess\":{\"image_size\":[32,32],\"resize_shorter\":32,\"interpolation\":\"bicubic\","
    "\"mean\":[0.5,0.5,0.5],\"std\":[0.5,0.5,0.5]}}";

static bool add_visited(void *user, const char *name, uint32_t ndim, const uint64_t *shape) {
    builder *b = user;
    const char *dtype = strstr(name, "qkv.weight") ? "F16" : strstr(name, "mlp.layer1.weight") ? "BF16" : "F32";
    add_t(b, dtype, name, ndim, shape);
    return true;
}

static uint8_t *g_image;                    /* the valid file's bytes */
static size_t g_size, g_header;             /* its length, and 8 + the header length */
static char g_path[64];

static void write_whole(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        fprintf(stderr, "FATAL: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

static void make_big_model(void) {
    builder b;
    memset(&b, 0, sizeof b);
    b.doc = cJSON_Parse(BIG_DOC);
    vkvit__model_config cfg;
    if (parse_doc(BIG_DOC, &cfg) != VKVIT_OK) {
        fprintf(stderr, "FATAL: the test's config: %s\n", vkvit_last_error());
        exit(1);
    }
    vkvit__model_tensor_table(&cfg, add_visited, &b);
    vkvit__model_config_free(&cfg);
    g_image = build(&b, &g_size);
    builder_free(&b);
    for (int i = 0; i < 8; i++) g_header |= (size_t)g_image[i] << (8 * i);
    g_header += 8;
    int fd = mkstemp(g_path);
    if (fd < 0) {
        fprintf(stderr, "FATAL: mkstemp: %s\n", strerror(errno));
        exit(1);
    }
    close(fd);
    write_whole(g_path, g_image, g_size);
    printf("model file %s: %zu bytes, %d tensors, header %zu bytes\n", g_path, g_size, b.n, g_header);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Opened whole, then cut to half: the tensors past the cut cannot be read, and say so; none kills the process. */
static void read_after_truncation_fails(void) {
    write_whole(g_path, g_image, g_size);
    vkvit__model_file mf;
    vkvit_result r = vkvit__model_file_open(g_path, &mf);
    CHECK(r == VKVIT_OK);
    if (r != VKVIT_OK) return;
    const size_t cut = g_size / 2;
    CHECK(truncate(g_path, (off_t)cut) == 0);
    uint32_t failed = 0, read_ok = 0;
    char first[1024] = "";
    size_t largest = 0;
    for (uint32_t i = 0; i < mf.st.n_tensors; i++) largest = VKVIT_MAX(largest, (size_t)mf.st.tensors[i].numel);
    float *dst = malloc(largest * sizeof *dst), *want = malloc(largest * sizeof *want);
    vkvit__model_file mem; /* the same bytes from memory: what every read before the cut must give */
    CHECK(vkvit__model_file_parse(g_image, g_size, g_path, &mem) == VKVIT_OK && mem.st.n_tensors == mf.st.n_tensors);
    for (uint32_t i = 0; i < mf.st.n_tensors; i++) {
        const vkvit__st_tensor *t = &mf.st.tensors[i];
        vkvit__error_clear();
        r = vkvit__model_file_tensor_f32(&mf, t, dst, (size_t)t->numel);
        if (t->offset + t->size <= cut) { /* F32, F16 and BF16 read from the file as converted from memory */
            CHECK(r == VKVIT_OK);
            CHECK(vkvit__model_file_tensor_f32(&mem, &mem.st.tensors[i], want, (size_t)t->numel) == VKVIT_OK &&
                  memcmp(dst, want, (size_t)t->numel * sizeof *dst) == 0);
            read_ok += r == VKVIT_OK;
            continue;
        }
        const char *msg = vkvit_last_error();
        const bool named = r == VKVIT_ERROR_IO && strstr(msg, g_path) && strstr(msg, "shrank");
        CHECK(named);
        if (!named) fprintf(stderr, "    tensor '%s': %s: %s\n", t->name, vkvit_result_name(r), msg);
        if (!failed) snprintf(first, sizeof first, "%s", msg);
        failed++;
    }
    printf("    cut at %zu of %zu bytes: %u tensors read, %u refused; the first: \"%s\"\n", cut, g_size, read_ok,
           failed, first);
    CHECK(failed > 0 && read_ok > 0);
    free(dst), free(want);
    vkvit__model_file_close(&mem);
    vkvit__model_file_close(&mf);
}

/* ---------------------------------------------------------------------------------------------------------------
 * vkvit_model_create on a worker thread, truncate() on this one
 * --------------------------------------------------------------------------------------------------------------- */

static vkvit_ctx *g_ctx;

typedef struct load_job {
    vkvit_result result;
    char sentence[1024];
    double seconds;
} load_job;

static void *load_thread(void *arg) {
    load_job *job = arg;
    vkvit_model *m = NULL;
    const double t0 = now_s();
    job->result = vkvit_model_create(g_ctx, &(vkvit_model_desc){.path = g_path}, &m);
    job->seconds = now_s() - t0;
    snprintf(job->sentence, sizeof job->sentence, "%s", vkvit_last_error()); /* the sentence is per thread */
    if (job->result == VKVIT_OK) {
        vkvit_model_info info;
        if (vkvit_model_get_info(m, &info) != VKVIT_OK || info.num_classes != 10) job->result = VKVIT_ERROR_VULKAN;
    } else if (m) {
        job->result = VKVIT_ERROR_VULKAN; /* a failure must not hand out a model */
    }
    vkvit_model_destroy(m);
    return NULL;
}

static load_job load_once(void) {
    load_job job = {0};
    pthread_t t;
    pthread_create(&t, NULL, load_thread, &job);
    pthread_join(t, NULL);
    return job;
}

#define ROUNDS 24

static void truncation_racing_model_create(void) {
    write_whole(g_path, g_image, g_size);
    load_job whole = load_once(); /* also warms the page cache, as the rounds' rewrites do */
    CHECK(whole.result == VKVIT_OK);
    if (whole.result != VKVIT_OK) {
        fprintf(stderr, "    the whole file: %s: %s\n", vkvit_result_name(whole.result), whole.sentence);
        return;
    }
    double span = whole.seconds; /* the shortest of three loads: a stalled one must not spread the cuts past it */
    for (int i = 0; i < 3; i++) span = VKVIT_MIN(span, load_once().seconds);
    printf("    the whole file loads in %.1f ms\n", span * 1e3);
    /* where the file is cut: to nothing, into the header, into the first tensors, half way, one byte short */
    const size_t cuts[] = {0, g_header / 2, g_header + 4096, g_size / 2, g_size - 1};
    uint32_t ok = 0, refused = 0, bad = 0;
    for (uint32_t round = 0; round < ROUNDS; round++) {
        write_whole(g_path, g_image, g_size);
        load_job job = {0};
        pthread_t t;
        pthread_create(&t, NULL, load_thread, &job);
        /* delays from 0 to 1.1 x the load's duration, so most cuts fall inside it */
        const double delay = span * 1.1 * (double)round / (double)(ROUNDS - 1);
        struct timespec ts = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
        nanosleep(&ts, NULL);
        const size_t cut = cuts[round % VKVIT_ARRAY_LEN(cuts)];
        if (truncate(g_path, (off_t)cut) != 0) {
            fprintf(stderr, "    truncate: %s\n", strerror(errno));
            g_ok = false;
        }
        pthread_join(t, NULL);
        const bool good = job.result == VKVIT_OK ||
                          (job.result != VKVIT_ERROR_VULKAN && job.sentence[0] && strstr(job.sentence, g_path));
        if (!good) {
            g_ok = false;
            fprintf(stderr, "    round %u (cut to %zu after %.1f ms): %s: \"%s\"\n", round, cut, delay * 1e3,
                    vkvit_result_name(job.result), job.sentence);
        }
        bad += !good;
        ok += job.result == VKVIT_OK;
        refused += job.result != VKVIT_OK;
        printf("    round %2u: cut to %8zu bytes after %6.1f ms: %s%s%s\n", round, cut, delay * 1e3,
               vkvit_result_name(job.result), job.result == VKVIT_OK ? "" : ": ", job.sentence);
    }
    printf("    %u rounds: %u loaded before the cut, %u refused with a sentence, %u wrong\n", ROUNDS, ok, refused, bad);
    /* The cuts from 0 to about half the load's duration fall inside it whatever the machine's speed. */
    CHECK(refused >= ROUNDS / 4);
    write_whole(g_path, g_image, g_size);
    CHECK(load_once().result == VKVIT_OK); /* the ctx is unharmed */
}

/* No argument: both parts; "race": the racing part alone. */
int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* each line out before a crash, if one comes */
    snprintf(g_path, sizeof g_path, "/tmp/vkvit_test_shrink_XXXXXX");
    make_big_model();
    if (argc < 2 || strcmp(argv[1], "race") != 0) RUN(read_after_truncation_fails);

    const char *v = getenv("VKVIT_VALIDATION");
    vkvit_ctx_desc desc = {.label = "shrink test", .validation = v && strcmp(v, "0") == 0 ? -1 : 1,
                           .pipeline_cache_dir = ""};
    vkvit_result r = vkvit_ctx_create(&desc, &g_ctx);
    if (r == VKVIT_ERROR_NO_LOADER || r == VKVIT_ERROR_NO_DEVICE) {
        fprintf(stderr, "SKIP (the racing part): %s\n", vkvit_last_error());
        remove(g_path);
        free(g_image);
        return g_failed ? 1 : 77;
    }
    if (r != VKVIT_OK) {
        fprintf(stderr, "FATAL: vkvit_ctx_create: %s\n", vkvit_last_error());
        return 1;
    }
    RUN(truncation_racing_model_create);
    const uint32_t messages = vkvit_ctx_validation_messages(g_ctx, 0);
    if (messages) {
        fprintf(stderr, "FAIL: %u validation message(s); first: %s\n", messages, g_ctx->validation_log[0]);
        g_failed++;
    }
    vkvit_ctx_destroy(g_ctx);
    remove(g_path);
    free(g_image);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
