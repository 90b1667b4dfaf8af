#version 460
// membridge-view: the colour the vertex stage computed (points, heightfield).
layout(location = 0) in vec4 in_colour;
layout(location = 0) out vec4 out_colour;
void main() { out_colour = in_colour; }
