#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Row softmax in place, fp32 (the middle step of the unfused attention path):
//
//     S[r][j] = exp(S[r][j] - max_j S[r]) / sum_j exp(S[r][j] - max_j S[r])     j < n
//     S[r][j] = 0                                                              n <= j < n_pad
//
// over `rows` rows of element (r, j) = data_s[offset + r * stride + j]. The zeroed tail [n, n_pad) lets the next
// GEMM run with K = n_pad, a multiple of 4 (vec4 loads), against a vT whose padding columns are zero too.
//
// Two work splits (specialization constant ROW_PER_WG, chosen by the host from vkvit__caps.cpu_device):
//
// CPU devices (ROW_PER_WG false): one invocation per row (grid-stride over rows), WG_SIZE rows per workgroup. On
// llvmpipe the 8-lane SIMD vector then holds 8 rows that run the same uniform loop over j, so the max and the sum
// need no cross-lane reduction, no shared memory and no barrier (all expensive there). SSBO loads/stores dominate
// the cost on llvmpipe (~20-40 cycles per float per lane; exp is a few vector instructions), so a row of
// n <= ROW_CACHE scores is read once into a private array (lane-uniform index: cheap stack accesses), max / exp /
// sum run there, and the result is written once: one load and one store per score. Longer rows (or ROW_CACHE = 0)
// take two reads: pass 1 the online max and sum, m' = max(m, x), l' = l * exp(m - m') + exp(x - m') (m starts at
// -FLT_MAX, finite, so never inf - inf), pass 2 normalises.
//
// GPUs (ROW_PER_WG true): one workgroup per row (grid-stride over rows), invocation i on columns i, i + WG_SIZE, ...;
// the max and the sum are workgroup reductions (shaders/reduce.glsl: subgroup arithmetic in the *_subgroup variant,
// the shared-memory tree otherwise). Each invocation writes exactly the columns it read.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(constant_id = 0) const uint WG_SIZE = 8;     // rows per workgroup (8 = one llvmpipe SIMD vector)
layout(constant_id = 1) const uint ROW_CACHE = 0;   // longest row kept in a private array (0 = none)
layout(constant_id = 2) const bool ROW_PER_WG = false; // true: a workgroup shares each row (GPUs)
layout(local_size_x_id = 0) in;

#define REDUCE_WG WG_SIZE
#define REDUCE_T float
#include "reduce.glsl"

layout(binding = 0, std430) buffer S { float data_s[]; };
// Reads: the same scores through binding 0, or where TEXEL=1 (CPU devices with caps.texel_reads) through binding 1,
// a uniform texel buffer (RGBA32F) of the same range, which llvmpipe reads with SIMD gathers instead of a per-lane
// scalar loop (gemm_cpu.comp). Every score is read before this invocation writes it, and by no other invocation.
#if defined(TEXEL) && TEXEL
layout(binding = 1) uniform samplerBuffer tex_s;
#define read_s(e) texelFetch(tex_s, int((e) >> 2))[(e) & 3u]
#else
#define read_s(e) data_s[e]
#endif

layout(push_constant) uniform Push {
    uint rows;                                      // number of rows
    uint n;                                         // softmax length (>= 1)
    uint n_pad;                                     // columns n .. n_pad-1 are set to 0 (n_pad >= n)
    uint stride;                                    // row stride in elements (>= n_pad)
    uint offset;                                    // element offset of row 0
} p;

const float NEG_BIG = -3.402823466e38;              // -FLT_MAX

float row_c[ROW_CACHE > 0 ? ROW_CACHE : 1];

// One row r shared by the workgroup (ROW_PER_WG).
void softmax_row_wg(uint r) {
    const uint tid = gl_LocalInvocationID.x, base = p.offset + r * p.stride;
    float m = NEG_BIG;
    [[dont_unroll]] for (uint j = tid; j < p.n; j += WG_SIZE) m = max(m, read_s(base + j));
    m = reduce_max(m);
    float l = 0.0;
    [[dont_unroll]] for (uint j = tid; j < p.n; j += WG_SIZE) l += exp(read_s(base + j) - m);
    const float inv = 1.0 / reduce_sum(l);
    [[dont_unroll]] for (uint j = tid; j < p.n; j += WG_SIZE) data_s[base + j] = exp(read_s(base + j) - m) * inv;
    [[dont_unroll]] for (uint j = p.n + tid; j < p.n_pad; j += WG_SIZE) data_s[base + j] = 0.0;
}

void main() {
    if (ROW_PER_WG) {
        [[dont_unroll]] for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) softmax_row_wg(r);
        return;
    }
    const uint step = gl_NumWorkGroups.x * WG_SIZE;
    [[dont_unroll]] for (uint r = gl_GlobalInvocationID.x; r < p.rows; r += step) {
        const uint base = p.offset + r * p.stride;
        if (p.n <= ROW_CACHE) {
            float m = NEG_BIG;
            [[dont_unroll]] for (uint j = 0; j < p.n; j++) {
                const float x = read_s(base + j);
                row_c[j] = x;
                m = max(m, x);
            }
            float l = 0.0;
            [[dont_unroll]] for (uint j = 0; j < p.n; j++) {
                const float e = exp(row_c[j] - m);
                row_c[j] = e;
                l += e;
            }
            const float inv = 1.0 / l;
            [[dont_unroll]] for (uint j = 0; j < p.n; j++) data_s[base + j] = row_c[j] * inv;
        } else {
            float m = NEG_BIG, l = 0.0;
            [[dont_unroll]] for (uint j = 0; j < p.n; j++) {
                const float x = read_s(base + j);
                const float m_new = max(m, x);
                l = l * exp(m - m_new) + exp(x - m_new);
                m = m_new;
            }
            const float inv = 1.0 / l;
            [[dont_unroll]] for (uint j = 0; j < p.n; j++) data_s[base + j] = exp(read_s(base + j) - m) * inv;
        }
        [[dont_unroll]] for (uint j = p.n; j < p.n_pad; j++) data_s[base + j] = 0.0;
    }
}
