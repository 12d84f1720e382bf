/* src/image — what turns pictures into network inputs and logits into answers, on the GPU.
 *
 *   preprocess.c  torchvision's Resize(resize_shorter, antialias) + CenterCrop + Normalize on 8-bit pictures
 *                 (docs/preprocessing.md): the geometry (exact integers), two kernels (horizontal pass into a
 *                 scratch buffer, vertical pass + crop + normalise into the input), vkvit_session_set_images'
 *                 upload-and-run, and the recording of host VkImage / VkBuffer inputs (vkvit_session_record_ex)
 *   topk.c        the softmax + top-K node after the classifier head (part of the session's graph)
 *
 * Sessions own one vkvit__imgproc; tests drive it directly with any destination buffer. */
#ifndef VKVIT_IMAGE_H
#define VKVIT_IMAGE_H

#include "graph/graph.h"

/* ------------------------------------------------------------------------------------------------------------
 * Geometry (pure integer arithmetic, no Vulkan)
 * ------------------------------------------------------------------------------------------------------------ */

/* What the kernels need about one image. */
typedef struct vkvit__imgproc_config {
    uint32_t crop_h, crop_w;                /* the network input H x W */
    uint32_t resize_shorter;                /* >= max(crop_h, crop_w) */
    bool bicubic;                           /* else bilinear */
    float mean[3], std[3];
} vkvit__imgproc_config;

/* One axis of the resize restricted to the crop (shaders/preprocess.glsl): output index crop0 + i (i < crop) has
 * its centre c = (crop0 + i + 0.5) * in / out, and 2 * out * (c - base) = n0 + 2 * in * i. */
typedef struct vkvit__resize_axis {
    uint32_t in, out;                       /* source and resized extent */
    uint32_t crop, crop0;                   /* crop extent and its first resized index */
    int32_t base;                           /* floor(c(crop0)) */
    uint32_t n0;                            /* in [0, 2 * out) */
    uint32_t tap0, tap1;                    /* the source indices the crop reads: [tap0, tap1) */
} vkvit__resize_axis;

typedef struct vkvit__resize_geometry {
    vkvit__resize_axis x, y;
    uint64_t scratch_bytes;                 /* horizontal-pass rows: (y.tap1 - y.tap0) * crop_w * 3 floats */
} vkvit__resize_geometry;

/* The geometry of a width x height picture. Errors: VKVIT_ERROR_BAD_IMAGE (a side of 0 or above
 * VKVIT_MAX_IMAGE_SIDE), VKVIT_ERROR_UNSUPPORTED (so elongated that the exact integer arithmetic would leave 31
 * bits). */
vkvit_result vkvit__resize_geometry_of(const vkvit__imgproc_config *cfg, uint32_t width, uint32_t height,
                                       vkvit__resize_geometry *out);

/* ------------------------------------------------------------------------------------------------------------
 * The pre-processor: kernels, buffers and descriptor sets, all created up front
 * ------------------------------------------------------------------------------------------------------------ */

/* A destination for pre-processed images: the float input tensor [batch, crop_h, crop_w, 3] at `offset` bytes of
 * `buffer`. */
typedef struct vkvit__imgproc_target {
    const vkvit__buffer *buffer;
    uint64_t offset;
} vkvit__imgproc_target;

typedef struct vkvit__imgproc {
    vkvit_ctx *ctx;
    vkvit__imgproc_config cfg;
    uint32_t batch;
    vkvit__imgproc_target host_dst;         /* where set_images writes (what the next run reads from the host side) */
    vkvit__imgproc_target graph_dst;        /* where recorded host inputs are written (the arena's input) */
    vkvit__kernel h_buffer, v;              /* shaders/preprocess_h.comp (buffer source), preprocess_v.comp */
    vkvit__kernel h_image;                  /* preprocess_h.comp, sampled-image source (own set layout) */
    VkDescriptorPool pool;
    VkDescriptorSet set_h_upload, set_v_host, set_v_graph;
    VkDescriptorSet *set_h_image, *set_h_pixels; /* one per batch slot, rewritten by each record_ex */
    vkvit__buffer upload;                   /* set_images' pixels, host-visible */
    vkvit__buffer scratch;                  /* the horizontal pass's rows, one image at a time */
    VkCommandPool cmd_pool;                 /* set_images' own command buffer and fence */
    VkCommandBuffer cmd;
    VkFence fence;
} vkvit__imgproc;

/* Creates the kernels, the descriptor sets, a scratch buffer sized for any picture of up to max_pixels pixels and
 * an upload buffer of max_pixels * 4 bytes (none when max_pixels is 0: set_images creates them on first use).
 * `ctx` and both targets' buffers must outlive the pre-processor. */
vkvit_result vkvit__imgproc_create(vkvit_ctx *ctx, const vkvit__imgproc_config *cfg, uint32_t batch,
                                   uint64_t max_pixels, vkvit__imgproc_target host_dst,
                                   vkvit__imgproc_target graph_dst, vkvit__imgproc *out);
void vkvit__imgproc_destroy(vkvit__imgproc *ip);

/* vkvit_session_set_images' work: checks every image, grows the upload or scratch buffer if needed (the documented
 * exception), uploads and pre-processes into host_dst, and waits. `fn` names the public function in errors. The
 * caller guarantees that no earlier work that touches host_dst is still in flight. */
vkvit_result vkvit__imgproc_set_images(vkvit__imgproc *ip, uint32_t first_slot, const vkvit_image *images,
                                       uint32_t count, const char *fn);

/* Checks the host inputs of a record_ex desc (slots, formats, sizes, scratch fit) without recording anything. */
vkvit_result vkvit__imgproc_check_inputs(const vkvit__imgproc *ip, const vkvit_record_desc *desc, const char *fn);
/* Records the pre-processing of every host input of `desc` into graph_dst (already checked): barriers from the
 * host's writes, the two passes per input, and a barrier making graph_dst visible to the graph's compute reads.
 * The caller has ordered earlier work on graph_dst and the scratch (e.g. vkvit__cmd_barrier_prior_work). */
void vkvit__imgproc_record_inputs(vkvit__imgproc *ip, VkCommandBuffer cmd, const vkvit_record_desc *desc);

/* ------------------------------------------------------------------------------------------------------------
 * Top-K (topk.c)
 * ------------------------------------------------------------------------------------------------------------ */

/* Softmax + top-K of logits [B, N] into a new OUTPUT tensor of 2 * B * K 32-bit words: classes uint32 [B, K], then
 * probabilities float [B, K] (shaders/topk.comp). 1 <= K <= min(VKVIT_MAX_TOP_K, N). */
uint32_t vkvit__op_topk(vkvit__graph *g, const char *name, uint32_t logits, uint32_t B, uint32_t N, uint32_t K);

#endif /* VKVIT_IMAGE_H */
