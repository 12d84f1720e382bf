// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for the model-file reader: safetensors framing -> JSON header -> `vkvit` config -> tensor table,
 * from memory through vkvit__model_file_load, the entry vkvit_model_create uses for vkvit_model_desc.data (a file
 * path goes through the same parser after mapping). Every input is tried twice: as a whole model file, and as a
 * bare `vkvit` JSON
 * document for the config parser (the seeds under tests/fuzz/corpus/ hold both kinds). On success the counts are
 * computed and every tensor is converted to fp32, so a bad offset that slipped through would be read by ASan.
 *
 * Build and run: tools/run_fuzz.sh SECONDS (or cmake -DVKVIT_FUZZ=ON with clang). */
#include "model/model_file.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vkvit__model_file mf;
    if (vkvit__model_file_load(NULL, size ? (const void *)data : (const void *)"", size, "fuzz", &mf) == VKVIT_OK) {
        VKVIT_ASSERT(vkvit__model_param_count(&mf.cfg) > 0);
        (void)vkvit__model_flops(&mf.cfg);
        for (uint32_t i = 0; i < mf.st.n_tensors; i++) {
            const vkvit__st_tensor *t = &mf.st.tensors[i];
            VKVIT_ASSERT(t->offset + t->size <= size);
            float *buf = malloc((t->numel ? t->numel : 1) * sizeof(float)); /* numel <= size / 2 */
            if (buf) vkvit__model_file_tensor_f32(&mf, t, buf, (size_t)t->numel);
            free(buf);
        }
        vkvit__model_file_close(&mf);
    }

    vkvit__model_config cfg;
    if (vkvit__model_config_parse((const char *)data, size, "fuzz", &cfg) == VKVIT_OK) {
        (void)vkvit__model_param_count(&cfg);
        (void)vkvit__model_flops(&cfg);
        VKVIT_ASSERT(cfg.n_labels == 0 || cfg.n_labels == vkvit__model_num_classes(&cfg));
        vkvit__model_config_free(&cfg);
    }
    return 0;
}
