// SPDX-License-Identifier: Apache-2.0
/* The first-use self-check's verdicts on disk (src/self_check.c, self_check.h "Verdicts on disk"), each ctx on a
 * fresh temporary cache folder:
 *   1. the first ctx runs the problems and writes self-check-<device>.txt beside its pipeline cache;
 *   2. a second ctx on the same folder runs none: it takes every verdict (its log line says so) and its policy is
 *      the first one's;
 *   3. a verdict that says a variant failed (the file edited, key kept) switches that variant off in the next ctx,
 *      with the sentence naming the file, one warning, and the golden ViT-5's fp32 logits still PyTorch's (max rel
 *      err <= 1e-4, the output poisoned with NaN first);
 *   4. a file whose key differs, or damaged ones (garbage, truncated, a problem out of range, a failed variant that
 *      did not run, the same problem twice, trailing text), is ignored: the problems run again and the file is
 *      rewritten with this ctx's key;
 *   5. with the test hook self_check_corrupt set, a file that says "passed" is not taken: the problem runs and the
 *      corrupted variant is switched off;
 *   6. a folder that cannot be written (a regular file in its place) costs the verdicts, not the session.
 * Needs a Vulkan device (exit 77 = skipped without one); validation on and silent. */
#define _POSIX_C_SOURCE 200809L
#include "golden_util.h"
#include "self_check.h"
#include "test_util.h"

#include <dirent.h>
#include <unistd.h>

#define MODEL VKVIT_SOURCE_DIR "/tests/golden/models/vit5_nvsubq_cls_r4"

static int warnings, runs_lines, taken_lines;

static void log_fn(void *user, int level, const char *msg) {
    if (level == VKVIT_LOG_WARNING && strstr(msg, "failed its self-check")) warnings++;
    if (strstr(msg, "first-use self-check")) {
        if (strstr(msg, "taken from")) taken_lines++;
        else runs_lines++;
        printf("  %s\n", msg);
    }
    if (level != VKVIT_LOG_INFO) vt_log(user, level, msg);
}

/* The verdict file in dir (the one file named self-check-*), into path; false when there is none. */
static bool verdict_file(const char *dir, char *path, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));)
        if (!strncmp(e->d_name, "self-check-", 11)) found = snprintf(path, cap, "%s/%s", dir, e->d_name) < (int)cap;
    closedir(d);
    return found;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "FATAL: cannot write %s\n", path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/* A ctx on the cache folder `dir` and one fp32 session of the golden (the session that runs the fp32 problems);
 * returns the ctx (its model destroyed) and, in *err, the golden's max rel error when err is not NULL. */
static vkvit_ctx *ctx_and_session(const char *dir, uint32_t corrupt, double *err) {
    warnings = runs_lines = taken_lines = 0;
    vkvit_ctx *ctx = vt_ctx_with((vkvit_ctx_desc){.log = log_fn, .pipeline_cache_dir = dir});
    ctx->test_hooks.self_check_corrupt = corrupt;
    vkvit_model *m = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODEL ".vkvit"}, &m));
    vt_golden io;
    vt_golden_open(MODEL ".io.safetensors", &io);
    size_t n_in = 0, n_out = 0;
    float *input = vt_golden_f32_req(&io, "input", &n_in), *want = vt_golden_f32_req(&io, "logits", &n_out);
    const uint32_t batch = (uint32_t)vt_golden_shape(&io, "input")->shape[0];
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(m, &(vkvit_session_desc){.batch = batch, .label = "golden"}, &s));
    float *got = malloc(n_out * sizeof *got);
    double *ref = malloc(n_out * sizeof *ref);
    for (size_t i = 0; i < n_out; i++) got[i] = NAN, ref[i] = want[i];
    MUST(vkvit_session_set_input(s, input, n_in));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, got, n_out));
    if (err) *err = vt_max_rel_err(got, ref, n_out, NULL);
    vkvit_session_destroy(s);
    vkvit_model_destroy(m);
    free(got);
    free(ref);
    free(input);
    free(want);
    vt_golden_close(&io);
    return ctx;
}

static void end_ctx(vkvit_ctx *ctx) {
    const uint32_t n = vkvit_ctx_validation_messages(ctx, 0);
    CHECK(n == 0, "%u validation message(s); first: %s", n, n ? ctx->validation_log[0] : "");
    ctx->test_hooks.self_check_corrupt = 0;
    vkvit_ctx_destroy(ctx);
}

/* The first "problem" line of `text` whose running mask holds `variant`, rewritten as failing it; false when none. */
static bool fail_variant(char *text, uint32_t variant) {
    for (char *line = strstr(text, "problem "); line; line = strstr(line + 1, "problem ")) {
        unsigned c, running, failed;
        if (sscanf(line, "problem %u running %x failed %x", &c, &running, &failed) != 3 || !(running & variant))
            continue;
        char *end = strchr(line, '\n');
        char rest[4096];
        snprintf(rest, sizeof rest, "%s", end ? end : "");
        sprintf(line, "problem %u running %x failed %x%s", c, running, variant, rest);
        return true;
    }
    return false;
}

int main(void) {
    unsetenv("VKVIT_DISABLE_SUBGROUP");
    unsetenv("VKVIT_DISABLE_TEXEL");
    unsetenv("VKVIT_DEVICE_PROFILE");
    char dir[] = "/tmp/vkvit-verdicts-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "FATAL: mkdtemp\n");
        return 1;
    }
    char path[1200];

    printf("1. the first ctx runs the problems and keeps the verdicts\n");
    vkvit_ctx *ctx = ctx_and_session(dir, 0, NULL);
    const vkvit__policy first = ctx->policy;
    end_ctx(ctx);
    CHECK(runs_lines == 1 && taken_lines == 0, "first ctx: %d run line(s), %d taken", runs_lines, taken_lines);
    if (!verdict_file(dir, path, sizeof path)) {
        printf("SKIP the rest: no self-check problem runs on this device (no variant in use)\n");
        return vt_finish(NULL);
    }
    char *kept = read_text(path);
    CHECK(kept && strstr(kept, "\nkey ") && strstr(kept, "problem "), "verdict file: %s", kept ? kept : "(none)");
    printf("  %s:\n%s", path, kept);

    printf("2. a second ctx takes them and runs none\n");
    ctx = ctx_and_session(dir, 0, NULL);
    CHECK(runs_lines == 0 && taken_lines == 1, "second ctx: %d run line(s), %d taken", runs_lines, taken_lines);
    CHECK(ctx->policy.texel_reads == first.texel_reads && ctx->policy.gemm_cpu == first.gemm_cpu &&
          ctx->policy.subgroup_reductions == first.subgroup_reductions && ctx->policy.self_check_failed == 0,
          "the second ctx's policy differs from the first's");
    end_ctx(ctx);

    printf("3. a kept failure switches its variant off\n");
    const uint32_t victims[] = {VKVIT_SELF_CHECK_TEXEL_READS, VKVIT_SELF_CHECK_SUBGROUP_REDUCTIONS,
                                VKVIT_SELF_CHECK_SUBGROUP_ATTENTION};
    uint32_t victim = 0;
    char *edited = NULL;
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(victims) && !victim; i++) {
        free(edited);
        edited = read_text(path);
        if (fail_variant(edited, victims[i])) victim = victims[i];
    }
    if (victim) {
        write_text(path, edited);
        double err = 1;
        ctx = ctx_and_session(dir, 0, &err);
        vkvit_device_info info;
        MUST(vkvit_ctx_device_info(ctx, &info));
        printf("  workarounds: %s\n", info.workarounds);
        CHECK(ctx->policy.self_check_failed == victim, "failed variants %#x, want %#x", ctx->policy.self_check_failed,
              victim);
        CHECK(strstr(info.workarounds, "the verdict kept in") && strstr(info.workarounds, path),
              "the sentence does not name the file: %s", info.workarounds);
        CHECK(warnings == 1 && runs_lines == 0, "%d warning(s), %d run line(s)", warnings, runs_lines);
        CHECK(err <= 1e-4, "golden logits after the kept fallback: max rel err %.3g", err);
        end_ctx(ctx);
    } else {
        printf("  SKIP: no problem here runs texel reads, subgroup reductions or the subgroup attention\n");
    }
    free(edited);

    printf("4. foreign and damaged files are ignored and rewritten\n");
    char *key_line = strstr(kept, "\nkey ");
    const char *damaged[] = {
        "", "garbage\n", "vkvit first-use self-check verdicts 1\n",
        "vkvit first-use self-check verdicts 1\nkey 0123456789abcdef\nproblem 0 running 6 failed 0\n",
        NULL, NULL, NULL, NULL, NULL,
    };
    char variants[5][600];
    const char *tails[] = {"problem 99 running 2 failed 0\n", "problem 0 running 2 failed 4\n",
                           "problem 1 running 1 failed 0\nproblem 1 running 1 failed 0\n",
                           "problem 0 running 2 failed 0 and more\n", "problem 0 running"};
    for (int i = 0; i < 5; i++) {
        /* the right magic and key, then one bad line */
        const char *nl = strchr(key_line + 1, '\n');
        snprintf(variants[i], sizeof variants[i], "%.*s%s", (int)(nl - kept + 1), kept, tails[i]);
        damaged[4 + i] = variants[i];
    }
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(damaged); i++) {
        write_text(path, damaged[i]);
        ctx = ctx_and_session(dir, 0, NULL);
        CHECK(runs_lines == 1 && taken_lines == 0 && ctx->policy.self_check_failed == 0,
              "damaged file %zu: %d run line(s), %d taken, failed %#x", i, runs_lines, taken_lines,
              ctx->policy.self_check_failed);
        end_ctx(ctx);
        char *now = read_text(path);
        CHECK(now && !strcmp(now, kept), "damaged file %zu not rewritten as the first ctx wrote it: %s", i,
              now ? now : "(none)");
        free(now);
    }

    printf("5. the corruption hook never takes a kept pass\n");
    write_text(path, kept);
    const uint32_t corrupt = first.texel_reads ? VKVIT_SELF_CHECK_TEXEL_READS : VKVIT_SELF_CHECK_SUBGROUP_REDUCTIONS;
    ctx = ctx_and_session(dir, corrupt, NULL);
    CHECK(runs_lines == 1 && taken_lines == 0 && (ctx->policy.self_check_failed & corrupt),
          "with the hook: %d run line(s), %d taken, failed %#x", runs_lines, taken_lines,
          ctx->policy.self_check_failed);
    end_ctx(ctx);
    char *after = read_text(path);
    CHECK(after && !strcmp(after, kept), "the hook's run changed the kept file: %s", after ? after : "(none)");
    free(after);

    printf("6. an unwritable folder costs the verdicts, not the session\n");
    char blocked[1300];
    snprintf(blocked, sizeof blocked, "%s/not-a-folder", dir);
    write_text(blocked, "a file where the cache folder would be\n");
    char sub[1400];
    snprintf(sub, sizeof sub, "%s/cache", blocked);
    ctx = ctx_and_session(sub, 0, NULL);
    CHECK(runs_lines == 1, "unwritable folder: %d run line(s)", runs_lines);
    end_ctx(ctx);
    unlink(blocked);

    free(kept);
    /* the temporary folder: the verdicts and the pipeline cache */
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char f[1300];
        snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
        unlink(f);
    }
    if (d) closedir(d);
    rmdir(dir);
    return vt_finish(NULL);
}
