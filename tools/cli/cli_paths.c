// SPDX-License-Identifier: Apache-2.0
/* The image list of classify: operands as given, folders walked (sorted, by extension, each folder once), and list
 * files (--files-from). The walk agrees with tools/bulk_classify.py's list_images: the same extensions, dot files
 * and dot folders left out, the paths of one folder operand sorted as strings. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* The extensions image_decode.c decodes (case-insensitive). */
static const char *const k_image_extensions[] = {"png", "jpg", "jpeg", "bmp", "gif", "tga", "webp", "ppm", "pgm"};

/* A folder deeper than this below the operand is not entered (its path says where the walk stopped). */
#define WALK_MAX_DEPTH 64

int cli_has_image_extension(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return 0;
    for (size_t i = 0; i < CLI_ARRAY_LEN(k_image_extensions); i++)
        if (!strcasecmp(dot + 1, k_image_extensions[i])) return 1;
    return 0;
}

static vkvit_result push(cli_path_list *l, const char *path, const char *error) {
    if (l->count == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 64;
        if (cap <= l->cap || cap > UINT32_MAX / 2) return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "too many images");
        cli_path *grown = realloc(l->items, (size_t)cap * sizeof *grown);
        if (!grown) return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the image list");
        l->items = grown;
        l->cap = cap;
    }
    cli_path *p = &l->items[l->count];
    p->path = strdup(path);
    p->error = error ? strdup(error) : NULL;
    if (!p->path || (error && !p->error)) {
        free(p->path), free(p->error);
        return cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the image list");
    }
    l->count++;
    return VKVIT_OK;
}

/* The folders entered so far (device, inode): a symlink back up the tree, or two links to one folder, enter it once. */
typedef struct walk_seen {
    dev_t *dev;
    ino_t *ino;
    size_t n, cap;
} walk_seen;

/* 1: first visit (now recorded); 0: seen before; -1: out of memory. */
static int first_visit(walk_seen *w, const struct stat *st) {
    for (size_t i = 0; i < w->n; i++)
        if (w->dev[i] == st->st_dev && w->ino[i] == st->st_ino) return 0;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 32;
        dev_t *d = realloc(w->dev, cap * sizeof *d);
        if (!d) return -1;
        w->dev = d;
        ino_t *i = realloc(w->ino, cap * sizeof *i);
        if (!i) return -1;
        w->ino = i;
        w->cap = cap;
    }
    w->dev[w->n] = st->st_dev;
    w->ino[w->n++] = st->st_ino;
    return 1;
}

/* Adds the images of folder `dir` (and, recursive, of its folders). A folder that cannot be read becomes an entry
 * with its sentence (reported as a bad image, in its place in the order). Fails only when memory runs out. */
static vkvit_result walk(cli_path_list *l, walk_seen *seen, const char *dir, int recursive, int depth) {
    DIR *d = opendir(dir);
    if (!d) {
        char why[PATH_MAX + 128];
        snprintf(why, sizeof why, "cannot read folder '%s': %s", dir, strerror(errno));
        return push(l, dir, why);
    }
    vkvit_result r = VKVIT_OK;
    const size_t dir_len = strlen(dir);
    const int slash = dir_len > 0 && dir[dir_len - 1] == '/';
    for (struct dirent *e; r == VKVIT_OK && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue; /* ".", "..", and hidden files and folders, as bulk_classify.py */
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s%s%s", dir, slash ? "" : "/", e->d_name) >= (int)sizeof path) {
            r = push(l, dir, "a path below this folder is longer than PATH_MAX");
            continue;
        }
        struct stat st;
        if (stat(path, &st) != 0) { /* a dangling symlink: an image name is reported, anything else skipped */
            if (cli_has_image_extension(e->d_name)) r = push(l, path, NULL);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            if (!recursive) continue;
            int first = first_visit(seen, &st);
            if (first < 0) r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the folder walk");
            else if (first && depth >= WALK_MAX_DEPTH)
                r = push(l, path, "folder nested too deep (64 levels); not entered");
            else if (first) r = walk(l, seen, path, recursive, depth + 1);
            continue;
        }
        if (cli_has_image_extension(e->d_name)) r = push(l, path, NULL);
    }
    closedir(d);
    return r;
}

static int by_path(const void *a, const void *b) {
    return strcmp(((const cli_path *)a)->path, ((const cli_path *)b)->path);
}

vkvit_result cli_paths_add(cli_path_list *l, const char *operand, int recursive) {
    struct stat st;
    if (strcmp(operand, "-") != 0 && stat(operand, &st) == 0 && S_ISDIR(st.st_mode)) {
        walk_seen seen = {0};
        const uint32_t first = l->count;
        vkvit_result r = first_visit(&seen, &st) < 0
                             ? cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the folder walk")
                             : walk(l, &seen, operand, recursive, 0);
        free(seen.dev);
        free(seen.ino);
        if (r == VKVIT_OK && l->count == first) {
            char why[PATH_MAX + 160];
            snprintf(why, sizeof why, "folder '%s' holds no image files (.png, .jpg, .jpeg, .bmp, .gif, .tga, .webp, "
                     ".ppm, .pgm)%s", operand, recursive ? "" : "; -r also walks its folders");
            return push(l, operand, why);
        }
        if (r == VKVIT_OK) qsort(l->items + first, l->count - first, sizeof *l->items, by_path);
        return r;
    }
    return push(l, operand, NULL);
}

vkvit_result cli_paths_add_list(cli_path_list *l, const char *list_path) {
    uint8_t *data = NULL;
    size_t size = 0;
    vkvit_result r = cli_read_input(list_path, (size_t)1 << 30, &data, &size);
    if (r != VKVIT_OK) return r;
    for (size_t at = 0; at < size && r == VKVIT_OK;) {
        size_t end = at;
        while (end < size && data[end] != '\n') end++;
        size_t b = at, e = end;
        while (b < e && (data[b] == ' ' || data[b] == '\t' || data[b] == '\r')) b++; /* as bulk_classify.py's strip */
        while (e > b && (data[e - 1] == ' ' || data[e - 1] == '\t' || data[e - 1] == '\r')) e--;
        at = end + 1;
        if (b == e || data[b] == '#') continue; /* blank lines and comments */
        if (memchr(data + b, '\0', e - b)) {
            r = cli_error(VKVIT_ERROR_INVALID_ARGUMENT, "'%s' holds a NUL byte: one path per line, as text",
                          cli_input_name(list_path));
            break;
        }
        char *line = strndup((const char *)data + b, e - b);
        if (!line) r = cli_error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the image list");
        else r = push(l, line, NULL);
        free(line);
    }
    free(data);
    return r;
}

void cli_paths_free(cli_path_list *l) {
    for (uint32_t i = 0; i < l->count; i++) free(l->items[i].path), free(l->items[i].error);
    free(l->items);
    memset(l, 0, sizeof *l);
}
