#version 450
#extension GL_GOOGLE_include_directive : require
// ---------------------------------------------------------------------------------------------------------------
// Elementwise add: D[i] = A[i] + B[i % n_b]  (n_b = n: plain add; n_b < n: B broadcast, e.g. a bias row).
// Grid-stride loop over n elements, so any n works with a capped grid.
// ---------------------------------------------------------------------------------------------------------------
#include "types.glsl"

layout(local_size_x = 256) in;

layout(binding = 0, std430) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 1, std430) readonly buffer B { B_TYPE data_b[]; };
layout(binding = 2, std430) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Push {
    uint n;        // elements of A and D
    uint n_b;      // elements of B (divides n)
} p;

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride)
        data_d[i] = D_TYPE(float(data_a[i]) + float(data_b[i % p.n_b]));
}
