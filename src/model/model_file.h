// SPDX-License-Identifier: Apache-2.0
/* src/model/model_file — a whole vkvit model file: safetensors table + `vkvit` config + the exact tensor table the
 * config implies (docs/model-format.md), plus the parameter and FLOP counts of docs/math.md 8.
 *
 *     vkvit__model_file mf;
 *     if (vkvit__model_file_open(path, &mf) != VKVIT_OK) return ...;     // the sentence is in vkvit_last_error()
 *     const vkvit__st_tensor *t = vkvit__model_file_tensor(&mf, "pos_embed");
 *     vkvit__model_file_tensor_f32(&mf, t, dst, t->numel);                // F32 / F16 / BF16 -> fp32
 *     vkvit__model_file_close(&mf);
 *
 * Once open succeeds the file is known to hold exactly the tensors its architecture uses, each with the right
 * shape, so later code (weight upload, graph build) may look tensors up without re-checking shapes. */
#ifndef VKVIT_MODEL_MODEL_FILE_H
#define VKVIT_MODEL_MODEL_FILE_H

#include "model/config.h"
#include "model/safetensors.h"

/* Model files (and images in memory) above this are refused. */
#define VKVIT_MODEL_MAX_FILE ((uint64_t)4 << 30)

typedef struct vkvit__model_file {
    char *label;                            /* owned copy of the path (or the label given to _parse) */
    vkvit__file file;                       /* _open: the open file, whose tensors are read with pread (never
                                               mapped: common.h, vkvit__file); closed when _parse borrowed an image */
    uint8_t *head;                          /* _open: the file's first bytes, its length and JSON header (owned) */
    const uint8_t *data;                    /* _parse: the caller's whole image; NULL for a file */
    size_t size;                            /* the image's bytes (a file's when it was opened) */
    vkvit__safetensors st;                  /* tensor table (sorted by name) */
    vkvit__model_config cfg;
} vkvit__model_file;

/* Opens `path` (a regular file of at most 4 GiB), reads its header and validates it completely; the tensors are
 * read later, by vkvit__model_file_read_f32. On failure *mf is zeroed and owns nothing. Errors: VKVIT_ERROR_IO
 * (also a file that shrinks while it is read), _INVALID_ARGUMENT (too large), _BAD_MODEL_FILE, _UNSUPPORTED,
 * _OUT_OF_HOST_MEMORY. */
vkvit_result vkvit__model_file_open(const char *path, vkvit__model_file *mf);

/* The entry vkvit_model_create uses (and the fuzzer, so it covers the public path): exactly one of `path` (opened
 * as by _open) and `data` (size bytes in the caller's memory, borrowed until _close; at most 4 GiB) must be given.
 * `label` names a memory image in sentences (NULL: "model in memory"); a file is named by its path. A memory image gets exactly the
 * checks and sentences a file with the same bytes and label gets. Errors: those of _open, and
 * VKVIT_ERROR_INVALID_ARGUMENT when both or neither of path and data are given. */
vkvit_result vkvit__model_file_load(const char *path, const void *data, size_t size, const char *label,
                                    vkvit__model_file *mf);

/* The same from an image in memory, which is borrowed: it must outlive *mf. `label` names it in sentences. */
vkvit_result vkvit__model_file_parse(const uint8_t *data, size_t size, const char *label, vkvit__model_file *mf);

/* Releases everything; accepts a zeroed struct (and a closed one). */
void vkvit__model_file_close(vkvit__model_file *mf);

/* The tensor called `name`, or NULL. */
const vkvit__st_tensor *vkvit__model_file_tensor(const vkvit__model_file *mf, const char *name);

/* Converts tensor t (from this file) to fp32 into dst, which holds `count` floats; count must equal t->numel
 * (else VKVIT_ERROR_INVALID_ARGUMENT). Any alignment of the file data is fine. */
vkvit_result vkvit__model_file_tensor_f32(const vkvit__model_file *mf, const vkvit__st_tensor *t, float *dst,
                                          size_t count);

/* Elements [first, first + count) of tensor t (from this file; within it) as fp32 into dst: converted from the
 * caller's image, or read from the file straight into dst (pread; a 2-byte dtype into dst's upper half, widened in
 * place), so no host copy of the file is made. Safe on several threads at once. Errors: VKVIT_ERROR_IO (the file
 * shrank since it was opened: "model '<path>': the file shrank while vkvit read it: ..."). */
vkvit_result vkvit__model_file_read_f32(const vkvit__model_file *mf, const vkvit__st_tensor *t, uint64_t first,
                                        size_t count, float *dst);

/* ---------------------------------------------------------------------------------------------------------------
 * The tensor table of docs/model-format.md, generated from a config by its architecture's row (src/arch/<name>.c;
 * names and shapes, in the document's order).
 * The visitor is called once per expected tensor with a name that is valid during the call only; returning false
 * stops the walk (then the function returns false). Nothing is allocated, whatever depth the config claims.
 * --------------------------------------------------------------------------------------------------------------- */

typedef bool (*vkvit__tensor_visit_fn)(void *user, const char *name, uint32_t ndim, const uint64_t *shape);
bool vkvit__model_tensor_table(const vkvit__model_config *cfg, vkvit__tensor_visit_fn visit, void *user);

/* Parameters the config implies: the sum of the element counts of its tensor table (ViT-5-S nvsubq: 22,010,112;
 * ViL-S nxai: 22,792,360). */
uint64_t vkvit__model_param_count(const vkvit__model_config *cfg);

/* FLOPs of one forward pass of one image, docs/math.md 8 (1 MAC = 2 FLOPs, 1 FLOP per elementwise op, biases
 * and residual adds not counted, as upstream): the terms from the architecture's row, `total` summed here.
 * Saturates at UINT64_MAX for absurd configs. */
typedef struct vkvit__flops {
    uint64_t patch_embed;                   /* 2 * in_chans * width * P^2 * Np */
    uint64_t pos_embed;                     /* Np * width */
    uint64_t mixer_per_block;               /* vit5: ViT5Attention; vil: the mLSTM cell (parallel form);
                                               resnet: the QKVSequenceMixer (0 when identity) */
    uint64_t cond_mixer_per_block;          /* resnet: the QKVConditionMixer (0 when identity); 0 otherwise */
    uint64_t block;                         /* one whole block */
    uint64_t blocks;                        /* depth * block */
    uint64_t readout;                       /* vit5: GAP / register_concat; vil: legacy_norm + bilateral_avg;
                                               resnet: GAP */
    uint64_t out_norm;                      /* vit5, resnet: out_norm; vil: the head LayerNorm */
    uint64_t head;                          /* 2 * head_in * classes */
    uint64_t total;                         /* patch_embed + pos_embed + blocks + readout + out_norm + head */
} vkvit__flops;

void vkvit__model_flops_breakdown(const vkvit__model_config *cfg, vkvit__flops *out);
uint64_t vkvit__model_flops(const vkvit__model_config *cfg); /* ViT-5-S/16 at 224, nvsubq: 9,412,799,616 */

#endif /* VKVIT_MODEL_MODEL_FILE_H */
