// probe_gl(): the OpenGL section from a real libEGL, through membridge::gl::headless_context
// (libEGL is dlopened, never linked; GL functions come through eglGetProcAddress).
#include "report.hpp"

#include <membridge/gl/headless_context.hpp>
#include <membridge/os/dynamic_library.hpp>

#include <utility>

namespace membridge::info {

namespace {

gl_egl_device egl_device_of(const gl::egl_device_info& info) {
  gl_egl_device d;
  d.index = info.index;
  d.software = info.extensions.find("EGL_MESA_device_software") != std::string::npos;
  d.cuda_device = info.cuda_device;
  d.drm_device = info.drm_device;
  d.renderer = info.renderer;
  d.uuid = info.uuid;
  d.error = info.error;
  return d;
}

gl_context_report context_of(const gl::context& gl) {
  const auto& caps = gl.capabilities();
  gl_context_report c;
  c.renderer = caps.renderer;
  c.version = caps.version;
  c.memory_object_fd = caps.memory_object && caps.memory_object_fd;
  c.semaphore_fd = caps.semaphore_import();
  c.timeline_semaphore = caps.timeline_semaphore;
  c.sparse_growth = caps.sparse_growth();
  c.sparse_growth_blocked = caps.sparse_growth_blocked;
  return c;
}

// A headless context on the GPU with the CUDA device's UUID: made, read and destroyed here.
gl_device_report probe_cuda_device(const cuda_device_report& cuda, const gl_report& g) {
  gl_device_report d;
  d.cuda_ordinal = cuda.ordinal;
  d.uuid = cuda.identity.uuid;
  if (g.egl_found && d.uuid) {
    gl::headless_options options;
    options.uuid = d.uuid;
    options.library = g.library;
    auto made = gl::headless_context::create(options);
    if (made)
      d.context = context_of(made->gl());
    else
      d.failure = std::move(made).error();
  }
  judge_gl_interop(d, g);
  return d;
}

}  // namespace

gl_report probe_gl(const report& r, const gl_probe_options& options) {
  gl_report g;
  g.library = options.library;
  auto library = os::dynamic_library::open(options.library);
  g.egl_found = library.has_value();
  auto listed = gl::headless_context::list_devices(options.library);
  if (listed) {
    for (const auto& info : *listed) g.devices.push_back(egl_device_of(info));
  } else {
    g.failure = std::move(listed).error();
  }
  for (const auto& cuda : r.cuda.devices) g.cuda_devices.push_back(probe_cuda_device(cuda, g));
  return g;
}

}  // namespace membridge::info
