// SPDX-License-Identifier: Apache-2.0
/* The steps every command that opens a model shares: the model path (given or bundled), sniff + ctx + model, and
 * the one way a failure is printed. */
#include "cli.h"

#include <stdio.h>

int cli_fail(const char *cmd, vkvit_result r) {
    cli_print_error(cmd, cli_last_error());
    return vkvit_cli_exit_code(r);
}

const char *cli_model_path(const char *cmd, const char *given, char *buf, size_t cap) {
    if (given) return given;
    if (cli_find_bundled_model(CLI_BUNDLED_MODEL, buf, cap)) return buf;
    fprintf(stderr, "vkvit %s: no --model given and the bundled model %s is not installed (looked at %s)\n", cmd,
            CLI_BUNDLED_MODEL, buf);
    return NULL;
}

vkvit_result cli_open_model(const vkvit_ctx_desc *cd, const char *path, vkvit_ctx **ctx, vkvit_model **model) {
    vkvit_result r = cli_sniff_model(path);
    if (r == VKVIT_OK) r = vkvit_ctx_create(cd, ctx);
    if (r == VKVIT_OK) r = vkvit_model_create(*ctx, &(vkvit_model_desc){.path = path}, model);
    return r;
}
