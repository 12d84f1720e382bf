// SPDX-License-Identifier: Apache-2.0
/* The `vkvit` metadata entry -> vkvit__model_config, with every rule of docs/model-format.md checked. Each failure
 * is one sentence that names the field and the numbers involved. This file holds what every architecture shares
 * (format_version, architecture, flavour, name, preprocess, labels, and the strict JSON getters of
 * src/arch/arch_kit.h); each architecture's `config` rules are in its file under src/arch/, reached through its row. */
#include "model/config.h"

#include "arch/arch_kit.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------------------------
 * Error sentences and typed getters
 * --------------------------------------------------------------------------------------------------------------- */

typedef vkvit__cfg_parser parser;

vkvit_result vkvit__cfg_error(const parser *p, vkvit_result code, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return vkvit__error(code, "model '%s': %s", p->label, msg);
}
#define BAD(p, ...) VKVIT_CFG_FAIL(p, __VA_ARGS__)

/* 's' quoted for a sentence: at most 40 printable ASCII characters, "..." when cut. */
static const char *quote(const char *s, char *buf, size_t cap) {
    size_t i = 0, n = strlen(s);
    buf[0] = '\'';
    for (; i < n && i < 40 && i + 6 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        buf[i + 1] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    snprintf(buf + i + 1, cap - i - 1, "%s'", i < n ? "..." : "");
    return buf;
}

/* What a JSON value is, for a sentence. */
static const char *describe(const cJSON *v, char *buf, size_t cap) {
    if (v == NULL) return "missing";
    if (cJSON_IsNumber(v)) {
        snprintf(buf, cap, "%.15g", v->valuedouble);
        return buf;
    }
    if (cJSON_IsString(v)) return quote(v->valuestring, buf, cap);
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v) ? "true" : "false";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    return "invalid";
}

const char *vkvit__cfg_kind(const cJSON *v) {
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    return "invalid";
}

static bool is_finite(double d) { return d == d && d - d == 0.0; }

/* Finite with no fractional part. Every double of magnitude >= 2^52 is integral; below that the cast is exact. */
static bool is_integral(double d) {
    if (!is_finite(d)) return false;
    if (d >= 4503599627370496.0 || d <= -4503599627370496.0) return true;
    return d == (double)(int64_t)d;
}

/* "where.key", or "key" at the top level (where == ""). */
static const char *field(char *buf, size_t cap, const char *where, const char *key) {
    snprintf(buf, cap, "%s%s%s", where, *where ? "." : "", key);
    return buf;
}

/* A JSON number with an integral value in [lo, hi]. */
vkvit_result vkvit__cfg_uint(const parser *p, const cJSON *obj, const char *where, const char *key, uint32_t lo,
                             uint32_t hi, uint32_t *out) {
    char a[64], f[96];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    field(f, sizeof f, where, key);
    if (!v) return BAD(p, "%s is missing", f);
    if (!cJSON_IsNumber(v)) return BAD(p, "%s is %s, not an integer", f, vkvit__cfg_kind(v));
    double d = v->valuedouble;
    if (!is_integral(d)) return BAD(p, "%s = %s is not an integer", f, describe(v, a, sizeof a));
    if (d < (double)lo || d > (double)hi)
        return BAD(p, "%s = %s is out of range [%u, %u]", f, describe(v, a, sizeof a), lo, hi);
    *out = (uint32_t)d;
    return VKVIT_OK;
}

vkvit_result vkvit__cfg_bool(const parser *p, const cJSON *obj, const char *where, const char *key, bool *out) {
    char f[96];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    field(f, sizeof f, where, key);
    if (!v) return BAD(p, "%s is missing", f);
    if (!cJSON_IsBool(v)) return BAD(p, "%s is %s, not true or false", f, vkvit__cfg_kind(v));
    *out = cJSON_IsTrue(v);
    return VKVIT_OK;
}

/* A finite JSON number > 0. */
static vkvit_result get_positive(const parser *p, const cJSON *obj, const char *where, const char *key,
                                 double *out) {
    char a[64], f[96];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    field(f, sizeof f, where, key);
    if (!v) return BAD(p, "%s is missing", f);
    if (!cJSON_IsNumber(v)) return BAD(p, "%s is %s, not a number", f, vkvit__cfg_kind(v));
    if (!is_finite(v->valuedouble) || !(v->valuedouble > 0.0))
        return BAD(p, "%s = %s is not a positive finite number", f, describe(v, a, sizeof a));
    *out = v->valuedouble;
    return VKVIT_OK;
}

/* Ranges of the real-valued hyperparameters (docs/model-format.md, "Limits"): every eps is in [1e-30, 1] and
 * every RoPE base in [1, 1e12]. Outside them a norm or RoPE table is degenerate (an eps of 1e300 makes every
 * normalised value 0, a base of 1e-300 overflows the angle), so the file is refused at load with one sentence. */
#define VKVIT_EPS_MIN 1e-30
#define VKVIT_EPS_MAX 1.0
#define VKVIT_ROPE_BASE_MIN 1.0
#define VKVIT_ROPE_BASE_MAX 1e12
/* preprocess: x' = (x - mean) / std in fp32 on the device, x in [0, 1]. Outside these the pixels become 0, inf or
 * NaN in fp32 (std 1e-45 is 0, mean 1e300 is inf) and every logit NaN; real models use mean in [0, 1] and std
 * between 1/255 and 1 (or the 0-255 scale: both times 255). */
#define VKVIT_PREPROCESS_MEAN_MAX 1e6
#define VKVIT_PREPROCESS_STD_MIN 1e-6
#define VKVIT_PREPROCESS_STD_MAX 1e6

static vkvit_result get_in_range(const parser *p, const cJSON *obj, const char *where, const char *key, double lo,
                                 double hi, double *out) {
    vkvit_result r = get_positive(p, obj, where, key, out);
    if (r != VKVIT_OK) return r;
    if (!(*out >= lo && *out <= hi)) {
        char f[96];
        field(f, sizeof f, where, key);
        return BAD(p, "%s = %g is outside the supported range [%g, %g]", f, *out, lo, hi);
    }
    return VKVIT_OK;
}

vkvit_result vkvit__cfg_eps(const parser *p, const cJSON *obj, const char *where, const char *key, double *out) {
    return get_in_range(p, obj, where, key, VKVIT_EPS_MIN, VKVIT_EPS_MAX, out);
}

vkvit_result vkvit__cfg_rope_base(const parser *p, const cJSON *obj, const char *where, const char *key, double *out) {
    return get_in_range(p, obj, where, key, VKVIT_ROPE_BASE_MIN, VKVIT_ROPE_BASE_MAX, out);
}

/* A string that is one of names[0 .. n); *out = its index. `choices` is the list for the sentence. */
vkvit_result vkvit__cfg_enum(const parser *p, const cJSON *obj, const char *where, const char *key,
                             const char *const *names, int n, const char *choices, int *out) {
    char a[64], f[96];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    field(f, sizeof f, where, key);
    if (!v) return BAD(p, "%s is missing", f);
    if (!cJSON_IsString(v)) return BAD(p, "%s is %s, not a string", f, vkvit__cfg_kind(v));
    for (int i = 0; i < n; i++) {
        if (strcmp(v->valuestring, names[i]) == 0) {
            *out = i;
            return VKVIT_OK;
        }
    }
    return BAD(p, "%s = %s is not one of %s", f, describe(v, a, sizeof a), choices);
}

/* [H, W]: two integers in [1, hi]. */
static vkvit_result get_pair(const parser *p, const cJSON *obj, const char *where, const char *key, uint32_t hi,
                             uint32_t out[2]) {
    char a[64], f[96];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    field(f, sizeof f, where, key);
    if (!v) return BAD(p, "%s is missing", f);
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2)
        return BAD(p, "%s is %s, not [H, W]", f,
                   cJSON_IsArray(v) ? "an array of the wrong length" : vkvit__cfg_kind(v));
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        if (!cJSON_IsNumber(e) || !is_integral(e->valuedouble))
            return BAD(p, "%s[%d] = %s is not an integer", f, i, describe(e, a, sizeof a));
        if (e->valuedouble < 1.0 || e->valuedouble > (double)hi)
            return BAD(p, "%s[%d] = %s is out of range [1, %u]", f, i, describe(e, a, sizeof a), hi);
        out[i] = (uint32_t)e->valuedouble;
    }
    return VKVIT_OK;
}

/* Exactly three finite numbers (one per RGB channel). */
static vkvit_result get_rgb(const parser *p, const cJSON *obj, const char *where, const char *key, double out[3]) {
    char a[64], f[96];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    field(f, sizeof f, where, key);
    if (!v) return BAD(p, "%s is missing", f);
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 3)
        return BAD(p, "%s is %s, not an array of 3 numbers", f,
                   cJSON_IsArray(v) ? "an array of the wrong length" : vkvit__cfg_kind(v));
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        if (!cJSON_IsNumber(e) || !is_finite(e->valuedouble))
            return BAD(p, "%s[%d] = %s is not a finite number", f, i, describe(e, a, sizeof a));
        out[i] = e->valuedouble;
    }
    return VKVIT_OK;
}

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* No key may appear twice in `obj` (cJSON keeps duplicates and its getters return the first). */
static vkvit_result check_unique(const parser *p, const cJSON *obj, const char *where) {
    int n = cJSON_GetArraySize(obj);
    if (n < 2) return VKVIT_OK;
    const char **keys = malloc((size_t)n * sizeof *keys);
    if (!keys) return vkvit__cfg_error(p, VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate %d keys of %s", n, where);
    int i = 0;
    for (const cJSON *e = obj->child; e; e = e->next) keys[i++] = e->string;
    qsort(keys, (size_t)n, sizeof *keys, cmp_str_ptr);
    vkvit_result r = VKVIT_OK;
    for (i = 1; i < n; i++) {
        if (strcmp(keys[i - 1], keys[i]) == 0) {
            char a[64];
            r = BAD(p, "%s has the key %s twice", where, quote(keys[i], a, sizeof a));
            break;
        }
    }
    free(keys);
    return r;
}

/* Every key of `obj` must be in allowed[0 .. n) and appear once (missing keys are reported by the getters). */
vkvit_result vkvit__cfg_keys(const parser *p, const cJSON *obj, const char *where, const char *const *allowed,
                               int n) {
    bool seen[32] = {0};
    VKVIT_ASSERT(n <= 32);
    for (const cJSON *e = obj->child; e; e = e->next) {
        int i = 0;
        while (i < n && strcmp(e->string, allowed[i]) != 0) i++;
        char a[64];
        if (i == n) return BAD(p, "%s has an unknown key %s", where, quote(e->string, a, sizeof a));
        if (seen[i]) return BAD(p, "%s has the key %s twice", where, quote(e->string, a, sizeof a));
        seen[i] = true;
    }
    return VKVIT_OK;
}

#define TRY(call) VKVIT_CFG_TRY(call)

/* ---------------------------------------------------------------------------------------------------------------
 * Names
 * --------------------------------------------------------------------------------------------------------------- */

static const char *const INTERP_NAMES[] = {"bicubic", "bilinear"};

const char *vkvit__arch_name(vkvit__arch arch) {
    return (unsigned)arch < VKVIT_ARCH_COUNT ? vkvit__arch_ops_of(arch)->name : "?";
}
const char *vkvit__flavour_name(vkvit__arch arch, uint32_t flavour) {
    if ((unsigned)arch >= VKVIT_ARCH_COUNT) return "?";
    const vkvit__arch_ops *a = vkvit__arch_ops_of(arch);
    return flavour < a->n_flavours ? a->flavours[flavour] : "?";
}
const char *vkvit__interp_name(vkvit__interp i) { return (unsigned)i < 2 ? INTERP_NAMES[i] : "?"; }

uint32_t vkvit__model_num_classes(const vkvit__model_config *cfg) { return cfg->num_classes; }

/* ---------------------------------------------------------------------------------------------------------------
 * Shared by every architecture's parser (src/arch/arch_kit.h): image_size / patch_size / in_chans, typed objects
 * --------------------------------------------------------------------------------------------------------------- */

vkvit_result vkvit__cfg_image(const parser *p, const cJSON *c, uint32_t image[2], uint32_t *patch, uint32_t *in_chans,
                              uint32_t grid[2]) {
    TRY(get_pair(p, c, "config", "image_size", VKVIT_MODEL_MAX_IMAGE, image));
    TRY(vkvit__cfg_uint(p, c, "config", "patch_size", 1, VKVIT_MODEL_MAX_IMAGE, patch));
    if (image[0] % *patch || image[1] % *patch)
        return BAD(p, "config.image_size [%u, %u] is not divisible by config.patch_size = %u", image[0], image[1],
                   *patch);
    TRY(vkvit__cfg_uint(p, c, "config", "in_chans", 1, VKVIT_MODEL_MAX_DIM, in_chans));
    if (*in_chans != 3) return BAD(p, "config.in_chans = %u is not 3 (vkvit feeds RGB images)", *in_chans);
    grid[0] = image[0] / *patch;
    grid[1] = image[1] / *patch;
    return VKVIT_OK;
}

/* obj[key] is a JSON object (stored in *out); `f` receives "where.key" for the sentences about it. */
vkvit_result vkvit__cfg_object(const parser *p, const cJSON *obj, const char *where, const char *key, char *f,
                               size_t cap, const cJSON **out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    field(f, cap, where, key);
    if (!v) return BAD(p, "%s is missing", f);
    if (!cJSON_IsObject(v)) return BAD(p, "%s is %s, not an object", f, vkvit__cfg_kind(v));
    *out = v;
    return VKVIT_OK;
}

/* A typed object {"type": names[i], ...}: *kind_out = i, and only keys[i][0 .. nkeys[i]) may appear. */
vkvit_result vkvit__cfg_typed(const parser *p, const cJSON *obj, const char *where, const char *key,
                              const char *const *names, int n, const char *choices,
                              const char *const *const *keys, const int *nkeys, char *f, size_t cap,
                              const cJSON **out, int *kind_out) {
    TRY(vkvit__cfg_object(p, obj, where, key, f, cap, out));
    TRY(vkvit__cfg_enum(p, *out, f, "type", names, n, choices, kind_out));
    return vkvit__cfg_keys(p, *out, f, keys[*kind_out], nkeys[*kind_out]);
}

/* ---------------------------------------------------------------------------------------------------------------
 * preprocess, labels
 * --------------------------------------------------------------------------------------------------------------- */

static vkvit_result parse_preprocess(const parser *p, const cJSON *pp, const uint32_t image[2], vkvit__preprocess *out) {
    int e = 0;
    if (!pp) return BAD(p, "the vkvit entry has no preprocess object");
    if (!cJSON_IsObject(pp)) return BAD(p, "preprocess is %s, not an object", vkvit__cfg_kind(pp));
    TRY(check_unique(p, pp, "preprocess"));
    TRY(get_pair(p, pp, "preprocess", "image_size", VKVIT_MODEL_MAX_IMAGE, out->image_size));
    if (out->image_size[0] != image[0] || out->image_size[1] != image[1])
        return BAD(p, "preprocess.image_size [%u, %u] differs from config.image_size [%u, %u]", out->image_size[0],
                   out->image_size[1], image[0], image[1]);
    TRY(vkvit__cfg_uint(p, pp, "preprocess", "resize_shorter", 1, VKVIT_MODEL_MAX_IMAGE, &out->resize_shorter));
    uint32_t crop = VKVIT_MAX(image[0], image[1]);
    if (out->resize_shorter < crop)
        return BAD(p, "preprocess.resize_shorter = %u is smaller than the %u-pixel side of the crop "
                      "preprocess.image_size [%u, %u]", out->resize_shorter, crop, image[0], image[1]);
    TRY(vkvit__cfg_enum(p, pp, "preprocess", "interpolation", INTERP_NAMES, 2, "bicubic, bilinear", &e));
    out->interpolation = (vkvit__interp)e;
    TRY(get_rgb(p, pp, "preprocess", "mean", out->mean));
    TRY(get_rgb(p, pp, "preprocess", "std", out->std));
    for (int i = 0; i < 3; i++) {
        if (!(out->std[i] > 0.0)) return BAD(p, "preprocess.std[%d] = %g is not positive", i, out->std[i]);
        if (out->std[i] < VKVIT_PREPROCESS_STD_MIN || out->std[i] > VKVIT_PREPROCESS_STD_MAX)
            return BAD(p, "preprocess.std[%d] = %g is outside the supported range [%g, %g]", i, out->std[i],
                       VKVIT_PREPROCESS_STD_MIN, VKVIT_PREPROCESS_STD_MAX);
        if (fabs(out->mean[i]) > VKVIT_PREPROCESS_MEAN_MAX)
            return BAD(p, "preprocess.mean[%d] = %g is outside the supported range [%g, %g]", i, out->mean[i],
                       -VKVIT_PREPROCESS_MEAN_MAX, VKVIT_PREPROCESS_MEAN_MAX);
    }
    return VKVIT_OK;
}

static vkvit_result parse_labels(const parser *p, const cJSON *l, uint32_t num_classes, vkvit__model_config *cfg) {
    if (!l) return VKVIT_OK; /* optional */
    if (!cJSON_IsArray(l)) return BAD(p, "labels is %s, not an array of strings", vkvit__cfg_kind(l));
    int n = cJSON_GetArraySize(l);
    if ((uint32_t)n != num_classes)
        return BAD(p, "labels has %d entries but config.num_classes = %u", n, num_classes);
    /* One block: n pointers, then the strings. Its size is bounded by the JSON text. */
    size_t bytes = (size_t)n * sizeof(char *);
    int i = 0;
    for (const cJSON *e = l->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e)) return BAD(p, "labels[%d] is %s, not a string", i, vkvit__cfg_kind(e));
        bytes += strlen(e->valuestring) + 1;
    }
    char **labels = malloc(bytes);
    if (!labels)
        return vkvit__cfg_error(p, VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate %zu bytes for %d labels", bytes, n);
    char *at = (char *)(labels + n);
    i = 0;
    for (const cJSON *e = l->child; e; e = e->next, i++) {
        size_t len = strlen(e->valuestring) + 1;
        memcpy(at, e->valuestring, len);
        labels[i] = at;
        at += len;
    }
    cfg->labels = labels;
    cfg->n_labels = (uint32_t)n;
    return VKVIT_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
 * The document
 * --------------------------------------------------------------------------------------------------------------- */

static vkvit_result parse_root(const parser *p, const cJSON *root, vkvit__model_config *cfg) {
    char a[64];
    int e = 0;
    if (!cJSON_IsObject(root)) return BAD(p, "the vkvit entry is %s, not a JSON object", vkvit__cfg_kind(root));
    TRY(check_unique(p, root, "the vkvit entry"));

    const cJSON *fv = cJSON_GetObjectItemCaseSensitive(root, "format_version");
    if (!fv) return BAD(p, "the vkvit entry has no format_version");
    if (!cJSON_IsNumber(fv) || !is_integral(fv->valuedouble) || fv->valuedouble < 1)
        return BAD(p, "format_version = %s is not a version number (this vkvit reads %d)", describe(fv, a, sizeof a),
                   VKVIT_FORMAT_VERSION);
    if (fv->valuedouble != VKVIT_FORMAT_VERSION)
        return vkvit__cfg_error(p, VKVIT_ERROR_UNSUPPORTED, "format_version = %s is newer than this vkvit reads (%d)",
                        describe(fv, a, sizeof a), VKVIT_FORMAT_VERSION);
    cfg->format_version = VKVIT_FORMAT_VERSION;

    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architecture");
    if (!arch) return BAD(p, "the vkvit entry has no architecture");
    if (!cJSON_IsString(arch)) return BAD(p, "architecture is %s, not a string", vkvit__cfg_kind(arch));
    const vkvit__arch_ops *ops = NULL;
    for (int i = 0; i < VKVIT_ARCH_COUNT && !ops; i++)
        if (strcmp(arch->valuestring, vkvit__arch_ops_of((vkvit__arch)i)->name) == 0) {
            cfg->arch = (vkvit__arch)i;
            ops = vkvit__arch_ops_of(cfg->arch);
        }
    if (!ops) {
        char known[256] = "";
        for (int i = 0; i < VKVIT_ARCH_COUNT; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                     i == 0 ? "" : i + 1 == VKVIT_ARCH_COUNT ? " or " : ", ", vkvit__arch_ops_of((vkvit__arch)i)->name);
        return BAD(p, "architecture %s is unknown (expected %s)", describe(arch, a, sizeof a), known);
    }

    /* "nvsubq, paper (for vit5)" */
    char choices[256] = "";
    for (uint32_t i = 0; i < ops->n_flavours; i++)
        snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s", i ? ", " : "", ops->flavours[i]);
    snprintf(choices + strlen(choices), sizeof choices - strlen(choices), " (for %s)", ops->name);
    TRY(vkvit__cfg_enum(p, root, "", "flavour", ops->flavours, (int)ops->n_flavours, choices, &e));
    cfg->flavour = (uint32_t)e;

    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (name && !cJSON_IsString(name)) return BAD(p, "name is %s, not a string", vkvit__cfg_kind(name));
    const char *nm = name ? name->valuestring : "";
    size_t nl = strlen(nm) + 1;
    cfg->name = malloc(nl);
    if (!cfg->name) return vkvit__cfg_error(p, VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate %zu bytes for the name", nl);
    memcpy(cfg->name, nm, nl);

    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "config");
    if (!c) return BAD(p, "the vkvit entry has no config object");
    if (!cJSON_IsObject(c)) return BAD(p, "config is %s, not an object", vkvit__cfg_kind(c));
    TRY(ops->parse(p, c, cfg));
    TRY(parse_preprocess(p, cJSON_GetObjectItemCaseSensitive(root, "preprocess"), cfg->image_size, &cfg->preprocess));
    TRY(parse_labels(p, cJSON_GetObjectItemCaseSensitive(root, "labels"), cfg->num_classes, cfg));
    return VKVIT_OK;
}

vkvit_result vkvit__model_config_parse(const char *json, size_t len, const char *label, vkvit__model_config *out) {
    parser p = {label};
    memset(out, 0, sizeof *out);
    /* cJSON gets a NUL-terminated copy: the caller's text need not be terminated, and nothing past it is read. */
    char *text = malloc(len + 1);
    if (!text) return vkvit__cfg_error(&p, VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate %zu bytes for the vkvit entry", len);
    memcpy(text, json, len);
    text[len] = '\0';
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    vkvit_result r = VKVIT_OK;
    if (!root) {
        size_t pos = (end && end >= text && end <= text + len) ? (size_t)(end - text) : 0;
        r = BAD(&p, "the vkvit entry is not valid JSON (parse error at byte %zu of %zu)", pos, len);
        free(text);
        return r;
    }
    for (const char *s = end; s < text + len; s++) {
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') {
            r = BAD(&p, "the vkvit entry has bytes other than whitespace after its JSON value (at byte %zu of %zu)",
                    (size_t)(s - text), len);
            break;
        }
    }
    if (r == VKVIT_OK) r = parse_root(&p, root, out);
    cJSON_Delete(root);
    free(text);
    if (r != VKVIT_OK) vkvit__model_config_free(out);
    return r;
}

void vkvit__model_config_free(vkvit__model_config *cfg) {
    if (!cfg) return;
    free(cfg->name);
    free(cfg->labels);
    memset(cfg, 0, sizeof *cfg);
}
