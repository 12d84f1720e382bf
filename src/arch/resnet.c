// SPDX-License-Identifier: Apache-2.0
/* resnet: the conditioned ClassificationResNet (seeds 002 and 003) — its `config` rules, tensor table, FLOPs,
 * description, RoPE table and network, reached through its row of the architecture table (src/arch/arch.h). The
 * network itself is src/modules/resnet.c. */
#include "arch/arch_kit.h"
#ifndef VKVIT_ARCH_READER_ONLY
#include "modules/modules.h"        /* the network builder (not in reader-only builds such as the fuzzer) */
#endif

#include <stdio.h>
#include <string.h>

static const char *const FLAVOURS[] = {"generic"};
/* Indexed by vkvit__rn_norm / vkvit__rn_activation. */
static const char *const NORM_NAMES[] = {"identity", "rmsnorm", "layernorm"};
static const char *const ACT_NAMES[] = {"relu", "gelu", "silu", "glu", "swiglu"};

/* ---------------------------------------------------------------------------------------------------------------
 * config (docs/model-format.md `resnet`)
 * --------------------------------------------------------------------------------------------------------------- */

static const char *const KEYS[] = {
    "image_size", "patch_size", "in_chans", "dim", "depth", "pos_embed", "block", "condition_tokens",
    "condition_dim", "readout", "out_norm", "bias", "num_classes",
};
static const char *const BLOCK_KEYS[] = {
    "input_norm", "sequence_mixer", "condition_mixer_norm", "condition_mixer", "mlp_norm", "mlp",
};
static const char *const BIAS_KEYS[] = {"patch_embed", "head"};

static vkvit_result parse_norm(const vkvit__cfg_parser *p, const cJSON *obj, const char *where, const char *key,
                               vkvit__rn_norm_config *out) {
    static const char *const K_ID[] = {"type"}, *const K_RMS[] = {"type", "eps"},
                             *const K_LN[] = {"type", "eps", "bias"};
    static const char *const *const NKEYS_OF[] = {K_ID, K_RMS, K_LN};
    static const int NKEYS[] = {1, 2, 3};
    char f[64];
    const cJSON *o = NULL;
    int k = 0;
    VKVIT_CFG_TRY(vkvit__cfg_typed(p, obj, where, key, NORM_NAMES, 3, "rmsnorm, layernorm, identity", NKEYS_OF,
                                   NKEYS, f, sizeof f, &o, &k));
    memset(out, 0, sizeof *out);
    out->kind = (vkvit__rn_norm)k;
    if (out->kind != VKVIT_RN_NORM_IDENTITY) VKVIT_CFG_TRY(vkvit__cfg_eps(p, o, f, "eps", &out->eps));
    if (out->kind == VKVIT_RN_NORM_LAYERNORM) VKVIT_CFG_TRY(vkvit__cfg_bool(p, o, f, "bias", &out->bias));
    return VKVIT_OK;
}

/* num_heads of an attention mixer: in [1, 65536] and dividing C; returns the head dim. */
static vkvit_result get_heads(const vkvit__cfg_parser *p, const cJSON *o, const char *f, uint32_t dim,
                              uint32_t *heads, uint32_t *head_dim) {
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, o, f, "num_heads", 1, VKVIT_MODEL_MAX_DIM, heads));
    if (dim % *heads) return VKVIT_CFG_FAIL(p, "%s.num_heads = %u does not divide config.dim = %u", f, *heads, dim);
    *head_dim = dim / *heads;
    return VKVIT_OK;
}

static vkvit_result parse_block(const vkvit__cfg_parser *p, const cJSON *b, vkvit__resnet_config *v) {
    static const char *const MIXER_NAMES[] = {"identity", "attention"};
    static const char *const MLP_NAMES[] = {"identity", "mlp"};
    static const char *const K_ID[] = {"type"};
    static const char *const K_SEQ[] = {"type", "num_heads", "qk_norm", "rope", "rope_base", "causal", "bias"};
    static const char *const K_COND[] = {"type", "num_heads", "qk_norm", "causal"};
    static const char *const K_MLP[] = {"type", "activation", "hidden", "bias"};
    static const char *const *const SEQ_KEYS[] = {K_ID, K_SEQ}, *const *const COND_KEYS[] = {K_ID, K_COND},
                                    *const *const MLP_KEYS[] = {K_ID, K_MLP};
    static const int SEQ_N[] = {1, 7}, COND_N[] = {1, 4}, MLP_N[] = {1, 4};
    const char *W = "config.block";
    char f[64];
    const cJSON *o = NULL;
    int k = 0;
    VKVIT_CFG_TRY(vkvit__cfg_keys(p, b, W, BLOCK_KEYS, (int)VKVIT_ARRAY_LEN(BLOCK_KEYS)));

    VKVIT_CFG_TRY(parse_norm(p, b, W, "input_norm", &v->input_norm));
    VKVIT_CFG_TRY(vkvit__cfg_typed(p, b, W, "sequence_mixer", MIXER_NAMES, 2, "attention, identity", SEQ_KEYS, SEQ_N,
                                   f, sizeof f, &o, &k));
    v->seq.enabled = k == 1;
    if (v->seq.enabled) {
        VKVIT_CFG_TRY(get_heads(p, o, f, v->dim, &v->seq.num_heads, &v->seq_head_dim));
        VKVIT_CFG_TRY(vkvit__cfg_bool(p, o, f, "qk_norm", &v->seq.qk_norm));
        VKVIT_CFG_TRY(vkvit__cfg_bool(p, o, f, "rope", &v->seq.rope));
        VKVIT_CFG_TRY(vkvit__cfg_rope_base(p, o, f, "rope_base", &v->seq.rope_base));
        VKVIT_CFG_TRY(vkvit__cfg_bool(p, o, f, "causal", &v->seq.causal));
        VKVIT_CFG_TRY(vkvit__cfg_bool(p, o, f, "bias", &v->seq.bias));
        if (v->seq.rope && v->seq_head_dim % 4)
            return VKVIT_CFG_FAIL(p, "%s.rope needs a head dim divisible by 4 (2-D RoPE rotates quarters), but "
                                  "config.dim / num_heads = %u / %u = %u", f, v->dim, v->seq.num_heads,
                                  v->seq_head_dim);
    }

    VKVIT_CFG_TRY(parse_norm(p, b, W, "condition_mixer_norm", &v->condition_mixer_norm));
    VKVIT_CFG_TRY(vkvit__cfg_typed(p, b, W, "condition_mixer", MIXER_NAMES, 2, "attention, identity", COND_KEYS,
                                   COND_N, f, sizeof f, &o, &k));
    v->cond.enabled = k == 1;
    if (v->cond.enabled) {
        VKVIT_CFG_TRY(get_heads(p, o, f, v->dim, &v->cond.num_heads, &v->cond_head_dim));
        VKVIT_CFG_TRY(vkvit__cfg_bool(p, o, f, "qk_norm", &v->cond.qk_norm));
        VKVIT_CFG_TRY(vkvit__cfg_bool(p, o, f, "causal", &v->cond.causal));
    }

    VKVIT_CFG_TRY(parse_norm(p, b, W, "mlp_norm", &v->mlp_norm));
    VKVIT_CFG_TRY(vkvit__cfg_typed(p, b, W, "mlp", MLP_NAMES, 2, "mlp, identity", MLP_KEYS, MLP_N, f, sizeof f, &o,
                                   &k));
    v->mlp.enabled = k == 1;
    if (v->mlp.enabled) {
        VKVIT_CFG_TRY(vkvit__cfg_enum(p, o, f, "activation", ACT_NAMES, 5, "relu, gelu, silu, glu, swiglu", &k));
        v->mlp.activation = (vkvit__rn_activation)k;
        VKVIT_CFG_TRY(vkvit__cfg_uint(p, o, f, "hidden", 1, VKVIT_MODEL_MAX_DIM, &v->mlp.hidden));
        VKVIT_CFG_TRY(vkvit__cfg_bool(p, o, f, "bias", &v->mlp.bias));
        v->mlp_glu_factor =
            (v->mlp.activation == VKVIT_RN_ACT_GLU || v->mlp.activation == VKVIT_RN_ACT_SWIGLU) ? 2u : 1u;
    }

    /* Seed 002's one-way rule: a bypassed branch has no norm. */
    const struct { bool enabled; const char *mixer, *norm; vkvit__rn_norm kind; } rule[3] = {
        {v->seq.enabled, "sequence_mixer", "input_norm", v->input_norm.kind},
        {v->cond.enabled, "condition_mixer", "condition_mixer_norm", v->condition_mixer_norm.kind},
        {v->mlp.enabled, "mlp", "mlp_norm", v->mlp_norm.kind},
    };
    for (int i = 0; i < 3; i++)
        if (!rule[i].enabled && rule[i].kind != VKVIT_RN_NORM_IDENTITY)
            return VKVIT_CFG_FAIL(p, "config.block.%s is identity, so config.block.%s must be identity too (seed "
                                  "002: a bypassed branch has no norm), not %s", rule[i].mixer, rule[i].norm,
                                  NORM_NAMES[rule[i].kind]);
    return VKVIT_OK;
}

static vkvit_result parse(const vkvit__cfg_parser *p, const cJSON *c, vkvit__model_config *cfg) {
    vkvit__resnet_config *v = &cfg->resnet;
    const uint32_t MAXD = VKVIT_MODEL_MAX_DIM;
    char f[64];
    int e = 0;
    VKVIT_CFG_TRY(vkvit__cfg_keys(p, c, "config", KEYS, (int)VKVIT_ARRAY_LEN(KEYS)));
    VKVIT_CFG_TRY(vkvit__cfg_image(p, c, v->image_size, &v->patch_size, &v->in_chans, v->grid));
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "dim", 1, MAXD, &v->dim));
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "depth", 1, MAXD, &v->depth));
    VKVIT_CFG_TRY(vkvit__cfg_bool(p, c, "config", "pos_embed", &v->pos_embed));
    const cJSON *b = NULL;
    VKVIT_CFG_TRY(vkvit__cfg_object(p, c, "config", "block", f, sizeof f, &b));
    VKVIT_CFG_TRY(parse_block(p, b, v));

    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "condition_tokens", 0, MAXD, &v->condition_tokens));
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "condition_dim", 0, MAXD, &v->condition_dim));
    if (v->cond.enabled) {
        if (v->condition_dim != v->dim)
            return VKVIT_CFG_FAIL(p, "config.condition_dim = %u must equal config.dim = %u (the condition mixer "
                                  "projects C-channel conditions, seed 003)", v->condition_dim, v->dim);
    } else if (v->condition_tokens != 0 || v->condition_dim != 0) {
        return VKVIT_CFG_FAIL(p, "config.condition_tokens = %u and config.condition_dim = %u must be 0 when "
                              "config.block.condition_mixer is identity (the network takes no condition)",
                              v->condition_tokens, v->condition_dim);
    }
    static const char *const READOUT[] = {"gap"};
    VKVIT_CFG_TRY(vkvit__cfg_enum(p, c, "config", "readout", READOUT, 1, "gap", &e));
    VKVIT_CFG_TRY(parse_norm(p, c, "config", "out_norm", &v->out_norm));
    VKVIT_CFG_TRY(vkvit__cfg_object(p, c, "config", "bias", f, sizeof f, &b));
    VKVIT_CFG_TRY(vkvit__cfg_keys(p, b, "config.bias", BIAS_KEYS, 2));
    VKVIT_CFG_TRY(vkvit__cfg_bool(p, b, "config.bias", "patch_embed", &v->bias.patch_embed));
    VKVIT_CFG_TRY(vkvit__cfg_bool(p, b, "config.bias", "head", &v->bias.head));
    VKVIT_CFG_TRY(vkvit__cfg_uint(p, c, "config", "num_classes", 1, MAXD, &v->num_classes));

    v->num_tokens = v->grid[0] * v->grid[1];
    cfg->image_size[0] = v->image_size[0];
    cfg->image_size[1] = v->image_size[1];
    cfg->num_classes = v->num_classes;
    return VKVIT_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
 * Tensor table: C width, P patch, Hd MLP hidden, gf the GLU factor
 * --------------------------------------------------------------------------------------------------------------- */

/* A norm: "<name>.weight" [C] unless identity, "<name>.bias" [C] for a layernorm with bias; block < 0: top level. */
static void put_norm(vkvit__tensor_table *t, int64_t block, const char *name, const vkvit__rn_norm_config *n,
                     uint64_t C) {
    char nm[96];
    if (n->kind == VKVIT_RN_NORM_IDENTITY || t->stopped) return;
    for (int b = 0; b < 2; b++) {
        if (b == 1 && !(n->kind == VKVIT_RN_NORM_LAYERNORM && n->bias)) break;
        snprintf(nm, sizeof nm, "%s.%s", name, b ? "bias" : "weight");
        if (block >= 0) vkvit__put_block(t, (uint32_t)block, nm, 1, C, 0, 0);
        else vkvit__put(t, nm, 1, C, 0, 0, 0);
    }
}

static void tensors(const vkvit__model_config *cfg, vkvit__tensor_table *t) {
    const vkvit__resnet_config *v = &cfg->resnet;
    const uint64_t C = v->dim, P = v->patch_size, Hd = v->mlp.hidden, gf = v->mlp_glu_factor;
    vkvit__put(t, "patch_embed.weight", 4, C, v->in_chans, P, P);
    if (v->bias.patch_embed) vkvit__put(t, "patch_embed.bias", 1, C, 0, 0, 0);
    if (v->pos_embed) vkvit__put(t, "pos_embed", 4, 1, v->grid[0], v->grid[1], C);
    for (uint32_t i = 0; i < v->depth && !t->stopped; i++) {
        put_norm(t, i, "input_norm", &v->input_norm, C);
        if (v->seq.enabled) {
            vkvit__put_block(t, i, "sequence_mixer.qkv_proj.weight", 2, 3 * C, C, 0);
            if (v->seq.bias) vkvit__put_block(t, i, "sequence_mixer.qkv_proj.bias", 1, 3 * C, 0, 0);
            vkvit__put_block(t, i, "sequence_mixer.out_proj.weight", 2, C, C, 0);
            if (v->seq.bias) vkvit__put_block(t, i, "sequence_mixer.out_proj.bias", 1, C, 0, 0);
        }
        put_norm(t, i, "condition_mixer_norm", &v->condition_mixer_norm, C);
        if (v->cond.enabled) {
            vkvit__put_block(t, i, "condition_mixer.kv_proj.weight", 2, 2 * C, C, 0);
            vkvit__put_block(t, i, "condition_mixer.q_proj.weight", 2, C, C, 0);
            vkvit__put_block(t, i, "condition_mixer.out_proj.weight", 2, C, C, 0);
        }
        put_norm(t, i, "mlp_norm", &v->mlp_norm, C);
        if (v->mlp.enabled) {
            vkvit__put_block(t, i, "mlp.layer1.weight", 2, gf * Hd, C, 0);
            if (v->mlp.bias) vkvit__put_block(t, i, "mlp.layer1.bias", 1, gf * Hd, 0, 0);
            vkvit__put_block(t, i, "mlp.layer2.weight", 2, C, Hd, 0);
            if (v->mlp.bias) vkvit__put_block(t, i, "mlp.layer2.bias", 1, C, 0, 0);
        }
    }
    put_norm(t, -1, "out_norm", &v->out_norm, C);
    vkvit__put(t, "out_proj.weight", 2, v->num_classes, C, 0, 0);
    if (v->bias.head) vkvit__put(t, "out_proj.bias", 1, v->num_classes, 0, 0, 0);
}

/* ---------------------------------------------------------------------------------------------------------------
 * FLOPs, derived (docs/math.md 8; seeds 002 / 003 define none), T = Hp·Wp, Tc = max(Tc, 1):
 *   QKVSequenceMixer 2T·C·3C + 4·T²·C (generic Attention; RoPE and the L2 norm not counted) + 2T·C²
 *   QKVConditionMixer 2T·C² (q) + 4·Tc·C² (kv) + 4·T·Tc·C (attention) + 2T·C² (out)
 *   MLP 2·T·C·gf·Hd + T·gf·Hd + 2·T·Hd·C; each norm only where its branch is active; block = sum of active branches.
 * Network: patch embed 2·in_chans·C·P²·T, pos-embed add T·C (if present), GAP T·C, out_norm(1), head 2·C·classes.
 * tools/vkvit_file.py holds the same formula.
 * --------------------------------------------------------------------------------------------------------------- */

/* A norm on T rows of width C: RMSNorm 3·T·C, LayerNorm 5·T·C, identity 0. */
static uint64_t norm_flops(const vkvit__rn_norm_config *n, uint64_t T, uint64_t C) {
    return n->kind == VKVIT_RN_NORM_RMSNORM ? MUL(3, T, C) : n->kind == VKVIT_RN_NORM_LAYERNORM ? MUL(5, T, C) : 0;
}

static void flops(const vkvit__model_config *cfg, vkvit__flops *f) {
    const vkvit__resnet_config *v = &cfg->resnet;
    const uint64_t T = v->num_tokens, C = v->dim, P = v->patch_size, Hd = v->mlp.hidden, gf = v->mlp_glu_factor,
                   Tc = v->condition_tokens ? v->condition_tokens : 1;
    uint64_t seq = 0, cond = 0, mlp = 0;
    if (v->seq.enabled) seq = ADD(MUL(2, T, C, 3, C), MUL(4, T, T, C), MUL(2, T, C, C));
    if (v->cond.enabled) cond = ADD(MUL(2, T, C, C), MUL(4, Tc, C, C), MUL(4, T, Tc, C), MUL(2, T, C, C));
    if (v->mlp.enabled) mlp = ADD(MUL(2, T, C, gf, Hd), MUL(T, gf, Hd), MUL(2, T, Hd, C));
    f->mixer_per_block = seq;
    f->cond_mixer_per_block = cond;
    f->block = ADD(v->seq.enabled ? ADD(norm_flops(&v->input_norm, T, C), seq) : 0,
                   v->cond.enabled ? ADD(norm_flops(&v->condition_mixer_norm, T, C), cond) : 0,
                   v->mlp.enabled ? ADD(norm_flops(&v->mlp_norm, T, C), mlp) : 0);
    f->blocks = MUL(v->depth, f->block);
    f->patch_embed = MUL(2, v->in_chans, C, P, P, T);
    f->pos_embed = v->pos_embed ? MUL(T, C) : 0;
    f->readout = MUL(T, C);
    f->out_norm = norm_flops(&v->out_norm, 1, C);
    f->head = MUL(2, C, v->num_classes);
}

/* ---------------------------------------------------------------------------------------------------------------
 * describe (vkvit_describe_model; tools/vkvit_file.py describe() writes the same members)
 * --------------------------------------------------------------------------------------------------------------- */

static void add_norm(cJSON *parent, const char *key, const vkvit__rn_norm_config *n) {
    cJSON *o = cJSON_AddObjectToObject(parent, key);
    cJSON_AddStringToObject(o, "kind", NORM_NAMES[n->kind]);
    cJSON_AddNumberToObject(o, "eps", n->eps);
    cJSON_AddBoolToObject(o, "bias", n->bias);
}

static void describe(const vkvit__model_config *cfg, cJSON *o) {
    const vkvit__resnet_config *v = &cfg->resnet;
    cJSON_AddItemToObject(o, "image_size", vkvit__json_pair(v->image_size[0], v->image_size[1]));
    cJSON_AddNumberToObject(o, "patch_size", v->patch_size);
    cJSON_AddItemToObject(o, "grid", vkvit__json_pair(v->grid[0], v->grid[1]));
    cJSON_AddNumberToObject(o, "tokens", v->num_tokens);
    cJSON_AddNumberToObject(o, "dim", v->dim);
    cJSON_AddNumberToObject(o, "depth", v->depth);
    cJSON_AddBoolToObject(o, "pos_embed", v->pos_embed);
    cJSON *blk = cJSON_AddObjectToObject(o, "block");
    cJSON_AddStringToObject(blk, "input_norm", NORM_NAMES[v->input_norm.kind]);
    cJSON *sm = cJSON_AddObjectToObject(blk, "sequence_mixer");
    cJSON_AddStringToObject(sm, "type", v->seq.enabled ? "attention" : "identity");
    if (v->seq.enabled) {
        cJSON_AddNumberToObject(sm, "num_heads", v->seq.num_heads);
        cJSON_AddBoolToObject(sm, "rope", v->seq.rope);
        cJSON_AddBoolToObject(sm, "qk_norm", v->seq.qk_norm);
        cJSON_AddBoolToObject(sm, "causal", v->seq.causal);
        cJSON_AddBoolToObject(sm, "bias", v->seq.bias);
        cJSON_AddNumberToObject(sm, "head_dim", v->seq_head_dim);
    }
    cJSON_AddStringToObject(blk, "condition_mixer_norm", NORM_NAMES[v->condition_mixer_norm.kind]);
    cJSON *cm = cJSON_AddObjectToObject(blk, "condition_mixer");
    cJSON_AddStringToObject(cm, "type", v->cond.enabled ? "attention" : "identity");
    if (v->cond.enabled) {
        cJSON_AddNumberToObject(cm, "num_heads", v->cond.num_heads);
        cJSON_AddBoolToObject(cm, "qk_norm", v->cond.qk_norm);
        cJSON_AddBoolToObject(cm, "causal", v->cond.causal);
        cJSON_AddNumberToObject(cm, "head_dim", v->cond_head_dim);
    }
    cJSON_AddStringToObject(blk, "mlp_norm", NORM_NAMES[v->mlp_norm.kind]);
    cJSON *mm = cJSON_AddObjectToObject(blk, "mlp");
    cJSON_AddStringToObject(mm, "type", v->mlp.enabled ? "mlp" : "identity");
    if (v->mlp.enabled) {
        cJSON_AddStringToObject(mm, "activation", ACT_NAMES[v->mlp.activation]);
        cJSON_AddNumberToObject(mm, "hidden", v->mlp.hidden);
        cJSON_AddBoolToObject(mm, "bias", v->mlp.bias);
        cJSON_AddNumberToObject(mm, "glu_factor", v->mlp_glu_factor);
    }
    cJSON_AddNumberToObject(o, "condition_tokens", v->condition_tokens);
    cJSON_AddNumberToObject(o, "condition_dim", v->condition_dim);
    cJSON_AddStringToObject(o, "readout", "gap");
    cJSON_AddStringToObject(o, "out_norm", NORM_NAMES[v->out_norm.kind]);
    cJSON *norms = cJSON_AddObjectToObject(o, "norms");
    add_norm(norms, "input_norm", &v->input_norm);
    add_norm(norms, "condition_mixer_norm", &v->condition_mixer_norm);
    add_norm(norms, "mlp_norm", &v->mlp_norm);
    add_norm(norms, "out_norm", &v->out_norm);
    cJSON *bias = cJSON_AddObjectToObject(o, "bias");
    cJSON_AddBoolToObject(bias, "patch_embed", v->bias.patch_embed);
    cJSON_AddBoolToObject(bias, "head", v->bias.head);
}

static const char *yn(bool b) { return b ? "yes" : "no"; }

/* "rmsnorm (eps 1e-06)", "layernorm (eps 1e-05, bias)", "identity" (no norm) */
static const char *norm_text(const vkvit__rn_norm_config *n, char *buf, size_t cap) {
    if (n->kind == VKVIT_RN_NORM_IDENTITY) snprintf(buf, cap, "identity");
    else snprintf(buf, cap, "%s (eps %g%s)", NORM_NAMES[n->kind], n->eps,
                  n->kind == VKVIT_RN_NORM_LAYERNORM && n->bias ? ", bias" : "");
    return buf;
}

static void summary(const vkvit__model_config *cfg, cJSON *lines) {
    const vkvit__resnet_config *v = &cfg->resnet;
    char n[48];
    vkvit__summary_line(lines, "architecture", "resnet, flavour %s (ClassificationResNet of generic ResidualBlocks)",
                        FLAVOURS[cfg->flavour]);
    vkvit__summary_line(lines, "input", "%u x %u RGB, patch %u -> %u x %u grid = %u tokens%s", v->image_size[0],
                        v->image_size[1], v->patch_size, v->grid[0], v->grid[1], v->num_tokens,
                        v->pos_embed ? " (+ pos_embed)" : "");
    vkvit__summary_line(lines, "width", "%u, depth %u (every block alike)", v->dim, v->depth);
    if (v->seq.enabled)
        vkvit__summary_line(lines, "sequence mixer", "%s -> attention, heads %u (head dim %u), RoPE %s, qk-norm %s, "
                            "causal %s, bias %s", norm_text(&v->input_norm, n, sizeof n), v->seq.num_heads,
                            v->seq_head_dim, yn(v->seq.rope), yn(v->seq.qk_norm), yn(v->seq.causal), yn(v->seq.bias));
    else
        vkvit__summary_line(lines, "sequence mixer", "identity");
    const uint32_t tc = v->condition_tokens;
    if (v->cond.enabled)
        vkvit__summary_line(lines, "condition", "%s -> cross-attention, heads %u (head dim %u), qk-norm %s, causal %s; "
                            "condition %s", norm_text(&v->condition_mixer_norm, n, sizeof n), v->cond.num_heads,
                            v->cond_head_dim, yn(v->cond.qk_norm), yn(v->cond.causal),
                            tc ? "[B, Tc, C] tokens" : "[B, C] (one global token)");
    else
        vkvit__summary_line(lines, "condition", "identity (the network takes no condition)");
    if (tc) vkvit__summary_line(lines, "", "Tc = %u condition tokens of width %u", tc, v->condition_dim);
    if (v->mlp.enabled)
        vkvit__summary_line(lines, "mlp", "%s -> MLP %u (%s%s), bias %s", norm_text(&v->mlp_norm, n, sizeof n),
                            v->mlp.hidden, ACT_NAMES[v->mlp.activation],
                            v->mlp_glu_factor == 2 ? ", layer1 doubled" : "", yn(v->mlp.bias));
    else
        vkvit__summary_line(lines, "mlp", "identity");
    vkvit__summary_line(lines, "readout", "gap -> out_norm %s -> out_proj (%u -> %u); biases: patch_embed %s, head %s",
                        norm_text(&v->out_norm, n, sizeof n), v->dim, cfg->num_classes, yn(v->bias.patch_embed),
                        yn(v->bias.head));
}

/* ---------------------------------------------------------------------------------------------------------------
 * The row
 * --------------------------------------------------------------------------------------------------------------- */

#ifndef VKVIT_ARCH_READER_ONLY
static void build(vkvit__graph *g, const vkvit_model *m, uint32_t batch, uint32_t *input, uint32_t *condition,
                  uint32_t *output) {
    vkvit__resnet_build(g, m, batch, input, condition, output);
}

/* With a one-token condition the condition mixer's output is V at every position, whatever x is: its query
 * projection and its norm are never computed (src/modules/resnet.c, vkvit__rn_condition_mixer). */
static bool host_only(const vkvit__model_config *cfg, const char *name) {
    const vkvit__resnet_config *c = &cfg->resnet;
    return c->cond.enabled && c->condition_tokens <= 1 &&
           (vkvit__name_ends_with(name, "condition_mixer.q_proj.weight") ||
            vkvit__name_ends_with(name, "condition_mixer_norm.weight") ||
            vkvit__name_ends_with(name, "condition_mixer_norm.bias"));
}
#endif

const vkvit__arch_ops vkvit__arch_resnet = {
    .name = "resnet",
    .flavours = FLAVOURS,
    .n_flavours = 1,
    .mixer_flops_name = "sequence_mixer_per_block",
    .cond_mixer_flops_name = "condition_mixer_per_block",
    .mixer_flops_text = "sequence mixer",
    .cond_mixer_flops_text = "condition mixer",
    .parse = parse,
    .tensors = tensors,
    .flops = flops,
    .describe = describe,
    .summary = summary,
    VKVIT_ARCH_RUNTIME(.constants = vkvit__resnet_constants, .host_only = host_only, .build = build,)
};
