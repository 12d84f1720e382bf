/* The vkvit CLI as a user meets it: exit codes, help texts, `info` on this machine, and a clear sentence (not a
 * crash) when no Vulkan driver can be found. Runs the built binary with popen(). */
#include "test_util.h"

#include <sys/wait.h>

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

int main(void) {
    static char out[1 << 16];
    int rc;

    rc = run(CLI " --help", out, sizeof out);
    CHECK(rc == 0 && strstr(out, "info") && strstr(out, "exit codes"), "--help: rc %d\n%s", rc, out);
    rc = run(CLI, out, sizeof out);
    CHECK(rc == 1, "no command: rc %d", rc);
    rc = run(CLI " frobnicate", out, sizeof out);
    CHECK(rc == 1 && strstr(out, "unknown command 'frobnicate'"), "unknown command: rc %d\n%s", rc, out);

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
    CHECK(rc == 3 && strstr(out, "vkvit bench:"), "bench without a driver: rc %d\n%s", rc, out);

    rc = run(CLI " bench gemm --shape 0x4x4", out, sizeof out);
    CHECK(rc == 1 && strstr(out, "--shape"), "bad shape: rc %d\n%s", rc, out);
    rc = run(CLI " bench gemm --shape 70000x4x4", out, sizeof out);
    CHECK(rc == 1, "absurd shape: rc %d\n%s", rc, out);
    rc = run(CLI " bench gemm --help", out, sizeof out);
    CHECK(rc == 0 && strstr(out, "--repeat") && strstr(out, "default"), "bench --help: rc %d", rc);
    rc = run("VKVIT_VALIDATION=1 " CLI " bench gemm --shape 33x17x9 --repeat 2 --warmup 1 --json", out, sizeof out);
    CHECK(rc == 0 && strstr(out, "\"gflops\"") && !strstr(out, "warning") && !strstr(out, "error"),
          "bench gemm: rc %d\n%s", rc, out);

    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
