// SPDX-License-Identifier: Apache-2.0
#version 450
#extension GL_EXT_control_flow_attributes : require
// cmake/unroll.cmake: a loop of constant trip count, which spirv-opt -Oconfig=shaders/unroll.cfg must unroll.
layout(local_size_x = 8) in;
layout(binding = 0, std430) buffer D { float d[]; };
void main() {
    float s = 0.0;
    [[unroll]] for (uint k = 0; k < 8; k++) s += d[gl_GlobalInvocationID.x * 8 + k] * float(k);
    d[gl_GlobalInvocationID.x] = s;
}
