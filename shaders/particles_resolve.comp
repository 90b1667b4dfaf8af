#version 460
// The "splat" render method of samples/01_particles, pass 2: one invocation per pixel (8x8 tiles)
// writes background + accumulated / 4096 (particles_splat.comp's fixed point), clamped at 1, to the
// colour image (rgba8 storage image, GENERAL layout). Alpha is the background's, as the points
// pipeline leaves it (its blend keeps the destination alpha).

layout(local_size_x = 8, local_size_y = 8) in;

// width * height * 3 channel sums (R, G, B), fixed point (1.0 = 4096).
layout(std430, set = 0, binding = 1) readonly buffer accumulation_buffer {
  uint accumulation[];
};

layout(set = 0, binding = 2, rgba8) uniform writeonly image2D colour_image;

// Shared with particles_splat.comp (particle_renderer.cpp: splat_push_constants).
layout(push_constant) uniform push_constants {
  mat4 view_proj;  // unused here
  vec4 style;      // unused here
  vec4 clear;      // background colour (linear RGBA)
  uvec4 extent;    // x: width, y: height, z: particle count (unused here), w: unused
} pc;

void main() {
  const uvec2 pixel = gl_GlobalInvocationID.xy;
  if (pixel.x >= pc.extent.x || pixel.y >= pc.extent.y) return;
  const uint base = (pixel.y * pc.extent.x + pixel.x) * 3u;
  const vec3 sum = vec3(accumulation[base], accumulation[base + 1u], accumulation[base + 2u]) / 4096.0;
  imageStore(colour_image, ivec2(pixel), vec4(min(pc.clear.rgb + sum, vec3(1.0)), pc.clear.a));
}
