// SPDX-License-Identifier: Apache-2.0
// ---------------------------------------------------------------------------------------------------------------
// The gates of one chunk in shared memory, as the two mLSTM phases that need them compute them (mlstm_chunk.comp,
// mlstm_scan.comp; included after mlstm_common.glsl and the data_g binding):
//   sh_li[t]    log input gate of token c0 + t
//   sh_beta[t]  the local inclusive cumsum of the log forget gates over tokens c0 .. c0 + t (sequential, by
//               invocation 0: the additions run in token order)
// Call from uniform control flow with every invocation of the workgroup; it ends with a barrier.
// ---------------------------------------------------------------------------------------------------------------
#ifndef VKVIT_MLSTM_GATES_GLSL
#define VKVIT_MLSTM_GATES_GLSL

shared float sh_beta[L], sh_li[L];

void chunk_gates(uint b, uint h, uint c0, uint Lc, uint lid) {
    for (uint t = lid; t < Lc; t += VT) {
        const uint row = row_of(b, c0 + t);
        log_gates(data_g_r(row * p.gate_stride + p.i_off + h), data_g_r(row * p.gate_stride + p.f_off + h), sh_li[t],
                  sh_beta[t]);
    }
    barrier();
    if (lid == 0) {
        float s = 0.0;
        [[dont_unroll]] for (uint t = 0; t < Lc; t++) {
            s += sh_beta[t];
            sh_beta[t] = s;
        }
    }
    barrier();
}

#endif
