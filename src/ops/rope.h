// SPDX-License-Identifier: Apache-2.0
/* src/ops/rope — what the attention kernels need to know about rotary position tables: how a channel is paired
 * with its rotation partner. The tables themselves (compact [T, dk/2, 2] (cos, sin) layout, one angle per channel
 * pair) are built on the host by src/model/rope.c, which includes this header. */
#ifndef VKVIT_OPS_ROPE_H
#define VKVIT_OPS_ROPE_H

/* How a channel is paired with its rotation partner (docs/math.md 1.4, 6.1). Value 0 = no RoPE. */
typedef enum vkvit__rope_pairing {
    VKVIT_ROPE_NONE = 0,
    VKVIT_ROPE_SPLIT_HALF = 1,              /* nvsubq: c <-> c +- da/2 inside each axis part (da = dk/axes) */
    VKVIT_ROPE_ADJACENT = 2,                /* paper / EVA rotate_half: 2i <-> 2i+1 */
} vkvit__rope_pairing;

#endif /* VKVIT_OPS_ROPE_H */
