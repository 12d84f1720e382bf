// SPDX-License-Identifier: Apache-2.0
/* Reading tests/golden/ files in C tests (header-only; every function is static inline, so a test pays only for
 * what it calls).
 *
 *   vt_golden_list(pattern, &paths)      sorted paths matching a glob under the source tree, e.g.
 *                                        "tests/golden/ops/vit5_attention_*.safetensors"; returns the count
 *   vt_golden_open(path, &g)             reads and parses one safetensors file, and its `params` metadata as JSON
 *   vt_golden_f32(&g, name, &numel)      a tensor converted to a malloc'ed float32 array (NULL if absent)
 *   vt_golden_shape(&g, name)            the tensor's table entry (shape, ndim) or NULL
 *   vt_json_num/_bool/_str/_dims(...)    typed fields of g.params (cJSON) with a default
 *   vt_golden_close(&g), vt_golden_list_free(paths, n)
 *
 * Golden files are produced by tools/reference/make_goldens.py: `in.*` inputs, `w.*` weights (state-dict names),
 * `out.*` expected outputs, metadata `op` and `params` (see tests/golden/README.md). Failures here are fatal to
 * the test (exit 1 with the reason): a golden that cannot be read is a broken checkout, not a kernel bug. */
#ifndef VKVIT_TEST_GOLDEN_UTIL_H
#define VKVIT_TEST_GOLDEN_UTIL_H

#include "model/safetensors.h"

#include <cjson/cJSON.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef VKVIT_SOURCE_DIR
#define VKVIT_SOURCE_DIR "."
#endif

typedef struct vt_golden {
    char path[4608];
    uint8_t *data;                          /* the file image */
    size_t size;
    vkvit__safetensors st;                  /* tensor table into `data` */
    const char *op;                         /* metadata "op", "" if absent */
    cJSON *params;                          /* metadata "params" parsed, or an empty object */
} vt_golden;

static inline const char *vt_golden_name(const vt_golden *g) {
    const char *s = strrchr(g->path, '/');
    return s ? s + 1 : g->path;
}

/* Paths (malloc'ed, sorted) of the files matching `pattern`, relative to the source tree. */
static inline size_t vt_golden_list(const char *pattern, char ***paths) {
    char full[1024];
    snprintf(full, sizeof full, "%s/%s", VKVIT_SOURCE_DIR, pattern);
    glob_t gl;
    *paths = NULL;
    if (glob(full, 0, NULL, &gl) != 0) return 0;
    char **out = calloc(gl.gl_pathc ? gl.gl_pathc : 1, sizeof *out);
    for (size_t i = 0; i < gl.gl_pathc; i++) out[i] = strdup(gl.gl_pathv[i]);
    size_t n = gl.gl_pathc;
    globfree(&gl);
    *paths = out;
    return n;
}

static inline void vt_golden_list_free(char **paths, size_t n) {
    for (size_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

static inline void vt_golden_open(const char *path, vt_golden *g) {
    memset(g, 0, sizeof *g);
    snprintf(g->path, sizeof g->path, "%s", path);
    vkvit_result r = vkvit__read_file(path, (size_t)1 << 30, &g->data, &g->size);
    if (r == VKVIT_OK) r = vkvit__safetensors_parse(g->data, g->size, vt_golden_name(g), &g->st);
    if (r != VKVIT_OK) {
        fprintf(stderr, "FATAL: golden %s: %s: %s\n", path, vkvit_result_name(r), vkvit_last_error());
        exit(1);
    }
    const char *op = vkvit__safetensors_meta(&g->st, "op");
    g->op = op ? op : "";
    const char *params = vkvit__safetensors_meta(&g->st, "params");
    g->params = params ? cJSON_Parse(params) : NULL;
    if (params && !cJSON_IsObject(g->params)) {
        fprintf(stderr, "FATAL: golden %s: metadata 'params' is not a JSON object\n", path);
        exit(1);
    }
    if (!g->params) g->params = cJSON_CreateObject();
}

static inline void vt_golden_close(vt_golden *g) {
    cJSON_Delete(g->params);
    vkvit__safetensors_free(&g->st);
    free(g->data);
    memset(g, 0, sizeof *g);
}

static inline const vkvit__st_tensor *vt_golden_shape(const vt_golden *g, const char *name) {
    return vkvit__safetensors_find(&g->st, name);
}

/* The tensor `name` as float32 (converted from F16/BF16 if needed), malloc'ed; NULL when the file has no such
 * tensor. *numel (optional) receives the element count. */
static inline float *vt_golden_f32(const vt_golden *g, const char *name, size_t *numel) {
    const vkvit__st_tensor *t = vkvit__safetensors_find(&g->st, name);
    if (numel) *numel = t ? (size_t)t->numel : 0;
    if (!t) return NULL;
    float *out = malloc(t->numel ? (size_t)t->numel * sizeof(float) : sizeof(float));
    if (!out) {
        fprintf(stderr, "FATAL: golden %s: out of memory for %s\n", g->path, name);
        exit(1);
    }
    vkvit__st_convert_f32(t->dtype, g->data + t->offset, (size_t)t->numel, out);
    return out;
}

/* Like vt_golden_f32, but the tensor must exist. */
static inline float *vt_golden_f32_req(const vt_golden *g, const char *name, size_t *numel) {
    float *p = vt_golden_f32(g, name, numel);
    if (!p) {
        fprintf(stderr, "FATAL: golden %s has no tensor '%s'\n", g->path, name);
        exit(1);
    }
    return p;
}

static inline double vt_json_num(const cJSON *obj, const char *key, double def) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static inline bool vt_json_bool(const cJSON *obj, const char *key, bool def) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

static inline const char *vt_json_str(const cJSON *obj, const char *key, const char *def) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : def;
}

/* An array of non-negative integers (e.g. "q_shape": [2, 3, 5, 64]) into dims[cap]; returns the count (0 when the
 * key is missing or not such an array; at most cap entries are written). */
static inline uint32_t vt_json_dims(const cJSON *obj, const char *key, uint64_t *dims, uint32_t cap) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsArray(v)) return 0;
    uint32_t n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0) return 0;
        if (n < cap) dims[n] = (uint64_t)e->valuedouble;
        n++;
    }
    return n < cap ? n : cap;
}

#endif /* VKVIT_TEST_GOLDEN_UTIL_H */
