/* The device-capability struct (vkvit__caps, src/vk/vk.h): filled once at ctx creation, mirrored in
 * vkvit_device_info, and the environment overrides VKVIT_DISABLE_SUBGROUP / VKVIT_DISABLE_COOPMAT /
 * VKVIT_DISABLE_F16 switch the matching feature off and say so in the workarounds string. */
#include "test_util.h"

#include <stdlib.h>

static void caps_mirror_device_info(void) {
    unsetenv("VKVIT_DISABLE_SUBGROUP");
    unsetenv("VKVIT_DISABLE_COOPMAT");
    unsetenv("VKVIT_DISABLE_F16");
    vkvit_ctx *ctx = vt_ctx();
    const vkvit__caps *c = &ctx->caps;
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    CHECK(c->cpu_device == ((ctx->quirks & VKVIT_QUIRK_CPU_DEVICE) != 0), "cpu_device %d, quirks 0x%x", c->cpu_device,
          ctx->quirks);
    CHECK(c->subgroup_arithmetic == (info.subgroup_arithmetic != 0), "subgroup_arithmetic");
    CHECK(c->subgroup_in_use == c->subgroup_arithmetic && info.subgroup_in_use == c->subgroup_in_use,
          "subgroup_in_use %d (info %d) with arithmetic %d and no override", c->subgroup_in_use, info.subgroup_in_use,
          c->subgroup_arithmetic);
    CHECK(c->fp16_in_use == (info.fp16_in_use != 0) && c->fp16_storage == (info.fp16_storage != 0) &&
              c->fp16_math == (info.fp16_arithmetic != 0),
          "fp16 caps disagree with the device info");
    CHECK(c->subgroup_size == info.subgroup_size && c->max_shared_memory == info.max_shared_memory &&
              c->max_workgroup_invocations == info.max_workgroup_invocations &&
              c->max_storage_buffer_range == info.max_storage_buffer_range,
          "limits disagree with the device info");
    CHECK(c->cooperative_matrix_nv == (info.cooperative_matrix_nv != 0) &&
              c->cooperative_matrix_khr == (info.cooperative_matrix != 0),
          "cooperative-matrix presence disagrees with the device info");
    CHECK(!c->cooperative_matrix_in_use && !info.cooperative_matrix_in_use, "no cooperative-matrix kernel exists");
    CHECK(!c->disabled_subgroup && !c->disabled_coopmat && !c->disabled_f16, "nothing was disabled");
    CHECK(!strstr(info.workarounds, "by request"), "workarounds: %s", info.workarounds);
    printf("device %s: subgroup %u, arithmetic %d, in use %d; coopmat nv %d khr %d; workarounds: %s\n", info.name,
           c->subgroup_size, c->subgroup_arithmetic, c->subgroup_in_use, c->cooperative_matrix_nv,
           c->cooperative_matrix_khr, info.workarounds);
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "validation messages: %s", ctx->validation_log[0]);
    vkvit_ctx_destroy(ctx);
}

static void overrides_switch_features_off(void) {
    setenv("VKVIT_DISABLE_SUBGROUP", "1", 1);
    setenv("VKVIT_DISABLE_COOPMAT", "1", 1);
    setenv("VKVIT_DISABLE_F16", "1", 1);
    vkvit_ctx *ctx = vt_ctx();
    const vkvit__caps *c = &ctx->caps;
    vkvit_device_info info;
    MUST(vkvit_ctx_device_info(ctx, &info));
    CHECK(c->disabled_subgroup && !c->subgroup_in_use && !info.subgroup_in_use, "VKVIT_DISABLE_SUBGROUP=1 ignored");
    CHECK(c->disabled_coopmat && !c->cooperative_matrix_in_use && !info.cooperative_matrix_in_use,
          "VKVIT_DISABLE_COOPMAT=1 ignored");
    CHECK(c->disabled_f16 && !c->fp16_in_use && !info.fp16_in_use, "VKVIT_DISABLE_F16=1 ignored");
    CHECK(strstr(info.workarounds, "subgroup reductions disabled by request") &&
              strstr(info.workarounds, "cooperative matrix disabled by request") &&
              strstr(info.workarounds, "fp16 disabled by request"),
          "workarounds do not say why: %s", info.workarounds);
    /* The device's own support is still reported as it is. */
    CHECK(c->subgroup_arithmetic == (info.subgroup_arithmetic != 0), "subgroup_arithmetic changed by the override");
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "validation messages: %s", ctx->validation_log[0]);
    vkvit_ctx_destroy(ctx);

    /* vkvit_enumerate_devices (`vkvit info`) shows the same. */
    vkvit_device_info list[8];
    uint32_t n = 0;
    MUST(vkvit_enumerate_devices(list, 8, &n));
    for (uint32_t i = 0; i < n && i < 8; i++)
        CHECK(!list[i].subgroup_in_use && !list[i].cooperative_matrix_in_use &&
                  strstr(list[i].workarounds, "subgroup reductions disabled by request"),
              "device %u (%s): the override is not reflected: %s", i, list[i].name, list[i].workarounds);

    /* "0" means not disabled. */
    setenv("VKVIT_DISABLE_SUBGROUP", "0", 1);
    ctx = vt_ctx();
    CHECK(!ctx->caps.disabled_subgroup && ctx->caps.subgroup_in_use == ctx->caps.subgroup_arithmetic,
          "VKVIT_DISABLE_SUBGROUP=0 disabled subgroups");
    CHECK(vkvit_ctx_validation_messages(ctx, 0) == 0, "validation messages: %s", ctx->validation_log[0]);
    vkvit_ctx_destroy(ctx);
    unsetenv("VKVIT_DISABLE_SUBGROUP");
    unsetenv("VKVIT_DISABLE_COOPMAT");
    unsetenv("VKVIT_DISABLE_F16");
}

int main(void) {
    caps_mirror_device_info();
    overrides_switch_features_off();
    return vt_finish(NULL);
}
