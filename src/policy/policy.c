// SPDX-License-Identifier: Apache-2.0
/* The kernel policy of a ctx (policy.h): facts + environment + request -> choices. */
#include "policy/policy.h"
#include "policy/profiles.h"

#include <stdio.h>
#include <string.h>

/* The NV kernel: built (glslang compiled it), its feature usable, its shape listed and 32-wide subgroups (one warp =
 * one subgroup, as tested on the H100). */
static bool nv_kernel_runs(const vkvit__caps *f) {
    return VKVIT_HAVE_NV_COOPMAT && f->coopmat_nv_usable && f->coopmat_nv_f16_16x16x16 && f->subgroup_size == 32;
}

/* The shapes gemm_coopmat.comp has fragments for, best first (more products per fragment load), with the subgroup
 * size each needs. Intel's M = 8 shapes run at the width of their DPAS instructions: 8 x 8 x 16 at SIMD8 (Xe-HPG),
 * 8 x 16 x 16 at SIMD16 (Xe2), as Mesa ANV compiles them (src/intel/dev/intel_device_info.c lists each generation's
 * shapes). 8 x 8 x 8 only at subgroups of 8: Mesa 26.1's lavapipe lists it at every LP_NATIVE_VECTOR_WIDTH, but its
 * lowering takes a matrix side equal to the subgroup size, and at 16 lanes its compiler crashes on them. */
static const struct {
    uint32_t shape, m, n, k, lanes;
} k_shapes[] = {
    {VKVIT_COOPMAT_SHAPE_16X16X16, 16, 16, 16, 0},
    {VKVIT_COOPMAT_SHAPE_8X16X16, 8, 16, 16, 16},
    {VKVIT_COOPMAT_SHAPE_8X8X16, 8, 8, 16, 8},
    {VKVIT_COOPMAT_SHAPE_8X8X8, 8, 8, 8, 8},
};

bool vkvit__coopmat_shape_dims(uint32_t shape, uint32_t *m, uint32_t *n, uint32_t *k, uint32_t *lanes) {
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(k_shapes); i++)
        if (k_shapes[i].shape == shape) {
            *m = k_shapes[i].m, *n = k_shapes[i].n, *k = k_shapes[i].k, *lanes = k_shapes[i].lanes;
            return true;
        }
    return false;
}

/* The warp (subgroup size) of the hardware kernels at a shape, 0 where none fits: the size the shape needs, requested
 * through size control or the default; for 16 x 16 x 16 32 where size control offers it, else the default. A warp is
 * 4 to 64 lanes that divide the tiles' 64 rows of lanes and the fragment's FM x FN elements (the epilogue's walk). */
static uint32_t hw_warp(const vkvit__caps *f, uint32_t shape) {
    uint32_t m, n, k, lanes;
    if (!vkvit__coopmat_shape_dims(shape, &m, &n, &k, &lanes)) return 0;
    const bool sized = f->subgroup_size_control;
    uint32_t warp;
    if (lanes)
        warp = sized && f->subgroup_size_min <= lanes && f->subgroup_size_max >= lanes ? lanes
               : f->subgroup_size == lanes                                              ? lanes
                                                                                        : 0;
    else
        warp = sized && f->subgroup_size_min <= 32 && f->subgroup_size_max >= 32 ? 32 : f->subgroup_size;
    return warp >= 4 && warp <= 64 && 64 % warp == 0 && (m * n) % warp == 0 ? warp : 0;
}

/* The best shape of `listed` the hardware kernels can run on this device (a warp fits), 0 where none. */
static uint32_t hw_shape(const vkvit__caps *f, uint32_t listed) {
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(k_shapes); i++)
        if ((listed & k_shapes[i].shape) && hw_warp(f, k_shapes[i].shape)) return k_shapes[i].shape;
    return 0;
}

/* The KHR kernel: built, its feature usable, and a listed shape it can run (hw_shape). Its warp is one subgroup of
 * the size hw_warp gives (gemm_coopmat.comp's WARP): 32 on NVIDIA and AMD's wave32, 8 or 16 on Intel, 8 on
 * lavapipe. */
static bool khr_kernel_runs(const vkvit__caps *f) {
    return VKVIT_HAVE_KHR_COOPMAT && f->coopmat_khr_usable && !f->khr_layer_too_old &&
           hw_shape(f, f->coopmat_khr_shapes) != 0;
}

/* The emulated kernel's shape: the best it implements that the device profile lists (any without a profile). */
static uint32_t emulated_shape(const vkvit__env *env) {
    const vkvit__device_profile *profile = vkvit__profile_find(env->device_profile);
    const uint32_t listed = VKVIT_COOPMAT_EMULATED_SHAPES & (profile ? profile->coopmat_shapes : ~0u);
    for (size_t i = 0; i < VKVIT_ARRAY_LEN(k_shapes); i++)
        if (listed & k_shapes[i].shape) return k_shapes[i].shape;
    return 0;
}

/* The NV cooperative-matrix-2 kernel (gemm_coopmat2.comp): built (glslang compiled GL_NV_cooperative_matrix2),
 * the device's tensor addressing, flexible dimensions and per-element operations with KHR's feature usable
 * (coopmat2_tensor), and subgroups of 4 to 64 (a warp is one subgroup, four per workgroup). Mesa 26.1's lavapipe
 * lists the extension without tensor addressing: it never runs there. */
static bool nv2_kernel_runs(const vkvit__caps *f) {
    const uint32_t sg = f->subgroup_size;
    return VKVIT_HAVE_NV_COOPMAT2 && f->coopmat2_tensor && !f->khr_layer_too_old && sg >= 4 && sg <= 64;
}

/* The cooperative-matrix kernel of fp16-math GEMMs: NV's where it runs (unless VKVIT_COOPMAT_KHR=1 and KHR's runs
 * too), else KHR's, else on request (VKVIT_COOPMAT_EMULATE=1) the emulated one on any device with fp16 math; none
 * without fp16 math, with VKVIT_DISABLE_COOPMAT=1, or below the 64 tile's shared memory. */
static vkvit__coopmat_kernel coopmat_choice(const vkvit__caps *f, const vkvit__env *env, bool fp16_math) {
    if (!fp16_math || env->disable_coopmat || f->max_shared_memory < VKVIT_COOPMAT_SHARED_BYTES)
        return VKVIT_COOPMAT_NONE;
    if (env->coopmat_nv2 && nv2_kernel_runs(f)) return VKVIT_COOPMAT_NV2;
    const bool nv = nv_kernel_runs(f), khr = khr_kernel_runs(f);
    if (nv && !(khr && env->coopmat_khr)) return VKVIT_COOPMAT_NV;
    if (khr) return VKVIT_COOPMAT_KHR;
    return env->coopmat_emulate && emulated_shape(env) ? VKVIT_COOPMAT_EMULATED : VKVIT_COOPMAT_NONE;
}

void vkvit__policy_choose(const vkvit__caps *f, const vkvit__env *env, vkvit__policy_request req, vkvit__policy *p) {
    memset(p, 0, sizeof *p);
    const vkvit__device_profile *profile = vkvit__profile_find(env->device_profile);
    const bool gpu_mode = profile && profile->gpu_kernels; /* a test profile: the kernels GPUs take */
    p->cpu_kernels = f->cpu_device && !gpu_mode;
    p->fp16 = f->fp16_storage && !env->disable_f16 && !req.disable_f16;
    p->fp16_math = p->fp16 && f->fp16_math;
    p->subgroup_reductions = f->subgroup_arithmetic && !env->disable_subgroup;
    p->texel_reads = p->cpu_kernels && f->texel_buffers && !env->disable_texel;
    p->subgroup_shuffles = f->subgroup_shuffle && f->subgroup_size_control && !env->disable_subgroup;
    p->gemm_cpu = f->subgroup_shuffle && (f->subgroup_size_control ? f->subgroup_size_min <= 8 && f->subgroup_size_max >= 8
                                                                   : f->subgroup_size == 8);
    p->gemm_cpu_unrolled = VKVIT_HAVE_GEMM_CPU_UNROLLED && p->texel_reads && !env->disable_unrolled;
    p->coopmat = coopmat_choice(f, env, p->fp16_math);
    p->coopmat_shape = p->coopmat == VKVIT_COOPMAT_KHR        ? hw_shape(f, f->coopmat_khr_shapes)
                       : p->coopmat == VKVIT_COOPMAT_EMULATED ? emulated_shape(env)
                                                              : VKVIT_COOPMAT_SHAPE_16X16X16;
    /* KHR and NV2 request their warp (32 where size control offers it, for 16x16x16); NV runs at the default. */
    p->coopmat_warp = p->coopmat == VKVIT_COOPMAT_KHR || p->coopmat == VKVIT_COOPMAT_NV2 ? hw_warp(f, p->coopmat_shape)
                                                                                       : f->subgroup_size;
    p->coopmat_tile = env->coopmat_tile;
    p->attention = env->attention;
    snprintf(p->attention_text, sizeof p->attention_text, "%s", env->attention_text);
    /* The KHR feature is asked for only where its kernel is the choice: validation layers older than the extension
     * (Debian 12's) flag its feature struct, and a device that runs NV's kernel then sees exactly the calls tested on
     * the H100. */
    p->enable_khr_coopmat = !req.adopted && (p->coopmat == VKVIT_COOPMAT_KHR || p->coopmat == VKVIT_COOPMAT_NV2);
    p->enable_nv2_coopmat = !req.adopted && p->coopmat == VKVIT_COOPMAT_NV2;
    p->enable_huge_pages = !req.adopted && f->cpu_device && f->huge_page_import && !env->disable_huge_pages;
    if (f->max_storage_buffers_per_stage < VKVIT_POLICY_KERNEL_BUFFERS) vkvit__policy_pack_bindings(p);
}

void vkvit__policy_pack_bindings(vkvit__policy *p) {
    p->packed_bindings = true;
    p->gemm_cpu = p->gemm_cpu_unrolled = false; /* the CPU GEMM has no packed variant: the shared-memory one runs */
    p->coopmat = VKVIT_COOPMAT_NONE;            /* nor have the cooperative-matrix kernels (6 storage buffers) */
    p->subgroup_shuffles = false;               /* nor the fused attention's row split over lanes */
    p->enable_khr_coopmat = false;
}

/* Appends ", text" (or "text" to an empty list) to a comma-separated list of `cap` bytes, truncating. */
static void add(char *list, size_t cap, const char *text) {
    const size_t n = strlen(list);
    if (n + 1 < cap) snprintf(list + n, cap - n, "%s%s", n ? ", " : "", text);
}

void vkvit__policy_describe(const vkvit__policy *p, const vkvit__caps *f, const vkvit__env *env,
                            vkvit__policy_request req, char *out, size_t cap) {
    out[0] = '\0';
    if (env->device_profile[0]) {
        char line[160];
        snprintf(line, sizeof line, "device profile %s (a test: limits and features clamped%s)", env->device_profile,
                 p->cpu_kernels || !f->cpu_device ? "" : ", GPU kernels");
        add(out, cap, line);
    }
    if (p->cpu_kernels) add(out, cap, "cpu-device (large register tiles, fp32 kernels)");
    if (p->packed_bindings) {
        char line[200];
        snprintf(line, sizeof line, "packed-bindings (%u storage buffers per stage: kernels of more tensors bind the "
                 "arena and the weights; no CPU or cooperative-matrix GEMM)", f->max_storage_buffers_per_stage);
        add(out, cap, line);
    }
    if (p->cpu_kernels && !p->gemm_cpu && !p->packed_bindings) {
        char line[160];
        snprintf(line, sizeof line, "cpu-gemm-off (subgroups of %u, the CPU GEMM needs 8: GEMMs take the "
                 "shared-memory kernel)", f->subgroup_size);
        add(out, cap, line);
    }
    if (f->no_f16_arithmetic_quirk) add(out, cap, "no-fp16-arithmetic");
    if (env->disable_f16 || req.disable_f16) add(out, cap, "fp16 disabled by request");
    if (env->disable_subgroup) add(out, cap, "subgroup reductions disabled by request (VKVIT_DISABLE_SUBGROUP)");
    else if (!f->subgroup_arithmetic) add(out, cap, "no subgroup arithmetic (shared-memory reductions)");
    if (env->disable_texel && f->cpu_device)
        add(out, cap, "texel-buffer operand reads disabled by request (VKVIT_DISABLE_TEXEL)");
    /* The spirv-opt unrolled CPU GEMM variants (shaders/variants.cmake) serve the texel kernels: say why they do not. */
    if (p->texel_reads && env->disable_unrolled)
        add(out, cap, "unrolled CPU GEMM variants disabled by request (VKVIT_DISABLE_UNROLLED)");
    else if (p->texel_reads && !VKVIT_HAVE_GEMM_CPU_UNROLLED)
        add(out, cap, "no unrolled CPU GEMM variants (built without a working spirv-opt or with "
            "VKVIT_UNROLL_SHADERS=OFF: 2-3x slower GEMM pipeline creation)");
    if (env->disable_huge_pages && f->cpu_device)
        add(out, cap, "huge-page buffer memory disabled by request (VKVIT_DISABLE_HUGE_PAGES)");
    if (env->disable_coopmat) add(out, cap, "cooperative matrix disabled by request (VKVIT_DISABLE_COOPMAT)");
    else if (f->cooperative_matrix_nv && !VKVIT_HAVE_NV_COOPMAT && !(f->cooperative_matrix_khr && VKVIT_HAVE_KHR_COOPMAT))
        add(out, cap, "cooperative matrix unused (built without the NV kernel: glslang lacked GL_NV_cooperative_matrix)");
    else if (f->cooperative_matrix_khr && !f->cooperative_matrix_nv && !VKVIT_HAVE_KHR_COOPMAT)
        add(out, cap, "cooperative matrix unused (VK_KHR_cooperative_matrix: built without the KHR kernel, glslang < 13)");
    if (p->coopmat == VKVIT_COOPMAT_EMULATED)
        add(out, cap, "cooperative matrix emulated (VKVIT_COOPMAT_EMULATE, a test path)");
    if (p->coopmat == VKVIT_COOPMAT_NV2)
        add(out, cap, "cooperative matrix 2 (VKVIT_COOPMAT_NV2: the tensor-layout GEMM, not yet timed on a GPU)");
    else if (env->coopmat_nv2 && !env->disable_coopmat)
        add(out, cap, !VKVIT_HAVE_NV_COOPMAT2 ? "VKVIT_COOPMAT_NV2 unused: built without the kernel (glslang lacked "
                                                "GL_NV_cooperative_matrix2)"
                      : !f->cooperative_matrix2_nv ? "VKVIT_COOPMAT_NV2 unused: no VK_NV_cooperative_matrix2"
                      : "VKVIT_COOPMAT_NV2 unused: VK_NV_cooperative_matrix2 without tensor addressing, flexible "
                        "dimensions or per-element operations");
    if (VKVIT_HAVE_KHR_COOPMAT && f->khr_layer_too_old && f->cooperative_matrix_khr && !nv_kernel_runs(f))
        add(out, cap, "KHR cooperative-matrix kernel off: the validation layer predates VK_KHR_cooperative_matrix "
            "and would drop its feature from the device");
}

void vkvit__policy_to_info(const vkvit__policy *p, vkvit_device_info *info) {
    info->fp16_in_use = p->fp16;
    info->subgroup_in_use = p->subgroup_reductions;
    info->texel_reads_in_use = p->texel_reads;
    info->cooperative_matrix_in_use = p->coopmat != VKVIT_COOPMAT_NONE;
    info->cooperative_matrix_khr_kernel = p->coopmat == VKVIT_COOPMAT_KHR;
}
