// SPDX-License-Identifier: Apache-2.0
/* The C architecture rows' tensor tables as JSON, for tests/format/test_format_tables.py (which compares them with
 * tools/vkvit_file.py's, tests/model_builder.h's and docs/model-format.md's).
 *
 *     format_table < docs.jsonl      one vkvit document (the `vkvit` metadata entry) per input line; per line out:
 *         {"ok": true, "params": N, "tensors": [{"name", "shape", "host_only", "packed_after"}, ...]}
 *         {"ok": false, "error": "<the parser's sentence>"}
 *       the table in the row's order (vkvit__model_tensor_table); host_only and packed_after are the row's loader
 *       flags (packed_after: the tensor this one follows in the weight buffer, or null).
 *     format_table dtypes            {"dtypes": ["F32", ...]}: the dtypes the safetensors layer accepts for any tensor
 *     format_table archs             {"archs": {"vit5": ["nvsubq", "paper"], ...}}: the rows' names and flavours
 *     format_table builder           one line per small model of tests/model_builder.h:
 *         {"builder": "make_vit5", "doc": {...}, "params_macro": N, "c_reader": "ok" | sentence,
 *          "tensors": [{"name", "dtype", "shape"}, ...]}   (in the builder's order)
 *
 * A line the C parser refuses is an answer ({"ok": false}), not a failure: the exit status is 0, or 1 when the output
 * cannot be made or the builder reports a test bug. */
#include "model_builder.h"
#include "arch/arch.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct table_dump {
    const vkvit__model_config *cfg;
    const vkvit__arch_ops *row;
    cJSON *list;
} table_dump;

static bool visit(void *user, const char *name, uint32_t ndim, const uint64_t *shape) {
    table_dump *d = user;
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "name", name);
    cJSON *s = cJSON_AddArrayToObject(t, "shape");
    for (uint32_t k = 0; k < ndim; k++) cJSON_AddItemToArray(s, cJSON_CreateNumber((double)shape[k]));
    cJSON_AddBoolToObject(t, "host_only", d->row->host_only && d->row->host_only(d->cfg, name));
    char leader[160];
    if (d->row->packed_after && d->row->packed_after(name, leader, sizeof leader))
        cJSON_AddStringToObject(t, "packed_after", leader);
    else
        cJSON_AddNullToObject(t, "packed_after");
    cJSON_AddItemToArray(d->list, t);
    return true;
}

static bool print_line(cJSON *o) {
    char *s = cJSON_PrintUnformatted(o);
    if (!s) return false;
    puts(s);
    cJSON_free(s);
    return true;
}

/* One document line -> one output line. */
static bool dump_doc(const char *json) {
    vkvit__model_config cfg;
    cJSON *o = cJSON_CreateObject();
    vkvit_result r = vkvit__model_config_parse(json, strlen(json), "format_table", &cfg);
    if (r != VKVIT_OK) {
        cJSON_AddBoolToObject(o, "ok", false);
        cJSON_AddStringToObject(o, "error", vkvit_last_error());
    } else {
        table_dump d = {&cfg, vkvit__arch_ops_of(cfg.arch), cJSON_CreateArray()};
        vkvit__model_tensor_table(&cfg, visit, &d);
        cJSON_AddBoolToObject(o, "ok", true);
        cJSON_AddNumberToObject(o, "params", (double)vkvit__model_param_count(&cfg));
        cJSON_AddItemToObject(o, "tensors", d.list);
        vkvit__model_config_free(&cfg);
    }
    bool ok = print_line(o);
    cJSON_Delete(o);
    return ok;
}

static bool dump_builder(const char *what, builder *b, uint64_t params_macro) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "builder", what);
    cJSON_AddItemToObject(o, "doc", cJSON_Duplicate(b->doc, true));
    cJSON_AddNumberToObject(o, "params_macro", (double)params_macro);
    vkvit__model_file mf;
    uint8_t *img = NULL;
    vkvit_result r = parse_builder(b, &mf, &img);
    cJSON_AddStringToObject(o, "c_reader", r == VKVIT_OK ? "ok" : vkvit_last_error());
    if (r == VKVIT_OK) vkvit__model_file_close(&mf);
    free(img);
    cJSON *list = cJSON_AddArrayToObject(o, "tensors");
    for (int i = 0; i < b->n; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "name", b->t[i].name);
        cJSON_AddStringToObject(t, "dtype", b->t[i].dtype);
        cJSON *s = cJSON_AddArrayToObject(t, "shape");
        for (uint32_t k = 0; k < b->t[i].ndim; k++) cJSON_AddItemToArray(s, cJSON_CreateNumber((double)b->t[i].shape[k]));
        cJSON_AddItemToArray(list, t);
    }
    bool ok = print_line(o);
    cJSON_Delete(o);
    builder_free(b);
    return ok;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "dtypes") == 0) {
        cJSON *o = cJSON_CreateObject();
        cJSON *l = cJSON_AddArrayToObject(o, "dtypes");
        for (int k = 0; k < VKVIT_ST_DTYPE_COUNT; k++)
            cJSON_AddItemToArray(l, cJSON_CreateString(vkvit__st_dtype_name((vkvit__st_dtype)k)));
        bool ok = print_line(o);
        cJSON_Delete(o);
        return ok ? 0 : 1;
    }
    if (argc == 2 && strcmp(argv[1], "archs") == 0) {
        cJSON *o = cJSON_CreateObject();
        cJSON *archs = cJSON_AddObjectToObject(o, "archs");
        for (int a = 0; a < VKVIT_ARCH_COUNT; a++) {
            const vkvit__arch_ops *row = vkvit__arch_ops_of((vkvit__arch)a);
            cJSON *l = cJSON_AddArrayToObject(archs, row->name);
            for (uint32_t f = 0; f < row->n_flavours; f++) cJSON_AddItemToArray(l, cJSON_CreateString(row->flavours[f]));
        }
        bool ok = print_line(o);
        cJSON_Delete(o);
        return ok ? 0 : 1;
    }
    if (argc == 2 && strcmp(argv[1], "builder") == 0) {
        builder b;
        bool ok = true;
        g_ok = true;                        /* find_t / set_path clear it on a test bug */
        make_vit5(&b);
        ok &= dump_builder("make_vit5", &b, VIT5_SMALL_PARAMS);
        make_vil(&b, true);
        ok &= dump_builder("make_vil(seed)", &b, VIL_SMALL_SEED_PARAMS);
        make_vil(&b, false);
        ok &= dump_builder("make_vil(nxai)", &b, VIL_SMALL_NXAI_PARAMS);
        make_resnet(&b);
        ok &= dump_builder("make_resnet", &b, RESNET_SMALL_PARAMS);
        return ok && g_ok ? 0 : 1;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: format_table < docs.jsonl | format_table dtypes | archs | builder\n");
        return 1;
    }
    /* Lines of any length: a deep config's document is short, but nothing here needs a limit. */
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int status = 0;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (n == 0) continue;
        if (!dump_doc(line)) status = 1;
        fflush(stdout);
    }
    free(line);
    return status;
}
