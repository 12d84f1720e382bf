// SPDX-License-Identifier: Apache-2.0
/* src/arch/arch_kit.h — what an architecture file (src/arch/<name>.c) uses to fill its row, so that it holds only
 * its own rules: strict JSON getters whose failures are one sentence naming the field (src/model/config.c), the
 * tensor-table writer (src/model/model_file.c), saturating counts for FLOP formulas, and describe's JSON helpers. */
#ifndef VKVIT_ARCH_KIT_H
#define VKVIT_ARCH_KIT_H

#include "arch/arch.h"
#include "model/config.h"
#include "model/model_file.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------------------------
 * Parsing `config` (src/model/config.c). `where` is the object's path for sentences ("config", "config.bias", or
 * "" for the top level); every getter returns VKVIT_OK or VKVIT_ERROR_BAD_MODEL_FILE with
 *     model '<label>': config.num_heads = 5 does not divide config.dim = 384
 * in vkvit_last_error(). A key that is missing, of the wrong JSON type or out of range is refused.
 * --------------------------------------------------------------------------------------------------------------- */

typedef struct vkvit__cfg_parser {
    const char *label;                      /* the file, for "model '<label>': ..." */
} vkvit__cfg_parser;

/* A failure: "model '<label>': <sentence>" in vkvit_last_error(), returning `code`. VKVIT_CFG_FAIL(p, ...) is the
 * refusal of a bad value (VKVIT_ERROR_BAD_MODEL_FILE). */
vkvit_result vkvit__cfg_error(const vkvit__cfg_parser *p, vkvit_result code, const char *fmt, ...) VKVIT_PRINTF(3, 4);
#define VKVIT_CFG_FAIL(p, ...) vkvit__cfg_error((p), VKVIT_ERROR_BAD_MODEL_FILE, __VA_ARGS__)
/* "a number", "a string", ... for sentences. */
const char *vkvit__cfg_kind(const cJSON *v);

/* An integer (a JSON number with an integral value) in [lo, hi]. */
vkvit_result vkvit__cfg_uint(const vkvit__cfg_parser *p, const cJSON *obj, const char *where, const char *key,
                             uint32_t lo, uint32_t hi, uint32_t *out);
vkvit_result vkvit__cfg_bool(const vkvit__cfg_parser *p, const cJSON *obj, const char *where, const char *key,
                             bool *out);
/* A norm eps in [1e-30, 1] / a RoPE base in [1, 1e12] (docs/model-format.md, "Limits"). */
vkvit_result vkvit__cfg_eps(const vkvit__cfg_parser *p, const cJSON *obj, const char *where, const char *key,
                            double *out);
vkvit_result vkvit__cfg_rope_base(const vkvit__cfg_parser *p, const cJSON *obj, const char *where, const char *key,
                                  double *out);
/* A string that is one of names[0 .. n); *out = its index. `choices` lists them for the sentence. */
vkvit_result vkvit__cfg_enum(const vkvit__cfg_parser *p, const cJSON *obj, const char *where, const char *key,
                             const char *const *names, int n, const char *choices, int *out);
/* Every key of obj is in allowed[0 .. n) (n <= 32) and appears once; missing keys are the getters' business. */
vkvit_result vkvit__cfg_keys(const vkvit__cfg_parser *p, const cJSON *obj, const char *where,
                             const char *const *allowed, int n);
/* obj[key] is a JSON object (*out); f receives "where.key" for sentences about it. */
vkvit_result vkvit__cfg_object(const vkvit__cfg_parser *p, const cJSON *obj, const char *where, const char *key,
                               char *f, size_t cap, const cJSON **out);
/* A typed object {"type": names[i], ...}: *kind_out = i, and only keys[i][0 .. nkeys[i]) may appear. */
vkvit_result vkvit__cfg_typed(const vkvit__cfg_parser *p, const cJSON *obj, const char *where, const char *key,
                              const char *const *names, int n, const char *choices, const char *const *const *keys,
                              const int *nkeys, char *f, size_t cap, const cJSON **out, int *kind_out);
/* config.image_size [H, W] (each in [1, 8192]), patch_size (dividing both) and in_chans (3); grid = image / patch. */
vkvit_result vkvit__cfg_image(const vkvit__cfg_parser *p, const cJSON *config, uint32_t image[2], uint32_t *patch,
                              uint32_t *in_chans, uint32_t grid[2]);

#define VKVIT_CFG_TRY(call)                                                                                   \
    do {                                                                                                      \
        vkvit_result r_ = (call);                                                                             \
        if (r_ != VKVIT_OK) return r_;                                                                        \
    } while (0)

/* ---------------------------------------------------------------------------------------------------------------
 * The tensor table (src/model/model_file.c): each call reports one expected tensor to the walk's visitor.
 * --------------------------------------------------------------------------------------------------------------- */

typedef struct vkvit__tensor_table {
    vkvit__tensor_visit_fn visit;
    void *user;
    bool stopped;                           /* the visitor returned false: later puts do nothing */
    char name[128];
} vkvit__tensor_table;

/* Tensor `name` of shape [d0, .., d_{ndim-1}]. */
void vkvit__put(vkvit__tensor_table *t, const char *name, uint32_t ndim, uint64_t d0, uint64_t d1, uint64_t d2,
                uint64_t d3);
/* Tensor "blocks.{i}.<suffix>". */
void vkvit__put_block(vkvit__tensor_table *t, uint32_t i, const char *suffix, uint32_t ndim, uint64_t d0, uint64_t d1,
                      uint64_t d2);

/* ---------------------------------------------------------------------------------------------------------------
 * Saturating counts for FLOP formulas: MUL(a, b, ...) and ADD(a, b, ...) stop at UINT64_MAX (the config limits keep
 * real models far below 2^64; absurd ones saturate).
 * --------------------------------------------------------------------------------------------------------------- */

uint64_t vkvit__sat_mul_n(const uint64_t *v, size_t n);
uint64_t vkvit__sat_add_n(const uint64_t *v, size_t n);
#define MUL(...) vkvit__sat_mul_n((const uint64_t[]){__VA_ARGS__}, \
                                  sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))
#define ADD(...) vkvit__sat_add_n((const uint64_t[]){__VA_ARGS__}, \
                                  sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

/* ---------------------------------------------------------------------------------------------------------------
 * describe
 * --------------------------------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------------------------------
 * Weight names (packed_after, host_only)
 * --------------------------------------------------------------------------------------------------------------- */

/* Whether `name` ends with `suffix` ("blocks.3.mlstm.q_proj.weight", "mlstm.q_proj.weight"). */
static inline bool vkvit__name_ends_with(const char *name, const char *suffix) {
    const size_t n = strlen(name), k = strlen(suffix);
    return n >= k && memcmp(name + n - k, suffix, k) == 0;
}

/* One line of `summary`: {"key": key, "text": the formatted text} appended to the array `lines`. */
static inline void vkvit__summary_line(cJSON *lines, const char *key, const char *fmt, ...) VKVIT_PRINTF(3, 4);
static inline void vkvit__summary_line(cJSON *lines, const char *key, const char *fmt, ...) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "key", key);
    cJSON_AddStringToObject(o, "text", text);
    cJSON_AddItemToArray(lines, o);
}

/* [a, b] as a JSON array of two numbers. */
static inline cJSON *vkvit__json_pair(uint32_t a, uint32_t b) {
    const double v[2] = {a, b};
    return cJSON_CreateDoubleArray(v, 2);
}

#endif /* VKVIT_ARCH_KIT_H */
