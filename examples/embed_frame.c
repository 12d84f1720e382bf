// SPDX-License-Identifier: Apache-2.0
/* embed_frame — vkvit inside a renderer's frame, the way a game or AR app uses it (docs/embedding.md).
 *
 * The app owns everything a renderer owns: its VkInstance (validation layer + synchronization validation when
 * asked), its VkDevice (created with the extensions vkvit asks for and the features the device has), its queue,
 * command buffers, fences, images and timestamp queries. Each frame it
 *   1. draws a procedural scene into an RGBA8 VkImage with a compute shader of its own (examples/scene.comp),
 *   2. records, into the same command buffer, vkvit's GPU pre-processing of that image, the classifier and top-K,
 *      with the result copied into a host-visible VkBuffer of its own (vkvit_session_record_ex),
 *   3. submits the command buffer with its own fence and goes on to the next frame without waiting;
 * and reads frame N's top-1 back while frame N+1 is in flight (two frames in flight: every per-frame resource,
 * including the vkvit session, exists twice). GPU timestamps split each frame into the app's work and vkvit's.
 *
 *   embed_frame [--model FILE] [--frames N] [--size WxH] [--validation] [--check]
 *
 * Exit codes: 0 ok, 1 error (or any validation message with --validation), 2 usage, 77 no Vulkan device. */
#include "vkvit.h"
#include "scene_spv.h" /* embed_scene_spv: examples/scene.comp compiled at build time */

#include <volk.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IN_FLIGHT 2

#define EXAMPLE_NAME "embed_frame"
#include "example_app.h"

/* ------------------------------------------------------------------------------------------------------------
 * Per-frame resources (IN_FLIGHT of each)
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct frame {
    VkImage image;                          /* the app's render target: RGBA8, storage (scene) + sampled (vkvit) */
    VkDeviceMemory image_memory;
    VkImageView view;
    VkDescriptorSet scene_set;
    VkBuffer result;                        /* host-visible: vkvit's top-K lands here */
    VkDeviceMemory result_memory;
    void *result_mapped;
    VkDeviceSize result_bytes;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool timestamps;                 /* 0: frame start, 1: scene done, 2: vkvit done */
    vkvit_session *session;                 /* one per frame in flight: a session's arena serves one frame at a time */
    int number;                             /* the frame it last carried, -1 = none */
} frame;

typedef struct scene {
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool pool;
} scene;

typedef struct scene_push {
    uint32_t width, height;
    float time;
} scene_push;

static void scene_create(app *a, scene *sc) {
    VkDescriptorSetLayoutBinding b = {.binding = 0, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE,
                                      .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo sli = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 1, .pBindings = &b};
    VK_CHECK(vkCreateDescriptorSetLayout(a->device, &sli, NULL, &sc->set_layout));
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = sizeof(scene_push)};
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                      .pSetLayouts = &sc->set_layout, .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &pr};
    VK_CHECK(vkCreatePipelineLayout(a->device, &pli, NULL, &sc->layout));
    VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = sizeof embed_scene_spv, .pCode = embed_scene_spv};
    VkShaderModule module;
    VK_CHECK(vkCreateShaderModule(a->device, &mi, NULL, &module));
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module, .pName = "main"},
        .layout = sc->layout,
    };
    VK_CHECK(vkCreateComputePipelines(a->device, VK_NULL_HANDLE, 1, &ci, NULL, &sc->pipeline));
    vkDestroyShaderModule(a->device, module, NULL);
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, .descriptorCount = IN_FLIGHT};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = IN_FLIGHT,
                                      .poolSizeCount = 1, .pPoolSizes = &ps};
    VK_CHECK(vkCreateDescriptorPool(a->device, &dpi, NULL, &sc->pool));
}

static void frame_create(app *a, const scene *sc, VkCommandPool pool, uint32_t w, uint32_t h, VkDeviceSize result_bytes,
                         frame *f) {
    memset(f, 0, sizeof *f);
    f->number = -1;
    VkImageCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO, .imageType = VK_IMAGE_TYPE_2D,
                            .format = VK_FORMAT_R8G8B8A8_UNORM, .extent = {w, h, 1}, .mipLevels = 1, .arrayLayers = 1,
                            .samples = VK_SAMPLE_COUNT_1_BIT, .tiling = VK_IMAGE_TILING_OPTIMAL,
                            .usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_SAMPLED_BIT |
                                     VK_IMAGE_USAGE_TRANSFER_SRC_BIT, /* --check copies it back */
                            .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED};
    VK_CHECK(vkCreateImage(a->device, &ii, NULL, &f->image));
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(a->device, f->image, &req);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size};
    ai.memoryTypeIndex = app_memory_type(a, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    VK_CHECK(vkAllocateMemory(a->device, &ai, NULL, &f->image_memory));
    VK_CHECK(vkBindImageMemory(a->device, f->image, f->image_memory, 0));
    VkImageViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO, .image = f->image,
                                .viewType = VK_IMAGE_VIEW_TYPE_2D, .format = VK_FORMAT_R8G8B8A8_UNORM,
                                .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    VK_CHECK(vkCreateImageView(a->device, &vi, NULL, &f->view));

    VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = sc->pool, .descriptorSetCount = 1,
                                       .pSetLayouts = &sc->set_layout};
    VK_CHECK(vkAllocateDescriptorSets(a->device, &dai, &f->scene_set));
    VkDescriptorImageInfo di = {.imageView = f->view, .imageLayout = VK_IMAGE_LAYOUT_GENERAL};
    VkWriteDescriptorSet wr = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = f->scene_set,
                               .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE,
                               .pImageInfo = &di};
    vkUpdateDescriptorSets(a->device, 1, &wr, 0, NULL);

    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = result_bytes,
                             .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    VK_CHECK(vkCreateBuffer(a->device, &bi, NULL, &f->result));
    vkGetBufferMemoryRequirements(a->device, f->result, &req);
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = app_memory_type(a, req.memoryTypeBits,
                                         VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    VK_CHECK(vkAllocateMemory(a->device, &ai, NULL, &f->result_memory));
    VK_CHECK(vkBindBufferMemory(a->device, f->result, f->result_memory, 0));
    VK_CHECK(vkMapMemory(a->device, f->result_memory, 0, VK_WHOLE_SIZE, 0, &f->result_mapped));
    f->result_bytes = result_bytes;

    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    VK_CHECK(vkAllocateCommandBuffers(a->device, &cai, &f->cmd));
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_CHECK(vkCreateFence(a->device, &fi, NULL, &f->fence));
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 3};
    VK_CHECK(vkCreateQueryPool(a->device, &qi, NULL, &f->timestamps));
}

static void frame_destroy(app *a, frame *f) {
    vkvit_session_destroy(f->session);      /* before the model and the ctx */
    vkDestroyQueryPool(a->device, f->timestamps, NULL);
    vkDestroyFence(a->device, f->fence, NULL);
    vkDestroyBuffer(a->device, f->result, NULL);
    vkFreeMemory(a->device, f->result_memory, NULL);
    vkDestroyImageView(a->device, f->view, NULL);
    vkDestroyImage(a->device, f->image, NULL);
    vkFreeMemory(a->device, f->image_memory, NULL);
}

/* ------------------------------------------------------------------------------------------------------------
 * One frame: the app's scene, then vkvit, in one command buffer
 * ------------------------------------------------------------------------------------------------------------ */

static void frame_record(const scene *sc, frame *f, uint32_t w, uint32_t h, int number) {
    VkCommandBuffer cmd = f->cmd;
    /* Poison the result (class 0xffffffff, probability NaN) so that a frame vkvit did not write cannot pass as one
     * it did; host writes before vkQueueSubmit are visible to the device. */
    memset(f->result_mapped, 0xff, (size_t)f->result_bytes);
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VK_CHECK(vkResetCommandBuffer(cmd, 0));
    VK_CHECK(vkBeginCommandBuffer(cmd, &begin));
    vkCmdResetQueryPool(cmd, f->timestamps, 0, 3);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, f->timestamps, 0);

    /* The app's work: discard the image's old contents (vkvit's read of it two frames ago must finish first: a
     * write-after-read needs only an execution dependency) and draw the scene in GENERAL layout. */
    VkImageMemoryBarrier to_general = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, .srcAccessMask = 0,
        .dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
        .oldLayout = VK_IMAGE_LAYOUT_UNDEFINED, .newLayout = VK_IMAGE_LAYOUT_GENERAL,
        .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .image = f->image, .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, NULL, 0,
                         NULL, 1, &to_general);
    scene_push push = {w, h, 0.5f * (float)number};
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, sc->pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, sc->layout, 0, 1, &f->scene_set, 0, NULL);
    vkCmdPushConstants(cmd, sc->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
    vkCmdDispatch(cmd, (w + 7) / 8, (h + 7) / 8, 1);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, f->timestamps, 1);

    /* vkvit's work, in the same command buffer: it puts the barrier on the image itself from the stage and access
     * of the app's last write, pre-processes, classifies, and copies the top-K into the app's result buffer with a
     * barrier towards the app's host read. */
    vkvit_host_image in = {
        .image = f->image, .view = f->view, .format = VK_FORMAT_R8G8B8A8_UNORM, .layout = VK_IMAGE_LAYOUT_GENERAL,
        .width = w, .height = h, .slot = 0,
        .src_stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, .src_access = VK_ACCESS_SHADER_WRITE_BIT,
    };
    vkvit_record_desc rd = {
        .images = &in, .image_count = 1,
        .output = {.kind = VKVIT_OUTPUT_TOP_K, .buffer = f->result, .offset = 0,
                   .dst_stage = VK_PIPELINE_STAGE_HOST_BIT, .dst_access = VK_ACCESS_HOST_READ_BIT},
    };
    VKVIT_CHECK(vkvit_session_record_ex(f->session, cmd, &rd));
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, f->timestamps, 2);
    VK_CHECK(vkEndCommandBuffer(cmd));
    f->number = number;
}

/* The frame's top-1 and its GPU times, after its fence. */
typedef struct frame_stats {
    double scene_ms, vkvit_ms;
    bool valid;                             /* a class in range and a finite probability */
} frame_stats;

static frame_stats frame_read(const app *a, const vkvit_model *model, frame *f, uint32_t top_k, uint32_t classes_n) {
    VK_CHECK(vkWaitForFences(a->device, 1, &f->fence, VK_TRUE, UINT64_MAX));
    uint64_t t[3];
    VK_CHECK(vkGetQueryPoolResults(a->device, f->timestamps, 0, 3, sizeof t, t, sizeof t[0],
                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    frame_stats st = {(double)(t[1] - t[0]) * a->timestamp_period_ns * 1e-6,
                      (double)(t[2] - t[1]) * a->timestamp_period_ns * 1e-6, false};
    const uint32_t *classes = f->result_mapped;                              /* [1, top_k] */
    const float *probs = (const float *)((const uint8_t *)f->result_mapped + top_k * 4); /* [1, top_k] */
    st.valid = classes[0] < classes_n && isfinite(probs[0]) && probs[0] > 0 && probs[0] <= 1;
    if (!st.valid) fprintf(stderr, "embed_frame: frame %d: no valid result (class %u, p %g)\n", f->number, classes[0],
                           probs[0]);
    const char *label = vkvit_model_label(model, classes[0]);
    char fallback[32];
    if (!label) snprintf(fallback, sizeof fallback, "class %u", classes[0]), label = fallback;
    printf("frame %3d   GPU: scene %7.3f ms   vkvit %8.3f ms   top-1: %-16s p = %.3f\n", f->number, st.scene_ms,
           st.vkvit_ms, label, probs[0]);
    f->number = -1;
    return st;
}

/* --check: the last frame's top-K, computed on the GPU inside the frame from the app's VkImage, against vkvit's
 * host path on the same pixels (the image copied back to the CPU, vkvit_session_set_images, vkvit_session_run,
 * vkvit_session_get_top_k). Same classes, probabilities within 1e-5. Returns the number of mismatches. */
static int frame_check(app *a, frame *f, uint32_t w, uint32_t h, uint32_t top_k) {
    VkDeviceSize bytes = (VkDeviceSize)w * h * 4;
    VkBuffer buf;
    VkDeviceMemory mem;
    void *pixels;
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = bytes,
                             .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    VK_CHECK(vkCreateBuffer(a->device, &bi, NULL, &buf));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(a->device, buf, &req);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size};
    ai.memoryTypeIndex = app_memory_type(a, req.memoryTypeBits,
                                         VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    VK_CHECK(vkAllocateMemory(a->device, &ai, NULL, &mem));
    VK_CHECK(vkBindBufferMemory(a->device, buf, mem, 0));
    VK_CHECK(vkMapMemory(a->device, mem, 0, VK_WHOLE_SIZE, 0, &pixels));

    /* Copy the image (GENERAL, written by the scene, last read by vkvit's pre-processing) into the buffer. */
    VkCommandBuffer cmd = f->cmd;
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VK_CHECK(vkResetCommandBuffer(cmd, 0));
    VK_CHECK(vkBeginCommandBuffer(cmd, &begin));
    VkImageMemoryBarrier ib = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT, .oldLayout = VK_IMAGE_LAYOUT_GENERAL,
        .newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .image = f->image,
        .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 0, NULL,
                         1, &ib);
    VkBufferImageCopy region = {.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1}, .imageExtent = {w, h, 1}};
    vkCmdCopyImageToBuffer(cmd, f->image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, buf, 1, &region);
    VkBufferMemoryBarrier bb = {.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                                .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT, .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
                                .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .buffer = buf, .size = VK_WHOLE_SIZE};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 0, NULL, 1, &bb, 0, NULL);
    VK_CHECK(vkEndCommandBuffer(cmd));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    VK_CHECK(vkResetFences(a->device, 1, &f->fence));
    VK_CHECK(vkQueueSubmit(a->queue, 1, &si, f->fence));
    VK_CHECK(vkWaitForFences(a->device, 1, &f->fence, VK_TRUE, UINT64_MAX));

    /* vkvit's host path on the same pixels, in the same session (idle: its frame has completed). */
    vkvit_image img = {.pixels = pixels, .width = w, .height = h, .format = VKVIT_PIXEL_RGBA8};
    uint32_t classes[VKVIT_MAX_TOP_K];
    float probs[VKVIT_MAX_TOP_K];
    VKVIT_CHECK(vkvit_session_set_images(f->session, 0, &img, 1));
    VKVIT_CHECK(vkvit_session_run(f->session));
    VKVIT_CHECK(vkvit_session_get_top_k(f->session, classes, probs, top_k));
    const uint32_t *got_classes = f->result_mapped;
    const float *got_probs = (const float *)((const uint8_t *)f->result_mapped + top_k * 4);
    int bad = 0;
    double worst = 0;
    for (uint32_t k = 0; k < top_k; k++) {
        double d = fabs((double)got_probs[k] - (double)probs[k]);
        if (!(d <= 1e-5) || got_classes[k] != classes[k]) {
            fprintf(stderr, "embed_frame: --check: rank %u: in-frame class %u p %.7f, host path class %u p %.7f\n", k,
                    got_classes[k], got_probs[k], classes[k], probs[k]);
            bad++;
        }
        if (d > worst || isnan(d)) worst = d;
    }
    printf("check: last frame's in-frame top-%u vs vkvit_session_set_images on the same pixels: %s (max |dp| %.2g)\n",
           top_k, bad ? "MISMATCH" : "identical classes", worst);
    vkDestroyBuffer(a->device, buf, NULL);
    vkFreeMemory(a->device, mem, NULL);
    return bad;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* ------------------------------------------------------------------------------------------------------------ */

static int usage(void) {
    fprintf(stderr, "usage: embed_frame [--model FILE] [--frames N] [--size WxH] [--validation] [--check]\n"
                    "  --model FILE   vkvit model file (default: %s)\n"
                    "  --frames N     frames to draw and classify, 1..10000 (default 8)\n"
                    "  --size WxH     the scene's size in pixels (default 320x240)\n"
                    "  --validation   validation layer + synchronization validation on the app's instance; any\n"
                    "                 message fails the run (also $VKVIT_VALIDATION=1)\n"
                    "  --check        compare the last frame's top-K with vkvit's host path on the same pixels\n",
            EMBED_DEFAULT_MODEL);
    return 2;
}

int main(int argc, char **argv) {
    const char *model_path = EMBED_DEFAULT_MODEL;
    int frames = 8;
    uint32_t w = 320, h = 240;
    const char *env = getenv("VKVIT_VALIDATION");
    bool validation = env && !strcmp(env, "1"), check = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) model_path = argv[++i];
        else if (!strcmp(argv[i], "--frames") && i + 1 < argc) frames = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            if (sscanf(argv[++i], "%ux%u", &w, &h) != 2) return usage();
        } else if (!strcmp(argv[i], "--validation")) validation = true;
        else if (!strcmp(argv[i], "--check")) check = true;
        else return usage();
    }
    if (frames < 1 || frames > 10000 || w < 1 || h < 1 || w > 8192 || h > 8192) return usage();

    /* The renderer's device, then vkvit on it. */
    app a;
    memset(&a, 0, sizeof a);
    app_create_instance(&a, validation);
    app_create_device(&a);
    vkvit_host_device host = {
        .instance = a.instance, .physical_device = a.pd, .device = a.device, .queue_family_index = a.family,
        .queue = a.queue, .get_instance_proc_addr = vkGetInstanceProcAddr, .api_version = a.api,
        .enabled_device_extensions = a.exts, .enabled_device_extension_count = a.n_exts, .enabled_features = &a.enabled,
    };
    vkvit_ctx *ctx = NULL;
    VKVIT_CHECK(vkvit_ctx_create(&(vkvit_ctx_desc){.label = "embed_frame", .host = &host}, &ctx));
    vkvit_device_info info;
    VKVIT_CHECK(vkvit_ctx_device_info(ctx, &info));
    vkvit_model *model = NULL;
    VKVIT_CHECK(vkvit_model_create(ctx, &(vkvit_model_desc){.path = model_path}, &model));
    vkvit_model_info mi;
    VKVIT_CHECK(vkvit_model_get_info(model, &mi));
    uint32_t top_k = mi.num_classes < 5 ? mi.num_classes : 5;
    printf("device %s (%s); timeline semaphores %s, fp16 storage %s; validation %s\n", info.name, info.driver_name,
           info.timeline_semaphore ? "yes" : "no", info.fp16_storage ? "yes" : "no", validation ? "on" : "off");
    printf("model %s: %ux%u input, %u classes; scene %ux%u; %d frames, %d in flight\n", mi.name, mi.image_width,
           mi.image_height, mi.num_classes, w, h, frames, IN_FLIGHT);

    /* Everything per frame is created up front; the loop below creates and allocates nothing. */
    scene sc;
    scene_create(&a, &sc);
    VkCommandPool pool;
    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = a.family};
    VK_CHECK(vkCreateCommandPool(a.device, &cpi, NULL, &pool));
    frame fr[IN_FLIGHT];
    for (int i = 0; i < IN_FLIGHT; i++) {
        vkvit_session_desc sd = {.label = i ? "frame B" : "frame A", .batch = 1, .top_k = top_k,
                                 .max_image_pixels = (uint64_t)w * h};
        vkvit_session *s = NULL;
        VKVIT_CHECK(vkvit_session_create(model, &sd, &s));
        frame_create(&a, &sc, pool, w, h, vkvit_session_output_bytes(s, VKVIT_OUTPUT_TOP_K), &fr[i]);
        fr[i].session = s;
    }

    double *scene_ms = calloc((size_t)frames, sizeof(double)), *vkvit_ms = calloc((size_t)frames, sizeof(double));
    int n_read = 0, invalid = 0;
    for (int n = 0; n < frames; n++) {
        frame *f = &fr[n % IN_FLIGHT];
        /* This slot's previous frame (n - 2) was read at the end of the last iteration: its fence is signalled. */
        VK_CHECK(vkResetFences(a.device, 1, &f->fence));
        frame_record(&sc, f, w, h, n);
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &f->cmd};
        VK_CHECK(vkQueueSubmit(a.queue, 1, &si, f->fence));
        /* A frame later: read frame n - 1, which has been in flight while frame n was recorded and submitted. */
        frame *prev = &fr[(n + IN_FLIGHT - 1) % IN_FLIGHT];
        if (prev->number >= 0) {
            frame_stats st = frame_read(&a, model, prev, top_k, mi.num_classes);
            scene_ms[n_read] = st.scene_ms, vkvit_ms[n_read] = st.vkvit_ms, n_read++;
            invalid += !st.valid;
        }
    }
    frame *last = &fr[(frames - 1) % IN_FLIGHT];
    frame_stats st = frame_read(&a, model, last, top_k, mi.num_classes);
    scene_ms[n_read] = st.scene_ms, vkvit_ms[n_read] = st.vkvit_ms, n_read++;
    invalid += !st.valid;
    qsort(scene_ms, (size_t)n_read, sizeof(double), cmp_double);
    qsort(vkvit_ms, (size_t)n_read, sizeof(double), cmp_double);
    printf("median GPU time per frame: app scene %.3f ms, vkvit %.3f ms (%d frames)\n", scene_ms[n_read / 2],
           vkvit_ms[n_read / 2], n_read);
    free(scene_ms), free(vkvit_ms);

    /* Teardown in the documented order: the app waits for its frames, sessions, model, ctx, then its own device. */
    VK_CHECK(vkDeviceWaitIdle(a.device));
    int mismatches = check ? frame_check(&a, last, w, h, top_k) : 0;
    for (int i = 0; i < IN_FLIGHT; i++) frame_destroy(&a, &fr[i]);
    vkvit_model_destroy(model);
    vkvit_ctx_destroy(ctx);
    vkDestroyCommandPool(a.device, pool, NULL);
    vkDestroyDescriptorPool(a.device, sc.pool, NULL);
    vkDestroyPipeline(a.device, sc.pipeline, NULL);
    vkDestroyPipelineLayout(a.device, sc.layout, NULL);
    vkDestroyDescriptorSetLayout(a.device, sc.set_layout, NULL);
    vkDestroyDevice(a.device, NULL);
    if (a.messenger) vkDestroyDebugUtilsMessengerEXT(a.instance, a.messenger, NULL);
    vkDestroyInstance(a.instance, NULL);
    if (validation) printf("validation messages: %u\n", g_validation_messages);
    return g_validation_messages || mismatches || invalid ? 1 : 0;
}
