// SPDX-License-Identifier: Apache-2.0
/* src/graph — build, plan, record (ggml's three phases).
 *
 *   graph.c   tensor and node tables and the builder calls. Modules add tensors and nodes; every id is a uint32_t
 *             index, never a pointer. Errors are sticky: after the first failure every builder call returns
 *             VKVIT_NONE and does nothing, and vkvit__graph_error() reports the first sentence — so module code
 *             reads top to bottom like the PyTorch forward without an error check per line.
 *   plan.c    liveness -> one arena: inputs and outputs side by side and never aliased, activations placed
 *             greedy by size into the gaps left by those live at the same time; done before anything is allocated.
 *   record.c  pipelines, descriptor sets, push constants and barriers fixed once at session creation; barriers
 *             come from data flow (a read or write after a write of an overlapping range, a write after a read).
 *
 * A node is one compute dispatch: a kernel (shader + specialization constants, de-duplicated per graph), its
 * bindings (tensor + read/write), its push constants and its workgroup count. */
#ifndef VKVIT_GRAPH_H
#define VKVIT_GRAPH_H

#include "vk/vk.h"

#define VKVIT_NONE UINT32_MAX
#define VKVIT_MAX_DIMS 4
#define VKVIT_ARENA_ALIGN 256u /* >= minStorageBufferOffsetAlignment on every device we know */
/* Size limits of one graph (documented in include/vkvit.h, vkvit_session_create): a depth-65,536 ViT-5 needs about
 * 1.2 M nodes, so the deepest files the model format allows are refused with a sentence instead of planned for
 * minutes; depth 16,384 builds, plans and records in seconds. */
#define VKVIT_GRAPH_MAX_NODES (1u << 20)
#define VKVIT_GRAPH_MAX_TENSORS (1u << 22)

typedef enum vkvit__tensor_kind {
    VKVIT_TENSOR_ACTIVATION,                /* placed in the session arena by the planner */
    VKVIT_TENSOR_INPUT,                     /* arena, never aliased; written by the host before a run */
    VKVIT_TENSOR_OUTPUT,                    /* arena, never aliased; read by the host after a run */
    VKVIT_TENSOR_WEIGHT,                    /* the record target's weight buffer (a model's weight image for the
                                               session's dtype, src/model/model.h), at a fixed offset */
    VKVIT_TENSOR_WEIGHT_F16,                /* the record target's second weight buffer (weights_f16: the fp16
                                               operand of vkvit_bench_gemm), at a fixed offset; dtype F16 */
    VKVIT_TENSOR_EXTERNAL,                  /* a buffer of the session's beside the arena (record target's
                                               external[t.external]) at an offset the builder sets; never planned */
} vkvit__tensor_kind;

static inline bool vkvit__is_weight(vkvit__tensor_kind k) { return k == VKVIT_TENSOR_WEIGHT || k == VKVIT_TENSOR_WEIGHT_F16; }

/* What one element of a tensor is. Its creator sets it; a view has its parent's; bytes = elements * size. */
typedef enum vkvit__dtype {
    VKVIT_ELEM_F32,                        /* the default: activations, fp32 weights */
    VKVIT_ELEM_F16,                        /* fp16 weights of fp16 sessions, the fp16 k~ / vT of fp16-math attention */
    VKVIT_ELEM_U8,                         /* raw bytes (the pre-processing's pixel and parameter buffers) */
} vkvit__dtype;

static inline uint32_t vkvit__dtype_size(vkvit__dtype d) { return d == VKVIT_ELEM_F32 ? 4 : d == VKVIT_ELEM_F16 ? 2 : 1; }
static inline const char *vkvit__dtype_name(vkvit__dtype d) {
    return d == VKVIT_ELEM_F32 ? "f32" : d == VKVIT_ELEM_F16 ? "f16" : "u8";
}

/* How a session builds its graph, fixed when the graph is created (vkvit__graph_init_opts) and kept for every
 * rebuild (vkvit__graph_reset): builders read it from g->opts, never from anywhere else. */
typedef struct vkvit__build_opts {
    vkvit_precision precision;              /* the session's (include/vkvit.h); DEFAULT reads as FP32 */
    vkvit__dtype weights;                   /* dtype of the GEMM operands the model hands out (vkvit__model_weight):
                                               F16 for FP16 and FP16_MATH, else F32; other weights stay F32 */
    vkvit__dtype math;                      /* arithmetic of the GEMMs on F16 operands: F16 for FP16_MATH (src/ops/gemm.h,
                                               VKVIT_GEMM_F16_CHUNK), else F32 */
} vkvit__build_opts;

/* The options of a session at `precision`. */
static inline vkvit__build_opts vkvit__build_opts_of(vkvit_precision precision) {
    const bool f16 = precision == VKVIT_PRECISION_FP16 || precision == VKVIT_PRECISION_FP16_MATH;
    return (vkvit__build_opts){
        .precision = precision == VKVIT_PRECISION_DEFAULT ? VKVIT_PRECISION_FP32 : precision,
        .weights = f16 ? VKVIT_ELEM_F16 : VKVIT_ELEM_F32,
        .math = precision == VKVIT_PRECISION_FP16_MATH ? VKVIT_ELEM_F16 : VKVIT_ELEM_F32,
    };
}

typedef struct vkvit__tensor {
    char name[64];
    vkvit__tensor_kind kind;
    vkvit__dtype dtype;
    uint32_t ndim;
    uint32_t shape[VKVIT_MAX_DIMS];
    uint64_t bytes;                         /* numel * vkvit__dtype_size(dtype) (an EXTERNAL tensor: as its builder sets) */
    uint32_t view_of;                       /* VKVIT_NONE, or the tensor whose storage this one shares */
    uint64_t view_offset;                   /* bytes into the parent */
    uint64_t offset;                        /* weights: offset in the weight buffer; else in the arena (plan.c) */
    uint32_t first_use, last_use;           /* node indices (plan.c); VKVIT_NONE when unused */
    uint32_t external;                      /* EXTERNAL tensors: index into vkvit__record_target.external */
} vkvit__tensor;

enum { VKVIT_READ = 1, VKVIT_WRITE = 2 };

typedef struct vkvit__node_binding {
    uint32_t tensor;
    uint32_t access;                        /* VKVIT_READ | VKVIT_WRITE */
} vkvit__node_binding;

typedef struct vkvit__node {
    char label[64];                         /* e.g. "blocks.3.mlp.layer1" — dispatch debug label and profile row */
    const char *kind;                       /* static string grouping nodes for profiles: "gemm", "attention"... */
    uint32_t kernel;                        /* index into graph.kernels */
    uint32_t n_bindings;
    vkvit__node_binding bindings[VKVIT_MAX_BINDINGS];
    uint8_t push[VKVIT_MAX_PUSH];
    uint32_t groups[3];                     /* indirect nodes: the largest count the host may write (stats) */
    /* Indirect dispatch: the workgroup count is a VkDispatchIndirectCommand that the host writes before each
     * submission, `indirect_offset` bytes into tensor `indirect_tensor` (an EXTERNAL tensor in host-visible memory
     * that no node writes). A count of 0 makes the node a no-op, so one recording serves any count. */
    bool indirect;
    uint32_t indirect_tensor, indirect_offset;
} vkvit__node;

typedef struct vkvit__graph {
    vkvit_ctx *ctx;
    vkvit__tensor *tensors;
    uint32_t n_tensors, cap_tensors;
    vkvit__node *nodes;
    uint32_t n_nodes, cap_nodes;
    vkvit__kernel_desc *kernels;            /* unique kernel descs; labels point at static strings */
    uint32_t n_kernels, cap_kernels;
    vkvit_result error;                     /* first failure (sticky) */
    char error_msg[512];
    char scope[64];                         /* name prefix for labels, e.g. "blocks.3" */
    vkvit__build_opts opts;                 /* the session's precision and dtypes (set at init, kept by reset) */
    bool grid_too_large;                    /* the first error was a grid above maxComputeWorkGroupCount */
    uint32_t features;                      /* what the classifier head reads: the pooled features [B, F] (timm's
                                               pre-logits), set by the head builder; VKVIT_NONE before */
} vkvit__graph;

/* An empty graph built with `opts` (vkvit__graph_init: an fp32 session's). */
void vkvit__graph_init_opts(vkvit__graph *g, vkvit_ctx *ctx, const vkvit__build_opts *opts);
void vkvit__graph_init(vkvit__graph *g, vkvit_ctx *ctx);
/* Frees everything and starts an empty graph with the same ctx and opts (a sub-batch rebuild). */
void vkvit__graph_reset(vkvit__graph *g);
void vkvit__graph_free(vkvit__graph *g);

/* Records the first error (sticky) and returns VKVIT_NONE, so a builder can `return vkvit__graph_fail(...)`. */
uint32_t vkvit__graph_fail(vkvit__graph *g, vkvit_result code, const char *fmt, ...) VKVIT_PRINTF(3, 4);
/* VKVIT_OK, or the first error with its sentence restored into vkvit_last_error(). */
vkvit_result vkvit__graph_error(const vkvit__graph *g);

/* A new tensor of `kind` with fp32 elements and the given shape. */
uint32_t vkvit__graph_tensor(vkvit__graph *g, vkvit__tensor_kind kind, const char *name, uint32_t ndim,
                             const uint32_t *shape);
/* The same with `dtype` elements. */
uint32_t vkvit__graph_tensor_typed(vkvit__graph *g, vkvit__tensor_kind kind, vkvit__dtype dtype, const char *name,
                                   uint32_t ndim, const uint32_t *shape);
/* A weight tensor at `offset` bytes in a weight buffer of the record target (kind WEIGHT: fp32 elements,
 * WEIGHT_F16: fp16). */
uint32_t vkvit__graph_weight_at(vkvit__graph *g, vkvit__tensor_kind kind, const char *name, uint64_t offset,
                                uint32_t ndim, const uint32_t *shape);
/* A WEIGHT tensor of `dtype` elements at `offset` bytes in the record target's weight buffer. */
uint32_t vkvit__graph_weight_typed(vkvit__graph *g, vkvit__dtype dtype, const char *name, uint64_t offset,
                                   uint32_t ndim, const uint32_t *shape);
/* A view: `ndim`/`shape` elements starting `elem_offset` elements into `parent` (must fit inside it); its dtype is
 * the parent's, and elements count in it. */
uint32_t vkvit__graph_view(vkvit__graph *g, uint32_t parent, const char *name, uint64_t elem_offset, uint32_t ndim,
                           const uint32_t *shape);

/* A copy of tensor `t`. Builders read tensors through this, never through a pointer into g->tensors: adding a
 * tensor may move the table, and a pointer held across that call would dangle (the use-after-free of issue 12). */
static inline vkvit__tensor vkvit__graph_get(const vkvit__graph *g, uint32_t t) { return g->tensors[t]; }

static inline uint64_t vkvit__numel(const vkvit__tensor *t) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

/* Adds a node. `kdesc` is de-duplicated against earlier kernels of the graph. Returns the node index or
 * VKVIT_NONE. The label is "<scope>.<name>" (or just name without a scope). */
uint32_t vkvit__graph_node(vkvit__graph *g, const char *name, const char *kind, const vkvit__kernel_desc *kdesc,
                           const vkvit__node_binding *bindings, uint32_t n_bindings, const void *push,
                           uint32_t push_size, uint32_t gx, uint32_t gy, uint32_t gz);

/* Scoped labels: vkvit__graph_scope(g, "blocks.%u", i) ... vkvit__graph_scope(g, NULL). */
void vkvit__graph_scope(vkvit__graph *g, const char *fmt, ...) VKVIT_PRINTF(2, 3);

/* Turns root tensor `t` into a view of `parent` starting `elem_offset` elements in (same kind and dtype; must fit). A
 * session that runs its batch as sub-batches builds each sub-network with its own input and output, then makes
 * them views of the whole batch's tensors. */
void vkvit__graph_rebase(vkvit__graph *g, uint32_t t, uint32_t parent, uint64_t elem_offset);

/* Moves the last node to index `at` (before planning: nodes are referenced by nothing but their order). */
void vkvit__graph_move_last_node(vkvit__graph *g, uint32_t at);
/* Moves nodes [first, n_nodes) to index `at`, keeping their order (one rotation in place: it cannot fail). */
void vkvit__graph_move_nodes(vkvit__graph *g, uint32_t first, uint32_t at);

/* What a graph held at one moment, so that a step which fails half-way (out of host memory while adding the
 * pre-processing nodes, say) can be undone: vkvit__graph_rollback drops every tensor, node and kernel added since
 * the mark (they are the last ones: nothing added since may have been moved in front of older nodes) and clears an
 * error raised since. */
typedef struct vkvit__graph_mark {
    uint32_t n_tensors, n_nodes, n_kernels;
    bool had_error;
} vkvit__graph_mark;
vkvit__graph_mark vkvit__graph_mark_now(const vkvit__graph *g);
void vkvit__graph_rollback(vkvit__graph *g, vkvit__graph_mark m);

/* Makes node `n` an indirect dispatch (see vkvit__node.indirect). */
static inline void vkvit__graph_set_indirect(vkvit__graph *g, uint32_t n, uint32_t tensor, uint32_t offset) {
    if (g->error || n == VKVIT_NONE) return;
    g->nodes[n].indirect = true;
    g->nodes[n].indirect_tensor = tensor;
    g->nodes[n].indirect_offset = offset;
}

/* The largest byte range a node binds from a non-weight tensor (what a smaller batch shrinks); 0 for no nodes. */
uint64_t vkvit__graph_max_activation_binding(const vkvit__graph *g, uint32_t *tensor);

/* The tensor that owns the storage of `t` (follows views), and the byte offset of `t` inside it. */
uint32_t vkvit__graph_root(const vkvit__graph *g, uint32_t t, uint64_t *offset_in_root);

/* ------------------------------------------------------------------------------------------------------------
 * Planning (plan.c)
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct vkvit__plan_stats {
    uint64_t arena_bytes;                   /* the planned arena */
    uint64_t sum_activation_bytes;          /* what a one-buffer-per-tensor runtime would allocate */
    uint64_t largest_activation_bytes;
    uint32_t n_activations;
} vkvit__plan_stats;

/* Computes liveness and arena offsets for every non-weight root tensor. */
vkvit_result vkvit__plan(vkvit__graph *g, vkvit__plan_stats *stats);

/* ------------------------------------------------------------------------------------------------------------
 * Recording (record.c)
 * ------------------------------------------------------------------------------------------------------------ */

typedef struct vkvit__recording {
    vkvit__kernel *kernels;                 /* one per graph kernel: the ctx's shared ones (vkvit__kernels_acquire) */
    uint32_t n_kernels;
    vkvit__descriptors descriptors;         /* the pool of the sets below and their texel views */
    VkDescriptorSet *sets;                  /* one per node */
    uint32_t n_barriers;                    /* vkCmdPipelineBarrier calls between nodes */
    vkvit__kernel *swap_kernels;            /* the target's swap_kernels */
    uint32_t n_swap_kernels;
    vkvit__descriptors swap_descriptors;    /* the pool of the swap sets */
    VkDescriptorSet *swap_sets;             /* the target's swap_sets */
    uint32_t n_swap_sets;
    bool profiled;
    vkvit__timer timer;                     /* 2 timestamps per node when profiled */
} vkvit__recording;

#define VKVIT_MAX_EXTERNAL 4

/* A descriptor set for node swaps (vkvit__node_swap), created and counted with the recording's own sets: its
 * kernel's layout, binding i pointing at tensors[i] (VKVIT_NONE: the swap's source, written at record time). */
typedef struct vkvit__swap_set_desc {
    bool own_kernel;                        /* the target's swap_kernels[kernel], else the graph's kernels[kernel] */
    uint32_t kernel;
    uint32_t tensors[VKVIT_MAX_BINDINGS];
} vkvit__swap_set_desc;

typedef struct vkvit__record_target {
    const vkvit__buffer *weights;           /* WEIGHT tensors (a session's: its model's image for its weights dtype) */
    const vkvit__buffer *weights_f16;       /* WEIGHT_F16 tensors (NULL in fp32 sessions) */
    const vkvit__buffer *arena;             /* INPUT, OUTPUT, ACTIVATION */
    const vkvit__buffer *external[VKVIT_MAX_EXTERNAL]; /* EXTERNAL tensors, by vkvit__tensor.external */
    /* Node swaps' kernels that no node has (acquired like the graph's, once per recording) and their sets. */
    const vkvit__kernel_desc *swap_kernels;
    uint32_t n_swap_kernels;
    const vkvit__swap_set_desc *swap_sets;
    uint32_t n_swap_sets;
} vkvit__record_target;

/* Creates every pipeline and descriptor set, the swap sets' included (no Vulkan object is created later). */
vkvit_result vkvit__record_prepare(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *target,
                                   bool profile, vkvit__recording *rec);
/* Points the descriptor sets of the nodes that bind EXTERNAL tensors, and the swap sets, at the target's buffers
 * again, after one was replaced or a tensor's offset or size changed (no allocation). Command buffers recorded
 * before are invalid afterwards (Vulkan's rule for updated descriptor sets): record again. */
void vkvit__record_rebind(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *target,
                          vkvit__recording *rec);

/* A node recorded with another descriptor set, kernel and indirect command than its own, for one recording:
 * vkvit_session_record_ex feeds a host's image through the pre-processing nodes of its batch slot. The set must
 * bind buffers in the same roles (the node's bindings still decide the barriers, so it may only swap a source
 * that the caller has synchronised itself). */
/* The host's resource a swapped node reads, written by work vkvit does not see: the recording points binding
 * `binding` of the swap's set at it and starts with one barrier from the host's last write (src_stage, src_access)
 * to compute-shader reads of it. Neither image nor buffer: none. */
typedef struct vkvit__swap_source {
    uint32_t binding;
    VkImage image;                          /* a sampled image through `view`, its layout kept */
    VkImageView view;
    VkImageSubresourceRange range;
    VkImageLayout layout;
    VkBuffer buffer;                        /* or [offset, offset + size) of a buffer, bound as a storage buffer */
    uint64_t offset, size;
    VkPipelineStageFlags src_stage;
    VkAccessFlags src_access;
} vkvit__swap_source;

typedef struct vkvit__node_swap {
    uint32_t node;                          /* ascending in the array */
    uint32_t set;                           /* the target's swap set (its kernel and descriptor set) */
    VkBuffer indirect;                      /* the indirect command (indirect nodes) */
    uint64_t indirect_offset;
    vkvit__swap_source source;              /* zeroed: none */
} vkvit__node_swap;

/* Records all nodes into `cmd` with data-flow barriers. The caller adds what surrounds it (input copies, the
 * dependency on earlier submissions, output visibility). When any node is indirect, the recording starts with a
 * barrier from host writes to indirect-command and shader reads (the host writes counts and parameters into
 * mapped memory before the submission). */
void vkvit__record_nodes(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *target,
                         vkvit__recording *rec, VkCommandBuffer cmd);
/* The same with some nodes swapped (`swaps`: n_swaps entries, ascending nodes; NULL when none). The swaps' source
 * barriers come first. */
void vkvit__record_nodes_swapped(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *target,
                                 vkvit__recording *rec, VkCommandBuffer cmd, const vkvit__node_swap *swaps,
                                 uint32_t n_swaps);
/* Nodes [first, end) only, the same way (a session's slices, src/session_slices.c): the data-flow barriers start
 * from empty pending lists, so the caller orders the part against everything before it (a global barrier). The
 * host barrier of indirect nodes is recorded when the part has one; a part that is not the whole graph writes no
 * timestamps and leaves rec->n_barriers (the whole recording's count) as it was. */
void vkvit__record_node_range(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *target,
                              vkvit__recording *rec, VkCommandBuffer cmd, const vkvit__node_swap *swaps,
                              uint32_t n_swaps, uint32_t first, uint32_t end);
void vkvit__record_free(vkvit_ctx *ctx, vkvit__recording *rec);

/* Warm-up, for drivers that compile a shader at its first dispatch rather than at pipeline creation (llvmpipe: a
 * cold Mesa shader cache makes the first inference of a ViT-5 spend ~30 s in its JIT): one submission, waited for,
 * that dispatches each pipeline k >= first_kernel once, as one workgroup with the bindings and push constants of
 * the first node that uses it (an indirect node through its indirect command, whose count is 0 until the host
 * writes one), a full barrier after each. What the dispatches write lands in tensors that every run writes before
 * it reads them, so the session's results are unchanged; the cost moves from the first run to session creation. */
vkvit_result vkvit__record_warmup(vkvit_ctx *ctx, const vkvit__graph *g, const vkvit__record_target *target,
                                  vkvit__recording *rec, uint32_t first_kernel);

#endif /* VKVIT_GRAPH_H */
