// SPDX-License-Identifier: Apache-2.0
/* UTF-8 in the CLI: strings from model files and file names, cleaned for a terminal (cli_put_clean) or repaired
 * for JSON (cli_utf8_fix). The library repairs the strings of its own documents (vkvit_describe_model); the CLI
 * repairs what it takes from elsewhere (argv paths, folder entries, labels) and cleans everything it prints. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* Decodes one code point at s (n > 0 bytes left); returns its length (1..4), or 0 for a byte that does not start a
 * valid, shortest-form, non-surrogate sequence. */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) len = 2, v = c & 0x1Fu, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, v = c & 0x0Fu, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, v = c & 0x07u, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

/* Characters a terminal must not receive from a file: C0 controls (ESC, BEL, CR, ...), DEL, C1 controls, and the
 * bidirectional embeddings / overrides / isolates that reorder what follows them. */
static int unsafe_on_terminal(uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

/* Walks the clean form of s: calls put(f, bytes, n) per character; returns the characters written. */
static size_t clean_walk(FILE *f, const char *s, size_t max) {
    if (!s) s = "(null)";
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s), chars = 0;
    while (left && chars < max) {
        uint32_t cp = 0;
        size_t len = utf8_next(p, left, &cp);
        if (len == 0 || unsafe_on_terminal(cp)) {
            if (f) fputc('?', f);
            len = len ? len : 1;
        } else if (f) {
            fwrite(p, 1, len, f);
        }
        p += len;
        left -= len;
        chars++;
    }
    if (left) {
        if (f) fputs("...", f);
        chars += 3;
    }
    return chars;
}

void cli_put_clean(FILE *f, const char *s, size_t max) { (void)clean_walk(f, s, max); }

void cli_print_error(const char *cmd, const char *sentence) {
    fprintf(stderr, "vkvit %s: ", cmd);
    cli_put_clean(stderr, sentence, 4096);
    fputc('\n', stderr);
}

size_t cli_clean_width(const char *s, size_t max) { return clean_walk(NULL, s, max); }

void cli_put_clean_padded(FILE *f, const char *s, size_t max, size_t width) {
    for (size_t n = clean_walk(f, s, max); n < width; n++) fputc(' ', f);
}

char *cli_utf8_fix(const char *s) {
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *o = out;
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    while (n) {
        uint32_t cp;
        size_t len = utf8_next(p, n, &cp);
        if (len == 0) {
            memcpy(o, "\xEF\xBF\xBD", 3);
            o += 3;
            len = 1;
        } else {
            memcpy(o, p, len);
            o += len;
        }
        p += len;
        n -= len;
    }
    *o = '\0';
    return out;
}
