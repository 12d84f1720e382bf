// SPDX-License-Identifier: Apache-2.0
/* The C reader's verdict on each file named on the command line, one line per file, for
 * tests/format/test_reader_agreement.py (which compares them with tools/vkvit_file.py's):
 *
 *     <st> <model> <sentence>
 *
 * <st> is 0 when the safetensors layer accepts the file (vkvit__safetensors_parse) and 2 when it refuses it; <model> the
 * same for the whole model file (vkvit__model_file_open: safetensors + vkvit entry + tensor table, what
 * `vkvit inspect` and vkvit_model_create read). The sentence is the first refusal's, or "ok". Exit status 0 unless
 * a file could not be read at all (then 1). */
#include "model/model_file.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int status = 0;
    for (int i = 1; i < argc; i++) {
        uint8_t *data = NULL;
        size_t size = 0;
        if (vkvit__read_file(argv[i], (size_t)VKVIT_MODEL_MAX_FILE, &data, &size) != VKVIT_OK) {
            printf("2 2 %s\n", vkvit_last_error());
            status = 1;
            continue;
        }
        vkvit__safetensors st;
        vkvit_result rs = vkvit__safetensors_parse(data, size, argv[i], &st);
        char sentence[1024];
        snprintf(sentence, sizeof sentence, "%s", rs == VKVIT_OK ? "ok" : vkvit_last_error());
        if (rs == VKVIT_OK) vkvit__safetensors_free(&st);
        free(data);
        vkvit__model_file mf;
        vkvit_result rm = vkvit__model_file_open(argv[i], &mf);
        if (rm == VKVIT_OK) vkvit__model_file_close(&mf);
        else if (rs == VKVIT_OK) snprintf(sentence, sizeof sentence, "%s", vkvit_last_error());
        printf("%d %d %s\n", rs == VKVIT_OK ? 0 : 2, rm == VKVIT_OK ? 0 : 2, sentence);
    }
    return status;
}
