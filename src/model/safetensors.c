// SPDX-License-Identifier: Apache-2.0
/* The safetensors reader: header length -> JSON header -> tensor table, with every byte treated as hostile.
 * The rules are listed in safetensors.h and docs/model-format.md. */
#include "model/safetensors.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------------------------
 * Small helpers
 * --------------------------------------------------------------------------------------------------------------- */

/* 2^53: the integers below it are exact in a double; JSON integers from it up cannot be trusted. */
#define JSON_INT_LIMIT 9007199254740992.0

/* `label` is the subject of every sentence: "model 'vit5.vkvit'", "tensor file 'in.safetensors'". */
static vkvit_result fail(const char *label, const char *fmt, ...) VKVIT_PRINTF(2, 3);
static vkvit_result fail(const char *label, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return vkvit__error(VKVIT_ERROR_BAD_MODEL_FILE, "%s: %s", label, msg);
}

static uint64_t read_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* A JSON number that is a non-negative integer below 2^53 (vkvit__json_check has seen it written as one). */
static bool json_uint(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(d >= 0.0 && d < JSON_INT_LIMIT)) return false; /* also rejects NaN */
    uint64_t u = (uint64_t)d;
    if ((double)u != d) return false;
    *out = u;
    return true;
}

/* What a JSON value is, for a sentence: "-1", "2.5", "a string", "an array", ... */
static const char *json_describe(const cJSON *v, char *buf, size_t cap) {
    if (v == NULL) return "missing";
    if (cJSON_IsNumber(v)) {
        snprintf(buf, cap, "%.15g", v->valuedouble);
        return buf;
    }
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v) ? "true" : "false";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    return "invalid";
}

static bool json_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

const char *vkvit__st_dtype_name(vkvit__st_dtype dtype) {
    switch (dtype) {
    case VKVIT_ST_F32: return "F32";
    case VKVIT_ST_F16: return "F16";
    case VKVIT_ST_BF16: return "BF16";
    case VKVIT_ST_DTYPE_COUNT: break;
    }
    return "?";
}

size_t vkvit__st_dtype_size(vkvit__st_dtype dtype) { return dtype == VKVIT_ST_F32 ? 4 : 2; }

char *vkvit__st_format_shape(char *buf, size_t cap, const uint64_t *shape, uint32_t ndim) {
    size_t at = 0;
    if (cap == 0) return buf;
    buf[0] = '\0';
    at += (size_t)snprintf(buf, cap, "[");
    for (uint32_t i = 0; i < ndim && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%llu", i ? ", " : "", (unsigned long long)shape[i]);
    if (at < cap) snprintf(buf + at, cap - at, "]");
    return buf;
}

char *vkvit__st_format_name(char *buf, size_t cap, const char *s) {
    const size_t keep = 80;
    size_t i = 0;
    if (cap == 0) return buf;
    for (; s[i] && i < keep && i + 4 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (s[i] && i + 4 <= cap) {
        memcpy(buf + i, "...", 3);
        i += 3;
    }
    buf[i < cap ? i : cap - 1] = '\0';
    return buf;
}

/* ---------------------------------------------------------------------------------------------------------------
 * fp16 / bf16 -> fp32
 * --------------------------------------------------------------------------------------------------------------- */

static float f32_from_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

float vkvit__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (mant << 13)); /* inf, NaN (payload kept) */
    if (exp != 0) return f32_from_bits(sign | ((exp + (127 - 15)) << 23) | (mant << 13));
    if (mant == 0) return f32_from_bits(sign); /* +-0 */
    /* Subnormal: mant * 2^-24. Shift the leading 1 up to bit 10 and lower the exponent once per shift. */
    uint32_t e = 127 - 15 + 1;
    while (!(mant & 0x400u)) {
        mant <<= 1;
        e--;
    }
    return f32_from_bits(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

float vkvit__bf16_to_f32(uint16_t b) { return f32_from_bits((uint32_t)b << 16); }

void vkvit__st_convert_f32(vkvit__st_dtype dtype, const uint8_t *src, size_t count, float *dst) {
    switch (dtype) {
    case VKVIT_ST_F32:
        for (size_t i = 0; i < count; i++, src += 4)
            dst[i] = f32_from_bits((uint32_t)src[0] | (uint32_t)src[1] << 8 | (uint32_t)src[2] << 16 |
                                   (uint32_t)src[3] << 24);
        break;
    case VKVIT_ST_F16:
        for (size_t i = 0; i < count; i++, src += 2) dst[i] = vkvit__f16_to_f32((uint16_t)(src[0] | src[1] << 8));
        break;
    case VKVIT_ST_BF16:
        for (size_t i = 0; i < count; i++, src += 2) dst[i] = vkvit__bf16_to_f32((uint16_t)(src[0] | src[1] << 8));
        break;
    case VKVIT_ST_DTYPE_COUNT: break;
    }
}

void vkvit__st_convert_f32_in_place(vkvit__st_dtype dtype, float *buf, size_t count) {
    const uint8_t *src = (const uint8_t *)buf + count * (4 - vkvit__st_dtype_size(dtype));
    /* front to back: element i is read before buf[i] is written, and buf[i] ends where source element i + 1
     * begins at the latest (2-byte dtypes), or is exactly source element i (F32) */
    switch (dtype) {
    case VKVIT_ST_F32:
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
        for (size_t i = 0; i < count; i++, src += 4)
            buf[i] = f32_from_bits((uint32_t)src[0] | (uint32_t)src[1] << 8 | (uint32_t)src[2] << 16 |
                                   (uint32_t)src[3] << 24);
#endif
        break;
    case VKVIT_ST_F16:
        for (size_t i = 0; i < count; i++, src += 2) buf[i] = vkvit__f16_to_f32((uint16_t)(src[0] | src[1] << 8));
        break;
    case VKVIT_ST_BF16:
        for (size_t i = 0; i < count; i++, src += 2) buf[i] = vkvit__bf16_to_f32((uint16_t)(src[0] | src[1] << 8));
        break;
    case VKVIT_ST_DTYPE_COUNT: break;
    }
}

/* ---------------------------------------------------------------------------------------------------------------
 * Strict JSON. cJSON is lenient where Python's json module (tools/vkvit_file.py) is not, and it keeps duplicate
 * keys and cuts strings at an escaped U+0000. This pass runs over the raw text before cJSON sees it and refuses
 * what the format refuses (docs/model-format.md, "JSON"), so both readers give the same verdict on every file.
 * --------------------------------------------------------------------------------------------------------------- */

enum { JSON_MAX_DEPTH = 64, JSON_MAX_NUMBER = 32 };

/* What the value being read is, for the safetensors header's integer rule. */
typedef enum jrole {
    JR_ANY,                                 /* nothing special */
    JR_TENSOR,                              /* a tensor entry (a header member other than __metadata__) */
    JR_INTS,                                /* the shape or data_offsets array of a tensor entry */
    JR_INT,                                 /* an element of such an array: an integer lexeme if it is a number */
} jrole;

typedef struct jcheck {
    const char *text, *at, *end;
    const char *label;
    bool header;                            /* the safetensors header (else the vkvit entry) */
    int depth;
    char *arena;                            /* decoded keys, NUL-terminated (no key holds U+0000) */
    size_t arena_used;
    const char **keys;                      /* the keys of every open object, innermost last */
    size_t n_keys, cap_keys;
    const char *tensor, *member;            /* header: the tensor entry and its member being read */
    int index;                              /* the element index inside shape / data_offsets */
    char path[160];                         /* dotted path of the open containers, for sentences */
    vkvit_result res;
} jcheck;

static size_t jpos(const jcheck *j) { return (size_t)(j->at - j->text); }

static bool jsyntax(jcheck *j, const char *what) {
    if (j->res == VKVIT_OK)
        j->res = fail(j->label, "%s is not valid JSON (%s at byte %zu of %zu)", j->header ? "the header" : "the vkvit entry",
                      what, jpos(j), (size_t)(j->end - j->text));
    return false;
}

/* "the header", "tensor 'x'", "__metadata__", "the vkvit entry", "config.block": where an object sits. */
static const char *jwhere(const jcheck *j, char *buf, size_t cap) {
    char nm[96];
    if (j->path[0] == '\0') return j->header ? "the header" : "the vkvit entry";
    if (j->header && j->tensor) {
        size_t tl = strlen(j->tensor), pl = strlen(j->path);
        const char *rest = pl > tl ? j->path + tl : "";
        snprintf(buf, cap, "tensor '%s'%s%s", vkvit__st_format_name(nm, sizeof nm, j->tensor), *rest ? " at " : "",
                 *rest ? rest + 1 : "");
        return buf;
    }
    vkvit__st_format_name(buf, cap, j->path);
    return buf;
}

static void jpath_push(jcheck *j, const char *key, size_t *saved) {
    *saved = strlen(j->path);
    size_t n = *saved;
    if (n + 1 < sizeof j->path) snprintf(j->path + n, sizeof j->path - n, "%s%s", n ? "." : "", key);
}

static bool jvalue(jcheck *j, jrole role);

static void jspace(jcheck *j) {
    while (j->at < j->end && json_space(*j->at)) j->at++;
}

static int jhex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits after "\u"; -1 if malformed. */
static long jhex4(const char *p, const char *end) {
    if (end - p < 4) return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = jhex(p[i]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

size_t vkvit__utf8_len(const unsigned char *p, const unsigned char *end) {
    unsigned c = p[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else return 0;
    if (end <= p || (size_t)(end - p) < n) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf) return 0;
    return n;
}

/* A string at j->at (the opening quote). When `out` is set the decoded bytes go there, NUL-terminated. */
static bool jstring(jcheck *j, char *out) {
    size_t o = 0;
    j->at++;
    for (;;) {
        if (j->at >= j->end) return jsyntax(j, "an unterminated string");
        unsigned char c = (unsigned char)*j->at;
        if (c == '"') {
            j->at++;
            break;
        }
        if (c < 0x20) return jsyntax(j, "a raw control character in a string");
        if (c >= 0x80) {
            size_t n = vkvit__utf8_len((const unsigned char *)j->at, (const unsigned char *)j->end);
            if (!n) return jsyntax(j, "a byte sequence that is not UTF-8");
            if (out) memcpy(out + o, j->at, n);
            o += n;
            j->at += n;
            continue;
        }
        if (c != '\\') {
            if (out) out[o] = (char)c;
            o++;
            j->at++;
            continue;
        }
        if (j->end - j->at < 2) return jsyntax(j, "an unterminated string");
        char e = j->at[1];
        static const char esc[] = "\"\\/bfnrt", map[] = "\"\\/\b\f\n\r\t";
        const char *simple = e != '\0' ? strchr(esc, e) : NULL;
        if (simple) {
            if (out) out[o] = map[simple - esc];
            o++;
            j->at += 2;
            continue;
        }
        if (e != 'u') return jsyntax(j, "an invalid escape in a string");
        long cp = jhex4(j->at + 2, j->end);
        if (cp < 0) return jsyntax(j, "a \\u escape without four hex digits");
        size_t used = 6;
        if (cp >= 0xdc00 && cp <= 0xdfff) cp = -1;
        else if (cp >= 0xd800 && cp <= 0xdbff) {
            long lo = (j->end - j->at >= 12 && j->at[6] == '\\' && j->at[7] == 'u') ? jhex4(j->at + 8, j->end) : -1;
            cp = (lo >= 0xdc00 && lo <= 0xdfff) ? 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00) : -1;
            used = 12;
        }
        if (cp < 0) {
            if (j->res == VKVIT_OK)
                j->res = fail(j->label, "%s has a string with an unpaired UTF-16 surrogate escape (at byte %zu); "
                              "strings must be Unicode text", j->header ? "the header" : "the vkvit entry", jpos(j));
            return false;
        }
        if (cp == 0) {
            if (j->res == VKVIT_OK)
                j->res = fail(j->label, "%s has a string holding U+0000 (\\u0000 at byte %zu), which vkvit refuses",
                              j->header ? "the header" : "the vkvit entry", jpos(j));
            return false;
        }
        unsigned char u[4];
        size_t n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        if (n == 1) u[0] = (unsigned char)cp;
        else if (n == 2) u[0] = (unsigned char)(0xc0 | cp >> 6), u[1] = (unsigned char)(0x80 | (cp & 0x3f));
        else if (n == 3)
            u[0] = (unsigned char)(0xe0 | cp >> 12), u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)),
            u[2] = (unsigned char)(0x80 | (cp & 0x3f));
        else
            u[0] = (unsigned char)(0xf0 | cp >> 18), u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f)),
            u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (unsigned char)(0x80 | (cp & 0x3f));
        if (out) memcpy(out + o, u, n);
        o += n;
        j->at += used;
    }
    if (out) out[o] = '\0';
    if (out) j->arena_used += o + 1;
    return true;
}

static bool jnumber(jcheck *j, jrole role) {
    const char *s = j->at;
    bool integer = true;
    if (j->at < j->end && *j->at == '-') j->at++;
    if (j->at >= j->end || *j->at < '0' || *j->at > '9') return jsyntax(j, "a malformed number");
    if (*j->at == '0') {
        j->at++;
        if (j->at < j->end && *j->at >= '0' && *j->at <= '9') return jsyntax(j, "a number with a leading zero");
    } else {
        while (j->at < j->end && *j->at >= '0' && *j->at <= '9') j->at++;
    }
    if (j->at < j->end && *j->at == '.') {
        integer = false;
        j->at++;
        if (j->at >= j->end || *j->at < '0' || *j->at > '9') return jsyntax(j, "a number with no digit after '.'");
        while (j->at < j->end && *j->at >= '0' && *j->at <= '9') j->at++;
    }
    if (j->at < j->end && (*j->at == 'e' || *j->at == 'E')) {
        integer = false;
        j->at++;
        if (j->at < j->end && (*j->at == '+' || *j->at == '-')) j->at++;
        if (j->at >= j->end || *j->at < '0' || *j->at > '9') return jsyntax(j, "a number with no exponent digits");
        while (j->at < j->end && *j->at >= '0' && *j->at <= '9') j->at++;
    }
    size_t len = (size_t)(j->at - s);
    if (len > JSON_MAX_NUMBER) {
        if (j->res == VKVIT_OK)
            j->res = fail(j->label, "%s has a number of %zu characters (at byte %zu); at most %d are allowed",
                          j->header ? "the header" : "the vkvit entry", len, (size_t)(s - j->text), JSON_MAX_NUMBER);
        return false;
    }
    if (role == JR_INT && !integer) {
        char nm[96];
        vkvit__st_format_name(nm, sizeof nm, j->tensor);
        if (j->res != VKVIT_OK) return false;
        if (strcmp(j->member, "shape") == 0)
            j->res = fail(j->label, "tensor '%s' has shape entry %d = %.*s, not a non-negative integer (it is written "
                          "with a fraction or exponent)", nm, j->index, (int)len, s);
        else
            j->res = fail(j->label, "tensor '%s' has data_offsets that are not two non-negative integers (entry %d = "
                          "%.*s is written with a fraction or exponent)", nm, j->index, (int)len, s);
        return false;
    }
    return true;
}

static int cmp_key(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static bool jobject(jcheck *j, jrole role) {
    size_t first = j->n_keys;
    j->at++;
    jspace(j);
    if (j->at < j->end && *j->at == '}') {
        j->at++;
        return true;
    }
    for (;;) {
        jspace(j);
        if (j->at >= j->end || *j->at != '"') return jsyntax(j, "an object member without a string key");
        if (j->n_keys == j->cap_keys) {
            size_t cap = j->cap_keys ? 2 * j->cap_keys : 64;
            const char **k = realloc((void *)j->keys, cap * sizeof *k);
            if (!k) {
                if (j->res == VKVIT_OK)
                    j->res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "%s: cannot allocate %zu keys",
                                          j->label, cap);
                return false;
            }
            j->keys = k;
            j->cap_keys = cap;
        }
        char *key = j->arena + j->arena_used;
        if (!jstring(j, key)) return false;
        j->keys[j->n_keys++] = key;
        jspace(j);
        if (j->at >= j->end || *j->at != ':') return jsyntax(j, "a missing ':' after an object key");
        j->at++;
        /* The role of the member's value, and the path for sentences about it. */
        jrole sub = JR_ANY;
        if (j->header && j->depth == 1) {
            bool meta = strcmp(key, "__metadata__") == 0;
            sub = meta ? JR_ANY : JR_TENSOR;
            j->tensor = meta ? NULL : key;
        } else if (role == JR_TENSOR && (strcmp(key, "shape") == 0 || strcmp(key, "data_offsets") == 0)) {
            sub = JR_INTS;
            j->member = strcmp(key, "shape") == 0 ? "shape" : "data_offsets";
        }
        size_t saved;
        jpath_push(j, key, &saved);
        if (!jvalue(j, sub)) return false;
        j->path[saved] = '\0';
        if (j->header && j->depth == 1) j->tensor = NULL;
        jspace(j);
        if (j->at < j->end && *j->at == ',') {
            j->at++;
            continue;
        }
        if (j->at < j->end && *j->at == '}') {
            j->at++;
            break;
        }
        return jsyntax(j, "a missing ',' or '}' in an object");
    }
    /* No key twice in this object (keys compare after unescaping, as Python compares them). */
    size_t n = j->n_keys - first;
    qsort((void *)(j->keys + first), n, sizeof *j->keys, cmp_key);
    for (size_t i = first + 1; i < j->n_keys; i++) {
        if (strcmp(j->keys[i - 1], j->keys[i]) == 0) {
            char w[200], nm[96];
            if (j->res == VKVIT_OK)
                j->res = fail(j->label, "%s has the key '%s' twice", jwhere(j, w, sizeof w),
                              vkvit__st_format_name(nm, sizeof nm, j->keys[i]));
            return false;
        }
    }
    j->n_keys = first;
    return true;
}

static bool jarray(jcheck *j, jrole role) {
    int index = 0;
    j->at++;
    jspace(j);
    if (j->at < j->end && *j->at == ']') {
        j->at++;
        return true;
    }
    for (;;) {
        if (role == JR_INTS) j->index = index;
        if (!jvalue(j, role == JR_INTS ? JR_INT : JR_ANY)) return false;
        index++;
        jspace(j);
        if (j->at < j->end && *j->at == ',') {
            j->at++;
            continue;
        }
        if (j->at < j->end && *j->at == ']') {
            j->at++;
            return true;
        }
        return jsyntax(j, "a missing ',' or ']' in an array");
    }
}

static bool jvalue(jcheck *j, jrole role) {
    jspace(j);
    if (j->at >= j->end) return jsyntax(j, "an unexpected end");
    char c = *j->at;
    if (c == '{' || c == '[') {
        if (j->depth >= JSON_MAX_DEPTH) {
            if (j->res == VKVIT_OK)
                j->res = fail(j->label, "%s nests arrays and objects more than %d deep (at byte %zu)",
                              j->header ? "the header" : "the vkvit entry", JSON_MAX_DEPTH, jpos(j));
            return false;
        }
        j->depth++;
        bool ok = c == '{' ? jobject(j, role) : jarray(j, role);
        j->depth--;
        return ok;
    }
    if (c == '"') return jstring(j, NULL);
    if (c == '-' || (c >= '0' && c <= '9')) return jnumber(j, role);
    static const char *const lit[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(lit[i]);
        if ((size_t)(j->end - j->at) >= n && memcmp(j->at, lit[i], n) == 0) {
            j->at += n;
            return true;
        }
    }
    return jsyntax(j, "an unexpected character");
}

vkvit_result vkvit__json_check(const char *text, size_t len, bool header, const char *label) {
    jcheck j = {.text = text, .at = text, .end = text + len, .label = label, .header = header, .res = VKVIT_OK};
    j.arena = malloc(len + 1);
    if (!j.arena)
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "%s: cannot allocate %zu bytes to check the JSON",
                            label, len + 1);
    if (jvalue(&j, JR_ANY)) {
        jspace(&j);
        if (j.at < j.end)
            j.res = fail(label, "%s has bytes other than whitespace after its JSON value (at byte %zu of %zu)",
                         header ? "the header" : "the vkvit entry", jpos(&j), len);
    }
    free(j.arena);
    free((void *)j.keys);
    return j.res;
}

/* ---------------------------------------------------------------------------------------------------------------
 * One tensor entry: {"dtype": ..., "shape": [...], "data_offsets": [begin, end]}
 * --------------------------------------------------------------------------------------------------------------- */

static vkvit_result parse_entry(const cJSON *e, const char *name, size_t data_size, size_t data_offset,
                                const char *label, vkvit__st_tensor *t) {
    char nm[96], a[64], b[64];
    vkvit__st_format_name(nm, sizeof nm, name);
    if (!cJSON_IsObject(e))
        return fail(label, "tensor '%s' has an entry that is %s, not a JSON object", nm, json_describe(e, a, sizeof a));

    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    if (!cJSON_IsString(dt))
        return fail(label, "tensor '%s' has no dtype string (dtype is %s)", nm, json_describe(dt, a, sizeof a));
    if (strcmp(dt->valuestring, "F32") == 0) t->dtype = VKVIT_ST_F32;
    else if (strcmp(dt->valuestring, "F16") == 0) t->dtype = VKVIT_ST_F16;
    else if (strcmp(dt->valuestring, "BF16") == 0) t->dtype = VKVIT_ST_BF16;
    else
        return fail(label, "tensor '%s' has dtype '%s'; vkvit reads F32, F16 and BF16", nm,
                    vkvit__st_format_name(a, sizeof a, dt->valuestring));

    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    if (!cJSON_IsArray(shape))
        return fail(label, "tensor '%s' has a shape that is %s, not an array", nm, json_describe(shape, a, sizeof a));
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > VKVIT_ST_MAX_DIMS)
        return fail(label, "tensor '%s' has a shape of %d dims; at most %d are allowed", nm, ndim, VKVIT_ST_MAX_DIMS);
    t->ndim = (uint32_t)ndim;
    uint64_t numel = 1;
    bool overflow = false, empty = false;
    int i = 0;
    for (const cJSON *d = shape->child; d; d = d->next, i++) {
        if (!json_uint(d, &t->shape[i]))
            return fail(label, "tensor '%s' has shape entry %d = %s, not a non-negative integer", nm, i,
                        json_describe(d, a, sizeof a));
        if (t->shape[i] == 0) empty = true;
        else if (numel > UINT64_MAX / t->shape[i]) overflow = true;
        else numel *= t->shape[i];
    }
    if (empty) numel = 0, overflow = false;

    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    uint64_t begin = 0, end = 0;
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || !json_uint(offs->child, &begin) ||
        !json_uint(offs->child->next, &end))
        return fail(label, "tensor '%s' has data_offsets that are not two non-negative integers", nm);
    if (begin > end)
        return fail(label, "tensor '%s' has data_offsets [%llu, %llu] with begin > end", nm,
                    (unsigned long long)begin, (unsigned long long)end);
    if (end > data_size)
        return fail(label, "tensor '%s' ends at byte %llu, past the end of the data section (%zu bytes)", nm,
                    (unsigned long long)end, data_size);

    char sh[256];
    vkvit__st_format_shape(sh, sizeof sh, t->shape, t->ndim);
    uint64_t esize = vkvit__st_dtype_size(t->dtype);
    if (overflow || numel > UINT64_MAX / esize)
        return fail(label, "tensor '%s' has shape %s whose byte size overflows 64 bits", nm, sh);
    if (end - begin != numel * esize) {
        snprintf(b, sizeof b, "%llu", (unsigned long long)(numel * esize));
        return fail(label, "tensor '%s' covers %llu bytes (data_offsets [%llu, %llu]) but shape %s of %s needs %s",
                    nm, (unsigned long long)(end - begin), (unsigned long long)begin, (unsigned long long)end, sh,
                    vkvit__st_dtype_name(t->dtype), b);
    }
    t->numel = numel;
    t->offset = data_offset + (size_t)begin; /* begin <= end <= data_size, so this is inside the image */
    t->size = (size_t)(end - begin);
    return VKVIT_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
 * The header
 * --------------------------------------------------------------------------------------------------------------- */

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const vkvit__st_tensor *)a)->name, ((const vkvit__st_tensor *)b)->name);
}

static int cmp_meta(const void *a, const void *b) {
    return strcmp(((const vkvit__st_meta *)a)->key, ((const vkvit__st_meta *)b)->key);
}

static int cmp_offset(const void *a, const void *b) {
    const vkvit__st_tensor *x = *(const vkvit__st_tensor *const *)a, *y = *(const vkvit__st_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return 0;
}

static char *arena_put(char **at, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = *at;
    memcpy(p, s, n);
    *at += n;
    return p;
}

static vkvit_result parse_header(const cJSON *root, vkvit__safetensors *st, const char *label) {
    char nm[96], a[64];
    if (!cJSON_IsObject(root))
        return fail(label, "the header is %s, not a JSON object", json_describe(root, a, sizeof a));

    /* Pass 1: count entries and the arena size, find __metadata__. */
    const cJSON *meta = NULL;
    size_t n_tensors = 0, n_meta = 0, n_chars = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) {
            if (meta) return fail(label, "the header has the key '__metadata__' twice");
            if (!cJSON_IsObject(e))
                return fail(label, "__metadata__ is %s, not a JSON object", json_describe(e, a, sizeof a));
            meta = e;
            for (const cJSON *m = e->child; m; m = m->next) {
                if (!cJSON_IsString(m))
                    return fail(label, "__metadata__ entry '%s' is %s, not a string",
                                vkvit__st_format_name(nm, sizeof nm, m->string), json_describe(m, a, sizeof a));
                n_meta++;
                n_chars += strlen(m->string) + strlen(m->valuestring) + 2;
            }
            continue;
        }
        n_tensors++;
        n_chars += strlen(e->string) + 1;
    }
    /* Every count is bounded by the header length, itself at most 100 MiB, so none of this overflows. */
    st->tensors = calloc(n_tensors ? n_tensors : 1, sizeof *st->tensors);
    st->meta = calloc(n_meta ? n_meta : 1, sizeof *st->meta);
    st->strings = malloc(n_chars ? n_chars : 1);
    if (!st->tensors || !st->meta || !st->strings)
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "%s: cannot allocate the tensor table (%zu tensors)",
                            label, n_tensors);
    char *at = st->strings;

    /* Pass 2: every tensor entry. */
    size_t data_size = st->size - st->data_offset;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (e == meta) continue;
        vkvit__st_tensor *t = &st->tensors[st->n_tensors];
        vkvit_result r = parse_entry(e, e->string, data_size, st->data_offset, label, t);
        if (r != VKVIT_OK) return r;
        t->name = arena_put(&at, e->string);
        st->n_tensors++;
    }
    if (meta) {
        for (const cJSON *m = meta->child; m; m = m->next) {
            st->meta[st->n_meta].key = arena_put(&at, m->string);
            st->meta[st->n_meta].value = arena_put(&at, m->valuestring);
            st->n_meta++;
        }
    }

    /* Metadata keys must be unique too (sorted by key, so lookups can bisect). */
    qsort(st->meta, st->n_meta, sizeof *st->meta, cmp_meta);
    for (uint32_t i = 1; i < st->n_meta; i++)
        if (strcmp(st->meta[i - 1].key, st->meta[i].key) == 0)
            return fail(label, "__metadata__ has the key '%s' twice",
                        vkvit__st_format_name(nm, sizeof nm, st->meta[i].key));

    /* Names must be unique: sort by name and compare neighbours. */
    qsort(st->tensors, st->n_tensors, sizeof *st->tensors, cmp_name);
    for (uint32_t i = 1; i < st->n_tensors; i++)
        if (strcmp(st->tensors[i - 1].name, st->tensors[i].name) == 0)
            return fail(label, "tensor '%s' appears twice in the header",
                        vkvit__st_format_name(nm, sizeof nm, st->tensors[i].name));

    /* Byte ranges must not overlap: sort the non-empty ones by offset; an overlap shows up between neighbours. */
    if (st->n_tensors > 1) {
        const vkvit__st_tensor **by_off = malloc(st->n_tensors * sizeof *by_off);
        if (!by_off)
            return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "%s: cannot allocate %u tensor pointers",
                                label, st->n_tensors);
        uint32_t n = 0;
        for (uint32_t i = 0; i < st->n_tensors; i++)
            if (st->tensors[i].size) by_off[n++] = &st->tensors[i];
        qsort(by_off, n, sizeof *by_off, cmp_offset);
        for (uint32_t i = 1; i < n; i++) {
            const vkvit__st_tensor *p = by_off[i - 1], *q = by_off[i];
            if (q->offset < p->offset + p->size) {
                char nm2[96];
                size_t base = st->data_offset;
                vkvit_result r = fail(label, "tensors '%s' and '%s' have overlapping byte ranges [%zu, %zu) and [%zu, %zu)",
                                      vkvit__st_format_name(nm, sizeof nm, p->name),
                                      vkvit__st_format_name(nm2, sizeof nm2, q->name), p->offset - base,
                                      p->offset - base + p->size, q->offset - base, q->offset - base + q->size);
                free(by_off);
                return r;
            }
        }
        free(by_off);
    }
    return VKVIT_OK;
}

size_t vkvit__safetensors_head_bytes(const uint8_t *first8, size_t size) {
    if (size < 8) return size;
    const uint64_t n = read_le64(first8);
    return n >= 2 && n <= VKVIT_ST_MAX_HEADER && n <= size - 8 ? 8 + (size_t)n : 8;
}

vkvit_result vkvit__safetensors_parse(const uint8_t *data, size_t size, const char *label, vkvit__safetensors *out) {
    vkvit_result r = vkvit__safetensors_parse_head(data, size, size, label, out);
    if (r == VKVIT_OK) out->data = data;
    return r;
}

vkvit_result vkvit__safetensors_parse_head(const uint8_t *head, size_t head_bytes, size_t size, const char *label,
                                           vkvit__safetensors *out) {
    memset(out, 0, sizeof *out);
    const uint8_t *data = head; /* only bytes [0, head_bytes) are read */
    VKVIT_ASSERT(head_bytes <= size && head_bytes >= vkvit__safetensors_head_bytes(head, size));
    if (size < 8) return fail(label, "the file is %zu bytes long, too short for the 8-byte header length", size);
    uint64_t n = read_le64(data);
    if (n < 2) return fail(label, "the header length %llu is below the minimum of 2 bytes", (unsigned long long)n);
    if (n > VKVIT_ST_MAX_HEADER)
        return fail(label, "the header length %llu is above the limit of %llu bytes", (unsigned long long)n,
                    (unsigned long long)VKVIT_ST_MAX_HEADER);
    if (n > size - 8)
        return fail(label, "the header length %llu runs past the end of the file (%zu bytes)", (unsigned long long)n,
                    size);
    size_t hn = (size_t)n;

    /* cJSON gets its own NUL-terminated copy, so no reading past the header can reach tensor bytes. */
    char *text = malloc(hn + 1);
    if (!text)
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "%s: cannot allocate %zu bytes for the header",
                            label, hn + 1);
    memcpy(text, data + 8, hn);
    text[hn] = '\0';
    vkvit_result r = vkvit__json_check(text, hn, true, label);
    if (r != VKVIT_OK) {
        free(text);
        return r;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, hn, &end, 0);
    if (!root) {
        size_t pos = (end && end >= text && end <= text + hn) ? (size_t)(end - text) : 0;
        r = fail(label, "the header is not valid JSON (parse error at byte %zu of %zu)", pos, hn);
        free(text);
        return r;
    }
    for (const char *p = end; p < text + hn; p++) {
        if (!json_space(*p)) {
            r = fail(label, "the header has bytes other than whitespace after its JSON value (at byte %zu of %zu)",
                     (size_t)(p - text), hn);
            break;
        }
    }
    if (r == VKVIT_OK) {
        out->size = size;
        out->header_size = hn;
        out->data_offset = 8 + hn;
        r = parse_header(root, out, label);
    }
    cJSON_Delete(root);
    free(text);
    if (r != VKVIT_OK) vkvit__safetensors_free(out);
    return r;
}

void vkvit__safetensors_free(vkvit__safetensors *st) {
    if (!st) return;
    free(st->tensors);
    free(st->meta);
    free(st->strings);
    memset(st, 0, sizeof *st);
}

const vkvit__st_tensor *vkvit__safetensors_find(const vkvit__safetensors *st, const char *name) {
    uint32_t lo = 0, hi = st->n_tensors;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->tensors[mid].name, name);
        if (c == 0) return &st->tensors[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const char *vkvit__safetensors_meta(const vkvit__safetensors *st, const char *key) {
    uint32_t lo = 0, hi = st->n_meta;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->meta[mid].key, key);
        if (c == 0) return st->meta[mid].value;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* fp32 -> fp16 (IEEE binary16), round to nearest even. Values beyond the fp16 range become +-inf: the caller
 * rejects them first. */
uint16_t vkvit__f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    if (exp == 0xffu) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0)); /* inf / NaN */
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) { /* subnormal half (or zero) */
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e), half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++; /* may carry into the exponent: still correct */
    return (uint16_t)(sign | half);
}

bool vkvit__f32_to_f16_array(const float *restrict src, uint16_t *restrict dst, size_t n) {
    /* Branch-free, so compilers vectorise it (the technique of Marat Dukhan's FP16 library): 4|x| (|x| * 2^112 *
     * 2^-110; inf from 2^16 up) is added to a power of two 2^13 times larger (at least 2^-9: fp16's subnormal
     * step, times 4, is then the sum's ulp), so the FPU's round-to-nearest-even rounds to the fp16 grid and the
     * sum's exponent and low mantissa bits are the fp16 pattern. Equal to vkvit__f32_to_f16 for every |x| <= 65504
     * (all 2^32 inputs compared when it was written; test_model_file checks a sample). */
    uint32_t largest = 0; /* the largest |x| bit pattern: beyond 65504's (0x477fe000) is out of range, NaN included */
    for (size_t j = 0; j < n; j++) {
        uint32_t x, bits;
        memcpy(&x, &src[j], 4);
        const uint32_t a = x & 0x7fffffffu;
        float magnitude, rounder;
        memcpy(&magnitude, &a, 4);
        magnitude = magnitude * 0x1.0p+112f * 0x1.0p-110f;
        uint32_t bias = (a << 1) & 0xff000000u; /* x's exponent field, in the top byte */
        bias = bias < 0x71000000u ? 0x71000000u : bias;
        const uint32_t rounder_bits = (bias >> 1) + 0x07800000u;
        memcpy(&rounder, &rounder_bits, 4);
        const float sum = rounder + magnitude;
        memcpy(&bits, &sum, 4);
        largest = a > largest ? a : largest;
        dst[j] = (uint16_t)(((x >> 16) & 0x8000u) | (((bits >> 13) & 0x7c00u) + (bits & 0x0fffu)));
    }
    return largest <= 0x477fe000u;
}
