#version 460
// membridge-view: an image layout (rgba8, or r32f through the colour map; pc.info.z x pc.info.w,
// row 0 at the top) read texel by texel from the storage buffer (nearest).
layout(std430, set = 0, binding = 0) readonly buffer data_words { uint words[]; };
layout(push_constant) uniform draw_constants {
  mat4 mvp;     // points, heightfield: clip from world
  vec4 range;   // x, y: the r32f range drawn as 0..1 of the colour map; z: colour map (0 turbo, 1 viridis)
  uvec4 info;   // x: stride in words; y: colour offset in words; z, w: width, height (image, heightfield)
  uvec4 mode;   // x: colour (0 none, 1 rgba8, 2 r32f)
} pc;

// Polynomial fits of the turbo (Google, Mikhailov 2019) and viridis (matplotlib) colour maps.
vec3 turbo(float t) {
  const vec4 kr = vec4(0.13572138, 4.61539260, -42.66032258, 132.13108234);
  const vec4 kg = vec4(0.09140261, 2.19418839, 4.84296658, -14.18503333);
  const vec4 kb = vec4(0.10667330, 12.64194608, -60.58204836, 110.36276771);
  const vec2 kr2 = vec2(-152.94239396, 59.28637943);
  const vec2 kg2 = vec2(4.27729857, 2.82956604);
  const vec2 kb2 = vec2(-89.90310912, 27.34824973);
  vec4 v4 = vec4(1.0, t, t * t, t * t * t);
  vec2 v2 = v4.zw * v4.z;
  return vec3(dot(v4, kr) + dot(v2, kr2), dot(v4, kg) + dot(v2, kg2), dot(v4, kb) + dot(v2, kb2));
}
vec3 viridis(float t) {
  const vec3 c0 = vec3(0.2777273272234177, 0.005407344544966578, 0.3340998053353061);
  const vec3 c1 = vec3(0.1050930431085774, 1.404613529898575, 1.384590162594685);
  const vec3 c2 = vec3(-0.3308618287255563, 0.214847559468213, 0.09509516302823659);
  const vec3 c3 = vec3(-4.634230498983486, -5.799100973351585, -19.33244095627987);
  const vec3 c4 = vec3(6.228269936347081, 14.17993336680509, 56.69055260068105);
  const vec3 c5 = vec3(4.776384997670288, -13.74514537774601, -65.35303263337234);
  const vec3 c6 = vec3(-5.435455855934631, 4.645852612178535, 26.3124352495832);
  return c0 + t * (c1 + t * (c2 + t * (c3 + t * (c4 + t * (c5 + t * c6)))));
}
// `value` through the colour map chosen, `range` mapped to 0..1 (clamped; NaN drawn as grey).
vec3 colour_map(float value) {
  if (isnan(value)) return vec3(0.5);
  float span = pc.range.y - pc.range.x;
  float t = clamp(span > 0.0 ? (value - pc.range.x) / span : 0.5, 0.0, 1.0);
  return clamp(pc.range.z > 0.5 ? viridis(t) : turbo(t), 0.0, 1.0);
}
float word_float(uint index) { return uintBitsToFloat(words[index]); }

layout(location = 0) in vec2 in_uv;
layout(location = 0) out vec4 out_colour;

void main() {
  uvec2 size = pc.info.zw;
  uvec2 texel = min(uvec2(in_uv * vec2(size)), size - 1u);
  uint index = texel.y * size.x + texel.x;
  if (pc.mode.x == 1u)
    out_colour = vec4(unpackUnorm4x8(words[index]).rgb, 1.0);
  else
    out_colour = vec4(colour_map(word_float(index)), 1.0);
}
