// SPDX-License-Identifier: Apache-2.0
/* vkvit eval: the labelled folder. DIR holds test/<class>/<image> (or <class>/<image> directly); each class
 * folder's name must be one of the model's labels. Images are taken in a fixed order that cycles through the
 * classes (the first image of every class, then the second, ...), so --limit N keeps the classes balanced. */
#include "cmd_eval.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

typedef struct name_list {
    char **names;
    uint32_t count, cap;
} name_list;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void names_free(name_list *l) {
    for (uint32_t i = 0; i < l->count; i++) free(l->names[i]);
    free(l->names);
    *l = (name_list){0};
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int has_image_extension(const char *name) {
    static const char *const exts[] = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tga", ".webp"};
    size_t n = strlen(name);
    for (size_t i = 0; i < CLI_ARRAY_LEN(exts); i++) {
        size_t e = strlen(exts[i]);
        if (n > e && !strcasecmp(name + n - e, exts[i])) return 1;
    }
    return 0;
}

/* The sorted names in `dir` (hidden entries skipped): its subfolders (want_dirs) or its image files. With
 * `skipped` (image files only): files that are not of a supported image type are counted there, and the first
 * EVAL_SKIPPED_EXAMPLES of them (over all calls) kept as paths. */
static vkvit_result list_dir(const char *dir, int want_dirs, name_list *out, eval_list *skipped) {
    *out = (name_list){0};
    DIR *d = opendir(dir);
    if (!d) return cli_error(VKVIT_ERROR_IO, "cannot open the folder '%s': %s", dir, strerror(errno));
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
        if (!want_dirs && skipped && !is_dir(path) && !has_image_extension(e->d_name)) {
            if (skipped->skipped < EVAL_SKIPPED_EXAMPLES && !(skipped->skipped_examples[skipped->skipped] =
                                                                  strdup(path)))
                goto oom;
            skipped->skipped++;
            continue;
        }
        if (want_dirs ? !is_dir(path) : (is_dir(path) || !has_image_extension(e->d_name))) continue;
        if (out->count == out->cap) {
            uint32_t cap = out->cap ? out->cap * 2 : 64;
            char **grown = realloc(out->names, cap * sizeof *grown);
            if (!grown) goto oom;
            out->names = grown;
            out->cap = cap;
        }
        if (!(out->names[out->count] = strdup(e->d_name))) goto oom;
        out->count++;
    }
    closedir(d);
    if (out->count) qsort(out->names, out->count, sizeof *out->names, cmp_str);
    return VKVIT_OK;
oom:
    closedir(d);
    names_free(out);
    return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory listing '%s'", dir);
}

vkvit_result eval_collect(const char *data_dir, const vkvit_model *model, uint32_t limit, eval_list *out, char *root,
                          size_t root_cap) {
    if (snprintf(root, root_cap, "%s/test", data_dir) >= (int)root_cap || !is_dir(root))
        snprintf(root, root_cap, "%s", data_dir);
    if (strlen(data_dir) >= root_cap || !is_dir(root)) return cli_error(VKVIT_ERROR_IO, "--data '%s' is not a folder", data_dir);

    vkvit_model_info info;
    vkvit_model_get_info(model, &info);
    if (info.num_labels == 0)
        return cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "the model file has no class labels, so class folders "
                         "cannot be matched to its classes");
    name_list classes;
    vkvit_result r = list_dir(root, 1, &classes, NULL);
    if (r != VKVIT_OK) return r;
    if (classes.count == 0) {
        names_free(&classes);
        return cli_error(VKVIT_ERROR_IO, "'%s' has no class folders (expected <class>/<image> or "
                         "test/<class>/<image>)", root);
    }
    name_list *files = calloc(classes.count, sizeof *files);
    uint32_t *label_of = calloc(classes.count, sizeof *label_of);
    if (!files || !label_of) {
        r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory listing '%s'", root);
        goto done;
    }
    uint32_t total = 0, longest = 0;
    for (uint32_t c = 0; c < classes.count; c++) {
        uint32_t l = 0;
        while (l < info.num_labels && strcmp(vkvit_model_label(model, l), classes.names[c])) l++;
        if (l == info.num_labels) {
            char some[256] = "";
            for (uint32_t k = 0; k < info.num_labels && k < 10; k++)
                snprintf(some + strlen(some), sizeof some - strlen(some), "%s%s", k ? ", " : "",
                         vkvit_model_label(model, k));
            r = cli_error(VKVIT_ERROR_BAD_IMAGE, "class folder '%s/%s' is not one of the model's labels (%s%s)",
                          root, classes.names[c], some, info.num_labels > 10 ? ", ..." : "");
            goto done;
        }
        uint32_t twin = l + 1; /* a label that appears twice (ImageNet's "crane") cannot name one class */
        while (twin < info.num_labels && strcmp(vkvit_model_label(model, twin), classes.names[c])) twin++;
        if (twin < info.num_labels) {
            r = cli_error(VKVIT_ERROR_BAD_IMAGE, "class folder '%s/%s' matches the model's labels %u and %u: eval "
                          "cannot tell which class its images belong to", root, classes.names[c], l, twin);
            goto done;
        }
        label_of[c] = l;
        char dir[4096];
        if (snprintf(dir, sizeof dir, "%s/%s", root, classes.names[c]) >= (int)sizeof dir) {
            r = cli_error(VKVIT_ERROR_IO, "the path '%s/%s' is too long", root, classes.names[c]);
            goto done;
        }
        if ((r = list_dir(dir, 0, &files[c], out)) != VKVIT_OK) goto done;
        total += files[c].count;
        longest = CLI_MAX(longest, files[c].count);
    }
    if (total == 0) {
        r = cli_error(VKVIT_ERROR_IO, "the class folders under '%s' hold no image files (.jpg, .jpeg, .png, "
                      ".bmp, .gif, .tga, .webp)%s", root, out->skipped ? "; other files are skipped" : "");
        goto done;
    }
    uint32_t n = limit ? CLI_MIN(limit, total) : total;
    out->items = calloc(n, sizeof *out->items);
    if (!out->items) {
        r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %u images", n);
        goto done;
    }
    out->cap = n;
    for (uint32_t k = 0; k < longest && out->count < n; k++)
        for (uint32_t c = 0; c < classes.count && out->count < n; c++) {
            if (k >= files[c].count) continue;
            char path[4096];
            if (snprintf(path, sizeof path, "%s/%s/%s", root, classes.names[c], files[c].names[k]) >=
                (int)sizeof path) {
                r = cli_error(VKVIT_ERROR_IO, "the path '%s/%s/%s' is too long", root, classes.names[c],
                              files[c].names[k]);
                goto done;
            }
            eval_item *it = &out->items[out->count];
            if (!(it->path = strdup(path))) {
                r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %u images", n);
                goto done;
            }
            it->label = label_of[c];
            it->predicted = -1;
            out->count++;
        }
done:
    if (files)
        for (uint32_t c = 0; c < classes.count; c++) names_free(&files[c]);
    free(files);
    free(label_of);
    names_free(&classes);
    return r;
}

void eval_list_free(eval_list *l) {
    for (uint32_t i = 0; i < l->count; i++) free(l->items[i].path);
    for (uint32_t i = 0; i < EVAL_SKIPPED_EXAMPLES; i++) free(l->skipped_examples[i]);
    free(l->items);
    *l = (eval_list){0};
}
