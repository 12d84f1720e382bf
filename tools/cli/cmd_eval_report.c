// SPDX-License-Identifier: Apache-2.0
/* vkvit eval: what it prints and writes — the progress bar, the --predictions table and the report (text or one
 * JSON object: valid UTF-8 strings, null for numbers that are not finite). */
#include "cmd_eval.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void eval_progress(uint32_t done, uint32_t total, double seconds) {
    const int width = 30;
    int filled = total ? (int)((uint64_t)done * width / total) : width;
    double rate = seconds > 0 ? done / seconds : 0.0;
    char eta[32] = "ETA --:--";
    if (done == total) {
        snprintf(eta, sizeof eta, "took %u:%02u", (unsigned)(seconds / 60), (unsigned)fmod(seconds, 60.0));
    } else if (rate > 0) {
        double left = (total - done) / rate;
        if (left < 360000) snprintf(eta, sizeof eta, "ETA %u:%02u", (unsigned)(left / 60), (unsigned)fmod(left, 60.0));
    }
    fprintf(stderr, "\r[%.*s%*s] %u/%u  %.1f images/s  %s ", filled, "##############################",
            width - filled, "", done, total, rate, eta);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

vkvit_result eval_write_predictions(cli_out_file *out, const eval_list *list, const vkvit_model *model) {
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f) return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the --predictions table");
    fprintf(f, "# path\ttrue\tpredicted\n");
    for (uint32_t i = 0; i < list->count; i++) {
        const eval_item *it = &list->items[i];
        char t[16], p[16]; /* a model without labels: the class index */
        const char *tl = vkvit_model_label(model, it->label);
        const char *pl = it->predicted < 0 ? "-" : vkvit_model_label(model, (uint32_t)it->predicted);
        if (!tl) snprintf(t, sizeof t, "%u", it->label), tl = t;
        if (!pl) snprintf(p, sizeof p, "%d", it->predicted), pl = p;
        fprintf(f, "%s\t%s\t%s\n", it->path, tl, pl);
    }
    const int failed = ferror(f) != 0;
    vkvit_result r = fclose(f) != 0 || failed
                         ? cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the --predictions table")
                         : cli_out_write(out, text, size);
    free(text);
    return r;
}

/* ---- JSON (cJSON): valid UTF-8 strings, null for numbers that are not finite ---- */

/* Adds a string (valid UTF-8, cli_jstr) / a number (null when not finite, cli_jnum); 0 when out of memory. */
static int json_add_string(cJSON *obj, const char *key, const char *value) {
    cJSON *v = cli_jstr(value);
    return v && cJSON_AddItemToObject(obj, key, v);
}

static int json_add_number(cJSON *obj, const char *key, double value) {
    cJSON *v = cli_jnum(value);
    return v && cJSON_AddItemToObject(obj, key, v);
}

/* Writes `s` between `before` and `after` for a terminal (cli_put_clean: valid UTF-8, no control characters or
 * bidirectional overrides). */
static void put_clean(FILE *f, const char *before, const char *s, const char *after) {
    fputs(before, f);
    cli_put_clean(f, s, 4096);
    fputs(after, f);
}

/* The accuracy and the two throughputs (NaN when there is nothing to divide by). */
static void rates(const eval_tally *t, double *accuracy, double *accuracy_top_k, double *ips, double *gpu_ips) {
    const double gpu_seconds = (double)t->gpu_ns * 1e-9;
    *accuracy = t->n_done ? (double)t->n_correct / t->n_done : NAN;
    *accuracy_top_k = t->n_done ? (double)t->n_correct_top_k / t->n_done : NAN;
    *ips = t->seconds > 0 ? t->n_done / t->seconds : NAN;
    *gpu_ips = gpu_seconds > 0 ? t->n_done / gpu_seconds : NAN;
}

vkvit_result eval_print_json(const eval_report *e) {
    const eval_tally *t = e->tally;
    const eval_list *list = e->list;
    double accuracy, accuracy_top_k, ips, gpu_ips;
    rates(t, &accuracy, &accuracy_top_k, &ips, &gpu_ips);
    vkvit_device_info dev;
    vkvit_ctx_device_info(e->ctx, &dev);
    vkvit_model_info info;
    vkvit_model_get_info(e->model, &info);
    cJSON *doc = cJSON_CreateObject();
    int ok = doc && json_add_string(doc, "model", e->model_path) && json_add_string(doc, "data", e->root) &&
             json_add_string(doc, "device", dev.name) &&
             cJSON_AddStringToObject(doc, "precision", cli_precision_name(e->precision)) &&
             cJSON_AddNumberToObject(doc, "batch", t->batch) && cJSON_AddNumberToObject(doc, "images", t->n_done) &&
             cJSON_AddNumberToObject(doc, "unreadable", t->n_bad) &&
             cJSON_AddNumberToObject(doc, "skipped", list->skipped) &&
             cJSON_AddNumberToObject(doc, "correct", t->n_correct) && json_add_number(doc, "accuracy", accuracy) &&
             json_add_number(doc, "top1_accuracy", accuracy) && cJSON_AddNumberToObject(doc, "top_k", t->top_k) &&
             cJSON_AddNumberToObject(doc, "top5_correct", t->n_correct_top_k) &&
             json_add_number(doc, "top5_accuracy", accuracy_top_k) &&
             json_add_number(doc, "seconds", t->seconds) && json_add_number(doc, "images_per_s", ips) &&
             json_add_number(doc, "gpu_images_per_s", gpu_ips) &&
             cJSON_AddNumberToObject(doc, "padded_slots", t->padded);
    cJSON *arr = ok ? cJSON_AddArrayToObject(doc, "skipped_files") : NULL;
    ok = ok && arr;
    for (uint32_t i = 0; ok && i < CLI_MIN(list->skipped, EVAL_SKIPPED_EXAMPLES); i++) {
        cJSON *item = cli_jstr(list->skipped_examples[i]);
        ok = item && cJSON_AddItemToArray(arr, item);
    }
    cJSON *runs = ok ? cJSON_AddArrayToObject(doc, "runs") : NULL;
    ok = ok && runs;
    for (int k = 0; ok && k < 2; k++) {
        uint32_t b = k ? t->tail_batch : t->batch, n = k ? t->runs_tail : t->runs_full;
        if (!n) continue;
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(runs, o) && cJSON_AddNumberToObject(o, "batch", b) &&
             cJSON_AddNumberToObject(o, "count", n);
    }
    cJSON *pc = ok ? cJSON_AddObjectToObject(doc, "per_class") : NULL;
    ok = ok && pc;
    for (uint32_t c = 0; ok && c < info.num_classes; c++) {
        if (!t->per_class_total[c]) continue;
        char index[16];
        const char *name = vkvit_model_label(e->model, c);
        if (!name) snprintf(index, sizeof index, "%u", c), name = index; /* a model without labels */
        char *label = cli_utf8_fix(name);
        cJSON *o = label ? cJSON_CreateObject() : NULL;
        if (o && !cJSON_AddItemToObject(pc, label, o)) cJSON_Delete(o), o = NULL;
        ok = o && cJSON_AddNumberToObject(o, "correct", t->per_class_correct[c]) &&
             cJSON_AddNumberToObject(o, "images", t->per_class_total[c]) &&
             json_add_number(o, "accuracy", (double)t->per_class_correct[c] / t->per_class_total[c]);
        free(label);
    }
    char *text = ok ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    if (!text) return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory writing the JSON report");
    printf("%s\n", text);
    cJSON_free(text);
    return VKVIT_OK;
}

void eval_print_text(const eval_report *e) {
    const eval_tally *t = e->tally;
    const eval_list *list = e->list;
    double accuracy, accuracy_top_k, ips, gpu_ips;
    rates(t, &accuracy, &accuracy_top_k, &ips, &gpu_ips);
    vkvit_device_info dev;
    vkvit_ctx_device_info(e->ctx, &dev);
    vkvit_model_info info;
    vkvit_model_get_info(e->model, &info);
    put_clean(stdout, "model       ", e->model_path, "");
    printf(" (%s/%s)\n", info.architecture, info.flavour);
    put_clean(stdout, "data        ", e->root, "");
    printf(": %u images", t->n_done);
    if (t->n_bad) printf(" (%u more unreadable)", t->n_bad);
    if (list->skipped) {
        printf("; %u file%s skipped, not a supported image type", list->skipped, list->skipped == 1 ? "" : "s");
        put_clean(stdout, " (e.g. ", list->skipped_examples[0], ")");
    }
    printf("\n");
    printf("device      %s, %s, batch %u", dev.name, cli_precision_name(e->precision), t->batch);
    if (t->runs_tail) printf(" (the last %u in a batch-%u session)", t->tail_batch, t->tail_batch);
    printf("\n");
    if (t->n_done) {
        printf("accuracy    %.2f %%  (%u / %u) top-1\n", 100.0 * accuracy, t->n_correct, t->n_done);
        printf("top-5       %.2f %%  (%u / %u)%s\n", 100.0 * accuracy_top_k, t->n_correct_top_k, t->n_done,
               t->top_k < 5 ? " (the model has fewer than 5 classes: every class counts)" : "");
    } else {
        printf("accuracy    n/a (no image could be read)\n");
    }
    printf("throughput  %.1f images/s end to end (decode + upload + preprocess + inference), %.1f images/s "
           "on the GPU side (upload + preprocess + inference)\n", isfinite(ips) ? ips : 0.0,
           isfinite(gpu_ips) ? gpu_ips : 0.0);
    printf("per class:\n");
    for (uint32_t c = 0; c < info.num_classes; c++) {
        if (!t->per_class_total[c]) continue;
        fputs("  ", stdout);
        char index[16];
        const char *name = vkvit_model_label(e->model, c);
        if (!name) snprintf(index, sizeof index, "%u", c), name = index;
        cli_put_clean_padded(stdout, name, 4096, 16);
        printf(" %6.2f %%  (%u / %u)\n", 100.0 * t->per_class_correct[c] / t->per_class_total[c],
               t->per_class_correct[c], t->per_class_total[c]);
    }
}
