// SPDX-License-Identifier: Apache-2.0
/* Lifetime and destruction order (include/vkvit.h OWNERSHIP): sessions, then models, then the ctx; in adopt mode
 * the host's device outlives the ctx and must still work afterwards.
 *
 *   destroy_while_in_flight   a session destroyed right after vkvit_session_submit (no wait by the host) waits for
 *                             its own submission first: the validation layer reports destroying a pending command
 *                             buffer or an in-use buffer, and stays silent here.
 *   no_leaks_in_adopt_mode    three create/run/destroy cycles on the host's device; the host then destroys its own
 *                             device, and the validation layer (on the host's instance) reports any VkBuffer,
 *                             VkDeviceMemory, VkPipeline, pool or fence vkvit left behind as an error: it must stay
 *                             silent.
 *   destroy_null              every destroy accepts NULL.
 * The host device must work after every vkvit_ctx_destroy (host_device_works). */
#include "embed_util.h"

static void destroy_while_in_flight(host *h, const eu_golden *g) {
    vkvit_ctx *ctx = host_adopt_with(h, NULL, "in flight");
    vkvit_model *model = NULL;
    vkvit_session *s = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = EU_MODEL ".vkvit"}, &model));
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = g->batch}, &s));
    MUST(vkvit_session_set_input(s, g->input, g->n_in));
    MUST(vkvit_session_submit(s, NULL));
    vkvit_session_destroy(s); /* waits for the submission above */
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
    CHECK(host_device_works(h), "the host device does not work after destroying an in-flight session");
}

static void no_leaks_in_adopt_mode(host *h, const eu_golden *g) {
    for (int cycle = 0; cycle < 3; cycle++) {
        vkvit_ctx *ctx = host_adopt_with(h, NULL, "cycle");
        vkvit_model *model = NULL;
        vkvit_session *s1 = NULL, *s2 = NULL;
        MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = EU_MODEL ".vkvit"}, &model));
        MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = g->batch, .profile = cycle == 1}, &s1));
        MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = 1}, &s2));
        eu_poison(s1, g->n_in, g->n_out);
        MUST(vkvit_session_set_input(s1, eu_frame_input(g, cycle), g->n_in));
        MUST(vkvit_session_run(s1));
        eu_check(s1, eu_frame_logits(g, cycle), g->n_out, "cycle");
        /* Destroy in the documented order: sessions (any order among them), models, ctx. */
        vkvit_session_destroy(s2);
        vkvit_session_destroy(s1);
        vkvit_model_destroy(model);
        vkvit_ctx_destroy(ctx);
        CHECK(host_device_works(h), "cycle %d: the host device no longer works", cycle);
    }
}

static void destroy_null(void) {
    vkvit_session_destroy(NULL);
    vkvit_model_destroy(NULL);
    vkvit_ctx_destroy(NULL);
    CHECK(vkvit_session_poll(NULL) == VKVIT_ERROR_INVALID_ARGUMENT, "poll(NULL)");
    CHECK(vkvit_session_wait(NULL) == VKVIT_ERROR_INVALID_ARGUMENT, "wait(NULL)");
}

int main(void) {
    eu_golden g;
    eu_golden_load(&g);
    host h;
    host_create(&h);
    destroy_null();
    destroy_while_in_flight(&h, &g);
    no_leaks_in_adopt_mode(&h, &g);
    eu_golden_free(&g);
    /* The host destroys its device last; the validation layer names every object vkvit leaked. */
    host_destroy(&h);
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
