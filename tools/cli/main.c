// SPDX-License-Identifier: Apache-2.0
/* vkvit — command-line entry point: dispatches to one subcommand per file. */
#include "cli.h"

#include <stdio.h>
#include <signal.h>
#include <string.h>

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

int main(int argc, char **argv) {
#if defined(SIGPIPE)
    /* A closed pipe (`vkvit classify ... | head`) makes writes fail with EPIPE, which every command reports with a
     * sentence and exit code 4 (cli_finish_stdout), instead of killing the process without a word. */
    signal(SIGPIPE, SIG_IGN);
#endif
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
    fprintf(stderr, "vkvit: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return CLI_USAGE;
}
