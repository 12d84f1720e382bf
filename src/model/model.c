// SPDX-License-Identifier: Apache-2.0
/* vkvit_model: read + validate the file (model_file.c), check every tensor's values, add the architecture's constant
 * tables and lay out the two weight images (model.h); an image is made from the file's bytes and uploaded when a
 * session first needs it (less the file tensors only the constants are made of). */
#include "model/model.h"

#include "model/model_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_weight(const void *a, const void *b) {
    return strcmp(((const vkvit__weight *)a)->name, ((const vkvit__weight *)b)->name);
}

static const vkvit__weight *find_weight(const vkvit_model *m, const char *name) {
    vkvit__weight key = {.name = name};
    return bsearch(&key, m->weights, m->n_weights, sizeof key, cmp_weight);
}

bool vkvit__model_has(const vkvit_model *m, const char *name) { return find_weight(m, name) != NULL; }

static uint32_t image_of(vkvit__dtype weights) { return weights == VKVIT_ELEM_F16 ? VKVIT_IMAGE_F16 : VKVIT_IMAGE_F32; }

/* The dtype of weight w in image `image`. */
static vkvit__dtype dtype_in(const vkvit__weight *w, uint32_t image) {
    return image == VKVIT_IMAGE_F16 && w->gemm_operand ? VKVIT_ELEM_F16 : VKVIT_ELEM_F32;
}

uint32_t vkvit__model_weight(vkvit__graph *g, const vkvit_model *m, const char *name) {
    if (g->error) return VKVIT_NONE;
    const vkvit__weight *w = find_weight(m, name);
    if (!w)
        return vkvit__graph_fail(g, VKVIT_ERROR_BAD_MODEL_FILE, "model '%s' has no tensor '%s'", m->label, name);
    const uint32_t image = image_of(g->opts.weights);
    return vkvit__graph_weight_typed(g, dtype_in(w, image), w->name, w->offset[image], w->ndim, w->shape);
}

/* True for the weights image F16 holds in fp16: the GEMM operands, i.e. the 2-D file tensors and the 4-D "*.weight"
 * ones, convolution kernels [Cout, Cin, kh, kw] that the patch embeddings multiply with im2col rows as
 * [Cout, Cin kh kw] (4-D position embeddings [1, H, W, C] are not called "*.weight"). The constants (RoPE tables,
 * folds) stay fp32: no GEMM reads them. */
static bool is_gemm_operand(const char *name, uint32_t ndim) {
    const size_t len = strlen(name);
    return ndim == 2 || (ndim == 4 && len >= 7 && !strcmp(name + len - 7, ".weight"));
}

uint32_t vkvit__model_weight_rows_pair(vkvit__graph *g, const vkvit_model *m, const char *first, const char *second,
                                       const char *label) {
    if (g->error) return VKVIT_NONE;
    const vkvit__weight *a = find_weight(m, first), *b = find_weight(m, second);
    const uint32_t image = image_of(g->opts.weights);
    if (!a || !b || a->ndim != b->ndim || dtype_in(a, image) != dtype_in(b, image)) return VKVIT_NONE;
    for (uint32_t d = 1; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return VKVIT_NONE;
    const vkvit__dtype dtype = dtype_in(a, image);
    if (b->offset[image] != a->offset[image] + a->numel * vkvit__dtype_size(dtype) ||
        (uint64_t)a->shape[0] + b->shape[0] > UINT32_MAX)
        return VKVIT_NONE;
    uint32_t shape[VKVIT_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[0] = a->shape[0] + b->shape[0];
    return vkvit__graph_weight_typed(g, dtype, label, a->offset[image], a->ndim, shape);
}

uint32_t vkvit__model_weightf(vkvit__graph *g, const vkvit_model *m, const char *fmt, ...) {
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return vkvit__model_weight(g, m, name);
}

static uint64_t align_up(uint64_t x) { return (x + VKVIT_ARENA_ALIGN - 1) / VKVIT_ARENA_ALIGN * VKVIT_ARENA_ALIGN; }

/* The architecture's constant tables (src/arch/<name>.c, e.g. vit5's RoPE table); none when its row has none. */
static vkvit_result architecture_constants(const vkvit__model_file *mf, vkvit__constant **out, uint32_t *n) {
    *out = NULL;
    *n = 0;
    const vkvit__arch_ops *a = vkvit__arch_ops_of(mf->cfg.arch);
    return a->constants ? a->constants(mf, out, n) : VKVIT_OK;
}

/* follower[j] = i (and packed[i] = 1) for every file tensor i the architecture packs right after file tensor j; a
 * tensor leads at most one and a follower leads none; host-only tensors take no part. */
static void pack_followers(const vkvit__arch_ops *a, const vkvit__safetensors *st, const uint8_t *host,
                           uint32_t *follower, uint8_t *packed) {
    if (!a->packed_after) return;
    for (uint32_t i = 0; i < st->n_tensors; i++) {
        char leader[256];
        if (host[i] || !a->packed_after(st->tensors[i].name, leader, sizeof leader)) continue;
        const vkvit__st_tensor *t = vkvit__safetensors_find(st, leader);
        if (!t) continue;
        const uint32_t j = (uint32_t)(t - st->tensors);
        if (j != i && !host[j] && follower[j] == UINT32_MAX && follower[i] == UINT32_MAX && !packed[j] && !packed[i]) {
            follower[j] = i;
            packed[i] = 1;
        }
    }
}

static void free_constants(vkvit__constant *c, uint32_t n) {
    for (uint32_t i = 0; c && i < n; i++) free(c[i].data);
    free(c);
}

/* True when no value is inf or NaN: a branch-free pass the compiler vectorises (~4x the isfinite loop over ViT-5-S's
 * 88 MB), run on every weight; the caller then looks for the first bad value only when there is one. */
static bool all_finite(const float *values, uint64_t n) {
    uint32_t special = 0;
    for (uint64_t j = 0; j < n; j++) {
        uint32_t bits;
        memcpy(&bits, &values[j], 4);
        special |= (bits & 0x7f800000u) == 0x7f800000u;
    }
    return !special;
}

/* The same for fp16 or bf16 bits as stored: none has an all-ones exponent (`mask`: 0x7c00 for fp16, 0x7f80 bf16). */
static bool all_finite_16(const uint16_t *values, uint64_t n, uint32_t mask) {
    uint32_t special = 0;
    for (uint64_t j = 0; j < n; j++) special |= (values[j] & mask) == mask;
    return !special;
}

/* Non-finite weights are refused (docs/model-format.md): one NaN would turn every logit into NaN, silently. The
 * tables vkvit derives (RoPE) are checked too. `first` is values[0]'s element index in the tensor. */
static vkvit_result check_finite(const char *model, const char *tensor, const float *values, uint64_t n,
                                 uint64_t first) {
    if (all_finite(values, n)) return VKVIT_OK;
    uint64_t j = 0;
    while (j + 1 < n && isfinite(values[j])) j++;
    const char *what = isnan(values[j]) ? "NaN" : values[j] > 0 ? "+inf" : "-inf";
    return vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "model '%s': tensor '%s' holds %s at element %llu; non-finite "
                        "weights are refused", model, tensor, what, (unsigned long long)(first + j));
}

/* One image's bytes, produced window by window (for vkvit__buffer_upload_from, or to check the values only): each
 * device tensor's elements that fall in the window, from the file (or copied from a constant) in the image's dtype
 * for it; zeros between them. */
typedef struct weight_image {
    uint8_t *scratch;                       /* VKVIT_UPLOAD_WINDOW_BYTES of host memory: the window is made here, then
                                               copied, since dst may be uncached (a BAR heap) */
    const vkvit_model *m;
    const vkvit__model_file *mf;            /* m->file */
    uint32_t image;                         /* VKVIT_IMAGE_F32 / _F16 */
    bool check;                             /* refuse non-finite values (model creation's pass) */
} weight_image;

/* Elements [first, first + count) of file tensor t as they are stored (the file's fp16 tensors copied as-is). */
static vkvit_result read_stored(const vkvit__model_file *mf, const vkvit__st_tensor *t, uint64_t first, size_t count,
                                void *dst) {
    const size_t esize = vkvit__st_dtype_size(t->dtype);
    const uint64_t at = t->offset + first * esize;
    if (mf->data) {
        memcpy(dst, mf->data + at, count * esize);
        return VKVIT_OK;
    }
    vkvit_result r = vkvit__file_read_at(&mf->file, at, dst, count * esize);
    return r == VKVIT_OK ? r : vkvit__error_prefix(r, "model '%s': tensor '%s'", mf->label, t->name);
}

/* fp16 elements [e0, e1) of file tensor t (fp32 or bf16 in the file) into dst: widened to fp32 through a small buffer
 * as the fp32 image gets them, then rounded to nearest even. A value beyond the fp16 range fails: with its
 * sentence when `report`, else silently (worker threads: the caller reports). */
#define NARROW_CHUNK 2048u
static vkvit_result narrow_range(const weight_image *wi, const vkvit__weight *w, const vkvit__st_tensor *t,
                                 uint64_t e0, uint64_t e1, uint16_t *dst, bool report) {
    float buf[NARROW_CHUNK];
    for (uint64_t e = e0; e < e1; e += NARROW_CHUNK) {
        const size_t n = (size_t)VKVIT_MIN((uint64_t)NARROW_CHUNK, e1 - e);
        vkvit_result res = vkvit__model_file_read_f32(wi->mf, t, e, n, buf);
        if (res != VKVIT_OK) return res;
        if (vkvit__f32_to_f16_array(buf, dst + (e - e0), n)) continue;
        if (!report) return VKVIT_ERROR_UNSUPPORTED;
        size_t j = 0;
        while (j + 1 < n && fabsf(buf[j]) <= 65504.0f) j++;
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "model '%s': weight '%s' holds %g, outside the fp16 range; use "
                            "fp32", wi->m->label, w->name, (double)buf[j]);
    }
    return VKVIT_OK;
}

/* Makes bytes [at, at + bytes) of the image into `out`, zeros between tensors (offsets and edges are multiples of
 * the elements' sizes). A non-finite value (wi->check) or one beyond the fp16 range fails: with its sentence
 * (check_finite, narrow_range) when `report`, else silently (worker threads: the caller reports). A file that can no
 * longer be read (it shrank) fails with its sentence on this thread either way. */
static vkvit_result fill_range(const weight_image *wi, uint8_t *out, uint64_t at, uint64_t bytes, bool report) {
    memset(out, 0, (size_t)bytes);
    const vkvit_model *m = wi->m;
    const uint32_t n_file = wi->mf->st.n_tensors;
    for (uint32_t i = 0; i < m->n_weights; i++) {
        const vkvit__weight *w = &m->weights[i];
        const vkvit__dtype dtype = dtype_in(w, wi->image);
        const uint64_t es = vkvit__dtype_size(dtype), offset = w->offset[wi->image], end = offset + w->numel * es;
        if (end <= at || offset >= at + bytes) continue;
        /* elements [e0, e1) of this tensor land in the range */
        const uint64_t e0 = offset >= at ? 0 : (at - offset) / es;
        const uint64_t e1 = end <= at + bytes ? w->numel : (at + bytes - offset) / es;
        uint8_t *dst = out + (offset + e0 * es - at);
        vkvit_result res = VKVIT_OK;
        if (dtype == VKVIT_ELEM_F16) { /* a file tensor (gemm_operand) */
            const vkvit__st_tensor *t = &wi->mf->st.tensors[w->source];
            res = t->dtype == VKVIT_ST_F16 ? read_stored(wi->mf, t, e0, (size_t)(e1 - e0), dst)
                                           : narrow_range(wi, w, t, e0, e1, (uint16_t *)dst, report);
            if (res != VKVIT_OK) return res;
            continue;
        }
        if (wi->check && w->source < n_file && wi->mf->st.tensors[w->source].dtype != VKVIT_ST_F32) {
            /* the check pass on a 2-byte tensor: its bits as stored, no conversion; only a tensor holding a
             * non-finite value goes on below (converted, for the sentence) */
            const vkvit__st_tensor *t = &wi->mf->st.tensors[w->source];
            if ((res = read_stored(wi->mf, t, e0, (size_t)(e1 - e0), dst)) != VKVIT_OK) return res;
            if (all_finite_16((const uint16_t *)dst, e1 - e0, t->dtype == VKVIT_ST_F16 ? 0x7c00u : 0x7f80u)) continue;
        }
        if (w->source < n_file) { /* from the caller's bytes, or read from the file (a file that shrank fails here) */
            res = vkvit__model_file_read_f32(wi->mf, &wi->mf->st.tensors[w->source], e0, (size_t)(e1 - e0),
                                             (float *)dst);
            if (res != VKVIT_OK) return res;
        } else {
            memcpy(dst, m->consts[w->source - n_file].data + e0, (size_t)(e1 - e0) * 4);
        }
        if (!wi->check) continue;
        if (report) {
            res = check_finite(m->label, w->name, (const float *)dst, e1 - e0, e0);
            if (res != VKVIT_OK) return res;
        } else if (!all_finite((const float *)dst, e1 - e0)) {
            return VKVIT_ERROR_BAD_MODEL_FILE;
        }
    }
    return VKVIT_OK;
}

/* fill_weights splits each window into pieces of this size, read from the file (pread) and converted on up to
 * VKVIT_LOAD_THREADS threads: on the H200's machine ViT-5-S's 88 MB took 58-61 ms on one thread. */
#define FILL_PIECE_BYTES (1u << 20)
#define VKVIT_LOAD_THREADS 8
_Static_assert(VKVIT_UPLOAD_WINDOW_BYTES % FILL_PIECE_BYTES == 0, "fill_window.bad has a flag for every piece");

typedef struct fill_window {
    const weight_image *wi;
    uint8_t *window, *dst;                  /* dst NULL: the values are only checked */
    uint64_t at, bytes;
    bool bad[VKVIT_UPLOAD_WINDOW_BYTES / FILL_PIECE_BYTES]; /* per piece: a value refused */
} fill_window;

static void fill_piece(void *user, uint32_t p) {
    fill_window *f = user;
    const uint64_t off = (uint64_t)p * FILL_PIECE_BYTES, n = VKVIT_MIN((uint64_t)FILL_PIECE_BYTES, f->bytes - off);
    f->bad[p] = fill_range(f->wi, f->window + off, f->at + off, n, false) != VKVIT_OK;
    /* each piece written once, in order: what a write-combined mapping (a BAR heap) wants */
    if (!f->bad[p] && f->dst) memcpy(f->dst + off, f->window + off, (size_t)n);
}

static vkvit_result fill_weights(void *user, void *dst, uint64_t at, uint64_t bytes) {
    const weight_image *wi = user;
    if (bytes > VKVIT_UPLOAD_WINDOW_BYTES)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "fill_weights: a window of %llu bytes",
                            (unsigned long long)bytes);
    fill_window f = {.wi = wi, .window = wi->scratch, .dst = dst, .at = at, .bytes = bytes};
    const uint32_t pieces = (uint32_t)VKVIT_CEIL_DIV(bytes, FILL_PIECE_BYTES);
    vkvit__parallel_for(pieces, VKVIT_LOAD_THREADS, fill_piece, &f);
    for (uint32_t p = 0; p < pieces; p++) /* the first bad piece again, on this thread, for its sentence */
        if (f.bad[p]) {
            const uint64_t off = (uint64_t)p * FILL_PIECE_BYTES;
            vkvit_result res = fill_range(wi, f.window + off, at + off, VKVIT_MIN((uint64_t)FILL_PIECE_BYTES,
                                                                                   bytes - off), true);
            /* a file rewritten between the two reads: the piece was not copied, so this load cannot succeed */
            return res != VKVIT_OK ? res : vkvit__error(VKVIT_ERROR_IO, "model '%s': the file changed while vkvit "
                                                        "read it", wi->mf->label);
        }
    return VKVIT_OK;
}

/* Model creation's pass over the fp32 image's bytes, made window by window and dropped: every device tensor read
 * and its values checked (the file tensors only the constants are made of were checked before). */
static vkvit_result check_weights(vkvit_model *m, uint8_t *scratch) {
    const weight_image wi = {.scratch = scratch, .m = m, .mf = &m->file, .image = VKVIT_IMAGE_F32, .check = true};
    const uint64_t total = m->images[VKVIT_IMAGE_F32].bytes;
    for (uint64_t at = 0; at < total; at += VKVIT_UPLOAD_WINDOW_BYTES) {
        vkvit_result res = fill_weights((void *)&wi, NULL, at, VKVIT_MIN((uint64_t)VKVIT_UPLOAD_WINDOW_BYTES, total - at));
        if (res != VKVIT_OK) return res;
    }
    return VKVIT_OK;
}

vkvit_result vkvit_model_create(vkvit_ctx *ctx, const vkvit_model_desc *desc, vkvit_model **out) {
    vkvit__error_clear();
    if (!out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_model_create: out is NULL");
    *out = NULL;
    if (!ctx || !desc)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_model_create: ctx and desc are required");
    const uint64_t t0 = vkvit__now_ns();
    /* desc->path (kept open: read with pread when an image is made) or desc->data (copied: the model outlives the
     * caller's bytes) */
    uint8_t *copy = NULL;
    if (desc->data && !desc->path && desc->size && desc->size <= VKVIT_MODEL_MAX_FILE) {
        if (!(copy = malloc(desc->size)))
            return vkvit__ctx_fail(ctx, vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_model_create: out of host "
                                                     "memory for a copy of the model's %zu bytes", desc->size));
        memcpy(copy, desc->data, desc->size);
    }
    vkvit__model_file mf;
    vkvit_result res = vkvit__model_file_load(desc->path, copy ? copy : desc->data, desc->size, desc->label, &mf);
    if (res != VKVIT_OK) {
        free(copy);
        return vkvit__ctx_fail(ctx, res);
    }
    if (!vkvit__arch_ops_of(mf.cfg.arch)->build) { /* a row without a network (none today) */
        res = vkvit__error(VKVIT_ERROR_UNSUPPORTED, "model '%s': architecture %s is not supported yet", mf.label,
                           vkvit__arch_name(mf.cfg.arch));
        vkvit__model_file_close(&mf);
        free(copy);
        return vkvit__ctx_fail(ctx, res);
    }

    vkvit_model *m = calloc(1, sizeof *m);
    uint32_t *follower = NULL;              /* per weight: the one packed right after it (packed_after), or none */
    uint8_t *packed = NULL;                 /* per weight: 1 when it is some weight's follower */
    uint8_t *host = NULL;                   /* per weight: 1 for a file tensor that stays on the host (host_only) */
    float *scratch = NULL;                  /* the largest host-only tensor, converted and checked */
    uint8_t *window = NULL;                 /* one window of the check pass (check_weights) */
    if (!m) {
        vkvit__model_file_close(&mf);
        free(copy);
        return vkvit__ctx_fail(ctx, vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_model_create: out of host "
                                                 "memory"));
    }
    m->ctx = ctx;
    atomic_fetch_add(&ctx->borrowers, 1); /* vkvit_model_destroy (on every path from here) gives it back */
    m->file = mf; /* the model owns the file from here (and vkvit_model_destroy closes it) */
    m->file_copy = copy;
    snprintf(m->label, sizeof m->label, "%s", desc->label ? desc->label : mf.label);
    m->params = vkvit__model_param_count(&mf.cfg);
    m->flops = vkvit__model_flops(&mf.cfg);
    if (!(m->lock = vkvit__mutex_create())) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_model_create: out of host memory");
        goto fail;
    }
    if ((res = architecture_constants(&m->file, &m->consts, &m->n_consts)) != VKVIT_OK) goto fail;
    const vkvit__safetensors *st = &m->file.st;
    const vkvit__constant *consts = m->consts;
    const uint32_t n_consts = m->n_consts;

    /* Layout of each image: file tensors in name order, then the constants; each at a VKVIT_ARENA_ALIGN boundary,
     * except a tensor the architecture packs after another (vkvit__arch_ops.packed_after): it starts where that one
     * ends (both 1-D biases: fp32 in both images). */
    uint32_t n = st->n_tensors + n_consts;
    size_t names_bytes = 0;
    for (uint32_t i = 0; i < st->n_tensors; i++) names_bytes += strlen(st->tensors[i].name) + 1;
    for (uint32_t i = 0; i < n_consts; i++) names_bytes += strlen(consts[i].name) + 1;
    m->weights = calloc(n ? n : 1, sizeof *m->weights);
    m->names = malloc(names_bytes ? names_bytes : 1);
    follower = malloc((n ? n : 1) * sizeof *follower);
    packed = calloc(n ? n : 1, 1);
    host = calloc(n ? n : 1, 1);
    if (!m->weights || !m->names || !follower || !packed || !host) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_model_create: out of host memory");
        goto fail;
    }
    const vkvit__arch_ops *arch = vkvit__arch_ops_of(m->file.cfg.arch);
    uint64_t largest_host = 0;
    char *np = m->names;
    for (uint32_t i = 0; i < n; i++) {
        const char *name;
        uint32_t ndim;
        uint64_t shape[VKVIT_ST_MAX_DIMS] = {0}, numel = 1;
        if (i < st->n_tensors) {
            const vkvit__st_tensor *t = &st->tensors[i];
            name = t->name;
            ndim = t->ndim;
            memcpy(shape, t->shape, sizeof t->shape);
        } else {
            const vkvit__constant *c = &consts[i - st->n_tensors];
            name = c->name;
            ndim = c->ndim;
            for (uint32_t d = 0; d < ndim; d++) shape[d] = c->shape[d];
        }
        if (ndim > VKVIT_MAX_DIMS) { /* no architecture uses more; the reader already checked the table */
            res = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "model '%s': tensor '%s' has %u dims", m->file.label, name,
                               ndim);
            goto fail;
        }
        vkvit__weight *w = &m->weights[i];
        size_t len = strlen(name) + 1;
        memcpy(np, name, len);
        w->name = np;
        np += len;
        w->ndim = ndim ? ndim : 1;
        for (uint32_t d = 0; d < ndim; d++) {
            w->shape[d] = (uint32_t)shape[d];
            numel *= shape[d];
        }
        if (!ndim) w->shape[0] = 1;
        w->numel = numel;
        w->source = i;
        w->gemm_operand = i < st->n_tensors && is_gemm_operand(name, ndim);
        follower[i] = UINT32_MAX;
        host[i] = i < st->n_tensors && arch->host_only && arch->host_only(&m->file.cfg, name);
        if (host[i]) largest_host = VKVIT_MAX(largest_host, numel);
    }
    m->n_weights = n;
    pack_followers(arch, st, host, follower, packed);
    for (uint32_t image = 0; image < VKVIT_N_IMAGES; image++) {
        uint64_t total = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (packed[i] || host[i]) continue; /* placed with its leader / not on the device */
            vkvit__weight *w = &m->weights[i];
            w->offset[image] = total;
            uint64_t bytes = w->numel * vkvit__dtype_size(dtype_in(w, image));
            if (follower[i] != UINT32_MAX) {
                vkvit__weight *f = &m->weights[follower[i]];
                f->offset[image] = total + bytes;
                bytes += f->numel * vkvit__dtype_size(dtype_in(f, image));
            }
            total += align_up(bytes);
        }
        m->images[image].bytes = total;
    }

    /* A weight buffer the device cannot allocate is refused before the file is read (a 3 GiB file: seconds): the
     * fp32 image, the larger one. */
    const uint64_t total = m->images[VKVIT_IMAGE_F32].bytes;
    if (ctx->max_allocation && total > ctx->max_allocation) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_DEVICE_MEMORY, "model '%s': its weights need %llu bytes; the device "
                           "allows %llu bytes in one allocation", m->label, (unsigned long long)total,
                           (unsigned long long)ctx->max_allocation);
        goto fail;
    }
    scratch = malloc(largest_host ? largest_host * sizeof(float) : sizeof(float));
    window = malloc((size_t)VKVIT_MIN((uint64_t)VKVIT_UPLOAD_WINDOW_BYTES, VKVIT_MAX(total, 4u)));
    if (!scratch || !window) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "model '%s': cannot allocate %llu bytes for the weights",
                           m->file.label, (unsigned long long)(largest_host * sizeof(float) + VKVIT_UPLOAD_WINDOW_BYTES));
        goto fail;
    }
    /* The tensors that stay on the host: converted and checked here, then dropped. */
    for (uint32_t i = 0; i < st->n_tensors; i++) {
        if (!host[i]) continue;
        if ((res = vkvit__model_file_tensor_f32(&m->file, &st->tensors[i], scratch, (size_t)m->weights[i].numel)) !=
                VKVIT_OK ||
            (res = check_finite(m->label, m->weights[i].name, scratch, m->weights[i].numel, 0)) != VKVIT_OK)
            goto fail;
    }
    uint32_t kept = 0; /* the host-only tensors leave the list: nothing on the device is theirs */
    for (uint32_t i = 0; i < n; i++)
        if (!host[i]) m->weights[kept++] = m->weights[i];
    m->n_weights = kept;
    /* The device tensors: read and checked (no image is made: a session's first need makes its own) */
    if ((res = check_weights(m, window)) != VKVIT_OK) goto fail;
    qsort(m->weights, m->n_weights, sizeof *m->weights, cmp_weight);
    vkvit__ctx_log(ctx, VKVIT_LOG_INFO, "model '%s' ready in %.1f ms (%.1f MB of fp32 weights read and checked; "
                   "images of %.1f MB (fp32) and %.1f MB (fp16) made when a session needs them)", m->label,
                   vkvit__ms_since(t0), (double)total * 1e-6, (double)total * 1e-6,
                   (double)m->images[VKVIT_IMAGE_F16].bytes * 1e-6);
    free(scratch), free(window);
    free(follower), free(packed), free(host);
    m->cfg = m->file.cfg; /* take ownership of the config's strings */
    memset(&m->file.cfg, 0, sizeof m->file.cfg);
    *out = m;
    return VKVIT_OK;
fail:
    free(scratch), free(window);
    free(follower), free(packed), free(host);
    vkvit_model_destroy(m);
    return vkvit__ctx_fail(ctx, res);
}

/* Makes image `image` from the file's bytes and uploads it (m->lock held). */
static vkvit_result make_image(vkvit_model *m, uint32_t image) {
    vkvit_ctx *ctx = m->ctx;
    vkvit__weight_image *im = &m->images[image];
    const uint64_t t0 = vkvit__now_ns();
    uint8_t *window = malloc((size_t)VKVIT_MIN((uint64_t)VKVIT_UPLOAD_WINDOW_BYTES, VKVIT_MAX(im->bytes, 4u)));
    if (!window)
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "model '%s': out of host memory for its weights", m->label);
    weight_image wi = {.scratch = window, .m = m, .mf = &m->file, .image = image};
    vkvit_result res = vkvit__buffer_create(ctx, VKVIT_MAX(im->bytes, 4u), VKVIT_MEM_DEVICE,
                                            image == VKVIT_IMAGE_F16 ? "vkvit weights fp16" : "vkvit weights fp32",
                                            &im->buffer);
    if (res == VKVIT_OK) res = vkvit__buffer_upload_from(ctx, &im->buffer, 0, im->bytes, fill_weights, &wi);
    free(window);
    if (res != VKVIT_OK) {
        vkvit__buffer_destroy(ctx, &im->buffer);
        return res;
    }
    vkvit__ctx_log(ctx, VKVIT_LOG_INFO, "model '%s': %s weights made from the file and uploaded in %.1f ms (%.1f MB)",
                   m->label, image == VKVIT_IMAGE_F16 ? "fp16" : "fp32", vkvit__ms_since(t0), (double)im->bytes * 1e-6);
    return VKVIT_OK;
}

vkvit_result vkvit__model_acquire(vkvit_model *m, vkvit__dtype weights) {
    vkvit_ctx *ctx = m->ctx;
    const uint32_t image = image_of(weights);
    if (image == VKVIT_IMAGE_F16 && !ctx->info.fp16_in_use) /* storage missing, or disabled (VKVIT_DISABLE_F16 /
                                                               desc.disable_f16) */
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, ctx->info.fp16_storage
                                ? "model '%s': fp16 is disabled on device '%s' (VKVIT_DISABLE_F16 or desc.disable_f16)"
                                : "model '%s': fp16 needs storageBuffer16BitAccess, which device '%s' does not offer "
                                  "(or the host did not enable)", m->label, ctx->info.name);
    vkvit_result res = VKVIT_OK;
    vkvit__mutex_lock(m->lock);
    vkvit__weight_image *im = &m->images[image], *other = &m->images[1 - image];
    if (!im->buffer.buffer) res = make_image(m, image);
    if (res == VKVIT_OK) {
        im->sessions++;
        if (!other->sessions) vkvit__buffer_destroy(ctx, &other->buffer); /* the residency rule (model.h) */
    }
    vkvit__mutex_unlock(m->lock);
    return res;
}

void vkvit__model_release(vkvit_model *m, vkvit__dtype weights) {
    vkvit__mutex_lock(m->lock);
    vkvit__weight_image *im = &m->images[image_of(weights)];
    if (im->sessions) im->sessions--;
    vkvit__mutex_unlock(m->lock);
}

uint64_t vkvit__model_resident_bytes(vkvit_model *m) {
    uint64_t bytes = 0;
    vkvit__mutex_lock(m->lock);
    for (uint32_t i = 0; i < VKVIT_N_IMAGES; i++) bytes += m->images[i].buffer.size;
    vkvit__mutex_unlock(m->lock);
    return bytes;
}

void vkvit_model_destroy(vkvit_model *m) {
    if (!m) return;
    const unsigned sessions = atomic_load(&m->sessions);
    if (sessions) { /* they read its weights: freeing them would turn the caller's order bug into a use-after-free */
        vkvit__ctx_fail(m->ctx, vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_model_destroy '%s': %u session(s) "
                                             "of this model are alive; destroy them first (the model is left alive "
                                             "and leaked)", m->label, sessions));
        return;
    }
    vkvit_ctx *ctx = m->ctx;
    for (uint32_t i = 0; ctx && i < VKVIT_N_IMAGES; i++) vkvit__buffer_destroy(ctx, &m->images[i].buffer);
    vkvit__model_config_free(&m->cfg);
    vkvit__model_file_close(&m->file);
    free(m->file_copy);
    free_constants(m->consts, m->n_consts);
    if (m->lock) vkvit__mutex_destroy(m->lock);
    free(m->weights);
    free(m->names);
    free(m);
    if (ctx) atomic_fetch_sub(&ctx->borrowers, 1); /* last: the ctx outlives everything above */
}

vkvit_result vkvit_model_get_info(const vkvit_model *m, vkvit_model_info *out) {
    if (!m || !out) {
        vkvit_result res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_model_get_info: NULL argument");
        return m ? vkvit__ctx_fail(m->ctx, res) : res;
    }
    memset(out, 0, sizeof *out);
    const vkvit__model_config *c = &m->cfg;
    out->architecture = vkvit__arch_name(c->arch);
    out->flavour = vkvit__flavour_name(c->arch, c->flavour);
    out->name = c->name ? c->name : "";
    out->image_height = c->preprocess.image_size[0];
    out->image_width = c->preprocess.image_size[1];
    out->num_classes = vkvit__model_num_classes(c);
    out->num_labels = c->n_labels;
    out->parameters = m->params;
    out->flops = m->flops;
    out->weight_bytes = m->images[VKVIT_IMAGE_F32].bytes;
    out->resize_shorter = c->preprocess.resize_shorter;
    out->bicubic = c->preprocess.interpolation == VKVIT_INTERP_BICUBIC;
    for (int i = 0; i < 3; i++) {
        out->mean[i] = (float)c->preprocess.mean[i];
        out->std[i] = (float)c->preprocess.std[i];
    }
    return VKVIT_OK;
}

const char *vkvit_model_label(const vkvit_model *m, uint32_t i) {
    if (!m || i >= m->cfg.n_labels) return NULL;
    return m->cfg.labels[i];
}
