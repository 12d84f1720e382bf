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
 *   callback when one is set. The library never prints, never exits and never aborts on bad input; an object
 *   whose creation fails is not created (*out is set to NULL).
 *
 * OWNERSHIP
 *   The creator destroys. Children borrow their parent, which must outlive them: destroy sessions, then models,
 *   then the ctx. In adopt mode (vkvit_ctx_desc.host) vkvit never creates or destroys the host's VkInstance or
 *   VkDevice; the host must keep them alive until vkvit_ctx_destroy() has returned.
 *
 * THREADING
 *   Objects are not internally synchronised. Different ctx objects may be used from different threads freely.
 *   One ctx and its children must be used from one thread at a time. vkvit submits to the ctx's queue; in adopt
 *   mode the host must not use that VkQueue concurrently with a vkvit call that submits (Vulkan requires external
 *   synchronisation of queues).
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
    VKVIT_ERROR_NO_DEVICE = -2,             /* no Vulkan device, or none matching the requested one */
    VKVIT_ERROR_OUT_OF_HOST_MEMORY = -3,
    VKVIT_ERROR_OUT_OF_DEVICE_MEMORY = -4,
    VKVIT_ERROR_INVALID_ARGUMENT = -5,      /* a desc field or argument broke a documented rule */
    VKVIT_ERROR_BAD_MODEL_FILE = -6,        /* the model file is malformed or inconsistent */
    VKVIT_ERROR_IO = -7,                    /* a file could not be opened, read or written */
    VKVIT_ERROR_VULKAN = -8,                /* a Vulkan call failed (the message names it) */
    VKVIT_ERROR_UNSUPPORTED = -9,           /* the device or build lacks something this request needs */
    VKVIT_ERROR_BAD_IMAGE = -10,            /* an image could not be decoded or is out of limits */
    VKVIT_ERROR_DEVICE_LOST = -11,          /* VK_ERROR_DEVICE_LOST: the ctx must be destroyed */
} vkvit_result;

/* The enum's name as a string, e.g. "VKVIT_ERROR_NO_DEVICE". Never NULL. */
VKVIT_API const char *vkvit_result_name(vkvit_result result);

/* The sentence that explains the last failure on this thread ("" if none). Valid until the next vkvit call on the
 * same thread. */
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
    const VkPhysicalDeviceFeatures2 *enabled_features; /* chain the host enabled (Vulkan11/12 structs are read);
                                                          NULL = assume only core 1.1 features */
} vkvit_host_device;

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
 * optional; vkvit falls back when missing). Returns the count; writes up to `cap` names into `names` (which may
 * be NULL to query the count). The strings are static. */
VKVIT_API uint32_t vkvit_required_device_extensions(const char **names, uint32_t cap);

/* What vkvit found on a device and what it uses. */
typedef struct vkvit_device_info {
    char name[256];
    char driver_name[256];
    char driver_info[256];
    uint32_t vendor_id, device_id, driver_version, api_version;
    int device_type;                        /* VkPhysicalDeviceType */
    int fp16_storage;                       /* storageBuffer16BitAccess */
    int fp16_arithmetic;                    /* shaderFloat16 */
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
    char workarounds[512];                  /* the quirks in force, comma-separated, "" for none */
    int validation;                         /* the validation layer is active */
    int adopted;                            /* the ctx adopted a host device */
} vkvit_device_info;

VKVIT_API vkvit_result vkvit_ctx_device_info(const vkvit_ctx *ctx, vkvit_device_info *out);

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

/* Defaults: label = the path. */
typedef struct vkvit_model_desc {
    const char *path;                       /* required: a vkvit model file (docs/model-format.md) */
    const char *label;
} vkvit_model_desc;

/* Reads and validates the model file (hostile input: every length, offset, dtype, shape and hyperparameter is
 * checked) and uploads its weights (converted to fp32) into one device buffer. `ctx` must outlive the model.
 * Errors: VKVIT_ERROR_IO, _BAD_MODEL_FILE (with a sentence naming the tensor or field), _UNSUPPORTED,
 * _OUT_OF_HOST_MEMORY, _OUT_OF_DEVICE_MEMORY, _VULKAN. */
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
    uint64_t weight_bytes;                  /* device bytes of the weight buffer */
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
                                               model creates the fp16 weight copy. */
} vkvit_precision;

/* Defaults: label "vkvit session", batch 1, precision DEFAULT, profile 0 (1 = per-node GPU timestamps, read with
 * vkvit_session_profile). */
typedef struct vkvit_session_desc {
    const char *label;
    uint32_t batch;
    vkvit_precision precision;
    int profile;
} vkvit_session_desc;

/* Builds the graph, plans one activation arena, creates every pipeline and descriptor set and records the whole
 * inference into one command buffer. Nothing is allocated or created after this returns. `model` must outlive
 * the session. */
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
 * session must not be in flight twice at once (its arena is shared by every recording). */
VKVIT_API vkvit_result vkvit_session_record(vkvit_session *session, VkCommandBuffer cmd);

/* The queue family a caller's command buffers for vkvit_session_record must come from. */
VKVIT_API uint32_t vkvit_ctx_queue_family(const vkvit_ctx *ctx);

/* Copies the output (exactly `count` floats) out after a run. */
VKVIT_API vkvit_result vkvit_session_get_output(vkvit_session *session, float *dst, size_t count);

typedef struct vkvit_session_stats {
    uint64_t arena_bytes;                   /* the planned activation arena (inputs and outputs included) */
    uint64_t sum_activation_bytes;          /* all intermediates added up (what a naive runtime would allocate) */
    uint64_t largest_activation_bytes;
    uint64_t weight_bytes;
    uint32_t nodes;                         /* dispatches per inference */
    uint32_t barriers;                      /* pipeline barriers between them */
    uint32_t pipelines;
} vkvit_session_stats;

VKVIT_API vkvit_result vkvit_session_get_stats(const vkvit_session *session, vkvit_session_stats *out);

/* Per-node GPU time of the last run (sessions created with profile = 1). */
typedef struct vkvit_profile_entry {
    const char *label;                      /* e.g. "blocks.3.mlp.layer1" */
    const char *kind;                       /* e.g. "gemm", "attention", "norm" */
    double ms;
} vkvit_profile_entry;

/* Writes up to `cap` entries (in execution order) and the total count. */
VKVIT_API vkvit_result vkvit_session_profile(const vkvit_session *session, vkvit_profile_entry *out, uint32_t cap,
                                             uint32_t *count);

#ifdef __cplusplus
}
#endif

#endif /* VKVIT_H */
