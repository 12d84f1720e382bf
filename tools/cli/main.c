// SPDX-License-Identifier: Apache-2.0
/* vkvit — command-line entry point: dispatches to one subcommand per file. */
#include "cli.h"

#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <strings.h>

#ifndef VKVIT_GIT_DESCRIBE
#define VKVIT_GIT_DESCRIBE "unknown" /* CMakeLists.txt passes `git describe` of the checkout it configured */
#endif

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command k_commands[] = {
    {"classify", vkvit_cli_classify, "the most probable classes of image files (bundled CIFAR-10 model by default)"},
    {"eval", vkvit_cli_eval, "accuracy and throughput of a model on a folder of labelled images"},
    {"info", vkvit_cli_info, "list Vulkan devices, their features and the workarounds in force"},
    {"inspect", vkvit_cli_inspect, "describe a model file: architecture, parameters, FLOPs"},
    {"run", vkvit_cli_run, "run a model on a tensor from a safetensors file, write the logits"},
    {"bench", vkvit_cli_bench, "measure kernels or a model (latency p50/p90/p99/max, drift, GPU time per kind)"},
};

int vkvit_cli_exit_code(vkvit_result r) {
    switch (r) {
    case VKVIT_OK: return CLI_OK;
    case VKVIT_ERROR_INVALID_ARGUMENT: return CLI_USAGE;
    case VKVIT_ERROR_BAD_MODEL_FILE:
    case VKVIT_ERROR_IO:
    case VKVIT_ERROR_BAD_IMAGE:
    case VKVIT_ERROR_UNSUPPORTED: return CLI_BAD_INPUT;
    case VKVIT_ERROR_NO_LOADER:
    case VKVIT_ERROR_NO_DEVICE: return CLI_NO_DEVICE;
    default: return CLI_FAILURE;
    }
}

static void usage(FILE *f) {
    fprintf(f, "usage: vkvit <command> [options]   (vkvit <command> --help for its options)\n"
               "       vkvit help <command>        the same\n"
               "       vkvit --version             the version\n"
               "       vkvit --help                this text\n\ncommands:\n");
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        fprintf(f, "  %-10s %s\n", k_commands[i].name, k_commands[i].summary);
    fprintf(f, "\nexit codes: 0 success, 1 usage error, 2 bad input (file, model, image), 3 no Vulkan device or\n"
               "loader, 4 runtime failure. classify and eval still process the good images when some are bad\n"
               "(one line on stderr each) and then exit with 2.\n"
               "environment: VKVIT_DEVICE (index or name substring), VKVIT_VALIDATION=1, VKVIT_DISABLE_F16=1,\n"
               "             VKVIT_CACHE_DIR (pipeline cache directory), VKVIT_ATTENTION=fused|gemm\n"
               "options: --name=value or --name value; short forms -m (--model), -k (--top), -b (--batch),\n"
               "-i (--input), -o (--output), -h (--help); `--` ends the options; `-` is standard input / output.\n"
               "docs: docs/cli.md, docs/model-format.md, docs/preprocessing.md, docs/embedding.md\n");
}

/* The edit distance of a and b (case-insensitive; insertions, deletions, substitutions and swaps of two neighbours
 * cost 1: the optimal string alignment distance), for "did you mean"; the first 63 characters of each count. */
static size_t edit_distance(const char *a, const char *b) {
    size_t la = CLI_MIN(strlen(a), 63), lb = CLI_MIN(strlen(b), 63);
    static size_t d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            const size_t differ = (a[i - 1] | 0x20) != (b[j - 1] | 0x20);
            d[i][j] = CLI_MIN(CLI_MIN(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + differ);
            if (i > 1 && j > 1 && (a[i - 1] | 0x20) == (b[j - 2] | 0x20) && (a[i - 2] | 0x20) == (b[j - 1] | 0x20))
                d[i][j] = CLI_MIN(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[la][lb];
}

/* The command `name` was probably meant to be: the nearest by edit distance, when at most a third of the longer
 * name's letters differ (at least one: "clasify", "evl", "Classify"), or one `name` starts (three letters or more:
 * "class"); NULL when none is near. */
static const char *nearest_command(const char *name) {
    const command *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < CLI_ARRAY_LEN(k_commands); i++) {
        size_t d = edit_distance(name, k_commands[i].name);
        size_t longer = CLI_MAX(strlen(name), strlen(k_commands[i].name));
        if (d <= CLI_MAX(longer / 3, 1) && d < best_d) best = &k_commands[i], best_d = d;
    }
    if (best) return best->name;
    for (size_t i = 0; i < CLI_ARRAY_LEN(k_commands); i++)
        if (strlen(name) >= 3 && !strncasecmp(k_commands[i].name, name, strlen(name))) return k_commands[i].name;
    return NULL;
}

/* "vkvit: unknown command 'X'" with a suggestion when one is near; exit code 1. */
static int unknown_command(const char *name) {
    const char *near = nearest_command(name);
    fprintf(stderr, "vkvit: unknown command '");
    cli_put_clean(stderr, name, 60);
    if (near) fprintf(stderr, "'; did you mean '%s'? (vkvit --help lists the commands)\n", near);
    else fprintf(stderr, "' (vkvit --help lists the commands)\n");
    return CLI_USAGE;
}

/* `vkvit help CMD [SUB...]`: CMD's own --help (`vkvit help bench gemm` is `vkvit bench gemm --help`). */
static int help_command(int argc, char **argv) {
    for (size_t i = 0; i < CLI_ARRAY_LEN(k_commands); i++) {
        if (strcmp(argv[0], k_commands[i].name) != 0) continue;
        static char help_flag[] = "--help";
        char *args[8];
        int n = 0;
        for (; n < argc && n < 6; n++) args[n] = argv[n];
        args[n++] = help_flag;
        args[n] = NULL;
        return k_commands[i].run(n, args);
    }
    return unknown_command(argv[0]);
}

int main(int argc, char **argv) {
#if defined(SIGPIPE)
    /* A closed pipe (`vkvit classify ... | head`) makes writes fail with EPIPE, which every command reports with a
     * sentence and exit code 4 (cli_finish_stdout), instead of killing the process without a word. */
    signal(SIGPIPE, SIG_IGN);
#endif
    if (argc >= 3 && !strcmp(argv[1], "help")) return help_command(argc - 2, argv + 2);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : cli_finish_stdout("--help", CLI_OK);
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("vkvit %d.%d.%d (%s)\n", VKVIT_VERSION_MAJOR, VKVIT_VERSION_MINOR, VKVIT_VERSION_PATCH, VKVIT_GIT_DESCRIBE);
        return cli_finish_stdout("--version", CLI_OK);
    }
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        if (!strcmp(argv[1], k_commands[i].name)) return k_commands[i].run(argc - 1, argv + 1);
    return unknown_command(argv[1]);
}
