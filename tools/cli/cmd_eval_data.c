// SPDX-License-Identifier: Apache-2.0
/* vkvit eval: the labelled folder. DIR holds test/<class>/<image> (or <class>/<image> directly); each class
 * folder names its class: through --class-map's lines when given (ImageNet's "n01440764 0"), else as one of the
 * model's labels (exactly, else ignoring case), else as a class index ("0", "17"). Images are taken in a fixed order
 * that cycles through the classes (the first image of every class, then the second, ...), so --limit N keeps the
 * classes balanced. */
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

static int has_image_extension(const char *name) { return cli_has_image_extension(name); }

vkvit_result eval_read_class_map(const char *path, uint32_t num_classes, eval_class_map *map) {
    *map = (eval_class_map){0};
    uint8_t *data = NULL;
    size_t size = 0;
    const char *name = cli_input_name(path);
    vkvit_result r = cli_read_input(path, (size_t)64 << 20, &data, &size);
    if (r == VKVIT_ERROR_INVALID_ARGUMENT) r = VKVIT_ERROR_IO;
    if (r != VKVIT_OK) return r;
    uint32_t line_no = 0;
    for (size_t at = 0; at < size && r == VKVIT_OK;) {
        size_t end = at;
        while (end < size && data[end] != '\n') end++;
        line_no++;
        char line[1024];
        size_t n = CLI_MIN(end - at, sizeof line - 1);
        memcpy(line, data + at, n);
        line[n] = '\0';
        at = end + 1;
        if (memchr(line, '\0', n)) {
            r = cli_error(VKVIT_ERROR_IO, "--class-map '%s' line %u holds a NUL byte", name, line_no);
            break;
        }
        char *tok = strtok(line, " \t\r"), *idx = tok ? strtok(NULL, " \t\r") : NULL;
        if (!tok || tok[0] == '#') continue; /* blank lines and comments */
        uint32_t c;
        if (!idx || strtok(NULL, " \t\r") || !cli_parse_u32(idx, 0, num_classes ? num_classes - 1 : 0, &c) ||
            !num_classes) {
            r = cli_error(VKVIT_ERROR_IO, "--class-map '%s' line %u: want 'FOLDER INDEX' with INDEX in [0, %u] (the "
                          "model has %u classes), as ImageNet's 'n01440764 0'", name, line_no,
                          num_classes ? num_classes - 1 : 0, num_classes);
            break;
        }
        for (uint32_t i = 0; i < map->count && r == VKVIT_OK; i++)
            if (!strcmp(map->names[i], tok))
                r = cli_error(VKVIT_ERROR_IO, "--class-map '%s' line %u: '%s' is mapped twice", name, line_no, tok);
        if (r != VKVIT_OK) break;
        if (map->count == map->cap) {
            uint32_t cap = map->cap ? map->cap * 2 : 256;
            char **names = realloc(map->names, cap * sizeof *names);
            if (names) map->names = names;
            uint32_t *index = names ? realloc(map->index, cap * sizeof *index) : NULL;
            if (index) map->index = index;
            if (!names || !index) {
                r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory reading --class-map");
                break;
            }
            map->cap = cap;
        }
        if (!(map->names[map->count] = strdup(tok))) {
            r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory reading --class-map");
            break;
        }
        map->index[map->count++] = c;
    }
    free(data);
    if (r == VKVIT_OK && map->count == 0)
        r = cli_error(VKVIT_ERROR_IO, "--class-map '%s' maps no folder (want 'FOLDER INDEX' lines)", name);
    if (r != VKVIT_OK) eval_class_map_free(map);
    return r;
}

void eval_class_map_free(eval_class_map *map) {
    for (uint32_t i = 0; i < map->count; i++) free(map->names[i]);
    free(map->names);
    free(map->index);
    *map = (eval_class_map){0};
}

/* The labels `folder` matches (strcmp or strcasecmp), the first two in *a and *b (UINT32_MAX: none). */
static void label_matches(const vkvit_model *model, uint32_t num_labels, const char *folder, int ignore_case,
                          uint32_t *a, uint32_t *b) {
    *a = *b = UINT32_MAX;
    for (uint32_t l = 0; l < num_labels; l++) {
        const char *label = vkvit_model_label(model, l);
        if (!label || (ignore_case ? strcasecmp(label, folder) : strcmp(label, folder))) continue;
        if (*a == UINT32_MAX) *a = l;
        else if (*b == UINT32_MAX) *b = l;
    }
}

/* The class a folder names (see the top of the file); a sentence when none, or when two labels match. */
static vkvit_result class_of_folder(const vkvit_model *model, const vkvit_model_info *info, const eval_class_map *map,
                                    const char *root, const char *folder, uint32_t *out) {
    if (map && map->count) {
        for (uint32_t i = 0; i < map->count; i++)
            if (!strcmp(map->names[i], folder)) return *out = map->index[i], VKVIT_OK;
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "class folder '%s/%s' is not in the --class-map file", root, folder);
    }
    for (int ignore_case = 0; ignore_case < 2; ignore_case++) {
        uint32_t a, b;
        label_matches(model, info->num_labels, folder, ignore_case, &a, &b);
        if (b != UINT32_MAX) /* a label that appears twice (ImageNet's "crane") cannot name one class */
            return cli_error(VKVIT_ERROR_BAD_IMAGE, "class folder '%s/%s' matches the model's labels %u and %u%s: "
                             "eval cannot tell which class its images belong to (name the folder by index, or give "
                             "--class-map)", root, folder, a, b, ignore_case ? " (ignoring case)" : "");
        if (a != UINT32_MAX) return *out = a, VKVIT_OK;
        if (!ignore_case && cli_parse_u32(folder, 0, info->num_classes - 1, out) &&
            (folder[0] != '0' || folder[1] == '\0'))
            return VKVIT_OK; /* a class index, written without leading zeros: "0", "17" */
    }
    char some[256] = "";
    for (uint32_t k = 0; k < info->num_labels && k < 10; k++)
        snprintf(some + strlen(some), sizeof some - strlen(some), "%s%s", k ? ", " : "", vkvit_model_label(model, k));
    if (!info->num_labels)
        return cli_error(VKVIT_ERROR_BAD_IMAGE, "class folder '%s/%s' is not a class index in [0, %u] (the model file "
                         "has no labels; or give --class-map)", root, folder, info->num_classes - 1);
    return cli_error(VKVIT_ERROR_BAD_IMAGE, "class folder '%s/%s' is not one of the model's labels (%s%s; case is "
                     "ignored), nor a class index in [0, %u]; or give --class-map", root, folder, some,
                     info->num_labels > 10 ? ", ..." : "", info->num_classes - 1);
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

vkvit_result eval_collect(const char *data_dir, const vkvit_model *model, const eval_class_map *map, uint32_t limit,
                          eval_list *out, char *root, size_t root_cap) {
    if (snprintf(root, root_cap, "%s/test", data_dir) >= (int)root_cap || !is_dir(root))
        snprintf(root, root_cap, "%s", data_dir);
    if (strlen(data_dir) >= root_cap || !is_dir(root)) return cli_error(VKVIT_ERROR_IO, "--data '%s' is not a folder", data_dir);

    vkvit_model_info info;
    vkvit_model_get_info(model, &info);
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
        if ((r = class_of_folder(model, &info, map, root, classes.names[c], &label_of[c])) != VKVIT_OK) goto done;
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
                      ".bmp, .gif, .tga, .webp, .ppm, .pgm)%s", root, out->skipped ? "; other files are skipped" : "");
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
