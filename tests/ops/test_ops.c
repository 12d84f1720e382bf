// SPDX-License-Identifier: Apache-2.0
/* Op-level tests of the ViT-5 ops against the PyTorch goldens (tests/golden/ops/, see tests/golden/README.md).
 *
 * Every case runs as a real graph (tests/graph_util.h): the same op / module builders the networks use, planned
 * into a NaN-poisoned arena, recorded with the recorder's data-flow barriers and submitted once on the
 * validation-enabled ctx (synchronization validation on; vt_finish fails on any message).
 *
 *   rmsnorm_*               vkvit__op_rmsnorm; the per-head case also through vkvit__op_norm with group = dk on
 *                           [tokens, heads*dk] rows (weight tiled per head, since the kernel indexes it by channel)
 *   layernorm_*             vkvit__op_norm LAYER: direct weight or 1 + w, with and without bias
 *   multihead_layernorm_*   vkvit__op_norm LAYER with group = DH, 1 + w
 *                           (the vkvit__op_norm cases with each work split of shaders/norm.comp: this device's and
 *                           the other device class's, whose GPU split runs with and without subgroup reductions)
 *   layerscale_*            x * gamma as the GEMM epilogue scale: vkvit__op_gemm with w = I (exact: every product
 *                           is x * 1 or x * 0), once into a fresh tensor and once in place onto a zero residual
 *   grn_*                   vkvit__op_grn_residual with ls = none onto x = 0, which leaves exactly GRN(a) in x;
 *                           the [B, H, W, C] case is flattened to B x (H*W) tokens
 *   linear_*                vkvit__op_linear (bias and not, odd shapes)
 *   mlp_{relu,gelu,silu}_*  layer1 with the activation epilogue -> layer2 (glu/swiglu: another test's job, skipped)
 *   vit5_attention_*        qkv linear -> vkvit__op_rope_attention (host RoPE table vkvit__rope_axial_table as a
 *                           weight, [2, dk] q/k norm weights) -> proj linear; both attention paths (VKVIT_ATTENTION=
 *                           fused and =gemm); the table is also checked against the golden rope_cos / rope_sin
 *   vit5_block_*            vkvit__vit5_block on a hand-made vkvit_model (config + weight table from the golden);
 *                           both attention paths
 *   patchify (no golden)    vkvit__op_patchify (the patch embedding's im2col) on random images of odd shapes
 *                           (batches, 1-4 channels, patch 1-16, sizes that are not multiples of the patch) against a
 *                           plain-C loop: a copy, so exactly equal
 *
 * Error measure: max |got - want| / max |want| per output tensor (vt_max_rel_err). Tolerance 1e-5 for all fp32
 * cases (the goldens are float64 results rounded to fp32). */
#include "golden_util.h"
#include "graph_util.h"
#include "ops/ops.h"
#include "modules/modules.h"

#define TOL 1e-5
#define ROPE_TOL 1e-6 /* absolute, cos/sin values in [-1, 1] */

static int n_cases, n_skipped;

/* ------------------------------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------------------------------ */

static size_t numel_of(const vt_golden *g, const char *name) {
    const vkvit__st_tensor *t = vt_golden_shape(g, name);
    if (!t) {
        fprintf(stderr, "FATAL: golden %s has no tensor '%s'\n", g->path, name);
        exit(1);
    }
    return (size_t)t->numel;
}

/* Last dimension of a golden tensor. */
static uint32_t last_dim(const vt_golden *g, const char *name) {
    const vkvit__st_tensor *t = vt_golden_shape(g, name);
    if (!t || t->ndim == 0) {
        fprintf(stderr, "FATAL: golden %s has no tensor '%s' with a shape\n", g->path, name);
        exit(1);
    }
    return (uint32_t)t->shape[t->ndim - 1];
}

/* The case name: the file name without ".safetensors", truncated to fit out[cap]. */
static void case_stem(const vt_golden *g, char *out, size_t cap) {
    const char *s = vt_golden_name(g), *dot = strstr(s, ".safetensors");
    size_t n = dot ? (size_t)(dot - s) : strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(out, s, n);
    out[n] = 0;
}

/* Compares got against golden `want_name`, prints one line, records the check. */
/* compare() against values of the test's own making: want[0 .. n). */
static double compare_values(const vt_golden *g, const char *variant, const float *got, const float *want, size_t n,
                             double tol) {
    double *wd = malloc((n ? n : 1) * sizeof(double));
    for (size_t i = 0; i < n; i++) wd[i] = want[i];
    size_t worst = 0;
    double err = vt_max_rel_err(got, wd, n, &worst);
    char stem[96], name[256];
    case_stem(g, stem, sizeof stem);
    snprintf(name, sizeof name, "%s%s%s", stem, variant && *variant ? " " : "", variant ? variant : "");
    printf("%-20s %-58s max rel err %.3g (tol %.0e)\n", g->op, name, err, tol);
    CHECK(err <= tol, "%s %s: max rel err %.3g > %.0e at %zu (got %.9g, want %.9g)", g->op, name, err, tol, worst,
          n ? got[worst] : 0.0, n ? want[worst] : 0.0);
    n_cases++;
    free(wd);
    return err;
}

static double compare(const vt_golden *g, const char *variant, const float *got, const char *want_name, double tol) {
    size_t n;
    float *want = vt_golden_f32_req(g, want_name, &n);
    const double err = compare_values(g, variant, got, want, n, tol);
    free(want);
    return err;
}

static void run_or_die(vt_graph *r, const vt_golden *g) {
    vkvit_result res = vt_graph_run(r);
    if (res != VKVIT_OK) {
        fprintf(stderr, "FATAL: %s: graph run: %s: %s\n", vt_golden_name(g), vkvit_result_name(res), vkvit_last_error());
        exit(1);
    }
}

/* A golden `w.*` tensor as a graph weight with the golden's shape (or `ndim`/`shape` when given). */
static uint32_t golden_weight(vt_graph *r, const vt_golden *g, const char *name, uint32_t ndim, const uint32_t *shape) {
    const vkvit__st_tensor *t = vt_golden_shape(g, name);
    if (!t) return VKVIT_NONE;
    uint32_t sh[VKVIT_MAX_DIMS];
    if (!shape) {
        ndim = t->ndim;
        for (uint32_t i = 0; i < ndim; i++) sh[i] = (uint32_t)t->shape[i];
        shape = sh;
    }
    float *data = vt_golden_f32_req(g, name, NULL);
    uint32_t w = vt_graph_weight(r, name, data, ndim, shape);
    free(data);
    return w;
}

/* in.x as an INPUT [rows, C] (C = last dim). */
static uint32_t golden_input_2d(vt_graph *r, const vt_golden *g, const char *name, uint32_t *rows, uint32_t *C) {
    *C = last_dim(g, name);
    *rows = (uint32_t)(numel_of(g, name) / *C);
    float *data = vt_golden_f32_req(g, name, NULL);
    uint32_t shape[2] = {*rows, *C};
    uint32_t t = vt_graph_input(r, name, data, 2, shape);
    free(data);
    return t;
}

/* ------------------------------------------------------------------------------------------------------------
 * Norms
 * ------------------------------------------------------------------------------------------------------------ */

/* One vkvit__op_norm over [rows, C] with groups of `group`; weight data of [C] floats (or NULL), bias likewise. */
static float *run_norm(vkvit_ctx *ctx, const vt_golden *g, vkvit__norm_kind kind, const float *x, uint32_t rows,
                       uint32_t C, uint32_t group, const float *w, const float *b, bool one_plus, float eps) {
    vt_graph r;
    vt_graph_begin(&r, ctx);
    uint32_t shape[2] = {rows, C}, cshape[1] = {C};
    uint32_t tx = vt_graph_input(&r, "x", x, 2, shape);
    uint32_t tw = w ? vt_graph_weight(&r, "weight", w, 1, cshape) : VKVIT_NONE;
    uint32_t tb = b ? vt_graph_weight(&r, "bias", b, 1, cshape) : VKVIT_NONE;
    uint32_t ty = vkvit__graph_tensor(&r.g, VKVIT_TENSOR_ACTIVATION, "y", 2, shape);
    vkvit__norm_op op = {
        .kind = kind, .C = C, .group = group, .rows = rows, .rows_per_batch = rows,
        .in = vkvit__mat_dense(tx, rows, C), .out = vkvit__mat_dense(ty, rows, C),
        .weight = tw, .bias = tb, .one_plus_w = one_plus, .eps = eps,
    };
    vkvit__op_norm(&r.g, "norm", &op);
    vt_graph_output(&r, ty);
    run_or_die(&r, g);
    float *y = vt_graph_download(&r, ty);
    vt_graph_end(&r);
    return y;
}

/* run_norm with each work split of shaders/norm.comp and compare: the one this device picks, then the other device
 * class's (CPU devices: one invocation per row; GPUs: a workgroup per row, reductions with and without subgroup
 * arithmetic), so that lavapipe tests the GPU split too. */
static void run_norm_splits(vkvit_ctx *ctx, const vt_golden *g, const char *what, vkvit__norm_kind kind,
                            const float *x, uint32_t rows, uint32_t C, uint32_t group, const float *w, const float *b,
                            bool one_plus, float eps) {
    const vkvit__policy saved = ctx->policy;
    for (int split = 0; split < 3; split++) {
        if (split > 0) {
            ctx->policy.cpu_kernels = !saved.cpu_kernels;
            ctx->policy.subgroup_reductions = saved.subgroup_reductions && split == 1;
        }
        float *got = run_norm(ctx, g, kind, x, rows, C, group, w, b, one_plus, eps);
        ctx->policy = saved;
        char v[160];
        snprintf(v, sizeof v, "%s (%s split%s)", what, split == 0 ? "own" : saved.cpu_kernels ? "GPU" : "CPU",
                 split == 2 ? ", no subgroup" : "");
        compare(g, v, got, "out.y", TOL);
        free(got);
    }
}

static void case_rmsnorm(vkvit_ctx *ctx, const vt_golden *g) {
    const float eps = (float)vt_json_num(g->params, "eps", 1e-6);
    /* 1. vkvit__op_rmsnorm, the network's builder, over rows of the last dim. */
    {
        vt_graph r;
        vt_graph_begin(&r, ctx);
        uint32_t rows, C;
        uint32_t tx = golden_input_2d(&r, g, "in.x", &rows, &C);
        uint32_t y = vkvit__op_rmsnorm(&r.g, "rmsnorm", tx, golden_weight(&r, g, "w.weight", 0, NULL), eps);
        vt_graph_output(&r, y);
        run_or_die(&r, g);
        float *got = vt_graph_download(&r, y);
        compare(g, "op_rmsnorm", got, "out.y", TOL);
        free(got);
        vt_graph_end(&r);
    }
    /* 2. A 4-D [.., heads, dk] input: the per-head form, rows of heads*dk channels with group = dk. */
    const vkvit__st_tensor *tx = vt_golden_shape(g, "in.x");
    if (tx->ndim == 4) {
        const uint32_t dk = (uint32_t)tx->shape[3], heads = (uint32_t)tx->shape[2], C = heads * dk;
        const uint32_t rows = (uint32_t)(tx->numel / C);
        float *x = vt_golden_f32_req(g, "in.x", NULL), *w = vt_golden_f32_req(g, "w.weight", NULL);
        float *wt = malloc((size_t)C * sizeof(float));
        for (uint32_t h = 0; h < heads; h++) memcpy(wt + (size_t)h * dk, w, dk * sizeof(float));
        char v[64];
        snprintf(v, sizeof v, "op_norm group=%u of C=%u", dk, C);
        run_norm_splits(ctx, g, v, VKVIT_NORM_RMS, x, rows, C, dk, wt, NULL, false, eps);
        free(x), free(w), free(wt);
    }
}

static void case_layernorm(vkvit_ctx *ctx, const vt_golden *g, bool multihead) {
    const float eps = (float)vt_json_num(g->params, "eps", 1e-5);
    const bool one_plus = !strcmp(vt_json_str(g->params, "weight", "direct"), "one_plus");
    const bool bias = vt_json_bool(g->params, "bias", false);
    const uint32_t C = last_dim(g, "in.x"), rows = (uint32_t)(numel_of(g, "in.x") / C);
    uint32_t group = C;
    if (multihead) {
        uint32_t nh = (uint32_t)vt_json_num(g->params, "num_heads", 1);
        group = C / nh;
    }
    float *x = vt_golden_f32_req(g, "in.x", NULL), *w = vt_golden_f32_req(g, "w.weight", NULL);
    float *b = bias ? vt_golden_f32_req(g, "w.bias", NULL) : NULL;
    CHECK(bias == (vt_golden_shape(g, "w.bias") != NULL), "%s: params bias %d disagrees with the tensors", g->path,
          bias);
    char v[96];
    snprintf(v, sizeof v, "%s%s group=%u", one_plus ? "1+w" : "w", bias ? "+b" : "", group);
    run_norm_splits(ctx, g, v, VKVIT_NORM_LAYER, x, rows, C, group, w, b, one_plus, eps);
    free(x), free(w), free(b);
}

/* ------------------------------------------------------------------------------------------------------------
 * LayerScale and GRN
 * ------------------------------------------------------------------------------------------------------------ */

static void case_layerscale(vkvit_ctx *ctx, const vt_golden *g) {
    for (int in_place = 0; in_place < 2; in_place++) {
        vt_graph r;
        vt_graph_begin(&r, ctx);
        uint32_t rows, C;
        uint32_t tx = golden_input_2d(&r, g, "in.x", &rows, &C);
        float *eye = calloc((size_t)C * C, sizeof(float));
        for (uint32_t i = 0; i < C; i++) eye[(size_t)i * C + i] = 1.0f;
        uint32_t wshape[2] = {C, C}, shape[2] = {rows, C};
        uint32_t tw = vt_graph_weight(&r, "eye", eye, 2, wshape);
        free(eye);
        uint32_t gamma = golden_weight(&r, g, "w.gamma", 0, NULL);
        /* in place: d = residual = a zero INPUT (the network's "x += ls * y" form) */
        uint32_t ty = in_place ? vt_graph_input(&r, "residual", NULL, 2, shape)
                               : vkvit__graph_tensor(&r.g, VKVIT_TENSOR_ACTIVATION, "y", 2, shape);
        vkvit__gemm_op op = {
            .a = vkvit__mat_dense(tx, rows, C), .w = tw, .bias = VKVIT_NONE, .d = vkvit__mat_dense(ty, rows, C),
            .M = rows, .N = C, .K = C, .batch = 1, .act = VKVIT_ACT_NONE, .scale = gamma,
            .residual = in_place ? vkvit__mat_dense(ty, rows, C) : (vkvit__mat){VKVIT_NONE, 0, 0, 0},
        };
        vkvit__op_gemm(&r.g, "layerscale", &op);
        vt_graph_output(&r, ty);
        run_or_die(&r, g);
        float *got = vt_graph_download(&r, ty);
        compare(g, in_place ? "gemm w=I scale=gamma +residual(0) in place" : "gemm w=I scale=gamma", got, "out.y", TOL);
        free(got);
        vt_graph_end(&r);
    }
}

static void case_grn(vkvit_ctx *ctx, const vt_golden *g) {
    const float eps = (float)vt_json_num(g->params, "eps", 1e-6);
    const vkvit__st_tensor *tx = vt_golden_shape(g, "in.x");
    vt_graph r;
    vt_graph_begin(&r, ctx);
    uint32_t rows, C;
    uint32_t ta = golden_input_2d(&r, g, "in.x", &rows, &C);
    const uint32_t B = (uint32_t)tx->shape[0], T = rows / B;
    uint32_t shape[2] = {rows, C};
    uint32_t x = vt_graph_input(&r, "x", NULL, 2, shape); /* zeros: x += GRN(a) leaves GRN(a) */
    vkvit__op_grn_residual(&r.g, "grn", ta, golden_weight(&r, g, "w.gamma", 0, NULL),
                           golden_weight(&r, g, "w.beta", 0, NULL), VKVIT_NONE, x, B, T, C, eps);
    run_or_die(&r, g);
    float *got = vt_graph_download(&r, x);
    char v[64];
    snprintf(v, sizeof v, "B=%u T=%u (ls none, x = 0)", B, T);
    compare(g, v, got, "out.y", TOL);
    free(got);
    vt_graph_end(&r);
}

/* ------------------------------------------------------------------------------------------------------------
 * Linear and MLP
 * ------------------------------------------------------------------------------------------------------------ */

static void case_linear(vkvit_ctx *ctx, const vt_golden *g) {
    vt_graph r;
    vt_graph_begin(&r, ctx);
    uint32_t rows, K;
    uint32_t tx = golden_input_2d(&r, g, "in.x", &rows, &K);
    uint32_t tw = golden_weight(&r, g, "w.weight", 0, NULL);
    uint32_t tb = golden_weight(&r, g, "w.bias", 0, NULL); /* VKVIT_NONE when absent */
    uint32_t y = vkvit__op_linear(&r.g, "linear", tx, tw, tb, VKVIT_ACT_NONE);
    vt_graph_output(&r, y);
    run_or_die(&r, g);
    float *got = vt_graph_download(&r, y);
    char v[64];
    snprintf(v, sizeof v, "M=%u K=%u N=%u%s", rows, K, r.g.tensors[tw].shape[0], tb != VKVIT_NONE ? " +bias" : "");
    compare(g, v, got, "out.y", TOL);
    free(got);
    vt_graph_end(&r);
}

static void case_mlp(vkvit_ctx *ctx, const vt_golden *g) {
    const char *act_name = vt_json_str(g->params, "activation", "");
    vkvit__act act;
    if (!strcmp(act_name, "relu")) act = VKVIT_ACT_RELU;
    else if (!strcmp(act_name, "gelu")) act = VKVIT_ACT_GELU;
    else if (!strcmp(act_name, "silu")) act = VKVIT_ACT_SILU;
    else {
        printf("%-20s %-58s skipped (gated MLPs are covered by another test)\n", g->op, vt_golden_name(g));
        n_skipped++;
        return;
    }
    vt_graph r;
    vt_graph_begin(&r, ctx);
    uint32_t rows, C;
    uint32_t tx = golden_input_2d(&r, g, "in.x", &rows, &C);
    uint32_t h = vkvit__op_linear(&r.g, "mlp.layer1", tx, golden_weight(&r, g, "w.layer1.weight", 0, NULL),
                                  golden_weight(&r, g, "w.layer1.bias", 0, NULL), act);
    uint32_t y = vkvit__op_linear(&r.g, "mlp.layer2", h, golden_weight(&r, g, "w.layer2.weight", 0, NULL),
                                  golden_weight(&r, g, "w.layer2.bias", 0, NULL), VKVIT_ACT_NONE);
    vt_graph_output(&r, y);
    run_or_die(&r, g);
    float *got = vt_graph_download(&r, y);
    char v[64];
    snprintf(v, sizeof v, "%s%s", act_name, vt_json_bool(g->params, "bias", false) ? " +bias" : "");
    compare(g, v, got, "out.y", TOL);
    free(got);
    vt_graph_end(&r);
}

/* ------------------------------------------------------------------------------------------------------------
 * ViT-5 attention and block
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct vit5_geom {
    uint32_t B, T, C, heads, dk;
    vkvit__rope_pairing pairing;
    vkvit__rope_axial_desc rope;
    bool qk_norm;
    float qk_norm_eps;
} vit5_geom;

static bool vit5_geom_of(const vt_golden *g, vit5_geom *o) {
    const cJSON *p = g->params;
    memset(o, 0, sizeof *o);
    o->B = (uint32_t)vt_json_num(p, "batch", 0);
    o->T = (uint32_t)vt_json_num(p, "tokens", 0);
    o->C = (uint32_t)vt_json_num(p, "hidden_dim", 0);
    o->heads = (uint32_t)vt_json_num(p, "num_heads", 0);
    o->dk = (uint32_t)vt_json_num(p, "head_dim", 0);
    o->qk_norm = vt_json_bool(p, "qk_norm", false);
    o->qk_norm_eps = (float)vt_json_num(p, "qk_norm_eps", 1e-6);
    const char *pair = vt_json_str(p, "rope_pairing", "");
    o->pairing = !strcmp(pair, "split_half") ? VKVIT_ROPE_SPLIT_HALF
                 : !strcmp(pair, "adjacent") ? VKVIT_ROPE_ADJACENT
                                             : VKVIT_ROPE_NONE;
    const char *layout = vt_json_str(p, "token_layout", "");
    o->rope = (vkvit__rope_axial_desc){
        .head_dim = o->dk,
        .grid_h = (uint32_t)vt_json_num(p, "num_patches_h", 0),
        .grid_w = (uint32_t)vt_json_num(p, "num_patches_w", 0),
        .num_registers = (uint32_t)vt_json_num(p, "num_registers", 0),
        .has_cls = vt_json_bool(p, "has_cls", false),
        .rope_base = (float)vt_json_num(p, "rope_base", 1e4),
        .reg_rope_base = (float)vt_json_num(p, "reg_rope_base", 100),
        .layout = !strcmp(layout, "cls_patches_regs") ? VKVIT_TOKENS_CLS_PATCHES_REGS : VKVIT_TOKENS_PATCHES_CLS_REGS,
    };
    bool ok = o->B && o->T && o->C && o->heads && o->dk * o->heads == o->C && o->pairing != VKVIT_ROPE_NONE &&
              (!strcmp(layout, "cls_patches_regs") || !strcmp(layout, "patches_cls_regs"));
    CHECK(ok, "%s: unexpected params (B %u T %u C %u heads %u dk %u pairing '%s' layout '%s')", g->path, o->B, o->T,
          o->C, o->heads, o->dk, pair, layout);
    CHECK(vkvit__rope_axial_tokens(&o->rope) == o->T, "%s: rope tokens %u != tokens %u", g->path,
          vkvit__rope_axial_tokens(&o->rope), o->T);
    /* The op hard-codes scale = dk^-0.5 (ViT5Attention); the golden must agree. */
    double scale = vt_json_num(p, "scale", 0);
    CHECK(fabs(scale - 1.0 / sqrt((double)o->dk)) < 1e-12, "%s: params scale %.17g is not dk^-0.5", g->path, scale);
    return ok && vkvit__rope_axial_tokens(&o->rope) == o->T;
}

/* The compact RoPE table [T, dk/2, 2] (malloc'ed); when the golden has rope_cos/rope_sin, checks the expansion. */
static float *vit5_table(const vt_golden *g, const vit5_geom *geo) {
    float *table = malloc((size_t)geo->T * geo->dk * sizeof(float));
    vkvit_result res = vkvit__rope_axial_table(&geo->rope, table);
    if (res != VKVIT_OK) {
        fprintf(stderr, "FATAL: %s: vkvit__rope_axial_table: %s\n", g->path, vkvit_last_error());
        exit(1);
    }
    if (vt_golden_shape(g, "out.rope_cos") && vt_golden_shape(g, "out.rope_sin")) {
        size_t n = (size_t)geo->T * geo->dk;
        float *cs = malloc(n * sizeof(float)), *sn = malloc(n * sizeof(float));
        vkvit__rope_expand(table, geo->T, geo->dk, cs, sn);
        size_t nc, ns;
        float *wc = vt_golden_f32_req(g, "out.rope_cos", &nc), *ws = vt_golden_f32_req(g, "out.rope_sin", &ns);
        double err = 0;
        if (nc != n || ns != n) err = INFINITY;
        else
            for (size_t i = 0; i < n; i++) err = fmax(err, fmax(fabs((double)cs[i] - wc[i]), fabs((double)sn[i] - ws[i])));
        char name[96];
        case_stem(g, name, sizeof name);
        printf("%-20s %-58s max abs err %.3g (tol %.0e)\n", "rope_table", name, err, ROPE_TOL);
        CHECK(err <= ROPE_TOL, "%s: RoPE table vs rope_cos/rope_sin: max abs err %.3g", g->path, err);
        n_cases++;
        free(cs), free(sn), free(wc), free(ws);
    }
    return table;
}

/* q_norm.weight then k_norm.weight as one [2, dk] array (malloc'ed), or NULL without qk_norm. */
static float *vit5_qk_norm(const vt_golden *g, const vit5_geom *geo, const char *prefix) {
    if (!geo->qk_norm) return NULL;
    char qn[128], kn[128];
    snprintf(qn, sizeof qn, "%sq_norm.weight", prefix);
    snprintf(kn, sizeof kn, "%sk_norm.weight", prefix);
    size_t nq, nk;
    float *q = vt_golden_f32_req(g, qn, &nq), *k = vt_golden_f32_req(g, kn, &nk);
    CHECK(nq == geo->dk && nk == geo->dk, "%s: q/k norm weights of %zu/%zu, dk %u", g->path, nq, nk, geo->dk);
    float *w = malloc(2 * (size_t)geo->dk * sizeof(float));
    memcpy(w, q, geo->dk * sizeof(float));
    memcpy(w + geo->dk, k, geo->dk * sizeof(float));
    free(q), free(k);
    return w;
}

static const char *const path_names[] = {"fused", "gemm"};

static void case_vit5_attention(vkvit_ctx *ctx, const vt_golden *g) {
    vit5_geom geo;
    if (!vit5_geom_of(g, &geo)) return;
    CHECK(vt_json_bool(g->params, "qkv_bias", false) == (vt_golden_shape(g, "w.qkv.bias") != NULL) &&
              vt_json_bool(g->params, "out_proj_bias", false) == (vt_golden_shape(g, "w.proj.bias") != NULL),
          "%s: bias params disagree with the tensors", g->path);
    float *table = vit5_table(g, &geo), *qkn = vit5_qk_norm(g, &geo, "w.");
    for (int path = 0; path < 2; path++) {
        ctx->policy.attention = (uint32_t)path + 1; /* VKVIT_ATTENTION=fused|gemm, as the ctx reads it */
        vt_graph r;
        vt_graph_begin(&r, ctx);
        uint32_t rows, C;
        uint32_t tx = golden_input_2d(&r, g, "in.x", &rows, &C);
        uint32_t qkv = vkvit__op_linear(&r.g, "qkv", tx, golden_weight(&r, g, "w.qkv.weight", 0, NULL),
                                        golden_weight(&r, g, "w.qkv.bias", 0, NULL), VKVIT_ACT_NONE);
        uint32_t rope_shape[3] = {geo.T, geo.dk / 2, 2}, qkn_shape[2] = {2, geo.dk};
        vkvit__rope_attention_op att = {
            .qkv = qkv, .B = geo.B, .T = geo.T, .C = geo.C, .heads = geo.heads,
            .rope = vt_graph_weight(&r, "const.rope", table, 3, rope_shape),
            .pairing = geo.pairing,
            .qk_norm = qkn ? vt_graph_weight(&r, "const.qk_norm", qkn, 2, qkn_shape) : VKVIT_NONE,
            .qk_norm_eps = geo.qk_norm_eps,
            .path = VKVIT_ATTENTION_PATH_AUTO, /* from policy.attention, as a session build would */
        };
        const uint32_t nodes_before = r.g.n_nodes;
        uint32_t o = vkvit__op_rope_attention(&r.g, "attention", &att);
        const uint32_t att_nodes = r.g.n_nodes - nodes_before;
        uint32_t y = vkvit__op_linear(&r.g, "proj", o, golden_weight(&r, g, "w.proj.weight", 0, NULL),
                                      golden_weight(&r, g, "w.proj.bias", 0, NULL), VKVIT_ACT_NONE);
        vt_graph_output(&r, y);
        run_or_die(&r, g);
        CHECK(att_nodes == (path == 0 ? 1u : 4u), "%s: %s path built %u attention nodes", g->path, path_names[path],
              att_nodes);
        float *got = vt_graph_download(&r, y);
        char v[96];
        snprintf(v, sizeof v, "%s (%u nodes)", path_names[path], r.g.n_nodes);
        compare(g, v, got, "out.y", TOL);
        free(got);
        vt_graph_end(&r);
    }
    ctx->policy.attention = 0;
    free(table), free(qkn);
}

/* A vkvit_model holding block 0 of a ViT-5 net, built from the golden: config from params, every `w.X` tensor as
 * "blocks.0.X", plus the constants vkvit__vit5_constants would add (const.rope, const.blocks.0.qk_norm). The weight
 * table points into r's weight image. */
typedef struct block_model {
    vkvit_model m;
    vkvit__weight w[32];
    char names[32][96];
} block_model;

static int cmp_weight_name(const void *a, const void *b) {
    return strcmp(((const vkvit__weight *)a)->name, ((const vkvit__weight *)b)->name);
}

static void block_model_add(block_model *bm, vt_graph *r, const char *name, const float *data, uint32_t ndim,
                            const uint32_t *shape) {
    uint32_t i = bm->m.n_weights;
    if (i == 32) {
        fprintf(stderr, "FATAL: block_model: too many weights\n");
        exit(1);
    }
    size_t n = 1;
    for (uint32_t d = 0; d < ndim; d++) n *= shape[d];
    snprintf(bm->names[i], sizeof bm->names[i], "%s", name);
    const uint64_t at = vt_graph_stage(r, data, n); /* an fp32 weight: the same offset in both images */
    bm->w[i] = (vkvit__weight){.name = bm->names[i], .offset = {at, at}, .numel = n, .ndim = ndim};
    for (uint32_t d = 0; d < ndim; d++) bm->w[i].shape[d] = shape[d];
    bm->m.n_weights++;
}

static bool block_model_build(block_model *bm, vkvit_ctx *ctx, vt_graph *r, const vt_golden *g, const vit5_geom *geo,
                              const float *table, const float *qkn) {
    const cJSON *p = g->params;
    memset(bm, 0, sizeof *bm);
    bm->m.ctx = ctx;
    case_stem(g, bm->m.label, sizeof bm->m.label);
    bm->m.cfg.arch = VKVIT_ARCH_VIT5;
    vkvit__vit5_config *c = &bm->m.cfg.vit5;
    c->dim = geo->C;
    c->depth = 1;
    c->num_heads = geo->heads;
    c->head_dim = geo->dk;
    c->mlp_hidden = (uint32_t)vt_json_num(p, "mlp_hidden", 0);
    c->num_registers = geo->rope.num_registers;
    c->has_cls = geo->rope.has_cls;
    c->qk_norm = geo->qk_norm;
    c->norm_eps = vt_json_num(p, "norm_eps", 1e-6);
    c->qk_norm_eps = geo->qk_norm_eps;
    c->rope_base = geo->rope.rope_base;
    c->reg_rope_base = geo->rope.reg_rope_base;
    c->rope_pairing = geo->pairing;
    c->token_layout = geo->rope.layout;
    c->layer_scale = vt_json_bool(p, "layer_scale", false);
    c->grn = vt_json_bool(p, "grn", false);
    c->bias.qkv = vt_json_bool(p, "qkv_bias", false);
    c->bias.proj = vt_json_bool(p, "out_proj_bias", false);
    c->bias.mlp = vt_json_bool(p, "mlp_bias", false);
    c->grid[0] = geo->rope.grid_h;
    c->grid[1] = geo->rope.grid_w;
    c->num_patches = geo->rope.grid_h * geo->rope.grid_w;
    c->num_tokens = geo->T;
    if (strcmp(vt_json_str(p, "mlp_activation", "gelu"), "gelu") != 0) {
        printf("%-20s %-58s skipped (MLP activation '%s': the ViT-5 block is GELU only)\n", g->op, vt_golden_name(g),
               vt_json_str(p, "mlp_activation", ""));
        n_skipped++;
        return false;
    }
    for (uint32_t i = 0; i < g->st.n_tensors; i++) {
        const vkvit__st_tensor *t = &g->st.tensors[i];
        if (strncmp(t->name, "w.", 2) != 0) continue;
        char name[96];
        snprintf(name, sizeof name, "blocks.0.%s", t->name + 2);
        uint32_t shape[VKVIT_MAX_DIMS];
        for (uint32_t d = 0; d < t->ndim && d < VKVIT_MAX_DIMS; d++) shape[d] = (uint32_t)t->shape[d];
        float *data = vt_golden_f32_req(g, t->name, NULL);
        block_model_add(bm, r, name, data, t->ndim, shape);
        free(data);
    }
    uint32_t rope_shape[3] = {geo->T, geo->dk / 2, 2}, qkn_shape[2] = {2, geo->dk};
    block_model_add(bm, r, "const.rope", table, 3, rope_shape);
    if (qkn) block_model_add(bm, r, "const.blocks.0.qk_norm", qkn, 2, qkn_shape);
    qsort(bm->w, bm->m.n_weights, sizeof bm->w[0], cmp_weight_name);
    bm->m.weights = bm->w;
    /* Presence of optional weights must match the flags (the block builder trusts the config). */
    CHECK(vkvit__model_has(&bm->m, "blocks.0.grn.gamma") == c->grn &&
              vkvit__model_has(&bm->m, "blocks.0.ls_attn.gamma") == c->layer_scale &&
              vkvit__model_has(&bm->m, "blocks.0.sequence_mixer.proj.bias") == c->bias.proj &&
              vkvit__model_has(&bm->m, "blocks.0.mlp.layer1.bias") == c->bias.mlp &&
              vkvit__model_has(&bm->m, "blocks.0.sequence_mixer.qkv.bias") == c->bias.qkv,
          "%s: params disagree with the weights present", g->path);
    return true;
}

/* Both attention paths; and the block as the last one of a CLS readout (cls_only): the CLS rows must match the
 * golden and every other row must keep its input (with GRN, or without a CLS token, the whole golden output). */
static void case_vit5_block(vkvit_ctx *ctx, const vt_golden *g) {
    vit5_geom geo;
    if (!vit5_geom_of(g, &geo)) return;
    float *table = vit5_table(g, &geo), *qkn = vit5_qk_norm(g, &geo, "w.sequence_mixer.");
    for (int variant = 0; variant < 4; variant++) {
        const int path = variant % 2;
        const bool cls_only = variant >= 2;
        ctx->policy.attention = (uint32_t)path + 1; /* VKVIT_ATTENTION=fused|gemm, as the ctx reads it */
        vt_graph r;
        vt_graph_begin(&r, ctx);
        block_model *bm = malloc(sizeof *bm);
        if (!block_model_build(bm, ctx, &r, g, &geo, table, qkn)) {
            free(bm);
            vt_graph_end(&r);
            break;
        }
        float *x0 = vt_golden_f32_req(g, "in.x", NULL);
        uint32_t shape[3] = {geo.B, geo.T, geo.C};
        uint32_t x = vt_graph_input(&r, "x", x0, 3, shape); /* the residual stream, updated in place */
        free(x0);
        vkvit__vit5_block(&r.g, &bm->m, 0, x, geo.B, cls_only);
        run_or_die(&r, g);
        float *got = vt_graph_download(&r, x);
        char v[96];
        snprintf(v, sizeof v, "%s%s (%u nodes)", path_names[path], cls_only ? " cls_only" : "", r.g.n_nodes);
        size_t n;
        float *want = vt_golden_f32_req(g, "out.y", &n);
        const vkvit__vit5_config *c = &bm->m.cfg.vit5;
        if (cls_only && c->has_cls && !c->grn) { /* rows other than CLS: the input, unchanged */
            float *in = vt_golden_f32_req(g, "in.x", NULL);
            const uint32_t cls = vkvit__vit5_cls_row(c);
            for (size_t e = 0; e < n; e++)
                if (e / geo.C % geo.T != cls) want[e] = in[e];
            free(in);
        }
        compare_values(g, v, got, want, n, TOL);
        free(want);
        free(got);
        vt_graph_end(&r);
        free(bm);
    }
    ctx->policy.attention = 0;
    free(table), free(qkn);
}

/* ------------------------------------------------------------------------------------------------------------
 * Driver
 * ------------------------------------------------------------------------------------------------------------ */

/* vkvit__op_patchify against a plain-C im2col (shaders/patchify.comp):
 *   out[b Hp Wp + py Wp + px][c P P + ky P + kx] = img[b][py P + ky][px P + kx][c],  Hp = H / P, Wp = W / P. */
static void case_patchify_shapes(vkvit_ctx *ctx) {
    static const struct { uint32_t B, H, W, Cin, P; } shapes[] = {
        {1, 32, 32, 3, 4}, {2, 12, 8, 3, 4}, {3, 10, 7, 1, 3}, {1, 5, 9, 4, 1}, {2, 11, 13, 2, 5}, {1, 48, 16, 3, 16},
    };
    for (size_t s = 0; s < VKVIT_ARRAY_LEN(shapes); s++) {
        const uint32_t B = shapes[s].B, H = shapes[s].H, W = shapes[s].W, Cin = shapes[s].Cin, P = shapes[s].P;
        const uint32_t Hp = H / P, Wp = W / P, K = Cin * P * P, rows = B * Hp * Wp;
        const size_t n_img = (size_t)B * H * W * Cin;
        float *img = malloc(n_img * sizeof *img), *want = malloc((size_t)rows * K * sizeof *want);
        if (!img || !want) exit(1);
        vt_fill_rand(img, n_img);
        for (uint32_t b = 0; b < B; b++)
            for (uint32_t py = 0; py < Hp; py++)
                for (uint32_t px = 0; px < Wp; px++)
                    for (uint32_t c = 0; c < Cin; c++)
                        for (uint32_t ky = 0; ky < P; ky++)
                            for (uint32_t kx = 0; kx < P; kx++)
                                want[((size_t)(b * Hp + py) * Wp + px) * K + (c * P + ky) * P + kx] =
                                    img[(((size_t)b * H + py * P + ky) * W + px * P + kx) * Cin + c];
        vt_graph r;
        vt_graph_begin(&r, ctx);
        const uint32_t shape[4] = {B, H, W, Cin};
        const uint32_t t_img = vt_graph_input(&r, "img", img, 4, shape);
        const uint32_t cols = vkvit__op_patchify(&r.g, "im2col", t_img, B, H, W, Cin, P);
        vt_graph_output(&r, cols);
        MUST(vt_graph_run(&r));
        float *got = vt_graph_download(&r, cols);
        size_t wrong = 0;
        for (size_t i = 0; i < (size_t)rows * K; i++) wrong += memcmp(&got[i], &want[i], sizeof got[i]) != 0;
        CHECK(wrong == 0, "patchify B=%u H=%u W=%u Cin=%u P=%u: %zu of %zu outputs differ from the C loop", B, H, W,
              Cin, P, wrong, (size_t)rows * K);
        n_cases++;
        free(got);
        vt_graph_end(&r);
        free(img);
        free(want);
    }
}

static const char *const patterns[] = {
    "rmsnorm_*", "layernorm_*", "multihead_layernorm_*", "layerscale_*", "grn_*",
    "linear_*",  "mlp_*",       "vit5_attention_*",      "vit5_block_*",
};

int main(void) {
    vkvit_ctx *ctx = vt_ctx();
    for (size_t p = 0; p < sizeof patterns / sizeof patterns[0]; p++) {
        char pattern[128];
        snprintf(pattern, sizeof pattern, "tests/golden/ops/%s.safetensors", patterns[p]);
        char **paths;
        size_t n = vt_golden_list(pattern, &paths);
        CHECK(n > 0, "no golden files match %s", pattern);
        for (size_t i = 0; i < n; i++) {
            const char *only = getenv("VKVIT_TEST_OPS_ONLY"); /* substring filter for debugging */
            if (only && *only && !strstr(paths[i], only)) continue;
            vt_golden g;
            vt_golden_open(paths[i], &g);
            if (!strcmp(g.op, "rmsnorm")) case_rmsnorm(ctx, &g);
            else if (!strcmp(g.op, "layernorm")) case_layernorm(ctx, &g, false);
            else if (!strcmp(g.op, "multihead_layernorm")) case_layernorm(ctx, &g, true);
            else if (!strcmp(g.op, "layerscale")) case_layerscale(ctx, &g);
            else if (!strcmp(g.op, "grn")) case_grn(ctx, &g);
            else if (!strcmp(g.op, "linear")) case_linear(ctx, &g);
            else if (!strcmp(g.op, "mlp")) case_mlp(ctx, &g);
            else if (!strcmp(g.op, "vit5_attention")) case_vit5_attention(ctx, &g);
            else if (!strcmp(g.op, "vit5_block")) case_vit5_block(ctx, &g);
            else CHECK(false, "%s: unexpected op '%s'", paths[i], g.op);
            vt_golden_close(&g);
        }
        vt_golden_list_free(paths, n);
    }
    case_patchify_shapes(ctx);
    printf("%d golden comparisons, %d skipped; %u graphs, %u pipelines (%u distinct) created in %.1f s, runs %.1f s\n",
           n_cases, n_skipped, vt_graph_stats.graphs, vt_graph_stats.kernels, vt_graph_stats.unique, vt_graph_stats.prepare_s, vt_graph_stats.run_s);
    if (getenv("VT_GRAPH_VERBOSE")) /* the distinct pipelines: the floor of llvmpipe compile time on a cold cache */
        for (unsigned k = 0; k < vt_graph_stats.unique; k++) {
            const vkvit__kernel_desc *d = &vt_graph_stats.seen[k];
            fprintf(stderr, "  kernel shader %3d, %u buffers, spec", (int)d->shader, d->n_buffers);
            for (uint32_t i = 0; i < d->n_spec; i++) fprintf(stderr, " %u", d->spec[i]);
            fputc('\n', stderr);
        }
    return vt_finish(ctx);
}
