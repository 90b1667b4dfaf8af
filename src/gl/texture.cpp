#include <membridge/gl/texture.hpp>

#include "detail/functions.hpp"
#include "detail/handles.hpp"

#include <cstdio>
#include <limits>
#include <string>
#include <utility>

namespace membridge::gl {

namespace {

constexpr const char* import_call = "gl::texture::import";
constexpr const char* create_call = "gl::texture::create";
constexpr std::uint32_t max_gl_int = static_cast<std::uint32_t>(std::numeric_limits<GLsizei>::max());

// The function table of the context `memory` was made in (alive while `memory` is).
const detail::functions& functions_of(const memory_object& memory) { return memory.gl_context().state()->fn; }

std::string hex(unsigned int value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%X", value);
  return text;
}

std::string describe(const texture_info& info) {
  return std::to_string(info.width) + "x" + std::to_string(info.height) + ", format " + hex(info.internal_format) +
         ", " + std::to_string(info.levels) + (info.levels == 1 ? " level, " : " levels, ") +
         (info.linear_tiling ? "linear" : "optimal") + " tiling";
}

result<void> check_info(const texture_info& info, const char* call) {
  if (info.width == 0 || info.height == 0) return error(errc::invalid_argument, call, "width or height is 0");
  if (info.levels == 0) return error(errc::invalid_argument, call, "levels is 0");
  if (info.internal_format == 0) return error(errc::invalid_argument, call, "internal_format is 0");
  if (info.width > max_gl_int || info.height > max_gl_int || info.levels > max_gl_int)
    return error(errc::invalid_argument, call, "width, height or levels exceeds GLsizei");
  return ok();
}

}  // namespace

result<texture> texture::import(const context& context, os::borrowed_shareable_handle handle, const memory_import_info& memory,
                                const texture_info& info, std::size_t memory_offset) {
  if (!context.valid()) return error(errc::invalid_argument, import_call, "the GL context is empty");
  if (!handle.valid())
    return error(errc::invalid_argument, import_call, std::string("the ") + detail::handle_name + " is invalid");
  MEMBRIDGE_TRY(check_info(info, import_call));
  if (memory_offset >= memory.size)
    return error(errc::invalid_argument, import_call,
                 "memory_offset " + std::to_string(memory_offset) + " is outside the allocation (" +
                     std::to_string(memory.size) + " bytes)");
  MEMBRIDGE_TRY_ASSIGN(os::shareable_handle copy, detail::duplicate(handle));
  MEMBRIDGE_TRY_ASSIGN(auto object, memory_object::import(context, std::move(copy), memory));
  return create(std::make_shared<const memory_object>(std::move(object)), info, memory_offset);
}

result<texture> texture::create(std::shared_ptr<const memory_object> memory, const texture_info& info,
                                std::size_t memory_offset) {
  if (!memory || !memory->valid()) return error(errc::invalid_argument, create_call, "the memory object is empty");
  MEMBRIDGE_TRY(check_info(info, create_call));
  if (memory_offset >= memory->size())
    return error(errc::invalid_argument, create_call,
                 "memory_offset " + std::to_string(memory_offset) + " is outside the memory object (" +
                     std::to_string(memory->size()) + " bytes)");
  const auto ctx = memory->gl_context();
  if (memory_offset != 0 && detail::ignores_memory_offset(ctx.capabilities()))
    return error(errc::unsupported, create_call,
                 ctx.capabilities().renderer +
                     " binds memory objects at offset 0 whatever offset is given (a Mesa bug): a texture at offset " +
                     std::to_string(memory_offset) + " would show the wrong texels");
  const auto& fn = ctx.state()->fn;
  if (fn.TextureStorageMem2DEXT == nullptr || fn.TextureParameteri == nullptr)
    return error(errc::unsupported, create_call, "the context offers no glTextureStorageMem2DEXT");
  texture out;
  out.memory_ = std::move(memory);
  out.info_ = info;
  fn.CreateTextures(GL_TEXTURE_2D, 1, &out.name_);
  MEMBRIDGE_TRY(detail::check_gl_error(fn, "glCreateTextures"));
  // The tiling must be set before the storage is (GL_EXT_memory_object).
  fn.TextureParameteri(out.name_, GL_TEXTURE_TILING_EXT,
                       info.linear_tiling ? GL_LINEAR_TILING_EXT : GL_OPTIMAL_TILING_EXT);
  if (auto tiled = detail::check_gl_error(fn, "glTextureParameteri", "GL_TEXTURE_TILING_EXT"); !tiled) {
    // NVIDIA's GL (driver 580) answers GL_INVALID_VALUE to GL_LINEAR_TILING_EXT: a missing feature.
    if (info.linear_tiling && tiled.error().code() == errc::invalid_argument)
      return error::from_native(errc::unsupported, error_source::gl, tiled.error().native_code(),
                                std::string(tiled.error().native_name()), "glTextureParameteri",
                                "this GL driver (" + ctx.capabilities().renderer +
                                    ") does not take GL_LINEAR_TILING_EXT textures on imported memory; use optimal "
                                    "tiling (a Vulkan optimal image on the same memory, or a CUDA array)");
    return std::move(tiled).error();
  }
  fn.TextureStorageMem2DEXT(out.name_, static_cast<GLsizei>(info.levels), info.internal_format,
                            static_cast<GLsizei>(info.width), static_cast<GLsizei>(info.height),
                            out.memory_->name(), static_cast<GLuint64>(memory_offset));
  MEMBRIDGE_TRY(detail::check_gl_error(fn, "glTextureStorageMem2DEXT",
                                       describe(info) + " at offset " + std::to_string(memory_offset) +
                                           " of a " + std::to_string(out.memory_->size()) + "-byte memory object"));
  return out;
}

texture::texture(texture&& other) noexcept
    : memory_(std::move(other.memory_)), name_(std::exchange(other.name_, 0)), info_(std::exchange(other.info_, {})) {}

texture& texture::operator=(texture&& other) noexcept {
  if (this != &other) {
    reset();
    memory_ = std::move(other.memory_);
    name_ = std::exchange(other.name_, 0);
    info_ = std::exchange(other.info_, {});
  }
  return *this;
}

texture::~texture() { reset(); }

// The context must be current. The texture goes first, then this share of the memory object.
void texture::reset() noexcept {
  if (name_ != 0 && memory_) functions_of(*memory_).DeleteTextures(1, &name_);
  name_ = 0;
  info_ = {};
  memory_.reset();
}

}  // namespace membridge::gl
