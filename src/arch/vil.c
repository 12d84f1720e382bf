// SPDX-License-Identifier: Apache-2.0
/* vil: VisionLSTM v1 (docs/math.md 7) — its `config` rules, tensor table, FLOPs, description and network, reached
 * through its row of the architecture table (src/arch/arch.h). The network itself is src/modules/vil.c. */
#include "arch/arch_kit.h"

#include <string.h>
#ifndef VKVIT_ARCH_READER_ONLY
#include "modules/modules.h"        /* the network builder (not in reader-only builds such as the fuzzer) */
#endif

static const char *const FLAVOURS[] = {"seed", "nxai"};

/* ---------------------------------------------------------------------------------------------------------------
 * config (docs/model-format.md `vil`)
 * --------------------------------------------------------------------------------------------------------------- */

static const char *const KEYS[] = {
    "image_size", "patch_size", "in_chans", "dim", "depth", "inner_dim", "num_heads", "qkv_block_size",
    "conv_kernel", "pooling", "norm_eps", "head_norm_eps", "num_classes",
};

static vkvit_result parse(const vkvit__cfg_parser *p, const cJSON *c, vkvit__model_config *cfg) {
    vkvit__vil_config *v = &cfg->vil;
    const bool nxai = cfg->flavour == VKVIT_FLAVOUR_NXAI;
    const uint32_t MAXD = VKVIT_MODEL_MAX_DIM;
    int e = 0;
    VKVIT_CFG_TRY(vkvit__cfg_keys(p, c, "config", KEYS, (int)VKVIT_ARRAY_LEN(KEYS)));
    VKVIT_CFG_TRY(vkvit__cfg_image(p, c, v->image_size, &v->patch_size, &v->in_chans, v->grid));
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "dim", 1, MAXD, &v->dim));
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "depth", 1, MAXD, &v->depth));
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "inner_dim", 1, 2 * MAXD, &v->inner_dim));
    /* The seed's mLSTMCell rounds 2 * dim up to a multiple of 64; NX-AI's official ViLLayer uses exactly 2 * dim
     * (the same number for every published width), and nxai files written by earlier converters carry the
     * rounded value, so nxai accepts either. */
    const uint32_t rounded = VKVIT_CEIL_DIV(2 * v->dim, 64) * 64;
    if (nxai && v->inner_dim != rounded && v->inner_dim != 2 * v->dim)
        return VKVIT_CFG_FAIL(p, "config.inner_dim = %u is neither 2 * config.dim = %u nor ceil(2 * config.dim / "
                              "64) * 64 = %u (flavour nxai)", v->inner_dim, 2 * v->dim, rounded);
    if (!nxai && v->inner_dim != rounded)
        return VKVIT_CFG_FAIL(p, "config.inner_dim = %u is not ceil(2 * config.dim / 64) * 64 = %u for config.dim "
                              "= %u", v->inner_dim, rounded, v->dim);
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "num_heads", 1, MAXD, &v->num_heads));
    if (v->inner_dim % v->num_heads)
        return VKVIT_CFG_FAIL(p, "config.num_heads = %u does not divide config.inner_dim = %u", v->num_heads,
                              v->inner_dim);
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "qkv_block_size", 1, MAXD, &v->qkv_block_size));
    if (v->qkv_block_size != 4)
        return VKVIT_CFG_FAIL(p, "config.qkv_block_size = %u is not 4 (q/k/v projections are 4x4 blocks)",
                              v->qkv_block_size);
    if (v->inner_dim % v->qkv_block_size)
        return VKVIT_CFG_FAIL(p, "config.inner_dim = %u is not a multiple of config.qkv_block_size = %u",
                              v->inner_dim, v->qkv_block_size);
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "conv_kernel", 1, MAXD, &v->conv_kernel));
    static const char *const POOL[] = {"bilateral_avg"};
    VKVIT_CFG_TRY(vkvit__cfg_enum(p, c, "config", "pooling", POOL, 1, "bilateral_avg", &e));
    VKVIT_CFG_TRY(vkvit__cfg_eps(p, c, "config", "norm_eps", &v->norm_eps));
    VKVIT_CFG_TRY(vkvit__cfg_eps(p, c, "config", "head_norm_eps", &v->head_norm_eps));
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "num_classes", 1, MAXD, &v->num_classes));

    v->num_tokens = v->grid[0] * v->grid[1];
    v->head_dim = v->inner_dim / v->num_heads;
    v->num_proj_heads = v->inner_dim / v->qkv_block_size;
    cfg->image_size[0] = v->image_size[0];
    cfg->image_size[1] = v->image_size[1];
    cfg->num_classes = v->num_classes;
    return VKVIT_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
 * Tensor table: D width, E inner dim, NH memory heads, NP = E / 4 projection heads, K conv kernel
 * --------------------------------------------------------------------------------------------------------------- */

static void tensors(const vkvit__model_config *cfg, vkvit__tensor_table *t) {
    const vkvit__vil_config *v = &cfg->vil;
    const bool seed = cfg->flavour == VKVIT_FLAVOUR_SEED;
    const uint64_t D = v->dim, E = v->inner_dim, P = v->patch_size, NH = v->num_heads, NP = v->num_proj_heads,
                   bs = v->qkv_block_size;
    vkvit__put(t, "patch_embed.proj.weight", 4, D, v->in_chans, P, P);
    vkvit__put(t, "patch_embed.proj.bias", 1, D, 0, 0, 0);
    vkvit__put(t, "pos_embed.embed", 4, 1, v->grid[0], v->grid[1], D);
    for (uint32_t i = 0; i < v->depth && !t->stopped; i++) {
        vkvit__put_block(t, i, "norm1.weight", 1, D, 0, 0);
        vkvit__put_block(t, i, "mlstm.proj_up.weight", 2, 2 * E, D, 0);
        vkvit__put_block(t, i, "mlstm.conv1d.weight", 3, E, 1, v->conv_kernel);
        vkvit__put_block(t, i, "mlstm.conv1d.bias", 1, E, 0, 0);
        vkvit__put_block(t, i, "mlstm.q_proj.weight", 3, NP, bs, bs);
        vkvit__put_block(t, i, "mlstm.k_proj.weight", 3, NP, bs, bs);
        vkvit__put_block(t, i, "mlstm.v_proj.weight", 3, NP, bs, bs);
        vkvit__put_block(t, i, "mlstm.igate.weight", 2, NH, 3 * E, 0);
        vkvit__put_block(t, i, "mlstm.igate.bias", 1, NH, 0, 0);
        vkvit__put_block(t, i, "mlstm.fgate.weight", 2, NH, 3 * E, 0);
        vkvit__put_block(t, i, "mlstm.fgate.bias", 1, NH, 0, 0);
        vkvit__put_block(t, i, "mlstm.outnorm.weight", 1, E, 0, 0);
        if (seed) vkvit__put_block(t, i, "mlstm.outnorm.bias", 1, E, 0, 0);
        vkvit__put_block(t, i, "mlstm.proj_down.weight", 2, D, E, 0);
        vkvit__put_block(t, i, "mlstm.learnable_skip", 1, E, 0, 0);
        if (seed) vkvit__put_block(t, i, "mlstm.layerscale", 1, E, 0, 0);
    }
    vkvit__put(t, "legacy_norm.weight", 1, D, 0, 0, 0);
    vkvit__put(t, "norm.weight", 1, D, 0, 0, 0);
    vkvit__put(t, "norm.bias", 1, D, 0, 0, 0);
    vkvit__put(t, "head.weight", 2, v->num_classes, D, 0, 0);
    vkvit__put(t, "head.bias", 1, v->num_classes, 0, 0, 0);
}

/* ---------------------------------------------------------------------------------------------------------------
 * FLOPs. Seed 004 has no flop_count, so this is docs/math.md 8's derived per-block count in the PARALLEL form (what the
 * seed computes), with S tokens, D, E, NH memory heads, K conv kernel, bs = qkv block size:
 *   norm1 5SD | proj_up 4SDE | causal depthwise conv 2KSE | headwise q, k, v 3·2·S·E·bs | gates 2·2·S·3E·NH
 *   | cell 4S²E + 5·NH·S² (gate matrix) | outnorm 5SE | skip, z-gate, SiLU 6SE | proj_down 2SED
 *   | layerscale SD (seed flavour only; nxai has none).
 * Network level (official v1 VisionLSTM, the same conventions as ViT-5): patch embed 2·in_chans·D·P²·S (conv bias not
 * counted), pos-embed add S·D, legacy_norm 5SD (applied to every token), bilateral_avg pooling 2D, head LayerNorm
 * 5D, head 2·D·classes. tools/vkvit_file.py holds the same formula.
 * --------------------------------------------------------------------------------------------------------------- */

static void flops(const vkvit__model_config *cfg, vkvit__flops *f) {
    const vkvit__vil_config *v = &cfg->vil;
    const bool seed = cfg->flavour == VKVIT_FLAVOUR_SEED;
    const uint64_t S = v->num_tokens, D = v->dim, E = v->inner_dim, NH = v->num_heads, K = v->conv_kernel,
                   bs = v->qkv_block_size, P = v->patch_size;
    uint64_t cell = ADD(MUL(4, S, S, E), MUL(5, NH, S, S));
    f->mixer_per_block = cell;
    f->block = ADD(MUL(5, S, D),                    /* norm1 */
                   MUL(4, S, D, E),                 /* proj_up */
                   MUL(2, K, S, E),                 /* conv1d */
                   MUL(3, 2, S, E, bs),             /* q, k, v headwise */
                   MUL(2, 2, S, 3, E, NH),          /* igate, fgate */
                   cell,                            /* mLSTM cell */
                   MUL(5, S, E),                    /* outnorm */
                   MUL(6, S, E),                    /* + skip, * silu(z) */
                   MUL(2, S, E, D),                 /* proj_down */
                   seed ? MUL(S, D) : 0);           /* layerscale */
    f->blocks = MUL(v->depth, f->block);
    f->patch_embed = MUL(2, v->in_chans, D, P, P, S);
    f->pos_embed = MUL(S, D);
    f->readout = ADD(MUL(5, S, D), MUL(2, D));      /* legacy_norm + bilateral_avg */
    f->out_norm = MUL(5, D);
    f->head = MUL(2, D, v->num_classes);
}

/* ---------------------------------------------------------------------------------------------------------------
 * describe (vkvit_describe_model; tools/vkvit_file.py describe() writes the same members)
 * --------------------------------------------------------------------------------------------------------------- */

static void describe(const vkvit__model_config *cfg, cJSON *o) {
    const vkvit__vil_config *v = &cfg->vil;
    cJSON_AddItemToObject(o, "image_size", vkvit__json_pair(v->image_size[0], v->image_size[1]));
    cJSON_AddNumberToObject(o, "patch_size", v->patch_size);
    cJSON_AddItemToObject(o, "grid", vkvit__json_pair(v->grid[0], v->grid[1]));
    cJSON_AddNumberToObject(o, "tokens", v->num_tokens);
    cJSON_AddNumberToObject(o, "dim", v->dim);
    cJSON_AddNumberToObject(o, "depth", v->depth);
    cJSON_AddNumberToObject(o, "inner_dim", v->inner_dim);
    cJSON_AddNumberToObject(o, "num_heads", v->num_heads);
    cJSON_AddNumberToObject(o, "head_dim", v->head_dim);
    cJSON_AddNumberToObject(o, "num_proj_heads", v->num_proj_heads);
    cJSON_AddNumberToObject(o, "conv_kernel", v->conv_kernel);
    cJSON_AddNumberToObject(o, "qkv_block_size", v->qkv_block_size);
    cJSON_AddStringToObject(o, "pooling", "bilateral_avg");
}

static void summary(const vkvit__model_config *cfg, cJSON *lines) {
    const vkvit__vil_config *v = &cfg->vil;
    const bool seed = !strcmp(FLAVOURS[cfg->flavour], "seed");
    vkvit__summary_line(lines, "architecture", "vil, flavour %s (%s numerics)", FLAVOURS[cfg->flavour],
                        seed ? "seed-004" : "official NX-AI v1");
    vkvit__summary_line(lines, "input", "%u x %u RGB, patch %u -> %u x %u grid", v->image_size[0], v->image_size[1],
                        v->patch_size, v->grid[0], v->grid[1]);
    vkvit__summary_line(lines, "tokens", "%u (patches only; odd blocks run the sequence reversed)", v->num_tokens);
    vkvit__summary_line(lines, "width", "%u, depth %u, inner %u, memory heads %u (head dim %u), q/k/v %u blocks of "
                        "%ux%u, conv kernel %u", v->dim, v->depth, v->inner_dim, v->num_heads, v->head_dim,
                        v->num_proj_heads, v->qkv_block_size, v->qkv_block_size, v->conv_kernel);
    vkvit__summary_line(lines, "readout", "bilateral_avg -> LayerNorm -> head (%u -> %u)", v->dim, cfg->num_classes);
}

/* ---------------------------------------------------------------------------------------------------------------
 * The row
 * --------------------------------------------------------------------------------------------------------------- */

#ifndef VKVIT_ARCH_READER_ONLY
static void build(vkvit__graph *g, const vkvit_model *m, uint32_t batch, uint32_t *input, uint32_t *condition,
                  uint32_t *output) {
    (void)condition; /* a ViL takes no condition */
    vkvit__vil_build(g, m, batch, input, output);
}
#endif

#ifndef VKVIT_ARCH_READER_ONLY
/* "<prefix>fgate.bias" follows "<prefix>igate.bias" in the weight buffer: the cell computes both gates at once
 * (one GEMM, or one pair) over the folded gate weights (src/modules/vil.c, vkvit__mlstm_fold), whose bias is the two
 * side by side. */
static bool packed_after(const char *name, char *leader, size_t leader_size) {
    static const char follower[] = "fgate.bias";
    const size_t n = strlen(name), f = sizeof follower - 1;
    if (!vkvit__name_ends_with(name, follower) || n >= leader_size) return false;
    memcpy(leader, name, n + 1);
    leader[n - f] = 'i';                                /* "fgate" -> "igate" */
    return true;
}

/* The cell reads the folds (vkvit__vil_constants: const.blocks.{i}.mlstm.qk_fold and .gate_fold), never the q/k
 * projections and gate weights they are made of; parse() admits only the 4x4 blocks the folds need. */
static bool host_only(const vkvit__model_config *cfg, const char *name) {
    (void)cfg;
    static const char *const FOLDED[] = {"mlstm.q_proj.weight", "mlstm.k_proj.weight", "mlstm.igate.weight",
                                         "mlstm.fgate.weight"};
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(FOLDED); i++)
        if (vkvit__name_ends_with(name, FOLDED[i])) return true;
    return false;
}
#endif

const vkvit__arch_ops vkvit__arch_vil = {
    .name = "vil",
    .flavours = FLAVOURS,
    .n_flavours = 2,
    .mixer_flops_name = "cell_per_block",
    .mixer_flops_text = "mLSTM cell (parallel form)",
    .parse = parse,
    .tensors = tensors,
    .flops = flops,
    .describe = describe,
    .summary = summary,
    VKVIT_ARCH_RUNTIME(.constants = vkvit__vil_constants, .packed_after = packed_after, .host_only = host_only,
                       .build = build,)
};
