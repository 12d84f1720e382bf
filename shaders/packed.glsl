// SPDX-License-Identifier: Apache-2.0
// ---------------------------------------------------------------------------------------------------------------
// Packed bindings: a kernel's logical tensors through two storage buffers, for devices that allow only 4 storage
// buffers per stage (Vulkan's guaranteed maxPerStageDescriptorStorageBuffers) where the kernel binds more.
//   binding 0  the arena: every activation, input and output the node touches (read and written)
//   binding 1  the weights buffer: the weights it reads
// Logical tensor i (the node's binding i) starts p.packed_base[i] floats into its slot's descriptor range; the
// recorder (src/graph/record.c) sets the ranges and fills the bases, which sit at the end of the push block
// (PACKED_PUSH_FIELDS). Bit i of the specialization constant PACKED_IN_WEIGHTS (constant_id 15) says that tensor i
// lives in the weights; the op builder sets it from the tensors' kinds (src/ops/op_util.h, ops_packed_node), so
// the compiler folds each read to one buffer. Writes go to the arena (ops_packed_node refuses any other).
//
// A shader reads and writes its tensors through accessor macros (A_AT(e), D_AT(e), ...) that it defines as
// plain array elements when PACKED is off and as
//   PK_READ(i, e)    element e of logical tensor i (a read: arena or weights)
//   PK_ARENA(i, e)   element e of logical tensor i in the arena (an lvalue: writes, and in-place updates)
//   PK_READ4, PK_ARENA4  the same for vec4 e4 (every packed tensor is 16-byte aligned in its slot)
// when it is on, so the normal variant's code is unchanged. fp32 only: every packed tensor is fp32.
// Requires: PACKED_N, the number of logical tensors, defined before the push block, and the push block `p`.
// ---------------------------------------------------------------------------------------------------------------
#ifndef VKVIT_PACKED_GLSL
#define VKVIT_PACKED_GLSL

#if defined(PACKED) && PACKED
layout(constant_id = 15) const uint PACKED_IN_WEIGHTS = 0;
layout(binding = 0, std430) buffer PackedArena { float packed_arena[]; };
layout(binding = 0, std430) buffer PackedArena4 { vec4 packed_arena4[]; };
layout(binding = 1, std430) readonly buffer PackedWeights { float packed_weights[]; };
layout(binding = 1, std430) readonly buffer PackedWeights4 { vec4 packed_weights4[]; };
#define PACKED_PUSH_FIELDS uint packed_base[PACKED_N];
#define PK_IN_WEIGHTS(i) (((PACKED_IN_WEIGHTS >> (i)) & 1u) != 0u)
#define PK_ARENA(i, e) packed_arena[p.packed_base[i] + (e)]
#define PK_READ(i, e) (PK_IN_WEIGHTS(i) ? packed_weights[p.packed_base[i] + (e)] : packed_arena[p.packed_base[i] + (e)])
// vec4 e4 of tensor i (the recorder places every packed tensor 16 bytes aligned in its slot: bases multiples of 4)
#define PK_ARENA4(i, e4) packed_arena4[(p.packed_base[i] >> 2) + (e4)]
#define PK_READ4(i, e4)                                                                                                \
    (PK_IN_WEIGHTS(i) ? packed_weights4[(p.packed_base[i] >> 2) + (e4)] : packed_arena4[(p.packed_base[i] >> 2) + (e4)])
#else
#define PACKED_PUSH_FIELDS
#endif

#endif
