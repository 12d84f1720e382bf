/* Image pre-processing on the GPU (docs/preprocessing.md): torchvision's
 *     Resize(resize_shorter, bicubic|bilinear, antialias=True) -> CenterCrop(H, W) -> Normalize(mean, std)
 * on the float image byte / 255, which is PIL's separable resampling (libImaging/Resample.c) in float.
 *
 *   picture (8-bit, any size) --preprocess_h: horizontal resampling, crop columns only, only the source rows the
 *   vertical pass reads--> scratch [rows, W, 3] --preprocess_v: vertical resampling of the crop rows, (v - mean)
 *   / std--> one batch slot of the input [B, H, W, 3]
 *
 * The geometry (which source pixels each output pixel reads) is computed here in exact 64-bit integers and handed
 * to the shaders as integers below 2^31 (shaders/preprocess.glsl explains why); the filter weights are computed in
 * the shaders. Two users:
 *   vkvit_session_set_images  host pictures: copied into a host-visible upload buffer, pre-processed in one or a
 *                             few submissions of our own command buffer, waited for
 *   vkvit_session_record_ex   host VkImages (sampled, texelFetch) and VkBuffers, recorded into the host's command
 *                             buffer through descriptor sets allocated here and rewritten at record time
 * Both go through one scratch buffer, one picture at a time (a barrier between pictures), so its size is that of
 * the largest picture, not of the batch. */
#include "image/image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------------------
 * Geometry
 * ------------------------------------------------------------------------------------------------------------ */

/* floor(n / d) for d > 0. */
static int64_t floor_div64(int64_t n, int64_t d) { return n >= 0 ? n / d : -((-n + d - 1) / d); }

/* Python's round(d / 2) (half to even), as torchvision's center_crop computes its offsets. */
static uint32_t round_half_even_half(uint32_t d) {
    uint32_t q = d / 2;
    if ((d & 1) && (q & 1)) q++;
    return q;
}

/* One axis: `in` source pixels resized to `out`, of which the centred `crop` are kept. S = filter support (2
 * bicubic, 1 bilinear) in output-scaled units. See shaders/preprocess.glsl for the formulas. */
static vkvit_result axis_of(uint32_t in, uint32_t out, uint32_t crop, int64_t S, vkvit__resize_axis *a) {
    a->in = in;
    a->out = out;
    a->crop = crop;
    a->crop0 = round_half_even_half(out - crop);
    const int64_t two_out = 2 * (int64_t)out, D = 2 * (int64_t)VKVIT_MAX(in, out), sd = S * D;
    const int64_t num0 = (2 * (int64_t)a->crop0 + 1) * in; /* 2 * out * centre(crop0) */
    const int64_t base = num0 / two_out;
    a->base = (int32_t)base;
    a->n0 = (uint32_t)(num0 - base * two_out);
    const int64_t num_last = (int64_t)a->n0 + 2 * (int64_t)in * (crop - 1);
    /* Every integer the shaders form stays below this bound (the tap bounds and weight numerators included). */
    if (num_last + out + sd >= ((int64_t)1 << 31) || base >= ((int64_t)1 << 31))
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED,
                            "resizing %u pixels to %u is beyond the 31-bit integer geometry of the pre-processing "
                            "shaders (the picture is too elongated)", in, out);
    a->tap0 = (uint32_t)VKVIT_MAX(base + floor_div64((int64_t)a->n0 + out - sd, two_out), 0);
    a->tap1 = (uint32_t)VKVIT_MIN(base + floor_div64(num_last + out + sd, two_out), (int64_t)in);
    return VKVIT_OK;
}

vkvit_result vkvit__resize_geometry_of(const vkvit__imgproc_config *cfg, uint32_t width, uint32_t height,
                                       vkvit__resize_geometry *out) {
    memset(out, 0, sizeof *out);
    if (width == 0 || height == 0 || width > VKVIT_MAX_IMAGE_SIDE || height > VKVIT_MAX_IMAGE_SIDE)
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "a %u x %u picture is outside 1 .. %u pixels per side", width,
                            height, VKVIT_MAX_IMAGE_SIDE);
    /* torchvision: the shorter side becomes resize_shorter, the longer int(resize_shorter * long / short). */
    const uint64_t r = cfg->resize_shorter;
    uint64_t out_w = r, out_h = r;
    if (width < height) out_h = r * height / width;
    else if (height < width) out_w = r * width / height;
    const int64_t S = cfg->bicubic ? 2 : 1;
    vkvit_result res = axis_of(width, (uint32_t)out_w, cfg->crop_w, S, &out->x);
    if (res == VKVIT_OK) res = axis_of(height, (uint32_t)out_h, cfg->crop_h, S, &out->y);
    if (res != VKVIT_OK) return res;
    out->scratch_bytes = (uint64_t)(out->y.tap1 - out->y.tap0) * cfg->crop_w * 3 * sizeof(float);
    return VKVIT_OK;
}

/* The scratch bytes that cover every picture of at most max_pixels pixels: for each width, the tallest picture
 * (rows read grow with the height). */
static uint64_t scratch_bound(const vkvit__imgproc_config *cfg, uint64_t max_pixels) {
    uint64_t bound = 0;
    for (uint64_t w = 1; w <= VKVIT_MIN(max_pixels, (uint64_t)VKVIT_MAX_IMAGE_SIDE); w++) {
        const uint64_t h = VKVIT_MIN(max_pixels / w, (uint64_t)VKVIT_MAX_IMAGE_SIDE);
        vkvit__resize_geometry geo;
        if (vkvit__resize_geometry_of(cfg, (uint32_t)w, (uint32_t)h, &geo) == VKVIT_OK)
            bound = VKVIT_MAX(bound, geo.scratch_bytes);
    }
    vkvit__error_clear(); /* elongated shapes the shaders refuse are refused again, with a sentence, when used */
    return bound;
}

/* ------------------------------------------------------------------------------------------------------------
 * Kernels
 * ------------------------------------------------------------------------------------------------------------ */

/* Mirror the `p` blocks of shaders/preprocess_h.comp and preprocess_v.comp. */
typedef struct h_push {
    uint32_t src_offset, src_row_words;
    uint32_t flags;                         /* H_FLAG_* */
    uint32_t row_start, n_rows;
    uint32_t crop_w;
    int32_t in_w, out_w, base, n0;
} h_push;

enum { H_FLAG_BGRA = 1, H_FLAG_SRGB = 2 };

typedef struct v_push {
    uint32_t row_start, crop_w, crop_h, dst_offset;
    int32_t in_h, out_h, base, n0;
    float mean[3], std[3];
} v_push;

_Static_assert(sizeof(h_push) <= VKVIT_MAX_PUSH && sizeof(v_push) <= VKVIT_MAX_PUSH, "pre-processing push constants");

/* The sampled-image variant of the horizontal pass: binding 0 is a VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE (texelFetch,
 * no sampler), binding 1 the scratch storage buffer. vkvit__kernel_create only makes storage-buffer layouts, so
 * this one kernel builds its own layouts and then its pipeline the same way. */
static vkvit_result image_kernel_create(vkvit_ctx *ctx, uint32_t bicubic, vkvit__kernel *out) {
    vkvit_result res = VKVIT_OK;
    memset(out, 0, sizeof *out);
    VkShaderModule module = VK_NULL_HANDLE;
    const vkvit_spirv *spv = &vkvit_spirv_table[VKVIT_SHADER_PREPROCESS_H_U8_F32_IMAGE];
    VkDescriptorSetLayoutBinding bindings[2] = {
        {.binding = 0, .descriptorType = VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, .descriptorCount = 1,
         .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT},
        {.binding = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 1,
         .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT},
    };
    VkDescriptorSetLayoutCreateInfo set_info = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                                .bindingCount = 2, .pBindings = bindings};
    VK_TRY(ctx->vk.vkCreateDescriptorSetLayout(ctx->device, &set_info, NULL, &out->set_layout));
    VkPushConstantRange push = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = sizeof(h_push)};
    VkPipelineLayoutCreateInfo layout_info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                              .setLayoutCount = 1, .pSetLayouts = &out->set_layout,
                                              .pushConstantRangeCount = 1, .pPushConstantRanges = &push};
    VK_TRY(ctx->vk.vkCreatePipelineLayout(ctx->device, &layout_info, NULL, &out->layout));
    VkShaderModuleCreateInfo module_info = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                            .codeSize = (size_t)spv->n_words * 4, .pCode = spv->words};
    VK_TRY(ctx->vk.vkCreateShaderModule(ctx->device, &module_info, NULL, &module));
    VkSpecializationMapEntry entry = {.constantID = 0, .offset = 0, .size = 4};
    VkSpecializationInfo spec = {.mapEntryCount = 1, .pMapEntries = &entry, .dataSize = 4, .pData = &bicubic};
    VkComputePipelineCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module, .pName = "main", .pSpecializationInfo = &spec},
        .layout = out->layout,
    };
    VK_TRY(ctx->vk.vkCreateComputePipelines(ctx->device, ctx->pipeline_cache, 1, &info, NULL, &out->pipeline));
    ctx->vk.vkDestroyShaderModule(ctx->device, module, NULL);
    vkvit__set_object_name(ctx, VK_OBJECT_TYPE_PIPELINE, (uint64_t)out->pipeline, "preprocess_h (image)");
    out->shader = VKVIT_SHADER_PREPROCESS_H_U8_F32_IMAGE;
    out->n_buffers = 1;
    out->push_size = sizeof(h_push);
    return VKVIT_OK;
fail:
    if (module) ctx->vk.vkDestroyShaderModule(ctx->device, module, NULL);
    vkvit__kernel_destroy(ctx, out);
    return vkvit__error_prefix(res, "kernel 'preprocess_h (image)' (shader %s)", spv->name);
}

/* ------------------------------------------------------------------------------------------------------------
 * Buffers and descriptor sets
 * ------------------------------------------------------------------------------------------------------------ */

static uint64_t input_bytes(const vkvit__imgproc *ip) {
    return (uint64_t)ip->batch * ip->cfg.crop_h * ip->cfg.crop_w * 3 * sizeof(float);
}

static void write_buffer(VkWriteDescriptorSet *w, VkDescriptorBufferInfo *info, VkDescriptorSet set, uint32_t binding,
                         VkBuffer buffer, uint64_t offset, uint64_t range) {
    *info = (VkDescriptorBufferInfo){.buffer = buffer, .offset = offset, .range = range};
    *w = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set, .dstBinding = binding,
                                .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                .pBufferInfo = info};
}

/* The part of a buffer one storage-buffer descriptor can reach (maxStorageBufferRange: 128 MiB on some devices). */
static uint64_t bindable(const vkvit__imgproc *ip, const vkvit__buffer *b) {
    return VKVIT_MIN(b->size, (uint64_t)ip->ctx->limits.maxStorageBufferRange);
}

/* Points the sets that never change between (re)allocations at the upload, scratch and destination buffers. */
static void write_static_sets(vkvit__imgproc *ip) {
    VkWriteDescriptorSet w[6];
    VkDescriptorBufferInfo info[6];
    uint32_t n = 0;
    if (!ip->scratch.buffer) return;
    if (ip->upload.buffer) {
        write_buffer(&w[n], &info[n], ip->set_h_upload, 0, ip->upload.buffer, 0, bindable(ip, &ip->upload)), n++;
        write_buffer(&w[n], &info[n], ip->set_h_upload, 1, ip->scratch.buffer, 0, bindable(ip, &ip->scratch)), n++;
    }
    write_buffer(&w[n], &info[n], ip->set_v_host, 0, ip->scratch.buffer, 0, bindable(ip, &ip->scratch)), n++;
    write_buffer(&w[n], &info[n], ip->set_v_host, 1, ip->host_dst.buffer->buffer, ip->host_dst.offset,
                 input_bytes(ip)), n++;
    write_buffer(&w[n], &info[n], ip->set_v_graph, 0, ip->scratch.buffer, 0, bindable(ip, &ip->scratch)), n++;
    write_buffer(&w[n], &info[n], ip->set_v_graph, 1, ip->graph_dst.buffer->buffer, ip->graph_dst.offset,
                 input_bytes(ip)), n++;
    ip->ctx->vk.vkUpdateDescriptorSets(ip->ctx->device, n, w, 0, NULL);
}

/* Replaces `buf` by a bigger one (no work may be in flight on it). */
static vkvit_result regrow(vkvit__imgproc *ip, vkvit__buffer *buf, uint64_t bytes, vkvit__mem_kind kind,
                           const char *label) {
    vkvit__buffer_destroy(ip->ctx, buf);
    vkvit_result res = vkvit__buffer_create(ip->ctx, bytes, kind, label, buf);
    if (res == VKVIT_OK) write_static_sets(ip);
    return res;
}

static vkvit_result alloc_sets(vkvit__imgproc *ip, const VkDescriptorSetLayout *layouts, uint32_t n,
                               VkDescriptorSet *out) {
    vkvit_result res = VKVIT_OK;
    VkDescriptorSetAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                         .descriptorPool = ip->pool, .descriptorSetCount = n, .pSetLayouts = layouts};
    VK_TRY(ip->ctx->vk.vkAllocateDescriptorSets(ip->ctx->device, &alloc, out));
fail:
    return res;
}

vkvit_result vkvit__imgproc_create(vkvit_ctx *ctx, const vkvit__imgproc_config *cfg, uint32_t batch,
                                   uint64_t max_pixels, vkvit__imgproc_target host_dst,
                                   vkvit__imgproc_target graph_dst, vkvit__imgproc *ip) {
    vkvit_result res = VKVIT_OK;
    memset(ip, 0, sizeof *ip); /* on failure it stays zeroed: ip->ctx NULL means "not created" */
    if ((uint64_t)batch * cfg->crop_h * cfg->crop_w * 3 > UINT32_MAX)
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED, "an input of %u x %u x %u x 3 floats is beyond the 32-bit indexing "
                            "of the pre-processing shaders", batch, cfg->crop_h, cfg->crop_w);
    if (max_pixels > (uint64_t)VKVIT_MAX_IMAGE_SIDE * VKVIT_MAX_IMAGE_SIDE)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "max_image_pixels = %llu is above %u x %u",
                            (unsigned long long)max_pixels, VKVIT_MAX_IMAGE_SIDE, VKVIT_MAX_IMAGE_SIDE);
    ip->ctx = ctx;
    ip->cfg = *cfg;
    ip->batch = batch;
    ip->host_dst = host_dst;
    ip->graph_dst = graph_dst;

    const uint32_t bicubic = cfg->bicubic;
    vkvit__kernel_desc kh = {.shader = VKVIT_SHADER_PREPROCESS_H_U8_F32, .n_buffers = 2, .push_size = sizeof(h_push),
                             .n_spec = 1, .spec = {bicubic}, .label = "preprocess_h"};
    vkvit__kernel_desc kv = {.shader = VKVIT_SHADER_PREPROCESS_V_F32_F32, .n_buffers = 2, .push_size = sizeof(v_push),
                             .n_spec = 1, .spec = {bicubic}, .label = "preprocess_v"};
    if ((res = vkvit__kernel_create(ctx, &kh, &ip->h_buffer)) != VKVIT_OK ||
        (res = vkvit__kernel_create(ctx, &kv, &ip->v)) != VKVIT_OK ||
        (res = image_kernel_create(ctx, bicubic, &ip->h_image)) != VKVIT_OK)
        goto fail;

    /* Sets: upload -> scratch, scratch -> host_dst, scratch -> graph_dst, and per slot host image / host pixels. */
    const uint32_t n_sets = 3 + 2 * batch;
    VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * n_sets},
                                     {VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, batch}};
    VkDescriptorPoolCreateInfo pool_info = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                            .maxSets = n_sets, .poolSizeCount = 2, .pPoolSizes = sizes};
    VK_TRY(ctx->vk.vkCreateDescriptorPool(ctx->device, &pool_info, NULL, &ip->pool));
    ip->set_h_image = calloc(batch, sizeof *ip->set_h_image);
    ip->set_h_pixels = calloc(batch, sizeof *ip->set_h_pixels);
    VkDescriptorSetLayout *layouts = calloc(batch, sizeof *layouts);
    if (!ip->set_h_image || !ip->set_h_pixels || !layouts) {
        free(layouts);
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %u descriptor sets", n_sets);
        goto fail;
    }
    VkDescriptorSetLayout fixed[3] = {ip->h_buffer.set_layout, ip->v.set_layout, ip->v.set_layout};
    VkDescriptorSet fixed_sets[3];
    res = alloc_sets(ip, fixed, 3, fixed_sets);
    for (uint32_t i = 0; i < batch; i++) layouts[i] = ip->h_image.set_layout;
    if (res == VKVIT_OK) res = alloc_sets(ip, layouts, batch, ip->set_h_image);
    for (uint32_t i = 0; i < batch; i++) layouts[i] = ip->h_buffer.set_layout;
    if (res == VKVIT_OK) res = alloc_sets(ip, layouts, batch, ip->set_h_pixels);
    free(layouts);
    if (res != VKVIT_OK) goto fail;
    ip->set_h_upload = fixed_sets[0];
    ip->set_v_host = fixed_sets[1];
    ip->set_v_graph = fixed_sets[2];

    if (max_pixels) {
        if ((res = vkvit__buffer_create(ctx, max_pixels * 4, VKVIT_MEM_UPLOAD, "vkvit image upload", &ip->upload)) !=
                VKVIT_OK ||
            (res = vkvit__buffer_create(ctx, VKVIT_MAX(scratch_bound(cfg, max_pixels), 4), VKVIT_MEM_DEVICE,
                                        "vkvit image scratch", &ip->scratch)) != VKVIT_OK)
            goto fail;
        write_static_sets(ip);
    }

    VkCommandPoolCreateInfo cp = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = ctx->queue_family};
    VK_TRY(ctx->vk.vkCreateCommandPool(ctx->device, &cp, NULL, &ip->cmd_pool));
    VkCommandBufferAllocateInfo ca = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = ip->cmd_pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VK_TRY(ctx->vk.vkAllocateCommandBuffers(ctx->device, &ca, &ip->cmd));
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_TRY(ctx->vk.vkCreateFence(ctx->device, &fi, NULL, &ip->fence));
    return VKVIT_OK;
fail:
    vkvit__imgproc_destroy(ip);
    return vkvit__error_prefix(res, "image pre-processing");
}

void vkvit__imgproc_destroy(vkvit__imgproc *ip) {
    if (!ip || !ip->ctx) return;
    vkvit_ctx *ctx = ip->ctx;
    if (ip->fence) ctx->vk.vkDestroyFence(ctx->device, ip->fence, NULL);
    if (ip->cmd_pool) ctx->vk.vkDestroyCommandPool(ctx->device, ip->cmd_pool, NULL);
    if (ip->pool) ctx->vk.vkDestroyDescriptorPool(ctx->device, ip->pool, NULL);
    vkvit__kernel_destroy(ctx, &ip->h_buffer);
    vkvit__kernel_destroy(ctx, &ip->h_image);
    vkvit__kernel_destroy(ctx, &ip->v);
    vkvit__buffer_destroy(ctx, &ip->upload);
    vkvit__buffer_destroy(ctx, &ip->scratch);
    free(ip->set_h_image);
    free(ip->set_h_pixels);
    memset(ip, 0, sizeof *ip);
}

/* ------------------------------------------------------------------------------------------------------------
 * Recording one picture: horizontal pass, barrier, vertical pass
 * ------------------------------------------------------------------------------------------------------------ */

/* The scratch rows of the previous picture were read by its vertical pass; this picture's horizontal pass
 * overwrites them (write-after-read: an execution dependency is enough). */
static void barrier_scratch_reuse(vkvit__imgproc *ip, VkCommandBuffer cmd) {
    vkvit__cmd_barrier(ip->ctx, cmd, &ip->scratch, 0, VK_WHOLE_SIZE, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
}

/* h: the horizontal pass's source fields already filled (src_offset, src_row_words, flags). */
static void record_picture(vkvit__imgproc *ip, VkCommandBuffer cmd, const vkvit__kernel *kh, VkDescriptorSet set_h,
                           h_push h, VkDescriptorSet set_v, const vkvit__resize_geometry *geo, uint32_t slot) {
    const vkvit__imgproc_config *c = &ip->cfg;
    h.row_start = geo->y.tap0;
    h.n_rows = geo->y.tap1 - geo->y.tap0;
    h.crop_w = c->crop_w;
    h.in_w = (int32_t)geo->x.in;
    h.out_w = (int32_t)geo->x.out;
    h.base = geo->x.base;
    h.n0 = (int32_t)geo->x.n0;
    vkvit__cmd_dispatch(ip->ctx, cmd, kh, set_h, &h, VKVIT_CEIL_DIV(c->crop_w, 16u), VKVIT_CEIL_DIV(h.n_rows, 4u), 1);
    vkvit__cmd_barrier(ip->ctx, cmd, &ip->scratch, 0, VK_WHOLE_SIZE, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
    v_push v = {
        .row_start = geo->y.tap0, .crop_w = c->crop_w, .crop_h = c->crop_h,
        .dst_offset = slot * c->crop_h * c->crop_w * 3,
        .in_h = (int32_t)geo->y.in, .out_h = (int32_t)geo->y.out, .base = geo->y.base, .n0 = (int32_t)geo->y.n0,
        .mean = {c->mean[0], c->mean[1], c->mean[2]}, .std = {c->std[0], c->std[1], c->std[2]},
    };
    vkvit__cmd_dispatch(ip->ctx, cmd, &ip->v, set_v, &v, VKVIT_CEIL_DIV(c->crop_w, 16u), VKVIT_CEIL_DIV(c->crop_h, 4u),
                        1);
}

/* ------------------------------------------------------------------------------------------------------------
 * set_images: host pictures through the upload buffer
 * ------------------------------------------------------------------------------------------------------------ */

static vkvit_result check_image(const vkvit__imgproc *ip, const vkvit_image *im, uint32_t i, const char *fn,
                                vkvit__resize_geometry *geo) {
    if (!im->pixels) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: images[%u].pixels is NULL", fn, i);
    if (im->format != VKVIT_PIXEL_RGBA8 && im->format != VKVIT_PIXEL_BGRA8)
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "%s: images[%u].format = %d is neither VKVIT_PIXEL_RGBA8 nor "
                            "VKVIT_PIXEL_BGRA8", fn, i, (int)im->format);
    vkvit_result res = vkvit__resize_geometry_of(&ip->cfg, im->width, im->height, geo);
    if (res != VKVIT_OK) return vkvit__error_prefix(res, "%s: images[%u]", fn, i);
    if (im->row_bytes && im->row_bytes < (uint64_t)im->width * 4)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: images[%u].row_bytes = %u is less than width * 4 = %u",
                            fn, i, im->row_bytes, im->width * 4);
    return VKVIT_OK;
}

vkvit_result vkvit__imgproc_set_images(vkvit__imgproc *ip, uint32_t first_slot, const vkvit_image *images,
                                       uint32_t count, const char *fn) {
    vkvit_result res = VKVIT_OK;
    vkvit_ctx *ctx = ip->ctx;
    if (!images || count == 0)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: %s", fn, images ? "count is 0" : "images is NULL");
    if ((uint64_t)first_slot + count > ip->batch)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: slots %u .. %llu are outside the batch of %u", fn,
                            first_slot, (unsigned long long)first_slot + count - 1, ip->batch);
    /* Check everything first; then grow the buffers once for the largest picture. */
    uint64_t need_scratch = 4, need_upload = 4;
    for (uint32_t i = 0; i < count; i++) {
        vkvit__resize_geometry geo;
        if ((res = check_image(ip, &images[i], i, fn, &geo)) != VKVIT_OK) return res;
        need_scratch = VKVIT_MAX(need_scratch, geo.scratch_bytes);
        need_upload = VKVIT_MAX(need_upload, (uint64_t)images[i].width * images[i].height * 4);
    }
    const uint64_t max_range = ip->ctx->limits.maxStorageBufferRange;
    if (need_upload > max_range || need_scratch > max_range)
        return vkvit__error(VKVIT_ERROR_UNSUPPORTED,
                            "%s: a picture needs %llu upload and %llu scratch bytes, above the device's "
                            "maxStorageBufferRange of %llu", fn, (unsigned long long)need_upload,
                            (unsigned long long)need_scratch, (unsigned long long)max_range);
    if (ip->scratch.size < need_scratch &&
        (res = regrow(ip, &ip->scratch, need_scratch, VKVIT_MEM_DEVICE, "vkvit image scratch")) != VKVIT_OK)
        return vkvit__error_prefix(res, "%s: growing the scratch buffer to %llu bytes", fn,
                                   (unsigned long long)need_scratch);
    if (ip->upload.size < need_upload &&
        (res = regrow(ip, &ip->upload, need_upload, VKVIT_MEM_UPLOAD, "vkvit image upload")) != VKVIT_OK)
        return vkvit__error_prefix(res, "%s: growing the upload buffer to %llu bytes", fn,
                                   (unsigned long long)need_upload);

    /* As many pictures per submission as the upload buffer holds. */
    for (uint32_t i = 0; i < count;) {
        VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                          .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        VK_TRY(ctx->vk.vkResetCommandBuffer(ip->cmd, 0));
        VK_TRY(ctx->vk.vkBeginCommandBuffer(ip->cmd, &begin));
        /* Earlier runs read the destination and earlier pictures used the scratch. */
        vkvit__cmd_barrier_prior_work(ctx, ip->cmd);
        uint64_t used = 0;
        for (uint32_t first = i; i < count; i++) {
            const vkvit_image *im = &images[i];
            const uint64_t bytes = (uint64_t)im->width * im->height * 4;
            if (used + bytes > bindable(ip, &ip->upload)) break;
            const uint64_t row_bytes = im->row_bytes ? im->row_bytes : (uint64_t)im->width * 4;
            for (uint32_t y = 0; y < im->height; y++)
                memcpy((uint8_t *)ip->upload.mapped + used + (uint64_t)y * im->width * 4, im->pixels + y * row_bytes,
                       (size_t)im->width * 4);
            vkvit__resize_geometry geo;
            vkvit__resize_geometry_of(&ip->cfg, im->width, im->height, &geo); /* checked above */
            if (i > first) barrier_scratch_reuse(ip, ip->cmd);
            h_push h = {.src_offset = (uint32_t)(used / 4), .src_row_words = im->width,
                        .flags = im->format == VKVIT_PIXEL_BGRA8 ? H_FLAG_BGRA : 0};
            record_picture(ip, ip->cmd, &ip->h_buffer, ip->set_h_upload, h, ip->set_v_host, &geo, first_slot + i);
            used += bytes;
        }
        VK_TRY(ctx->vk.vkEndCommandBuffer(ip->cmd));
        VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                               .pCommandBuffers = &ip->cmd};
        VK_TRY(ctx->vk.vkResetFences(ctx->device, 1, &ip->fence));
        VK_TRY(vkvit__queue_submit(ctx, ctx->queue, 1, &submit, ip->fence));
        VK_TRY(ctx->vk.vkWaitForFences(ctx->device, 1, &ip->fence, VK_TRUE, UINT64_MAX));
    }
    return VKVIT_OK;
fail:
    return vkvit__error_prefix(res, "%s", fn);
}

/* ------------------------------------------------------------------------------------------------------------
 * record_ex: host VkImages and VkBuffers
 * ------------------------------------------------------------------------------------------------------------ */

static bool is_srgb(VkFormat f) { return f == VK_FORMAT_R8G8B8A8_SRGB || f == VK_FORMAT_B8G8R8A8_SRGB; }

static bool image_format_ok(VkFormat f) {
    return f == VK_FORMAT_R8G8B8A8_UNORM || f == VK_FORMAT_B8G8R8A8_UNORM || is_srgb(f);
}

/* The scratch must hold the picture's rows: nothing is allocated at record time. */
static vkvit_result check_fit(const vkvit__imgproc *ip, const char *what, uint32_t i, uint32_t w, uint32_t h,
                              const char *fn, vkvit__resize_geometry *geo) {
    vkvit_result res = vkvit__resize_geometry_of(&ip->cfg, w, h, geo);
    if (res != VKVIT_OK) return vkvit__error_prefix(res, "%s: %s[%u]", fn, what, i);
    if (geo->scratch_bytes > bindable(ip, &ip->scratch))
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT,
                            "%s: %s[%u] (%u x %u) needs %llu scratch bytes, the session has %llu; create it with "
                            "max_image_pixels >= %llu", fn, what, i, w, h, (unsigned long long)geo->scratch_bytes,
                            (unsigned long long)ip->scratch.size, (unsigned long long)w * h);
    return VKVIT_OK;
}

static vkvit_result check_slot(const vkvit__imgproc *ip, const char *what, uint32_t i, uint32_t slot, uint8_t *seen,
                               const char *fn) {
    if (slot >= ip->batch)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: %s[%u].slot = %u is outside the batch of %u", fn, what,
                            i, slot, ip->batch);
    if (seen[slot]) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: batch slot %u has two inputs", fn, slot);
    seen[slot] = 1;
    return VKVIT_OK;
}

/* The host buffer range bound for a pixels input: from `offset` rounded down to the device's storage-buffer
 * alignment, to the end of the last pixel. */
static void pixels_range(const vkvit__imgproc *ip, const vkvit_host_pixels *px, uint64_t *bind_offset,
                         uint64_t *bind_range) {
    const uint64_t align = VKVIT_MAX(ip->ctx->limits.minStorageBufferOffsetAlignment, 4);
    const uint64_t row_bytes = px->row_bytes ? px->row_bytes : (uint64_t)px->width * 4;
    *bind_offset = px->offset / align * align;
    *bind_range = px->offset - *bind_offset + (uint64_t)(px->height - 1) * row_bytes + (uint64_t)px->width * 4;
}

vkvit_result vkvit__imgproc_check_inputs(const vkvit__imgproc *ip, const vkvit_record_desc *d, const char *fn) {
    if (!d) return VKVIT_OK;
    if ((d->image_count && !d->images) || (d->pixels_count && !d->pixels))
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: desc->%s is NULL with a count of %u", fn,
                            d->image_count && !d->images ? "images" : "pixels",
                            d->image_count && !d->images ? d->image_count : d->pixels_count);
    if ((uint64_t)d->image_count + d->pixels_count > ip->batch)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: %u inputs for a batch of %u", fn,
                            d->image_count + d->pixels_count, ip->batch);
    uint8_t *seen = calloc(ip->batch, 1);
    if (!seen) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    vkvit_result res = VKVIT_OK;
    vkvit__resize_geometry geo;
    for (uint32_t i = 0; i < d->image_count && res == VKVIT_OK; i++) {
        const vkvit_host_image *im = &d->images[i];
        if (!im->image || !im->view)
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: images[%u].%s is VK_NULL_HANDLE", fn, i,
                               im->image ? "view" : "image");
        else if (!image_format_ok(im->format))
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: images[%u].format = %d is not R8G8B8A8 or B8G8R8A8 "
                               "UNORM or SRGB", fn, i, (int)im->format);
        else if (im->layout != VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL && im->layout != VK_IMAGE_LAYOUT_GENERAL)
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: images[%u].layout = %d is neither "
                               "SHADER_READ_ONLY_OPTIMAL nor GENERAL", fn, i, (int)im->layout);
        else if ((res = check_slot(ip, "images", i, im->slot, seen, fn)) == VKVIT_OK)
            res = check_fit(ip, "images", i, im->width, im->height, fn, &geo);
    }
    for (uint32_t i = 0; i < d->pixels_count && res == VKVIT_OK; i++) {
        const vkvit_host_pixels *px = &d->pixels[i];
        const uint64_t row_bytes = px->row_bytes ? px->row_bytes : (uint64_t)px->width * 4;
        uint64_t bind_offset, bind_range;
        if (!px->buffer)
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: pixels[%u].buffer is VK_NULL_HANDLE", fn, i);
        else if (px->format != VKVIT_PIXEL_RGBA8 && px->format != VKVIT_PIXEL_BGRA8)
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: pixels[%u].format = %d is neither RGBA8 nor BGRA8",
                               fn, i, (int)px->format);
        else if (px->offset % 4 || row_bytes % 4 || row_bytes < (uint64_t)px->width * 4)
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: pixels[%u]: offset %llu and row_bytes %llu must be "
                               "multiples of 4, row_bytes at least width * 4 = %llu", fn, i,
                               (unsigned long long)px->offset, (unsigned long long)row_bytes,
                               (unsigned long long)px->width * 4);
        else if ((res = check_slot(ip, "pixels", i, px->slot, seen, fn)) == VKVIT_OK &&
                 (res = check_fit(ip, "pixels", i, px->width, px->height, fn, &geo)) == VKVIT_OK) {
            pixels_range(ip, px, &bind_offset, &bind_range);
            if (bind_range > ip->ctx->limits.maxStorageBufferRange)
                res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: pixels[%u] spans %llu bytes, above the device's "
                                   "maxStorageBufferRange of %u", fn, i, (unsigned long long)bind_range,
                                   ip->ctx->limits.maxStorageBufferRange);
        }
    }
    free(seen);
    return res;
}

static VkPipelineStageFlags or_default_stage(VkPipelineStageFlags s) { return s ? s : VK_PIPELINE_STAGE_ALL_COMMANDS_BIT; }

void vkvit__imgproc_record_inputs(vkvit__imgproc *ip, VkCommandBuffer cmd, const vkvit_record_desc *d) {
    vkvit_ctx *ctx = ip->ctx;
    if (!d || d->image_count + d->pixels_count == 0) return;
    const uint32_t n = d->image_count + d->pixels_count;
    for (uint32_t k = 0; k < n; k++) {
        vkvit__resize_geometry geo;
        VkDescriptorImageInfo image_info;
        VkDescriptorBufferInfo buffer_info[2];
        VkWriteDescriptorSet w[2];
        VkDescriptorSet set;
        const vkvit__kernel *kh;
        h_push h = {0};
        uint32_t slot;
        if (k > 0) barrier_scratch_reuse(ip, cmd);
        if (k < d->image_count) {
            /* The host's last write of the image, made visible to our sampled reads; the layout stays as it is. */
            const vkvit_host_image *im = &d->images[k];
            VkImageSubresourceRange range = im->subresource;
            if (!range.aspectMask) range = (VkImageSubresourceRange){VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
            VkImageMemoryBarrier b = {
                .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
                .srcAccessMask = im->src_access ? im->src_access : VK_ACCESS_MEMORY_WRITE_BIT,
                .dstAccessMask = VK_ACCESS_SHADER_READ_BIT, .oldLayout = im->layout, .newLayout = im->layout,
                .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                .image = im->image, .subresourceRange = range,
            };
            ctx->vk.vkCmdPipelineBarrier(cmd, or_default_stage(im->src_stage), VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                                         0, NULL, 0, NULL, 1, &b);
            vkvit__resize_geometry_of(&ip->cfg, im->width, im->height, &geo); /* checked */
            set = ip->set_h_image[im->slot];
            image_info = (VkDescriptorImageInfo){.imageView = im->view, .imageLayout = im->layout};
            w[0] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set,
                                          .dstBinding = 0, .descriptorCount = 1,
                                          .descriptorType = VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, .pImageInfo = &image_info};
            h.flags = is_srgb(im->format) ? H_FLAG_SRGB : 0;
            kh = &ip->h_image;
            slot = im->slot;
        } else {
            const vkvit_host_pixels *px = &d->pixels[k - d->image_count];
            uint64_t bind_offset, bind_range;
            pixels_range(ip, px, &bind_offset, &bind_range);
            VkBufferMemoryBarrier b = {
                .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                .srcAccessMask = px->src_access ? px->src_access : VK_ACCESS_MEMORY_WRITE_BIT,
                .dstAccessMask = VK_ACCESS_SHADER_READ_BIT, .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .buffer = px->buffer, .offset = bind_offset,
                .size = bind_range,
            };
            ctx->vk.vkCmdPipelineBarrier(cmd, or_default_stage(px->src_stage), VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                                         0, NULL, 1, &b, 0, NULL);
            vkvit__resize_geometry_of(&ip->cfg, px->width, px->height, &geo); /* checked */
            set = ip->set_h_pixels[px->slot];
            write_buffer(&w[0], &buffer_info[0], set, 0, px->buffer, bind_offset, bind_range);
            h.src_offset = (uint32_t)((px->offset - bind_offset) / 4);
            h.src_row_words = (px->row_bytes ? px->row_bytes : px->width * 4) / 4;
            h.flags = px->format == VKVIT_PIXEL_BGRA8 ? H_FLAG_BGRA : 0;
            kh = &ip->h_buffer;
            slot = px->slot;
        }
        /* The set is not in use: the previous recording has completed (the documented rule). */
        write_buffer(&w[1], &buffer_info[1], set, 1, ip->scratch.buffer, 0, bindable(ip, &ip->scratch));
        ctx->vk.vkUpdateDescriptorSets(ctx->device, 2, w, 0, NULL);
        record_picture(ip, cmd, kh, set, h, ip->set_v_graph, &geo, slot);
    }
    /* The input slots written here are read by the graph's first nodes. */
    vkvit__cmd_barrier(ctx, cmd, ip->graph_dst.buffer, ip->graph_dst.offset, input_bytes(ip),
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
}
