// SPDX-License-Identifier: Apache-2.0
/* Image files for the CLI: size-capped read, header check, stb_image / libwebp / TIFF decode to RGBA8, EXIF
 * orientation (see image_decode.h; the TIFF reader's rules are at decode_tiff).
 *
 * The order matters for hostile files:
 *   1. read the file (size cap, regular files only: a FIFO is refused before it can block a read);
 *   2. PNG / BMP / WebP sides read from their headers and refused when 0, above VKVIT_MAX_IMAGE_SIDE, or above the
 *      caller's pixel limit (the device's buffer range), before any pixel memory is allocated;
 *   3. completeness checks stb_image does not make (it decodes a short file as if the missing bytes were zero):
 *      PNG critical-chunk CRCs and IEND, a JPEG's end-of-image marker, a BMP's and a PPM / PGM's whole pixel
 *      array;
 *   4. stbi_info_from_memory (headers only, every format), the sides refused again, a GIF's first frame and an
 *      uncompressed TGA's pixel array checked for completeness;
 *   5. only then the pixels are decoded;
 *   6. the EXIF Orientation of a JPEG (APP1), PNG (eXIf) or WebP (EXIF chunk), parsed here with every offset
 *      bounds-checked, is applied as PIL's ImageOps.exif_transpose does. */
#include "image_decode.h"

#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <webp/decode.h> /* libwebp-dev */

/* stb_image's memory (STBI_MALLOC, STBI_REALLOC_SIZED, STBI_FREE), for two things fuzzing found in Debian 12's
 * stb_image 2.27 (2026-11-28: libFuzzer with ASan, UBSan and MSan on cli_image_decode):
 *   - it uses memory it never wrote: its JPEG decoder state (Huffman and quantisation tables a file never
 *     defined), a progressive JPEG's coefficients and the samples of a component no scan covers come from malloc
 *     uncleared, so stale heap bytes could steer table lookups and come out as pixels. Every block is zeroed here
 *     (calloc, and the growth of a realloc);
 *   - its zlib inflater grows its output as long as the data lasts: a 1.9 MB PNG of 1x1 pixels inflated to 2 GiB.
 *     Each stb call gets a budget of bytes (stb_budget_begin) that the sum of its allocations and growths may not
 *     pass; past it stb sees a failed allocation and fails the decode.
 * The pixels stb returns are an ordinary malloc block either way (cli_image_free frees them with free()). */
static _Thread_local struct {
    uint64_t left;                          /* bytes stb may still allocate in this call (UINT64_MAX: no budget) */
    int exceeded;                           /* an allocation was refused for the budget */
} g_stb_budget = {UINT64_MAX, 0};

static void *stb_budget_malloc(size_t n) {
    if (n > g_stb_budget.left) {
        g_stb_budget.exceeded = 1;
        return NULL;
    }
    g_stb_budget.left -= n;
    return calloc(1, n ? n : 1);
}

static void *stb_budget_realloc(void *p, size_t old, size_t n) {
    const size_t grow = n > old ? n - old : 0;
    if (grow > g_stb_budget.left) {
        g_stb_budget.exceeded = 1;
        return NULL;
    }
    g_stb_budget.left -= grow;
    uint8_t *q = realloc(p, n ? n : 1);
    if (q && grow) memset(q + old, 0, grow);
    return q;
}

/* Starts an stb call that may allocate `bytes` in all. */
static void stb_budget_begin(uint64_t bytes) {
    g_stb_budget.left = bytes;
    g_stb_budget.exceeded = 0;
}

/* Ends it; returns whether an allocation was refused for the budget. */
static int stb_budget_end(void) {
    const int exceeded = g_stb_budget.exceeded;
    g_stb_budget.left = UINT64_MAX;
    g_stb_budget.exceeded = 0;
    return exceeded;
}

/* What stb may allocate in all (freed blocks count too) to decode a w x h image: 64 bytes per pixel and 16 MiB.
 * The largest legitimate need is an interlaced 16-bit RGBA PNG stored uncompressed: its IDAT data gathered in a
 * buffer that doubles as it grows (up to 16 bytes per pixel), the inflated rows (8), the interlace passes (8), the
 * 16-bit image (8) and that image in 8 bits (4): 44 per pixel. A JPEG needs about 13 (every component's samples, a
 * progressive file's 16-bit coefficients, the RGBA8 result), a GIF 9. The 16 MiB cover the decoders' own state (a
 * JPEG's is 18 KiB) and the header pass, which decodes no pixels. */
#define STB_BYTES_PER_PIXEL 64u
#define STB_BYTES_FIXED ((uint64_t)16 << 20)

#define STBI_MALLOC(n) stb_budget_malloc(n)
#define STBI_REALLOC_SIZED(p, old, n) stb_budget_realloc((p), (old), (n))
#define STBI_FREE(p) free(p)

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
#define STBI_ONLY_PNM /* binary PPM (P6) and PGM (P5), as tools/bulk_classify.py's Pillow reads them */
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
        if (critical && crc32_update(0, type, 4u + len) != be32(type + 4 + len)) {
            /* The type goes into the sentence only when it is letters (a corrupt one could hold terminal escapes). */
            char shown[16];
            int letters = 1;
            for (int k = 0; k < 4; k++) letters &= (type[k] | 0x20) >= 'a' && (type[k] | 0x20) <= 'z';
            if (letters) snprintf(shown, sizeof shown, "%.4s", (const char *)type);
            else snprintf(shown, sizeof shown, "0x%02X%02X%02X%02X", type[0], type[1], type[2], type[3]);
            return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt PNG: the %s chunk fails its CRC check", name,
                             shown);
        }
        if (!memcmp(type, "IEND", 4)) return VKVIT_OK;
        pos += 12u + len;
    }
    return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated PNG: the file (%zu bytes) ends before its IEND chunk",
                     name, size);
}

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* stb_image reads past the end of a short BMP as zeros. An uncompressed BMP (BI_RGB / BI_BITFIELDS) must hold its
 * whole pixel array: offset + row stride (padded to 4 bytes) * rows. stb reads the compression field as a signed
 * int and takes a negative one for uncompressed, so anything but those two is refused here (stb refuses the others
 * itself). A palette image (1, 4 or 8 bits) must have a palette of 1 to 256 colours between its header and its
 * pixel data, and no pixel may index past it: stb would take the colour from its palette array's unwritten part
 * (found by fuzzing, 2026-11-28). Headers this check cannot read are left to the decoder. */
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
    if (compression != 0 && compression != 3)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': a BMP of compression type %llu; vkvit decodes uncompressed "
                         "BMPs (types 0 and 3)", name, (unsigned long long)compression);
    if (w == 0 || h == 0 || bpp == 0 || bpp > 32) return VKVIT_OK;
    const uint64_t stride = (w * bpp + 31) / 32 * 4;
    uint64_t need = offset + stride * h; /* w, h < 2^31, bpp <= 32: no overflow */
    if (need > size)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated BMP: %llux%llu pixels at %llu bits need %llu "
                         "bytes, the file has %zu", name, (unsigned long long)w, (unsigned long long)h,
                         (unsigned long long)bpp, (unsigned long long)need, size);
    if (bpp != 1 && bpp != 4 && bpp != 8) return VKVIT_OK;
    /* The palette colours stb reads: what lies between the headers and the pixels, 4 bytes a colour; after an OS/2
     * header (12 bytes, 3 a colour) stb 2.27 reads 4 colours fewer than there are (it subtracts 24 for the header,
     * not 12), so those files may only use the others. Its int arithmetic, mirrored. */
    const int64_t off = (int32_t)offset;
    const int64_t colours = header == 12 ? (off - 14 - 24) / 3 : (off - 14 - (int64_t)header) / 4;
    if (colours < 1 || colours > 256)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt BMP: its pixel data starts at byte %lld, which "
                         "leaves no palette of 1 to 256 colours for its %llu-bit pixels", name, (long long)off,
                         (unsigned long long)bpp);
    if (colours < (1 << bpp)) { /* every index must name one of them */
        for (uint64_t y = 0; y < h; y++) {
            const uint8_t *row = data + offset + y * stride;
            for (uint64_t x = 0; x < w; x++) {
                const unsigned v = bpp == 8 ? row[x] : bpp == 4 ? (row[x / 2] >> (x % 2 ? 0 : 4)) & 15u
                                                             : (row[x / 8] >> (7 - x % 8)) & 1u;
                if (v >= colours)
                    return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': %s BMP: a pixel uses colour %u, past the %lld "
                                     "palette colours %s", name, header == 12 ? "an OS/2" : "corrupt", v,
                                     (long long)colours, header == 12 ? "the decoder (stb_image) reads" : "it has");
            }
        }
    }
    return VKVIT_OK;
}

/* A JPEG's markers, walked as stb_image reads them (other bytes before a marker skipped, fill bytes allowed), for
 * what stb_image 2.27 does not check (found by fuzzing it, 2026-11-28):
 *   - a DHT table of more than 256 codes: stb writes past the end of its code arrays while it reads the header;
 *   - a scan that uses a Huffman or quantisation table that no DHT / DQT before it defined, a frame component no
 *     scan decodes (a progressive file: no first DC scan), or no scan at all: stb would decode them from memory it
 *     never wrote;
 *   - more than JPEG_MAX_SCANS scans: stb decodes every block of the image again for each (a 10 KB file of 1000
 *     empty scans over 5792 x 5792 pixels took 27 s);
 * and a file that stops inside its entropy-coded data, which stb decodes without complaint (the missing rows come
 * out grey; PIL and libjpeg call it truncated): a complete JPEG has its end-of-image marker after its last scan.
 * Inside entropy-coded data 0xFF is followed by 0x00 or a restart marker, so any other marker ends the data.
 * A header this walk cannot follow is refused (stb would refuse it too, or read past what the file holds). */
#define JPEG_MAX_SCANS 100u                 /* libjpeg's progressive scripts use 6-10; mozjpeg's under 20 */

/* Where a JPEG's segments start: after its start-of-image marker, which stb_image (like libjpeg) finds behind any
 * number of 0xFF fill bytes; 0 when the file does not start so (then stb does not take it for a JPEG either). */
static size_t jpeg_start(const uint8_t *data, size_t size) {
    if (size == 0 || data[0] != 0xFF) return 0;
    size_t pos = 1;
    while (pos < size && data[pos] == 0xFF) pos++;
    return pos < size && data[pos] == 0xD8 ? pos + 1 : 0;
}

static int jpeg_is_sof(uint8_t m) { return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC; }

static vkvit_result check_jpeg(const uint8_t *data, size_t size, size_t start, const char *name) {
    uint8_t huff_defined[2] = {0, 0};       /* bit t: Huffman table t of class DC (0) / AC (1) defined */
    uint8_t quant_defined = 0;              /* bit t: quantisation table t defined */
    int progressive = 0, have_frame = 0;
    uint8_t n_comp = 0, comp_id[4] = {0}, comp_tq[4] = {0}, comp_decoded = 0; /* bit c: component c decoded */
    unsigned scans = 0;
    size_t pos = start;
    for (;;) {
        while (pos < size && data[pos] != 0xFF) pos++; /* to the next marker */
        while (pos < size && data[pos] == 0xFF) pos++; /* fill bytes */
        if (pos >= size) goto truncated;
        const uint8_t m = data[pos++];
        if (m == 0xD9) break;                                           /* end of image */
        if (m == 0x00) goto corrupt;                                    /* stb fails on it ("unknown marker") */
        if (m == 0x01 || (m >= 0xD0 && m <= 0xD8)) continue;           /* markers without a length */
        if (size - pos < 2) goto truncated;
        const size_t len = (size_t)data[pos] << 8 | data[pos + 1];
        if (len < 2) goto corrupt;
        if (len > size - pos) goto truncated;
        const uint8_t *s = data + pos + 2;
        const size_t n = len - 2;
        pos += len;
        if (m == 0xC4) {                                                /* DHT: tables of 17 + codes bytes */
            for (size_t i = 0; i < n;) {
                if (n - i < 17) goto corrupt;
                const unsigned tc = s[i] >> 4, th = s[i] & 15u;
                unsigned codes = 0;
                for (int k = 1; k <= 16; k++) codes += s[i + k];
                if (codes > 256)
                    return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt JPEG: a Huffman table of %u codes (at "
                                     "most 256)", name, codes);
                if (tc > 1 || th > 3 || codes > n - i - 17) goto corrupt;
                huff_defined[tc] |= (uint8_t)(1u << th);
                i += 17 + codes;
            }
        } else if (m == 0xDB) {                                         /* DQT: tables of 1 + 64 or 128 bytes */
            for (size_t i = 0; i < n;) {
                const unsigned pq = s[i] >> 4, tq = s[i] & 15u;
                if (pq > 1 || tq > 3 || n - i < 1 + 64 * (pq + 1)) goto corrupt;
                quant_defined |= (uint8_t)(1u << tq);
                i += 1 + 64 * (pq + 1);
            }
        } else if (jpeg_is_sof(m) && !have_frame) {                     /* the frame: components and their tables */
            if (m > 0xC2) /* lossless, hierarchical or arithmetic-coded: stb_image decodes none of them */
                return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': a JPEG of a kind vkvit does not decode (frame marker "
                                 "0x%02X); it decodes baseline and progressive Huffman-coded JPEGs", name, m);
            if (n < 6 || s[5] == 0 || s[5] > 4 || n < 6 + 3u * s[5]) goto corrupt;
            have_frame = 1;
            progressive = m == 0xC2;
            n_comp = s[5];
            for (unsigned c = 0; c < n_comp; c++) comp_id[c] = s[6 + 3 * c], comp_tq[c] = s[8 + 3 * c];
        } else if (m == 0xDA) {                                         /* a scan, then its entropy-coded data */
            if (!have_frame || n < 1 || s[0] == 0 || s[0] > 4 || n < 4 + 2u * s[0]) goto corrupt;
            const unsigned ns = s[0], ss = s[1 + 2 * ns], ah = s[3 + 2 * ns] >> 4;
            if (++scans > JPEG_MAX_SCANS)
                return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': a JPEG of more than %u scans; vkvit decodes at most "
                                 "%u (each scan decodes the whole image again)", name, JPEG_MAX_SCANS,
                                 JPEG_MAX_SCANS);
            for (unsigned k = 0; k < ns; k++) {
                unsigned c = 0;
                while (c < n_comp && comp_id[c] != s[1 + 2 * k]) c++;
                if (c == n_comp) goto corrupt;
                const unsigned td = s[2 + 2 * k] >> 4, ta = s[2 + 2 * k] & 15u;
                /* Sequential scans decode DC and AC; a progressive scan DC (first pass: ss 0, ah 0), DC refinement
                 * bits (no table) or AC bands (ss > 0). */
                const int needs_dc = !progressive || (ss == 0 && ah == 0), needs_ac = !progressive || ss > 0;
                const char *missing = comp_tq[c] > 3 || !(quant_defined >> comp_tq[c] & 1u) ? "quantisation"
                                      : needs_dc && (td > 3 || !(huff_defined[0] >> td & 1u)) ? "DC Huffman"
                                      : needs_ac && (ta > 3 || !(huff_defined[1] >> ta & 1u)) ? "AC Huffman"
                                                                                               : NULL;
                if (missing)
                    return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt JPEG: scan %u uses a %s table that no "
                                     "segment before it defines", name, scans, missing);
                if (needs_dc) comp_decoded |= (uint8_t)(1u << c);
            }
            /* The entropy-coded data, up to the next marker. stb's bit reader takes 0xFF, any fill bytes, then 0x00 as
             * a stuffed 0xFF (so FF FF 00 is data, not a marker); restart markers belong to the data too. */
            while (pos < size) {
                if (data[pos] != 0xFF) {
                    pos++;
                    continue;
                }
                size_t q = pos + 1;
                while (q < size && data[q] == 0xFF) q++;
                if (q < size && (data[q] == 0x00 || (data[q] >= 0xD0 && data[q] <= 0xD7))) {
                    pos = q + 1;
                    continue;
                }
                break; /* a marker (its fill bytes are skipped above), or the end of the file */
            }
        }
    }
    if (!have_frame) return VKVIT_OK;                                   /* stb says what is missing */
    if (scans == 0) /* stb would return the frame's samples undecoded */
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt JPEG: it ends before its first scan", name);
    for (unsigned c = 0; c < n_comp; c++)
        if (!(comp_decoded >> c & 1u))
            return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt JPEG: no scan decodes its component %u", name,
                             comp_id[c]);
    return VKVIT_OK;
truncated:
    return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated JPEG: the file (%zu bytes) ends before its "
                     "end-of-image marker", name, size);
corrupt:
    return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s' starts like a JPEG file but its header is corrupt or unsupported",
                     name);
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
    return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated GIF: the file (%zu bytes) ends inside its first "
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
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated TGA: %llux%llu pixels at %llu bits need %llu "
                         "bytes, the file has %zu", name, (unsigned long long)w, (unsigned long long)h,
                         (unsigned long long)bits, (unsigned long long)need, size);
    return VKVIT_OK;
}

/* A binary PPM (P6) or PGM (P5) with maxval 255 that holds its whole pixel array. stb_image decodes a short one as
 * if the missing bytes were zero (Pillow refuses it: "image file is truncated"); it takes the samples of a maxval
 * below 255 as they are (Pillow scales them to 0..255); and Debian 12's stb_image 2.27 reads past its buffer on
 * 16-bit samples (maxval above 255: the fuzzer's first find on PNM). So only maxval 255 goes to stb. The header is
 * magic, width, height, maxval, each after blanks or '#' comments, then one blank. Returns VKVIT_OK for other
 * formats and for headers stb itself will refuse. */
static vkvit_result check_pnm(const uint8_t *data, size_t size, const char *name) {
    if (size < 2 || data[0] != 'P' || (data[1] != '5' && data[1] != '6')) return VKVIT_OK;
    size_t at = 2;
    uint64_t v[3] = {0, 0, 0};
    for (int f = 0; f < 3; f++) {
        for (;;) { /* blanks and comments */
            while (at < size && (data[at] == ' ' || data[at] == '\t' || data[at] == '\n' || data[at] == '\r' ||
                                 data[at] == '\v' || data[at] == '\f'))
                at++;
            if (at < size && data[at] == '#') {
                while (at < size && data[at] != '\n' && data[at] != '\r') at++;
                continue;
            }
            break;
        }
        if (at >= size || data[at] < '0' || data[at] > '9') return VKVIT_OK; /* stb's sentence */
        while (at < size && data[at] >= '0' && data[at] <= '9' && v[f] < ((uint64_t)1 << 40))
            v[f] = v[f] * 10 + (uint64_t)(data[at++] - '0');
    }
    at++; /* the one blank before the pixels */
    if (v[2] != 255)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': a %s with maxval %llu; vkvit decodes 8-bit PPM / PGM "
                         "(maxval 255) only: convert it to PNG", name, data[1] == '6' ? "PPM" : "PGM",
                         (unsigned long long)v[2]);
    const uint64_t need = v[0] * v[1] * (data[1] == '6' ? 3u : 1u);
    if (v[0] > VKVIT_MAX_IMAGE_SIDE || v[1] > VKVIT_MAX_IMAGE_SIDE || at > size || size - at >= need) return VKVIT_OK;
    return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated %s: %llux%llu pixels need %llu bytes after the header, "
                     "the file has %zu", name, data[1] == '6' ? "PPM" : "PGM", (unsigned long long)v[0],
                     (unsigned long long)v[1], (unsigned long long)need, size - at);
}

/* The format a file claims by its magic bytes (TGA has none), for the error sentence when its header is bad:
 * stbi_info tries every format and reports only "unknown type". */
static const char *sniff_format(const uint8_t *data, size_t size) {
    if (size >= sizeof k_png_signature && !memcmp(data, k_png_signature, sizeof k_png_signature)) return "PNG";
    if (jpeg_start(data, size)) return "JPEG";
    if (size >= 2 && data[0] == 'B' && data[1] == 'M') return "BMP";
    if (size >= 4 && !memcmp(data, "GIF8", 4)) return "GIF";
    if (size >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6') return "PNM (PPM / PGM)";
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

static vkvit_result check_sides(int64_t w, int64_t h, uint64_t max_pixels, const char *name) {
    if (w <= 0 || h <= 0)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': the image header says %lldx%lld pixels; an image needs at "
                         "least 1x1", name, (long long)w, (long long)h);
    if (w > VKVIT_MAX_IMAGE_SIDE || h > VKVIT_MAX_IMAGE_SIDE)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': the image header says %lldx%lld pixels, above vkvit's limit "
                         "of %u pixels per side", name, (long long)w, (long long)h, VKVIT_MAX_IMAGE_SIDE);
    if ((uint64_t)w * (uint64_t)h > max_pixels) /* both <= 16384 here: no overflow */
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': the image header says %lldx%lld pixels (%llu MiB as RGBA8), "
                         "above the limit of %llu pixels (%llu MiB) one image may have %s", name,
                         (long long)w, (long long)h, (unsigned long long)((uint64_t)w * (uint64_t)h * 4 >> 20),
                         (unsigned long long)max_pixels, (unsigned long long)(max_pixels * 4 >> 20),
                         max_pixels == CLI_IMAGE_HOST_MAX_PIXELS ? "to be decoded on the host (16384 x 12288)"
                                                                 : "on this device");
    return VKVIT_OK;
}

/* ------------------------------------------------------------------------------------------------------------
 * WebP (libwebp): the header first (WebPGetFeatures reads no pixel data), then one decode into our own buffer
 * ------------------------------------------------------------------------------------------------------------ */

static int is_webp(const uint8_t *data, size_t size) {
    return size >= 12 && !memcmp(data, "RIFF", 4) && !memcmp(data + 8, "WEBP", 4);
}

static vkvit_result decode_webp(const uint8_t *data, size_t size, const char *name, uint64_t max_pixels,
                                cli_image *out) {
    WebPBitstreamFeatures f;
    VP8StatusCode st = WebPGetFeatures(data, size, &f);
    if (st == VP8_STATUS_NOT_ENOUGH_DATA)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated WebP: the file (%zu bytes) ends inside its "
                         "header", name, size);
    if (st != VP8_STATUS_OK)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s' starts like a WebP file but its header is corrupt or "
                         "unsupported", name);
    if (f.has_animation)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s' is an animated WebP; vkvit decodes still WebP images only",
                         name);
    vkvit_result r = check_sides(f.width, f.height, max_pixels, name);
    if (r != VKVIT_OK) return r;
    /* RIFF states the file's length: a shorter file is truncated (libwebp may decode what is there). */
    uint64_t riff = (uint64_t)le32(data + 4) + 8;
    if (riff > size)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated WebP: its RIFF header says %llu bytes, the file "
                         "has %zu", name, (unsigned long long)riff, size);
    size_t bytes = (size_t)f.width * (size_t)f.height * 4;
    uint8_t *pixels = malloc(bytes);
    if (!pixels)
        return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "'%s': out of memory decoding a %dx%d image", name,
                         f.width, f.height);
    if (!WebPDecodeRGBAInto(data, size, pixels, bytes, f.width * 4)) {
        free(pixels);
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': cannot decode the %dx%d %s WebP image: its data is corrupt "
                         "or truncated", name, f.width, f.height, f.format == 2 ? "lossless" : "lossy");
    }
    out->pixels = pixels;
    out->width = (uint32_t)f.width;
    out->height = (uint32_t)f.height;
    out->channels_in_file = f.has_alpha ? 4u : 3u;
    return VKVIT_OK;
}

static vkvit_result apply_orientation(cli_image *img, int o, const char *name);
static int webp_orientation(const uint8_t *data, size_t size);

/* ------------------------------------------------------------------------------------------------------------
 * EXIF orientation of a JPEG (APP1 "Exif\0\0" + a TIFF header + IFD0 tag 0x0112), as PIL's exif_transpose
 * ------------------------------------------------------------------------------------------------------------ */

static uint32_t tiff_u16(const uint8_t *p, int big) {
    return big ? (uint32_t)p[0] << 8 | p[1] : p[0] | (uint32_t)p[1] << 8;
}
static uint32_t tiff_u32(const uint8_t *p, int big) { return big ? be32(p) : le32(p); }

/* The Orientation (1..8) in a TIFF structure of n bytes; 1 when absent or malformed. Every offset is checked. */
static int tiff_orientation(const uint8_t *t, size_t n) {
    if (n < 8) return 1;
    int big;
    if (t[0] == 'I' && t[1] == 'I') big = 0;
    else if (t[0] == 'M' && t[1] == 'M') big = 1;
    else return 1;
    if (tiff_u16(t + 2, big) != 42) return 1;
    uint64_t ifd = tiff_u32(t + 4, big);
    if (ifd > n || n - ifd < 2) return 1;
    uint32_t count = tiff_u16(t + ifd, big);
    for (uint32_t i = 0; i < count; i++) {
        uint64_t e = ifd + 2 + 12 * (uint64_t)i;
        if (e + 12 > n) break;
        if (tiff_u16(t + e, big) != 0x0112) continue;
        uint32_t type = tiff_u16(t + e + 2, big), cnt = tiff_u32(t + e + 4, big);
        uint32_t v = 0;
        if (cnt >= 1 && type == 3) v = tiff_u16(t + e + 8, big);      /* SHORT, as written by cameras */
        else if (cnt == 1 && type == 4) v = tiff_u32(t + e + 8, big); /* LONG, which PIL reads too */
        return v >= 1 && v <= 8 ? (int)v : 1;
    }
    return 1;
}

/* Walks a JPEG's marker segments (from `pos`, after its SOI) up to its first scan; the first APP1 Exif segment holds
 * the orientation. */
static int jpeg_orientation(const uint8_t *data, size_t size, size_t pos) {
    while (pos + 4 <= size) {
        if (data[pos] != 0xFF) return 1;
        uint8_t m = data[pos + 1];
        if (m == 0xFF) { pos++; continue; } /* fill byte */
        if (m == 0x01 || (m >= 0xD0 && m <= 0xD8)) { pos += 2; continue; } /* markers without a length */
        if (m == 0xDA || m == 0xD9) return 1; /* start of scan / end of image: no Exif before the pixels */
        size_t len = (size_t)data[pos + 2] << 8 | data[pos + 3];
        if (len < 2 || len > size - pos - 2) return 1;
        if (m == 0xE1 && len >= 2 + 6 && !memcmp(data + pos + 4, "Exif\0\0", 6))
            return tiff_orientation(data + pos + 10, len - 8);
        pos += 2 + len;
    }
    return 1;
}

/* A PNG's eXIf chunk (TIFF data; PIL reads it anywhere in the file, before or after IDAT). */
static int png_orientation(const uint8_t *data, size_t size) {
    size_t pos = sizeof k_png_signature;
    while (size - pos >= 12) {
        uint32_t len = be32(data + pos);
        if (len > size - pos - 12) return 1;
        const uint8_t *type = data + pos + 4, *payload = data + pos + 8;
        if (!memcmp(type, "eXIf", 4)) {
            if (len >= 6 && !memcmp(payload, "Exif\0\0", 6)) payload += 6, len -= 6;
            return tiff_orientation(payload, len);
        }
        if (!memcmp(type, "IEND", 4)) return 1;
        pos += 12u + len;
    }
    return 1;
}

/* A WebP's EXIF chunk (extended format: RIFF chunks after "WEBP", each padded to an even size). */
static int webp_orientation(const uint8_t *data, size_t size) {
    size_t pos = 12;
    while (size - pos >= 8) {
        uint32_t len = le32(data + pos + 4);
        if (len > size - pos - 8) return 1;
        const uint8_t *payload = data + pos + 8;
        if (!memcmp(data + pos, "EXIF", 4)) {
            if (len >= 6 && !memcmp(payload, "Exif\0\0", 6)) payload += 6, len -= 6;
            return tiff_orientation(payload, len);
        }
        if ((uint64_t)len + (len & 1u) > size - pos - 8) return 1;
        pos += 8u + len + (len & 1u);
    }
    return 1;
}

/* Rotates / mirrors img as PIL's exif_transpose does for orientation o (2..8; 5..8 swap the sides). */
static vkvit_result apply_orientation(cli_image *img, int o, const char *name) {
    if (o <= 1 || o > 8) return VKVIT_OK;
    const uint32_t W = img->width, H = img->height;
    const int swap = o >= 5;
    const uint32_t ow = swap ? H : W, oh = swap ? W : H;
    uint32_t *dst = malloc((size_t)W * H * 4);
    if (!dst)
        return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "'%s': out of memory rotating a %ux%u image", name, W, H);
    const uint32_t *src = (const uint32_t *)(const void *)img->pixels;
    for (uint32_t oy = 0; oy < oh; oy++)
        for (uint32_t ox = 0; ox < ow; ox++) {
            uint32_t sx, sy;
            switch (o) {
            case 2: sx = W - 1 - ox, sy = oy; break;          /* FLIP_LEFT_RIGHT */
            case 3: sx = W - 1 - ox, sy = H - 1 - oy; break;  /* ROTATE_180 */
            case 4: sx = ox, sy = H - 1 - oy; break;          /* FLIP_TOP_BOTTOM */
            case 5: sx = oy, sy = ox; break;                  /* TRANSPOSE */
            case 6: sx = oy, sy = H - 1 - ox; break;          /* ROTATE_270 (90 degrees clockwise) */
            case 7: sx = W - 1 - oy, sy = H - 1 - ox; break;  /* TRANSVERSE */
            default: sx = W - 1 - oy, sy = ox; break;         /* 8: ROTATE_90 (counter-clockwise) */
            }
            dst[(size_t)oy * ow + ox] = src[(size_t)sy * W + sx];
        }
    free(img->pixels);
    img->pixels = (uint8_t *)dst;
    img->width = ow;
    img->height = oh;
    return VKVIT_OK;
}

/* ------------------------------------------------------------------------------------------------------------
 * TIFF (baseline, as Pillow reads it): the first image (IFD0) of a classic TIFF, little- or big-endian, 8- or
 * 16-bit unsigned samples (16-bit ones by their high byte, as stb_image maps PNG's), grey (BlackIsZero, or
 * WhiteIsZero at 8 bits), grey + alpha, RGB, RGBA (unassociated alpha, or associated alpha unpremultiplied as
 * Pillow's "RGBa" unpacker does), or an 8-bit palette (colour map entries by their high byte, as Pillow takes
 * them); chunky samples (PlanarConfiguration 1) in strips or tiles; uncompressed, PackBits, LZW (MSB-first, with
 * the early code-width change) or Deflate (stb_image's zlib inflater), with or without horizontal differencing
 * (Predictor 2, which libtiff applies to LZW and Deflate data). The Orientation tag is applied as for the other
 * formats. Anything else is refused with a sentence saying what vkvit decodes.
 *
 * Hostile files: every tag's values and every strip or tile must lie inside the file; the sides go through
 * check_sides before any pixel memory is allocated; a strip or tile is decoded into a buffer of exactly the bytes
 * its rows need (no decoder writes past it, and one that stops short of it has corrupt data, as libtiff says); a
 * tile holds at most TIFF_MAX_TILE_BYTES and overhangs the image by little (decode_tiff); a tag of an unknown
 * type is corrupt (its count could not be checked against the file).
 * ------------------------------------------------------------------------------------------------------------ */

#define TIFF_MAX_TILE_BYTES ((uint64_t)64 << 20)
#define TIFF_MAX_TILE_SIDE 1024u

static const char k_tiff_decodes[] = "vkvit decodes baseline TIFF (8- or 16-bit grey, grey + alpha, RGB or RGBA, or "
                                     "8-bit palette; uncompressed, PackBits, LZW or Deflate; strips or tiles): "
                                     "convert it to PNG";

static int is_tiff(const uint8_t *data, size_t size) {
    return size >= 4 && (!memcmp(data, "II*\0", 4) || !memcmp(data, "MM\0*", 4));
}

typedef struct tiff_tag {
    uint32_t type, count;                   /* count 0: the tag is absent */
    const uint8_t *values;                  /* inside the file: count values of the type's size */
} tiff_tag;

static uint32_t tiff_type_size(uint32_t type) {
    return type == 1 || type == 2 || type == 6 || type == 7 ? 1u : type == 3 || type == 8 ? 2u
         : type == 4 || type == 9 || type == 11 ? 4u : type == 5 || type == 10 || type == 12 ? 8u : 0u;
}

/* Value i (< count) of an integer tag: BYTE, SHORT or LONG; any other type reads as UINT32_MAX + 1 (refused). */
static uint64_t tiff_value(const tiff_tag *t, uint32_t i, int big) {
    switch (t->type) {
    case 1: return t->values[i];
    case 3: return tiff_u16(t->values + 2u * i, big);
    case 4: return tiff_u32(t->values + 4u * i, big);
    default: return (uint64_t)UINT32_MAX + 1u;
    }
}

/* TIFF LZW (compression 5): codes of 9..12 bits, MSB first; 256 clears the table, 257 ends the data; the code
 * width grows one code early (once the next free entry is 2^width - 1), as libtiff reads it. Writes at most
 * `want` bytes and stops there; returns the bytes written, or -1 for a code the table does not hold. */
static int64_t tiff_lzw(const uint8_t *in, size_t n, uint8_t *out, size_t want) {
    static _Thread_local uint16_t prefix[4096], length[4096];
    static _Thread_local uint8_t suffix[4096], first[4096];
    for (int c = 0; c < 256; c++) prefix[c] = 0, length[c] = 1, suffix[c] = (uint8_t)c, first[c] = (uint8_t)c;
    uint32_t width = 9, next = 258, nbits = 0;
    int32_t prev = -1;
    size_t pos = 0, o = 0;
    uint32_t bits = 0;
    while (o < want) {
        while (nbits < width && pos < n) bits = bits << 8 | in[pos++], nbits += 8;
        if (nbits < width) break;                       /* the data ends without its end code */
        const uint32_t code = bits >> (nbits - width) & ((1u << width) - 1u);
        nbits -= width;
        bits &= (1u << nbits) - 1u;
        if (code == 257) break;
        if (code == 256) {
            width = 9, next = 258, prev = -1;
            continue;
        }
        if (prev < 0) {
            if (code > 255) return -1;
        } else {
            if (code > next || (code == next && next >= 4096)) return -1;
            if (next < 4096) {                          /* prev's string + the first byte of code's */
                prefix[next] = (uint16_t)prev;
                suffix[next] = code == next ? first[prev] : first[code];
                first[next] = first[prev];
                length[next] = (uint16_t)(length[prev] + 1u);
                next++;
                if (next >= (1u << width) - 1u && width < 12) width++;
            }
        }
        /* code's string, written back to front; the part past `want` is dropped */
        const size_t len = length[code];
        uint32_t c = code;
        for (size_t k = len; k-- > 0;) {
            if (o + k < want) out[o + k] = suffix[c];
            c = prefix[c];
        }
        o = o + len < want ? o + len : want;
        prev = (int32_t)code;
    }
    return (int64_t)o;
}

/* PackBits (32773): a header byte h, then h + 1 literal bytes (h >= 0) or one byte repeated 1 - h times
 * (-127 <= h <= -1); -128 is skipped. Returns the bytes written (at most `want`; libtiff drops the rest), or -1
 * for a literal run past the end of the data. */
static int64_t tiff_packbits(const uint8_t *in, size_t n, uint8_t *out, size_t want) {
    size_t i = 0, o = 0;
    while (o < want && i < n) {
        const int h = (int8_t)in[i++];
        if (h >= 0) {
            const size_t count = (size_t)h + 1;
            if (count > n - i) return -1;
            const size_t take = count < want - o ? count : want - o;
            memcpy(out + o, in + i, take);
            i += count, o += take;
        } else if (h != -128) {
            if (i >= n) return -1;
            const size_t count = (size_t)(1 - h), take = count < want - o ? count : want - o;
            memset(out + o, in[i++], take);
            o += take;
        }
    }
    return (int64_t)o;
}

#define TIFF_UNSUPPORTED(...) cli_error(VKVIT_ERROR_BAD_IMAGE, __VA_ARGS__)

static vkvit_result decode_tiff(const uint8_t *data, size_t size, const char *name, uint64_t max_pixels,
                                cli_image *out) {
    const int big = data[0] == 'M';
    if (size < 8) return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated TIFF: %zu bytes", name, size);
    const uint64_t ifd = tiff_u32(data + 4, big);
    if (ifd < 8)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt TIFF: its first directory is at byte %llu, inside "
                         "its header", name, (unsigned long long)ifd);
    if (ifd > size || size - ifd < 2)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated TIFF: the file (%zu bytes) ends before its first "
                         "directory (at byte %llu)", name, size, (unsigned long long)ifd);
    const uint32_t entries = tiff_u16(data + ifd, big);
    if ((uint64_t)entries * 12 > size - ifd - 2)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated TIFF: its directory of %u entries runs past the "
                         "end of the file", name, entries);
    enum { W, H, BITS, COMP, PHOTO, STRIP_OFF, SPP, RPS, STRIP_BYTES, PLANAR, PRED, CMAP, TILE_W, TILE_H, TILE_OFF,
           TILE_BYTES, EXTRA, FORMAT, FILL, N_TAGS };
    static const uint16_t ids[N_TAGS] = {256, 257, 258, 259, 262, 273, 277, 278, 279, 284, 317, 320, 322, 323, 324,
                                         325, 338, 339, 266};
    tiff_tag tag[N_TAGS];
    memset(tag, 0, sizeof tag);
    for (uint32_t e = 0; e < entries; e++) {
        const uint8_t *p = data + ifd + 2 + 12u * e;
        const uint32_t id = tiff_u16(p, big);
        int k = 0;
        while (k < N_TAGS && ids[k] != id) k++;
        if (k == N_TAGS) continue;
        tiff_tag t = {tiff_u16(p + 2, big), tiff_u32(p + 4, big), p + 8};
        if (tiff_type_size(t.type) == 0) /* its values' size unknown: neither they nor their count can be checked */
            return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt TIFF: its tag %u has the unknown type %u", name,
                             id, t.type);
        const uint64_t bytes = (uint64_t)tiff_type_size(t.type) * t.count;
        if (bytes > 4) {
            const uint64_t at = tiff_u32(p + 8, big);
            if (at > size || bytes > size - at)
                return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt TIFF: the values of its tag %u lie past the "
                                 "end of the file", name, id);
            t.values = data + at;
        }
        tag[k] = t;
    }
    const int tiled = tag[TILE_W].count > 0 || tag[TILE_H].count > 0 || tag[TILE_OFF].count > 0;
    static const uint64_t defaults[N_TAGS] = {[COMP] = 1, [SPP] = 1, [RPS] = UINT32_MAX, [PLANAR] = 1, [PRED] = 1,
                                              [FORMAT] = 1, [FILL] = 1, [BITS] = 1};
    uint64_t v[N_TAGS];
    for (int k = 0; k < N_TAGS; k++) {
        if (k == STRIP_OFF || k == STRIP_BYTES || k == TILE_OFF || k == TILE_BYTES || k == CMAP || k == EXTRA) {
            v[k] = 0;
            continue;
        }
        if (tag[k].count == 0) {
            v[k] = defaults[k];
            continue;
        }
        v[k] = tiff_value(&tag[k], 0, big);
        for (uint32_t i = 1; k == BITS && i < tag[k].count; i++)  /* one size for every sample */
            if (tiff_value(&tag[k], i, big) != v[k]) v[k] = 0;
        for (uint32_t i = 1; k == FORMAT && i < tag[k].count; i++)
            if (tiff_value(&tag[k], i, big) != v[k]) v[k] = 0;
    }
    if (tag[W].count == 0 || tag[H].count == 0)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt TIFF: it has no ImageWidth or ImageLength tag", name);
    vkvit_result r = check_sides((int64_t)v[W], (int64_t)v[H], max_pixels, name);
    if (r != VKVIT_OK) return r;
    const uint32_t w = (uint32_t)v[W], h = (uint32_t)v[H], spp = (uint32_t)(v[SPP] > 8 ? 0 : v[SPP]);
    const uint64_t photo = tag[PHOTO].count ? v[PHOTO] : UINT64_MAX, comp = v[COMP], bits = v[BITS];
    uint32_t extra_kind = 2; /* unassociated alpha: what Pillow takes a fourth (second) sample for without a tag */
    if (tag[EXTRA].count) extra_kind = (uint32_t)tiff_value(&tag[EXTRA], 0, big);
    const uint32_t colour = photo == 2 ? 3u : 1u;
    if (comp != 1 && comp != 5 && comp != 8 && comp != 32946 && comp != 32773)
        return TIFF_UNSUPPORTED("'%s': a TIFF of compression %llu%s; %s", name, (unsigned long long)comp,
                                comp == 7 || comp == 6 ? " (JPEG)" : comp >= 2 && comp <= 4 ? " (CCITT fax)"
                                : comp == 34712 ? " (JPEG 2000)" : comp == 50000 ? " (Zstandard)"
                                : comp == 34925 ? " (LZMA)" : comp == 50001 ? " (WebP)" : "", k_tiff_decodes);
    if (photo != 0 && photo != 1 && photo != 2 && photo != 3)
        return TIFF_UNSUPPORTED("'%s': a TIFF of photometric interpretation %s; %s", name,
                                photo == 5 ? "5 (CMYK)" : photo == 6 ? "6 (YCbCr)" : photo == 8 ? "8 (CIE L*a*b*)"
                                : photo == 4 ? "4 (transparency mask)" : photo == UINT64_MAX ? "(none given)"
                                : "other than grey, RGB or palette", k_tiff_decodes);
    if (bits != 8 && bits != 16)
        return TIFF_UNSUPPORTED("'%s': a TIFF of %s-bit samples; %s", name, bits == 0 ? "mixed" : bits == 1 ?
                                "1" : bits == 4 ? "4" : bits == 32 ? "32" : "other", k_tiff_decodes);
    if (v[FORMAT] != 1)
        return TIFF_UNSUPPORTED("'%s': a TIFF of %s samples; %s", name, v[FORMAT] == 3 ? "floating-point"
                                : v[FORMAT] == 2 ? "signed" : "mixed or unknown", k_tiff_decodes);
    if (spp != colour && !(spp == colour + 1 && photo != 3))
        return TIFF_UNSUPPORTED("'%s': a TIFF of %u samples per pixel for its photometric interpretation %llu; %s",
                                name, (unsigned)v[SPP], (unsigned long long)photo, k_tiff_decodes);
    const int alpha = spp == colour + 1;
    if (alpha && extra_kind > 2)
        return TIFF_UNSUPPORTED("'%s': a TIFF whose extra sample is of kind %u; %s", name, extra_kind,
                                k_tiff_decodes);
    if ((photo == 0 || photo == 3) && bits != 8)
        return TIFF_UNSUPPORTED("'%s': a 16-bit %s TIFF; %s", name, photo == 0 ? "WhiteIsZero" : "palette",
                                k_tiff_decodes);
    if (alpha && extra_kind == 1 && (bits != 8 || photo != 2))
        return TIFF_UNSUPPORTED("'%s': a TIFF with associated alpha other than 8-bit RGBA; %s", name,
                                k_tiff_decodes);
    if (alpha && photo <= 1 && (bits != 8 || extra_kind == 0))
        return TIFF_UNSUPPORTED("'%s': a %s-bit grey TIFF with an extra sample of kind %u; %s", name,
                                bits == 8 ? "8" : "16", extra_kind, k_tiff_decodes);
    if (v[PLANAR] != 1 && spp > 1)
        return TIFF_UNSUPPORTED("'%s': a TIFF of separate colour planes (PlanarConfiguration %llu); %s", name,
                                (unsigned long long)v[PLANAR], k_tiff_decodes);
    if (v[FILL] != 1)
        return TIFF_UNSUPPORTED("'%s': a TIFF of FillOrder %llu; %s", name, (unsigned long long)v[FILL],
                                k_tiff_decodes);
    const int lzw_or_deflate = comp == 5 || comp == 8 || comp == 32946;
    if (lzw_or_deflate && v[PRED] != 1 && v[PRED] != 2)
        return TIFF_UNSUPPORTED("'%s': a TIFF of predictor %llu%s; %s", name, (unsigned long long)v[PRED],
                                v[PRED] == 3 ? " (floating point)" : "", k_tiff_decodes);
    const int predict = v[PRED] == 2 && lzw_or_deflate;
    uint16_t cmap_r[256], cmap_g[256], cmap_b[256];
    if (photo == 3) {
        if (tag[CMAP].count != 3 * 256 || tag[CMAP].type != 3)
            return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt TIFF: a palette image needs a ColorMap of 768 "
                             "SHORT values, it has %u", name, tag[CMAP].count);
        for (int i = 0; i < 256; i++)
            cmap_r[i] = (uint16_t)tiff_value(&tag[CMAP], (uint32_t)i, big),
            cmap_g[i] = (uint16_t)tiff_value(&tag[CMAP], 256u + (uint32_t)i, big),
            cmap_b[i] = (uint16_t)tiff_value(&tag[CMAP], 512u + (uint32_t)i, big);
    }

    /* The chunks: strips of rps rows across the image, or tiles of tw x th (the right and bottom ones padded). */
    const uint32_t bps = (uint32_t)bits / 8, pixel_bytes = bps * spp;
    uint64_t cw, ch, across, down;
    const tiff_tag *offsets = &tag[tiled ? TILE_OFF : STRIP_OFF], *counts = &tag[tiled ? TILE_BYTES : STRIP_BYTES];
    if (tiled) {
        cw = tag[TILE_W].count ? tiff_value(&tag[TILE_W], 0, big) : 0;
        ch = tag[TILE_H].count ? tiff_value(&tag[TILE_H], 0, big) : 0;
        /* A tile may overhang the image (writers use 256 x 256 tiles for small images), but not by more than its
         * side rounded up to 16 (the TIFF rule for tile sides) or TIFF_MAX_TILE_SIDE: a 1x1 image cannot make the
         * decoder fill a tile of 64 MiB. */
        const uint64_t max_w = CLI_MAX((w + 15u) / 16u * 16u, TIFF_MAX_TILE_SIDE),
                       max_h = CLI_MAX((h + 15u) / 16u * 16u, TIFF_MAX_TILE_SIDE);
        if (cw == 0 || ch == 0 || cw > max_w || ch > max_h || cw * ch * pixel_bytes > TIFF_MAX_TILE_BYTES)
            return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt TIFF: tiles of %llux%llu pixels for a %ux%u "
                             "image (at most %llux%llu, and %llu MiB a tile)", name, (unsigned long long)cw,
                             (unsigned long long)ch, w, h, (unsigned long long)max_w, (unsigned long long)max_h,
                             (unsigned long long)(TIFF_MAX_TILE_BYTES >> 20));
        across = (w + cw - 1) / cw;
        down = (h + ch - 1) / ch;
    } else {
        cw = w;
        ch = v[RPS] == 0 || v[RPS] > h ? h : v[RPS];
        across = 1;
        down = (h + ch - 1) / ch;
    }
    const uint64_t chunks = across * down;
    if (offsets->count < chunks || counts->count < chunks)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt TIFF: %llu %s need as many offsets and byte counts, "
                         "it has %u and %u", name, (unsigned long long)chunks, tiled ? "tiles" : "strips",
                         offsets->count, counts->count);
    const uint64_t row_bytes = cw * pixel_bytes, chunk_bytes = row_bytes * ch; /* <= 64 MiB or the image's rows */
    if (chunk_bytes > (uint64_t)INT32_MAX) /* stb's inflater takes an int size; a 16384 x 12288 RGBA16 strip fits */
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': a TIFF strip of %llu bytes, more than the %d a strip may "
                         "have; %s", name, (unsigned long long)chunk_bytes, INT32_MAX, k_tiff_decodes);
    uint8_t *buf = malloc((size_t)chunk_bytes);
    uint8_t *pixels = malloc((size_t)w * h * 4);
    if (!buf || !pixels) {
        free(buf), free(pixels);
        return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "'%s': out of memory decoding a %ux%u TIFF", name, w, h);
    }
    for (uint64_t i = 0; i < chunks; i++) {
        const uint64_t at = tiff_value(offsets, (uint32_t)i, big), n = tiff_value(counts, (uint32_t)i, big);
        const uint64_t x0 = i % across * cw, y0 = i / across * ch;
        const uint64_t rows = tiled ? ch : (h - y0 < ch ? h - y0 : ch), want = rows * row_bytes;
        if (at > size || n > size - at) {
            free(buf), free(pixels);
            return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': truncated TIFF: its %s %llu (%llu bytes at byte %llu) "
                             "runs past the end of the file (%zu bytes)", name, tiled ? "tile" : "strip",
                             (unsigned long long)i, (unsigned long long)n, (unsigned long long)at, size);
        }
        const uint8_t *src = data + at;
        int64_t got;
        if (comp == 1) {
            got = n < want ? (int64_t)n : (int64_t)want;
            memcpy(buf, src, (size_t)got);
        } else if (comp == 32773) {
            got = tiff_packbits(src, (size_t)n, buf, (size_t)want);
        } else if (comp == 5) {
            if (n >= 2 && src[0] == 0 && (src[1] & 1))
                got = -2; /* libtiff's "old-style" LSB-first LZW of TIFF 5 */
            else
                got = tiff_lzw(src, (size_t)n, buf, (size_t)want);
        } else {
            stb_budget_begin(STB_BYTES_FIXED);
            got = n > INT32_MAX ? -1 : stbi_zlib_decode_buffer((char *)buf, (int)want, (const char *)src, (int)n);
            stb_budget_end();
        }
        if (got != (int64_t)want) {
            free(buf), free(pixels);
            if (got == -2)
                return TIFF_UNSUPPORTED("'%s': a TIFF of old-style (TIFF 5, LSB-first) LZW data; %s", name,
                                        k_tiff_decodes);
            return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt TIFF: its %s %llu %s", name,
                             tiled ? "tile" : "strip", (unsigned long long)i,
                             got < 0 ? "holds data its compression cannot decode"
                                     : "decodes to fewer bytes than its rows need");
        }
        for (uint64_t y = 0; y < rows; y++) {
            uint8_t *row = buf + y * row_bytes;
            if (predict) {                              /* horizontal differencing, per sample, in file order */
                for (uint64_t k = spp; k < cw * spp; k++) {
                    if (bps == 1) {
                        row[k] = (uint8_t)(row[k] + row[k - spp]);
                    } else {
                        uint8_t *p = row + 2 * k, *q = row + 2 * (k - spp);
                        const uint32_t s = (tiff_u16(p, big) + tiff_u16(q, big)) & 0xFFFFu;
                        p[big ? 0 : 1] = (uint8_t)(s >> 8), p[big ? 1 : 0] = (uint8_t)s;
                    }
                }
            }
            if (y0 + y >= h) continue;
            uint8_t *dst = pixels + ((y0 + y) * w + x0) * 4;
            const uint64_t cols = w - x0 < cw ? w - x0 : cw;
            for (uint64_t x = 0; x < cols; x++, dst += 4) {
                const uint8_t *p = row + x * pixel_bytes;
                uint8_t s[4];
                for (uint32_t k = 0; k < spp; k++) s[k] = bps == 1 ? p[k] : p[2 * k + (big ? 0 : 1)];
                if (photo == 3) {
                    dst[0] = (uint8_t)(cmap_r[s[0]] >> 8), dst[1] = (uint8_t)(cmap_g[s[0]] >> 8);
                    dst[2] = (uint8_t)(cmap_b[s[0]] >> 8), dst[3] = 255;
                } else if (photo <= 1) {
                    dst[0] = dst[1] = dst[2] = photo == 0 ? (uint8_t)(255 - s[0]) : s[0];
                    dst[3] = alpha ? s[1] : 255;
                } else if (alpha && extra_kind == 1) {  /* Pillow's "RGBa": unpremultiplied, integer division */
                    const unsigned a = s[3];
                    for (int c = 0; c < 3; c++) {
                        const unsigned u = a == 0 ? 0u : a == 255 ? s[c] : s[c] * 255u / a;
                        dst[c] = (uint8_t)(u > 255 ? 255 : u);
                    }
                    dst[3] = (uint8_t)a;
                } else {
                    dst[0] = s[0], dst[1] = s[1], dst[2] = s[2];
                    dst[3] = alpha && extra_kind != 0 ? s[3] : 255;
                }
            }
        }
    }
    free(buf);
    out->pixels = pixels;
    out->width = w;
    out->height = h;
    out->channels_in_file = spp == 1 && photo == 3 ? 3u : spp;
    return VKVIT_OK;
}

/* ------------------------------------------------------------------------------------------------------------
 * Decode
 * ------------------------------------------------------------------------------------------------------------ */

vkvit_result cli_image_decode_max(const uint8_t *data, size_t size, const char *name, uint64_t max_pixels,
                                  cli_image *out) {
    memset(out, 0, sizeof *out);
    if (max_pixels == 0) max_pixels = CLI_IMAGE_DEFAULT_MAX_PIXELS;
    if (size == 0) return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s' is empty (0 bytes), not an image", name);
    if (size > (size_t)INT32_MAX) /* stb_image takes an int length; cli_image_load caps far below this */
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s' is %zu bytes, too large for the image decoder", name, size);
    if (is_webp(data, size)) {
        vkvit_result rw = decode_webp(data, size, name, max_pixels, out);
        if (rw == VKVIT_OK && (rw = apply_orientation(out, webp_orientation(data, size), name)) != VKVIT_OK)
            cli_image_free(out);
        return rw;
    }
    if (size >= 4 && (!memcmp(data, "II+\0", 4) || !memcmp(data, "MM\0+", 4)))
        return TIFF_UNSUPPORTED("'%s': a BigTIFF file; %s", name, k_tiff_decodes);
    if (is_tiff(data, size)) {
        vkvit_result rt = decode_tiff(data, size, name, max_pixels, out);
        if (rt == VKVIT_OK && (rt = apply_orientation(out, tiff_orientation(data, size), name)) != VKVIT_OK)
            cli_image_free(out);
        return rt;
    }
    vkvit_result r;
    int64_t hw, hh;
    if (header_sides(data, size, &hw, &hh) && (r = check_sides(hw, hh, max_pixels, name)) != VKVIT_OK) return r;
    if (size >= sizeof k_png_signature && !memcmp(data, k_png_signature, sizeof k_png_signature) &&
        (r = check_png_crcs(data, size, name)) != VKVIT_OK)
        return r;
    const size_t jpeg = jpeg_start(data, size); /* 0, or where its segments start */
    if (jpeg && (r = check_jpeg(data, size, jpeg, name)) != VKVIT_OK) return r;
    if (size >= 2 && data[0] == 'B' && data[1] == 'M' && (r = check_bmp_complete(data, size, name)) != VKVIT_OK)
        return r;

    /* stb reads the header of every format (still no pixel memory), then the pixels. */
    int w = 0, h = 0, n = 0;
    stb_budget_begin(STB_BYTES_FIXED);
    const int info_ok = stbi_info_from_memory(data, (int)size, &w, &h, &n);
    if (stb_budget_end())
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': reading its header would take more than %llu MiB; a "
                         "corrupt or crafted file", name, (unsigned long long)(STB_BYTES_FIXED >> 20));
    if (!info_ok) {
        const char *format = sniff_format(data, size);
        if (format)
            return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s' starts like a %s file but its header is corrupt or "
                             "unsupported", name, format);
        return cli_error(VKVIT_ERROR_BAD_IMAGE,
                         "'%s' is not a PNG, JPEG, BMP, GIF, TGA, TIFF, WebP or binary PPM / PGM image", name);
    }
    if (h < 0 && data[0] == 'B') h = -h; /* top-down BMP */
    if ((r = check_sides(w, h, max_pixels, name)) != VKVIT_OK) return r;
    const char *format = sniff_format(data, size);
    if (format && !strcmp(format, "GIF") && (r = check_gif_complete(data, size, name)) != VKVIT_OK) return r;
    if (!format && (r = check_tga_complete(data, size, name)) != VKVIT_OK) return r; /* TGA: the one without magic */
    if ((r = check_pnm(data, size, name)) != VKVIT_OK) return r;

    /* Any bit depth and colour type -> RGBA8 (stb converts 16-bit samples to 8-bit and expands grey/palette). */
    int dw = 0, dh = 0, dn = 0;
    const uint64_t budget = STB_BYTES_FIXED + (uint64_t)STB_BYTES_PER_PIXEL * (uint64_t)w * (uint64_t)h;
    stb_budget_begin(budget);
    uint8_t *pixels = stbi_load_from_memory(data, (int)size, &dw, &dh, &dn, 4);
    if (stb_budget_end()) { /* a refused allocation fails the decode; stb frees what it had */
        stbi_image_free(pixels);
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': decoding its %dx%d pixels would take more than %llu MiB "
                         "(its compressed data expands far beyond the image): a corrupt or crafted file", name, w, h,
                         (unsigned long long)(budget >> 20));
    }
    if (!pixels) {
        const char *why = stbi_failure_reason() ? stbi_failure_reason() : "unknown error";
        if (!strcmp(why, "Out of memory"))
            return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "'%s': out of memory decoding a %dx%d image", name,
                             w, h);
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': cannot decode the %dx%d image: %s", name, w, h, why);
    }
    if (dw != w || dh != h) { /* a header that disagrees with the decoder: never trust either */
        stbi_image_free(pixels);
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s': corrupt image: header says %dx%d, decoded %dx%d", name, w,
                         h, dw, dh);
    }
    out->pixels = pixels;
    out->width = (uint32_t)w;
    out->height = (uint32_t)h;
    out->channels_in_file = (uint32_t)dn;
    const int png = size >= sizeof k_png_signature && !memcmp(data, k_png_signature, sizeof k_png_signature);
    const int orientation = jpeg ? jpeg_orientation(data, size, jpeg) : png ? png_orientation(data, size) : 1;
    if ((r = apply_orientation(out, orientation, name)) != VKVIT_OK) {
        cli_image_free(out);
        return r;
    }
    return VKVIT_OK;
}

vkvit_result cli_image_decode(const uint8_t *data, size_t size, const char *name, cli_image *out) {
    return cli_image_decode_max(data, size, name, 0, out);
}

/* Reads a regular file of at most CLI_IMAGE_MAX_FILE_BYTES. The file is opened with O_NONBLOCK and checked with
 * fstat before any read, so a FIFO (which fopen would wait on for a writer forever) or a device is refused at
 * once; the stat and the read see the same file. */
static vkvit_result read_image_file(const char *path, uint8_t **data, size_t *size) {
    *data = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return cli_error(VKVIT_ERROR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return cli_error(VKVIT_ERROR_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        const char *what = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a named pipe (FIFO)"
                         : S_ISSOCK(st.st_mode) ? "a socket" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                         : "a special file";
        close(fd);
        return cli_error(VKVIT_ERROR_IO, "'%s' is %s, not a regular file; images are read from regular files",
                         path, what);
    }
    if ((uint64_t)st.st_size > (uint64_t)CLI_IMAGE_MAX_FILE_BYTES) {
        close(fd);
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "'%s' is %lld bytes, more than the limit of %zu bytes for an "
                         "image file", path, (long long)st.st_size, CLI_IMAGE_MAX_FILE_BYTES);
    }
    size_t n = (size_t)st.st_size, got = 0;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "cannot allocate %zu bytes to read '%s'", n, path);
    }
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    int e = errno;
    close(fd);
    if (got != n) {
        free(buf);
        return cli_error(VKVIT_ERROR_IO, "short read on '%s': %zu of %zu bytes (%s)", path, got, n,
                         got < n ? strerror(e) : "the file changed");
    }
    *data = buf;
    *size = n;
    return VKVIT_OK;
}

vkvit_result cli_image_load_max(const char *path, uint64_t max_pixels, cli_image *out) {
    memset(out, 0, sizeof *out);
    uint8_t *data = NULL;
    size_t size = 0;
    vkvit_result r = read_image_file(path, &data, &size);
    if (r != VKVIT_OK) return r;
    r = cli_image_decode_max(data, size, path, max_pixels, out);
    free(data);
    return r;
}

vkvit_result cli_image_load(const char *path, cli_image *out) { return cli_image_load_max(path, 0, out); }

uint64_t cli_image_device_max_pixels(const vkvit_ctx *ctx) {
    vkvit_device_info info;
    if (!ctx || vkvit_ctx_device_info(ctx, &info) != VKVIT_OK) return CLI_IMAGE_DEFAULT_MAX_PIXELS;
    uint64_t by_range = info.max_storage_buffer_range / 4;
    return CLI_MIN(by_range, (uint64_t)VKVIT_MAX_IMAGE_SIDE * VKVIT_MAX_IMAGE_SIDE);
}

void cli_image_free(cli_image *img) {
    if (!img) return;
    free(img->pixels); /* stb_image (STBI_FREE is free), libwebp Into-decoding and the EXIF rotation all use malloc */
    memset(img, 0, sizeof *img);
}

vkvit_image cli_image_view(const cli_image *img) {
    return (vkvit_image){.pixels = img->pixels, .width = img->width, .height = img->height,
                         .row_bytes = img->width * 4u, .format = VKVIT_PIXEL_RGBA8};
}

/* ------------------------------------------------------------------------------------------------------------
 * Host reduction of an image above the device's pixel limit: an area (box) filter
 * ------------------------------------------------------------------------------------------------------------ */

void cli_image_fit_size(uint32_t w, uint32_t h, uint64_t max_pixels, uint32_t *ow, uint32_t *oh) {
    *ow = w;
    *oh = h;
    if (max_pixels == 0 || (uint64_t)w * h <= max_pixels) return;
    const double s = sqrt((double)max_pixels / ((double)w * h)); /* the same scale on both axes: the aspect kept */
    uint32_t nw = (uint32_t)fmax(1.0, floor(w * s)), nh = (uint32_t)fmax(1.0, floor(h * s));
    while ((uint64_t)nw * nh > max_pixels) { /* floor(w s) floor(h s) <= w h s^2 in exact arithmetic; rounding aside */
        if (nw >= nh && nw > 1) nw--;
        else if (nh > 1) nh--;
        else break;
    }
    *ow = nw;
    *oh = nh;
}

/* The source span of output cell i of n over a side of `len` pixels: [i len / n, (i + 1) len / n), in source pixels,
 * as the first pixel it touches, the count, and each one's overlap (the first and last may be partial). */
typedef struct box_span {
    uint32_t first, count;
    double w_first, w_last;                 /* overlap of the first and last source pixel; the others 1 */
} box_span;

static box_span span_of(uint32_t i, uint32_t n, uint32_t len) {
    const double a = (double)i * len / n, b = (double)(i + 1) * len / n;
    box_span s;
    s.first = (uint32_t)floor(a);
    uint32_t last = (uint32_t)ceil(b) - 1;
    if (last >= len) last = len - 1;
    s.count = last - s.first + 1;
    s.w_first = fmin(b, s.first + 1.0) - a;
    s.w_last = s.count > 1 ? b - last : s.w_first;
    return s;
}

static double span_weight(const box_span *s, uint32_t k) {
    return k == 0 ? s->w_first : k == s->count - 1 ? s->w_last : 1.0;
}

vkvit_result cli_image_reduce(cli_image *img, uint64_t max_pixels, const char *name) {
    uint32_t ow, oh;
    cli_image_fit_size(img->width, img->height, max_pixels, &ow, &oh);
    if (ow == img->width && oh == img->height) return VKVIT_OK;
    const uint32_t w = img->width, h = img->height;
    uint8_t *out = malloc((size_t)ow * oh * 4);
    double *row = malloc((size_t)w * 4 * sizeof *row); /* one output row's vertical sum, at full width */
    box_span *cols = malloc((size_t)ow * sizeof *cols);
    if (!out || !row || !cols) {
        free(out), free(row), free(cols);
        return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "'%s': out of host memory reducing %ux%u pixels to %ux%u",
                         name, w, h, ow, oh);
    }
    for (uint32_t x = 0; x < ow; x++) cols[x] = span_of(x, ow, w);
    /* Each output pixel is the mean of the source area it covers (partial pixels by their overlap): rows first, into
     * `row`, then columns. Every source pixel is read once or twice. */
    const double area = ((double)w / ow) * ((double)h / oh);
    for (uint32_t y = 0; y < oh; y++) {
        const box_span rs = span_of(y, oh, h);
        memset(row, 0, (size_t)w * 4 * sizeof *row);
        for (uint32_t k = 0; k < rs.count; k++) {
            const double wy = span_weight(&rs, k);
            const uint8_t *src = img->pixels + (size_t)(rs.first + k) * w * 4;
            for (size_t i = 0; i < (size_t)w * 4; i++) row[i] += wy * src[i];
        }
        uint8_t *dst = out + (size_t)y * ow * 4;
        for (uint32_t x = 0; x < ow; x++) {
            const box_span *cs = &cols[x];
            double acc[4] = {0, 0, 0, 0};
            for (uint32_t k = 0; k < cs->count; k++) {
                const double wx = span_weight(cs, k);
                const double *p = row + (size_t)(cs->first + k) * 4;
                for (int c = 0; c < 4; c++) acc[c] += wx * p[c];
            }
            for (int c = 0; c < 4; c++) {
                const double v = acc[c] / area + 0.5;
                dst[(size_t)x * 4 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
    }
    free(row);
    free(cols);
    free(img->pixels);
    img->pixels = out;
    img->width = ow;
    img->height = oh;
    return VKVIT_OK;
}
