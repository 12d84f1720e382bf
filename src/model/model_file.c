// SPDX-License-Identifier: Apache-2.0
/* A vkvit model file: read -> safetensors table -> `vkvit` config -> the tensor table the config implies, checked
 * name by name and shape by shape. Also the parameter and FLOP counts (docs/math.md 8). */
#include "model/model_file.h"

#include "arch/arch_kit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------------------------
 * The tensor table (docs/model-format.md), parameter and FLOP counts: each architecture's row (src/arch/) lists its
 * tensors and counts its FLOPs; this file walks and sums.
 * --------------------------------------------------------------------------------------------------------------- */

void vkvit__put(vkvit__tensor_table *t, const char *name, uint32_t ndim, uint64_t d0, uint64_t d1, uint64_t d2,
                uint64_t d3) {
    if (t->stopped) return;
    const uint64_t shape[4] = {d0, d1, d2, d3};
    if (!t->visit(t->user, name, ndim, shape)) t->stopped = true;
}

void vkvit__put_block(vkvit__tensor_table *t, uint32_t i, const char *suffix, uint32_t ndim, uint64_t d0, uint64_t d1,
                      uint64_t d2) {
    if (t->stopped) return;
    snprintf(t->name, sizeof t->name, "blocks.%u.%s", i, suffix);
    vkvit__put(t, t->name, ndim, d0, d1, d2, 0);
}

bool vkvit__model_tensor_table(const vkvit__model_config *cfg, vkvit__tensor_visit_fn visit, void *user) {
    vkvit__tensor_table t = {visit, user, false, {0}};
    vkvit__arch_ops_of(cfg->arch)->tensors(cfg, &t);
    return !t.stopped;
}

/* Saturating arithmetic (the config limits keep real models far below 2^64; absurd ones saturate). */
uint64_t vkvit__sat_mul_n(const uint64_t *v, size_t n) {
    uint64_t r = 1;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == 0) return 0;
        r = (r > UINT64_MAX / v[i]) ? UINT64_MAX : r * v[i];
    }
    return r;
}

uint64_t vkvit__sat_add_n(const uint64_t *v, size_t n) {
    uint64_t r = 0;
    for (size_t i = 0; i < n; i++) r = (v[i] > UINT64_MAX - r) ? UINT64_MAX : r + v[i];
    return r;
}

static bool count_one(void *user, const char *name, uint32_t ndim, const uint64_t *shape) {
    (void)name;
    uint64_t *sum = user;
    *sum = ADD(*sum, vkvit__sat_mul_n(shape, ndim));
    return true;
}

uint64_t vkvit__model_param_count(const vkvit__model_config *cfg) {
    uint64_t sum = 0;
    vkvit__model_tensor_table(cfg, count_one, &sum);
    return sum;
}

void vkvit__model_flops_breakdown(const vkvit__model_config *cfg, vkvit__flops *out) {
    memset(out, 0, sizeof *out);
    vkvit__arch_ops_of(cfg->arch)->flops(cfg, out);
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
                                     vkvit__arch_name(mf->cfg.arch),
                                     vkvit__flavour_name(mf->cfg.arch, mf->cfg.flavour));
                break;
            }
        }
    }
    free(c.used);
    return c.res;
}

/* Parses the image whose first head_bytes are at `head` (all of it for a memory image) into *mf, whose label,
 * data, head and file the caller has set. */
static vkvit_result parse_image(vkvit__model_file *mf, const uint8_t *head, size_t head_bytes, size_t size,
                                const char *label) {
    size_t n = strlen(label) + 1;
    mf->label = malloc(n);
    if (!mf->label) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate a label for '%s'", label);
    memcpy(mf->label, label, n);
    mf->size = size;

    char *subject = malloc(n + 8);              /* "model '<label>'": how the reader's sentences begin */
    if (!subject) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate a label for '%s'", label);
    snprintf(subject, n + 8, "model '%s'", label);
    vkvit_result r = vkvit__safetensors_parse_head(head, head_bytes, size, subject, &mf->st);
    if (r == VKVIT_OK) {
        const char *json = vkvit__safetensors_meta(&mf->st, "vkvit");
        if (!json)
            r = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE,
                             "model '%s': __metadata__ has no 'vkvit' entry (not a vkvit model file)", label);
        else if ((r = vkvit__json_check(json, strlen(json), false, subject)) == VKVIT_OK)
            r = vkvit__model_config_parse(json, strlen(json), label, &mf->cfg);
    }
    free(subject);
    if (r == VKVIT_OK) r = check_tensors(mf);
    return r;
}

vkvit_result vkvit__model_file_parse(const uint8_t *data, size_t size, const char *label, vkvit__model_file *mf) {
    memset(mf, 0, sizeof *mf);
    mf->data = data;
    vkvit_result r = parse_image(mf, data, size, size, label);
    if (r != VKVIT_OK) vkvit__model_file_close(mf);
    return r;
}

vkvit_result vkvit__model_file_open(const char *path, vkvit__model_file *mf) {
    memset(mf, 0, sizeof *mf);
    size_t max = (uint64_t)SIZE_MAX < VKVIT_MODEL_MAX_FILE ? SIZE_MAX : (size_t)VKVIT_MODEL_MAX_FILE;
    vkvit_result r = vkvit__file_open(path, max, &mf->file);
    if (r != VKVIT_OK) return r;
    /* The length and the JSON header: what the parser reads (the tensors are read when they are converted). */
    const size_t size = (size_t)mf->file.size;
    uint8_t first8[8] = {0};
    if ((r = vkvit__file_read_at(&mf->file, 0, first8, VKVIT_MIN(size, sizeof first8))) != VKVIT_OK) {
        r = vkvit__error_prefix(r, "model '%s'", path);
        goto fail;
    }
    const size_t head_bytes = vkvit__safetensors_head_bytes(first8, size);
    mf->head = malloc(head_bytes ? head_bytes : 1);
    if (!mf->head) {
        r = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "model '%s': cannot allocate %zu bytes for the header",
                         path, head_bytes);
        goto fail;
    }
    if ((r = vkvit__file_read_at(&mf->file, 0, mf->head, head_bytes)) != VKVIT_OK) {
        r = vkvit__error_prefix(r, "model '%s'", path);
        goto fail;
    }
    if ((r = parse_image(mf, mf->head, head_bytes, size, path)) != VKVIT_OK) goto fail;
    return VKVIT_OK;
fail:
    vkvit__model_file_close(mf);
    return r;
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
    vkvit__file_close(&mf->file);
    free(mf->head);
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
    return vkvit__model_file_read_f32(mf, t, 0, count, dst);
}

vkvit_result vkvit__model_file_read_f32(const vkvit__model_file *mf, const vkvit__st_tensor *t, uint64_t first,
                                        size_t count, float *dst) {
    const size_t esize = vkvit__st_dtype_size(t->dtype);
    VKVIT_ASSERT(first <= t->numel && count <= t->numel - first);
    const uint64_t at = t->offset + first * esize;
    VKVIT_ASSERT(at + (uint64_t)count * esize <= mf->size);
    if (mf->data) { /* the caller's image */
        vkvit__st_convert_f32(t->dtype, mf->data + at, count, dst);
        return VKVIT_OK;
    }
    /* The file, read into dst itself: fp32 as it is, a 2-byte dtype into the upper half of dst's bytes, then
     * converted in place. */
    uint8_t *bytes = (uint8_t *)dst;
    vkvit_result r = vkvit__file_read_at(&mf->file, at, bytes + count * (4 - esize), count * esize);
    if (r != VKVIT_OK) return vkvit__error_prefix(r, "model '%s': tensor '%s'", mf->label, t->name);
    vkvit__st_convert_f32_in_place(t->dtype, dst, count);
    return VKVIT_OK;
}
