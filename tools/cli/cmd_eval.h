// SPDX-License-Identifier: Apache-2.0
/* vkvit eval's parts (cmd_eval.c: options and the run; cmd_eval_data.c: the labelled folder; cmd_eval_report.c:
 * progress, the --predictions table and the report). */
#ifndef VKVIT_CMD_EVAL_H
#define VKVIT_CMD_EVAL_H

#include "cli.h"

#define EVAL_SKIPPED_EXAMPLES 8u

typedef struct eval_item {
    char *path;
    uint32_t label;                         /* true class */
    int32_t predicted;                      /* -1: unreadable, or not evaluated */
} eval_item;

typedef struct eval_list {
    eval_item *items;
    uint32_t count, cap;
    uint32_t skipped;                       /* files in class folders that are not supported images */
    char *skipped_examples[EVAL_SKIPPED_EXAMPLES]; /* the first few of them (paths), for the report */
} eval_list;

/* What a run came to, for the report. */
typedef struct eval_tally {
    uint32_t batch, tail_batch;             /* the two sessions' sizes (tail_batch 0: no remainder session) */
    uint32_t n_bad, n_done, n_correct;      /* unreadable, classified, classified right (top-1) */
    uint32_t top_k, n_correct_top_k;        /* min(5, classes); the true class among the top_k */
    uint32_t runs_full, runs_tail, padded;  /* runs of each session; slots that repeated an image */
    uint32_t *per_class_total, *per_class_correct; /* [num_classes], top-1 */
    uint64_t gpu_ns;                        /* upload + preprocess + inference, summed over the runs */
    double seconds;                         /* end to end */
} eval_tally;

/* --class-map: folder name -> class index, from "FOLDER INDEX" lines (ImageNet's "n01440764 0"; blank lines and
 * '#' comments skipped). */
typedef struct eval_class_map {
    char **names;
    uint32_t *index;
    uint32_t count, cap;
} eval_class_map;
/* Reads a map file (`-`: standard input); every index in [0, num_classes). Errors (a sentence naming the line):
 * VKVIT_ERROR_IO, VKVIT_ERROR_OUT_OF_HOST_MEMORY. */
vkvit_result eval_read_class_map(const char *path, uint32_t num_classes, eval_class_map *map);
void eval_class_map_free(eval_class_map *map);

/* Collects DIR's labelled images (DIR/test/<class>/ or DIR/<class>/, the folder used written to root), cycling
 * through the classes, at most `limit` (0: all); each class folder names its class through `map` (when it has
 * entries), else a model label (exactly, else ignoring case), else a class index. Files of other types in the class
 * folders are counted in out->skipped. */
vkvit_result eval_collect(const char *data_dir, const vkvit_model *model, const eval_class_map *map, uint32_t limit,
                          eval_list *out, char *root, size_t root_cap);
void eval_list_free(eval_list *l);

/* The progress bar (stderr is a terminal): done / total, the rate so far and the time left at that rate. */
void eval_progress(uint32_t done, uint32_t total, double seconds);
/* The --predictions table, one line per image, into `out` (opened before the run: cli_out_open). */
vkvit_result eval_write_predictions(cli_out_file *out, const eval_list *list, const vkvit_model *model);

/* The report on stdout: one JSON object, or the text. */
typedef struct eval_report {
    const char *model_path, *root;
    const vkvit_model *model;
    const vkvit_ctx *ctx;
    vkvit_precision precision;
    const eval_list *list;
    const eval_tally *tally;
} eval_report;
vkvit_result eval_print_json(const eval_report *e);
void eval_print_text(const eval_report *e);

#endif
