// SPDX-License-Identifier: Apache-2.0
/* JSON output: the cJSON values and printers every command's document is built with. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static unsigned g_non_finite; /* numbers written as null since the last cli_json_print */

cJSON *cli_jstr(const char *s) {
    if (!s) return cJSON_CreateNull();
    char *fixed = cli_utf8_fix(s);
    if (!fixed) return NULL;
    cJSON *j = cJSON_CreateString(fixed);
    free(fixed);
    return j;
}

cJSON *cli_jnum(double v) {
    if (!isfinite(v)) {
        g_non_finite++;
        return cJSON_CreateNull();
    }
    return cJSON_CreateNumber(v);
}

char *cli_json_line(const cJSON *item) {
    char *text = item ? cJSON_PrintUnformatted(item) : NULL;
    if (!text) return NULL;
    size_t n = strlen(text), extra = 0;
    int in_string = 0;
    for (size_t i = 0; i < n; i++) { /* one space after each ':' and ',' outside strings */
        if (in_string) {
            if (text[i] == '\\') i++;
            else if (text[i] == '"') in_string = 0;
        } else if (text[i] == '"') {
            in_string = 1;
        } else if (text[i] == ':' || text[i] == ',') {
            extra++;
        }
    }
    char *out = malloc(n + extra + 1), *o = out;
    if (out) {
        in_string = 0;
        for (size_t i = 0; i < n; i++) {
            char c = text[i];
            *o++ = c;
            if (in_string) {
                if (c == '\\' && i + 1 < n) *o++ = text[++i];
                else if (c == '"') in_string = 0;
            } else if (c == '"') {
                in_string = 1;
            } else if (c == ':' || c == ',') {
                *o++ = ' ';
            }
        }
        *o = '\0';
    }
    cJSON_free(text);
    return out;
}

int cli_json_print(const char *cmd, cJSON *doc, int pretty) {
    char *text = doc ? (pretty ? cJSON_Print(doc) : cli_json_line(doc)) : NULL;
    cJSON_Delete(doc);
    if (!text) {
        fprintf(stderr, "vkvit %s: out of memory while building the JSON output\n", cmd);
        return CLI_FAILURE;
    }
    fputs(text, stdout);
    fputc('\n', stdout);
    if (pretty) cJSON_free(text);
    else free(text);
    cli_json_warn_non_finite(cmd);
    return CLI_OK;
}

void cli_json_warn_non_finite(const char *cmd) {
    if (!g_non_finite) return;
    fprintf(stderr, "vkvit %s: warning: %u non-finite number%s (NaN or infinity) written as null in the JSON "
                    "output\n", cmd, g_non_finite, g_non_finite == 1 ? "" : "s");
    g_non_finite = 0;
}

cJSON *cli_jfloat(float v) {
    if (!isfinite(v)) return cli_jnum(v);
    char buf[32];
    snprintf(buf, sizeof buf, "%.9g", v); /* the shortest that round-trips a float, not a double's 17 digits */
    return cJSON_CreateNumber(strtod(buf, NULL));
}
