/* vkvit_describe_model: a model file described as JSON without a device (what `vkvit inspect` prints, and what
 * bindings want): architecture, flavour, hyperparameters, labels, preprocessing, parameter count, FLOPs, dtype
 * counts and the tensor table. Uses the model reader (src/model/), so the file is validated completely first. */
#include "common.h"
#include "model/model_file.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct summary {
    uint64_t params;                        /* from the file's tensors */
    uint32_t count[VKVIT_ST_DTYPE_COUNT];
    uint64_t data_bytes;
    vkvit__flops flops;
} summary;

/* A JSON string of s with every byte that is not part of valid UTF-8 replaced by U+FFFD, so the document is valid
 * UTF-8 whatever the file (or the path) holds. */
static cJSON *str(const char *s) {
    size_t n = strlen(s);
    char *fixed = malloc(3 * n + 1), *o = fixed;
    if (!fixed) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    while (n) {
        unsigned char c = p[0];
        size_t len = 0;
        uint32_t v = 0, min = 0;
        if (c < 0x80) len = 1, v = c;
        else if (c >= 0xC2 && c <= 0xDF) len = 2, v = c & 0x1Fu, min = 0x80;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, v = c & 0x0Fu, min = 0x800;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, v = c & 0x07u, min = 0x10000;
        bool ok = len > 0 && len <= n;
        for (size_t i = 1; ok && i < len; i++) {
            ok = (p[i] & 0xC0) == 0x80;
            v = v << 6 | (p[i] & 0x3Fu);
        }
        ok = ok && v >= min && v <= 0x10FFFF && !(v >= 0xD800 && v <= 0xDFFF);
        if (!ok) {
            memcpy(o, "\xEF\xBF\xBD", 3);
            o += 3;
            len = 1;
        } else {
            memcpy(o, p, len);
            o += len;
        }
        p += len;
        n -= len;
    }
    *o = '\0';
    cJSON *j = cJSON_CreateString(fixed);
    free(fixed);
    return j;
}

static void add_norm(cJSON *parent, const char *key, const vkvit__rn_norm_config *n) {
    cJSON *o = cJSON_AddObjectToObject(parent, key);
    cJSON_AddStringToObject(o, "kind", vkvit__rn_norm_name(n->kind));
    cJSON_AddNumberToObject(o, "eps", n->eps);
    cJSON_AddBoolToObject(o, "bias", n->bias);
}

static cJSON *pair(uint32_t a, uint32_t b) {
    const double v[2] = {a, b};
    return cJSON_CreateDoubleArray(v, 2);
}

static cJSON *describe(const char *path, const vkvit__model_file *mf, const summary *s) {
    const vkvit__model_config *c = &mf->cfg;
    const vkvit__preprocess *pp = &c->preprocess;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "file", str(path));
    cJSON_AddNumberToObject(o, "file_size", (double)mf->size);
    cJSON_AddNumberToObject(o, "format_version", c->format_version);
    cJSON_AddItemToObject(o, "name", str(c->name));
    cJSON_AddStringToObject(o, "architecture", vkvit__arch_name(c->arch));
    cJSON_AddStringToObject(o, "flavour", vkvit__flavour_name(c->flavour));
    if (c->arch == VKVIT_ARCH_VIT5) {
        const vkvit__vit5_config *v = &c->vit5;
        cJSON_AddItemToObject(o, "image_size", pair(v->image_size[0], v->image_size[1]));
        cJSON_AddNumberToObject(o, "patch_size", v->patch_size);
        cJSON_AddItemToObject(o, "grid", pair(v->grid[0], v->grid[1]));
        cJSON_AddNumberToObject(o, "patches", v->num_patches);
        cJSON_AddNumberToObject(o, "tokens", v->num_tokens);
        cJSON_AddNumberToObject(o, "dim", v->dim);
        cJSON_AddNumberToObject(o, "depth", v->depth);
        cJSON_AddNumberToObject(o, "num_heads", v->num_heads);
        cJSON_AddNumberToObject(o, "head_dim", v->head_dim);
        cJSON_AddNumberToObject(o, "mlp_hidden", v->mlp_hidden);
        cJSON_AddNumberToObject(o, "num_registers", v->num_registers);
        cJSON_AddBoolToObject(o, "has_cls", v->has_cls);
        cJSON_AddStringToObject(o, "readout", vkvit__readout_name(v->readout));
        cJSON_AddNumberToObject(o, "neck_dim", v->neck_dim);
        cJSON_AddNumberToObject(o, "head_in", v->head_in);
        cJSON_AddBoolToObject(o, "qk_norm", v->qk_norm);
        cJSON_AddBoolToObject(o, "layer_scale", v->layer_scale);
        cJSON_AddBoolToObject(o, "grn", v->grn);
        bool nv = c->flavour == VKVIT_FLAVOUR_NVSUBQ;
        cJSON_AddStringToObject(o, "rope_pairing", nv ? "split_half" : "adjacent");
        cJSON_AddStringToObject(o, "token_layout", nv ? "patches, CLS, registers" : "CLS, patches, registers");
        cJSON_AddStringToObject(o, "mlp_activation", "gelu");
        cJSON *bias = cJSON_AddObjectToObject(o, "bias");
        cJSON_AddBoolToObject(bias, "patch_embed", v->bias.patch_embed);
        cJSON_AddBoolToObject(bias, "qkv", v->bias.qkv);
        cJSON_AddBoolToObject(bias, "proj", v->bias.proj);
        cJSON_AddBoolToObject(bias, "mlp", v->bias.mlp);
        cJSON_AddBoolToObject(bias, "head", v->bias.head);
    } else if (c->arch == VKVIT_ARCH_RESNET) {
        const vkvit__resnet_config *v = &c->resnet;
        cJSON_AddItemToObject(o, "image_size", pair(v->image_size[0], v->image_size[1]));
        cJSON_AddNumberToObject(o, "patch_size", v->patch_size);
        cJSON_AddItemToObject(o, "grid", pair(v->grid[0], v->grid[1]));
        cJSON_AddNumberToObject(o, "tokens", v->num_tokens);
        cJSON_AddNumberToObject(o, "dim", v->dim);
        cJSON_AddNumberToObject(o, "depth", v->depth);
        cJSON_AddBoolToObject(o, "pos_embed", v->pos_embed);
        cJSON *blk = cJSON_AddObjectToObject(o, "block");
        cJSON_AddStringToObject(blk, "input_norm", vkvit__rn_norm_name(v->input_norm.kind));
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
        cJSON_AddStringToObject(blk, "condition_mixer_norm", vkvit__rn_norm_name(v->condition_mixer_norm.kind));
        cJSON *cm = cJSON_AddObjectToObject(blk, "condition_mixer");
        cJSON_AddStringToObject(cm, "type", v->cond.enabled ? "attention" : "identity");
        if (v->cond.enabled) {
            cJSON_AddNumberToObject(cm, "num_heads", v->cond.num_heads);
            cJSON_AddBoolToObject(cm, "qk_norm", v->cond.qk_norm);
            cJSON_AddBoolToObject(cm, "causal", v->cond.causal);
            cJSON_AddNumberToObject(cm, "head_dim", v->cond_head_dim);
        }
        cJSON_AddStringToObject(blk, "mlp_norm", vkvit__rn_norm_name(v->mlp_norm.kind));
        cJSON *mm = cJSON_AddObjectToObject(blk, "mlp");
        cJSON_AddStringToObject(mm, "type", v->mlp.enabled ? "mlp" : "identity");
        if (v->mlp.enabled) {
            cJSON_AddStringToObject(mm, "activation", vkvit__rn_activation_name(v->mlp.activation));
            cJSON_AddNumberToObject(mm, "hidden", v->mlp.hidden);
            cJSON_AddBoolToObject(mm, "bias", v->mlp.bias);
            cJSON_AddNumberToObject(mm, "glu_factor", v->mlp_glu_factor);
        }
        cJSON_AddNumberToObject(o, "condition_tokens", v->condition_tokens);
        cJSON_AddNumberToObject(o, "condition_dim", v->condition_dim);
        cJSON_AddStringToObject(o, "readout", "gap");
        cJSON_AddStringToObject(o, "out_norm", vkvit__rn_norm_name(v->out_norm.kind));
        cJSON *norms = cJSON_AddObjectToObject(o, "norms");
        add_norm(norms, "input_norm", &v->input_norm);
        add_norm(norms, "condition_mixer_norm", &v->condition_mixer_norm);
        add_norm(norms, "mlp_norm", &v->mlp_norm);
        add_norm(norms, "out_norm", &v->out_norm);
        cJSON *bias = cJSON_AddObjectToObject(o, "bias");
        cJSON_AddBoolToObject(bias, "patch_embed", v->bias.patch_embed);
        cJSON_AddBoolToObject(bias, "head", v->bias.head);
    } else {
        const vkvit__vil_config *v = &c->vil;
        cJSON_AddItemToObject(o, "image_size", pair(v->image_size[0], v->image_size[1]));
        cJSON_AddNumberToObject(o, "patch_size", v->patch_size);
        cJSON_AddItemToObject(o, "grid", pair(v->grid[0], v->grid[1]));
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
    cJSON_AddNumberToObject(o, "params", (double)s->params);
    cJSON_AddNumberToObject(o, "flops", (double)s->flops.total);
    cJSON *fb = cJSON_AddObjectToObject(o, "flops_breakdown");
    cJSON_AddNumberToObject(fb, "patch_embed", (double)s->flops.patch_embed);
    cJSON_AddNumberToObject(fb, "pos_embed", (double)s->flops.pos_embed);
    if (c->arch == VKVIT_ARCH_RESNET) {
        cJSON_AddNumberToObject(fb, "sequence_mixer_per_block", (double)s->flops.mixer_per_block);
        cJSON_AddNumberToObject(fb, "condition_mixer_per_block", (double)s->flops.cond_mixer_per_block);
    } else {
        cJSON_AddNumberToObject(fb, c->arch == VKVIT_ARCH_VIT5 ? "attention_per_block" : "cell_per_block",
                                (double)s->flops.mixer_per_block);
    }
    cJSON_AddNumberToObject(fb, "block", (double)s->flops.block);
    cJSON_AddNumberToObject(fb, "blocks", (double)s->flops.blocks);
    cJSON_AddNumberToObject(fb, "readout", (double)s->flops.readout);
    cJSON_AddNumberToObject(fb, "out_norm", (double)s->flops.out_norm);
    cJSON_AddNumberToObject(fb, "head", (double)s->flops.head);
    cJSON_AddNumberToObject(o, "num_classes", vkvit__model_num_classes(c));
    cJSON *labels = cJSON_AddArrayToObject(o, "labels");
    for (uint32_t i = 0; i < c->n_labels; i++) cJSON_AddItemToArray(labels, str(c->labels[i]));
    cJSON *p = cJSON_AddObjectToObject(o, "preprocess");
    cJSON_AddItemToObject(p, "image_size", pair(pp->image_size[0], pp->image_size[1]));
    cJSON_AddNumberToObject(p, "resize_shorter", pp->resize_shorter);
    cJSON_AddStringToObject(p, "interpolation", vkvit__interp_name(pp->interpolation));
    cJSON_AddItemToObject(p, "mean", cJSON_CreateDoubleArray(pp->mean, 3));
    cJSON_AddItemToObject(p, "std", cJSON_CreateDoubleArray(pp->std, 3));
    cJSON *t = cJSON_AddObjectToObject(o, "tensors");
    cJSON_AddNumberToObject(t, "count", mf->st.n_tensors);
    for (int d = 0; d < VKVIT_ST_DTYPE_COUNT; d++)
        cJSON_AddNumberToObject(t, vkvit__st_dtype_name((vkvit__st_dtype)d), s->count[d]);
    cJSON_AddNumberToObject(t, "data_bytes", (double)s->data_bytes);
    cJSON *list = cJSON_AddArrayToObject(t, "list");
    for (uint32_t i = 0; i < mf->st.n_tensors; i++) {
        const vkvit__st_tensor *ti = &mf->st.tensors[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "name", str(ti->name));
        cJSON_AddStringToObject(e, "dtype", vkvit__st_dtype_name(ti->dtype));
        double shape[VKVIT_ST_MAX_DIMS];
        for (uint32_t d = 0; d < ti->ndim; d++) shape[d] = (double)ti->shape[d];
        cJSON_AddItemToObject(e, "shape", cJSON_CreateDoubleArray(shape, (int)ti->ndim));
        cJSON_AddItemToArray(list, e);
    }
    return o;
}

VKVIT_API vkvit_result vkvit_describe_model(const vkvit_model_desc *desc, char **json_out) {
    if (json_out) *json_out = NULL;
    if (!desc || !json_out)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_describe_model: %s is NULL",
                            !desc ? "desc" : "json_out");
    vkvit__model_file mf; /* from desc->path or desc->data, exactly as vkvit_model_create reads it */
    vkvit_result r = vkvit__model_file_load(desc->path, desc->data, desc->size, desc->label, &mf);
    if (r != VKVIT_OK) return r;
    char name[256]; /* the model's label outlives mf (closed below) for the sentences */
    snprintf(name, sizeof name, "%s", mf.label ? mf.label : "model");
    summary s = {0};
    for (uint32_t i = 0; i < mf.st.n_tensors; i++) {
        const vkvit__st_tensor *t = &mf.st.tensors[i];
        s.params += t->numel;
        s.count[t->dtype]++;
        s.data_bytes += t->size;
    }
    vkvit__model_flops_breakdown(&mf.cfg, &s.flops);
    uint64_t formula = vkvit__model_param_count(&mf.cfg);
    if (s.params != formula) {
        /* Cannot happen once the tensor table matched; say so rather than describe a wrong number. */
        r = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "vkvit_describe_model '%s': internal inconsistency: the file's "
                         "tensors hold %llu parameters, the config's formula says %llu", name,
                         (unsigned long long)s.params, (unsigned long long)formula);
        vkvit__model_file_close(&mf);
        return r;
    }
    cJSON *doc = describe(name, &mf, &s);
    vkvit__model_file_close(&mf);
    char *text = doc ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc);
    /* A plain malloc'ed copy, so vkvit_free (free) is right whatever allocator cJSON was built with. */
    char *copy = text ? malloc(strlen(text) + 1) : NULL;
    if (copy) memcpy(copy, text, strlen(text) + 1);
    if (text) cJSON_free(text);
    if (!copy)
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_describe_model '%s': out of host memory",
                            name);
    *json_out = copy;
    return VKVIT_OK;
}

VKVIT_API void vkvit_free(void *p) { free(p); }
