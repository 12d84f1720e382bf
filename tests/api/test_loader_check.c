// SPDX-License-Identifier: Apache-2.0
/* Driver manifests the Vulkan loader cannot use, named by VK_DRIVER_FILES / VK_ICD_FILENAMES / VK_ADD_DRIVER_FILES
 * (src/vk/loader_check.h): vkvit_ctx_create and vkvit_enumerate_devices refuse them with VKVIT_ERROR_NO_DEVICE and
 * one sentence naming the file, the variable and what is wrong, before the loader reads them. Debian 12's loader
 * (1.3.239) answers text that is not JSON with VK_ERROR_OUT_OF_HOST_MEMORY, crashes on a JSON array and aborts on a
 * number as library_path, so each case runs in a child process: a loader that crashes fails that case and the test
 * goes on. Also: a folder of manifests with one broken (non-.json files in it are not manifests), a list with a good
 * and a broken entry, VK_ICD_FILENAMES ignored while VK_DRIVER_FILES is set (as the loader does), a missing entry
 * left to the loader, a good manifest (lavapipe's, when installed) still giving a ctx, and adopt mode never looking
 * at them (the instance is the host's). Needs a Vulkan loader and device (exit 77 = skipped without one). */
#include "host_util.h"

#include <glob.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[64];      /* the test's temporary folder */
static char g_good[512];    /* lavapipe's manifest, "" when not installed */

static const char *const VARS[] = {"VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES"};

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "FATAL: cannot write %s\n", path);
        exit(1);
    }
}

/* One case: the three variables as given (NULL = unset). want_ok: a ctx must be created; else VKVIT_ERROR_NO_DEVICE
 * from both calls, with every string of `want` (up to 3) in the sentence, or none of `unwanted` when want is empty. */
typedef struct {
    const char *name;
    const char *env[3];
    int want_ok;
    const char *want[3];
} manifest_case;

/* Runs in the child: returns the number of failed checks. */
static int child_checks(const manifest_case *c) {
    vt_failed = 0; /* the parent's count came along with fork */
    for (int v = 0; v < 3; v++) {
        if (c->env[v]) setenv(VARS[v], c->env[v], 1);
        else unsetenv(VARS[v]);
    }
    vkvit_ctx *ctx = (vkvit_ctx *)1;
    vkvit_result r = vkvit_ctx_create(&(vkvit_ctx_desc){.label = c->name, .validation = -1, .pipeline_cache_dir = ""},
                                      &ctx);
    char sentence[1024];
    snprintf(sentence, sizeof sentence, "%s", vkvit_last_error());
    if (c->want_ok) {
        CHECK(r == VKVIT_OK && ctx, "%s: vkvit_ctx_create: %s: %s", c->name, vkvit_result_name(r), sentence);
        if (r == VKVIT_OK) vkvit_ctx_destroy(ctx);
        uint32_t n = 0;
        r = vkvit_enumerate_devices(NULL, 0, &n);
        CHECK(r == VKVIT_OK && n > 0, "%s: vkvit_enumerate_devices: %s, %u devices: %s", c->name,
              vkvit_result_name(r), n, vkvit_last_error());
        return vt_failed;
    }
    CHECK(r == VKVIT_ERROR_NO_DEVICE && ctx == NULL, "%s: vkvit_ctx_create: %s: %s", c->name, vkvit_result_name(r),
          sentence);
    for (int i = 0; i < 3 && c->want[i]; i++)
        CHECK(strstr(sentence, c->want[i]) != NULL, "%s: the sentence lacks \"%s\": %s", c->name, c->want[i],
              sentence);
    if (!c->want[0]) /* left to the loader: not called a broken manifest */
        CHECK(strstr(sentence, "not a Vulkan driver manifest") == NULL, "%s: %s", c->name, sentence);
    uint32_t n = 7;
    r = vkvit_enumerate_devices(NULL, 0, &n);
    const char *e = vkvit_last_error();
    CHECK(r == VKVIT_ERROR_NO_DEVICE && n == 0 && (!c->want[0] || (e[0] && strstr(sentence, e))), /* same reason */
          "%s: vkvit_enumerate_devices: %s, %u devices: %s", c->name, vkvit_result_name(r), n, e);
    return vt_failed;
}

static void run_case(const manifest_case *c) {
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        _exit(child_checks(c) ? 1 : 0);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "%s: fork/waitpid", c->name);
    if (WIFSIGNALED(status))
        CHECK(0, "%s: the process died of signal %d (%s)", c->name, WTERMSIG(status), strsignal(WTERMSIG(status)));
    else CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: failed checks above", c->name);
    fprintf(stderr, "%s %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok  " : "FAIL", c->name);
}

/* Adopt mode: the host made its instance; a broken manifest named afterwards is not vkvit's to refuse. */
static void adopt_mode_does_not_look(const char *broken) {
    host h;
    host_create(&h);
    setenv("VK_DRIVER_FILES", broken, 1);
    vkvit_ctx *ctx = host_adopt(&h, "adopted despite a broken VK_DRIVER_FILES");
    CHECK(ctx != NULL, "adopt mode refused: %s", vkvit_last_error());
    vkvit_ctx_destroy(ctx);
    unsetenv("VK_DRIVER_FILES");
    host_destroy(&h);
    CHECK(host_messages == 0, "%u host validation messages", host_messages);
    fprintf(stderr, "ok   adopt mode\n");
}

int main(void) {
    for (int v = 0; v < 3; v++) unsetenv(VARS[v]);
    vkvit_ctx_destroy(vt_ctx_with((vkvit_ctx_desc){.validation = -1})); /* exits 77 without a device */
    glob_t g;
    if (glob("/usr/share/vulkan/icd.d/lvp_icd*.json", 0, NULL, &g) == 0 && g.gl_pathc > 0)
        snprintf(g_good, sizeof g_good, "%s", g.gl_pathv[0]);
    globfree(&g);
    snprintf(g_dir, sizeof g_dir, "/tmp/vkvit_test_loader_XXXXXX");
    if (!mkdtemp(g_dir)) {
        fprintf(stderr, "FATAL: mkdtemp\n");
        return 1;
    }
    char garbage[128], array[128], number[128], folder[128], in_folder[192], notes[192], good_copy[192], list[1024];
    snprintf(garbage, sizeof garbage, "%s/garbage.json", g_dir);
    snprintf(array, sizeof array, "%s/array.json", g_dir);
    snprintf(number, sizeof number, "%s/number.json", g_dir);
    snprintf(folder, sizeof folder, "%s/icd.d", g_dir);
    snprintf(in_folder, sizeof in_folder, "%s/broken.json", folder);
    snprintf(notes, sizeof notes, "%s/notes.txt", folder);
    write_file(garbage, "{garbage\x01\x02\xff");
    write_file(array, "[1, 2]");
    write_file(number, "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": 7}}");
    mkdir(folder, 0700);
    write_file(in_folder, "{\"file_format_version\": 1, \"ICD\": {\"library_path\": \"libnothing.so\"}}");
    write_file(notes, "[not a manifest: no .json]");
    snprintf(list, sizeof list, "%s:%s", g_good[0] ? g_good : "/nonexistent/icd.json", array);

    const manifest_case cases[] = {
        {"garbage text", {garbage, garbage, NULL}, 0,
         {garbage, "(from VK_DRIVER_FILES) is not a Vulkan driver manifest: it is not JSON", NULL}},
        {"a JSON array", {array, array, NULL}, 0,
         {array, "(from VK_DRIVER_FILES) is not a Vulkan driver manifest: it is JSON, but not an object", NULL}},
        {"a number as library_path", {number, number, NULL}, 0,
         {number, "(from VK_DRIVER_FILES)", "its \"ICD\".\"library_path\" is not a string"}},
        {"VK_ICD_FILENAMES alone", {NULL, number, NULL}, 0, {number, "(from VK_ICD_FILENAMES)", NULL}},
        {"VK_ADD_DRIVER_FILES", {NULL, NULL, garbage}, 0, {garbage, "(from VK_ADD_DRIVER_FILES)", "not JSON"}},
        {"a folder with one broken manifest", {folder, NULL, NULL}, 0,
         {in_folder, "(from VK_DRIVER_FILES)", "its \"file_format_version\" is not a string"}},
        {"a list whose second entry is broken", {list, NULL, NULL}, 0, {array, "not an object", NULL}},
        {"a missing manifest, left to the loader", {"/nonexistent/icd.json", NULL, NULL}, 0, {NULL}},
    };
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases); i++) run_case(&cases[i]);
    if (g_good[0]) {
        /* The loader reads VK_ICD_FILENAMES only without VK_DRIVER_FILES: a broken one beside a good one is
         * ignored, as is a file in a manifest folder that is not *.json. */
        unlink(in_folder);
        snprintf(good_copy, sizeof good_copy, "%s/lvp.json", folder);
        uint8_t *text = NULL;
        size_t n = 0;
        MUST(vkvit__read_file(g_good, 1 << 20, &text, &n));
        FILE *f = fopen(good_copy, "wb");
        CHECK(f && fwrite(text, 1, n, f) == n && fclose(f) == 0, "cannot copy %s", g_good);
        free(text);
        const manifest_case good[] = {
            {"lavapipe's manifest", {g_good, g_good, NULL}, 1, {NULL}},
            {"VK_ICD_FILENAMES broken beside a good VK_DRIVER_FILES", {g_good, array, NULL}, 1, {NULL}},
            {"a folder of a good manifest and a file that is not *.json", {folder, NULL, NULL}, 1, {NULL}},
        };
        for (size_t i = 0; i < VKVIT_ARRAY_LEN(good); i++) run_case(&good[i]);
        unlink(good_copy);
    } else {
        fprintf(stderr, "skipping the good-manifest cases: no /usr/share/vulkan/icd.d/lvp_icd*.json\n");
    }
    adopt_mode_does_not_look(array);
    unlink(garbage), unlink(array), unlink(number), unlink(in_folder), unlink(notes);
    rmdir(folder);
    rmdir(g_dir);
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
