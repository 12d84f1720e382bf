// SPDX-License-Identifier: Apache-2.0
/* Attention core (shaders/attention.comp) and the host RoPE tables (src/model/rope.c).
 *
 *   1. rope:    the C tables of every vit5_attention golden, expanded to [T, dk], against out.rope_cos / rope_sin.
 *   2. vit5:    every tests/golden/ops/vit5_attention_*.safetensors end to end on the device:
 *               qkv = GEMM(x, qkv.weight) (+bias) -> attention on the fused [B, T, 3C] buffer -> GEMM(o, proj.weight)
 *               (+bias), against out.y.
 *   3. generic: every tests/golden/ops/attention_*.safetensors (generic Attention: RoPE then L2 norm, causal,
 *               cross-attention) on the attention core alone, against out.y.
 *   4. random:  odd shapes against a plain-C double-precision reference written from the PyTorch formulas (the
 *               [T, dk] tables, rotate_split_half / rotate_adjacent, RMSNorm / F.normalize, softmax), fresh inputs,
 *               NaN-poisoned outputs whose row padding must stay NaN. Some cases force small tiles and the
 *               subgroup (tpr > 1) variant so tile edges and the shuffle reduction are exercised on any device.
 *   5. perf:    GPU-timestamp time of the ViT-5-S shape (B=1, T=201, C=384, H=6), printed, never asserted.
 *   6. paths:   vkvit__op_rope_attention in a one-op graph (planned arena poisoned with NaN, data-flow barriers),
 *               both the fused path and the unfused GEMM path (prep -> S = q~ k~T -> row softmax -> S vT^T), on random
 *               shapes (T 1..257, dk 32..128, B 1 and 3, both pairings, qk-norm on/off) against the same reference.
 * Metric: max |got - want| / max |want| over the output. Everything runs under the validation layer (with
 * synchronization validation), which must stay silent. */
#include "golden_util.h"
#include "model/rope.h"
#include "ops/ops.h"
#include "test_util.h"

#define ROPE_TOL 2e-7     /* absolute, on cos/sin tables */
#define GOLDEN_TOL 1e-5   /* relative to max |want| */
#define RANDOM_TOL 1e-5

/* ------------------------------------------------------------------------------------------------------------
 * Small helpers: buffers, a kernel cache (one pipeline per distinct config), one-shot dispatch
 * ------------------------------------------------------------------------------------------------------------ */

static vkvit__buffer upload(vkvit_ctx *ctx, const float *data, size_t n, const char *label) {
    vkvit__buffer b;
    MUST(vkvit__buffer_create(ctx, (n ? n : 1) * 4, VKVIT_MEM_DEVICE, label, &b));
    if (data && n) MUST(vkvit__buffer_upload(ctx, &b, 0, data, n * 4));
    else MUST(vkvit__buffer_fill(ctx, &b, 0, (n ? n : 1) * 4, 0));
    return b;
}

static vkvit__buffer poisoned(vkvit_ctx *ctx, size_t n, const char *label) {
    vkvit__buffer b;
    MUST(vkvit__buffer_create(ctx, n * 4, VKVIT_MEM_DEVICE, label, &b));
    MUST(vkvit__buffer_fill(ctx, &b, 0, n * 4, VT_NAN_BITS));
    return b;
}

static float *download(vkvit_ctx *ctx, vkvit__buffer *b, size_t n) {
    float *h = malloc(n * 4);
    MUST(vkvit__buffer_download(ctx, b, 0, h, n * 4));
    return h;
}

typedef struct cached_kernel {
    vkvit__attention_config cfg;
    vkvit__kernel k;
} cached_kernel;

static cached_kernel kcache[96];
static size_t kcache_n;

static bool same_cfg(const vkvit__attention_config *a, const vkvit__attention_config *b) {
    return a->mode == b->mode && a->dk == b->dk && a->qk_norm == b->qk_norm && a->rope == b->rope &&
           a->rope_axes == b->rope_axes && a->causal == b->causal && a->bq == b->bq && a->bk == b->bk &&
           a->kc == b->kc && a->tpr == b->tpr && a->rpi == b->rpi;
}

static const vkvit__kernel *attention_kernel(vkvit_ctx *ctx, const vkvit__attention_config *cfg) {
    for (size_t i = 0; i < kcache_n; i++)
        if (same_cfg(&kcache[i].cfg, cfg)) return &kcache[i].k;
    if (kcache_n == VKVIT_ARRAY_LEN(kcache)) {
        fprintf(stderr, "FATAL: kernel cache full\n");
        exit(1);
    }
    cached_kernel *e = &kcache[kcache_n++];
    e->cfg = *cfg;
    MUST(vkvit__attention_kernel_create(ctx, cfg, "test attention", &e->k));
    return &e->k;
}

/* Records and runs one attention dispatch. */
static void run_attention(vkvit_ctx *ctx, const vkvit__attention_config *cfg, const vkvit__attention_push *push,
                          uint32_t H, uint32_t B, const vkvit__buffer *q, const vkvit__buffer *k,
                          const vkvit__buffer *v, const vkvit__buffer *rope, const vkvit__buffer *w,
                          const vkvit__buffer *o) {
    const vkvit__kernel *kern = attention_kernel(ctx, cfg);
    vkvit__descriptors pool;
    VkDescriptorSet set;
    MUST(vkvit__descriptors_create(ctx, 1, &pool));
    vkvit__binding binds[6] = {{q, 0, 0}, {k, 0, 0}, {v, 0, 0}, {rope, 0, 0}, {w, 0, 0}, {o, 0, 0}};
    MUST(vkvit__descriptor_set_create(ctx, &pool, kern, binds, &set));
    VkCommandBuffer cmd;
    MUST(vkvit__cmd_begin(ctx, &cmd));
    vkvit__attention_record(ctx, cmd, kern, cfg, set, push, H, B);
    MUST(vkvit__cmd_submit_wait(ctx, cmd));
    vkvit__descriptors_destroy(ctx, &pool);
}

/* ------------------------------------------------------------------------------------------------------------
 * Double-precision reference, written from the PyTorch code (tools/reference/vit5.py, generic.py)
 * ------------------------------------------------------------------------------------------------------------ */

/* rotate_split_half(x, axes) / rotate_adjacent(x) on one head vector. */
static void ref_rotate(const double *x, uint32_t dk, vkvit__rope_pairing pairing, uint32_t axes, double *rot) {
    if (pairing == VKVIT_ROPE_ADJACENT) {
        for (uint32_t i = 0; i < dk / 2; i++) rot[2 * i] = -x[2 * i + 1], rot[2 * i + 1] = x[2 * i];
        return;
    }
    const uint32_t da = dk / axes, half = da / 2;
    for (uint32_t a = 0; a < axes; a++)
        for (uint32_t c = 0; c < half; c++) {
            rot[a * da + c] = -x[a * da + c + half];
            rot[a * da + c + half] = x[a * da + c];
        }
}

/* The q or k prologue of one (token, head) vector x[dk] (in place). `cos`/`sin` are the token's [dk] rows. */
static void ref_prologue(const vkvit__attention_config *cfg, double *x, const float *cos, const float *sin,
                         const float *w, double eps) {
    const uint32_t dk = cfg->dk;
    double rot[256];
    if (cfg->mode == VKVIT_ATTENTION_QKNORM_ROPE && cfg->qk_norm) {      /* RMSNorm BEFORE RoPE */
        double ss = 0;
        for (uint32_t c = 0; c < dk; c++) ss += x[c] * x[c];
        double r = 1.0 / sqrt(ss / dk + eps);
        for (uint32_t c = 0; c < dk; c++) x[c] = x[c] * r * w[c];
    }
    if (cfg->rope != VKVIT_ROPE_NONE) {
        ref_rotate(x, dk, cfg->rope, cfg->rope_axes ? cfg->rope_axes : 2, rot);
        for (uint32_t c = 0; c < dk; c++) x[c] = x[c] * cos[c] + rot[c] * sin[c];
    }
    if (cfg->mode == VKVIT_ATTENTION_GENERIC && cfg->qk_norm) {   /* F.normalize AFTER RoPE */
        double ss = 0;
        for (uint32_t c = 0; c < dk; c++) ss += x[c] * x[c];
        double n = fmax(sqrt(ss), eps);
        for (uint32_t c = 0; c < dk; c++) x[c] /= n;
    }
}

/* want[B][Tq][H*dk]. Addresses follow the push constants; cos/sin are [T][dk] tables (NULL without RoPE); w is
 * q_norm.weight then k_norm.weight. */
static void ref_attention(const vkvit__attention_config *cfg, const vkvit__attention_push *p, uint32_t H, uint32_t B,
                          const float *qs, const float *ks, const float *vs, const float *cos, const float *sin,
                          const float *w, double *want) {
    const uint32_t dk = cfg->dk, C = H * dk;
    double *qt = malloc((size_t)p->Tq * dk * sizeof(double));
    double *kt = malloc((size_t)p->Tkv * dk * sizeof(double));
    double *sc = malloc((size_t)p->Tkv * sizeof(double));
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t h = 0; h < H; h++) {
            for (uint32_t i = 0; i < p->Tq; i++) {
                const float *src = qs + (size_t)b * p->q_batch_stride + (size_t)i * p->q_stride + p->q_offset + h * dk;
                for (uint32_t c = 0; c < dk; c++) qt[(size_t)i * dk + c] = src[c];
                ref_prologue(cfg, qt + (size_t)i * dk, cos ? cos + (size_t)i * dk : NULL,
                             sin ? sin + (size_t)i * dk : NULL, w, p->eps);
            }
            for (uint32_t j = 0; j < p->Tkv; j++) {
                const float *src = ks + (size_t)b * p->k_batch_stride + (size_t)j * p->k_stride + p->k_offset + h * dk;
                for (uint32_t c = 0; c < dk; c++) kt[(size_t)j * dk + c] = src[c];
                ref_prologue(cfg, kt + (size_t)j * dk, cos ? cos + (size_t)j * dk : NULL,
                             sin ? sin + (size_t)j * dk : NULL, w ? w + dk : NULL, p->eps);
            }
            for (uint32_t i = 0; i < p->Tq; i++) {
                const uint32_t nj = cfg->causal ? VKVIT_MIN(p->Tkv, i + 1) : p->Tkv;
                double mx = -INFINITY, z = 0;
                for (uint32_t j = 0; j < nj; j++) {
                    double s = 0;
                    for (uint32_t c = 0; c < dk; c++) s += qt[(size_t)i * dk + c] * kt[(size_t)j * dk + c];
                    sc[j] = s * p->scale;
                    mx = fmax(mx, sc[j]);
                }
                for (uint32_t j = 0; j < nj; j++) z += (sc[j] = exp(sc[j] - mx));
                double *dst = want + ((size_t)b * p->Tq + i) * C + h * dk;
                for (uint32_t c = 0; c < dk; c++) {
                    double acc = 0;
                    for (uint32_t j = 0; j < nj; j++)
                        acc += sc[j] * vs[(size_t)b * p->v_batch_stride + (size_t)j * p->v_stride + p->v_offset +
                                          h * dk + c];
                    dst[c] = acc / z;
                }
            }
        }
    free(qt), free(kt), free(sc);
}

/* Gathers the [B][Tq][C] part of an output laid out with o_stride / o_offset / o_batch_stride and counts padding
 * entries that are no longer NaN (written out of bounds). */
static float *gather_output(const float *o, const vkvit__attention_push *p, uint32_t C, uint32_t B, size_t n_o,
                            size_t *pad_written) {
    float *got = malloc((size_t)B * p->Tq * C * 4);
    char *mine = calloc(n_o, 1);
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t i = 0; i < p->Tq; i++)
            for (uint32_t c = 0; c < C; c++) {
                size_t at = (size_t)b * p->o_batch_stride + (size_t)i * p->o_stride + p->o_offset + c;
                got[((size_t)b * p->Tq + i) * C + c] = o[at];
                mine[at] = 1;
            }
    *pad_written = 0;
    for (size_t x = 0; x < n_o; x++)
        if (!mine[x] && !isnan(o[x])) (*pad_written)++;
    free(mine);
    return got;
}

/* ------------------------------------------------------------------------------------------------------------
 * 1 + 2. ViT5Attention goldens: RoPE tables, then the module end to end
 * ------------------------------------------------------------------------------------------------------------ */

static vkvit__rope_pairing parse_pairing(const char *s) {
    if (!strcmp(s, "split_half")) return VKVIT_ROPE_SPLIT_HALF;
    if (!strcmp(s, "adjacent")) return VKVIT_ROPE_ADJACENT;
    fprintf(stderr, "FATAL: unknown rope_pairing '%s'\n", s);
    exit(1);
}

/* GEMM kernels (src/ops/gemm.h), one per (tile config, bias): the goldens share them. */
typedef struct cached_gemm {
    vkvit__gemm_config cfg;
    bool bias;
    vkvit__kernel k;
} cached_gemm;

static cached_gemm gcache[8];
static size_t gcache_n;

static const vkvit__kernel *gemm_kernel(vkvit_ctx *ctx, const vkvit__gemm_config *cfg, bool bias) {
    for (size_t i = 0; i < gcache_n; i++)
        if (!memcmp(&gcache[i].cfg, cfg, sizeof *cfg) && gcache[i].bias == bias) return &gcache[i].k;
    if (gcache_n == VKVIT_ARRAY_LEN(gcache)) {
        fprintf(stderr, "FATAL: gemm kernel cache full\n");
        exit(1);
    }
    cached_gemm *e = &gcache[gcache_n++];
    e->cfg = *cfg;
    e->bias = bias;
    vkvit__gemm_epilogue ep = {.bias = bias};
    MUST(vkvit__gemm_kernel_create(ctx, cfg, &ep, "test gemm", &e->k));
    return &e->k;
}

/* Records D (M, N) = A (M, K) W (N, K)^T (+ bias). One tile configuration serves every golden (the GEMM handles
 * any shape with any configuration, and has its own tests): each further configuration would be one more pipeline
 * to compile, seconds each on llvmpipe. */
static void gemm(vkvit_ctx *ctx, VkCommandBuffer cmd, vkvit__descriptors *pool, uint32_t M, uint32_t N, uint32_t K,
                 const vkvit__buffer *a, const vkvit__buffer *w, const vkvit__buffer *bias, const vkvit__buffer *d) {
    vkvit__gemm_config cfg = vkvit__gemm_pick(ctx, 64, 192, 64);
    vkvit__gemm_push push = {.M = M, .N = N, .K = K, .stride_a = K, .stride_b = K, .stride_d = N};
    cfg.vec4 = vkvit__gemm_push_vec4(&push, 1);
    const vkvit__kernel *k = gemm_kernel(ctx, &cfg, bias != NULL);
    VkDescriptorSet set;
    /* 0 A, 1 B, 2 bias, 3 D, 4 scale, 5 residual (disabled terms: any buffer) */
    vkvit__binding binds[6] = {{a, 0, 0}, {w, 0, 0}, {bias ? bias : w, 0, 0}, {d, 0, 0}, {w, 0, 0}, {w, 0, 0}};
    MUST(vkvit__descriptor_set_create(ctx, pool, k, binds, &set));
    vkvit__gemm_record(ctx, cmd, k, &cfg, set, &push, 1);
}

static void vit5_golden_case(vkvit_ctx *ctx, const char *path) {
    vt_golden g;
    vt_golden_open(path, &g);
    const cJSON *P = g.params;
    const uint32_t B = (uint32_t)vt_json_num(P, "batch", 0), T = (uint32_t)vt_json_num(P, "tokens", 0);
    const uint32_t H = (uint32_t)vt_json_num(P, "num_heads", 0), dk = (uint32_t)vt_json_num(P, "head_dim", 0);
    const uint32_t C = H * dk;
    const bool qk_norm = vt_json_bool(P, "qk_norm", false);
    vkvit__rope_axial_desc rd = {
        .head_dim = dk,
        .grid_h = (uint32_t)vt_json_num(P, "num_patches_h", 0),
        .grid_w = (uint32_t)vt_json_num(P, "num_patches_w", 0),
        .num_registers = (uint32_t)vt_json_num(P, "num_registers", 0),
        .has_cls = vt_json_bool(P, "has_cls", false),
        .rope_base = (float)vt_json_num(P, "rope_base", 1e4),
        .reg_rope_base = (float)vt_json_num(P, "reg_rope_base", 100),
        .layout = strcmp(vt_json_str(P, "token_layout", ""), "cls_patches_regs") ? VKVIT_TOKENS_PATCHES_CLS_REGS
                                                                                  : VKVIT_TOKENS_CLS_PATCHES_REGS,
    };
    CHECK(vkvit__rope_axial_tokens(&rd) == T, "%s: table rows %u != tokens %u", vt_golden_name(&g),
          vkvit__rope_axial_tokens(&rd), T);

    /* 1. RoPE tables. */
    float *table = malloc((size_t)T * dk * 4), *cos = malloc((size_t)T * dk * 4), *sin = malloc((size_t)T * dk * 4);
    MUST(vkvit__rope_axial_table(&rd, table));
    vkvit__rope_expand(table, T, dk, cos, sin);
    size_t n_cos;
    float *want_cos = vt_golden_f32_req(&g, "out.rope_cos", &n_cos);
    float *want_sin = vt_golden_f32_req(&g, "out.rope_sin", NULL);
    double rope_err = 0;
    size_t bit_exact = 0;
    for (size_t x = 0; x < n_cos && x < (size_t)T * dk; x++) {
        rope_err = fmax(rope_err, fmax(fabs((double)cos[x] - want_cos[x]), fabs((double)sin[x] - want_sin[x])));
        bit_exact += cos[x] == want_cos[x] && sin[x] == want_sin[x];
    }
    CHECK(n_cos == (size_t)T * dk && rope_err <= ROPE_TOL, "%s: rope table max abs err %.3g (%zu of %zu entries)",
          vt_golden_name(&g), rope_err, n_cos, (size_t)T * dk);

    /* 2. The module: qkv GEMM -> attention -> proj GEMM. */
    size_t nx, n_want;
    float *x = vt_golden_f32_req(&g, "in.x", &nx), *want_y = vt_golden_f32_req(&g, "out.y", &n_want);
    float *wqkv = vt_golden_f32_req(&g, "w.qkv.weight", NULL), *wproj = vt_golden_f32_req(&g, "w.proj.weight", NULL);
    float *bqkv = vt_golden_f32(&g, "w.qkv.bias", NULL), *bproj = vt_golden_f32(&g, "w.proj.bias", NULL);
    float *wq = vt_golden_f32(&g, "w.q_norm.weight", NULL), *wk = vt_golden_f32(&g, "w.k_norm.weight", NULL);
    CHECK(nx == (size_t)B * T * C && n_want == nx, "%s: shapes", vt_golden_name(&g));
    float *wn = calloc(2 * (size_t)dk, 4);
    if (qk_norm) {
        CHECK(wq && wk, "%s: qk_norm without norm weights", vt_golden_name(&g));
        memcpy(wn, wq, (size_t)dk * 4);
        memcpy(wn + dk, wk, (size_t)dk * 4);
    }
    const uint32_t M = B * T;
    vkvit__buffer bx = upload(ctx, x, nx, "x"), bw_qkv = upload(ctx, wqkv, (size_t)3 * C * C, "qkv.weight");
    vkvit__buffer bb_qkv = upload(ctx, bqkv, bqkv ? 3 * (size_t)C : 0, "qkv.bias");
    vkvit__buffer bw_proj = upload(ctx, wproj, (size_t)C * C, "proj.weight");
    vkvit__buffer bb_proj = upload(ctx, bproj, bproj ? C : 0, "proj.bias");
    vkvit__buffer brope = upload(ctx, table, (size_t)T * dk, "rope");
    vkvit__buffer bnorm = upload(ctx, wn, 2 * (size_t)dk, "qk norm");
    vkvit__buffer bqkvout = poisoned(ctx, (size_t)M * 3 * C, "qkv"), bo = poisoned(ctx, (size_t)M * C, "o");
    vkvit__buffer by = poisoned(ctx, (size_t)M * C, "y");

    vkvit__attention_config cfg = {.mode = VKVIT_ATTENTION_QKNORM_ROPE, .dk = dk, .qk_norm = qk_norm,
                                   .rope = parse_pairing(vt_json_str(P, "rope_pairing", "")), .rope_axes = 2};
    vkvit__attention_push push = {
        .Tq = T, .Tkv = T,
        .q_stride = 3 * C, .q_offset = 0, .q_batch_stride = T * 3 * C,
        .k_stride = 3 * C, .k_offset = C, .k_batch_stride = T * 3 * C,
        .v_stride = 3 * C, .v_offset = 2 * C, .v_batch_stride = T * 3 * C,
        .o_stride = C, .o_offset = 0, .o_batch_stride = T * C,
        .scale = (float)vt_json_num(P, "scale", 1.0 / sqrt(dk)),
        .eps = (float)vt_json_num(P, "qk_norm_eps", 1e-6),
    };
    const vkvit__kernel *attn = attention_kernel(ctx, &cfg);
    vkvit__descriptors pool;
    MUST(vkvit__descriptors_create(ctx, 3, &pool));
    VkDescriptorSet set;
    vkvit__binding binds[6] = {{&bqkvout, 0, 0}, {&bqkvout, 0, 0}, {&bqkvout, 0, 0},
                               {&brope, 0, 0},   {&bnorm, 0, 0},   {&bo, 0, 0}};
    MUST(vkvit__descriptor_set_create(ctx, &pool, attn, binds, &set));
    VkCommandBuffer cmd;
    MUST(vkvit__cmd_begin(ctx, &cmd));
    gemm(ctx, cmd, &pool, M, 3 * C, C, &bx, &bw_qkv, bqkv ? &bb_qkv : NULL, &bqkvout);
    vkvit__cmd_barrier_compute(ctx, cmd, &bqkvout, 0, VK_WHOLE_SIZE);
    vkvit__attention_record(ctx, cmd, attn, &cfg, set, &push, H, B);
    vkvit__cmd_barrier_compute(ctx, cmd, &bo, 0, VK_WHOLE_SIZE);
    gemm(ctx, cmd, &pool, M, C, C, &bo, &bw_proj, bproj ? &bb_proj : NULL, &by);
    MUST(vkvit__cmd_submit_wait(ctx, cmd));

    float *y = download(ctx, &by, (size_t)M * C);
    double *want = malloc((size_t)M * C * sizeof(double));
    for (size_t e = 0; e < (size_t)M * C; e++) want[e] = want_y[e];
    size_t worst;
    double err = vt_max_rel_err(y, want, (size_t)M * C, &worst);
    printf("vit5 golden %-52s rope max|err| %.2g (%zu/%zu bit-exact)  y max rel err %.3g\n", vt_golden_name(&g),
           rope_err, bit_exact, n_cos, err);
    CHECK(err <= GOLDEN_TOL, "%s: max rel err %.3g at %zu (got %.9g, want %.9g)", vt_golden_name(&g), err, worst,
          y[worst], want[worst]);

    vkvit__descriptors_destroy(ctx, &pool);
    vkvit__buffer *bufs[] = {&bx, &bw_qkv, &bb_qkv, &bw_proj, &bb_proj, &brope, &bnorm, &bqkvout, &bo, &by};
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(bufs); i++) vkvit__buffer_destroy(ctx, bufs[i]);
    free(table), free(cos), free(sin), free(want_cos), free(want_sin), free(x), free(want_y), free(wqkv), free(wproj);
    free(bqkv), free(bproj), free(wq), free(wk), free(wn), free(y), free(want);
    vt_golden_close(&g);
}

/* ------------------------------------------------------------------------------------------------------------
 * 3. Generic Attention goldens (q, k, v given; RoPE from the q grid; L2 norm after RoPE; causal; cross)
 * ------------------------------------------------------------------------------------------------------------ */

static void generic_golden_case(vkvit_ctx *ctx, const char *path) {
    vt_golden g;
    vt_golden_open(path, &g);
    const cJSON *P = g.params;
    const uint32_t B = (uint32_t)vt_json_num(P, "batch", 0), H = (uint32_t)vt_json_num(P, "num_heads", 0);
    const uint32_t dk = (uint32_t)vt_json_num(P, "head_dim", 0), C = H * dk;
    uint64_t qs[8], ks[8];
    const uint32_t nqs = vt_json_dims(P, "q_shape", qs, 8), nks = vt_json_dims(P, "kv_shape", ks, 8);
    CHECK(nqs >= 3 && nks >= 3 && qs[nqs - 1] == C && ks[nks - 1] == C, "%s: q/kv shapes", vt_golden_name(&g));
    uint32_t Tq = 1, Tkv = 1, grid[3] = {1, 1, 1};
    for (uint32_t a = 1; a + 1 < nqs; a++) Tq *= (uint32_t)qs[a], grid[a - 1] = (uint32_t)qs[a];
    for (uint32_t a = 1; a + 1 < nks; a++) Tkv *= (uint32_t)ks[a];
    const bool use_rope = vt_json_bool(P, "use_rope", false);

    vkvit__attention_config cfg = {
        .mode = VKVIT_ATTENTION_GENERIC, .dk = dk, .qk_norm = vt_json_bool(P, "apply_qk_norm", false),
        .rope = use_rope ? VKVIT_ROPE_SPLIT_HALF : VKVIT_ROPE_NONE, .rope_axes = use_rope ? nqs - 2 : 0,
        .causal = vt_json_bool(P, "is_causal", false),
    };
    float *table = calloc((size_t)Tq * dk, 4);
    if (use_rope) MUST(vkvit__rope_grid_table(grid, nqs - 2, dk, (float)vt_json_num(P, "rope_base", 1e4), table));
    size_t nq, nk, nv, n_want;
    float *q = vt_golden_f32_req(&g, "in.q", &nq), *k = vt_golden_f32_req(&g, "in.k", &nk);
    float *v = vt_golden_f32_req(&g, "in.v", &nv), *want_y = vt_golden_f32_req(&g, "out.y", &n_want);
    CHECK(nq == (size_t)B * Tq * C && nk == (size_t)B * Tkv * C && nv == nk && n_want == nq, "%s: tensor sizes",
          vt_golden_name(&g));
    vkvit__buffer bq = upload(ctx, q, nq, "q"), bk = upload(ctx, k, nk, "k"), bv = upload(ctx, v, nv, "v");
    vkvit__buffer brope = upload(ctx, table, (size_t)Tq * dk, "rope"), bo = poisoned(ctx, nq, "o");
    vkvit__attention_push push = {
        .Tq = Tq, .Tkv = Tkv,
        .q_stride = C, .q_batch_stride = Tq * C,
        .k_stride = C, .k_batch_stride = Tkv * C,
        .v_stride = C, .v_batch_stride = Tkv * C,
        .o_stride = C, .o_batch_stride = Tq * C,
        .scale = (float)vt_json_num(P, "scale", vkvit__attention_default_scale(&cfg)),
        .eps = 1e-12f,
    };
    CHECK(push.scale == vkvit__attention_default_scale(&cfg), "%s: scale %.9g vs default %.9g", vt_golden_name(&g),
          (double)push.scale, (double)vkvit__attention_default_scale(&cfg));
    run_attention(ctx, &cfg, &push, H, B, &bq, &bk, &bv, &brope, &bq, &bo);
    float *o = download(ctx, &bo, nq);
    double *want = malloc(nq * sizeof(double));
    for (size_t e = 0; e < nq; e++) want[e] = want_y[e];
    size_t worst;
    double err = vt_max_rel_err(o, want, nq, &worst);
    printf("generic golden %-46s Tq=%-3u Tkv=%-3u dk=%-3u max rel err %.3g\n", vt_golden_name(&g), Tq, Tkv, dk, err);
    CHECK(err <= GOLDEN_TOL, "%s: max rel err %.3g at %zu (got %.9g, want %.9g)", vt_golden_name(&g), err, worst,
          o[worst], want[worst]);
    vkvit__buffer *bufs[] = {&bq, &bk, &bv, &brope, &bo};
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(bufs); i++) vkvit__buffer_destroy(ctx, bufs[i]);
    free(table), free(q), free(k), free(v), free(want_y), free(o), free(want);
    vt_golden_close(&g);
}

/* ------------------------------------------------------------------------------------------------------------
 * 4. Random cases against the double reference
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct rand_case {
    vkvit__attention_mode mode;
    uint32_t B, H, dk, Tq, Tkv;              /* Tkv 0 = self-attention on the fused qkv layout */
    bool qk_norm;
    vkvit__rope_pairing rope;
    bool causal;
    uint32_t o_pad;                          /* extra floats per output row, must stay NaN */
    uint32_t bq, bk, kc, tpr, rpi;           /* forced tiles (0 = device default) */
} rand_case;

static rand_case mk_case(vkvit__attention_mode mode, uint32_t B, uint32_t H, uint32_t dk, uint32_t Tq, uint32_t Tkv,
                         bool qk_norm, vkvit__rope_pairing rope, bool causal, uint32_t o_pad) {
    return (rand_case){.mode = mode, .B = B, .H = H, .dk = dk, .Tq = Tq, .Tkv = Tkv, .qk_norm = qk_norm,
                       .rope = rope, .causal = causal, .o_pad = o_pad};
}

/* A ViT-5-like table with exactly T rows: CLS (when T > 1), up to 4 registers, the rest as a near-square grid. */
static void vit5_table_for(uint32_t T, uint32_t dk, float *table) {
    vkvit__rope_axial_desc d = {.head_dim = dk, .rope_base = 1e4f, .reg_rope_base = 100.0f};
    d.has_cls = T > 1;
    d.num_registers = T >= 10 ? 4 : 0;
    uint32_t np = T - d.has_cls - d.num_registers, gh = 1;
    for (uint32_t x = 1; x * x <= np; x++)
        if (np % x == 0) gh = x;
    d.grid_h = gh;
    d.grid_w = np / gh;
    d.layout = T % 2 ? VKVIT_TOKENS_PATCHES_CLS_REGS : VKVIT_TOKENS_CLS_PATCHES_REGS;
    MUST(vkvit__rope_axial_table(&d, table));
}

static double rand_case_run(vkvit_ctx *ctx, const rand_case *rc) {
    const bool cross = rc->Tkv != 0;
    const uint32_t B = rc->B, H = rc->H, dk = rc->dk, C = H * dk, Tq = rc->Tq, Tkv = cross ? rc->Tkv : rc->Tq;
    vkvit__attention_config cfg = {.mode = rc->mode, .dk = dk, .qk_norm = rc->qk_norm, .rope = rc->rope,
                                   .rope_axes = rc->mode == VKVIT_ATTENTION_QKNORM_ROPE ? 2 : 1, .causal = rc->causal,
                                   .bq = rc->bq, .bk = rc->bk, .kc = rc->kc, .tpr = rc->tpr, .rpi = rc->rpi};
    if (rc->rope == VKVIT_ROPE_NONE) cfg.rope_axes = 0;
    /* Inputs: self-attention reads one fused [B, T, 3C] buffer (ViT-5 layout); cross-attention reads q [B, Tq, C]
     * and a KV [B, Tkv, 2C] buffer with K first (QKVConditionMixer's chunk(2)). */
    const size_t n_src_q = cross ? (size_t)B * Tq * C : (size_t)B * Tq * 3 * C;
    const size_t n_src_kv = cross ? (size_t)B * Tkv * 2 * C : 0;
    float *src_q = malloc(n_src_q * 4), *src_kv = n_src_kv ? malloc(n_src_kv * 4) : NULL;
    for (size_t e = 0; e < n_src_q; e++) src_q[e] = 2.0f * vt_rand_f();
    for (size_t e = 0; e < n_src_kv; e++) src_kv[e] = 2.0f * vt_rand_f();
    float *w = malloc(2 * (size_t)dk * 4);
    for (uint32_t c = 0; c < 2 * dk; c++) w[c] = 1.0f + 0.5f * vt_rand_f();
    const uint32_t Trope = VKVIT_MAX(Tq, Tkv);
    float *table = calloc((size_t)Trope * dk, 4), *cos = NULL, *sin = NULL;
    if (rc->rope != VKVIT_ROPE_NONE) {
        if (rc->mode == VKVIT_ATTENTION_QKNORM_ROPE) {
            vit5_table_for(Trope, dk, table);
        } else {
            uint32_t shape[1] = {Trope};
            MUST(vkvit__rope_grid_table(shape, 1, dk, 1e4f, table));
        }
        cos = malloc((size_t)Trope * dk * 4), sin = malloc((size_t)Trope * dk * 4);
        vkvit__rope_expand(table, Trope, dk, cos, sin);
    }
    vkvit__attention_push push = {.Tq = Tq, .Tkv = Tkv, .scale = vkvit__attention_default_scale(&cfg),
                                  .eps = rc->mode == VKVIT_ATTENTION_QKNORM_ROPE ? 1e-6f : 1e-12f};
    if (cross) {
        push.q_stride = C, push.q_offset = 0, push.q_batch_stride = Tq * C;
        push.k_stride = 2 * C, push.k_offset = 0, push.k_batch_stride = Tkv * 2 * C;
        push.v_stride = 2 * C, push.v_offset = C, push.v_batch_stride = Tkv * 2 * C;
    } else {
        push.q_stride = push.k_stride = push.v_stride = 3 * C;
        push.q_offset = 0, push.k_offset = C, push.v_offset = 2 * C;
        push.q_batch_stride = push.k_batch_stride = push.v_batch_stride = Tq * 3 * C;
    }
    push.o_stride = C + rc->o_pad, push.o_offset = rc->o_pad / 2, push.o_batch_stride = Tq * push.o_stride + 5;
    const size_t n_o = (size_t)B * push.o_batch_stride;

    vkvit__buffer bq = upload(ctx, src_q, n_src_q, "q src");
    vkvit__buffer bkv = cross ? upload(ctx, src_kv, n_src_kv, "kv src") : bq;
    vkvit__buffer brope = upload(ctx, table, (size_t)Trope * dk, "rope"), bw = upload(ctx, w, 2 * (size_t)dk, "w");
    vkvit__buffer bo = poisoned(ctx, n_o, "o");
    run_attention(ctx, &cfg, &push, H, B, &bq, &bkv, &bkv, &brope, &bw, &bo);
    float *o = download(ctx, &bo, n_o);

    double *want = malloc((size_t)B * Tq * C * sizeof(double));
    const float *ks = cross ? src_kv : src_q;
    ref_attention(&cfg, &push, H, B, src_q, ks, ks, cos, sin, w, want);
    size_t pad_written, worst;
    float *got = gather_output(o, &push, C, B, n_o, &pad_written);
    double err = vt_max_rel_err(got, want, (size_t)B * Tq * C, &worst);
    static const char *rope_names[] = {"none", "split", "adjacent"};
    char what[200];
    char tiles[64] = "";
    if (rc->bq || rc->bk || rc->kc || rc->tpr || rc->rpi)
        snprintf(tiles, sizeof tiles, " tiles bq%u bk%u kc%u tpr%u rpi%u", rc->bq, rc->bk, rc->kc, rc->tpr, rc->rpi);
    snprintf(what, sizeof what, "%s B=%u H=%u dk=%-3u Tq=%-3u Tkv=%-3u%s norm=%d rope=%-8s causal=%d pad=%u%s",
             rc->mode == VKVIT_ATTENTION_QKNORM_ROPE ? "vit5   " : "generic", B, H, dk, Tq, Tkv, cross ? " cross" : "      ",
             rc->qk_norm, rope_names[rc->rope], rc->causal, rc->o_pad, tiles);
    printf("random %s  max rel err %.3g\n", what, err);
    CHECK(err <= RANDOM_TOL, "%s: max rel err %.3g at %zu (got %.9g, want %.9g)", what, err, worst, got[worst],
          want[worst]);
    CHECK(pad_written == 0, "%s: %zu padding entries written", what, pad_written);

    vkvit__buffer_destroy(ctx, &bq);
    if (cross) vkvit__buffer_destroy(ctx, &bkv);
    vkvit__buffer_destroy(ctx, &brope);
    vkvit__buffer_destroy(ctx, &bw);
    vkvit__buffer_destroy(ctx, &bo);
    free(src_q), free(src_kv), free(w), free(table), free(cos), free(sin), free(o), free(want), free(got);
    return err;
}

/* ------------------------------------------------------------------------------------------------------------
 * 6. Both graph paths of vkvit__op_rope_attention (fused kernel; prep -> GEMM -> softmax -> GEMM) on random shapes
 * ------------------------------------------------------------------------------------------------------------ */

/* Plans graph g (its output o marked) into a NaN-poisoned arena (so every intermediate and padding column a path
 * relies on must be written before it is read), uploads the n_in INPUT tensors in[i] from data[i], runs it, frees
 * the graph and returns o (malloc'ed). */
static float *plan_run(vkvit_ctx *ctx, vkvit__graph *g, uint32_t o, size_t n_in, const uint32_t *in,
                       const float *const *data) {
    MUST(vkvit__graph_error(g));
    g->tensors[o].kind = VKVIT_TENSOR_OUTPUT;
    vkvit__plan_stats st;
    MUST(vkvit__plan(g, &st));
    vkvit__buffer arena;
    MUST(vkvit__buffer_create(ctx, st.arena_bytes, VKVIT_MEM_DEVICE, "graph arena", &arena));
    MUST(vkvit__buffer_fill(ctx, &arena, 0, st.arena_bytes, VT_NAN_BITS));
    for (size_t i = 0; i < n_in; i++)
        MUST(vkvit__buffer_upload(ctx, &arena, g->tensors[in[i]].offset, data[i], g->tensors[in[i]].bytes));
    vkvit__record_target tg = {.weights = &arena, .arena = &arena};
    vkvit__recording rec;
    MUST(vkvit__record_prepare(ctx, g, &tg, false, &rec));
    VkCommandBuffer cmd;
    MUST(vkvit__cmd_begin(ctx, &cmd));
    vkvit__record_nodes(ctx, g, &tg, &rec, cmd);
    MUST(vkvit__cmd_submit_wait(ctx, cmd));
    float *out = malloc(g->tensors[o].bytes);
    MUST(vkvit__buffer_download(ctx, &arena, g->tensors[o].offset, out, g->tensors[o].bytes));
    vkvit__record_free(ctx, &rec);
    vkvit__buffer_destroy(ctx, &arena);
    vkvit__graph_free(g);
    return out;
}

/* Builds a graph holding only the attention op on INPUT tensors (qkv [B*T, 3C], the compact RoPE table, the QK-norm
 * weights) and runs it with plan_run: returns o [B*T, C] (malloc'ed). */
static float *run_graph_attention(vkvit_ctx *ctx, vkvit__attention_path path, uint32_t B, uint32_t H, uint32_t dk,
                                  uint32_t T, bool qk_norm, vkvit__rope_pairing rope, const float *qkv,
                                  const float *table, const float *w, bool f16_math, uint32_t *n_nodes) {
    const uint32_t C = H * dk;
    vkvit__graph g;
    /* an fp16-math session's graph: with cooperative matrices, the fp16 k~ / vT path */
    const vkvit__build_opts opts = vkvit__build_opts_of(f16_math ? VKVIT_PRECISION_FP16_MATH : VKVIT_PRECISION_FP32);
    vkvit__graph_init_opts(&g, ctx, &opts);
    uint32_t qkv_shape[2] = {B * T, 3 * C}, rope_shape[2] = {T, dk}, w_shape[2] = {2, dk};
    const uint32_t tq = vkvit__graph_tensor(&g, VKVIT_TENSOR_INPUT, "qkv", 2, qkv_shape);
    const uint32_t tr = vkvit__graph_tensor(&g, VKVIT_TENSOR_INPUT, "rope", 2, rope_shape);
    const uint32_t tw = vkvit__graph_tensor(&g, VKVIT_TENSOR_INPUT, "qk_norm", 2, w_shape);
    vkvit__rope_attention_op op = {.qkv = tq, .B = B, .T = T, .C = C, .heads = H, .rope = tr, .pairing = rope,
                                   .qk_norm = qk_norm ? tw : VKVIT_NONE, .qk_norm_eps = 1e-6f, .path = path};
    const uint32_t o = vkvit__op_rope_attention(&g, "attention", &op);
    *n_nodes = g.n_nodes;
    const uint32_t in[3] = {tq, tr, tw};
    const float *const data[3] = {qkv, table, w};
    return plan_run(ctx, &g, o, 3, in, data);
}

/* One shape through both paths against the double reference; returns the worse error. */
static double paths_case(vkvit_ctx *ctx, uint32_t B, uint32_t H, uint32_t dk, uint32_t T, bool qk_norm,
                         vkvit__rope_pairing rope) {
    const uint32_t C = H * dk;
    const size_t n_qkv = (size_t)B * T * 3 * C, n_o = (size_t)B * T * C;
    float *qkv = malloc(n_qkv * 4), *w = malloc(2 * (size_t)dk * 4), *table = malloc((size_t)T * dk * 4);
    float *cos = malloc((size_t)T * dk * 4), *sin = malloc((size_t)T * dk * 4);
    for (size_t e = 0; e < n_qkv; e++) qkv[e] = 2.0f * vt_rand_f();
    for (uint32_t c = 0; c < 2 * dk; c++) w[c] = 1.0f + 0.5f * vt_rand_f();
    vit5_table_for(T, dk, table);
    vkvit__rope_expand(table, T, dk, cos, sin);
    vkvit__attention_config cfg = {.mode = VKVIT_ATTENTION_QKNORM_ROPE, .dk = dk, .qk_norm = qk_norm, .rope = rope,
                                   .rope_axes = 2};
    vkvit__attention_push push = {
        .Tq = T, .Tkv = T,
        .q_stride = 3 * C, .q_offset = 0, .q_batch_stride = T * 3 * C,
        .k_stride = 3 * C, .k_offset = C, .k_batch_stride = T * 3 * C,
        .v_stride = 3 * C, .v_offset = 2 * C, .v_batch_stride = T * 3 * C,
        .o_stride = C, .o_offset = 0, .o_batch_stride = T * C,
        .scale = vkvit__attention_default_scale(&cfg), .eps = 1e-6f,
    };
    double *want = malloc(n_o * sizeof(double));
    ref_attention(&cfg, &push, H, B, qkv, qkv, qkv, cos, sin, w, want);
    static const char *names[] = {"auto", "fused", "gemm"};
    static const char *rope_names[] = {"none", "split", "adjacent"};
    double worst_err = 0;
    uint32_t nodes[3] = {0};
    for (int path = VKVIT_ATTENTION_PATH_FUSED; path <= VKVIT_ATTENTION_PATH_GEMM; path++) {
        float *got = run_graph_attention(ctx, (vkvit__attention_path)path, B, H, dk, T, qk_norm, rope, qkv, table, w,
                                         false, &nodes[path]);
        size_t worst;
        double err = vt_max_rel_err(got, want, n_o, &worst);
        printf("graph %-5s B=%u H=%u dk=%-3u T=%-3u norm=%d rope=%-8s (%u nodes)  max rel err %.3g\n", names[path], B,
               H, dk, T, qk_norm, rope_names[rope], nodes[path], err);
        CHECK(err <= RANDOM_TOL, "graph %s B=%u H=%u dk=%u T=%u norm=%d rope=%s: max rel err %.3g at %zu (got %.9g, "
              "want %.9g)", names[path], B, H, dk, T, qk_norm, rope_names[rope], err, worst, got[worst], want[worst]);
        worst_err = fmax(worst_err, err);
        free(got);
    }
    CHECK(nodes[VKVIT_ATTENTION_PATH_FUSED] == 1 && nodes[VKVIT_ATTENTION_PATH_GEMM] == 4,
          "graph paths: %u fused nodes, %u gemm nodes", nodes[VKVIT_ATTENTION_PATH_FUSED],
          nodes[VKVIT_ATTENTION_PATH_GEMM]);
    /* The GEMM path with the kernels the other device class picks (CPU <-> GPU: GEMM tiles, prep width, the row
     * softmax's work split), with and without subgroup reductions (softmax_rows and its _subgroup variant). */
    const vkvit__policy saved = ctx->policy;
    for (int variant = 0; variant < 2; variant++) {
        ctx->policy.cpu_kernels = !saved.cpu_kernels;
        ctx->policy.subgroup_reductions = saved.subgroup_reductions && variant == 0;
        uint32_t n_nodes;
        float *got = run_graph_attention(ctx, VKVIT_ATTENTION_PATH_GEMM, B, H, dk, T, qk_norm, rope, qkv, table, w,
                                         false, &n_nodes);
        ctx->policy = saved;
        size_t worst;
        double err = vt_max_rel_err(got, want, n_o, &worst);
        printf("graph gemm  B=%u H=%u dk=%-3u T=%-3u norm=%d rope=%-8s (%s kernels, subgroup %d)  max rel err %.3g\n",
               B, H, dk, T, qk_norm, rope_names[rope], saved.cpu_kernels ? "GPU" : "CPU",
               saved.subgroup_reductions && variant == 0, err);
        CHECK(err <= RANDOM_TOL, "graph gemm (%s kernels, subgroup %d) B=%u H=%u dk=%u T=%u norm=%d rope=%s: max rel "
              "err %.3g at %zu", saved.cpu_kernels ? "GPU" : "CPU", saved.subgroup_reductions && variant == 0, B, H, dk, T,
              qk_norm, rope_names[rope], err, worst);
        worst_err = fmax(worst_err, err);
        free(got);
    }
    /* fp16-math on cooperative matrices (the device's own kernel where it has one: KHR's on Mesa 26's lavapipe in
     * the Debian 13 lane; else the emulated kernel, VKVIT_COOPMAT_EMULATE's): the GEMM path with k~ and vT stored
     * as fp16 (attention_prep.comp KV_F16) and both GEMMs on the cooperative-matrix kernel, with this device class's
     * kernels and the other's, at the fp16 tolerance (max |got - want| <= 1e-2 of max |want|, as include/vkvit.h
     * states for VKVIT_PRECISION_FP16_MATH; not counted in the fp32 worst error). */
    const vkvit__coopmat_kernel coop_kernel =
        saved.coopmat == VKVIT_COOPMAT_NONE ? VKVIT_COOPMAT_EMULATED : saved.coopmat;
    for (int other = 0; other < 2 && ctx->policy.fp16_math; other++) {
        ctx->policy.coopmat = coop_kernel;
        if (other) ctx->policy.cpu_kernels = !saved.cpu_kernels;
        uint32_t n_nodes;
        float *got = run_graph_attention(ctx, VKVIT_ATTENTION_PATH_AUTO, B, H, dk, T, qk_norm, rope, qkv, table, w,
                                         true, &n_nodes);
        ctx->policy = saved;
        size_t worst;
        const double err = vt_max_rel_err(got, want, n_o, &worst);
        printf("graph gemm  B=%u H=%u dk=%-3u T=%-3u norm=%d rope=%-8s (fp16 k/vT, coopmat %s, %s kernels)  max rel "
               "err %.3g\n", B, H, dk, T, qk_norm, rope_names[rope],
               coop_kernel == VKVIT_COOPMAT_EMULATED ? "emulated" : coop_kernel == VKVIT_COOPMAT_KHR ? "KHR" : "hardware",
               saved.cpu_kernels == !other ? "CPU" : "GPU", err);
        CHECK(n_nodes == 4 && err <= 1e-2, "graph fp16 k/vT (%s kernels) B=%u H=%u dk=%u T=%u norm=%d rope=%s: %u "
              "nodes, max rel err %.3g at %zu", saved.cpu_kernels == !other ? "CPU" : "GPU", B, H, dk, T, qk_norm,
              rope_names[rope], n_nodes, err, worst);
        free(got);
    }
    free(qkv), free(w), free(table), free(cos), free(sin), free(want);
    return worst_err;
}

/* The unfused generic attention (CPU devices) on q, k, v rows that do not start at multiples of 4: one [B*T, W]
 * input with W = 3C + 3 and q, k, v at column offsets 1, C + 2, 2C + 3, so attention_prep.comp reads rows element
 * by element (VEC4 off), with texel reads (CPU kernels) and storage-buffer reads. Against ref_attention. */
static void misaligned_unfused_case(vkvit_ctx *ctx, uint32_t B, uint32_t H, uint32_t dk, uint32_t T) {
    const uint32_t C = H * dk, W = 3 * C + 3;
    const size_t n_x = (size_t)B * T * W, n_o = (size_t)B * T * C;
    float *x = malloc(n_x * 4), *table = malloc((size_t)T * dk * 4);
    float *cos = malloc((size_t)T * dk * 4), *sin = malloc((size_t)T * dk * 4);
    for (size_t e = 0; e < n_x; e++) x[e] = 2.0f * vt_rand_f();
    for (size_t a = 0; a < (size_t)T * dk / 2; a++) {
        const float theta = 3.0f * vt_rand_f();
        table[2 * a] = cosf(theta), table[2 * a + 1] = sinf(theta);
    }
    vkvit__rope_expand(table, T, dk, cos, sin);
    vkvit__attention_config cfg = {.mode = VKVIT_ATTENTION_GENERIC, .dk = dk, .qk_norm = true,
                                   .rope = VKVIT_ROPE_SPLIT_HALF, .rope_axes = 1};
    vkvit__attention_push push = {
        .Tq = T, .Tkv = T,
        .q_stride = W, .q_offset = 1, .q_batch_stride = T * W,
        .k_stride = W, .k_offset = C + 2, .k_batch_stride = T * W,
        .v_stride = W, .v_offset = 2 * C + 3, .v_batch_stride = T * W,
        .scale = vkvit__attention_default_scale(&cfg), .eps = 1e-12f,
    };
    double *want = malloc(n_o * sizeof(double));
    ref_attention(&cfg, &push, H, B, x, x, x, cos, sin, NULL, want);
    const vkvit__policy saved = ctx->policy;
    for (int texel = 1; texel >= 0; texel--) {
        ctx->policy.texel_reads = saved.texel_reads && texel;
        ctx->policy.attention = VKVIT_ATTENTION_PATH_GEMM;
        vkvit__graph g;
        vkvit__graph_init(&g, ctx);
        uint32_t x_shape[2] = {B * T, W}, rope_shape[2] = {T, dk};
        const uint32_t tx = vkvit__graph_tensor(&g, VKVIT_TENSOR_INPUT, "x", 2, x_shape);
        const uint32_t tr = vkvit__graph_tensor(&g, VKVIT_TENSOR_INPUT, "rope", 2, rope_shape);
        vkvit__attention_op op = {
            .q = {tx, 1, W, T * W}, .k = {tx, C + 2, W, T * W}, .v = {tx, 2 * C + 3, W, T * W},
            .B = B, .Tq = T, .Tkv = T, .C = C, .heads = H, .rope = tr, .rope_axes = 1, .qk_norm = true,
        };
        const uint32_t o = vkvit__op_attention(&g, "attention", &op);
        const uint32_t n_nodes = g.n_nodes, in[2] = {tx, tr};
        const float *const data[2] = {x, table};
        float *got = plan_run(ctx, &g, o, 2, in, data);
        ctx->policy = saved;
        size_t worst;
        const double err = vt_max_rel_err(got, want, n_o, &worst);
        printf("graph gemm  B=%u H=%u dk=%-3u T=%-3u rows at odd offsets, %s reads (%u nodes)  max rel err %.3g\n", B,
               H, dk, T, texel ? "texel" : "storage-buffer", n_nodes, err);
        CHECK(n_nodes == 4 && err <= RANDOM_TOL, "unfused attention, rows at odd offsets, %s reads: %u nodes, max rel "
              "err %.3g at %zu (got %.9g, want %.9g)", texel ? "texel" : "storage-buffer", n_nodes, err, worst,
              got[worst], want[worst]);
        free(got);
    }
    free(x), free(table), free(cos), free(sin), free(want);
}

/* ------------------------------------------------------------------------------------------------------------
 * 5. Timing of the ViT-5-S attention core (GPU timestamps, median of repeats; informational)
 * ------------------------------------------------------------------------------------------------------------ */

static void perf_vit5_s(vkvit_ctx *ctx) {
    if (!ctx->info.timestamps) {
        printf("perf: no timestamp queries on this device, skipped\n");
        return;
    }
    const uint32_t B = 1, T = 201, H = 6, dk = 64, C = H * dk, reps = 9;
    vkvit__attention_config cfg = {.mode = VKVIT_ATTENTION_QKNORM_ROPE, .dk = dk, .qk_norm = true,
                                   .rope = VKVIT_ROPE_SPLIT_HALF, .rope_axes = 2};
    float *qkv = malloc((size_t)T * 3 * C * 4), *table = malloc((size_t)T * dk * 4), w[128];
    vt_fill_rand(qkv, (size_t)T * 3 * C);
    for (int c = 0; c < 128; c++) w[c] = 1.0f;
    vkvit__rope_axial_desc rd = {.head_dim = dk, .grid_h = 14, .grid_w = 14, .num_registers = 4, .has_cls = true,
                                .rope_base = 1e4f, .reg_rope_base = 100.0f};
    MUST(vkvit__rope_axial_table(&rd, table));
    vkvit__buffer bqkv = upload(ctx, qkv, (size_t)T * 3 * C, "qkv"), brope = upload(ctx, table, (size_t)T * dk, "rope");
    vkvit__buffer bw = upload(ctx, w, 128, "w"), bo = poisoned(ctx, (size_t)T * C, "o");
    const vkvit__kernel *k = attention_kernel(ctx, &cfg);
    vkvit__attention_config res;
    MUST(vkvit__attention_resolve(ctx, &cfg, &res));
    vkvit__descriptors pool;
    VkDescriptorSet set;
    MUST(vkvit__descriptors_create(ctx, 1, &pool));
    vkvit__binding binds[6] = {{&bqkv, 0, 0}, {&bqkv, 0, 0}, {&bqkv, 0, 0}, {&brope, 0, 0}, {&bw, 0, 0}, {&bo, 0, 0}};
    MUST(vkvit__descriptor_set_create(ctx, &pool, k, binds, &set));
    vkvit__attention_push push = {.Tq = T, .Tkv = T, .q_stride = 3 * C, .k_stride = 3 * C, .v_stride = 3 * C,
                                  .k_offset = C, .v_offset = 2 * C, .o_stride = C,
                                  .scale = vkvit__attention_default_scale(&cfg), .eps = 1e-6f};
    vkvit__timer t;
    MUST(vkvit__timer_create(ctx, 2 * reps, &t));
    VkCommandBuffer cmd;
    MUST(vkvit__cmd_begin(ctx, &cmd));
    vkvit__attention_record(ctx, cmd, k, &cfg, set, &push, H, B); /* warm-up */
    vkvit__cmd_timer_reset(ctx, cmd, &t);
    for (uint32_t r = 0; r < reps; r++) {
        vkvit__cmd_barrier(ctx, cmd, &bo, 0, VK_WHOLE_SIZE, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_ACCESS_SHADER_WRITE_BIT);
        vkvit__cmd_timestamp(ctx, cmd, &t, 2 * r);
        vkvit__attention_record(ctx, cmd, k, &cfg, set, &push, H, B);
        vkvit__cmd_timestamp(ctx, cmd, &t, 2 * r + 1);
    }
    MUST(vkvit__cmd_submit_wait(ctx, cmd));
    double ns[2 * 9], ms[9];
    MUST(vkvit__timer_read_ns(ctx, &t, 2 * reps, ns));
    for (uint32_t r = 0; r < reps; r++) ms[r] = (ns[2 * r + 1] - ns[2 * r]) * 1e-6;
    for (uint32_t a = 1; a < reps; a++) /* insertion sort */
        for (uint32_t b2 = a; b2 > 0 && ms[b2 - 1] > ms[b2]; b2--) {
            double tmp = ms[b2];
            ms[b2] = ms[b2 - 1], ms[b2 - 1] = tmp;
        }
    const double flops = 4.0 * T * T * C;
    printf("perf: attention core B=%u T=%u C=%u H=%u (qk-norm, split RoPE; bq %u bk %u kc %u tpr %u rpi %u): median "
           "%.3f ms (min %.3f) over %u runs, %.2f GFLOP/s\n",
           B, T, C, H, res.bq, res.bk, res.kc, res.tpr, res.rpi, ms[reps / 2], ms[0], reps,
           flops / (ms[reps / 2] * 1e6));
    vkvit__timer_destroy(ctx, &t);
    vkvit__descriptors_destroy(ctx, &pool);
    vkvit__buffer_destroy(ctx, &bqkv), vkvit__buffer_destroy(ctx, &brope);
    vkvit__buffer_destroy(ctx, &bw), vkvit__buffer_destroy(ctx, &bo);
    free(qkv), free(table);
}

/* ------------------------------------------------------------------------------------------------------------ */

static void kernel_cache_free(vkvit_ctx *ctx) {
    for (size_t i = 0; i < kcache_n; i++) vkvit__kernel_destroy(ctx, &kcache[i].k);
    for (size_t i = 0; i < gcache_n; i++) vkvit__kernel_destroy(ctx, &gcache[i].k);
    kcache_n = gcache_n = 0;
}

int main(void) {
    vkvit_ctx *ctx = vt_ctx();
    const uint64_t t0 = vkvit__now_ns();

    char **paths;
    size_t n = vt_golden_list("tests/golden/ops/vit5_attention_*.safetensors", &paths);
    CHECK(n >= 9, "found %zu vit5_attention goldens", n);
    for (size_t i = 0; i < n; i++) vit5_golden_case(ctx, paths[i]);
    vt_golden_list_free(paths, n);

    n = vt_golden_list("tests/golden/ops/attention_*.safetensors", &paths);
    CHECK(n >= 10, "found %zu generic attention goldens", n);
    for (size_t i = 0; i < n; i++) generic_golden_case(ctx, paths[i]);
    vt_golden_list_free(paths, n);

    const vkvit__attention_mode V5 = VKVIT_ATTENTION_QKNORM_ROPE, GEN = VKVIT_ATTENTION_GENERIC;
    const vkvit__rope_pairing NO = VKVIT_ROPE_NONE, SPLIT = VKVIT_ROPE_SPLIT_HALF, ADJ = VKVIT_ROPE_ADJACENT;
    static rand_case cases[64];
    size_t nc = 0;
#define CASE(...) cases[nc++] = mk_case(__VA_ARGS__)
#define TILES(BQ, BK, KC, TPR, RPI)                                                                           \
    cases[nc - 1].bq = BQ, cases[nc - 1].bk = BK, cases[nc - 1].kc = KC, cases[nc - 1].tpr = TPR,                    \
    cases[nc - 1].rpi = RPI
    /* mode, B, H, dk, Tq, Tkv (0 = self), qk_norm, rope, causal, o_pad; then TILES(bq, bk, kc, tpr, rpi) if forced */
    CASE(V5, 1, 1, 32, 1, 0, true, SPLIT, false, 0);
    CASE(V5, 2, 3, 32, 2, 0, false, ADJ, false, 3);
    CASE(V5, 1, 3, 64, 17, 0, true, ADJ, false, 0);
    CASE(V5, 2, 1, 64, 63, 0, false, SPLIT, false, 0);
    CASE(V5, 1, 6, 64, 64, 0, true, SPLIT, false, 1);
    CASE(V5, 1, 3, 128, 65, 0, true, SPLIT, false, 0);
    CASE(V5, 2, 6, 64, 197, 0, true, SPLIT, false, 0);
    CASE(V5, 1, 6, 64, 201, 0, true, ADJ, false, 0);
    CASE(V5, 1, 3, 128, 257, 0, false, ADJ, false, 2);
    CASE(V5, 1, 1, 128, 201, 0, true, SPLIT, false, 0);
    CASE(V5, 1, 6, 32, 257, 0, true, SPLIT, false, 0);
    CASE(GEN, 2, 3, 32, 17, 0, true, SPLIT, true, 0);
    CASE(GEN, 1, 1, 64, 65, 0, false, NO, true, 0);
    CASE(GEN, 1, 6, 64, 201, 0, true, NO, false, 0);
    CASE(GEN, 2, 3, 128, 63, 0, false, SPLIT, true, 1);
    CASE(GEN, 1, 3, 64, 257, 0, true, SPLIT, true, 0);
    CASE(GEN, 1, 6, 32, 197, 0, false, SPLIT, false, 0);
    /* Cross-attention, Tkv in {1, 5, 300}; causal cross uses the top-left aligned tril (j <= i). */
    CASE(GEN, 2, 3, 32, 7, 1, true, NO, false, 0);
    CASE(GEN, 1, 6, 64, 201, 1, false, NO, false, 0);
    CASE(GEN, 2, 1, 64, 65, 5, true, NO, false, 0);
    CASE(GEN, 1, 3, 128, 17, 5, false, NO, true, 0);
    CASE(GEN, 1, 3, 64, 201, 300, false, NO, false, 1);
    CASE(GEN, 2, 1, 32, 257, 300, true, NO, true, 0);
    CASE(GEN, 1, 1, 128, 2, 300, true, NO, false, 0);
    CASE(V5, 1, 3, 64, 63, 300, true, NO, false, 0);
    /* Forced tiles: tiny tiles (many tile edges, partial chunks) and the subgroup variant (tpr > 1). */
    CASE(V5, 1, 3, 64, 65, 0, true, SPLIT, false, 0), TILES(8, 12, 4, 1, 2);
    CASE(GEN, 2, 1, 32, 63, 0, true, SPLIT, true, 1), TILES(16, 8, 8, 1, 1);
    CASE(V5, 1, 3, 64, 201, 0, true, SPLIT, false, 0), TILES(32, 0, 8, 4, 1);
    CASE(V5, 2, 1, 128, 65, 0, true, ADJ, false, 0), TILES(32, 0, 8, 8, 1);
    CASE(GEN, 1, 3, 32, 63, 0, true, SPLIT, true, 0), TILES(32, 0, 4, 2, 2);
    CASE(GEN, 1, 1, 64, 17, 300, true, NO, true, 0), TILES(16, 16, 0, 4, 2);
#undef CASE
#undef TILES
    double worst_v5 = 0, worst_gen = 0, worst_cross = 0;
    for (size_t i = 0; i < nc; i++) {
        double e = rand_case_run(ctx, &cases[i]);
        double *w = cases[i].Tkv ? &worst_cross : cases[i].mode == V5 ? &worst_v5 : &worst_gen;
        *w = fmax(*w, e);
    }
    printf("random: worst max rel err  vit5 self %.3g  generic self %.3g  cross %.3g\n", worst_v5, worst_gen,
           worst_cross);

    /* Misuse is refused with a sentence, not compiled into a broken pipeline. */
    vkvit__attention_config bad = {.mode = V5, .dk = 30, .rope = SPLIT, .rope_axes = 2}, out;
    CHECK(vkvit__attention_resolve(ctx, &bad, &out) == VKVIT_ERROR_INVALID_ARGUMENT, "dk 30 with 2-axis split_half");
    vkvit__rope_axial_desc bad_rope = {.head_dim = 64, .grid_h = 2, .grid_w = 2, .num_registers = 3,
                                      .rope_base = 1e4f, .reg_rope_base = 100.0f};
    float dummy[64 * 8];
    CHECK(vkvit__rope_axial_table(&bad_rope, dummy) == VKVIT_ERROR_INVALID_ARGUMENT, "R = 3 must be rejected");

    /* Both graph paths: B, H, dk, T, qk_norm, pairing (T in {1, 17, 64, 201, 257, 520}, dk in {32, 64, 128}). */
    static const struct { uint32_t B, H, dk, T; bool norm; vkvit__rope_pairing rope; } pc[] = {
        {1, 2, 32, 1, true, VKVIT_ROPE_SPLIT_HALF},   {3, 2, 64, 17, false, VKVIT_ROPE_ADJACENT},
        {1, 3, 128, 64, true, VKVIT_ROPE_ADJACENT},   {1, 6, 64, 201, true, VKVIT_ROPE_SPLIT_HALF},
        {3, 1, 32, 257, false, VKVIT_ROPE_SPLIT_HALF}, {1, 2, 128, 201, false, VKVIT_ROPE_SPLIT_HALF},
        {3, 3, 64, 64, true, VKVIT_ROPE_SPLIT_HALF},  {1, 1, 64, 257, true, VKVIT_ROPE_ADJACENT},
        {1, 1, 32, 520, false, VKVIT_ROPE_ADJACENT},  /* rows longer than the CPU softmax's private row cache */
    };
    double worst_paths = 0;
    const uint64_t t_paths = vkvit__now_ns();
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(pc); i++)
        worst_paths = fmax(worst_paths, paths_case(ctx, pc[i].B, pc[i].H, pc[i].dk, pc[i].T, pc[i].norm, pc[i].rope));
    printf("graph paths: worst max rel err %.3g (%.1f s)\n", worst_paths, (double)(vkvit__now_ns() - t_paths) * 1e-9);
    misaligned_unfused_case(ctx, 2, 3, 32, 17);
    misaligned_unfused_case(ctx, 1, 2, 64, 201);

    perf_vit5_s(ctx);
    printf("%zu attention pipelines, %.1f s\n", kcache_n, (double)(vkvit__now_ns() - t0) * 1e-9);
    kernel_cache_free(ctx);
    return vt_finish(ctx);
}
