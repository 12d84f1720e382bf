// SPDX-License-Identifier: Apache-2.0
/* vkvit_tensor_file_*: the public face of the safetensors reader (src/model/safetensors.c) for files that are not
 * models — `vkvit run`'s input and condition tensors, a binding's test data. The table borrows the caller's bytes;
 * every check is the reader's own, so a tensor file is exactly as strict as a model file's safetensors layer. */
#include "common.h"
#include "model/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vkvit_tensor_file {
    vkvit__safetensors st;
};

_Static_assert(VKVIT_TENSOR_MAX_DIMS == VKVIT_ST_MAX_DIMS, "public and reader dimension limits");
_Static_assert((int)VKVIT_DTYPE_F32 == (int)VKVIT_ST_F32 && (int)VKVIT_DTYPE_F16 == (int)VKVIT_ST_F16 &&
                   (int)VKVIT_DTYPE_BF16 == (int)VKVIT_ST_BF16 && (int)VKVIT_DTYPE_COUNT == (int)VKVIT_ST_DTYPE_COUNT,
               "public dtype values mirror the reader's");

VKVIT_API vkvit_result vkvit_tensor_file_create(const void *data, size_t size, const char *label,
                                                vkvit_tensor_file **out) {
    if (!out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_tensor_file_create: out is NULL");
    *out = NULL;
    if (!data && size > 0)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_tensor_file_create: data is NULL, size %zu", size);
    vkvit_tensor_file *f = calloc(1, sizeof *f);
    if (!f) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_tensor_file_create: out of host memory");
    static const uint8_t empty[1];
    /* The reader's sentences begin "tensor file '<label>': " (a model file's, "model '<path>': "). */
    const size_t cap = (label ? strlen(label) : 0) + sizeof "tensor file ''";
    char *subject = malloc(cap);
    if (!subject) {
        free(f);
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "vkvit_tensor_file_create: out of host memory");
    }
    if (label)
        snprintf(subject, cap, "tensor file '%s'", label);
    else
        snprintf(subject, cap, "tensor file");
    vkvit_result r = vkvit__safetensors_parse(data ? data : empty, size, subject, &f->st);
    free(subject);
    if (r != VKVIT_OK) {
        free(f);
        return r;
    }
    *out = f;
    return VKVIT_OK;
}

VKVIT_API void vkvit_tensor_file_destroy(vkvit_tensor_file *file) {
    if (!file) return;
    vkvit__safetensors_free(&file->st);
    free(file);
}

VKVIT_API uint32_t vkvit_tensor_file_count(const vkvit_tensor_file *file) { return file ? file->st.n_tensors : 0; }

VKVIT_API int64_t vkvit_tensor_file_find(const vkvit_tensor_file *file, const char *name) {
    if (!file || !name) return -1;
    const vkvit__st_tensor *t = vkvit__safetensors_find(&file->st, name);
    return t ? (int64_t)(t - file->st.tensors) : -1;
}

/* The tensor at `index`, or NULL with a sentence naming the calling function. */
static const vkvit__st_tensor *tensor_at(const vkvit_tensor_file *file, uint32_t index, const char *func) {
    if (!file) {
        vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: file is NULL", func);
        return NULL;
    }
    if (index >= file->st.n_tensors) {
        vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: tensor index %u, the file has %u tensors", func, index,
                     file->st.n_tensors);
        return NULL;
    }
    return &file->st.tensors[index];
}

VKVIT_API vkvit_result vkvit_tensor_file_info(const vkvit_tensor_file *file, uint32_t index, vkvit_tensor_info *out) {
    const vkvit__st_tensor *t = tensor_at(file, index, "vkvit_tensor_file_info");
    if (!t) return VKVIT_ERROR_INVALID_ARGUMENT;
    if (!out) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_tensor_file_info: out is NULL");
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->dtype = (vkvit_dtype)t->dtype;
    out->ndim = t->ndim;
    memcpy(out->shape, t->shape, sizeof out->shape);
    out->count = t->numel;
    return VKVIT_OK;
}

VKVIT_API vkvit_result vkvit_tensor_file_read_f32(const vkvit_tensor_file *file, uint32_t index, float *dst,
                                                  size_t count) {
    const vkvit__st_tensor *t = tensor_at(file, index, "vkvit_tensor_file_read_f32");
    if (!t) return VKVIT_ERROR_INVALID_ARGUMENT;
    if (!dst && count > 0) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_tensor_file_read_f32: dst is NULL");
    if ((uint64_t)count != t->numel) {
        char name[96]; /* a hostile file's name, filtered for the sentence */
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit_tensor_file_read_f32: tensor '%s' has %llu elements, "
                            "count is %zu", vkvit__st_format_name(name, sizeof name, t->name),
                            (unsigned long long)t->numel, count);
    }
    vkvit__st_convert_f32(t->dtype, file->st.data + t->offset, count, dst);
    return VKVIT_OK;
}
