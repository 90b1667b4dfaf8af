#version 460
// Draws each particle of samples/01_particles as a point, coloured by speed.
// Vertex input: binding 0, stride 32 (particles::particle): location 0 = position (xyz, w = mass) at
// offset 0, location 1 = velocity (xyz) at offset 16, both R32G32B32A32_SFLOAT.

layout(location = 0) in vec4 in_position;
layout(location = 1) in vec4 in_velocity;

layout(push_constant) uniform push_constants {
  mat4 view_proj;  // world to clip space (Vulkan: y down, depth 0..1)
  vec4 style;      // x: point size in pixels, y: brightness per particle, z: speed drawn hottest
} pc;

layout(location = 0) out vec3 out_colour;

// Slow particles are deep blue, then cyan, then orange; fast ones near white.
vec3 speed_colour(float t) {
  const vec3 slow = vec3(0.10, 0.25, 1.00);
  const vec3 mid = vec3(0.10, 0.90, 0.80);
  const vec3 fast = vec3(1.00, 0.55, 0.10);
  const vec3 hottest = vec3(1.00, 0.95, 0.80);
  if (t < 0.4) return mix(slow, mid, t / 0.4);
  if (t < 0.8) return mix(mid, fast, (t - 0.4) / 0.4);
  return mix(fast, hottest, (t - 0.8) / 0.2);
}

void main() {
  gl_Position = pc.view_proj * vec4(in_position.xyz, 1.0);
  gl_PointSize = pc.style.x;
  const float t = clamp(length(in_velocity.xyz) / pc.style.z, 0.0, 1.0);
  out_colour = speed_colour(t) * (pc.style.y * in_position.w);
}
