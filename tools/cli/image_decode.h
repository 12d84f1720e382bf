/* Image files for the CLI (`vkvit classify`, `vkvit eval`): read with a size cap, the header checked before any
 * pixel is decoded, then decoded by stb_image into RGBA8 for vkvit_session_set_images.
 *
 * Formats: PNG (every colour type and bit depth; 16-bit samples keep their high byte), JPEG (baseline and
 * progressive), BMP, GIF (first frame), TGA. Grey, grey + alpha, palette and RGB inputs become RGBA8 with A = 255.
 *
 * Everything about the file is untrusted: a missing file, a directory, a file above CLI_IMAGE_MAX_FILE_BYTES, a
 * header claiming 0 or more than VKVIT_MAX_IMAGE_SIDE pixels on a side, a PNG whose critical chunk fails its CRC,
 * and any decoder error each get one sentence (vkvit_last_error(), naming the path) and a result code, never a
 * crash. stb_image is compiled into image_decode.c only, with static linkage. */
#ifndef VKVIT_CLI_IMAGE_DECODE_H
#define VKVIT_CLI_IMAGE_DECODE_H

#include "vkvit.h"

#include <stddef.h>
#include <stdint.h>

/* Larger files are refused before they are read (a 16384 x 16384 RGBA PNG is at most ~1 GiB decoded; 256 MiB
 * of compressed input is far beyond any photo). */
#define CLI_IMAGE_MAX_FILE_BYTES ((size_t)256 << 20)

/* classify and eval stop adding decoded images to a batch once they hold this many bytes of pixels (at least one
 * image always fits), so a batch of large photos is never held in host memory all at once. */
#define CLI_CHUNK_MAX_BYTES ((uint64_t)1 << 30)

typedef struct cli_image {
    uint8_t *pixels;                        /* RGBA8, row-major, width * height * 4 bytes; free with cli_image_free */
    uint32_t width, height;                 /* 1 .. VKVIT_MAX_IMAGE_SIDE each */
    uint32_t channels_in_file;              /* 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA (as stb_image reports them) */
} cli_image;

/* Decodes an image held in memory. `name` (the path) only appears in error sentences. Errors:
 * VKVIT_ERROR_BAD_IMAGE (unknown format, corrupt or truncated data, 0 or too large a side),
 * VKVIT_ERROR_OUT_OF_HOST_MEMORY. On failure *out is zeroed. */
vkvit_result cli_image_decode(const uint8_t *data, size_t size, const char *name, cli_image *out);

/* Reads `path` (at most CLI_IMAGE_MAX_FILE_BYTES, a regular file) and decodes it. Errors: VKVIT_ERROR_IO (missing,
 * unreadable, not a regular file), VKVIT_ERROR_BAD_IMAGE (too large a file, or as cli_image_decode). */
vkvit_result cli_image_load(const char *path, cli_image *out);

/* Frees the pixels; a zeroed image is a no-op. */
void cli_image_free(cli_image *img);

/* The vkvit_image view of a decoded image (borrows its pixels). */
vkvit_image cli_image_view(const cli_image *img);

#endif /* VKVIT_CLI_IMAGE_DECODE_H */
