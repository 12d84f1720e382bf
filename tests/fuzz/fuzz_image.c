// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for the CLI's image decoder (tools/cli/image_decode.c: its checks, stb_image and libwebp): the
 * bytes go to cli_image_decode_max, the in-memory entry `vkvit classify` uses, with a pixel limit of 2^20 instead of
 * the CLI's 2^25: every check runs the same, and no input takes seconds to decode (a 5792 x 5792 JPEG of 100 scans,
 * within the CLI's limits, takes about 3 s natively and would hit libFuzzer's 10 s timeout under ASan, making a
 * bounded CI run flaky).
 * A decoded image must keep the contract of image_decode.h (sides 1..VKVIT_MAX_IMAGE_SIDE, within the limit), and
 * its pixels are read (ASan sees a short buffer, MSan an unwritten one); a refused one must leave *out zeroed.
 * The CLI's error channel and the one library call image_decode.c makes are stubbed below; the decode path is the
 * real one. Seeds: tests/fuzz/image_corpus/ (tests/fuzz/make_image_corpus.py), among them the files of the first
 * run's findings (2026-11-28: stb_image 2.27 heap overflow, uninitialised reads, a zlib bomb, a 1000-scan JPEG).
 *
 * Build and run: VKVIT_FUZZ_TARGET=image tools/run_fuzz.sh SECONDS. */
#include "image_decode.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_error[1024];

vkvit_result cli_error(vkvit_result code, const char *fmt, ...); /* tools/cli/cli.h's */
vkvit_result cli_error(vkvit_result code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
    return code;
}
const char *cli_last_error(void);
const char *cli_last_error(void) { return g_error; }
const char *vkvit_last_error(void) { return ""; }
vkvit_result vkvit_ctx_device_info(const vkvit_ctx *ctx, vkvit_device_info *info) {
    (void)ctx, (void)info;
    return VKVIT_ERROR_INVALID_ARGUMENT; /* cli_image_device_max_pixels falls back to the default limit */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_PIXELS ((uint64_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cli_image img;
    const vkvit_result r = cli_image_decode_max(data, size, "fuzz", FUZZ_MAX_PIXELS, &img);
    if (r == VKVIT_OK) {
        if (!img.pixels || img.width == 0 || img.height == 0 || img.width > VKVIT_MAX_IMAGE_SIDE ||
            img.height > VKVIT_MAX_IMAGE_SIDE || (uint64_t)img.width * img.height > FUZZ_MAX_PIXELS) {
            fprintf(stderr, "contract broken: decoded %ux%u at %p\n", img.width, img.height, (void *)img.pixels);
            abort();
        }
        const size_t n = (size_t)img.width * img.height * 4;
        volatile uint32_t sum = img.pixels[n - 1];
        for (size_t i = 0; i < n; i += 61) sum += img.pixels[i];
        (void)sum;
        cli_image_free(&img);
    } else if (img.pixels || img.width || img.height) {
        fprintf(stderr, "contract broken: a refused image left its output set (%s)\n", g_error);
        abort();
    }
    return 0;
}
