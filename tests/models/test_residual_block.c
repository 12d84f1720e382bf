// SPDX-License-Identifier: Apache-2.0
/* The generic ResidualBlock and its two mixers (src/modules/resnet.c: vkvit__rn_block_build,
 * vkvit__rn_sequence_mixer, vkvit__rn_condition_mixer) over channels-last (B, *spatial, C) inputs with one, two and
 * three spatial dims, against PyTorch: every tests/golden/ops/residual_block_*, qkv_sequence_mixer_* and
 * qkv_condition_mixer_* golden runs through the real builders as graph nodes (tests/graph_util.h: NaN-poisoned
 * arena, validation and synchronization validation on) and must match `out.y` within 1e-5 relative to its scale
 * (max |got - want| / max |want|; fp32 kernels against a float64 reference rounded to fp32).
 *
 * The builders look weights up in a vkvit_model; the test hand-builds one whose weight table points at the
 * golden's `w.*` tensors staged in the runner's weight image (so the weight prefix is "w."), plus the sequence
 * mixer's RoPE table for the golden's grid (vkvit__rn_rope_constant) when the case uses RoPE. The block config comes
 * from the golden's `params` (norm kinds, branches, heads, qk-norm, causal, RoPE, MLP activation and bias, condition
 * shape); the attention scale in params must be the one the generic Attention implies (1 under qk-norm, else
 * dk^-0.5), which the test checks rather than assumes. */
#include "golden_util.h"
#include "graph_util.h"
#include "modules/modules.h"
#include "test_util.h"

#define TOL 1e-5

static int cmp_weight(const void *a, const void *b) {
    return strcmp(((const vkvit__weight *)a)->name, ((const vkvit__weight *)b)->name);
}

static void fail_case(const char *stem, const char *why) {
    CHECK(false, "%s: %s", stem, why);
}

/* A norm config from params[key]: null / absent / {"type": "identity"} -> identity. False for what the block
 * does not support (a one_plus layernorm weight). */
static bool parse_norm(const cJSON *params, const char *key, vkvit__rn_norm_config *out) {
    memset(out, 0, sizeof *out);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(params, key);
    if (!cJSON_IsObject(n)) return true;
    const char *type = vt_json_str(n, "type", "identity");
    if (!strcmp(type, "identity")) return true;
    out->eps = vt_json_num(n, "eps", 0);
    if (!strcmp(type, "rmsnorm")) {
        out->kind = VKVIT_RN_NORM_RMSNORM;
        return true;
    }
    if (!strcmp(type, "layernorm")) {
        out->kind = VKVIT_RN_NORM_LAYERNORM;
        out->bias = vt_json_bool(n, "bias", false);
        return !strcmp(vt_json_str(n, "weight", "direct"), "direct");
    }
    return false;
}

/* The generic Attention settings of a `mixer` object; checks the scale the reference used. */
static bool parse_attention(const char *stem, const cJSON *mixer, uint32_t C, uint32_t *heads, bool *qk_norm,
                            bool *causal, bool *rope, double *rope_base) {
    if (!cJSON_IsObject(mixer)) return false;
    *heads = (uint32_t)vt_json_num(mixer, "num_heads", 0);
    *qk_norm = vt_json_bool(mixer, "apply_qk_norm", false);
    *causal = vt_json_bool(mixer, "is_causal", false);
    *rope = vt_json_bool(mixer, "use_rope", false);
    *rope_base = vt_json_num(mixer, "rope_base", 10000.0);
    if (!*heads || C % *heads) return false;
    const double dk = (double)(C / *heads), scale = vt_json_num(mixer, "scale", -1);
    const double want = *qk_norm ? 1.0 : 1.0 / sqrt(dk);
    CHECK(fabs(scale - want) <= 1e-12 * want, "%s: params scale %.17g, the generic Attention uses %.17g", stem, scale,
          want);
    return true;
}

typedef enum { CASE_BLOCK, CASE_SEQ, CASE_COND } case_kind;

static void run_case(vkvit_ctx *ctx, const char *path, case_kind kind) {
    vt_golden gd;
    vt_golden_open(path, &gd);
    char stem[4608];
    snprintf(stem, sizeof stem, "%s", vt_golden_name(&gd));
    char *dot = strrchr(stem, '.');
    if (dot) *dot = 0;
    const cJSON *p = gd.params;

    /* Geometry: in.x [B, *spatial, C]. */
    const vkvit__st_tensor *xs = vt_golden_shape(&gd, "in.x");
    if (!xs || xs->ndim < 3 || xs->ndim > 5) {
        fail_case(stem, "in.x must be [B, *spatial, C] with 1 to 3 spatial dims");
        vt_golden_close(&gd);
        return;
    }
    const uint32_t ndim = xs->ndim - 2, B = (uint32_t)xs->shape[0], C = (uint32_t)xs->shape[xs->ndim - 1];
    vkvit__resnet_config cfg = {.dim = C};
    vkvit__rn_block_desc desc = {.cfg = &cfg, .B = B, .ndim = ndim, .rope = VKVIT_NONE};
    for (uint32_t a = 0; a < ndim; a++) desc.shape[a] = (uint32_t)xs->shape[1 + a];
    const uint32_t T = vkvit__rn_tokens(&desc), rows = B * T;

    /* Condition: [B, C] (global) or [B, *cond_spatial, C] -> Tc tokens. */
    const vkvit__st_tensor *cs = vt_golden_shape(&gd, "in.condition");
    if (cs) {
        uint64_t tc = 1;
        for (uint32_t a = 1; a + 1 < cs->ndim; a++) tc *= cs->shape[a];
        cfg.condition_tokens = cs->ndim > 2 ? (uint32_t)tc : 0;
        cfg.condition_dim = C;
    }

    /* Block config from params. */
    bool ok = true;
    const cJSON *seq = NULL, *cond = NULL, *mlp = NULL;
    if (kind == CASE_BLOCK) {
        ok = ok && parse_norm(p, "input_norm", &cfg.input_norm) &&
             parse_norm(p, "condition_mixer_norm", &cfg.condition_mixer_norm) &&
             parse_norm(p, "mlp_norm", &cfg.mlp_norm);
        seq = cJSON_GetObjectItemCaseSensitive(p, "sequence_mixer");
        cond = cJSON_GetObjectItemCaseSensitive(p, "condition_mixer");
        mlp = cJSON_GetObjectItemCaseSensitive(p, "mlp");
        if (!cJSON_IsObject(seq)) seq = NULL;
        if (!cJSON_IsObject(cond)) cond = NULL;
        if (!cJSON_IsObject(mlp)) mlp = NULL;
    } else if (kind == CASE_SEQ) {
        seq = p;
    } else {
        cond = p;
    }
    if (seq) {
        cfg.seq.enabled = true;
        cfg.seq.bias = vt_json_bool(seq, "bias", false);
        ok = ok && parse_attention(stem, cJSON_GetObjectItemCaseSensitive(seq, "mixer"), C, &cfg.seq.num_heads,
                                   &cfg.seq.qk_norm, &cfg.seq.causal, &cfg.seq.rope, &cfg.seq.rope_base);
        cfg.seq_head_dim = cfg.seq.num_heads ? C / cfg.seq.num_heads : 0;
    }
    if (cond) {
        cfg.cond.enabled = true;
        bool rope = false;
        double base = 0;
        ok = ok && parse_attention(stem, cJSON_GetObjectItemCaseSensitive(cond, "mixer"), C, &cfg.cond.num_heads,
                                   &cfg.cond.qk_norm, &cfg.cond.causal, &rope, &base) &&
             !rope && cs != NULL; /* the condition mixer has no RoPE */
        cfg.cond_head_dim = cfg.cond.num_heads ? C / cfg.cond.num_heads : 0;
    }
    if (mlp) {
        const char *act = vt_json_str(mlp, "activation", "");
        cfg.mlp.enabled = true;
        cfg.mlp.bias = vt_json_bool(mlp, "bias", false);
        cfg.mlp.hidden = (uint32_t)vt_json_num(mlp, "hidden_dim", 0);
        if (!strcmp(act, "relu")) cfg.mlp.activation = VKVIT_RN_ACT_RELU;
        else if (!strcmp(act, "gelu")) cfg.mlp.activation = VKVIT_RN_ACT_GELU;
        else if (!strcmp(act, "silu")) cfg.mlp.activation = VKVIT_RN_ACT_SILU;
        else if (!strcmp(act, "glu")) cfg.mlp.activation = VKVIT_RN_ACT_GLU;
        else if (!strcmp(act, "swiglu")) cfg.mlp.activation = VKVIT_RN_ACT_SWIGLU;
        else ok = false;
        const bool gated = cfg.mlp.activation == VKVIT_RN_ACT_GLU || cfg.mlp.activation == VKVIT_RN_ACT_SWIGLU;
        cfg.mlp_glu_factor = gated ? 2 : 1;
        ok = ok && cfg.mlp.hidden > 0;
    }
    if (!ok) {
        fail_case(stem, "params describe a block this test cannot configure");
        vt_golden_close(&gd);
        return;
    }

    /* Weights: every w.* tensor staged into the runner's weight image, and a hand-built model pointing at them. */
    vt_graph r;
    vt_graph_begin(&r, ctx);
    vkvit__weight *table = calloc(gd.st.n_tensors + 1, sizeof *table);
    float **owned = calloc(gd.st.n_tensors + 1, sizeof *owned);
    uint32_t nw = 0;
    for (uint32_t i = 0; i < gd.st.n_tensors; i++) {
        const vkvit__st_tensor *t = &gd.st.tensors[i];
        if (strncmp(t->name, "w.", 2) != 0) continue;
        owned[nw] = vt_golden_f32_req(&gd, t->name, NULL);
        table[nw].name = t->name;
        table[nw].offset[0] = table[nw].offset[1] = vt_graph_stage(&r, owned[nw], (size_t)t->numel);
        table[nw].ndim = t->ndim;
        for (uint32_t d = 0; d < t->ndim && d < VKVIT_MAX_DIMS; d++) table[nw].shape[d] = (uint32_t)t->shape[d];
        nw++;
    }
    vkvit__constant rope = {0};
    if (cfg.seq.enabled && cfg.seq.rope) {
        MUST(vkvit__rn_rope_constant(&cfg, desc.shape, ndim, "const.rope", &rope));
        desc.rope = vt_graph_weight(&r, rope.name, rope.data, rope.ndim, rope.shape);
    }
    qsort(table, nw, sizeof *table, cmp_weight);
    vkvit_model model = {.ctx = ctx, .weights = table, .n_weights = nw};
    snprintf(model.label, sizeof model.label, "%.200s", stem);

    /* Inputs (dense 2-D: the builders see flat token rows) and the graph. */
    float *x = vt_golden_f32_req(&gd, "in.x", NULL);
    float *c = cs ? vt_golden_f32_req(&gd, "in.condition", NULL) : NULL;
    float *want = vt_golden_f32_req(&gd, "out.y", NULL);
    uint32_t x_shape[2] = {rows, C};
    uint32_t xt = vt_graph_input(&r, "x", x, 2, x_shape);
    uint32_t ct = VKVIT_NONE;
    if (cs) {
        const uint32_t Tc = cfg.condition_tokens ? cfg.condition_tokens : 1;
        uint32_t c_shape[2] = {B * Tc, C};
        ct = vt_graph_input(&r, "condition", c, 2, c_shape);
    }
    uint32_t result = xt; /* the block updates x in place */
    if (kind == CASE_BLOCK) {
        vkvit__rn_block_build(&r.g, &model, &desc, "w.", xt, ct);
    } else {
        result = vkvit__graph_tensor(&r.g, VKVIT_TENSOR_ACTIVATION, "y", 2, x_shape);
        if (kind == CASE_SEQ)
            vkvit__rn_sequence_mixer(&r.g, &model, &desc, "w.", "sequence_mixer", xt, result, false);
        else
            vkvit__rn_condition_mixer(&r.g, &model, &desc, "w.", "condition_mixer",
                                      cfg.condition_tokens > 1 ? xt : VKVIT_NONE, ct, result, false);
        vt_graph_output(&r, result);
    }
    const uint32_t n_nodes = r.g.n_nodes;
    vkvit_result res = vt_graph_run(&r);
    CHECK(res == VKVIT_OK, "%s: %s: %s", stem, vkvit_result_name(res), vkvit_last_error());
    if (res == VKVIT_OK) {
        float *got = vt_graph_download(&r, result);
        const size_t n = (size_t)rows * C;
        double *w64 = malloc(n * sizeof *w64);
        for (size_t i = 0; i < n; i++) w64[i] = want[i];
        size_t worst = 0;
        double err = vt_max_rel_err(got, w64, n, &worst);
        printf("%-44s %uD spatial [", stem, ndim);
        for (uint32_t a = 0; a < ndim; a++) printf("%s%u", a ? "x" : "", desc.shape[a]);
        printf("] B=%u C=%u  %u nodes  max rel err %.3g\n", B, C, n_nodes, err);
        CHECK(err <= TOL, "%s: max rel err %.3g > %g (worst element %zu: got %.9g want %.9g)", stem, err, TOL, worst,
              got[worst], want[worst]);
        /* The identity block adds no node; every other case does. */
        CHECK((n_nodes == 0) == (!cfg.seq.enabled && !cfg.cond.enabled && !cfg.mlp.enabled), "%s: %u nodes", stem,
              n_nodes);
        free(got), free(w64);
    }
    vt_graph_end(&r);
    free(x), free(c), free(want), free(rope.data);
    for (uint32_t i = 0; i < nw; i++) free(owned[i]);
    free(owned), free(table);
    vt_golden_close(&gd);
}

static size_t run_all(vkvit_ctx *ctx, const char *pattern, case_kind kind) {
    char **paths;
    size_t n = vt_golden_list(pattern, &paths);
    for (size_t i = 0; i < n; i++) run_case(ctx, paths[i], kind);
    vt_golden_list_free(paths, n);
    return n;
}

/* A bad descriptor fails the graph with a sentence, it does not crash or emit nodes. */
static void check_errors(vkvit_ctx *ctx) {
    vkvit__resnet_config cfg = {.dim = 48};
    cfg.seq.enabled = true, cfg.seq.num_heads = 3, cfg.seq.rope = true, cfg.seq.rope_base = 10000.0;
    vkvit_model model = {.ctx = ctx};
    snprintf(model.label, sizeof model.label, "empty");
    const struct {
        uint32_t ndim, shape[3];
        bool rope;
    } bad[] = {{0, {4, 1, 1}, true}, {4, {2, 2, 2}, true}, {2, {3, 0, 1}, true}, {1, {5, 1, 1}, false}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vkvit__graph g;
        vkvit__graph_init(&g, ctx);
        uint32_t shape[2] = {64, 48};
        uint32_t x = vkvit__graph_tensor(&g, VKVIT_TENSOR_INPUT, "x", 2, shape);
        uint32_t rope = bad[i].rope ? vkvit__graph_weight_at(&g, VKVIT_TENSOR_WEIGHT, "const.rope", 0, 2, shape)
                                    : VKVIT_NONE;
        vkvit__rn_block_desc d = {.cfg = &cfg, .B = 1, .ndim = bad[i].ndim, .rope = rope};
        memcpy(d.shape, bad[i].shape, sizeof d.shape);
        vkvit__rn_block_build(&g, &model, &d, "", x, VKVIT_NONE);
        CHECK(vkvit__graph_error(&g) == VKVIT_ERROR_INVALID_ARGUMENT && g.n_nodes == 0,
              "bad descriptor %zu: %s, %u nodes", i, vkvit_result_name(vkvit__graph_error(&g)), g.n_nodes);
        vkvit__graph_free(&g);
    }
    vkvit__constant k;
    CHECK(vkvit__rn_rope_constant(&cfg, (uint32_t[]){2, 2, 2, 2}, 4, "const.rope", &k) ==
              VKVIT_ERROR_INVALID_ARGUMENT,
          "a 4-D RoPE grid is refused");
    free(k.data);
}

int main(void) {
    vkvit_ctx *ctx = vt_ctx();
    size_t nb = run_all(ctx, "tests/golden/ops/residual_block_*.safetensors", CASE_BLOCK);
    size_t ns = run_all(ctx, "tests/golden/ops/qkv_sequence_mixer_*.safetensors", CASE_SEQ);
    size_t nc = run_all(ctx, "tests/golden/ops/qkv_condition_mixer_*.safetensors", CASE_COND);
    CHECK(nb >= 9 && ns >= 3 && nc >= 4, "found %zu residual_block, %zu qkv_sequence_mixer, %zu qkv_condition_mixer "
          "goldens", nb, ns, nc);
    check_errors(ctx);
    return vt_finish(ctx);
}
