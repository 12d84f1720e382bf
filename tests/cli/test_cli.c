// SPDX-License-Identifier: Apache-2.0
/* The vkvit CLI as a user meets it: exit codes, help texts, `info` on this machine, and a clear sentence (not a
 * crash) when no Vulkan driver can be found or a driver manifest is broken; `vkvit run` on a conditioned resnet
 * golden (input + condition from the golden's io file, logits against PyTorch). Runs the built binary with popen().
 * Also vkvit_describe_model(_ex), the public API behind `vkvit inspect`, and the error code include/vkvit.h gives for
 * vkvit_session_set_images' device limit. */
#include "golden_util.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CLI VKVIT_BINARY_DIR "/vkvit"

/* Runs `cmd` (stderr folded into stdout), returns its exit status, stores up to cap-1 bytes of output. */
static int run(const char *cmd, char *out, size_t cap) {
    char full[4096];
    if (snprintf(full, sizeof full, "%s 2>&1", cmd) >= (int)sizeof full) return -1; /* a command this long is a bug */
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

#define MODELS VKVIT_SOURCE_DIR "/tests/golden/models/"

/* `vkvit run` with a resnet that takes a condition: the logits match the golden; a file without the condition is
 * exit 2 with a sentence; a model without a condition mixer ignores a condition tensor (with a note). */
static void run_resnet(char *out, size_t cap) {
    const char *stem = "resnet_all_swiglu_tc3_rope_qkn_causal";
    char out_path[256], cmd[2048];
    snprintf(out_path, sizeof out_path, "/tmp/vkvit_test_cli_%d.safetensors", (int)getpid());
    snprintf(cmd, sizeof cmd, "VKVIT_VALIDATION=1 " CLI " run --model " MODELS "%s.vkvit --input " MODELS
             "%s.io.safetensors --output %s", stem, stem, out_path);
    int rc = run(cmd, out, cap);
    CHECK(rc == 0 && strstr(out, "resnet/generic") && !strstr(out, "warning") && !strstr(out, "error"),
          "run %s: rc %d\n%s", stem, rc, out);
    if (rc == 0) {
        vt_golden want, got;
        vt_golden_open(MODELS "resnet_all_swiglu_tc3_rope_qkn_causal.io.safetensors", &want);
        vt_golden_open(out_path, &got);
        size_t n_want, n_got;
        float *w = vt_golden_f32_req(&want, "logits", &n_want), *g = vt_golden_f32_req(&got, "logits", &n_got);
        CHECK(n_got == n_want, "run %s: %zu logits, want %zu", stem, n_got, n_want);
        double *ref = malloc(n_want * sizeof(double));
        for (size_t i = 0; i < n_want; i++) ref[i] = w[i];
        size_t worst = 0;
        double err = n_got == n_want ? vt_max_rel_err(g, ref, n_want, &worst) : 1.0;
        printf("vkvit run %s (with its condition): logits max rel err %.3g\n", stem, err);
        CHECK(err <= 1e-4, "run %s: max rel err %.3g at %zu", stem, err, worst);
        free(ref), free(w), free(g);
        vt_golden_close(&want);
        vt_golden_close(&got);
    }
    unlink(out_path);

    /* The model needs a condition [1, 32]; this 8x8 io file has only `input`. */
    rc = run(CLI " run --model " MODELS "resnet_seq_cond_global_qkn_causal.vkvit --input " MODELS
             "resnet_mlp_only_gelu_nopos.io.safetensors --output /tmp/vkvit_test_cli_never.safetensors", out, cap);
    CHECK(rc == 2 && strstr(out, "needs a condition") && strstr(out, "no tensor named 'condition'"),
          "run without the condition: rc %d\n%s", rc, out);
    CHECK(access("/tmp/vkvit_test_cli_never.safetensors", F_OK) != 0, "an output was written after a failure");

    /* No condition mixer: a condition tensor in the file is ignored with a note. */
    snprintf(cmd, sizeof cmd, CLI " run --model " MODELS "resnet_mlp_only_gelu_nopos.vkvit --input " MODELS
             "resnet_seq_cond_global_qkn_causal.io.safetensors --output %s", out_path);
    rc = run(cmd, out, cap);
    CHECK(rc == 0 && strstr(out, "takes no condition"), "run with an unused condition: rc %d\n%s", rc, out);
    unlink(out_path);
}

/* A driver manifest the loader cannot use (VK_ICD_FILENAMES / VK_DRIVER_FILES naming garbage; Debian 12's loader
 * answers VK_ERROR_OUT_OF_HOST_MEMORY for text that is not JSON, and crashes on a JSON array or a number for a
 * library path) is "no usable Vulkan device": exit 3 with one sentence naming the file, from every command that
 * opens a device. */
static void bad_driver_manifests(char *out, size_t cap) {
    static const struct {
        const char *what, *text;
    } manifests[] = {
        {"garbage", "{garbage\x01\x02\xff"},
        {"a JSON array", "[1, 2]"},
        {"a number as the library path", "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": 7}}"},
    };
    static const char *commands[] = {
        "info",
        "bench gemm --shape 8x8x8 --repeat 1",
        "run --model " MODELS "resnet_seq_cond_global_qkn_causal.vkvit --input " MODELS
        "resnet_seq_cond_global_qkn_causal.io.safetensors --output /dev/null",
    };
    char path[128], dir[128], cmd[2048];
    snprintf(path, sizeof path, "/tmp/vkvit_test_cli_%d_icd.json", (int)getpid());
    snprintf(dir, sizeof dir, "/tmp/vkvit_test_cli_%d_icd.d", (int)getpid());
    for (size_t m = 0; m < sizeof manifests / sizeof manifests[0]; m++) {
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL, "cannot create %s", path);
        if (!f) return;
        fputs(manifests[m].text, f);
        fclose(f);
        for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++) {
            snprintf(cmd, sizeof cmd, "VK_ICD_FILENAMES=%s VK_DRIVER_FILES=%s " CLI " %s", path, path, commands[c]);
            int rc = run(cmd, out, cap);
            const char *newline = strchr(out, '\n');
            CHECK(rc == 3 && strstr(out, path) && strstr(out, "not a Vulkan driver manifest") && newline &&
                      !newline[1],
                  "%s as the driver manifest, vkvit %s: rc %d\n%s", manifests[m].what, commands[c], rc, out);
        }
    }
    /* VK_DRIVER_FILES may name a folder of manifests: one broken file in it is enough to stop the loader. */
    if (mkdir(dir, 0700) == 0) {
        char in_dir[256];
        snprintf(in_dir, sizeof in_dir, "%s/broken.json", dir);
        rename(path, in_dir);
        snprintf(cmd, sizeof cmd, "VK_DRIVER_FILES=%s " CLI " info", dir);
        int rc = run(cmd, out, cap);
        CHECK(rc == 3 && strstr(out, in_dir) && strstr(out, "not a Vulkan driver manifest"),
              "a folder with a broken manifest as VK_DRIVER_FILES: rc %d\n%s", rc, out);
        unlink(in_dir);
        rmdir(dir);
    }
    unlink(path);
    /* A good manifest still works through the same variables. */
    const char *lvp = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
    if (access(lvp, R_OK) == 0) {
        snprintf(cmd, sizeof cmd, "VK_ICD_FILENAMES=%s VK_DRIVER_FILES=%s " CLI " info", lvp, lvp);
        int rc = run(cmd, out, cap);
        CHECK(rc == 0 && strstr(out, "llvmpipe"), "lavapipe's own manifest as VK_DRIVER_FILES: rc %d\n%s", rc, out);
    }
}

/* vkvit_session_set_images' comment in include/vkvit.h lists the code it returns for an image within
 * VKVIT_MAX_IMAGE_SIDE whose pixels exceed what one storage-buffer descriptor of the device reaches (16384x16384 is
 * 1 GiB as RGBA8; lavapipe's maxStorageBufferRange is 128 MiB), with that reason. */
static void set_images_limit_documented(void) {
    vkvit_ctx *ctx = vt_ctx();
    vkvit_device_info dev;
    vkvit_ctx_device_info(ctx, &dev);
    const uint64_t side = VKVIT_MAX_IMAGE_SIDE, need = side * side * 4;
    if (need + 256 <= dev.max_storage_buffer_range) {
        printf("note: %s reaches %llu bytes per descriptor: a 16384x16384 image fits; the check is not run\n",
               dev.name, (unsigned long long)dev.max_storage_buffer_range);
        vkvit_ctx_destroy(ctx);
        return;
    }
    vkvit_model *model = NULL;
    vkvit_session *s = NULL;
    vkvit_result r = vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODELS "vit5_nvsubq_cls_r4.vkvit"}, &model);
    if (r == VKVIT_OK) r = vkvit_session_create(model, &(vkvit_session_desc){.label = "limit", .batch = 1}, &s);
    CHECK(r == VKVIT_OK, "a session for the image limit: %s", vkvit_last_error());
    if (r == VKVIT_OK) {
        /* refused before any pixel is read: the buffer need not hold them */
        static const uint8_t pixel[4];
        vkvit_image im = {.pixels = pixel, .width = VKVIT_MAX_IMAGE_SIDE, .height = VKVIT_MAX_IMAGE_SIDE,
                          .format = VKVIT_PIXEL_RGBA8};
        r = vkvit_session_set_images(s, 0, &im, 1);
        const char *name = vkvit_result_name(r);
        CHECK(r != VKVIT_OK && strstr(vkvit_last_error(), "maxStorageBufferRange"), "16384x16384: %s: %s", name,
              vkvit_last_error());
        /* the comment block just above the declaration */
        uint8_t *h = NULL;
        size_t n = 0;
        char doc[8192] = "";
        FILE *f = fopen(VKVIT_SOURCE_DIR "/include/vkvit.h", "rb");
        if (f) {
            h = malloc(1 << 20);
            n = fread(h, 1, (1 << 20) - 1, f);
            h[n] = '\0';
            fclose(f);
            const char *decl = strstr((const char *)h, "VKVIT_API vkvit_result vkvit_session_set_images(");
            const char *end = decl ? decl : (const char *)h, *begin = end;
            while (begin > (const char *)h && strncmp(begin, "/*", 2)) begin--;
            snprintf(doc, sizeof doc, "%.*s", (int)(end - begin), begin);
        }
        char want[128];
        snprintf(want, sizeof want, "%s (", name);
        const char *at = strstr(doc, want), *close = at ? strchr(at, ')') : NULL;
        const char *limit = at ? strstr(at, "maxStorageBufferRange") : NULL;
        CHECK(at && limit && limit < close, "include/vkvit.h: vkvit_session_set_images' errors do not list %s for an "
              "image above the device's maxStorageBufferRange:\n%s", name, doc);
        free(h);
    }
    vkvit_session_destroy(s);
    vkvit_model_destroy(model);
    uint32_t messages = vkvit_ctx_validation_messages(ctx, 0);
    CHECK(messages == 0, "%u validation message(s) from the image limit check", messages);
    vkvit_ctx_destroy(ctx);
}

/* vkvit_describe_model: the JSON inspect prints, without a device; every label; the tensor table; errors. */
static void describe(void) {
    char *json = (char *)"untouched";
    vkvit_result r = vkvit_describe_model(&(vkvit_model_desc){.path = MODELS "vit5_nvsubq_cls_r4.vkvit"}, &json);
    CHECK(r == VKVIT_OK && json && strstr(json, "\"architecture\":\t\"vit5\"") && strstr(json, "\"class_9\"") &&
          strstr(json, "\"params\":\t") && strstr(json, "\"list\":\t[") && strstr(json, "\"out_proj.weight\""),
          "vkvit_describe_model: %d\n%.400s", r, json ? json : "(null)");
    vkvit_free(json);
    json = (char *)"untouched";
    r = vkvit_describe_model(&(vkvit_model_desc){.path = VKVIT_SOURCE_DIR "/assets/images/cat.png"}, &json);
    CHECK(r == VKVIT_ERROR_BAD_MODEL_FILE && json == NULL && vkvit_last_error()[0],
          "vkvit_describe_model on a PNG: %d, %s", r, vkvit_last_error());
    r = vkvit_describe_model(NULL, &json);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && json == NULL, "vkvit_describe_model(NULL): %d", r);
    r = vkvit_describe_model(&(vkvit_model_desc){.path = MODELS "vil_seed.vkvit"}, NULL);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_describe_model(json_out NULL): %d", r);
    r = vkvit_describe_model(&(vkvit_model_desc){0}, &json);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && json == NULL &&
              strstr(vkvit_last_error(), "vkvit_describe_model: neither"),
          "vkvit_describe_model(no path, no data): %d %s", r, vkvit_last_error());
    vkvit_free(NULL);
}

/* vkvit_describe_model_ex: flags 0 is vkvit_describe_model's document byte for byte; VKVIT_DESCRIBE_SUMMARY adds
 * "summary" and nothing else: the architecture's lines (first "architecture", naming the document's architecture;
 * ASCII text) and per-block FLOP terms that name members of "flops_breakdown"; unknown flags are refused. One model
 * of each architecture. */
static void describe_summary(void) {
    static const char *const files[] = {"vit5_nvsubq_regconcat_r9", "vil_nxai", "resnet_all_swiglu_tc3_rope_qkn_causal"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[512];
        snprintf(path, sizeof path, MODELS "%s.vkvit", files[f]);
        const vkvit_model_desc desc = {.path = path};
        char *plain = (char *)"untouched", *same = (char *)"untouched", *with = (char *)"untouched";
        vkvit_result r0 = vkvit_describe_model(&desc, &plain), r1 = vkvit_describe_model_ex(&desc, 0, &same);
        vkvit_result r2 = vkvit_describe_model_ex(&desc, VKVIT_DESCRIBE_SUMMARY, &with);
        CHECK(r0 == VKVIT_OK && r1 == VKVIT_OK && r2 == VKVIT_OK, "%s: describe %d, _ex(0) %d, _ex(SUMMARY) %d: %s",
              files[f], r0, r1, r2, vkvit_last_error());
        if (r0 != VKVIT_OK || r1 != VKVIT_OK || r2 != VKVIT_OK) continue;
        CHECK(!strcmp(plain, same), "%s: vkvit_describe_model_ex(0) differs from vkvit_describe_model", files[f]);
        cJSON *a = cJSON_Parse(plain), *b = cJSON_Parse(with);
        cJSON *sum = b ? cJSON_DetachItemFromObjectCaseSensitive(b, "summary") : NULL;
        CHECK(a && b && sum && cJSON_Compare(a, b, 1), "%s: the document with the summary, less it, is not the plain "
              "one", files[f]);
        const cJSON *lines = cJSON_GetObjectItemCaseSensitive(sum, "lines");
        const cJSON *first = cJSON_GetArrayItem(lines, 0);
        const char *arch = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "architecture"));
        const char *text0 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(first, "text"));
        CHECK(cJSON_GetArraySize(lines) >= 4 && arch && text0 && !strncmp(text0, arch, strlen(arch)) &&
                  !strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(first, "key")), "architecture"),
              "%s: summary.lines: %d lines, the first %s", files[f], cJSON_GetArraySize(lines), text0 ? text0 : "-");
        const cJSON *line;
        cJSON_ArrayForEach(line, lines) {
            const char *key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(line, "key"));
            const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(line, "text"));
            bool ascii = key && text && text[0];
            for (const char *c = text; ascii && *c; c++) ascii = *c >= 0x20 && *c < 0x7f;
            CHECK(ascii && strlen(key) < 15, "%s: summary line key %s text %s", files[f], key ? key : "-",
                  text ? text : "-");
        }
        const cJSON *terms = cJSON_GetObjectItemCaseSensitive(sum, "flops_per_block"), *term;
        const cJSON *fb = cJSON_GetObjectItemCaseSensitive(a, "flops_breakdown");
        CHECK(cJSON_GetArraySize(terms) >= 1, "%s: no per-block FLOP terms", files[f]);
        cJSON_ArrayForEach(term, terms) {
            const char *key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(term, "key"));
            const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(term, "name"));
            CHECK(key && name && name[0] && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(fb, key)),
                  "%s: FLOP term %s names no member of flops_breakdown", files[f], key ? key : "-");
        }
        cJSON_Delete(sum);
        cJSON_Delete(a);
        cJSON_Delete(b);
        vkvit_free(plain);
        vkvit_free(same);
        vkvit_free(with);
    }
    char *json = (char *)"untouched";
    vkvit_result r = vkvit_describe_model_ex(&(vkvit_model_desc){.path = MODELS "vil_seed.vkvit"}, 2, &json);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && json == NULL && strstr(vkvit_last_error(), "flags"),
          "vkvit_describe_model_ex(flags 2): %d %s", r, vkvit_last_error());
}

int main(void) {
    static char out[1 << 16];
    int rc;

    rc = run(CLI " --help", out, sizeof out);
    CHECK(rc == 0 && strstr(out, "info") && strstr(out, "exit codes"), "--help: rc %d\n%s", rc, out);
    rc = run(CLI, out, sizeof out);
    CHECK(rc == 1, "no command: rc %d", rc);
    rc = run(CLI " frobnicate", out, sizeof out);
    CHECK(rc == 1 && strstr(out, "unknown command 'frobnicate'"), "unknown command: rc %d\n%s", rc, out);

    describe();
    describe_summary();

    rc = run(CLI " info", out, sizeof out);
    if (rc == 3) {
        printf("SKIP: no Vulkan device: %s\n", out);
        return 77;
    }
    CHECK(rc == 0 && strstr(out, "device 0:") && strstr(out, "fp16 storage") && strstr(out, "workarounds"),
          "info: rc %d\n%s", rc, out);
    if (strstr(out, "llvmpipe")) CHECK(strstr(out, "cpu-device") != NULL, "llvmpipe quirk not listed:\n%s", out);
    rc = run(CLI " info --help", out, sizeof out);
    CHECK(rc == 0 && strstr(out, "usage: vkvit info"), "info --help: rc %d", rc);

    /* No driver: the loader finds no ICD. One sentence, exit code 3, no crash. */
    rc = run("VK_ICD_FILENAMES=/nonexistent/icd.json VK_DRIVER_FILES=/nonexistent/icd.json " CLI " info", out,
             sizeof out);
    CHECK(rc == 3 && strstr(out, "no Vulkan device"), "info without a driver: rc %d\n%s", rc, out);
    rc = run("VK_ICD_FILENAMES=/nonexistent/icd.json VK_DRIVER_FILES=/nonexistent/icd.json " CLI
             " bench gemm --shape 8x8x8 --repeat 1", out, sizeof out);
    CHECK(rc == 3 && strstr(out, "vkvit bench gemm: ") && strstr(out, "no Vulkan device"),
          "bench gemm without a driver: rc %d\n%s", rc, out);

    rc = run(CLI " bench gemm --shape 0x4x4", out, sizeof out);
    CHECK(rc == 1 && strstr(out, "--shape"), "bad shape: rc %d\n%s", rc, out);
    rc = run(CLI " bench gemm --shape 70000x4x4", out, sizeof out);
    CHECK(rc == 1, "absurd shape: rc %d\n%s", rc, out);
    rc = run(CLI " bench gemm --help", out, sizeof out);
    CHECK(rc == 0 && strstr(out, "--repeat") && strstr(out, "default"), "bench --help: rc %d", rc);
    rc = run("VKVIT_VALIDATION=1 " CLI " bench gemm --shape 33x17x9 --repeat 2 --warmup 1 --json", out, sizeof out);
    CHECK(rc == 0 && strstr(out, "\"gflops\"") && !strstr(out, "warning") && !strstr(out, "error"),
          "bench gemm: rc %d\n%s", rc, out);

    run_resnet(out, sizeof out);
    bad_driver_manifests(out, sizeof out);
    set_images_limit_documented();

    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
