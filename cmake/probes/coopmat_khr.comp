// SPDX-License-Identifier: Apache-2.0
#version 450
// Configure-time probe (cmake/coopmat.cmake): does glslangValidator compile GL_KHR_cooperative_matrix?
// (glslang 12, Debian 12, does not; glslang >= 13 does.)
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 32) in;
layout(binding = 0) readonly buffer A { float16_t a[]; };
layout(binding = 1) writeonly buffer D { float d[]; };
void main() {
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> ma;
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> mb;
    coopMatLoad(ma, a, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(mb, a, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc =
        coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    acc = coopMatMulAdd(ma, mb, acc);
    coopMatStore(acc, d, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
}
