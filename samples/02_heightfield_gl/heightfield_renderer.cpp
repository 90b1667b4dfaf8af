// The lit heightfield in OpenGL 4.5 core (libepoxy resolves the GL functions of the current context).
#include "heightfield_renderer.hpp"

#include <epoxy/gl.h>

#include <glm/glm.hpp>
#include <glm/gtc/matrix_transform.hpp>
#include <glm/gtc/type_ptr.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

namespace heightfield {

using membridge::errc;
using membridge::error;
using membridge::result;

namespace {

// Vertex (x, y) of the grid: one triangle strip per row (instance = row), two vertices per column.
// The height comes from the storage buffer; the normal from the four neighbours (central differences).
constexpr const char* vertex_source = R"(#version 450 core
layout(std430, binding = 0) readonly buffer heights_block { float heights[]; };
uniform mat4 mvp;
uniform int grid;
uniform float height_scale;
out vec3 world_position;
out vec3 world_normal;
out float field_height;

float height_at(int x, int y) {
  x = clamp(x, 0, grid - 1);
  y = clamp(y, 0, grid - 1);
  return heights[y * grid + x];
}

void main() {
  int x = gl_VertexID >> 1;
  int y = gl_InstanceID + (gl_VertexID & 1);
  float spacing = 2.0 / float(grid - 1);
  float h = height_at(x, y);
  float dx = (height_at(x + 1, y) - height_at(x - 1, y)) * height_scale;
  float dz = (height_at(x, y + 1) - height_at(x, y - 1)) * height_scale;
  world_normal = normalize(vec3(-dx, 2.0 * spacing, -dz));
  world_position = vec3(-1.0 + float(x) * spacing, h * height_scale, -1.0 + float(y) * spacing);
  field_height = h;
  gl_Position = mvp * vec4(world_position, 1.0);
}
)";

// A directional light (diffuse + Blinn-Phong highlight + ambient) on a colour ramp by height:
// deep blue troughs, teal at rest, foam-white crests.
constexpr const char* fragment_source = R"(#version 450 core
uniform vec3 light_direction;
uniform vec3 eye;
in vec3 world_position;
in vec3 world_normal;
in float field_height;
out vec4 colour;

void main() {
  vec3 n = normalize(world_normal);
  vec3 deep = vec3(0.02, 0.09, 0.30);
  vec3 rest = vec3(0.04, 0.42, 0.58);
  vec3 crest = vec3(0.88, 0.96, 1.00);
  float t = clamp(field_height * 1.6, -1.0, 1.0);
  vec3 base = t < 0.0 ? mix(rest, deep, -t) : mix(rest, crest, t);
  float diffuse = max(dot(n, light_direction), 0.0);
  vec3 view = normalize(eye - world_position);
  float highlight = pow(max(dot(n, normalize(light_direction + view)), 0.0), 48.0);
  colour = vec4(base * (0.22 + 0.78 * diffuse) + vec3(0.45 * highlight), 1.0);
}
)";

constexpr float height_scale = 0.15f;  // world units per unit of height (the field spans 2 x 2)

error gl_error(GLenum code, const char* call, std::string context = {}) {
  char name[24];
  (void)std::snprintf(name, sizeof name, "GL error 0x%04X", code);
  return error::from_native(code == GL_OUT_OF_MEMORY ? errc::out_of_memory : errc::internal,
                            membridge::error_source::gl, static_cast<std::int64_t>(code), name, call,
                            std::move(context));
}

result<void> check_gl(const char* call, std::string context = {}) {
  const GLenum code = glGetError();
  if (code == GL_NO_ERROR) return membridge::ok();
  while (glGetError() != GL_NO_ERROR) {
  }
  return gl_error(code, call, std::move(context));
}

result<GLuint> compile(GLenum stage, const char* source, const char* what) {
  const GLuint shader = glCreateShader(stage);
  glShaderSource(shader, 1, &source, nullptr);
  glCompileShader(shader);
  GLint ok = GL_FALSE;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (ok == GL_TRUE) return shader;
  GLint length = 0;
  glGetShaderiv(shader, GL_INFO_LOG_LENGTH, &length);
  std::string log(static_cast<std::size_t>(std::max(length, 1)), '\0');
  glGetShaderInfoLog(shader, static_cast<GLsizei>(log.size()), nullptr, log.data());
  glDeleteShader(shader);
  return error(errc::internal, "glCompileShader", std::string(what) + ": " + log.c_str());
}

}  // namespace

result<heightfield_renderer> heightfield_renderer::create(const renderer_options& options) {
  constexpr const char* call = "heightfield_renderer::create";
  if (options.grid < 2 || options.width == 0 || options.height == 0)
    return error(errc::invalid_argument, call, "the grid needs 2 cells per side and the image a size");
  if (epoxy_gl_version() < 45)
    return error(errc::unsupported, call,
                 "OpenGL 4.5 is needed, the context has " + std::to_string(epoxy_gl_version() / 10) + "." +
                     std::to_string(epoxy_gl_version() % 10));
  while (glGetError() != GL_NO_ERROR) {
  }
  heightfield_renderer r;
  r.options_ = options;

  MEMBRIDGE_TRY_ASSIGN(const GLuint vs, compile(GL_VERTEX_SHADER, vertex_source, "vertex shader"));
  auto fs = compile(GL_FRAGMENT_SHADER, fragment_source, "fragment shader");
  if (!fs) {
    glDeleteShader(vs);
    return std::move(fs).error();
  }
  r.program_ = glCreateProgram();
  glAttachShader(r.program_, vs);
  glAttachShader(r.program_, *fs);
  glLinkProgram(r.program_);
  glDeleteShader(vs);
  glDeleteShader(*fs);
  GLint linked = GL_FALSE;
  glGetProgramiv(r.program_, GL_LINK_STATUS, &linked);
  if (linked != GL_TRUE) {
    GLint length = 0;
    glGetProgramiv(r.program_, GL_INFO_LOG_LENGTH, &length);
    std::string log(static_cast<std::size_t>(std::max(length, 1)), '\0');
    glGetProgramInfoLog(r.program_, static_cast<GLsizei>(log.size()), nullptr, log.data());
    return error(errc::internal, "glLinkProgram", log.c_str());
  }
  r.mvp_location_ = glGetUniformLocation(r.program_, "mvp");
  r.grid_location_ = glGetUniformLocation(r.program_, "grid");
  r.scale_location_ = glGetUniformLocation(r.program_, "height_scale");
  r.light_location_ = glGetUniformLocation(r.program_, "light_direction");
  r.eye_location_ = glGetUniformLocation(r.program_, "eye");
  glCreateVertexArrays(1, &r.vertex_array_);

  GLint alignment = 1;
  glGetIntegerv(GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT, &alignment);
  r.ssbo_alignment_ = static_cast<std::size_t>(std::max(alignment, 1));
  GLint max_samples = 1;
  glGetIntegerv(GL_MAX_SAMPLES, &max_samples);
  r.samples_ = std::clamp(options.samples, 1, std::max(max_samples, 1));

  const auto w = static_cast<GLsizei>(options.width);
  const auto h = static_cast<GLsizei>(options.height);
  glCreateRenderbuffers(3, r.renderbuffers_.data());
  glNamedRenderbufferStorageMultisample(r.renderbuffers_[0], r.samples_, GL_RGBA8, w, h);
  glNamedRenderbufferStorageMultisample(r.renderbuffers_[1], r.samples_, GL_DEPTH_COMPONENT24, w, h);
  glNamedRenderbufferStorage(r.renderbuffers_[2], GL_RGBA8, w, h);
  glCreateFramebuffers(1, &r.msaa_fbo_);
  glNamedFramebufferRenderbuffer(r.msaa_fbo_, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, r.renderbuffers_[0]);
  glNamedFramebufferRenderbuffer(r.msaa_fbo_, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER, r.renderbuffers_[1]);
  glCreateFramebuffers(1, &r.resolve_fbo_);
  glNamedFramebufferRenderbuffer(r.resolve_fbo_, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, r.renderbuffers_[2]);
  for (const GLuint fbo : {r.msaa_fbo_, r.resolve_fbo_})
    if (const GLenum status = glCheckNamedFramebufferStatus(fbo, GL_FRAMEBUFFER); status != GL_FRAMEBUFFER_COMPLETE)
      return gl_error(status, "glCheckNamedFramebufferStatus",
                      "the " + std::to_string(options.width) + "x" + std::to_string(options.height) +
                          " framebuffer is incomplete");
  MEMBRIDGE_TRY(check_gl(call, "shaders, vertex array and framebuffers"));
  return r;
}

heightfield_renderer::heightfield_renderer(heightfield_renderer&& other) noexcept { take(other); }

heightfield_renderer& heightfield_renderer::operator=(heightfield_renderer&& other) noexcept {
  if (this != &other) {
    reset();
    take(other);
  }
  return *this;
}

void heightfield_renderer::take(heightfield_renderer& other) noexcept {
  options_ = other.options_;
  program_ = std::exchange(other.program_, 0);
  vertex_array_ = std::exchange(other.vertex_array_, 0);
  msaa_fbo_ = std::exchange(other.msaa_fbo_, 0);
  resolve_fbo_ = std::exchange(other.resolve_fbo_, 0);
  renderbuffers_ = std::exchange(other.renderbuffers_, {});
  mvp_location_ = other.mvp_location_;
  grid_location_ = other.grid_location_;
  scale_location_ = other.scale_location_;
  light_location_ = other.light_location_;
  eye_location_ = other.eye_location_;
  ssbo_alignment_ = other.ssbo_alignment_;
  samples_ = other.samples_;
}

heightfield_renderer::~heightfield_renderer() { reset(); }

void heightfield_renderer::reset() noexcept {
  if (program_ == 0 && vertex_array_ == 0 && msaa_fbo_ == 0) return;
  glDeleteFramebuffers(1, &msaa_fbo_);
  glDeleteFramebuffers(1, &resolve_fbo_);
  glDeleteRenderbuffers(3, renderbuffers_.data());
  glDeleteVertexArrays(1, &vertex_array_);
  glDeleteProgram(program_);
  program_ = vertex_array_ = msaa_fbo_ = resolve_fbo_ = 0;
  renderbuffers_ = {};
}

result<void> heightfield_renderer::draw(const draw_input& input) {
  constexpr const char* call = "heightfield_renderer::draw";
  const std::size_t expected =
      static_cast<std::size_t>(options_.grid) * static_cast<std::size_t>(options_.grid) * sizeof(float);
  if (input.buffer == 0 || input.bytes != expected)
    return error(errc::invalid_argument, call,
                 "a frame is " + std::to_string(expected) + " bytes of heights, got " + std::to_string(input.bytes));
  if (input.offset % ssbo_alignment_ != 0)
    return error(errc::invalid_argument, call,
                 "offset " + std::to_string(input.offset) + " is not a multiple of the storage buffer alignment " +
                     std::to_string(ssbo_alignment_));

  const float aspect = static_cast<float>(options_.width) / static_cast<float>(options_.height);
  const glm::vec3 eye(0.0f, 1.3f, 1.95f);
  const glm::mat4 projection = glm::perspective(glm::radians(42.0f), aspect, 0.05f, 20.0f);
  const glm::mat4 view = glm::lookAt(eye, glm::vec3(0.0f, -0.2f, 0.1f), glm::vec3(0.0f, 1.0f, 0.0f));
  const glm::mat4 mvp = projection * view;
  const glm::vec3 light = glm::normalize(glm::vec3(-0.45f, 0.8f, 0.35f));

  glBindFramebuffer(GL_FRAMEBUFFER, msaa_fbo_);
  glViewport(0, 0, static_cast<GLsizei>(options_.width), static_cast<GLsizei>(options_.height));
  glEnable(GL_DEPTH_TEST);
  glDepthFunc(GL_LESS);
  glDisable(GL_CULL_FACE);
  const float clear_colour[4] = {background_rgb[0] / 255.0f, background_rgb[1] / 255.0f, background_rgb[2] / 255.0f,
                                 1.0f};
  const float clear_depth = 1.0f;
  glClearNamedFramebufferfv(msaa_fbo_, GL_COLOR, 0, clear_colour);
  glClearNamedFramebufferfv(msaa_fbo_, GL_DEPTH, 0, &clear_depth);

  glUseProgram(program_);
  glUniformMatrix4fv(mvp_location_, 1, GL_FALSE, glm::value_ptr(mvp));
  glUniform1i(grid_location_, options_.grid);
  glUniform1f(scale_location_, height_scale);
  glUniform3fv(light_location_, 1, glm::value_ptr(light));
  glUniform3fv(eye_location_, 1, glm::value_ptr(eye));
  glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 0, input.buffer, static_cast<GLintptr>(input.offset),
                    static_cast<GLsizeiptr>(input.bytes));
  glBindVertexArray(vertex_array_);
  glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 2 * options_.grid, options_.grid - 1);
  glBindVertexArray(0);
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, 0);
  glUseProgram(0);

  const auto w = static_cast<GLint>(options_.width);
  const auto h = static_cast<GLint>(options_.height);
  glBlitNamedFramebuffer(msaa_fbo_, resolve_fbo_, 0, 0, w, h, 0, 0, w, h, GL_COLOR_BUFFER_BIT, GL_NEAREST);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  return check_gl(call, "drawing the heightfield");
}

void heightfield_renderer::blit_to_default(int width, int height) const {
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  glViewport(0, 0, width, height);
  const float black[4] = {0.0f, 0.0f, 0.0f, 1.0f};
  glClearNamedFramebufferfv(0, GL_COLOR, 0, black);
  if (width <= 0 || height <= 0) return;
  const double scale = std::min(static_cast<double>(width) / options_.width, static_cast<double>(height) / options_.height);
  const int fw = std::max(1, static_cast<int>(options_.width * scale + 0.5));
  const int fh = std::max(1, static_cast<int>(options_.height * scale + 0.5));
  const int x = (width - fw) / 2;
  const int y = (height - fh) / 2;
  glBlitNamedFramebuffer(resolve_fbo_, 0, 0, 0, static_cast<GLint>(options_.width), static_cast<GLint>(options_.height),
                         x, y, x + fw, y + fh, GL_COLOR_BUFFER_BIT, GL_LINEAR);
}

result<std::vector<std::uint8_t>> heightfield_renderer::read_pixels() const {
  const std::size_t row = static_cast<std::size_t>(options_.width) * 4;
  std::vector<std::uint8_t> pixels(row * options_.height);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, resolve_fbo_);
  glReadBuffer(GL_COLOR_ATTACHMENT0);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadnPixels(0, 0, static_cast<GLsizei>(options_.width), static_cast<GLsizei>(options_.height), GL_RGBA,
                GL_UNSIGNED_BYTE, static_cast<GLsizei>(pixels.size()), pixels.data());
  glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
  MEMBRIDGE_TRY(check_gl("glReadnPixels", "reading the image back"));
  // GL's rows go bottom to top; PNG's top to bottom.
  std::vector<std::uint8_t> flipped(row);
  for (std::uint32_t y = 0; y < options_.height / 2; ++y) {
    std::uint8_t* a = pixels.data() + y * row;
    std::uint8_t* b = pixels.data() + (options_.height - 1 - y) * row;
    std::memcpy(flipped.data(), a, row);
    std::memcpy(a, b, row);
    std::memcpy(b, flipped.data(), row);
  }
  return pixels;
}

}  // namespace heightfield
