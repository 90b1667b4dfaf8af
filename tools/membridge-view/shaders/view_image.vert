#version 460
// membridge-view: one triangle covering the viewport (the image's inset), uv 0..1 with v = 0 at the top.
layout(location = 0) out vec2 out_uv;
void main() {
  vec2 uv = vec2(float((gl_VertexIndex << 1) & 2), float(gl_VertexIndex & 2));
  out_uv = uv;
  gl_Position = vec4(uv * 2.0 - 1.0, 0.0, 1.0);
}
