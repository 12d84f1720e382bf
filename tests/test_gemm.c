/* GEMM (nn.Linear layout) and elementwise add against double-precision CPU loops.
 *
 * Each case draws fresh random inputs, poisons the output buffer (and the row padding past N) with NaN, runs the
 * kernel under the validation layer, and checks max |got - want| / max |want| <= 1e-5. The padding must still be
 * NaN afterwards: a kernel that writes outside its output is caught. */
#include "test_util.h"
#include "vk/kernels.h"

typedef struct gemm_case {
    uint32_t M, N, K, batch;
    bool bias;
    uint32_t pad_d;          /* extra elements per output row (stride_d = N + pad_d) */
    bool shared_weights;     /* batch stride of B = 0 */
} gemm_case;

static void cpu_gemm(const gemm_case *c, const float *a, const float *b, const float *bias, double *d,
                     uint32_t stride_d) {
    for (uint32_t z = 0; z < c->batch; z++) {
        const float *az = a + (size_t)z * c->M * c->K;
        const float *bz = b + (c->shared_weights ? 0 : (size_t)z * c->N * c->K);
        for (uint32_t m = 0; m < c->M; m++)
            for (uint32_t n = 0; n < c->N; n++) {
                double s = c->bias ? bias[n] : 0.0;
                for (uint32_t k = 0; k < c->K; k++) s += (double)az[(size_t)m * c->K + k] * bz[(size_t)n * c->K + k];
                d[((size_t)z * c->M + m) * stride_d + n] = s;
            }
    }
}

static void run_gemm_case(vkvit_ctx *ctx, const gemm_case *c) {
    const uint32_t stride_d = c->N + c->pad_d;
    const size_t na = (size_t)c->batch * c->M * c->K;
    const size_t nb = (size_t)(c->shared_weights ? 1 : c->batch) * c->N * c->K;
    const size_t nd = (size_t)c->batch * c->M * stride_d;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *bias = malloc((size_t)c->N * 4), *d = malloc(nd * 4);
    double *want = malloc(nd * sizeof(double));
    vt_fill_rand(a, na);
    vt_fill_rand(b, nb);
    vt_fill_rand(bias, c->N);

    vkvit__buffer ba, bb, bbias, bd;
    MUST(vkvit__buffer_create(ctx, na * 4, VKVIT_MEM_DEVICE, "A", &ba));
    MUST(vkvit__buffer_create(ctx, nb * 4, VKVIT_MEM_DEVICE, "B", &bb));
    MUST(vkvit__buffer_create(ctx, (size_t)c->N * 4, VKVIT_MEM_DEVICE, "bias", &bbias));
    MUST(vkvit__buffer_create(ctx, nd * 4, VKVIT_MEM_DEVICE, "D", &bd));
    MUST(vkvit__buffer_upload(ctx, &ba, 0, a, na * 4));
    MUST(vkvit__buffer_upload(ctx, &bb, 0, b, nb * 4));
    MUST(vkvit__buffer_upload(ctx, &bbias, 0, bias, (size_t)c->N * 4));
    MUST(vkvit__buffer_fill(ctx, &bd, 0, nd * 4, VT_NAN_BITS));

    vkvit__gemm_config cfg = vkvit__gemm_pick(ctx, c->M, c->N, c->K);
    vkvit__kernel k;
    MUST(vkvit__gemm_kernel_create(ctx, &cfg, c->bias, "gemm", &k));
    VkDescriptorPool pool;
    VkDescriptorSet set;
    MUST(vkvit__descriptor_pool_create(ctx, 1, &pool));
    vkvit__binding binds[4] = {{&ba, 0, 0}, {&bb, 0, 0}, {&bbias, 0, 0}, {&bd, 0, 0}};
    MUST(vkvit__descriptor_set_create(ctx, pool, &k, binds, &set));
    vkvit__gemm_push push = {
        .M = c->M, .N = c->N, .K = c->K,
        .stride_a = c->K, .stride_b = c->K, .stride_d = stride_d,
        .batch_stride_a = c->M * c->K, .batch_stride_b = c->shared_weights ? 0 : c->N * c->K,
        .batch_stride_d = c->M * stride_d,
    };
    VkCommandBuffer cmd;
    MUST(vkvit__cmd_begin(ctx, &cmd));
    vkvit__gemm_record(ctx, cmd, &k, &cfg, set, &push, c->batch);
    MUST(vkvit__cmd_submit_wait(ctx, cmd));
    MUST(vkvit__buffer_download(ctx, &bd, 0, d, nd * 4));

    cpu_gemm(c, a, b, bias, want, stride_d);
    /* Compare the valid part; the padding must be untouched NaN. */
    size_t n_valid = (size_t)c->batch * c->M * c->N, vi = 0, pad_written = 0;
    float *got = malloc(n_valid * 4);
    double *ref = malloc(n_valid * sizeof(double));
    for (size_t row = 0; row < (size_t)c->batch * c->M; row++)
        for (uint32_t col = 0; col < stride_d; col++) {
            size_t i = row * stride_d + col;
            if (col < c->N) {
                got[vi] = d[i];
                ref[vi++] = want[i];
            } else if (!isnan(d[i])) {
                pad_written++;
            }
        }
    size_t worst = 0;
    double err = vt_max_rel_err(got, ref, n_valid, &worst);
    printf("gemm M=%-5u N=%-5u K=%-5u batch=%u bias=%d pad=%u shared_w=%d  max rel err %.3g\n", c->M, c->N, c->K,
           c->batch, c->bias, c->pad_d, c->shared_weights, err);
    CHECK(err <= 1e-5, "M=%u N=%u K=%u: max rel err %.3g at %zu (got %.9g, want %.9g)", c->M, c->N, c->K, err, worst,
          got[worst], ref[worst]);
    CHECK(pad_written == 0, "M=%u N=%u K=%u: %zu padding elements were overwritten", c->M, c->N, c->K, pad_written);

    ctx->vk.vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkvit__kernel_destroy(ctx, &k);
    vkvit__buffer_destroy(ctx, &ba);
    vkvit__buffer_destroy(ctx, &bb);
    vkvit__buffer_destroy(ctx, &bbias);
    vkvit__buffer_destroy(ctx, &bd);
    free(a), free(b), free(bias), free(d), free(want), free(got), free(ref);
}

static void run_add_case(vkvit_ctx *ctx, uint32_t n, uint32_t n_b) {
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n_b * 4), *d = malloc((size_t)n * 4);
    double *want = malloc((size_t)n * sizeof(double));
    vt_fill_rand(a, n);
    vt_fill_rand(b, n_b);
    vkvit__buffer ba, bb, bd;
    MUST(vkvit__buffer_create(ctx, (size_t)n * 4, VKVIT_MEM_DEVICE, "A", &ba));
    MUST(vkvit__buffer_create(ctx, (size_t)n_b * 4, VKVIT_MEM_DEVICE, "B", &bb));
    MUST(vkvit__buffer_create(ctx, (size_t)n * 4, VKVIT_MEM_DEVICE, "D", &bd));
    MUST(vkvit__buffer_upload(ctx, &ba, 0, a, (size_t)n * 4));
    MUST(vkvit__buffer_upload(ctx, &bb, 0, b, (size_t)n_b * 4));
    MUST(vkvit__buffer_fill(ctx, &bd, 0, (size_t)n * 4, VT_NAN_BITS));
    vkvit__kernel k;
    MUST(vkvit__add_kernel_create(ctx, "add", &k));
    VkDescriptorPool pool;
    VkDescriptorSet set;
    MUST(vkvit__descriptor_pool_create(ctx, 1, &pool));
    vkvit__binding binds[3] = {{&ba, 0, 0}, {&bb, 0, 0}, {&bd, 0, 0}};
    MUST(vkvit__descriptor_set_create(ctx, pool, &k, binds, &set));
    VkCommandBuffer cmd;
    MUST(vkvit__cmd_begin(ctx, &cmd));
    vkvit__add_record(ctx, cmd, &k, set, &(vkvit__add_push){.n = n, .n_b = n_b});
    MUST(vkvit__cmd_submit_wait(ctx, cmd));
    MUST(vkvit__buffer_download(ctx, &bd, 0, d, (size_t)n * 4));
    for (uint32_t i = 0; i < n; i++) want[i] = (double)a[i] + b[i % n_b];
    double err = vt_max_rel_err(d, want, n, NULL);
    printf("add n=%u n_b=%u  max rel err %.3g\n", n, n_b, err);
    CHECK(err <= 1e-6, "add n=%u n_b=%u: max rel err %.3g", n, n_b, err);
    ctx->vk.vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkvit__kernel_destroy(ctx, &k);
    vkvit__buffer_destroy(ctx, &ba);
    vkvit__buffer_destroy(ctx, &bb);
    vkvit__buffer_destroy(ctx, &bd);
    free(a), free(b), free(d), free(want);
}

int main(void) {
    vkvit_ctx *ctx = vt_ctx();
    static const gemm_case cases[] = {
        {1, 1, 1, 1, false, 0, false},
        {7, 13, 5, 1, false, 0, false},
        {7, 13, 5, 1, true, 3, false},
        {1, 64, 64, 1, true, 0, false},
        {64, 64, 64, 1, false, 0, false},
        {65, 63, 17, 1, true, 1, false},
        {127, 131, 137, 1, false, 0, false},      /* primes */
        {3, 5, 7, 4, true, 2, false},             /* batched */
        {37, 29, 19, 3, false, 0, true},          /* batched, shared weights */
        {201, 1152, 384, 1, false, 0, false},     /* ViT-5-S qkv */
        {201, 384, 1536, 1, true, 0, false},      /* ViT-5-S mlp.layer2 */
        {1000, 1000, 1000, 1, false, 0, false},
    };
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases); i++) run_gemm_case(ctx, &cases[i]);
    run_add_case(ctx, 1, 1);
    run_add_case(ctx, 1000, 1000);
    run_add_case(ctx, 201 * 384, 384);
    run_add_case(ctx, 300000, 7 * 3);
    return vt_finish(ctx);
}
