// SPDX-License-Identifier: Apache-2.0
/* Memory heaps and budgets (VK_EXT_memory_budget; include/vkvit.h vkvit_ctx_memory_heaps, src/vk/memory.c):
 *   - vkvit_ctx_memory_heaps agrees with the ctx's device info: the same heap count, sizes and device-local flags;
 *     every budget at most its heap's size; without the extension budget = size and usage = 0;
 *   - with the extension (where the device lists it): creating a session of a golden model (tests/golden/models/
 *     vil_seed.vkvit) at a batch drawn from a printed seed grows the usage of heap the arena lives on by about the
 *     session's bytes (weights + arena, at least those and at most those + 16 MiB + 25 % for staging and
 *     alignment), and destroying it gives the arena back; without the extension this part says SKIP and the rest
 *     still runs;
 *   - the budget refusal: with every heap's budget cut to 64 KiB (the test hook heap_budget: what a nearly full
 *     device reports) session creation fails with VKVIT_ERROR_OUT_OF_DEVICE_MEMORY and a sentence that names the
 *     buffer and the figures (needs, left of its budget, budget, in use, heap size); with a budget of the
 *     session's bytes plus headroom it succeeds, and its logits are finite.
 * Needs a Vulkan device (exit 77 = skipped without one); validation on and silent. */
#include "test_util.h"

#include <time.h>

#define MODEL VKVIT_SOURCE_DIR "/tests/golden/models/vil_seed.vkvit"

static uint64_t heap_usage(vkvit_ctx *ctx, uint32_t heap) {
    vkvit_memory_heap h[VKVIT_MAX_MEMORY_HEAPS];
    uint32_t n = 0;
    MUST(vkvit_ctx_memory_heaps(ctx, h, VKVIT_MAX_MEMORY_HEAPS, &n, NULL));
    return heap < n ? h[heap].usage : 0;
}

/* The device-local heap the arena goes to: the largest device-local one (memory.c's first choice). */
static uint32_t arena_heap(const vkvit_device_info *info) {
    uint32_t best = 0;
    for (uint32_t h = 0; h < info->memory_heap_count; h++)
        if (info->memory_heaps[h].device_local && info->memory_heaps[h].size > info->memory_heaps[best].size) best = h;
    return best;
}

static int run_finite(vkvit_session *s) {
    vkvit_shape in = vkvit_session_input_shape(s), out = vkvit_session_output_shape(s);
    size_t n_in = 1, n_out = 1;
    for (uint32_t i = 0; i < in.ndim; i++) n_in *= in.dims[i];
    for (uint32_t i = 0; i < out.ndim; i++) n_out *= out.dims[i];
    float *x = malloc(n_in * sizeof *x), *y = malloc(n_out * sizeof *y);
    vt_fill_rand(x, n_in);
    for (size_t i = 0; i < n_out; i++) y[i] = NAN;
    MUST(vkvit_session_set_input(s, x, n_in));
    MUST(vkvit_session_run(s));
    MUST(vkvit_session_get_output(s, y, n_out));
    int finite = 1;
    for (size_t i = 0; i < n_out; i++) finite &= isfinite(y[i]) != 0;
    free(x);
    free(y);
    return finite;
}

int main(void) {
    const char *seed_env = getenv("VKVIT_TEST_SEED");
    const uint32_t seed = seed_env ? (uint32_t)strtoul(seed_env, NULL, 10) : (uint32_t)time(NULL);
    printf("seed %u (VKVIT_TEST_SEED reruns it)\n", seed);
    vt_rng_state = seed;
    vkvit_ctx *ctx = vt_ctx();
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));

    /* The heaps: the live figures agree with the ctx's snapshot. */
    vkvit_memory_heap heaps[VKVIT_MAX_MEMORY_HEAPS];
    uint32_t n = 0;
    int reported = -1;
    MUST(vkvit_ctx_memory_heaps(ctx, heaps, VKVIT_MAX_MEMORY_HEAPS, &n, &reported));
    printf("VK_EXT_memory_budget %s, %u heap(s)\n", reported ? "enabled" : "absent", n);
    CHECK(n >= 1 && n == info.memory_heap_count, "%u heaps, device info %u", n, info.memory_heap_count);
    CHECK(reported == info.memory_budget, "budget_reported %d, info.memory_budget %d", reported, info.memory_budget);
    for (uint32_t h = 0; h < n && h < info.memory_heap_count; h++) {
        printf("  heap %u: %llu bytes%s, budget %llu, usage %llu\n", h, (unsigned long long)heaps[h].size,
               heaps[h].device_local ? " device-local" : "", (unsigned long long)heaps[h].budget,
               (unsigned long long)heaps[h].usage);
        CHECK(heaps[h].size == info.memory_heaps[h].size && heaps[h].device_local == info.memory_heaps[h].device_local,
              "heap %u differs from the device info", h);
        CHECK(heaps[h].budget <= heaps[h].size, "heap %u: budget %llu above its size %llu", h,
              (unsigned long long)heaps[h].budget, (unsigned long long)heaps[h].size);
        if (!reported)
            CHECK(heaps[h].budget == heaps[h].size && heaps[h].usage == 0, "heap %u without the extension: budget "
                  "%llu, usage %llu", h, (unsigned long long)heaps[h].budget, (unsigned long long)heaps[h].usage);
    }
    uint32_t count_only = 0;
    MUST(vkvit_ctx_memory_heaps(ctx, NULL, 0, &count_only, NULL));
    CHECK(count_only == n, "count-only query: %u, want %u", count_only, n);
    CHECK(vkvit_ctx_memory_heaps(ctx, heaps, 1, NULL, NULL) == VKVIT_ERROR_INVALID_ARGUMENT, "NULL count accepted");

    vkvit_model *m = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODEL}, &m));
    const uint32_t batch = 1 + vt_rand_u32() % 8, heap = arena_heap(&info);
    printf("batch %u, arena heap %u\n", batch, heap);

    /* Usage grows by the session's bytes (with the extension). */
    const uint64_t before = heap_usage(ctx, heap);
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(m, &(vkvit_session_desc){.batch = batch, .label = "budget"}, &s));
    vkvit_session_stats st;
    MUST(vkvit_session_get_stats(s, &st));
    const uint64_t after = heap_usage(ctx, heap), session_bytes = st.arena_bytes + st.weight_bytes;
    printf("session: arena %llu + weights %llu bytes; heap %u usage %llu -> %llu\n",
           (unsigned long long)st.arena_bytes, (unsigned long long)st.weight_bytes, heap, (unsigned long long)before,
           (unsigned long long)after);
    if (reported) {
        const uint64_t grew = after > before ? after - before : 0, most = session_bytes + session_bytes / 4 + (16u << 20);
        CHECK(grew >= session_bytes && grew <= most, "usage grew by %llu bytes, want [%llu, %llu]",
              (unsigned long long)grew, (unsigned long long)session_bytes, (unsigned long long)most);
    } else {
        printf("SKIP (usage growth): the device does not list VK_EXT_memory_budget\n");
    }
    CHECK(run_finite(s), "logits not finite");
    vkvit_session_destroy(s);
    s = NULL;
    if (reported) {
        const uint64_t freed = heap_usage(ctx, heap);
        CHECK(freed + st.arena_bytes <= after, "destroying the session gave back %lld bytes, the arena is %llu",
              (long long)after - (long long)freed, (unsigned long long)st.arena_bytes);
    }
    vkvit_model_destroy(m);
    m = NULL;

    /* The refusal: a 64 KiB budget on every heap. A fresh model, so that its weights are uploaded under the budget. */
    ctx->test_hooks.heap_budget = 64u << 10;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODEL}, &m));
    const vkvit_result r = vkvit_session_create(m, &(vkvit_session_desc){.batch = batch, .label = "over"}, &s);
    const char *msg = vkvit_last_error();
    printf("refused: %s\n", msg);
    CHECK(r == VKVIT_ERROR_OUT_OF_DEVICE_MEMORY && !s, "%s: %s", vkvit_result_name(r), msg);
    CHECK(strstr(msg, "vkvit_session_create 'over'") && strstr(msg, "left of its budget") &&
          strstr(msg, "budget 64.0 KiB") && strstr(msg, "in use") && strstr(msg, "heap size") && strstr(msg, "needs"),
          "the sentence lacks a figure: %s", msg);
    vkvit_session_destroy(s);
    s = NULL;
    /* Room for the session (usage is real with the extension, 0 without): it is created and runs. */
    ctx->test_hooks.heap_budget = heap_usage(ctx, heap) + 2 * session_bytes + (32u << 20);
    MUST(vkvit_session_create(m, &(vkvit_session_desc){.batch = batch, .label = "fits"}, &s));
    CHECK(run_finite(s), "logits not finite under a budget that fits");
    vkvit_session_destroy(s);
    vkvit_model_destroy(m);
    ctx->test_hooks.heap_budget = 0;
    return vt_finish(ctx);
}
