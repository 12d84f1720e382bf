// SPDX-License-Identifier: Apache-2.0
/* vkvit_describe_model: a model file described as JSON without a device (what `vkvit inspect` prints, and what
 * bindings want): architecture, flavour, hyperparameters, labels, preprocessing, parameter count, FLOPs, dtype
 * counts and the tensor table. Uses the model reader (src/model/), so the file is validated completely first; the
 * hyperparameters, the names of the per-block mixer FLOPs and the summary lines (vkvit_describe_model_ex) come from
 * the architecture's row (src/arch/).
 * tools/vkvit_file.py describe() writes the same document (tests/format/test_reader_agreement.py compares them). */
#include "arch/arch_kit.h"
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
 * UTF-8 whatever the file (or the path) holds. The library's one UTF-8 repair, on its one decoder (vkvit__utf8_len,
 * src/model/safetensors.c). The CLI keeps its own (tools/cli/cli_utf8.c): it may include nothing of src/, and it
 * repairs names the library never sees (paths from argv, folder entries), with the decoder its terminal cleaning
 * needs anyway; `vkvit inspect` prints this document and needs no repair of its own. */
static cJSON *str(const char *s) {
    size_t n = strlen(s);
    char *fixed = malloc(3 * n + 1), *o = fixed;
    if (!fixed) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    while (n) {
        size_t len = p[0] < 0x80 ? 1 : vkvit__utf8_len(p, p + n);
        const bool ok = len > 0;
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

/* "summary" (VKVIT_DESCRIBE_SUMMARY): the architecture's lines of `vkvit inspect` (its row's summary) and the
 * words for the per-block FLOP terms of "flops_breakdown" that describe its block. */
static void add_summary(cJSON *o, const vkvit__model_config *c) {
    const vkvit__arch_ops *a = vkvit__arch_ops_of(c->arch);
    cJSON *sum = cJSON_AddObjectToObject(o, "summary");
    cJSON *lines = cJSON_AddArrayToObject(sum, "lines");
    if (a->summary) a->summary(c, lines);
    cJSON *terms = cJSON_AddArrayToObject(sum, "flops_per_block");
    const char *const names[2] = {a->mixer_flops_name, a->cond_mixer_flops_name};
    const char *const texts[2] = {a->mixer_flops_text, a->cond_mixer_flops_text};
    for (int i = 0; i < 2; i++) {
        if (!names[i]) continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", texts[i] ? texts[i] : names[i]);
        cJSON_AddStringToObject(e, "key", names[i]);
        cJSON_AddItemToArray(terms, e);
    }
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
    cJSON_AddStringToObject(o, "flavour", vkvit__flavour_name(c->arch, c->flavour));
    const vkvit__arch_ops *a = vkvit__arch_ops_of(c->arch);
    a->describe(c, o); /* the hyperparameters (src/arch/<name>.c) */
    cJSON_AddNumberToObject(o, "params", (double)s->params);
    cJSON_AddNumberToObject(o, "flops", (double)s->flops.total);
    cJSON *fb = cJSON_AddObjectToObject(o, "flops_breakdown");
    cJSON_AddNumberToObject(fb, "patch_embed", (double)s->flops.patch_embed);
    cJSON_AddNumberToObject(fb, "pos_embed", (double)s->flops.pos_embed);
    if (a->mixer_flops_name) cJSON_AddNumberToObject(fb, a->mixer_flops_name, (double)s->flops.mixer_per_block);
    if (a->cond_mixer_flops_name)
        cJSON_AddNumberToObject(fb, a->cond_mixer_flops_name, (double)s->flops.cond_mixer_per_block);
    cJSON_AddNumberToObject(fb, "block", (double)s->flops.block);
    cJSON_AddNumberToObject(fb, "blocks", (double)s->flops.blocks);
    cJSON_AddNumberToObject(fb, "readout", (double)s->flops.readout);
    cJSON_AddNumberToObject(fb, "out_norm", (double)s->flops.out_norm);
    cJSON_AddNumberToObject(fb, "head", (double)s->flops.head);
    cJSON_AddNumberToObject(o, "num_classes", vkvit__model_num_classes(c));
    cJSON *labels = cJSON_AddArrayToObject(o, "labels");
    for (uint32_t i = 0; i < c->n_labels; i++) cJSON_AddItemToArray(labels, str(c->labels[i]));
    cJSON *p = cJSON_AddObjectToObject(o, "preprocess");
    cJSON_AddItemToObject(p, "image_size", vkvit__json_pair(pp->image_size[0], pp->image_size[1]));
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
    return vkvit_describe_model_ex(desc, 0, json_out);
}

VKVIT_API vkvit_result vkvit_describe_model_ex(const vkvit_model_desc *desc, uint32_t flags, char **json_out) {
    if (json_out) *json_out = NULL;
    if (!desc || !json_out)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_describe_model: %s is NULL",
                            !desc ? "desc" : "json_out");
    if (!desc->path == !desc->data) /* the loader's own sentence would name vkvit_model_create */
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_describe_model: %s of desc->path and desc->data "
                            "is set; give exactly one", desc->path ? "each" : "neither");
    if (flags & ~(uint32_t)VKVIT_DESCRIBE_SUMMARY)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_describe_model_ex: unknown flags 0x%x",
                            (unsigned)(flags & ~(uint32_t)VKVIT_DESCRIBE_SUMMARY));
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
    if (doc && (flags & VKVIT_DESCRIBE_SUMMARY)) add_summary(doc, &mf.cfg);
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
