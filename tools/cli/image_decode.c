/* Image files for the CLI: size-capped read, header check, stb_image decode to RGBA8 (see image_decode.h).
 *
 * The order matters for hostile files:
 *   1. read the file (size cap, regular files only);
 *   2. PNG / BMP sides read from their headers and refused when 0 or above VKVIT_MAX_IMAGE_SIDE;
 *   3. completeness checks stb_image does not make (it decodes a short file as if the missing bytes were zero):
 *      PNG critical-chunk CRCs and IEND, a JPEG's end-of-image marker, a BMP's whole pixel array;
 *   4. stbi_info_from_memory (headers only, every format), the sides refused again, a GIF's first frame and an
 *      uncompressed TGA's pixel array checked for completeness;
 *   5. only then the pixels are decoded. */
#include "image_decode.h"

#include "common.h"

#include <stdlib.h>
#include <string.h>

/* stb_image, compiled here and nowhere else in the CLI. STB_IMAGE_STATIC keeps its symbols private to this file,
 * so it cannot clash with another copy linked into a host program. STBI_NO_STDIO: every file goes through
 * cli_image_load's capped reader, never through stb's fopen. */
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_GIF
#define STBI_ONLY_TGA
#define STBI_MAX_DIMENSIONS (1 << 24) /* stb's own sanity limit; vkvit's (smaller) limit is checked below */
#if defined(__GNUC__)
/* stb declares stbi_set_unpremultiply_on_load_thread static without defining it under STB_IMAGE_STATIC; GCC
 * reports that at the end of the file, so this one stays off for the whole file. */
#  pragma GCC diagnostic ignored "-Wunused-function"
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wshadow"
#  pragma GCC diagnostic ignored "-Wsign-compare"
#  pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#  pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#  pragma GCC diagnostic ignored "-Wmissing-prototypes"
#  pragma GCC diagnostic ignored "-Wstrict-prototypes"
#  pragma GCC diagnostic ignored "-Wtype-limits"
#  pragma GCC diagnostic ignored "-Wmisleading-indentation"
#endif
#include <stb_image.h>
#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#endif

/* ------------------------------------------------------------------------------------------------------------
 * Integrity checks stb_image leaves out
 * ------------------------------------------------------------------------------------------------------------ */

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* CRC-32 (ISO 3309, as PNG uses it), bitwise: PNG chunks are few and small next to decoding. */
static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static const uint8_t k_png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

/* A PNG whose critical chunk (IHDR, PLTE, IDAT, IEND: first letter upper case) fails its CRC is corrupt; libpng
 * refuses it, stb_image does not look. Ancillary chunks (tEXt, ...) with a bad CRC are accepted, as libpng does.
 * Structural problems (a chunk running past the end) are left to the decoder, which reports them. */
static vkvit_result check_png_crcs(const uint8_t *data, size_t size, const char *name) {
    size_t pos = sizeof k_png_signature;
    while (size - pos >= 12) {
        uint32_t len = be32(data + pos);
        const uint8_t *type = data + pos + 4;
        if (len > size - pos - 12) break;
        bool critical = type[0] >= 'A' && type[0] <= 'Z';
        if (critical && crc32_update(0, type, 4u + len) != be32(type + 4 + len))
            return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt PNG: the %.4s chunk fails its CRC check", name,
                                (const char *)type);
        if (!memcmp(type, "IEND", 4)) return VKVIT_OK;
        pos += 12u + len;
    }
    return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated PNG: the file (%zu bytes) ends before its IEND chunk",
                        name, size);
}

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* stb_image reads past the end of a short BMP as zeros. An uncompressed BMP (BI_RGB / BI_BITFIELDS) must hold its
 * whole pixel array: offset + row stride (padded to 4 bytes) * rows. Headers this check cannot read are left to
 * the decoder. */
static vkvit_result check_bmp_complete(const uint8_t *data, size_t size, const char *name) {
    if (size < 30) return VKVIT_OK;
    uint32_t offset = le32(data + 10), header = le32(data + 14);
    uint64_t w, h, bpp, compression = 0;
    if (header == 12) { /* OS/2 BITMAPCOREHEADER: 16-bit sides */
        w = (uint64_t)(data[18] | data[19] << 8);
        h = (uint64_t)(data[20] | data[21] << 8);
        bpp = (uint64_t)(data[24] | data[25] << 8);
    } else if (header >= 40 && size >= 34) {
        int32_t sw = (int32_t)le32(data + 18), sh = (int32_t)le32(data + 22);
        w = (uint64_t)(sw < 0 ? -(int64_t)sw : sw);
        h = (uint64_t)(sh < 0 ? -(int64_t)sh : sh); /* negative height: top-down rows */
        bpp = (uint64_t)(data[28] | data[29] << 8);
        compression = le32(data + 30);
    } else {
        return VKVIT_OK;
    }
    if ((compression != 0 && compression != 3) || w == 0 || h == 0 || bpp == 0 || bpp > 32) return VKVIT_OK;
    uint64_t need = offset + (w * bpp + 31) / 32 * 4 * h; /* w, h < 2^31, bpp <= 32: no overflow */
    if (need > size)
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated BMP: %llux%llu pixels at %llu bits need %llu "
                            "bytes, the file has %zu", name, (unsigned long long)w, (unsigned long long)h,
                            (unsigned long long)bpp, (unsigned long long)need, size);
    return VKVIT_OK;
}

/* stb_image decodes a JPEG that stops in the middle of its entropy-coded data without complaint (the missing
 * rows come out grey); PIL and libjpeg call it truncated. A complete JPEG has an end-of-image marker (FF D9) after
 * its last start-of-scan (FF DA); inside entropy-coded data 0xFF is always followed by 0x00 or a restart marker,
 * so an FF D9 there is the real end. */
static vkvit_result check_jpeg_complete(const uint8_t *data, size_t size, const char *name) {
    size_t last_sos = 0, last_eoi = 0;
    for (size_t i = 0; i + 1 < size; i++) {
        if (data[i] != 0xFF) continue;
        if (data[i + 1] == 0xDA) last_sos = i + 1;
        if (data[i + 1] == 0xD9) last_eoi = i + 1;
    }
    if (last_eoi == 0 || last_eoi < last_sos)
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated JPEG: the file (%zu bytes) ends before its "
                            "end-of-image marker", name, size);
    return VKVIT_OK;
}

/* stb_image also fills a short GIF's missing pixels with nothing and returns it. Walks the blocks up to the end of
 * the first image's LZW data (the frame vkvit decodes): header, logical screen, global colour table, extensions,
 * image descriptor, local colour table, data sub-blocks up to their 0 terminator. Anything malformed on the way is
 * left to the decoder. */
static vkvit_result check_gif_complete(const uint8_t *data, size_t size, const char *name) {
    size_t pos = 13;
    if (size < pos) goto truncated;
    if (data[10] & 0x80) pos += (size_t)3 << ((data[10] & 7) + 1); /* global colour table */
    for (;;) {
        if (pos >= size) goto truncated;
        uint8_t kind = data[pos];
        if (kind == 0x21) { /* extension: label, then sub-blocks */
            pos += 2;
        } else if (kind == 0x2C) { /* image descriptor, local colour table, LZW minimum code size */
            if (pos + 10 > size) goto truncated;
            uint8_t flags = data[pos + 9];
            pos += 10;
            if (flags & 0x80) pos += (size_t)3 << ((flags & 7) + 1);
            pos += 1;
        } else {
            return VKVIT_OK; /* the trailer (0x3B) before any image, or garbage: the decoder says which */
        }
        for (;;) { /* sub-blocks: a length byte, that many bytes; 0 ends them */
            if (pos >= size) goto truncated;
            uint8_t len = data[pos++];
            if (len == 0) break;
            pos += len;
        }
        if (kind == 0x2C) return VKVIT_OK;
    }
truncated:
    return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated GIF: the file (%zu bytes) ends inside its first "
                        "image", name, size);
}

/* The same for an uncompressed TGA (image types 1, 2, 3): the 18-byte header, the image ID, the colour map and
 * width * height pixels must all be there. Run-length encoded TGAs are left to the decoder. */
static vkvit_result check_tga_complete(const uint8_t *data, size_t size, const char *name) {
    if (size < 18) return VKVIT_OK;
    uint8_t type = data[2];
    if (type != 1 && type != 2 && type != 3) return VKVIT_OK;
    uint64_t cmap_len = (uint64_t)(data[5] | data[6] << 8), cmap_bits = data[7];
    uint64_t w = (uint64_t)(data[12] | data[13] << 8), h = (uint64_t)(data[14] | data[15] << 8), bits = data[16];
    uint64_t need = 18 + data[0] + (data[1] ? cmap_len * ((cmap_bits + 7) / 8) : 0) + w * h * ((bits + 7) / 8);
    if (need > size)
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated TGA: %llux%llu pixels at %llu bits need %llu "
                            "bytes, the file has %zu", name, (unsigned long long)w, (unsigned long long)h,
                            (unsigned long long)bits, (unsigned long long)need, size);
    return VKVIT_OK;
}

/* The format a file claims by its magic bytes (TGA has none), for the error sentence when its header is bad:
 * stbi_info tries every format and reports only "unknown type". */
static const char *sniff_format(const uint8_t *data, size_t size) {
    if (size >= sizeof k_png_signature && !memcmp(data, k_png_signature, sizeof k_png_signature)) return "PNG";
    if (size >= 2 && data[0] == 0xFF && data[1] == 0xD8) return "JPEG";
    if (size >= 2 && data[0] == 'B' && data[1] == 'M') return "BMP";
    if (size >= 4 && !memcmp(data, "GIF8", 4)) return "GIF";
    return NULL;
}

/* The sides a PNG (IHDR) or BMP header states, read here rather than by stb_image so that a header claiming an
 * absurd size gets vkvit's sentence instead of stb's generic "corrupt", and a top-down BMP (negative height, which
 * stbi_info passes through unchanged) is not mistaken for a negative size. Returns 0 for other formats. */
static int header_sides(const uint8_t *data, size_t size, int64_t *w, int64_t *h) {
    if (size >= 24 && !memcmp(data, k_png_signature, sizeof k_png_signature) && !memcmp(data + 12, "IHDR", 4)) {
        *w = be32(data + 16);
        *h = be32(data + 20);
        return 1;
    }
    if (size >= 26 && data[0] == 'B' && data[1] == 'M') {
        uint32_t header = le32(data + 14);
        if (header == 12) {
            *w = data[18] | data[19] << 8;
            *h = data[20] | data[21] << 8;
            return 1;
        }
        if (header >= 40) {
            *w = llabs((int64_t)(int32_t)le32(data + 18));
            *h = llabs((int64_t)(int32_t)le32(data + 22));
            return 1;
        }
    }
    return 0;
}

static vkvit_result check_sides(int64_t w, int64_t h, const char *name) {
    if (w <= 0 || h <= 0)
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s': the image header says %lldx%lld pixels; an image needs at "
                            "least 1x1", name, (long long)w, (long long)h);
    if (w > VKVIT_MAX_IMAGE_SIDE || h > VKVIT_MAX_IMAGE_SIDE)
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s': the image header says %lldx%lld pixels, above vkvit's limit "
                            "of %u pixels per side", name, (long long)w, (long long)h, VKVIT_MAX_IMAGE_SIDE);
    return VKVIT_OK;
}

/* ------------------------------------------------------------------------------------------------------------
 * Decode
 * ------------------------------------------------------------------------------------------------------------ */

vkvit_result cli_image_decode(const uint8_t *data, size_t size, const char *name, cli_image *out) {
    memset(out, 0, sizeof *out);
    if (size == 0) return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s' is empty (0 bytes), not an image", name);
    if (size > (size_t)INT32_MAX) /* stb_image takes an int length; cli_image_load caps far below this */
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s' is %zu bytes, too large for the image decoder", name, size);
    vkvit_result r;
    int64_t hw, hh;
    if (header_sides(data, size, &hw, &hh) && (r = check_sides(hw, hh, name)) != VKVIT_OK) return r;
    if (size >= sizeof k_png_signature && !memcmp(data, k_png_signature, sizeof k_png_signature) &&
        (r = check_png_crcs(data, size, name)) != VKVIT_OK)
        return r;
    if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF &&
        (r = check_jpeg_complete(data, size, name)) != VKVIT_OK)
        return r;
    if (size >= 2 && data[0] == 'B' && data[1] == 'M' && (r = check_bmp_complete(data, size, name)) != VKVIT_OK)
        return r;

    /* stb reads the header of every format (still no pixel memory), then the pixels. */
    int w = 0, h = 0, n = 0;
    if (!stbi_info_from_memory(data, (int)size, &w, &h, &n)) {
        const char *format = sniff_format(data, size);
        if (format)
            return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s' starts like a %s file but its header is corrupt or "
                                "unsupported", name, format);
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s' is not a PNG, JPEG, BMP, GIF or TGA image", name);
    }
    if (h < 0 && data[0] == 'B') h = -h; /* top-down BMP */
    if ((r = check_sides(w, h, name)) != VKVIT_OK) return r;
    const char *format = sniff_format(data, size);
    if (format && !strcmp(format, "GIF") && (r = check_gif_complete(data, size, name)) != VKVIT_OK) return r;
    if (!format && (r = check_tga_complete(data, size, name)) != VKVIT_OK) return r; /* TGA: the one without magic */

    /* Any bit depth and colour type -> RGBA8 (stb converts 16-bit samples to 8-bit and expands grey/palette). */
    int dw = 0, dh = 0, dn = 0;
    uint8_t *pixels = stbi_load_from_memory(data, (int)size, &dw, &dh, &dn, 4);
    if (!pixels) {
        const char *why = stbi_failure_reason() ? stbi_failure_reason() : "unknown error";
        if (!strcmp(why, "Out of memory"))
            return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "'%s': out of memory decoding a %dx%d image", name,
                                w, h);
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s': cannot decode the %dx%d image: %s", name, w, h, why);
    }
    if (dw != w || dh != h) { /* a header that disagrees with the decoder: never trust either */
        stbi_image_free(pixels);
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt image: header says %dx%d, decoded %dx%d", name, w,
                            h, dw, dh);
    }
    out->pixels = pixels;
    out->width = (uint32_t)w;
    out->height = (uint32_t)h;
    out->channels_in_file = (uint32_t)dn;
    return VKVIT_OK;
}

vkvit_result cli_image_load(const char *path, cli_image *out) {
    memset(out, 0, sizeof *out);
    uint8_t *data = NULL;
    size_t size = 0;
    vkvit_result r = vkvit__read_file(path, CLI_IMAGE_MAX_FILE_BYTES, &data, &size);
    if (r == VKVIT_ERROR_INVALID_ARGUMENT) return VKVIT_ERROR_BAD_IMAGE; /* above the size cap; the sentence says so */
    if (r != VKVIT_OK) return r;
    r = cli_image_decode(data, size, path, out);
    free(data);
    return r;
}

void cli_image_free(cli_image *img) {
    if (!img) return;
    if (img->pixels) stbi_image_free(img->pixels);
    memset(img, 0, sizeof *img);
}

vkvit_image cli_image_view(const cli_image *img) {
    return (vkvit_image){.pixels = img->pixels, .width = img->width, .height = img->height,
                         .row_bytes = img->width * 4u, .format = VKVIT_PIXEL_RGBA8};
}
