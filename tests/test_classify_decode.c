/* The CLI's image decoder (tools/cli/image_decode.c, compiled into this test): crafted in-memory files whose
 * answer is known exactly, and a dump mode for tests/test_classify_decode.py, which compares every decoded image
 * with PIL's.
 *
 *   test_classify_decode                    the in-memory checks (no GPU needed)
 *   test_classify_decode --dump IN OUT      decode IN; write "VKVITRGBA" u32 width u32 height, then RGBA8 rows to OUT;
 *                                           exit 2 with the sentence on stderr when IN is refused */
#include "../tools/cli/image_decode.c"

#include "test_util.h"

#include <sys/stat.h>
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
    expect_refused((const uint8_t *)text, strlen(text), "text.jpg", "not a PNG, JPEG, BMP, GIF, TGA or WebP");

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
        CHECK(jpeg_orientation(j, jn) == 6, "EXIF: orientation %d, want 6", jpeg_orientation(j, jn));
        uint8_t k[64];
        memcpy(k, j, sizeof k);
        k[16] = 0xF0; /* IFD0 offset past the segment */
        CHECK(jpeg_orientation(k, jn) == 1, "EXIF: IFD offset out of range");
        memcpy(k, j, sizeof k);
        k[20] = 0xFF, k[21] = 0xFF; /* 65535 entries in a 36-byte segment */
        k[22] = 0; /* and the first is not the tag */
        CHECK(jpeg_orientation(k, jn) == 1, "EXIF: entry count out of range");
        memcpy(k, j, sizeof k);
        k[30] = 9; /* orientation 9 is not a value */
        CHECK(jpeg_orientation(k, jn) == 1, "EXIF: orientation 9 ignored");
        memcpy(k, j, sizeof k);
        k[5] = 200; /* segment longer than the file */
        CHECK(jpeg_orientation(k, jn) == 1, "EXIF: segment length past the end");
        memcpy(k, j, sizeof k);
        k[12] = 'M', k[13] = 'M'; /* big-endian: 42 reads as 0x2A00, not a TIFF header */
        CHECK(jpeg_orientation(k, jn) == 1, "EXIF: wrong byte order mark");
        for (size_t cut = 0; cut < jn; cut++) (void)jpeg_orientation(j, cut); /* every truncation: no overread */
        CHECK(tiff_orientation(j + 12, 7) == 1, "EXIF: 7-byte TIFF header");
    }

    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
