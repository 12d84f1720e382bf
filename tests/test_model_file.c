/* Model-file reader tests: safetensors parsing, the `vkvit` config, the tensor table, parameter and FLOP counts, and a
 * hostile-file sweep. Every valid file here is built in memory by a tiny safetensors writer; every bad one is a valid
 * file with one mutation, and each must fail with a specific result code and a sentence that names the offending
 * tensor or field. Also parses every tests/golden/models/ *.vkvit when that directory exists. No GPU needed.
 *
 * Last line: "N passed, M failed"; exit status 1 on any failure. */
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

static void run_case(const char *name, void (*fn)(void)) {
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
static void expect_error(vkvit_result got, vkvit_result want, const char *text, const char *label) {
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

static void add_t(builder *b, const char *dtype, const char *name, uint32_t ndim, const uint64_t *shape) {
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

static tensor_def *find_t(builder *b, const char *name) {
    for (int i = 0; i < b->n; i++)
        if (strcmp(b->t[i].name, name) == 0) return &b->t[i];
    fprintf(stderr, "    test bug: no tensor %s in the builder\n", name);
    g_ok = false;
    return &b->t[0];
}

static void remove_t(builder *b, const char *name) {
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
static void range_of(builder *b, const char *name, uint64_t *begin, uint64_t *end) {
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

static float value_of(int j, uint64_t k) { return (float)((int)((j * 31 + k) % 17) - 8) / 8.0f; }

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

static void sb_put(sbuf *s, const char *fmt, ...) VKVIT_PRINTF(2, 3);
static void sb_put(sbuf *s, const char *fmt, ...) {
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
static void set_path(cJSON *doc, const char *path, const char *value) {
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

static void builder_free(builder *b) { cJSON_Delete(b->doc); }

/* ---------------------------------------------------------------------------------------------------------------
 * The two small models, with their tensor tables written out by hand from docs/model-format.md (a golden list,
 * independent of the library's table).
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

static void make_vit5(builder *b) {
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

static void make_vil(builder *b, bool seed) {
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

static void make_resnet(builder *b) {
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

static vkvit_result parse_builder(builder *b, vkvit__model_file *mf, uint8_t **img) {
    size_t size;
    *img = build(b, &size);
    return vkvit__model_file_parse(*img, size, LABEL, mf);
}

/* Builds, parses and expects failure `want` with `text` in the sentence. */
static void expect_build_fails(builder *b, vkvit_result want, const char *text) {
    vkvit__model_file mf;
    uint8_t *img;
    vkvit_result r = parse_builder(b, &mf, &img);
    expect_error(r, want, text, LABEL);
    if (r == VKVIT_OK) vkvit__model_file_close(&mf);
    CHECK(mf.label == NULL && mf.st.tensors == NULL && mf.cfg.name == NULL); /* zeroed on failure */
    free(img);
}

/* A config document alone (no tensors). */
static vkvit_result parse_doc(const char *json, vkvit__model_config *cfg) {
    return vkvit__model_config_parse(json, strlen(json), LABEL, cfg);
}

/* ---------------------------------------------------------------------------------------------------------------
 * Valid files
 * --------------------------------------------------------------------------------------------------------------- */

typedef struct table_walk {
    const builder *b;
    int i;
    bool ok;
} table_walk;

static bool walk_compare(void *user, const char *name, uint32_t ndim, const uint64_t *shape) {
    table_walk *w = user;
    const tensor_def *t = w->i < w->b->n ? &w->b->t[w->i] : NULL;
    bool same = t && strcmp(t->name, name) == 0 && t->ndim == ndim;
    for (uint32_t d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (!same) {
        fprintf(stderr, "    table entry %d: library says %s, the document says %s\n", w->i, name, t ? t->name : "(end)");
        w->ok = false;
    }
    w->i++;
    return true;
}

static void model_parses_small_vit5(void) {
    builder b;
    make_vit5(&b);
    vkvit__model_file mf;
    uint8_t *img;
    vkvit_result r = parse_builder(&b, &mf, &img);
    CHECK(r == VKVIT_OK);
    if (r != VKVIT_OK) fprintf(stderr, "    %s\n", vkvit_last_error());
    if (r == VKVIT_OK) {
        const vkvit__model_config *c = &mf.cfg;
        CHECK(c->arch == VKVIT_ARCH_VIT5 && c->flavour == VKVIT_FLAVOUR_NVSUBQ);
        CHECK(strcmp(c->name, "vit5-small-test") == 0);
        CHECK(c->vit5.dim == 8 && c->vit5.depth == 2 && c->vit5.num_heads == 2 && c->vit5.head_dim == 4);
        CHECK(c->vit5.grid[0] == 2 && c->vit5.grid[1] == 2 && c->vit5.num_patches == 4);
        CHECK_EQ_U64(c->vit5.num_tokens, 6); /* 4 patches + CLS + 1 register */
        CHECK(c->vit5.readout == VKVIT_READOUT_CLS && c->vit5.head_in == 8);
        CHECK(c->vit5.rope_pairing == VKVIT_ROPE_SPLIT_HALF && c->vit5.token_layout == VKVIT_TOKENS_PATCHES_CLS_REGS);
        CHECK(c->vit5.bias.patch_embed && !c->vit5.bias.qkv && c->vit5.bias.proj && c->vit5.bias.head);
        CHECK(c->vit5.norm_eps == 1e-6 && c->vit5.rope_base == 10000.0 && c->vit5.reg_rope_base == 100.0);
        CHECK(c->preprocess.resize_shorter == 8 && c->preprocess.interpolation == VKVIT_INTERP_BICUBIC);
        CHECK(c->preprocess.mean[1] == 0.456 && c->preprocess.std[2] == 0.225);
        CHECK(c->n_labels == 3 && strcmp(c->labels[2], "great white shark") == 0);
        CHECK_EQ_U64(mf.st.n_tensors, (uint32_t)b.n);
        CHECK_EQ_U64(vkvit__model_param_count(c), VIT5_SMALL_PARAMS);
        uint64_t sum = 0;
        for (uint32_t i = 0; i < mf.st.n_tensors; i++) sum += mf.st.tensors[i].numel;
        CHECK_EQ_U64(sum, VIT5_SMALL_PARAMS);
        table_walk w = {&b, 0, true};
        vkvit__model_tensor_table(c, walk_compare, &w);
        CHECK(w.ok && w.i == b.n);
        vkvit__model_file_close(&mf);
        CHECK(mf.label == NULL);
        vkvit__model_file_close(&mf); /* twice is fine */
    }
    free(img);
    builder_free(&b);
}

static void model_parses_small_resnet(void) {
    builder b;
    make_resnet(&b);
    vkvit__model_file mf;
    uint8_t *img;
    vkvit_result r = parse_builder(&b, &mf, &img);
    CHECK(r == VKVIT_OK);
    if (r != VKVIT_OK) fprintf(stderr, "    %s\n", vkvit_last_error());
    if (r == VKVIT_OK) {
        const vkvit__model_config *c = &mf.cfg;
        const vkvit__resnet_config *v = &c->resnet;
        CHECK(c->arch == VKVIT_ARCH_RESNET && c->flavour == VKVIT_FLAVOUR_GENERIC);
        CHECK(strcmp(vkvit__arch_name(c->arch), "resnet") == 0 && strcmp(vkvit__flavour_name(c->flavour), "generic") == 0);
        CHECK(v->dim == 8 && v->depth == 2 && v->pos_embed && v->grid[0] == 2 && v->grid[1] == 2);
        CHECK_EQ_U64(v->num_tokens, 4);
        CHECK(v->input_norm.kind == VKVIT_RN_NORM_RMSNORM && v->input_norm.eps == 1e-6);
        CHECK(v->seq.enabled && v->seq.num_heads == 2 && v->seq_head_dim == 4 && v->seq.qk_norm && v->seq.rope &&
              !v->seq.causal && v->seq.bias && v->seq.rope_base == 10000.0);
        CHECK(v->condition_mixer_norm.kind == VKVIT_RN_NORM_LAYERNORM && v->condition_mixer_norm.bias &&
              v->condition_mixer_norm.eps == 1e-5);
        CHECK(v->cond.enabled && v->cond.num_heads == 2 && v->cond_head_dim == 4 && !v->cond.qk_norm && v->cond.causal);
        CHECK(v->mlp.enabled && v->mlp.activation == VKVIT_RN_ACT_SWIGLU && v->mlp.hidden == 12 &&
              v->mlp_glu_factor == 2 && !v->mlp.bias);
        CHECK(v->condition_tokens == 3 && v->condition_dim == 8);
        CHECK(v->out_norm.kind == VKVIT_RN_NORM_LAYERNORM && !v->out_norm.bias);
        CHECK(!v->bias.patch_embed && v->bias.head && v->num_classes == 3);
        CHECK_EQ_U64(vkvit__model_num_classes(c), 3);
        CHECK_EQ_U64(vkvit__model_param_count(c), RESNET_SMALL_PARAMS);
        table_walk w = {&b, 0, true};
        vkvit__model_tensor_table(c, walk_compare, &w);
        CHECK(w.ok && w.i == b.n);
        /* tools/vkvit_file.py flops_breakdown() of the same document */
        vkvit__flops f;
        vkvit__model_flops_breakdown(c, &f);
        CHECK_EQ_U64(f.patch_embed, 3072);
        CHECK_EQ_U64(f.pos_embed, 32);
        CHECK_EQ_U64(f.mixer_per_block, 2560);
        CHECK_EQ_U64(f.cond_mixer_per_block, 2176);
        CHECK_EQ_U64(f.block, 7488);
        CHECK_EQ_U64(f.blocks, 14976);
        CHECK_EQ_U64(f.readout, 32);
        CHECK_EQ_U64(f.out_norm, 40);
        CHECK_EQ_U64(f.head, 48);
        CHECK_EQ_U64(f.total, 18200);
        vkvit__model_file_close(&mf);
    }
    free(img);
    builder_free(&b);
}

/* A resnet document edited with (path, JSON) pairs (NULL-terminated), printed, parsed as a config alone. */
static vkvit_result parse_resnet_doc(const char *const *sets, vkvit__model_config *cfg) {
    cJSON *doc = cJSON_Parse(RESNET_DOC);
    for (int i = 0; sets[i]; i += 2) set_path(doc, sets[i], sets[i + 1]);
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    vkvit_result r = parse_doc(text, cfg);
    free(text);
    return r;
}

/* FLOPs and parameters of an ImageNet-sized resnet, cross-checked against tools/vkvit_file.py. */
static void flops_and_params_match_python_for_resnet(void) {
    static const char *const BIG[] = {
        "config.image_size", "[224,224]", "preprocess.image_size", "[224,224]", "preprocess.resize_shorter", "256",
        "config.patch_size", "16", "config.dim", "384", "config.depth", "12", "config.condition_tokens", "77",
        "config.condition_dim", "384", "config.num_classes", "1000", "config.block.sequence_mixer.num_heads", "6",
        "config.block.condition_mixer.num_heads", "6", "config.block.mlp.activation", "\"gelu\"",
        "config.block.mlp.hidden", "1536", NULL};
    vkvit__model_config cfg;
    vkvit_result r = parse_resnet_doc(BIG, &cfg);
    CHECK(r == VKVIT_OK);
    if (r != VKVIT_OK) fprintf(stderr, "    %s\n", vkvit_last_error());
    vkvit__flops f;
    vkvit__model_flops_breakdown(&cfg, &f);
    CHECK_EQ_U64(f.mixer_per_block, 290217984);
    CHECK_EQ_U64(f.cond_mixer_per_block, 184203264);
    CHECK_EQ_U64(f.block, 937972224);
    CHECK_EQ_U64(f.total, 11372192640ull);
    CHECK_EQ_U64(vkvit__model_param_count(&cfg), 29103976);
    vkvit__model_config_free(&cfg);

    /* The same with a global [B, C] condition and no MLP branch. */
    const char *global[64];
    int n = 0;
    for (; BIG[n]; n++) global[n] = BIG[n];
    const char *more[] = {"config.condition_tokens", "0", "config.block.mlp", "{\"type\":\"identity\"}",
                          "config.block.mlp_norm", "{\"type\":\"identity\"}", NULL};
    for (int i = 0; more[i]; i++) global[n++] = more[i];
    global[n] = NULL;
    r = parse_resnet_doc(global, &cfg);
    CHECK(r == VKVIT_OK);
    if (r != VKVIT_OK) fprintf(stderr, "    %s\n", vkvit_last_error());
    vkvit__model_flops_breakdown(&cfg, &f);
    CHECK_EQ_U64(f.cond_mixer_per_block, 116496384);
    CHECK_EQ_U64(f.block, 407316480);
    CHECK_EQ_U64(f.total, 5004323712ull);
    CHECK_EQ_U64(vkvit__model_param_count(&cfg), 14943592);
    CHECK(!cfg.resnet.mlp.enabled && cfg.resnet.mlp_norm.kind == VKVIT_RN_NORM_IDENTITY);
    vkvit__model_config_free(&cfg);
}

static void model_parses_small_vil_in_both_flavours(void) {
    for (int seed = 1; seed >= 0; seed--) {
        builder b;
        make_vil(&b, seed);
        vkvit__model_file mf;
        uint8_t *img;
        vkvit_result r = parse_builder(&b, &mf, &img);
        CHECK(r == VKVIT_OK);
        if (r != VKVIT_OK) fprintf(stderr, "    %s\n", vkvit_last_error());
        if (r == VKVIT_OK) {
            const vkvit__vil_config *v = &mf.cfg.vil;
            CHECK(mf.cfg.arch == VKVIT_ARCH_VIL);
            CHECK(mf.cfg.flavour == (seed ? VKVIT_FLAVOUR_SEED : VKVIT_FLAVOUR_NXAI));
            CHECK(v->dim == 16 && v->inner_dim == 64 && v->num_heads == 4 && v->head_dim == 16);
            CHECK(v->num_proj_heads == 16 && v->num_tokens == 4 && v->conv_kernel == 4);
            CHECK(mf.cfg.n_labels == 0 && mf.cfg.labels == NULL);
            CHECK(mf.cfg.preprocess.interpolation == VKVIT_INTERP_BILINEAR);
            CHECK_EQ_U64(vkvit__model_param_count(&mf.cfg), seed ? VIL_SMALL_SEED_PARAMS : VIL_SMALL_NXAI_PARAMS);
            table_walk w = {&b, 0, true};
            vkvit__model_tensor_table(&mf.cfg, walk_compare, &w);
            CHECK(w.ok && w.i == b.n);
            vkvit__model_file_close(&mf);
        }
        free(img);
        builder_free(&b);
    }
}

static void model_converts_f32_f16_bf16_tensors_to_f32(void) {
    builder b;
    make_vit5(&b);
    vkvit__model_file mf;
    uint8_t *img;
    if (parse_builder(&b, &mf, &img) != VKVIT_OK) {
        CHECK(!"the small vit5 file parses");
        free(img);
        builder_free(&b);
        return;
    }
    const char *names[] = {"pos_embed", "blocks.1.sequence_mixer.qkv.weight", "blocks.0.mlp.layer1.weight"};
    const vkvit__st_dtype dtypes[] = {VKVIT_ST_F32, VKVIT_ST_F16, VKVIT_ST_BF16};
    for (int n = 0; n < 3; n++) {
        const vkvit__st_tensor *t = vkvit__model_file_tensor(&mf, names[n]);
        CHECK(t != NULL);
        if (!t) continue;
        CHECK(t->dtype == dtypes[n]);
        int j = (int)(find_t(&b, names[n]) - b.t);
        float *dst = malloc(t->numel * sizeof(float));
        CHECK(vkvit__model_file_tensor_f32(&mf, t, dst, t->numel) == VKVIT_OK);
        int bad = 0;
        for (uint64_t k = 0; k < t->numel; k++) bad += dst[k] != value_of(j, k);
        CHECK(bad == 0);
        CHECK(vkvit__model_file_tensor_f32(&mf, t, dst, t->numel - 1) == VKVIT_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(vkvit_last_error(), names[n]) != NULL);
        free(dst);
    }
    CHECK(vkvit__model_file_tensor(&mf, "no.such.tensor") == NULL);
    vkvit__model_file_close(&mf);
    free(img);
    builder_free(&b);
}

static void model_open_reads_a_file_from_disk(void) {
    builder b;
    make_vit5(&b);
    size_t size;
    uint8_t *img = build(&b, &size);
    char path[] = "/tmp/vkvit_test_model_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        FILE *f = fdopen(fd, "wb");
        fwrite(img, 1, size, f);
        fclose(f);
        vkvit__model_file mf;
        CHECK(vkvit__model_file_open(path, &mf) == VKVIT_OK);
        CHECK(mf.owned != NULL && mf.size == size && strcmp(mf.label, path) == 0);
        vkvit__model_file_close(&mf);
        remove(path);
    }
    vkvit__model_file mf;
    CHECK(vkvit__model_file_open("/nonexistent/dir/model.vkvit", &mf) == VKVIT_ERROR_IO);
    CHECK(strstr(vkvit_last_error(), "/nonexistent/dir/model.vkvit") != NULL);
    free(img);
    builder_free(&b);
}

static void model_accepts_a_header_with_nothing_but_braces(void) {
    uint8_t img[10] = {2, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    vkvit__safetensors st;
    CHECK(vkvit__safetensors_parse(img, sizeof img, LABEL, &st) == VKVIT_OK);
    CHECK(st.n_tensors == 0 && st.n_meta == 0 && st.data_offset == 10);
    vkvit__safetensors_free(&st);
    /* ...but it is no vkvit model */
    vkvit__model_file mf;
    expect_error(vkvit__model_file_parse(img, sizeof img, LABEL, &mf), VKVIT_ERROR_BAD_MODEL_FILE,
                 "__metadata__ has no 'vkvit' entry", LABEL);
}

static void model_accepts_empty_tensors_and_integral_floats(void) {
    /* A zero-element tensor overlaps nothing; 8.0 counts as the integer 8 (cJSON keeps no lexeme). */
    const char *hdr = "{\"a\":{\"dtype\":\"F32\",\"shape\":[0,4000000000000],\"data_offsets\":[4,4]},"
                      "\"b\":{\"dtype\":\"F16\",\"shape\":[2.0],\"data_offsets\":[0,4],\"extra\":1}}";
    size_t n = strlen(hdr);
    uint8_t img[256] = {0};
    img[0] = (uint8_t)n;
    memcpy(img + 8, hdr, n);
    vkvit__safetensors st;
    vkvit_result r = vkvit__safetensors_parse(img, 8 + n + 4, LABEL, &st);
    CHECK(r == VKVIT_OK);
    if (r != VKVIT_OK) fprintf(stderr, "    %s\n", vkvit_last_error());
    if (r == VKVIT_OK) {
        const vkvit__st_tensor *a = vkvit__safetensors_find(&st, "a"), *b = vkvit__safetensors_find(&st, "b");
        CHECK(a && a->numel == 0 && a->size == 0);
        CHECK(b && b->ndim == 1 && b->shape[0] == 2 && b->offset == 8 + n && b->dtype == VKVIT_ST_F16);
        vkvit__safetensors_free(&st);
    }
}

/* ---------------------------------------------------------------------------------------------------------------
 * fp16 / bf16
 * --------------------------------------------------------------------------------------------------------------- */

static void f16_converts_every_value_exactly(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float got = vkvit__f16_to_f32((uint16_t)h);
        uint32_t e = (h >> 10) & 31, m = h & 1023;
        double s = (h & 0x8000) ? -1.0 : 1.0;
        if (e == 31) {
            bad += m ? !isnan(got) : !(isinf(got) && (got < 0) == (s < 0));
            continue;
        }
        double want = e == 0 ? s * ldexp((double)m, -24) : s * ldexp((double)(1024 + m), (int)e - 25);
        bad += (double)got != want || (signbit(got) != 0) != (s < 0);
    }
    CHECK(bad == 0);
    CHECK(vkvit__f16_to_f32(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
    CHECK(vkvit__f16_to_f32(0x03ff) == ldexpf(1023.0f, -24)); /* largest subnormal */
    CHECK(vkvit__f16_to_f32(0x7bff) == 65504.0f);
    CHECK(vkvit__f16_to_f32(0x3c00) == 1.0f && vkvit__f16_to_f32(0xc000) == -2.0f);
}

static void bf16_converts_specials(void) {
    CHECK(vkvit__bf16_to_f32(0x3f80) == 1.0f);
    CHECK(isinf(vkvit__bf16_to_f32(0x7f80)) && vkvit__bf16_to_f32(0xff80) < 0);
    CHECK(isnan(vkvit__bf16_to_f32(0x7fc0)) && isnan(vkvit__bf16_to_f32(0xff81)));
    CHECK(vkvit__bf16_to_f32(0x0001) == ldexpf(1.0f, -133)); /* subnormal */
    CHECK(signbit(vkvit__bf16_to_f32(0x8000)) && vkvit__bf16_to_f32(0x8000) == 0.0f);
}

/* ---------------------------------------------------------------------------------------------------------------
 * Parameter and FLOP counts: SPEC.md 5.2 / 7.2 / 8, cross-checked against tools/vkvit_file.py (flops(),
 * count_params() on the same configs gave exactly these numbers).
 * --------------------------------------------------------------------------------------------------------------- */

static char *vit5_s_doc(const char *flavour, const char *config_extra) {
    static char buf[4096];
    bool paper = strcmp(flavour, "paper") == 0;
    snprintf(buf, sizeof buf,
             "{\"format_version\":1,\"architecture\":\"vit5\",\"flavour\":\"%s\",\"config\":{"
             "\"image_size\":[224,224],\"patch_size\":16,\"in_chans\":3,\"mlp_activation\":\"gelu\","
             "\"qk_norm\":true,\"norm_eps\":1e-6,\"qk_norm_eps\":1e-6,\"rope_base\":10000,\"reg_rope_base\":100,"
             "\"rope_pairing\":\"%s\",\"token_layout\":\"%s\",\"depth\":12,\"num_classes\":1000,%s},"
             "\"preprocess\":{\"image_size\":[224,224],\"resize_shorter\":224,\"interpolation\":\"bicubic\","
             "\"mean\":[0.485,0.456,0.406],\"std\":[0.229,0.224,0.225]}}",
             flavour, paper ? "adjacent" : "split_half", paper ? "cls_patches_regs" : "patches_cls_regs", config_extra);
    return buf;
}

static const char *VIT5_S_NVSUBQ =
    "\"dim\":384,\"num_heads\":6,\"mlp_hidden\":1536,\"num_registers\":4,\"has_cls\":true,\"readout\":\"cls\","
    "\"neck_dim\":0,\"layer_scale\":true,\"grn\":false,"
    "\"bias\":{\"patch_embed\":false,\"qkv\":false,\"proj\":false,\"mlp\":false,\"head\":false}";

static void flops_vit5_small_match_the_seed_numbers(void) {
    vkvit__model_config cfg;
    vkvit_result r = parse_doc(vit5_s_doc("nvsubq", VIT5_S_NVSUBQ), &cfg);
    CHECK(r == VKVIT_OK);
    if (r != VKVIT_OK) {
        fprintf(stderr, "    %s\n", vkvit_last_error());
        return;
    }
    vkvit__flops f;
    vkvit__model_flops_breakdown(&cfg, &f);
    CHECK_EQ_U64(cfg.vit5.num_tokens, 201);
    CHECK_EQ_U64(f.mixer_per_block, 299551104ull);
    CHECK_EQ_U64(f.block, 774695808ull);
    CHECK_EQ_U64(f.patch_embed, 115605504ull);
    CHECK_EQ_U64(f.total, 9412799616ull);
    CHECK_EQ_U64(vkvit__model_flops(&cfg), 9412799616ull);
    CHECK_EQ_U64(vkvit__model_param_count(&cfg), 22010112ull); /* SPEC 5.2: 22.010 M */
    CHECK(cfg.name && cfg.name[0] == '\0');                    /* name is optional */
    vkvit__model_config_free(&cfg);
}

static void flops_and_params_match_spec_for_other_configs(void) {
    struct {
        const char *flavour, *config;
        uint64_t params, flops;
    } cases[] = {
        /* nvsubq-style ViT-5-B (SPEC 5.2 / 8) */
        {"nvsubq",
         "\"dim\":768,\"num_heads\":12,\"mlp_hidden\":3072,\"num_registers\":4,\"has_cls\":true,\"readout\":\"cls\","
         "\"neck_dim\":0,\"layer_scale\":true,\"grn\":false,"
         "\"bias\":{\"patch_embed\":false,\"qkv\":false,\"proj\":false,\"mlp\":false,\"head\":false}",
         86486016ull, 35896538880ull},
        /* paper ViT-5-S: biases on patch embed, proj, MLP, head (SPEC 5.2: 22.039 M); FLOPs ignore biases */
        {"paper",
         "\"dim\":384,\"num_heads\":6,\"mlp_hidden\":1536,\"num_registers\":4,\"has_cls\":true,\"readout\":\"cls\","
         "\"neck_dim\":0,\"layer_scale\":true,\"grn\":false,"
         "\"bias\":{\"patch_embed\":true,\"qkv\":false,\"proj\":true,\"mlp\":true,\"head\":true}",
         22039144ull, 9412799616ull},
        /* GAP readout, no layer scale, no QK norm */
        {"nvsubq",
         "\"dim\":384,\"num_heads\":6,\"mlp_hidden\":1536,\"num_registers\":4,\"has_cls\":false,\"readout\":\"gap\","
         "\"neck_dim\":0,\"layer_scale\":false,\"grn\":false,\"qk_norm\":false,"
         "\"bias\":{\"patch_embed\":false,\"qkv\":false,\"proj\":false,\"mlp\":false,\"head\":false}",
         21998976ull, 9360173184ull},
    };
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases); i++) {
        vkvit__model_config cfg;
        char *doc = vit5_s_doc(cases[i].flavour, cases[i].config);
        /* the GAP case overrides qk_norm: drop the template's key first */
        if (strstr(cases[i].config, "qk_norm")) {
            char *q = strstr(doc, "\"qk_norm\":true,");
            memmove(q, q + 15, strlen(q + 15) + 1);
        }
        vkvit_result r = parse_doc(doc, &cfg);
        CHECK(r == VKVIT_OK);
        if (r != VKVIT_OK) {
            fprintf(stderr, "    case %zu: %s\n", i, vkvit_last_error());
            continue;
        }
        CHECK_EQ_U64(vkvit__model_param_count(&cfg), cases[i].params);
        CHECK_EQ_U64(vkvit__model_flops(&cfg), cases[i].flops);
        vkvit__model_config_free(&cfg);
    }
    /* register_concat + GRN on a 192x256 input with 9 registers */
    vkvit__model_config cfg;
    char *doc = vit5_s_doc("nvsubq",
                           "\"dim\":384,\"num_heads\":6,\"mlp_hidden\":1536,\"num_registers\":9,\"has_cls\":false,"
                           "\"readout\":\"register_concat\",\"neck_dim\":96,\"layer_scale\":true,\"grn\":true,"
                           "\"bias\":{\"patch_embed\":false,\"qkv\":false,\"proj\":false,\"mlp\":false,\"head\":false}");
    char *s;
    while ((s = strstr(doc, "[224,224]")) != NULL) memcpy(s, "[192,256]", 9);
    memcpy(strstr(doc, "\"resize_shorter\":224"), "\"resize_shorter\":256", 20);
    vkvit_result r = parse_doc(doc, &cfg);
    CHECK(r == VKVIT_OK);
    if (r == VKVIT_OK) {
        CHECK_EQ_U64(cfg.vit5.head_in, 9 * 96);
        CHECK_EQ_U64(vkvit__model_param_count(&cfg), 22536672ull);
        CHECK_EQ_U64(vkvit__model_flops(&cfg), 9417621024ull);
        vkvit__model_config_free(&cfg);
    } else {
        fprintf(stderr, "    %s\n", vkvit_last_error());
    }
}

static void flops_and_params_match_spec_for_vil(void) {
    struct {
        const char *flavour;
        uint32_t dim, inner;
        uint64_t params, flops, cell, block;
    } cases[] = {
        {"seed", 384, 768, 22829224ull, 11630789760ull, 118782272ull, 479748416ull}, /* seed ViL-S */
        {"nxai", 384, 768, 22792360ull, 11628983424ull, 118782272ull, 479673152ull}, /* SPEC 7.2: 22.79 M */
        {"nxai", 192, 384, 6088360ull, 3742812480ull, 0, 0},                         /* SPEC 7.2: 6.09 M */
    };
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases); i++) {
        char doc[2048];
        snprintf(doc, sizeof doc,
                 "{\"format_version\":1,\"architecture\":\"vil\",\"flavour\":\"%s\",\"config\":{"
                 "\"image_size\":[224,224],\"patch_size\":16,\"in_chans\":3,\"dim\":%u,\"depth\":24,"
                 "\"inner_dim\":%u,\"num_heads\":4,\"qkv_block_size\":4,\"conv_kernel\":4,"
                 "\"pooling\":\"bilateral_avg\",\"norm_eps\":1e-5,\"head_norm_eps\":1e-6,\"num_classes\":1000},"
                 "\"preprocess\":{\"image_size\":[224,224],\"resize_shorter\":224,\"interpolation\":\"bicubic\","
                 "\"mean\":[0.485,0.456,0.406],\"std\":[0.229,0.224,0.225]}}",
                 cases[i].flavour, cases[i].dim, cases[i].inner);
        vkvit__model_config cfg;
        vkvit_result r = parse_doc(doc, &cfg);
        CHECK(r == VKVIT_OK);
        if (r != VKVIT_OK) {
            fprintf(stderr, "    %s\n", vkvit_last_error());
            continue;
        }
        vkvit__flops f;
        vkvit__model_flops_breakdown(&cfg, &f);
        CHECK_EQ_U64(vkvit__model_param_count(&cfg), cases[i].params);
        CHECK_EQ_U64(f.total, cases[i].flops);
        if (cases[i].cell) {
            CHECK_EQ_U64(f.mixer_per_block, cases[i].cell);
            CHECK_EQ_U64(f.block, cases[i].block);
        }
        vkvit__model_config_free(&cfg);
    }
}

static void flops_saturate_instead_of_wrapping(void) {
    /* The largest config the limits allow: 8192x8192 image, patch 1 (67M tokens), width 65536. */
    vkvit__model_config cfg;
    char *doc = vit5_s_doc("nvsubq",
                           "\"dim\":65536,\"num_heads\":1,\"mlp_hidden\":65536,\"num_registers\":65536,"
                           "\"has_cls\":true,\"readout\":\"cls\",\"neck_dim\":0,\"layer_scale\":true,\"grn\":true,"
                           "\"bias\":{\"patch_embed\":true,\"qkv\":true,\"proj\":true,\"mlp\":true,\"head\":true}");
    char *s;
    while ((s = strstr(doc, "[224,224]")) != NULL) {
        memmove(s + 11, s + 9, strlen(s + 9) + 1);
        memcpy(s, "[8192,8192]", 11);
    }
    memcpy(strstr(doc, "\"patch_size\":16"), "\"patch_size\":1 ", 15);
    s = strstr(doc, "\"resize_shorter\":224");
    memmove(s + 21, s + 20, strlen(s + 20) + 1);
    memcpy(s, "\"resize_shorter\":8192", 21);
    memcpy(strstr(doc, "\"depth\":12"), "\"depth\":99", 10);
    vkvit_result r = parse_doc(doc, &cfg);
    CHECK(r == VKVIT_OK);
    if (r != VKVIT_OK) {
        fprintf(stderr, "    %s\n", vkvit_last_error());
        return;
    }
    CHECK(vkvit__model_flops(&cfg) == UINT64_MAX);
    CHECK(vkvit__model_param_count(&cfg) > 0 && vkvit__model_param_count(&cfg) < UINT64_MAX);
    vkvit__model_config_free(&cfg);
}

static void config_rejects_infinite_and_huge_numbers(void) {
    /* cJSON reads 1e999 as inf (and prints it back as null, so this goes straight to the config parser). */
    const struct {
        const char *from, *to, *text;
    } cases[] = {
        {"\"dim\":8", "\"dim\":1e999", "config.dim = inf is not an integer"},
        {"\"dim\":8", "\"dim\":-1e999", "config.dim = -inf is not an integer"},
        {"\"dim\":8", "\"dim\":1e300", "config.dim = 1e+300 is out of range [1, 65536]"},
        {"\"dim\":8", "\"dim\":9007199254740993", "config.dim = 9.00719925474099e+15 is out of range"},
        {"\"norm_eps\":1e-6", "\"norm_eps\":1e999", "config.norm_eps = inf is not a positive finite number"},
        {"\"mean\":[0.485", "\"mean\":[1e999", "preprocess.mean[0] = inf is not a finite number"},
        {"\"format_version\":1", "\"format_version\":1e999", "format_version = inf is not a version number"},
        {"\"format_version\":1", "\"format_version\":1.5", "format_version = 1.5 is not a version number"},
    };
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases); i++) {
        char doc[4096], *at = strstr(VIT5_DOC, cases[i].from);
        size_t head = (size_t)(at - VIT5_DOC);
        snprintf(doc, sizeof doc, "%.*s%s%s", (int)head, VIT5_DOC, cases[i].to, at + strlen(cases[i].from));
        vkvit__model_config cfg;
        expect_error(parse_doc(doc, &cfg), VKVIT_ERROR_BAD_MODEL_FILE, cases[i].text, LABEL);
        CHECK(cfg.name == NULL && cfg.labels == NULL);
    }
    /* ...and 8.0 / 0.8e1 are the integer 8 */
    char doc[4096], *at = strstr(VIT5_DOC, "\"dim\":8");
    snprintf(doc, sizeof doc, "%.*s\"dim\":0.8e1%s", (int)(at - VIT5_DOC), VIT5_DOC, at + 7);
    vkvit__model_config cfg;
    CHECK(parse_doc(doc, &cfg) == VKVIT_OK && cfg.vit5.dim == 8);
    vkvit__model_config_free(&cfg);
}

/* ---------------------------------------------------------------------------------------------------------------
 * Raw safetensors framing
 * --------------------------------------------------------------------------------------------------------------- */

/* An image whose 8-byte length is `n` followed by `hdr` (and `data_bytes` zero bytes). */
static uint8_t *raw_image(uint64_t n, const char *hdr, size_t data_bytes, size_t *size) {
    size_t hl = strlen(hdr);
    *size = 8 + hl + data_bytes;
    uint8_t *img = calloc(*size, 1);
    for (int i = 0; i < 8; i++) img[i] = (uint8_t)(n >> (8 * i));
    memcpy(img + 8, hdr, hl);
    return img;
}

static void expect_raw_fails(uint64_t n, const char *hdr, const char *text) {
    size_t size;
    uint8_t *img = raw_image(n, hdr, 0, &size);
    vkvit__model_file mf;
    expect_error(vkvit__model_file_parse(img, size, LABEL, &mf), VKVIT_ERROR_BAD_MODEL_FILE, text, LABEL);
    free(img);
}

static void model_rejects_file_shorter_than_the_length_prefix(void) {
    uint8_t img[7] = {0};
    vkvit__model_file mf;
    expect_error(vkvit__model_file_parse(img, 7, LABEL, &mf), VKVIT_ERROR_BAD_MODEL_FILE, "too short", LABEL);
    expect_error(vkvit__model_file_parse(img, 0, LABEL, &mf), VKVIT_ERROR_BAD_MODEL_FILE, "0 bytes long", LABEL);
}

static void model_rejects_header_length_0_and_1(void) {
    expect_raw_fails(0, "{}", "header length 0 is below the minimum");
    expect_raw_fails(1, "{}", "header length 1 is below the minimum");
}

static void model_rejects_huge_header_length(void) {
    expect_raw_fails(UINT64_MAX, "{}", "above the limit of 104857600 bytes");
    expect_raw_fails(((uint64_t)100 << 20) + 1, "{}", "above the limit");
    expect_raw_fails((uint64_t)1 << 63, "{}", "above the limit");
}

static void model_rejects_header_length_past_the_end(void) {
    expect_raw_fails(3, "{}", "runs past the end of the file (10 bytes)");
    expect_raw_fails(1000, "{}", "runs past the end");
}

static void model_rejects_garbage_header_json(void) {
    expect_raw_fails(8, "{\"a\":{]}", "not valid JSON");
    expect_raw_fails(4, "\xff\xfe\x01\x02", "not valid JSON");
    expect_raw_fails(6, "{\"a\":1", "not valid JSON");
    expect_raw_fails(2, "  ", "not valid JSON");
}

static void model_rejects_non_object_header(void) {
    expect_raw_fails(2, "[]", "the header is an array, not a JSON object");
    expect_raw_fails(3, "\"x\"", "not a JSON object");
    expect_raw_fails(2, "12", "the header is 12, not a JSON object");
    expect_raw_fails(4, "null", "not a JSON object");
}

static void model_rejects_bytes_after_the_header_object(void) {
    expect_raw_fails(4, "{}{}", "other than whitespace after its JSON value");
    expect_raw_fails(3, "{}x", "other than whitespace");
    size_t size;
    uint8_t *img = raw_image(4, "{}  ", 0, &size); /* a NUL inside the header */
    img[10] = 0;
    vkvit__safetensors st;
    expect_error(vkvit__safetensors_parse(img, size, LABEL, &st), VKVIT_ERROR_BAD_MODEL_FILE, "other than whitespace",
                 LABEL);
    free(img);
}

static void model_rejects_every_truncation_of_a_valid_file(void) {
    builder b;
    make_vit5(&b);
    size_t size;
    uint8_t *img = build(&b, &size);
    int wrong = 0;
    for (size_t n = 0; n < size; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exact-size copy, so ASan sees any read past the end */
        memcpy(copy, img, n);
        vkvit__model_file mf;
        vkvit_result r = vkvit__model_file_parse(copy, n, LABEL, &mf);
        if (r != VKVIT_ERROR_BAD_MODEL_FILE || strncmp(vkvit_last_error(), "model 'test.vkvit': ", 20) != 0) {
            if (wrong++ < 5) fprintf(stderr, "    prefix %zu: %s: %s\n", n, vkvit_result_name(r), vkvit_last_error());
            if (r == VKVIT_OK) vkvit__model_file_close(&mf);
        }
        free(copy);
    }
    CHECK(wrong == 0);
    vkvit__model_file mf;
    CHECK(vkvit__model_file_parse(img, size, LABEL, &mf) == VKVIT_OK); /* the whole file is fine */
    vkvit__model_file_close(&mf);
    free(img);
    builder_free(&b);
}

static void model_survives_every_single_byte_corruption_of_the_header(void) {
    /* Not every corruption is an error (a changed digit in a label is still a valid file), but none may crash,
     * and every failure must carry a sentence. */
    builder b;
    make_vil(&b, true);
    size_t size;
    uint8_t *img = build(&b, &size);
    size_t hn = 0;
    for (int i = 0; i < 8; i++) hn |= (size_t)img[i] << (8 * i);
    const uint8_t subst[] = {'"', '{', ']', '9', '-', 0x00, 0xff, '\\'};
    int silent = 0, accepted = 0;
    for (size_t at = 0; at < 8 + hn; at++) {
        for (size_t s = 0; s < sizeof subst; s++) {
            uint8_t old = img[at];
            img[at] = subst[s];
            vkvit__model_file mf;
            vkvit_result r = vkvit__model_file_parse(img, size, LABEL, &mf);
            if (r == VKVIT_OK) {
                accepted++;
                vkvit__model_file_close(&mf);
            } else if (vkvit_last_error()[0] == '\0' ||
                       (r != VKVIT_ERROR_BAD_MODEL_FILE && r != VKVIT_ERROR_UNSUPPORTED)) {
                silent++;
            }
            vkvit__error_clear();
            img[at] = old;
        }
    }
    CHECK(silent == 0);
    CHECK(accepted < (int)(8 + hn)); /* most corruptions are caught */
    free(img);
    builder_free(&b);
}

/* ---------------------------------------------------------------------------------------------------------------
 * The hostile sweep: one valid file, one mutation, one specific error.
 * --------------------------------------------------------------------------------------------------------------- */

enum { VIT5, VIL_SEED, VIL_NXAI, RESNET };

typedef struct mutation {
    const char *name;                       /* the behaviour */
    int model;
    const char *set[6];                     /* up to 3 (path, JSON value) pairs on the vkvit document */
    void (*edit)(builder *b);               /* a change to the tensor list or the raw header */
    vkvit_result want;
    const char *text;                       /* the sentence must contain this */
} mutation;

/* Tensor-list and raw-header edits. */
static void e_dtype_f64(builder *b) { find_t(b, "pos_embed")->dtype_json = "\"F64\""; }
static void e_dtype_lower(builder *b) { find_t(b, "pos_embed")->dtype_json = "\"f32\""; }
static void e_dtype_number(builder *b) { find_t(b, "pos_embed")->dtype_json = "32"; }
static void e_shape_negative(builder *b) { find_t(b, "patch_embed.weight")->shape_json = "[8,-3,4,4]"; }
static void e_shape_fraction(builder *b) { find_t(b, "patch_embed.weight")->shape_json = "[8,3,4.5,4]"; }
static void e_shape_string(builder *b) { find_t(b, "patch_embed.weight")->shape_json = "[8,\"3\",4,4]"; }
static void e_shape_not_array(builder *b) { find_t(b, "patch_embed.weight")->shape_json = "{\"0\":8}"; }
static void e_shape_9_dims(builder *b) { find_t(b, "out_proj.bias")->shape_json = "[1,1,1,1,1,1,1,1,3]"; }
static void e_shape_huge(builder *b) { find_t(b, "out_proj.bias")->shape_json = "[1e300]"; }
static void e_shape_overflow(builder *b) {
    find_t(b, "out_proj.bias")->shape_json = "[4294967296,4294967296,4294967296]";
}
static void set_offsets(builder *b, const char *name, long long begin, long long end) {
    tensor_def *t = find_t(b, name);
    snprintf(t->offsets_buf, sizeof t->offsets_buf, "[%lld,%lld]", begin, end);
    t->offsets_json = t->offsets_buf;
}
static void e_offsets_past_end(builder *b) {
    uint64_t lo, hi;
    range_of(b, "out_proj.bias", &lo, &hi);
    set_offsets(b, "out_proj.bias", (long long)lo + 4, (long long)hi + 4);
}
static void e_offsets_reversed(builder *b) {
    uint64_t lo, hi;
    range_of(b, "pos_embed", &lo, &hi);
    set_offsets(b, "pos_embed", (long long)hi, (long long)lo);
}
static void e_offsets_overlap(builder *b) {
    uint64_t lo, hi;
    range_of(b, "patch_embed.bias", &lo, &hi);
    set_offsets(b, "patch_embed.bias", (long long)lo - 4, (long long)hi - 4);
}
static void e_offsets_size_mismatch(builder *b) {
    uint64_t lo, hi;
    range_of(b, "pos_embed", &lo, &hi);
    set_offsets(b, "pos_embed", (long long)lo, (long long)hi - 4);
}
static void e_offsets_negative(builder *b) { set_offsets(b, "patch_embed.weight", -4, 1532); }
static void e_offsets_one(builder *b) { find_t(b, "pos_embed")->offsets_json = "[0]"; }
static void e_offsets_float(builder *b) { find_t(b, "pos_embed")->offsets_json = "[0.5,128.5]"; }
static void e_offsets_missing(builder *b) { find_t(b, "pos_embed")->offsets_json = "null"; }
static void e_entry_not_object(builder *b) {
    b->extra_json = ",\"zzz\":[1,2]";
}
static void e_duplicate_name(builder *b) {
    b->extra_json = ",\"pos_embed\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}";
}
static void e_metadata_twice(builder *b) { b->extra_json = ",\"__metadata__\":{\"x\":\"y\"}"; }
static void e_metadata_not_object(builder *b) { b->meta_json = "[\"vkvit\"]"; }
static void e_metadata_value_number(builder *b) { b->meta_json = "{\"vkvit\":{},\"other\":5}"; }
static void e_metadata_duplicate_key(builder *b) { b->meta_json = "{\"vkvit\":\"{}\",\"vkvit\":\"{}\"}"; }
static void e_metadata_missing(builder *b) { b->meta_json = ""; }
static void e_metadata_no_vkvit(builder *b) { b->meta_json = "{\"format\":\"pt\"}"; }
static void e_vkvit_not_json(builder *b) { b->meta_json = "{\"vkvit\":\"{not json\"}"; }
static void e_vkvit_trailing(builder *b) { b->meta_json = "{\"vkvit\":\"{} x\"}"; }
static void e_vkvit_array(builder *b) { b->meta_json = "{\"vkvit\":\"[1]\"}"; }
static void e_missing_tensor(builder *b) { remove_t(b, "blocks.1.mlp.layer2.weight"); }
static void e_extra_tensor(builder *b) { T(b, "F32", "blocks.0.attn.rope.freqs", 2); }
static void e_extra_bias(builder *b) { T(b, "F32", "blocks.0.sequence_mixer.qkv.bias", 24); }
static void e_misshaped_tensor(builder *b) { find_t(b, "pos_embed")->shape[1] = 5; }
static void e_wrong_ndim(builder *b) {
    tensor_def *t = find_t(b, "out_norm.weight");
    t->ndim = 2, t->shape[0] = 1, t->shape[1] = 8;
}
static void e_transposed(builder *b) {
    tensor_def *t = find_t(b, "blocks.0.mlp.layer1.weight");
    t->shape[0] = 8, t->shape[1] = 16;
}
static void e_rn_missing_kv(builder *b) { remove_t(b, "blocks.1.condition_mixer.kv_proj.weight"); }
static void e_rn_vit5_names(builder *b) {
    snprintf(find_t(b, "blocks.0.sequence_mixer.qkv_proj.weight")->name, 96, "blocks.0.sequence_mixer.qkv.weight");
}
static void e_rn_layer1_not_doubled(builder *b) { find_t(b, "blocks.0.mlp.layer1.weight")->shape[0] = 12; }
static void e_vil_layerscale_in_nxai(builder *b) { T(b, "F32", "blocks.0.mlstm.layerscale", 64); }
static void e_vil_conv_shape(builder *b) { find_t(b, "blocks.1.mlstm.conv1d.weight")->shape[2] = 3; }
static void e_vil_missing_head(builder *b) { remove_t(b, "head.bias"); }

#define NO_SET {NULL}

static const mutation MUTATIONS[] = {
    /* safetensors entries */
    {"model_rejects_unknown_dtype_f64", VIT5, NO_SET, e_dtype_f64, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'pos_embed' has dtype 'F64'"},
    {"model_rejects_lowercase_dtype", VIT5, NO_SET, e_dtype_lower, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'pos_embed' has dtype 'f32'"},
    {"model_rejects_non_string_dtype", VIT5, NO_SET, e_dtype_number, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'pos_embed' has no dtype string"},
    {"model_rejects_negative_shape_entry", VIT5, NO_SET, e_shape_negative, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'patch_embed.weight' has shape entry 1 = -3, not a non-negative integer"},
    {"model_rejects_fractional_shape_entry", VIT5, NO_SET, e_shape_fraction, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'patch_embed.weight' has shape entry 2 = 4.5"},
    {"model_rejects_string_shape_entry", VIT5, NO_SET, e_shape_string, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'patch_embed.weight' has shape entry 1 = a string"},
    {"model_rejects_shape_that_is_not_an_array", VIT5, NO_SET, e_shape_not_array, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'patch_embed.weight' has a shape that is an object"},
    {"model_rejects_more_than_8_dims", VIT5, NO_SET, e_shape_9_dims, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'out_proj.bias' has a shape of 9 dims"},
    {"model_rejects_shape_entry_beyond_2_to_53", VIT5, NO_SET, e_shape_huge, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'out_proj.bias' has shape entry 0 = 1e+300"},
    {"model_rejects_shape_whose_size_overflows", VIT5, NO_SET, e_shape_overflow, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'out_proj.bias' has shape [4294967296, 4294967296, 4294967296] whose byte size overflows"},
    {"model_rejects_range_past_the_end", VIT5, NO_SET, e_offsets_past_end, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'out_proj.bias' ends at byte"},
    {"model_rejects_begin_after_end", VIT5, NO_SET, e_offsets_reversed, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'pos_embed' has data_offsets"},
    {"model_rejects_overlapping_ranges", VIT5, NO_SET, e_offsets_overlap, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensors 'patch_embed.weight' and 'patch_embed.bias' have overlapping byte ranges"},
    {"model_rejects_size_mismatch", VIT5, NO_SET, e_offsets_size_mismatch, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'pos_embed' covers 124 bytes"},
    {"model_rejects_negative_offset", VIT5, NO_SET, e_offsets_negative, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'patch_embed.weight' has data_offsets that are not two non-negative integers"},
    {"model_rejects_one_offset", VIT5, NO_SET, e_offsets_one, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'pos_embed' has data_offsets that are not two"},
    {"model_rejects_fractional_offsets", VIT5, NO_SET, e_offsets_float, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'pos_embed' has data_offsets that are not two"},
    {"model_rejects_missing_offsets", VIT5, NO_SET, e_offsets_missing, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'pos_embed' has data_offsets that are not two"},
    {"model_rejects_entry_that_is_not_an_object", VIT5, NO_SET, e_entry_not_object, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'zzz' has an entry that is an array"},
    {"model_rejects_duplicate_tensor_name", VIT5, NO_SET, e_duplicate_name, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'pos_embed' appears twice"},
    {"model_rejects_metadata_twice", VIT5, NO_SET, e_metadata_twice, VKVIT_ERROR_BAD_MODEL_FILE,
     "the header has the key '__metadata__' twice"},
    {"model_rejects_metadata_that_is_not_an_object", VIT5, NO_SET, e_metadata_not_object,
     VKVIT_ERROR_BAD_MODEL_FILE, "__metadata__ is an array, not a JSON object"},
    {"model_rejects_non_string_metadata_value", VIT5, NO_SET, e_metadata_value_number, VKVIT_ERROR_BAD_MODEL_FILE,
     "__metadata__ entry 'vkvit' is an object, not a string"},
    {"model_rejects_duplicate_metadata_key", VIT5, NO_SET, e_metadata_duplicate_key, VKVIT_ERROR_BAD_MODEL_FILE,
     "__metadata__ has the key 'vkvit' twice"},
    {"model_rejects_file_without_metadata", VIT5, NO_SET, e_metadata_missing, VKVIT_ERROR_BAD_MODEL_FILE,
     "__metadata__ has no 'vkvit' entry"},
    {"model_rejects_metadata_without_vkvit_entry", VIT5, NO_SET, e_metadata_no_vkvit, VKVIT_ERROR_BAD_MODEL_FILE,
     "__metadata__ has no 'vkvit' entry"},
    {"model_rejects_vkvit_entry_that_is_not_json", VIT5, NO_SET, e_vkvit_not_json, VKVIT_ERROR_BAD_MODEL_FILE,
     "the vkvit entry is not valid JSON"},
    {"model_rejects_vkvit_entry_with_trailing_text", VIT5, NO_SET, e_vkvit_trailing, VKVIT_ERROR_BAD_MODEL_FILE,
     "the vkvit entry has bytes other than whitespace"},
    {"model_rejects_vkvit_entry_that_is_an_array", VIT5, NO_SET, e_vkvit_array, VKVIT_ERROR_BAD_MODEL_FILE,
     "the vkvit entry is an array, not a JSON object"},

    /* the document */
    {"model_rejects_missing_format_version", VIT5, {"format_version", NULL}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "has no format_version"},
    {"model_rejects_format_version_0", VIT5, {"format_version", "0"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "format_version = 0 is not a version number"},
    {"model_rejects_string_format_version", VIT5, {"format_version", "\"1\""}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "format_version = '1' is not a version number"},
    {"model_reports_newer_format_version_as_unsupported", VIT5, {"format_version", "2"}, NULL,
     VKVIT_ERROR_UNSUPPORTED, "format_version = 2 is newer than this vkvit reads (1)"},
    {"model_rejects_vit5_file_labelled_resnet", VIT5, {"architecture", "\"resnet\"", "flavour", "\"generic\""},
     NULL, VKVIT_ERROR_BAD_MODEL_FILE, "config has an unknown key 'num_heads'"},
    {"model_rejects_vit5_flavour_on_resnet", RESNET, {"flavour", "\"nvsubq\""}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "flavour = 'nvsubq' is not one of generic"},
    {"model_rejects_unknown_architecture", VIT5, {"architecture", "\"vit6\""}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "architecture 'vit6' is unknown"},
    {"model_rejects_missing_architecture", VIT5, {"architecture", NULL}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "has no architecture"},
    {"model_rejects_vil_flavour_on_vit5", VIT5, {"flavour", "\"seed\""}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "flavour = 'seed' is not one of nvsubq, paper"},
    {"model_rejects_vit5_flavour_on_vil", VIL_SEED, {"flavour", "\"paper\""}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "flavour = 'paper' is not one of seed, nxai"},
    {"model_rejects_non_string_name", VIT5, {"name", "5"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "name is a number, not a string"},
    {"model_rejects_duplicate_top_level_key", VIT5, {"+architecture", "\"vil\""}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "the vkvit entry has the key 'architecture' twice"},
    {"model_rejects_missing_config", VIT5, {"config", NULL}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "has no config object"},
    {"model_rejects_config_that_is_not_an_object", VIT5, {"config", "[]"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config is an array, not an object"},

    /* vit5 config */
    {"model_rejects_unknown_config_key", VIT5, {"config.dimm", "8"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config has an unknown key 'dimm'"},
    {"model_rejects_duplicate_config_key", VIT5, {"+config.dim", "8"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config has the key 'dim' twice"},
    {"model_rejects_missing_config_key", VIT5, {"config.grn", NULL}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.grn is missing"},
    {"model_rejects_string_dim", VIT5, {"config.dim", "\"8\""}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.dim is a string, not an integer"},
    {"model_rejects_fractional_dim", VIT5, {"config.dim", "8.5"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.dim = 8.5 is not an integer"},
    {"model_rejects_negative_dim", VIT5, {"config.dim", "-8"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.dim = -8 is out of range [1, 65536]"},
    {"model_rejects_absurd_dim_without_data", VIT5, {"config.dim", "1e9"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.dim = 1000000000 is out of range [1, 65536]"},
    {"model_rejects_null_dim", VIT5, {"config.dim", "null"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.dim is null, not an integer"},
    {"model_rejects_zero_depth", VIT5, {"config.depth", "0"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.depth = 0 is out of range"},
    {"model_rejects_zero_classes", VIT5, {"config.num_classes", "0"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.num_classes = 0 is out of range"},
    {"model_rejects_absurd_image_size", VIT5, {"config.image_size", "[8,100000]"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.image_size[1] = 100000 is out of range [1, 8192]"},
    {"model_rejects_image_size_of_three", VIT5, {"config.image_size", "[8,8,8]"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.image_size is an array of the wrong length, not [H, W]"},
    {"model_rejects_image_not_divisible_by_patch", VIT5, {"config.image_size", "[10,8]"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.image_size [10, 8] is not divisible by config.patch_size = 4"},
    {"model_rejects_in_chans_other_than_3", VIT5, {"config.in_chans", "1"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.in_chans = 1 is not 3"},
    {"model_rejects_heads_not_dividing_dim", VIT5, {"config.num_heads", "3"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.num_heads = 3 does not divide config.dim = 8"},
    {"model_rejects_head_dim_not_multiple_of_4", VIT5, {"config.num_heads", "4"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.dim / config.num_heads = 8 / 4 = 2 is not a multiple of 4"},
    {"model_rejects_unknown_activation", VIT5, {"config.mlp_activation", "\"relu\""}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.mlp_activation = 'relu' is not one of gelu"},
    {"model_rejects_non_square_registers", VIT5, {"config.num_registers", "2"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.num_registers = 2 is neither 0 nor a perfect square"},
    {"model_rejects_cls_readout_without_cls", VIT5, {"config.has_cls", "false"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.readout = 'cls' needs config.has_cls = true"},
    {"model_rejects_register_concat_without_registers", VIT5,
     {"config.readout", "\"register_concat\"", "config.num_registers", "0", "config.neck_dim", "4"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.readout = 'register_concat' needs config.num_registers > 0"},
    {"model_rejects_register_concat_without_neck", VIT5, {"config.readout", "\"register_concat\""}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.readout = 'register_concat' needs config.neck_dim >= 1"},
    {"model_rejects_neck_dim_without_register_concat", VIT5, {"config.neck_dim", "4"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.neck_dim = 4 must be 0 unless config.readout is 'register_concat'"},
    {"model_rejects_unknown_readout", VIT5, {"config.readout", "\"mean\""}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.readout = 'mean' is not one of cls, gap, register_concat"},
    {"model_rejects_nonpositive_eps", VIT5, {"config.norm_eps", "0"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.norm_eps = 0 is not a positive finite number"},
    {"model_rejects_string_eps", VIT5, {"config.qk_norm_eps", "\"1e-6\""}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.qk_norm_eps is a string, not a number"},
    {"model_rejects_negative_rope_base", VIT5, {"config.rope_base", "-10000"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.rope_base = -10000 is not a positive finite number"},
    {"model_rejects_numeric_bool", VIT5, {"config.qk_norm", "1"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.qk_norm is a number, not true or false"},
    {"model_rejects_pairing_against_flavour", VIT5, {"config.rope_pairing", "\"adjacent\""}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.rope_pairing = 'adjacent' does not match flavour nvsubq"},
    {"model_rejects_layout_against_flavour", VIT5, {"flavour", "\"paper\"", "config.rope_pairing", "\"adjacent\""},
     NULL, VKVIT_ERROR_BAD_MODEL_FILE, "config.token_layout = 'patches_cls_regs' does not match flavour paper"},
    {"model_rejects_unknown_pairing", VIT5, {"config.rope_pairing", "\"interleaved\""}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.rope_pairing = 'interleaved' is not one of split_half, adjacent"},
    {"model_rejects_unknown_bias_key", VIT5, {"config.bias.out", "true"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.bias has an unknown key 'out'"},
    {"model_rejects_missing_bias_key", VIT5, {"config.bias.mlp", NULL}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.bias.mlp is missing"},
    {"model_rejects_bias_that_is_not_an_object", VIT5, {"config.bias", "true"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.bias is a boolean, not an object"},

    /* preprocess, labels */
    {"model_rejects_missing_preprocess", VIT5, {"preprocess", NULL}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "has no preprocess object"},
    {"model_rejects_preprocess_size_mismatch", VIT5, {"preprocess.image_size", "[16,16]"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "preprocess.image_size [16, 16] differs from config.image_size [8, 8]"},
    {"model_rejects_resize_below_crop", VIT5, {"preprocess.resize_shorter", "7"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "preprocess.resize_shorter = 7 is smaller than"},
    {"model_rejects_unknown_interpolation", VIT5, {"preprocess.interpolation", "\"nearest\""}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "preprocess.interpolation = 'nearest' is not one of bicubic, bilinear"},
    {"model_rejects_two_channel_mean", VIT5, {"preprocess.mean", "[0.5,0.5]"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "preprocess.mean is an array of the wrong length"},
    {"model_rejects_zero_std", VIT5, {"preprocess.std", "[0.2,0,0.2]"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "preprocess.std[1] = 0 is not positive"},
    {"model_rejects_string_in_mean", VIT5, {"preprocess.mean", "[0.5,\"x\",0.5]"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "preprocess.mean[1] = 'x' is not a finite number"},
    {"model_rejects_duplicate_preprocess_key", VIT5, {"+preprocess.resize_shorter", "9"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "preprocess has the key 'resize_shorter' twice"},
    {"model_rejects_label_count_mismatch", VIT5, {"labels", "[\"a\",\"b\"]"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "labels has 2 entries but config.num_classes = 3"},
    {"model_rejects_non_string_label", VIT5, {"labels", "[\"a\",2,\"c\"]"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "labels[1] is a number, not a string"},
    {"model_rejects_labels_that_are_not_an_array", VIT5, {"labels", "\"a,b,c\""}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "labels is a string, not an array of strings"},

    /* vil config */
    {"model_rejects_wrong_inner_dim", VIL_SEED, {"config.inner_dim", "128"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.inner_dim = 128 is not ceil(2 * config.dim / 64) * 64 = 64"},
    {"model_rejects_memory_heads_not_dividing_inner_dim", VIL_SEED, {"config.num_heads", "3"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.num_heads = 3 does not divide config.inner_dim = 64"},
    {"model_rejects_qkv_block_size_other_than_4", VIL_SEED, {"config.qkv_block_size", "8"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.qkv_block_size = 8 is not 4"},
    {"model_rejects_unknown_pooling", VIL_SEED, {"config.pooling", "\"cls\""}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.pooling = 'cls' is not one of bilateral_avg"},
    {"model_rejects_unknown_vil_key", VIL_SEED, {"config.mlp_ratio", "4"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config has an unknown key 'mlp_ratio'"},
    {"model_rejects_zero_head_norm_eps", VIL_SEED, {"config.head_norm_eps", "0"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.head_norm_eps = 0 is not a positive finite number"},
    {"model_rejects_zero_conv_kernel", VIL_SEED, {"config.conv_kernel", "0"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.conv_kernel = 0 is out of range"},
    {"model_rejects_vit5_key_in_vil", VIL_NXAI, {"config.has_cls", "true"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config has an unknown key 'has_cls'"},

    /* resnet config */
    {"model_rejects_norm_before_identity_sequence_mixer", RESNET, {"config.block.sequence_mixer",
     "{\"type\":\"identity\"}"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.block.sequence_mixer is identity, so config.block.input_norm must be identity too (seed 002: a "
     "bypassed branch has no norm), not rmsnorm"},
    {"model_rejects_norm_before_identity_condition_mixer", RESNET, {"config.block.condition_mixer",
     "{\"type\":\"identity\"}"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.block.condition_mixer is identity, so config.block.condition_mixer_norm must be identity too"},
    {"model_rejects_norm_before_identity_mlp", RESNET, {"config.block.mlp", "{\"type\":\"identity\"}"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.block.mlp is identity, so config.block.mlp_norm must be identity too"},
    {"model_rejects_condition_tokens_without_condition_mixer", RESNET,
     {"config.block.condition_mixer", "{\"type\":\"identity\"}", "config.block.condition_mixer_norm",
      "{\"type\":\"identity\"}"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.condition_tokens = 3 and config.condition_dim = 8 must be 0 when config.block.condition_mixer is "
     "identity"},
    {"model_rejects_condition_dim_other_than_dim", RESNET, {"config.condition_dim", "4"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.condition_dim = 4 must equal config.dim = 8"},
    {"model_rejects_negative_condition_tokens", RESNET, {"config.condition_tokens", "-1"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.condition_tokens = -1 is out of range [0, 65536]"},
    {"model_rejects_huge_condition_tokens", RESNET, {"config.condition_tokens", "70000"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.condition_tokens = 70000 is out of range [0, 65536]"},
    {"model_rejects_fractional_condition_tokens", RESNET, {"config.condition_tokens", "2.5"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.condition_tokens = 2.5 is not an integer"},
    {"model_rejects_missing_condition_tokens", RESNET, {"config.condition_tokens", NULL}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.condition_tokens is missing"},
    {"model_rejects_unknown_resnet_key", RESNET, {"config.spatial", "1"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config has an unknown key 'spatial'"},
    {"model_rejects_unknown_block_key", RESNET, {"config.block.dropout", "0.1"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.block has an unknown key 'dropout'"},
    {"model_rejects_unknown_mixer_key", RESNET, {"config.block.sequence_mixer.rope_pairing", "\"split_half\""},
     NULL, VKVIT_ERROR_BAD_MODEL_FILE, "config.block.sequence_mixer has an unknown key 'rope_pairing'"},
    {"model_rejects_rope_key_on_condition_mixer", RESNET, {"config.block.condition_mixer.rope", "false"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.block.condition_mixer has an unknown key 'rope'"},
    {"model_rejects_options_on_identity", RESNET, {"config.block.mlp", "{\"type\":\"identity\",\"hidden\":4}"},
     NULL, VKVIT_ERROR_BAD_MODEL_FILE, "config.block.mlp has an unknown key 'hidden'"},
    {"model_rejects_missing_block", RESNET, {"config.block", NULL}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.block is missing"},
    {"model_rejects_block_that_is_not_an_object", RESNET, {"config.block", "[]"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.block is an array, not an object"},
    {"model_rejects_mixer_without_type", RESNET, {"config.block.sequence_mixer.type", NULL}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.block.sequence_mixer.type is missing"},
    {"model_rejects_unknown_mixer_type", RESNET, {"config.block.sequence_mixer.type", "\"hyena\""}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.block.sequence_mixer.type = 'hyena' is not one of attention, identity"},
    {"model_rejects_sequence_heads_not_dividing_dim", RESNET, {"config.block.sequence_mixer.num_heads", "3"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.block.sequence_mixer.num_heads = 3 does not divide config.dim = 8"},
    {"model_rejects_condition_heads_not_dividing_dim", RESNET, {"config.block.condition_mixer.num_heads", "5"},
     NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.block.condition_mixer.num_heads = 5 does not divide config.dim = 8"},
    {"model_rejects_rope_with_head_dim_2", RESNET, {"config.block.sequence_mixer.num_heads", "4"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.block.sequence_mixer.rope needs a head dim divisible by 4"},
    {"model_rejects_unknown_norm_type", RESNET, {"config.block.mlp_norm.type", "\"batchnorm\""}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.block.mlp_norm.type = 'batchnorm' is not one of rmsnorm, layernorm, identity"},
    {"model_rejects_layernorm_without_bias_key", RESNET, {"config.block.condition_mixer_norm.bias", NULL}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.block.condition_mixer_norm.bias is missing"},
    {"model_rejects_bias_key_on_rmsnorm", RESNET, {"config.block.input_norm.bias", "true"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.block.input_norm has an unknown key 'bias'"},
    {"model_rejects_zero_norm_eps", RESNET, {"config.out_norm.eps", "0"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.out_norm.eps = 0 is not a positive finite number"},
    {"model_rejects_unknown_mlp_activation", RESNET, {"config.block.mlp.activation", "\"tanh\""}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.block.mlp.activation = 'tanh' is not one of relu, gelu, silu, glu, swiglu"},
    {"model_rejects_zero_mlp_hidden", RESNET, {"config.block.mlp.hidden", "0"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.block.mlp.hidden = 0 is out of range [1, 65536]"},
    {"model_rejects_cls_readout_on_resnet", RESNET, {"config.readout", "\"cls\""}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.readout = 'cls' is not one of gap"},
    {"model_rejects_unknown_resnet_bias_key", RESNET, {"config.bias.qkv", "true"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "config.bias has an unknown key 'qkv'"},
    {"model_rejects_resnet_image_not_divisible", RESNET, {"config.image_size", "[8,6]"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.image_size [8, 6] is not divisible by config.patch_size = 4"},
    {"model_rejects_missing_condition_kv_proj", RESNET, NO_SET, e_rn_missing_kv, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'blocks.1.condition_mixer.kv_proj.weight' is missing (expected shape [16, 8])"},
    {"model_rejects_pos_embed_the_config_disables", RESNET, {"config.pos_embed", "false"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "tensor 'pos_embed' is not used by architecture resnet (flavour generic)"},
    {"model_rejects_vit5_names_in_resnet_file", RESNET, NO_SET, e_rn_vit5_names, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'blocks.0.sequence_mixer.qkv_proj.weight' is missing (expected shape [24, 8])"},
    {"model_rejects_swiglu_layer1_not_doubled", RESNET, NO_SET, e_rn_layer1_not_doubled, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'blocks.0.mlp.layer1.weight' has shape [12, 8], expected [24, 8]"},
    {"model_rejects_layernorm_bias_the_file_lacks", RESNET, {"config.out_norm.bias", "true"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "tensor 'out_norm.bias' is missing (expected shape [8])"},

    /* the tensor table */
    {"model_rejects_missing_tensor", VIT5, NO_SET, e_missing_tensor, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'blocks.1.mlp.layer2.weight' is missing (expected shape [8, 16])"},
    {"model_rejects_unused_tensor", VIT5, NO_SET, e_extra_tensor, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'blocks.0.attn.rope.freqs' is not used by architecture vit5 (flavour nvsubq)"},
    {"model_rejects_bias_the_config_disables", VIT5, NO_SET, e_extra_bias, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'blocks.0.sequence_mixer.qkv.bias' is not used by architecture vit5"},
    {"model_rejects_bias_the_config_enables_but_lacks", VIT5, {"config.bias.qkv", "true"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "tensor 'blocks.0.sequence_mixer.qkv.bias' is missing (expected shape [24])"},
    {"model_rejects_misshaped_tensor", VIT5, NO_SET, e_misshaped_tensor, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'pos_embed' has shape [1, 5, 8], expected [1, 4, 8]"},
    {"model_rejects_tensor_with_extra_dim", VIT5, NO_SET, e_wrong_ndim, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'out_norm.weight' has shape [1, 8], expected [8]"},
    {"model_rejects_transposed_weight", VIT5, NO_SET, e_transposed, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'blocks.0.mlp.layer1.weight' has shape [8, 16], expected [16, 8]"},
    {"model_rejects_deeper_config_than_tensors", VIT5, {"config.depth", "65536"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'blocks.2.input_norm.weight' is missing"},
    {"model_rejects_wider_config_than_tensors", VIT5, {"config.dim", "65536", "config.num_heads", "16"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "tensor 'patch_embed.weight' has shape [8, 3, 4, 4], expected [65536, 3, 4, 4]"},
    {"model_rejects_seed_tensor_in_nxai_file", VIL_NXAI, NO_SET, e_vil_layerscale_in_nxai,
     VKVIT_ERROR_BAD_MODEL_FILE, "tensor 'blocks.0.mlstm.layerscale' is not used by architecture vil (flavour nxai)"},
    {"model_rejects_nxai_file_labelled_seed", VIL_NXAI, {"flavour", "\"seed\""}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'blocks.0.mlstm.outnorm.bias' is missing"},
    {"model_rejects_wrong_conv_kernel_shape", VIL_SEED, NO_SET, e_vil_conv_shape, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'blocks.1.mlstm.conv1d.weight' has shape [64, 1, 3], expected [64, 1, 4]"},
    {"model_rejects_vil_without_head_bias", VIL_SEED, NO_SET, e_vil_missing_head, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'head.bias' is missing (expected shape [2])"},
};

static const mutation *g_mutation;

static void run_mutation(void) {
    const mutation *m = g_mutation;
    builder b;
    if (m->model == VIT5) make_vit5(&b);
    else if (m->model == RESNET) make_resnet(&b);
    else make_vil(&b, m->model == VIL_SEED);
    for (int i = 0; i < 6 && m->set[i]; i += 2) set_path(b.doc, m->set[i], m->set[i + 1]);
    if (m->edit) m->edit(&b);
    expect_build_fails(&b, m->want, m->text);
    builder_free(&b);
}

/* ---------------------------------------------------------------------------------------------------------------
 * Golden model files (written by tools/; skipped silently when absent)
 * --------------------------------------------------------------------------------------------------------------- */

static int parse_golden_models(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/golden/models", VKVIT_SOURCE_DIR);
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 7 || strcmp(e->d_name + len - 6, ".vkvit") != 0) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        g_case = path;
        g_ok = true;
        vkvit__model_file mf;
        vkvit_result r = vkvit__model_file_open(path, &mf);
        CHECK(r == VKVIT_OK);
        if (r != VKVIT_OK) fprintf(stderr, "    %s\n", vkvit_last_error());
        if (r == VKVIT_OK) {
            uint64_t sum = 0;
            for (uint32_t i = 0; i < mf.st.n_tensors; i++) {
                const vkvit__st_tensor *t = &mf.st.tensors[i];
                float *buf = malloc((t->numel ? t->numel : 1) * sizeof(float));
                CHECK(vkvit__model_file_tensor_f32(&mf, t, buf, t->numel) == VKVIT_OK);
                free(buf);
                sum += t->numel;
            }
            CHECK_EQ_U64(sum, vkvit__model_param_count(&mf.cfg));
            CHECK(vkvit__model_flops(&mf.cfg) > 0);
            vkvit__model_file_close(&mf);
        }
        if (g_ok) g_passed++;
        else g_failed++;
        printf("%s golden %s\n", g_ok ? "ok  " : "FAIL", e->d_name);
        n++;
    }
    closedir(d);
    return n;
}

/* --------------------------------------------------------------------------------------------------------------- */

int main(void) {
    RUN(model_parses_small_vit5);
    RUN(model_parses_small_vil_in_both_flavours);
    RUN(model_parses_small_resnet);
    RUN(model_converts_f32_f16_bf16_tensors_to_f32);
    RUN(model_open_reads_a_file_from_disk);
    RUN(model_accepts_a_header_with_nothing_but_braces);
    RUN(model_accepts_empty_tensors_and_integral_floats);
    RUN(f16_converts_every_value_exactly);
    RUN(bf16_converts_specials);
    RUN(flops_vit5_small_match_the_seed_numbers);
    RUN(flops_and_params_match_spec_for_other_configs);
    RUN(flops_and_params_match_spec_for_vil);
    RUN(flops_and_params_match_python_for_resnet);
    RUN(flops_saturate_instead_of_wrapping);
    RUN(config_rejects_infinite_and_huge_numbers);
    RUN(model_rejects_file_shorter_than_the_length_prefix);
    RUN(model_rejects_header_length_0_and_1);
    RUN(model_rejects_huge_header_length);
    RUN(model_rejects_header_length_past_the_end);
    RUN(model_rejects_garbage_header_json);
    RUN(model_rejects_non_object_header);
    RUN(model_rejects_bytes_after_the_header_object);
    RUN(model_rejects_every_truncation_of_a_valid_file);
    RUN(model_survives_every_single_byte_corruption_of_the_header);
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(MUTATIONS); i++) {
        g_mutation = &MUTATIONS[i];
        run_case(MUTATIONS[i].name, run_mutation);
    }
    parse_golden_models();
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
