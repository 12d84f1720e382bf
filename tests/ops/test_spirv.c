// SPDX-License-Identifier: Apache-2.0
/* Every embedded SPIR-V module is valid for Vulkan 1.1 (spirv-val), and every module the table names exists
 * and is non-empty, with a push-constant block the library can size. Runs spirv-val on the exact words the library
 * embeds. No GPU needed. The spirv-opt unrolled CPU GEMM variants have at most 3 loops left. The KHR cooperative-matrix kernels (builds with glslang >= 13) are validated only by a
 * spirv-val that knows SPV_KHR_cooperative_matrix (SPIRV_VAL_KHR, cmake/coopmat.cmake); with an older one they
 * are listed as skipped. */
#include <string.h>

#include "test_util.h"
#include "vk/spirv_limits.h"

#include <unistd.h>

/* The number of OpLoopMerge instructions (structured loops) in a module. */
static uint32_t count_loops(const vkvit_spirv *s) {
    uint32_t loops = 0;
    for (uint32_t at = 5; at < s->n_words;) {
        const uint32_t word_count = s->words[at] >> 16, opcode = s->words[at] & 0xffffu;
        if (word_count == 0) break; /* malformed: spirv-val reports it below */
        loops += opcode == 246u;    /* OpLoopMerge */
        at += word_count;
    }
    return loops;
}

int main(void) {
    const char *val = SPIRV_VAL;
    if (!val[0] || access(val, X_OK) != 0) {
        fprintf(stderr, "SKIP: spirv-val not found (Debian package spirv-tools)\n");
        return 77;
    }
    char dir[] = "/tmp/vkvit-spirv-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    for (int i = 0; i < VKVIT_SHADER_COUNT; i++) {
        const vkvit_spirv *s = &vkvit_spirv_table[i];
        CHECK(s->n_words > 5 && s->words[0] == 0x07230203u, "%s: not a SPIR-V module", s->name);
        /* Every kernel's push-constant block (none: 0 bytes, the pre-processing kernels read a parameter buffer) is
         * one the library can size (vkvit__kernel_create checks the C mirrors against it; an unsized block would
         * silently skip that check). */
        const uint32_t push = vkvit__shader_push_size((vkvit_shader_id)i);
        CHECK(push != VKVIT_PUSH_UNSIZED && push % 4 == 0 && push <= VKVIT_MAX_PUSH,
              "%s: push-constant block of %u bytes", s->name, push);
        /* Every module's workgroup size, shared memory and storage buffers are read (with its default spec
         * constants), so that kernel creation's limit check covers every kernel. */
        vkvit__footprint fp;
        const bool read = vkvit__shader_footprint((vkvit_shader_id)i, NULL, 0, &fp);
        CHECK(read && fp.invocations >= 1, "%s: footprint not read", s->name);
        if (read)
            printf("footprint %-34s %4llu invocations (%u x %u x %u), %6llu shared bytes, %u storage buffers\n",
                   s->name, (unsigned long long)fp.invocations, fp.local_size[0], fp.local_size[1], fp.local_size[2],
                   (unsigned long long)fp.shared_bytes, fp.storage_buffers);
        /* The build-time unrolled CPU GEMM variants (shaders/variants.cmake, UNROLL) came out of spirv-opt with only
         * their row, K-chunk and epilogue loops left (a spirv-opt that stopped unrolling would ship modules as slow to
         * create as the generic one, which keeps every loop); the generic module is the control. */
        const uint32_t loops = count_loops(s);
        CHECK(!strstr(s->name, "texel_t8") || loops <= 3, "%s: %u loops left after spirv-opt's unrolling", s->name,
              loops);
        CHECK(strcmp(s->name, "gemm_cpu_f32_f32_texel") != 0 || loops > 10, "%s: only %u loops", s->name, loops);
        if ((strstr(s->name, "coopmat_khr") || strstr(s->name, "coopmat2")) && !SPIRV_VAL_KHR) {
            printf("spirv-val %-28s SKIPPED (this spirv-val predates SPV_KHR_cooperative_matrix)\n", s->name);
            continue;
        }
        char path[512], cmd[1024];
        snprintf(path, sizeof path, "%s/%s.spv", dir, s->name);
        FILE *f = fopen(path, "wb");
        if (!f) {
            perror(path);
            return 1;
        }
        fwrite(s->words, 4, s->n_words, f);
        fclose(f);
        /* each module against the environment it was compiled for: SPIR-V 1.6 (the cooperative-matrix-2 GEMM,
         * TARGET_ENV vulkan1.3 in shaders/variants.cmake) is Vulkan 1.3's, the rest SPIR-V 1.3 (vulkan1.1) */
        const bool spirv16 = s->n_words > 1 && s->words[1] >= 0x00010600u;
        snprintf(cmd, sizeof cmd, "'%s' --target-env %s '%s'", val, spirv16 ? "vulkan1.3" : "vulkan1.1", path);
        int rc = system(cmd);
        printf("spirv-val %-28s %s\n", s->name, rc == 0 ? "ok" : "INVALID");
        CHECK(rc == 0, "%s: spirv-val failed", s->name);
        remove(path);
    }
    rmdir(dir);
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
