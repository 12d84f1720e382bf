// SPDX-License-Identifier: Apache-2.0
/* Fields of delimited tables (CSV as RFC 4180 quotes them, TSV with backslash escapes) and whether a terminal may get
 * escape sequences (TERM=dumb, NO_COLOR). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cli_put_csv_field(FILE *f, const char *s) {
    if (!s) return; /* an absent value (a model without labels) is an empty field */
    if (!s[strcspn(s, ",\"\r\n")]) {
        fputs(s, f);
        return;
    }
    fputc('"', f); /* RFC 4180: a field holding a comma, quote or line break is quoted, its quotes doubled */
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void cli_put_tsv_field(FILE *f, const char *s) {
    if (!s) return;
    for (; *s; s++) { /* a tab or line break inside a field would shift the columns or split the row */
        switch (*s) {
        case '\t': fputs("\\t", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\\': fputs("\\\\", f); break;
        default: fputc(*s, f);
        }
    }
}

int cli_terminal_escapes(int fd) {
    if (!isatty(fd)) return 0;
    const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");
    if (no_color && *no_color) return 0; /* https://no-color.org: set and not empty */
    return !(term && !strcmp(term, "dumb"));
}
