/* The `vkvit` metadata entry -> vkvit__model_config, with every rule of docs/model-format.md checked. Each failure
 * is one sentence that names the field and the numbers involved. */
#include "model/config.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------------------------
 * Error sentences and typed getters
 * --------------------------------------------------------------------------------------------------------------- */

typedef struct parser {
    const char *label;                      /* the file, for "model '<label>': ..." */
} parser;

static vkvit_result bad_code(const parser *p, vkvit_result code, const char *fmt, ...) VKVIT_PRINTF(3, 4);
static vkvit_result bad_code(const parser *p, vkvit_result code, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return vkvit__error(code, "model '%s': %s", p->label, msg);
}
#define BAD(p, ...) bad_code((p), VKVIT_ERROR_BAD_MODEL_FILE, __VA_ARGS__)

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

static const char *kind(const cJSON *v) {
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
static vkvit_result get_uint(const parser *p, const cJSON *obj, const char *where, const char *key, uint32_t lo,
                             uint32_t hi, uint32_t *out) {
    char a[64], f[96];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    field(f, sizeof f, where, key);
    if (!v) return BAD(p, "%s is missing", f);
    if (!cJSON_IsNumber(v)) return BAD(p, "%s is %s, not an integer", f, kind(v));
    double d = v->valuedouble;
    if (!is_integral(d)) return BAD(p, "%s = %s is not an integer", f, describe(v, a, sizeof a));
    if (d < (double)lo || d > (double)hi)
        return BAD(p, "%s = %s is out of range [%u, %u]", f, describe(v, a, sizeof a), lo, hi);
    *out = (uint32_t)d;
    return VKVIT_OK;
}

static vkvit_result get_bool(const parser *p, const cJSON *obj, const char *where, const char *key, bool *out) {
    char f[96];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    field(f, sizeof f, where, key);
    if (!v) return BAD(p, "%s is missing", f);
    if (!cJSON_IsBool(v)) return BAD(p, "%s is %s, not true or false", f, kind(v));
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
    if (!cJSON_IsNumber(v)) return BAD(p, "%s is %s, not a number", f, kind(v));
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

static vkvit_result get_eps(const parser *p, const cJSON *obj, const char *where, const char *key, double *out) {
    return get_in_range(p, obj, where, key, VKVIT_EPS_MIN, VKVIT_EPS_MAX, out);
}

static vkvit_result get_rope_base(const parser *p, const cJSON *obj, const char *where, const char *key, double *out) {
    return get_in_range(p, obj, where, key, VKVIT_ROPE_BASE_MIN, VKVIT_ROPE_BASE_MAX, out);
}

/* A string that is one of names[0 .. n); *out = its index. `choices` is the list for the sentence. */
static vkvit_result get_enum(const parser *p, const cJSON *obj, const char *where, const char *key,
                             const char *const *names, int n, const char *choices, int *out) {
    char a[64], f[96];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    field(f, sizeof f, where, key);
    if (!v) return BAD(p, "%s is missing", f);
    if (!cJSON_IsString(v)) return BAD(p, "%s is %s, not a string", f, kind(v));
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
        return BAD(p, "%s is %s, not [H, W]", f, cJSON_IsArray(v) ? "an array of the wrong length" : kind(v));
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
                   cJSON_IsArray(v) ? "an array of the wrong length" : kind(v));
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
    if (!keys) return bad_code(p, VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate %d keys of %s", n, where);
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
static vkvit_result check_keys(const parser *p, const cJSON *obj, const char *where, const char *const *allowed,
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

#define TRY(call)                                                                                             \
    do {                                                                                                      \
        vkvit_result r_ = (call);                                                                             \
        if (r_ != VKVIT_OK) return r_;                                                                        \
    } while (0)

/* ---------------------------------------------------------------------------------------------------------------
 * Names
 * --------------------------------------------------------------------------------------------------------------- */

static const char *const ARCH_NAMES[] = {"vit5", "vil", "resnet"};
static const char *const FLAVOUR_NAMES[] = {"nvsubq", "paper", "seed", "nxai", "generic"};
static const char *const READOUT_NAMES[] = {"cls", "gap", "register_concat"};
/* Indexed by vkvit__rope_pairing (model/rope.h): 0 is "no RoPE", which a vit5 config cannot ask for. */
static const char *const PAIRING_NAMES[] = {"none", "split_half", "adjacent"};
static const char *const LAYOUT_NAMES[] = {"patches_cls_regs", "cls_patches_regs"};
static const char *const INTERP_NAMES[] = {"bicubic", "bilinear"};

const char *vkvit__arch_name(vkvit__arch arch) { return (unsigned)arch < VKVIT_ARCH_COUNT ? ARCH_NAMES[arch] : "?"; }
const char *vkvit__flavour_name(vkvit__flavour f) {
    return (unsigned)f < VKVIT_FLAVOUR_COUNT ? FLAVOUR_NAMES[f] : "?";
}
const char *vkvit__readout_name(vkvit__readout r) { return (unsigned)r < 3 ? READOUT_NAMES[r] : "?"; }
const char *vkvit__interp_name(vkvit__interp i) { return (unsigned)i < 2 ? INTERP_NAMES[i] : "?"; }
/* Indexed by vkvit__rn_norm / vkvit__rn_activation. */
static const char *const RN_NORM_NAMES[] = {"identity", "rmsnorm", "layernorm"};
static const char *const RN_ACT_NAMES[] = {"relu", "gelu", "silu", "glu", "swiglu"};
const char *vkvit__rn_norm_name(vkvit__rn_norm n) { return (unsigned)n < 3 ? RN_NORM_NAMES[n] : "?"; }
const char *vkvit__rn_activation_name(vkvit__rn_activation a) { return (unsigned)a < 5 ? RN_ACT_NAMES[a] : "?"; }

uint32_t vkvit__model_num_classes(const vkvit__model_config *cfg) {
    switch (cfg->arch) {
    case VKVIT_ARCH_VIT5: return cfg->vit5.num_classes;
    case VKVIT_ARCH_VIL: return cfg->vil.num_classes;
    case VKVIT_ARCH_RESNET: return cfg->resnet.num_classes;
    default: return 0;
    }
}

/* ---------------------------------------------------------------------------------------------------------------
 * Shared by both architectures: image_size / patch_size / in_chans
 * --------------------------------------------------------------------------------------------------------------- */

static vkvit_result parse_image(const parser *p, const cJSON *c, uint32_t image[2], uint32_t *patch,
                                uint32_t *in_chans, uint32_t grid[2]) {
    TRY(get_pair(p, c, "config", "image_size", VKVIT_MODEL_MAX_IMAGE, image));
    TRY(get_uint(p, c, "config", "patch_size", 1, VKVIT_MODEL_MAX_IMAGE, patch));
    if (image[0] % *patch || image[1] % *patch)
        return BAD(p, "config.image_size [%u, %u] is not divisible by config.patch_size = %u", image[0], image[1],
                   *patch);
    TRY(get_uint(p, c, "config", "in_chans", 1, VKVIT_MODEL_MAX_DIM, in_chans));
    if (*in_chans != 3) return BAD(p, "config.in_chans = %u is not 3 (vkvit feeds RGB images)", *in_chans);
    grid[0] = image[0] / *patch;
    grid[1] = image[1] / *patch;
    return VKVIT_OK;
}

static uint32_t isqrt32(uint32_t v) {
    uint32_t r = 0;
    while ((uint64_t)(r + 1) * (r + 1) <= v) r++; /* v <= 65536 here: at most 256 steps */
    return r;
}

/* ---------------------------------------------------------------------------------------------------------------
 * vit5
 * --------------------------------------------------------------------------------------------------------------- */

static const char *const VIT5_KEYS[] = {
    "image_size", "patch_size", "in_chans", "dim", "depth", "num_heads", "mlp_hidden", "mlp_activation",
    "num_registers", "has_cls", "readout", "neck_dim", "qk_norm", "norm_eps", "qk_norm_eps", "rope_base",
    "reg_rope_base", "rope_pairing", "token_layout", "layer_scale", "grn", "bias", "num_classes",
};
static const char *const VIT5_BIAS_KEYS[] = {"patch_embed", "qkv", "proj", "mlp", "head"};

static vkvit_result parse_vit5(const parser *p, const cJSON *c, vkvit__flavour flavour, vkvit__vit5_config *v) {
    const uint32_t MAXD = VKVIT_MODEL_MAX_DIM;
    int e = 0;
    TRY(check_keys(p, c, "config", VIT5_KEYS, (int)VKVIT_ARRAY_LEN(VIT5_KEYS)));
    TRY(parse_image(p, c, v->image_size, &v->patch_size, &v->in_chans, v->grid));

    TRY(get_uint(p, c, "config", "dim", 1, MAXD, &v->dim));
    TRY(get_uint(p, c, "config", "depth", 1, MAXD, &v->depth));
    TRY(get_uint(p, c, "config", "num_heads", 1, MAXD, &v->num_heads));
    if (v->dim % v->num_heads)
        return BAD(p, "config.num_heads = %u does not divide config.dim = %u", v->num_heads, v->dim);
    v->head_dim = v->dim / v->num_heads;
    if (v->head_dim % 4)
        return BAD(p, "the head dim config.dim / config.num_heads = %u / %u = %u is not a multiple of 4 (2-D RoPE "
                      "rotates quarters)", v->dim, v->num_heads, v->head_dim);
    TRY(get_uint(p, c, "config", "mlp_hidden", 1, MAXD, &v->mlp_hidden));
    static const char *const ACT[] = {"gelu"};
    TRY(get_enum(p, c, "config", "mlp_activation", ACT, 1, "gelu", &e));

    TRY(get_uint(p, c, "config", "num_registers", 0, MAXD, &v->num_registers));
    uint32_t side = isqrt32(v->num_registers);
    if (side * side != v->num_registers)
        return BAD(p, "config.num_registers = %u is neither 0 nor a perfect square (registers sit on a square RoPE "
                      "grid)", v->num_registers);
    TRY(get_bool(p, c, "config", "has_cls", &v->has_cls));
    TRY(get_enum(p, c, "config", "readout", READOUT_NAMES, 3, "cls, gap, register_concat", &e));
    v->readout = (vkvit__readout)e;
    TRY(get_uint(p, c, "config", "neck_dim", 0, MAXD, &v->neck_dim));
    if (v->readout == VKVIT_READOUT_CLS && !v->has_cls)
        return BAD(p, "config.readout = 'cls' needs config.has_cls = true");
    if (v->readout == VKVIT_READOUT_REGISTER_CONCAT) {
        if (v->num_registers == 0)
            return BAD(p, "config.readout = 'register_concat' needs config.num_registers > 0");
        if (v->neck_dim == 0) return BAD(p, "config.readout = 'register_concat' needs config.neck_dim >= 1");
        if ((uint64_t)v->num_registers * v->neck_dim > MAXD)
            return BAD(p, "config.num_registers * config.neck_dim = %u * %u (the head width) is above %u",
                       v->num_registers, v->neck_dim, MAXD);
        v->head_in = v->num_registers * v->neck_dim;
    } else {
        if (v->neck_dim != 0)
            return BAD(p, "config.neck_dim = %u must be 0 unless config.readout is 'register_concat'", v->neck_dim);
        v->head_in = v->dim;
    }

    TRY(get_bool(p, c, "config", "qk_norm", &v->qk_norm));
    TRY(get_eps(p, c, "config", "norm_eps", &v->norm_eps));
    TRY(get_eps(p, c, "config", "qk_norm_eps", &v->qk_norm_eps));
    TRY(get_rope_base(p, c, "config", "rope_base", &v->rope_base));
    TRY(get_rope_base(p, c, "config", "reg_rope_base", &v->reg_rope_base));
    TRY(get_enum(p, c, "config", "rope_pairing", PAIRING_NAMES + 1, 2, "split_half, adjacent", &e));
    v->rope_pairing = (vkvit__rope_pairing)(e + 1);
    TRY(get_enum(p, c, "config", "token_layout", LAYOUT_NAMES, 2, "patches_cls_regs, cls_patches_regs", &e));
    v->token_layout = (vkvit__token_layout)e;
    vkvit__rope_pairing want_pairing = flavour == VKVIT_FLAVOUR_NVSUBQ ? VKVIT_ROPE_SPLIT_HALF : VKVIT_ROPE_ADJACENT;
    vkvit__token_layout want_layout =
        flavour == VKVIT_FLAVOUR_NVSUBQ ? VKVIT_TOKENS_PATCHES_CLS_REGS : VKVIT_TOKENS_CLS_PATCHES_REGS;
    if (v->rope_pairing != want_pairing)
        return BAD(p, "config.rope_pairing = '%s' does not match flavour %s, which needs '%s'",
                   PAIRING_NAMES[v->rope_pairing], FLAVOUR_NAMES[flavour], PAIRING_NAMES[want_pairing]);
    if (v->token_layout != want_layout)
        return BAD(p, "config.token_layout = '%s' does not match flavour %s, which needs '%s'",
                   LAYOUT_NAMES[v->token_layout], FLAVOUR_NAMES[flavour], LAYOUT_NAMES[want_layout]);

    TRY(get_bool(p, c, "config", "layer_scale", &v->layer_scale));
    TRY(get_bool(p, c, "config", "grn", &v->grn));
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(c, "bias");
    if (!b) return BAD(p, "config.bias is missing");
    if (!cJSON_IsObject(b))
        return BAD(p, "config.bias is %s, not an object of patch_embed, qkv, proj, mlp, head", kind(b));
    TRY(check_keys(p, b, "config.bias", VIT5_BIAS_KEYS, 5));
    TRY(get_bool(p, b, "config.bias", "patch_embed", &v->bias.patch_embed));
    TRY(get_bool(p, b, "config.bias", "qkv", &v->bias.qkv));
    TRY(get_bool(p, b, "config.bias", "proj", &v->bias.proj));
    TRY(get_bool(p, b, "config.bias", "mlp", &v->bias.mlp));
    TRY(get_bool(p, b, "config.bias", "head", &v->bias.head));
    TRY(get_uint(p, c, "config", "num_classes", 1, MAXD, &v->num_classes));

    v->num_patches = v->grid[0] * v->grid[1];
    v->num_tokens = v->num_patches + (v->has_cls ? 1u : 0u) + v->num_registers;
    return VKVIT_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
 * vil
 * --------------------------------------------------------------------------------------------------------------- */

static const char *const VIL_KEYS[] = {
    "image_size", "patch_size", "in_chans", "dim", "depth", "inner_dim", "num_heads", "qkv_block_size",
    "conv_kernel", "pooling", "norm_eps", "head_norm_eps", "num_classes",
};

static vkvit_result parse_vil(const parser *p, const cJSON *c, vkvit__flavour flavour, vkvit__vil_config *v) {
    const uint32_t MAXD = VKVIT_MODEL_MAX_DIM;
    int e = 0;
    TRY(check_keys(p, c, "config", VIL_KEYS, (int)VKVIT_ARRAY_LEN(VIL_KEYS)));
    TRY(parse_image(p, c, v->image_size, &v->patch_size, &v->in_chans, v->grid));
    TRY(get_uint(p, c, "config", "dim", 1, MAXD, &v->dim));
    TRY(get_uint(p, c, "config", "depth", 1, MAXD, &v->depth));
    TRY(get_uint(p, c, "config", "inner_dim", 1, 2 * MAXD, &v->inner_dim));
    /* The seed's mLSTMCell rounds 2 * dim up to a multiple of 64; NX-AI's official ViLLayer uses exactly 2 * dim
     * (the same number for every published width), and nxai files written by earlier converters carry the
     * rounded value, so nxai accepts either. */
    const uint32_t rounded = VKVIT_CEIL_DIV(2 * v->dim, 64) * 64;
    if (flavour == VKVIT_FLAVOUR_NXAI && v->inner_dim != rounded && v->inner_dim != 2 * v->dim)
        return BAD(p, "config.inner_dim = %u is neither 2 * config.dim = %u nor ceil(2 * config.dim / 64) * 64 = %u "
                   "(flavour nxai)", v->inner_dim, 2 * v->dim, rounded);
    if (flavour != VKVIT_FLAVOUR_NXAI && v->inner_dim != rounded)
        return BAD(p, "config.inner_dim = %u is not ceil(2 * config.dim / 64) * 64 = %u for config.dim = %u",
                   v->inner_dim, rounded, v->dim);
    TRY(get_uint(p, c, "config", "num_heads", 1, MAXD, &v->num_heads));
    if (v->inner_dim % v->num_heads)
        return BAD(p, "config.num_heads = %u does not divide config.inner_dim = %u", v->num_heads, v->inner_dim);
    TRY(get_uint(p, c, "config", "qkv_block_size", 1, MAXD, &v->qkv_block_size));
    if (v->qkv_block_size != 4)
        return BAD(p, "config.qkv_block_size = %u is not 4 (q/k/v projections are 4x4 blocks)", v->qkv_block_size);
    if (v->inner_dim % v->qkv_block_size)
        return BAD(p, "config.inner_dim = %u is not a multiple of config.qkv_block_size = %u", v->inner_dim,
                   v->qkv_block_size);
    TRY(get_uint(p, c, "config", "conv_kernel", 1, MAXD, &v->conv_kernel));
    static const char *const POOL[] = {"bilateral_avg"};
    TRY(get_enum(p, c, "config", "pooling", POOL, 1, "bilateral_avg", &e));
    TRY(get_eps(p, c, "config", "norm_eps", &v->norm_eps));
    TRY(get_eps(p, c, "config", "head_norm_eps", &v->head_norm_eps));
    TRY(get_uint(p, c, "config", "num_classes", 1, MAXD, &v->num_classes));

    v->num_tokens = v->grid[0] * v->grid[1];
    v->head_dim = v->inner_dim / v->num_heads;
    v->num_proj_heads = v->inner_dim / v->qkv_block_size;
    return VKVIT_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
 * resnet
 * --------------------------------------------------------------------------------------------------------------- */

static const char *const RESNET_KEYS[] = {
    "image_size", "patch_size", "in_chans", "dim", "depth", "pos_embed", "block", "condition_tokens",
    "condition_dim", "readout", "out_norm", "bias", "num_classes",
};
static const char *const RESNET_BLOCK_KEYS[] = {
    "input_norm", "sequence_mixer", "condition_mixer_norm", "condition_mixer", "mlp_norm", "mlp",
};
static const char *const RESNET_BIAS_KEYS[] = {"patch_embed", "head"};

/* obj[key] is a JSON object (stored in *out); `f` receives "where.key" for the sentences about it. */
static vkvit_result get_object(const parser *p, const cJSON *obj, const char *where, const char *key, char *f,
                               size_t cap, const cJSON **out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    field(f, cap, where, key);
    if (!v) return BAD(p, "%s is missing", f);
    if (!cJSON_IsObject(v)) return BAD(p, "%s is %s, not an object", f, kind(v));
    *out = v;
    return VKVIT_OK;
}

/* A typed object {"type": names[i], ...}: *kind_out = i, and only keys[i][0 .. nkeys[i]) may appear. */
static vkvit_result get_typed(const parser *p, const cJSON *obj, const char *where, const char *key,
                              const char *const *names, int n, const char *choices,
                              const char *const *const *keys, const int *nkeys, char *f, size_t cap,
                              const cJSON **out, int *kind_out) {
    TRY(get_object(p, obj, where, key, f, cap, out));
    TRY(get_enum(p, *out, f, "type", names, n, choices, kind_out));
    return check_keys(p, *out, f, keys[*kind_out], nkeys[*kind_out]);
}

static vkvit_result parse_rn_norm(const parser *p, const cJSON *obj, const char *where, const char *key,
                                  vkvit__rn_norm_config *out) {
    static const char *const K_ID[] = {"type"}, *const K_RMS[] = {"type", "eps"},
                             *const K_LN[] = {"type", "eps", "bias"};
    static const char *const *const KEYS[] = {K_ID, K_RMS, K_LN};
    static const int NKEYS[] = {1, 2, 3};
    char f[64];
    const cJSON *o = NULL;
    int k = 0;
    TRY(get_typed(p, obj, where, key, RN_NORM_NAMES, 3, "rmsnorm, layernorm, identity", KEYS, NKEYS, f, sizeof f,
                  &o, &k));
    memset(out, 0, sizeof *out);
    out->kind = (vkvit__rn_norm)k;
    if (out->kind != VKVIT_RN_NORM_IDENTITY) TRY(get_eps(p, o, f, "eps", &out->eps));
    if (out->kind == VKVIT_RN_NORM_LAYERNORM) TRY(get_bool(p, o, f, "bias", &out->bias));
    return VKVIT_OK;
}

/* num_heads of an attention mixer: in [1, 65536] and dividing C; returns the head dim. */
static vkvit_result get_heads(const parser *p, const cJSON *o, const char *f, uint32_t dim, uint32_t *heads,
                              uint32_t *head_dim) {
    TRY(get_uint(p, o, f, "num_heads", 1, VKVIT_MODEL_MAX_DIM, heads));
    if (dim % *heads) return BAD(p, "%s.num_heads = %u does not divide config.dim = %u", f, *heads, dim);
    *head_dim = dim / *heads;
    return VKVIT_OK;
}

static vkvit_result parse_resnet_block(const parser *p, const cJSON *b, vkvit__resnet_config *v) {
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
    TRY(check_keys(p, b, W, RESNET_BLOCK_KEYS, (int)VKVIT_ARRAY_LEN(RESNET_BLOCK_KEYS)));

    TRY(parse_rn_norm(p, b, W, "input_norm", &v->input_norm));
    TRY(get_typed(p, b, W, "sequence_mixer", MIXER_NAMES, 2, "attention, identity", SEQ_KEYS, SEQ_N, f, sizeof f, &o,
                  &k));
    v->seq.enabled = k == 1;
    if (v->seq.enabled) {
        TRY(get_heads(p, o, f, v->dim, &v->seq.num_heads, &v->seq_head_dim));
        TRY(get_bool(p, o, f, "qk_norm", &v->seq.qk_norm));
        TRY(get_bool(p, o, f, "rope", &v->seq.rope));
        TRY(get_rope_base(p, o, f, "rope_base", &v->seq.rope_base));
        TRY(get_bool(p, o, f, "causal", &v->seq.causal));
        TRY(get_bool(p, o, f, "bias", &v->seq.bias));
        if (v->seq.rope && v->seq_head_dim % 4)
            return BAD(p, "%s.rope needs a head dim divisible by 4 (2-D RoPE rotates quarters), but config.dim / "
                          "num_heads = %u / %u = %u", f, v->dim, v->seq.num_heads, v->seq_head_dim);
    }

    TRY(parse_rn_norm(p, b, W, "condition_mixer_norm", &v->condition_mixer_norm));
    TRY(get_typed(p, b, W, "condition_mixer", MIXER_NAMES, 2, "attention, identity", COND_KEYS, COND_N, f, sizeof f,
                  &o, &k));
    v->cond.enabled = k == 1;
    if (v->cond.enabled) {
        TRY(get_heads(p, o, f, v->dim, &v->cond.num_heads, &v->cond_head_dim));
        TRY(get_bool(p, o, f, "qk_norm", &v->cond.qk_norm));
        TRY(get_bool(p, o, f, "causal", &v->cond.causal));
    }

    TRY(parse_rn_norm(p, b, W, "mlp_norm", &v->mlp_norm));
    TRY(get_typed(p, b, W, "mlp", MLP_NAMES, 2, "mlp, identity", MLP_KEYS, MLP_N, f, sizeof f, &o, &k));
    v->mlp.enabled = k == 1;
    if (v->mlp.enabled) {
        TRY(get_enum(p, o, f, "activation", RN_ACT_NAMES, 5, "relu, gelu, silu, glu, swiglu", &k));
        v->mlp.activation = (vkvit__rn_activation)k;
        TRY(get_uint(p, o, f, "hidden", 1, VKVIT_MODEL_MAX_DIM, &v->mlp.hidden));
        TRY(get_bool(p, o, f, "bias", &v->mlp.bias));
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
            return BAD(p, "config.block.%s is identity, so config.block.%s must be identity too (seed 002: a "
                          "bypassed branch has no norm), not %s", rule[i].mixer, rule[i].norm,
                       RN_NORM_NAMES[rule[i].kind]);
    return VKVIT_OK;
}

static vkvit_result parse_resnet(const parser *p, const cJSON *c, vkvit__resnet_config *v) {
    const uint32_t MAXD = VKVIT_MODEL_MAX_DIM;
    char f[64];
    int e = 0;
    TRY(check_keys(p, c, "config", RESNET_KEYS, (int)VKVIT_ARRAY_LEN(RESNET_KEYS)));
    TRY(parse_image(p, c, v->image_size, &v->patch_size, &v->in_chans, v->grid));
    TRY(get_uint(p, c, "config", "dim", 1, MAXD, &v->dim));
    TRY(get_uint(p, c, "config", "depth", 1, MAXD, &v->depth));
    TRY(get_bool(p, c, "config", "pos_embed", &v->pos_embed));
    const cJSON *b = NULL;
    TRY(get_object(p, c, "config", "block", f, sizeof f, &b));
    TRY(parse_resnet_block(p, b, v));

    TRY(get_uint(p, c, "config", "condition_tokens", 0, MAXD, &v->condition_tokens));
    TRY(get_uint(p, c, "config", "condition_dim", 0, MAXD, &v->condition_dim));
    if (v->cond.enabled) {
        if (v->condition_dim != v->dim)
            return BAD(p, "config.condition_dim = %u must equal config.dim = %u (the condition mixer projects "
                          "C-channel conditions, seed 003)", v->condition_dim, v->dim);
    } else if (v->condition_tokens != 0 || v->condition_dim != 0) {
        return BAD(p, "config.condition_tokens = %u and config.condition_dim = %u must be 0 when "
                      "config.block.condition_mixer is identity (the network takes no condition)",
                   v->condition_tokens, v->condition_dim);
    }
    static const char *const READOUT[] = {"gap"};
    TRY(get_enum(p, c, "config", "readout", READOUT, 1, "gap", &e));
    TRY(parse_rn_norm(p, c, "config", "out_norm", &v->out_norm));
    TRY(get_object(p, c, "config", "bias", f, sizeof f, &b));
    TRY(check_keys(p, b, "config.bias", RESNET_BIAS_KEYS, 2));
    TRY(get_bool(p, b, "config.bias", "patch_embed", &v->bias.patch_embed));
    TRY(get_bool(p, b, "config.bias", "head", &v->bias.head));
    TRY(get_uint(p, c, "config", "num_classes", 1, MAXD, &v->num_classes));

    v->num_tokens = v->grid[0] * v->grid[1];
    return VKVIT_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
 * preprocess, labels
 * --------------------------------------------------------------------------------------------------------------- */

static vkvit_result parse_preprocess(const parser *p, const cJSON *pp, const uint32_t image[2], vkvit__preprocess *out) {
    int e = 0;
    if (!pp) return BAD(p, "the vkvit entry has no preprocess object");
    if (!cJSON_IsObject(pp)) return BAD(p, "preprocess is %s, not an object", kind(pp));
    TRY(check_unique(p, pp, "preprocess"));
    TRY(get_pair(p, pp, "preprocess", "image_size", VKVIT_MODEL_MAX_IMAGE, out->image_size));
    if (out->image_size[0] != image[0] || out->image_size[1] != image[1])
        return BAD(p, "preprocess.image_size [%u, %u] differs from config.image_size [%u, %u]", out->image_size[0],
                   out->image_size[1], image[0], image[1]);
    TRY(get_uint(p, pp, "preprocess", "resize_shorter", 1, VKVIT_MODEL_MAX_IMAGE, &out->resize_shorter));
    uint32_t crop = VKVIT_MAX(image[0], image[1]);
    if (out->resize_shorter < crop)
        return BAD(p, "preprocess.resize_shorter = %u is smaller than the %u-pixel side of the crop "
                      "preprocess.image_size [%u, %u]", out->resize_shorter, crop, image[0], image[1]);
    TRY(get_enum(p, pp, "preprocess", "interpolation", INTERP_NAMES, 2, "bicubic, bilinear", &e));
    out->interpolation = (vkvit__interp)e;
    TRY(get_rgb(p, pp, "preprocess", "mean", out->mean));
    TRY(get_rgb(p, pp, "preprocess", "std", out->std));
    for (int i = 0; i < 3; i++)
        if (!(out->std[i] > 0.0)) return BAD(p, "preprocess.std[%d] = %g is not positive", i, out->std[i]);
    return VKVIT_OK;
}

static vkvit_result parse_labels(const parser *p, const cJSON *l, uint32_t num_classes, vkvit__model_config *cfg) {
    if (!l) return VKVIT_OK; /* optional */
    if (!cJSON_IsArray(l)) return BAD(p, "labels is %s, not an array of strings", kind(l));
    int n = cJSON_GetArraySize(l);
    if ((uint32_t)n != num_classes)
        return BAD(p, "labels has %d entries but config.num_classes = %u", n, num_classes);
    /* One block: n pointers, then the strings. Its size is bounded by the JSON text. */
    size_t bytes = (size_t)n * sizeof(char *);
    int i = 0;
    for (const cJSON *e = l->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e)) return BAD(p, "labels[%d] is %s, not a string", i, kind(e));
        bytes += strlen(e->valuestring) + 1;
    }
    char **labels = malloc(bytes);
    if (!labels)
        return bad_code(p, VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate %zu bytes for %d labels", bytes, n);
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
    if (!cJSON_IsObject(root)) return BAD(p, "the vkvit entry is %s, not a JSON object", kind(root));
    TRY(check_unique(p, root, "the vkvit entry"));

    const cJSON *fv = cJSON_GetObjectItemCaseSensitive(root, "format_version");
    if (!fv) return BAD(p, "the vkvit entry has no format_version");
    if (!cJSON_IsNumber(fv) || !is_integral(fv->valuedouble) || fv->valuedouble < 1)
        return BAD(p, "format_version = %s is not a version number (this vkvit reads %d)", describe(fv, a, sizeof a),
                   VKVIT_FORMAT_VERSION);
    if (fv->valuedouble != VKVIT_FORMAT_VERSION)
        return bad_code(p, VKVIT_ERROR_UNSUPPORTED, "format_version = %s is newer than this vkvit reads (%d)",
                        describe(fv, a, sizeof a), VKVIT_FORMAT_VERSION);
    cfg->format_version = VKVIT_FORMAT_VERSION;

    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architecture");
    if (!arch) return BAD(p, "the vkvit entry has no architecture");
    if (!cJSON_IsString(arch)) return BAD(p, "architecture is %s, not a string", kind(arch));
    if (strcmp(arch->valuestring, "vit5") == 0) cfg->arch = VKVIT_ARCH_VIT5;
    else if (strcmp(arch->valuestring, "vil") == 0) cfg->arch = VKVIT_ARCH_VIL;
    else if (strcmp(arch->valuestring, "resnet") == 0) cfg->arch = VKVIT_ARCH_RESNET;
    else return BAD(p, "architecture %s is unknown (expected vit5, vil or resnet)", describe(arch, a, sizeof a));

    if (cfg->arch == VKVIT_ARCH_VIT5) {
        static const char *const F[] = {"nvsubq", "paper"};
        TRY(get_enum(p, root, "", "flavour", F, 2, "nvsubq, paper (for vit5)", &e));
        cfg->flavour = e == 0 ? VKVIT_FLAVOUR_NVSUBQ : VKVIT_FLAVOUR_PAPER;
    } else if (cfg->arch == VKVIT_ARCH_VIL) {
        static const char *const F[] = {"seed", "nxai"};
        TRY(get_enum(p, root, "", "flavour", F, 2, "seed, nxai (for vil)", &e));
        cfg->flavour = e == 0 ? VKVIT_FLAVOUR_SEED : VKVIT_FLAVOUR_NXAI;
    } else {
        static const char *const F[] = {"generic"};
        TRY(get_enum(p, root, "", "flavour", F, 1, "generic (for resnet)", &e));
        cfg->flavour = VKVIT_FLAVOUR_GENERIC;
    }

    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (name && !cJSON_IsString(name)) return BAD(p, "name is %s, not a string", kind(name));
    const char *nm = name ? name->valuestring : "";
    size_t nl = strlen(nm) + 1;
    cfg->name = malloc(nl);
    if (!cfg->name) return bad_code(p, VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate %zu bytes for the name", nl);
    memcpy(cfg->name, nm, nl);

    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "config");
    if (!c) return BAD(p, "the vkvit entry has no config object");
    if (!cJSON_IsObject(c)) return BAD(p, "config is %s, not an object", kind(c));
    const uint32_t *image;
    uint32_t classes;
    if (cfg->arch == VKVIT_ARCH_VIT5) {
        TRY(parse_vit5(p, c, cfg->flavour, &cfg->vit5));
        image = cfg->vit5.image_size;
        classes = cfg->vit5.num_classes;
    } else if (cfg->arch == VKVIT_ARCH_VIL) {
        TRY(parse_vil(p, c, cfg->flavour, &cfg->vil));
        image = cfg->vil.image_size;
        classes = cfg->vil.num_classes;
    } else {
        TRY(parse_resnet(p, c, &cfg->resnet));
        image = cfg->resnet.image_size;
        classes = cfg->resnet.num_classes;
    }
    TRY(parse_preprocess(p, cJSON_GetObjectItemCaseSensitive(root, "preprocess"), image, &cfg->preprocess));
    TRY(parse_labels(p, cJSON_GetObjectItemCaseSensitive(root, "labels"), classes, cfg));
    return VKVIT_OK;
}

vkvit_result vkvit__model_config_parse(const char *json, size_t len, const char *label, vkvit__model_config *out) {
    parser p = {label};
    memset(out, 0, sizeof *out);
    /* cJSON gets a NUL-terminated copy: the caller's text need not be terminated, and nothing past it is read. */
    char *text = malloc(len + 1);
    if (!text) return bad_code(&p, VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate %zu bytes for the vkvit entry", len);
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
