// SPDX-License-Identifier: Apache-2.0
/* ctx behaviour: device selection errors, NULL-safe destroy, and the on-disk pipeline cache (written at destroy,
 * reused by the next ctx, ignored — never trusted — when stale, corrupt or truncated). */
#include "test_util.h"
#include "ops/gemm.h"
#include "model/model_file.h"

#include <dirent.h>
#include <unistd.h>

static int g_ignored_cache_logs;

static void count_log(void *user, int level, const char *msg) {
    (void)user, (void)level;
    if (strstr(msg, "ignoring stale or corrupt pipeline cache")) g_ignored_cache_logs++;
    else vt_log(user, level, msg);
}

static void ctx_rejects_unknown_device_name(void) {
    vkvit_ctx *ctx = (vkvit_ctx *)1;
    vkvit_result r = vkvit_ctx_create(&(vkvit_ctx_desc){.device = "no-such-gpu-xyz", .pipeline_cache_dir = ""}, &ctx);
    if (r == VKVIT_ERROR_NO_LOADER) {
        fprintf(stderr, "SKIP: %s\n", vkvit_last_error());
        exit(77);
    }
    CHECK(r == VKVIT_ERROR_NO_DEVICE, "got %s", vkvit_result_name(r));
    CHECK(ctx == NULL, "*out must be NULL on failure");
    CHECK(strstr(vkvit_last_error(), "no-such-gpu-xyz") != NULL, "message does not name the device: %s",
          vkvit_last_error());
}

static void ctx_rejects_device_index_out_of_range(void) {
    vkvit_ctx *ctx = NULL;
    vkvit_result r = vkvit_ctx_create(&(vkvit_ctx_desc){.device = "99", .pipeline_cache_dir = ""}, &ctx);
    CHECK(r == VKVIT_ERROR_NO_DEVICE && ctx == NULL, "got %s", vkvit_result_name(r));
    CHECK(strstr(vkvit_last_error(), "99") != NULL, "message: %s", vkvit_last_error());
    /* Issue 12.9: an index too long for a number is echoed as given, never clamped to LONG_MAX or wrapped. */
    const char *huge = "99999999999999999999";
    r = vkvit_ctx_create(&(vkvit_ctx_desc){.device = huge, .pipeline_cache_dir = ""}, &ctx);
    CHECK(r == VKVIT_ERROR_NO_DEVICE && ctx == NULL, "got %s", vkvit_result_name(r));
    CHECK(strstr(vkvit_last_error(), "index 99999999999999999999 requested") != NULL &&
              strstr(vkvit_last_error(), "9223372036854775807") == NULL,
          "message: %s", vkvit_last_error());
    r = vkvit_ctx_create(&(vkvit_ctx_desc){.device = "18446744073709551617", .pipeline_cache_dir = ""}, &ctx);
    CHECK(r == VKVIT_ERROR_NO_DEVICE && ctx == NULL, "a 2^64 + 1 index wrapped to a device: %s", vkvit_result_name(r));
}

/* vkvit_ctx_destroy(NULL) does nothing: it returns, twice over, and leaves the thread's last error as it was. */
static void ctx_destroy_null_is_noop(void) {
    vkvit_ctx *ctx = NULL;
    CHECK(vkvit_ctx_create(&(vkvit_ctx_desc){.device = "no such device name", .pipeline_cache_dir = ""}, &ctx) ==
              VKVIT_ERROR_NO_DEVICE, "a ctx on a device that does not exist: %s", vkvit_last_error());
    char before[512];
    snprintf(before, sizeof before, "%s", vkvit_last_error());
    vkvit_ctx_destroy(NULL);
    vkvit_ctx_destroy(NULL);
    CHECK(before[0] && strcmp(before, vkvit_last_error()) == 0, "vkvit_ctx_destroy(NULL) changed the last error "
          "from '%s' to '%s'", before, vkvit_last_error());
}

/* Creates a ctx on `dir`, builds one GEMM pipeline, destroys the ctx (which saves the cache). */
static void use_cache(const char *dir) {
    vkvit_ctx *ctx = vt_ctx_with((vkvit_ctx_desc){.pipeline_cache_dir = dir, .log = count_log});
    vkvit__gemm_config cfg = vkvit__gemm_pick(ctx, 64, 64, 64);
    vkvit__kernel k;
    MUST(vkvit__gemm_kernel_create(ctx, &cfg, &(vkvit__gemm_epilogue){0}, "cached gemm", &k));
    vkvit__kernel_destroy(ctx, &k);
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "validation messages: %s", ctx->validation_log[0]);
    vkvit_ctx_destroy(ctx);
}

static int find_cache_file(const char *dir, char *path, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "pipelines-", 10)) {
            snprintf(path, cap, "%s/%s", dir, e->d_name);
            found = 1;
        }
    closedir(d);
    return found;
}

static long file_size(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

static void pipeline_cache_roundtrip_and_corruption(void) {
    char dir[] = "/tmp/vkvit-cache-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    char sub[600], path[1024];
    snprintf(sub, sizeof sub, "%s/nested/dir", dir); /* created on demand */

    use_cache(sub);
    CHECK(find_cache_file(sub, path, sizeof path), "no cache file written under %s", sub);
    long n = file_size(path);
    CHECK(n > 64, "cache file is %ld bytes", n);

    g_ignored_cache_logs = 0;
    use_cache(sub); /* a valid file is loaded silently */
    CHECK(g_ignored_cache_logs == 0, "a valid cache was reported as ignored");

    /* Flip a byte in the driver blob: the checksum no longer matches, the file is ignored, the ctx still works. */
    FILE *f = fopen(path, "r+b");
    fseek(f, n - 5, SEEK_SET);
    int c = fgetc(f);
    fseek(f, n - 5, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);
    g_ignored_cache_logs = 0;
    use_cache(sub);
    CHECK(g_ignored_cache_logs == 1, "corrupt cache not reported as ignored (%d)", g_ignored_cache_logs);

    /* Truncated to a few bytes: ignored as well. */
    CHECK(truncate(path, 7) == 0, "truncate failed");
    g_ignored_cache_logs = 0;
    use_cache(sub);
    CHECK(g_ignored_cache_logs == 1, "truncated cache not reported as ignored (%d)", g_ignored_cache_logs);
    CHECK(file_size(path) > 64, "the cache was not rewritten after being ignored");

    remove(path);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
}

/* desc.disable_f16 (and VKVIT_DISABLE_F16=1) means no fp16 at all: an fp16 session is refused, it does not
 * quietly run with fp16 weights while `vkvit info` says fp16 is off. */
static void disabled_f16_refuses_fp16_sessions(void) {
    vkvit_ctx *ctx = vt_ctx_with((vkvit_ctx_desc){.disable_f16 = 1});
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    CHECK(!info.fp16_in_use, "fp16 reported in use although disabled");
    vkvit_model *m = NULL;
    vkvit_session *s = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = VKVIT_SOURCE_DIR "/tests/golden/models/vit5_nvsubq_cls_r4.vkvit"},
                            &m));
    vkvit_result r = vkvit_session_create(m, &(vkvit_session_desc){.precision = VKVIT_PRECISION_FP16}, &s);
    CHECK(r == VKVIT_ERROR_UNSUPPORTED && s == NULL && strstr(vkvit_last_error(), "disabled"), "%s: %s",
          vkvit_result_name(r), vkvit_last_error());
    vkvit_session_destroy(s);
    vkvit_model_destroy(m);
    uint32_t n = vkvit_ctx_validation_messages(ctx, 0);
    CHECK(n == 0, "%u validation message(s); first: %s", n, n ? ctx->validation_log[0] : "");
    vkvit_ctx_destroy(ctx);
}

/* An fp16 or fp16-math session needs the model's fp16 weight image (vkvit__model_acquire, which narrows the file's
 * fp32 weights window by window): one value beyond 65504 in one of them refuses the session, naming the weight, and leaves the
 * model usable in fp32; a model whose weights fit gets a working fp16 session after that refusal. */
static void fp16_session_refuses_weights_beyond_the_fp16_range(void) {
    vkvit_ctx *ctx = vt_ctx();
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    if (!info.fp16_in_use) {
        printf("skip: fp16 not in use on '%s'\n", info.name);
        vkvit_ctx_destroy(ctx);
        return;
    }
    uint8_t *bytes = NULL;
    size_t size = 0;
    MUST(vkvit__read_file(VKVIT_SOURCE_DIR "/tests/golden/models/vit5_nvsubq_cls_r4.vkvit", (size_t)1 << 26, &bytes, &size));
    vkvit__model_file mf;
    MUST(vkvit__model_file_load(NULL, bytes, size, "golden", &mf));
    const vkvit__st_tensor *victim = NULL; /* the last 2-D fp32 tensor */
    for (uint32_t i = 0; i < mf.st.n_tensors; i++)
        if (mf.st.tensors[i].ndim == 2 && mf.st.tensors[i].dtype == VKVIT_ST_F32 && mf.st.tensors[i].numel > 7)
            victim = &mf.st.tensors[i];
    CHECK(victim != NULL, "no 2-D fp32 tensor in the golden model");
    char name[128] = "";
    if (victim) {
        snprintf(name, sizeof name, "%s", victim->name);
        const float big = 70000.0f;
        memcpy(bytes + victim->offset + 7 * sizeof(float), &big, sizeof big);
    }
    vkvit__model_file_close(&mf);

    vkvit_model *m = NULL;
    vkvit_session *s = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.data = bytes, .size = size}, &m));
    for (int p = 0; p < 2; p++) {
        const vkvit_precision prec = p ? VKVIT_PRECISION_FP16_MATH : VKVIT_PRECISION_FP16;
        if (prec == VKVIT_PRECISION_FP16_MATH && !info.fp16_arithmetic) continue;
        vkvit_result r = vkvit_session_create(m, &(vkvit_session_desc){.precision = prec}, &s);
        CHECK(r == VKVIT_ERROR_UNSUPPORTED && s == NULL && strstr(vkvit_last_error(), "outside the fp16 range") &&
                  strstr(vkvit_last_error(), name) && strstr(vkvit_last_error(), "70000"),
              "%s: %s", vkvit_result_name(r), vkvit_last_error());
        vkvit_session_destroy(s);
        s = NULL;
    }
    MUST(vkvit_session_create(m, &(vkvit_session_desc){.precision = VKVIT_PRECISION_FP32}, &s));
    MUST(vkvit_session_run(s));
    vkvit_session_destroy(s);
    vkvit_model_destroy(m);
    free(bytes);

    m = NULL, s = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = VKVIT_SOURCE_DIR "/tests/golden/models/vit5_nvsubq_cls_r4.vkvit"},
                            &m));
    MUST(vkvit_session_create(m, &(vkvit_session_desc){.precision = VKVIT_PRECISION_FP16}, &s));
    MUST(vkvit_session_run(s));
    vkvit_session_destroy(s);
    vkvit_model_destroy(m);
    uint32_t n = vkvit_ctx_validation_messages(ctx, 0);
    CHECK(n == 0, "%u validation message(s); first: %s", n, n ? ctx->validation_log[0] : "");
    vkvit_ctx_destroy(ctx);
}

int main(void) {
    ctx_rejects_unknown_device_name();
    disabled_f16_refuses_fp16_sessions();
    fp16_session_refuses_weights_beyond_the_fp16_range();
    ctx_rejects_device_index_out_of_range();
    ctx_destroy_null_is_noop();
    pipeline_cache_roundtrip_and_corruption();
    return vt_finish(NULL);
}
