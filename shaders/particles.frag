#version 460
// Writes the particle's colour; the pipeline blends additively (ONE, ONE), so dense regions glow.

layout(location = 0) in vec3 in_colour;
layout(location = 0) out vec4 out_colour;

void main() {
  out_colour = vec4(in_colour, 1.0);
}
