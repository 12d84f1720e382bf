// SPDX-License-Identifier: Apache-2.0
/* Model-file reader tests, hostile files: raw safetensors framing (every truncation, every single-byte header
 * corruption, bad lengths, garbage JSON) and one mutation per case of a valid file, each failing with a specific
 * result code and a sentence that names the offending tensor or field. No GPU needed. Last line: "N passed, M failed". */
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "model_builder.h"

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
    char subject[64];                                    /* as the model reader names the file */
    snprintf(subject, sizeof subject, "model '%s'", LABEL);
    expect_error(vkvit__safetensors_parse(img, size, subject, &st), VKVIT_ERROR_BAD_MODEL_FILE,
                 "other than whitespace", LABEL);
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
static void e_shape_2_53(builder *b) { find_t(b, "out_proj.bias")->shape_json = "[9007199254740992]"; }
static void e_shape_8_0(builder *b) { find_t(b, "out_proj.bias")->shape_json = "[3.0]"; }
static void e_dtype_nul(builder *b) { find_t(b, "pos_embed")->dtype_json = "\"F32\\u0000\""; }
static void e_entry_dup_key(builder *b) { find_t(b, "pos_embed")->dtype_json = "\"F32\",\"dtype\":\"F32\""; }
static void e_shape_overflow(builder *b) {
    find_t(b, "out_proj.bias")->shape_json = "[4294967296,4294967296,4294967296]";
}
static void set_offsets(builder *b, const char *name, long long begin, long long end) {
    tensor_def *t = find_t(b, name);
    snprintf(t->offsets_buf, sizeof t->offsets_buf, "[%lld,%lld]", begin, end);
    t->offsets_json = t->offsets_buf;
}
static void e_offsets_past_end(builder *b) {
    uint64_t lo = 0, hi = 0;
    range_of(b, "out_proj.bias", &lo, &hi);
    set_offsets(b, "out_proj.bias", (long long)lo + 4, (long long)hi + 4);
}
static void e_offsets_reversed(builder *b) {
    uint64_t lo = 0, hi = 0;
    range_of(b, "pos_embed", &lo, &hi);
    set_offsets(b, "pos_embed", (long long)hi, (long long)lo);
}
static void e_offsets_overlap(builder *b) {
    uint64_t lo = 0, hi = 0;
    range_of(b, "patch_embed.bias", &lo, &hi);
    set_offsets(b, "patch_embed.bias", (long long)lo - 4, (long long)hi - 4);
}
static void e_offsets_size_mismatch(builder *b) {
    uint64_t lo = 0, hi = 0;
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
    {"model_rejects_shape_entry_2_to_53", VIT5, NO_SET, e_shape_2_53, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'out_proj.bias' has shape entry 0 = 9.00719925474099e+15, not a non-negative integer"},
    {"model_rejects_integral_shape_entry_written_3_0", VIT5, NO_SET, e_shape_8_0, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'out_proj.bias' has shape entry 0 = 3.0, not a non-negative integer (it is written with a fraction"},
    {"model_rejects_dtype_with_escaped_nul", VIT5, NO_SET, e_dtype_nul, VKVIT_ERROR_BAD_MODEL_FILE,
     "the header has a string holding U+0000"},
    {"model_rejects_key_twice_inside_a_tensor_entry", VIT5, NO_SET, e_entry_dup_key, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'pos_embed' has the key 'dtype' twice"},
    {"model_rejects_shape_entry_written_1e300", VIT5, NO_SET, e_shape_huge, VKVIT_ERROR_BAD_MODEL_FILE,
     "tensor 'out_proj.bias' has shape entry 0 = 1e300, not a non-negative integer"},
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
     "the header has the key 'pos_embed' twice"},
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
    {"model_rejects_duplicate_key_in_config_bias", VIT5, {"+config.bias.qkv", "true"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "config.bias has the key 'qkv' twice"},
    {"model_rejects_duplicate_key_in_ignored_object", VIT5, {"extra", "{\"a\":1,\"a\":1}"}, NULL,
     VKVIT_ERROR_BAD_MODEL_FILE, "extra has the key 'a' twice"},
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
    {"model_rejects_denormal_std", VIT5, {"preprocess.std", "[0.2,0.2,1e-45]"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "preprocess.std[2] = 1e-45 is outside the supported range [1e-06, 1e+06]"},
    {"model_rejects_huge_mean", VIT5, {"preprocess.mean", "[0.5,1e300,0.5]"}, NULL, VKVIT_ERROR_BAD_MODEL_FILE,
     "preprocess.mean[1] = 1e+300 is outside the supported range [-1e+06, 1e+06]"},
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


/* --------------------------------------------------------------------------------------------------------------- */

int main(void) {
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
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
