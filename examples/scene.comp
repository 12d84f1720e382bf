// SPDX-License-Identifier: Apache-2.0
#version 450
// The example renderer's own frame: a procedural scene drawn into an RGBA8 storage image, one invocation per
// pixel. A sky gradient, a ground plane with moving stripes, and a sun-like disc that travels across the frame
// with `time`, so every frame differs.
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0, rgba8) uniform writeonly image2D frame;
layout(push_constant) uniform Push { uint width, height; float time; } p;

void main() {
    uvec2 xy = gl_GlobalInvocationID.xy;
    if (xy.x >= p.width || xy.y >= p.height) return;
    vec2 uv = (vec2(xy) + 0.5) / vec2(p.width, p.height);   // [0, 1], y down
    float horizon = 0.62;
    vec3 sky = mix(vec3(0.35, 0.55, 0.95), vec3(0.85, 0.9, 1.0), uv.y / horizon);
    float stripes = step(0.5, fract((uv.x - 0.5) / (uv.y - horizon + 0.05) * 2.0 + p.time * 0.7));
    vec3 ground = mix(vec3(0.2, 0.45, 0.15), vec3(0.3, 0.6, 0.2), stripes);
    vec3 color = uv.y < horizon ? sky : ground;
    vec2 sun = vec2(fract(0.1 + 0.13 * p.time), 0.25 + 0.1 * sin(p.time));
    float aspect = float(p.width) / float(p.height);
    float d = length((uv - sun) * vec2(aspect, 1.0));
    color = mix(color, vec3(1.0, 0.8, 0.2), smoothstep(0.13, 0.11, d));
    imageStore(frame, ivec2(xy), vec4(color, 1.0));
}
