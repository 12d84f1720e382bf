/* A vkvit model file: read -> safetensors table -> `vkvit` config -> the tensor table the config implies, checked
 * name by name and shape by shape. Also the parameter and FLOP counts (SPEC.md section 8). */
#include "model/model_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------------------------
 * The tensor table (docs/model-format.md). Shapes use the config's names: C width, P patch, R registers, dk head
 * dim, Hd MLP hidden; for vil D width, E inner dim, NH memory heads, NP = E / 4 projection heads, K conv kernel.
 * --------------------------------------------------------------------------------------------------------------- */

typedef struct table {
    vkvit__tensor_visit_fn visit;
    void *user;
    bool stopped;
    char name[128];
} table;

static void put(table *t, const char *name, uint32_t ndim, uint64_t d0, uint64_t d1, uint64_t d2, uint64_t d3) {
    if (t->stopped) return;
    const uint64_t shape[4] = {d0, d1, d2, d3};
    if (!t->visit(t->user, name, ndim, shape)) t->stopped = true;
}

/* "blocks.{i}.<suffix>" */
static void put_block(table *t, uint32_t i, const char *suffix, uint32_t ndim, uint64_t d0, uint64_t d1, uint64_t d2) {
    if (t->stopped) return;
    snprintf(t->name, sizeof t->name, "blocks.%u.%s", i, suffix);
    put(t, t->name, ndim, d0, d1, d2, 0);
}

static void vit5_table(const vkvit__vit5_config *v, table *t) {
    const uint64_t C = v->dim, P = v->patch_size, R = v->num_registers, dk = v->head_dim, Hd = v->mlp_hidden;
    put(t, "patch_embed.weight", 4, C, v->in_chans, P, P);
    if (v->bias.patch_embed) put(t, "patch_embed.bias", 1, C, 0, 0, 0);
    put(t, "pos_embed", 3, 1, v->num_patches, C, 0);
    if (v->has_cls) put(t, "cls_token", 3, 1, 1, C, 0);
    if (R > 0) put(t, "reg_token", 3, 1, R, C, 0);
    for (uint32_t i = 0; i < v->depth && !t->stopped; i++) {
        put_block(t, i, "input_norm.weight", 1, C, 0, 0);
        put_block(t, i, "sequence_mixer.qkv.weight", 2, 3 * C, C, 0);
        if (v->bias.qkv) put_block(t, i, "sequence_mixer.qkv.bias", 1, 3 * C, 0, 0);
        put_block(t, i, "sequence_mixer.proj.weight", 2, C, C, 0);
        if (v->bias.proj) put_block(t, i, "sequence_mixer.proj.bias", 1, C, 0, 0);
        if (v->qk_norm) {
            put_block(t, i, "sequence_mixer.q_norm.weight", 1, dk, 0, 0);
            put_block(t, i, "sequence_mixer.k_norm.weight", 1, dk, 0, 0);
        }
        if (v->grn) {
            put_block(t, i, "grn.gamma", 1, C, 0, 0);
            put_block(t, i, "grn.beta", 1, C, 0, 0);
        }
        put_block(t, i, "mlp_norm.weight", 1, C, 0, 0);
        put_block(t, i, "mlp.layer1.weight", 2, Hd, C, 0);
        if (v->bias.mlp) put_block(t, i, "mlp.layer1.bias", 1, Hd, 0, 0);
        put_block(t, i, "mlp.layer2.weight", 2, C, Hd, 0);
        if (v->bias.mlp) put_block(t, i, "mlp.layer2.bias", 1, C, 0, 0);
        if (v->layer_scale) {
            put_block(t, i, "ls_attn.gamma", 1, C, 0, 0);
            put_block(t, i, "ls_mlp.gamma", 1, C, 0, 0);
        }
    }
    if (v->readout == VKVIT_READOUT_REGISTER_CONCAT) put(t, "neck.weight", 2, v->neck_dim, C, 0, 0);
    put(t, "out_norm.weight", 1, v->head_in, 0, 0, 0);
    put(t, "out_proj.weight", 2, v->num_classes, v->head_in, 0, 0);
    if (v->bias.head) put(t, "out_proj.bias", 1, v->num_classes, 0, 0, 0);
}

static void vil_table(const vkvit__vil_config *v, bool seed, table *t) {
    const uint64_t D = v->dim, E = v->inner_dim, P = v->patch_size, NH = v->num_heads, NP = v->num_proj_heads,
                   bs = v->qkv_block_size;
    put(t, "patch_embed.proj.weight", 4, D, v->in_chans, P, P);
    put(t, "patch_embed.proj.bias", 1, D, 0, 0, 0);
    put(t, "pos_embed.embed", 4, 1, v->grid[0], v->grid[1], D);
    for (uint32_t i = 0; i < v->depth && !t->stopped; i++) {
        put_block(t, i, "norm1.weight", 1, D, 0, 0);
        put_block(t, i, "mlstm.proj_up.weight", 2, 2 * E, D, 0);
        put_block(t, i, "mlstm.conv1d.weight", 3, E, 1, v->conv_kernel);
        put_block(t, i, "mlstm.conv1d.bias", 1, E, 0, 0);
        put_block(t, i, "mlstm.q_proj.weight", 3, NP, bs, bs);
        put_block(t, i, "mlstm.k_proj.weight", 3, NP, bs, bs);
        put_block(t, i, "mlstm.v_proj.weight", 3, NP, bs, bs);
        put_block(t, i, "mlstm.igate.weight", 2, NH, 3 * E, 0);
        put_block(t, i, "mlstm.igate.bias", 1, NH, 0, 0);
        put_block(t, i, "mlstm.fgate.weight", 2, NH, 3 * E, 0);
        put_block(t, i, "mlstm.fgate.bias", 1, NH, 0, 0);
        put_block(t, i, "mlstm.outnorm.weight", 1, E, 0, 0);
        if (seed) put_block(t, i, "mlstm.outnorm.bias", 1, E, 0, 0);
        put_block(t, i, "mlstm.proj_down.weight", 2, D, E, 0);
        put_block(t, i, "mlstm.learnable_skip", 1, E, 0, 0);
        if (seed) put_block(t, i, "mlstm.layerscale", 1, E, 0, 0);
    }
    put(t, "legacy_norm.weight", 1, D, 0, 0, 0);
    put(t, "norm.weight", 1, D, 0, 0, 0);
    put(t, "norm.bias", 1, D, 0, 0, 0);
    put(t, "head.weight", 2, v->num_classes, D, 0, 0);
    put(t, "head.bias", 1, v->num_classes, 0, 0, 0);
}

/* A resnet norm: "<name>.weight" [C] unless identity, "<name>.bias" [C] for a layernorm with bias. */
static void put_norm(table *t, int64_t block, const char *name, const vkvit__rn_norm_config *n, uint64_t C) {
    char nm[96];
    if (n->kind == VKVIT_RN_NORM_IDENTITY || t->stopped) return;
    for (int b = 0; b < 2; b++) {
        if (b == 1 && !(n->kind == VKVIT_RN_NORM_LAYERNORM && n->bias)) break;
        snprintf(nm, sizeof nm, "%s.%s", name, b ? "bias" : "weight");
        if (block >= 0) put_block(t, (uint32_t)block, nm, 1, C, 0, 0);
        else put(t, nm, 1, C, 0, 0, 0);
    }
}

static void resnet_table(const vkvit__resnet_config *v, table *t) {
    const uint64_t C = v->dim, P = v->patch_size, Hd = v->mlp.hidden, gf = v->mlp_glu_factor;
    put(t, "patch_embed.weight", 4, C, v->in_chans, P, P);
    if (v->bias.patch_embed) put(t, "patch_embed.bias", 1, C, 0, 0, 0);
    if (v->pos_embed) put(t, "pos_embed", 4, 1, v->grid[0], v->grid[1], C);
    for (uint32_t i = 0; i < v->depth && !t->stopped; i++) {
        put_norm(t, i, "input_norm", &v->input_norm, C);
        if (v->seq.enabled) {
            put_block(t, i, "sequence_mixer.qkv_proj.weight", 2, 3 * C, C, 0);
            if (v->seq.bias) put_block(t, i, "sequence_mixer.qkv_proj.bias", 1, 3 * C, 0, 0);
            put_block(t, i, "sequence_mixer.out_proj.weight", 2, C, C, 0);
            if (v->seq.bias) put_block(t, i, "sequence_mixer.out_proj.bias", 1, C, 0, 0);
        }
        put_norm(t, i, "condition_mixer_norm", &v->condition_mixer_norm, C);
        if (v->cond.enabled) {
            put_block(t, i, "condition_mixer.kv_proj.weight", 2, 2 * C, C, 0);
            put_block(t, i, "condition_mixer.q_proj.weight", 2, C, C, 0);
            put_block(t, i, "condition_mixer.out_proj.weight", 2, C, C, 0);
        }
        put_norm(t, i, "mlp_norm", &v->mlp_norm, C);
        if (v->mlp.enabled) {
            put_block(t, i, "mlp.layer1.weight", 2, gf * Hd, C, 0);
            if (v->mlp.bias) put_block(t, i, "mlp.layer1.bias", 1, gf * Hd, 0, 0);
            put_block(t, i, "mlp.layer2.weight", 2, C, Hd, 0);
            if (v->mlp.bias) put_block(t, i, "mlp.layer2.bias", 1, C, 0, 0);
        }
    }
    put_norm(t, -1, "out_norm", &v->out_norm, C);
    put(t, "out_proj.weight", 2, v->num_classes, C, 0, 0);
    if (v->bias.head) put(t, "out_proj.bias", 1, v->num_classes, 0, 0, 0);
}

bool vkvit__model_tensor_table(const vkvit__model_config *cfg, vkvit__tensor_visit_fn visit, void *user) {
    table t = {visit, user, false, {0}};
    if (cfg->arch == VKVIT_ARCH_VIT5) vit5_table(&cfg->vit5, &t);
    else if (cfg->arch == VKVIT_ARCH_VIL) vil_table(&cfg->vil, cfg->flavour == VKVIT_FLAVOUR_SEED, &t);
    else if (cfg->arch == VKVIT_ARCH_RESNET) resnet_table(&cfg->resnet, &t);
    return !t.stopped;
}

/* ---------------------------------------------------------------------------------------------------------------
 * Counting, with saturating arithmetic (the config limits keep real models far below 2^64; absurd ones saturate)
 * --------------------------------------------------------------------------------------------------------------- */

static uint64_t sat_mul_n(const uint64_t *v, size_t n) {
    uint64_t r = 1;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == 0) return 0;
        r = (r > UINT64_MAX / v[i]) ? UINT64_MAX : r * v[i];
    }
    return r;
}
static uint64_t sat_add_n(const uint64_t *v, size_t n) {
    uint64_t r = 0;
    for (size_t i = 0; i < n; i++) r = (v[i] > UINT64_MAX - r) ? UINT64_MAX : r + v[i];
    return r;
}
#define MUL(...) sat_mul_n((const uint64_t[]){__VA_ARGS__}, sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))
#define ADD(...) sat_add_n((const uint64_t[]){__VA_ARGS__}, sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

static bool count_one(void *user, const char *name, uint32_t ndim, const uint64_t *shape) {
    (void)name;
    uint64_t *sum = user;
    *sum = ADD(*sum, sat_mul_n(shape, ndim));
    return true;
}

uint64_t vkvit__model_param_count(const vkvit__model_config *cfg) {
    uint64_t sum = 0;
    vkvit__model_tensor_table(cfg, count_one, &sum);
    return sum;
}

/* ViT5ClassificationNet.flop_count, seed-literal (SPEC.md 2.7 and 8). T counts the tokens an attention block sees
 * (no Hyena padding). Submodules: RMSNorm 3·T·dim; LayerScale T·C; MLP 2·T·C·Hd + T·Hd (GELU, no GLU) + 2·T·Hd·C;
 * GRN 6·T·C. ViT5Attention: 8·T·C² (QKV 6TC² + proj 2TC²) + 4·T²·C (QKᵀ and AV) + 4·T·C (RoPE on q and k) + the
 * QK norms, counted as the literal upstream 2·3·T·dk: the shipped RMSNorm(dk) reports one head's cost, H times less
 * than the all-heads count (SPEC.md 8, 9.8). */
static void vit5_flops(const vkvit__vit5_config *v, vkvit__flops *f) {
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

/* VisionLSTM: seed 004 has no flop_count, so this is SPEC.md 8's derived per-block count in the PARALLEL form (what
 * the seed computes), with S tokens, D, E, NH memory heads, K conv kernel, bs = qkv block size:
 *   norm1 5SD | proj_up 4SDE | causal depthwise conv 2KSE | headwise q, k, v 3·2·S·E·bs | gates 2·2·S·3E·NH
 *   | cell 4S²E + 5·NH·S² (gate matrix) | outnorm 5SE | skip, z-gate, SiLU 6SE | proj_down 2SED
 *   | layerscale SD (seed flavour only; nxai has none).
 * Network level (official v1 VisionLSTM, the same conventions as ViT-5): patch embed 2·in_chans·D·P²·S (conv bias not
 * counted), pos-embed add S·D, legacy_norm 5SD (applied to every token), bilateral_avg pooling 2D, head LayerNorm
 * 5D, head 2·D·classes. tools/vkvit_file.py flops() uses the same terms. */
static void vil_flops(const vkvit__vil_config *v, bool seed, vkvit__flops *f) {
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

/* A resnet norm on T rows of width C: RMSNorm 3·T·C, LayerNorm 5·T·C, identity 0. */
static uint64_t rn_norm_flops(const vkvit__rn_norm_config *n, uint64_t T, uint64_t C) {
    return n->kind == VKVIT_RN_NORM_RMSNORM ? MUL(3, T, C) : n->kind == VKVIT_RN_NORM_LAYERNORM ? MUL(5, T, C) : 0;
}

/* ClassificationResNet, derived counts (SPEC.md 8; seeds 002 / 003 define none), T = Hp·Wp, Tc = max(Tc, 1):
 *   QKVSequenceMixer 2T·C·3C + 4·T²·C (generic Attention; RoPE and the L2 norm not counted) + 2T·C²
 *   QKVConditionMixer 2T·C² (q) + 4·Tc·C² (kv) + 4·T·Tc·C (attention) + 2T·C² (out)
 *   MLP 2·T·C·gf·Hd + T·gf·Hd + 2·T·Hd·C; each norm only where its branch is active; block = sum of active branches.
 * Network: patch embed 2·in_chans·C·P²·T, pos-embed add T·C (if present), GAP T·C, out_norm(1), head 2·C·classes.
 * tools/vkvit_file.py flops() uses the same terms. */
static void resnet_flops(const vkvit__resnet_config *v, vkvit__flops *f) {
    const uint64_t T = v->num_tokens, C = v->dim, P = v->patch_size, Hd = v->mlp.hidden, gf = v->mlp_glu_factor,
                   Tc = v->condition_tokens ? v->condition_tokens : 1;
    uint64_t seq = 0, cond = 0, mlp = 0;
    if (v->seq.enabled) seq = ADD(MUL(2, T, C, 3, C), MUL(4, T, T, C), MUL(2, T, C, C));
    if (v->cond.enabled) cond = ADD(MUL(2, T, C, C), MUL(4, Tc, C, C), MUL(4, T, Tc, C), MUL(2, T, C, C));
    if (v->mlp.enabled) mlp = ADD(MUL(2, T, C, gf, Hd), MUL(T, gf, Hd), MUL(2, T, Hd, C));
    f->mixer_per_block = seq;
    f->cond_mixer_per_block = cond;
    f->block = ADD(v->seq.enabled ? ADD(rn_norm_flops(&v->input_norm, T, C), seq) : 0,
                   v->cond.enabled ? ADD(rn_norm_flops(&v->condition_mixer_norm, T, C), cond) : 0,
                   v->mlp.enabled ? ADD(rn_norm_flops(&v->mlp_norm, T, C), mlp) : 0);
    f->blocks = MUL(v->depth, f->block);
    f->patch_embed = MUL(2, v->in_chans, C, P, P, T);
    f->pos_embed = v->pos_embed ? MUL(T, C) : 0;
    f->readout = MUL(T, C);
    f->out_norm = rn_norm_flops(&v->out_norm, 1, C);
    f->head = MUL(2, C, v->num_classes);
}

void vkvit__model_flops_breakdown(const vkvit__model_config *cfg, vkvit__flops *out) {
    memset(out, 0, sizeof *out);
    if (cfg->arch == VKVIT_ARCH_VIT5) vit5_flops(&cfg->vit5, out);
    else if (cfg->arch == VKVIT_ARCH_VIL) vil_flops(&cfg->vil, cfg->flavour == VKVIT_FLAVOUR_SEED, out);
    else if (cfg->arch == VKVIT_ARCH_RESNET) resnet_flops(&cfg->resnet, out);
    else return;
    out->total = ADD(out->patch_embed, out->pos_embed, out->blocks, out->readout, out->out_norm, out->head);
}

uint64_t vkvit__model_flops(const vkvit__model_config *cfg) {
    vkvit__flops f;
    vkvit__model_flops_breakdown(cfg, &f);
    return f.total;
}

/* ---------------------------------------------------------------------------------------------------------------
 * The file
 * --------------------------------------------------------------------------------------------------------------- */

typedef struct checker {
    const vkvit__model_file *mf;
    bool *used;                             /* one per file tensor */
    uint32_t matched;
    vkvit_result res;
} checker;

static bool check_one(void *user, const char *name, uint32_t ndim, const uint64_t *shape) {
    checker *c = user;
    char want[256], got[256];
    const vkvit__st_tensor *t = vkvit__safetensors_find(&c->mf->st, name);
    vkvit__st_format_shape(want, sizeof want, shape, ndim);
    if (!t) {
        c->res = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "model '%s': tensor '%s' is missing (expected shape %s)",
                              c->mf->label, name, want);
        return false;
    }
    bool same = t->ndim == ndim;
    for (uint32_t i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
    if (!same) {
        c->res = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "model '%s': tensor '%s' has shape %s, expected %s",
                              c->mf->label, name, vkvit__st_format_shape(got, sizeof got, t->shape, t->ndim), want);
        return false;
    }
    c->used[t - c->mf->st.tensors] = true;
    c->matched++;
    return true;
}

/* Every expected tensor present with its shape, and nothing else. */
static vkvit_result check_tensors(const vkvit__model_file *mf) {
    const vkvit__safetensors *st = &mf->st;
    checker c = {mf, calloc(st->n_tensors ? st->n_tensors : 1, sizeof(bool)), 0, VKVIT_OK};
    if (!c.used)
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "model '%s': cannot allocate %u flags", mf->label,
                            st->n_tensors);
    vkvit__model_tensor_table(&mf->cfg, check_one, &c);
    if (c.res == VKVIT_OK && c.matched != st->n_tensors) {
        for (uint32_t i = 0; i < st->n_tensors; i++) {
            if (!c.used[i]) {
                char nm[96];
                c.res = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE,
                                     "model '%s': tensor '%s' is not used by architecture %s (flavour %s)", mf->label,
                                     vkvit__st_format_name(nm, sizeof nm, st->tensors[i].name),
                                     vkvit__arch_name(mf->cfg.arch), vkvit__flavour_name(mf->cfg.flavour));
                break;
            }
        }
    }
    free(c.used);
    return c.res;
}

vkvit_result vkvit__model_file_parse(const uint8_t *data, size_t size, const char *label, vkvit__model_file *mf) {
    memset(mf, 0, sizeof *mf);
    size_t n = strlen(label) + 1;
    mf->label = malloc(n);
    if (!mf->label) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate a label for '%s'", label);
    memcpy(mf->label, label, n);
    mf->data = data;
    mf->size = size;

    vkvit_result r = vkvit__safetensors_parse(data, size, label, &mf->st);
    if (r == VKVIT_OK) {
        const char *json = vkvit__safetensors_meta(&mf->st, "vkvit");
        if (!json)
            r = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE,
                             "model '%s': __metadata__ has no 'vkvit' entry (not a vkvit model file)", label);
        else if ((r = vkvit__json_check(json, strlen(json), false, label)) == VKVIT_OK)
            r = vkvit__model_config_parse(json, strlen(json), label, &mf->cfg);
    }
    if (r == VKVIT_OK) r = check_tensors(mf);
    if (r != VKVIT_OK) vkvit__model_file_close(mf);
    return r;
}

vkvit_result vkvit__model_file_open(const char *path, vkvit__model_file *mf) {
    memset(mf, 0, sizeof *mf);
    vkvit__file_view file;
    size_t max = (uint64_t)SIZE_MAX < VKVIT_MODEL_MAX_FILE ? SIZE_MAX : (size_t)VKVIT_MODEL_MAX_FILE;
    vkvit_result r = vkvit__map_file(path, max, &file);
    if (r != VKVIT_OK) return r;
    r = vkvit__model_file_parse(file.data, file.size, path, mf);
    if (r != VKVIT_OK) {
        vkvit__unmap_file(&file);
        return r;
    }
    mf->file = file;
    return VKVIT_OK;
}

vkvit_result vkvit__model_file_load(const char *path, const void *data, size_t size, const char *label,
                                    vkvit__model_file *mf) {
    memset(mf, 0, sizeof *mf);
    if (path && data)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_model_create: desc->path ('%s') and desc->data are "
                            "both set; give one of them", path);
    if (!path && !data)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_model_create: neither desc->path nor desc->data is "
                            "set");
    if (path) return vkvit__model_file_open(path, mf); /* sentences name a file by its path */
    const char *name = label ? label : "model in memory";
    if ((uint64_t)size > VKVIT_MODEL_MAX_FILE)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "'%s' is %zu bytes, more than the limit of %llu bytes",
                            name, size, (unsigned long long)VKVIT_MODEL_MAX_FILE);
    return vkvit__model_file_parse(data, size, name, mf);
}

void vkvit__model_file_close(vkvit__model_file *mf) {
    if (!mf) return;
    vkvit__safetensors_free(&mf->st);
    vkvit__model_config_free(&mf->cfg);
    vkvit__unmap_file(&mf->file);
    free(mf->label);
    memset(mf, 0, sizeof *mf);
}

const vkvit__st_tensor *vkvit__model_file_tensor(const vkvit__model_file *mf, const char *name) {
    return vkvit__safetensors_find(&mf->st, name);
}

vkvit_result vkvit__model_file_tensor_f32(const vkvit__model_file *mf, const vkvit__st_tensor *t, float *dst,
                                          size_t count) {
    if (t->numel != (uint64_t)count)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "model '%s': tensor '%s' has %llu elements but the buffer holds %zu floats", mf->label,
                            t->name, (unsigned long long)t->numel, count);
    VKVIT_ASSERT(t->offset + t->size <= mf->size);
    vkvit__st_convert_f32(t->dtype, mf->data + t->offset, count, dst);
    return VKVIT_OK;
}
