#version 460
// The "splat" render method of samples/01_particles (particle_renderer, render_method::splat), pass 1:
// one invocation per particle projects it like particles.vert (same push-constant camera, same speed
// colour and brightness) and adds its colour, in fixed point (1.0 = 4096), to the pixel(s) it covers
// with atomicAdd into the accumulation buffer (3 uints per pixel, row-major, cleared to 0 before the
// dispatch). Integer sums are exact, so the image does not depend on the order particles land in.
// particles_resolve.comp then writes background + sum / 4096 (clamped at 1) to the colour image.

layout(local_size_x = 256) in;

// particles::particle (32 bytes): position xyz + mass (w), velocity xyz (w unused).
struct particle {
  vec4 position;
  vec4 velocity;
};

// The caller's particle buffer, at the offset of the frame's particles (descriptor offset/range).
layout(std430, set = 0, binding = 0) readonly buffer particle_buffer {
  particle particles[];
};

// width * height * 3 channel sums (R, G, B), fixed point.
layout(std430, set = 0, binding = 1) coherent buffer accumulation_buffer {
  uint accumulation[];
};

// Shared with particles_resolve.comp (particle_renderer.cpp: splat_push_constants).
layout(push_constant) uniform push_constants {
  mat4 view_proj;  // world to clip space (Vulkan: y down, depth 0..1)
  vec4 style;      // x: point size in pixels, y: brightness per particle, z: speed drawn hottest
  vec4 clear;      // background colour (used by the resolve)
  uvec4 extent;    // x: width, y: height, z: particle count, w: unused
} pc;

// Fixed point: 1.0 = 4096. A channel at or above it is saturated (the resolve clamps at 1).
const float one = 4096.0;
const uint saturated = 4096u;

// Slow particles are deep blue, then cyan, then orange; fast ones near white (as particles.vert).
vec3 speed_colour(float t) {
  const vec3 slow = vec3(0.10, 0.25, 1.00);
  const vec3 mid = vec3(0.10, 0.90, 0.80);
  const vec3 fast = vec3(1.00, 0.55, 0.10);
  const vec3 hottest = vec3(1.00, 0.95, 0.80);
  if (t < 0.4) return mix(slow, mid, t / 0.4);
  if (t < 0.8) return mix(mid, fast, (t - 0.4) / 0.4);
  return mix(fast, hottest, (t - 0.8) / 0.2);
}

// Adds `amount` to one channel sum unless that sum is already saturated. Skipping saturated sums does
// not change the image (the resolve clamps them to 1 whatever they hold), keeps them far below 2^32,
// and spares the densest pixels (the white-hot core) most of their atomics.
void add(uint index, uint amount) {
  if (amount != 0u && accumulation[index] < saturated) atomicAdd(accumulation[index], amount);
}

void main() {
  // A 2D grid of 256-wide groups (maxComputeWorkGroupCount[0] may be 65535): group (x, y) is number
  // y * groups_x + x.
  const uint index = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                     gl_LocalInvocationID.x;
  if (index >= pc.extent.z) return;
  const particle p = particles[index];

  // Clip like a point primitive: only a point whose centre is inside the view volume is drawn.
  const vec4 clip = pc.view_proj * vec4(p.position.xyz, 1.0);
  if (!(clip.w > 0.0) || any(greaterThan(abs(clip.xy), vec2(clip.w))) || clip.z < 0.0 || clip.z > clip.w) return;
  // Framebuffer coordinates (viewport 0, 0, width, height).
  const vec2 size = vec2(pc.extent.xy);
  const vec2 centre = (clip.xy / clip.w * 0.5 + 0.5) * size;

  const float t = clamp(length(p.velocity.xyz) / pc.style.z, 0.0, 1.0);
  const vec3 colour = speed_colour(t) * (pc.style.y * p.position.w);
  // One particle adds at most 1.0 per channel (a point's colour clamps at 1 in a UNORM image too).
  const uvec3 amount = uvec3(round(clamp(colour, 0.0, 1.0) * one));
  if (all(equal(amount, uvec3(0u)))) return;

  // The pixels whose centres lie in the point's square (side style.x, as points rasterise); for a
  // 1-pixel point that is the pixel containing the centre.
  const float half_size = 0.5 * pc.style.x;
  const ivec2 first = max(ivec2(ceil(centre - half_size - 0.5)), ivec2(0));
  const ivec2 last = min(ivec2(ceil(centre + half_size - 0.5)) - 1, ivec2(pc.extent.xy) - 1);
  for (int y = first.y; y <= last.y; ++y) {
    for (int x = first.x; x <= last.x; ++x) {
      const uint base = (uint(y) * pc.extent.x + uint(x)) * 3u;
      add(base, amount.r);
      add(base + 1u, amount.g);
      add(base + 2u, amount.b);
    }
  }
}
