// SPDX-License-Identifier: Apache-2.0
/* vkvit_tensor_file_*: the public safetensors reader (include/vkvit.h "Tensor files"), on crafted in-memory files
 * whose answers are known exactly: the table (names in order, dtypes, shapes, counts), exact F16 / BF16 widening,
 * argument checks that write nothing, and hostile files (every truncation, overlapping ranges, a size that does
 * not match the shape) refused with BAD_MODEL_FILE and a sentence. No device needed. */
#include "vkvit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond, ...)                                                                                      \
    do {                                                                                                      \
        if (cond) {                                                                                           \
            passed++;                                                                                         \
        } else {                                                                                              \
            failed++;                                                                                         \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                   \
            fprintf(stderr, __VA_ARGS__);                                                                     \
            fputc('\n', stderr);                                                                              \
        }                                                                                                     \
    } while (0)

/* A safetensors image: 8-byte little-endian header length, the JSON header padded with spaces to a multiple of 8,
 * then `data`. Returns the total size written into buf. */
static size_t make_file(uint8_t *buf, const char *json, const uint8_t *data, size_t n_data) {
    size_t n = strlen(json), padded = (n + 7) / 8 * 8;
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    memcpy(buf + 8, json, n);
    memset(buf + 8 + n, ' ', padded - n);
    memcpy(buf + 8 + padded, data, n_data);
    return 8 + padded + n_data;
}

static void put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }

static void expect_refused(const uint8_t *img, size_t size, vkvit_result want, const char *needle, const char *what) {
    vkvit_tensor_file *f = (vkvit_tensor_file *)&f; /* must come back NULL */
    vkvit_result r = vkvit_tensor_file_create(img, size, "crafted.safetensors", &f);
    CHECK(r == want && f == NULL && (!needle || strstr(vkvit_last_error(), needle)), "%s: %s, '%s'", what,
          vkvit_result_name(r), vkvit_last_error());
    /* The sentence names a tensor file, not a model (the reader is the model reader's). */
    static const char prefix[] = "tensor file 'crafted.safetensors': ";
    if (want == VKVIT_ERROR_BAD_MODEL_FILE)
        CHECK(!strncmp(vkvit_last_error(), prefix, sizeof prefix - 1), "%s: '%s'", what, vkvit_last_error());
    if (r == VKVIT_OK) vkvit_tensor_file_destroy(f);
}

int main(void) {
    /* "b" F16 [2] = {1, -2}; "a" F32 [1, 2] = {0.5, -3.25}; "c" BF16 [3] = {1.5, -inf, -0}; "z" F32 [0] (empty). */
    uint8_t data[18];
    put_u16(data + 0, 0x3C00);
    put_u16(data + 2, 0xC000);
    const float af[2] = {0.5f, -3.25f};
    memcpy(data + 4, af, 8);
    put_u16(data + 12, 0x3FC0);
    put_u16(data + 14, 0xFF80);
    put_u16(data + 16, 0x8000);
    const char *json = "{\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[4,12]},"
                       "\"c\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[12,18]},"
                       "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[18,18]},"
                       "\"__metadata__\":{\"note\":\"not a model\"}}";
    uint8_t img[1024];
    const size_t size = make_file(img, json, data, sizeof data);

    vkvit_tensor_file *f = NULL;
    vkvit_result r = vkvit_tensor_file_create(img, size, "good.safetensors", &f);
    CHECK(r == VKVIT_OK && f, "good file refused: %s", vkvit_last_error());
    if (f) {
        CHECK(vkvit_tensor_file_count(f) == 4, "count %u", vkvit_tensor_file_count(f));
        const char *order[4] = {"a", "b", "c", "z"};
        for (uint32_t i = 0; i < 4; i++) {
            vkvit_tensor_info ti;
            CHECK(vkvit_tensor_file_info(f, i, &ti) == VKVIT_OK && !strcmp(ti.name, order[i]), "tensor %u", i);
            CHECK(vkvit_tensor_file_find(f, order[i]) == (int64_t)i, "find %s", order[i]);
        }
        CHECK(vkvit_tensor_file_find(f, "input") == -1 && vkvit_tensor_file_find(f, NULL) == -1 &&
                  vkvit_tensor_file_find(NULL, "a") == -1 && vkvit_tensor_file_find(f, "__metadata__") == -1,
              "find of absent names");

        vkvit_tensor_info ti;
        CHECK(vkvit_tensor_file_info(f, 0, &ti) == VKVIT_OK && ti.dtype == VKVIT_DTYPE_F32 && ti.ndim == 2 &&
                  ti.shape[0] == 1 && ti.shape[1] == 2 && ti.shape[2] == 0 && ti.count == 2, "info a");
        float out[3];
        CHECK(vkvit_tensor_file_read_f32(f, 0, out, 2) == VKVIT_OK && out[0] == 0.5f && out[1] == -3.25f, "read a");
        CHECK(vkvit_tensor_file_info(f, 1, &ti) == VKVIT_OK && ti.dtype == VKVIT_DTYPE_F16 && ti.count == 2, "info b");
        CHECK(vkvit_tensor_file_read_f32(f, 1, out, 2) == VKVIT_OK && out[0] == 1.0f && out[1] == -2.0f, "read b");
        CHECK(vkvit_tensor_file_info(f, 2, &ti) == VKVIT_OK && ti.dtype == VKVIT_DTYPE_BF16 && ti.count == 3, "info c");
        CHECK(vkvit_tensor_file_read_f32(f, 2, out, 3) == VKVIT_OK && out[0] == 1.5f && isinf(out[1]) &&
                  out[1] < 0 && out[2] == 0.0f && signbit(out[2]), "read c: %g %g %g", out[0], out[1], out[2]);
        CHECK(vkvit_tensor_file_info(f, 3, &ti) == VKVIT_OK && ti.count == 0 &&
                  vkvit_tensor_file_read_f32(f, 3, NULL, 0) == VKVIT_OK, "empty tensor z");

        /* Misuse: a sentence, INVALID_ARGUMENT, and nothing written. */
        float poison[3] = {42, 42, 42};
        r = vkvit_tensor_file_read_f32(f, 1, poison, 3);
        CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "has 2 elements") && poison[0] == 42,
              "wrong count: %s", vkvit_last_error());
        r = vkvit_tensor_file_read_f32(f, 4, poison, 2);
        CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "index 4") && poison[0] == 42,
              "index out of range: %s", vkvit_last_error());
        CHECK(vkvit_tensor_file_info(f, 9, &ti) == VKVIT_ERROR_INVALID_ARGUMENT, "info out of range");
        CHECK(vkvit_tensor_file_info(f, 0, NULL) == VKVIT_ERROR_INVALID_ARGUMENT, "info NULL out");
        CHECK(vkvit_tensor_file_read_f32(f, 0, NULL, 2) == VKVIT_ERROR_INVALID_ARGUMENT, "read NULL dst");
        vkvit_tensor_file_destroy(f);
    }
    vkvit_tensor_file_destroy(NULL);
    CHECK(vkvit_tensor_file_count(NULL) == 0, "count of NULL");
    CHECK(vkvit_tensor_file_create(img, size, NULL, NULL) == VKVIT_ERROR_INVALID_ARGUMENT, "NULL out");
    expect_refused(NULL, 16, VKVIT_ERROR_INVALID_ARGUMENT, "data is NULL", "NULL data");
    {
        vkvit_tensor_file *unnamed = NULL;          /* no label: "tensor file: ..." */
        const vkvit_result r3 = vkvit_tensor_file_create(img, 3, NULL, &unnamed);
        CHECK(r3 == VKVIT_ERROR_BAD_MODEL_FILE && !unnamed && !strncmp(vkvit_last_error(), "tensor file: the file", 21),
              "no label: %s, '%s'", vkvit_result_name(r3), vkvit_last_error());
    }

    /* Every truncation of the good file is refused (the data section or the header is short). */
    for (size_t n = 0; n < size; n++) expect_refused(img, n, VKVIT_ERROR_BAD_MODEL_FILE, NULL, "truncated");

    /* Overlapping ranges, a size that does not match shape x dtype, an unknown dtype, duplicate keys. */
    uint8_t bad[1024];
    size_t n = make_file(bad, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                              "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", data, 8);
    expect_refused(bad, n, VKVIT_ERROR_BAD_MODEL_FILE, "overlap", "overlapping tensors");
    n = make_file(bad, "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", data, 8);
    expect_refused(bad, n, VKVIT_ERROR_BAD_MODEL_FILE, "a", "size against shape");
    n = make_file(bad, "{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", data, 8);
    expect_refused(bad, n, VKVIT_ERROR_BAD_MODEL_FILE, "dtype", "unknown dtype");
    n = make_file(bad, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", data, 8);
    expect_refused(bad, n, VKVIT_ERROR_BAD_MODEL_FILE, NULL, "duplicate key");

    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
