// SPDX-License-Identifier: Apache-2.0
/* Strings on a terminal (cli_utf8.c) and JSON documents (cli_json.c). */
#ifndef VKVIT_CLI_TEXT_H
#define VKVIT_CLI_TEXT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

/* ------------------------------------------------------------------------------------------------------------
 * Strings from model files and file names on a terminal
 * ------------------------------------------------------------------------------------------------------------ */

/* Writes `s` for a terminal: control characters (C0, DEL, C1), bidirectional overrides and bytes that are not
 * valid UTF-8 become '?'; at most `max` characters, then "...". NULL writes "(null)". */
void cli_put_clean(FILE *f, const char *s, size_t max);
/* Prints "vkvit CMD: <sentence>" on stderr, the sentence sanitised as cli_put_clean does (it may quote a file name
 * or a label). */
void cli_print_error(const char *cmd, const char *sentence);
/* The number of characters cli_put_clean(s, max) writes. */
size_t cli_clean_width(const char *s, size_t max);
/* cli_put_clean, then spaces up to `width` characters. */
void cli_put_clean_padded(FILE *f, const char *s, size_t max, size_t width);

/* Delimited tables (cli_fields.c). A CSV field as RFC 4180 writes it: quoted when it holds a comma, a double quote,
 * CR or LF, its double quotes doubled; NULL is an empty field. */
void cli_put_csv_field(FILE *f, const char *s);
/* A TSV field: tab, LF, CR and backslash written as \t, \n, \r and \\, so a row is one line of tab-separated
 * columns whatever a file name holds; NULL is an empty field. */
void cli_put_tsv_field(FILE *f, const char *s);
/* Whether fd may get terminal escape sequences (the progress line's \r\033[K): a terminal, NO_COLOR unset or
 * empty, TERM not "dumb". */
int cli_terminal_escapes(int fd);

/* ------------------------------------------------------------------------------------------------------------
 * JSON output: every document the CLI prints (classify, bench, run, info, inspect) is built with cJSON.
 * ------------------------------------------------------------------------------------------------------------ */

/* A JSON string of `s` (NULL: null); bytes that are not valid UTF-8 become U+FFFD, so the document is always
 * valid UTF-8 whatever a file name or label holds. */
cJSON *cli_jstr(const char *s);
/* A malloc'ed copy of s with every byte that is not valid UTF-8 replaced by U+FFFD (NULL when out of memory). */
char *cli_utf8_fix(const char *s);
/* A JSON number; NaN and infinities become null and are counted for cli_json_print's warning. */
cJSON *cli_jnum(double v);
/* A float as JSON with at most 9 significant digits (exact for a float); non-finite as cli_jnum. */
cJSON *cli_jfloat(float v);
/* `item` on one line with a space after each ':' and ',' ({"rank": 1, "class": 3}); malloc'ed (free), NULL when out
 * of memory. */
char *cli_json_line(const cJSON *item);
/* Prints `doc` (pretty, or one line as cli_json_line) and a newline on stdout, then deletes it; warns on stderr once when
 * non-finite numbers were written as null. Returns CLI_OK, or CLI_FAILURE when out of memory. */
int cli_json_print(const char *cmd, cJSON *doc, int pretty);
/* Prints cli_json_print's warning now (for documents printed piece by piece); nothing when all were finite. */
void cli_json_warn_non_finite(const char *cmd);

#endif
