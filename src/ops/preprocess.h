// SPDX-License-Identifier: Apache-2.0
/* src/ops/preprocess — torchvision's Resize(resize_shorter, antialias) + CenterCrop + Normalize on 8-bit pictures,
 * as nodes of the session's graph (docs/preprocessing.md).
 *
 *   geometry      which source pixels each output pixel reads, in exact integers (vkvit__resize_geometry_of)
 *   nodes         per batch slot: preprocess_h (horizontal pass into a scratch buffer) and preprocess_v (vertical
 *                 pass + crop + normalise into the slot of the input), both dispatched indirectly. Per-picture
 *                 sizes are data: a parameter block per slot in host-visible memory holds the geometry and the two
 *                 workgroup counts (0 for a slot without a picture), so one recorded command buffer serves any
 *                 picture size and a run pre-processes and infers N pictures in one submission.
 *   set_images    writes pixels and parameters into mapped memory; nothing is submitted
 *   record_ex     the host's VkImages / VkBuffers go through the same nodes of their slots, with the node's
 *                 descriptor set, kernel (sampled-image source) and indirect command swapped for the recording
 *
 * A session owns one vkvit__imgproc; tests drive it with a graph of their own. */
#ifndef VKVIT_OPS_PREPROCESS_H
#define VKVIT_OPS_PREPROCESS_H

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
 * Parameters and buffers
 * ------------------------------------------------------------------------------------------------------------ */

/* One batch slot's parameter block: mirrors `Params` of shaders/preprocess.glsl (std430, 32-bit scalars). The
 * first 24 bytes are the two passes' VkDispatchIndirectCommand. */
typedef struct vkvit__preprocess_params {
    uint32_t h_groups[3], v_groups[3];
    uint32_t src_offset, src_row_words, flags, row_start, n_rows, crop_w, crop_h, dst_offset;
    int32_t in_w, out_w, base_x, n0_x;
    int32_t in_h, out_h, base_y, n0_y;
    float mean[3], std[3];
    uint32_t orientation;                   /* VKVIT_ROTATE_* | VKVIT_MIRROR; the geometry is the oriented picture's */
    uint32_t yuv;                           /* 0: RGBA / BGRA words; else VKVIT_PREPROCESS_YUV_* */
    uint32_t y_byte, y_row_bytes;           /* YUV planes: byte offsets from the binding's start, row strides */
    uint32_t c0_byte, c1_byte, c_row_bytes;
    uint32_t pad;
} vkvit__preprocess_params;

enum { VKVIT_PREPROCESS_BGRA = 1, VKVIT_PREPROCESS_SRGB = 2 }; /* vkvit__preprocess_params.flags */
enum { VKVIT_PREPROCESS_YUV_NV12 = 1, VKVIT_PREPROCESS_YUV_I420 = 2, VKVIT_PREPROCESS_YUV_BT709 = 4,
       VKVIT_PREPROCESS_YUV_FULL = 8 };     /* vkvit__preprocess_params.yuv */

/* The planes of a picture as the horizontal pass reads them (set_images' and record_ex's sources alike): its
 * stored size, byte sizes and the oriented size the geometry is of. */
typedef struct vkvit__frame_layout {
    uint32_t oriented_w, oriented_h;
    uint64_t y_row_bytes, y_bytes;          /* RGBA: the one plane (row_bytes, height rows) */
    uint64_t c_row_bytes, c_rows, c_bytes;  /* each chroma plane (0 for RGBA) */
    uint32_t planes;                        /* 1 (RGBA), 2 (NV12), 3 (I420) */
} vkvit__frame_layout;

/* The layout of a width x height picture of `format` (row_bytes and chroma_row_bytes 0: tight), or a sentence
 * (VKVIT_ERROR_BAD_IMAGE for an unknown format, yuv encoding or orientation, _INVALID_ARGUMENT for short rows). */
vkvit_result vkvit__frame_layout_of(uint32_t width, uint32_t height, uint32_t row_bytes, vkvit_pixel_format format,
                                    uint32_t chroma_row_bytes, vkvit_yuv_encoding yuv, uint32_t orientation,
                                    vkvit__frame_layout *out);

/* The record target's external buffers the nodes bind (vkvit__record_target.external[]). */
enum { VKVIT_PREPROCESS_EXT_PARAMS, VKVIT_PREPROCESS_EXT_UPLOAD, VKVIT_PREPROCESS_EXT_SCRATCH, VKVIT_PREPROCESS_N_EXT };

/* Where a slot's picture lies in the upload buffer. */
typedef struct vkvit__imgproc_slot {
    uint64_t offset, capacity;              /* the region; capacity 0: none */
    uint64_t bytes;                         /* the picture in it; 0: no picture (the slot's counts are 0) */
    uint64_t c0_rel, c1_rel;                /* YUV: the chroma planes' bytes from the region's start (Y at 0) */
} vkvit__imgproc_slot;

typedef struct vkvit__imgproc {
    vkvit_ctx *ctx;
    vkvit__imgproc_config cfg;
    uint32_t batch;
    uint64_t param_stride;                  /* bytes between parameter blocks (storage-buffer offset alignment) */
    vkvit__buffer params;                   /* host-visible: 2 * batch blocks; [0, batch) the pictures of
                                               set_images, [batch, 2 * batch) record_ex's host inputs */
    vkvit__buffer upload;                   /* host-visible: set_images' pixels, one region per slot */
    vkvit__buffer scratch;                  /* the horizontal pass's rows, one picture at a time */
    vkvit__imgproc_slot *slots;
    uint64_t upload_end;                    /* end of the last region */
    /* The graph (vkvit__imgproc_add_nodes). */
    vkvit__graph *g;
    uint32_t input;                         /* the input tensor [batch, H, W, 3] */
    const vkvit__buffer *input_buffer;      /* the buffer holding it (the arena) */
    uint32_t first_node;                    /* slot k: nodes first_node + 2k (h) and + 2k + 1 (v) */
    uint32_t *t_upload;                     /* per slot: the upload window its h node binds (EXTERNAL) */
    uint32_t t_scratch;
    /* record_ex's host inputs: per slot three swap sets (made by the recording, src/graph/record.c) binding the
     * scratch, the input and the slot's second parameter block, the sampled-image source's kernel one of them
     * uses, and the swaps of one recording. */
    vkvit__kernel_desc image_kernel;        /* the target's one swap kernel */
    uint32_t *t_host_params;                /* per slot: parameter block batch + k (EXTERNAL) */
    vkvit__swap_set_desc *set_descs;        /* slot k: 3k + VKVIT_PREPROCESS_SET_* (after vkvit__imgproc_add_nodes) */
    vkvit__node_swap *swaps;                /* 2 * batch */
} vkvit__imgproc;

enum { VKVIT_PREPROCESS_SET_H_IMAGE, VKVIT_PREPROCESS_SET_H_PIXELS, VKVIT_PREPROCESS_SET_V, VKVIT_PREPROCESS_N_SETS };

/* Creates the parameter blocks (every count 0), a scratch buffer
 * sized for any picture of up to max_pixels pixels and an upload buffer of max_pixels * 4 bytes (a few bytes when
 * max_pixels is 0: set_images grows them). `ctx` must outlive the pre-processor. */
vkvit_result vkvit__imgproc_create(vkvit_ctx *ctx, const vkvit__imgproc_config *cfg, uint32_t batch,
                                   uint64_t max_pixels, vkvit__imgproc *out);
void vkvit__imgproc_destroy(vkvit__imgproc *ip);

/* Adds the 2 * batch nodes (and their EXTERNAL tensors) that write `input` [batch, H, W, 3] (placed: call after
 * vkvit__plan; held in `input_buffer`), describes the swap sets of host inputs and moves the nodes to the front of
 * the graph (on failure, the graph's error, they stay at the end). `g` must outlive `ip`. */
void vkvit__imgproc_add_nodes(vkvit__imgproc *ip, vkvit__graph *g, uint32_t input, const vkvit__buffer *input_buffer);
/* Fills the target's external buffers the nodes bind, and its swap kernel and sets (record_ex's host inputs). */
void vkvit__imgproc_target(const vkvit__imgproc *ip, vkvit__record_target *tg);

/* The checks of vkvit_session_set_images' arguments that need no pre-processing nodes: images not NULL, count > 0,
 * slots first_slot .. first_slot + count - 1 inside the batch. */
vkvit_result vkvit__imgproc_check_args(uint32_t batch, uint32_t first_slot, const vkvit_image *images, uint32_t count,
                                       const char *fn);

/* vkvit_session_set_images' work: checks every image, places the pixels in the upload buffer (growing it or the
 * scratch buffer if needed: the documented exception) and writes the slots' parameters. Nothing is submitted: the
 * next run pre-processes. *rebind is set when a buffer was replaced or a slot's upload window moved: the caller
 * must then call vkvit__record_rebind and record its command buffers again. The caller guarantees that no work
 * reading the buffers is in flight. `fn` names the public function in errors. */
vkvit_result vkvit__imgproc_set_images(vkvit__imgproc *ip, uint32_t first_slot, const vkvit_image *images,
                                       uint32_t count, const char *fn, bool *rebind);
/* Every slot's counts 0 (set_input overwrote the whole input). */
void vkvit__imgproc_clear(vkvit__imgproc *ip);

/* Checks the host inputs of a record_ex desc (slots, formats, sizes, scratch fit) without recording anything. */
vkvit_result vkvit__imgproc_check_inputs(const vkvit__imgproc *ip, const vkvit_record_desc *desc, const char *fn);
/* For the host inputs of `desc` (already checked): writes their parameter blocks and descriptor sets and returns
 * the node swaps to record the graph with (*swaps; the count is returned, 0 without host inputs), which carry the
 * barriers from the host's writes (vkvit__swap_source). */
uint32_t vkvit__imgproc_prepare_inputs(vkvit__imgproc *ip, const vkvit_record_desc *desc,
                                       const vkvit__node_swap **swaps);

#endif /* VKVIT_OPS_PREPROCESS_H */
