/* vkvit_model: read + validate the file (model_file.c), convert every tensor to fp32 into one host image, add the
 * architecture's constant tables, upload once (less the file tensors only the constants are made of). */
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

uint32_t vkvit__model_weight(vkvit__graph *g, const vkvit_model *m, const char *name) {
    if (g->error) return VKVIT_NONE;
    const vkvit__weight *w = find_weight(m, name);
    if (!w)
        return vkvit__graph_fail(g, VKVIT_ERROR_BAD_MODEL_FILE, "model '%s' has no tensor '%s'", m->label, name);
    return vkvit__graph_weight_at(g, VKVIT_TENSOR_WEIGHT, w->name, w->offset, w->ndim, w->shape);
}

/* Elements of the fp16 copy of a weight (vkvit__model_prepare_f16), 0 for none: the GEMM operands, i.e. the 2-D
 * weights and the 4-D "*.weight" tensors, convolution kernels [Cout, Cin, kh, kw] that the patch embeddings multiply
 * with im2col rows as [Cout, Cin kh kw] (4-D position embeddings [1, H, W, C] are not called "*.weight"). */
static uint64_t f16_copy_elems(const vkvit__weight *w) {
    const size_t len = strlen(w->name);
    const bool conv_kernel = w->ndim == 4 && len >= 7 && !strcmp(w->name + len - 7, ".weight");
    if (w->ndim != 2 && !conv_kernel) return 0;
    uint64_t n = 1;
    for (uint32_t d = 0; d < w->ndim; d++) n *= w->shape[d];
    return n;
}

uint32_t vkvit__model_gemm_weight(vkvit__graph *g, const vkvit_model *m, const char *name) {
    if (g->error) return VKVIT_NONE;
    if (g->opts.weights != VKVIT_ELEM_F16) return vkvit__model_weight(g, m, name);
    const vkvit__weight *w = find_weight(m, name);
    if (!w)
        return vkvit__graph_fail(g, VKVIT_ERROR_BAD_MODEL_FILE, "model '%s' has no tensor '%s'", m->label, name);
    if (!m->has_f16 || !f16_copy_elems(w))
        return vkvit__graph_fail(g, VKVIT_ERROR_INVALID_ARGUMENT, "model '%s': no fp16 copy of '%s'", m->label, name);
    return vkvit__graph_weight_at(g, VKVIT_TENSOR_WEIGHT_F16, w->name, w->offset_f16, w->ndim, w->shape);
}

uint32_t vkvit__model_gemm_weightf(vkvit__graph *g, const vkvit_model *m, const char *fmt, ...) {
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return vkvit__model_gemm_weight(g, m, name);
}

uint32_t vkvit__model_weight_rows_pair(vkvit__graph *g, const vkvit_model *m, const char *first, const char *second,
                                       const char *label) {
    if (g->error) return VKVIT_NONE;
    const vkvit__weight *a = find_weight(m, first), *b = find_weight(m, second);
    if (!a || !b || a->ndim != b->ndim) return VKVIT_NONE;
    uint64_t a_elems = 1;
    for (uint32_t d = 0; d < a->ndim; d++) {
        a_elems *= a->shape[d];
        if (d > 0 && a->shape[d] != b->shape[d]) return VKVIT_NONE;
    }
    if (b->offset != a->offset + a_elems * 4 || (uint64_t)a->shape[0] + b->shape[0] > UINT32_MAX) return VKVIT_NONE;
    uint32_t shape[VKVIT_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[0] = a->shape[0] + b->shape[0];
    return vkvit__graph_weight_at(g, VKVIT_TENSOR_WEIGHT, label, a->offset, a->ndim, shape);
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

/* The device weight buffer's bytes, produced window by window for vkvit__buffer_upload_from: each device tensor's
 * elements that fall in the window, converted from the file (or copied from a constant) and checked; zeros
 * between them. */
typedef struct weight_image {
    float *scratch;                         /* VKVIT_UPLOAD_WINDOW_BYTES of host memory: the window is converted and
                                               checked here, then copied, since dst may be uncached (a BAR heap) */
    const vkvit__model_file *mf;
    const vkvit_model *m;                   /* weights[i]: file tensor i, then the constants, with their offsets */
    const vkvit__constant *consts;
    const uint64_t *numels;
    const uint8_t *host;                    /* 1: not on the device */
    uint32_t n;
} weight_image;

/* Converts and checks the device tensors' elements in bytes [at, at + bytes) of the weight buffer into `out`, zeros
 * between them (offsets and edges are multiples of 4). A non-finite value fails: with its sentence (check_finite)
 * when `report`, else silently (worker threads: the caller reports). A file that can no longer be read (it shrank)
 * fails with its sentence on this thread either way. */
static vkvit_result fill_range(const weight_image *wi, uint8_t *out, uint64_t at, uint64_t bytes, bool report) {
    memset(out, 0, (size_t)bytes);
    const uint32_t n_file = wi->mf->st.n_tensors;
    for (uint32_t i = 0; i < wi->n; i++) {
        const vkvit__weight *w = &wi->m->weights[i];
        const uint64_t end = w->offset + wi->numels[i] * 4;
        if (wi->host[i] || end <= at || w->offset >= at + bytes) continue;
        /* elements [e0, e1) of this tensor land in the range */
        const uint64_t e0 = w->offset >= at ? 0 : (at - w->offset) / 4;
        const uint64_t e1 = end <= at + bytes ? wi->numels[i] : (at + bytes - w->offset) / 4;
        float *dst = (float *)(out + (w->offset + e0 * 4 - at));
        if (i < n_file) { /* from the caller's bytes, or read from the file (a file that shrank fails here) */
            vkvit_result res = vkvit__model_file_read_f32(wi->mf, &wi->mf->st.tensors[i], e0, (size_t)(e1 - e0), dst);
            if (res != VKVIT_OK) return res;
        } else {
            memcpy(dst, wi->consts[i - n_file].data + e0, (size_t)(e1 - e0) * 4);
        }
        if (report) {
            vkvit_result res = check_finite(wi->m->label, w->name, dst, e1 - e0, e0);
            if (res != VKVIT_OK) return res;
        } else if (!all_finite(dst, e1 - e0)) {
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
    uint8_t *window, *dst;
    uint64_t at, bytes;
    bool bad[VKVIT_UPLOAD_WINDOW_BYTES / FILL_PIECE_BYTES]; /* per piece: a non-finite value */
} fill_window;

static void fill_piece(void *user, uint32_t p) {
    fill_window *f = user;
    const uint64_t off = (uint64_t)p * FILL_PIECE_BYTES, n = VKVIT_MIN((uint64_t)FILL_PIECE_BYTES, f->bytes - off);
    f->bad[p] = fill_range(f->wi, f->window + off, f->at + off, n, false) != VKVIT_OK;
    /* each piece written once, in order: what a write-combined mapping (a BAR heap) wants */
    if (!f->bad[p]) memcpy(f->dst + off, f->window + off, (size_t)n);
}

static vkvit_result fill_weights(void *user, void *dst, uint64_t at, uint64_t bytes) {
    const weight_image *wi = user;
    if (bytes > VKVIT_UPLOAD_WINDOW_BYTES)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "fill_weights: a window of %llu bytes",
                            (unsigned long long)bytes);
    fill_window f = {.wi = wi, .window = (uint8_t *)wi->scratch, .dst = dst, .at = at, .bytes = bytes};
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

vkvit_result vkvit_model_create(vkvit_ctx *ctx, const vkvit_model_desc *desc, vkvit_model **out) {
    vkvit__error_clear();
    if (!out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_model_create: out is NULL");
    *out = NULL;
    if (!ctx || !desc)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_model_create: ctx and desc are required");
    const uint64_t t0 = vkvit__now_ns();
    vkvit__model_file mf; /* desc->path (read with pread) or desc->data (borrowed until the end of this call) */
    vkvit_result res = vkvit__model_file_load(desc->path, desc->data, desc->size, desc->label, &mf);
    if (res != VKVIT_OK) return vkvit__ctx_fail(ctx, res);
    if (!vkvit__arch_ops_of(mf.cfg.arch)->build) { /* a row without a network (none today) */
        vkvit__model_file_close(&mf);
        return vkvit__ctx_fail(ctx, vkvit__error(VKVIT_ERROR_UNSUPPORTED, "model '%s': architecture %s is not supported yet",
                                                 mf.label, vkvit__arch_name(mf.cfg.arch)));
    }

    vkvit_model *m = calloc(1, sizeof *m);
    vkvit__constant *consts = NULL;
    uint32_t n_consts = 0;
    uint64_t *numels = NULL;                /* per weight (file tensors, then constants): its element count */
    uint32_t *follower = NULL;              /* per weight: the one packed right after it (packed_after), or none */
    uint8_t *packed = NULL;                 /* per weight: 1 when it is some weight's follower */
    uint8_t *host = NULL;                   /* per weight: 1 for a file tensor that stays on the host (host_only) */
    float *scratch = NULL;                  /* the host-only tensors' values, for the checks */
    float *window = NULL;                   /* one upload window of the device weights (fill_weights) */
    if (!m) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_model_create: out of host memory");
        goto fail;
    }
    m->ctx = ctx;
    atomic_fetch_add(&ctx->borrowers, 1); /* vkvit_model_destroy (on every path from here) gives it back */
    snprintf(m->label, sizeof m->label, "%s", desc->label ? desc->label : mf.label);
    m->params = vkvit__model_param_count(&mf.cfg);
    m->flops = vkvit__model_flops(&mf.cfg);
    if ((res = architecture_constants(&mf, &consts, &n_consts)) != VKVIT_OK) goto fail;

    /* Layout: file tensors in name order, then the constants; each at a VKVIT_ARENA_ALIGN boundary, except a
     * tensor the architecture packs after another (vkvit__arch_ops.packed_after): it starts where that one ends. */
    uint32_t n = mf.st.n_tensors + n_consts;
    size_t names_bytes = 0;
    for (uint32_t i = 0; i < mf.st.n_tensors; i++) names_bytes += strlen(mf.st.tensors[i].name) + 1;
    for (uint32_t i = 0; i < n_consts; i++) names_bytes += strlen(consts[i].name) + 1;
    m->weights = calloc(n ? n : 1, sizeof *m->weights);
    m->names = malloc(names_bytes ? names_bytes : 1);
    numels = calloc(n ? n : 1, sizeof *numels);
    follower = malloc((n ? n : 1) * sizeof *follower);
    packed = calloc(n ? n : 1, 1);
    host = calloc(n ? n : 1, 1);
    if (!m->weights || !m->names || !numels || !follower || !packed || !host) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_model_create: out of host memory");
        goto fail;
    }
    const vkvit__arch_ops *arch = vkvit__arch_ops_of(mf.cfg.arch);
    uint64_t total = 0, largest_host = 0;
    char *np = m->names;
    for (uint32_t i = 0; i < n; i++) {
        const char *name;
        uint32_t ndim;
        uint64_t shape[VKVIT_ST_MAX_DIMS] = {0}, numel = 1;
        if (i < mf.st.n_tensors) {
            const vkvit__st_tensor *t = &mf.st.tensors[i];
            name = t->name;
            ndim = t->ndim;
            memcpy(shape, t->shape, sizeof t->shape);
        } else {
            const vkvit__constant *c = &consts[i - mf.st.n_tensors];
            name = c->name;
            ndim = c->ndim;
            for (uint32_t d = 0; d < ndim; d++) shape[d] = c->shape[d];
        }
        if (ndim > VKVIT_MAX_DIMS) { /* no architecture uses more; the reader already checked the table */
            res = vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "model '%s': tensor '%s' has %u dims", mf.label, name, ndim);
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
        numels[i] = numel;
        follower[i] = UINT32_MAX;
        host[i] = i < mf.st.n_tensors && arch->host_only && arch->host_only(&mf.cfg, name);
        if (host[i]) largest_host = VKVIT_MAX(largest_host, numel);
    }
    m->n_weights = n;
    pack_followers(arch, &mf.st, host, follower, packed);
    for (uint32_t i = 0; i < n; i++) {
        if (packed[i] || host[i]) continue; /* placed with its leader / not on the device */
        m->weights[i].offset = total;
        uint64_t bytes = numels[i] * 4;
        if (follower[i] != UINT32_MAX) {
            m->weights[follower[i]].offset = total + bytes;
            bytes += numels[follower[i]] * 4;
        }
        total += align_up(bytes);
    }

    /* A weight buffer the device cannot allocate is refused before the file is converted (a 3 GiB file: seconds). */
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
                           mf.label, (unsigned long long)(largest_host * sizeof(float) + VKVIT_UPLOAD_WINDOW_BYTES));
        goto fail;
    }
    /* The tensors that stay on the host: converted and checked here, then dropped. */
    for (uint32_t i = 0; i < mf.st.n_tensors; i++) {
        if (!host[i]) continue;
        if ((res = vkvit__model_file_tensor_f32(&mf, &mf.st.tensors[i], scratch, (size_t)numels[i])) != VKVIT_OK ||
            (res = check_finite(m->label, m->weights[i].name, scratch, numels[i], 0)) != VKVIT_OK)
            goto fail;
    }
    /* The device tensors: converted straight into the upload's windows (no host copy of the whole image). */
    const uint64_t t_upload = vkvit__now_ns();
    weight_image wi = {.scratch = window, .mf = &mf, .m = m, .consts = consts, .numels = numels, .host = host, .n = n};
    if ((res = vkvit__buffer_create(ctx, total, VKVIT_MEM_DEVICE, m->label, &m->buffer)) != VKVIT_OK ||
        (res = vkvit__buffer_upload_from(ctx, &m->buffer, 0, total, fill_weights, &wi)) != VKVIT_OK)
        goto fail;
    uint32_t kept = 0; /* the host-only tensors leave the list: nothing on the device is theirs */
    for (uint32_t i = 0; i < n; i++)
        if (!host[i]) m->weights[kept++] = m->weights[i];
    m->n_weights = kept;
    qsort(m->weights, m->n_weights, sizeof *m->weights, cmp_weight);
    vkvit__ctx_log(ctx, VKVIT_LOG_INFO, "model '%s' ready in %.1f ms (%.1f MB of weights, converted, checked and "
                   "uploaded in %.1f ms)",
                   m->label, vkvit__ms_since(t0), (double)total * 1e-6, vkvit__ms_since(t_upload));
    free(scratch), free(window);
    free(numels), free(follower), free(packed), free(host);
    free_constants(consts, n_consts);
    m->cfg = mf.cfg; /* take ownership of the config's strings */
    memset(&mf.cfg, 0, sizeof mf.cfg);
    vkvit__model_file_close(&mf);
    *out = m;
    return VKVIT_OK;
fail:
    free(scratch), free(window);
    free(numels), free(follower), free(packed), free(host);
    free_constants(consts, n_consts);
    vkvit__model_file_close(&mf);
    vkvit_model_destroy(m);
    return vkvit__ctx_fail(ctx, res);
}

/* A 2-D weight by its offset in the fp32 buffer: prepare_f16 walks them in buffer order. */
typedef struct placed_weight {
    uint64_t offset;
    uint32_t index;
} placed_weight;

static int cmp_offset(const void *a, const void *b) {
    const uint64_t x = ((const placed_weight *)a)->offset, y = ((const placed_weight *)b)->offset;
    return x < y ? -1 : x > y;
}

/* prepare_f16 moves neighbouring weights together, this many fp32 bytes at a time (a larger weight alone): ViT-5-S's
 * 88 MB take six downloads and six uploads, not one of each per weight, and the host buffers are reused. */
#define F16_WINDOW_BYTES (16u << 20)

/* One window of vkvit__model_prepare_f16: its weights converted on up to VKVIT_LOAD_THREADS threads, one weight each. */
typedef struct f16_window {
    const vkvit_model *m;
    const placed_weight *order;             /* the window's weights */
    const float *f32;                       /* the fp32 span from `from` */
    uint16_t *f16;                          /* the fp16 span from `from_f16` */
    uint64_t from, from_f16;
    bool *in_range;                         /* per weight: every value within fp16's range */
} f16_window;

static void convert_f16(void *user, uint32_t i) {
    const f16_window *fw = user;
    const vkvit__weight *w = &fw->m->weights[fw->order[i].index];
    fw->in_range[i] = vkvit__f32_to_f16_array(fw->f32 + (w->offset - fw->from) / 4,
                                              fw->f16 + (w->offset_f16 - fw->from_f16) / 2, (size_t)f16_copy_elems(w));
}

vkvit_result vkvit__model_prepare_f16(vkvit_model *m) {
    if (m->has_f16) return VKVIT_OK;
    vkvit_ctx *ctx = m->ctx;
    if (!ctx->info.fp16_in_use) /* storage missing, or disabled (VKVIT_DISABLE_F16 / desc.disable_f16) */
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, ctx->info.fp16_storage
                                ? "model '%s': fp16 is disabled on device '%s' (VKVIT_DISABLE_F16 or desc.disable_f16)"
                                : "model '%s': fp16 needs storageBuffer16BitAccess, which device '%s' does not offer "
                                  "(or the host did not enable)", m->label, ctx->info.name);
    vkvit_result res = VKVIT_OK;
    uint32_t n_copies = 0; /* weights with an fp16 copy (f16_copy_elems) */
    for (uint32_t i = 0; i < m->n_weights; i++) n_copies += f16_copy_elems(&m->weights[i]) > 0;
    placed_weight *order = malloc((n_copies ? n_copies : 1) * sizeof *order);
    bool *in_range = malloc(n_copies ? n_copies : 1);
    float *f32 = NULL;
    uint16_t *f16 = NULL;
    if (!order || !in_range) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "model '%s': out of host memory for the fp16 weights",
                           m->label);
        goto done;
    }
    n_copies = 0;
    for (uint32_t i = 0; i < m->n_weights; i++)
        if (f16_copy_elems(&m->weights[i])) order[n_copies++] = (placed_weight){m->weights[i].offset, i};
    qsort(order, n_copies, sizeof *order, cmp_offset);
    /* fp16 copies of the GEMM operands (f16_copy_elems), each at a VKVIT_ARENA_ALIGN boundary, in the fp32 buffer's
     * order: a window of neighbours there is one range here too. */
    uint64_t total = 0, largest = 0;
    for (uint32_t k = 0; k < n_copies; k++) {
        vkvit__weight *w = &m->weights[order[k].index];
        const uint64_t n = f16_copy_elems(w);
        w->offset_f16 = total;
        total += (n * 2 + VKVIT_ARENA_ALIGN - 1) / VKVIT_ARENA_ALIGN * VKVIT_ARENA_ALIGN;
        largest = VKVIT_MAX(largest, n);
    }
    const uint64_t window = VKVIT_MAX((uint64_t)F16_WINDOW_BYTES, largest * 4);
    f32 = malloc((size_t)window);
    f16 = malloc((size_t)(window / 2 + n_copies * VKVIT_ARENA_ALIGN)); /* the window's weights and their alignment gaps */
    if (!f32 || !f16) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "model '%s': out of host memory for the fp16 weights", m->label);
        goto done;
    }
    if ((res = vkvit__buffer_create(ctx, total, VKVIT_MEM_DEVICE, "vkvit weights fp16", &m->buffer_f16)) != VKVIT_OK)
        goto done;
    for (uint32_t first = 0, last; first < n_copies; first = last) {
        /* weights first .. last-1: one download of their fp32 span, one upload of their fp16 span */
        const vkvit__weight *head = &m->weights[order[first].index];
        const uint64_t from = head->offset, from_f16 = head->offset_f16;
        uint64_t to = from, to_f16 = from_f16;
        for (last = first; last < n_copies; last++) {
            const vkvit__weight *w = &m->weights[order[last].index];
            const uint64_t n = f16_copy_elems(w);
            if (last > first && w->offset + n * 4 - from > window) break;
            to = VKVIT_MAX(to, w->offset + n * 4);
            to_f16 = w->offset_f16 + (n * 2 + VKVIT_ARENA_ALIGN - 1) / VKVIT_ARENA_ALIGN * VKVIT_ARENA_ALIGN;
        }
        if ((res = vkvit__buffer_download(ctx, &m->buffer, from, f32, to - from)) != VKVIT_OK) goto done;
        memset(f16, 0, (size_t)(to_f16 - from_f16)); /* the alignment gaps, the last one's included */
        f16_window fw = {.m = m, .order = order + first, .f32 = f32, .f16 = f16, .from = from, .from_f16 = from_f16,
                         .in_range = in_range};
        vkvit__parallel_for(last - first, VKVIT_LOAD_THREADS, convert_f16, &fw);
        for (uint32_t k = first; k < last; k++) {
            if (in_range[k - first]) continue;
            const vkvit__weight *w = &m->weights[order[k].index];
            const uint64_t n = f16_copy_elems(w);
            const float *src = f32 + (w->offset - from) / 4;
            uint64_t j = 0;
            while (j + 1 < n && fabsf(src[j]) <= 65504.0f) j++;
            res = vkvit__error(VKVIT_ERROR_UNSUPPORTED, "model '%s': weight '%s' holds %g, outside the fp16 range; "
                               "use fp32", m->label, w->name, (double)src[j]);
            goto done;
        }
        if ((res = vkvit__buffer_upload(ctx, &m->buffer_f16, from_f16, f16, to_f16 - from_f16)) != VKVIT_OK) goto done;
    }
    m->has_f16 = true;
done:
    if (!m->has_f16) vkvit__buffer_destroy(ctx, &m->buffer_f16);
    free(order);
    free(in_range);
    free(f32);
    free(f16);
    return res;
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
    if (ctx) vkvit__buffer_destroy(ctx, &m->buffer);
    if (ctx) vkvit__buffer_destroy(ctx, &m->buffer_f16);
    vkvit__model_config_free(&m->cfg);
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
    out->weight_bytes = m->buffer.size;
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
