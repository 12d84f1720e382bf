// SPDX-License-Identifier: Apache-2.0
/* GEMM with epilogues (see gemm.h): tile choice, kernel descriptions, dispatch geometry. The graph nodes are in
 * gemm_node.c. */
#include "ops/gemm.h"

#include <string.h>

/* CPU variant (llvmpipe, see shaders/gemm_cpu.comp): each workgroup is one 8-lane subgroup computing bm rows x
 * (8 * tn) columns; a lane's tn columns of a bk-wide K chunk of B stay on its stack and feed every row, each A vec4 is
 * shuffled to all lanes and feeds 8 * tn products. bm is a dynamic row loop (no cost past M): 256, so that one tile
 * covers a ViT's 197-201 tokens, and 128 from M = 512 on (batches of images) where K has 6 or more 64-k chunks: the
 * running sums of a tile, which each chunk but the last writes and each but the first reads, are then 32 KiB
 * instead of 64 and stay nearer L1 (faster from 804 rows on, slower at 201 and 402: measure with
 * `vkvit bench gemm --versus bm=128`). A single column tile splits its rows in four for the 2+ CPU threads. tn <= 8,
 * by a cost model (gemm_pick_cpu): wider tiles spill the broadcast A values and the accumulators out of the registers
 * (measure with `vkvit bench gemm --versus tn=12`). The figures: docs/logs/2026-12-02-kernel-choices.md. bk is 64
 * (the running sums go through a slow private array once per chunk), or 32 where that pads K less (attention's P V with
 * 201 tokens: K 204 -> 224, not 256). */
static vkvit__gemm_config gemm_pick_cpu(const vkvit_ctx *ctx, uint32_t M, uint32_t N, uint32_t K) {
    vkvit__gemm_config c = {.bm = M >= 512 && K >= 384 ? 128 : 256, .bk = 64, .tm = 1, .variant = VKVIT_GEMM_KERNEL_CPU};
    if (VKVIT_CEIL_DIV(K, 32) * 32 < VKVIT_CEIL_DIV(K, 64) * 64) c.bk = 32;
    /* The tn <= 8 of least cost, the widest on a tie. A tile row costs about tn + 2 column products per k: the A
     * fetch, its shuffles and the ordering dependency (gemm_cpu.comp) weigh about two. N 201 -> 7 (4 tiles of 56
     * columns), not 2 (13 tiles of 16, padding least: 1.4x slower for attention's Q K^T); N 4 -> 1. */
    uint64_t best = UINT64_MAX;
    for (uint32_t tn = 8; tn >= 1; tn--) {
        const uint64_t cost = (uint64_t)VKVIT_CEIL_DIV(N, 8 * tn) * (tn + 2);
        if (cost < best) best = cost, c.tn = tn;
    }
    c.bn = 8 * c.tn;
    c.texel = ctx->policy.texel_reads;
    c.sized_subgroups = ctx->caps.subgroup_size_control;
    c.unrolled = ctx->policy.gemm_cpu_unrolled;
    /* A single column tile (N <= 64: the mLSTM gates, N = 4): split the rows in 4 equal workgroups, for the 2+ CPU
     * threads (halving 256 left 128 + 68 rows of M = 196 on two threads). */
    if (VKVIT_CEIL_DIV(N, c.bn) == 1 && M > 32) c.bm = VKVIT_MIN(256u, VKVIT_CEIL_DIV(M, 4));
    return c;
}

bool vkvit__gemm_cpu_unrolled(const vkvit__gemm_config *cfg, vkvit__gemm_causal causal) {
    return VKVIT_HAVE_GEMM_CPU_UNROLLED && cfg->variant == VKVIT_GEMM_KERNEL_CPU && cfg->unrolled && cfg->texel &&
           !cfg->f16_math && cfg->tn == 8 && cfg->vec4 && cfg->pairs &&
           causal == VKVIT_GEMM_CAUSAL_NONE;
}

vkvit__gemm_config vkvit__gemm_pick_variant(const vkvit_ctx *ctx, vkvit_gemm_kernel variant, uint32_t M, uint32_t N,
                                            uint32_t K) {
    if (variant == VKVIT_GEMM_KERNEL_CPU) return gemm_pick_cpu(ctx, M, N, K);
    if (variant == VKVIT_GEMM_KERNEL_COOPMAT) return vkvit__gemm_pick_coopmat(ctx, M, N, K, 1);
    /* Shared-memory kernel (GPUs: fp32 and fp16-weight GEMMs, and fp16-math ones without cooperative matrices): the
     * tile by shape. Large tiles win where there are enough workgroups to fill the GPU (M and N >= 1024), the
     * 128-wide N tile only with a long K; at ViT's batch-1 shapes (201 rows) the 64 x 64 tile. Measure with
     * `vkvit bench gemm --config kernel=shared --versus kernel=shared,bm=128,tm=8` (tools/gpu_check.sh runs it); the
     * H100's figures: docs/logs/2026-12-02-kernel-choices.md. All three are 256 invocations. */
    vkvit__gemm_config c = {.bm = 64, .bn = 64, .bk = 16, .tm = 4, .tn = 4, .variant = VKVIT_GEMM_KERNEL_SHARED};
    if (M >= 1024 && N >= 1024) c.bm = 128, c.tm = 8;
    if (M >= 1024 && N >= 2048 && K >= 1024) c.bn = 128, c.tn = 8;
    /* Fewer invocations where the device allows fewer than 256 (Vulkan guarantees 128): larger register tiles first,
     * then a narrower tile. */
    const uint32_t limit = VKVIT_MIN(ctx->caps.max_workgroup_invocations, ctx->caps.max_workgroup_size[0]);
    while ((c.bm / c.tm) * (c.bn / c.tn) > limit) {
        if (c.tn < 8) c.tn *= 2;
        else if (c.tm < 8) c.tm *= 2;
        else if (c.bn > 8) c.bn /= 2;
        else break;
    }
    return c;
}

/* Bytes of shared memory of shaders/gemm_coopmat.comp at a tile (32, 64, 128), hardware or emulated build: A and B,
 * two buffers each, tile rows of (k per step / 8 + pad) uvec4s: 32 k per step (128 on the 32 tile, whose 4 warps
 * split it), a pad of one uvec4 per row except in the emulated 32 and 128 tiles (to fit 32 KiB). */
#define COOPMAT_TILE_SHARED(tile, emulated)                                                                            \
    (2u * 2 * (tile) * (((tile) == 32 ? 16u : 4u) + ((emulated) && (tile) != 64 ? 0u : 1u)) * 16)
bool vkvit__gemm_coopmat_tile_fits(const vkvit_ctx *ctx, uint32_t tile, bool emulated) {
    if (!emulated && ctx->policy.coopmat == VKVIT_COOPMAT_NV2) return tile == 64; /* gemm_coopmat2.comp: 64, 5 KiB */
    return COOPMAT_TILE_SHARED(tile, emulated) <= ctx->caps.max_shared_memory;
}

_Static_assert(COOPMAT_TILE_SHARED(64, 0) == VKVIT_COOPMAT_SHARED_BYTES,
               "vk.h's minimum shared memory for cooperative matrices is the 64 tile's");

/* Rows x columns a tile computes for an M x N product, padding included. */
static uint64_t padded_area(uint32_t M, uint32_t N, uint32_t tile) {
    return (uint64_t)VKVIT_CEIL_DIV(M, tile) * tile * VKVIT_CEIL_DIV(N, tile) * tile;
}

/* The largest tile (the most matrix products per staged element) of which there are enough workgroups to keep a
 * GPU's multiprocessors busy (an H100 has 132): 128 x 128, then 64 x 64, then 32 x 32 (ViT at batch 1: 201 rows),
 * among those that fit the device's shared memory (hardware kernels: 40 KiB, 20 KiB, 34 KiB), and that do not
 * compute much more padding than a smaller one (at most VKVIT_COOPMAT_MAX_PAD x its padded area: the attention's
 * P vT^T, 201 x 64 per head, wasted half of a 128 tile), and 64 rather than 128 for K <= 512 (the H100: 69-71
 * against 64-65 TFLOP/s at ViT's batch-256 shapes with K = 384; at K = 4096 128 wins, 79 against 64);
 * VKVIT_COOPMAT_TILE (policy.coopmat_tile) imposes one where it fits. */
vkvit__gemm_config vkvit__gemm_pick_coopmat(const vkvit_ctx *ctx, uint32_t M, uint32_t N, uint32_t K,
                                            uint32_t batch) {
    const uint64_t b = batch ? batch : 1;
    const bool emulated = (ctx->policy.coopmat == VKVIT_COOPMAT_EMULATED);
    const uint32_t shared = ctx->caps.max_shared_memory;
    const uint32_t warp = ctx->policy.coopmat_warp ? ctx->policy.coopmat_warp : 32;
    /* 4 warps on the 32 and 64 tiles, 8 on the 128 (emulated warps are 32 invocations) */
#define FITS(t)                                                                                                        \
    (COOPMAT_TILE_SHARED(t, emulated) <= shared &&                                                                     \
     ((t) == 128 ? 8u : 4u) * (emulated ? 32u : warp) <= ctx->caps.max_workgroup_invocations)
    const uint32_t largest = FITS(128) ? 128 : 64;
    const uint32_t smallest = FITS(32) ? 32 : 64;
    uint32_t tile = largest;
    while (tile > smallest && (uint64_t)VKVIT_CEIL_DIV(M, tile) * VKVIT_CEIL_DIV(N, tile) * b < VKVIT_COOPMAT_MIN_TILES)
        tile /= 2;
    for (uint32_t t = tile / 2; t >= smallest; t /= 2) /* a smaller tile that pads much less */
        if ((double)padded_area(M, N, tile) > VKVIT_COOPMAT_MAX_PAD * (double)padded_area(M, N, t)) tile = t;
    if (tile == 128 && K <= VKVIT_COOPMAT_T128_MIN_K) tile = 64;
    if (ctx->policy.coopmat_tile && FITS(ctx->policy.coopmat_tile)) tile = ctx->policy.coopmat_tile;
    if (ctx->policy.coopmat == VKVIT_COOPMAT_NV2) tile = 64; /* the one tile of gemm_coopmat2.comp */
#undef FITS
    return (vkvit__gemm_config){.bm = tile, .bn = tile, .bk = 32, .variant = VKVIT_GEMM_KERNEL_COOPMAT, .b_f16 = true,
                                .f16_math = true, .coopmat = ctx->policy.coopmat, .coopmat_corrupt = ctx->test_hooks.coopmat_corrupt,
                                .coopmat_warp = ctx->policy.coopmat_warp,
                                .sized_subgroups = ctx->caps.subgroup_size_control,
                                .coopmat_shape = ctx->policy.coopmat_shape};
}

/* The tile rules of each kernel are vkvit_gemm_tile's in include/vkvit.h; vkvit__gemm_kernel_desc checks them again. */
static vkvit_result tune_tile(const vkvit_ctx *ctx, const vkvit_gemm_tile *o, vkvit__gemm_config *c) {
    switch (c->variant) {
    case VKVIT_GEMM_KERNEL_CPU: {
        const uint32_t tn = o->tn ? o->tn : o->bn ? o->bn / 8 : c->tn;
        if (o->tm > 1 || (o->bn && o->bn != 8 * tn))
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "cpu gemm tile: bn %u, tm %u, tn %u: a workgroup is 8 "
                                "lanes of tn columns (bn = 8 tn) computing one row at a time (tm 1)", o->bn, o->tm, tn);
        c->tn = tn;
        c->bn = 8 * tn;
        if (o->bm) c->bm = o->bm;
        if (o->bk) c->bk = o->bk;
        if (c->bm > 256 || c->tn > 32 || (c->bk != 32 && c->bk != 64))
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                                "cpu gemm tile: bm %u, tn %u, bk %u: bm 1..256, tn 1..32, bk 32 or 64", c->bm, c->tn,
                                c->bk);
        /* gemm_cpu.comp's private arrays: the running sums acc[tn][bm + 1] and the B chunk b[tn][bk / 4] (vec4) */
        const uint32_t private_bytes = 4 * c->tn * (c->bm + 1 + c->bk);
        if (!ctx->policy.cpu_kernels && private_bytes > 32768)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                                "cpu gemm tile: bm %u, tn %u, bk %u: %u bytes of private arrays per invocation, more "
                                "than the 32 KiB a GPU compiler is asked for (4 tn (bm + 1 + bk))", c->bm, c->tn,
                                c->bk, private_bytes);
        return VKVIT_OK;
    }
    case VKVIT_GEMM_KERNEL_SHARED: {
        if (o->bm) c->bm = o->bm;
        if (o->bn) c->bn = o->bn;
        if (o->bk) c->bk = o->bk;
        if (o->tm) c->tm = o->tm;
        if (o->tn) c->tn = o->tn;
        const uint32_t limit = VKVIT_MIN(ctx->caps.max_workgroup_invocations, ctx->limits.maxComputeWorkGroupSize[0]);
        const bool ok = c->tm <= 8 && c->tn <= 8 && c->bm % c->tm == 0 && c->bn % c->tn == 0 &&
                        (uint64_t)c->bk * c->bm <= 2048 && (uint64_t)c->bk * c->bn <= 2048 &&
                        (!c->f16_math || c->bk % VKVIT_GEMM_F16_CHUNK == 0) &&
                        (uint64_t)(c->bm / c->tm) * (c->bn / c->tn) <= limit;
        if (!ok)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "shared gemm tile %ux%ux%u / %ux%u: tm and tn 1..8 "
                                "dividing bm and bn, bm bk and bn bk at most 2048, bk a multiple of %u with fp16 "
                                "arithmetic, and at most %u invocations ((bm / tm) (bn / tn))", c->bm, c->bn, c->bk,
                                c->tm, c->tn, VKVIT_GEMM_F16_CHUNK, limit);
        return VKVIT_OK;
    }
    case VKVIT_GEMM_KERNEL_COOPMAT: {
        const uint32_t tile = o->bm ? o->bm : o->bn ? o->bn : c->bm;
        if ((o->bm && o->bn && o->bm != o->bn) || (tile != 32 && tile != 64 && tile != 128) || (o->bk && o->bk != 32) ||
            o->tm || o->tn)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                                "coopmat gemm tile %ux%ux%u / %ux%u: square tiles bm = bn of 32, 64 or 128, bk 32, tm "
                                "and tn 0", o->bm, o->bn, o->bk, o->tm, o->tn);
        if (COOPMAT_TILE_SHARED(tile, (c->coopmat == VKVIT_COOPMAT_EMULATED)) > ctx->caps.max_shared_memory)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "coopmat gemm tile %u needs %u bytes of shared memory, "
                                "the device has %u", tile, COOPMAT_TILE_SHARED(tile, (c->coopmat == VKVIT_COOPMAT_EMULATED)),
                                ctx->caps.max_shared_memory);
        c->bm = c->bn = tile;
        return VKVIT_OK;
    }
    default: return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "gemm tile: unknown variant %d", (int)c->variant);
    }
}

vkvit_result vkvit__gemm_tune(const vkvit_ctx *ctx, const vkvit__gemm_tuning *t, uint32_t M, uint32_t N, uint32_t K,
                              uint32_t batch, vkvit__gemm_config *cfg) {
    if ((unsigned)t->kernel > VKVIT_GEMM_KERNEL_COOPMAT)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "gemm kernel %d: not AUTO, CPU, SHARED or COOPMAT",
                            (int)t->kernel);
    const uint32_t known = VKVIT_GEMM_BENCH_SCALAR_LOADS | VKVIT_GEMM_BENCH_SINGLE_STORES | VKVIT_GEMM_BENCH_GENERIC |
                           VKVIT_GEMM_BENCH_RUNNING_SUMS;
    if (t->flags & ~known)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "gemm flags 0x%x: unknown bits 0x%x", t->flags,
                            t->flags & ~known);
    const bool b_f16 = cfg->b_f16, f16_math = cfg->f16_math;
    if (t->kernel == VKVIT_GEMM_KERNEL_COOPMAT) {
        if (!f16_math || !(ctx->policy.coopmat != VKVIT_COOPMAT_NONE))
            return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "the coopmat gemm kernel runs fp16 arithmetic (fp16-math) "
                                "on devices with cooperative matrices in use; %s", !f16_math ? "this is not fp16-math"
                                : "this device or ctx has none");
        *cfg = vkvit__gemm_pick_coopmat(ctx, M, N, K, batch);
    } else if (t->kernel != VKVIT_GEMM_KERNEL_AUTO) {
        const vkvit_gemm_kernel v = t->kernel;
        if (v != cfg->variant) {
            *cfg = vkvit__gemm_pick_variant(ctx, v, M, N, K);
            cfg->b_f16 = b_f16;
            cfg->f16_math = f16_math;
        }
    }
    if (cfg->variant == VKVIT_GEMM_KERNEL_CPU && !vkvit__gemm_cpu_kernel_fits(ctx))
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "the cpu gemm kernel shuffles values within subgroups of exactly "
                            "%u lanes; this device has %s (subgroups of %u)", VKVIT_GEMM_CPU_LANES,
                            !ctx->caps.subgroup_shuffle ? "no subgroup shuffles in compute" : "other subgroups",
                            ctx->caps.subgroup_size);
    if (t->flags && cfg->variant != VKVIT_GEMM_KERNEL_CPU)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "gemm flags 0x%x switch off paths of the cpu kernel; the %s "
                            "kernel has none", t->flags, vkvit_gemm_kernel_name(cfg->variant));
    return tune_tile(ctx, &t->tile, cfg);
}

bool vkvit__gemm_cpu_kernel_fits(const vkvit_ctx *ctx) { return ctx->policy.gemm_cpu; }
_Static_assert(VKVIT_GEMM_CPU_LANES == 8, "src/policy/policy.c's gemm_cpu is the CPU GEMM's 8 lanes");

vkvit__gemm_config vkvit__gemm_pick(const vkvit_ctx *ctx, uint32_t M, uint32_t N, uint32_t K) {
    const bool cpu = ctx->policy.cpu_kernels && ctx->policy.gemm_cpu; /* never with packed bindings (policy.c) */
    return vkvit__gemm_pick_variant(ctx, cpu ? VKVIT_GEMM_KERNEL_CPU : VKVIT_GEMM_KERNEL_SHARED, M, N, K);
}

VKVIT_API const char *vkvit_gemm_kernel_name(vkvit_gemm_kernel kernel) {
    switch (kernel) {
    case VKVIT_GEMM_KERNEL_AUTO: return "auto";
    case VKVIT_GEMM_KERNEL_SHARED: return "shared";
    case VKVIT_GEMM_KERNEL_CPU: return "cpu";
    case VKVIT_GEMM_KERNEL_COOPMAT: return "coopmat";
    default: return NULL;
    }
}

/* Every GEMM shader (shaders/variants.cmake) and the configurations it serves: one row per variant. Adding a GEMM
 * variant is a shader, a row here (and where the choice is new, one in src/policy/policy.c) and a test case. Rows are
 * matched first to last, so a specialised row (the unrolled CPU kernels) comes before its generic one. */
typedef struct gemm_shader_row {
    vkvit_gemm_kernel kernel;
    vkvit__coopmat_kernel coopmat;          /* COOPMAT: the family (NV, KHR, EMULATED) */
    uint8_t shape;                          /* COOPMAT KHR and EMULATED: fragment shape (VKVIT_COOPMAT_SHAPE_*); 0 any */
    uint16_t tile;                          /* COOPMAT: bm = bn; CPU unrolled: bk; 0 any */
    bool texel, b_f16, f16_math;            /* operand reads through texel buffers, fp16 weights, fp16 arithmetic */
    bool unrolled;                          /* CPU: the build-time unrolled shader (vkvit__gemm_cpu_unrolled) */
    vkvit_shader_id shader;
} gemm_shader_row;

#define COOPMAT_ROWS(FAMILY, FRAG, ID)                                                                          \
    {VKVIT_GEMM_KERNEL_COOPMAT, FAMILY, FRAG, 32, 0, 1, 1, 0, VKVIT_SHADER_GEMM_COOPMAT_##ID##_T32_F32_F32_F16},  \
    {VKVIT_GEMM_KERNEL_COOPMAT, FAMILY, FRAG, 64, 0, 1, 1, 0, VKVIT_SHADER_GEMM_COOPMAT_##ID##_F32_F32_F16},      \
    {VKVIT_GEMM_KERNEL_COOPMAT, FAMILY, FRAG, 128, 0, 1, 1, 0, VKVIT_SHADER_GEMM_COOPMAT_##ID##_T128_F32_F32_F16}
static const gemm_shader_row k_gemm_shaders[] = {
    /* kernel                    coopmat         frag tile texel b_f16 f16 unrolled */
    {VKVIT_GEMM_KERNEL_SHARED, VKVIT_COOPMAT_NONE, 0, 0, 0, 0, 0, 0, VKVIT_SHADER_GEMM_F32_F32},
    {VKVIT_GEMM_KERNEL_SHARED, VKVIT_COOPMAT_NONE, 0, 0, 0, 1, 0, 0, VKVIT_SHADER_GEMM_F32_F32_W16},
    {VKVIT_GEMM_KERNEL_SHARED, VKVIT_COOPMAT_NONE, 0, 0, 0, 1, 1, 0, VKVIT_SHADER_GEMM_F32_F32_F16},
#if VKVIT_HAVE_GEMM_CPU_UNROLLED
    {VKVIT_GEMM_KERNEL_CPU, VKVIT_COOPMAT_NONE, 0, 64, 1, 0, 0, 1, VKVIT_SHADER_GEMM_CPU_F32_F32_TEXEL_T8K2},
    {VKVIT_GEMM_KERNEL_CPU, VKVIT_COOPMAT_NONE, 0, 32, 1, 0, 0, 1, VKVIT_SHADER_GEMM_CPU_F32_F32_TEXEL_T8K1},
    {VKVIT_GEMM_KERNEL_CPU, VKVIT_COOPMAT_NONE, 0, 64, 1, 1, 0, 1, VKVIT_SHADER_GEMM_CPU_F32_F32_W16_TEXEL_T8K2},
    {VKVIT_GEMM_KERNEL_CPU, VKVIT_COOPMAT_NONE, 0, 32, 1, 1, 0, 1, VKVIT_SHADER_GEMM_CPU_F32_F32_W16_TEXEL_T8K1},
#endif
    {VKVIT_GEMM_KERNEL_CPU, VKVIT_COOPMAT_NONE, 0, 0, 0, 0, 0, 0, VKVIT_SHADER_GEMM_CPU_F32_F32},
    {VKVIT_GEMM_KERNEL_CPU, VKVIT_COOPMAT_NONE, 0, 0, 0, 1, 0, 0, VKVIT_SHADER_GEMM_CPU_F32_F32_W16},
    {VKVIT_GEMM_KERNEL_CPU, VKVIT_COOPMAT_NONE, 0, 0, 0, 1, 1, 0, VKVIT_SHADER_GEMM_CPU_F32_F32_F16},
    {VKVIT_GEMM_KERNEL_CPU, VKVIT_COOPMAT_NONE, 0, 0, 1, 0, 0, 0, VKVIT_SHADER_GEMM_CPU_F32_F32_TEXEL},
    {VKVIT_GEMM_KERNEL_CPU, VKVIT_COOPMAT_NONE, 0, 0, 1, 1, 0, 0, VKVIT_SHADER_GEMM_CPU_F32_F32_W16_TEXEL},
    {VKVIT_GEMM_KERNEL_CPU, VKVIT_COOPMAT_NONE, 0, 0, 1, 1, 1, 0, VKVIT_SHADER_GEMM_CPU_F32_F32_F16_TEXEL},
    COOPMAT_ROWS(VKVIT_COOPMAT_EMULATED, VKVIT_COOPMAT_SHAPE_16X16X16, EMU),
    COOPMAT_ROWS(VKVIT_COOPMAT_EMULATED, VKVIT_COOPMAT_SHAPE_8X16X16, EMU_M8N16),
    COOPMAT_ROWS(VKVIT_COOPMAT_EMULATED, VKVIT_COOPMAT_SHAPE_8X8X16, EMU_M8N8),
#if VKVIT_HAVE_NV_COOPMAT
    COOPMAT_ROWS(VKVIT_COOPMAT_NV, 0, NV),
#endif
#if VKVIT_HAVE_KHR_COOPMAT
    COOPMAT_ROWS(VKVIT_COOPMAT_KHR, VKVIT_COOPMAT_SHAPE_16X16X16, KHR),
    COOPMAT_ROWS(VKVIT_COOPMAT_KHR, VKVIT_COOPMAT_SHAPE_8X8X8, KHR8),
    COOPMAT_ROWS(VKVIT_COOPMAT_KHR, VKVIT_COOPMAT_SHAPE_8X16X16, KHR_M8N16),
    COOPMAT_ROWS(VKVIT_COOPMAT_KHR, VKVIT_COOPMAT_SHAPE_8X8X16, KHR_M8N8),
#endif
#if VKVIT_HAVE_NV_COOPMAT2
    {VKVIT_GEMM_KERNEL_COOPMAT, VKVIT_COOPMAT_NV2, 0, 64, 0, 1, 1, 0, VKVIT_SHADER_GEMM_COOPMAT2_F32_F32_F16},
#endif
};
#undef COOPMAT_ROWS

/* The shader of a configuration (its tile already checked); false when this build has none for it, with *missing
 * naming the cooperative-matrix family it lacks ("NV", "KHR"). */
static bool gemm_shader(const vkvit__gemm_config *c, vkvit__gemm_causal causal, vkvit_shader_id *out,
                        const char **missing) {
    const bool coop = c->variant == VKVIT_GEMM_KERNEL_COOPMAT, cpu = c->variant == VKVIT_GEMM_KERNEL_CPU;
    const bool unrolled = vkvit__gemm_cpu_unrolled(c, causal);
    const uint32_t shape = coop && c->coopmat != VKVIT_COOPMAT_NV && c->coopmat != VKVIT_COOPMAT_NV2
                               ? (c->coopmat_shape ? c->coopmat_shape : VKVIT_COOPMAT_SHAPE_16X16X16)
                               : 0;
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(k_gemm_shaders); i++) {
        const gemm_shader_row *r = &k_gemm_shaders[i];
        if (r->kernel != c->variant || r->b_f16 != c->b_f16 || r->f16_math != c->f16_math) continue;
        if (coop && (r->coopmat != c->coopmat || r->shape != shape || r->tile != c->bm)) continue;
        if (cpu && (r->texel != c->texel || r->unrolled != unrolled || (r->unrolled && r->tile != c->bk))) continue;
        *out = r->shader;
        return true;
    }
    if (missing)
        *missing = c->coopmat == VKVIT_COOPMAT_KHR   ? "KHR"
                   : c->coopmat == VKVIT_COOPMAT_NV  ? "NV"
                   : c->coopmat == VKVIT_COOPMAT_NV2 ? "NV cooperative-matrix-2"
                                                     : "emulated";
    return false;
}

vkvit_result vkvit__gemm_kernel_desc(const vkvit__gemm_config *cfg, const vkvit__gemm_epilogue *ep, const char *label,
                                     vkvit__kernel_desc *out) {
    vkvit__kernel_desc d = {
        .n_buffers = VKVIT_GEMM_BINDINGS,
        .push_size = sizeof(vkvit__gemm_push),
        .label = label,
    };
    if (ep->act > 3) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s': unknown activation %u", label, ep->act);
    if (cfg->f16_math && !cfg->b_f16) /* the *_f16 kernels read B as fp16: fp32 weights would be misread */
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s': fp16 arithmetic needs fp16 weights (b_f16)",
                            label ? label : "?");
    if (cfg->variant == VKVIT_GEMM_KERNEL_COOPMAT) {
        /* gemm_coopmat.comp: 0 HAS_BIAS, 1 ACT, 2 HAS_SCALE, 3 HAS_RESIDUAL, 4 CORRUPT (and 5, 6 below); 4 warps on
         * the 32 x 32 and 64 x 64 tiles, 8 on the 128 x 128 (t128). */
        if (!cfg->f16_math || (cfg->bm != 32 && cfg->bm != 64 && cfg->bm != 128) || cfg->bn != cfg->bm ||
            cfg->bk != 32)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s': the cooperative-matrix GEMM runs 32x32x32, "
                                "64x64x32 or 128x128x32 tiles of fp16 arithmetic on fp16 weights", label ? label : "?");
        if (cfg->coopmat == VKVIT_COOPMAT_NV2 && cfg->bm != 64)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s': the cooperative-matrix-2 GEMM "
                                "(gemm_coopmat2.comp) has the 64 x 64 tile only, not %u", label ? label : "?", cfg->bm);
        const char *missing = NULL;
        uint32_t fm = 16, fn = 16, fk = 16, lanes = 0;
        if (cfg->coopmat_shape && !vkvit__coopmat_shape_dims(cfg->coopmat_shape, &fm, &fn, &fk, &lanes))
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s': unknown cooperative-matrix shape 0x%x",
                                label ? label : "?", cfg->coopmat_shape);
        if (!gemm_shader(cfg, ep->causal, &d.shader, &missing))
            return cfg->coopmat == VKVIT_COOPMAT_EMULATED || (cfg->coopmat == VKVIT_COOPMAT_NV && fm * fn * fk != 4096)
                       ? vkvit__error(VKVIT_ERROR_UNSUPPORTED, "kernel '%s': the %s cooperative-matrix GEMM has no "
                                      "%ux%ux%u fragments", label ? label : "?", missing, fm, fn, fk)
                       : vkvit__error(VKVIT_ERROR_UNSUPPORTED, "kernel '%s': vkvit was built without the %s "
                                      "cooperative-matrix GEMM (glslang lacked %s)", label ? label : "?", missing,
                                      cfg->coopmat == VKVIT_COOPMAT_KHR   ? "GL_KHR_cooperative_matrix"
                                      : cfg->coopmat == VKVIT_COOPMAT_NV2 ? "GL_NV_cooperative_matrix2"
                                                                          : "GL_NV_cooperative_matrix");
        /* The hardware kernels' warp is one subgroup: 5 WARP (its invocations), 6 WG_SIZE (WARP x 4 warps, 8 on the
         * 128 tile). The emulated kernel's warps are 32 invocations whatever the subgroups. */
        const uint32_t warp = cfg->coopmat_warp ? cfg->coopmat_warp : 32, warps = cfg->bm == 128 ? 8 : 4;
        if (!(cfg->coopmat == VKVIT_COOPMAT_EMULATED) && (warp < 4 || warp > 64 || 64 % warp || (fm * fn) % warp ||
                                                           (lanes && warp != lanes)))
            return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "kernel '%s': the cooperative-matrix GEMM at %ux%ux%u "
                                "fragments needs subgroups of %s dividing %u; this device's warp has %u",
                                label ? label : "?", fm, fn, fk, lanes == 8 ? "8" : lanes == 16 ? "16" :
                                "4 to 64 invocations", fm * fn, warp);
        const uint32_t spec[7] = {ep->bias, ep->act, ep->scale, ep->residual, cfg->coopmat_corrupt, warp, warp * warps};
        d.n_spec = (cfg->coopmat == VKVIT_COOPMAT_EMULATED) ? 5 : 7;
        /* one warp = one full subgroup of `warp` lanes, where the device lets vkvit require it */
        d.full_subgroups = cfg->sized_subgroups && cfg->coopmat != VKVIT_COOPMAT_EMULATED;
        d.subgroup_size = d.full_subgroups ? warp : 0;
        memcpy(d.spec, spec, sizeof spec);
    } else if (cfg->variant == VKVIT_GEMM_KERNEL_CPU) {
        /* gemm_cpu.comp: 0 BM, 1 TN, 2 HAS_BIAS, 3 ACT, 4 HAS_SCALE, 5 HAS_RESIDUAL, 6 VEC4, 7 KCH (bk / 32),
         * 8 CAUSAL, 9 PAIRS (texel variants only), 10 ONE_CHUNK; workgroup = one subgroup of 8. */
        if (cfg->bm == 0 || cfg->bm > 256 || cfg->tn == 0 || cfg->tn > 32 || cfg->bn != 8 * cfg->tn ||
            (cfg->bk != 32 && cfg->bk != 64))
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s': bad cpu gemm tile %ux%ux%u (tn %u)",
                                label ? label : "?", cfg->bm, cfg->bn, cfg->bk, cfg->tn);
        gemm_shader(cfg, ep->causal, &d.shader, NULL);
        if (cfg->texel) {
            d.texel_format[0] = VK_FORMAT_R32G32B32A32_SFLOAT;
            d.texel_format[1] = cfg->b_f16 ? VK_FORMAT_R16G16B16A16_SFLOAT : VK_FORMAT_R32G32B32A32_SFLOAT;
        }
        if ((uint32_t)ep->causal > VKVIT_GEMM_CAUSAL_D_UPPER)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s': unknown causal mode %u", label ? label : "?",
                                (unsigned)ep->causal);
        const uint32_t spec[11] = {cfg->bm, cfg->tn, ep->bias, ep->act, ep->scale, ep->residual, cfg->vec4,
                                   cfg->bk / 32, (uint32_t)ep->causal, cfg->texel && cfg->pairs, cfg->one_chunk};
        d.n_spec = 11;
        d.full_subgroups = cfg->sized_subgroups; /* one full subgroup of exactly 8 lanes where size control exists */
        d.subgroup_size = cfg->sized_subgroups ? VKVIT_GEMM_CPU_LANES : 0;
        memcpy(d.spec, spec, sizeof spec);
    } else {
        /* gemm.comp: 0 BM, 1 BN, 2 BK, 3 TM, 4 TN, 5 HAS_BIAS, 6 WG_SIZE, 7 ACT, 8 HAS_SCALE, 9 HAS_RESIDUAL.
         * Its shared tiles hold 16 * 128 elements each (bk * bm and bk * bn), its register tiles at most 8 x 8. */
        if (!cfg->tm || !cfg->tn || cfg->tm > 8 || cfg->tn > 8 || cfg->bm % cfg->tm || cfg->bn % cfg->tn || !cfg->bk ||
            cfg->bk * cfg->bm > 16 * 128 || cfg->bk * cfg->bn > 16 * 128 ||
            (cfg->f16_math && cfg->bk % VKVIT_GEMM_F16_CHUNK))
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s': bad gemm tile %ux%ux%u / %ux%u%s",
                                label ? label : "?", cfg->bm, cfg->bn, cfg->bk, cfg->tm, cfg->tn,
                                cfg->f16_math ? " (fp16 arithmetic: bk a multiple of 16)" : "");
        gemm_shader(cfg, ep->causal, &d.shader, NULL);
        const uint32_t spec[10] = {cfg->bm, cfg->bn, cfg->bk, cfg->tm, cfg->tn, ep->bias,
                                   (cfg->bm / cfg->tm) * (cfg->bn / cfg->tn), ep->act, ep->scale, ep->residual};
        d.n_spec = 10;
        memcpy(d.spec, spec, sizeof spec);
    }
    *out = d;
    return VKVIT_OK;
}

vkvit_result vkvit__gemm_kernel_create(vkvit_ctx *ctx, const vkvit__gemm_config *cfg, const vkvit__gemm_epilogue *ep,
                                       const char *label, vkvit__kernel *out) {
    vkvit__kernel_desc d;
    vkvit_result res = vkvit__gemm_kernel_desc(cfg, ep, label, &d);
    return res != VKVIT_OK ? res : vkvit__kernel_create(ctx, &d, out);
}

bool vkvit__gemm_push_pairs(const vkvit__gemm_push *push, uint32_t batch, bool spare_column) {
    const uint32_t n_inner = push->n_inner ? push->n_inner : 1;
    const uint32_t n = push->N + (spare_column && push->N % 2 && push->stride_d > push->N && n_inner == 1);
    uint32_t bits = n | push->stride_d | push->d_offset;
    if (batch / n_inner > 1) bits |= push->batch_stride_d;
    if (n_inner > 1) bits |= push->inner_stride_d;
    return (bits & 1u) == 0;
}

bool vkvit__gemm_push_vec4(const vkvit__gemm_push *push, uint32_t batch) {
    const uint32_t n_inner = push->n_inner ? push->n_inner : 1;
    uint32_t bits = push->K | push->stride_a | push->stride_b | push->a_offset | push->b_offset;
    if (batch / n_inner > 1) bits |= push->batch_stride_a | push->batch_stride_b;
    if (n_inner > 1) bits |= push->inner_stride_a | push->inner_stride_b;
    return (bits & 3u) == 0;
}

bool vkvit__gemm_one_chunk(const vkvit__gemm_config *cfg, const vkvit__gemm_push *push) {
    return cfg->variant == VKVIT_GEMM_KERNEL_CPU && push->K <= cfg->bk;
}

void vkvit__gemm_groups(const vkvit__gemm_config *cfg, const vkvit__gemm_push *push, uint32_t batch, uint32_t groups[3]) {
    groups[0] = VKVIT_CEIL_DIV(push->N, cfg->bn);
    groups[1] = VKVIT_CEIL_DIV(push->M, cfg->bm);
    groups[2] = batch;
}

void vkvit__gemm_record(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__kernel *k, const vkvit__gemm_config *cfg,
                        VkDescriptorSet set, const vkvit__gemm_push *push, uint32_t batch) {
    VKVIT_ASSERT(!cfg->one_chunk || vkvit__gemm_one_chunk(cfg, push));
    uint32_t g[3];
    vkvit__gemm_groups(cfg, push, batch, g);
    vkvit__cmd_dispatch(ctx, cmd, k, set, push, g[0], g[1], g[2]);
}
