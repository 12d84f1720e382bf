/* The vkvit command-line tool: one file per subcommand, each `int vkvit_cli_<name>(int argc, char **argv)` with
 * argv[0] the subcommand name. Exit codes: 0 success, 1 usage error, 2 bad input (file, model, image),
 * 3 no usable Vulkan device or loader, 4 runtime failure. */
#ifndef VKVIT_CLI_H
#define VKVIT_CLI_H

#include "vkvit.h"

enum { CLI_OK = 0, CLI_USAGE = 1, CLI_BAD_INPUT = 2, CLI_NO_DEVICE = 3, CLI_FAILURE = 4 };

/* Maps a library result to the CLI's exit code. */
int vkvit_cli_exit_code(vkvit_result r);

int vkvit_cli_info(int argc, char **argv);
int vkvit_cli_bench(int argc, char **argv);
int vkvit_cli_inspect(int argc, char **argv);
int vkvit_cli_run(int argc, char **argv);

#endif
