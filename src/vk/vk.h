// SPDX-License-Identifier: Apache-2.0
/* src/vk — the thin Vulkan runtime under vkvit.
 *
 *   device.c    instance, device choice, logical device or adoption, teardown (device.h; the order: src/ctx.c)
 *   device_caps.c  what a device has: features, limits, driver identity, the facts struct (facts.h)
 *   log.c       errors of Vulkan calls, the log callback, validation messages
 *   memory.c    buffers, memory types, staging uploads and downloads
 *   pipeline.c  kernels: embedded SPIR-V -> compute pipeline (+ specialization constants), descriptor sets,
 *               the on-disk VkPipelineCache
 *   cmd.c       command buffers, buffer-range barriers, submit and wait, timestamp queries
 *
 * Device-level functions are called through the ctx's VolkDeviceTable (ctx->vk), so several ctx objects on
 * different devices can coexist in one process; instance-level functions come from volk's globals. */
#ifndef VKVIT_VK_H
#define VKVIT_VK_H

#include "common.h"
#include "policy/policy.h" /* the ctx carries its policy value; vk/ itself never reads it */
#include "spirv.h"
#include "vk/facts.h"

#include <volk.h>

#include <stdatomic.h>

/* ------------------------------------------------------------------------------------------------------------
 * Error helper: VK_TRY(call) records the call, its VkResult name and file:line, sets `res` and jumps to `fail`.
 * ------------------------------------------------------------------------------------------------------------ */

const char *vkvit__vk_result_name(VkResult r);
vkvit_result vkvit__vk_error(VkResult r, const char *call, const char *func, const char *label);

#define VK_TRY(call)                                                                                          \
    do {                                                                                                      \
        VkResult vr_ = (call);                                                                                \
        if (vr_ != VK_SUCCESS) {                                                                              \
            res = vkvit__vk_error(vr_, #call, __func__, NULL);                                                \
            goto fail;                                                                                        \
        }                                                                                                     \
    } while (0)

/* ------------------------------------------------------------------------------------------------------------
 * Context
 * ------------------------------------------------------------------------------------------------------------ */

/* Appends ", text" (or "text" to an empty list) to the ctx's info.workarounds, truncating at its size. */
void vkvit__ctx_add_workaround(vkvit_ctx *ctx, const char *text);

#define VKVIT_VALIDATION_LOG_CAP 8

/* Every device allocation and every Vulkan object src/vk creates for this ctx, counted (never decremented) so that
 * tests can prove the run-time promise of the header: after vkvit_session_create returns, running, submitting or
 * recording a session allocates and creates nothing. Read with vkvit__ctx_counters. */
typedef struct vkvit__counters {
    atomic_uint memory_allocations;         /* vkAllocateMemory */
    atomic_uint buffers;                    /* vkCreateBuffer */
    atomic_uint pipelines;                  /* vkCreateComputePipelines (one pipeline each) */
    atomic_uint descriptor_sets;            /* vkAllocateDescriptorSets */
    atomic_uint command_buffers;            /* vkAllocateCommandBuffers (one-shot uploads included) */
    atomic_uint other_objects;              /* layouts, shader modules, descriptor and query pools */
    atomic_uint downloads;                  /* vkvit__buffer_download calls (device -> host reads) */
} vkvit__counters;

/* A plain snapshot of the counters; two snapshots compare with memcmp. */
typedef struct vkvit__counts {
    uint32_t memory_allocations, buffers, pipelines, descriptor_sets, command_buffers, other_objects;
} vkvit__counts;

vkvit__counts vkvit__ctx_counters(const vkvit_ctx *ctx);
#define VKVIT_COUNT(ctx, field) atomic_fetch_add(&(ctx)->counters.field, 1u)

struct vkvit_ctx {
    char label[64];
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    vkvit__mutex *queue_lock;               /* serialises vkvit's own use of `queue` (vkvit__queue_submit) */
    vkvit__mutex *log_lock;                 /* one call of `log` at a time (log.c emit_log) */
    bool owns_instance, owns_device;
    VkDebugUtilsMessengerEXT messenger;
    struct VolkDeviceTable vk;

    vkvit_device_info info;
    vkvit__env env;                         /* the environment, read once at creation (policy/env.c) */
    vkvit__caps caps;                       /* the device's facts (facts.h), narrowed to the logical device */
    vkvit__policy policy;                   /* the kernel policy on them (policy/policy.h): what op builders read */
    vkvit__test_hooks test_hooks;           /* test-only switches (policy.h), all off outside tests */
    uint64_t self_check_key;                /* what the first-use self-check's verdicts depend on, taken with the
                                               policy at creation (self_check.h: its verdicts on disk) */
    VkPhysicalDeviceMemoryProperties mem_props;
    VkPhysicalDeviceLimits limits;
    VkDeviceSize max_allocation;            /* VkPhysicalDeviceMaintenance3Properties::maxMemoryAllocationSize */
    uint8_t pipeline_cache_uuid[VK_UUID_SIZE];
    bool coopmat_nv_enabled;                /* VK_NV_cooperative_matrix and its cooperativeMatrix feature are enabled on
                                               the device (by vkvit, or by the host in adopt mode) */
    bool coopmat_khr_enabled;               /* the same for VK_KHR_cooperative_matrix (both with vulkanMemoryModel) */
    bool coopmat_nv2_enabled;               /* VK_NV_cooperative_matrix2 with the NV2 kernel's features (own device
                                               only: adopt mode leaves it off) */
    bool int64_enabled;                     /* shaderInt64 enabled (by vkvit for the texel kernels, or the host) */
    uint32_t instance_api;                  /* the API version the instance was created for (the host's in adopt mode) */
    uint32_t timestamp_valid_bits;          /* the queue family's timestampValidBits (0: no timestamps) */
    bool has_debug_utils;
    bool huge_page_import;                  /* a CPU device's large buffers import vkvit's own huge-page host memory
                                               (VK_EXT_external_memory_host, enabled by vkvit; memory.c) */

    VkPipelineCache pipeline_cache;
    char cache_path[1024];                  /* "" when the on-disk cache is disabled */

    vkvit__mutex *kernel_lock;              /* guards the shared kernels below (vkvit__kernels_acquire) */
    struct vkvit__shared_kernel *shared_kernels; /* every recording's pipelines, one per variant, reference-counted */
    uint32_t n_shared_kernels, cap_shared_kernels;

    VkCommandPool cmd_pool;                 /* one-shot command buffers (uploads, tests) */
    VkFence fence;
    vkvit__mutex *oneshot_lock;             /* held by vkvit__record_warmup around its one-shot command buffer: a
                                               session's first set_images warms up on the session's thread, so
                                               several may at once (every other user of cmd_pool and fence is a
                                               call that has the whole ctx) */

    struct vkvit__buffer *staging;          /* lazily created host-visible buffer for uploads/downloads */

    atomic_uint validation_messages;
    char validation_log[VKVIT_VALIDATION_LOG_CAP][512];

    vkvit__counters counters;
    atomic_uint_fast64_t pipeline_ns;       /* wall time inside vkCreateComputePipelines (start-up INFO log) */

    vkvit_log_fn log;
    void *log_user;

    atomic_uint borrowers;                  /* objects created on this ctx and not yet destroyed (models): while any
                                               lives, vkvit_ctx_destroy logs an error and frees nothing */
};

/* Reports the current error sentence to the ctx's log callback (if any) and returns `code`. */
vkvit_result vkvit__ctx_fail(const vkvit_ctx *ctx, vkvit_result code);
void vkvit__ctx_log(vkvit_ctx *ctx, int level, const char *fmt, ...) VKVIT_PRINTF(3, 4);

/* Names a Vulkan object for debuggers (VK_EXT_debug_utils); a no-op without the extension. */
void vkvit__set_object_name(vkvit_ctx *ctx, VkObjectType type, uint64_t handle, const char *name);

/* The debug-utils messenger of vkvit's own instance (`user` = the ctx): counts the validation layer's warnings and
 * errors, keeps the first VKVIT_VALIDATION_LOG_CAP and forwards each to the log callback. */
VKAPI_ATTR VkBool32 VKAPI_CALL vkvit__validation_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                         VkDebugUtilsMessageTypeFlagsEXT types,
                                                         const VkDebugUtilsMessengerCallbackDataEXT *data, void *user);

/* ------------------------------------------------------------------------------------------------------------
 * Buffers (memory.c)
 * ------------------------------------------------------------------------------------------------------------ */

typedef enum vkvit__mem_kind {
    VKVIT_MEM_DEVICE,                       /* device-local; host-visible too when the device offers it (UMA) */
    VKVIT_MEM_UPLOAD,                       /* host-visible, coherent: CPU writes, GPU reads */
    VKVIT_MEM_READBACK,                     /* host-visible, cached when possible: GPU writes, CPU reads */
} vkvit__mem_kind;

typedef struct vkvit__buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize size;
    void *mapped;                           /* non-NULL when host-visible (persistently mapped) */
    bool coherent;
    bool cached;                            /* host-cached: reading the mapping is fast (not a BAR or write-combined
                                               heap, where the host reads over PCIe at a fraction of the speed) */
    void *host;                             /* the imported host memory (vkvit__huge_alloc), NULL when allocated */
    size_t host_size;
} vkvit__buffer;

/* The usage of every buffer vkvit__buffer_create makes: storage, copies both ways, indirect dispatch counts (graph.h,
 * vkvit__node.indirect); with caps.texel_buffers also VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT (texel bindings). */
#define VKVIT_BUFFER_USAGE                                                                                        \
    (VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |  \
     VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT)
vkvit_result vkvit__buffer_create(vkvit_ctx *ctx, VkDeviceSize size, vkvit__mem_kind kind, const char *label,
                                  vkvit__buffer *out);
/* The memory type for a buffer of this kind among `bits`: the rank-th choice (0 the best, then the ones to try
 * when an allocation fails), -1 past the last. VKVIT_MEM_DEVICE is plain device-local memory on discrete GPUs and
 * takes the host-visible device-local type only where that is the whole VRAM (unified memory, resizable BAR): never
 * the 256 MiB BAR window of a discrete GPU without it. */
int vkvit__memory_type_choose(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits, vkvit__mem_kind kind,
                              uint32_t rank);
void vkvit__buffer_destroy(vkvit_ctx *ctx, vkvit__buffer *buf);

/* Whether [offset, offset + bytes) can lie inside a buffer the host made: within its memory requirements' size
 * (never smaller than the buffer, so no valid range fails) and without wrapping. A sanity bound on host offsets
 * before they reach a descriptor, not a proof that the host's buffer is large enough. */
bool vkvit__host_buffer_holds(const vkvit_ctx *ctx, VkBuffer buffer, uint64_t offset, uint64_t bytes);

/* Host <-> buffer copies. They synchronise with all earlier work on the ctx queue (they wait for it), so they are
 * for setup, tests and the CLI, never for a per-frame path. */
vkvit_result vkvit__buffer_upload(vkvit_ctx *ctx, vkvit__buffer *buf, VkDeviceSize offset, const void *data,
                                  VkDeviceSize size);
vkvit_result vkvit__buffer_download(vkvit_ctx *ctx, vkvit__buffer *buf, VkDeviceSize offset, void *data,
                                    VkDeviceSize size);
/* Uploads [offset, offset+size) of `buf` from a producer instead of a host copy of the whole range (ViT-5-S's weights:
 * 88 MB): fill(user, dst, at, bytes) writes bytes [at, at+bytes) of the range to dst, one window of at most 16 MiB
 * at a time in increasing order (`at` and `bytes` are multiples of 4 when offset and size are); dst is the buffer's
 * own mapping where it is host-visible and coherent (after the queue is idle), else the staging buffer. A fill
 * that fails stops the upload; its result is returned (its sentence kept). */
#define VKVIT_UPLOAD_WINDOW_BYTES (16u << 20) /* the staging buffer's size: the largest `bytes` a fill is asked for */
typedef vkvit_result (*vkvit__fill_fn)(void *user, void *dst, uint64_t at, uint64_t bytes);
vkvit_result vkvit__buffer_upload_from(vkvit_ctx *ctx, vkvit__buffer *buf, VkDeviceSize offset, VkDeviceSize size,
                                       vkvit__fill_fn fill, void *user);
/* Fills [offset, offset+size) with a 32-bit pattern (size a multiple of 4), e.g. 0x7fc00000 (NaN) to poison. */
vkvit_result vkvit__buffer_fill(vkvit_ctx *ctx, vkvit__buffer *buf, VkDeviceSize offset, VkDeviceSize size,
                                uint32_t pattern);

/* ------------------------------------------------------------------------------------------------------------
 * Kernels (pipeline.c): one compute pipeline with its layouts
 * ------------------------------------------------------------------------------------------------------------ */

#define VKVIT_MAX_BINDINGS 8
#define VKVIT_MAX_SPEC 16
#define VKVIT_MAX_PUSH 128

typedef struct vkvit__kernel_desc {
    vkvit_shader_id shader;
    uint32_t n_buffers;                     /* buffers at set 0, bindings 0..n-1: storage buffers, except */
    VkFormat texel_format[VKVIT_MAX_BINDINGS]; /* ... where not VK_FORMAT_UNDEFINED: a uniform texel buffer of this
                                               format (the binding's range seen through a VkBufferView) */
    uint32_t sampled_images;                /* ... and where bit i is set, binding i is a sampled image
                                               (VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE: the pre-processing's host VkImage;
                                               vkvit__descriptor_set_create does not write those: their user
                                               writes its own sets) */
    uint32_t push_size;                     /* bytes of the push-constant block `p` (<= 128) */
    uint32_t packed_slots;                  /* 0, or a packed-bindings kernel (shaders/packed.glsl): its n_buffers
                                               logical tensors through this many storage buffers (0 the arena, 1 the
                                               weights), each at an element base the recorder appends to the push
                                               block (src/graph/record.c) */
    /* The subgroup contract of a kernel whose work split depends on its subgroups (shuffles among a row's lanes,
     * a warp of a cooperative matrix, the CPU GEMM's 8 lanes): every subgroup full, and of exactly this size.
     * Needs subgroup size control (caps.subgroup_size_control); kernel creation refuses without it. */
    bool full_subgroups;                    /* VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT */
    uint32_t subgroup_size;                 /* VkPipelineShaderStageRequiredSubgroupSizeCreateInfo; 0 the driver's */
    uint32_t n_spec;                        /* specialization constants with constant_id 0..n_spec-1 */
    uint32_t spec[VKVIT_MAX_SPEC];          /* their values (32-bit ints, bools or float bit patterns) */
    const char *label;
} vkvit__kernel_desc;

typedef struct vkvit__kernel {
    vkvit_shader_id shader;
    VkPipeline pipeline;
    VkPipelineLayout layout;
    VkDescriptorSetLayout set_layout;
    uint32_t n_buffers, push_size;
    VkFormat texel_format[VKVIT_MAX_BINDINGS]; /* as in the desc */
    uint32_t sampled_images;                /* as in the desc */
} vkvit__kernel;

/* Creates the pipeline. Fails (VKVIT_ERROR_INVALID_ARGUMENT) when desc->push_size differs from the size of the
 * shader's push-constant block (vkvit__shader_push_size): every C mirror is checked against its shader. */
vkvit_result vkvit__kernel_create(vkvit_ctx *ctx, const vkvit__kernel_desc *desc, vkvit__kernel *out);
/* Bytes of the shader's push-constant block, read from its SPIR-V: 0 when it has none, VKVIT_PUSH_UNSIZED when
 * its members are not all 32-bit scalars or vectors (test_spirv requires every shipped shader to be sized). */
#define VKVIT_PUSH_UNSIZED UINT32_MAX
uint32_t vkvit__shader_push_size(vkvit_shader_id shader);
/* Creates n kernels (out[i] from descs[i]) on up to VKVIT_PIPELINE_THREADS threads: drivers compile in the calling
 * thread (lavapipe's LLVM takes 130-320 ms per GEMM pipeline, a cold NVIDIA pipeline tens of ms), and a session's
 * pipelines are independent. On failure every kernel is destroyed (out[] zeroed) and the error is the lowest
 * failing index's, as a serial loop would report it. */
#define VKVIT_PIPELINE_THREADS 8u
vkvit_result vkvit__kernels_create(vkvit_ctx *ctx, const vkvit__kernel_desc *descs, uint32_t n, vkvit__kernel *out);
void vkvit__kernel_destroy(vkvit_ctx *ctx, vkvit__kernel *k);

/* Kernels shared by every recording of a ctx (sessions, vkvit_bench_gemm, the cooperative-matrix self-check) and
 * the pre-processing's image kernel: one pipeline, pipeline layout and descriptor-set layout per variant, i.e. per
 * (shader, specialization constants, binding types and texel formats, push-constant size); the label is not part
 * of it (the first user's names the pipeline). A variant is created on first use and reference-counted: the last
 * release destroys it, vkvit__kernel_table_destroy (ctx destruction) whatever is left. Pipelines cost host memory
 * on some drivers: lavapipe keeps ~1.4 MB per compute pipeline (its NIR and LLVM state), so when each session made
 * its own, a session of a 145 KB model (19 pipelines) cost 27 MB and 1,000 did not fit in 24 GiB; shared, it costs
 * what its own buffers, descriptor sets and command buffer do (0.2 MB).
 *
 * vkvit__kernels_acquire fills out[i] (a copy of the handles) for descs[i]: the variants the ctx has already, the
 * others created as vkvit__kernels_create does (in parallel). Thread-safe: the table is guarded by ctx->kernel_lock
 * (a session's first set_images prepares its pre-processing on the session's thread); two threads that miss the
 * same variant at once both create it and the second keeps the first's. On failure nothing is held (out[] zeroed)
 * and the error is vkvit__kernels_create's. The ctx counters count the pipelines and layouts actually created. */
vkvit_result vkvit__kernels_acquire(vkvit_ctx *ctx, const vkvit__kernel_desc *descs, uint32_t n, vkvit__kernel *out);
/* Gives back n kernels from vkvit__kernels_acquire (zeroed ones are skipped) and zeroes them. */
void vkvit__kernels_release(vkvit_ctx *ctx, vkvit__kernel *kernels, uint32_t n);
/* Variants alive in the ctx's table and the references held on them (tests). */
void vkvit__kernel_table_stats(vkvit_ctx *ctx, uint32_t *variants, uint32_t *references);
/* Destroys every variant still in the table (a leaked recording's) and the table itself: vkvit_ctx_destroy. */
void vkvit__kernel_table_destroy(vkvit_ctx *ctx);

/* A range of a buffer bound to one binding. range 0 means "to the end of the buffer". */
typedef struct vkvit__binding {
    const vkvit__buffer *buf;
    VkDeviceSize offset, range;
} vkvit__binding;

/* A descriptor pool for `max_sets` sets of up to VKVIT_MAX_BINDINGS bindings each, and the buffer views its sets'
 * texel bindings look through (created with the set, destroyed with the pool). */
typedef struct vkvit__descriptors {
    VkDescriptorPool pool;
    VkBufferView *views;
    uint32_t n_views, max_views;
} vkvit__descriptors;

vkvit_result vkvit__descriptors_create(vkvit_ctx *ctx, uint32_t max_sets, vkvit__descriptors *out);
/* Allocates a set for kernel `k` and points binding i at bindings[i]: a storage buffer, or for a texel binding a
 * new view of the binding's range (offset a multiple of minTexelBufferOffsetAlignment; the range is rounded down
 * to whole texels and must hold at most maxTexelBufferElements). */
vkvit_result vkvit__descriptor_set_create(vkvit_ctx *ctx, vkvit__descriptors *d, const vkvit__kernel *k,
                                          const vkvit__binding *bindings, VkDescriptorSet *out);
void vkvit__descriptors_destroy(vkvit_ctx *ctx, vkvit__descriptors *d);
/* Bytes of one texel of a format kernels use for texel bindings (0 for another format). */
uint32_t vkvit__texel_bytes(VkFormat format);

/* Pipeline cache (pipeline.c): loaded at ctx creation, saved at destruction. */
vkvit_result vkvit__pipeline_cache_open(vkvit_ctx *ctx, const char *dir);
void vkvit__pipeline_cache_save(vkvit_ctx *ctx);

/* ------------------------------------------------------------------------------------------------------------
 * Command buffers (cmd.c)
 * ------------------------------------------------------------------------------------------------------------ */

vkvit_result vkvit__cmd_begin(vkvit_ctx *ctx, VkCommandBuffer *out);
/* Ends, submits and waits for `cmd`, then frees it. */
vkvit_result vkvit__cmd_submit_wait(vkvit_ctx *ctx, VkCommandBuffer cmd);
/* vkQueueSubmit / vkQueueWaitIdle on `queue` with the ctx's queue lock held, so sessions of one ctx may run from
 * several threads (Vulkan requires external synchronisation of a VkQueue). In adopt mode this orders vkvit's
 * own calls; the host still holds its lock around them (include/vkvit.h, THREADING). */
VkResult vkvit__queue_submit(vkvit_ctx *ctx, VkQueue queue, uint32_t count, const VkSubmitInfo *submits,
                             VkFence fence);
VkResult vkvit__queue_wait_idle(vkvit_ctx *ctx);
/* Frees a command buffer that was begun but will not be submitted (error paths). */
void vkvit__cmd_abandon(vkvit_ctx *ctx, VkCommandBuffer cmd);

void vkvit__cmd_dispatch(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__kernel *k, VkDescriptorSet set,
                         const void *push, uint32_t gx, uint32_t gy, uint32_t gz);

/* One buffer-range memory dependency. */
void vkvit__cmd_barrier(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__buffer *buf, VkDeviceSize offset,
                        VkDeviceSize size, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                        VkPipelineStageFlags dst_stage, VkAccessFlags dst_access);
/* Shorthand: compute-shader writes of a range become visible to compute-shader reads and writes. */
void vkvit__cmd_barrier_compute(vkvit_ctx *ctx, VkCommandBuffer cmd, const vkvit__buffer *buf,
                                VkDeviceSize offset, VkDeviceSize size);

/* A global memory dependency on all compute and transfer work recorded or submitted before it (e.g. the previous
 * inference that wrote the arena this one reuses). Used once at the start of a recorded inference, never between
 * nodes. */
void vkvit__cmd_barrier_prior_work(vkvit_ctx *ctx, VkCommandBuffer cmd);

/* Timestamp queries: a pool of `n` queries, written with vkvit__cmd_timestamp and read back in nanoseconds. */
typedef struct vkvit__timer {
    VkQueryPool pool;
    uint32_t n;
} vkvit__timer;

vkvit_result vkvit__timer_create(vkvit_ctx *ctx, uint32_t n, vkvit__timer *out);
void vkvit__timer_destroy(vkvit_ctx *ctx, vkvit__timer *t);
void vkvit__cmd_timer_reset(vkvit_ctx *ctx, VkCommandBuffer cmd, vkvit__timer *t);
void vkvit__cmd_timestamp(vkvit_ctx *ctx, VkCommandBuffer cmd, vkvit__timer *t, uint32_t index);
/* Reads queries [0, n) as nanoseconds after query 0 (after the work was waited for): each tick count is taken
 * relative to the first modulo 2^timestampValidBits of the queue (vkvit__ticks_elapsed), so a counter that wraps
 * between two queries (36 bits on Intel Gen9) still gives the right difference. */
vkvit_result vkvit__timer_read_ns(vkvit_ctx *ctx, vkvit__timer *t, uint32_t n, double *ns);
/* Ticks from t0 to t1 of a counter with `valid_bits` bits (1..64), wrapped at most once. */
static inline uint64_t vkvit__ticks_elapsed(uint64_t t0, uint64_t t1, uint32_t valid_bits) {
    const uint64_t mask = valid_bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << valid_bits) - 1);
    return (t1 - t0) & mask;
}

#endif /* VKVIT_VK_H */
