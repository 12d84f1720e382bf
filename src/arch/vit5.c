// SPDX-License-Identifier: Apache-2.0
/* vit5: ViT5ClassificationNet (docs/math.md 1, 2, 5, 6) — its `config` rules, tensor table, FLOPs, description,
 * constant tables and network, reached through its row of the architecture table (src/arch/arch.h). The network
 * itself is src/modules/vit5.c + vit5_block.c. */
#include "arch/arch_kit.h"
#ifndef VKVIT_ARCH_READER_ONLY
#include "modules/modules.h"        /* the network builder (not in reader-only builds such as the fuzzer) */
#endif

static const char *const FLAVOURS[] = {"nvsubq", "paper"};
static const char *const READOUT_NAMES[] = {"cls", "gap", "register_concat"};
/* Indexed by vkvit__rope_pairing (model/rope.h): 0 is "no RoPE", which a vit5 config cannot ask for. */
static const char *const PAIRING_NAMES[] = {"none", "split_half", "adjacent"};
static const char *const LAYOUT_NAMES[] = {"patches_cls_regs", "cls_patches_regs"};

/* ---------------------------------------------------------------------------------------------------------------
 * config (docs/model-format.md `vit5`)
 * --------------------------------------------------------------------------------------------------------------- */

static const char *const KEYS[] = {
    "image_size", "patch_size", "in_chans", "dim", "depth", "num_heads", "mlp_hidden", "mlp_activation",
    "num_registers", "has_cls", "readout", "neck_dim", "qk_norm", "norm_eps", "qk_norm_eps", "rope_base",
    "reg_rope_base", "rope_pairing", "token_layout", "layer_scale", "grn", "bias", "num_classes",
};
static const char *const BIAS_KEYS[] = {"patch_embed", "qkv", "proj", "mlp", "head"};

static uint32_t isqrt32(uint32_t v) {
    uint32_t r = 0;
    while ((uint64_t)(r + 1) * (r + 1) <= v) r++; /* v <= 65536 here: at most 256 steps */
    return r;
}

static vkvit_result parse(const vkvit__cfg_parser *p, const cJSON *c, vkvit__model_config *cfg) {
    vkvit__vit5_config *v = &cfg->vit5;
    const uint32_t MAXD = VKVIT_MODEL_MAX_DIM;
    int e = 0;
    VKVIT_CFG_TRY(vkvit__cfg_keys(p, c, "config", KEYS, (int)VKVIT_ARRAY_LEN(KEYS)));
    VKVIT_CFG_TRY(vkvit__cfg_image(p, c, v->image_size, &v->patch_size, &v->in_chans, v->grid));

    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "dim", 1, MAXD, &v->dim));
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "depth", 1, MAXD, &v->depth));
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "num_heads", 1, MAXD, &v->num_heads));
    if (v->dim % v->num_heads)
        return VKVIT_CFG_FAIL(p, "config.num_heads = %u does not divide config.dim = %u", v->num_heads, v->dim);
    v->head_dim = v->dim / v->num_heads;
    if (v->head_dim % 4)
        return VKVIT_CFG_FAIL(p, "the head dim config.dim / config.num_heads = %u / %u = %u is not a multiple of 4 "
                              "(2-D RoPE rotates quarters)", v->dim, v->num_heads, v->head_dim);
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "mlp_hidden", 1, MAXD, &v->mlp_hidden));
    static const char *const ACT[] = {"gelu"};
    VKVIT_CFG_TRY(vkvit__cfg_enum(p, c, "config", "mlp_activation", ACT, 1, "gelu", &e));

    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "num_registers", 0, MAXD, &v->num_registers));
    uint32_t side = isqrt32(v->num_registers);
    if (side * side != v->num_registers)
        return VKVIT_CFG_FAIL(p, "config.num_registers = %u is neither 0 nor a perfect square (registers sit on a "
                              "square RoPE grid)", v->num_registers);
    VKVIT_CFG_TRY(vkvit__cfg_bool(p, c, "config", "has_cls", &v->has_cls));
    VKVIT_CFG_TRY(vkvit__cfg_enum(p, c, "config", "readout", READOUT_NAMES, 3, "cls, gap, register_concat", &e));
    v->readout = (vkvit__readout)e;
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "neck_dim", 0, MAXD, &v->neck_dim));
    if (v->readout == VKVIT_READOUT_CLS && !v->has_cls)
        return VKVIT_CFG_FAIL(p, "config.readout = 'cls' needs config.has_cls = true");
    if (v->readout == VKVIT_READOUT_REGISTER_CONCAT) {
        if (v->num_registers == 0)
            return VKVIT_CFG_FAIL(p, "config.readout = 'register_concat' needs config.num_registers > 0");
        if (v->neck_dim == 0)
            return VKVIT_CFG_FAIL(p, "config.readout = 'register_concat' needs config.neck_dim >= 1");
        if ((uint64_t)v->num_registers * v->neck_dim > MAXD)
            return VKVIT_CFG_FAIL(p, "config.num_registers * config.neck_dim = %u * %u (the head width) is above %u",
                                  v->num_registers, v->neck_dim, MAXD);
        v->head_in = v->num_registers * v->neck_dim;
    } else {
        if (v->neck_dim != 0)
            return VKVIT_CFG_FAIL(p, "config.neck_dim = %u must be 0 unless config.readout is 'register_concat'",
                                  v->neck_dim);
        v->head_in = v->dim;
    }

    VKVIT_CFG_TRY(vkvit__cfg_bool(p, c, "config", "qk_norm", &v->qk_norm));
    VKVIT_CFG_TRY(vkvit__cfg_eps(p, c, "config", "norm_eps", &v->norm_eps));
    VKVIT_CFG_TRY(vkvit__cfg_eps(p, c, "config", "qk_norm_eps", &v->qk_norm_eps));
    VKVIT_CFG_TRY(vkvit__cfg_rope_base(p, c, "config", "rope_base", &v->rope_base));
    VKVIT_CFG_TRY(vkvit__cfg_rope_base(p, c, "config", "reg_rope_base", &v->reg_rope_base));
    VKVIT_CFG_TRY(vkvit__cfg_enum(p, c, "config", "rope_pairing", PAIRING_NAMES + 1, 2, "split_half, adjacent", &e));
    v->rope_pairing = (vkvit__rope_pairing)(e + 1);
    VKVIT_CFG_TRY(vkvit__cfg_enum(p, c, "config", "token_layout", LAYOUT_NAMES, 2,
                                  "patches_cls_regs, cls_patches_regs", &e));
    v->token_layout = (vkvit__token_layout)e;
    const bool nv = cfg->flavour == VKVIT_FLAVOUR_NVSUBQ;
    vkvit__rope_pairing want_pairing = nv ? VKVIT_ROPE_SPLIT_HALF : VKVIT_ROPE_ADJACENT;
    vkvit__token_layout want_layout = nv ? VKVIT_TOKENS_PATCHES_CLS_REGS : VKVIT_TOKENS_CLS_PATCHES_REGS;
    if (v->rope_pairing != want_pairing)
        return VKVIT_CFG_FAIL(p, "config.rope_pairing = '%s' does not match flavour %s, which needs '%s'",
                              PAIRING_NAMES[v->rope_pairing], FLAVOURS[cfg->flavour], PAIRING_NAMES[want_pairing]);
    if (v->token_layout != want_layout)
        return VKVIT_CFG_FAIL(p, "config.token_layout = '%s' does not match flavour %s, which needs '%s'",
                              LAYOUT_NAMES[v->token_layout], FLAVOURS[cfg->flavour], LAYOUT_NAMES[want_layout]);

    VKVIT_CFG_TRY(vkvit__cfg_bool(p, c, "config", "layer_scale", &v->layer_scale));
    VKVIT_CFG_TRY(vkvit__cfg_bool(p, c, "config", "grn", &v->grn));
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(c, "bias");
    if (!b) return VKVIT_CFG_FAIL(p, "config.bias is missing");
    if (!cJSON_IsObject(b))
        return VKVIT_CFG_FAIL(p, "config.bias is %s, not an object of patch_embed, qkv, proj, mlp, head",
                              vkvit__cfg_kind(b));
    VKVIT_CFG_TRY(vkvit__cfg_keys(p, b, "config.bias", BIAS_KEYS, 5));
    VKVIT_CFG_TRY(vkvit__cfg_bool(p, b, "config.bias", "patch_embed", &v->bias.patch_embed));
    VKVIT_CFG_TRY(vkvit__cfg_bool(p, b, "config.bias", "qkv", &v->bias.qkv));
    VKVIT_CFG_TRY(vkvit__cfg_bool(p, b, "config.bias", "proj", &v->bias.proj));
    VKVIT_CFG_TRY(vkvit__cfg_bool(p, b, "config.bias", "mlp", &v->bias.mlp));
    VKVIT_CFG_TRY(vkvit__cfg_bool(p, b, "config.bias", "head", &v->bias.head));
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "num_classes", 1, MAXD, &v->num_classes));

    v->num_patches = v->grid[0] * v->grid[1];
    v->num_tokens = v->num_patches + (v->has_cls ? 1u : 0u) + v->num_registers;
    cfg->image_size[0] = v->image_size[0];
    cfg->image_size[1] = v->image_size[1];
    cfg->num_classes = v->num_classes;
    return VKVIT_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
 * Tensor table: C width, P patch, R registers, dk head dim, Hd MLP hidden
 * --------------------------------------------------------------------------------------------------------------- */

static void tensors(const vkvit__model_config *cfg, vkvit__tensor_table *t) {
    const vkvit__vit5_config *v = &cfg->vit5;
    const uint64_t C = v->dim, P = v->patch_size, R = v->num_registers, dk = v->head_dim, Hd = v->mlp_hidden;
    vkvit__put(t, "patch_embed.weight", 4, C, v->in_chans, P, P);
    if (v->bias.patch_embed) vkvit__put(t, "patch_embed.bias", 1, C, 0, 0, 0);
    vkvit__put(t, "pos_embed", 3, 1, v->num_patches, C, 0);
    if (v->has_cls) vkvit__put(t, "cls_token", 3, 1, 1, C, 0);
    if (R > 0) vkvit__put(t, "reg_token", 3, 1, R, C, 0);
    for (uint32_t i = 0; i < v->depth && !t->stopped; i++) {
        vkvit__put_block(t, i, "input_norm.weight", 1, C, 0, 0);
        vkvit__put_block(t, i, "sequence_mixer.qkv.weight", 2, 3 * C, C, 0);
        if (v->bias.qkv) vkvit__put_block(t, i, "sequence_mixer.qkv.bias", 1, 3 * C, 0, 0);
        vkvit__put_block(t, i, "sequence_mixer.proj.weight", 2, C, C, 0);
        if (v->bias.proj) vkvit__put_block(t, i, "sequence_mixer.proj.bias", 1, C, 0, 0);
        if (v->qk_norm) {
            vkvit__put_block(t, i, "sequence_mixer.q_norm.weight", 1, dk, 0, 0);
            vkvit__put_block(t, i, "sequence_mixer.k_norm.weight", 1, dk, 0, 0);
        }
        if (v->grn) {
            vkvit__put_block(t, i, "grn.gamma", 1, C, 0, 0);
            vkvit__put_block(t, i, "grn.beta", 1, C, 0, 0);
        }
        vkvit__put_block(t, i, "mlp_norm.weight", 1, C, 0, 0);
        vkvit__put_block(t, i, "mlp.layer1.weight", 2, Hd, C, 0);
        if (v->bias.mlp) vkvit__put_block(t, i, "mlp.layer1.bias", 1, Hd, 0, 0);
        vkvit__put_block(t, i, "mlp.layer2.weight", 2, C, Hd, 0);
        if (v->bias.mlp) vkvit__put_block(t, i, "mlp.layer2.bias", 1, C, 0, 0);
        if (v->layer_scale) {
            vkvit__put_block(t, i, "ls_attn.gamma", 1, C, 0, 0);
            vkvit__put_block(t, i, "ls_mlp.gamma", 1, C, 0, 0);
        }
    }
    if (v->readout == VKVIT_READOUT_REGISTER_CONCAT) vkvit__put(t, "neck.weight", 2, v->neck_dim, C, 0, 0);
    vkvit__put(t, "out_norm.weight", 1, v->head_in, 0, 0, 0);
    vkvit__put(t, "out_proj.weight", 2, v->num_classes, v->head_in, 0, 0);
    if (v->bias.head) vkvit__put(t, "out_proj.bias", 1, v->num_classes, 0, 0, 0);
}

/* ---------------------------------------------------------------------------------------------------------------
 * FLOPs: ViT5ClassificationNet.flop_count, seed-literal (docs/math.md 2.7 and 8). T counts the tokens an attention
 * block sees (no Hyena padding). Submodules: RMSNorm 3·T·dim; LayerScale T·C; MLP 2·T·C·Hd + T·Hd (GELU, no GLU) +
 * 2·T·Hd·C; GRN 6·T·C. ViT5Attention: 8·T·C² (QKV 6TC² + proj 2TC²) + 4·T²·C (QKᵀ and AV) + 4·T·C (RoPE on q and
 * k) + the QK norms, counted as the literal upstream 2·3·T·dk: the shipped RMSNorm(dk) reports one head's cost, H
 * times less than the all-heads count (docs/math.md 8, 9.8). tools/vkvit_file.py holds the same formula.
 * --------------------------------------------------------------------------------------------------------------- */

static void flops(const vkvit__model_config *cfg, vkvit__flops *f) {
    const vkvit__vit5_config *v = &cfg->vit5;
    const uint64_t T = v->num_tokens, C = v->dim, dk = v->head_dim, Hd = v->mlp_hidden, Np = v->num_patches,
                   P = v->patch_size, R = v->num_registers;
    uint64_t attn = ADD(MUL(8, T, C, C), MUL(4, T, T, C), MUL(4, T, C), v->qk_norm ? MUL(2, 3, T, dk) : 0);
    uint64_t ls = v->layer_scale ? MUL(T, C) : 0;
    uint64_t mlp = ADD(MUL(2, T, C, Hd), MUL(T, Hd), MUL(2, T, Hd, C));
    f->mixer_per_block = attn;
    f->block = ADD(MUL(3, T, C),                    /* input_norm */
                   attn,                            /* sequence_mixer */
                   v->grn ? MUL(6, T, C) : 0,       /* grn */
                   ls,                              /* ls_attn */
                   MUL(3, T, C),                    /* mlp_norm */
                   mlp,                             /* mlp */
                   ls);                             /* ls_mlp */
    f->blocks = MUL(v->depth, f->block);
    f->patch_embed = MUL(2, v->in_chans, C, P, P, Np);
    f->pos_embed = MUL(Np, C);
    f->readout = v->readout == VKVIT_READOUT_GAP               ? MUL(Np, C)
                 : v->readout == VKVIT_READOUT_REGISTER_CONCAT ? MUL(R, 2, C, v->neck_dim)
                                                               : 0;
    f->out_norm = MUL(3, v->head_in);               /* out_norm.flop_count(1) */
    f->head = MUL(2, v->head_in, v->num_classes);
}

/* ---------------------------------------------------------------------------------------------------------------
 * describe (vkvit_describe_model; tools/vkvit_file.py describe() writes the same members)
 * --------------------------------------------------------------------------------------------------------------- */

static const char *token_layout_name(const vkvit__vit5_config *v) {
    return v->token_layout == VKVIT_TOKENS_PATCHES_CLS_REGS ? "patches, CLS, registers" : "CLS, patches, registers";
}

static const char *yn(bool b) { return b ? "yes" : "no"; }

static void describe(const vkvit__model_config *cfg, cJSON *o) {
    const vkvit__vit5_config *v = &cfg->vit5;
    cJSON_AddItemToObject(o, "image_size", vkvit__json_pair(v->image_size[0], v->image_size[1]));
    cJSON_AddNumberToObject(o, "patch_size", v->patch_size);
    cJSON_AddItemToObject(o, "grid", vkvit__json_pair(v->grid[0], v->grid[1]));
    cJSON_AddNumberToObject(o, "patches", v->num_patches);
    cJSON_AddNumberToObject(o, "tokens", v->num_tokens);
    cJSON_AddNumberToObject(o, "dim", v->dim);
    cJSON_AddNumberToObject(o, "depth", v->depth);
    cJSON_AddNumberToObject(o, "num_heads", v->num_heads);
    cJSON_AddNumberToObject(o, "head_dim", v->head_dim);
    cJSON_AddNumberToObject(o, "mlp_hidden", v->mlp_hidden);
    cJSON_AddNumberToObject(o, "num_registers", v->num_registers);
    cJSON_AddBoolToObject(o, "has_cls", v->has_cls);
    cJSON_AddStringToObject(o, "readout", READOUT_NAMES[v->readout]);
    cJSON_AddNumberToObject(o, "neck_dim", v->neck_dim);
    cJSON_AddNumberToObject(o, "head_in", v->head_in);
    cJSON_AddBoolToObject(o, "qk_norm", v->qk_norm);
    cJSON_AddBoolToObject(o, "layer_scale", v->layer_scale);
    cJSON_AddBoolToObject(o, "grn", v->grn);
    cJSON_AddStringToObject(o, "rope_pairing", PAIRING_NAMES[v->rope_pairing]);
    cJSON_AddStringToObject(o, "token_layout", token_layout_name(v));
    cJSON_AddStringToObject(o, "mlp_activation", "gelu");
    cJSON *bias = cJSON_AddObjectToObject(o, "bias");
    cJSON_AddBoolToObject(bias, "patch_embed", v->bias.patch_embed);
    cJSON_AddBoolToObject(bias, "qkv", v->bias.qkv);
    cJSON_AddBoolToObject(bias, "proj", v->bias.proj);
    cJSON_AddBoolToObject(bias, "mlp", v->bias.mlp);
    cJSON_AddBoolToObject(bias, "head", v->bias.head);
}

static void summary(const vkvit__model_config *cfg, cJSON *lines) {
    const vkvit__vit5_config *v = &cfg->vit5;
    vkvit__summary_line(lines, "architecture", "vit5, flavour %s (%s RoPE, tokens [%s])", FLAVOURS[cfg->flavour],
                        v->rope_pairing == VKVIT_ROPE_SPLIT_HALF ? "split_half" : "adjacent", token_layout_name(v));
    vkvit__summary_line(lines, "input", "%u x %u RGB, patch %u -> %u x %u grid = %u patches", v->image_size[0],
                        v->image_size[1], v->patch_size, v->grid[0], v->grid[1], v->num_patches);
    vkvit__summary_line(lines, "tokens", "%u (%u patches%s + %u registers)", v->num_tokens, v->num_patches,
                        v->has_cls ? " + CLS" : "", v->num_registers);
    vkvit__summary_line(lines, "width", "%u, depth %u, heads %u (head dim %u), MLP %u (gelu)", v->dim, v->depth,
                        v->num_heads, v->head_dim, v->mlp_hidden);
    vkvit__summary_line(lines, "blocks", "QK-norm %s, layer scale %s, GRN %s; biases: patch_embed %s, qkv %s, proj %s, "
                        "mlp %s, head %s", yn(v->qk_norm), yn(v->layer_scale), yn(v->grn), yn(v->bias.patch_embed),
                        yn(v->bias.qkv), yn(v->bias.proj), yn(v->bias.mlp), yn(v->bias.head));
    if (v->readout == VKVIT_READOUT_REGISTER_CONCAT)
        vkvit__summary_line(lines, "readout", "register_concat (%u registers x neck %u) -> out_norm -> out_proj "
                            "(%u -> %u)", v->num_registers, v->neck_dim, v->head_in, cfg->num_classes);
    else
        vkvit__summary_line(lines, "readout", "%s -> out_norm -> out_proj (%u -> %u)", READOUT_NAMES[v->readout],
                            v->head_in, cfg->num_classes);
}

/* ---------------------------------------------------------------------------------------------------------------
 * The row
 * --------------------------------------------------------------------------------------------------------------- */

#ifndef VKVIT_ARCH_READER_ONLY
static void build(vkvit__graph *g, const vkvit_model *m, uint32_t batch, uint32_t *input, uint32_t *condition,
                  uint32_t *output) {
    (void)condition; /* a ViT-5 takes no condition */
    vkvit__vit5_build(g, m, batch, input, output);
}

/* With qk_norm the attention reads each block's q_norm and k_norm weights side by side from the constant
 * const.blocks.{i}.qk_norm (vkvit__vit5_constants), never the file's two tensors. */
static bool host_only(const vkvit__model_config *cfg, const char *name) {
    return cfg->vit5.qk_norm && (vkvit__name_ends_with(name, "sequence_mixer.q_norm.weight") ||
                                 vkvit__name_ends_with(name, "sequence_mixer.k_norm.weight"));
}
#endif

const vkvit__arch_ops vkvit__arch_vit5 = {
    .name = "vit5",
    .flavours = FLAVOURS,
    .n_flavours = 2,
    .mixer_flops_name = "attention_per_block",
    .mixer_flops_text = "attention",
    .parse = parse,
    .tensors = tensors,
    .flops = flops,
    .describe = describe,
    .summary = summary,
    VKVIT_ARCH_RUNTIME(.constants = vkvit__vit5_constants, .host_only = host_only, .build = build,)
};
