// The OpenGL section as text and JSON, the GL interop verdicts, and the report rendered with it.
#include "gl_report.hpp"

#include "render_util.hpp"

#include <utility>

namespace membridge::info {

namespace {

using namespace detail;  // render_util.hpp: json, row, yes_no, error_rows, text_or_null
using detail::json_of;   // an overload set with this file's json_of

std::string uuid_text(const std::optional<device_uuid>& uuid) { return uuid ? uuid->to_string() : "(unknown)"; }

json uuid_json(const std::optional<device_uuid>& uuid) { return uuid ? json(uuid->to_string()) : json(nullptr); }

std::string listed_renderers(const gl_report& g) {
  std::string out;
  for (const auto& d : g.devices)
    if (!d.renderer.empty()) out += (out.empty() ? "" : ", ") + d.renderer;
  return out.empty() ? "EGL lists no device with a GL context" : "EGL lists: " + out;
}

std::string failure_text(const error& e, const gl_report& g) {
  if (e.code() == errc::invalid_argument) return "no EGL device is on this GPU (" + listed_renderers(g) + ")";
  return "no GL 4.5 context on this GPU (" + std::string(to_string(e.code())) + " in " + std::string(e.call()) + ")";
}

std::string lacking(const gl_context_report& c) {
  std::string missing;
  if (!c.memory_object_fd) missing += "GL_EXT_memory_object_fd";
  if (!c.semaphore_fd) missing += (missing.empty() ? "" : ", ") + std::string("GL_EXT_semaphore_fd");
  return missing;
}

std::string ready_text(const gl_context_report& c) {
  return c.renderer + ": memory and semaphore fd import" + (c.timeline_semaphore ? ", timeline semaphores" : "") +
         (c.sparse_growth ? ", sparse growth" : ", growth by re-import");
}

// ---------------------------------------------------------------------------------- text ---

void egl_device_section(std::string& out, const gl_egl_device& d) {
  out += d.index < 0 ? std::string("\nEGL surfaceless platform (Mesa)\n") : "\nEGL device " + std::to_string(d.index) + "\n";
  row(out, "  ", "renderer", d.renderer.empty() ? "(no GL 4.5 context)" : d.renderer);
  row(out, "  ", "UUID", uuid_text(d.uuid));
  row(out, "  ", "CUDA device", d.cuda_device ? std::to_string(*d.cuda_device) : "(not reported)");
  if (!d.drm_device.empty()) row(out, "  ", "DRM device", d.drm_device);
  row(out, "  ", "software renderer", yes_no(d.software));
  if (!d.error.empty()) row(out, "  ", "error", d.error);
}

void context_rows(std::string& out, const gl_context_report& c) {
  row(out, "  ", "renderer", c.renderer);
  row(out, "  ", "version", c.version);
  row(out, "  ", "GL_EXT_memory_object_fd", yes_no(c.memory_object_fd));
  row(out, "  ", "GL_EXT_semaphore_fd", yes_no(c.semaphore_fd));
  row(out, "  ", "GL_NV_timeline_semaphore", yes_no(c.timeline_semaphore));
  row(out, "  ", "sparse growth",
      c.sparse_growth                     ? std::string("yes")
      : c.sparse_growth_blocked.empty()   ? std::string("no (growth re-imports per chunk)")
                                          : "not used (growth re-imports per chunk): " + c.sparse_growth_blocked);
}

void cuda_device_section(std::string& out, const gl_device_report& d) {
  out += "\nGL on CUDA device " + std::to_string(d.cuda_ordinal) + "\n";
  row(out, "  ", "UUID", uuid_text(d.uuid));
  row(out, "  ", "headless context", yes_no(d.context.has_value()));
  if (d.context) context_rows(out, *d.context);
  if (d.failure) error_rows(out, "  ", "error", *d.failure);
  row(out, "  ", "GL interop", std::string(d.ready ? "ready" : "not ready") + " (" + d.reason + ")");
}

// ---------------------------------------------------------------------------------- JSON ---

json json_of(const gl_egl_device& d) {
  json j = json::object();
  j["index"] = d.index;
  j["software"] = d.software;
  j["cuda_device"] = d.cuda_device ? json(*d.cuda_device) : json(nullptr);
  j["drm_device"] = text_or_null(d.drm_device);
  j["renderer"] = text_or_null(d.renderer);
  j["uuid"] = uuid_json(d.uuid);
  j["error"] = text_or_null(d.error);
  return j;
}

json json_of(const gl_context_report& c) {
  using t = gl_context_report;
  return fields_json(c, json_field{"renderer", &t::renderer}, json_field{"version", &t::version},
                     json_field{"memory_object_fd", &t::memory_object_fd}, json_field{"semaphore_fd", &t::semaphore_fd},
                     json_field{"timeline_semaphore", &t::timeline_semaphore},
                     json_field{"sparse_growth", &t::sparse_growth},
                     json_field{"sparse_growth_blocked", &t::sparse_growth_blocked});
}

json json_of(const gl_device_report& d) {
  json j = json::object();
  j["cuda_ordinal"] = d.cuda_ordinal;
  j["uuid"] = uuid_json(d.uuid);
  j["context"] = d.context ? json_of(*d.context) : json(nullptr);
  j["error"] = json_of(d.failure);
  j["ready"] = d.ready;
  j["reason"] = d.reason;
  return j;
}

}  // namespace

void judge_gl_interop(gl_device_report& d, const gl_report& g) {
  d.ready = false;
  if (!g.egl_found) {
    d.reason = "the EGL library " + g.library + " could not be loaded";
  } else if (!d.uuid) {
    d.reason = "the CUDA device reports no UUID to find its GL device by";
  } else if (d.failure) {
    d.reason = failure_text(*d.failure, g);
  } else if (!d.context) {
    d.reason = "no GL context was made on this GPU";
  } else if (const std::string missing = lacking(*d.context); !missing.empty()) {
    d.reason = d.context->renderer + " lacks " + missing;
  } else {
    d.ready = true;
    d.reason = ready_text(*d.context);
  }
}

void append_gl_text(std::string& out, const gl_report& g) {
  out += "\nOpenGL (EGL)\n";
  row(out, "  ", "EGL found", yes_no(g.egl_found));
  row(out, "  ", "library", g.library);
  if (g.egl_found && !g.failure) row(out, "  ", "EGL devices", std::to_string(g.devices.size()));
  if (g.failure) error_rows(out, "  ", "error", *g.failure);
  for (const auto& d : g.devices) egl_device_section(out, d);
  for (const auto& d : g.cuda_devices) cuda_device_section(out, d);
}

std::string gl_interop_lines(const gl_report& g) {
  std::string out;
  for (const auto& d : g.cuda_devices)
    out += "  CUDA device " + std::to_string(d.cuda_ordinal) + ": GL interop: " + (d.ready ? "ready" : "not ready") +
           " (" + d.reason + ")\n";
  return out;
}

json make_gl_json(const gl_report& g) {
  json j = json::object();
  j["egl_found"] = g.egl_found;
  j["library"] = g.library;
  j["error"] = json_of(g.failure);
  j["devices"] = json::array();
  for (const auto& d : g.devices) j["devices"].push_back(json_of(d));
  j["cuda_devices"] = json::array();
  for (const auto& d : g.cuda_devices) j["cuda_devices"].push_back(json_of(d));
  return j;
}

}  // namespace membridge::info
