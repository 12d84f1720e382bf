// SPDX-License-Identifier: Apache-2.0
/* Files in and out (cli_input.c, cli_output.c) and the model sniffer (cli_sniff.c). */
#ifndef VKVIT_CLI_IO_H
#define VKVIT_CLI_IO_H

#include "vkvit.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------------------------------------------
 * Files in and out
 * ------------------------------------------------------------------------------------------------------------ */

/* Reads an input whole into a malloc'ed buffer: "-" is standard input; anonymous pipes (/dev/stdin of a pipe,
 * <(...)) are read to their end; regular files are checked against the cap before reading. At most max_bytes in
 * every case. Errors (with a sentence naming the input): VKVIT_ERROR_IO (missing, unreadable, a directory, a named
 * FIFO, a device such as /dev/zero), VKVIT_ERROR_INVALID_ARGUMENT (larger than max_bytes). */
vkvit_result cli_read_input(const char *path, size_t max_bytes, uint8_t **data, size_t *size);
/* How messages name an input: "standard input" for "-", else the path. */
const char *cli_input_name(const char *path);

/* Writes `size` bytes to `path`: "-" is standard output; a regular file (after resolving symlinks) or a new file
 * is written atomically (a temporary file next to the real file, then rename); anything else (a device such as
 * /dev/null or /dev/full, a FIFO) is opened and written in place. Every write error is reported:
 * VKVIT_ERROR_IO with a sentence. */
vkvit_result cli_write_output(const char *path, const void *data, size_t size);

/* The same, for an output written piece by piece over a command's run: cli_out_open before any work (a path that
 * cannot be written then costs nothing; a regular or new file gets its temporary file now and is not touched
 * before cli_out_commit renames the temporary over it), cli_out_write as results come, then cli_out_commit, or
 * cli_out_abort on failure (the temporary is removed; an existing file keeps its content). Errors: VKVIT_ERROR_IO
 * with a sentence; after a failed write the others fail too. */
typedef struct cli_out_file {
    const char *path;                       /* as given; "-" is standard output */
    char real[PATH_MAX];                    /* symlinks resolved */
    char tmp[PATH_MAX + 32];                /* the temporary file, "" when written in place */
    int fd, in_place, replace, error;
    unsigned mode;                          /* the replaced file's permission bits */
} cli_out_file;
vkvit_result cli_out_open(cli_out_file *o, const char *path);
/* Whether both paths exist and name the same file (device and inode: links and symlinks included). */
int cli_same_file(const char *a, const char *b);
vkvit_result cli_out_write(cli_out_file *o, const void *data, size_t size);
vkvit_result cli_out_commit(cli_out_file *o);
void cli_out_abort(cli_out_file *o);

/* The images a command works on (cli_paths.c): operands, folders and list files, in order. */
typedef struct cli_path {
    char *path;
    char *error;                            /* NULL, or why this entry cannot be read (a folder the walk could not
                                             * open): reported as a bad image in its place */
} cli_path;
typedef struct cli_path_list {
    cli_path *items;
    uint32_t count, cap;
} cli_path_list;
/* Whether a file name ends in an extension of an image format the CLI decodes (case-insensitive). */
int cli_has_image_extension(const char *name);
/* Adds an operand: a folder gives its image files (by extension; dot files and dot folders left out; recursive: its
 * folders too, each entered once, so symlink loops end), sorted by path as strings, as tools/bulk_classify.py lists
 * them; anything else (a file, `-`, a missing path) is added as given and reported when it is read. Errors:
 * VKVIT_ERROR_OUT_OF_HOST_MEMORY only (an unreadable or empty folder is an entry with its sentence). */
vkvit_result cli_paths_add(cli_path_list *l, const char *operand, int recursive);
/* Adds the paths of a list file (`-`: standard input): one per line, surrounding blanks and CR stripped, blank lines
 * and lines starting with '#' skipped. Errors: cli_read_input's, VKVIT_ERROR_INVALID_ARGUMENT (a NUL byte). */
vkvit_result cli_paths_add_list(cli_path_list *l, const char *list_path);
void cli_paths_free(cli_path_list *l);

/* Reads a safetensors input whole (cli_read_input: `-` is standard input; above max_bytes is
 * VKVIT_ERROR_BAD_MODEL_FILE), refuses what is plainly not safetensors (cli_sniff_safetensors) and parses it with
 * vkvit_tensor_file_create (the library's strict reader). On success free *bytes after vkvit_tensor_file_destroy. */
vkvit_result cli_open_tensor_file(const char *path, size_t max_bytes, uint8_t **bytes, vkvit_tensor_file **file);
/* Tensor `index` of `file` as fp32 in a malloc'ed array of info->count floats (`what` names it if memory runs out). */
vkvit_result cli_read_tensor_f32(const vkvit_tensor_file *file, uint32_t index, const vkvit_tensor_info *info,
                                 const char *what, float **out);
/* "[d0, d1, ...]" of a tensor's shape; returns buf. */
const char *cli_dims_text(const uint64_t *shape, uint32_t ndim, char *buf, size_t cap);

/* Reads the float tensor `condition` of a safetensors file (`-`: standard input) for a session whose condition
 * shape is `cs` ([B, C] or [B, Tc, C]): the tensor must have cs's rank and trailing dims; its first dim is the number
 * of rows R, returned in *rows with the R * (elements per row) floats in *out (malloc'ed). Errors: VKVIT_ERROR_IO,
 * VKVIT_ERROR_BAD_MODEL_FILE (not safetensors, no tensor `condition`, wrong shape), VKVIT_ERROR_OUT_OF_HOST_MEMORY. */
vkvit_result cli_read_condition(const char *path, vkvit_shape cs, float **out, uint32_t *rows);
/* "[2, 32]" */
const char *cli_shape_text(const vkvit_shape *s, char *buf, size_t cap);

/* Before a model file goes to the reader: when its first bytes cannot start a safetensors file (8-byte header
 * length, then '{') it returns VKVIT_ERROR_BAD_MODEL_FILE with a sentence saying what the file looks like by its
 * magic bytes (PNG, JPEG, GIF, WebP, BMP, a PyTorch zip checkpoint, a pickle, HDF5, gzip, ONNX, GGUF, ...), so the
 * user does not meet "header length 727905341920923785 is above the limit". VKVIT_ERROR_IO for a path that cannot be
 * opened or is not a regular file (a FIFO, a device, a directory: the library's sentence), so that the commands refuse
 * it before creating a Vulkan context (a GPU driver takes a second to start). VKVIT_OK otherwise (short or unreadable
 * files: the reader reports those). */
vkvit_result cli_sniff_model(const char *path);
/* The same on the first n bytes of an input already read; `kind` completes "'NAME' is not <kind>". */
vkvit_result cli_sniff_safetensors(const uint8_t *bytes, size_t n, const char *name, const char *kind);

#endif
