// membridge-info's OpenGL section: whether libEGL is there, the EGL devices it lists, and for every
// listed CUDA device whether a headless GL context can be made on that GPU (matched by UUID) and what
// it offers membridge (memory and semaphore fds, timeline semaphores, sparse growth), with a verdict.
// Probing never fails: every failure becomes part of the report. No GL header here.
#pragma once

#include <membridge/core/device_uuid.hpp>
#include <membridge/core/error.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace membridge::info {

/// What probe_gl() loads.
struct gl_probe_options {
  std::string library = "libEGL.so.1";  ///< The EGL library to dlopen.
};

/// One EGL device as gl::headless_context::list_devices saw it.
struct gl_egl_device {
  int index = 0;                    ///< Position in eglQueryDevicesEXT's list (-1: Mesa's surfaceless platform).
  bool software = false;            ///< EGL_MESA_device_software (llvmpipe).
  std::optional<int> cuda_device;   ///< EGL_CUDA_DEVICE_NV, when the device reports one.
  std::string drm_device;           ///< The DRM node (often empty on a VM).
  std::string renderer;             ///< GL_RENDERER of a context made on it (empty when none could be made).
  std::optional<device_uuid> uuid;  ///< GL_DEVICE_UUID_EXT of that context.
  std::string error;                ///< Why no GL 4.5 context could be made on it.
};

/// What a GL context on one GPU offers membridge.
struct gl_context_report {
  std::string renderer;             ///< GL_RENDERER, e.g. "NVIDIA H100 80GB HBM3/PCIe/SSE2".
  std::string version;              ///< GL_VERSION, e.g. "4.6.0 NVIDIA 580.65.06".
  bool memory_object_fd = false;    ///< GL_EXT_memory_object + GL_EXT_memory_object_fd: VMM chunks import.
  bool semaphore_fd = false;        ///< GL_EXT_semaphore + GL_EXT_semaphore_fd: GPU-side ordering with CUDA.
  bool timeline_semaphore = false;  ///< GL_NV_timeline_semaphore.
  bool sparse_growth = false;       ///< GL_ARB_sparse_buffer + GL_NV_memory_object_sparse: growth keeps one buffer.
  std::string sparse_growth_blocked;  ///< Why sparse growth is not used though advertised (empty otherwise).
};

/// Whether membridge's GL bridge can work with a CUDA device: a GL context on the same GPU that
/// imports memory fds and semaphore fds.
struct gl_device_report {
  int cuda_ordinal = 0;                      ///< The CUDA device.
  std::optional<device_uuid> uuid;           ///< Its UUID (what the EGL device is matched by).
  std::optional<gl_context_report> context;  ///< Set when a headless context was made on that GPU.
  std::optional<error> failure;              ///< Why no context could be made there.
  bool ready = false;                        ///< judge_gl_interop's answer.
  std::string reason;                        ///< Why (not), in a few words.
};

/// The OpenGL section.
struct gl_report {
  std::string library;                       ///< The EGL library loaded (or tried), e.g. "libEGL.so.1".
  bool egl_found = false;                    ///< The library loaded.
  std::optional<error> failure;              ///< Why EGL devices could not be listed.
  std::vector<gl_egl_device> devices;        ///< Every EGL device, in enumeration order.
  std::vector<gl_device_report> cuda_devices;  ///< One per listed CUDA device, in the CUDA section's order.
};

/// Sets `d.ready` and `d.reason` from what was found for it (`egl_found` and `library` from the section).
void judge_gl_interop(gl_device_report& d, const gl_report& g);

/// Appends the OpenGL section ("OpenGL", one block per EGL device and per CUDA device) as aligned rows.
void append_gl_text(std::string& out, const gl_report& g);

/// One summary line per CUDA device: "  CUDA device 0: GL interop: ready (...)".
[[nodiscard]] std::string gl_interop_lines(const gl_report& g);

/// The OpenGL section as JSON, in the schema README.md documents.
[[nodiscard]] nlohmann::ordered_json make_gl_json(const gl_report& g);

}  // namespace membridge::info
