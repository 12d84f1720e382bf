// SPDX-License-Identifier: Apache-2.0
// The push constants of every GEMM kernel (gemm.comp, gemm_cpu.comp, gemm_coopmat.comp): the one home of this
// contract. Its C mirror is vkvit__gemm_push in src/ops/gemm.h; pipeline creation compares the block's size, read
// from the SPIR-V, with the mirror's (src/vk/pipeline.c), and VKVIT_PUSH_MIRROR checks the mirror's word count.
//     D[b][m][n] = epilogue( sum_k A[b][m][k] * B[b][n][k] )             A: (M, K)  B: (N, K)  D: (M, N)
layout(push_constant) uniform Push {
    uint M, N, K;
    uint stride_a, stride_b, stride_d;              // row strides in elements
    uint batch_stride_a, batch_stride_b, batch_stride_d;
    uint a_offset, d_offset;                        // element offsets of A and D in their buffers
    uint r_offset, r_stride, r_batch_stride;        // the residual matrix (epilogue)
    uint n_inner;                                   // two-level batch: z = outer * n_inner + inner (0 = 1)
    uint inner_stride_a, inner_stride_b, inner_stride_d, r_inner_stride;
    uint b_offset;                                  // element offset of B in its buffer
    uint n_offset;                                  // column offset into bias and scale (a weight's row block)
    uint zero;                                      // always 0 (the host zero-initialises it): gemm_cpu.comp's
                                                    // ordering dependency; the other kernels ignore it
#if defined(PACKED) && PACKED
    PACKED_PUSH_FIELDS                              // gemm.comp's packed variant: the 6 tensors' element bases
#endif
} p;
