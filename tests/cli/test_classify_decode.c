// SPDX-License-Identifier: Apache-2.0
/* The CLI's image decoder (tools/cli/image_decode.c, compiled into this test): crafted in-memory files whose
 * answer is known exactly, and a dump mode for tests/cli/test_classify_decode.py, which compares every decoded image
 * with PIL's.
 *
 *   test_classify_decode                    the in-memory checks (no GPU needed)
 *   test_classify_decode --dump IN OUT      decode IN; write "VKVITRGBA" u32 width u32 height, then RGBA8 rows to OUT;
 *                                           exit 2 with the sentence on stderr when IN is refused */
#include "../../tools/cli/image_decode.c"

#include "test_util.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- tiny encoders for crafted files ---- */

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}
static void put_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

/* Appends one PNG chunk with a correct CRC (or a wrong one when bad_crc). Returns the new length. */
static size_t png_chunk(uint8_t *buf, size_t at, const char *type, const uint8_t *data, uint32_t len, int bad_crc) {
    put_be32(buf + at, len);
    memcpy(buf + at + 4, type, 4);
    if (len) memcpy(buf + at + 8, data, len);
    put_be32(buf + at + 8 + len, crc32_update(0, buf + at + 4, 4u + len) ^ (bad_crc ? 1u : 0u));
    return at + 12 + len;
}

/* A 2x1 8-bit RGB PNG (red, green) with stored (uncompressed) deflate blocks, or only its header when w/h are
 * forced. */
static size_t make_png(uint8_t *buf, uint32_t w, uint32_t h, int with_pixels, int bad_ihdr_crc) {
    size_t at = 0;
    memcpy(buf, k_png_signature, 8);
    at = 8;
    uint8_t ihdr[13] = {0};
    put_be32(ihdr, w);
    put_be32(ihdr + 4, h);
    ihdr[8] = 8;  /* bit depth */
    ihdr[9] = 2;  /* RGB */
    at = png_chunk(buf, at, "IHDR", ihdr, 13, bad_ihdr_crc);
    if (with_pixels) {
        /* zlib: header 78 01, one stored block of 7 bytes (filter 0, R G B, R G B), adler32. */
        const uint8_t raw[7] = {0, 255, 0, 0, 0, 255, 0};
        uint8_t z[2 + 5 + 7 + 4] = {0x78, 0x01, 0x01, 7, 0, (uint8_t)~7, 0xFF};
        memcpy(z + 7, raw, 7);
        uint32_t a = 1, b = 0;
        for (int i = 0; i < 7; i++) a = (a + raw[i]) % 65521, b = (b + a) % 65521;
        put_be32(z + 14, b << 16 | a);
        at = png_chunk(buf, at, "IDAT", z, sizeof z, 0);
    }
    return png_chunk(buf, at, "IEND", NULL, 0, 0);
}

/* A w x h 24-bit BMP header (BITMAPINFOHEADER) followed by `pixel_bytes` bytes of pixels (0x40 each). */
static size_t make_bmp(uint8_t *buf, int32_t w, int32_t h, size_t pixel_bytes) {
    memset(buf, 0, 54 + pixel_bytes);
    buf[0] = 'B', buf[1] = 'M';
    put_le32(buf + 2, (uint32_t)(54 + pixel_bytes));
    put_le32(buf + 10, 54);
    put_le32(buf + 14, 40);
    put_le32(buf + 18, (uint32_t)w);
    put_le32(buf + 22, (uint32_t)h);
    buf[26] = 1;
    buf[28] = 24;
    memset(buf + 54, 0x40, pixel_bytes);
    return 54 + pixel_bytes;
}

/* A 1x1 8-bit grey PNG whose IDAT inflates to `extra` bytes more than its 2 bytes of rows: one fixed-Huffman deflate
 * block of a literal 0 and copies of 258 bytes from 1 back (13 bits each: 258 bytes for 1.6), a zlib bomb. */
typedef struct {
    uint8_t *p;
    size_t bytes;
    unsigned bit;
} bit_writer;
static void put_bits_lsb(bit_writer *w, uint32_t v, unsigned n) { /* deflate's header fields: low bit first */
    for (unsigned i = 0; i < n; i++, w->bit++) {
        if (w->bit == 8) w->bit = 0, w->bytes++;
        if (w->bit == 0) w->p[w->bytes] = 0;
        w->p[w->bytes] |= (uint8_t)(((v >> i) & 1u) << w->bit);
    }
}
static void put_code(bit_writer *w, uint32_t code, unsigned n) { /* Huffman codes: high bit first */
    for (unsigned i = n; i-- > 0;) put_bits_lsb(w, code >> i, 1);
}
static size_t make_png_bomb(uint8_t *buf, size_t copies) {
    uint8_t ihdr[13] = {0};
    put_be32(ihdr, 1), put_be32(ihdr + 4, 1), ihdr[8] = 8; /* 1x1, 8-bit grey */
    memcpy(buf, k_png_signature, 8);
    size_t at = png_chunk(buf, 8, "IHDR", ihdr, 13, 0);
    uint8_t *z = buf + at + 8; /* the IDAT payload, written in place */
    z[0] = 0x78, z[1] = 0x01;
    bit_writer w = {z + 2, 0, 0};
    put_bits_lsb(&w, 1, 1), put_bits_lsb(&w, 1, 2);    /* last block, fixed Huffman codes */
    put_code(&w, 0x30, 8);                                /* literal 0 */
    for (size_t i = 0; i < copies; i++) put_code(&w, 0xC5, 8), put_code(&w, 0, 5); /* length 258, distance 1 */
    put_code(&w, 0, 7);                                   /* end of block */
    size_t zn = 2 + w.bytes + 1;
    const uint32_t out = (uint32_t)(1 + 258 * copies);  /* all zeros: adler32 a = 1, b = length */
    put_be32(z + zn, (out % 65521u) << 16 | 1u);
    zn += 4;
    uint8_t *payload = malloc(zn); /* png_chunk copies its payload: move it out of the way first */
    memcpy(payload, z, zn);
    at = png_chunk(buf, at, "IDAT", payload, (uint32_t)zn, 0);
    free(payload);
    return png_chunk(buf, at, "IEND", NULL, 0, 0);
}

/* JPEG segments: marker m and its payload. */
static size_t jpeg_seg(uint8_t *buf, size_t at, uint8_t m, const uint8_t *p, size_t n) {
    buf[at] = 0xFF, buf[at + 1] = m, buf[at + 2] = (uint8_t)((n + 2) >> 8), buf[at + 3] = (uint8_t)(n + 2);
    memcpy(buf + at + 4, p, n);
    return at + 4 + n;
}

/* An 8x8 baseline JPEG of `comps` components (ids 1..comps), every block's coefficients 0 (grey 128): quantisation
 * table 0 (unless no_dqt), DC and AC Huffman tables 0 of one 1-bit code each (DC difference 0, end of block),
 * `scans` scans of component 1 (the others in the first scan, unless skip_others), each holding the bits of its
 * blocks, then EOI (unless cut). Scan s uses DC table dc_table. */
static size_t make_jpeg(uint8_t *buf, int comps, int scans, int no_dqt, int skip_others, int dc_table, int cut) {
    size_t at = 2;
    buf[0] = 0xFF, buf[1] = 0xD8;
    uint8_t dqt[65] = {0};
    for (int i = 1; i < 65; i++) dqt[i] = 1;
    if (!no_dqt) at = jpeg_seg(buf, at, 0xDB, dqt, sizeof dqt);
    uint8_t sof[6 + 12] = {8, 0, 8, 0, 8, (uint8_t)comps};
    for (int c = 0; c < comps; c++) sof[6 + 3 * c] = (uint8_t)(c + 1), sof[7 + 3 * c] = 0x11, sof[8 + 3 * c] = 0;
    at = jpeg_seg(buf, at, 0xC0, sof, 6 + 3 * (size_t)comps);
    uint8_t dht[2 * 18] = {0x00, 1}; /* DC 0: one code of length 1 for symbol 0; AC 0: the same (end of block) */
    dht[18] = 0x10, dht[19] = 1;
    at = jpeg_seg(buf, at, 0xC4, dht, sizeof dht);
    for (int s = 0; s < scans; s++) {
        const int ns = s == 0 && !skip_others ? comps : 1;
        uint8_t sos[1 + 8 + 3] = {(uint8_t)ns};
        for (int k = 0; k < ns; k++) sos[1 + 2 * k] = (uint8_t)(k + 1), sos[2 + 2 * k] = (uint8_t)(dc_table << 4);
        sos[1 + 2 * ns] = 0, sos[2 + 2 * ns] = 63, sos[3 + 2 * ns] = 0;
        at = jpeg_seg(buf, at, 0xDA, sos, 4 + 2 * (size_t)ns);
        buf[at++] = ns == 1 ? 0x3F : 0x00; /* 2 bits per block ("0" DC, "0" end of block), padded with 1s */
        if (ns == 3) buf[at++] = 0x0F;
    }
    if (!cut) buf[at++] = 0xFF, buf[at++] = 0xD9;
    return at;
}

/* An 8-bit palette BMP of w x 1 pixels with the given indices and `colours` palette entries (colour i is
 * B G R = 10 i + 1, 10 i + 2, 10 i + 3); offset_adjust moves the pixel data's stated offset. */
static size_t make_bmp8(uint8_t *buf, const uint8_t *index, int w, int colours, int offset_adjust) {
    const size_t stride = ((size_t)w + 3) / 4 * 4, offset = 54 + 4 * (size_t)colours;
    memset(buf, 0, offset + stride);
    buf[0] = 'B', buf[1] = 'M';
    put_le32(buf + 2, (uint32_t)(offset + stride));
    put_le32(buf + 10, (uint32_t)((int)offset + offset_adjust));
    put_le32(buf + 14, 40);
    put_le32(buf + 18, (uint32_t)w);
    put_le32(buf + 22, 1);
    buf[26] = 1;
    buf[28] = 8;
    put_le32(buf + 46, (uint32_t)colours);
    for (int i = 0; i < colours; i++)
        for (int c = 0; c < 3; c++) buf[54 + 4 * i + c] = (uint8_t)(10 * i + c + 1);
    memcpy(buf + offset, index, (size_t)w);
    return offset + stride;
}

static void expect_refused(const uint8_t *data, size_t size, const char *name, const char *needle) {
    cli_image img;
    vkvit_result r = cli_image_decode(data, size, name, &img);
    CHECK(r == VKVIT_ERROR_BAD_IMAGE && strstr(cli_last_error(), needle) && strstr(cli_last_error(), name) &&
              !img.pixels,
          "%s: result %s, sentence '%s' (want BAD_IMAGE mentioning '%s')", name, vkvit_result_name(r),
          cli_last_error(), needle);
    cli_image_free(&img);
}

static int dump(const char *in, const char *out) {
    cli_image img;
    vkvit_result r = cli_image_load(in, &img);
    if (r != VKVIT_OK) {
        fprintf(stderr, "%s\n", cli_last_error());
        return 2;
    }
    FILE *f = fopen(out, "wb");
    if (!f) return 1;
    uint8_t head[17];
    memcpy(head, "VKVITRGBA", 9);
    put_le32(head + 9, img.width);
    put_le32(head + 13, img.height);
    int ok = fwrite(head, 1, sizeof head, f) == sizeof head &&
             fwrite(img.pixels, 4, (size_t)img.width * img.height, f) == (size_t)img.width * img.height;
    ok &= fclose(f) == 0;
    cli_image_free(&img);
    return ok ? 0 : 1;
}

/* cli_image_reduce against the area integral done another way (every source pixel's overlap with the output
 * pixel's footprint, in double), on fresh random images and limits (the seed printed): each channel within 1 of the
 * reference rounded (the reduction sums in another order, so a value at .5 may round either way); the size at most
 * the limit, with the aspect kept to within a pixel on each side (unless a side is down to 1). */
static void check_reduce(void) { /* VKVIT_TEST_SEED=N reruns seed N */
    const char *again = getenv("VKVIT_TEST_SEED"); /* a failure's printed seed, to rerun it */
    const uint64_t seed = again ? strtoull(again, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    vt_rng_state = seed;
    printf("cli_image_reduce: seed %llu\n", (unsigned long long)seed);
    int worst = 0;
    for (int round = 0; round < 200; round++) {
        const uint32_t w = 1 + vt_rand_u32() % 97, h = 1 + vt_rand_u32() % 89;
        if (w * h < 2) continue;
        const uint64_t max = 1 + vt_rand_u32() % (w * h - 1);
        cli_image img = {.width = w, .height = h, .pixels = malloc((size_t)w * h * 4)};
        for (size_t i = 0; i < (size_t)w * h * 4; i++) img.pixels[i] = (uint8_t)vt_rand_u32();
        uint8_t *src = malloc((size_t)w * h * 4);
        memcpy(src, img.pixels, (size_t)w * h * 4);
        vkvit_result r = cli_image_reduce(&img, max, "random");
        const uint32_t ow = img.width, oh = img.height;
        const double s = sqrt((double)max / ((double)w * h));
        const int clamped = w * s < 1.0 || h * s < 1.0; /* a side of 1: the other takes what the limit leaves */
        CHECK(r == VKVIT_OK && (uint64_t)ow * oh <= max && ow >= 1 && oh >= 1 && ow <= w && oh <= h &&
                  (clamped || (fabs(ow - w * s) <= 1.0 + 1e-9 * w && fabs(oh - h * s) <= 1.0 + 1e-9 * h)),
              "reduce %ux%u to at most %llu pixels: %s, got %ux%u", w, h, (unsigned long long)max,
              r ? cli_last_error() : "ok", ow, oh);
        for (uint32_t y = 0; r == VKVIT_OK && y < oh; y++)
            for (uint32_t x = 0; x < ow; x++) {
                const double x0 = (double)x * w / ow, x1 = (double)(x + 1) * w / ow;
                const double y0 = (double)y * h / oh, y1 = (double)(y + 1) * h / oh;
                double acc[4] = {0, 0, 0, 0}, area = 0;
                for (uint32_t sy = 0; sy < h; sy++) {
                    const double oy = fmin(y1, sy + 1.0) - fmax(y0, (double)sy);
                    if (oy <= 0) continue;
                    for (uint32_t sx = 0; sx < w; sx++) {
                        const double ox = fmin(x1, sx + 1.0) - fmax(x0, (double)sx);
                        if (ox <= 0) continue;
                        area += ox * oy;
                        for (int c = 0; c < 4; c++) acc[c] += ox * oy * src[((size_t)sy * w + sx) * 4 + c];
                    }
                }
                for (int c = 0; c < 4; c++) {
                    const int want = (int)floor(acc[c] / area + 0.5), got = img.pixels[((size_t)y * ow + x) * 4 + c];
                    worst = CLI_MAX(worst, abs(want - got));
                }
            }
        free(src);
        cli_image_free(&img);
    }
    CHECK(worst <= 1, "cli_image_reduce: a channel differs from the area integral by %d (tolerance 1)", worst);
    printf("cli_image_reduce: 200 random images, largest difference from the area integral %d (tolerance 1)\n", worst);

    /* Within the limit: untouched (the same pixels). A flat image stays exactly flat. */
    cli_image img = {.width = 3, .height = 2, .pixels = calloc(24, 1)};
    uint8_t *before = img.pixels;
    CHECK(cli_image_reduce(&img, 6, "fits") == VKVIT_OK && img.pixels == before && img.width == 3,
          "an image within the limit was changed");
    cli_image_free(&img);
    img = (cli_image){.width = 1000, .height = 750, .pixels = malloc(1000 * 750 * 4)};
    memset(img.pixels, 77, 1000 * 750 * 4);
    int flat = cli_image_reduce(&img, 1000, "flat") == VKVIT_OK && (uint64_t)img.width * img.height <= 1000;
    for (size_t i = 0; flat && i < (size_t)img.width * img.height * 4; i++) flat = img.pixels[i] == 77;
    CHECK(flat, "a flat 1000x750 image reduced to %ux%u is not flat 77", img.width, img.height);
    cli_image_free(&img);
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "--dump")) return dump(argv[2], argv[3]);
    static uint8_t buf[1 << 16];
    cli_image img;

    /* A valid 2x1 PNG decodes to exactly red, green with alpha 255. */
    size_t n = make_png(buf, 2, 1, 1, 0);
    vkvit_result r = cli_image_decode(buf, n, "tiny.png", &img);
    CHECK(r == VKVIT_OK, "tiny.png: %s", cli_last_error());
    if (r == VKVIT_OK) {
        const uint8_t want[8] = {255, 0, 0, 255, 0, 255, 0, 255};
        CHECK(img.width == 2 && img.height == 1 && !memcmp(img.pixels, want, 8) && img.channels_in_file == 3,
              "tiny.png: %ux%u, first pixel %u %u %u %u", img.width, img.height, img.pixels[0], img.pixels[1],
              img.pixels[2], img.pixels[3]);
        vkvit_image v = cli_image_view(&img);
        CHECK(v.pixels == img.pixels && v.row_bytes == 8 && v.format == VKVIT_PIXEL_RGBA8, "cli_image_view");
    }
    cli_image_free(&img);
    cli_image_free(&img); /* twice: a zeroed image is a no-op */

    /* The same file with a bad IHDR CRC, cut before IEND, with 0x0 and with absurd dimensions. */
    n = make_png(buf, 2, 1, 1, 1);
    expect_refused(buf, n, "badcrc.png", "CRC");
    n = make_png(buf, 2, 1, 1, 0);
    expect_refused(buf, n - 12, "noiend.png", "truncated PNG");
    n = make_png(buf, 0, 0, 0, 0);
    expect_refused(buf, n, "zero.png", "0x0 pixels");
    n = make_png(buf, 100000, 100000, 0, 0);
    expect_refused(buf, n, "huge.png", "above vkvit's limit");
    n = make_png(buf, 16385, 1, 0, 0);
    expect_refused(buf, n, "wide.png", "16385x1");
    n = make_png(buf, 0x7FFFFFFF, 0x7FFFFFFF, 0, 0);
    expect_refused(buf, n, "absurd.png", "2147483647x2147483647");

    /* BMP: a 3x2 image decodes; 0x0, a huge header and a short pixel array are refused. */
    n = make_bmp(buf, 3, 2, 2 * 12);
    r = cli_image_decode(buf, n, "small.bmp", &img);
    CHECK(r == VKVIT_OK && img.width == 3 && img.height == 2 && img.pixels[0] == 0x40 && img.pixels[3] == 255,
          "small.bmp: %s", r ? cli_last_error() : "wrong pixels");
    cli_image_free(&img);
    n = make_bmp(buf, 3, 2, 2 * 12 - 1);
    expect_refused(buf, n, "short.bmp", "truncated BMP");
    n = make_bmp(buf, 0, 0, 0);
    expect_refused(buf, n, "zero.bmp", "0x0 pixels");
    n = make_bmp(buf, 20000, 20000, 16);
    expect_refused(buf, n, "huge.bmp", "above vkvit's limit");
    n = make_bmp(buf, 3, -2, 2 * 12); /* top-down rows are valid */
    r = cli_image_decode(buf, n, "topdown.bmp", &img);
    CHECK(r == VKVIT_OK && img.height == 2, "topdown.bmp: %s", r ? cli_last_error() : "wrong size");
    cli_image_free(&img);

    /* JPEG without its end-of-image marker, empty input, text, the CLI's size cap. */
    const uint8_t jpeg_head[] = {0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0,
                                 0xFF, 0xDA, 0, 8};
    expect_refused(jpeg_head, sizeof jpeg_head, "cut.jpg", "truncated JPEG");
    expect_refused(buf, 0, "empty.png", "empty");
    const char *text = "this is not an image, just some text in a file with an image's name\n";
    expect_refused((const uint8_t *)text, strlen(text), "text.jpg", "not a PNG, JPEG, BMP, GIF, TGA, TIFF, WebP or binary PPM / PGM");

    r = cli_image_load("/nonexistent/vkvit/image.png", &img);
    CHECK(r == VKVIT_ERROR_IO && strstr(cli_last_error(), "cannot open"), "missing file: %s %s",
          vkvit_result_name(r), cli_last_error());
    r = cli_image_load("/tmp", &img);
    CHECK(r == VKVIT_ERROR_IO && strstr(cli_last_error(), "not a regular file"), "directory: %s %s",
          vkvit_result_name(r), cli_last_error());

    /* A critical chunk whose type is not letters (here ESC [ 2) is named in hex, never echoed to a terminal. */
    n = make_png(buf, 2, 1, 1, 0);
    n = png_chunk(buf, n - 12, "I\x1b[2", (const uint8_t *)"xx", 2, 1);
    n = png_chunk(buf, n, "IEND", NULL, 0, 0);
    expect_refused(buf, n, "escape.png", "the 0x491B5B32 chunk fails its CRC check");
    CHECK(!strchr(cli_last_error(), 0x1b), "escape.png: the sentence holds an ESC byte");

    /* The pixel limit: a 33-byte-IDAT PNG that declares 16384x16384 (1 GiB as RGBA8) is refused from its header,
     * with the default limit (2^25 pixels) and with an explicit one; below the limit it decodes. */
    n = make_png(buf, 16384, 16384, 1, 0);
    expect_refused(buf, n, "big.png", "above the limit of 33554432 pixels");
    n = make_png(buf, 2, 1, 1, 0);
    r = cli_image_decode_max(buf, n, "two.png", 2, &img);
    CHECK(r == VKVIT_OK && img.width == 2, "two.png at max_pixels 2: %s", r ? cli_last_error() : "wrong size");
    cli_image_free(&img);
    r = cli_image_decode_max(buf, n, "two.png", 1, &img);
    CHECK(r == VKVIT_ERROR_BAD_IMAGE && strstr(cli_last_error(), "above the limit of 1 pixels") && !img.pixels,
          "two.png at max_pixels 1: %s %s", vkvit_result_name(r), cli_last_error());
    n = make_bmp(buf, 3, 2, 2 * 12);
    r = cli_image_decode_max(buf, n, "small.bmp", 5, &img);
    CHECK(r == VKVIT_ERROR_BAD_IMAGE && strstr(cli_last_error(), "3x2 pixels"), "small.bmp at max_pixels 5: %s",
          cli_last_error());
    CHECK(cli_image_device_max_pixels(NULL) == CLI_IMAGE_DEFAULT_MAX_PIXELS, "device limit without a ctx");

    /* A FIFO is refused at once (fopen would wait for a writer forever); SIGALRM ends a hang as a failure. */
    char fifo[64];
    snprintf(fifo, sizeof fifo, "/tmp/vkvit_test_fifo_%ld.png", (long)getpid());
    unlink(fifo);
    if (mkfifo(fifo, 0600) == 0) {
        alarm(10);
        r = cli_image_load(fifo, &img);
        alarm(0);
        CHECK(r == VKVIT_ERROR_IO && strstr(cli_last_error(), "named pipe (FIFO), not a regular file"),
              "FIFO: %s %s", vkvit_result_name(r), cli_last_error());
        unlink(fifo);
    } else {
        CHECK(0, "mkfifo %s failed", fifo);
    }
    struct stat dev_st; /* a character device, where the machine has one (some sandboxes make /dev/null a file) */
    const char *dev = stat("/dev/zero", &dev_st) == 0 && S_ISCHR(dev_st.st_mode) ? "/dev/zero"
                    : stat("/dev/urandom", &dev_st) == 0 && S_ISCHR(dev_st.st_mode) ? "/dev/urandom" : NULL;
    if (dev) {
        r = cli_image_load(dev, &img);
        CHECK(r == VKVIT_ERROR_IO && strstr(cli_last_error(), "a device"), "%s: %s", dev, cli_last_error());
    }

    /* EXIF orientation parser on hostile segments: wrong offsets, counts and types give 1, never a read past the
     * end (ASan builds check that). */
    {
        /* SOI, APP1 "Exif\0\0" + TIFF (II, 42, IFD0 at 8, one entry 0x0112 SHORT 1 = 6), SOS. */
        uint8_t j[64] = {0xFF, 0xD8, 0xFF, 0xE1, 0, 36, 'E', 'x', 'i', 'f', 0, 0, 'I', 'I', 42, 0, 8, 0, 0, 0,
                         1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xDA};
        const size_t jn = 42;
        CHECK(jpeg_orientation(j, jn, 2) == 6, "EXIF: orientation %d, want 6", jpeg_orientation(j, jn, 2));
        uint8_t k[64];
        memcpy(k, j, sizeof k);
        k[16] = 0xF0; /* IFD0 offset past the segment */
        CHECK(jpeg_orientation(k, jn, 2) == 1, "EXIF: IFD offset out of range");
        memcpy(k, j, sizeof k);
        k[20] = 0xFF, k[21] = 0xFF; /* 65535 entries in a 36-byte segment */
        k[22] = 0; /* and the first is not the tag */
        CHECK(jpeg_orientation(k, jn, 2) == 1, "EXIF: entry count out of range");
        memcpy(k, j, sizeof k);
        k[30] = 9; /* orientation 9 is not a value */
        CHECK(jpeg_orientation(k, jn, 2) == 1, "EXIF: orientation 9 ignored");
        memcpy(k, j, sizeof k);
        k[5] = 200; /* segment longer than the file */
        CHECK(jpeg_orientation(k, jn, 2) == 1, "EXIF: segment length past the end");
        memcpy(k, j, sizeof k);
        k[12] = 'M', k[13] = 'M'; /* big-endian: 42 reads as 0x2A00, not a TIFF header */
        CHECK(jpeg_orientation(k, jn, 2) == 1, "EXIF: wrong byte order mark");
        for (size_t cut = 0; cut < jn; cut++) (void)jpeg_orientation(j, cut, 2); /* every truncation: no overread */
        CHECK(tiff_orientation(j + 12, 7) == 1, "EXIF: 7-byte TIFF header");
    }

    /* What fuzzing stb_image 2.27 found (2026-11-28), each refused before stb decodes a pixel. */
    {
        /* A valid minimal JPEG decodes (to grey 128), with up to JPEG_MAX_SCANS scans. */
        n = make_jpeg(buf, 1, 1, 0, 0, 0, 0);
        r = cli_image_decode(buf, n, "grey.jpg", &img);
        CHECK(r == VKVIT_OK && img.width == 8 && img.height == 8 && img.pixels[0] >= 127 && img.pixels[0] <= 129 &&
                  img.pixels[3] == 255,
              "grey.jpg: %s (first pixel %u)", r ? cli_last_error() : "decoded", r ? 0u : img.pixels[0]);
        cli_image_free(&img);
        n = make_jpeg(buf, 3, 1, 0, 0, 0, 0);
        r = cli_image_decode(buf, n, "grey3.jpg", &img);
        CHECK(r == VKVIT_OK && img.width == 8, "grey3.jpg (3 components): %s", r ? cli_last_error() : "decoded");
        cli_image_free(&img);
        n = make_jpeg(buf, 1, (int)JPEG_MAX_SCANS, 0, 0, 0, 0);
        r = cli_image_decode(buf, n, "scans100.jpg", &img);
        CHECK(r == VKVIT_OK, "scans100.jpg: %s", r ? cli_last_error() : "decoded");
        cli_image_free(&img);
        n = make_jpeg(buf, 1, (int)JPEG_MAX_SCANS + 1, 0, 0, 0, 0);
        expect_refused(buf, n, "scans101.jpg", "more than 100 scans");
        /* Tables nobody defined, a component no scan decodes, no scan at all, a cut in the scan data. */
        n = make_jpeg(buf, 1, 1, 1, 0, 0, 0);
        expect_refused(buf, n, "nodqt.jpg", "uses a quantisation table that no segment before it defines");
        n = make_jpeg(buf, 1, 1, 0, 0, 1, 0);
        expect_refused(buf, n, "dc1.jpg", "uses a DC Huffman table that no segment before it defines");
        n = make_jpeg(buf, 3, 1, 0, 1, 0, 0);
        expect_refused(buf, n, "onecomp.jpg", "no scan decodes its component 2");
        n = make_jpeg(buf, 1, 0, 0, 0, 0, 0);
        expect_refused(buf, n, "noscan.jpg", "ends before its first scan");
        n = make_jpeg(buf, 1, 1, 0, 0, 0, 1);
        expect_refused(buf, n, "cutscan.jpg", "truncated JPEG");
        n = make_jpeg(buf, 1, 1, 0, 0, 0, 0);
        buf[2 + 4 + 65 + 1] = 0xC9; /* the SOF marker after SOI and DQT: arithmetic coding */
        expect_refused(buf, n, "arith.jpg", "a JPEG of a kind vkvit does not decode (frame marker 0xC9)");
        /* A DHT table of 300 codes (stb writes past its arrays while reading the header). */
        uint8_t dht[17 + 300] = {0x00};
        dht[15] = 150, dht[16] = 150;
        n = jpeg_seg(buf, 2, 0xC4, dht, sizeof dht);
        buf[0] = 0xFF, buf[1] = 0xD8, buf[n] = 0xFF, buf[n + 1] = 0xD9;
        expect_refused(buf, n + 2, "dht300.jpg", "a Huffman table of 300 codes");
        /* FF FF 00 inside a scan's data is a stuffed 0xFF to stb, not a marker 0 whose "length" (here 0x0143) would
         * hide the table after it (the fuzzer's second bypass). */
        n = make_jpeg(buf, 1, 1, 0, 0, 0, 1);
        buf[n++] = 0xFF, buf[n++] = 0xFF, buf[n++] = 0x00, buf[n++] = 0x01, buf[n++] = 0x43;
        n = jpeg_seg(buf, n, 0xC4, dht, sizeof dht);
        buf[n++] = 0xFF, buf[n++] = 0xD9;
        expect_refused(buf, n, "stuffeddht300.jpg", "a Huffman table of 300 codes");
        n = jpeg_seg(buf, 2, 0xC4, dht, sizeof dht);
        buf[0] = 0xFF, buf[1] = 0xD8, buf[n] = 0xFF, buf[n + 1] = 0xD9;
        memmove(buf + 3, buf, n + 2); /* stb finds the start-of-image marker behind 0xFF fill bytes too */
        buf[0] = buf[1] = buf[2] = 0xFF;
        expect_refused(buf, n + 5, "filldht300.jpg", "a Huffman table of 300 codes");

        /* BMP: a compression field stb reads as negative; a palette image without palette; an index past it. */
        n = make_bmp(buf, 3, 2, 2 * 12);
        put_le32(buf + 30, 0x8A464649u);
        expect_refused(buf, n, "negcomp.bmp", "compression type 2319861321");
        const uint8_t idx_ok[4] = {0, 1, 1, 0}, idx_bad[4] = {0, 1, 5, 0};
        n = make_bmp8(buf, idx_ok, 4, 2, 0);
        r = cli_image_decode(buf, n, "pal2.bmp", &img);
        CHECK(r == VKVIT_OK && img.width == 4 && img.pixels[0] == 3 && img.pixels[1] == 2 && img.pixels[2] == 1 &&
                  img.pixels[4] == 13 && img.pixels[6] == 11,
              "pal2.bmp: %s", r ? cli_last_error() : "wrong colours");
        cli_image_free(&img);
        n = make_bmp8(buf, idx_bad, 4, 2, 0);
        expect_refused(buf, n, "pal2bad.bmp", "uses colour 5, past the 2 palette colours");
        n = make_bmp8(buf, idx_ok, 4, 2, -8);
        expect_refused(buf, n, "nopal.bmp", "leaves no palette");
        n = make_bmp8(buf, idx_ok, 4, 2, -62); /* offset 0: stb counts -13 colours and reads none */
        expect_refused(buf, n, "offset0.bmp", "starts at byte 0, which leaves no palette");

        /* A 1x1 PNG whose data inflates to 17 MB (131 KB of file): stb's output buffer would grow to it. */
        const size_t copies = 66000;
        uint8_t *bomb = malloc(copies * 13 / 8 + 256);
        n = make_png_bomb(bomb, copies);
        expect_refused(bomb, n, "bomb.png", "would take more than 16 MiB");
        n = make_png_bomb(bomb, 100); /* 25 KB of extra zeros: within the budget, and the pixel is 0 */
        r = cli_image_decode(bomb, n, "smallbomb.png", &img);
        CHECK(r == VKVIT_OK && img.width == 1 && img.pixels[0] == 0 && img.pixels[3] == 255, "smallbomb.png: %s",
              r ? cli_last_error() : "wrong pixel");
        cli_image_free(&img);
        free(bomb);
    }

    check_reduce();

    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
