// SPDX-License-Identifier: Apache-2.0
/* The cooperative-matrix GEMM (shaders/gemm_coopmat.comp) at the M = 8 fragment shapes its emulated form implements
 * (VKVIT_COOPMAT_EMULATED_SHAPES: Intel's 8 x 16 x 16 and 8 x 8 x 16; 16 x 16 x 16 is test_gemm's), at each tile
 * (32, 64, 128) that fits the device, on odd M, N, K (1, fragment edges +- 1, a partial k-step), against double loops;
 * where the device runs a hardware kernel (KHR or NV), its own shape too. Then the path a device profile takes:
 * under VKVIT_DEVICE_PROFILE=intel-xe (an Arc A770, whose only fp16 shape is 8 x 8 x 16) with VKVIT_COOPMAT_EMULATE=1
 * the policy must choose the emulated kernel at 8 x 8 x 16, fp16-math GEMMs must run that shader, and be right.
 *
 * Each case draws fresh inputs (seed printed; VKVIT_TEST_SEED=S reruns it), poisons D and its row padding with NaN,
 * and checks every output against
 *     |got - want| <= L |scale_n| (2^-11 + (K + 16) 2^-24) sum_k |a_k b_k| + 2e-6 max |want|
 * (A is rounded to fp16 as it is staged, 2^-11 S; the fp32 accumulation over K, (K + 16) 2^-24 S; the fp32 epilogue,
 * 2e-6 max |want|; L the activation's largest slope) and that the padding is still NaN. A fragment mapped to the wrong
 * rows, columns or k gives errors of the size of S itself. */
#include "model/safetensors.h"
#include "ops/gemm.h"
#include "policy/policy.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct shape_case {
    uint32_t M, N, K, batch;
    bool bias, scale, residual;
    uint32_t act; /* 0 none, 1 GELU (erf), 2 ReLU, 3 SiLU */
} shape_case;

static double act_ref(uint32_t act, double x) {
    switch (act) {
    case 1: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case 2: return x > 0 ? x : 0;
    case 3: return x / (1.0 + exp(-x));
    default: return x;
    }
}

static const char *shape_name(uint32_t shape) {
    switch (shape) {
    case VKVIT_COOPMAT_SHAPE_16X16X16: return "16x16x16";
    case VKVIT_COOPMAT_SHAPE_8X8X8: return "8x8x8";
    case VKVIT_COOPMAT_SHAPE_8X16X16: return "8x16x16";
    case VKVIT_COOPMAT_SHAPE_8X8X16: return "8x8x16";
    default: return "?";
    }
}

/* One GEMM on the kernel of `family` at `shape` and `tile`: inputs drawn, D poisoned, checked (see the header).
 * corrupt: the kernel's test hook adds 1 to every output, and the check must then fail. */
static void run_case(vkvit_ctx *ctx, const shape_case *c, vkvit__coopmat_kernel family, uint32_t shape,
                     uint32_t tile, bool corrupt) {
    const uint32_t pad = 3, stride_d = c->N + pad;
    const size_t na = (size_t)c->batch * c->M * c->K, nb = (size_t)c->batch * c->N * c->K;
    const size_t nd = (size_t)c->batch * c->M * stride_d;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *bias = malloc(c->N * 4u), *scale = malloc(c->N * 4u);
    float *d = malloc(nd * 4), *d_init = malloc(nd * 4);
    uint16_t *b16 = malloc(nb * 2);
    vt_fill_rand(a, na);
    vt_fill_rand(b, nb);
    vt_fill_rand(bias, c->N);
    vt_fill_rand(scale, c->N);
    for (size_t i = 0; i < nb; i++) b16[i] = vkvit__f32_to_f16(b[i]), b[i] = vkvit__f16_to_f32(b16[i]);
    const uint32_t nan_bits = VT_NAN_BITS;
    for (size_t i = 0; i < nd; i++) memcpy(&d_init[i], &nan_bits, 4);
    if (c->residual)
        for (size_t r = 0; r < (size_t)c->batch * c->M; r++)
            for (uint32_t n = 0; n < c->N; n++) d_init[r * stride_d + n] = vt_rand_f();

    vkvit__buffer ba, bb, bbias, bscale, bd;
    MUST(vkvit__buffer_create(ctx, na * 4, VKVIT_MEM_DEVICE, "A", &ba));
    MUST(vkvit__buffer_create(ctx, nb * 2, VKVIT_MEM_DEVICE, "B", &bb));
    MUST(vkvit__buffer_create(ctx, c->N * 4u, VKVIT_MEM_DEVICE, "bias", &bbias));
    MUST(vkvit__buffer_create(ctx, c->N * 4u, VKVIT_MEM_DEVICE, "scale", &bscale));
    MUST(vkvit__buffer_create(ctx, nd * 4, VKVIT_MEM_DEVICE, "D", &bd));
    MUST(vkvit__buffer_upload(ctx, &ba, 0, a, na * 4));
    MUST(vkvit__buffer_upload(ctx, &bb, 0, b16, nb * 2));
    MUST(vkvit__buffer_upload(ctx, &bbias, 0, bias, c->N * 4u));
    MUST(vkvit__buffer_upload(ctx, &bscale, 0, scale, c->N * 4u));
    MUST(vkvit__buffer_upload(ctx, &bd, 0, d_init, nd * 4));

    const vkvit__coopmat_kernel saved_kernel = ctx->policy.coopmat;
    const uint32_t saved_shape = ctx->policy.coopmat_shape;
    ctx->policy.coopmat = family;
    ctx->policy.coopmat_shape = shape;
    vkvit__gemm_config cfg = vkvit__gemm_pick_coopmat(ctx, c->M, c->N, c->K, c->batch);
    ctx->policy.coopmat = saved_kernel;
    ctx->policy.coopmat_shape = saved_shape;
    CHECK(cfg.coopmat == family && cfg.coopmat_shape == shape, "pick_coopmat: family %d shape 0x%x, want %d 0x%x",
          (int)cfg.coopmat, cfg.coopmat_shape, (int)family, shape);
    cfg.bm = cfg.bn = tile;
    cfg.coopmat_corrupt = corrupt;
    const vkvit__gemm_push push = {
        .M = c->M, .N = c->N, .K = c->K, .stride_a = c->K, .stride_b = c->K, .stride_d = stride_d,
        .batch_stride_a = c->M * c->K, .batch_stride_b = c->N * c->K, .batch_stride_d = c->M * stride_d,
        .r_stride = stride_d, .r_batch_stride = c->M * stride_d,
    };
    const vkvit__gemm_epilogue ep = {.bias = c->bias, .act = c->act, .scale = c->scale, .residual = c->residual};
    vkvit__kernel k;
    MUST(vkvit__gemm_kernel_create(ctx, &cfg, &ep, "gemm_coopmat_shape", &k));
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

    const double L = c->act == 1 ? 1.1289 : c->act == 3 ? 1.0999 : 1.0;
    double *want = malloc(nd * sizeof(double)), *sum_abs = malloc(nd * sizeof(double));
    double max_want = 0.0;
    for (uint32_t z = 0; z < c->batch; z++)
        for (uint32_t m = 0; m < c->M; m++)
            for (uint32_t n = 0; n < c->N; n++) {
                const float *ar = a + ((size_t)z * c->M + m) * c->K, *br = b + ((size_t)z * c->N + n) * c->K;
                double acc = 0.0, s = 0.0;
                for (uint32_t kk = 0; kk < c->K; kk++) {
                    const double ab = (double)ar[kk] * br[kk];
                    acc += ab, s += fabs(ab);
                }
                const size_t i = ((size_t)z * c->M + m) * stride_d + n;
                double v = act_ref(c->act, acc + (c->bias ? bias[n] : 0.0));
                if (c->scale) v *= scale[n];
                if (c->residual) v += d_init[i];
                want[i] = v;
                sum_abs[i] = s * L * (c->scale ? fabs((double)scale[n]) : 1.0);
                max_want = fmax(max_want, fabs(v));
            }
    size_t bad = 0, stray = 0, worst = 0;
    double worst_ratio = 0.0;
    for (size_t i = 0; i < nd; i++) {
        if (i % stride_d >= c->N) {
            stray += !isnan(d[i]);
            continue;
        }
        const double bound = (ldexp(1.0, -11) + (c->K + 16.0) * ldexp(1.0, -24)) * sum_abs[i] + 2e-6 * max_want;
        const double ratio = isnan(d[i]) ? INFINITY : fabs((double)d[i] - want[i]) / bound;
        if (!(ratio <= 1.0)) bad++;
        if (!(ratio <= worst_ratio)) worst_ratio = ratio, worst = i;
    }
    printf("coopmat %-8s %-8s tile %3u  M=%-4u N=%-4u K=%-4u batch=%u bias=%d act=%u scale=%d res=%d  worst "
           "|err| / bound %.3g%s\n",
           family == VKVIT_COOPMAT_EMULATED ? "emulated" : family == VKVIT_COOPMAT_KHR ? "KHR" : "NV",
           shape_name(shape), tile, c->M, c->N, c->K, c->batch, c->bias, c->act, c->scale, c->residual, worst_ratio,
           corrupt ? " (the kernel corrupted on purpose)" : "");
    if (corrupt) {
        CHECK(bad > 0, "%s tile %u M=%u N=%u K=%u: the corrupted kernel passed the check", shape_name(shape), tile,
              c->M, c->N, c->K);
        bad = 0;
    }
    CHECK(bad == 0, "%s tile %u M=%u N=%u K=%u: %zu outputs beyond the bound, worst %.3g x at %zu (got %.9g, want "
          "%.9g)", shape_name(shape), tile, c->M, c->N, c->K, bad, worst_ratio, worst, d[worst], want[worst]);
    CHECK(stray == 0, "%s tile %u M=%u N=%u K=%u: %zu padding elements overwritten", shape_name(shape), tile, c->M,
          c->N, c->K, stray);

    vkvit__descriptors_destroy(ctx, &pool);
    vkvit__kernel_destroy(ctx, &k);
    vkvit__buffer_destroy(ctx, &ba);
    vkvit__buffer_destroy(ctx, &bb);
    vkvit__buffer_destroy(ctx, &bbias);
    vkvit__buffer_destroy(ctx, &bscale);
    vkvit__buffer_destroy(ctx, &bd);
    free(a), free(b), free(b16), free(bias), free(scale), free(d), free(d_init), free(want), free(sum_abs);
}

/* The cases of one (shape, tile): GEMM edges around the fragments (1, 7, 9, 15, 17 ...), a K with a partial
 * 32-k step, a batch; the epilogue differs per tile so that each pipeline has one. */
static void run_cases(vkvit_ctx *ctx, vkvit__coopmat_kernel family, uint32_t shape, uint32_t tile) {
    const bool bias = tile != 128, residual = tile == 64, scale = tile == 64;
    const uint32_t act = tile == 32 ? 1 : 0;
    const shape_case cases[] = {
        {1, 1, 1, 1, bias, scale, residual, act},
        {9, 17, 15, 1, bias, scale, residual, act},
        {33, 7, 47, 2, bias, scale, residual, act},
        {tile + 1, tile - 1, 161, 1, bias, scale, residual, act},
        {2 * tile + 7, 31, 96, 1, bias, scale, residual, act},
    };
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases); i++) run_case(ctx, &cases[i], family, shape, tile, false);
}

/* The policy's shape and warp for a device with these facts (vkvit__policy_choose is pure): an RDNA3-like device
 * (16x16x16, size control 32..64), Intel's Xe-HPG (8x8x16) and Xe2 (8x16x16) with size control 8..32, the same Xe2
 * without size control (default 32: no warp of 16 can be asked for), lavapipe at 16 lanes listing 8x8x8 (its
 * lowering wants 8). In a build without the KHR kernel (Debian 12's glslang) every one of them gets none. */
static void policy_cases(void) {
    const vkvit__caps base = {
        .fp16_storage = true, .fp16_math = true, .subgroup_size = 32, .subgroup_size_min = 8, .subgroup_size_max = 32,
        .subgroup_size_control = true, .subgroup_arithmetic = true, .subgroup_shuffle = true,
        .cooperative_matrix_khr = true, .coopmat_khr_usable = true, .max_shared_memory = 65536,
        .max_workgroup_invocations = 1024, .max_workgroup_size = {1024, 1024, 64}, .max_storage_buffer_range = 1u << 30,
        .max_storage_buffers_per_stage = 64,
    };
    struct {
        const char *what;
        uint32_t shapes, sg, sg_min, sg_max;
        bool sized;
        uint32_t want_shape, want_warp; /* 0: no cooperative-matrix kernel */
    } cases[] = {
        {"rdna3 16x16x16, wave64 default", VKVIT_COOPMAT_SHAPE_16X16X16, 64, 32, 64, true,
         VKVIT_COOPMAT_SHAPE_16X16X16, 32},
        {"xe-hpg 8x8x16", VKVIT_COOPMAT_SHAPE_8X8X16, 32, 8, 32, true, VKVIT_COOPMAT_SHAPE_8X8X16, 8},
        {"xe2 8x16x16", VKVIT_COOPMAT_SHAPE_8X16X16, 32, 8, 32, true, VKVIT_COOPMAT_SHAPE_8X16X16, 16},
        {"xe2 and 16x16x16", VKVIT_COOPMAT_SHAPE_8X16X16 | VKVIT_COOPMAT_SHAPE_16X16X16, 32, 8, 32, true,
         VKVIT_COOPMAT_SHAPE_16X16X16, 32},
        {"xe2 without size control", VKVIT_COOPMAT_SHAPE_8X16X16, 32, 0, 0, false, 0, 0},
        {"lavapipe 8x8x8 at 16 lanes", VKVIT_COOPMAT_SHAPE_8X8X8, 16, 16, 16, true, 0, 0},
        {"lavapipe 8x8x8 at 8 lanes", VKVIT_COOPMAT_SHAPE_8X8X8, 8, 8, 8, true, VKVIT_COOPMAT_SHAPE_8X8X8, 8},
    };
    const vkvit__env env = {0};
    /* whether this build has the KHR kernel: its shader table has a 16x16x16 row (else the description refuses) */
    const vkvit__gemm_config khr = {.bm = 64, .bn = 64, .bk = 32, .variant = VKVIT_GEMM_KERNEL_COOPMAT, .b_f16 = true,
                                    .f16_math = true, .coopmat = VKVIT_COOPMAT_KHR, .coopmat_warp = 32,
                                    .coopmat_shape = VKVIT_COOPMAT_SHAPE_16X16X16};
    vkvit__kernel_desc kd;
    const bool khr_built = vkvit__gemm_kernel_desc(&khr, &(vkvit__gemm_epilogue){0}, "khr probe", &kd) == VKVIT_OK;
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases); i++) {
        vkvit__caps f = base;
        f.coopmat_khr_shapes = cases[i].shapes;
        f.subgroup_size = cases[i].sg, f.subgroup_size_min = cases[i].sg_min, f.subgroup_size_max = cases[i].sg_max;
        f.subgroup_size_control = cases[i].sized;
        vkvit__policy p;
        vkvit__policy_choose(&f, &env, (vkvit__policy_request){0}, &p);
        const bool want = khr_built && cases[i].want_shape;
        printf("policy %-30s -> %s %s warp %u\n", cases[i].what, p.coopmat == VKVIT_COOPMAT_KHR ? "KHR" : "none",
               p.coopmat == VKVIT_COOPMAT_KHR ? shape_name(p.coopmat_shape) : "-", p.coopmat_warp);
        CHECK(want ? p.coopmat == VKVIT_COOPMAT_KHR && p.coopmat_shape == cases[i].want_shape &&
                         p.coopmat_warp == cases[i].want_warp
                   : p.coopmat == VKVIT_COOPMAT_NONE,
              "policy %s: kernel %d shape %s warp %u, want %s %s warp %u", cases[i].what, (int)p.coopmat,
              shape_name(p.coopmat_shape), p.coopmat_warp, want ? "KHR" : "none",
              want ? shape_name(cases[i].want_shape) : "-", cases[i].want_warp);
    }
    printf("policy: %s\n", khr_built ? "the KHR kernel is built" : "no KHR kernel in this build: every case none");
}

int main(void) {
    uint64_t seed = (uint64_t)time(NULL);
    const char *s = getenv("VKVIT_TEST_SEED");
    if (s && *s) seed = strtoull(s, NULL, 10);
    printf("seed %llu (rerun: VKVIT_TEST_SEED=%llu)\n", (unsigned long long)seed, (unsigned long long)seed);
    vt_rng_state ^= seed * 0x9e3779b97f4a7c15ull;

    policy_cases();
    unsetenv("VKVIT_COOPMAT_EMULATE");
    unsetenv("VKVIT_DEVICE_PROFILE");
    vkvit_ctx *ctx = vt_ctx();
    if (!ctx->policy.fp16_math) {
        printf("SKIP: no fp16 arithmetic: the cooperative-matrix GEMM does not run here\n");
        vkvit_ctx_destroy(ctx);
        return 77;
    }
    /* 16 x 16 x 16 is test_gemm's (its coopmat part runs the emulated kernel at the default shape) */
    const uint32_t shapes[] = {VKVIT_COOPMAT_SHAPE_8X16X16, VKVIT_COOPMAT_SHAPE_8X8X16};
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(shapes); i++) {
        CHECK((VKVIT_COOPMAT_EMULATED_SHAPES & shapes[i]) != 0, "the emulated kernel lacks %s", shape_name(shapes[i]));
        for (uint32_t tile = 32; tile <= 128; tile *= 2) {
            if (!vkvit__gemm_coopmat_tile_fits(ctx, tile, true)) {
                printf("emulated tile %u not run: more shared memory than the device's %u bytes\n", tile,
                       ctx->caps.max_shared_memory);
                continue;
            }
            run_cases(ctx, VKVIT_COOPMAT_EMULATED, shapes[i], tile);
        }
    }
    /* The check can fail: the same kernel with every output + 1 (its test hook) must not pass it. */
    const shape_case wrong = {33, 7, 47, 2, true, false, false, 1};
    run_case(ctx, &wrong, VKVIT_COOPMAT_EMULATED, VKVIT_COOPMAT_SHAPE_8X8X16, 32, true);
    const vkvit__coopmat_kernel hw = ctx->policy.coopmat;
    if (hw == VKVIT_COOPMAT_KHR || hw == VKVIT_COOPMAT_NV) {
        printf("hardware kernel: %s at %s, warp %u\n", hw == VKVIT_COOPMAT_KHR ? "KHR" : "NV",
               shape_name(ctx->policy.coopmat_shape), ctx->policy.coopmat_warp);
        for (uint32_t tile = 32; tile <= 128; tile *= 2)
            if (vkvit__gemm_coopmat_tile_fits(ctx, tile, false)) run_cases(ctx, hw, ctx->policy.coopmat_shape, tile);
    }
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "validation messages in the shape sweep");
    vkvit_ctx_destroy(ctx);

    /* The intel-xe profile: the emulated kernel on its one listed shape, chosen by the policy, run by sessions. */
    setenv("VKVIT_DEVICE_PROFILE", "intel-xe", 1);
    setenv("VKVIT_COOPMAT_EMULATE", "1", 1);
    ctx = vt_ctx();
    const vkvit__policy *p = &ctx->policy;
    printf("intel-xe profile: kernel %d, shape %s, warp %u\n", (int)p->coopmat, shape_name(p->coopmat_shape),
           p->coopmat_warp);
    CHECK(p->coopmat == VKVIT_COOPMAT_EMULATED && p->coopmat_shape == VKVIT_COOPMAT_SHAPE_8X8X16,
          "intel-xe + VKVIT_COOPMAT_EMULATE=1: kernel %d shape %s, want the emulated one at 8x8x16", (int)p->coopmat,
          shape_name(p->coopmat_shape));
    vkvit__gemm_config cfg = vkvit__gemm_pick_coopmat(ctx, 197 * 3, 384, 384, 1);
    vkvit__kernel_desc kd;
    MUST(vkvit__gemm_kernel_desc(&cfg, &(vkvit__gemm_epilogue){0}, "gemm", &kd));
    const vkvit_shader_id m8[3] = {VKVIT_SHADER_GEMM_COOPMAT_EMU_M8N8_T32_F32_F32_F16,
                                   VKVIT_SHADER_GEMM_COOPMAT_EMU_M8N8_F32_F32_F16,
                                   VKVIT_SHADER_GEMM_COOPMAT_EMU_M8N8_T128_F32_F32_F16};
    CHECK(kd.shader == m8[cfg.bm == 32 ? 0 : cfg.bm == 64 ? 1 : 2], "intel-xe: tile %u runs shader %d, not the "
          "8x8x16 one", cfg.bm, (int)kd.shader);
    static const uint32_t dims[][3] = {{100, 90, 64}, {591, 384, 384}, {37, 1536, 72}};
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(dims); i++) {
        const vkvit_gemm_bench_desc bd = {.m = dims[i][0], .n = dims[i][1], .k = dims[i][2], .repeat = 1,
                                          .seed = (uint32_t)(seed + i), .precision = VKVIT_PRECISION_FP16_MATH};
        vkvit_gemm_bench_result r;
        const vkvit_result res = vkvit_bench_gemm(ctx, &bd, &r);
        CHECK(res == VKVIT_OK && r.mismatches == 0, "intel-xe bench gemm %ux%ux%u fp16-math: %s %s, %llu mismatches",
              bd.m, bd.n, bd.k, vkvit_result_name(res), res == VKVIT_OK ? "" : vkvit_last_error(),
              (unsigned long long)(res == VKVIT_OK ? r.mismatches : 0));
    }
    CHECK(p->coopmat == VKVIT_COOPMAT_EMULATED, "the self-check switched the 8x8x16 kernel off");
    return vt_finish(ctx);
}
