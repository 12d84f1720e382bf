// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// GRN apply, step 2 of 2, fused with the block's LayerScale and residual add (docs/math.md 2.2, 2.5):
//   y          = gamma[c] * (a[b,t,c] * nx[b,c]) + beta[c] + a[b,t,c]          (GRN on the mixer output a)
//   d[b,t,c]  += ls[c] * y        (HAS_LS)            or      d[b,t,c] += y   (LayerScale disabled)
// a: (B, T, C) mixer output; nx: (B, C) from grn_stats; d: the residual stream, updated in place.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(constant_id = 0) const bool HAS_LS = true;
layout(local_size_x_id = 1) in;    // the host's ops_elementwise_wg: 256, or the device's limit below it

// PACKED: the six tensors (logical bindings 0-5) through the arena and weights buffers of shaders/packed.glsl
// (devices with 4 storage buffers per stage).
#if defined(PACKED) && PACKED
#define PACKED_N 6
#include "packed.glsl"
#define A_AT(e) PK_READ(0, e)
#define NX_AT(e) PK_READ(1, e)
#define GAMMA_AT(e) PK_READ(2, e)
#define BETA_AT(e) PK_READ(3, e)
#define LS_AT(e) PK_READ(4, e)
#define D_AT(e) PK_ARENA(5, e)
#else
#define PACKED_PUSH_FIELDS
layout(binding = 0, std430) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 1, std430) readonly buffer NX { float data_nx[]; };
layout(binding = 2, std430) readonly buffer G { float data_gamma[]; }; // [C]
layout(binding = 3, std430) readonly buffer Be { float data_beta[]; }; // [C]
layout(binding = 4, std430) readonly buffer LS { float data_ls[]; };   // [C] (any buffer when !HAS_LS)
layout(binding = 5, std430) buffer D { D_TYPE data_d[]; };
#define A_AT(e) data_a[e]
#define NX_AT(e) data_nx[e]
#define GAMMA_AT(e) data_gamma[e]
#define BETA_AT(e) data_beta[e]
#define LS_AT(e) data_ls[e]
#define D_AT(e) data_d[e]
#endif

layout(push_constant) uniform Push {
    uint B, T, C;
    PACKED_PUSH_FIELDS                              // PACKED: the 6 tensors' element bases
} p;

void main() {
    const uint total = p.B * p.T * p.C;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
        const uint c = i % p.C, b = i / (p.T * p.C);
        const float a = float(A_AT(i));
        float y = GAMMA_AT(c) * (a * NX_AT(b * p.C + c)) + BETA_AT(c) + a;
        if (HAS_LS) y *= LS_AT(c);
        D_AT(i) = D_TYPE(float(D_AT(i)) + y);
    }
}
