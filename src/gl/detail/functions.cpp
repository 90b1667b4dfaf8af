#include "functions.hpp"

#include <cstdint>

namespace membridge::gl::detail {

namespace {

// The values wglGetProcAddress returns on some Windows drivers for an unknown name, besides null.
bool is_function(proc p) noexcept {
  const auto value = reinterpret_cast<std::intptr_t>(p);
  return !(value == 0 || value == 1 || value == 2 || value == 3 || value == -1);
}

template <class Pfn>
void load(Pfn& out, const proc_loader& get_proc_address, const char* name) noexcept {
  const proc p = get_proc_address(name);
  out = is_function(p) ? reinterpret_cast<Pfn>(p) : nullptr;
}

const char* gl_error_name(GLenum e) noexcept {
  switch (e) {
    case GL_INVALID_ENUM: return "GL_INVALID_ENUM";
    case GL_INVALID_VALUE: return "GL_INVALID_VALUE";
    case GL_INVALID_OPERATION: return "GL_INVALID_OPERATION";
    case GL_INVALID_FRAMEBUFFER_OPERATION: return "GL_INVALID_FRAMEBUFFER_OPERATION";
    case GL_OUT_OF_MEMORY: return "GL_OUT_OF_MEMORY";
    case GL_STACK_OVERFLOW: return "GL_STACK_OVERFLOW";
    case GL_STACK_UNDERFLOW: return "GL_STACK_UNDERFLOW";
    default: return "GL error";
  }
}

}  // namespace

functions load_functions(const proc_loader& gpa) noexcept {
  functions f;
#define MEMBRIDGE_GL_LOAD(type, name) load(f.name, gpa, "gl" #name);
  MEMBRIDGE_GL_FUNCTIONS(MEMBRIDGE_GL_LOAD)
#undef MEMBRIDGE_GL_LOAD
  return f;
}

bool ignores_memory_offset(const context_capabilities& caps) noexcept {
  return caps.renderer.find("llvmpipe") != std::string::npos;
}

result<void> check_gl_error(const functions& fn, const char* call, std::string context) {
  if (fn.GetError == nullptr) return {};
  GLenum first = GL_NO_ERROR;
  // Drain every pending error (GL keeps one flag per kind), report the first.
  for (int i = 0; i < 16; ++i) {
    const GLenum e = fn.GetError();
    if (e == GL_NO_ERROR) break;
    if (first == GL_NO_ERROR) first = e;
  }
  if (first == GL_NO_ERROR) return {};
  const errc code = first == GL_OUT_OF_MEMORY                                    ? errc::out_of_memory
                    : (first == GL_INVALID_ENUM || first == GL_INVALID_VALUE ||
                       first == GL_INVALID_OPERATION)                             ? errc::invalid_argument
                                                                                  : errc::internal;
  return error::from_native(code, error_source::gl, static_cast<std::int64_t>(first), gl_error_name(first), call,
                            std::move(context));
}

}  // namespace membridge::gl::detail
