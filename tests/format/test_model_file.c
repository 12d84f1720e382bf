// SPDX-License-Identifier: Apache-2.0
/* Model-file reader tests, valid files: safetensors parsing, the `vkvit` config, the tensor table, dtype conversion,
 * parameter and FLOP counts (docs/math.md 8, cross-checked with tools/vkvit_file.py), and every tests/golden/models/
 * *.vkvit. The hostile-file sweep is test_model_hostile.c. No GPU needed. Last line: "N passed, M failed". */
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "model_builder.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

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
        CHECK(strcmp(vkvit__arch_name(c->arch), "resnet") == 0 && strcmp(vkvit__flavour_name(c->arch, c->flavour), "generic") == 0);
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
        CHECK(mf.file.is_open && mf.file.size == size && mf.size == size && mf.data == NULL &&
              strcmp(mf.label, path) == 0); /* open and read as needed, neither mapped nor copied whole */
        vkvit__model_file_close(&mf);
        remove(path);
    }
    vkvit__model_file mf;
    CHECK(vkvit__model_file_open("/nonexistent/dir/model.vkvit", &mf) == VKVIT_ERROR_IO);
    CHECK(strstr(vkvit_last_error(), "/nonexistent/dir/model.vkvit") != NULL);
    free(img);
    builder_free(&b);
}

#define CHECK_MSG(cond, ...)                                                                                  \
    do {                                                                                                      \
        bool ok_ = (cond);                                                                                    \
        if (!ok_) {                                                                                           \
            fprintf(stderr, "    ");                                                                          \
            fprintf(stderr, __VA_ARGS__);                                                                     \
            fputc('\n', stderr);                                                                              \
        }                                                                                                     \
        CHECK(ok_);                                                                                           \
    } while (0)

/* A FIFO, devices and a directory are refused at once (a FIFO opened plainly would block until a writer comes). An
 * alarm fails the test if anything blocks. */
static void model_open_refuses_fifos_devices_and_directories(void) {
    char dir[] = "/tmp/vkvit_test_fifo_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char fifo[64];
    snprintf(fifo, sizeof fifo, "%s/model.vkvit", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    const struct { const char *path, *what; } cases[] = {
        {fifo, "is not a regular file but a FIFO (named pipe); vkvit reads only regular files"},
        {"/dev/zero", "'/dev/zero' is not a regular file but a character device; vkvit reads only regular files"},
        {"/dev/null", "'/dev/null' is not a regular file but a character device"},
        {dir, "is not a regular file but a directory; vkvit reads only regular files"},
    };
    alarm(20);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct stat sb; /* a device replaced by a regular file on a shared machine is skipped, not failed */
        if (strncmp(cases[i].path, "/dev/", 5) == 0 && (stat(cases[i].path, &sb) != 0 || !S_ISCHR(sb.st_mode))) {
            fprintf(stderr, "    skipping %s: not a character device here\n", cases[i].path);
            continue;
        }
        vkvit__model_file mf;
        uint64_t t0 = vkvit__now_ns();
        vkvit_result r = vkvit__model_file_load(cases[i].path, NULL, 0, NULL, &mf);
        double ms = (double)(vkvit__now_ns() - t0) / 1e6;
        CHECK_MSG(r == VKVIT_ERROR_IO && strstr(vkvit_last_error(), cases[i].what) != NULL && ms < 1000.0,
              "%s: %s: %s (%.1f ms)", cases[i].path, vkvit_result_name(r), vkvit_last_error(), ms);
        uint8_t *data = NULL;
        size_t size = 0;
        CHECK_MSG(vkvit__read_file(cases[i].path, 1 << 20, &data, &size) == VKVIT_ERROR_IO, "%s", cases[i].path);
        free(data);
    }
    alarm(0);
    remove(fifo);
    rmdir(dir);
}

/* Files of /proc (and /sys) report st_size 0 but read as data: the reader says so, not "the file is 0 bytes long",
 * which stays the sentence of a truly empty file. The pipeline cache's whole-file read refuses them the same way. */
static void model_open_names_proc_files_as_such(void) {
    const char *proc = "/proc/self/status";
    struct stat sb;
    if (stat(proc, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size != 0) {
        fprintf(stderr, "    skipping %s: not a size-less regular file here\n", proc);
        return;
    }
    vkvit__model_file mf;
    vkvit_result r = vkvit__model_file_load(proc, NULL, 0, NULL, &mf);
    const char *e = vkvit_last_error();
    CHECK_MSG(r == VKVIT_ERROR_IO && !strstr(e, "0 bytes long") &&
                  strstr(e, "'/proc/self/status' is not a regular file with a size: it reports 0 bytes but reads as "
                            "data, as files under /proc and /sys do"),
              "%s: %s: %s", proc, vkvit_result_name(r), e);
    uint8_t *data = NULL;
    size_t size = 0;
    r = vkvit__read_file(proc, 1 << 20, &data, &size);
    CHECK_MSG(r == VKVIT_ERROR_IO && data == NULL && strstr(vkvit_last_error(), "as files under /proc and /sys do"),
              "vkvit__read_file(%s): %s: %s", proc, vkvit_result_name(r), vkvit_last_error());
    free(data);
    /* An empty regular file is still what it is: 0 bytes long. */
    char empty[] = "/tmp/vkvit_test_empty_XXXXXX";
    const int fd = mkstemp(empty);
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    r = vkvit__model_file_load(empty, NULL, 0, NULL, &mf);
    CHECK_MSG(r == VKVIT_ERROR_BAD_MODEL_FILE && strstr(vkvit_last_error(), "the file is 0 bytes long"), "%s: %s: %s",
              empty, vkvit_result_name(r), vkvit_last_error());
    remove(empty);
}

/* vkvit__model_file_load from memory gives the sentence the same bytes give as a file (when the label is the path);
 * both or neither of path and data is an argument error. */
static void model_load_from_memory_matches_the_file_path(void) {
    builder b;
    make_vit5(&b);
    size_t size;
    uint8_t *img = build(&b, &size);
    char path[] = "/tmp/vkvit_test_mem_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    const size_t cuts[] = {0, 7, 8, 20, size / 2, size - 1, size};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        FILE *f = fopen(path, "wb");
        fwrite(img, 1, cuts[i], f);
        fclose(f);
        uint8_t *copy = malloc(cuts[i] ? cuts[i] : 1);
        memcpy(copy, img, cuts[i]);
        vkvit__model_file a, m;
        vkvit_result ra = vkvit__model_file_load(path, NULL, 0, "ignored for files", &a);
        char sa[1024];
        snprintf(sa, sizeof sa, "%s", vkvit_last_error());
        vkvit_result rm = vkvit__model_file_load(NULL, copy, cuts[i], path, &m);
        CHECK_MSG(ra == rm && (ra == VKVIT_OK || strcmp(sa, vkvit_last_error()) == 0), "cut %zu: file %s '%s', memory %s '%s'",
              cuts[i], vkvit_result_name(ra), sa, vkvit_result_name(rm), vkvit_last_error());
        CHECK_MSG((cuts[i] == size) == (ra == VKVIT_OK), "cut %zu", cuts[i]);
        if (ra == VKVIT_OK) vkvit__model_file_close(&a);
        if (rm == VKVIT_OK) vkvit__model_file_close(&m);
        free(copy);
    }
    vkvit__model_file mf;
    CHECK_MSG(vkvit__model_file_load(path, img, size, NULL, &mf) == VKVIT_ERROR_INVALID_ARGUMENT &&
          strstr(vkvit_last_error(), "both set") != NULL, "%s", vkvit_last_error());
    CHECK_MSG(vkvit__model_file_load(NULL, NULL, 0, NULL, &mf) == VKVIT_ERROR_INVALID_ARGUMENT &&
          strstr(vkvit_last_error(), "neither desc->path nor desc->data") != NULL, "%s", vkvit_last_error());
    CHECK_MSG(vkvit__model_file_load(NULL, img, 5, NULL, &mf) == VKVIT_ERROR_BAD_MODEL_FILE &&
          strstr(vkvit_last_error(), "model 'model in memory': the file is 5 bytes long") != NULL, "%s",
          vkvit_last_error());
    remove(path);
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

static void model_accepts_empty_tensors_and_extra_entry_keys(void) {
    /* A zero-element tensor overlaps nothing; unknown keys inside an entry are ignored, whatever their value (3.5 and
     * 2.0e0 there are fine: only shape and data_offsets entries must be written as integers). */
    const char *hdr = "{\"a\":{\"dtype\":\"F32\",\"shape\":[0,4000000000000],\"data_offsets\":[4,4]},"
                      "\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4],\"extra\":[3.5,{\"x\":2.0e0}]}}";
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

/* The vectorised fp32 -> fp16 (vkvit__f32_to_f16_array, used for the fp16 copies of the weights) equals the scalar
 * conversion: at every fp16 value, at the midpoints between neighbours (ties to even) and one fp32 ulp either side,
 * on both signs, and on every 251st fp32 bit pattern within the range; it reports values beyond 65504, infinities
 * and NaN. */
enum { F16_CHUNK = 4096 };

/* Converts in[0..n) both ways; returns the number of differences (and 1 when the array call refused the batch). */
static uint32_t f16_array_differences(const float *in, uint32_t n) {
    static uint16_t out[F16_CHUNK];
    uint32_t bad = !vkvit__f32_to_f16_array(in, out, n);
    for (uint32_t i = 0; i < n; i++) bad += out[i] != vkvit__f32_to_f16(in[i]);
    return bad;
}

static void f16_array_matches_scalar(void) {
    static float in[F16_CHUNK];
    const float limit = 65504.0f;
    uint32_t n = 0, bad = 0, checked = 0;
    for (uint32_t h = 0; h < 0x7c00u; h++) { /* fp16 value h, its upper midpoint and that midpoint's fp32 neighbours */
        const float v = vkvit__f16_to_f32((uint16_t)h), next = vkvit__f16_to_f32((uint16_t)(h + 1));
        const float mid = (float)(((double)v + (double)next) / 2);
        const float cand[4] = {v, mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY)};
        for (int c = 0; c < 4; c++)
            if (fabsf(cand[c]) <= limit) in[n++] = cand[c], in[n++] = -cand[c];
        if (n + 8 > F16_CHUNK) bad += f16_array_differences(in, n), checked += n, n = 0;
    }
    for (uint64_t x = 0; x <= 0xffffffffull; x += 251) { /* a strided sample of every fp32 bit pattern */
        const uint32_t u = (uint32_t)x;
        float f;
        memcpy(&f, &u, 4);
        if (fabsf(f) <= limit) in[n++] = f;
        if (n == F16_CHUNK) bad += f16_array_differences(in, n), checked += n, n = 0;
    }
    bad += f16_array_differences(in, n), checked += n;
    CHECK(bad == 0);
    CHECK(checked > 8000000u);
    const float beyond[] = {nextafterf(limit, INFINITY), 65520.0f, -70000.0f, INFINITY, -INFINITY, NAN, 3e38f};
    uint16_t out[3];
    for (size_t i = 0; i < sizeof beyond / sizeof beyond[0]; i++) {
        const float v[3] = {1.0f, beyond[i], -limit};
        CHECK(!vkvit__f32_to_f16_array(v, out, 3));
    }
    const float edge[2] = {limit, -limit};
    CHECK(vkvit__f32_to_f16_array(edge, out, 2) && out[0] == 0x7bffu && out[1] == 0xfbffu);
}

static void bf16_converts_specials(void) {
    CHECK(vkvit__bf16_to_f32(0x3f80) == 1.0f);
    CHECK(isinf(vkvit__bf16_to_f32(0x7f80)) && vkvit__bf16_to_f32(0xff80) < 0);
    CHECK(isnan(vkvit__bf16_to_f32(0x7fc0)) && isnan(vkvit__bf16_to_f32(0xff81)));
    CHECK(vkvit__bf16_to_f32(0x0001) == ldexpf(1.0f, -133)); /* subnormal */
    CHECK(signbit(vkvit__bf16_to_f32(0x8000)) && vkvit__bf16_to_f32(0x8000) == 0.0f);
}

/* ---------------------------------------------------------------------------------------------------------------
 * Parameter and FLOP counts: docs/math.md 5.2 / 7.2 / 8, cross-checked against tools/vkvit_file.py (flops(),
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
    CHECK_EQ_U64(vkvit__model_param_count(&cfg), 22010112ull); /* docs/math.md 5.2: 22.010 M */
    CHECK(cfg.name && cfg.name[0] == '\0');                    /* name is optional */
    vkvit__model_config_free(&cfg);
}

static void flops_and_params_match_spec_for_other_configs(void) {
    struct {
        const char *flavour, *config;
        uint64_t params, flops;
    } cases[] = {
        /* nvsubq-style ViT-5-B (docs/math.md 5.2 / 8) */
        {"nvsubq",
         "\"dim\":768,\"num_heads\":12,\"mlp_hidden\":3072,\"num_registers\":4,\"has_cls\":true,\"readout\":\"cls\","
         "\"neck_dim\":0,\"layer_scale\":true,\"grn\":false,"
         "\"bias\":{\"patch_embed\":false,\"qkv\":false,\"proj\":false,\"mlp\":false,\"head\":false}",
         86486016ull, 35896538880ull},
        /* paper ViT-5-S: biases on patch embed, proj, MLP, head (docs/math.md 5.2: 22.039 M); FLOPs ignore biases */
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
        {"nxai", 384, 768, 22792360ull, 11628983424ull, 118782272ull, 479673152ull}, /* docs/math.md 7.2: 22.79 M */
        {"nxai", 192, 384, 6088360ull, 3742812480ull, 0, 0},                         /* docs/math.md 7.2: 6.09 M */
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


/* Every row of the architecture table (src/arch/arch.h) is complete and named once, the names come from it, and the
 * parser reaches a row by its name: an unknown name gets a sentence listing every row, a row's flavours are its own. */
static void architecture_table_rows_are_complete(void) {
    for (int i = 0; i < VKVIT_ARCH_COUNT; i++) {
        const vkvit__arch id = (vkvit__arch)i;
        const vkvit__arch_ops *a = vkvit__arch_ops_of(id);
        CHECK(a && a->name && a->flavours && a->n_flavours >= 1 && a->mixer_flops_name);
        CHECK(a->parse && a->tensors && a->flops && a->describe && a->build);
        CHECK(strcmp(vkvit__arch_name(id), a->name) == 0);
        for (uint32_t f = 0; f < a->n_flavours; f++) CHECK(strcmp(vkvit__flavour_name(id, f), a->flavours[f]) == 0);
        CHECK(strcmp(vkvit__flavour_name(id, a->n_flavours), "?") == 0);
        for (int j = 0; j < i; j++) CHECK(strcmp(vkvit__arch_ops_of((vkvit__arch)j)->name, a->name) != 0);
    }
    CHECK(strcmp(vkvit__arch_name(VKVIT_ARCH_COUNT), "?") == 0);
    CHECK(strcmp(vkvit__arch_ops_of(VKVIT_ARCH_VIT5)->name, "vit5") == 0 &&
          strcmp(vkvit__arch_ops_of(VKVIT_ARCH_VIL)->name, "vil") == 0 &&
          strcmp(vkvit__arch_ops_of(VKVIT_ARCH_RESNET)->name, "resnet") == 0);

    const struct {
        const char *from, *to, *text;
    } cases[] = {
        {"\"architecture\":\"vit5\"", "\"architecture\":\"vit6\"",
         "architecture 'vit6' is unknown (expected vit5, vil or resnet)"},
        {"\"flavour\":\"nvsubq\"", "\"flavour\":\"nxai\"", "flavour = 'nxai' is not one of nvsubq, paper (for vit5)"},
    };
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(cases); i++) {
        char doc[4096], *at = strstr(VIT5_DOC, cases[i].from);
        CHECK(at != NULL);
        if (!at) continue;
        snprintf(doc, sizeof doc, "%.*s%s%s", (int)(at - VIT5_DOC), VIT5_DOC, cases[i].to, at + strlen(cases[i].from));
        vkvit__model_config cfg;
        expect_error(parse_doc(doc, &cfg), VKVIT_ERROR_BAD_MODEL_FILE, cases[i].text, LABEL);
    }
}

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

int main(void) {
    RUN(model_parses_small_vit5);
    RUN(model_parses_small_vil_in_both_flavours);
    RUN(model_parses_small_resnet);
    RUN(model_converts_f32_f16_bf16_tensors_to_f32);
    RUN(model_open_reads_a_file_from_disk);
    RUN(model_accepts_a_header_with_nothing_but_braces);
    RUN(model_accepts_empty_tensors_and_extra_entry_keys);
    RUN(model_open_refuses_fifos_devices_and_directories);
    RUN(model_open_names_proc_files_as_such);
    RUN(model_load_from_memory_matches_the_file_path);
    RUN(f16_converts_every_value_exactly);
    RUN(f16_array_matches_scalar);
    RUN(bf16_converts_specials);
    RUN(flops_vit5_small_match_the_seed_numbers);
    RUN(flops_and_params_match_spec_for_other_configs);
    RUN(flops_and_params_match_spec_for_vil);
    RUN(flops_and_params_match_python_for_resnet);
    RUN(flops_saturate_instead_of_wrapping);
    RUN(config_rejects_infinite_and_huge_numbers);
    RUN(architecture_table_rows_are_complete);
    parse_golden_models();
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
