// SPDX-License-Identifier: Apache-2.0
/* Kernels (embedded SPIR-V -> compute pipeline with specialization constants), descriptor sets, and the on-disk
 * VkPipelineCache. */
#include "vk/descriptors.h"
#include "vk/spirv_limits.h"
#include "vk/vk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------------------
 * Kernels
 * ------------------------------------------------------------------------------------------------------------ */

/* Bytes of the push-constant block, read from the module: max over its members of (Offset + size); 0 when there is
 * no block (the parameters come from a buffer, e.g. pre-processing), VKVIT_PUSH_UNSIZED for a member type this
 * reader does not size (only 32-bit scalars, vectors of them and arrays of those of a constant length are sized,
 * which is what the shaders' `p` blocks hold: the array is the packed variants' element bases, shaders/packed.glsl,
 * whose std430 stride is the element's size). */
uint32_t vkvit__shader_push_size(vkvit_shader_id shader) {
    enum { OP_TYPE_INT = 21, OP_TYPE_FLOAT = 22, OP_TYPE_VECTOR = 23, OP_TYPE_ARRAY = 28, OP_TYPE_STRUCT = 30,
           OP_TYPE_POINTER = 32, OP_CONSTANT = 43, OP_VARIABLE = 59, OP_MEMBER_DECORATE = 72, SC_PUSH_CONSTANT = 9,
           DEC_OFFSET = 35 };
    if ((unsigned)shader >= VKVIT_SHADER_COUNT) return VKVIT_PUSH_UNSIZED;
    const uint32_t *w = vkvit_spirv_table[shader].words, n = vkvit_spirv_table[shader].n_words;
    if (n < 5) return VKVIT_PUSH_UNSIZED;
    const uint32_t bound = w[3];
    /* per id: type size, pointee, struct position, 32-bit constant value + 1 */
    uint32_t *size = calloc((size_t)bound * 4, sizeof *size);
    if (!size) return VKVIT_PUSH_UNSIZED;
    uint32_t *pointee = size + bound, *struct_at = size + 2 * (size_t)bound, *constant = size + 3 * (size_t)bound;
    uint32_t push_type = 0, bytes = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 5; i < n;) {
            const uint32_t len = w[i] >> 16, op = w[i] & 0xffff;
            if (len == 0 || i + len > n) break;
            const uint32_t *a = w + i + 1;
            if (pass == 0) {
                const bool id_ok = len >= 2 && a[0] < bound;
                if ((op == OP_TYPE_INT || op == OP_TYPE_FLOAT) && len >= 3 && id_ok && a[1] == 32)
                    size[a[0]] = 4;
                else if (op == OP_TYPE_VECTOR && len >= 4 && id_ok && a[1] < bound)
                    size[a[0]] = size[a[1]] * a[2];
                else if (op == OP_CONSTANT && len == 4 && a[1] < bound && a[0] < bound && size[a[0]] == 4 &&
                         a[2] < 0x10000u)
                    constant[a[1]] = a[2] + 1;
                else if (op == OP_TYPE_ARRAY && len >= 4 && id_ok && a[1] < bound && a[2] < bound && constant[a[2]])
                    size[a[0]] = size[a[1]] * (constant[a[2]] - 1);
                else if (op == OP_TYPE_STRUCT && id_ok)
                    struct_at[a[0]] = i;
                else if (op == OP_TYPE_POINTER && len >= 4 && id_ok && a[1] == SC_PUSH_CONSTANT)
                    pointee[a[0]] = a[2];
                else if (op == OP_VARIABLE && len >= 4 && id_ok && a[2] == SC_PUSH_CONSTANT)
                    push_type = pointee[a[0]];
            } else if (op == OP_MEMBER_DECORATE && len >= 5 && a[0] == push_type && a[2] == DEC_OFFSET) {
                const uint32_t at = push_type < bound ? struct_at[push_type] : 0;
                const uint32_t member_type = at && a[1] + 2 < (w[at] >> 16) ? w[at + 2 + a[1]] : 0;
                const uint32_t msize = member_type < bound ? size[member_type] : 0;
                if (!msize) {
                    bytes = VKVIT_PUSH_UNSIZED;
                    break;
                }
                if (a[3] + msize > bytes) bytes = a[3] + msize;
            }
            i += len;
        }
        if (!push_type) break;
    }
    free(size);
    return bytes;
}

vkvit_result vkvit__kernel_create(vkvit_ctx *ctx, const vkvit__kernel_desc *desc, vkvit__kernel *out) {
    vkvit_result res = VKVIT_OK;
    memset(out, 0, sizeof *out);
    VkShaderModule module = VK_NULL_HANDLE;
    /* a shared kernel has no node of its own: its shader names it */
    const char *label = desc->label                                  ? desc->label
                        : (unsigned)desc->shader < VKVIT_SHADER_COUNT ? vkvit_spirv_table[desc->shader].name
                                                                      : "?";
    if ((unsigned)desc->shader >= VKVIT_SHADER_COUNT || desc->n_buffers > VKVIT_MAX_BINDINGS ||
        desc->push_size > VKVIT_MAX_PUSH || desc->push_size % 4 || desc->n_spec > VKVIT_MAX_SPEC)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "kernel '%s': bad desc (shader %d, %u buffers, %u push bytes, %u spec constants)", label,
                            (int)desc->shader, desc->n_buffers, desc->push_size, desc->n_spec);
    const vkvit_spirv *spv = &vkvit_spirv_table[desc->shader];
    /* The C mirror of the shader's push-constant block must have the block's size (a missing or extra member; 0
     * for a shader without a block). */
    const uint32_t block = vkvit__shader_push_size(desc->shader);
    if (block != VKVIT_PUSH_UNSIZED && block != desc->push_size)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "kernel '%s': the push-constant block of shader %s is %u bytes, its C mirror %u", label,
                            spv->name, block, desc->push_size);

    /* What the specialised shader asks of the device, against the device's limits (after a test profile's clamp):
     * Vulkan guarantees only 128 invocations, 16 KiB of shared memory and 4 storage buffers per stage. */
    vkvit__footprint fp;
    const bool read_fp = vkvit__shader_footprint(desc->shader, desc->spec, desc->n_spec, &fp);
    if (read_fp) {
        const vkvit__caps *c = &ctx->caps;
        const char *what = NULL;
        uint64_t need = 0, limit = 0;
        if (fp.invocations > c->max_workgroup_invocations)
            what = "invocations per workgroup (maxComputeWorkGroupInvocations)", need = fp.invocations,
            limit = c->max_workgroup_invocations;
        for (int d = 0; d < 3 && !what; d++)
            if (fp.local_size[d] > c->max_workgroup_size[d])
                what = d == 0 ? "workgroup width (maxComputeWorkGroupSize[0])"
                       : d == 1 ? "workgroup height (maxComputeWorkGroupSize[1])"
                                : "workgroup depth (maxComputeWorkGroupSize[2])",
                need = fp.local_size[d], limit = c->max_workgroup_size[d];
        if (!what && fp.shared_bytes > c->max_shared_memory)
            what = "bytes of shared memory (maxComputeSharedMemorySize)", need = fp.shared_bytes,
            limit = c->max_shared_memory;
        if (!what && fp.storage_buffers > c->max_storage_buffers_per_stage)
            what = "storage buffers (maxPerStageDescriptorStorageBuffers)", need = fp.storage_buffers,
            limit = c->max_storage_buffers_per_stage;
        if (what)
            return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "kernel '%s' (shader %s) needs %llu %s; device '%s' has %llu",
                                label, spv->name, (unsigned long long)need, what, ctx->info.name,
                                (unsigned long long)limit);
    }

    /* The subgroup contract (vk.h): full subgroups of the required size, checked against the device first. */
    const vkvit__caps *caps = &ctx->caps;
    if ((desc->full_subgroups || desc->subgroup_size) && !caps->subgroup_size_control)
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "kernel '%s' (shader %s) needs full subgroups%s; device '%s' has no "
                            "subgroup size control for compute", label, spv->name,
                            desc->subgroup_size ? " of a required size" : "", ctx->info.name);
    if (desc->subgroup_size && (desc->subgroup_size < caps->subgroup_size_min ||
                                desc->subgroup_size > caps->subgroup_size_max ||
                                (desc->subgroup_size & (desc->subgroup_size - 1))))
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "kernel '%s' (shader %s) needs subgroups of %u; device '%s' offers "
                            "%u to %u", label, spv->name, desc->subgroup_size, ctx->info.name, caps->subgroup_size_min,
                            caps->subgroup_size_max);
    const uint32_t full_unit = desc->subgroup_size ? desc->subgroup_size : caps->subgroup_size_max;
    if (desc->full_subgroups && read_fp && full_unit && fp.local_size[0] % full_unit)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s' (shader %s): full subgroups of %u need a "
                            "workgroup width that is a multiple of it, not %u", label, spv->name, full_unit,
                            fp.local_size[0]);

    /* A packed-bindings kernel's layout has its physical slots only: storage buffers, no texel or image binding. */
    const uint32_t n_layout = desc->packed_slots ? desc->packed_slots : desc->n_buffers;
    if (desc->packed_slots && (desc->packed_slots > desc->n_buffers || desc->sampled_images))
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s': %u packed slots for %u bindings%s", label,
                            desc->packed_slots, desc->n_buffers, desc->sampled_images ? " with sampled images" : "");
    for (uint32_t i = 0; desc->packed_slots && i < desc->n_buffers; i++)
        if (desc->texel_format[i] != VK_FORMAT_UNDEFINED)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s': a packed-bindings kernel has no texel "
                                "binding (binding %u)", label, i);
    VkDescriptorSetLayoutBinding bindings[VKVIT_MAX_BINDINGS];
    if (desc->sampled_images >> desc->n_buffers)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s': sampled-image bits 0x%x beyond its %u "
                            "bindings", label, desc->sampled_images, desc->n_buffers);
    for (uint32_t i = 0; i < n_layout; i++) {
        const VkFormat texel = desc->texel_format[i];
        const bool image = desc->sampled_images >> i & 1u;
        if (texel != VK_FORMAT_UNDEFINED && !vkvit__texel_bytes(texel))
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s': binding %u has texel format %d, not one "
                                "vkvit reads (RGBA32F, RGBA16F)", label, i, (int)texel);
        if (texel != VK_FORMAT_UNDEFINED && image)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "kernel '%s': binding %u is both a texel buffer and a "
                                "sampled image", label, i);
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = image   ? VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE
                              : texel ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                      : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    }
    VkDescriptorSetLayoutCreateInfo set_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = n_layout,
        .pBindings = bindings,
    };
    VK_TRY(ctx->vk.vkCreateDescriptorSetLayout(ctx->device, &set_info, NULL, &out->set_layout));
    VKVIT_COUNT(ctx, other_objects);

    VkPushConstantRange push = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = desc->push_size};
    VkPipelineLayoutCreateInfo layout_info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &out->set_layout,
        .pushConstantRangeCount = desc->push_size ? 1 : 0,
        .pPushConstantRanges = &push,
    };
    VK_TRY(ctx->vk.vkCreatePipelineLayout(ctx->device, &layout_info, NULL, &out->layout));
    VKVIT_COUNT(ctx, other_objects);

    VkShaderModuleCreateInfo module_info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = (size_t)spv->n_words * 4,
        .pCode = spv->words,
    };
    VK_TRY(ctx->vk.vkCreateShaderModule(ctx->device, &module_info, NULL, &module));
    VKVIT_COUNT(ctx, other_objects);

    VkSpecializationMapEntry entries[VKVIT_MAX_SPEC];
    for (uint32_t i = 0; i < desc->n_spec; i++)
        entries[i] = (VkSpecializationMapEntry){.constantID = i, .offset = i * 4, .size = 4};
    VkSpecializationInfo spec = {
        .mapEntryCount = desc->n_spec,
        .pMapEntries = entries,
        .dataSize = desc->n_spec * 4,
        .pData = desc->spec,
    };
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfoEXT required = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO_EXT,
        .requiredSubgroupSize = desc->subgroup_size,
    };
    VkComputePipelineCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .pNext = desc->subgroup_size ? &required : NULL,
            .flags = desc->full_subgroups ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT : 0,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = module,
            .pName = "main",
            .pSpecializationInfo = desc->n_spec ? &spec : NULL,
        },
        .layout = out->layout,
    };
    const uint64_t t0 = vkvit__now_ns();
    VK_TRY(ctx->vk.vkCreateComputePipelines(ctx->device, ctx->pipeline_cache, 1, &info, NULL, &out->pipeline));
    atomic_fetch_add(&ctx->pipeline_ns, vkvit__now_ns() - t0);
    VKVIT_COUNT(ctx, pipelines);
    ctx->vk.vkDestroyShaderModule(ctx->device, module, NULL);
    vkvit__set_object_name(ctx, VK_OBJECT_TYPE_PIPELINE, (uint64_t)out->pipeline, label);
    out->shader = desc->shader;
    out->n_buffers = n_layout;
    out->sampled_images = desc->sampled_images;
    out->push_size = desc->push_size;
    memcpy(out->texel_format, desc->texel_format, sizeof out->texel_format);
    return VKVIT_OK;
fail:
    if (module) ctx->vk.vkDestroyShaderModule(ctx->device, module, NULL);
    vkvit__kernel_destroy(ctx, out);
    return vkvit__error_prefix(res, "kernel '%s' (shader %s)", label, spv->name);
}

typedef struct kernel_batch {
    vkvit_ctx *ctx;
    const vkvit__kernel_desc *descs;
    vkvit__kernel *out;
    vkvit_result *results;
    char (*errors)[1024];                   /* the worker's error sentence (thread-local there) */
} kernel_batch;

static void create_one(void *user, uint32_t i) {
    kernel_batch *b = user;
    b->results[i] = vkvit__kernel_create(b->ctx, &b->descs[i], &b->out[i]);
    if (b->results[i] != VKVIT_OK) snprintf(b->errors[i], sizeof b->errors[i], "%s", vkvit_last_error());
}

vkvit_result vkvit__kernels_create(vkvit_ctx *ctx, const vkvit__kernel_desc *descs, uint32_t n, vkvit__kernel *out) {
    if (n == 0) return VKVIT_OK;
    kernel_batch b = {.ctx = ctx, .descs = descs, .out = out, .results = malloc(n * sizeof *b.results),
                      .errors = malloc(n * sizeof *b.errors)};
    if (!b.results || !b.errors) {
        free(b.results), free(b.errors);
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "creating %u pipelines: out of host memory", n);
    }
    vkvit__parallel_for(n, VKVIT_PIPELINE_THREADS, create_one, &b);
    vkvit_result res = VKVIT_OK;
    for (uint32_t i = 0; i < n && res == VKVIT_OK; i++)
        if (b.results[i] != VKVIT_OK) res = vkvit__error(b.results[i], "%s", b.errors[i]);
    if (res != VKVIT_OK)
        for (uint32_t i = 0; i < n; i++) vkvit__kernel_destroy(ctx, &out[i]); /* a failed one is already zero */
    free(b.results), free(b.errors);
    return res;
}

void vkvit__kernel_destroy(vkvit_ctx *ctx, vkvit__kernel *k) {
    if (k->pipeline) ctx->vk.vkDestroyPipeline(ctx->device, k->pipeline, NULL);
    if (k->layout) ctx->vk.vkDestroyPipelineLayout(ctx->device, k->layout, NULL);
    if (k->set_layout) ctx->vk.vkDestroyDescriptorSetLayout(ctx->device, k->set_layout, NULL);
    memset(k, 0, sizeof *k);
}

/* ------------------------------------------------------------------------------------------------------------
 * Kernels shared by the recordings of a ctx (vk.h, vkvit__kernels_acquire)
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct vkvit__shared_kernel {
    vkvit__kernel_desc variant;             /* the key (its label is ignored) */
    vkvit__kernel kernel;
    uint32_t refs;
} vkvit__shared_kernel;

/* The same variant: shader, the bindings' types and texel formats, push-constant size and specialization
 * constants. */
static bool same_variant(const vkvit__kernel_desc *a, const vkvit__kernel_desc *b) {
    if (a->shader != b->shader || a->n_buffers != b->n_buffers || a->push_size != b->push_size ||
        a->packed_slots != b->packed_slots ||
        a->n_spec != b->n_spec || a->sampled_images != b->sampled_images || a->n_buffers > VKVIT_MAX_BINDINGS ||
        a->n_spec > VKVIT_MAX_SPEC)
        return false;
    return memcmp(a->spec, b->spec, a->n_spec * sizeof a->spec[0]) == 0 &&
           memcmp(a->texel_format, b->texel_format, a->n_buffers * sizeof a->texel_format[0]) == 0;
}

/* The table's entry for desc's variant, or NULL; with ctx->kernel_lock held. */
static vkvit__shared_kernel *find_variant(vkvit_ctx *ctx, const vkvit__kernel_desc *desc) {
    for (uint32_t i = 0; i < ctx->n_shared_kernels; i++)
        if (same_variant(&ctx->shared_kernels[i].variant, desc)) return &ctx->shared_kernels[i];
    return NULL;
}

void vkvit__kernels_release(vkvit_ctx *ctx, vkvit__kernel *kernels, uint32_t n) {
    if (!n) return;
    vkvit__mutex_lock(ctx->kernel_lock);
    for (uint32_t i = 0; i < n; i++) {
        if (!kernels[i].pipeline) continue;
        uint32_t e = 0;
        while (e < ctx->n_shared_kernels && ctx->shared_kernels[e].kernel.pipeline != kernels[i].pipeline) e++;
        VKVIT_ASSERT(e < ctx->n_shared_kernels); /* every kernel given back was acquired */
        vkvit__shared_kernel *sk = &ctx->shared_kernels[e];
        if (--sk->refs == 0) {
            vkvit__kernel_destroy(ctx, &sk->kernel);
            ctx->shared_kernels[e] = ctx->shared_kernels[--ctx->n_shared_kernels];
        }
        memset(&kernels[i], 0, sizeof kernels[i]);
    }
    vkvit__mutex_unlock(ctx->kernel_lock);
}

vkvit_result vkvit__kernels_acquire(vkvit_ctx *ctx, const vkvit__kernel_desc *descs, uint32_t n, vkvit__kernel *out) {
    if (n == 0) return VKVIT_OK;
    memset(out, 0, n * sizeof *out);
    uint32_t *missing = malloc(n * sizeof *missing);      /* descs[] indices the table does not have */
    vkvit__kernel_desc *todo = malloc(n * sizeof *todo);   /* their descs, packed for vkvit__kernels_create */
    vkvit__kernel *made = calloc(n, sizeof *made);
    if (!missing || !todo || !made) {
        free(missing), free(todo), free(made);
        return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "acquiring %u pipelines: out of host memory", n);
    }
    uint32_t n_missing = 0;
    vkvit__mutex_lock(ctx->kernel_lock);
    for (uint32_t i = 0; i < n; i++) {
        vkvit__shared_kernel *sk = find_variant(ctx, &descs[i]);
        if (sk) {
            sk->refs++;
            out[i] = sk->kernel;
        } else {
            todo[n_missing] = descs[i];
            missing[n_missing++] = i;
        }
    }
    vkvit__mutex_unlock(ctx->kernel_lock);

    /* The missing variants, created without the lock (compiling takes the time), then entered; one another thread
     * entered meanwhile is used instead of ours, and a variant twice in descs[] is entered once. */
    vkvit_result res = vkvit__kernels_create(ctx, todo, n_missing, made);
    if (res == VKVIT_OK && n_missing) {
        vkvit__mutex_lock(ctx->kernel_lock);
        if (ctx->n_shared_kernels + n_missing > ctx->cap_shared_kernels) {
            const uint32_t cap = VKVIT_MAX(ctx->n_shared_kernels + n_missing, 2 * ctx->cap_shared_kernels);
            vkvit__shared_kernel *grown = realloc(ctx->shared_kernels, cap * sizeof *grown);
            if (grown) {
                ctx->shared_kernels = grown;
                ctx->cap_shared_kernels = cap;
            } else {
                res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "acquiring %u pipelines: out of host memory", n);
            }
        }
        for (uint32_t j = 0; j < n_missing && res == VKVIT_OK; j++) {
            vkvit__shared_kernel *sk = find_variant(ctx, &todo[j]);
            if (!sk) {
                sk = &ctx->shared_kernels[ctx->n_shared_kernels++];
                *sk = (vkvit__shared_kernel){.variant = todo[j], .kernel = made[j], .refs = 0};
                sk->variant.label = NULL;
                memset(&made[j], 0, sizeof made[j]); /* the table's now */
            }
            sk->refs++;
            out[missing[j]] = sk->kernel;
        }
        vkvit__mutex_unlock(ctx->kernel_lock);
    }
    for (uint32_t j = 0; j < n_missing; j++) vkvit__kernel_destroy(ctx, &made[j]); /* duplicates; zeroed: no-op */
    if (res != VKVIT_OK) vkvit__kernels_release(ctx, out, n);
    free(missing), free(todo), free(made);
    return res;
}

void vkvit__kernel_table_stats(vkvit_ctx *ctx, uint32_t *variants, uint32_t *references) {
    vkvit__mutex_lock(ctx->kernel_lock);
    uint32_t refs = 0;
    for (uint32_t i = 0; i < ctx->n_shared_kernels; i++) refs += ctx->shared_kernels[i].refs;
    *variants = ctx->n_shared_kernels;
    *references = refs;
    vkvit__mutex_unlock(ctx->kernel_lock);
}

void vkvit__kernel_table_destroy(vkvit_ctx *ctx) {
    for (uint32_t i = 0; i < ctx->n_shared_kernels; i++) vkvit__kernel_destroy(ctx, &ctx->shared_kernels[i].kernel);
    free(ctx->shared_kernels);
    ctx->shared_kernels = NULL;
    ctx->n_shared_kernels = ctx->cap_shared_kernels = 0;
}

/* ------------------------------------------------------------------------------------------------------------
 * Descriptor sets
 * ------------------------------------------------------------------------------------------------------------ */

uint32_t vkvit__texel_bytes(VkFormat format) {
    switch (format) {
    case VK_FORMAT_R32G32B32A32_SFLOAT: return 16;
    case VK_FORMAT_R16G16B16A16_SFLOAT: return 8;
    default: return 0;
    }
}

vkvit_result vkvit__descriptors_create(vkvit_ctx *ctx, uint32_t max_sets, vkvit__descriptors *out) {
    return vkvit__descriptors_create_with_images(ctx, max_sets, 0, out);
}

vkvit_result vkvit__descriptors_create_with_images(vkvit_ctx *ctx, uint32_t max_sets, uint32_t sampled_images,
                                                   vkvit__descriptors *out) {
    vkvit_result res = VKVIT_OK;
    memset(out, 0, sizeof *out);
    const uint32_t per_type = max_sets * VKVIT_MAX_BINDINGS;
    VkDescriptorPoolSize sizes[3] = {{.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = per_type},
                                     {.type = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, .descriptorCount = per_type},
                                     {.type = VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, .descriptorCount = sampled_images}};
    VkDescriptorPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = max_sets,
        .poolSizeCount = sampled_images ? 3 : 2, /* a pool size's count must not be 0 */
        .pPoolSizes = sizes,
    };
    out->views = calloc(per_type ? per_type : 1, sizeof *out->views);
    if (!out->views) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "descriptor pool: out of host memory");
    out->max_views = per_type;
    VK_TRY(ctx->vk.vkCreateDescriptorPool(ctx->device, &info, NULL, &out->pool));
    VKVIT_COUNT(ctx, other_objects);
    return VKVIT_OK;
fail:
    vkvit__descriptors_destroy(ctx, out);
    return res;
}

void vkvit__descriptors_destroy(vkvit_ctx *ctx, vkvit__descriptors *d) {
    for (uint32_t i = 0; i < d->n_views; i++) ctx->vk.vkDestroyBufferView(ctx->device, d->views[i], NULL);
    if (d->pool) ctx->vk.vkDestroyDescriptorPool(ctx->device, d->pool, NULL);
    free(d->views);
    memset(d, 0, sizeof *d);
}

/* A view of binding b's range in `format`: whole texels only (a partial last texel is not addressable). */
static vkvit_result texel_view_create(vkvit_ctx *ctx, vkvit__descriptors *d, const vkvit__binding *b, VkFormat format,
                                      uint32_t index, VkBufferView *out) {
    vkvit_result res = VKVIT_OK;
    const uint32_t texel = vkvit__texel_bytes(format);
    /* The binding's bytes rounded up to whole texels where the buffer has them (vkvit__buffer_create sizes buffers
     * in whole 16-byte texels), so that the last, partial texel is addressable. */
    const VkDeviceSize avail = b->offset < b->buf->size ? b->buf->size - b->offset : 0;
    const VkDeviceSize want = b->range ? (b->range + texel - 1) / texel * texel : avail;
    const VkDeviceSize range = VKVIT_MIN(want, avail) / texel * texel;
    const uint64_t align = VKVIT_MAX(ctx->limits.minTexelBufferOffsetAlignment, 1);
    if (b->offset % align || range / texel > ctx->limits.maxTexelBufferElements || range == 0)
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED,
                            "texel binding %u: %llu bytes at byte offset %llu do not fit the device's texel buffers "
                            "(offset alignment %llu, at most %u texels of %u bytes)", index,
                            (unsigned long long)range, (unsigned long long)b->offset, (unsigned long long)align,
                            ctx->limits.maxTexelBufferElements, texel);
    if (d->n_views == d->max_views)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "descriptor pool: more than %u texel views", d->max_views);
    VkBufferViewCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
        .buffer = b->buf->buffer,
        .format = format,
        .offset = b->offset,
        .range = range,
    };
    VK_TRY(ctx->vk.vkCreateBufferView(ctx->device, &info, NULL, out));
    VKVIT_COUNT(ctx, other_objects);
    d->views[d->n_views++] = *out;
    return VKVIT_OK;
fail:
    return res;
}

/* partial: bindings with a NULL buffer stay unwritten (vkvit__descriptor_set_create_partial). */
static vkvit_result set_create(vkvit_ctx *ctx, vkvit__descriptors *d, const vkvit__kernel *k,
                               const vkvit__binding *bindings, bool partial, VkDescriptorSet *out) {
    vkvit_result res = VKVIT_OK;
    if (k->sampled_images && !partial)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "descriptor set: a kernel with sampled-image bindings "
                            "(its user writes its own sets)");
    for (uint32_t i = 0; i < k->n_buffers; i++)
        if ((k->sampled_images >> i & 1) && bindings[i].buf)
            return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "descriptor set: binding %u is a sampled image, not a "
                                "buffer", i);
    VkDescriptorSetAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = d->pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &k->set_layout,
    };
    VK_TRY(ctx->vk.vkAllocateDescriptorSets(ctx->device, &alloc, out));
    VKVIT_COUNT(ctx, descriptor_sets);
    VkDescriptorBufferInfo infos[VKVIT_MAX_BINDINGS];
    VkBufferView views[VKVIT_MAX_BINDINGS];
    VkWriteDescriptorSet writes[VKVIT_MAX_BINDINGS];
    uint32_t n_writes = 0;
    for (uint32_t i = 0; i < k->n_buffers; i++) {
        const vkvit__binding *b = &bindings[i];
        if (partial && !b->buf) continue;
        VkWriteDescriptorSet *w = &writes[n_writes++];
        *w = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = *out,
            .dstBinding = i,
            .descriptorCount = 1,
        };
        if (k->texel_format[i] != VK_FORMAT_UNDEFINED) {
            if ((res = texel_view_create(ctx, d, b, k->texel_format[i], i, &views[i])) != VKVIT_OK) return res;
            w->descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
            w->pTexelBufferView = &views[i];
            continue;
        }
        infos[i] = (VkDescriptorBufferInfo){
            .buffer = b->buf->buffer,
            .offset = b->offset,
            .range = b->range ? b->range : VK_WHOLE_SIZE,
        };
        w->descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w->pBufferInfo = &infos[i];
    }
    if (n_writes) ctx->vk.vkUpdateDescriptorSets(ctx->device, n_writes, writes, 0, NULL);
    return VKVIT_OK;
fail:
    return res;
}

vkvit_result vkvit__descriptor_set_create(vkvit_ctx *ctx, vkvit__descriptors *d, const vkvit__kernel *k,
                                          const vkvit__binding *bindings, VkDescriptorSet *out) {
    return set_create(ctx, d, k, bindings, false, out);
}

vkvit_result vkvit__descriptor_set_create_partial(vkvit_ctx *ctx, vkvit__descriptors *d, const vkvit__kernel *k,
                                                  const vkvit__binding *bindings, VkDescriptorSet *out) {
    return set_create(ctx, d, k, bindings, true, out);
}

void vkvit__descriptor_write_buffer(vkvit_ctx *ctx, VkDescriptorSet set, uint32_t binding, VkBuffer buffer,
                                    VkDeviceSize offset, VkDeviceSize range) {
    const VkDescriptorBufferInfo info = {.buffer = buffer, .offset = offset, .range = range};
    const VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set,
                                    .dstBinding = binding, .descriptorCount = 1,
                                    .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &info};
    ctx->vk.vkUpdateDescriptorSets(ctx->device, 1, &w, 0, NULL);
}

void vkvit__descriptor_write_image(vkvit_ctx *ctx, VkDescriptorSet set, uint32_t binding, VkImageView view,
                                   VkImageLayout layout) {
    const VkDescriptorImageInfo info = {.imageView = view, .imageLayout = layout};
    const VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set,
                                    .dstBinding = binding, .descriptorCount = 1,
                                    .descriptorType = VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, .pImageInfo = &info};
    ctx->vk.vkUpdateDescriptorSets(ctx->device, 1, &w, 0, NULL);
}

/* ------------------------------------------------------------------------------------------------------------
 * Pipeline cache on disk
 *
 * File: <dir>/pipelines-<vendor>-<device>-<driver>-<uuid>.bin =
 *   vkvit header { "VKVITPC1", header bytes, vendor, device, driver version, pipelineCacheUUID, data bytes,
 *                  FNV-1a 64 of the data } followed by the vkGetPipelineCacheData blob.
 * Anything that does not match this device exactly (or fails the checksum, or whose Vulkan header disagrees) is
 * ignored: the driver is never handed bytes we cannot vouch for.
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct cache_header {
    char magic[8];
    uint32_t header_bytes, vendor_id, device_id, driver_version;
    uint8_t uuid[VK_UUID_SIZE];
    uint64_t data_bytes, checksum;
} cache_header;

static uint64_t fnv1a64(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Returns true when `data` is a cache file vkvit wrote for exactly this device and driver. */
static bool cache_file_valid(const vkvit_ctx *ctx, const uint8_t *data, size_t size, const uint8_t **blob,
                             size_t *blob_size) {
    cache_header h;
    if (size < sizeof h) return false;
    memcpy(&h, data, sizeof h);
    if (memcmp(h.magic, "VKVITPC1", 8) != 0 || h.header_bytes != sizeof h) return false;
    if (h.vendor_id != ctx->info.vendor_id || h.device_id != ctx->info.device_id ||
        h.driver_version != ctx->info.driver_version || memcmp(h.uuid, ctx->pipeline_cache_uuid, VK_UUID_SIZE) != 0)
        return false;
    if (h.data_bytes != size - sizeof h || fnv1a64(data + sizeof h, (size_t)h.data_bytes) != h.checksum) return false;
    /* The blob's own Vulkan header (VkPipelineCacheHeaderVersionOne) must agree too. */
    const uint8_t *b = data + sizeof h;
    if (h.data_bytes < 16 + VK_UUID_SIZE) return false;
    uint32_t vk_len, vk_version, vk_vendor, vk_device;
    memcpy(&vk_len, b, 4);
    memcpy(&vk_version, b + 4, 4);
    memcpy(&vk_vendor, b + 8, 4);
    memcpy(&vk_device, b + 12, 4);
    if (vk_len < 16 + VK_UUID_SIZE || vk_len > h.data_bytes || vk_version != VK_PIPELINE_CACHE_HEADER_VERSION_ONE ||
        vk_vendor != ctx->info.vendor_id || vk_device != ctx->info.device_id ||
        memcmp(b + 16, ctx->pipeline_cache_uuid, VK_UUID_SIZE) != 0)
        return false;
    *blob = b;
    *blob_size = (size_t)h.data_bytes;
    return true;
}

vkvit_result vkvit__pipeline_cache_open(vkvit_ctx *ctx, const char *dir_in) {
    vkvit_result res = VKVIT_OK;
    char dir[768];
    /* A directory too long for the cache path is not cut short (that would be another directory): no disk cache. */
    const bool fits = (size_t)snprintf(dir, sizeof dir, "%s", dir_in ? dir_in : "") < sizeof dir;
    if (!fits) {
        dir[0] = '\0';
        vkvit__ctx_log(ctx, VKVIT_LOG_WARNING, "pipeline cache: the directory path is longer than %zu bytes; no "
                       "on-disk cache this time", sizeof dir - 1);
    }
    ctx->cache_path[0] = '\0';
    uint8_t *file = NULL;
    size_t file_size = 0;
    const uint8_t *blob = NULL;
    size_t blob_size = 0;
    if (dir[0]) {
        char uuid[2 * VK_UUID_SIZE + 1];
        for (unsigned i = 0; i < VK_UUID_SIZE; i++) snprintf(uuid + 2 * i, 3, "%02x", ctx->pipeline_cache_uuid[i]);
        snprintf(ctx->cache_path, sizeof ctx->cache_path, "%s/pipelines-%04x-%04x-%08x-%s.bin", dir,
                 ctx->info.vendor_id, ctx->info.device_id, ctx->info.driver_version, uuid);
        if (vkvit__read_file(ctx->cache_path, 256u << 20, &file, &file_size) == VKVIT_OK) {
            if (!cache_file_valid(ctx, file, file_size, &blob, &blob_size)) {
                vkvit__ctx_log(ctx, VKVIT_LOG_INFO, "ignoring stale or corrupt pipeline cache '%s'", ctx->cache_path);
                blob = NULL;
                blob_size = 0;
            }
        }
        vkvit__error_clear(); /* a missing cache file is not an error */
    }
    VkPipelineCacheCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = blob_size,
        .pInitialData = blob,
    };
    VK_TRY(ctx->vk.vkCreatePipelineCache(ctx->device, &info, NULL, &ctx->pipeline_cache));
    free(file);
    return VKVIT_OK;
fail:
    free(file);
    return res;
}

void vkvit__pipeline_cache_save(vkvit_ctx *ctx) {
    if (!ctx->pipeline_cache || !ctx->cache_path[0]) return;
    size_t n = 0;
    if (ctx->vk.vkGetPipelineCacheData(ctx->device, ctx->pipeline_cache, &n, NULL) != VK_SUCCESS || n == 0) return;
    uint8_t *buf = malloc(sizeof(cache_header) + n);
    if (!buf) return;
    if (ctx->vk.vkGetPipelineCacheData(ctx->device, ctx->pipeline_cache, &n, buf + sizeof(cache_header)) == VK_SUCCESS) {
        cache_header h;
        memset(&h, 0, sizeof h);
        memcpy(h.magic, "VKVITPC1", 8);
        h.header_bytes = sizeof h;
        h.vendor_id = ctx->info.vendor_id;
        h.device_id = ctx->info.device_id;
        h.driver_version = ctx->info.driver_version;
        memcpy(h.uuid, ctx->pipeline_cache_uuid, VK_UUID_SIZE);
        h.data_bytes = n;
        h.checksum = fnv1a64(buf + sizeof h, n);
        memcpy(buf, &h, sizeof h);
        char dir[1024];
        snprintf(dir, sizeof dir, "%s", ctx->cache_path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = '\0';
        /* Saving is best effort: a read-only home directory must not fail the ctx. */
        if (vkvit__mkdir_p(dir) != VKVIT_OK || vkvit__write_file_atomic(ctx->cache_path, buf, sizeof h + n) != VKVIT_OK)
            vkvit__ctx_log(ctx, VKVIT_LOG_INFO, "could not save the pipeline cache: %s", vkvit_last_error());
        vkvit__error_clear();
    }
    free(buf);
}
