/* The vkvit CLI as a user meets it: exit codes, help texts, `info` on this machine, and a clear sentence (not a
 * crash) when no Vulkan driver can be found; `vkvit run` on a conditioned resnet golden (input + condition from
 * the golden's io file, logits against PyTorch). Runs the built binary with popen(). Also vkvit_describe_model, the
 * public API behind `vkvit inspect`. */
#include "golden_util.h"
#include "test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#define CLI VKVIT_BINARY_DIR "/vkvit"

/* Runs `cmd` (stderr folded into stdout), returns its exit status, stores up to cap-1 bytes of output. */
static int run(const char *cmd, char *out, size_t cap) {
    char full[2048];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
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

    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
