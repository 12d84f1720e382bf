// SPDX-License-Identifier: Apache-2.0
#version 450
// Configure-time probe (cmake/coopmat.cmake): does glslangValidator compile GL_NV_cooperative_matrix2's tensor loads
// and stores? Only for SPIR-V 1.6 (--target-env vulkan1.3): glslang 15 refuses the extension at vulkan1.1. Debian
// 12's glslang 12 has no such extension; Debian 13's 15 compiles it.
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 32) in;
layout(binding = 0) readonly buffer B { float16_t b[]; };
layout(binding = 1) writeonly buffer D { float d[]; };
void main() {
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> t = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    t = setTensorLayoutDimensionNV(t, 13, 11);
    tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> mb;
    coopMatLoadTensorNV(mb, b, 0, sliceTensorLayoutNV(t, 0, 16, 0, 16), transposed);
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc =
        coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    coopMatStoreTensorNV(acc, d, 0, sliceTensorLayoutNV(t, 0, 16, 0, 16));
}
