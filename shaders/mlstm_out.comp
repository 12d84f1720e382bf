// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// mLSTM cell epilogue before proj_down (docs/math.md 7.1 / 7.2), elementwise over [rows, E]:
//   hn  = (h - mean[b, c/4]) * rstd[b, c/4] * w[c] + bias[c]     SEED_GN: the seed's sequence-wide GroupNorm
//       = h                                                      else: h already normalised (NX-AI per-token norm)
//   out = (hn + skip[c] * a[row, c]) * silu(z[row, c])           z: proj_up's second half
// h[row, c] = h_buf[h_offset + row * h_stride + c], and a, z and out likewise (h dense or qkv's q column block, a
// qkv's a column block, z dense, out dense or over h; offsets and strides % 4 == 0). Over h, each element is read
// before the same invocation writes it (the value written depends on it); a last partial step's recomputed row
// may read what this invocation wrote, and writes nothing.
// One invocation per row and 4 channels c = 4 c4 .. 4 c4 + 3 (E % 4 == 0; with the seed's 4-channel groups that
// is one GroupNorm group): every operand is read and the output written as one vec4. Lanes run along c4,
// workgroups along rows (y) and stride over them: on llvmpipe a workgroup costs a task switch, an integer
// division is a scalar loop over the 8 lanes, and a load or store of a vec4 costs about what a float does.
// On CPU devices a workgroup is one 8-lane SIMD vector (WG) and the only one along x, so it sweeps each of its rows
// from start to end (llvmpipe runs a workgroup's SIMD vectors one after the other: with 64 lanes each vector would
// walk its own 128-byte column strip down the rows, a stride the CPU's prefetchers do not follow through the one
// texel-fetch routine every input shares; measured: the fetches' cache misses were 2/3 of the kernel).
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(constant_id = 0) const bool SEED_GN = true;
layout(constant_id = 1) const uint WG = 64;          // invocations per workgroup: 8 on CPU devices (see above)
layout(local_size_x_id = 1) in;
layout(constant_id = 2) const uint R = 1;            // rows per step, sharing the per-channel w, bias and skip
                                                     // fetches: 4 on CPU devices (a texel fetch is a call there)

// TEXEL=1 (CPU devices with caps.texel_reads): the read-only inputs are uniform texel buffers (RGBA32F), which
// llvmpipe reads with SIMD gathers instead of a per-lane scalar loop (see gemm_cpu.comp).
// PACKED: h, the statistics, w, bias, skip, a, z and the output (logical bindings 0-7) through the arena and
// weights buffers of shaders/packed.glsl (devices with 4 storage buffers per stage; not with TEXEL).
#if defined(PACKED) && PACKED
#if defined(TEXEL) && TEXEL
#error "the packed mlstm_out has no TEXEL"
#endif
#define PACKED_N 8
#include "packed.glsl"
#define h4_r(i) PK_READ4(0, i)
#define st2_r(i) vec2(PK_READ(1, 2 * (i)), PK_READ(1, 2 * (i) + 1))
#define w4_r(i) PK_READ4(2, i)
#define bias4_r(i) PK_READ4(3, i)
#define skip4_r(i) PK_READ4(4, i)
#define a4_r(i) PK_READ4(5, i)
#define z4_r(i) PK_READ4(6, i)
#define d4_w(i) PK_ARENA4(7, i)
#elif defined(TEXEL) && TEXEL
layout(binding = 0) uniform samplerBuffer tex_0;
layout(binding = 1) uniform samplerBuffer tex_1;
layout(binding = 2) uniform samplerBuffer tex_2;
layout(binding = 3) uniform samplerBuffer tex_3;
layout(binding = 4) uniform samplerBuffer tex_4;
layout(binding = 5) uniform samplerBuffer tex_5;
layout(binding = 6) uniform samplerBuffer tex_6;
#define h4_r(i) texelFetch(tex_0, int(i))
vec2 st2_r(uint i) {                                  // one fetch, then the half (both sides of a ?: would run)
    const vec4 t = texelFetch(tex_1, int(i >> 1));
    return (i & 1u) != 0 ? t.zw : t.xy;
}
#define w4_r(i) texelFetch(tex_2, int(i))
#define bias4_r(i) texelFetch(tex_3, int(i))
#define skip4_r(i) texelFetch(tex_4, int(i))
#define a4_r(i) texelFetch(tex_5, int(i))
#define z4_r(i) texelFetch(tex_6, int(i))
#else
layout(binding = 0, std430) readonly buffer H { vec4 data_h4[]; };       // rows of h_stride
layout(binding = 1, std430) readonly buffer St { vec2 data_st2[]; };     // [B, E/4] x (mean, rstd) (SEED_GN)
layout(binding = 2, std430) readonly buffer W { vec4 data_w4[]; };       // [E] (SEED_GN)
layout(binding = 3, std430) readonly buffer Bi { vec4 data_bias4[]; };   // [E] (SEED_GN)
layout(binding = 4, std430) readonly buffer Sk { vec4 data_skip4[]; };   // [E]
layout(binding = 5, std430) readonly buffer A { vec4 data_a4[]; };       // rows of a_stride
layout(binding = 6, std430) readonly buffer Z { vec4 data_z4[]; };       // rows of z_stride
#define h4_r(i) data_h4[i]
#define st2_r(i) data_st2[i]
#define w4_r(i) data_w4[i]
#define bias4_r(i) data_bias4[i]
#define skip4_r(i) data_skip4[i]
#define a4_r(i) data_a4[i]
#define z4_r(i) data_z4[i]
#endif
#if !(defined(PACKED) && PACKED)
#define PACKED_PUSH_FIELDS
layout(binding = 7, std430) writeonly buffer D { vec4 data_d4[]; };      // rows of d_stride; may be h itself
#define d4_w(i) data_d4[i]
#endif

layout(push_constant) uniform Push {
    uint rows, S, E, G;                               // G = 4 channels per group (the host's only value)
    uint h_offset, h_stride, a_offset, a_stride;      // where h's, a's and z's rows are (elements)
    uint z_offset, z_stride, d_offset, d_stride;      // and out's: over h (the same offset and stride) or dense
    PACKED_PUSH_FIELDS                                // PACKED: the 8 tensors' element bases
} p;

void main() {
    const uint E4 = p.E / 4;
    for (uint r0 = gl_WorkGroupID.y * R; r0 < p.rows; r0 += gl_NumWorkGroups.y * R) {
        for (uint c4 = gl_GlobalInvocationID.x; c4 < E4; c4 += gl_NumWorkGroups.x * WG) {
            vec4 w = vec4(1.0), bias = vec4(0.0);
            if (SEED_GN) {
                w = w4_r(c4);
                bias = bias4_r(c4);
            }
            const vec4 skip = skip4_r(c4);
            [[unroll]] for (uint i = 0; i < R; i++) {
                const uint row = min(r0 + i, p.rows - 1);     // a last partial step recomputes the last row
                vec4 hn = h4_r((p.h_offset + row * p.h_stride) / 4 + c4);
                if (SEED_GN) {
                    const vec2 stat = st2_r(row / p.S * E4 + c4);   // group c4 of the row's image: (mean, rstd)
                    hn = (hn - stat.x) * stat.y * w + bias;
                }
                const vec4 z = z4_r((p.z_offset + row * p.z_stride) / 4 + c4);
                const vec4 a = a4_r((p.a_offset + row * p.a_stride) / 4 + c4);
                const vec4 o = (hn + skip * a) * (z / (1.0 + exp(-z)));
                if (r0 + i < p.rows) d4_w((p.d_offset + row * p.d_stride) / 4 + c4) = o;
            }
        }
    }
}
