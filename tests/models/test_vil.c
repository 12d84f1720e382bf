// SPDX-License-Identifier: Apache-2.0
/* Vision-LSTM on the GPU (src/ops/mlstm.c, src/modules/vil.c, shaders/mlstm_*.comp), both numerics (seed,
 * docs/math.md 7.1; NX-AI, docs/math.md 7.2), both directions, against PyTorch and a plain-C float64 reference:
 *
 *   scan goldens    tests/golden/ops/mlstm_scan_*: the chunked scan (docs/math.md 7.3) for chunk lengths 1, 7, 64
 *                   (>= S: one chunk) and the default, against the parallel forms; max |err| / max |want| <= 1e-5. The
 *                   default (chunk 0) on a CPU device with S <= 256 and DH % 4 == 0 is the quadratic form
 *                   (mlstm_par_prep -> GEMM -> mlstm_decay -> GEMM), so every "chunk 0" line below S = 257 tests
 *                   it and every other line the chunked scan
 *   scan random     fresh random q, k, v, gates for S in {1, 7, 64, 196, 257, 1000}, forward and reversed, and gate
 *                   extremes (input gate 95 > 88.7, strong forgetting, the -10 clamp active), against a float64
 *                   quadratic reference written here from docs/math.md 7.1 / 7.2; <= 2e-5. Also head dims 96 and 192
 *                   (several value tiles), 6, 18, 300 and 258 (partial column blocks, DH % 4 != 0, two 256-column
 *                   tiles) and S = 4096 (256 chunks through the sequential carry phase)
 *   prep random     the conv + SiLU + headwise projections (mlstm_prep.comp) on fresh random inputs against a
 *                   float64 loop: both output layouts (v rows; vT for the quadratic form), kernel sizes 1, 3, 4
 *                   (the sliding window) and 6, S in {1, 7, 61, 196}, both directions, the CPU and the GPU run
 *                   lengths; <= 1e-5
 *   cell goldens    tests/golden/ops/mlstm_cell_*: the whole cell (proj_up .. proj_down) through the real builder,
 *                   comparing y and the gate pre-activations (<= 1e-5) and the scan output h (seed <= 1e-5; NX-AI
 *                   <= 2e-4: the official normaliser max(|den|, e^-M) amplifies fp32 rounding where the signed sum
 *                   nearly cancels, see the extremes golden's note), at the default chunk and at chunk 5
 *   block goldens   tests/golden/ops/mlstm_block_*: norm1 + cell + residual; <= 1e-5
 *   networks        tests/golden/models/vil_{seed,nxai}: the public API (fp32 logits <= 1e-4 relative, a replay
 *                   gives the same bits, fp16 weights <= 1e-2) and `vkvit run` through the CLI binary (<= 1e-4)
 * Every graph runs with a NaN-poisoned arena under the validation layer (synchronization validation on). */
#include "arch/arch_kit.h" /* vkvit__name_ends_with */
#include "golden_util.h"
#include "ops/ops.h"
#include "graph_util.h"
#include "modules/modules.h"
#include "test_util.h"

#include <unistd.h>

#ifndef VKVIT_BINARY_DIR
#define VKVIT_BINARY_DIR "."
#endif
#define CLI VKVIT_BINARY_DIR "/vkvit"
#define MODELS VKVIT_SOURCE_DIR "/tests/golden/models/"

/* fp16 sessions need fp16 storage, which a device (or profile) of the Vulkan 1.1 minimum lacks: their checks are
 * skipped there (the fp32 ones still run). */
static bool fp16_sessions(vkvit_ctx *ctx) {
    vkvit_device_info info;
    return vkvit_ctx_device_info(ctx, &info) == VKVIT_OK && info.fp16_in_use;
}

static int cmp_weight(const void *a, const void *b) {
    return strcmp(((const vkvit__weight *)a)->name, ((const vkvit__weight *)b)->name);
}

static double err_vs(const float *got, const float *want, size_t n, size_t *worst) {
    double *w = malloc(n * sizeof *w);
    for (size_t i = 0; i < n; i++) w[i] = want[i];
    double e = vt_max_rel_err(got, w, n, worst);
    free(w);
    return e;
}

/* ------------------------------------------------------------------------------------------------------------
 * The scan alone
 * ------------------------------------------------------------------------------------------------------------ */

/* Rows x cols of matrix m (rows run on at m.stride: batch_stride unused) after the run, dense and malloc'ed. */
static float *download_mat(vt_graph *r, vkvit__mat m, uint32_t rows, uint32_t cols) {
    float *all = vt_graph_download(r, m.t), *out = malloc((size_t)rows * cols * sizeof *out);
    if (!out) exit(1);
    for (size_t i = 0; i < rows; i++) memcpy(out + i * cols, all + m.offset + i * m.stride, cols * sizeof *out);
    free(all);
    return out;
}

/* Runs vkvit__op_mlstm_scan on per-head tensors in processing order (q, k, v [B, NH, S, DH], ipre, fpre
 * [B, NH, S]); returns h [B, NH, S, DH] in processing order (malloc'ed), NULL after a reported failure. */
static float *gpu_scan(vkvit_ctx *ctx, const float *q, const float *k, const float *v, const float *ipre,
                       const float *fpre, uint32_t B, uint32_t NH, uint32_t S, uint32_t DH, bool nxai, bool reverse,
                       uint32_t chunk) {
    const uint32_t E = NH * DH, rows = B * S;
    float *qkv = malloc((size_t)rows * 3 * E * sizeof(float)), *gates = malloc((size_t)rows * 2 * NH * sizeof(float));
    /* Row of processing position t: the original token t (forward) or S-1-t (reversed block). */
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t h = 0; h < NH; h++)
            for (uint32_t t = 0; t < S; t++) {
                const uint32_t row = b * S + (reverse ? S - 1 - t : t);
                const size_t src = (((size_t)b * NH + h) * S + t);
                for (uint32_t d = 0; d < DH; d++) {
                    qkv[(size_t)row * 3 * E + h * DH + d] = q[src * DH + d];
                    qkv[(size_t)row * 3 * E + E + h * DH + d] = k[src * DH + d];
                    qkv[(size_t)row * 3 * E + 2 * E + h * DH + d] = v[src * DH + d];
                }
                gates[(size_t)row * 2 * NH + h] = ipre[src];
                gates[(size_t)row * 2 * NH + NH + h] = fpre[src];
            }
    vt_graph r;
    vt_graph_begin(&r, ctx);
    uint32_t qkv_shape[2] = {rows, 3 * E}, g_shape[2] = {rows, 2 * NH};
    uint32_t tq = vt_graph_input(&r, "qkv", qkv, 2, qkv_shape), tg = vt_graph_input(&r, "gates", gates, 2, g_shape);
    /* h over q in forward scans, a new h in reversed ones: both placements of the quadratic form (the chunked scan
     * always writes a new h) */
    vkvit__mlstm_scan_op op = {.qkv = tq, .gates = tg, .B = B, .S = S, .E = E, .NH = NH, .reverse = reverse,
                               .nxai = nxai, .h_over_q = !reverse, .chunk = chunk};
    const vkvit__mat th = vkvit__op_mlstm_scan(&r.g, "scan", &op);
    vt_graph_output(&r, th.t);
    vkvit_result res = vt_graph_run(&r);
    float *out = NULL;
    CHECK(res == VKVIT_OK, "scan S=%u chunk %u: %s", S, chunk, vkvit_last_error());
    if (res == VKVIT_OK) {
        float *hrow = download_mat(&r, th, rows, E);
        out = malloc((size_t)rows * E * sizeof(float));
        for (uint32_t b = 0; b < B; b++)
            for (uint32_t h = 0; h < NH; h++)
                for (uint32_t t = 0; t < S; t++) {
                    const uint32_t row = b * S + (reverse ? S - 1 - t : t);
                    for (uint32_t d = 0; d < DH; d++)
                        out[(((size_t)b * NH + h) * S + t) * DH + d] = hrow[(size_t)row * E + h * DH + d];
                }
        free(hrow);
    }
    vt_graph_end(&r);
    free(qkv), free(gates);
    return out;
}

/* Float64 quadratic reference of one (b, h) sequence in processing order (docs/math.md 7.1 seed, 7.2 official). */
static void ref_scan_head(const float *q, const float *k, const float *v, const float *ipre, const float *fpre,
                          uint32_t S, uint32_t DH, bool nxai, double *out) {
    double *F = malloc(S * sizeof *F), *li = malloc(S * sizeof *li), *A = malloc(S * sizeof *A);
    double acc = 0.0;
    for (uint32_t t = 0; t < S; t++) {
        const double f = fpre[t];
        double lf;
        if (nxai) {
            lf = fmin(f, 0.0) - log1p(exp(-fabs(f)));               /* logsigmoid */
            li[t] = ipre[t];
        } else {
            lf = log(fmax(1.0 / (1.0 + exp(-f)), 1e-6));
            li[t] = fmax(ipre[t], log(1e-6));
        }
        acc += lf;
        F[t] = acc;
    }
    const double scale = 1.0 / sqrt((double)DH);
    for (uint32_t i = 0; i < S; i++) {
        double M = -INFINITY;
        for (uint32_t j = 0; j <= i; j++) M = fmax(M, F[i] - F[j] + li[j]);
        const double m = nxai ? M : fmax(M, -10.0);
        double den = 0.0;
        for (uint32_t j = 0; j <= i; j++) {
            double dot = 0.0;
            for (uint32_t d = 0; d < DH; d++) dot += (double)q[(size_t)i * DH + d] * k[(size_t)j * DH + d];
            A[j] = dot * scale * exp(F[i] - F[j] + li[j] - m);
            den += A[j];
        }
        const double norm = nxai ? fmax(fabs(den), exp(-M)) + 1e-6 : fmax(den, 1.0);
        for (uint32_t d = 0; d < DH; d++) {
            double s = 0.0;
            for (uint32_t j = 0; j <= i; j++) s += A[j] * v[(size_t)j * DH + d];
            out[(size_t)i * DH + d] = s / norm;
        }
    }
    free(F), free(li), free(A);
}

static void scan_goldens(vkvit_ctx *ctx) {
    char **paths;
    size_t n = vt_golden_list("tests/golden/ops/mlstm_scan_*.safetensors", &paths);
    CHECK(n >= 5, "found %zu mlstm_scan goldens", n);
    const uint32_t chunks[] = {0, 1, 7, 64};
    for (size_t f = 0; f < n; f++) {
        vt_golden gd;
        vt_golden_open(paths[f], &gd);
        const vkvit__st_tensor *qs = vt_golden_shape(&gd, "in.q");
        const uint32_t B = (uint32_t)qs->shape[0], NH = (uint32_t)qs->shape[1], S = (uint32_t)qs->shape[2],
                       DH = (uint32_t)qs->shape[3];
        const bool nxai = !strcmp(vt_json_str(gd.params, "numerics", ""), "nxai");
        float *q = vt_golden_f32_req(&gd, "in.q", NULL), *k = vt_golden_f32_req(&gd, "in.k", NULL),
              *v = vt_golden_f32_req(&gd, "in.v", NULL), *ip = vt_golden_f32_req(&gd, "in.ipre", NULL),
              *fp = vt_golden_f32_req(&gd, "in.fpre", NULL);
        size_t nh;
        float *want = vt_golden_f32_req(&gd, "out.h", &nh);
        for (size_t c = 0; c < VKVIT_ARRAY_LEN(chunks); c++) {
            /* The direction must not matter when the rows are laid out for it. */
            const bool reverse = c % 2 == 1;
            float *got = gpu_scan(ctx, q, k, v, ip, fp, B, NH, S, DH, nxai, reverse, chunks[c]);
            if (!got) continue;
            size_t worst;
            double e = err_vs(got, want, nh, &worst);
            printf("%-40s chunk %-3u %s  h max rel err %.3g\n", vt_golden_name(&gd), chunks[c],
                   reverse ? "rev" : "fwd", e);
            CHECK(e <= 1e-5, "%s chunk %u: max rel err %.3g at %zu (got %.7g want %.7g)", vt_golden_name(&gd),
                  chunks[c], e, worst, got[worst], want[worst]);
            free(got);
        }
        free(q), free(k), free(v), free(ip), free(fp), free(want);
        vt_golden_close(&gd);
    }
    vt_golden_list_free(paths, n);
}

typedef struct scan_case {
    uint32_t S, NH, DH;
    bool nxai, reverse, extremes;
    uint32_t chunk;
} scan_case;

/* Input gate biases per head: above the fp32 exp overflow (95 > 88.72), neutral, tiny, moderate; forget gate
 * biases: remember, forget strongly, remember, forget completely (the seed floors ln 1e-6; the row max drops below
 * -10 so the clamp decides). */
static const float EXT_I[4] = {95.0f, 0.0f, -25.0f, 2.0f}, EXT_F[4] = {3.0f, -6.0f, 3.0f, -16.0f};

static void scan_random(vkvit_ctx *ctx, const scan_case *c) {
    const uint32_t B = 1, NH = c->NH, S = c->S, DH = c->DH;
    const size_t nqk = (size_t)B * NH * S * DH, ng = (size_t)B * NH * S;
    float *q = malloc(nqk * 4), *k = malloc(nqk * 4), *v = malloc(nqk * 4), *ip = malloc(ng * 4), *fp = malloc(ng * 4);
    /* NX-AI extremes: correlated q, k (mean 1) keep the official |sum| normaliser away from 0 (golden note). */
    const float qk_mean = c->extremes && c->nxai ? 1.0f : 0.0f;
    for (size_t i = 0; i < nqk; i++) {
        q[i] = qk_mean + 2.0f * vt_rand_f();
        k[i] = qk_mean + 2.0f * vt_rand_f();
        v[i] = 2.0f * vt_rand_f();
    }
    for (size_t i = 0; i < ng; i++) {
        const uint32_t h = (uint32_t)((i / S) % NH);
        ip[i] = 2.0f * vt_rand_f() + (c->extremes ? EXT_I[h % 4] : 0.0f);
        fp[i] = 2.0f * vt_rand_f() + (c->extremes ? EXT_F[h % 4] : 3.0f);
    }
    double *want = malloc(nqk * sizeof *want);
    for (size_t bh = 0; bh < (size_t)B * NH; bh++)
        ref_scan_head(q + bh * S * DH, k + bh * S * DH, v + bh * S * DH, ip + bh * S, fp + bh * S, S, DH, c->nxai,
                      want + bh * S * DH);
    float *got = gpu_scan(ctx, q, k, v, ip, fp, B, NH, S, DH, c->nxai, c->reverse, c->chunk);
    if (got) {
        size_t worst;
        double e = vt_max_rel_err(got, want, nqk, &worst);
        printf("random scan %-5s S=%-4u NH=%u DH=%-2u %s chunk %-2u %-8s  max rel err vs float64 %.3g\n",
               c->nxai ? "nxai" : "seed", S, NH, DH, c->reverse ? "rev" : "fwd", c->chunk,
               c->extremes ? "extremes" : "typical", e);
        CHECK(e <= 2e-5, "random scan %s S=%u %s: max rel err %.3g at %zu (got %.7g want %.7g)",
              c->nxai ? "nxai" : "seed", S, c->extremes ? "extremes" : "typical", e, worst, got[worst], want[worst]);
        free(got);
    }
    free(q), free(k), free(v), free(ip), free(fp), free(want);
}

/* ------------------------------------------------------------------------------------------------------------
 * The prep alone (conv1d + SiLU + headwise q'/v), both output layouts, every conv kernel size path
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct prep_case {
    uint32_t B, S, E, NH, K, run;
    bool reverse, v_transposed;
} prep_case;

/* vkvit__op_mlstm_prep on fresh random inputs against a float64 loop written from docs/math.md 7.1 (mlstm.h's
 * formulas): q', a and v, or q', a and vT with its padding columns (S .. S_pad-1) zero; <= 1e-5 of the largest
 * value. The kernel's sliding window covers K <= 4 (K = 4 the real models' size, 1-3 with zero slots), the rest
 * reads its K rows; runs of token groups start mid-sequence, so S spans several runs and ends mid-group. */
static void prep_random(vkvit_ctx *ctx, const prep_case *c) {
    const uint32_t B = c->B, S = c->S, E = c->E, K = c->K, NH = c->NH, NP = E / 4, rows = B * S;
    const uint32_t DH = E / NH, S_pad = (S + 3) & ~3u;
    float *up = malloc((size_t)rows * 2 * E * 4), *cw = malloc((size_t)E * K * 4), *cb = malloc((size_t)E * 4);
    float *wqk = malloc((size_t)E * 4 * 4), *wv = malloc((size_t)E * 4 * 4);
    vt_fill_rand(up, (size_t)rows * 2 * E), vt_fill_rand(cw, (size_t)E * K), vt_fill_rand(cb, E);
    vt_fill_rand(wqk, (size_t)E * 4), vt_fill_rand(wv, (size_t)E * 4);
    /* want: q', a, v in row-major [rows, 3E] */
    double *want = malloc((size_t)rows * 3 * E * sizeof *want), vmax = 0.0;
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t t = 0; t < S; t++) {
            const size_t row = (size_t)b * S + t;
            const int64_t pp = c->reverse ? (int64_t)S - 1 - t : t;
            double a[4], xm[4];
            for (uint32_t ph = 0; ph < NP; ph++) {
                for (uint32_t i = 0; i < 4; i++) {
                    const uint32_t ch = 4 * ph + i;
                    double acc = cb[ch];
                    for (uint32_t k = 0; k < K; k++) {
                        const int64_t sp = pp - (int64_t)(K - 1) + k;
                        if (sp < 0) continue;
                        const int64_t st = c->reverse ? (int64_t)S - 1 - sp : sp;
                        acc += (double)cw[ch * K + k] * up[((size_t)b * S + (size_t)st) * 2 * E + ch];
                    }
                    a[i] = acc / (1.0 + exp(-acc));
                    xm[i] = up[row * 2 * E + ch];
                }
                for (uint32_t o = 0; o < 4; o++) {
                    double q = 0.0, v = 0.0;
                    for (uint32_t i = 0; i < 4; i++) {
                        q += (double)wqk[(ph * 4 + o) * 4 + i] * a[i];
                        v += (double)wv[(ph * 4 + o) * 4 + i] * xm[i];
                    }
                    want[row * 3 * E + 4 * ph + o] = q;
                    want[row * 3 * E + E + 4 * ph + o] = a[o];
                    want[row * 3 * E + 2 * E + 4 * ph + o] = v;
                }
            }
        }
    for (size_t i = 0; i < (size_t)rows * 3 * E; i++) vmax = fmax(vmax, fabs(want[i]));

    vt_graph r;
    vt_graph_begin(&r, ctx);
    const uint32_t up_shape[2] = {rows, 2 * E}, cw_shape[3] = {E, 1, K}, blk_shape[3] = {NP, 4, 4};
    vkvit__mlstm_prep_op op = {
        .up = vt_graph_input(&r, "up", up, 2, up_shape), .conv_w = vt_graph_weight(&r, "conv_w", cw, 3, cw_shape),
        .conv_b = vt_graph_weight(&r, "conv_b", cb, 1, &E), .wqk = vt_graph_weight(&r, "wqk", wqk, 3, blk_shape),
        .wv = vt_graph_weight(&r, "wv", wv, 3, blk_shape), .B = B, .S = S, .E = E, .K = K, .reverse = c->reverse,
        .NH = NH, .v_transposed = c->v_transposed, .run = c->run,
    };
    const vkvit__mlstm_prep_out out = vkvit__op_mlstm_prep(&r.g, "prep", &op);
    vt_graph_output(&r, out.qkv);
    vt_graph_output(&r, out.vt);
    vkvit_result res = vt_graph_run(&r);
    CHECK(res == VKVIT_OK, "prep S=%u K=%u: %s", S, K, vkvit_last_error());
    CHECK(out.qkv_stride == (c->v_transposed ? 2 : 3) * E, "prep: qkv stride %u", out.qkv_stride);
    if (res == VKVIT_OK) {
        float *qkv = vt_graph_download(&r, out.qkv), *vt = c->v_transposed ? vt_graph_download(&r, out.vt) : NULL;
        double err = 0.0;
        size_t bad = 0;
        for (size_t row = 0; row < rows; row++)
            for (uint32_t col = 0; col < 3 * E; col++) {
                const uint32_t b = (uint32_t)(row / S), t = (uint32_t)(row % S), d = col % DH, h = (col - 2 * E) / DH;
                const float got = col < out.qkv_stride
                                      ? qkv[row * out.qkv_stride + col]
                                      : vt[(((size_t)b * NH + h) * DH + d) * S_pad + t]; /* v from vT */
                const double e = fabs(got - want[row * 3 * E + col]) / vmax;
                if (!(e <= err)) err = e, bad = row * 3 * E + col; /* NaN (the poisoned arena) counts */
            }
        for (uint32_t bh = 0; vt && bh < B * NH; bh++) /* vT's padding columns */
            for (uint32_t d = 0; d < DH; d++)
                for (uint32_t t = S; t < S_pad; t++)
                    if (vt[((size_t)bh * DH + d) * S_pad + t] != 0.0f) err = INFINITY, bad = t;
        printf("random prep B=%u S=%-4u E=%-3u K=%u run %-2u %s %-7s  max err / max |want| %.3g\n", B, S, E, K,
               c->run, c->reverse ? "rev" : "fwd", c->v_transposed ? "vT" : "v rows", err);
        CHECK(err <= 1e-5, "random prep S=%u K=%u %s %s: error %.3g at %zu", S, K, c->reverse ? "rev" : "fwd",
              c->v_transposed ? "vT" : "v rows", err, bad);
        free(qkv), free(vt);
    }
    vt_graph_end(&r);
    free(up), free(cw), free(cb), free(wqk), free(wv), free(want);
}

/* ------------------------------------------------------------------------------------------------------------
 * Cell and block through the real builders (weights from the golden's w.* tensors)
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct staged_model {
    vkvit_model model;
    float **owned;
    uint32_t n;
    char fold_names[2][64];                 /* the names of the two staged folds (the table points here) */
} staged_model;

static void stage_weights(vt_graph *r, const vt_golden *gd, staged_model *sm) {
    memset(sm, 0, sizeof *sm);
    vkvit__weight *table = calloc(gd->st.n_tensors + 2, sizeof *table); /* + the two folds */
    sm->owned = calloc(gd->st.n_tensors + 2, sizeof *sm->owned);
    for (uint32_t i = 0; i < gd->st.n_tensors; i++) {
        const vkvit__st_tensor *t = &gd->st.tensors[i];
        if (strncmp(t->name, "w.", 2) != 0) continue;
        sm->owned[sm->n] = vt_golden_f32_req(gd, t->name, NULL);
        table[sm->n].name = t->name;
        table[sm->n].offset[0] = table[sm->n].offset[1] = vt_graph_stage(r, sm->owned[sm->n], (size_t)t->numel);
        table[sm->n].ndim = t->ndim;
        for (uint32_t d = 0; d < t->ndim && d < VKVIT_MAX_DIMS; d++) table[sm->n].shape[d] = (uint32_t)t->shape[d];
        sm->n++;
    }
    /* The cell's folds, computed by the loader's own function from the golden's q/k/gate weights as
     * vkvit__vil_constants does for a model file: const.w.qk_fold, const.w.gate_fold for a cell golden (weights
     * "w.*"), const.w.mlstm.* for a block golden (weights "w.mlstm.*"). */
    const char *cell = vt_golden_shape(gd, "w.mlstm.q_proj.weight") ? "w.mlstm." : "w.";
    char name[5][64];
    static const char *const src[5] = {"q_proj.weight", "k_proj.weight", "v_proj.weight", "igate.weight",
                                       "fgate.weight"};
    float *w[5];
    for (uint32_t i = 0; i < 5; i++) {
        snprintf(name[i], sizeof name[i], "%s%s", cell, src[i]);
        w[i] = vt_golden_f32_req(gd, name[i], NULL);
    }
    const uint32_t E = (uint32_t)vt_golden_shape(gd, name[0])->shape[0] * 4;
    const uint32_t NH = (uint32_t)vt_golden_shape(gd, name[3])->shape[0];
    float *qk_fold = malloc((size_t)E * 4 * sizeof(float)), *gate_fold = malloc((size_t)6 * NH * E * sizeof(float));
    vkvit__mlstm_fold(w[0], w[1], w[2], w[3], w[4], E, NH, qk_fold, gate_fold);
    for (uint32_t i = 0; i < 5; i++) free(w[i]);
    snprintf(sm->fold_names[0], sizeof sm->fold_names[0], "const.%sqk_fold", cell);
    snprintf(sm->fold_names[1], sizeof sm->fold_names[1], "const.%sgate_fold", cell);
    const struct { float *data; uint32_t ndim, shape[3]; } folds[2] = {{qk_fold, 3, {E / 4, 4, 4}},
                                                                        {gate_fold, 2, {2 * NH, 3 * E, 0}}};
    for (uint32_t f = 0; f < 2; f++) {
        size_t numel = 1;
        for (uint32_t d = 0; d < folds[f].ndim; d++) numel *= folds[f].shape[d];
        sm->owned[sm->n] = folds[f].data;
        table[sm->n].name = sm->fold_names[f];
        table[sm->n].offset[0] = table[sm->n].offset[1] = vt_graph_stage(r, folds[f].data, numel);
        table[sm->n].ndim = folds[f].ndim;
        memcpy(table[sm->n].shape, folds[f].shape, sizeof folds[f].shape);
        sm->n++;
    }
    qsort(table, sm->n, sizeof *table, cmp_weight);
    sm->model = (vkvit_model){.ctx = r->ctx, .weights = table, .n_weights = sm->n};
    snprintf(sm->model.label, sizeof sm->model.label, "%.200s", vt_golden_name(gd));
}

static void staged_free(staged_model *sm) {
    for (uint32_t i = 0; i < sm->n; i++) free(sm->owned[i]);
    free(sm->owned);
    free(sm->model.weights);
}

static void check_tensor(const char *stem, const char *what, const float *got, const float *want, size_t n,
                         double tol) {
    size_t worst;
    double e = err_vs(got, want, n, &worst);
    printf("  %-44s %-6s max rel err %.3g\n", stem, what, e);
    CHECK(e <= tol, "%s %s: max rel err %.3g > %.1g at %zu (got %.7g want %.7g)", stem, what, e, tol, worst,
          got[worst], want[worst]);
}

/* kind: 0 cell, 1 block. */
/* other_class: built with the other device class's kernels (caps.cpu_device flipped: on lavapipe the GPU shapes of
 * mlstm_prep / mlstm_out and the chunked scan), so every configuration runs here. */
static void run_cell_golden(vkvit_ctx *ctx, const char *path, int kind, uint32_t chunk, bool other_class) {
    vt_golden gd;
    vt_golden_open(path, &gd);
    const cJSON *p = gd.params;
    const char *stem = vt_golden_name(&gd);
    const vkvit__st_tensor *xs = vt_golden_shape(&gd, "in.x");
    const uint32_t B = (uint32_t)xs->shape[0], S = (uint32_t)xs->shape[1], D = (uint32_t)xs->shape[2];
    const bool nxai = !strcmp(vt_json_str(p, "numerics", ""), "nxai"), reverse = vt_json_bool(p, "reverse", false);
    vkvit__mlstm_desc d = {
        .dim = D, .inner_dim = (uint32_t)vt_json_num(p, "inner_dim", 0), .num_heads = (uint32_t)vt_json_num(p, "num_heads", 0),
        .conv_kernel = (uint32_t)vt_json_num(p, "conv_kernel", 0), .nxai = nxai,
        .norm_eps = (float)vt_json_num(p, "norm_eps", 1e-5), .chunk = chunk,
    };
    CHECK((uint32_t)vt_json_num(p, "qkv_block_size", 0) == 4, "%s: qkv_block_size must be 4", stem);
    if (kind == 1)
        CHECK(!strcmp(vt_json_str(p, "norm_weight", ""), nxai ? "one_plus" : "direct"),
              "%s: norm1 weight convention '%s' is not the flavour's", stem, vt_json_str(p, "norm_weight", ""));

    const vkvit__policy saved = ctx->policy;
    if (other_class) ctx->policy.cpu_kernels = !saved.cpu_kernels;
    vt_graph r;
    vt_graph_begin(&r, ctx);
    staged_model sm;
    stage_weights(&r, &gd, &sm);
    float *x = vt_golden_f32_req(&gd, "in.x", NULL);
    uint32_t x_shape[2] = {B * S, D};
    uint32_t xt = vt_graph_input(&r, "x", x, 2, x_shape), yt = xt;
    vkvit__mlstm_aux aux = {VKVIT_NONE, {VKVIT_NONE, 0, 0, 0}};
    if (kind == 0) {
        yt = vkvit__graph_tensor(&r.g, VKVIT_TENSOR_ACTIVATION, "y", 2, x_shape);
        vkvit__mlstm_cell(&r.g, &sm.model, &d, "w.", xt, NULL, B, S, reverse, yt, false, &aux);
        vt_graph_output(&r, aux.gates);
        vt_graph_output(&r, aux.h.t);
    } else {
        vkvit__mlstm_block(&r.g, &sm.model, &d, "w.", xt, B, S, reverse);
    }
    vt_graph_output(&r, yt);
    vkvit_result res = vt_graph_run(&r);
    ctx->policy = saved;
    CHECK(res == VKVIT_OK, "%s: %s", stem, vkvit_last_error());
    if (res == VKVIT_OK) {
        char label[160];
        snprintf(label, sizeof label, "%.120s chunk %u%s", stem, chunk,
                 other_class ? (saved.cpu_kernels ? " (GPU kernels)" : " (CPU kernels)") : "");
        size_t ny;
        float *want = vt_golden_f32_req(&gd, "out.y", &ny), *got = vt_graph_download(&r, yt);
        check_tensor(label, "y", got, want, ny, 1e-5);
        free(want), free(got);
        if (kind == 0) {
            const uint32_t NH = d.num_heads, E = d.inner_dim;
            size_t nh;
            float *wh = vt_golden_f32_req(&gd, "out.hcell", &nh), *gh = download_mat(&r, aux.h, B * S, E);
            /* NX-AI: the official normaliser max(|den|, e^-M) amplifies fp32 rounding where the signed sum nearly cancels
             * (rows with |h| ~ 70 here); y, after the per-token norm, stays within 1e-5. */
            check_tensor(label, "hcell", gh, wh, nh, nxai ? 2e-4 : 1e-5);
            float *gg = vt_graph_download(&r, aux.gates);
            float *wi = vt_golden_f32_req(&gd, "out.ipre", NULL), *wf = vt_golden_f32_req(&gd, "out.fpre", NULL);
            float *gi = malloc((size_t)B * S * NH * 4), *gf = malloc((size_t)B * S * NH * 4);
            for (size_t rr = 0; rr < (size_t)B * S; rr++)
                for (uint32_t h = 0; h < NH; h++) {
                    gi[rr * NH + h] = gg[rr * 2 * NH + h];
                    gf[rr * NH + h] = gg[rr * 2 * NH + NH + h];
                }
            check_tensor(label, "ipre", gi, wi, (size_t)B * S * NH, 1e-5);
            check_tensor(label, "fpre", gf, wf, (size_t)B * S * NH, 1e-5);
            free(wh), free(gh), free(gg), free(wi), free(wf), free(gi), free(gf);
        }
    }
    free(x);
    vt_graph_end(&r);
    staged_free(&sm);
    vt_golden_close(&gd);
}

static void cell_goldens(vkvit_ctx *ctx) {
    char **paths;
    size_t n = vt_golden_list("tests/golden/ops/mlstm_cell_*.safetensors", &paths);
    CHECK(n >= 16, "found %zu mlstm_cell goldens", n);
    for (size_t i = 0; i < n; i++) {
        run_cell_golden(ctx, paths[i], 0, 0, false);
        if (strstr(paths[i], "_s257_") || strstr(paths[i], "_rev_s64_")) run_cell_golden(ctx, paths[i], 0, 5, false);
    }
    vt_golden_list_free(paths, n);
    n = vt_golden_list("tests/golden/ops/mlstm_block_*.safetensors", &paths);
    CHECK(n >= 4, "found %zu mlstm_block goldens", n);
    for (size_t i = 0; i < n; i++) {
        run_cell_golden(ctx, paths[i], 1, 0, false);
        run_cell_golden(ctx, paths[i], 1, 0, true);
    }
    vt_golden_list_free(paths, n);
}

/* ------------------------------------------------------------------------------------------------------------
 * Whole networks: the public API, then the CLI
 * ------------------------------------------------------------------------------------------------------------ */

/* The loader packs each block's fgate bias right after igate's (src/arch/vil.c packed_after: one gate GEMM) and
 * adds each block's folds (vkvit__vil_constants) at their shapes; every other weight starts on a VKVIT_ARENA_ALIGN
 * boundary. */
static void check_gate_packing(const vkvit_model *m, const char *stem) {
    const vkvit__vil_config *c = &m->cfg.vil;
    uint32_t packed = 0, folds = 0;
    for (uint32_t i = 0; i < m->n_weights; i++) {
        const vkvit__weight *w = &m->weights[i];
        const bool qk = strstr(w->name, ".qk_fold") != NULL, gate = strstr(w->name, ".gate_fold") != NULL;
        if (qk || gate) {
            const uint32_t want[3] = {qk ? c->inner_dim / 4 : 2 * c->num_heads, qk ? 4 : 3 * c->inner_dim, qk ? 4 : 0};
            CHECK(!strncmp(w->name, "const.blocks.", 13) && w->ndim == (qk ? 3u : 2u) && w->shape[0] == want[0] &&
                      w->shape[1] == want[1] && (!qk || w->shape[2] == want[2]),
                  "%s: fold '%s' has the wrong name or shape", stem, w->name);
            folds++;
        }
        const char *f = strstr(w->name, "fgate.bias");
        if (!f) {
            CHECK(w->offset[VKVIT_IMAGE_F32] % VKVIT_ARENA_ALIGN == 0, "%s: '%s' at %llu is not aligned", stem, w->name,
                  (unsigned long long)w->offset[VKVIT_IMAGE_F32]);
            continue;
        }
        char leader[256];
        snprintf(leader, sizeof leader, "%s", w->name);
        leader[f - w->name] = 'i';
        const vkvit__weight *l = NULL;
        for (uint32_t j = 0; j < m->n_weights; j++)
            if (!strcmp(m->weights[j].name, leader)) l = &m->weights[j];
        uint64_t bytes = 4;
        for (uint32_t d = 0; l && d < l->ndim; d++) bytes *= l->shape[d];
        CHECK(l && w->offset[VKVIT_IMAGE_F32] == l->offset[VKVIT_IMAGE_F32] + bytes, "%s: '%s' is not packed after '%s'", stem, w->name, leader);
        packed++;
    }
    CHECK(packed == c->depth, "%s: %u packed gate biases for %u blocks", stem, packed, c->depth);
    CHECK(folds == 2 * c->depth, "%s: %u folds for %u blocks", stem, folds, c->depth);
}

/* The q/k projections and gate weights only feed the folds (src/arch/vil.c host_only): none is on the device or
 * in the weight list, and a non-finite value in one is still refused, by its name. */
static void check_host_only(vkvit_ctx *ctx, const vkvit_model *m, const char *path, const char *stem) {
    static const char *const FOLDED[] = {"q_proj.weight", "k_proj.weight", "igate.weight", "fgate.weight"};
    for (uint32_t i = 0; i < m->n_weights; i++)
        for (size_t k = 0; k < VKVIT_ARRAY_LEN(FOLDED); k++)
            CHECK(!vkvit__name_ends_with(m->weights[i].name, FOLDED[k]), "%s: '%s' is on the device", stem,
                  m->weights[i].name);

    vkvit__model_file mf;
    MUST(vkvit__model_file_load(path, NULL, 0, NULL, &mf));
    const char *name = "blocks.1.mlstm.k_proj.weight";
    const vkvit__st_tensor *t = vkvit__model_file_tensor(&mf, name);
    CHECK(t != NULL, "%s: no '%s'", stem, name);
    const bool found = t != NULL;
    const size_t start = t ? t->offset : 0, at = t ? t->offset + t->size / 2 : 0; /* a middle element's byte */
    const vkvit__st_dtype dtype = t ? t->dtype : VKVIT_ST_F32;
    vkvit__model_file_close(&mf);                               /* t is gone from here on */
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "%s: cannot open %s", stem, path);
    if (!found || !f) {
        if (f) fclose(f);
        return;
    }
    fseek(f, 0, SEEK_END);
    const size_t size = (size_t)ftell(f);
    uint8_t *bytes = malloc(size);
    rewind(f);
    const bool read_all = bytes && fread(bytes, 1, size, f) == size;
    fclose(f);
    CHECK(read_all, "%s: cannot read %s", stem, path);
    if (read_all) {
        const size_t esz = dtype == VKVIT_ST_F32 ? 4 : 2, e = at - (at - start) % esz;
        const uint32_t nan32 = 0x7fc00000u;
        const uint16_t nan16 = dtype == VKVIT_ST_F16 ? 0x7e00u : 0x7fc0u;
        memcpy(bytes + e, esz == 4 ? (const void *)&nan32 : (const void *)&nan16, esz); /* little-endian host */
        vkvit_model *bad = NULL;
        vkvit_result res = vkvit_model_create(ctx, &(vkvit_model_desc){.data = bytes, .size = size, .label = stem},
                                              &bad);
        const char *err = vkvit_last_error();
        CHECK(res == VKVIT_ERROR_BAD_MODEL_FILE && !bad && strstr(err, name) && strstr(err, "non-finite"),
              "%s: a NaN in %s: want BAD_MODEL_FILE naming it, got %d: %s", stem, name, (int)res, err);
        printf("%-10s NaN in %s: refused (%s)\n", stem, name, err);
        vkvit_model_destroy(bad);
    }
    free(bytes);
}

static void network(vkvit_ctx *ctx, const char *stem) {
    char model_path[512], io_path[512];
    snprintf(model_path, sizeof model_path, MODELS "%s.vkvit", stem);
    snprintf(io_path, sizeof io_path, MODELS "%s.io.safetensors", stem);
    vt_golden io;
    vt_golden_open(io_path, &io);
    size_t n_in, n_out;
    float *input = vt_golden_f32_req(&io, "input", &n_in), *want = vt_golden_f32_req(&io, "logits", &n_out);
    const uint32_t batch = (uint32_t)vt_golden_shape(&io, "input")->shape[0];
    vt_golden_close(&io);

    vkvit_model *model = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = model_path}, &model));
    check_gate_packing(model, stem);
    check_host_only(ctx, model, model_path, stem);
    float *got = malloc(n_out * 4), *again = malloc(n_out * 4);
    for (int prec = 0; prec < (fp16_sessions(ctx) ? 2 : 1); prec++) {
        vkvit_session *s = NULL;
        vkvit_session_desc sd = {.batch = batch, .precision = prec ? VKVIT_PRECISION_FP16 : VKVIT_PRECISION_FP32};
        MUST(vkvit_session_create(model, &sd, &s));
        for (size_t i = 0; i < n_out; i++) got[i] = NAN;
        MUST(vkvit_session_set_input(s, input, n_in));
        MUST(vkvit_session_run(s));
        MUST(vkvit_session_get_output(s, got, n_out));
        size_t worst;
        double e = err_vs(got, want, n_out, &worst);
        vkvit_session_stats st;
        MUST(vkvit_session_get_stats(s, &st));
        printf("%-10s %s batch %u  logits max rel err %.3g  (%u nodes, %u barriers, %u pipelines)\n", stem,
               prec ? "fp16 weights" : "fp32        ", batch, e, st.nodes, st.barriers, st.pipelines);
        CHECK(e <= (prec ? 1e-2 : 1e-4), "%s %s: logits max rel err %.3g at %zu (got %.7g want %.7g)", stem,
              prec ? "fp16" : "fp32", e, worst, got[worst], want[worst]);
        if (!prec) {
            MUST(vkvit_session_run(s));
            MUST(vkvit_session_get_output(s, again, n_out));
            CHECK(memcmp(again, got, n_out * 4) == 0, "%s: a replay gave other logits", stem);
        }
        vkvit_session_destroy(s);
    }
    vkvit_model_destroy(model);
    free(got), free(again), free(input);

    /* `vkvit run` on the same files, validation on. */
    char out_path[512], cmd[2048], out[8192];
    snprintf(out_path, sizeof out_path, "%s/test_vil_%s_%d.safetensors", VKVIT_BINARY_DIR, stem, (int)getpid());
    snprintf(cmd, sizeof cmd, "VKVIT_VALIDATION=1 " CLI " run --model %s --input %s --output %s 2>&1", model_path,
             io_path, out_path);
    FILE *pp = popen(cmd, "r");
    size_t len = 0;
    if (pp) {
        len = fread(out, 1, sizeof out - 1, pp);
        out[len] = 0;
    }
    int rc = pp ? pclose(pp) : -1;
    CHECK(rc == 0, "vkvit run %s: rc %d\n%s", stem, rc, pp ? out : "");
    CHECK(pp && !strstr(out, "Validation") && !strstr(out, "VUID"), "vkvit run %s printed a validation message:\n%s",
          stem, out);
    if (rc == 0) {
        vt_golden res;
        vt_golden_open(out_path, &res);
        size_t n_got;
        float *g = vt_golden_f32_req(&res, "logits", &n_got);
        CHECK(n_got == n_out, "vkvit run %s: %zu logits, want %zu", stem, n_got, n_out);
        if (n_got == n_out) {
            size_t worst;
            double e = err_vs(g, want, n_out, &worst);
            printf("vkvit run %-10s logits max rel err %.3g\n", stem, e);
            CHECK(e <= 1e-4, "vkvit run %s: max rel err %.3g at %zu", stem, e, worst);
        }
        free(g);
        vt_golden_close(&res);
        remove(out_path);
    }
    free(want);
}

int main(int argc, char **argv) {
    vkvit_ctx *ctx = vt_ctx();
    const char *only = argc > 1 ? argv[1] : NULL; /* "scan", "random", "prep", "cell", "net" */
    if (!only || !strcmp(only, "scan")) scan_goldens(ctx);
    if (!only || !strcmp(only, "random")) {
        static const uint32_t lengths[] = {1, 7, 64, 196, 257, 1000};
        for (int nx = 0; nx < 2; nx++)
            for (size_t i = 0; i < VKVIT_ARRAY_LEN(lengths); i++) {
                scan_case c = {.S = lengths[i], .NH = 2, .DH = 16, .nxai = nx, .reverse = i % 2 == 1};
                scan_random(ctx, &c);
            }
        /* Head dims of real models (several value tiles per head), a long sequence (256 chunks), and head dims
         * that end a 16-column block early or are not a multiple of 4 (the CPU output loop reads v as vec4
         * texels only when DH % 4 == 0) or span two 256-column tiles. */
        static const scan_case wide[] = {
            {.S = 1000, .NH = 1, .DH = 96, .nxai = false, .reverse = true},
            {.S = 600, .NH = 1, .DH = 192, .nxai = true, .reverse = false, .chunk = 32},
            {.S = 4096, .NH = 1, .DH = 16, .nxai = false, .reverse = false},
            {.S = 37, .NH = 3, .DH = 6, .nxai = false, .reverse = true},
            {.S = 23, .NH = 2, .DH = 18, .nxai = true, .reverse = false, .chunk = 7},
            {.S = 50, .NH = 1, .DH = 300, .nxai = false, .reverse = false},
            {.S = 20, .NH = 2, .DH = 258, .nxai = true, .reverse = true, .chunk = 5},
        };
        for (size_t i = 0; i < VKVIT_ARRAY_LEN(wide); i++) scan_random(ctx, &wide[i]);
        for (int nx = 0; nx < 2; nx++)
            for (int rev = 0; rev < 2; rev++) {
                scan_case c = {.S = 100, .NH = 4, .DH = 8, .nxai = nx, .reverse = rev, .extremes = true,
                               .chunk = rev ? 7 : 0};
                scan_random(ctx, &c);
            }
    }
    if (!only || !strcmp(only, "prep")) {
        /* S = 1 (one padded group), 7 (ends mid-group), 61 (several runs of the CPU kernel, mid-group), 196
         * (ViL's); K = 4, the window's other sizes (1, 3) and one past it (6); two images; NH = 2 for vT; runs
         * of the device's choice (0) and of one group (GPUs' choice; 3 for S = 61). */
        static const uint32_t lengths[] = {1, 7, 61, 196}, kernels[] = {4, 1, 3, 6};
        for (size_t i = 0; i < VKVIT_ARRAY_LEN(lengths); i++)
            for (size_t k = 0; k < VKVIT_ARRAY_LEN(kernels); k++)
                for (int rev = 0; rev < 2; rev++)
                    for (int vt = 0; vt < 2; vt++)
                        for (uint32_t run = 0; run < 2; run++) {
                            prep_case c = {.B = 2, .S = lengths[i], .E = 16, .NH = 2, .K = kernels[k],
                                           .run = run && lengths[i] == 61 ? 3 : run, .reverse = rev,
                                           .v_transposed = vt};
                            prep_random(ctx, &c);
                        }
    }
    if (!only || !strcmp(only, "cell")) cell_goldens(ctx);
    if (!only || !strcmp(only, "net")) {
        network(ctx, "vil_seed");
        network(ctx, "vil_nxai");
    }
    return vt_finish(ctx);
}
