// SPDX-License-Identifier: Apache-2.0
/* GEMM (nn.Linear layout) and elementwise add (through the GEMM epilogue) against double-precision CPU loops.
 *
 * Every GEMM case runs on every GEMM variant (the shared-memory GPU kernel and the llvmpipe kernel), whichever one
 * vkvit__gemm_pick would choose for this device, in three modes: fp32, fp16 weights (*_w16) and fp16 arithmetic
 * (*_f16, where the device has shaderFloat16). The cooperative-matrix kernel (fp16 arithmetic only) runs in its
 * emulated form on every device with shaderFloat16 and as the NV kernel where the device uses it. Each case draws
 * fresh random inputs, poisons the output buffer (and the row padding past N) with NaN, runs the kernel under the
 * validation layer, and checks max |got - want| / max |want| <= 1e-5 (fp32 math; fp16 arithmetic: see
 * check_f16_math). The padding must still be NaN afterwards: a kernel that writes outside its output is caught.
 * Causal cases (vkvit__gemm_causal, the mLSTM's triangular products): A is zero where the mode says so, and
 * outputs a mode marks as not needed are neither compared nor required to stay NaN. */
#include "test_util.h"
#include "model/safetensors.h"
#include "ops/gemm.h"

typedef struct gemm_case {
    uint32_t M, N, K, batch;
    bool bias;
    uint32_t pad_d;          /* extra elements per output row (stride_d = N + pad_d) */
    bool shared_weights;     /* batch stride of B = 0 */
    uint32_t act;            /* epilogue: 0 none, 1 GELU (erf), 2 ReLU, 3 SiLU */
    bool scale;              /* epilogue: * scale[n] */
    bool residual;           /* epilogue: + D's previous content (in place, as the residual stream is updated) */
    uint32_t a_offset, d_offset; /* leading elements before A and D in their buffers */
    /* Two-level batch (n_inner > 1): batch = n_outer * n_inner, z = outer * n_inner + inner. D is laid out like the
     * merged heads of attention: row m of batch (outer, inner) holds its N columns at column inner * N of a
     * [M, n_inner * N (+ pad_d)] matrix per outer index; A and B are [outer][inner] blocks with a gap of 4 (A) or
     * 8 (B) elements between outer blocks (so the offset is not linear in z). 0 = plain batch. */
    uint32_t n_inner;
    uint32_t b_offset;           /* leading elements before B */
} gemm_case;

/* A case with work the kernel may skip: zeros put into A where the mode promises them, or outputs not compared. */
typedef struct causal_case {
    gemm_case c;
    vkvit__gemm_causal causal;
} causal_case;

/* Whether output (m, n) is needed under a causal mode, and whether A[m][k] may be nonzero. */
static bool causal_needed(vkvit__gemm_causal causal, uint32_t m, uint32_t n) {
    return causal == VKVIT_GEMM_CAUSAL_D_LOWER ? n <= m : causal == VKVIT_GEMM_CAUSAL_D_UPPER ? n >= m : true;
}
static bool causal_a_nonzero(vkvit__gemm_causal causal, uint32_t m, uint32_t k) {
    return causal == VKVIT_GEMM_CAUSAL_A_LOWER ? k <= m : causal == VKVIT_GEMM_CAUSAL_A_UPPER ? k >= m : true;
}

/* Element layout of a case: strides per row, per outer and per inner batch index (see gemm_case). */
typedef struct gemm_layout {
    uint32_t n_inner, n_outer, stride_d;
    uint32_t outer_a, inner_a, outer_b, inner_b, outer_d, inner_d;
    size_t na, nb, nd;
} gemm_layout;

static gemm_layout layout_of(const gemm_case *c) {
    gemm_layout l = {.n_inner = c->n_inner > 1 ? c->n_inner : 1};
    l.n_outer = c->batch / l.n_inner;
    const bool two = l.n_inner > 1;
    l.stride_d = l.n_inner * c->N + c->pad_d;
    l.inner_a = c->M * c->K;
    l.outer_a = l.n_inner * l.inner_a + (two ? 4 : 0);
    l.inner_b = c->N * c->K;
    l.outer_b = c->shared_weights ? 0 : l.n_inner * l.inner_b + (two ? 8 : 0);
    l.inner_d = c->N;
    l.outer_d = c->M * l.stride_d;
    if (!two) l.inner_a = l.inner_b = l.inner_d = 0;
    l.na = c->a_offset + (size_t)(l.n_outer - 1) * l.outer_a + (size_t)l.n_inner * c->M * c->K;
    l.nb = c->b_offset + (size_t)(l.n_outer - 1) * l.outer_b + (size_t)l.n_inner * c->N * c->K;
    l.nd = c->d_offset + (size_t)l.n_outer * l.outer_d;
    return l;
}

static double act_ref(uint32_t act, double x) {
    switch (act) {
    case 1: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case 2: return x > 0 ? x : 0;
    case 3: return x / (1.0 + exp(-x));
    default: return x;
    }
}

/* Which kernels a case runs: fp32 weights and math, fp16 weights (fp32 math), fp16 weights and fp16 arithmetic. */
typedef enum gemm_mode { MODE_F32, MODE_W16, MODE_F16_MATH } gemm_mode;

/* want = act(A·Bᵀ + bias) * scale + residual, laid out like D (layout_of); NaN where D must stay untouched.
 * sum_abs / sum_sq (may be NULL): per output, sum_k |a_k b_k| and sum_k (a_k b_k)^2 (the fp16 error scales). */
static void cpu_gemm(const gemm_case *c, const gemm_layout *l, const float *a, const float *b, const float *bias,
                     const float *scale, const float *d_init, double *want, double *sum_abs, double *sum_sq,
                     vkvit__gemm_causal causal, bool spare_column, bool *dont_care) {
    for (size_t i = 0; i < l->nd; i++) want[i] = NAN, dont_care[i] = false;
    for (uint32_t o = 0; o < l->n_outer; o++)
        for (uint32_t in = 0; in < l->n_inner; in++) {
            const float *az = a + c->a_offset + (size_t)o * l->outer_a + (size_t)in * l->inner_a;
            const float *bz = b + c->b_offset + (size_t)o * l->outer_b + (size_t)in * l->inner_b;
            const size_t dz = c->d_offset + (size_t)o * l->outer_d + (size_t)in * l->inner_d;
            for (uint32_t m = 0; m < c->M; m++)
                for (uint32_t n = 0; n < c->N; n++) {
                    size_t i = dz + (size_t)m * l->stride_d + n;
                    dont_care[i] = !causal_needed(causal, m, n);
                    if (spare_column && n == c->N - 1 && c->pad_d) dont_care[i + 1] = true;
                    double s = c->bias ? bias[n] : 0.0, sa = 0.0, sq = 0.0;
                    for (uint32_t k = 0; k < c->K; k++) {
                        const double ab = (double)az[(size_t)m * c->K + k] * bz[(size_t)n * c->K + k];
                        s += ab, sa += fabs(ab), sq += ab * ab;
                    }
                    if (sum_abs) sum_abs[i] = sa, sum_sq[i] = sq;
                    s = act_ref(c->act, s);
                    if (c->scale) s *= scale[n];
                    if (c->residual) s += d_init[i];
                    want[i] = s;
                }
        }
}

/* Largest |d act(x) / dx|: how much the epilogue's activation can amplify an error of the sum. */
static double act_lipschitz(uint32_t act) {
    switch (act) {
    case 1: return 1.1289;   /* GELU (erf): max of Phi(x) + x phi(x), at x = sqrt(2) */
    case 3: return 1.0999;   /* SiLU: max of s(x) (1 + x (1 - s(x))), at x ~ 2.4 */
    default: return 1.0;     /* none, ReLU */
    }
}

/* fp16 arithmetic (the *_f16 kernels, src/ops/gemm.h VKVIT_GEMM_F16_CHUNK): B holds fp16 values (the reference
 * uses the same rounded ones), A is fp32 in the reference and rounded to fp16 by the kernel. Two checks:
 *
 * 1. A worst-case bound for every output, derived from the kernel's arithmetic. With u = 2^-11, n = CHUNK / 2 = 8
 *    products per fp16 half-sum, S = sum_k |a_k b_k| and L the activation's largest slope:
 *        |got - want| <= L |scale_n| [ (n + 2) u S + (K/8 + 1) 2^-24 S + 2 K 2^-14 max|b| ] + 1e-5 max|want|
 *    (n + 2) u S: rounding A to fp16 (u), then n fused multiply-adds per half-sum, each rounded to fp16 (n u, with
 *    second-order terms covered by the spare u); (K/8 + 1) 2^-24 S: the fp32 sum of the 2K/16 half-sums;
 *    2 K 2^-14 max|b|: underflow, if the device flushes fp16 subnormals (2^-14 absolute per conversion and per FMA;
 *    max|b| <= 1 here); 1e-5 max|want|: the fp32 epilogue, as in the fp32 check. The fp16 part does not grow with K
 *    beyond S itself: that is what the chunk buys (K = 1536 summed in fp16 alone would need (768 + 2) u S).
 * 2. The bound is a worst case; random data sits far inside it, so it would also pass a kernel that never flushed its
 *    fp16 sums. The typical error is checked too: sqrt(sum_i err_i^2) / (u sqrt(sum_i (L s_n)^2 Q_i)) <= 2, with
 *    Q_i = sum_k (a_k b_k)^2. Measured on lavapipe: 0.5-1.15 with 16-k chunks; with the fp16 sums flushed only once
 *    at the end (no chunks) 4.2 at K = 384 and 8.3 at K = 1536, which this check fails. Checked where it is
 *    meaningful: at least 256 outputs and K >= 64. The cooperative-matrix kernel sums in fp32 (only A's rounding to
 *    fp16 remains, about u / sqrt(3)), so its typical error must stay within max_typical = 1 u instead of 2. */
static void check_f16_math(const char *vname, const gemm_case *c, const float *got, const double *want,
                           const double *sum_abs, const double *sum_sq, const uint32_t *col, const float *scale,
                           size_t n, double max_typical) {
    const double u = ldexp(1.0, -11), L = act_lipschitz(c->act);
    double max_want = 0.0, max_b = 1.0;
    for (size_t i = 0; i < n; i++) max_want = fmax(max_want, fabs(want[i]));
    size_t worst = 0, bad = 0;
    double worst_ratio = 0.0, err2 = 0.0, scale2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double s = c->scale ? fabs((double)scale[col[i]]) : 1.0;
        const double bound = L * s *
                                 ((VKVIT_GEMM_F16_CHUNK / 2 + 2) * u * sum_abs[i] +
                                  (c->K / 8.0 + 1.0) * ldexp(1.0, -24) * sum_abs[i] + 2.0 * c->K * ldexp(max_b, -14)) +
                             1e-5 * max_want;
        const double err = fabs((double)got[i] - want[i]);
        const double ratio = isnan(got[i]) ? INFINITY : err / bound;
        if (!(ratio <= 1.0)) bad++;
        if (!(ratio <= worst_ratio)) worst_ratio = ratio, worst = i;
        err2 += err * err;
        scale2 += L * L * s * s * sum_sq[i];
    }
    const double z = sqrt(err2) / (u * sqrt(scale2));
    const bool typical = n >= 256 && c->K >= 64;
    printf("    fp16 arithmetic: worst |err| / bound %.3g, typical error %.3g u%s\n", worst_ratio, z,
           typical ? "" : " (not checked: few outputs or small K)");
    CHECK(bad == 0, "%s M=%u N=%u K=%u: %zu outputs beyond the fp16 bound, worst %.3g x the bound at %zu (got %.9g, "
          "want %.9g, sum|ab| %.4g)", vname, c->M, c->N, c->K, bad, worst_ratio, worst, got[worst], want[worst],
          sum_abs[worst]);
    CHECK(!typical || z <= max_typical, "%s M=%u N=%u K=%u: typical error %.3g u > %g u: fp16 sums not flushed "
          "every %d k (cooperative matrices: not summed in fp32)?", vname, c->M, c->N, c->K, z, max_typical,
          VKVIT_GEMM_F16_CHUNK);
}

/* How many cases ran the build-time unrolled variants, [0] 64-k chunks and [1] 32-k (run_gemm_case). */
static uint32_t n_unrolled_runs[2];

/* MODE_W16 / MODE_F16_MATH: B is stored as fp16 (the *_w16 kernels of fp16 sessions, the *_f16 kernels of fp16-math
 * sessions); the reference uses the same rounded values, so the fp32-math tolerance is unchanged for *_w16. */
/* texel: the CPU variant with texel-buffer operands; coop_nv: the COOPMAT variant's NV kernel, not the emulated one;
 * coop_tile: the COOPMAT variant's tile (64 or 128) whatever the size would pick. */
static void run_gemm_case(vkvit_ctx *ctx, const gemm_case *c, vkvit_gemm_kernel variant, gemm_mode mode,
                          bool texel, bool coop_nv, uint32_t coop_tile, vkvit__gemm_causal causal,
                          bool spare_column) {
    const bool b_f16 = mode != MODE_F32;
    const gemm_layout l = layout_of(c);
    const uint32_t stride_d = l.stride_d;
    const size_t na = l.na, nb = l.nb, nd = l.nd;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *bias = malloc((size_t)c->N * 4), *scale = malloc((size_t)c->N * 4);
    float *d = malloc(nd * 4), *d_init = malloc(nd * 4);
    double *want = malloc(nd * sizeof(double));
    double *sum_abs = malloc(nd * sizeof(double)), *sum_sq = malloc(nd * sizeof(double));
    vt_fill_rand(a, na);
    vt_fill_rand(b, nb);
    for (uint32_t o = 0; o < l.n_outer; o++)      /* causal A: zeros where the mode promises them */
        for (uint32_t in = 0; in < l.n_inner; in++)
            for (uint32_t m = 0; m < c->M; m++)
                for (uint32_t k = 0; k < c->K; k++)
                    if (!causal_a_nonzero(causal, m, k))
                        a[c->a_offset + (size_t)o * l.outer_a + (size_t)in * l.inner_a + (size_t)m * c->K + k] = 0.0f;
    uint16_t *b16 = malloc(nb * 2);
    for (size_t i = 0; b_f16 && i < nb; i++) {
        b16[i] = vkvit__f32_to_f16(b[i]);
        b[i] = vkvit__f16_to_f32(b16[i]);
    }
    vt_fill_rand(bias, c->N);
    vt_fill_rand(scale, c->N);
    /* D starts as NaN everywhere, except the valid region of a residual case, which holds the residual. */
    uint32_t nan_bits = VT_NAN_BITS;
    for (size_t i = 0; i < nd; i++) memcpy(&d_init[i], &nan_bits, 4);
    if (c->residual)
        for (size_t row = 0; row < (size_t)l.n_outer * c->M; row++)
            for (uint32_t n = 0; n < l.n_inner * c->N; n++) d_init[c->d_offset + row * stride_d + n] = vt_rand_f();

    vkvit__buffer ba, bb, bbias, bscale, bd;
    MUST(vkvit__buffer_create(ctx, na * 4, VKVIT_MEM_DEVICE, "A", &ba));
    MUST(vkvit__buffer_create(ctx, nb * (b_f16 ? 2 : 4), VKVIT_MEM_DEVICE, "B", &bb));
    MUST(vkvit__buffer_create(ctx, (size_t)c->N * 4, VKVIT_MEM_DEVICE, "bias", &bbias));
    MUST(vkvit__buffer_create(ctx, (size_t)c->N * 4, VKVIT_MEM_DEVICE, "scale", &bscale));
    MUST(vkvit__buffer_create(ctx, nd * 4, VKVIT_MEM_DEVICE, "D", &bd));
    MUST(vkvit__buffer_upload(ctx, &ba, 0, a, na * 4));
    if (b_f16) MUST(vkvit__buffer_upload(ctx, &bb, 0, b16, nb * 2));
    else MUST(vkvit__buffer_upload(ctx, &bb, 0, b, nb * 4));
    free(b16);
    MUST(vkvit__buffer_upload(ctx, &bbias, 0, bias, (size_t)c->N * 4));
    MUST(vkvit__buffer_upload(ctx, &bscale, 0, scale, (size_t)c->N * 4));
    MUST(vkvit__buffer_upload(ctx, &bd, 0, d_init, nd * 4));

    vkvit__gemm_config cfg = vkvit__gemm_pick_variant(ctx, variant, c->M, c->N, c->K);
    CHECK(cfg.variant == variant, "pick_variant returned variant %d for %d", (int)cfg.variant, (int)variant);
    cfg.b_f16 = b_f16;
    cfg.f16_math = mode == MODE_F16_MATH;
    cfg.texel = texel;
    if (variant == VKVIT_GEMM_KERNEL_COOPMAT) { /* the device's hardware kernel (NV or KHR), else the emulated one */
        cfg.coopmat = coop_nv ? ctx->policy.coopmat : VKVIT_COOPMAT_EMULATED;
        /* the emulated kernel on 16x16x16 (test_coopmat_shapes takes its M = 8 shapes), unless the policy chose it on
         * another shape it has: not on a device's KHR shape it lacks (Mesa 26's lavapipe lists 8x8x8 alone) */
        if (!coop_nv && !(ctx->policy.coopmat == VKVIT_COOPMAT_EMULATED &&
                          (ctx->policy.coopmat_shape & VKVIT_COOPMAT_EMULATED_SHAPES)))
            cfg.coopmat_shape = VKVIT_COOPMAT_SHAPE_16X16X16;
    }
    if (variant == VKVIT_GEMM_KERNEL_COOPMAT) cfg.bm = cfg.bn = coop_tile;
    vkvit__gemm_push push = {
        .M = c->M, .N = c->N, .K = c->K,
        .stride_a = c->K, .stride_b = c->K, .stride_d = stride_d,
        .batch_stride_a = l.outer_a, .batch_stride_b = l.outer_b, .batch_stride_d = l.outer_d,
        .a_offset = c->a_offset, .d_offset = c->d_offset,
        .r_offset = c->d_offset, .r_stride = stride_d, .r_batch_stride = l.outer_d,
        .n_inner = c->n_inner, .inner_stride_a = l.inner_a, .inner_stride_b = l.inner_b, .inner_stride_d = l.inner_d,
        .r_inner_stride = l.inner_d, .b_offset = c->b_offset,
    };
    cfg.vec4 = vkvit__gemm_push_vec4(&push, c->batch); /* the CPU variant's vec4 or scalar-load path, as a node */
    cfg.pairs = vkvit__gemm_push_pairs(&push, c->batch, spare_column); /* texel variant: 64-bit pair stores */
    cfg.one_chunk = vkvit__gemm_one_chunk(&cfg, &push);                /* CPU variant: no running sums */
    vkvit__gemm_epilogue ep = {.bias = c->bias, .act = c->act, .scale = c->scale, .residual = c->residual,
                               .causal = causal};
    /* The build-time unrolled variants run exactly where their fixed constants hold (texel kernel with fp32 or fp16 weights, tn 8, vec4
     * loads, pair stores, no causal skipping), the 64-k one at bk 64 and the 32-k one at bk 32: a selection that
     * stopped picking them would otherwise leave this sweep testing the generic shader twice. */
    vkvit__kernel_desc kd;
    MUST(vkvit__gemm_kernel_desc(&cfg, &ep, "gemm", &kd));
    const bool want_unrolled = ctx->policy.gemm_cpu_unrolled && variant == VKVIT_GEMM_KERNEL_CPU && texel && mode != MODE_F16_MATH &&
                               cfg.tn == 8 && cfg.vec4 && cfg.pairs && causal == VKVIT_GEMM_CAUSAL_NONE;
#if VKVIT_HAVE_GEMM_CPU_UNROLLED
    const bool k64 = kd.shader == (mode == MODE_W16 ? VKVIT_SHADER_GEMM_CPU_F32_F32_W16_TEXEL_T8K2
                                                    : VKVIT_SHADER_GEMM_CPU_F32_F32_TEXEL_T8K2);
    const bool k32 = kd.shader == (mode == MODE_W16 ? VKVIT_SHADER_GEMM_CPU_F32_F32_W16_TEXEL_T8K1
                                                    : VKVIT_SHADER_GEMM_CPU_F32_F32_TEXEL_T8K1);
#else
    const bool k64 = false, k32 = false;
#endif
    CHECK((k64 || k32) == want_unrolled && (!want_unrolled || k64 == (cfg.bk == 64)),
          "M=%u N=%u K=%u: unrolled 64-k variant %d, 32-k %d; expected %d at bk %u", c->M, c->N, c->K, k64, k32,
          want_unrolled, cfg.bk);
    n_unrolled_runs[0] += k64, n_unrolled_runs[1] += k32;
    vkvit__kernel k;
    MUST(vkvit__gemm_kernel_create(ctx, &cfg, &ep, "gemm", &k));
    vkvit__descriptors pool;
    VkDescriptorSet set;
    MUST(vkvit__descriptors_create(ctx, 1, &pool));
    vkvit__binding binds[6] = {{&ba, 0, 0}, {&bb, 0, 0}, {&bbias, 0, 0}, {&bd, 0, 0}, {&bscale, 0, 0}, {&bd, 0, 0}};
    MUST(vkvit__descriptor_set_create(ctx, &pool, &k, binds, &set));
    VkCommandBuffer cmd;
    MUST(vkvit__cmd_begin(ctx, &cmd));
    vkvit__gemm_record(ctx, cmd, &k, &cfg, set, &push, c->batch);
    MUST(vkvit__cmd_submit_wait(ctx, cmd));
    MUST(vkvit__buffer_download(ctx, &bd, 0, d, nd * 4));

    bool *dont_care = malloc(nd * sizeof(bool));
    cpu_gemm(c, &l, a, b, bias, scale, d_init, want, sum_abs, sum_sq, causal, spare_column, dont_care);
    /* Compare the valid part; everything else (leading offset, row padding) must be untouched NaN. */
    size_t vi = 0, stray = 0;
    float *got = malloc(nd * 4);
    double *ref = malloc(nd * sizeof(double));
    double *ref_abs = malloc(nd * sizeof(double)), *ref_sq = malloc(nd * sizeof(double));
    uint32_t *col = malloc(nd * sizeof(uint32_t)); /* the output column n (bias / scale index) of each valid element */
    for (size_t i = 0; i < nd; i++) {
        if (dont_care[i]) continue;
        if (isnan(want[i])) {
            stray += !isnan(d[i]);
        } else {
            got[vi] = d[i];
            ref_abs[vi] = sum_abs[i], ref_sq[vi] = sum_sq[i];
            col[vi] = (uint32_t)((i - c->d_offset) % stride_d % c->N);
            ref[vi++] = want[i];
        }
    }
    size_t worst = 0;
    double err = vt_max_rel_err(got, ref, vi, &worst);
    static const char *const names[3][3] = {{"shared", "cpu", "cpu-tx"},
                                            {"shared-w16", "cpu-w16", "cpu-w16-tx"},
                                            {"shared-f16", "cpu-f16", "cpu-f16-tx"}};
    const char *vname = variant == VKVIT_GEMM_KERNEL_COOPMAT ? (coop_nv ? "coopmat-nv" : "coopmat-emu")
                                                      : names[mode][variant == VKVIT_GEMM_KERNEL_CPU ? 1 + texel : 0];
    printf("gemm %-10s M=%-5u N=%-5u K=%-5u batch=%u inner=%u bias=%d act=%u scale=%d res=%d pad=%u off=%u/%u/%u "
           "shared_w=%d causal=%u tile %ux%u  max rel err %.3g\n",
           vname, c->M, c->N, c->K, c->batch, c->n_inner, c->bias, c->act, c->scale, c->residual, c->pad_d,
           c->a_offset, c->b_offset, c->d_offset, c->shared_weights, (unsigned)causal, cfg.bm, cfg.bn, err);
    if (mode == MODE_F16_MATH)
        check_f16_math(vname, c, got, ref, ref_abs, ref_sq, col, scale, vi, variant == VKVIT_GEMM_KERNEL_COOPMAT ? 1.0 : 2.0);
    else
        CHECK(err <= 1e-5, "%s M=%u N=%u K=%u: max rel err %.3g at %zu (got %.9g, want %.9g)", vname, c->M, c->N, c->K,
              err, worst, got[worst], ref[worst]);
    CHECK(stray == 0, "%s M=%u N=%u K=%u: %zu elements outside the output were overwritten", vname, c->M, c->N, c->K,
          stray);

    vkvit__descriptors_destroy(ctx, &pool);
    vkvit__kernel_destroy(ctx, &k);
    vkvit__buffer_destroy(ctx, &ba);
    vkvit__buffer_destroy(ctx, &bb);
    vkvit__buffer_destroy(ctx, &bbias);
    vkvit__buffer_destroy(ctx, &bscale);
    vkvit__buffer_destroy(ctx, &bd);
    free(a), free(b), free(bias), free(scale), free(d), free(d_init), free(want), free(got), free(ref);
    free(sum_abs), free(sum_sq), free(ref_abs), free(ref_sq), free(col), free(dont_care);
}

/* Elementwise add with a broadcast row, D[i] = A[i] + B[i % n_b] over n = rows * n_b elements, through the GEMM
 * epilogue the network uses for it (bias + residual, with a product that is exactly zero: ones [rows, 1] times a
 * zero weight [n_b, 1]) on the kernel this device picks. */
static void run_add_case(vkvit_ctx *ctx, uint32_t rows, uint32_t n_b) {
    const uint32_t n = rows * n_b;
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n_b * 4), *d = malloc((size_t)n * 4);
    float *ones = malloc((size_t)rows * 4), *zeros = calloc(n_b, 4);
    double *want = malloc((size_t)n * sizeof(double));
    vt_fill_rand(a, n);
    vt_fill_rand(b, n_b);
    for (uint32_t i = 0; i < rows; i++) ones[i] = 1.0f;
    vkvit__buffer ba, bb, bd, bx, bw;
    MUST(vkvit__buffer_create(ctx, (size_t)n * 4, VKVIT_MEM_DEVICE, "A", &ba));
    MUST(vkvit__buffer_create(ctx, (size_t)n_b * 4, VKVIT_MEM_DEVICE, "B", &bb));
    MUST(vkvit__buffer_create(ctx, (size_t)n * 4, VKVIT_MEM_DEVICE, "D", &bd));
    MUST(vkvit__buffer_create(ctx, (size_t)rows * 4, VKVIT_MEM_DEVICE, "ones", &bx));
    MUST(vkvit__buffer_create(ctx, (size_t)n_b * 4, VKVIT_MEM_DEVICE, "zero weight", &bw));
    MUST(vkvit__buffer_upload(ctx, &ba, 0, a, (size_t)n * 4));
    MUST(vkvit__buffer_upload(ctx, &bb, 0, b, (size_t)n_b * 4));
    MUST(vkvit__buffer_upload(ctx, &bx, 0, ones, (size_t)rows * 4));
    MUST(vkvit__buffer_upload(ctx, &bw, 0, zeros, (size_t)n_b * 4));
    MUST(vkvit__buffer_fill(ctx, &bd, 0, (size_t)n * 4, VT_NAN_BITS));
    const vkvit__gemm_config cfg = vkvit__gemm_pick(ctx, rows, n_b, 1);
    const vkvit__gemm_epilogue ep = {.bias = true, .residual = true};
    vkvit__kernel k;
    MUST(vkvit__gemm_kernel_create(ctx, &cfg, &ep, "add", &k));
    vkvit__descriptors pool;
    VkDescriptorSet set;
    MUST(vkvit__descriptors_create(ctx, 1, &pool));
    vkvit__binding binds[VKVIT_GEMM_BINDINGS] = {{&bx, 0, 0}, {&bw, 0, 0}, {&bb, 0, 0},
                                                 {&bd, 0, 0}, {&bb, 0, 0}, {&ba, 0, 0}};
    MUST(vkvit__descriptor_set_create(ctx, &pool, &k, binds, &set));
    vkvit__gemm_push push = {.M = rows, .N = n_b, .K = 1, .stride_a = 1, .stride_b = 1, .stride_d = n_b,
                             .r_stride = n_b, .n_inner = 1};
    VkCommandBuffer cmd;
    MUST(vkvit__cmd_begin(ctx, &cmd));
    vkvit__gemm_record(ctx, cmd, &k, &cfg, set, &push, 1);
    MUST(vkvit__cmd_submit_wait(ctx, cmd));
    MUST(vkvit__buffer_download(ctx, &bd, 0, d, (size_t)n * 4));
    for (uint32_t i = 0; i < n; i++) want[i] = (double)a[i] + b[i % n_b];
    double err = vt_max_rel_err(d, want, n, NULL);
    printf("add n=%u n_b=%u  max rel err %.3g\n", n, n_b, err);
    CHECK(err <= 1e-6, "add n=%u n_b=%u: max rel err %.3g", n, n_b, err);
    vkvit__descriptors_destroy(ctx, &pool);
    vkvit__kernel_destroy(ctx, &k);
    vkvit__buffer_destroy(ctx, &ba);
    vkvit__buffer_destroy(ctx, &bb);
    vkvit__buffer_destroy(ctx, &bd);
    vkvit__buffer_destroy(ctx, &bx);
    vkvit__buffer_destroy(ctx, &bw);
    free(a), free(b), free(d), free(ones), free(zeros), free(want);
}

/* A GEMM node over no input features (K = 0) is refused with a sentence: the kernels' K loops assume one chunk. */
static void empty_gemm_refused(vkvit_ctx *ctx) {
    vkvit__graph g;
    vkvit__graph_init(&g, ctx);
    uint32_t shape[2] = {4, 4};
    const uint32_t a = vkvit__graph_tensor(&g, VKVIT_TENSOR_INPUT, "a", 2, shape);
    const uint32_t w = vkvit__graph_tensor(&g, VKVIT_TENSOR_INPUT, "w", 2, shape);
    const uint32_t d = vkvit__graph_tensor(&g, VKVIT_TENSOR_ACTIVATION, "d", 2, shape);
    vkvit__gemm_op op = {.a = vkvit__mat_dense(a, 4, 0), .w = w, .bias = VKVIT_NONE, .d = vkvit__mat_dense(d, 4, 4),
                         .M = 4, .N = 4, .K = 0, .batch = 1, .act = VKVIT_ACT_NONE, .scale = VKVIT_NONE,
                         .residual = {VKVIT_NONE, 0, 0, 0}};
    vkvit__op_gemm(&g, "empty", &op);
    CHECK(vkvit__graph_error(&g) == VKVIT_ERROR_INVALID_ARGUMENT && g.n_nodes == 0 &&
              strstr(vkvit_last_error(), "K = 0"),
          "gemm with K = 0: %s", vkvit_last_error());
    vkvit__graph_free(&g);
}

/* Parts (the first argument; none: all), so that CTest can run them side by side: llvmpipe compiles each of the
 * ~330 pipelines below at its first dispatch, on one thread (~1.7 s each on a 2-core Zen 3 with a cold Mesa
 * shader cache: ~550 of test_gemm's ~630 s there). */
static const char *const parts[] = {"cpu", "cpu-texel", "shared", "coopmat"};

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    bool known = !only;
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(parts); i++) known |= only && !strcmp(only, parts[i]);
    if (!known) {
        fprintf(stderr, "test_gemm: unknown part '%s'; the parts:", only);
        for (size_t i = 0; i < VKVIT_ARRAY_LEN(parts); i++) fprintf(stderr, " %s", parts[i]);
        fprintf(stderr, " (none: all)\n");
        return 2;
    }
#define PART(name) (!only || !strcmp(only, name))
    vkvit_ctx *ctx = vt_ctx();
    empty_gemm_refused(ctx);
    static const gemm_case cases[] = {
        {1, 1, 1, 1, false, 0, false, 0, false, false, 0, 0, 0, 0},
        {7, 13, 5, 1, false, 0, false, 0, false, false, 0, 0, 0, 0},
        {7, 13, 5, 1, true, 3, false, 0, false, false, 0, 0, 0, 0},
        {1, 64, 64, 1, true, 0, false, 0, false, false, 0, 0, 0, 0},
        {64, 64, 64, 1, false, 0, false, 0, false, false, 0, 0, 0, 0},
        {65, 63, 17, 1, true, 1, false, 0, false, false, 0, 0, 0, 0},
        {127, 131, 137, 1, false, 0, false, 0, false, false, 0, 0, 0, 0},      /* primes */
        {3, 5, 7, 4, true, 2, false, 0, false, false, 0, 0, 0, 0},             /* batched */
        {37, 29, 19, 3, false, 0, true, 0, false, false, 0, 0, 0, 0},          /* batched, shared weights */
        {201, 1152, 384, 1, false, 0, false, 0, false, false, 0, 0, 0, 0},     /* ViT-5-S qkv */
        {201, 384, 1536, 1, true, 0, false, 0, false, false, 0, 0, 0, 0},      /* ViT-5-S mlp.layer2 */
        {1000, 1000, 1000, 1, false, 0, false, 0, false, false, 0, 0, 0, 0},
        {1040, 1030, 40, 1, true, 2, false, 1, true, true, 0, 0, 0, 0},    /* the shared kernel's 128x64 tile, partial */
        {300, 520, 36, 2, true, 5, true, 0, false, false, 0, 0, 0, 0},         /* several row and column tiles, vec4 loads, batched */
        {33, 300, 130, 1, true, 0, false, 0, false, false, 0, 0, 0, 0},        /* K % 4 == 2: scalar-load path with partial K chunk */
        {9, 70, 4, 1, false, 1, false, 0, false, false, 0, 0, 0, 0},           /* K = 4: a single partial K chunk */
        {130, 128, 96, 1, true, 2, false, 1, true, true, 0, 0, 0, 0},   /* 32-k chunks, tn 8, every epilogue */
        /* Epilogues, as the ViT-5 block uses them: GELU (mlp.layer1), LayerScale + in-place residual (proj, layer2) */
        {201, 96, 64, 1, true, 0, false, 1, false, false, 0, 0, 0, 0},
        {37, 50, 29, 1, false, 3, false, 1, true, true, 0, 0, 0, 0},
        {201, 64, 128, 2, true, 0, true, 0, true, true, 0, 0, 0, 0},
        {13, 19, 11, 1, true, 2, false, 2, true, false, 0, 0, 0, 0},     /* ReLU */
        {13, 19, 11, 1, false, 0, false, 3, false, true, 0, 0, 0, 0},    /* SiLU */
        /* Offsets into A and D (e.g. the patch embedding writing into token rows), aligned and not */
        {16, 40, 24, 3, true, 8, true, 0, false, true, 8, 40, 0, 0},
        {5, 9, 7, 2, false, 1, true, 1, true, false, 3, 5, 0, 0},
        /* Two-level batch z = outer * n_inner + inner (M, N, K, batch, ..., a/d offsets, n_inner, b_offset): the
         * attention S·V product writing head column blocks (outer = image, inner = head), vec4 and scalar paths,
         * with a residual and shared weights */
        {201, 64, 204, 6, false, 0, false, 0, false, false, 0, 0, 6, 0},
        {37, 32, 68, 6, false, 3, false, 0, false, false, 4, 8, 3, 4},
        {17, 13, 9, 6, true, 2, false, 1, true, true, 1, 3, 2, 5},
        {9, 24, 16, 4, false, 0, true, 0, false, true, 0, 0, 2, 0},
    };
    /* Odd N whose column N (inside the row padding) may be overwritten, as the attention scores' padding
     * (vkvit__gemm_op.d_spare_column): the texel kernel's 64-bit pair stores reach column N */
    static const gemm_case spare_cases[] = {
        {201, 201, 64, 6, false, 3, false, 0, false, false, 0, 0, 0, 0},
        {37, 13, 9, 2, true, 1, true, 1, true, true, 3, 6, 0, 0},
    };
    /* Causal (the mLSTM's quadratic form, fields as above + the mode): P V with P zero past the diagonal, one
     * way or the other (several K chunks; row tiles of 75 where N <= 64; M > K: rows with no term at all),
     * and Q K^T where only one triangle is needed (several column tiles; two row tiles of 256; column tiles
     * right of every row, which compute nothing) */
    static const causal_case causal_cases[] = {
        {{196, 192, 196, 2, false, 0, false, 0, false, false, 0, 0, 2, 0}, VKVIT_GEMM_CAUSAL_A_LOWER},
        {{196, 192, 196, 2, false, 0, false, 0, false, false, 0, 0, 2, 0}, VKVIT_GEMM_CAUSAL_A_UPPER},
        {{300, 40, 300, 1, true, 0, false, 1, true, false, 0, 0, 0, 0}, VKVIT_GEMM_CAUSAL_A_LOWER},
        {{300, 40, 290, 1, true, 0, false, 3, false, true, 0, 0, 0, 0}, VKVIT_GEMM_CAUSAL_A_UPPER},
        {{70, 50, 33, 1, true, 2, false, 1, true, true, 0, 0, 0, 0}, VKVIT_GEMM_CAUSAL_A_LOWER},
        {{196, 196, 192, 4, false, 0, false, 0, false, false, 0, 0, 4, 0}, VKVIT_GEMM_CAUSAL_D_LOWER},
        {{196, 196, 192, 4, false, 0, false, 0, false, false, 0, 0, 4, 0}, VKVIT_GEMM_CAUSAL_D_UPPER},
        {{300, 200, 64, 1, true, 1, false, 0, false, false, 0, 0, 0, 0}, VKVIT_GEMM_CAUSAL_D_LOWER},
        {{300, 40, 66, 1, false, 0, false, 0, false, false, 0, 0, 0, 0}, VKVIT_GEMM_CAUSAL_D_UPPER},
        {{100, 300, 36, 1, true, 0, false, 0, false, false, 0, 0, 0, 0}, VKVIT_GEMM_CAUSAL_D_LOWER}, /* tiles with no row */
        {{90, 40, 60, 1, true, 0, false, 0, false, false, 0, 0, 0, 0}, VKVIT_GEMM_CAUSAL_A_UPPER}, /* one K chunk, M > K */
    };
    /* The variant this device would use first, then the others. */
    const vkvit_gemm_kernel picked = vkvit__gemm_pick(ctx, 64, 64, 64).variant;
    printf("device picks the '%s' GEMM kernel\n", vkvit_gemm_kernel_name(picked));
    const bool f16_math = ctx->policy.fp16_math;
    if (!f16_math)
        printf("fp16 arithmetic kernels not run: the device lacks shaderFloat16 or storageBuffer16BitAccess\n");
    if (only && ((!strcmp(only, "cpu-texel") && !ctx->policy.texel_reads) || (!strcmp(only, "coopmat") && !f16_math))) {
        printf("SKIP: part '%s' has nothing to run on this device\n", only);  /* not a pass that checked nothing */
        vkvit_ctx_destroy(ctx);
        return 77;
    }
    /* The CPU kernel runs with SSBO operands and, where the device allows it (caps.texel_reads), with texel-buffer
     * operands, whichever the device picks. */
    /* the device's pick first, then the other of the CPU and shared kernels */
    const vkvit_gemm_kernel order[2] = {picked, picked == VKVIT_GEMM_KERNEL_CPU ? VKVIT_GEMM_KERNEL_SHARED
                                                                               : VKVIT_GEMM_KERNEL_CPU};
    for (int v = 0; v < 2; v++) {
        const vkvit_gemm_kernel variant = order[v];
        for (int texel = 0; texel <= (variant == VKVIT_GEMM_KERNEL_CPU && ctx->policy.texel_reads); texel++) {
            if (!PART(variant == VKVIT_GEMM_KERNEL_SHARED ? "shared" : texel ? "cpu-texel" : "cpu")) continue;
            for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases); i++)
                run_gemm_case(ctx, &cases[i], variant, MODE_F32, texel, false, 0, VKVIT_GEMM_CAUSAL_NONE, false);
            /* fp16 weights (B), then fp16 arithmetic: every case but the 1000^3 one */
            for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases); i++)
                if (cases[i].M * cases[i].N < 1000000)
                    run_gemm_case(ctx, &cases[i], variant, MODE_W16, texel, false, 0, VKVIT_GEMM_CAUSAL_NONE, false);
            for (size_t i = 0; f16_math && i < VKVIT_ARRAY_LEN(cases); i++)
                if (cases[i].M * cases[i].N < 1000000)
                    run_gemm_case(ctx, &cases[i], variant, MODE_F16_MATH, texel, false, 0, VKVIT_GEMM_CAUSAL_NONE,
                                  false);
            /* causal cases, fp32 (the mLSTM's products are fp32 in every session) */
            for (size_t i = 0; i < VKVIT_ARRAY_LEN(causal_cases); i++)
                run_gemm_case(ctx, &causal_cases[i].c, variant, MODE_F32, texel, false, 0, causal_cases[i].causal,
                              false);
            for (size_t i = 0; i < VKVIT_ARRAY_LEN(spare_cases); i++)
                run_gemm_case(ctx, &spare_cases[i], variant, MODE_F32, texel, false, 0, VKVIT_GEMM_CAUSAL_NONE, true);
        }
    }
    /* Both unrolled variants ran where the device uses them (and neither with VKVIT_DISABLE_UNROLLED=1: above). */
    if (PART("cpu-texel") && ctx->policy.gemm_cpu_unrolled) {
        printf("unrolled CPU GEMM variants: 64-k chunks in %u cases, 32-k chunks in %u\n", n_unrolled_runs[0],
               n_unrolled_runs[1]);
        CHECK(n_unrolled_runs[0] > 0 && n_unrolled_runs[1] > 0, "an unrolled variant never ran: %u / %u",
              n_unrolled_runs[0], n_unrolled_runs[1]);
    }
    /* Cooperative matrices (fp16 arithmetic only): the emulated kernel wherever fp16 math runs (its tiling, staging,
     * bounds and epilogue are the NV kernel's), the NV kernel where this device uses it. */
    const bool coop_nv = (ctx->policy.coopmat == VKVIT_COOPMAT_NV || ctx->policy.coopmat == VKVIT_COOPMAT_KHR ||
                          ctx->policy.coopmat == VKVIT_COOPMAT_NV2); /* NV, KHR or NV2 (VKVIT_COOPMAT_NV2=1) build */
    if (coop_nv) printf("hardware cooperative-matrix GEMM: family %d (1 NV, 2 KHR, 4 NV2)\n", (int)ctx->policy.coopmat);
    if (PART("coopmat") && getenv("VKVIT_COOPMAT_NV2") && ctx->policy.coopmat != VKVIT_COOPMAT_NV2) {
        printf("SKIP: VKVIT_COOPMAT_NV2=1 (test_gemm_coopmat_nv2), but the NV cooperative-matrix-2 kernel does not run "
               "here (workarounds: %s)\n", ctx->info.workarounds);
        vkvit_ctx_destroy(ctx);
        return 77;
    }
    if (!coop_nv) printf("hardware cooperative-matrix GEMM not run: this device does not use it\n");
    for (int nv = 0; PART("coopmat") && f16_math && nv <= coop_nv; nv++)
        for (uint32_t tile = 32; tile <= 128; tile *= 2) { /* every tile that fits on every case */
            if (!vkvit__gemm_coopmat_tile_fits(ctx, tile, !nv)) {
                printf("coopmat %s tile %u not run: more shared memory than the device's %u bytes\n",
                       nv ? "hardware" : "emulated", tile, ctx->caps.max_shared_memory);
                continue;
            }
            for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases); i++) {
                /* A CPU device runs the hardware kernel's cooperative matrices lane by lane (lavapipe: a reduction
                 * per output and k): the smaller cases there, which still take every path. */
                const double work = (double)cases[i].M * cases[i].N * cases[i].K * cases[i].batch;
                if (cases[i].M * cases[i].N < 1000000 && (!nv || !ctx->policy.cpu_kernels || work <= 2e6))
                    run_gemm_case(ctx, &cases[i], VKVIT_GEMM_KERNEL_COOPMAT, MODE_F16_MATH, false, nv, tile,
                                  VKVIT_GEMM_CAUSAL_NONE, false);
            }
        }
    if (PART("shared")) {
        run_add_case(ctx, 1, 1);
        run_add_case(ctx, 1, 1000);
        run_add_case(ctx, 201, 384);
        run_add_case(ctx, 14286, 7 * 3);    /* 300,006 elements */
    }
    return vt_finish(ctx);
}
