// SPDX-License-Identifier: Apache-2.0
/* Shared by the model-file tests (test_model_file.c, test_model_hostile.c): a one-behaviour-per-case harness, a tiny
 * in-memory safetensors writer with JSON overrides, and small valid vit5 / vil / resnet models whose tensor tables
 * are written out by hand from docs/model-format.md. Header-only. */
#ifndef VKVIT_MODEL_BUILDER_H
#define VKVIT_MODEL_BUILDER_H
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "model/model_file.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef VKVIT_SOURCE_DIR
#define VKVIT_SOURCE_DIR "."
#endif

/* ---------------------------------------------------------------------------------------------------------------
 * A minimal harness: one case = one behaviour; CHECK prints the expression and carries on.
 * --------------------------------------------------------------------------------------------------------------- */

static int g_passed, g_failed;
static bool g_ok;
static const char *g_case;

#define CHECK(cond)                                                                                           \
    do {                                                                                                      \
        if (!(cond)) {                                                                                        \
            g_ok = false;                                                                                     \
            fprintf(stderr, "    %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);                      \
        }                                                                                                     \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                                    \
    do {                                                                                                      \
        unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b);                        \
        if (a_ != b_) {                                                                                       \
            g_ok = false;                                                                                     \
            fprintf(stderr, "    %s:%d: %s == %s failed: %llu != %llu\n", __FILE__, __LINE__, #a, #b, a_, b_); \
        }                                                                                                     \
    } while (0)

static inline void run_case(const char *name, void (*fn)(void)) {
    g_case = name;
    g_ok = true;
    vkvit__error_clear();
    fn();
    if (g_ok) g_passed++;
    else g_failed++;
    printf("%s %s\n", g_ok ? "ok  " : "FAIL", name);
}
#define RUN(fn) run_case(#fn, fn)

/* The result must be `want` and the sentence must contain `text` (and start with the model label). */
static inline void expect_error(vkvit_result got, vkvit_result want, const char *text, const char *label) {
    const char *msg = vkvit_last_error();
    char prefix[256];
    snprintf(prefix, sizeof prefix, "model '%s': ", label);
    bool ok = got == want && strstr(msg, text) != NULL && strncmp(msg, prefix, strlen(prefix)) == 0;
    if (!ok) {
        g_ok = false;
        fprintf(stderr, "    want %s containing \"%s\"\n    got  %s: \"%s\"\n", vkvit_result_name(want), text,
                vkvit_result_name(got), msg);
    }
}

/* ---------------------------------------------------------------------------------------------------------------
 * A tiny safetensors writer. Tensors are laid out back to back in list order; raw JSON overrides let a case
 * corrupt one field of one entry. Element k of tensor j holds ((j * 31 + k) % 17 - 8) / 8, which F16 and BF16
 * represent exactly.
 * --------------------------------------------------------------------------------------------------------------- */

typedef struct tensor_def {
    char name[96];
    const char *dtype;                      /* "F32" | "F16" | "BF16" */
    uint32_t ndim;
    uint64_t shape[8];
    const char *dtype_json, *shape_json, *offsets_json; /* raw JSON overrides, NULL = from the fields */
    char offsets_buf[64];
} tensor_def;

#define MAX_DEFS 128

typedef struct builder {
    tensor_def t[MAX_DEFS];
    int n;
    cJSON *doc;                             /* the vkvit document */
    const char *meta_json;                  /* raw override of the whole __metadata__ value; "" = omit */
    const char *extra_json;                 /* raw members appended to the header object, starting with ',' */
} builder;

static const char *LABEL = "test.vkvit";

static inline void add_t(builder *b, const char *dtype, const char *name, uint32_t ndim, const uint64_t *shape) {
    if (b->n >= MAX_DEFS) {
        fprintf(stderr, "builder full\n");
        return;
    }
    tensor_def *t = &b->t[b->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dtype;
    t->ndim = ndim;
    memcpy(t->shape, shape, ndim * sizeof *shape);
}
#define T(b, dtype, name, ...)                                                                                \
    add_t((b), (dtype), (name), (uint32_t)(sizeof((uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t)),             \
          (uint64_t[]){__VA_ARGS__})

static inline tensor_def *find_t(builder *b, const char *name) {
    for (int i = 0; i < b->n; i++)
        if (strcmp(b->t[i].name, name) == 0) return &b->t[i];
    fprintf(stderr, "    test bug: no tensor %s in the builder\n", name);
    g_ok = false;
    return &b->t[0];
}

static inline void remove_t(builder *b, const char *name) {
    tensor_def *t = find_t(b, name);
    int i = (int)(t - b->t);
    memmove(&b->t[i], &b->t[i + 1], (size_t)(b->n - i - 1) * sizeof *t);
    b->n--;
}

static uint64_t numel_of(const tensor_def *t) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}
static uint64_t bytes_of(const tensor_def *t) { return numel_of(t) * (strcmp(t->dtype, "F32") == 0 ? 4 : 2); }

/* The byte range tensor `name` gets in the data section. */
static inline void range_of(builder *b, const char *name, uint64_t *begin, uint64_t *end) {
    uint64_t at = 0;
    for (int i = 0; i < b->n; i++) {
        if (strcmp(b->t[i].name, name) == 0) {
            *begin = at;
            *end = at + bytes_of(&b->t[i]);
            return;
        }
        at += bytes_of(&b->t[i]);
    }
    fprintf(stderr, "    test bug: no tensor %s\n", name);
    g_ok = false;
}

static inline float value_of(int j, uint64_t k) { return (float)((int)((j * 31 + k) % 17) - 8) / 8.0f; }

static uint16_t to_f16(float f) { /* exact for the small dyadic values above */
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) == 0) return (uint16_t)(u >> 16);
    uint32_t sign = (u >> 16) & 0x8000u, exp = (u >> 23) & 0xffu, mant = u & 0x7fffffu;
    return (uint16_t)(sign | ((exp - 127 + 15) << 10) | (mant >> 13));
}
static uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static inline void sb_put(sbuf *s, const char *fmt, ...) VKVIT_PRINTF(2, 3);
static inline void sb_put(sbuf *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (s->n + (size_t)need + 1 > s->cap) {
        s->cap = (s->n + (size_t)need + 1) * 2;
        s->p = realloc(s->p, s->cap);
    }
    va_start(ap, fmt);
    vsnprintf(s->p + s->n, s->cap - s->n, fmt, ap);
    va_end(ap);
    s->n += (size_t)need;
}

/* The file image (malloc'ed) for the builder's state. */
static uint8_t *build(builder *b, size_t *size) {
    sbuf h = {0};
    sb_put(&h, "{");
    bool first = true;
    if (!b->meta_json || b->meta_json[0]) {
        if (b->meta_json) {
            sb_put(&h, "\"__metadata__\":%s", b->meta_json);
        } else {
            char *doc = cJSON_PrintUnformatted(b->doc);
            cJSON *s = cJSON_CreateString(doc);
            char *quoted = cJSON_PrintUnformatted(s);
            sb_put(&h, "\"__metadata__\":{\"vkvit\":%s}", quoted);
            cJSON_free(quoted);
            cJSON_Delete(s);
            cJSON_free(doc);
        }
        first = false;
    }
    uint64_t at = 0;
    for (int i = 0; i < b->n; i++) {
        const tensor_def *t = &b->t[i];
        sb_put(&h, "%s\"%s\":{\"dtype\":", first ? "" : ",", t->name);
        first = false;
        if (t->dtype_json) sb_put(&h, "%s", t->dtype_json);
        else sb_put(&h, "\"%s\"", t->dtype);
        sb_put(&h, ",\"shape\":");
        if (t->shape_json) {
            sb_put(&h, "%s", t->shape_json);
        } else {
            sb_put(&h, "[");
            for (uint32_t d = 0; d < t->ndim; d++) sb_put(&h, "%s%llu", d ? "," : "", (unsigned long long)t->shape[d]);
            sb_put(&h, "]");
        }
        uint64_t sz = bytes_of(t);
        if (t->offsets_json) sb_put(&h, ",\"data_offsets\":%s}", t->offsets_json);
        else sb_put(&h, ",\"data_offsets\":[%llu,%llu]}", (unsigned long long)at, (unsigned long long)(at + sz));
        at += sz;
    }
    if (b->extra_json) sb_put(&h, "%s", b->extra_json);
    sb_put(&h, "}");
    while (h.n % 8) sb_put(&h, " ");

    *size = 8 + h.n + (size_t)at;
    uint8_t *img = malloc(*size);
    for (int i = 0; i < 8; i++) img[i] = (uint8_t)((uint64_t)h.n >> (8 * i));
    memcpy(img + 8, h.p, h.n);
    uint8_t *d = img + 8 + h.n;
    for (int j = 0; j < b->n; j++) {
        const tensor_def *t = &b->t[j];
        uint64_t n = numel_of(t);
        for (uint64_t k = 0; k < n; k++) {
            float v = value_of(j, k);
            if (strcmp(t->dtype, "F32") == 0) {
                uint32_t u;
                memcpy(&u, &v, 4);
                for (int i = 0; i < 4; i++) *d++ = (uint8_t)(u >> (8 * i));
            } else {
                uint16_t u = strcmp(t->dtype, "F16") == 0 ? to_f16(v) : to_bf16(v);
                *d++ = (uint8_t)u;
                *d++ = (uint8_t)(u >> 8);
            }
        }
    }
    free(h.p);
    return img;
}

/* Sets `path` ("config.bias.qkv") in the vkvit document to the JSON `value`; NULL deletes it; a leading '+' adds
 * the key again even if present (a duplicate key). */
static inline void set_path(cJSON *doc, const char *path, const char *value) {
    bool dup = path[0] == '+';
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path + dup);
    cJSON *obj = doc;
    char *key = buf, *dot;
    while ((dot = strchr(key, '.')) != NULL) {
        *dot = '\0';
        obj = cJSON_GetObjectItemCaseSensitive(obj, key);
        if (!obj) {
            fprintf(stderr, "    test bug: no object at %s\n", path);
            g_ok = false;
            return;
        }
        key = dot + 1;
    }
    if (!value) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
        return;
    }
    cJSON *v = cJSON_Parse(value);
    if (!v) {
        fprintf(stderr, "    test bug: bad JSON value %s\n", value);
        g_ok = false;
        return;
    }
    if (!dup && cJSON_GetObjectItemCaseSensitive(obj, key)) cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v);
    else cJSON_AddItemToObject(obj, key, v);
}

static inline void builder_free(builder *b) { cJSON_Delete(b->doc); }

/* ---------------------------------------------------------------------------------------------------------------
 * The small models, with their tensor tables written out by hand from docs/model-format.md (a golden list,
 * independent of the library's table; tests/format/test_format_tables.py checks them against the C rows, through
 * tests/tools/format_table.c).
 * --------------------------------------------------------------------------------------------------------------- */

static const char *VIT5_DOC =
    "{\"format_version\":1,\"architecture\":\"vit5\",\"flavour\":\"nvsubq\",\"name\":\"vit5-small-test\","
    "\"config\":{\"image_size\":[8,8],\"patch_size\":4,\"in_chans\":3,\"dim\":8,\"depth\":2,\"num_heads\":2,"
    "\"mlp_hidden\":16,\"mlp_activation\":\"gelu\",\"num_registers\":1,\"has_cls\":true,\"readout\":\"cls\","
    "\"neck_dim\":0,\"qk_norm\":true,\"norm_eps\":1e-6,\"qk_norm_eps\":1e-6,\"rope_base\":10000,"
    "\"reg_rope_base\":100,\"rope_pairing\":\"split_half\",\"token_layout\":\"patches_cls_regs\","
    "\"layer_scale\":true,\"grn\":false,"
    "\"bias\":{\"patch_embed\":true,\"qkv\":false,\"proj\":true,\"mlp\":true,\"head\":true},\"num_classes\":3},"
    "\"preprocess\":{\"image_size\":[8,8],\"resize_shorter\":8,\"interpolation\":\"bicubic\","
    "\"mean\":[0.485,0.456,0.406],\"std\":[0.229,0.224,0.225]},"
    "\"labels\":[\"tench\",\"goldfish\",\"great white shark\"]}";

static inline void make_vit5(builder *b) {
    memset(b, 0, sizeof *b);
    b->doc = cJSON_Parse(VIT5_DOC);
    T(b, "F32", "patch_embed.weight", 8, 3, 4, 4);
    T(b, "F32", "patch_embed.bias", 8);
    T(b, "F32", "pos_embed", 1, 4, 8);
    T(b, "F32", "cls_token", 1, 1, 8);
    T(b, "F32", "reg_token", 1, 1, 8);
    for (int i = 0; i < 2; i++) {
        char n[96];
#define BT(dtype, suffix, ...) (snprintf(n, sizeof n, "blocks.%d.%s", i, suffix), T(b, dtype, n, __VA_ARGS__))
        BT("F32", "input_norm.weight", 8);
        BT("F16", "sequence_mixer.qkv.weight", 24, 8);
        BT("F32", "sequence_mixer.proj.weight", 8, 8);
        BT("F32", "sequence_mixer.proj.bias", 8);
        BT("F32", "sequence_mixer.q_norm.weight", 4);
        BT("F32", "sequence_mixer.k_norm.weight", 4);
        BT("F32", "mlp_norm.weight", 8);
        BT("BF16", "mlp.layer1.weight", 16, 8);
        BT("F32", "mlp.layer1.bias", 16);
        BT("F32", "mlp.layer2.weight", 8, 16);
        BT("F32", "mlp.layer2.bias", 8);
        BT("F32", "ls_attn.gamma", 8);
        BT("F32", "ls_mlp.gamma", 8);
#undef BT
    }
    T(b, "F32", "out_norm.weight", 8);
    T(b, "F32", "out_proj.weight", 3, 8);
    T(b, "F32", "out_proj.bias", 3);
}
#define VIT5_SMALL_PARAMS 1643u /* 384+8+32+8+8 + 2*(8+192+64+8+4+4+8+128+16+128+8+8+8) + 8+24+3 */

static const char *VIL_DOC =
    "{\"format_version\":1,\"architecture\":\"vil\",\"flavour\":\"seed\",\"name\":\"vil-small-test\","
    "\"config\":{\"image_size\":[8,8],\"patch_size\":4,\"in_chans\":3,\"dim\":16,\"depth\":2,\"inner_dim\":64,"
    "\"num_heads\":4,\"qkv_block_size\":4,\"conv_kernel\":4,\"pooling\":\"bilateral_avg\",\"norm_eps\":1e-5,"
    "\"head_norm_eps\":1e-6,\"num_classes\":2},"
    "\"preprocess\":{\"image_size\":[8,8],\"resize_shorter\":9,\"interpolation\":\"bilinear\","
    "\"mean\":[0.5,0.5,0.5],\"std\":[0.5,0.5,0.5]}}";

static inline void make_vil(builder *b, bool seed) {
    memset(b, 0, sizeof *b);
    b->doc = cJSON_Parse(VIL_DOC);
    if (!seed) set_path(b->doc, "flavour", "\"nxai\"");
    T(b, "F32", "patch_embed.proj.weight", 16, 3, 4, 4);
    T(b, "F32", "patch_embed.proj.bias", 16);
    T(b, "F32", "pos_embed.embed", 1, 2, 2, 16);
    for (int i = 0; i < 2; i++) {
        char n[96];
#define BT(dtype, suffix, ...) (snprintf(n, sizeof n, "blocks.%d.%s", i, suffix), T(b, dtype, n, __VA_ARGS__))
        BT("F32", "norm1.weight", 16);
        BT("F16", "mlstm.proj_up.weight", 128, 16);
        BT("F32", "mlstm.conv1d.weight", 64, 1, 4);
        BT("F32", "mlstm.conv1d.bias", 64);
        BT("F32", "mlstm.q_proj.weight", 16, 4, 4);
        BT("F32", "mlstm.k_proj.weight", 16, 4, 4);
        BT("F32", "mlstm.v_proj.weight", 16, 4, 4);
        BT("BF16", "mlstm.igate.weight", 4, 192);
        BT("F32", "mlstm.igate.bias", 4);
        BT("F32", "mlstm.fgate.weight", 4, 192);
        BT("F32", "mlstm.fgate.bias", 4);
        BT("F32", "mlstm.outnorm.weight", 64);
        if (seed) BT("F32", "mlstm.outnorm.bias", 64);
        BT("F16", "mlstm.proj_down.weight", 16, 64);
        BT("F32", "mlstm.learnable_skip", 64);
        if (seed) BT("F32", "mlstm.layerscale", 64);
#undef BT
    }
    T(b, "F32", "legacy_norm.weight", 16);
    T(b, "F32", "norm.weight", 16);
    T(b, "F32", "norm.bias", 16);
    T(b, "F32", "head.weight", 2, 16);
    T(b, "F32", "head.bias", 2);
}
#define VIL_SMALL_SEED_PARAMS 12882u /* 768+16+64 + 2*5976 + 16+16+16+32+2 */
#define VIL_SMALL_NXAI_PARAMS (12882u - 4 * 64)

/* resnet: all three branches, LayerNorm with bias before the condition mixer, swiglu MLP, Tc = 3 tokens. */
static const char *RESNET_DOC =
    "{\"format_version\":1,\"architecture\":\"resnet\",\"flavour\":\"generic\",\"name\":\"resnet-small-test\","
    "\"config\":{\"image_size\":[8,8],\"patch_size\":4,\"in_chans\":3,\"dim\":8,\"depth\":2,\"pos_embed\":true,"
    "\"block\":{\"input_norm\":{\"type\":\"rmsnorm\",\"eps\":1e-6},"
    "\"sequence_mixer\":{\"type\":\"attention\",\"num_heads\":2,\"qk_norm\":true,\"rope\":true,\"rope_base\":10000,"
    "\"causal\":false,\"bias\":true},"
    "\"condition_mixer_norm\":{\"type\":\"layernorm\",\"eps\":1e-5,\"bias\":true},"
    "\"condition_mixer\":{\"type\":\"attention\",\"num_heads\":2,\"qk_norm\":false,\"causal\":true},"
    "\"mlp_norm\":{\"type\":\"rmsnorm\",\"eps\":1e-6},"
    "\"mlp\":{\"type\":\"mlp\",\"activation\":\"swiglu\",\"hidden\":12,\"bias\":false}},"
    "\"condition_tokens\":3,\"condition_dim\":8,\"readout\":\"gap\","
    "\"out_norm\":{\"type\":\"layernorm\",\"eps\":1e-6,\"bias\":false},"
    "\"bias\":{\"patch_embed\":false,\"head\":true},\"num_classes\":3},"
    "\"preprocess\":{\"image_size\":[8,8],\"resize_shorter\":8,\"interpolation\":\"bicubic\","
    "\"mean\":[0.485,0.456,0.406],\"std\":[0.229,0.224,0.225]}}";

static inline void make_resnet(builder *b) {
    memset(b, 0, sizeof *b);
    b->doc = cJSON_Parse(RESNET_DOC);
    T(b, "F32", "patch_embed.weight", 8, 3, 4, 4);
    T(b, "F32", "pos_embed", 1, 2, 2, 8);
    for (int i = 0; i < 2; i++) {
        char n[96];
#define BT(dtype, suffix, ...) (snprintf(n, sizeof n, "blocks.%d.%s", i, suffix), T(b, dtype, n, __VA_ARGS__))
        BT("F32", "input_norm.weight", 8);
        BT("F16", "sequence_mixer.qkv_proj.weight", 24, 8);
        BT("F32", "sequence_mixer.qkv_proj.bias", 24);
        BT("F32", "sequence_mixer.out_proj.weight", 8, 8);
        BT("F32", "sequence_mixer.out_proj.bias", 8);
        BT("F32", "condition_mixer_norm.weight", 8);
        BT("F32", "condition_mixer_norm.bias", 8);
        BT("BF16", "condition_mixer.kv_proj.weight", 16, 8);
        BT("F32", "condition_mixer.q_proj.weight", 8, 8);
        BT("F32", "condition_mixer.out_proj.weight", 8, 8);
        BT("F32", "mlp_norm.weight", 8);
        BT("F32", "mlp.layer1.weight", 24, 8);
        BT("F32", "mlp.layer2.weight", 8, 12);
#undef BT
    }
    T(b, "F32", "out_norm.weight", 8);
    T(b, "F32", "out_proj.weight", 3, 8);
    T(b, "F32", "out_proj.bias", 3);
}
/* 384 + 32 + 2 * (8 + 192+24 + 64+8 + 8+8 + 128+64+64 + 8 + 192+96) + 8 + 24+3; tools/vkvit_file.py agrees */
#define RESNET_SMALL_PARAMS 2179u

static inline vkvit_result parse_builder(builder *b, vkvit__model_file *mf, uint8_t **img) {
    size_t size;
    *img = build(b, &size);
    return vkvit__model_file_parse(*img, size, LABEL, mf);
}

/* Builds, parses and expects failure `want` with `text` in the sentence. */
static inline void expect_build_fails(builder *b, vkvit_result want, const char *text) {
    vkvit__model_file mf;
    uint8_t *img;
    vkvit_result r = parse_builder(b, &mf, &img);
    expect_error(r, want, text, LABEL);
    if (r == VKVIT_OK) vkvit__model_file_close(&mf);
    CHECK(mf.label == NULL && mf.st.tensors == NULL && mf.cfg.name == NULL); /* zeroed on failure */
    free(img);
}

/* A config document alone (no tensors). */
static inline vkvit_result parse_doc(const char *json, vkvit__model_config *cfg) {
    return vkvit__model_config_parse(json, strlen(json), LABEL, cfg);
}

#endif /* VKVIT_MODEL_BUILDER_H */
