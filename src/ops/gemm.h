// SPDX-License-Identifier: Apache-2.0
/* src/ops/gemm — GEMM with fused epilogues: the push-constant mirror of shaders/gemm.comp and gemm_cpu.comp, the
 * kernel descriptions, the tile choice per device (vkvit__caps), and the graph-node builders (vkvit__op_gemm,
 * vkvit__op_linear) the modules call. */
#ifndef VKVIT_OPS_GEMM_H
#define VKVIT_OPS_GEMM_H

#include "ops/mat.h"

/* ------------------------------------------------------------------------------------------------------------
 * GEMM: D[b] = epilogue(A[b] (M,K) * B[b] (N,K)^T), two kernels with one push-constant block and binding set
 * (epilogue: + bias[N], activation, * scale[N], + residual; shaders/gemm_epilogue.glsl):
 *   VKVIT_GEMM_KERNEL_SHARED  shaders/gemm.comp      shared-memory tiles, for GPUs
 *   VKVIT_GEMM_KERNEL_CPU     shaders/gemm_cpu.comp  no shared memory, lanes own columns, for llvmpipe (CPU devices)
 *   VKVIT_GEMM_KERNEL_COOPMAT shaders/gemm_coopmat.comp  cooperative matrices (tensor cores) for fp16-math GEMMs on fp16
 *                      weights where the policy's coopmat is set: 64 x 64 or 128 x 128 tiles, fp16 products,
 *                      fp32 sums
 * ------------------------------------------------------------------------------------------------------------ */

/* Batch index z (grid z) is split in two levels, z = outer * n_inner + inner, and every operand X in {A, B, D,
 * residual} starts at  X_offset + outer * batch_stride_x + inner * inner_stride_x.  n_inner 0 or 1 is a plain batch
 * (inner = 0, outer = z: offset z * batch_stride_x). Two levels address e.g. per-(image, head) GEMMs whose output
 * goes to head column blocks of one [B*T, C] matrix (outer = image, inner = head). The mirror of shaders/gemm_push.glsl,
 * the one push block of the three GEMM shaders. */
typedef struct vkvit__gemm_push {
    uint32_t M, N, K;
    uint32_t stride_a, stride_b, stride_d;           /* row strides in elements */
    uint32_t batch_stride_a, batch_stride_b, batch_stride_d;   /* per outer batch index */
    uint32_t a_offset, d_offset;                     /* element offsets of A and D in their buffers */
    uint32_t r_offset, r_stride, r_batch_stride;     /* the residual matrix */
    uint32_t n_inner;                                /* inner batch count (0 = 1) */
    uint32_t inner_stride_a, inner_stride_b, inner_stride_d, r_inner_stride;   /* per inner batch index */
    uint32_t b_offset;                               /* element offset of B in its buffer */
    uint32_t n_offset;                               /* column offset into bias and scale (a weight's row block) */
    uint32_t zero;                                   /* always 0: gemm_cpu.comp's ordering dependency (see there) */
} vkvit__gemm_push;
VKVIT_PUSH_MIRROR(vkvit__gemm_push, 22);

typedef struct vkvit__gemm_config {
    uint32_t bm, bn, bk;                             /* workgroup tile (CPU: bk is the K chunk, 32 or 64) */
    uint32_t tm, tn;                                 /* register tile per invocation (CPU: tm 1, tn columns/lane) */
    vkvit_gemm_kernel variant;                       /* the one kernel enum (include/vkvit.h), never AUTO here */
    bool b_f16;                                      /* B (the weights) stored as fp16: the *_w16 shader variants */
    bool f16_math;                                   /* fp16 arithmetic (needs b_f16 and policy.fp16_math): the *_f16
                                                        shader variants, VKVIT_PRECISION_FP16_MATH sessions */
    bool texel;                                      /* CPU variant: A and B bound as uniform texel buffers (the
                                                        *_texel shaders; policy.texel_reads) */
    bool sized_subgroups;                            /* CPU and hardware COOPMAT variants: their pipelines require
                                                        full subgroups of the kernel's size (8 lanes, the warp),
                                                        where the device has size control */
    vkvit__coopmat_kernel coopmat;                   /* COOPMAT variant: the family (policy.coopmat: NV, KHR, or the
                                                        plain-arithmetic stand-in EMULATED) */
    bool coopmat_corrupt;                            /* COOPMAT variant: the test hook ctx->test_hooks.coopmat_corrupt */
    uint32_t coopmat_warp;                           /* COOPMAT hardware variants: invocations of a warp, the
                                                        device's subgroup size (gemm_coopmat.comp's WARP) */
    uint32_t coopmat_shape;                          /* COOPMAT KHR and emulated variants: the fragments' shape, a
                                                        VKVIT_COOPMAT_SHAPE_* bit (policy.coopmat_shape; 0 16x16x16) */
    bool vec4;                                       /* CPU variant: vec4 loads of A and B (vkvit__gemm_push_vec4 of
                                                        the push it runs with); false: the scalar-load path */
    bool pairs;                                      /* CPU texel variant: D stored as 64-bit pairs of columns
                                                        (vkvit__gemm_push_pairs of the push it runs with) */
    bool unrolled;                                   /* CPU texel variant: a build-time unrolled shader may stand in
                                                        for the generic one (policy.gemm_cpu_unrolled); it does where
                                                        one exists (vkvit__gemm_kernel_desc: fp32, tn 8, vec4,
                                                        pairs, no causal skipping) */
    bool one_chunk;                                  /* CPU variant: K fits one K chunk (vkvit__gemm_one_chunk of the
                                                        push it runs with): no running sums between chunks */
} vkvit__gemm_config;

/* fp16 arithmetic (f16_math): A is rounded to fp16 as it is loaded, every product a_k * b_k is an fp16 FMA (packed
 * f16vec2: even k in one half, odd k in the other) summed in fp16 over VKVIT_GEMM_F16_CHUNK consecutive k, and each
 * chunk's two halves are added into an fp32 accumulator; the epilogue runs in fp32. With u = 2^-11 (fp16 unit
 * roundoff) and n = CHUNK / 2 = 8 products per half, the error of one output is at most about
 *     (n + 2) * u * sum_k |a_k b_k|      (A rounding u, product rounding u, n - 1 fp16 additions, the fp32 part)
 * independent of K, plus an absolute 2^-14 per product and addition where fp16 underflows (a device may flush fp16
 * subnormals). Summing all K = 1536 products of a ViT-5-S mlp.layer2 in fp16 would give (768 + 2) * u ~ 0.38 instead
 * of 10 * u ~ 0.005, and its running sum could overflow 65504; a shorter chunk costs more fp32 flushes (two
 * conversions and two adds per output per chunk: one per 8 packed FMAs at 16). tests/ops/test_gemm.c checks this bound.
 * The shaders hold the same number: F16_CHUNK in gemm.comp, the flush after every 4 lanes x 4 k in gemm_cpu.comp. */
#define VKVIT_GEMM_F16_CHUNK 16

/* The kernel and tile configuration for this device and problem size: VKVIT_GEMM_KERNEL_CPU on CPU devices
 * (ctx->policy.cpu_kernels), VKVIT_GEMM_KERNEL_SHARED elsewhere. */
vkvit__gemm_config vkvit__gemm_pick(const vkvit_ctx *ctx, uint32_t M, uint32_t N, uint32_t K);
/* The tile configuration of one given variant for this problem size (tests run every variant). */
vkvit__gemm_config vkvit__gemm_pick_variant(const vkvit_ctx *ctx, vkvit_gemm_kernel variant, uint32_t M, uint32_t N,
                                            uint32_t K);
/* The COOPMAT configuration for an M x N x K GEMM of `batch` products on this device (the rules in gemm.c: enough
 * workgroups (VKVIT_COOPMAT_MIN_TILES), little padding, the 128 tile only for K > VKVIT_COOPMAT_T128_MIN_K, what
 * fits the shared memory): the NV or KHR kernel, or the emulated one. */
#define VKVIT_COOPMAT_MIN_TILES 128
#define VKVIT_COOPMAT_MAX_PAD 1.35 /* padded area of the chosen tile over a smaller one's, at most */
#define VKVIT_COOPMAT_T128_MIN_K 512 /* the 128 tile only for K above this (below it the 64 tile was faster) */
vkvit__gemm_config vkvit__gemm_pick_coopmat(const vkvit_ctx *ctx, uint32_t M, uint32_t N, uint32_t K,
                                            uint32_t batch);
/* "shared", "cpu", "coopmat". */

/* Kernel tuning (vkvit_bench_gemm; include/vkvit.h "GEMM micro-benchmark"): the variant to run in place of the
 * device's (VKVIT_GEMM_KERNEL_AUTO keeps it), a tile whose non-zero fields replace the picked ones, and
 * VKVIT_GEMM_BENCH_* switches. `chosen` receives the configuration the node runs with. */
typedef struct vkvit__gemm_tuning {
    vkvit_gemm_kernel kernel;
    vkvit_gemm_tile tile;
    uint32_t flags;
    vkvit__gemm_config chosen;
} vkvit__gemm_tuning;

/* Applies `t`'s kernel and tile to the automatic configuration *cfg of an M x N x K GEMM of `batch` products (whose
 * b_f16 and f16_math stay). Errors (a sentence): VKVIT_ERROR_INVALID_ARGUMENT for an unknown kernel or switch, a
 * switch of another kernel than the CPU one, or a tile outside the kernel's rules (vkvit_gemm_tile in vkvit.h);
 * VKVIT_ERROR_UNSUPPORTED for the COOPMAT kernel outside fp16 arithmetic or where the device does not run it. */
vkvit_result vkvit__gemm_tune(const vkvit_ctx *ctx, const vkvit__gemm_tuning *t, uint32_t M, uint32_t N, uint32_t K,
                              uint32_t batch, vkvit__gemm_config *cfg);

/* Work a GEMM may skip because the caller knows it is zero or unused (the mLSTM's quadratic form, whose decay
 * matrix is triangular): the CPU kernel skips it (shaders/gemm_cpu.comp, CAUSAL); the other kernels compute
 * everything, which gives the same needed results. Indices m, n, k are within one batch's matrices. */
typedef enum vkvit__gemm_causal {
    VKVIT_GEMM_CAUSAL_NONE = 0,
    VKVIT_GEMM_CAUSAL_A_LOWER = 1,          /* A[m][k] = 0 for k > m */
    VKVIT_GEMM_CAUSAL_A_UPPER = 2,          /* A[m][k] = 0 for k < m */
    VKVIT_GEMM_CAUSAL_D_LOWER = 3,          /* only D[m][n] with n <= m is needed (the others may keep any value) */
    VKVIT_GEMM_CAUSAL_D_UPPER = 4,          /* only D[m][n] with n >= m is needed */
} vkvit__gemm_causal;

/* What the epilogue applies (specialization constants). act: 0 none, 1 GELU (erf), 2 ReLU, 3 SiLU. causal: the
 * work the kernel may skip (a specialization constant too, though not an epilogue term). */
typedef struct vkvit__gemm_epilogue {
    bool bias;
    uint32_t act;
    bool scale;
    bool residual;
    vkvit__gemm_causal causal;
} vkvit__gemm_epilogue;

/* Whether a CPU GEMM of this configuration runs a build-time unrolled shader (shaders/variants.cmake): cfg->unrolled
 * (policy.gemm_cpu_unrolled, not switched off by VKVIT_GEMM_BENCH_GENERIC) on texel reads (fp32 arithmetic, fp32 or fp16 weights) with tn 8, vec4 loads,
 * pair stores and no causal skipping. */
bool vkvit__gemm_cpu_unrolled(const vkvit__gemm_config *cfg, vkvit__gemm_causal causal);

/* shaders/gemm_cpu.comp is one workgroup of 8 invocations that must be one whole subgroup: lane l shuffles from
 * lanes 0..7 and owns columns l + 8 j. */
#define VKVIT_GEMM_CPU_LANES 8u
/* Whether the CPU kernel can run on this device: subgroup shuffles in compute and a default subgroup size of exactly
 * VKVIT_GEMM_CPU_LANES (lavapipe with LP_NATIVE_VECTOR_WIDTH=128 has 4, =512 has 16, ARM hosts 4). Where it cannot,
 * CPU devices take the shared-memory kernel instead (vkvit__gemm_pick). */
bool vkvit__gemm_cpu_kernel_fits(const vkvit_ctx *ctx);
/* Whether the cooperative-matrix kernel's tile (32, 64, 128), hardware or emulated build, fits the device's shared
 * memory (the tile choice takes only those; lavapipe's 32 KiB holds the hardware 64 tile only). */
bool vkvit__gemm_coopmat_tile_fits(const vkvit_ctx *ctx, uint32_t tile, bool emulated);

/* Bindings: 0 A, 1 B, 2 bias, 3 D, 4 scale, 5 residual (any buffer for a disabled term; the residual may be D). */
#define VKVIT_GEMM_BINDINGS 6

/* The kernel description (shader + specialization constants) for a tile configuration and epilogue. Fails only
 * for a malformed configuration (f16_math without b_f16, or a shared-memory tile whose bk is not a multiple of
 * VKVIT_GEMM_F16_CHUNK). */
vkvit_result vkvit__gemm_kernel_desc(const vkvit__gemm_config *cfg, const vkvit__gemm_epilogue *ep, const char *label,
                                     vkvit__kernel_desc *out);
vkvit_result vkvit__gemm_kernel_create(vkvit_ctx *ctx, const vkvit__gemm_config *cfg, const vkvit__gemm_epilogue *ep,
                                       const char *label, vkvit__kernel *out);
/* Workgroup counts: one workgroup per bm x bn output tile, batch in z. */
/* Whether a dispatch with this push and batch reads A and B only at multiples of 4 elements (K, the row strides and
 * every batch's start offsets), which the CPU variant's vec4 loads (cfg.vec4) require. */
bool vkvit__gemm_push_vec4(const vkvit__gemm_push *push, uint32_t batch);
/* Whether every pair of columns (2c, 2c + 1) of D that a dispatch with this push and batch writes starts on an
 * 8-byte boundary and is wholly inside the matrix (N even), or, with spare_column (vkvit__gemm_op.d_spare_column),
 * ends at column N, which may be overwritten: D's row stride and every batch's D start even. The CPU texel
 * variant's 64-bit stores (cfg.pairs) require it. */
bool vkvit__gemm_push_pairs(const vkvit__gemm_push *push, uint32_t batch, bool spare_column);
/* Whether the CPU variant at this tile covers the push's K in one K chunk (K <= bk), so that its kernel can skip the
 * running sums (cfg.one_chunk); a kernel built so must only run with such a K. Graph nodes set it from the push they
 * record (gemm_node.c); vkvit__gemm_record, the tests' and tools' path, asserts it. */
bool vkvit__gemm_one_chunk(const vkvit__gemm_config *cfg, const vkvit__gemm_push *push);
void vkvit__gemm_groups(const vkvit__gemm_config *cfg, const vkvit__gemm_push *push, uint32_t batch, uint32_t groups[3]);
void vkvit__gemm_record(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__kernel *k, const vkvit__gemm_config *cfg,
                        VkDescriptorSet set, const vkvit__gemm_push *push, uint32_t batch);

/* ------------------------------------------------------------------------------------------------------------
 * Graph nodes:  d = act(a · wᵀ + bias) ⊙ scale + residual
 * ------------------------------------------------------------------------------------------------------------ */

typedef enum vkvit__act {
    VKVIT_ACT_NONE = 0,
    VKVIT_ACT_GELU = 1,                     /* exact erf GELU */
    VKVIT_ACT_RELU = 2,
    VKVIT_ACT_SILU = 3,
} vkvit__act;

typedef struct vkvit__gemm_op {
    vkvit__mat a;                           /* [M, K] per batch */
    uint32_t w;                             /* weight [N, K] (nn.Linear layout), shared by the batch. Its dtype picks
                                               the kernel: F16 (an fp16 weight, or in fp16-math sessions the fp16 k~
                                               and vT of attention, shaders/attention_prep.comp) reads B as fp16, and
                                               w_offset, w_stride and the strides count fp16 elements */
    uint32_t bias;                          /* [N] or VKVIT_NONE */
    vkvit__mat d;                           /* [M, N] per batch */
    uint32_t M, N, K, batch;
    vkvit__act act;
    uint32_t scale;                         /* [N] per-column scale (LayerScale) or VKVIT_NONE */
    vkvit__mat residual;                    /* added last; .t = VKVIT_NONE for none. May be d itself (in place). */
    /* Optional; zero keeps the defaults above. The B operand in general: element (z, n, k) =
     * w[w_offset + z * w_batch_stride + n * w_stride + k] (w_stride 0 = K; w_batch_stride 0 = shared). */
    uint32_t w_offset, w_stride, w_batch_stride;
    /* Column offset into bias and scale: output column n reads bias[n_offset + n] (a weight's row block). */
    uint32_t n_offset;
    /* Two-level batch (n_inner > 1): batch index z = outer * n_inner + inner (batch = n_outer * n_inner); each
     * operand's `batch_stride` is then its stride per OUTER index and inner_stride_* its stride per INNER index:
     * e.g. per-(image, head) products writing head column blocks of a [B*T, C] output (outer = image: T*C,
     * inner = head: dk). n_inner 0 or 1: a plain batch (offset z * batch_stride). */
    uint32_t n_inner;
    uint32_t inner_stride_a, inner_stride_w, inner_stride_d, inner_stride_r;
    vkvit__gemm_causal causal;              /* work that may be skipped (NONE: compute every output) */
    /* Column N of every row of d lies inside its row stride and may be overwritten (the next node rewrites it: the
     * attention scores' padding, which the softmax zeroes): the CPU texel kernel then stores an odd N in 64-bit
     * pairs too. Ignored unless d's stride exceeds N and the batch is plain (n_inner <= 1). */
    bool d_spare_column;
    /* Kernel tuning (the GEMM benchmark only; NULL in models): kernel, tile and switches, and the configuration
     * chosen (vkvit__gemm_tuning). */
    vkvit__gemm_tuning *tuning;
} vkvit__gemm_op;

void vkvit__op_gemm(vkvit__graph *g, const char *name, const vkvit__gemm_op *op);
/* vkvit__op_gemm with a node kind of the caller's choosing (profiles group nodes by kind, e.g. "attn_gemm"). */
void vkvit__op_gemm_kind(vkvit__graph *g, const char *name, const char *kind, const vkvit__gemm_op *op);

/* y = x · wᵀ (+ bias) for a dense [rows, K] tensor x; returns a new [rows, N] activation. */
uint32_t vkvit__op_linear(vkvit__graph *g, const char *name, uint32_t x, uint32_t w, uint32_t bias, vkvit__act act);

#endif /* VKVIT_OPS_GEMM_H */
