// SPDX-License-Identifier: Apache-2.0
/* What a specialised compute shader asks of a device, read from the exact SPIR-V words vkvit embeds (as the
 * push-constant size is): its workgroup size, its shared memory and its storage buffers. Kernel creation
 * (pipeline.c) compares them with the device's limits, so a kernel that would exceed one is refused with a sentence
 * instead of failing or misbehaving in the driver. */
#ifndef VKVIT_VK_SPIRV_LIMITS_H
#define VKVIT_VK_SPIRV_LIMITS_H

#include "common.h"
#include "spirv.h"

typedef struct vkvit__footprint {
    uint32_t local_size[3];                 /* the workgroup size after specialisation */
    uint64_t invocations;                   /* their product */
    uint64_t shared_bytes;                  /* Workgroup-storage variables: their types' sizes (a 3-vector counted
                                               as a 4-vector, no padding otherwise: a lower bound within 25 %) */
    uint32_t storage_buffers;               /* StorageBuffer variables (and Uniform BufferBlock ones) */
} vkvit__footprint;

/* The footprint of `shader` with spec constants 0..n_spec-1 set to spec[]; false when the module uses a construct
 * this reader does not evaluate (then nothing is known, and kernel creation checks nothing). tests/ops/test_spirv.c
 * requires every embedded shader to be read. */
bool vkvit__shader_footprint(vkvit_shader_id shader, const uint32_t *spec, uint32_t n_spec, vkvit__footprint *out);

#endif /* VKVIT_VK_SPIRV_LIMITS_H */
