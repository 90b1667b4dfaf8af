// headless_context: a GL 4.5 core context without a window, made through EGL devices
// (EGL_EXT_platform_device) on the GPU that matches a CUDA device, or on Mesa's surfaceless platform.
#include <membridge/gl/headless_context.hpp>

#include "egl.hpp"

#include <optional>
#include <utility>

namespace membridge::gl {

namespace {

constexpr const char* create_call = "gl::headless_context::create";
constexpr int surfaceless_index = -1;

get_proc_address_fn gpa_of(const detail::egl_library& egl) noexcept {
  return reinterpret_cast<get_proc_address_fn>(egl.fn.GetProcAddress);
}

/// A context made on one EGL device, current, and adopted without requiring membridge's extensions.
struct opened {
  std::unique_ptr<detail::egl_state> state;
  context gl;
};

/// Makes a context on `info`'s device and records what it reports (uuid, renderer) or why it failed
/// (error) in `info`. Leaves the context current on success.
std::optional<opened> open_on(const std::shared_ptr<const detail::egl_library>& egl, EGLenum platform, void* native,
                              egl_device_info& info) {
  auto state = detail::open_display_context(egl, platform, native);
  if (!state) {
    info.error = state.error().message();
    return std::nullopt;
  }
  adopt_options lenient;
  lenient.allow_missing_extensions = true;
  auto gl = context::adopt_current(gpa_of(*egl), lenient);
  if (!gl) {
    info.error = gl.error().message();
    return std::nullopt;
  }
  const auto& caps = gl->capabilities();
  if (!caps.device_uuids.empty()) info.uuid = caps.device_uuids.front();
  info.renderer = caps.renderer;
  return opened{std::move(*state), std::move(*gl)};
}

bool is_software(const egl_device_info& info) { return detail::has_extension(info.extensions, "EGL_MESA_device_software"); }

/// Why a device is not tried at all (empty: try it). Checked before a context is made.
std::string reason_to_skip(const headless_options& options, const egl_device_info& info) {
  if (is_software(info) && !options.allow_software)
    return "skipped: a software renderer (EGL_MESA_device_software) and allow_software is off";
  if (options.uuid || !options.cuda_device || info.index == surfaceless_index) return {};
  if (!info.cuda_device) return "skipped: reports no CUDA device (no EGL_NV_device_cuda)";
  if (*info.cuda_device != *options.cuda_device) return "skipped: not CUDA device " + std::to_string(*options.cuda_device);
  return {};
}

bool matches(const headless_options& options, const egl_device_info& info, const context& gl) {
  if (options.uuid) return gl.is_on(*options.uuid);
  if (options.cuda_device) return info.cuda_device == options.cuda_device;
  return true;
}

std::string describe(const egl_device_info& info) {
  std::string out = info.index == surfaceless_index ? "Mesa surfaceless" : "EGL device " + std::to_string(info.index);
  out += ": CUDA device " + (info.cuda_device ? std::to_string(*info.cuda_device) : std::string("-"));
  out += ", renderer " + (info.renderer.empty() ? std::string("-") : info.renderer);
  out += ", uuid " + (info.uuid ? info.uuid->to_string() : std::string("-"));
  if (!info.error.empty()) out += ", error: " + info.error;
  return out;
}

std::string describe_all(const std::vector<egl_device_info>& seen) {
  if (seen.empty()) return "no EGL device was found";
  std::string out = "found ";
  for (std::size_t i = 0; i < seen.size(); ++i) out += (i == 0 ? "[" : "; [") + describe(seen[i]) + "]";
  return out;
}

/// The devices to try, hardware first: without a uuid or CUDA device asked for, the first device
/// that works is taken, and that should be a GPU rather than Mesa's software renderer.
std::vector<egl_device_info> candidates(const detail::egl_library& egl, const std::vector<EGLDeviceEXT>& devices) {
  std::vector<egl_device_info> hardware;
  std::vector<egl_device_info> software;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    auto info = detail::describe_device(egl, devices[i], static_cast<int>(i));
    (is_software(info) ? software : hardware).push_back(std::move(info));
  }
  hardware.insert(hardware.end(), software.begin(), software.end());
  return hardware;
}

/// What one create() has found so far.
struct search {
  const headless_options& options;
  std::shared_ptr<const detail::egl_library> egl;
  std::vector<egl_device_info> seen;
  bool any_usable = false;  ///< A device made a context, or was passed over only for not matching.
};

/// Tries one device: nothing when it is not the one (recorded in `s.seen`), else the context (or
/// the error of adopting it with membridge's requirements).
std::optional<result<headless_context>> try_device(search& s, EGLenum platform, void* native, egl_device_info info,
                                                   headless_context (*wrap)(std::unique_ptr<detail::egl_state>, context)) {
  info.error = reason_to_skip(s.options, info);
  if (!info.error.empty()) {
    s.any_usable = s.any_usable || !is_software(info) || s.options.allow_software;
    s.seen.push_back(std::move(info));
    return std::nullopt;
  }
  auto made = open_on(s.egl, platform, native, info);
  if (!made || !matches(s.options, info, made->gl)) {
    s.any_usable = s.any_usable || made.has_value();
    s.seen.push_back(std::move(info));
    return std::nullopt;  // `made` is torn down here: released, destroyed, display given back
  }
  adopt_options strict;
  strict.uuid = s.options.uuid;
  auto gl = context::adopt_current(gpa_of(*s.egl), strict);
  if (!gl) return result<headless_context>(std::move(gl).error().add_context(describe(info)));
  made->state->device = std::move(info);
  return wrap(std::move(made->state), std::move(*gl));
}

error no_match(const search& s) {
  const auto& o = s.options;
  if (!s.any_usable)
    return error(errc::driver_unavailable, create_call,
                 "no EGL device could make an OpenGL 4.5 core context (" + o.library + "): " + describe_all(s.seen));
  const std::string wanted = o.uuid          ? "on GPU " + o.uuid->to_string()
                             : o.cuda_device ? "CUDA device " + std::to_string(*o.cuda_device)
                                             : std::string("any device");
  return error(errc::invalid_argument, create_call, "no EGL device is " + wanted + ": " + describe_all(s.seen));
}

}  // namespace

headless_context::headless_context() noexcept = default;
headless_context::headless_context(headless_context&&) noexcept = default;
headless_context& headless_context::operator=(headless_context&&) noexcept = default;
headless_context::~headless_context() = default;

result<headless_context> headless_context::create(const headless_options& options) {
  MEMBRIDGE_TRY_ASSIGN(auto egl, detail::load_egl(options.library).with_context(create_call));
  const bool surfaceless = options.allow_software && egl->has_surfaceless_platform();
  if (!egl->can_enumerate_devices() && !surfaceless)
    return error(errc::driver_unavailable, create_call,
                 options.library + " lacks EGL_EXT_device_enumeration (or EGL_EXT_device_base) / EGL_EXT_platform_device (client extensions: " +
                     (egl->client_extensions.empty() ? std::string("none") : egl->client_extensions) + ")");
  const auto previous = detail::save_current(egl->fn);
  const auto wrap = [](std::unique_ptr<detail::egl_state> state, context gl) {
    headless_context out;
    out.egl_ = std::move(state);
    out.context_ = std::move(gl);
    return out;
  };
  // On failure the caller's context (if any) is made current again.
  const auto finish = [&](result<headless_context> r) {
    if (!r) detail::restore_current(egl->fn, previous);
    return r;
  };
  search s{options, egl, {}, false};
  const auto devices = detail::query_devices(*egl);
  for (auto& info : candidates(*egl, devices)) {
    void* native = devices[static_cast<std::size_t>(info.index)];
    if (auto chosen = try_device(s, EGL_PLATFORM_DEVICE_EXT, native, std::move(info), wrap))
      return finish(std::move(*chosen));
  }
  if (surfaceless) {
    egl_device_info info;
    info.index = surfaceless_index;
    if (auto chosen = try_device(s, EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, std::move(info), wrap))
      return finish(std::move(*chosen));
  }
  return finish(no_match(s));
}

result<std::vector<egl_device_info>> headless_context::list_devices(const std::string& library) {
  MEMBRIDGE_TRY_ASSIGN(auto egl, detail::load_egl(library));
  const auto previous = detail::save_current(egl->fn);
  std::vector<egl_device_info> out;
  const auto devices = detail::query_devices(*egl);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    auto info = detail::describe_device(*egl, devices[i], static_cast<int>(i));
    (void)open_on(egl, EGL_PLATFORM_DEVICE_EXT, devices[i], info);  // made and torn down again
    out.push_back(std::move(info));
  }
  if (out.empty() && egl->has_surfaceless_platform()) {
    egl_device_info info;
    info.index = surfaceless_index;
    (void)open_on(egl, EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, info);
    out.push_back(std::move(info));
  }
  if (out.empty() && !egl->can_enumerate_devices())
    return error(errc::driver_unavailable, "gl::headless_context::list_devices",
                 library + " offers neither EGL_EXT_device_enumeration + EGL_EXT_platform_device nor "
                           "EGL_MESA_platform_surfaceless");
  detail::restore_current(egl->fn, previous);
  return out;
}

result<void> headless_context::make_current() const {
  if (!egl_) return error(errc::invalid_argument, "gl::headless_context::make_current", "empty headless_context");
  const auto& fn = egl_->egl->fn;
  if (fn.BindAPI(EGL_OPENGL_API) == EGL_FALSE ||
      fn.MakeCurrent(egl_->display, egl_->surface, egl_->surface, egl_->context) == EGL_FALSE)
    return detail::egl_error(fn, errc::internal, "eglMakeCurrent", "making the headless context current");
  return {};
}

result<void> headless_context::release_current() const {
  if (!egl_) return error(errc::invalid_argument, "gl::headless_context::release_current", "empty headless_context");
  const auto& fn = egl_->egl->fn;
  if (fn.BindAPI(EGL_OPENGL_API) == EGL_FALSE ||
      fn.MakeCurrent(egl_->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT) == EGL_FALSE)
    return detail::egl_error(fn, errc::internal, "eglMakeCurrent", "releasing the headless context");
  return {};
}

get_proc_address_fn headless_context::get_proc_address() const noexcept {
  return egl_ ? gpa_of(*egl_->egl) : nullptr;
}

const egl_device_info& headless_context::device() const noexcept {
  static const egl_device_info none{};
  return egl_ ? egl_->device : none;
}

}  // namespace membridge::gl
