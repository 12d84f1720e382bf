// SPDX-License-Identifier: Apache-2.0
/* Camera frames in a host VkBuffer through vkvit_session_record_ex (issue 58, "Camera frames"; the conversion
 * itself is checked against the NumPy reference by test_camera_frames.py through set_images): a host application
 * (its own device, validation + synchronization validation) writes an NV12 frame, an I420 frame and an RGBA8
 * picture into one VkBuffer of its own, the planes at odd offsets and in an odd order (chroma before luma), with
 * padded rows, in three orientations, and records them with vkvit_session_record_ex. The session's pre-processed
 * input (vkvit_session_get_input, NaN-poisoned first) and logits (into the host's buffer, poisoned) must equal,
 * bit for bit, those of set_images given the same planes and orientations in a second session: the kernels are
 * the same, only the source binding differs. The RGBA8 picture again as a sampled VkImage with the same orientation
 * (the image source turns its reads the same way), equal too. Random frame bytes from a printed seed (VKVIT_TEST_SEED=S reruns it).
 * Host buffer checks refuse: a missing chroma plane past the buffer's end, an unknown encoding, an orientation of 8. */
#include "host_util.h"
#include "vk/submission.h"

#include <time.h>

#define MODEL VKVIT_SOURCE_DIR "/tests/golden/models/vit5_nvsubq_cls_r4.vkvit"
#define B 3

typedef struct frame {
    vkvit_pixel_format format;
    uint32_t width, height, orientation;
    vkvit_yuv_encoding yuv;
    uint32_t row, c_row;                    /* padded strides */
    uint8_t *planes[3];
    uint64_t plane_bytes[3];
} frame;

static void frame_make(frame *f) {
    const uint32_t hw = (f->width + 1) / 2, hh = (f->height + 1) / 2;
    const bool rgba = f->format == VKVIT_PIXEL_RGBA8;
    f->row = f->width * (rgba ? 4 : 1) + 3 * !rgba + 8 * rgba;
    f->c_row = f->format == VKVIT_PIXEL_NV12 ? 2 * hw + 6 : hw + 5;
    const int n = rgba ? 1 : f->format == VKVIT_PIXEL_NV12 ? 2 : 3;
    for (int p = 0; p < n; p++) {
        f->plane_bytes[p] = p == 0 ? (uint64_t)f->row * f->height : (uint64_t)f->c_row * hh;
        f->planes[p] = malloc(f->plane_bytes[p]);
        for (uint64_t i = 0; i < f->plane_bytes[p]; i++) f->planes[p][i] = (uint8_t)vt_rand_u32();
    }
}

static vkvit_image image_of(const frame *f) {
    return (vkvit_image){.pixels = f->planes[0], .width = f->width, .height = f->height, .row_bytes = f->row,
                         .format = f->format, .chroma = {f->planes[1], f->planes[2]}, .chroma_row_bytes = f->c_row,
                         .yuv = f->yuv, .orientation = f->orientation};
}

int main(void) {
    const char *seed_env = getenv("VKVIT_TEST_SEED");
    const uint32_t seed = seed_env ? (uint32_t)strtoul(seed_env, NULL, 10) : (uint32_t)time(NULL);
    printf("random frames: seed %u (rerun: VKVIT_TEST_SEED=%u)\n", seed, seed);
    vt_rng_state ^= seed;
    frame fr[B] = {
        {.format = VKVIT_PIXEL_NV12, .width = 45, .height = 37, .orientation = VKVIT_ROTATE_90,
         .yuv = VKVIT_YUV_BT601_LIMITED},
        {.format = VKVIT_PIXEL_I420, .width = 40, .height = 51, .orientation = VKVIT_ROTATE_270 | VKVIT_MIRROR,
         .yuv = VKVIT_YUV_BT709_FULL},
        {.format = VKVIT_PIXEL_RGBA8, .width = 48, .height = 33, .orientation = VKVIT_ROTATE_180 | VKVIT_MIRROR},
    };
    for (int i = 0; i < B; i++) frame_make(&fr[i]);

    host h;
    host_create(&h);
    vkvit_ctx *ctx = host_adopt(&h, "camera record_ex");
    vkvit_model *m = NULL;
    MUST(vkvit_model_create(ctx, &(vkvit_model_desc){.path = MODEL}, &m));
    vkvit_session *s = NULL, *ref = NULL;
    MUST(vkvit_session_create(m, &(vkvit_session_desc){.batch = B, .max_image_pixels = 64 * 64, .label = "host"}, &s));
    MUST(vkvit_session_create(m, &(vkvit_session_desc){.batch = B, .label = "set_images"}, &ref));
    const vkvit_shape is = vkvit_session_input_shape(s), os = vkvit_session_output_shape(s);
    const size_t n_in = (size_t)is.dims[0] * is.dims[1] * is.dims[2] * is.dims[3], n_out = (size_t)os.dims[0] * os.dims[1];

    /* The reference: set_images. */
    vkvit_image imgs[B];
    for (int i = 0; i < B; i++) imgs[i] = image_of(&fr[i]);
    MUST(vkvit_session_set_images(ref, 0, imgs, B));
    MUST(vkvit_session_run(ref));
    float *want_in = malloc(n_in * sizeof(float)), *want_out = malloc(n_out * sizeof(float));
    MUST(vkvit_session_get_input(ref, want_in, n_in));
    MUST(vkvit_session_get_output(ref, want_out, n_out));

    /* The host's buffer: per frame its chroma planes first, then its luma, each at an odd (or, for RGBA, a
     * multiple-of-4) offset. */
    uint64_t at = 13, y_off[B], c_off[B][2] = {{0}};
    for (int i = 0; i < B; i++) {
        for (int p = 1; p < 3 && fr[i].planes[p]; p++) c_off[i][p - 1] = at, at += fr[i].plane_bytes[p] + 7;
        if (fr[i].format == VKVIT_PIXEL_RGBA8) at = (at + 3) / 4 * 4;
        y_off[i] = at, at += fr[i].plane_bytes[0] + 5;
    }
    vkvit__buffer px;
    MUST(vkvit__buffer_create(ctx, at, VKVIT_MEM_UPLOAD, "host frames", &px));
    vkvit_host_pixels hp[B];
    for (int i = 0; i < B; i++) {
        memcpy((uint8_t *)px.mapped + y_off[i], fr[i].planes[0], fr[i].plane_bytes[0]);
        for (int p = 1; p < 3 && fr[i].planes[p]; p++)
            memcpy((uint8_t *)px.mapped + c_off[i][p - 1], fr[i].planes[p], fr[i].plane_bytes[p]);
        hp[i] = (vkvit_host_pixels){.buffer = px.buffer, .offset = y_off[i], .width = fr[i].width,
                                    .height = fr[i].height, .row_bytes = fr[i].row, .format = fr[i].format,
                                    .slot = (uint32_t)i, .src_stage = VK_PIPELINE_STAGE_HOST_BIT,
                                    .src_access = VK_ACCESS_HOST_WRITE_BIT,
                                    .chroma_offset = {c_off[i][0], c_off[i][1]}, .chroma_row_bytes = fr[i].c_row,
                                    .yuv = fr[i].yuv, .orientation = fr[i].orientation};
    }
    vkvit__buffer out;
    MUST(vkvit__buffer_create(ctx, 16 + n_out * 4, VKVIT_MEM_READBACK, "host logits", &out));
    memset(out.mapped, 0xff, (size_t)out.size);
    float *nan_in = malloc(n_in * sizeof(float));
    for (size_t i = 0; i < n_in; i++) nan_in[i] = NAN;
    MUST(vkvit_session_set_input(s, nan_in, n_in)); /* poison: every slot must be overwritten by its frame */

    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, .queueFamilyIndex = h.family};
    VkCommandPool pool;
    h.vk.vkCreateCommandPool(h.device, &pi, NULL, &pool);
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    VkCommandBuffer cmd;
    h.vk.vkAllocateCommandBuffers(h.device, &ai, &cmd);
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    h.vk.vkCreateFence(h.device, &fi, NULL, &fence);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    h.vk.vkBeginCommandBuffer(cmd, &bi);
    vkvit_record_desc rd = {.pixels = hp, .pixels_count = B,
                            .output = {.kind = VKVIT_OUTPUT_LOGITS, .buffer = out.buffer, .offset = 16,
                                       .dst_stage = VK_PIPELINE_STAGE_HOST_BIT, .dst_access = VK_ACCESS_HOST_READ_BIT}};
    MUST(vkvit_session_record_ex(s, cmd, &rd));
    h.vk.vkEndCommandBuffer(cmd);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    CHECK(h.vk.vkQueueSubmit(h.queue, 1, &si, fence) == VK_SUCCESS, "host submit");
    h.vk.vkWaitForFences(h.device, 1, &fence, VK_TRUE, UINT64_MAX);
    vkvit__buffer_invalidate(ctx, &out);
    const bool logits_equal = !memcmp((const uint8_t *)out.mapped + 16, want_out, n_out * 4);
    CHECK(logits_equal, "record_ex's logits (host buffer) differ from set_images'");
    /* Again without a host output: the input and logits are then the session's to read after the host's wait. */
    MUST(vkvit_session_set_input(s, nan_in, n_in));
    h.vk.vkResetCommandPool(h.device, pool, 0);
    h.vk.vkBeginCommandBuffer(cmd, &bi);
    rd.output = (vkvit_host_output){0};
    MUST(vkvit_session_record_ex(s, cmd, &rd));
    h.vk.vkEndCommandBuffer(cmd);
    h.vk.vkResetFences(h.device, 1, &fence);
    CHECK(h.vk.vkQueueSubmit(h.queue, 1, &si, fence) == VK_SUCCESS, "host submit");
    h.vk.vkWaitForFences(h.device, 1, &fence, VK_TRUE, UINT64_MAX);
    float *got_out = malloc(n_out * sizeof(float));
    MUST(vkvit_session_get_output(s, got_out, n_out));
    CHECK(!memcmp(got_out, want_out, n_out * 4), "record_ex's logits (get_output) differ from set_images'");
    free(got_out);
    float *got_in = malloc(n_in * sizeof(float));
    for (size_t i = 0; i < n_in; i++) got_in[i] = NAN;
    vkvit_result r = vkvit_session_get_input(s, got_in, n_in);
    CHECK(r == VKVIT_OK || r == VKVIT_ERROR_UNSUPPORTED, "get_input: %s", vkvit_last_error());
    if (r == VKVIT_OK) {
        size_t first_diff = n_in;
        for (size_t i = 0; i < n_in && first_diff == n_in; i++)
            if (memcmp(&got_in[i], &want_in[i], 4)) first_diff = i;
        CHECK(first_diff == n_in, "record_ex's pre-processed input differs from set_images' at %zu (%g vs %g)",
              first_diff, first_diff < n_in ? got_in[first_diff] : 0.0, first_diff < n_in ? want_in[first_diff] : 0.0);
    }
    printf("record_ex NV12 (90), I420 BT.709 full (270 + mirror), RGBA8 (180 + mirror) from one host buffer: input "
           "%s, logits %s set_images'\n", r == VKVIT_OK ? "checked against" : "(unreadable here) vs",
           logits_equal ? "equal to" : "DIFFERENT from");

    /* Slot 2 from a sampled VkImage (RGBA8 UNORM, the same bytes) with the same orientation: the image source
     * turns its reads the same way. */
    {
        VkImageCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO, .imageType = VK_IMAGE_TYPE_2D,
                                .format = VK_FORMAT_R8G8B8A8_UNORM, .extent = {fr[2].width, fr[2].height, 1},
                                .mipLevels = 1, .arrayLayers = 1, .samples = VK_SAMPLE_COUNT_1_BIT,
                                .tiling = VK_IMAGE_TILING_OPTIMAL,
                                .usage = VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
                                .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED};
        VkImage image;
        CHECK(h.vk.vkCreateImage(h.device, &ci, NULL, &image) == VK_SUCCESS, "vkCreateImage");
        VkMemoryRequirements req;
        h.vk.vkGetImageMemoryRequirements(h.device, image, &req);
        VkPhysicalDeviceMemoryProperties mp;
        vkGetPhysicalDeviceMemoryProperties(h.pd, &mp);
        uint32_t type = 0;
        while (type < mp.memoryTypeCount && !(req.memoryTypeBits & (1u << type))) type++;
        VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                                    .memoryTypeIndex = type};
        VkDeviceMemory mem;
        CHECK(h.vk.vkAllocateMemory(h.device, &mai, NULL, &mem) == VK_SUCCESS, "vkAllocateMemory");
        h.vk.vkBindImageMemory(h.device, image, mem, 0);
        VkImageViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO, .image = image,
                                    .viewType = VK_IMAGE_VIEW_TYPE_2D, .format = VK_FORMAT_R8G8B8A8_UNORM,
                                    .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
        VkImageView view;
        CHECK(h.vk.vkCreateImageView(h.device, &vi, NULL, &view) == VK_SUCCESS, "vkCreateImageView");
        MUST(vkvit_session_set_input(s, nan_in, n_in));
        h.vk.vkResetCommandPool(h.device, pool, 0);
        h.vk.vkBeginCommandBuffer(cmd, &bi);
        VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, .srcAccessMask = 0,
                                  .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                                  .oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
                                  .newLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                                  .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                  .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .image = image,
                                  .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
        h.vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 0,
                                  NULL, 1, &b);
        /* The RGBA8 plane in the host buffer, padded rows of fr[2].row bytes: 4-byte texels, row length in texels. */
        VkBufferImageCopy region = {.bufferOffset = y_off[2], .bufferRowLength = fr[2].row / 4,
                                    .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                                    .imageExtent = {fr[2].width, fr[2].height, 1}};
        h.vk.vkCmdCopyBufferToImage(cmd, px.buffer, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
        b.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT, b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
        b.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, b.newLayout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
        h.vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, NULL,
                                  0, NULL, 1, &b);
        vkvit_host_image hi = {.image = image, .view = view, .format = VK_FORMAT_R8G8B8A8_UNORM,
                               .layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, .width = fr[2].width,
                               .height = fr[2].height, .slot = 2, .src_stage = VK_PIPELINE_STAGE_TRANSFER_BIT,
                               .src_access = VK_ACCESS_TRANSFER_WRITE_BIT, .orientation = fr[2].orientation};
        MUST(vkvit_session_record_ex(s, cmd, &(vkvit_record_desc){.pixels = hp, .pixels_count = 2, .images = &hi,
                                                                 .image_count = 1}));
        h.vk.vkEndCommandBuffer(cmd);
        h.vk.vkResetFences(h.device, 1, &fence);
        CHECK(h.vk.vkQueueSubmit(h.queue, 1, &si, fence) == VK_SUCCESS, "host submit");
        h.vk.vkWaitForFences(h.device, 1, &fence, VK_TRUE, UINT64_MAX);
        for (size_t i = 0; i < n_in; i++) got_in[i] = NAN;
        if (vkvit_session_get_input(s, got_in, n_in) == VKVIT_OK)
            CHECK(!memcmp(got_in, want_in, n_in * 4), "record_ex with an oriented VkImage: the input differs from "
                  "set_images'");
        float *img_out = malloc(n_out * sizeof(float));
        MUST(vkvit_session_get_output(s, img_out, n_out));
        CHECK(!memcmp(img_out, want_out, n_out * 4), "record_ex with an oriented VkImage: logits differ");
        printf("record_ex RGBA8 VkImage (180 + mirror) in slot 2: %s set_images'\n",
               !memcmp(img_out, want_out, n_out * 4) ? "equal to" : "DIFFERENT from");
        free(img_out);
        h.vk.vkDestroyImageView(h.device, view, NULL);
        h.vk.vkDestroyImage(h.device, image, NULL);
        h.vk.vkFreeMemory(h.device, mem, NULL);
    }

    /* Refusals, before anything is recorded. */
    h.vk.vkResetCommandPool(h.device, pool, 0);
    h.vk.vkBeginCommandBuffer(cmd, &bi);
    struct {
        const char *what, *word;
        vkvit_host_pixels p;
    } bad[3] = {{"chroma past the end", "past the end", hp[0]}, {"yuv 9", "yuv = 9", hp[1]},
                {"orientation 8", "orientation = 8", hp[2]}};
    bad[0].p.chroma_offset[0] = at - 4;
    bad[1].p.yuv = (vkvit_yuv_encoding)9;
    bad[2].p.orientation = 8;
    for (int i = 0; i < 3; i++) {
        r = vkvit_session_record_ex(s, cmd, &(vkvit_record_desc){.pixels = &bad[i].p, .pixels_count = 1});
        CHECK(r == VKVIT_ERROR_INVALID_ARGUMENT && strstr(vkvit_last_error(), bad[i].word), "%s: %s: %s", bad[i].what,
              vkvit_result_name(r), vkvit_last_error());
    }
    h.vk.vkEndCommandBuffer(cmd);

    h.vk.vkDestroyFence(h.device, fence, NULL);
    h.vk.vkDestroyCommandPool(h.device, pool, NULL);
    vkvit__buffer_destroy(ctx, &px);
    vkvit__buffer_destroy(ctx, &out);
    vkvit_session_destroy(s);
    vkvit_session_destroy(ref);
    vkvit_model_destroy(m);
    const uint32_t n_msgs = vkvit_ctx_validation_messages(ctx, 0);
    CHECK(n_msgs == 0, "%u validation messages", n_msgs);
    vkvit_ctx_destroy(ctx);
    CHECK(host_messages == 0, "%u host validation messages", host_messages);
    host_destroy(&h);
    for (int i = 0; i < B; i++)
        for (int p = 0; p < 3; p++) free(fr[i].planes[p]);
    free(want_in), free(want_out), free(got_in), free(nan_in);
    printf("%d passed, %d failed\n", vt_passed, vt_failed);
    return vt_failed ? 1 : 0;
}
