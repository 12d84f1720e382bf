// SPDX-License-Identifier: Apache-2.0
/* src/model/safetensors — a safetensors image in memory, parsed into a tensor table without copying tensor data.
 *
 *     u64 little-endian N | N bytes of JSON header | data section (raw little-endian tensors)
 *
 * The bytes are untrusted. vkvit__safetensors_parse() checks every rule of docs/model-format.md ("The reader ...")
 * and fails with VKVIT_ERROR_BAD_MODEL_FILE and one sentence that names the offending tensor or field:
 *   - the header length is below 2, above 100 MiB or runs past the end of the file;
 *   - the header is not one JSON object (only whitespace may follow it; writers pad with spaces);
 *   - the header is not strict JSON (vkvit__json_check below: UTF-8, no raw control characters, no U+0000, no key
 *     twice in any object, numbers of at most 32 characters, nesting at most 64 deep);
 *   - a tensor entry lacks a dtype of F32 / F16 / BF16, a shape of at most 8 non-negative integers, or
 *     data_offsets of two non-negative integers (written as integers: no fraction or exponent; below 2^53);
 *     begin > end; end past the data section;
 *     end - begin != product(shape) * sizeof(dtype) (computed with overflow checks);
 *   - two tensors' byte ranges overlap (empty tensors overlap nothing);
 *   - __metadata__ is not an object of string -> string.
 * Extra keys inside a tensor entry are ignored, as the safetensors reference reader does.
 *
 * Memory: one table of tensors and one string arena (names, metadata) are allocated; both are bounded by the header
 * length. Tensor data stays in the caller's image, which must outlive the table. cJSON's parse tree of the header
 * is freed before parse returns (its peak size is proportional to the header length).
 *
 * Tensor data may be unaligned (the data section starts at 8 + N): read it with memcpy or the byte helpers below. */
#ifndef VKVIT_MODEL_SAFETENSORS_H
#define VKVIT_MODEL_SAFETENSORS_H

#include "common.h"

#define VKVIT_ST_MAX_DIMS 8
#define VKVIT_ST_MAX_HEADER ((uint64_t)100 * 1024 * 1024) /* 100 MiB, the safetensors reference limit */

typedef enum vkvit__st_dtype {
    VKVIT_ST_F32,
    VKVIT_ST_F16,
    VKVIT_ST_BF16,
    VKVIT_ST_DTYPE_COUNT
} vkvit__st_dtype;

typedef struct vkvit__st_tensor {
    const char *name;                       /* NUL-terminated, in the table's string arena */
    vkvit__st_dtype dtype;
    uint32_t ndim;                          /* 0 .. VKVIT_ST_MAX_DIMS (0 = a scalar, one element) */
    uint64_t shape[VKVIT_ST_MAX_DIMS];      /* entries past ndim are 0 */
    uint64_t numel;                         /* product(shape) */
    size_t offset;                          /* absolute byte offset of the data in the file image */
    size_t size;                            /* bytes = numel * dtype size */
} vkvit__st_tensor;

typedef struct vkvit__st_meta {
    const char *key;                        /* NUL-terminated, in the arena */
    const char *value;
} vkvit__st_meta;

typedef struct vkvit__safetensors {
    const uint8_t *data;                    /* the borrowed file image (vkvit__safetensors_parse); NULL after
                                               _parse_head, whose caller reads the tensors from the file */
    size_t size;
    size_t header_size;                     /* N */
    size_t data_offset;                     /* 8 + N: the start of the data section */
    vkvit__st_tensor *tensors;              /* sorted by name (strcmp) */
    uint32_t n_tensors;
    vkvit__st_meta *meta;                   /* __metadata__ entries, sorted by key */
    uint32_t n_meta;
    char *strings;                          /* the arena every name / key / value points into */
} vkvit__safetensors;

/* Parses the image data[0 .. size). `label` is the subject of the error sentences, which begin "<label>: " (the
 * model reader's "model 'vit5.vkvit'", vkvit_tensor_file_create's "tensor file 'in.safetensors'"). On success
 * *out holds the table (release it with vkvit__safetensors_free); on failure *out is zeroed and nothing is held.
 * Errors: VKVIT_ERROR_BAD_MODEL_FILE, VKVIT_ERROR_OUT_OF_HOST_MEMORY. */
vkvit_result vkvit__safetensors_parse(const uint8_t *data, size_t size, const char *label, vkvit__safetensors *out);

/* The same checks and sentences for an image of `size` bytes of which only the first head_bytes are at hand: at
 * least vkvit__safetensors_head_bytes of them (the length and the JSON header; the tensors' data is never read).
 * out->data is NULL. The model reader reads a file's header so, then its tensors with pread. */
vkvit_result vkvit__safetensors_parse_head(const uint8_t *head, size_t head_bytes, size_t size, const char *label,
                                           vkvit__safetensors *out);
/* How many of an image's first bytes _parse_head needs, from its first min(size, 8) bytes at first8: 8 + the
 * header length when that length passes the checks of the first three rules above, else min(size, 8) (the
 * sentence needs no more). */
size_t vkvit__safetensors_head_bytes(const uint8_t *first8, size_t size);

/* Strict JSON (RFC 8259 as Python's json module reads it) plus vkvit's rules, on text[0 .. len), before cJSON
 * (which is lenient) sees it: well-formed UTF-8 inside strings; no raw control character in a string; valid escapes,
 * surrogate escapes in pairs; no U+0000 (cJSON would cut the string there: "F32\u0000" would read as "F32"); no key
 * twice in any object, compared after unescaping; numbers in the JSON grammar (no leading zero, no bare '.', no
 * NaN / Infinity) and at most 32 characters long; arrays and objects nested at most 64 deep; only whitespace after
 * the value. `header` = the safetensors header (sentences say "the header", and the elements of a tensor entry's
 * shape and data_offsets must be written as integers); else the vkvit entry. VKVIT_OK or _BAD_MODEL_FILE (or
 * _OUT_OF_HOST_MEMORY) with one sentence that begins "<label>: ". Allocates at most len + 1 bytes plus one pointer
 * per open key. */
vkvit_result vkvit__json_check(const char *text, size_t len, bool header, const char *label);

/* Frees the table and the arena (not the image). Accepts a zeroed struct; leaves *st zeroed. */
void vkvit__safetensors_free(vkvit__safetensors *st);

/* The tensor called `name`, or NULL (binary search). */
const vkvit__st_tensor *vkvit__safetensors_find(const vkvit__safetensors *st, const char *name);

/* The __metadata__ value for `key`, or NULL. */
const char *vkvit__safetensors_meta(const vkvit__safetensors *st, const char *key);

/* "F32", "F16", "BF16". */
const char *vkvit__st_dtype_name(vkvit__st_dtype dtype);
/* 4, 2, 2. */
size_t vkvit__st_dtype_size(vkvit__st_dtype dtype);

/* IEEE binary16 / bfloat16 -> binary32. Exact for every input: zeros keep their sign, subnormals are normalised,
 * infinities stay infinite and NaNs stay NaN with their payload in the high mantissa bits. */
float vkvit__f16_to_f32(uint16_t h);
float vkvit__bf16_to_f32(uint16_t b);
/* fp32 -> IEEE binary16, round to nearest even; beyond +-65504 gives +-inf (callers range-check first). */
uint16_t vkvit__f32_to_f16(float f);
/* The same for n values (a loop the compiler vectorises, ~10x the scalar function); returns false when some |x| is
 * beyond 65504 or NaN (dst then holds garbage for those: the caller refuses the tensor). */
bool vkvit__f32_to_f16_array(const float *restrict src, uint16_t *restrict dst, size_t n);

/* Length of the well-formed multi-byte UTF-8 sequence at p, bytes up to `end` (Unicode table 3-7: no overlongs,
 * surrogates or code points above U+10FFFF), or 0 (also for an ASCII byte, which callers take as it is). */
size_t vkvit__utf8_len(const unsigned char *p, const unsigned char *end);

/* Converts `count` little-endian elements of `dtype` at src (any alignment) to fp32 in dst. */
void vkvit__st_convert_f32(vkvit__st_dtype dtype, const uint8_t *src, size_t count, float *dst);
/* The same in place: buf (room for `count` floats) holds the elements in its last count * dtype-size bytes (a
 * file's bytes read there, model_file.c) and gets their fp32 values; F32 on a little-endian host is left as it is. */
void vkvit__st_convert_f32_in_place(vkvit__st_dtype dtype, float *buf, size_t count);

/* Writes "[d0, d1, ...]" into buf (always NUL-terminated; truncated if cap is too small). Returns buf. */
char *vkvit__st_format_shape(char *buf, size_t cap, const uint64_t *shape, uint32_t ndim);

/* Copies `s` into buf for an error sentence: at most about 80 characters, bytes outside printable ASCII replaced
 * by '?', "..." appended when cut. Returns buf. Hostile names never reach the error channel unfiltered. */
char *vkvit__st_format_name(char *buf, size_t cap, const char *s);

#endif /* VKVIT_MODEL_SAFETENSORS_H */
