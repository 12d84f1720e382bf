// SPDX-License-Identifier: Apache-2.0
/* Image pre-processing as graph nodes (docs/preprocessing.md): torchvision's
 *     Resize(resize_shorter, bicubic|bilinear, antialias=True) -> CenterCrop(H, W) -> Normalize(mean, std)
 * on the float image byte / 255, which is PIL's separable resampling (libImaging/Resample.c) in float.
 *
 *   picture (8-bit, any size) --preprocess_h: horizontal resampling, crop columns only, only the source rows the
 *   vertical pass reads--> scratch [rows, W, 3] --preprocess_v: vertical resampling of the crop rows, (v - mean)
 *   / std--> one batch slot of the input [B, H, W, 3]
 *
 * The geometry (which source pixels each output pixel reads) is computed here in exact 64-bit integers and handed
 * to the shaders as integers below 2^31 (shaders/preprocess.glsl explains why); the filter weights are computed in
 * the shaders. The geometry of each slot's picture, and the two passes' workgroup counts, live in a parameter block
 * per slot in host-visible memory: the nodes are dispatched indirectly, so the session records them once, before
 * the network, in its one command buffer, and a slot without a picture costs two empty dispatches. Two users:
 *   vkvit_session_set_images  host pictures: copied into a host-visible upload buffer (one region per slot), the
 *                             slot's parameters written; the next run pre-processes them (no submission here)
 *   vkvit_session_record_ex   host VkImages (sampled, texelFetch) and VkBuffers: the same nodes of their slots,
 *                             recorded with a descriptor set pointing at the host's resource, the sampled-image
 *                             kernel for images, and a second parameter block per slot
 * Both go through one scratch buffer, one picture at a time (the recorder's data-flow barriers order the next
 * slot's horizontal pass after the previous vertical pass), so its size is that of the largest picture, not of the
 * batch. */
#include "ops/preprocess.h"

#include <stddef.h>
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

vkvit_result vkvit__frame_layout_of(uint32_t width, uint32_t height, uint32_t row_bytes, vkvit_pixel_format format,
                                    uint32_t chroma_row_bytes, vkvit_yuv_encoding yuv, uint32_t orientation,
                                    vkvit__frame_layout *out) {
    memset(out, 0, sizeof *out);
    const bool rgba = format == VKVIT_PIXEL_RGBA8 || format == VKVIT_PIXEL_BGRA8;
    if (!rgba && format != VKVIT_PIXEL_NV12 && format != VKVIT_PIXEL_I420)
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "format = %d is none of VKVIT_PIXEL_RGBA8, _BGRA8, _NV12, _I420",
                            (int)format);
    if (!rgba && (uint32_t)yuv > VKVIT_YUV_BT709_FULL)
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "yuv = %d is not a vkvit_yuv_encoding", (int)yuv);
    if (orientation > (VKVIT_ROTATE_270 | VKVIT_MIRROR))
        return vkvit__error(VKVIT_ERROR_BAD_IMAGE, "orientation = %u is not VKVIT_ROTATE_* | VKVIT_MIRROR", orientation);
    const bool turned = (orientation & 1u) != 0;
    out->oriented_w = turned ? height : width;
    out->oriented_h = turned ? width : height;
    const uint64_t min_row = rgba ? (uint64_t)width * 4 : width;
    out->y_row_bytes = row_bytes ? row_bytes : min_row;
    if (out->y_row_bytes < min_row)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "row_bytes = %u is less than %s = %llu", row_bytes,
                            rgba ? "width * 4" : "width", (unsigned long long)min_row);
    out->y_bytes = out->y_row_bytes * (height - 1) + min_row; /* the last row ends at its last pixel */
    out->planes = rgba ? 1 : format == VKVIT_PIXEL_NV12 ? 2 : 3;
    if (rgba) return VKVIT_OK;
    const uint64_t half_w = ((uint64_t)width + 1) / 2, min_c = format == VKVIT_PIXEL_NV12 ? 2 * half_w : half_w;
    out->c_row_bytes = chroma_row_bytes ? chroma_row_bytes : min_c;
    if (out->c_row_bytes < min_c)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "chroma_row_bytes = %u is less than %llu", chroma_row_bytes,
                            (unsigned long long)min_c);
    out->c_rows = ((uint64_t)height + 1) / 2;
    out->c_bytes = out->c_row_bytes * (out->c_rows - 1) + min_c;
    return VKVIT_OK;
}

/* The parameter block's yuv word for a frame of `format` (0 for RGBA8 / BGRA8). */
static uint32_t yuv_bits(vkvit_pixel_format format, vkvit_yuv_encoding yuv) {
    if (format != VKVIT_PIXEL_NV12 && format != VKVIT_PIXEL_I420) return 0;
    return (format == VKVIT_PIXEL_NV12 ? VKVIT_PREPROCESS_YUV_NV12 : VKVIT_PREPROCESS_YUV_I420) |
           (yuv == VKVIT_YUV_BT709_LIMITED || yuv == VKVIT_YUV_BT709_FULL ? VKVIT_PREPROCESS_YUV_BT709 : 0) |
           (yuv == VKVIT_YUV_BT601_FULL || yuv == VKVIT_YUV_BT709_FULL ? VKVIT_PREPROCESS_YUV_FULL : 0);
}

/* ------------------------------------------------------------------------------------------------------------
 * Kernels: preprocess_h (buffer source) and preprocess_v are the nodes' kernels; record_ex swaps in the
 * sampled-image source (its binding 0 is an image), the record target's swap kernel: the recording acquires it
 * (vkvit__kernels_acquire) with the graph's
 * ------------------------------------------------------------------------------------------------------------ */

_Static_assert(sizeof(vkvit__preprocess_params) == 144, "vkvit__preprocess_params mirrors shaders/preprocess.glsl");

static vkvit__kernel_desc h_desc(const vkvit__imgproc_config *cfg) {
    return (vkvit__kernel_desc){.shader = VKVIT_SHADER_PREPROCESS_H_U8_F32, .n_buffers = 3, .n_spec = 1,
                                .spec = {cfg->bicubic}, .label = "preprocess_h"};
}

static vkvit__kernel_desc v_desc(const vkvit__imgproc_config *cfg) {
    return (vkvit__kernel_desc){.shader = VKVIT_SHADER_PREPROCESS_V_F32_F32, .n_buffers = 3, .n_spec = 1,
                                .spec = {cfg->bicubic}, .label = "preprocess_v"};
}

/* The sampled-image variant of the horizontal pass: binding 0 is a VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE (texelFetch,
 * no sampler), bindings 1 and 2 the scratch and parameter storage buffers. */
static vkvit__kernel_desc h_image_desc(const vkvit__imgproc_config *cfg) {
    return (vkvit__kernel_desc){.shader = VKVIT_SHADER_PREPROCESS_H_U8_F32_IMAGE, .n_buffers = 3,
                                .sampled_images = 1u << 0, .n_spec = 1, .spec = {cfg->bicubic},
                                .label = "preprocess_h (image)"};
}

/* ------------------------------------------------------------------------------------------------------------
 * Buffers, parameter blocks and descriptor sets
 * ------------------------------------------------------------------------------------------------------------ */

/* The part of a buffer one storage-buffer descriptor can reach (maxStorageBufferRange: 128 MiB on some devices). */
static uint64_t bindable(const vkvit__imgproc *ip, const vkvit__buffer *b) {
    return VKVIT_MIN(b->size, (uint64_t)ip->ctx->limits.maxStorageBufferRange);
}

static vkvit__preprocess_params *params_of(const vkvit__imgproc *ip, uint32_t block) {
    return (vkvit__preprocess_params *)((uint8_t *)ip->params.mapped + block * ip->param_stride);
}

vkvit_result vkvit__imgproc_create(vkvit_ctx *ctx, const vkvit__imgproc_config *cfg, uint32_t batch,
                                   uint64_t max_pixels, vkvit__imgproc *ip) {
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
    ip->param_stride = VKVIT_MAX(ctx->limits.minStorageBufferOffsetAlignment, (uint64_t)sizeof(vkvit__preprocess_params));
    ip->param_stride = (ip->param_stride + 255) / 256 * 256; /* a multiple of every alignment we know, and of 4 */

    ip->image_kernel = h_image_desc(cfg);
    ip->slots = calloc(batch, sizeof *ip->slots);
    ip->t_upload = calloc(batch, sizeof *ip->t_upload);
    ip->t_host_params = calloc(batch, sizeof *ip->t_host_params);
    ip->swaps = calloc(2 * (size_t)batch, sizeof *ip->swaps);
    if (!ip->slots || !ip->t_upload || !ip->t_host_params || !ip->swaps) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for %u batch slots", batch);
        goto fail;
    }

    if ((res = vkvit__buffer_create(ctx, 2 * batch * ip->param_stride, VKVIT_MEM_UPLOAD, "vkvit image parameters",
                                    &ip->params)) != VKVIT_OK ||
        (res = vkvit__buffer_create(ctx, VKVIT_MAX(max_pixels * 4, 4), VKVIT_MEM_UPLOAD, "vkvit image upload",
                                    &ip->upload)) != VKVIT_OK ||
        (res = vkvit__buffer_create(ctx, VKVIT_MAX(scratch_bound(cfg, max_pixels), 4), VKVIT_MEM_DEVICE,
                                    "vkvit image scratch", &ip->scratch)) != VKVIT_OK)
        goto fail;
    /* What never changes; every count 0 (no picture). */
    for (uint32_t b = 0; b < 2 * batch; b++)
        *params_of(ip, b) = (vkvit__preprocess_params){
            .h_groups = {0, 0, 0}, .v_groups = {0, 0, 0}, .crop_w = cfg->crop_w, .crop_h = cfg->crop_h,
            .dst_offset = (b % batch) * cfg->crop_h * cfg->crop_w * 3,
            .mean = {cfg->mean[0], cfg->mean[1], cfg->mean[2]}, .std = {cfg->std[0], cfg->std[1], cfg->std[2]},
        };
    return VKVIT_OK;
fail:
    vkvit__imgproc_destroy(ip);
    return vkvit__error_prefix(res, "image pre-processing");
}

void vkvit__imgproc_destroy(vkvit__imgproc *ip) {
    if (!ip || !ip->ctx) return;
    vkvit_ctx *ctx = ip->ctx;
    vkvit__buffer_destroy(ctx, &ip->params);
    vkvit__buffer_destroy(ctx, &ip->upload);
    vkvit__buffer_destroy(ctx, &ip->scratch);
    free(ip->slots);
    free(ip->t_upload);
    free(ip->t_host_params);
    free(ip->set_descs);
    free(ip->swaps);
    memset(ip, 0, sizeof *ip);
}

/* ------------------------------------------------------------------------------------------------------------
 * The nodes
 * ------------------------------------------------------------------------------------------------------------ */

static uint32_t external_tensor(vkvit__graph *g, const char *name, uint32_t ext, uint64_t offset, uint64_t bytes) {
    const uint32_t shape = (uint32_t)VKVIT_MIN(VKVIT_MAX(bytes, 1), UINT32_MAX);
    uint32_t t = vkvit__graph_tensor_typed(g, VKVIT_TENSOR_EXTERNAL, VKVIT_ELEM_U8, name, 1, &shape);
    if (t != VKVIT_NONE) {
        g->tensors[t].external = ext;
        g->tensors[t].offset = offset;
        g->tensors[t].bytes = bytes;
    }
    return t;
}

void vkvit__imgproc_add_nodes(vkvit__imgproc *ip, vkvit__graph *g, uint32_t input, const vkvit__buffer *input_buffer) {
    if (g->error) return;
    ip->g = g;
    ip->input = input;
    ip->input_buffer = input_buffer;
    ip->first_node = 0;
    const uint32_t first = g->n_nodes;
    const vkvit__imgproc_config *c = &ip->cfg;
    const vkvit__kernel_desc kh = h_desc(c), kv = v_desc(c);
    ip->t_scratch = external_tensor(g, "preprocess scratch", VKVIT_PREPROCESS_EXT_SCRATCH, 0, bindable(ip, &ip->scratch));
    char name[64];
    for (uint32_t k = 0; k < ip->batch && !g->error; k++) {
        snprintf(name, sizeof name, "preprocess.%u.params", k);
        const uint32_t params = external_tensor(g, name, VKVIT_PREPROCESS_EXT_PARAMS, k * ip->param_stride,
                                                sizeof(vkvit__preprocess_params));
        snprintf(name, sizeof name, "preprocess.%u.host_params", k); /* record_ex's host input of the slot */
        ip->t_host_params[k] = external_tensor(g, name, VKVIT_PREPROCESS_EXT_PARAMS, (ip->batch + k) * ip->param_stride,
                                               sizeof(vkvit__preprocess_params));
        snprintf(name, sizeof name, "preprocess.%u.pixels", k);
        ip->t_upload[k] = external_tensor(g, name, VKVIT_PREPROCESS_EXT_UPLOAD, 0, bindable(ip, &ip->upload));
        /* The largest counts the host may write: every crop column, and source rows up to the largest side. */
        const uint32_t gx = VKVIT_CEIL_DIV(c->crop_w, 16u);
        vkvit__node_binding bh[3] = {{ip->t_upload[k], VKVIT_READ}, {ip->t_scratch, VKVIT_WRITE}, {params, VKVIT_READ}};
        snprintf(name, sizeof name, "preprocess.%u.h", k);
        uint32_t n = vkvit__graph_node(g, name, "preprocess", &kh, bh, 3, NULL, 0, gx,
                                       VKVIT_CEIL_DIV(VKVIT_MAX_IMAGE_SIDE, 4u), 1);
        vkvit__graph_set_indirect(g, n, params, offsetof(vkvit__preprocess_params, h_groups));
        vkvit__node_binding bv[3] = {{ip->t_scratch, VKVIT_READ}, {input, VKVIT_WRITE}, {params, VKVIT_READ}};
        snprintf(name, sizeof name, "preprocess.%u.v", k);
        n = vkvit__graph_node(g, name, "preprocess", &kv, bv, 3, NULL, 0, gx, VKVIT_CEIL_DIV(c->crop_h, 4u), 1);
        vkvit__graph_set_indirect(g, n, params, offsetof(vkvit__preprocess_params, v_groups));
    }
    if (g->error) return;
    /* Per slot, the sets of record_ex's host inputs: a host image's and a host buffer's horizontal pass, and the
     * vertical pass, each on the slot's second parameter block; binding 0 of the first two is the host's source. */
    ip->set_descs = malloc(VKVIT_PREPROCESS_N_SETS * (size_t)ip->batch * sizeof *ip->set_descs);
    if (!ip->set_descs) {
        vkvit__graph_fail(g, VKVIT_ERROR_OUT_OF_HOST_MEMORY, "pre-processing: out of host memory for %u slots' sets",
                          ip->batch);
        return;
    }
    const uint32_t kernel_h = g->nodes[first].kernel, kernel_v = g->nodes[first + 1].kernel;
    for (uint32_t k = 0; k < ip->batch; k++) {
        vkvit__swap_set_desc *d = &ip->set_descs[VKVIT_PREPROCESS_N_SETS * k];
        const uint32_t hp = ip->t_host_params[k];
        d[VKVIT_PREPROCESS_SET_H_IMAGE] = (vkvit__swap_set_desc){true, 0, {VKVIT_NONE, ip->t_scratch, hp}};
        d[VKVIT_PREPROCESS_SET_H_PIXELS] = (vkvit__swap_set_desc){false, kernel_h, {VKVIT_NONE, ip->t_scratch, hp}};
        d[VKVIT_PREPROCESS_SET_V] = (vkvit__swap_set_desc){false, kernel_v, {ip->t_scratch, input, hp}};
    }
    /* Pre-processing runs before everything that reads the input. On failure the nodes stay at the end, where the
     * caller's rollback drops them. */
    vkvit__graph_move_nodes(g, first, 0);
}

void vkvit__imgproc_target(const vkvit__imgproc *ip, vkvit__record_target *tg) {
    tg->external[VKVIT_PREPROCESS_EXT_PARAMS] = &ip->params;
    tg->external[VKVIT_PREPROCESS_EXT_UPLOAD] = &ip->upload;
    tg->external[VKVIT_PREPROCESS_EXT_SCRATCH] = &ip->scratch;
    if (!ip->set_descs) return;
    tg->swap_kernels = &ip->image_kernel;
    tg->n_swap_kernels = 1;
    tg->swap_sets = ip->set_descs;
    tg->n_swap_sets = VKVIT_PREPROCESS_N_SETS * ip->batch;
}

/* The geometry and counts of a picture into parameter block `block` (the source fields are the caller's). */
static void write_geometry(vkvit__imgproc *ip, uint32_t block, const vkvit__resize_geometry *geo) {
    vkvit__preprocess_params *p = params_of(ip, block);
    const vkvit__imgproc_config *c = &ip->cfg;
    p->row_start = geo->y.tap0;
    p->n_rows = geo->y.tap1 - geo->y.tap0;
    p->in_w = (int32_t)geo->x.in, p->out_w = (int32_t)geo->x.out, p->base_x = geo->x.base, p->n0_x = (int32_t)geo->x.n0;
    p->in_h = (int32_t)geo->y.in, p->out_h = (int32_t)geo->y.out, p->base_y = geo->y.base, p->n0_y = (int32_t)geo->y.n0;
    p->h_groups[0] = VKVIT_CEIL_DIV(c->crop_w, 16u), p->h_groups[1] = VKVIT_CEIL_DIV(p->n_rows, 4u), p->h_groups[2] = 1;
    p->v_groups[0] = VKVIT_CEIL_DIV(c->crop_w, 16u), p->v_groups[1] = VKVIT_CEIL_DIV(c->crop_h, 4u), p->v_groups[2] = 1;
}

static void write_no_picture(vkvit__imgproc *ip, uint32_t block) {
    vkvit__preprocess_params *p = params_of(ip, block);
    memset(p->h_groups, 0, sizeof p->h_groups);
    memset(p->v_groups, 0, sizeof p->v_groups);
}

void vkvit__imgproc_clear(vkvit__imgproc *ip) {
    if (!ip->ctx) return;
    for (uint32_t k = 0; k < ip->batch; k++) {
        write_no_picture(ip, k);
        ip->slots[k].bytes = 0;
    }
}

/* ------------------------------------------------------------------------------------------------------------
 * set_images: host pictures into the upload buffer, their geometry into the parameter blocks
 * ------------------------------------------------------------------------------------------------------------ */

static vkvit_result check_image(const vkvit__imgproc *ip, const vkvit_image *im, uint32_t i, const char *fn,
                                vkvit__resize_geometry *geo, vkvit__frame_layout *fl) {
    if (!im->pixels) return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: images[%u].pixels is NULL", fn, i);
    vkvit_result res = vkvit__frame_layout_of(im->width, im->height, im->row_bytes, im->format, im->chroma_row_bytes,
                                              im->yuv, im->orientation, fl);
    if (res == VKVIT_OK && fl->planes > 1 && (!im->chroma[0] || (fl->planes == 3 && !im->chroma[1])))
        res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "a %s frame needs chroma[0]%s", fl->planes == 2 ? "NV12" : "I420",
                           fl->planes == 3 ? " and chroma[1]" : "");
    if (res == VKVIT_OK) res = vkvit__resize_geometry_of(&ip->cfg, fl->oriented_w, fl->oriented_h, geo);
    if (res != VKVIT_OK) return vkvit__error_prefix(res, "%s: images[%u]", fn, i);
    return VKVIT_OK;
}

/* A picture as set_images packs it into its upload region: rows without padding, each plane from a 4-byte
 * boundary (Y or RGBA at 0). */
typedef struct packed_frame {
    uint64_t row, c_row;                    /* bytes per row of the first plane and of a chroma plane */
    uint64_t chroma[2];                     /* where the chroma planes start (0: none) */
    uint64_t total;
} packed_frame;

static packed_frame packed_of(const vkvit_image *im, const vkvit__frame_layout *fl) {
    const uint64_t half_w = ((uint64_t)im->width + 1) / 2;
    packed_frame pk = {.row = (uint64_t)im->width * (fl->planes == 1 ? 4 : 1)};
    pk.c_row = fl->planes == 2 ? 2 * half_w : fl->planes == 3 ? half_w : 0;
    pk.total = (pk.row * im->height + 3) / 4 * 4;
    for (uint32_t c = 0; c + 1 < fl->planes; c++) {
        pk.chroma[c] = pk.total;
        pk.total += (pk.c_row * fl->c_rows + 3) / 4 * 4;
    }
    return pk;
}

/* Replaces the scratch buffer by a bigger one (no work may be in flight on it); on failure the old one stays. */
static vkvit_result grow_scratch(vkvit__imgproc *ip, uint64_t bytes) {
    vkvit__buffer bigger;
    vkvit_result res = vkvit__buffer_create(ip->ctx, bytes, VKVIT_MEM_DEVICE, "vkvit image scratch", &bigger);
    if (res != VKVIT_OK) return res;
    vkvit__buffer_destroy(ip->ctx, &ip->scratch);
    ip->scratch = bigger;
    if (ip->g) ip->g->tensors[ip->t_scratch].bytes = bindable(ip, &ip->scratch); /* the caller rebinds */
    return VKVIT_OK;
}

static int by_offset(const void *a, const void *b) {
    const vkvit__imgproc_slot *x = *(vkvit__imgproc_slot *const *)a, *y = *(vkvit__imgproc_slot *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Regions for the pictures of slots [first, first + count) (need[i] bytes each), keeping the pictures of the other
 * slots: in place when a picture fits its slot's region, else after the last region; failing that, the other
 * slots' pictures are packed to the front (into a new, larger buffer when they and the new ones need more). */
static vkvit_result place(vkvit__imgproc *ip, uint32_t first, uint32_t count, const uint64_t *need, bool *replaced) {
    vkvit__imgproc_slot *sl = ip->slots;
    uint64_t fresh = 0;
    for (uint32_t i = 0; i < count; i++)
        if (need[i] > sl[first + i].capacity) fresh += need[i];
    if (fresh == 0 || ip->upload_end + fresh <= ip->upload.size) {
        for (uint32_t i = 0; i < count; i++) {
            vkvit__imgproc_slot *s = &sl[first + i];
            if (need[i] > s->capacity) *s = (vkvit__imgproc_slot){ip->upload_end, need[i], 0, 0, 0}, ip->upload_end += need[i];
            s->bytes = need[i];
        }
        return VKVIT_OK;
    }
    /* Pack: the other slots' pictures first, in their order in the buffer, then the new ones. */
    vkvit__imgproc_slot **keep = malloc((size_t)ip->batch * sizeof *keep);
    if (!keep) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    uint32_t n_keep = 0;
    uint64_t total = 0;
    for (uint32_t k = 0; k < ip->batch; k++) {
        if (k >= first && k < first + count) continue;
        if (sl[k].bytes) keep[n_keep++] = &sl[k], total += sl[k].bytes;
        else sl[k].capacity = 0; /* its region is given up */
    }
    for (uint32_t i = 0; i < count; i++) total += need[i];
    qsort(keep, n_keep, sizeof *keep, by_offset);
    vkvit_result res = VKVIT_OK;
    vkvit__buffer old = ip->upload, *dst = &ip->upload;
    const bool grow = total > ip->upload.size;
    if (grow) {
        /* At least double, so that a batch set one picture at a time grows a few times, not once per picture. */
        const uint64_t size = VKVIT_MAX(total, VKVIT_MIN(2 * ip->upload.size, (uint64_t)ip->ctx->max_allocation));
        res = vkvit__buffer_create(ip->ctx, size, VKVIT_MEM_UPLOAD, "vkvit image upload", dst);
        if (res != VKVIT_OK) {
            ip->upload = old;
            free(keep);
            return res;
        }
        *replaced = true;
    }
    uint64_t end = 0;
    for (uint32_t i = 0; i < n_keep; i++) { /* moving down (or into the new buffer) never overwrites what is next */
        if (grow || keep[i]->offset != end)
            memmove((uint8_t *)dst->mapped + end, (const uint8_t *)old.mapped + keep[i]->offset, keep[i]->bytes);
        keep[i]->offset = end;
        keep[i]->capacity = keep[i]->bytes;
        end += keep[i]->bytes;
    }
    for (uint32_t i = 0; i < count; i++) {
        sl[first + i] = (vkvit__imgproc_slot){end, need[i], need[i], 0, 0};
        end += need[i];
    }
    ip->upload_end = end;
    if (grow) vkvit__buffer_destroy(ip->ctx, &old);
    free(keep);
    return VKVIT_OK;
}

/* Slot k's upload window (what its horizontal pass binds) and its picture's first word in it: from the start of
 * the buffer while the picture ends within one binding's reach, else from its region (aligned down). */
static uint64_t window_of(const vkvit__imgproc *ip, uint32_t k) {
    const vkvit__imgproc_slot *s = &ip->slots[k];
    const uint64_t range = ip->ctx->limits.maxStorageBufferRange;
    const uint64_t align = VKVIT_MAX(ip->ctx->limits.minStorageBufferOffsetAlignment, 4);
    return s->offset + s->bytes <= range ? 0 : s->offset / align * align;
}

vkvit_result vkvit__imgproc_check_args(uint32_t batch, uint32_t first_slot, const vkvit_image *images, uint32_t count,
                                       const char *fn) {
    if (!images || count == 0)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: %s", fn, images ? "count is 0" : "images is NULL");
    if ((uint64_t)first_slot + count > batch)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: slots %u .. %llu are outside the batch of %u", fn,
                            first_slot, (unsigned long long)first_slot + count - 1, batch);
    return VKVIT_OK;
}

vkvit_result vkvit__imgproc_set_images(vkvit__imgproc *ip, uint32_t first_slot, const vkvit_image *images,
                                       uint32_t count, const char *fn, bool *rebind) {
    *rebind = false;
    vkvit_result res = vkvit__imgproc_check_args(ip->batch, first_slot, images, count, fn);
    if (res != VKVIT_OK) return res;
    /* Check everything first; then grow the buffers once. */
    uint64_t need_scratch = 4, *need = malloc((size_t)count * sizeof *need);
    if (!need) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    const uint64_t max_range = ip->ctx->limits.maxStorageBufferRange;
    const uint64_t align = VKVIT_MAX(ip->ctx->limits.minStorageBufferOffsetAlignment, 4);
    for (uint32_t i = 0; i < count && res == VKVIT_OK; i++) {
        vkvit__resize_geometry geo;
        vkvit__frame_layout fl;
        if ((res = check_image(ip, &images[i], i, fn, &geo, &fl)) != VKVIT_OK) break;
        need_scratch = VKVIT_MAX(need_scratch, geo.scratch_bytes);
        need[i] = packed_of(&images[i], &fl).total;
        /* A window starts up to `align` bytes before its picture. */
        if (need[i] + align > max_range || geo.scratch_bytes > max_range)
            res = vkvit__error(VKVIT_ERROR_UNSUPPORTED,
                               "%s: images[%u] needs %llu upload and %llu scratch bytes, above the device's "
                               "maxStorageBufferRange of %llu", fn, i, (unsigned long long)need[i],
                               (unsigned long long)geo.scratch_bytes, (unsigned long long)max_range);
    }
    if (res == VKVIT_OK && ip->scratch.size < need_scratch) {
        if ((res = grow_scratch(ip, need_scratch)) != VKVIT_OK)
            vkvit__error_prefix(res, "%s: growing the scratch buffer to %llu bytes", fn, (unsigned long long)need_scratch);
        else *rebind = true;
    }
    bool replaced = false;
    if (res == VKVIT_OK && (res = place(ip, first_slot, count, need, &replaced)) != VKVIT_OK)
        vkvit__error_prefix(res, "%s: growing the upload buffer", fn);
    free(need);
    if (res != VKVIT_OK) {
        for (uint32_t i = 0; i < count; i++) { /* the named slots lose their pictures; the others keep theirs */
            write_no_picture(ip, first_slot + i);
            ip->slots[first_slot + i].bytes = 0;
        }
        return res;
    }
    *rebind |= replaced;

    for (uint32_t i = 0; i < count; i++) {
        const vkvit_image *im = &images[i];
        const uint32_t k = first_slot + i;
        vkvit__frame_layout fl;
        vkvit__frame_layout_of(im->width, im->height, im->row_bytes, im->format, im->chroma_row_bytes, im->yuv,
                               im->orientation, &fl); /* checked above */
        uint8_t *dst = (uint8_t *)ip->upload.mapped + ip->slots[k].offset;
        const packed_frame pk = packed_of(im, &fl);
        for (uint32_t y = 0; y < im->height; y++) /* Y (or RGBA) rows */
            memcpy(dst + y * pk.row, im->pixels + y * fl.y_row_bytes, (size_t)pk.row);
        vkvit__imgproc_slot *sl = &ip->slots[k];
        sl->c0_rel = pk.chroma[0], sl->c1_rel = pk.chroma[1];
        for (uint32_t c = 0; c + 1 < fl.planes; c++)
            for (uint64_t y = 0; y < fl.c_rows; y++)
                memcpy(dst + pk.chroma[c] + y * pk.c_row, im->chroma[c] + y * fl.c_row_bytes, (size_t)pk.c_row);
        vkvit__resize_geometry geo;
        vkvit__resize_geometry_of(&ip->cfg, fl.oriented_w, fl.oriented_h, &geo); /* checked above */
        write_geometry(ip, k, &geo);
        vkvit__preprocess_params *p = params_of(ip, k);
        p->src_row_words = im->width;
        p->flags = im->format == VKVIT_PIXEL_BGRA8 ? VKVIT_PREPROCESS_BGRA : 0;
        p->orientation = im->orientation;
        p->yuv = yuv_bits(im->format, im->yuv);
        p->y_row_bytes = (uint32_t)pk.row;
        p->c_row_bytes = (uint32_t)pk.c_row;
    }
    /* Every picture's window and first word (packing may have moved the other slots' pictures too). */
    for (uint32_t k = 0; k < ip->batch; k++) {
        if (!ip->slots[k].bytes) continue;
        const uint64_t base = window_of(ip, k), at = ip->slots[k].offset - base;
        vkvit__preprocess_params *p = params_of(ip, k);
        p->src_offset = (uint32_t)(at / 4);
        p->y_byte = (uint32_t)at;
        p->c0_byte = (uint32_t)(at + ip->slots[k].c0_rel);
        p->c1_byte = (uint32_t)(at + ip->slots[k].c1_rel);
        if (!ip->g) continue;
        vkvit__tensor *t = &ip->g->tensors[ip->t_upload[k]];
        const uint64_t bytes = VKVIT_MIN(ip->upload.size - base, max_range);
        if (t->offset != base || t->bytes != bytes) *rebind = true;
        t->offset = base;
        t->bytes = bytes;
    }
    if (replaced && ip->g) /* slots without a picture bind the new buffer too */
        for (uint32_t k = 0; k < ip->batch; k++)
            if (!ip->slots[k].bytes) {
                ip->g->tensors[ip->t_upload[k]].offset = 0;
                ip->g->tensors[ip->t_upload[k]].bytes = bindable(ip, &ip->upload);
            }
    return VKVIT_OK;
}

/* ------------------------------------------------------------------------------------------------------------
 * record_ex: host VkImages and VkBuffers through the nodes of their slots
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

/* The host buffer range bound for a pixels input: from its lowest plane offset rounded down to the device's
 * storage-buffer alignment, to the end of its last plane. */
static void pixels_range(const vkvit__imgproc *ip, const vkvit_host_pixels *px, const vkvit__frame_layout *fl,
                         uint64_t *bind_offset, uint64_t *bind_range) {
    const uint64_t align = VKVIT_MAX(ip->ctx->limits.minStorageBufferOffsetAlignment, 4);
    uint64_t lo = px->offset, hi = px->offset + fl->y_bytes;
    for (uint32_t c = 0; c + 1 < fl->planes; c++) {
        lo = VKVIT_MIN(lo, px->chroma_offset[c]);
        hi = VKVIT_MAX(hi, px->chroma_offset[c] + fl->c_bytes);
    }
    *bind_offset = lo / align * align;
    *bind_range = hi - *bind_offset;
}

static vkvit_result host_pixels_layout(const vkvit_host_pixels *px, vkvit__frame_layout *fl) {
    return vkvit__frame_layout_of(px->width, px->height, px->row_bytes, px->format, px->chroma_row_bytes, px->yuv,
                                  px->orientation, fl);
}

vkvit_result vkvit__imgproc_check_inputs(const vkvit__imgproc *ip, const vkvit_record_desc *d, const char *fn) {
    if (!d) return VKVIT_OK;
    if ((d->image_count && !d->images) || (d->pixels_count && !d->pixels))
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: desc->%s is NULL with a count of %u", fn,
                            d->image_count && !d->images ? "images" : "pixels",
                            d->image_count && !d->images ? d->image_count : d->pixels_count);
    if ((uint64_t)d->image_count + d->pixels_count > ip->batch)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: %llu inputs for a batch of %u", fn,
                            (unsigned long long)d->image_count + d->pixels_count, ip->batch);
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
        else if (im->orientation > (VKVIT_ROTATE_270 | VKVIT_MIRROR))
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: images[%u].orientation = %u is not VKVIT_ROTATE_* | "
                               "VKVIT_MIRROR", fn, i, im->orientation);
        else if ((res = check_slot(ip, "images", i, im->slot, seen, fn)) == VKVIT_OK)
            res = check_fit(ip, "images", i, im->orientation & 1u ? im->height : im->width,
                            im->orientation & 1u ? im->width : im->height, fn, &geo);
    }
    for (uint32_t i = 0; i < d->pixels_count && res == VKVIT_OK; i++) {
        const vkvit_host_pixels *px = &d->pixels[i];
        const bool rgba = px->format == VKVIT_PIXEL_RGBA8 || px->format == VKVIT_PIXEL_BGRA8;
        const uint64_t row_bytes = px->row_bytes ? px->row_bytes : (uint64_t)px->width * (rgba ? 4 : 1);
        uint64_t bind_offset, bind_range;
        vkvit__frame_layout fl;
        if (!px->buffer)
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: pixels[%u].buffer is VK_NULL_HANDLE", fn, i);
        else if (px->width == 0 || px->height == 0 || px->width > VKVIT_MAX_IMAGE_SIDE ||
                 px->height > VKVIT_MAX_IMAGE_SIDE)
            res = vkvit__error(VKVIT_ERROR_BAD_IMAGE, "%s: pixels[%u]: a %u x %u picture is outside 1 .. %u pixels per "
                               "side", fn, i, px->width, px->height, VKVIT_MAX_IMAGE_SIDE);
        else if ((res = host_pixels_layout(px, &fl)) != VKVIT_OK) {
            res = vkvit__error_prefix(VKVIT_ERROR_INVALID_ARGUMENT, "%s: pixels[%u]", fn, i);
        } else if (rgba && (px->offset % 4 || row_bytes % 4))
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: pixels[%u]: offset %llu and row_bytes %llu must be "
                               "multiples of 4, row_bytes at least width * 4 = %llu", fn, i,
                               (unsigned long long)px->offset, (unsigned long long)row_bytes,
                               (unsigned long long)px->width * 4);
        else if (px->offset > (UINT64_MAX >> 2) || px->chroma_offset[0] > (UINT64_MAX >> 2) ||
                 px->chroma_offset[1] > (UINT64_MAX >> 2))
            res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: pixels[%u]: a plane offset runs past the end of any "
                               "buffer", fn, i);
        else if ((res = check_slot(ip, "pixels", i, px->slot, seen, fn)) == VKVIT_OK &&
                 (res = check_fit(ip, "pixels", i, fl.oriented_w, fl.oriented_h, fn, &geo)) == VKVIT_OK) {
            pixels_range(ip, px, &fl, &bind_offset, &bind_range);
            if (bind_range > ip->ctx->limits.maxStorageBufferRange)
                res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: pixels[%u] spans %llu bytes, above the device's "
                                   "maxStorageBufferRange of %u", fn, i, (unsigned long long)bind_range,
                                   ip->ctx->limits.maxStorageBufferRange);
            else if (!vkvit__host_buffer_holds(ip->ctx, px->buffer, bind_offset, bind_range))
                res = vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: pixels[%u]: offset %llu + %llu bytes of pixels "
                                   "run past the end of the buffer", fn, i, (unsigned long long)px->offset,
                                   (unsigned long long)(bind_range - (px->offset - bind_offset)));
        }
    }
    free(seen);
    return res;
}

static int by_node(const void *a, const void *b) {
    const vkvit__node_swap *x = a, *y = b;
    return x->node < y->node ? -1 : x->node > y->node;
}

static VkPipelineStageFlags or_default_stage(VkPipelineStageFlags s) { return s ? s : VK_PIPELINE_STAGE_ALL_COMMANDS_BIT; }

uint32_t vkvit__imgproc_prepare_inputs(vkvit__imgproc *ip, const vkvit_record_desc *d,
                                       const vkvit__node_swap **swaps) {
    *swaps = ip->swaps;
    if (!d || (d->image_count == 0 && d->pixels_count == 0) || !ip->g) return 0; /* checked: the sum <= batch */
    const uint32_t n = d->image_count + d->pixels_count;
    for (uint32_t i = 0; i < n; i++) {
        vkvit__resize_geometry geo;
        vkvit__swap_source source;
        uint32_t set, slot, flags, src_offset = 0, src_row_words = 0;
        vkvit__preprocess_params planes; /* orientation and YUV planes only */
        if (i < d->image_count) {
            /* The host's last write of the image, made visible to our sampled reads; the layout stays as it is. */
            const vkvit_host_image *im = &d->images[i];
            VkImageSubresourceRange range = im->subresource;
            if (!range.aspectMask) range = (VkImageSubresourceRange){VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
            source = (vkvit__swap_source){.binding = 0, .image = im->image, .view = im->view, .range = range,
                                          .layout = im->layout, .src_stage = or_default_stage(im->src_stage),
                                          .src_access = im->src_access ? im->src_access : VK_ACCESS_MEMORY_WRITE_BIT};
            const bool turned = (im->orientation & 1u) != 0;
            vkvit__resize_geometry_of(&ip->cfg, turned ? im->height : im->width, turned ? im->width : im->height,
                                      &geo); /* checked */
            set = VKVIT_PREPROCESS_N_SETS * im->slot + VKVIT_PREPROCESS_SET_H_IMAGE;
            flags = is_srgb(im->format) ? VKVIT_PREPROCESS_SRGB : 0;
            slot = im->slot;
            planes = (vkvit__preprocess_params){.orientation = im->orientation};
        } else {
            const vkvit_host_pixels *px = &d->pixels[i - d->image_count];
            uint64_t bind_offset, bind_range;
            vkvit__frame_layout fl;
            host_pixels_layout(px, &fl); /* checked */
            pixels_range(ip, px, &fl, &bind_offset, &bind_range);
            source = (vkvit__swap_source){.binding = 0, .buffer = px->buffer, .offset = bind_offset,
                                          .size = bind_range, .src_stage = or_default_stage(px->src_stage),
                                          .src_access = px->src_access ? px->src_access : VK_ACCESS_MEMORY_WRITE_BIT};
            vkvit__resize_geometry_of(&ip->cfg, fl.oriented_w, fl.oriented_h, &geo); /* checked */
            set = VKVIT_PREPROCESS_N_SETS * px->slot + VKVIT_PREPROCESS_SET_H_PIXELS;
            src_offset = (uint32_t)((px->offset - bind_offset) / 4);
            src_row_words = (uint32_t)(fl.y_row_bytes / 4);
            flags = px->format == VKVIT_PIXEL_BGRA8 ? VKVIT_PREPROCESS_BGRA : 0;
            slot = px->slot;
            planes = (vkvit__preprocess_params){
                .orientation = px->orientation, .yuv = yuv_bits(px->format, px->yuv),
                .y_byte = (uint32_t)(px->offset - bind_offset), .y_row_bytes = (uint32_t)fl.y_row_bytes,
                .c0_byte = (uint32_t)(px->chroma_offset[0] - VKVIT_MIN(px->chroma_offset[0], bind_offset)),
                .c1_byte = (uint32_t)(px->chroma_offset[1] - VKVIT_MIN(px->chroma_offset[1], bind_offset)),
                .c_row_bytes = (uint32_t)fl.c_row_bytes};
        }
        /* The slot's second parameter block (and the sets the recorder writes the source into) are not in use: the
         * previous recording has completed (the documented rule). */
        const uint32_t block = ip->batch + slot;
        write_geometry(ip, block, &geo);
        vkvit__preprocess_params *p = params_of(ip, block);
        p->src_offset = src_offset, p->src_row_words = src_row_words, p->flags = flags;
        p->orientation = planes.orientation, p->yuv = planes.yuv;
        p->y_byte = planes.y_byte, p->y_row_bytes = planes.y_row_bytes;
        p->c0_byte = planes.c0_byte, p->c1_byte = planes.c1_byte, p->c_row_bytes = planes.c_row_bytes;
        const uint64_t at = (uint64_t)block * ip->param_stride;
        ip->swaps[i] = (vkvit__node_swap){.node = ip->first_node + 2 * slot, .set = set, .indirect = ip->params.buffer,
                                          .indirect_offset = at + offsetof(vkvit__preprocess_params, h_groups),
                                          .source = source};
        ip->swaps[n + i] = (vkvit__node_swap){.node = ip->first_node + 2 * slot + 1,
                                              .set = VKVIT_PREPROCESS_N_SETS * slot + VKVIT_PREPROCESS_SET_V,
                                              .indirect = ip->params.buffer,
                                              .indirect_offset = at + offsetof(vkvit__preprocess_params, v_groups)};
    }
    qsort(ip->swaps, 2 * (size_t)n, sizeof *ip->swaps, by_node); /* the recorder walks them in node order */
    return 2 * n;
}
