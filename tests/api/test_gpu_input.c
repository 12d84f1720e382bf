// SPDX-License-Identifier: Apache-2.0
/* GPU image input, end to end through sessions of a small golden model (vit5_nvsubq_cls_r4: 32 x 32 input,
 * resize_shorter 32, bicubic, 10 classes):
 *
 *   set_images    pictures pre-processed on the GPU give the same logits (1e-4 relative) as the C reference's
 *                 pre-processed floats passed through set_input, and get_top_k agrees with those logits
 *   record_ex     a host application (own instance and device, validation + synchronization validation) uploads
 *                 the same pictures into its own VkImages (RGBA8 UNORM, BGRA8 UNORM, RGBA8 SRGB; in
 *                 SHADER_READ_ONLY_OPTIMAL and in GENERAL layout) and VkBuffers (RGBA8 with padded rows, BGRA8),
 *                 records its layout transitions and copies + vkvit_session_record_ex into its own command buffer,
 *                 submits with its own fence, and reads the logits or the top-K result from its own buffer: equal
 *                 to set_images' result on the same pixels (1e-5 relative; the kernels are the same)
 *   errors        bad record_ex descs are refused before anything is recorded
 * The host's validation messenger must stay silent. */
#include "host_util.h"
#include "preprocess_ref.h"

#define MODEL VKVIT_SOURCE_DIR "/tests/golden/models/vit5_nvsubq_cls_r4"
#define B 3
#define K 5

/* The pictures of the batch: sizes chosen to exercise downscaling, non-square crops and an at-size picture. */
static const struct {
    uint32_t width, height;
    bool bgra;
} PICS[B] = {{64, 48, false}, {40, 50, true}, {32, 32, false}};

static uint8_t *pixels[B];                  /* tightly packed, in the picture's byte order */
static bool host_can_render;                /* the host's queue family has VK_QUEUE_GRAPHICS_BIT (lavapipe: yes) */
static float mean_[3], std_[3];
static uint32_t classes_n;

static double max_rel(const float *got, const float *want, size_t n) {
    double scale = 0.0, d = 0.0;
    for (size_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(want[i]));
        double e = fabs((double)got[i] - want[i]);
        d = isnan(e) ? INFINITY : fmax(d, e);
    }
    return scale > 0 ? d / scale : d;
}

static vkvit_image picture(uint32_t i) {
    return (vkvit_image){.pixels = pixels[i], .width = PICS[i].width, .height = PICS[i].height,
                         .format = PICS[i].bgra ? VKVIT_PIXEL_BGRA8 : VKVIT_PIXEL_RGBA8};
}

/* ------------------------------------------------------------------------------------------------------------
 * set_images: the session's own path
 * ------------------------------------------------------------------------------------------------------------ */

/* Logits [B, classes] and top-K of the batch through set_images (the reference result for record_ex). */
static void set_images_matches_reference(vkvit_ctx *ctx, vkvit_model *model, float *logits, uint32_t *top_c,
                                         float *top_p) {
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = B, .top_k = K, .max_image_pixels = 64 * 48}, &s));
    vkvit_image ims[B];
    for (uint32_t i = 0; i < B; i++) ims[i] = picture(i);
    MUST(vkvit_session_set_images(s, 0, ims, B));
    MUST(vkvit_session_run(s));
    const size_t n_out = (size_t)B * classes_n;
    for (size_t i = 0; i < n_out; i++) logits[i] = NAN;
    MUST(vkvit_session_get_output(s, logits, n_out));
    MUST(vkvit_session_get_top_k(s, top_c, top_p, B * K));

    /* The same batch pre-processed by the C reference and passed as floats. */
    const size_t per = 32 * 32 * 3;
    float *input = malloc(B * per * sizeof *input);
    double *ref = malloc(per * sizeof *ref);
    for (uint32_t i = 0; i < B; i++) {
        ref_preprocess(pixels[i], PICS[i].width, PICS[i].height, PICS[i].width * 4, PICS[i].bgra, 32, 32, 32, true,
                       mean_, std_, ref);
        for (size_t j = 0; j < per; j++) input[i * per + j] = (float)ref[j];
    }
    MUST(vkvit_session_set_input(s, input, B * per));
    MUST(vkvit_session_run(s));
    float *want = malloc(n_out * sizeof *want);
    MUST(vkvit_session_get_output(s, want, n_out));
    double err = max_rel(logits, want, n_out);
    printf("set_images vs C-reference input: logits max rel err %.3g\n", err);
    CHECK(err <= 1e-4, "set_images logits differ from the reference input's by %.3g", err);

    /* The top-K of the set_images run ranks its own logits. */
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t k = 0; k + 1 < K; k++) {
            const float *row = logits + b * classes_n;
            CHECK(top_c[b * K + k] < classes_n && row[top_c[b * K + k]] >= row[top_c[b * K + k + 1]],
                  "image %u: rank %u class %u is not above class %u", b, k, top_c[b * K + k], top_c[b * K + k + 1]);
        }

    /* A picture larger than max_image_pixels grows the buffers (the documented exception) and still works. */
    uint8_t *big = calloc((size_t)200 * 150 * 4, 1);
    vkvit_image bi = {.pixels = big, .width = 200, .height = 150, .format = VKVIT_PIXEL_RGBA8};
    MUST(vkvit_session_set_images(s, 2, &bi, 1));
    vkvit_result r = vkvit_session_set_images(s, 2, ims, 2);
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT, "slots 2..3 of a batch of 3 got %s", vkvit_result_name(r));
    free(big), free(input), free(ref), free(want);
    vkvit_session_destroy(s);

    /* Without max_image_pixels the first set_images creates the pre-processing: same result. */
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = B}, &s));
    MUST(vkvit_session_set_images(s, 0, ims, B));
    MUST(vkvit_session_run(s));
    float *lazy = malloc(n_out * sizeof *lazy);
    MUST(vkvit_session_get_output(s, lazy, n_out));
    err = max_rel(lazy, logits, n_out);
    printf("set_images without max_image_pixels: logits max rel err %.3g\n", err);
    CHECK(err <= 1e-6, "lazily created pre-processing differs by %.3g", err);
    free(lazy);
    vkvit_session_destroy(s);
}

/* ------------------------------------------------------------------------------------------------------------
 * record_ex: a host application's images and buffers
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct host_image {
    VkImage image;
    VkDeviceMemory memory;
    VkImageView view;
    VkFormat format;
    uint32_t width, height;
    VkRenderPass pass;                      /* LOAD/STORE pass over the image: a render-target write */
    VkFramebuffer framebuffer;
} host_image;

static uint32_t host_memory_type(host *h, uint32_t bits, VkMemoryPropertyFlags want) {
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(h->pd, &mp);
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return i;
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        if (bits & (1u << i)) return i;
    return 0;
}

/* What a renderer has: a sampled 2-D image it fills by transfer, with a view of its own. */
static void host_image_create(host *h, VkFormat format, uint32_t width, uint32_t height, host_image *out) {
    memset(out, 0, sizeof *out);
    out->format = format, out->width = width, out->height = height;
    VkImageCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO, .imageType = VK_IMAGE_TYPE_2D,
                            .format = format, .extent = {width, height, 1}, .mipLevels = 1, .arrayLayers = 1,
                            .samples = VK_SAMPLE_COUNT_1_BIT, .tiling = VK_IMAGE_TILING_OPTIMAL,
                            .usage = VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT |
                                     (host_can_render ? VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT : 0),
                            .sharingMode = VK_SHARING_MODE_EXCLUSIVE, .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED};
    CHECK(h->vk.vkCreateImage(h->device, &ci, NULL, &out->image) == VK_SUCCESS, "vkCreateImage");
    VkMemoryRequirements req;
    h->vk.vkGetImageMemoryRequirements(h->device, out->image, &req);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                               .memoryTypeIndex = host_memory_type(h, req.memoryTypeBits,
                                                                   VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)};
    CHECK(h->vk.vkAllocateMemory(h->device, &ai, NULL, &out->memory) == VK_SUCCESS, "vkAllocateMemory");
    h->vk.vkBindImageMemory(h->device, out->image, out->memory, 0);
    VkImageViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO, .image = out->image,
                                .viewType = VK_IMAGE_VIEW_TYPE_2D, .format = format,
                                .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    CHECK(h->vk.vkCreateImageView(h->device, &vi, NULL, &out->view) == VK_SUCCESS, "vkCreateImageView");
    if (!host_can_render) return;
    /* A render pass that loads the image as a colour attachment and stores it (no draw): the store is a
     * COLOR_ATTACHMENT_OUTPUT write, which vkvit's own leading barrier (compute + transfer only) does not cover. It
     * waits for the upload's transfer write and leaves the image in GENERAL with no dependency after it. */
    VkAttachmentDescription att = {.format = format, .samples = VK_SAMPLE_COUNT_1_BIT,
                                   .loadOp = VK_ATTACHMENT_LOAD_OP_LOAD, .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
                                   .stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
                                   .stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
                                   .initialLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                                   .finalLayout = VK_IMAGE_LAYOUT_GENERAL};
    VkAttachmentReference ref = {0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
    VkSubpassDescription sub = {.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS, .colorAttachmentCount = 1,
                                .pColorAttachments = &ref};
    /* In: after the upload's transfer write. Out: the final layout transition happens before the colour-output
     * stage of later commands, so that vkvit's barrier from that stage (its src_stage) chains onto it. */
    VkSubpassDependency dep[2] = {
        {.srcSubpass = VK_SUBPASS_EXTERNAL, .dstSubpass = 0, .srcStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT,
         .dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
         .dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT},
        {.srcSubpass = 0, .dstSubpass = VK_SUBPASS_EXTERNAL,
         .srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
         .dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
         .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT, .dstAccessMask = 0},
    };
    VkRenderPassCreateInfo rp = {.sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO, .attachmentCount = 1,
                                 .pAttachments = &att, .subpassCount = 1, .pSubpasses = &sub, .dependencyCount = 2,
                                 .pDependencies = dep};
    CHECK(h->vk.vkCreateRenderPass(h->device, &rp, NULL, &out->pass) == VK_SUCCESS, "vkCreateRenderPass");
    VkFramebufferCreateInfo fb = {.sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO, .renderPass = out->pass,
                                  .attachmentCount = 1, .pAttachments = &out->view, .width = width, .height = height,
                                  .layers = 1};
    CHECK(h->vk.vkCreateFramebuffer(h->device, &fb, NULL, &out->framebuffer) == VK_SUCCESS, "vkCreateFramebuffer");
}

static void host_image_destroy(host *h, host_image *im) {
    if (im->pass) {
        h->vk.vkDestroyFramebuffer(h->device, im->framebuffer, NULL);
        h->vk.vkDestroyRenderPass(h->device, im->pass, NULL);
    }
    h->vk.vkDestroyImageView(h->device, im->view, NULL);
    h->vk.vkDestroyImage(h->device, im->image, NULL);
    h->vk.vkFreeMemory(h->device, im->memory, NULL);
}

static void image_barrier(host *h, VkCommandBuffer cmd, VkImage image, VkImageLayout from, VkImageLayout to,
                          VkPipelineStageFlags src_stage, VkAccessFlags src_access, VkPipelineStageFlags dst_stage,
                          VkAccessFlags dst_access) {
    VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, .srcAccessMask = src_access,
                              .dstAccessMask = dst_access, .oldLayout = from, .newLayout = to,
                              .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                              .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .image = image,
                              .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    h->vk.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 0, NULL, 0, NULL, 1, &b);
}

/* Records the upload of `staging` (at `offset`, tightly packed) into the image through TRANSFER_DST_OPTIMAL, then:
 *   SHADER_READ_ONLY_OPTIMAL  a transition barrier that already makes the copy visible to compute reads
 *   GENERAL                   the render pass above, as if the host had just rendered into the image: only vkvit's
 *                             barrier from COLOR_ATTACHMENT_OUTPUT (vkvit_host_image.src_stage/src_access) orders its
 *                             shader reads after that write, so a missing or wrong vkvit barrier is a
 *                             synchronization-validation error. */
static void host_image_upload(host *h, VkCommandBuffer cmd, host_image *im, const vkvit__buffer *staging,
                              uint64_t offset, VkImageLayout layout) {
    /* The previous frame's compute reads of the image came before this overwrite. */
    image_barrier(h, cmd, im->image, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                  VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    VkBufferImageCopy region = {.bufferOffset = offset, .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                                .imageExtent = {im->width, im->height, 1}};
    h->vk.vkCmdCopyBufferToImage(cmd, staging->buffer, im->image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
    if (layout == VK_IMAGE_LAYOUT_GENERAL && !host_can_render) {
        /* A compute-only queue: a transition that chains onto the transfer stage, then vkvit's barrier. */
        image_barrier(h, cmd, im->image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, layout, VK_PIPELINE_STAGE_TRANSFER_BIT,
                      VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    } else if (layout == VK_IMAGE_LAYOUT_GENERAL) {
        VkRenderPassBeginInfo rb = {.sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO, .renderPass = im->pass,
                                    .framebuffer = im->framebuffer, .renderArea = {{0, 0}, {im->width, im->height}}};
        h->vk.vkCmdBeginRenderPass(cmd, &rb, VK_SUBPASS_CONTENTS_INLINE);
        h->vk.vkCmdEndRenderPass(cmd);
    } else {
        image_barrier(h, cmd, im->image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, layout, VK_PIPELINE_STAGE_TRANSFER_BIT,
                      VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
    }
}

static vkvit_host_image host_input(const host_image *im, VkImageLayout layout, uint32_t slot) {
    const bool rendered = layout == VK_IMAGE_LAYOUT_GENERAL && host_can_render; /* host_image_upload */
    return (vkvit_host_image){
        .image = im->image, .view = im->view, .format = im->format, .layout = layout, .width = im->width,
        .height = im->height, .slot = slot,
        .src_stage = rendered ? VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT : VK_PIPELINE_STAGE_TRANSFER_BIT,
        .src_access = rendered ? VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT : VK_ACCESS_TRANSFER_WRITE_BIT};
}

typedef struct frame_ctx {
    host *h;
    vkvit_ctx *ctx;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    vkvit__buffer staging;                  /* the pictures, tightly packed, one after another */
    uint64_t staging_offset[B];
    vkvit__buffer out;                      /* the host's result buffer (host-visible) */
} frame_ctx;

static void frame_begin(frame_ctx *f) {
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    f->h->vk.vkResetCommandBuffer(f->cmd, 0);
    f->h->vk.vkBeginCommandBuffer(f->cmd, &bi);
    memset(f->out.mapped, 0xff, (size_t)f->out.size); /* poison: NaN floats, class 0xffffffff */
}

static void frame_submit_wait(frame_ctx *f) {
    host *h = f->h;
    h->vk.vkEndCommandBuffer(f->cmd);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &f->cmd};
    h->vk.vkResetFences(h->device, 1, &f->fence);
    CHECK(h->vk.vkQueueSubmit(h->queue, 1, &si, f->fence) == VK_SUCCESS, "host submit");
    h->vk.vkWaitForFences(h->device, 1, &f->fence, VK_TRUE, UINT64_MAX);
    if (!f->out.coherent) {
        VkMappedMemoryRange range = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = f->out.memory,
                                     .size = VK_WHOLE_SIZE};
        h->vk.vkInvalidateMappedMemoryRanges(h->device, 1, &range);
    }
}

static vkvit_host_output host_output(frame_ctx *f, vkvit_output_kind kind) {
    return (vkvit_host_output){.kind = kind, .buffer = f->out.buffer, .offset = 16,
                               .dst_stage = VK_PIPELINE_STAGE_HOST_BIT, .dst_access = VK_ACCESS_HOST_READ_BIT};
}

static void compare_logits(const char *what, const float *got, const float *want) {
    double err = max_rel(got, want, (size_t)B * classes_n);
    printf("%-52s logits max rel err vs set_images %.3g\n", what, err);
    CHECK(err <= 1e-5, "%s: logits differ from set_images' by %.3g", what, err);
}

typedef struct refused {
    const char *what;
    vkvit_record_desc rd;
    const char *word;                       /* expected in the error sentence */
} refused;

static void record_ex_matches_set_images(host *h, vkvit_ctx *ctx, vkvit_model *model, const float *want_logits,
                                         const uint32_t *want_c, const float *want_p) {
    vkvit_session *s = NULL;
    MUST(vkvit_session_create(model, &(vkvit_session_desc){.batch = B, .top_k = K, .max_image_pixels = 64 * 48}, &s));
    CHECK(vkvit_session_output_bytes(s, VKVIT_OUTPUT_LOGITS) == (uint64_t)B * classes_n * 4, "logits bytes");
    CHECK(vkvit_session_output_bytes(s, VKVIT_OUTPUT_TOP_K) == (uint64_t)B * K * 8, "top-K bytes");

    frame_ctx f = {.h = h, .ctx = ctx};
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = h->family};
    h->vk.vkCreateCommandPool(h->device, &pi, NULL, &f.pool);
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = f.pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    h->vk.vkAllocateCommandBuffers(h->device, &ai, &f.cmd);
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    h->vk.vkCreateFence(h->device, &fi, NULL, &f.fence);
    uint64_t total = 0;
    for (uint32_t i = 0; i < B; i++) f.staging_offset[i] = total, total += (uint64_t)PICS[i].width * PICS[i].height * 4;
    MUST(vkvit__buffer_create(ctx, total, VKVIT_MEM_UPLOAD, "host staging", &f.staging));
    for (uint32_t i = 0; i < B; i++)
        memcpy((uint8_t *)f.staging.mapped + f.staging_offset[i], pixels[i], (size_t)PICS[i].width * PICS[i].height * 4);
    MUST(vkvit__buffer_create(ctx, 16 + (uint64_t)B * classes_n * 4, VKVIT_MEM_READBACK, "host results", &f.out));

    /* The host's images: picture 0 as RGBA8 UNORM, picture 1 (BGRA bytes) as BGRA8 UNORM, picture 2 as RGBA8 SRGB
     * (vkvit re-encodes the linear values the view returns, so it must equal the UNORM bytes). */
    host_image im[B];
    const VkFormat formats[B] = {VK_FORMAT_R8G8B8A8_UNORM, VK_FORMAT_B8G8R8A8_UNORM, VK_FORMAT_R8G8B8A8_SRGB};
    for (uint32_t i = 0; i < B; i++) host_image_create(h, formats[i], PICS[i].width, PICS[i].height, &im[i]);
    float *got = malloc((size_t)B * classes_n * sizeof *got);

    /* Frames 1 and 2: all three slots from images, SHADER_READ_ONLY_OPTIMAL then GENERAL; logits then top-K. */
    const VkImageLayout layouts[2] = {VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, VK_IMAGE_LAYOUT_GENERAL};
    for (int frame = 0; frame < 2; frame++) {
        frame_begin(&f);
        vkvit_host_image in[B];
        for (uint32_t i = 0; i < B; i++) {
            host_image_upload(h, f.cmd, &im[i], &f.staging, f.staging_offset[i], layouts[frame]);
            in[i] = host_input(&im[i], layouts[frame], i);
        }
        vkvit_record_desc rd = {.images = in, .image_count = B,
                                .output = host_output(&f, frame == 0 ? VKVIT_OUTPUT_LOGITS : VKVIT_OUTPUT_TOP_K)};
        MUST(vkvit_session_record_ex(s, f.cmd, &rd));
        frame_submit_wait(&f);
        const uint8_t *res = (const uint8_t *)f.out.mapped + 16;
        if (frame == 0) {
            memcpy(got, res, (size_t)B * classes_n * sizeof *got);
            compare_logits("images RGBA8/BGRA8/SRGB, SHADER_READ_ONLY -> logits", got, want_logits);
        } else {
            uint32_t c[B * K];
            float p[B * K];
            memcpy(c, res, sizeof c);
            memcpy(p, res + sizeof c, sizeof p);
            double err = 0.0;
            bool same = true;
            for (uint32_t i = 0; i < B * K; i++) {
                same = same && c[i] == want_c[i];
                err = fmax(err, isnan(p[i]) ? INFINITY : fabs((double)p[i] - want_p[i]));
            }
            printf("%-52s top-K classes %s, probabilities max abs err %.3g\n", "rendered images, GENERAL layout -> top-K",
                   same ? "equal" : "DIFFER", err);
            CHECK(same && err <= 1e-6, "top-K into the host buffer differs from get_top_k (err %.3g)", err);
        }
    }

    /* Frame 3: slots 0 and 1 from host buffers the CPU wrote (RGBA8 with padded rows at an unaligned offset,
     * BGRA8), slot 2 from the sRGB image. */
    const uint32_t pad = 16, row0 = PICS[0].width * 4 + pad, off0 = 260;
    vkvit__buffer px;
    const uint64_t off1 = off0 + (uint64_t)row0 * PICS[0].height + 64;
    MUST(vkvit__buffer_create(ctx, off1 + (uint64_t)PICS[1].width * PICS[1].height * 4, VKVIT_MEM_UPLOAD,
                              "host pixels", &px));
    for (uint32_t y = 0; y < PICS[0].height; y++)
        memcpy((uint8_t *)px.mapped + off0 + (uint64_t)y * row0, pixels[0] + (size_t)y * PICS[0].width * 4,
               PICS[0].width * 4);
    memcpy((uint8_t *)px.mapped + off1, pixels[1], (size_t)PICS[1].width * PICS[1].height * 4);
    vkvit_host_pixels bufs[2] = {
        {.buffer = px.buffer, .offset = off0, .width = PICS[0].width, .height = PICS[0].height, .row_bytes = row0,
         .format = VKVIT_PIXEL_RGBA8, .slot = 0, .src_stage = VK_PIPELINE_STAGE_HOST_BIT,
         .src_access = VK_ACCESS_HOST_WRITE_BIT},
        {.buffer = px.buffer, .offset = off1, .width = PICS[1].width, .height = PICS[1].height,
         .format = VKVIT_PIXEL_BGRA8, .slot = 1, .src_stage = VK_PIPELINE_STAGE_HOST_BIT,
         .src_access = VK_ACCESS_HOST_WRITE_BIT},
    };
    frame_begin(&f);
    host_image_upload(h, f.cmd, &im[2], &f.staging, f.staging_offset[2], VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
    vkvit_host_image in2 = host_input(&im[2], VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 2);
    vkvit_record_desc rd3 = {.images = &in2, .image_count = 1, .pixels = bufs, .pixels_count = 2,
                             .output = host_output(&f, VKVIT_OUTPUT_LOGITS)};
    MUST(vkvit_session_record_ex(s, f.cmd, &rd3));
    frame_submit_wait(&f);
    memcpy(got, (const uint8_t *)f.out.mapped + 16, (size_t)B * classes_n * sizeof *got);
    compare_logits("buffers RGBA8 (padded, offset 260) + BGRA8, image SRGB", got, want_logits);

    /* Frame 4: no host output buffer: the result is read with get_output after the host's wait. */
    frame_begin(&f);
    host_image_upload(h, f.cmd, &im[1], &f.staging, f.staging_offset[1], VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
    vkvit_host_image in1 = host_input(&im[1], VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 1);
    MUST(vkvit_session_record_ex(s, f.cmd, &(vkvit_record_desc){.images = &in1, .image_count = 1}));
    frame_submit_wait(&f);
    for (size_t i = 0; i < (size_t)B * classes_n; i++) got[i] = NAN;
    MUST(vkvit_session_get_output(s, got, (size_t)B * classes_n));
    compare_logits("one image, output kind NONE -> get_output", got, want_logits);

    /* Refused descs: each check fails before anything is recorded. */
    frame_begin(&f);
    refused cases[14];
    int n = 0;
    vkvit_host_image bad_slot = host_input(&im[0], VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, B), bad_format = host_input(&im[0], VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 0);
    bad_format.format = VK_FORMAT_R8G8B8A8_SNORM;
    vkvit_host_image bad_layout = host_input(&im[0], VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 0);
    vkvit_host_image too_big = host_input(&im[0], VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 0);
    too_big.width = too_big.height = 1000;
    vkvit_host_image twice[2] = {host_input(&im[0], VK_IMAGE_LAYOUT_GENERAL, 1),
                                 host_input(&im[1], VK_IMAGE_LAYOUT_GENERAL, 1)};
    vkvit_host_pixels odd = bufs[1];
    odd.offset = 2;
    /* offsets no buffer has: past its end, and near 2^64 where offset + range wraps (found by an API sweep: they
     * reached a descriptor) */
    vkvit_host_pixels past_end = bufs[1], wrapping = bufs[1];
    past_end.offset = 1u << 30;
    wrapping.offset = UINT64_MAX - 3;
    cases[n++] = (refused){"slot out of range", {.images = &bad_slot, .image_count = 1}, "outside the batch"};
    cases[n++] = (refused){"SNORM format", {.images = &bad_format, .image_count = 1}, "format"};
    cases[n++] = (refused){"TRANSFER_DST layout", {.images = &bad_layout, .image_count = 1}, "layout"};
    cases[n++] = (refused){"larger than the scratch", {.images = &too_big, .image_count = 1},
                                    "max_image_pixels"};
    cases[n++] = (refused){"slot twice", {.images = twice, .image_count = 2}, "two inputs"};
    cases[n++] = (refused){"pixels offset 2", {.pixels = &odd, .pixels_count = 1}, "multiples of 4"};
    cases[n++] = (refused){"output offset 2", {.output = {.kind = VKVIT_OUTPUT_LOGITS, .buffer = f.out.buffer,
                                                                   .offset = 2}}, "multiple of 4"};
    cases[n++] = (refused){"pixels past the buffer's end", {.pixels = &past_end, .pixels_count = 1}, "past the end"};
    cases[n++] = (refused){"pixels offset 2^64 - 4", {.pixels = &wrapping, .pixels_count = 1}, "past the end"};
    cases[n++] = (refused){"output past the buffer's end", {.output = {.kind = VKVIT_OUTPUT_LOGITS,
                                                                       .buffer = f.out.buffer, .offset = 1u << 30}},
                           "past the end"};
    cases[n++] = (refused){"output offset 2^64 - 4", {.output = {.kind = VKVIT_OUTPUT_LOGITS, .buffer = f.out.buffer,
                                                                 .offset = UINT64_MAX - 3}}, "past the end"};
    cases[n++] = (refused){"images NULL", {.image_count = 1}, "NULL"};
    /* counts whose 32-bit sum wraps to 0 are still checked (found by an API sweep: they were taken for "none") */
    cases[n++] = (refused){"images NULL, counts wrapping to 0", {.image_count = UINT32_MAX, .pixels_count = 1},
                           "NULL"};
    cases[n++] = (refused){"counts wrapping to 0", {.images = twice, .image_count = 0x80000000u, .pixels = bufs,
                                                    .pixels_count = 0x80000000u}, "4294967296 inputs for a batch"};
    for (int i = 0; i < n; i++) {
        vkvit_result r = vkvit_session_record_ex(s, f.cmd, &cases[i].rd);
        CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT, "%s: got %s", cases[i].what, vkvit_result_name(r));
        CHECK(strstr(vkvit_last_error(), cases[i].word) != NULL, "%s: message '%s' lacks '%s'", cases[i].what,
              vkvit_last_error(), cases[i].word);
        CHECK(!strncmp(vkvit_last_error(), "vkvit_session_record_ex '", 25) &&
                  !strstr(vkvit_last_error() + 1, "vkvit_session_record_ex"),
              "%s: the sentence should name the call once, first: '%s'", cases[i].what, vkvit_last_error());
    }
    vkvit_session *plain = NULL;
    MUST(vkvit_session_create(model, NULL, &plain));
    vkvit_result r = vkvit_session_record_ex(plain, f.cmd, &(vkvit_record_desc){.output = host_output(&f, VKVIT_OUTPUT_TOP_K)});
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "top_k"), "top-K output without top_k: %s",
          vkvit_last_error());
    vkvit_host_image one = host_input(&im[0], VK_IMAGE_LAYOUT_GENERAL, 0);
    r = vkvit_session_record_ex(plain, f.cmd, &(vkvit_record_desc){.images = &one, .image_count = 1});
    CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), "max_image_pixels"),
          "an image into a session without max_image_pixels: %s", vkvit_last_error());
    vkvit_session_destroy(plain);
    frame_submit_wait(&f); /* the refused calls recorded nothing: an empty command buffer */

    free(got);
    for (uint32_t i = 0; i < B; i++) host_image_destroy(h, &im[i]);
    vkvit__buffer_destroy(ctx, &px);
    vkvit__buffer_destroy(ctx, &f.staging);
    vkvit__buffer_destroy(ctx, &f.out);
    h->vk.vkDestroyFence(h->device, f.fence, NULL);
    h->vk.vkDestroyCommandPool(h->device, f.pool, NULL);
    vkvit_session_destroy(s);
}

int main(void) {
    host h;
    host_create(&h);
    vkvit_ctx *ctx = host_adopt(&h, "gpu input");
    VkQueueFamilyProperties qf[16];
    uint32_t nq = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(h.pd, &nq, qf);
    host_can_render = h.family < nq && (qf[h.family].queueFlags & VK_QUEUE_GRAPHICS_BIT);
    vkvit_model *model = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODEL ".vkvit"}, &model));
    vkvit_model_info info;
    MUST(vkvit_model_get_info(model, &info));
    classes_n = info.num_classes;
    for (int c = 0; c < 3; c++) mean_[c] = info.mean[c], std_[c] = info.std[c];
    CHECK(info.image_height == 32 && info.resize_shorter == 32 && info.bicubic, "unexpected test model");
    for (uint32_t i = 0; i < B; i++) {
        size_t n = (size_t)PICS[i].width * PICS[i].height * 4;
        pixels[i] = malloc(n);
        for (size_t j = 0; j < n; j++) pixels[i][j] = (uint8_t)vt_rand_u32();
    }
    float *logits = malloc((size_t)B * classes_n * sizeof *logits);
    uint32_t top_c[B * K];
    float top_p[B * K];
    set_images_matches_reference(ctx, model, logits, top_c, top_p);
    record_ex_matches_set_images(&h, ctx, model, logits, top_c, top_p);

    free(logits);
    for (uint32_t i = 0; i < B; i++) free(pixels[i]);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
    CHECK(host_device_works(&h), "the host device no longer works");
    host_destroy(&h);
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
