#include <membridge/gl/context.hpp>

#include "detail/functions.hpp"
#include "detail/handles.hpp"

#include <algorithm>
#include <string_view>

namespace membridge::gl {

namespace {

constexpr const char* adopt_call = "gl::context::adopt_current";

std::string string_of(const detail::functions& fn, GLenum name) {
  const auto* s = fn.GetString(name);
  return s != nullptr ? std::string(reinterpret_cast<const char*>(s)) : std::string();
}

std::vector<std::string> extensions_of(const detail::functions& fn) {
  std::vector<std::string> out;
  GLint count = 0;
  fn.GetIntegerv(GL_NUM_EXTENSIONS, &count);
  if (fn.GetStringi == nullptr) return out;
  out.reserve(static_cast<std::size_t>(std::max(count, 0)));
  for (GLint i = 0; i < count; ++i) {
    const auto* e = fn.GetStringi(GL_EXTENSIONS, static_cast<GLuint>(i));
    if (e != nullptr) out.emplace_back(reinterpret_cast<const char*>(e));
  }
  return out;
}

void read_uuids(const detail::functions& fn, context_capabilities& caps) {
  if (fn.GetUnsignedBytei_vEXT != nullptr) {
    GLint devices = 0;
    fn.GetIntegerv(GL_NUM_DEVICE_UUIDS_EXT, &devices);
    for (GLint i = 0; i < devices; ++i) {
      GLubyte raw[GL_UUID_SIZE_EXT] = {};
      fn.GetUnsignedBytei_vEXT(GL_DEVICE_UUID_EXT, static_cast<GLuint>(i), raw);
      caps.device_uuids.push_back(device_uuid::from_bytes(raw));
    }
  }
  if (fn.GetUnsignedBytevEXT != nullptr) {
    GLubyte raw[GL_UUID_SIZE_EXT] = {};
    fn.GetUnsignedBytevEXT(GL_DRIVER_UUID_EXT, raw);
    caps.driver_uuid = device_uuid::from_bytes(raw);
  }
}

// Every group of entry points a capability needs must be complete, not only advertised.
void read_capabilities(const detail::functions& fn, context_capabilities& caps) {
  const auto exts = extensions_of(fn);
  auto has = [&exts](std::string_view name) { return std::find(exts.begin(), exts.end(), name) != exts.end(); };
  fn.GetIntegerv(GL_MAJOR_VERSION, &caps.major);
  fn.GetIntegerv(GL_MINOR_VERSION, &caps.minor);
  caps.version = string_of(fn, GL_VERSION);
  caps.vendor = string_of(fn, GL_VENDOR);
  caps.renderer = string_of(fn, GL_RENDERER);
  caps.direct_state_access = (caps.major > 4 || (caps.major == 4 && caps.minor >= 5) ||
                              has("GL_ARB_direct_state_access")) &&
                             fn.CreateBuffers != nullptr && fn.CreateTextures != nullptr &&
                             fn.NamedBufferSubData != nullptr && fn.GetNamedBufferSubData != nullptr;
  caps.memory_object = has("GL_EXT_memory_object") && fn.CreateMemoryObjectsEXT != nullptr &&
                       fn.DeleteMemoryObjectsEXT != nullptr && fn.NamedBufferStorageMemEXT != nullptr &&
                       fn.MemoryObjectParameterivEXT != nullptr;
  caps.memory_object_fd = has("GL_EXT_memory_object_fd") && fn.ImportMemoryFdEXT != nullptr;
  caps.memory_object_win32 = has("GL_EXT_memory_object_win32") && fn.ImportMemoryWin32HandleEXT != nullptr;
  caps.memory_object_handle = has(detail::memory_handle_extension) && detail::has_memory_import(fn);
  caps.semaphore = has("GL_EXT_semaphore") && fn.GenSemaphoresEXT != nullptr && fn.DeleteSemaphoresEXT != nullptr &&
                   fn.WaitSemaphoreEXT != nullptr && fn.SignalSemaphoreEXT != nullptr;
  caps.semaphore_fd = has("GL_EXT_semaphore_fd") && fn.ImportSemaphoreFdEXT != nullptr;
  caps.semaphore_win32 = has("GL_EXT_semaphore_win32") && fn.ImportSemaphoreWin32HandleEXT != nullptr;
  caps.semaphore_handle = has(detail::semaphore_handle_extension) && detail::has_semaphore_import(fn);
  caps.timeline_semaphore = has("GL_NV_timeline_semaphore") && fn.CreateSemaphoresNV != nullptr &&
                            fn.SemaphoreParameterivNV != nullptr && fn.SemaphoreParameterui64vEXT != nullptr;
  caps.sparse_buffer = has("GL_ARB_sparse_buffer");
  caps.memory_object_sparse = has("GL_NV_memory_object_sparse") && fn.NamedBufferPageCommitmentMemNV != nullptr;
  if (caps.sparse_buffer) {
    GLint page = 0;
    fn.GetIntegerv(GL_SPARSE_BUFFER_PAGE_SIZE_ARB, &page);
    caps.sparse_page_size = static_cast<std::size_t>(std::max(page, 0));
  }
  read_uuids(fn, caps);
}

// Drivers on which committing imported memory into a sparse buffer is known to break: NVIDIA's GL
// lost the context (GL_GUILTY_CONTEXT_RESET) at the first such commit in every variant tried on an
// H100 with driver 580.159.04 (sparse buffer flags and sizes, partial commits, dedicated memory
// objects, CUDA allocation properties), while sparse buffers backed by GL's own memory worked.
std::string sparse_import_problem(const context_capabilities& caps) {
  if (!caps.sparse_buffer || !caps.memory_object_sparse) return {};
  if (caps.vendor.find("NVIDIA") == std::string::npos) return {};
  return "committing imported memory into a sparse buffer (glNamedBufferPageCommitmentMemNV) lost the GL context "
         "on NVIDIA's GL (measured with driver 580.159.04; this one is " + caps.version +
         "), so membridge grows GL views one buffer per chunk";
}

std::vector<std::string> missing_required(const context_capabilities& caps) {
  std::vector<std::string> missing;
  if (!caps.direct_state_access) missing.emplace_back("OpenGL 4.5 or GL_ARB_direct_state_access");
  if (!caps.memory_object) missing.emplace_back("GL_EXT_memory_object");
  if (!caps.memory_object_handle) missing.emplace_back(detail::memory_handle_extension);
  return missing;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

const std::vector<std::string>& required_extensions() {
  static const std::vector<std::string> names{"GL_EXT_memory_object", detail::memory_handle_extension};
  return names;
}

result<context> context::adopt_current(get_proc_address_fn get_proc_address, const adopt_options& options) {
  if (get_proc_address == nullptr) return error(errc::invalid_argument, adopt_call, "get_proc_address is null");
  return detail::adopt_current([get_proc_address](const char* name) { return get_proc_address(name); }, options, {});
}

result<context> detail::adopt_current(const proc_loader& load, const adopt_options& options, os::dynamic_library library) {
  auto state = std::make_shared<detail::context_state>();
  state->fn = detail::load_functions(load);  // `load` may use `library`: load first, then keep it
  state->library = std::move(library);
  const auto& fn = state->fn;
  if (fn.GetString == nullptr || fn.GetIntegerv == nullptr || fn.GetError == nullptr)
    return error(errc::invalid_argument, adopt_call,
                 "get_proc_address gave no glGetString / glGetIntegerv / glGetError (on Windows, wglGetProcAddress "
                 "alone gives no GL 1.1 function: use context::adopt_current_wgl)");
  if (fn.GetString(GL_VERSION) == nullptr)
    return error(errc::invalid_argument, adopt_call, "no GL context is current on this thread (glGetString answered nothing)");
  while (fn.GetError() != GL_NO_ERROR) {
  }
  read_capabilities(fn, state->capabilities);
  (void)detail::check_gl_error(fn, adopt_call);  // queries of absent extensions may raise GL_INVALID_ENUM
  if (!options.trust_sparse_imports) state->capabilities.sparse_growth_blocked = sparse_import_problem(state->capabilities);
  const auto& caps = state->capabilities;
  if (const auto missing = missing_required(caps); !missing.empty() && !options.allow_missing_extensions)
    return error(errc::unsupported, adopt_call,
                 "the GL context (" + caps.renderer + ", " + caps.version + ") lacks " + joined(missing));
  if (options.uuid) {
    const bool match = std::find(caps.device_uuids.begin(), caps.device_uuids.end(), *options.uuid) !=
                       caps.device_uuids.end();
    if (!match)
      return error(errc::invalid_argument, adopt_call,
                   "the GL context renders on " + (caps.device_uuids.empty() ? std::string("a device without a UUID")
                                                                             : "GPU " + caps.device_uuids.front().to_string()) +
                       " (" + caps.renderer + "), not on GPU " + options.uuid->to_string() +
                       ": memory of one GPU cannot be imported by another");
  }
  return context(std::shared_ptr<const detail::context_state>(std::move(state)));
}

const context_capabilities& context::capabilities() const noexcept { return state_->capabilities; }

device_uuid context::uuid() const noexcept {
  const auto& ids = state_->capabilities.device_uuids;
  return ids.empty() ? device_uuid{} : ids.front();
}

bool context::is_on(const device_uuid& id) const noexcept {
  if (!state_) return false;
  const auto& ids = state_->capabilities.device_uuids;
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

result<void> context::flush() const {
  if (!state_) return error(errc::invalid_argument, "gl::context::flush", "empty context");
  state_->fn.Flush();
  return detail::check_gl_error(state_->fn, "glFlush");
}

result<void> context::finish() const {
  if (!state_) return error(errc::invalid_argument, "gl::context::finish", "empty context");
  state_->fn.Finish();
  return detail::check_gl_error(state_->fn, "glFinish");
}

}  // namespace membridge::gl
