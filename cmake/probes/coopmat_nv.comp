// SPDX-License-Identifier: Apache-2.0
#version 450
// Configure-time probe (cmake/coopmat.cmake): does glslangValidator compile GL_NV_cooperative_matrix?
// fp16 A/B, fp32 accumulator, 16x16x16 at subgroup scope: the shape a first NV GEMM variant would use.
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 32) in;
layout(binding = 0) readonly buffer A { float16_t a[]; };
layout(binding = 1) writeonly buffer D { float d[]; };
void main() {
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> m;
    coopMatLoadNV(m, a, 0, 16, false);
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    acc = coopMatMulAddNV(m, m, acc);
    coopMatStoreNV(acc, d, 0, 16, false);
}
