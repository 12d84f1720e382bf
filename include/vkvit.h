// SPDX-License-Identifier: Apache-2.0
/*
 * vkvit — modern vision backbones on any Vulkan GPU.
 *
 * OVERVIEW
 *   vkvit runs ViT-5, Vision-LSTM and the nvSubquadratic residual/conditioning blocks as hand-written GLSL
 *   compute shaders, compiled to SPIR-V at build time and recorded once into a static command buffer.
 *   Three opaque objects:
 *     vkvit_ctx      a Vulkan device (its own, or adopted from a host application), queue, pipeline cache
 *     vkvit_model    an architecture plus its weights on the device            (model API: see below)
 *     vkvit_session  one planned and recorded graph for a fixed batch size     (session API: see below)
 *
 * STEP BY STEP
 *   vkvit_ctx *ctx = NULL;
 *   vkvit_ctx_desc desc = { .label = "my ctx" };              // zero means default everywhere
 *   if (vkvit_ctx_create(&desc, &ctx) != VKVIT_OK) {
 *       fprintf(stderr, "%s\n", vkvit_last_error());           // one sentence: what failed and why
 *       return 1;
 *   }
 *   vkvit_device_info info;
 *   vkvit_ctx_device_info(ctx, &info);                        // name, driver, features in use
 *   ...
 *   vkvit_ctx_destroy(ctx);                                   // NULL is a no-op
 *
 * ERRORS
 *   Every function that can fail returns a vkvit_result: VKVIT_OK (0) or a negative category. The reason is one
 *   sentence in a thread-local buffer read with vkvit_last_error(): it names the function, the object label, the
 *   failing Vulkan call and its VkResult, and the numbers involved. The same sentence goes to the ctx's log
 *   callback, when one is set, as one VKVIT_LOG_ERROR message: for every failed call on a ctx, model or session
 *   (a NULL one has no ctx to tell; vkvit_enumerate_devices, vkvit_describe_model and the tensor-file functions
 *   have none). The library never prints, never exits and never aborts on bad input; an object whose creation
 *   fails is not created (*out is set to NULL).
 *
 * OWNERSHIP AND LIFETIME
 *   The creator destroys. Children borrow their parent, which must outlive them: destroy sessions, then models, then
 *   the ctx. Destroying a model whose sessions are alive, or a ctx whose models are, is a caller bug that vkvit
 *   catches: it frees nothing (the object stays usable, and is leaked unless destroyed again in the right order), sets
 *   vkvit_last_error() and sends the sentence to the log callback as one VKVIT_LOG_ERROR. vkvit_session_destroy waits
 *   for the session's own submissions (vkvit_session_run / _submit); work the host recorded with
 *   vkvit_session_record(_ex) into its own command buffers is the host's to wait for before it destroys the session.
 *   Every function returns having kept no reference to its arguments; only commands recorded into a host command buffer
 *   refer to the host's images and buffers, until they complete.
 *
 * EMBEDDING (adopt mode: vkvit_ctx_desc.host; docs/embedding.md has the walkthrough)
 *   Before it creates its VkDevice, the host asks vkvit_required_device_extensions() and enables those the device
 *   has, plus the features it wants vkvit to use, and tells vkvit what it enabled (vkvit_host_device). Baseline:
 *   Vulkan 1.1 and one queue family with VK_QUEUE_COMPUTE_BIT. Optional, each with a fallback when missing:
 *   storageBuffer16BitAccess (fp16 weights; else fp32 only), shaderFloat16 (precision fp16-math; else refused),
 *   subgroupSizeControl + computeFullSubgroups (else the default subgroup size), timelineSemaphore (else
 *   vkvit_session_submit takes binary semaphores and a fence).
 *   What vkvit does with the host's objects: it creates its own buffers, memory, pipelines, pipeline cache, command
 *   pools, descriptor pools, query pools and fences on the host's VkDevice, and destroys all of them in the
 *   matching destroy calls. It submits to the ctx's queue only inside these calls: vkvit_model_create and
 *   vkvit_session_create (uploads; they may wait for the queue to go idle), vkvit_session_run (waits for its own
 *   work), vkvit_session_submit (never waits; on the queue the host
 *   names), vkvit_session_plan_slices (its profiling pass) and
 *   _run_slices (both wait), vkvit_ctx_destroy (waits until the queue
 *   is idle). Recording (vkvit_session_record / _record_ex / _record_slice) appends commands and barriers to the
 *   host's command buffer and nothing else: it never begins, ends, resets or submits it.
 *   What vkvit never does: create an instance or device, destroy a host object, wait on the host's fences or
 *   semaphores on the CPU, change the layout of a host image, submit outside the calls above, allocate or create
 *   Vulkan objects after vkvit_session_create returns (vkvit_session_set_images growing its upload or scratch
 *   buffer, or adding the pre-processing to a session created with max_image_pixels 0, is one documented
 *   exception; vkvit_session_plan_slices' temporary query pool, destroyed before it returns, the other).
 *
 * THREADING
 *   Objects are not internally synchronised; the rules follow what each call touches.
 *   - vkvit_ctx_create and vkvit_ctx_destroy load process-wide Vulkan entry points: one thread at a time in the
 *     whole process. Different ctx objects may then be used from different threads freely.
 *   - Session calls touch only their session: set_input, set_condition, set_images, get_output, get_top_k, poll,
 *     wait, record, record_ex, record_slice, slice_info, get_stats, profile and the shape queries. Different sessions of one ctx may be used from different
 *     threads at the same time; one session from one thread at a time.
 *   - vkvit_session_run and vkvit_session_submit are session calls that also call vkQueueSubmit. vkvit serialises its own submissions to a queue with a per-ctx lock, so sessions of a ctx
 *     that vkvit created may run from several threads with no lock of the caller's. In adopt mode the host also
 *     uses the queue: Vulkan requires all use of one VkQueue to be serialised, so hold the lock that guards the
 *     host's own submissions (and presents) around these calls.
 *   - Everything else (model and session creation and destruction, plan_slices, run_slices, device info) needs the
 *     whole ctx: no other call on the ctx or its children, and no host use of its queue, at the same time. Do it
 *     on a loading screen, not in the frame loop.
 *   The log callback is called on the thread of the failing call, so concurrently when sessions are used from
 *   several threads. Model and session creation spread their CPU work (weight conversion, pipeline compilation)
 *   over up to 8 short-lived threads of vkvit's own, joined before the call returns; no other call creates any.
 *
 * PHILOSOPHY
 *   Readable first, fast second, no hidden allocation and no pipeline creation at run time.
 */
#ifndef VKVIT_H
#define VKVIT_H

#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan_core.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(VKVIT_STATIC)
#  define VKVIT_API
#elif defined(_WIN32)
#  ifdef VKVIT_BUILD
#    define VKVIT_API __declspec(dllexport)
#  else
#    define VKVIT_API __declspec(dllimport)
#  endif
#else
#  define VKVIT_API __attribute__((visibility("default")))
#endif

#define VKVIT_VERSION_MAJOR 0
#define VKVIT_VERSION_MINOR 1
#define VKVIT_VERSION_PATCH 0

/* ------------------------------------------------------------------------------------------------------------
 * Results
 * ------------------------------------------------------------------------------------------------------------ */

typedef enum vkvit_result {
    VKVIT_OK = 0,
    VKVIT_ERROR_NO_LOADER = -1,             /* no Vulkan loader (libvulkan.so.1) could be opened */
    VKVIT_ERROR_NO_DEVICE = -2,             /* no Vulkan device, or none matching the requested one; also a broken
                                               driver manifest named by VK_DRIVER_FILES, VK_ICD_FILENAMES or
                                               VK_ADD_DRIVER_FILES (checked before vkvit loads the loader, which
                                               would crash on some), the sentence naming the file */
    VKVIT_ERROR_OUT_OF_HOST_MEMORY = -3,
    VKVIT_ERROR_OUT_OF_DEVICE_MEMORY = -4,
    VKVIT_ERROR_INVALID_ARGUMENT = -5,      /* a desc field or argument broke a documented rule */
    VKVIT_ERROR_BAD_MODEL_FILE = -6,        /* the model file is malformed or inconsistent */
    VKVIT_ERROR_IO = -7,                    /* a file could not be opened, read or written, is not a regular file
                                               (a FIFO, a device, a folder, or a /proc or /sys file that reports 0
                                               bytes but reads as data), or shrank while vkvit read it */
    VKVIT_ERROR_VULKAN = -8,                /* a Vulkan call failed (the message names it) */
    VKVIT_ERROR_UNSUPPORTED = -9,           /* the device or build lacks something this request needs */
    VKVIT_ERROR_BAD_IMAGE = -10,            /* an image could not be decoded or is out of limits */
    VKVIT_ERROR_DEVICE_LOST = -11,          /* VK_ERROR_DEVICE_LOST: the ctx must be destroyed */
} vkvit_result;

/* The enum's name as a string, e.g. "VKVIT_ERROR_NO_DEVICE". Never NULL. */
VKVIT_API const char *vkvit_result_name(vkvit_result result);

/* The sentence that explains the last failure on this thread ("" if none). Valid until the next vkvit call on the
 * same thread: copy it before passing it to another vkvit call (as a label, say; a create call clears it first). */
VKVIT_API const char *vkvit_last_error(void);

typedef void (*vkvit_log_fn)(void *user, int level, const char *message);
enum { VKVIT_LOG_ERROR = 0, VKVIT_LOG_WARNING = 1, VKVIT_LOG_INFO = 2 };

/* ------------------------------------------------------------------------------------------------------------
 * Context: a device and a queue
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct vkvit_ctx vkvit_ctx;

/* A host application's Vulkan objects, for adopt mode. The host creates its device with the extensions listed by
 * vkvit_required_device_extensions() enabled (they are optional: vkvit falls back when one is missing, but must be
 * told which were enabled), and with the features it wants vkvit to use enabled. */
typedef struct vkvit_host_device {
    VkInstance instance;                    /* required; must outlive the ctx */
    VkPhysicalDevice physical_device;       /* required */
    VkDevice device;                        /* required; must outlive the ctx */
    uint32_t queue_family_index;            /* a family with VK_QUEUE_COMPUTE_BIT */
    VkQueue queue;                          /* required; vkvit submits to it (see THREADING) */
    PFN_vkGetInstanceProcAddr get_instance_proc_addr; /* required: the host's loader entry point */
    uint32_t api_version;                   /* the apiVersion the host's VkInstance was created with; 0 = 1.1 */
    const char *const *enabled_device_extensions; /* the extensions the host enabled on `device` */
    uint32_t enabled_device_extension_count;
    const VkPhysicalDeviceFeatures2 *enabled_features; /* chain the host enabled (Vulkan11/12 structs are read,
                                                          and features.shaderInt64: the CPU kernels' texel path);
                                                          NULL = assume only core 1.1 features */
} vkvit_host_device;

/* The global priority a ctx asks for its queue (vkvit_ctx_desc.queue_priority): VK_KHR_global_priority or
 * VK_EXT_global_priority, where the device lists one, on the queue vkvit creates. LOW keeps inference from delaying a
 * renderer's or compositor's work on the same GPU; HIGH is for latency-critical inference. */
typedef enum vkvit_queue_priority {
    VKVIT_QUEUE_PRIORITY_DEFAULT = 0,       /* none asked: the driver's (medium) */
    VKVIT_QUEUE_PRIORITY_LOW = 1,
    VKVIT_QUEUE_PRIORITY_HIGH = 2,
} vkvit_queue_priority;

/* Defaults (field = 0 / NULL):
 *   label                 "vkvit ctx"
 *   device                NULL: $VKVIT_DEVICE if set, else the first discrete, integrated, virtual, then CPU device.
 *                         A decimal string selects by index, anything else by case-insensitive name substring.
 *   validation            0: enable VK_LAYER_KHRONOS_validation with synchronization validation when
 *                         $VKVIT_VALIDATION=1; 1: always (an error if the layer is missing); -1: never.
 *   pipeline_cache_dir    NULL: $VKVIT_CACHE_DIR, else $XDG_CACHE_HOME/vkvit, else $HOME/.cache/vkvit. "" disables
 *                         the on-disk pipeline cache. A stale or corrupt cache file is ignored, never trusted.
 *   disable_f16           0: use fp16 storage/arithmetic when the device has it; 1: never ($VKVIT_DISABLE_F16=1)
 *   log, log_user         NULL: no log callback
 *   host                  NULL: vkvit creates its own instance and device; else adopt the host's (see above) */
typedef struct vkvit_ctx_desc {
    const char *label;
    const char *device;
    int validation;
    const char *pipeline_cache_dir;
    int disable_f16;
    vkvit_log_fn log;
    void *log_user;
    const vkvit_host_device *host;
    /* The queue's global priority (vkvit creates its own device; in adopt mode the host's queue keeps the priority
     * the host gave it, and a value here is refused with VKVIT_ERROR_INVALID_ARGUMENT). Where the device lists
     * neither extension, or the driver refuses the priority (VK_ERROR_NOT_PERMITTED: HIGH usually needs privileges),
     * the queue gets the default priority and the fallback is named in vkvit_device_info.workarounds
     * (queue_priority and queue_priority_fallback say it too); with queue_priority_strict = 1 the ctx is refused
     * instead (VKVIT_ERROR_UNSUPPORTED). */
    vkvit_queue_priority queue_priority;
    int queue_priority_strict;
} vkvit_ctx_desc;

/* Creates a ctx: loads Vulkan through the system loader (or the host's vkGetInstanceProcAddr), picks a device,
 * creates a compute queue and the pipeline cache. desc may be NULL (all defaults). On failure *out is NULL and
 * the result says why: VKVIT_ERROR_NO_LOADER, _NO_DEVICE, _UNSUPPORTED (e.g. validation requested but the layer
 * is not installed), _VULKAN. */
VKVIT_API vkvit_result vkvit_ctx_create(const vkvit_ctx_desc *desc, vkvit_ctx **out);

/* Waits for the ctx's queue work to finish, saves the pipeline cache, destroys everything vkvit created. NULL is
 * a no-op. In adopt mode the host's instance, device and queue are left untouched. */
VKVIT_API void vkvit_ctx_destroy(vkvit_ctx *ctx);

/* Device extensions vkvit uses when present, for a host to enable before it creates its VkDevice (each is
 * optional; vkvit falls back when missing). VK_NV_cooperative_matrix / VK_KHR_cooperative_matrix are used only with
 * their cooperativeMatrix feature chained (VkPhysicalDeviceCooperativeMatrixFeaturesNV / ...KHR) and the
 * vulkanMemoryModel feature
 * (VkPhysicalDeviceVulkan12Features or VkPhysicalDeviceVulkanMemoryModelFeatures) in
 * vkvit_host_device.enabled_features. Returns the count;
 * writes up to `cap` names into `names` (which may be NULL to query the count). The strings are static. */
VKVIT_API uint32_t vkvit_required_device_extensions(const char **names, uint32_t cap);

/* One memory heap of a device (vkvit_device_info.memory_heaps, vkvit_ctx_memory_heaps). */
#define VKVIT_MAX_MEMORY_HEAPS 16
typedef struct vkvit_memory_heap {
    uint64_t size;                          /* VkMemoryHeap.size */
    uint64_t budget;                        /* bytes this process may use of it (VK_EXT_memory_budget's heapBudget,
                                               else size) */
    uint64_t usage;                         /* bytes this process uses of it (heapUsage; 0 without the extension) */
    int device_local;                       /* VK_MEMORY_HEAP_DEVICE_LOCAL_BIT */
} vkvit_memory_heap;

/* What vkvit found on a device and what it uses. */
typedef struct vkvit_device_info {
    char name[256];
    char driver_name[256];
    char driver_info[256];
    uint32_t vendor_id, device_id, driver_version, api_version;
    int device_type;                        /* VkPhysicalDeviceType */
    int fp16_storage;                       /* storageBuffer16BitAccess */
    int fp16_arithmetic;                    /* shaderFloat16 (with fp16_in_use: VKVIT_PRECISION_FP16_MATH works) */
    int fp16_in_use;                        /* fp16 is available and not disabled */
    uint32_t subgroup_size;                 /* default subgroup size */
    uint32_t subgroup_size_min, subgroup_size_max; /* 0 when subgroup size control is absent */
    int subgroup_size_control;
    int subgroup_arithmetic;                /* subgroup add/max in compute shaders */
    int cooperative_matrix;                 /* VK_KHR_cooperative_matrix present */
    int timeline_semaphore;
    int timestamps;                         /* the compute queue supports timestamp queries */
    float timestamp_period_ns;
    uint32_t max_shared_memory;             /* bytes per workgroup */
    uint32_t max_workgroup_invocations;
    uint64_t device_local_bytes;            /* largest device-local heap */
    uint64_t max_storage_buffer_range;      /* bytes one storage-buffer descriptor reaches (128 MiB on lavapipe) */
    uint32_t max_workgroup_count[3];        /* maxComputeWorkGroupCount */
    char workarounds[512];                  /* the quirks in force, comma-separated, "" for none; after a ctx's
                                               first session also any variant its first-use self-check switched
                                               off ("... failed its self-check (...): ...", docs/gpu.md) */
    int validation;                         /* the validation layer is active */
    int adopted;                            /* the ctx adopted a host device */
    /* Capabilities in use (src/vk/vk.h vkvit__caps; docs/gpu.md). New fields are only ever appended here. */
    int subgroup_in_use;                    /* subgroup reductions (norm, GRN and GroupNorm statistics) in use:
                                               subgroup_arithmetic and not VKVIT_DISABLE_SUBGROUP=1 */
    int cooperative_matrix_nv;              /* VK_NV_cooperative_matrix present */
    int cooperative_matrix_in_use;          /* the GEMMs of fp16-math sessions run on cooperative matrices
                                               (VK_NV_cooperative_matrix: fp16 x fp16 + fp32 at 16x16x16 with 32-wide
                                               subgroups; VK_KHR_cooperative_matrix: at a listed 16x16x16,
                                               8x16x16, 8x8x16 or 8x8x8, subgroups of 4 to 64). Checked against
                                               plain loops at the ctx's first fp16-math session; a failure clears it
                                               and is named in `workarounds`.
                                               VKVIT_DISABLE_COOPMAT=1 keeps it 0 for good */
    int texel_reads_in_use;                 /* CPU devices (lavapipe): the CPU kernels read their inputs through
                                               uniform texel buffers, which llvmpipe gathers ~20x faster than it
                                               loads storage buffers, and store pairs of floats as 64-bit words
                                               (needs shaderInt64, enabled by the host in adopt mode);
                                               VKVIT_DISABLE_TEXEL=1 keeps storage buffers */
    int cooperative_matrix_khr_kernel;      /* cooperative_matrix_in_use runs the VK_KHR_cooperative_matrix kernel
                                               (builds whose glslang compiles GL_KHR_cooperative_matrix: >= 13),
                                               not the VK_NV_cooperative_matrix one. Where both can run, NV's is
                                               used unless VKVIT_COOPMAT_KHR=1 */
    /* The queue (vkvit_enumerate_devices: the family a ctx of its own would take). */
    uint32_t queue_family_index;            /* the ctx's queue family: vkvit's own device takes a compute family
                                               without graphics (the async compute queue) where the device has one
                                               with timestamps, else a graphics + compute one */
    uint32_t queue_flags;                   /* its VkQueueFlags */
    int queue_compute_only;                 /* 1: VK_QUEUE_COMPUTE_BIT without VK_QUEUE_GRAPHICS_BIT */
    int queue_priority;                     /* the global priority in force, as VkQueueGlobalPriorityKHR (128 low,
                                               256 medium, 512 high); 0: none set (the driver's default) */
    int queue_priority_fallback;            /* why a requested priority is not in force: 0 none, 1 the device lists
                                               neither VK_KHR_global_priority nor VK_EXT_global_priority, 2 the
                                               driver refused it (VK_ERROR_NOT_PERMITTED) */
    /* The device's memory heaps (appended). With VK_EXT_memory_budget (memory_budget 1: vkvit enables it where the
     * device lists it; in adopt mode only where the host enabled it) budget and usage are the driver's figures for
     * this process; without it budget is the heap's size and usage 0 (not reported). Under a device profile
     * (VKVIT_DEVICE_PROFILE) the figures are the profile's heaps: a budget never exceeds its heap's size. A
     * snapshot taken when the ctx was created (or the device listed); vkvit_ctx_memory_heaps reads them now. */
    int memory_budget;                      /* VK_EXT_memory_budget reports budget and usage */
    uint32_t memory_heap_count;
    vkvit_memory_heap memory_heaps[VKVIT_MAX_MEMORY_HEAPS];
} vkvit_device_info;

VKVIT_API vkvit_result vkvit_ctx_device_info(const vkvit_ctx *ctx, vkvit_device_info *out);

/* The ctx's memory heaps as the driver reports them now: up to `cap` heaps into `out` (which may be NULL), their
 * count into *count; returns 1 in *budget_reported (may be NULL) where VK_EXT_memory_budget is enabled (budget and
 * usage the driver's, usage including other libraries' allocations on the same device in this process), else 0
 * (budget = size, usage = 0). Under a device profile, the profile's heaps. Session creation refuses, with a sentence
 * naming the figures, a buffer its heap's remaining budget (budget - usage) cannot hold, once every other suitable
 * memory type's heap is full too (VKVIT_ERROR_OUT_OF_DEVICE_MEMORY). */
VKVIT_API vkvit_result vkvit_ctx_memory_heaps(const vkvit_ctx *ctx, vkvit_memory_heap *out, uint32_t cap,
                                              uint32_t *count, int *budget_reported);

/* Lists every Vulkan device without creating a ctx (for `vkvit info`). Writes up to `cap` entries into `out`
 * (which may be NULL) and the total count into *count. Fields about what vkvit uses are filled as they would be
 * for that device. */
VKVIT_API vkvit_result vkvit_enumerate_devices(vkvit_device_info *out, uint32_t cap, uint32_t *count);

/* Number of validation-layer messages (warnings and errors) seen by this ctx since creation or the last reset;
 * always 0 when validation is off. Tests assert it stays 0. */
VKVIT_API uint32_t vkvit_ctx_validation_messages(const vkvit_ctx *ctx, int reset);


/* ------------------------------------------------------------------------------------------------------------
 * Model: an architecture and its weights on the device
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct vkvit_model vkvit_model;

/* A model comes from a file (path) or from the caller's memory (data, size): exactly one of path and data is set.
 * Defaults: label = the path, or "model in memory". */
typedef struct vkvit_model_desc {
    const char *path;                       /* a vkvit model file (docs/model-format.md); NULL when data is set */
    const char *label;
    const void *data;                       /* the bytes of a model file, when path is NULL (an app's asset, a
                                               download): read during vkvit_model_create only, not kept after it
                                               returns; any alignment */
    size_t size;                            /* bytes at data (at most 4 GiB) */
} vkvit_model_desc;

/* Reads and validates the model (hostile input: every length, offset, dtype, shape and hyperparameter is checked;
 * every weight is read and a non-finite one refused). `ctx` must outlive the model. A file is opened without
 * blocking and must be a regular file (a FIFO, device or directory is refused at once with VKVIT_ERROR_IO); it is
 * read with pread (never mapped) and stays open until vkvit_model_destroy. A file that another process shrinks
 * meanwhile fails with VKVIT_ERROR_IO ("... the file shrank while vkvit read it ..."), never a SIGBUS, here or at a
 * session's creation. Bytes in memory get the same checks, and the same sentences as a file with those bytes (named
 * by label); the model keeps a copy of them (host memory of the file's size), so the caller may free them at once.
 *
 * Device memory: nothing is uploaded here. The weights go to the device as one image per kind of session, made from
 * the file's bytes when the first session that needs it is created (nothing is read back from the device): fp32
 * sessions read an image with every weight in fp32 (vkvit_model_info.weight_bytes); FP16 and FP16_MATH sessions one
 * with the GEMM weights (2-D weights, convolution kernels) in fp16, as the file stores them or rounded to nearest
 * even, and the other weights (norms, biases, embeddings) in fp32 (vkvit_session_stats.weight_bytes gives a
 * session's). An image stays while a live session reads it; when none does, the image of the most recently created
 * session stays, and creating a session frees the other image. So a program using one precision holds one image,
 * and only one with live sessions of both kinds holds both. Errors:
 * VKVIT_ERROR_IO, _BAD_MODEL_FILE (with a sentence naming the tensor or field), _UNSUPPORTED, _INVALID_ARGUMENT
 * (both or neither of path and data; above 4 GiB), _OUT_OF_HOST_MEMORY, _OUT_OF_DEVICE_MEMORY, _VULKAN. */
VKVIT_API vkvit_result vkvit_model_create(vkvit_ctx *ctx, const vkvit_model_desc *desc, vkvit_model **out);
VKVIT_API void vkvit_model_destroy(vkvit_model *model);

typedef struct vkvit_model_info {
    const char *architecture;               /* "vit5", "vil", "resnet" */
    const char *flavour;                    /* "nvsubq", "paper", "seed", "nxai", "generic" */
    const char *name;
    uint32_t image_height, image_width;     /* network input */
    uint32_t num_classes;
    uint32_t num_labels;                    /* 0 or num_classes; see vkvit_model_label */
    uint64_t parameters;
    uint64_t flops;                         /* per image, by the seeds' flop_count formulas */
    uint64_t weight_bytes;                  /* device bytes of the fp32 weight image (fp32 sessions'; resident
                                               while one lives, see vkvit_model_create) */
    /* preprocessing the model was trained with */
    uint32_t resize_shorter;
    int bicubic;                            /* 1 bicubic, 0 bilinear */
    float mean[3], std[3];
} vkvit_model_info;

/* Strings in the info point into the model and live as long as it. */
VKVIT_API vkvit_result vkvit_model_get_info(const vkvit_model *model, vkvit_model_info *out);
/* The label of class i, or NULL when the file has no labels or i is out of range. */
VKVIT_API const char *vkvit_model_label(const vkvit_model *model, uint32_t i);

/* ------------------------------------------------------------------------------------------------------------
 * Session: one planned and recorded graph for a fixed batch size and precision
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct vkvit_session vkvit_session;

typedef enum vkvit_precision {
    VKVIT_PRECISION_DEFAULT = 0,            /* fp32 */
    VKVIT_PRECISION_FP32 = 1,               /* everything fp32: the reference path */
    VKVIT_PRECISION_FP16 = 2,               /* GEMM weights stored as fp16 (half the weight traffic); activations,
                                               accumulation and statistics stay fp32. Needs storageBuffer16BitAccess
                                               (VKVIT_ERROR_UNSUPPORTED without it). The first fp16 session of a
                                               model makes the fp16 weight image (vkvit_model_create). */
    VKVIT_PRECISION_FP16_MATH = 3,          /* fp16 arithmetic in the GEMMs that read fp16 weights (the linear
                                               layers): the fp16 weights of FP16, activations rounded to fp16 as
                                               they are loaded, products as packed fp16 FMAs summed in fp16 over 16
                                               consecutive k and then in fp32; bias, activation, LayerScale and
                                               residual in fp32. Everything else stays fp32 as in FP16: attention,
                                               norms and their statistics, softmax sums, mLSTM gates and normaliser
                                               state. Expect logits within ~1e-2 of the fp32 path (relative to their
                                               largest magnitude). Needs shaderFloat16 and storageBuffer16BitAccess
                                               and fp16 not disabled (VKVIT_DISABLE_F16=1 / ctx desc disable_f16):
                                               VKVIT_ERROR_UNSUPPORTED otherwise (vkvit_device_info.fp16_arithmetic
                                               and fp16_in_use tell beforehand). Never chosen by default; on CPU
                                               devices fp16 math is emulated and slower than FP16. */
} vkvit_precision;

/* Defaults: label "vkvit session", batch 1, precision DEFAULT, profile 0 (1 = per-node GPU timestamps, read with
 * vkvit_session_profile), top_k 0, max_image_pixels 0. max_image_pixels = P > 0 creates the GPU pre-processing
 * (3 pipelines) with the session and sizes set_images' upload buffer (4 P bytes) and the scratch buffer for any
 * picture of at most P pixels; record_ex needs it for host inputs and refuses larger ones. 0: set_images creates
 * all that at its first call (docs/preprocessing.md). */
typedef struct vkvit_session_desc {
    const char *label;
    uint32_t batch;
    vkvit_precision precision;
    int profile;
    uint32_t top_k;                         /* 0 = no top-K; else softmax + top-K on the GPU (vkvit_session_get_top_k) */
    uint64_t max_image_pixels;              /* 0 = none; largest width * height of set_images / record_ex pictures */
    int features;                           /* 1 = also output the pooled features (vkvit_session_get_features) */
    int tokens;                             /* 1 = also output the final token features (vkvit_session_get_tokens) */
} vkvit_session_desc;

/* Builds the graph, plans one activation arena, creates every pipeline and descriptor set and records the whole
 * inference into one command buffer. Nothing is allocated or created after this returns. `model` must outlive
 * the session. Pipelines (with their layouts and shader modules) belong to the ctx and are shared by its sessions:
 * one per kernel variant, created by the first session that needs it and destroyed with the last one using it, so
 * a session after the first of its kind costs only its own buffers, descriptor sets and command buffer (about
 * 0.2 MB of host memory for a small model on lavapipe, whose pipelines take ~1.4 MB each with their JIT code). On a CPU device (lavapipe, SwiftShader: drivers that compile a shader at its first dispatch, not at
 * pipeline creation) it also submits one warm-up dispatch of every pipeline and waits for it, so the JIT runs here
 * and not in the first inference (docs/embedding.md, "Start-up time"); GPU drivers compile in
 * vkCreateComputePipelines, so nothing is submitted there. */
VKVIT_API vkvit_result vkvit_session_create(vkvit_model *model, const vkvit_session_desc *desc, vkvit_session **out);
VKVIT_API void vkvit_session_destroy(vkvit_session *session);

typedef struct vkvit_shape {
    uint32_t ndim;
    uint32_t dims[4];
} vkvit_shape;

/* The input is a float tensor [B, H, W, 3], channels-last, already normalised; the output [B, num_classes] logits. */
VKVIT_API vkvit_shape vkvit_session_input_shape(const vkvit_session *session);
VKVIT_API vkvit_shape vkvit_session_output_shape(const vkvit_session *session);

/* Copies `count` floats (exactly the input's element count) into the session's input. */
VKVIT_API vkvit_result vkvit_session_set_input(vkvit_session *session, const float *src, size_t count);

/* The condition input of `resnet` models whose blocks have an active condition mixer (docs/model-format.md):
 * [B, C] for a global condition (config condition_tokens = 0) or [B, Tc, C] (Tc = condition_tokens), float,
 * row-major. ndim 0 when the model takes no condition (every vit5 model; resnet with an identity condition mixer). */
VKVIT_API vkvit_shape vkvit_session_condition_shape(const vkvit_session *session);
/* Copies `count` floats (exactly the condition's element count) into the session's condition. It stays set for
 * later runs until replaced. A session of a model that takes a condition refuses to run (vkvit_session_run:
 * VKVIT_ERROR_INVALID_ARGUMENT with a sentence) until this has succeeded once; with vkvit_session_record, set it
 * before submitting the command buffer, as with set_input. Errors: VKVIT_ERROR_INVALID_ARGUMENT for a NULL
 * argument, a wrong count, or a model that takes no condition. */
VKVIT_API vkvit_result vkvit_session_set_condition(vkvit_session *session, const float *src, size_t count);
/* One inference: one queue submission of the recorded command buffer, then a wait for it. */
VKVIT_API vkvit_result vkvit_session_run(vkvit_session *session);
/* Records one inference into the caller's command buffer instead of submitting it: `cmd` must be a primary command
 * buffer in the recording state, allocated from a pool of the ctx's queue family (vkvit_ctx_queue_family). The
 * recorded commands begin with a memory dependency on all earlier compute/transfer work and end with the output made
 * visible to the host. Call set_input (and set_condition) before submitting `cmd`; call get_output only after the
 * caller has waited for the submission (a fence or semaphore of its own). vkvit creates nothing here. The same
 * session must not be in flight twice at once (its arena is shared by every recording). vkvit_session_record_ex
 * (Embedding section) also takes the host's VkImages / VkBuffers as input and a host VkBuffer as output. */
VKVIT_API vkvit_result vkvit_session_record(vkvit_session *session, VkCommandBuffer cmd);

/* The queue family a caller's command buffers for vkvit_session_record must come from. */
VKVIT_API uint32_t vkvit_ctx_queue_family(const vkvit_ctx *ctx);

/* Copies the output (exactly `count` floats) out after a run. */
VKVIT_API vkvit_result vkvit_session_get_output(vkvit_session *session, float *dst, size_t count);

/* Copies the network input [B, H, W, 3] as the last run read it (exactly `count` floats): the normalised pixels the
 * GPU pre-processing made of set_images' pictures and record_ex's host inputs, or set_input's values. For checking a
 * camera pipeline (orientation, YUV encoding) against the host's own conversion. Needs an arena the host can see
 * (CPU devices, unified memory); elsewhere VKVIT_ERROR_UNSUPPORTED, since the input is never copied back. */
VKVIT_API vkvit_result vkvit_session_get_input(vkvit_session *session, float *dst, size_t count);

/* Pooled features (sessions created with desc.features = 1): what the classifier head reads, [batch, F] — timm's
 * forward_features + pre-logits. ViT-5: the CLS token, the token average (GAP) or the register concat through the
 * neck, after out_norm (F = dim, or num_registers * neck_dim); ViL: the bilateral average after the head norm
 * (F = dim); resnet: the token average after out_norm (F = dim). The logits are exactly out_proj(features).
 * The shape is all zeros without features. For retrieval and detection heads of the application's own. */
VKVIT_API vkvit_shape vkvit_session_feature_shape(const vkvit_session *session);
VKVIT_API vkvit_result vkvit_session_get_features(vkvit_session *session, float *dst, size_t count);

/* Dense token features (sessions created with desc.tokens = 1), for the application's own per-patch heads
 * (segmentation, depth, keypoints, tracking): the tokens the last block leaves, through the network's final
 * token-wise norm, as timm's forward_features returns them:
 *   ViT-5  out_norm (RMSNorm) on every token with the CLS and GAP readouts (so with CLS the CLS token is exactly the
 *          pooled features); with register_concat, whose out_norm normalises the neck's R * neck_dim concat, the
 *          last block's output as is. The last block then runs on every token (not only the CLS rows).
 *   ViL    legacy_norm (LayerNorm) on every token, before the bilateral average.
 *   resnet out_norm on every position, before the average.
 * Three parts, back to back in this order, each batch-major, float:
 *   patches    [B, Hp, Wp, C] (ViT-5: image layout, row-major grid) or [B, T, C] (ViL, resnet: T = Hp * Wp tokens in
 *              the same row-major grid order)
 *   cls        [B, C] (ViT-5 models with a CLS token; ndim 0 otherwise)
 *   registers  [B, R, C] (ViT-5 models with R > 0 registers; ndim 0 otherwise)
 * Offsets and count are in floats from the start of the whole (cls_offset = registers_offset = count where a part
 * is absent); a host buffer of record_ex's VKVIT_OUTPUT_TOKENS gets the same count * 4 bytes. */
typedef struct vkvit_token_layout {
    vkvit_shape patches, cls, registers;
    uint64_t cls_offset, registers_offset, count;
} vkvit_token_layout;

/* The layout above. Errors: VKVIT_ERROR_INVALID_ARGUMENT (NULL argument, a session created without tokens). */
VKVIT_API vkvit_result vkvit_session_token_layout(const vkvit_session *session, vkvit_token_layout *out);
/* Copies the tokens of the last run (exactly layout.count floats) to dst, after a run like get_output. */
VKVIT_API vkvit_result vkvit_session_get_tokens(vkvit_session *session, float *dst, size_t count);

typedef struct vkvit_session_stats {
    uint64_t arena_bytes;                   /* the planned activation arena (inputs and outputs included) */
    uint64_t sum_activation_bytes;          /* all intermediates added up (what a naive runtime would allocate) */
    uint64_t largest_activation_bytes;
    uint64_t weight_bytes;                  /* the model's weight image this session reads (its precision's) */
    uint32_t nodes;                         /* dispatches per inference */
    uint32_t barriers;                      /* pipeline barriers between them */
    uint32_t pipelines;                     /* pipelines the session uses (the ctx's, shared with its other
                                               sessions: one per kernel variant) */
    uint32_t batch;                         /* images per inference */
    uint32_t sub_batch;                     /* images per sub-network: less than batch when a device limit
                                               (maxComputeWorkGroupCount, maxStorageBufferRange) split the batch */
    uint32_t largest_grid[3];               /* the largest workgroup count of any dispatch, per dimension */
    uint64_t largest_weight_binding;        /* the largest weight range one dispatch binds */
} vkvit_session_stats;

VKVIT_API vkvit_result vkvit_session_get_stats(const vkvit_session *session, vkvit_session_stats *out);

/* Per-node GPU time of the last run (sessions created with profile = 1). */
typedef struct vkvit_profile_entry {
    const char *label;                      /* e.g. "blocks.3.mlp.layer1" */
    const char *kind;                       /* e.g. "gemm", "attention", "norm" */
    double ms;
} vkvit_profile_entry;

/* Writes up to `cap` entries (in execution order) and, on success only, the total count to *count. The times are
 * those of the last vkvit_session_run, or of the last vkvit_session_submit once it has completed (in flight:
 * VKVIT_ERROR_INVALID_ARGUMENT); after a vkvit_session_record(_ex) into a host command buffer, whose completion vkvit
 * cannot see, it refuses (VKVIT_ERROR_INVALID_ARGUMENT) until the next run or submit. */
VKVIT_API vkvit_result vkvit_session_profile(const vkvit_session *session, vkvit_profile_entry *out, uint32_t cap,
                                             uint32_t *count);

/* ------------------------------------------------------------------------------------------------------------
 * Images: 8-bit pictures pre-processed on the GPU, and top-K on the GPU
 * ------------------------------------------------------------------------------------------------------------ */

typedef enum vkvit_pixel_format {
    VKVIT_PIXEL_RGBA8 = 1,                  /* bytes R, G, B, A per pixel, values as stored (sRGB-encoded photos) */
    VKVIT_PIXEL_BGRA8 = 2,                  /* bytes B, G, R, A */
    VKVIT_PIXEL_NV12 = 3,                   /* camera frames, YUV 4:2:0 in two planes: Y (one byte per pixel), then
                                               Cb, Cr byte pairs, one pair per 2 x 2 pixels (Android's and
                                               ARCore's / ARKit's usual camera format) */
    VKVIT_PIXEL_I420 = 4,                   /* YUV 4:2:0 in three planes: Y, then Cb, then Cr, one byte per 2 x 2
                                               pixels in each chroma plane */
} vkvit_pixel_format;

/* How a YUV frame's bytes map to RGB (vkvit_image.yuv, vkvit_host_pixels.yuv): the matrix and the range.
 *   limited ("video") range: y = (Y - 16) / 219, cb = (Cb - 128) / 224, cr = (Cr - 128) / 224
 *   full ("JPEG") range:     y = Y / 255,        cb = (Cb - 128) / 255, cr = (Cr - 128) / 255
 *   R = y + 2 (1 - Kr) cr,  B = y + 2 (1 - Kb) cb,  G = (y - Kr R - Kb B) / (1 - Kr - Kb)
 *   BT.601: Kr = 0.299, Kb = 0.114;  BT.709: Kr = 0.2126, Kb = 0.0722
 * each of R, G, B clamped to [0, 1] and used as the float image (no rounding to 8 bits), in place of byte / 255.
 * Pixel (x, y) takes the chroma sample (x / 2, y / 2) (nearest; no chroma filtering). tools/reference/yuv.py is the
 * NumPy form of this. */
typedef enum vkvit_yuv_encoding {
    VKVIT_YUV_BT601_LIMITED = 0,            /* the default: most camera frames (Android, ARCore) */
    VKVIT_YUV_BT601_FULL = 1,
    VKVIT_YUV_BT709_LIMITED = 2,            /* HD video, ARKit's video-range formats */
    VKVIT_YUV_BT709_FULL = 3,
} vkvit_yuv_encoding;

/* Orientation (vkvit_image.orientation, vkvit_host_pixels.orientation, vkvit_host_image.orientation), for frames
 * that arrive rotated with the device: the picture the model sees is the stored one turned clockwise by the
 * rotation, then mirrored left-right when VKVIT_MIRROR is set (a front camera). The resize and crop apply to that
 * picture (a 90 or 270 degree turn swaps width and height), in the same pass: nothing is rotated in memory. */
#define VKVIT_ROTATE_0 0u
#define VKVIT_ROTATE_90 1u
#define VKVIT_ROTATE_180 2u
#define VKVIT_ROTATE_270 3u
#define VKVIT_MIRROR 4u

/* The largest image side vkvit_session_set_images accepts; larger images are refused before anything is
 * allocated (VKVIT_ERROR_BAD_IMAGE). */
#define VKVIT_MAX_IMAGE_SIDE 16384u

/* An 8-bit image in host memory. The alpha channel is ignored. */
typedef struct vkvit_image {
    const uint8_t *pixels;                  /* RGBA8 / BGRA8: the pixels; NV12 / I420: the Y plane */
    uint32_t width, height;                 /* 1 .. VKVIT_MAX_IMAGE_SIDE each, as stored (before orientation) */
    uint32_t row_bytes;                     /* 0 = width * 4 (RGBA8, BGRA8) or width (the Y plane of NV12, I420) */
    vkvit_pixel_format format;
    /* Camera frames and orientation (all 0: an upright RGBA8 / BGRA8 picture, as before). */
    const uint8_t *chroma[2];               /* NV12: chroma[0] the Cb, Cr plane ((width + 1) / 2 pairs per row,
                                               (height + 1) / 2 rows); I420: chroma[0] Cb and chroma[1] Cr
                                               ((width + 1) / 2 bytes per row, (height + 1) / 2 rows) */
    uint32_t chroma_row_bytes;              /* 0 = 2 ((width + 1) / 2) (NV12) or (width + 1) / 2 (I420); I420's
                                               two chroma planes share it */
    vkvit_yuv_encoding yuv;                 /* NV12 / I420 only */
    uint32_t orientation;                   /* VKVIT_ROTATE_* | VKVIT_MIRROR, any format */
} vkvit_image;

/* Uploads `count` images into batch slots first_slot .. first_slot + count - 1 (<= batch) and pre-processes them
 * on the GPU exactly as the model file's `preprocess` says, i.e. torchvision's
 *     Resize(resize_shorter, bicubic|bilinear, antialias=True) + CenterCrop(image_size) + Normalize(mean, std)
 * on the float image byte / 255 (PIL's separable resampling in float, docs/preprocessing.md): the shorter side
 * becomes resize_shorter and the longer floor(resize_shorter * long / short); per axis scale = in / out, support
 * = 2 (bicubic, a = -0.5) or 1 (bilinear) times max(scale, 1), taps j from floor(c - support + 0.5) up to
 * (excluding) floor(c + support + 0.5) around c = (i + 0.5) * scale, clipped to the picture, weights
 * filter((j - c + 0.5) / max(scale, 1)) normalised to sum 1; horizontal pass then vertical; crop offsets
 * round((size - crop) / 2) with halves to even (Python's round); then (v - mean) / std into the input
 * [B, H, W, 3]. Matches tools/reference/preprocess.py within 1e-5 on the normalised values. Slots not named keep
 * their contents (set_input replaces every slot). Submits nothing: it writes the pixels and each picture's
 * parameters into mapped memory, and every later run (or command buffer recorded with vkvit_session_record /
 * _record_ex) pre-processes them on the GPU in the same submission as the inference (the session must be idle, as
 * for set_input). Grows the session's upload and scratch buffers when the images need more than any before (the
 * only allocation after session creation; size them up front with vkvit_session_desc.max_image_pixels); growing
 * re-records the session's command buffer and invalidates command buffers the host recorded with this session
 * before (docs/preprocessing.md). Camera frames (NV12, I420) go through the same steps on their RGB conversion
 * (vkvit_yuv_encoding) instead of byte / 255, and every picture is oriented first (VKVIT_ROTATE_*, VKVIT_MIRROR:
 * the resize and crop are of the oriented picture). Errors:
 * VKVIT_ERROR_INVALID_ARGUMENT (NULL, count 0, slots out of range, row_bytes < width * 4 (RGBA8, BGRA8) or width
 * (YUV), chroma_row_bytes too small, a missing chroma plane, session in flight), VKVIT_ERROR_BAD_IMAGE (a side of 0
 * or above VKVIT_MAX_IMAGE_SIDE, unknown format, YUV encoding or orientation), VKVIT_ERROR_UNSUPPORTED (the
 * model's input is not a 3-channel image; or an image within VKVIT_MAX_IMAGE_SIDE whose pixels, width * height * 4
 * bytes, or whose resize scratch are more than one storage-buffer descriptor reaches, the device's
 * maxStorageBufferRange: 16384x16384 is 1 GiB, lavapipe reaches 128 MiB, vkvit_device_info.max_storage_buffer_range
 * says it), VKVIT_ERROR_OUT_OF_DEVICE_MEMORY (growing). */
VKVIT_API vkvit_result vkvit_session_set_images(vkvit_session *session, uint32_t first_slot,
                                                const vkvit_image *images, uint32_t count);

/* Softmax over the logits and the K most probable classes of each image, computed on the GPU after every run when
 * the session was created with top_k > 0 (at most VKVIT_MAX_TOP_K and num_classes). Writes batch * top_k entries,
 * row-major, most probable first; ties go to the lower class index. Copies out after a run, like get_output. */
#define VKVIT_MAX_TOP_K 32u
VKVIT_API vkvit_result vkvit_session_get_top_k(vkvit_session *session, uint32_t *classes, float *probabilities,
                                               size_t count);

/* ------------------------------------------------------------------------------------------------------------
 * Embedding: host images and buffers recorded into the host's command buffer, submission on host queues
 * ------------------------------------------------------------------------------------------------------------ */

/* --- Host images and buffers in, host buffer out, recorded into the host's command buffer (docs/preprocessing.md) ---
 *
 * vkvit_session_record_ex records, into a command buffer of the host's, the GPU pre-processing of images the host
 * already has on the device (a camera frame, a render target: a VkImage, or RGBA8/BGRA8 pixels in a VkBuffer) into
 * batch slots of the session's input, the inference, and optionally a copy of the logits or the top-K result into
 * a VkBuffer of the host's. Pre-processing is exactly vkvit_session_set_images' (resize, centre crop, normalise).
 *
 *   vkvit_host_image in = {.image = img, .view = view, .format = VK_FORMAT_R8G8B8A8_SRGB,
 *                          .layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, .width = 1280, .height = 720,
 *                          .src_stage = VK_PIPELINE_STAGE_TRANSFER_BIT, .src_access = VK_ACCESS_TRANSFER_WRITE_BIT};
 *   vkvit_record_desc rd = {.images = &in, .image_count = 1,
 *                           .output = {.kind = VKVIT_OUTPUT_TOP_K, .buffer = results, .offset = 0,
 *                                      .dst_stage = VK_PIPELINE_STAGE_HOST_BIT, .dst_access = VK_ACCESS_HOST_READ_BIT}};
 *   vkvit_session_record_ex(s, cmd, &rd);      // then the host ends, submits and waits for cmd as it likes
 *
 * Rules: vkvit creates and allocates nothing here. The descriptor sets that point at the host's resources were
 * allocated at session creation (one per batch slot) and are rewritten by this call, so the previous recording of
 * this session must have completed on the GPU (or never been submitted) before the next record_ex call. The host
 * keeps its images, views and buffers alive until the recorded work has completed. vkvit never changes an image
 * layout. Each input is pre-processed through the session's scratch buffer, sized at session creation for images
 * of up to vkvit_session_desc.max_image_pixels pixels (every such input fits; a larger one fits when its resize
 * needs no more scratch, e.g. a wide picture whose shorter side is small). An input that does not fit is refused
 * (VKVIT_ERROR_INVALID_ARGUMENT naming the max_image_pixels it needs). Slots without a host input keep what
 * set_input / set_images last put there. */

/* A host VkImage as the input of one batch slot. sRGB: an _SRGB view decodes to linear light on fetch; vkvit
 * re-encodes the value to sRGB (and rounds it back to its 8-bit code), because the model was trained on the stored,
 * encoded values, exactly what set_images sees. So an _SRGB and a _UNORM view of the same bytes give the same
 * result. */
typedef struct vkvit_host_image {
    VkImage image;                          /* required: for the barrier */
    VkImageView view;                       /* required: VK_IMAGE_VIEW_TYPE_2D of `image`, created with
                                               VK_IMAGE_USAGE_SAMPLED_BIT, one mip level, one layer */
    VkFormat format;                        /* the view's: VK_FORMAT_R8G8B8A8_UNORM/_SRGB, VK_FORMAT_B8G8R8A8_UNORM/_SRGB */
    VkImageLayout layout;                   /* the layout the image is in when the commands run:
                                               VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL or VK_IMAGE_LAYOUT_GENERAL */
    VkImageSubresourceRange subresource;    /* the view's range, for the barrier; aspectMask 0 = colour, mip 0, layer 0 */
    uint32_t width, height;                 /* the view's extent, 1 .. VKVIT_MAX_IMAGE_SIDE */
    uint32_t slot;                          /* batch slot, < batch */
    VkPipelineStageFlags src_stage;         /* the host's last write of the image (e.g. VK_PIPELINE_STAGE_TRANSFER_BIT,
                                               COLOR_ATTACHMENT_OUTPUT); a layout transition after it (a render
                                               pass's finalLayout) must be made to reach this stage by the host's own
                                               dependency; 0 = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT */
    VkAccessFlags src_access;               /* its access (e.g. VK_ACCESS_TRANSFER_WRITE_BIT); 0 = VK_ACCESS_MEMORY_WRITE_BIT */
    uint32_t orientation;                   /* VKVIT_ROTATE_* | VKVIT_MIRROR (0: upright). YCbCr images
                                               (VkSamplerYcbcrConversion) are not taken: give their planes as
                                               vkvit_host_pixels in a VkBuffer */
} vkvit_host_image;

/* 8-bit pixels in a host VkBuffer as the input of one batch slot (alpha ignored). The buffer holds at least
 * offset + (height - 1) * row_bytes + width * 4 bytes; that range (from offset rounded down to the device's
 * minStorageBufferOffsetAlignment) must not exceed maxStorageBufferRange. vkvit refuses a range past the buffer's
 * memory requirements (vkGetBufferMemoryRequirements: at least its size, rounded up to an alignment), so a range
 * that ends inside that rounding is the host's to get right. */
typedef struct vkvit_host_pixels {
    VkBuffer buffer;                        /* required: created with VK_BUFFER_USAGE_STORAGE_BUFFER_BIT */
    VkDeviceSize offset;                    /* of the first pixel; a multiple of 4 */
    uint32_t width, height;                 /* 1 .. VKVIT_MAX_IMAGE_SIDE */
    uint32_t row_bytes;                     /* a multiple of 4, >= width * 4; 0 = width * 4 */
    vkvit_pixel_format format;              /* VKVIT_PIXEL_RGBA8 or VKVIT_PIXEL_BGRA8 */
    uint32_t slot;                          /* batch slot, < batch */
    VkPipelineStageFlags src_stage;         /* the host's last write (0 = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT) */
    VkAccessFlags src_access;               /* its access (0 = VK_ACCESS_MEMORY_WRITE_BIT) */
    /* Camera frames and orientation (all 0: an upright RGBA8 / BGRA8 picture, as before). NV12 / I420: `offset`
     * is the Y plane's (any byte), row_bytes its stride (0 = width), and the chroma planes lie in the same buffer
     * (sizes as for vkvit_image); the range from the lowest plane offset rounded down to
     * minStorageBufferOffsetAlignment to the end of the last plane must not exceed maxStorageBufferRange. */
    VkDeviceSize chroma_offset[2];          /* NV12: [0] the Cb, Cr plane; I420: [0] Cb, [1] Cr */
    uint32_t chroma_row_bytes;              /* as vkvit_image.chroma_row_bytes */
    vkvit_yuv_encoding yuv;
    uint32_t orientation;                   /* VKVIT_ROTATE_* | VKVIT_MIRROR */
} vkvit_host_pixels;

typedef enum vkvit_output_kind {
    VKVIT_OUTPUT_NONE = 0,                  /* no host buffer: the output goes where vkvit_session_record puts it
                                               (read with get_output / get_top_k after the host's wait) */
    VKVIT_OUTPUT_LOGITS = 1,                /* float [B, num_classes] */
    VKVIT_OUTPUT_TOP_K = 2,                 /* uint32 classes [B, top_k], then float probabilities [B, top_k]
                                               (sessions created with top_k > 0) */
    VKVIT_OUTPUT_TOKENS = 3,                /* the dense tokens, float, as vkvit_token_layout lays them out
                                               (sessions created with tokens = 1) */
} vkvit_output_kind;

/* Where the result goes. With a host buffer the session's own host-visible output is not updated (get_output and
 * get_top_k then return an earlier run's result). */
typedef struct vkvit_host_output {
    vkvit_output_kind kind;
    VkBuffer buffer;                        /* created with VK_BUFFER_USAGE_TRANSFER_DST_BIT; vkvit_session_output_bytes
                                               bytes from `offset` */
    VkDeviceSize offset;                    /* a multiple of 4; the range past the buffer's memory requirements is
                                               refused (as for vkvit_host_pixels) */
    VkPipelineStageFlags dst_stage;         /* the host's next read (e.g. VK_PIPELINE_STAGE_HOST_BIT, COMPUTE_SHADER);
                                               0 = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT */
    VkAccessFlags dst_access;               /* its access (e.g. VK_ACCESS_HOST_READ_BIT); 0 = VK_ACCESS_MEMORY_READ_BIT */
} vkvit_host_output;

/* Defaults: no host images, no host pixel buffers, output kind NONE. */
typedef struct vkvit_record_desc {
    const vkvit_host_image *images;
    uint32_t image_count;
    const vkvit_host_pixels *pixels;
    uint32_t pixels_count;
    vkvit_host_output output;
} vkvit_record_desc;

/* Records pre-processing of the host's inputs + one inference + the copy into the host's output buffer into `cmd`
 * (same requirements as vkvit_session_record, which is this call with desc NULL). Every argument is checked before
 * anything is recorded; on failure nothing was recorded. Errors: VKVIT_ERROR_INVALID_ARGUMENT (a NULL handle, a
 * slot out of range or used twice, a bad format, YUV encoding, orientation, layout, size, offset or alignment, a
 * missing chroma plane, top-K output without top_k, a tokens output without tokens, host inputs in a session created
 * without max_image_pixels, an input that does not fit its scratch buffer (above)), VKVIT_ERROR_BAD_IMAGE (a zero or
 * too large side), VKVIT_ERROR_UNSUPPORTED (the model's input is not a 3-channel image). */
VKVIT_API vkvit_result vkvit_session_record_ex(vkvit_session *session, VkCommandBuffer cmd,
                                               const vkvit_record_desc *desc);

/* Bytes a host output buffer of `kind` needs: B * num_classes * 4 (logits), B * top_k * 8 (top-K) or
 * vkvit_token_layout.count * 4 (tokens); 0 for NONE, for TOP_K in a session without top-K and for TOKENS in one
 * without tokens. */
VKVIT_API uint64_t vkvit_session_output_bytes(const vkvit_session *session, vkvit_output_kind kind);

/* --- Submission on the host's queue, ordered by the host's semaphores (docs/embedding.md) ---
 *
 * The alternative to vkvit_session_record: vkvit submits its own pre-recorded command buffer on a queue the host
 * names, waiting on and signalling the host's semaphores, and returns at once. Typical frame on a device with
 * timeline semaphores (Vulkan 1.2, or 1.1 + VK_KHR_timeline_semaphore with timelineSemaphore enabled):
 *
 *   vkvit_session_set_input(s, pixels, n);                        // host memory; the session must be idle
 *   vkvit_semaphore_wait  w = {.semaphore = frame_timeline, .value = frame};          // the host's work before
 *   vkvit_semaphore_signal d = {.semaphore = frame_timeline, .value = frame + 1};     // inference done
 *   vkvit_session_submit(s, &(vkvit_submit_desc){.waits = &w, .wait_count = 1, .signals = &d, .signal_count = 1});
 *   ...later (next frame): vkWaitSemaphores(frame + 1) or vkvit_session_poll(s) == 1, then get_output / get_top_k.
 *
 * Without timeline semaphores (plain Vulkan 1.1) every value must be 0: the semaphores are binary (each signal is
 * consumed by exactly one wait) and the host learns completion from `fence` or vkvit_session_poll.
 *
 * Memory: the submission begins with a dependency on all earlier compute and transfer work on the queue and ends
 * with the output made visible to the host (as vkvit_session_record). A semaphore wait orders the host's work on
 * another queue or submission before vkvit's; `stages` says which of vkvit's stages wait (default: compute shader
 * and transfer, the only stages vkvit uses). */

#define VKVIT_MAX_SUBMIT_SEMAPHORES 16u     /* waits and signals per submission, each */

typedef struct vkvit_semaphore_wait {
    VkSemaphore semaphore;                  /* required; owned by the host */
    uint64_t value;                         /* timeline semaphore: wait until it reaches value; binary: 0 */
    VkPipelineStageFlags stages;            /* vkvit's stages that wait; 0 = COMPUTE_SHADER | TRANSFER */
} vkvit_semaphore_wait;

typedef struct vkvit_semaphore_signal {
    VkSemaphore semaphore;                  /* required; owned by the host */
    uint64_t value;                         /* timeline semaphore: the value it is set to; binary: 0 */
} vkvit_semaphore_signal;

/* Defaults (field = 0 / NULL):
 *   queue        the ctx's queue. Otherwise a queue of the ctx's queue family (vkvit_ctx_queue_family) on the ctx's
 *                device, e.g. the renderer's async-compute queue when the ctx was created on that family. The
 *                host must not use `queue` from another thread during the call (Vulkan's external
 *                synchronisation rule for vkQueueSubmit).
 *   waits        none; `wait_count` entries otherwise (at most VKVIT_MAX_SUBMIT_SEMAPHORES)
 *   signals      none; `signal_count` entries otherwise (at most VKVIT_MAX_SUBMIT_SEMAPHORES)
 *   fence        none; else an unsignalled fence of the host's, signalled when the inference has finished */
typedef struct vkvit_submit_desc {
    VkQueue queue;
    const vkvit_semaphore_wait *waits;
    uint32_t wait_count;
    const vkvit_semaphore_signal *signals;
    uint32_t signal_count;
    VkFence fence;
} vkvit_submit_desc;

/* Submits one inference of `session` and returns without waiting (desc NULL = all defaults). vkvit allocates and
 * creates nothing here: one vkQueueSubmit of the inference (signalling the session's own fence too), and a second,
 * empty one that signals the host's fence when desc.fence is set. A session has one activation arena, so it is
 * either idle or in flight: while it is in flight, submit, run, set_input, set_condition, set_images, get_output and
 * get_top_k fail at once (VKVIT_ERROR_INVALID_ARGUMENT, "still in flight", never a wait); use two sessions to keep
 * two inferences in flight. Errors: VKVIT_ERROR_INVALID_ARGUMENT (a NULL semaphore, too many semaphores, a non-zero
 * value on a device without timeline semaphores, the session in flight, a missing condition),
 * VKVIT_ERROR_DEVICE_LOST, VKVIT_ERROR_VULKAN. */
VKVIT_API vkvit_result vkvit_session_submit(vkvit_session *session, const vkvit_submit_desc *desc);

/* Never blocks: 1 when the session is idle (nothing submitted, or its last vkvit_session_submit / run has finished
 * on the GPU), 0 while it is in flight, or a negative vkvit_result (VKVIT_ERROR_DEVICE_LOST). Work the host
 * recorded with vkvit_session_record is the host's to track. */
VKVIT_API int vkvit_session_poll(const vkvit_session *session);

/* Blocks until the session's last submission has finished (VKVIT_OK at once when idle). For shutdown and loading
 * screens; a frame loop polls instead. */
VKVIT_API vkvit_result vkvit_session_wait(vkvit_session *session);

/* --- One inference in slices, one per frame, under a GPU-time budget (docs/embedding.md, "Slices") ---
 *
 * A whole inference may take longer than a frame can spare. vkvit_session_plan_slices cuts the session's recorded
 * graph into slices, each a run of whole nodes (dispatches) whose GPU time stays within a budget, and
 * vkvit_session_record_slice records one of them into the host's command buffer; the host records slice 0 in one
 * frame, slice 1 in the next, and so on, with its own work (rendering, compute, transfers) in between:
 *
 *   vkvit_slice_plan plan;
 *   vkvit_session_plan_slices(s, &(vkvit_slice_plan_desc){.budget_ms = 4.0}, &plan); // once, on a loading screen
 *   ...each frame: if (i == 0) vkvit_session_set_input(s, pixels, n);  // or set_images; before the submission
 *                  ...the host's own work...
 *                  vkvit_session_record_slice(s, cmd, i);              // slice i of plan.slice_count
 *                  i = (i + 1) % plan.slice_count;                    // after the last: get_output, once waited
 *
 * Times: the plan's node times come from the host (desc.node_ms, e.g. vkvit_profile_entry.ms of an earlier
 * profiled run, or a table measured on the target device) or, by default, from a profiling pass: the plan call
 * runs the session `profile_runs` times with a timestamp after each node (read modulo the queue's
 * timestampValidBits) and takes, per node, the median of the time from the end of the node before to its own end
 * (its dispatch and the barrier before it). The slices are cut greedily, in node order: a slice takes nodes while
 * their times sum to at most budget_ms. A node whose time alone exceeds the budget becomes a slice of its own,
 * counted in vkvit_slice_plan.over_budget and named in its sentence (vkvit_slice_plan.message, also sent to the
 * ctx's log callback as one VKVIT_LOG_WARNING); the plan still succeeds. The budget bounds the planned times: a
 * slice's measured time varies as the device's does (clocks, other work), plus the slice's barrier at its start
 * and, for the first and last, the input and output copies of devices whose arena is not host-visible.
 *
 * Memory: every slice begins with a global memory dependency of compute and transfer work recorded or submitted
 * before it (the earlier slices' writes to the arena), so whatever the host records between two slices on the
 * queue, the slices see each other's results; the host's own work before a slice also waits for that barrier.
 * Slices recorded into command buffers for different queues need the host's semaphores between them, in slice
 * order. Slice 0 also copies the input in (as vkvit_session_record does), the last slice ends with the output made
 * visible to the host; the logits equal a whole run's bit for bit (the same dispatches on the same data).
 *
 * Rules: from the submission of slice 0 until the last slice has completed, the session is busy with that
 * inference: no run, submit, record, set_input, set_condition, set_images or get_output on it (use a second
 * session for other work). Slices are recorded in order (0, 1, ...; recording slice 0 again starts over, and the
 * slice just recorded may be recorded again, into a command buffer that replaces the first); submitted in the
 * order they were recorded. Host inputs (record_ex's images) are not taken by slices: use set_input / set_images.
 * A command buffer recorded with a slice is invalidated as record's are (set_images growing its buffers).
 * vkvit creates nothing in record_slice; plan_slices allocates the plan's host memory and, for its profiling pass
 * without desc.node_ms in a session created with profile = 0, a query pool it destroys before returning. */

/* Defaults: budget_ms required, node_ms NULL (a profiling pass), profile_runs 0 = 3, times_out NULL. */
typedef struct vkvit_slice_plan_desc {
    double budget_ms;                       /* GPU time per slice, > 0 */
    const double *node_ms;                  /* NULL: profile; else one time per node (ms, >= 0, finite), in
                                               execution order, as vkvit_session_profile lists the nodes */
    uint32_t node_count;                    /* entries of node_ms and times_out: vkvit_session_get_stats().nodes */
    uint32_t profile_runs;                  /* profiling passes without node_ms (1 .. 64; 0 = 3) */
    double *times_out;                      /* NULL, or node_count entries that receive the node times the plan
                                               used (the profiled ones: profile once, then plan other budgets
                                               with them as node_ms, or keep them for the next start) */
} vkvit_slice_plan_desc;

typedef struct vkvit_slice_plan {
    uint32_t slice_count;
    uint32_t over_budget;                   /* slices of one node whose time alone exceeds the budget */
    uint32_t nodes;                         /* nodes in all slices (the session's nodes) */
    double total_ms;                        /* the node times summed */
    double largest_ms;                      /* the largest slice's time */
    char message[320];                      /* "" or one sentence naming the node(s) above the budget */
} vkvit_slice_plan;

/* Plans the session's slices (replacing an earlier plan) and writes the plan to *out (may be NULL). The session
 * must be idle; the profiling pass needs the condition of a model that takes one, as run does, and its runs are
 * the session's last (vkvit_session_profile of a session created with profile = 1 then reads the last pass). Like session
 * creation, it needs the whole ctx (THREADING): it submits to the ctx's queue and waits. Errors:
 * VKVIT_ERROR_INVALID_ARGUMENT (NULL session, a budget that is not a positive finite number, node_count other than
 * the session's nodes with node_ms or times_out, a negative or non-finite time, profile_runs above 64, the session in flight),
 * VKVIT_ERROR_UNSUPPORTED (a profiling pass on a device without timestamps: pass node_ms), VKVIT_ERROR_VULKAN. On
 * failure the session keeps no plan. */
VKVIT_API vkvit_result vkvit_session_plan_slices(vkvit_session *session, const vkvit_slice_plan_desc *desc,
                                                 vkvit_slice_plan *out);

typedef struct vkvit_slice_info {
    uint32_t first_node, node_count;        /* nodes [first_node, first_node + node_count) */
    double planned_ms;                      /* their times summed */
    int over_budget;                        /* 1: one node whose time alone exceeds the budget */
    const char *first_label;                /* the first node's label (valid while the session lives) */
} vkvit_slice_info;

/* Slice `index` of the plan. VKVIT_ERROR_INVALID_ARGUMENT without a plan or with an index out of range. */
VKVIT_API vkvit_result vkvit_session_slice_info(const vkvit_session *session, uint32_t index, vkvit_slice_info *out);

/* Records slice `index` into the host's command buffer (a primary one in the recording state, of the ctx's queue
 * family, as for vkvit_session_record) and creates nothing. Errors: VKVIT_ERROR_INVALID_ARGUMENT (NULL argument,
 * no plan, an index out of range or out of order: neither 0, nor the next slice, nor the one just recorded, a
 * model's missing condition); nothing is recorded then. */
VKVIT_API vkvit_result vkvit_session_record_slice(vkvit_session *session, VkCommandBuffer cmd, uint32_t index);

/* Runs one inference as the plan's slices on the ctx's queue, each slice its own submission of the session's
 * command buffer (recorded again for it), waited for: a frame loop without the host's work between, for
 * benchmarks and checks (`vkvit bench --slices`). The whole inference is recorded again at the end, for run and
 * submit. The output is then read as after run. `slice_ms`: NULL, or slice_count entries that receive each slice's
 * GPU time, from a timestamp before its first command to one after its last (sessions created with profile = 1;
 * vkvit_session_profile then refuses until the next run). Creates nothing. Errors: VKVIT_ERROR_INVALID_ARGUMENT
 * (NULL session, no plan, slice_ms without profile = 1, a missing condition, the session in flight),
 * VKVIT_ERROR_VULKAN, VKVIT_ERROR_DEVICE_LOST. */
VKVIT_API vkvit_result vkvit_session_run_slices(vkvit_session *session, double *slice_ms);

/* ------------------------------------------------------------------------------------------------------------
 * Describing a model file without a device (what `vkvit inspect` prints; for tools and bindings)
 * ------------------------------------------------------------------------------------------------------------ */

/* Reads and validates a model file exactly as vkvit_model_create reads it (no ctx, no device, no Vulkan): from
 * desc->path, or from desc->data / desc->size (exactly one of the two, as for vkvit_model_create; desc->label names
 * it in messages). It checks the header, the metadata and every tensor's name, dtype, shape and byte range, but
 * does not read the weight values, so a NaN or infinite weight, which vkvit_model_create refuses, passes here. It
 * returns a malloc'ed, NUL-terminated JSON document in *json_out (free it with vkvit_free). The object holds:
 * "file", "file_size", "format_version", "name", "architecture" ("vit5" | "vil" | "resnet"), "flavour", the
 * architecture's hyperparameters (image_size, patch_size, grid, tokens, dim, depth, heads, ...; see
 * docs/model-format.md), "params", "flops" (per image) and "flops_breakdown", "num_classes", "labels" (every label,
 * [] when the file has none), "preprocess" {image_size, resize_shorter, interpolation, mean, std} and "tensors"
 * {count, F32, F16, BF16, data_bytes, list: [{name, dtype, shape}]}. Strings are valid UTF-8 (bytes of the file that
 * are not become U+FFFD). On failure *json_out is NULL. Errors: VKVIT_ERROR_INVALID_ARGUMENT (NULL desc or
 * json_out, both or neither of path and data), and those of vkvit_model_create's file reading: VKVIT_ERROR_IO,
 * VKVIT_ERROR_BAD_MODEL_FILE, VKVIT_ERROR_UNSUPPORTED, VKVIT_ERROR_OUT_OF_HOST_MEMORY. Thread-safe. */
VKVIT_API vkvit_result vkvit_describe_model(const vkvit_model_desc *desc, char **json_out);

/* vkvit_describe_model_ex's flags. */
#define VKVIT_DESCRIBE_SUMMARY 1u

/* vkvit_describe_model with `flags`: 0 gives vkvit_describe_model's document exactly. VKVIT_DESCRIBE_SUMMARY adds
 * the member "summary": the words `vkvit inspect` prints about the architecture, so that a tool renders a model of
 * any architecture without knowing one:
 *   "lines": [{"key": "input", "text": "32 x 32 RGB, patch 4 -> 8 x 8 grid = 64 patches"}, ...], the
 *            architecture's own lines in order (architecture and flavour first, then input, tokens, widths,
 *            blocks or mixers, readout; which lines depends on the architecture). "key" is the line's name, ""
 *            for a line that continues the one before; "text" is ASCII and holds no string of the file.
 *   "flops_per_block": [{"name": "attention", "key": "attention_per_block"}, ...], the per-block terms of
 *            "flops_breakdown" (besides "block") that describe the architecture's block: "key" is the member of
 *            "flops_breakdown", "name" the words for it.
 * Flags other than VKVIT_DESCRIBE_SUMMARY: VKVIT_ERROR_INVALID_ARGUMENT. Otherwise as vkvit_describe_model. */
VKVIT_API vkvit_result vkvit_describe_model_ex(const vkvit_model_desc *desc, uint32_t flags, char **json_out);

/* Frees memory vkvit returned to the caller (vkvit_describe_model's JSON). NULL is a no-op. */
VKVIT_API void vkvit_free(void *p);

/* ------------------------------------------------------------------------------------------------------------
 * Tensor files: the tensors of a safetensors file (what `vkvit run` reads its input from; for tools and bindings)
 * ------------------------------------------------------------------------------------------------------------
 *
 * A safetensors file held in memory, checked by the same strict reader as a model file's safetensors layer
 * (docs/model-format.md, "The reader"): the header length, strict JSON (UTF-8, no duplicate keys, ...), every
 * tensor's dtype (F32, F16, BF16), shape (at most VKVIT_TENSOR_MAX_DIMS dims), data offsets inside the data section,
 * sizes equal to shape x dtype, no two tensors overlapping. No vkvit metadata is needed; no device is involved.
 *
 *   vkvit_tensor_file *f = NULL;
 *   if (vkvit_tensor_file_create(bytes, size, "in.safetensors", &f) != VKVIT_OK) ... vkvit_last_error() ...
 *   int64_t i = vkvit_tensor_file_find(f, "input");             // -1: the file has no such tensor
 *   vkvit_tensor_info ti;
 *   vkvit_tensor_file_info(f, (uint32_t)i, &ti);                // dtype, shape, element count
 *   vkvit_tensor_file_read_f32(f, (uint32_t)i, dst, ti.count);  // F16 / BF16 converted exactly to fp32
 *   vkvit_tensor_file_destroy(f);                               // then the caller frees `bytes`
 *
 * Thread safety: a tensor file is read-only after creation; any number of threads may query and read it. */

typedef struct vkvit_tensor_file vkvit_tensor_file;

#define VKVIT_TENSOR_MAX_DIMS 8u

typedef enum vkvit_dtype {
    VKVIT_DTYPE_F32 = 0,                    /* IEEE binary32, little-endian */
    VKVIT_DTYPE_F16 = 1,                    /* IEEE binary16, little-endian */
    VKVIT_DTYPE_BF16 = 2,                   /* bfloat16, little-endian */
    VKVIT_DTYPE_COUNT
} vkvit_dtype;

typedef struct vkvit_tensor_info {
    const char *name;                       /* NUL-terminated; lives as long as the tensor file */
    vkvit_dtype dtype;
    uint32_t ndim;                          /* 0 .. VKVIT_TENSOR_MAX_DIMS (0: a scalar, one element) */
    uint64_t shape[VKVIT_TENSOR_MAX_DIMS];  /* entries past ndim are 0 */
    uint64_t count;                         /* elements: the product of shape (0 when a dim is 0) */
} vkvit_tensor_info;

/* Parses the safetensors file data[0 .. size) into a table of its tensors. The bytes are borrowed, not copied: they
 * must stay unchanged and outlive the tensor file (any alignment). `label` names the file in error sentences, which
 * begin "tensor file '<label>': " (NULL: "tensor file: "). On failure *out is NULL. Errors:
 * VKVIT_ERROR_INVALID_ARGUMENT (NULL data with size > 0, NULL out), VKVIT_ERROR_BAD_MODEL_FILE (the sentence names the
 * rule and the tensor or field that broke it, as for a model file), VKVIT_ERROR_OUT_OF_HOST_MEMORY. */
VKVIT_API vkvit_result vkvit_tensor_file_create(const void *data, size_t size, const char *label,
                                                vkvit_tensor_file **out);
/* NULL is a no-op. The caller's bytes are left alone. */
VKVIT_API void vkvit_tensor_file_destroy(vkvit_tensor_file *file);

/* The number of tensors (0 for NULL). Tensor indices run 0 .. count - 1, in the order of their names (strcmp). */
VKVIT_API uint32_t vkvit_tensor_file_count(const vkvit_tensor_file *file);
/* The index of the tensor called `name`, or -1 when there is none (or an argument is NULL). */
VKVIT_API int64_t vkvit_tensor_file_find(const vkvit_tensor_file *file, const char *name);
/* Describes tensor `index`. Errors: VKVIT_ERROR_INVALID_ARGUMENT (NULL argument, index out of range). */
VKVIT_API vkvit_result vkvit_tensor_file_info(const vkvit_tensor_file *file, uint32_t index, vkvit_tensor_info *out);
/* Converts tensor `index` to fp32 into dst[0 .. count): F32 copied, F16 and BF16 widened exactly (signed zeros,
 * subnormals, infinities and NaNs kept). Errors: VKVIT_ERROR_INVALID_ARGUMENT (NULL argument, index out of range,
 * count not the tensor's element count); nothing is written then. */
VKVIT_API vkvit_result vkvit_tensor_file_read_f32(const vkvit_tensor_file *file, uint32_t index, float *dst,
                                                  size_t count);

/* ------------------------------------------------------------------------------------------------------------
 * GEMM micro-benchmark (what `vkvit bench gemm` prints; for driver bring-up and kernel tuning)
 * ------------------------------------------------------------------------------------------------------------
 *
 * vkvit_bench_gemm times the GEMM kernel the sessions of a precision use, D[m, n] = A[m, k] · W[n, k]ᵀ (nn.Linear layout, no
 * bias or epilogue), built as graph nodes by the same op builder as every linear layer of a model, so it measures
 * the kernel variant and tile the device gets in a real session (or, for tuning, the kernel and tile the desc
 * asks for: vkvit_gemm_kernel, vkvit_gemm_tile below). One command buffer holds `warmup` untimed runs,
 * then `repeat` timed ones, each separated from the previous by the barrier its write-after-write needs; a run's
 * time is the GPU timestamp after its last dispatch minus the one before its first.
 *
 * Every call also checks the result against a plain-C reference (double accumulation) computed on the host: all
 * elements of D when m and n are at most 64, else a grid of 64 x 64 elements spread evenly over D (first and last
 * rows and columns included). D is poisoned with NaN first, so an element the kernel never wrote is a mismatch. An
 * element matches when |D - ref| <= 1e-5 * sum_k |A[i, k] * W[j, k]| (fp32 accumulation over k terms: about
 * sqrt(k) * 6e-8 of that sum in practice, k * 6e-8 at worst); with fp16 weights the reference uses the weights
 * rounded to fp16; with fp16 arithmetic the tolerance is 5e-3 * sum_k |A W| (A rounded to fp16 and fp16 sums of 8
 * products per half of a 16-k chunk: at most (8 + 2) * 2^-11 of that sum). A mismatch is not an error of this
 * call: it returns VKVIT_OK with result.mismatches > 0, and the caller decides (the CLI fails). */

#define VKVIT_BENCH_MAX_RUNS 128u

/* Kernel tuning: the benchmark can time another GEMM kernel than the device's own, and another tile, so that a
 * tile table or a kernel change is measured before it is adopted (`vkvit bench gemm --kernel/--tile/--versus`).
 * Sessions always run the automatic choice. */
typedef enum vkvit_gemm_kernel {
    VKVIT_GEMM_KERNEL_AUTO = 0,             /* the device's choice, what sessions run */
    VKVIT_GEMM_KERNEL_CPU = 1,              /* shaders/gemm_cpu.comp, CPU devices' kernel: one 8-lane subgroup per
                                               workgroup, A and W read through texel buffers where the ctx has
                                               texel reads (vkvit_device_info.texel_reads_in_use) */
    VKVIT_GEMM_KERNEL_SHARED = 2,           /* shaders/gemm.comp, GPUs' fp32 and fp16-weight kernel: tiles staged in
                                               shared memory */
    VKVIT_GEMM_KERNEL_COOPMAT = 3,          /* shaders/gemm_coopmat.comp: cooperative matrices (tensor cores), only
                                               for FP16_MATH where the device runs them
                                               (vkvit_device_info.cooperative_matrix_in_use) */
} vkvit_gemm_kernel;

/* The kernel's name as `vkvit bench gemm` spells it ("auto", "cpu", "shared", "coopmat"), the library's one table of
 * them; NULL for a value that is not a vkvit_gemm_kernel. */
VKVIT_API const char *vkvit_gemm_kernel_name(vkvit_gemm_kernel kernel);

/* A workgroup tile. In a desc, a field left 0 keeps the automatic value; the result reports the whole tile that ran.
 *   CPU      one 8-lane workgroup computes bm rows (1 .. 256) x bn = 8 tn columns (tn 1 .. 32), K in chunks of bk
 *            (32 or 64); tm is 1. Giving bn alone sets tn = bn / 8. On GPUs its private arrays, 4 tn (bm + 1 + bk)
 *            bytes per invocation, must stay within 32 KiB (NVIDIA's compiler refuses 36), and it needs subgroup
 *            shuffles in subgroups of at least 8 lanes (VKVIT_ERROR_UNSUPPORTED without).
 *   SHARED   (bm / tm) x (bn / tn) invocations (at most the device's maxComputeWorkGroupInvocations and
 *            maxComputeWorkGroupSize[0]) stage bm x bk
 *            of A and bn x bk of W in shared memory (bm bk and bn bk at most 2048 each; bk a multiple of 16 at
 *            FP16_MATH); each computes tm x tn outputs (1 .. 8 each, dividing bm and bn).
 *   COOPMAT  square tiles bm = bn of 32, 64 or 128 that fit the device's shared memory, bk 32; tm and tn are 0.
 * A tile outside these rules is refused (VKVIT_ERROR_INVALID_ARGUMENT, the sentence names the rule). */
typedef struct vkvit_gemm_tile {
    uint32_t bm, bn, bk;                    /* workgroup rows, columns, and K per step */
    uint32_t tm, tn;                        /* rows and columns per invocation */
} vkvit_gemm_tile;

/* vkvit_gemm_bench_desc.flags: CPU-kernel code paths switched off, to measure what they bring (refused for the
 * other kernels). */
#define VKVIT_GEMM_BENCH_SCALAR_LOADS 1u    /* read A and W one float at a time even where K, the strides and the
                                               offsets allow vec4 loads (the path of K % 4 != 0) */
#define VKVIT_GEMM_BENCH_SINGLE_STORES 2u   /* texel reads: store D one float per lane instead of 64-bit pairs of
                                               columns */
#define VKVIT_GEMM_BENCH_GENERIC 4u         /* the generic shader (loops unrolled by the driver) where a build-time
                                               unrolled variant would run (texel reads, fp32, tn 8, vec4, pairs) */
#define VKVIT_GEMM_BENCH_RUNNING_SUMS 8u    /* keep the running sums between K chunks even where K fits one chunk
                                               (K <= bk), as for a longer K */

/* Defaults (field = 0): repeat 10; warmup none; seed 0 is a seed like any other; the automatic kernel and tile. */
typedef struct vkvit_gemm_bench_desc {
    uint32_t m, n, k;                       /* required: each 1 .. 65536, each of A, W and D at most 2^28 elements */
    uint32_t repeat;                        /* timed runs, at most VKVIT_BENCH_MAX_RUNS */
    uint32_t warmup;                        /* untimed runs before them, at most VKVIT_BENCH_MAX_RUNS */
    uint32_t seed;                          /* A and W are pseudo-random in [-0.5, 0.5) from this seed */
    vkvit_precision precision;              /* DEFAULT / FP32: the fp32 kernel; FP16: W stored as fp16, fp32 math (the
                                               *_w16 kernel of fp16 sessions); FP16_MATH: W fp16 and fp16 products
                                               (the *_f16 kernel of fp16-math sessions) */
    vkvit_gemm_kernel kernel;               /* tuning (above): the kernel to time */
    vkvit_gemm_tile tile;                   /* tuning: its tile, fields 0 automatic */
    uint32_t flags;                         /* tuning: VKVIT_GEMM_BENCH_* */
} vkvit_gemm_bench_desc;

typedef struct vkvit_gemm_bench_result {
    uint32_t runs;                          /* timed runs: ms[0 .. runs) */
    double ms[VKVIT_BENCH_MAX_RUNS];        /* GPU milliseconds of each timed run, in run order */
    double median_ms;                       /* of ms[0 .. runs) */
    double gflops;                          /* 2 m n k / median_ms, in GFLOP/s */
    uint32_t dispatches;                    /* per run: 1, or one per row block of W when W is larger than one
                                               storage-buffer descriptor reaches (maxStorageBufferRange) */
    uint64_t checked;                       /* elements of D compared with the reference */
    uint64_t mismatches;                    /* of those, outside the tolerance (0: the kernel is right) */
    double max_error;                       /* the largest |D - ref| / sum_k |A W| seen (NaN-free when mismatches is 0) */
    vkvit_gemm_kernel kernel;               /* the kernel that ran (never AUTO) */
    vkvit_gemm_tile tile;                   /* and its tile */
    int texel_reads;                        /* CPU kernel: A and W read through texel buffers */
    int vec4_loads;                         /* CPU kernel: A and W read as vec4s */
    int pair_stores;                        /* CPU kernel: D stored as 64-bit pairs of columns */
    int unrolled;                           /* CPU kernel: a build-time unrolled shader ran (never with
                                               VKVIT_GEMM_BENCH_GENERIC) */
    int one_chunk;                          /* CPU kernel: K in one chunk, no running sums (never with
                                               VKVIT_GEMM_BENCH_RUNNING_SUMS) */
} vkvit_gemm_bench_result;

/* Runs the benchmark described above on `ctx` (it submits and waits on the ctx's queue, so it needs the whole ctx,
 * like session creation). Everything it creates is destroyed before it returns. *out is zeroed first and filled on
 * success. Errors: VKVIT_ERROR_INVALID_ARGUMENT (a NULL argument, a size, repeat, warmup, precision, kernel, tile
 * or flag out of range, the message names the field or rule), VKVIT_ERROR_UNSUPPORTED (the queue has no
 * timestamps; A or D larger than one storage-buffer descriptor reaches; fp16 weights or fp16 arithmetic that the
 * device lacks or the ctx disabled; the COOPMAT kernel where the device does not run it),
 * VKVIT_ERROR_OUT_OF_HOST_MEMORY, VKVIT_ERROR_OUT_OF_DEVICE_MEMORY, VKVIT_ERROR_VULKAN, VKVIT_ERROR_DEVICE_LOST. */
VKVIT_API vkvit_result vkvit_bench_gemm(vkvit_ctx *ctx, const vkvit_gemm_bench_desc *desc,
                                        vkvit_gemm_bench_result *out);

#ifdef __cplusplus
}
#endif

#endif /* VKVIT_H */
