// membridge-info's report: what the tool found on this machine, collected once and rendered as text
// for people or JSON for scripts. Collecting never fails: every failure becomes part of the report.
#pragma once

#include "gl_report.hpp"
#include "vulkan_report.hpp"

#include <membridge/core/error.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/peer.hpp>
#include <membridge/cuda/driver.hpp>
#include <membridge/version.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace membridge::info {

/// The process exit status of membridge-info.
enum class exit_status : int {
  usable = 0,       ///< At least one listed device is usable by membridge.
  usage_error = 1,  ///< The command line was wrong (CLI11 printed why).
  not_usable = 2,   ///< CUDA is unavailable or no listed device is usable (the report is still printed).
};

/// What to collect.
struct collect_options {
  std::string cuda_library = "libcuda.so.1";  ///< The driver library collect(options) loads.
  std::optional<int> device;                  ///< Only this CUDA ordinal; every device when empty.
  std::string vulkan_library = "libvulkan.so.1";  ///< The Vulkan loader collect(options) loads.
};

/// Who a device is; fields the driver could not report stay empty.
struct device_identity {
  std::string name;                        ///< Marketing name, e.g. "NVIDIA H100 80GB HBM3".
  std::optional<cuda::device_uuid> uuid;   ///< The UUID Vulkan and GL report for the same GPU.
  std::string pci_bus_id;                  ///< e.g. "0000:01:00.0".
};

/// What an opened device reports (cuda::device's accessors).
struct device_properties {
  std::array<int, 2> compute_capability{};       ///< {major, minor}, e.g. {9, 0}.
  std::size_t total_memory_bytes = 0;            ///< Device memory in bytes.
  std::size_t granularity_bytes = 0;             ///< Minimum VMM granularity for POSIX-fd allocations.
  std::size_t recommended_granularity_bytes = 0; ///< The granularity the driver recommends.
  cuda::device_capabilities capabilities;        ///< VMM and handle capabilities.
};

/// Whether membridge can use a device, and why (or why not), in a few words.
struct verdict {
  bool usable = false;  ///< True when VMM and POSIX-fd export are both supported.
  std::string reason;   ///< e.g. "VMM and POSIX fd export supported".
};

/// Whether membridge's Vulkan bridge can work with a CUDA device: a Vulkan device with the same UUID
/// that imports opaque-fd memory and exports timeline semaphores as opaque fds.
struct interop_verdict {
  bool ready = false;                          ///< Everything the bridge needs is there.
  std::optional<std::uint32_t> vulkan_device;  ///< The Vulkan device with the same UUID that was judged.
  std::string reason;                          ///< e.g. "Vulkan device 0 (NVIDIA H100) lacks VK_KHR_external_semaphore_fd".
};

/// What the driver does with compressible VMM memory, tried on one granule with a POSIX-fd handle
/// type (what sharing needs): created, compression granted (read back), exported as an fd.
struct compression_probe {
  bool created = false;          ///< cuMemCreate accepted compressible memory exportable as a POSIX fd.
  bool compressed = false;       ///< The allocation read back compressed (the driver may grant plain memory).
  bool exports_fd = false;       ///< cuMemExportToShareableHandle gave an fd for it.
  std::optional<error> failure;  ///< The step that failed (create, read back or export), if any.
  std::string summary;           ///< One line, e.g. "granted; exports as a POSIX fd".
};

/// Everything membridge-info found about one CUDA device.
struct cuda_device_report {
  int ordinal = 0;                                ///< CUDA's ordinal.
  device_identity identity;                       ///< Read even when the device fails to open.
  std::optional<device_properties> properties;    ///< Set when cuda::device::open succeeded.
  std::optional<cuda::memory_info> memory;        ///< Free/total memory now; empty if it could not be read.
  std::optional<error> memory_error;              ///< Why memory is empty (device opened, cuMemGetInfo failed).
  std::optional<error> open_error;                ///< Why cuda::device::open failed.
  std::optional<compression_probe> compression;   ///< Set when the device reports generic compression.
  verdict usability;                              ///< The one-line answer for this device.
  std::optional<interop_verdict> vulkan_interop;  ///< Set by link_vulkan (when Vulkan was probed).
};

/// The CUDA section: the driver and the devices it sees.
struct cuda_report {
  bool available = false;                   ///< The driver loaded and counted its devices.
  std::optional<error> failure;             ///< Why the driver could not be loaded or asked for devices.
  std::string library;                      ///< The library loaded (or tried), e.g. "libcuda.so.1".
  std::optional<int> driver_version;        ///< cuDriverGetVersion, e.g. 13000; empty when not loaded.
  std::optional<int> device_count;          ///< Devices the driver sees; empty when unknown.
  std::vector<cuda_device_report> devices;  ///< The listed devices (all, or the one asked for).
  std::vector<cuda::peer_link> peers;       ///< Every ordered pair of the driver's devices (empty with one).
  std::optional<error> peers_error;         ///< Why the peer matrix could not be read.
};

/// The whole report.
struct report {
  version_info membridge_version;       ///< membridge::version(): the library this tool linked.
  cuda_report cuda;                     ///< The CUDA driver and devices.
  std::optional<vulkan_report> vulkan;  ///< The Vulkan loader and devices; empty when not probed.
  std::optional<gl_report> gl;          ///< EGL devices and GL per CUDA device; empty when not probed (probe_gl).
};

/// Loads the driver named by `options.cuda_library` and collects the CUDA section from it (or reports
/// why it could not be loaded), then probes Vulkan through `options.vulkan_library` (in a build with
/// the vulkan module) and links the two (link_vulkan).
[[nodiscard]] report collect(const collect_options& options);

/// Collects the CUDA section through an already loaded (or scripted) driver; `drv` must not be null.
/// Vulkan is not probed (`vulkan` stays empty). Every device opened here is closed again before returning.
[[nodiscard]] report collect(const std::shared_ptr<const cuda::driver>& drv, const collect_options& options);

/// Matches Vulkan devices to listed CUDA devices by UUID: sets each Vulkan device's `cuda_ordinal`
/// and each CUDA device's `vulkan_interop` verdict. Does nothing when `r.vulkan` is empty.
void link_vulkan(report& r);

/// Loads libEGL, lists the EGL devices (a context made and destroyed on each) and, for every CUDA
/// device of `r`, makes a headless GL context on the GPU with its UUID, reads what it offers and
/// destroys it again; then judges each (judge_gl_interop). Leaves no context current.
/// Only in builds with the gl module (MEMBRIDGE_HAS_GL); store the result in `r.gl`.
[[nodiscard]] gl_report probe_gl(const report& r, const gl_probe_options& options);

/// The report of a machine where the driver failed to load with `load_error`.
[[nodiscard]] report collect_unavailable(error load_error, const collect_options& options);

/// 0 when a listed device is usable, else 2 (exit_status::not_usable).
[[nodiscard]] exit_status exit_status_of(const report& r) noexcept;

/// A CUDA version number as people write it: 13000 -> "13.0", 12080 -> "12.8".
[[nodiscard]] std::string format_cuda_version(int version);

/// The verdict on Vulkan interop for CUDA device `d`, given what Vulkan found.
[[nodiscard]] interop_verdict judge_vulkan_interop(const cuda_device_report& d, const vulkan_report& v);

/// The report as aligned, readable rows (ends with a newline).
[[nodiscard]] std::string render_text(const report& r);

/// The report as JSON, in the schema README.md documents (keys in schema order).
[[nodiscard]] nlohmann::ordered_json make_json(const report& r);

/// make_json(r), indented by two spaces, with a trailing newline.
[[nodiscard]] std::string render_json(const report& r);

}  // namespace membridge::info
