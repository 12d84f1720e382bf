// SPDX-License-Identifier: Apache-2.0
/* Image files for the CLI (`vkvit classify`, `vkvit eval`): read with a size cap, the header checked before any
 * pixel is decoded, then decoded into RGBA8 for vkvit_session_set_images.
 *
 * Formats: PNG (every colour type and bit depth; 16-bit samples keep their high byte), JPEG (baseline and
 * progressive), BMP, GIF (first frame), TGA, binary PPM (P6) and PGM (P5) (all through stb_image), WebP (lossy and
 * lossless, still images; Debian's libwebp), baseline TIFF (vkvit's own reader, decode_tiff in image_decode.c:
 * 8/16-bit grey, grey + alpha, RGB, RGBA, 8-bit palette; uncompressed, PackBits, LZW, Deflate; strips or tiles).
 * The EXIF Orientation tag of a JPEG, PNG or WebP, and a TIFF's Orientation tag, are applied, as PIL's
 * ImageOps.exif_transpose does. Grey, palette and RGB inputs become RGBA8 with A = 255.
 *
 * Everything about the file is untrusted: a missing file, a directory, a FIFO or device (refused without blocking),
 * a file above CLI_IMAGE_MAX_FILE_BYTES, a header claiming 0 or more than VKVIT_MAX_IMAGE_SIDE pixels on a side or
 * more pixels than `max_pixels`, a PNG whose critical chunk fails its CRC, a JPEG or BMP stb_image would decode from
 * memory it never wrote or with unbounded work, data that inflates far beyond its image, and any decoder error each
 * get one sentence (cli_last_error(), naming the path) and a result code, never a crash. stb_image is compiled into
 * image_decode.c only, with static linkage. */
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

/* The default pixel limit of cli_image_decode / cli_image_load: 2^25 pixels, whose RGBA8 bytes (128 MiB) fit the
 * smallest maxStorageBufferRange Vulkan allows (2^27), so any device can pre-process such an image. Callers that
 * hold a ctx pass cli_image_device_max_pixels(ctx) instead. */
#define CLI_IMAGE_DEFAULT_MAX_PIXELS ((uint64_t)1 << 25)

typedef struct cli_image {
    uint8_t *pixels;                        /* RGBA8, row-major, width * height * 4 bytes; free with cli_image_free */
    uint32_t width, height;                 /* 1 .. VKVIT_MAX_IMAGE_SIDE each */
    uint32_t channels_in_file;              /* 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA (as stb_image reports them) */
} cli_image;

/* Decodes an image held in memory. `name` (the path) only appears in error sentences. An image whose header
 * states more than `max_pixels` pixels (width * height; 0 = CLI_IMAGE_DEFAULT_MAX_PIXELS) is refused before any
 * pixel is decoded. Errors: VKVIT_ERROR_BAD_IMAGE (unknown format, corrupt or truncated data, 0 or too large a side,
 * too many pixels), VKVIT_ERROR_OUT_OF_HOST_MEMORY. On failure *out is zeroed. */
vkvit_result cli_image_decode_max(const uint8_t *data, size_t size, const char *name, uint64_t max_pixels,
                                  cli_image *out);

/* Reads `path` (at most CLI_IMAGE_MAX_FILE_BYTES; a regular file: a FIFO, socket or device is refused without
 * opening it for a blocking read) and decodes it as cli_image_decode_max does. Errors: VKVIT_ERROR_IO (missing,
 * unreadable, not a regular file), VKVIT_ERROR_BAD_IMAGE (too large a file, or as cli_image_decode_max). */
vkvit_result cli_image_load_max(const char *path, uint64_t max_pixels, cli_image *out);

/* cli_image_decode_max / cli_image_load_max with max_pixels 0 (CLI_IMAGE_DEFAULT_MAX_PIXELS). */
vkvit_result cli_image_decode(const uint8_t *data, size_t size, const char *name, cli_image *out);
vkvit_result cli_image_load(const char *path, cli_image *out);

/* The most pixels one image may have on this device: set_images uploads width * height * 4 bytes through one
 * storage-buffer binding, so maxStorageBufferRange / 4 (at most VKVIT_MAX_IMAGE_SIDE squared). */
uint64_t cli_image_device_max_pixels(const vkvit_ctx *ctx);

/* The most pixels an image may have for classify and eval to decode it on the host: 16384 x 12288 (768 MiB as RGBA8;
 * a 200 MP phone photo, 16320 x 12240, fits), with VKVIT_MAX_IMAGE_SIDE still the limit of each side. Larger headers
 * are refused before any pixel memory is allocated (a 33 KB file claiming 16384 x 16384). An image above the device's
 * limit (cli_image_device_max_pixels) but within this one is decoded, then reduced on the host (cli_image_reduce). */
#define CLI_IMAGE_HOST_MAX_PIXELS ((uint64_t)VKVIT_MAX_IMAGE_SIDE * 12288u)

/* The size cli_image_reduce gives a w x h image: the largest with the same aspect (each side floor(side * s), the
 * same s for both) and at most max_pixels pixels; w x h itself when it fits (or max_pixels is 0). */
void cli_image_fit_size(uint32_t w, uint32_t h, uint64_t max_pixels, uint32_t *ow, uint32_t *oh);
/* Reduces `img` in place to cli_image_fit_size's size when it has more than max_pixels pixels: each output pixel the
 * mean of the source area it covers (a box / area filter, partial pixels weighted by their overlap; all four
 * channels alike), rounded to nearest. The model's own resize then runs on the GPU from the reduced image. Errors:
 * VKVIT_ERROR_OUT_OF_HOST_MEMORY (`name` in the sentence); the image is unchanged then. */
vkvit_result cli_image_reduce(cli_image *img, uint64_t max_pixels, const char *name);

/* Frees the pixels; a zeroed image is a no-op. */
void cli_image_free(cli_image *img);

/* The vkvit_image view of a decoded image (borrows its pixels). */
vkvit_image cli_image_view(const cli_image *img);

#endif /* VKVIT_CLI_IMAGE_DECODE_H */
