#include "report.hpp"

#include "render_util.hpp"

#include <membridge/config.hpp>
#include <membridge/version.hpp>
#include <membridge/core/units.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

namespace membridge::info {

namespace {

using namespace detail;  // render_util.hpp: json, row, yes_no, error_rows, text_or_null
using detail::json_of;   // an overload set with this file's json_of

// ------------------------------------------------------------------------------- collecting ---

report empty_report(const collect_options& options) {
  report r;
  r.membridge_version = membridge::version();
  r.cuda.library = options.cuda_library;
  return r;
}

// Name, UUID and PCI bus id straight from the driver, for a device cuda::device::open refused:
// people need to know which GPU that was. Best effort; what fails stays empty.
device_identity probe_identity(const cuda::driver& drv, int ordinal) {
  device_identity id;
  const auto& api = drv.api();
  CUdevice handle = 0;
  if (api.cuDeviceGet(&handle, ordinal) != CUDA_SUCCESS) return id;
  char name[256] = {};
  if (api.cuDeviceGetName(name, static_cast<int>(sizeof name - 1), handle) == CUDA_SUCCESS) id.name = name;
  CUuuid raw{};
  if (api.cuDeviceGetUuid(&raw, handle) == CUDA_SUCCESS) id.uuid = cuda::device_uuid::from_native(raw);
  char bus[32] = {};
  if (api.cuDeviceGetPCIBusId(bus, static_cast<int>(sizeof bus - 1), handle) == CUDA_SUCCESS) id.pci_bus_id = bus;
  return id;
}

device_identity identity_of(const cuda::device& dev) {
  return {dev.name(), dev.uuid(), dev.pci_bus_id()};
}

device_properties properties_of(const cuda::device& dev) {
  return {dev.compute_capability(), dev.total_memory(), dev.granularity(), dev.recommended_granularity(),
          dev.capabilities()};
}

// The few words that say why a device cannot be opened: membridge's own sentence when it raised
// the error, else the failing driver call and its code.
std::string describe_failure(const error& e) {
  if (e.source() != error_source::membridge) return std::string(e.call()) + ": " + std::string(e.native_name());
  if (!e.context().empty()) return std::string(e.context());
  return std::string(e.call()) + ": " + std::string(to_string(e.code()));
}

verdict judge(const cuda_device_report& d) {
  if (d.open_error) return {false, describe_failure(*d.open_error)};
  const auto& caps = d.properties->capabilities;
  if (!caps.virtual_memory_management) return {false, "no CUDA virtual memory management (VMM)"};
  if (!caps.posix_fd_handles) return {false, "VMM allocations cannot be exported as POSIX fds"};
  return {true, "VMM and POSIX fd export supported"};
}

// Tries compressible memory the way sharing needs it: one granule exportable as a POSIX fd,
// compression read back, one export. Everything is released before returning.
compression_probe probe_compression(const cuda::device& dev) {
  compression_probe p;
  const cuda::allocation_options options{.handles = cuda::handle_type::posix_fd, .compressible = true};
  auto granularity = cuda::allocation_granularity(dev, options);
  auto memory = granularity ? cuda::vmm_allocation::create(dev, *granularity, options)
                            : result<cuda::vmm_allocation>(std::move(granularity).error());
  if (!memory) {
    p.summary = memory.error().code() == errc::unsupported ? "refused with POSIX fd handles" : "allocation failed";
    p.failure = std::move(memory).error();
    return p;
  }
  p.created = true;
  p.compressed = memory->compressed();
  if (!p.compressed) {
    p.summary = "not granted (the driver gave plain memory)";
    return p;
  }
  auto fd = memory->export_fd();
  p.exports_fd = fd.has_value();
  if (!fd) {
    p.summary = "granted; export as a POSIX fd refused";
    p.failure = std::move(fd).error();
    return p;
  }
  p.summary = "granted; exports as a POSIX fd";
  return p;
}

void describe_opened(const cuda::device& dev, cuda_device_report& d) {
  d.identity = identity_of(dev);
  d.properties = properties_of(dev);
  auto memory = dev.memory();
  if (memory) {
    d.memory = *memory;
  } else {
    d.memory_error = std::move(memory).error();
  }
  if (dev.capabilities().generic_compression) d.compression = probe_compression(dev);
}

cuda_device_report collect_device(const std::shared_ptr<const cuda::driver>& drv, int ordinal) {
  cuda_device_report d;
  d.ordinal = ordinal;
  auto opened = cuda::device::open(drv, ordinal);
  if (opened) {
    describe_opened(*opened, d);
  } else {
    d.identity = probe_identity(*drv, ordinal);
    d.open_error = std::move(opened).error();
  }
  d.usability = judge(d);
  return d;  // the device (and its primary-context retain) is released here
}

std::vector<int> ordinals_to_list(int count, const collect_options& options) {
  if (options.device) return {*options.device};
  std::vector<int> ordinals;
  for (int i = 0; i < count; ++i) ordinals.push_back(i);
  return ordinals;
}

// ---------------------------------------------------------------------------------- text ---

std::string compute_capability_text(const std::array<int, 2>& cc) {
  return std::to_string(cc[0]) + "." + std::to_string(cc[1]);
}

void identity_rows(std::string& out, const device_identity& id) {
  row(out, "  ", "name", id.name.empty() ? "(unknown)" : id.name);
  row(out, "  ", "UUID", id.uuid ? id.uuid->to_string() : "(unknown)");
  row(out, "  ", "PCI bus id", id.pci_bus_id.empty() ? "(unknown)" : id.pci_bus_id);
}

// A capability: its JSON key, its text label and the flag (one list for the text and the JSON).
struct capability_field {
  const char* key;
  const char* label;
  bool cuda::device_capabilities::*member;
};

using caps = cuda::device_capabilities;
constexpr std::array<capability_field, 8> capability_fields{{
    {"virtual_memory_management", "virtual memory (VMM)", &caps::virtual_memory_management},
    {"posix_fd_handles", "POSIX fd handles", &caps::posix_fd_handles},
    {"win32_handles", "Win32 handles", &caps::win32_handles},
    {"fabric_handles", "fabric handles", &caps::fabric_handles},
    {"gpu_direct_rdma_with_vmm", "GPUDirect RDMA with VMM", &caps::gpu_direct_rdma_with_vmm},
    {"generic_compression", "generic compression", &caps::generic_compression},
    {"timeline_semaphore_interop", "timeline semaphore interop", &caps::timeline_semaphore_interop},
    {"unified_addressing", "unified addressing", &caps::unified_addressing},
}};

void capability_rows(std::string& out, const cuda::device_capabilities& c) {
  out += "  capabilities:\n";
  for (const auto& f : capability_fields) row(out, "    ", f.label, yes_no(c.*f.member));
}

void memory_row(std::string& out, const cuda_device_report& d) {
  if (d.memory) row(out, "  ", "free memory", format_bytes(d.memory->free_bytes));
  if (d.memory_error) {
    row(out, "  ", "free memory", "(unknown)");
    error_rows(out, "  ", "free memory error", *d.memory_error);
  }
}

void property_rows(std::string& out, const cuda_device_report& d) {
  const auto& p = *d.properties;
  row(out, "  ", "compute capability", compute_capability_text(p.compute_capability));
  row(out, "  ", "total memory", format_bytes(p.total_memory_bytes));
  memory_row(out, d);
  row(out, "  ", "granularity",
      format_bytes(p.granularity_bytes) + " (recommended " + format_bytes(p.recommended_granularity_bytes) + ")");
  capability_rows(out, p.capabilities);
  if (d.compression) {
    row(out, "  ", "compressible memory", d.compression->summary);
    if (d.compression->failure) error_rows(out, "  ", "compressible memory error", *d.compression->failure);
  }
}

void device_section(std::string& out, const cuda_device_report& d) {
  out += "\nCUDA device " + std::to_string(d.ordinal) + "\n";
  identity_rows(out, d.identity);
  if (d.properties) property_rows(out, d);
  if (d.open_error) error_rows(out, "  ", "error", *d.open_error);
  row(out, "  ", "usable by membridge", yes_no(d.usability.usable) + " (" + d.usability.reason + ")");
}

// "CUDA peers": one row per ordered pair (from -> to), or why there are none.
void peer_section(std::string& out, const cuda_report& c) {
  if (!c.available) return;
  out += "\nCUDA peers (GPU -> memory of GPU)\n";
  if (c.peers_error) {
    error_rows(out, "  ", "error", *c.peers_error);
    return;
  }
  if (c.peers.empty()) {
    row(out, "  ", "peers", "none (one GPU)");
    return;
  }
  for (const auto& p : c.peers)
    row(out, "  ", std::to_string(p.from) + " -> " + std::to_string(p.to),
        p.access ? "access yes, native atomics " + yes_no(p.native_atomics) + ", CUDA arrays " +
                       yes_no(p.array_access) + ", performance rank " + std::to_string(p.performance_rank)
                 : std::string("no access"));
}

void cuda_section(std::string& out, const cuda_report& c) {
  out += "\nCUDA\n";
  row(out, "  ", "available", yes_no(c.available));
  row(out, "  ", "library", c.library.empty() ? "(a caller-supplied function table)" : c.library);
  if (c.driver_version)
    row(out, "  ", "driver version",
        format_cuda_version(*c.driver_version) + " (" + std::to_string(*c.driver_version) + ")");
  if (c.device_count) row(out, "  ", "devices", std::to_string(*c.device_count));
  if (c.failure) error_rows(out, "  ", "error", *c.failure);
  for (const auto& d : c.devices) device_section(out, d);
  peer_section(out, c);
}

// One line per listed CUDA device that Vulkan was judged for: "  CUDA device 0: Vulkan interop: ready (...)".
std::string interop_lines(const cuda_report& c) {
  std::string out;
  for (const auto& d : c.devices) {
    if (!d.vulkan_interop) continue;
    out += "  CUDA device " + std::to_string(d.ordinal) + ": Vulkan interop: " +
           (d.vulkan_interop->ready ? "ready" : "not ready") + " (" + d.vulkan_interop->reason + ")\n";
  }
  return out;
}

std::string summary(const cuda_report& c) {
  if (!c.available) return "CUDA is unavailable, so membridge cannot run here.";
  std::size_t usable = 0;
  for (const auto& d : c.devices) usable += d.usability.usable ? 1 : 0;
  return std::to_string(usable) + " of " + std::to_string(c.devices.size()) + " listed CUDA device" +
         (c.devices.size() == 1 ? "" : "s") + " usable by membridge.";
}

// ---------------------------------------------------------------------------------- JSON ---

template <class T>
json or_null(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

json json_of(const cuda::device_capabilities& c) {
  json j = json::object();
  for (const auto& f : capability_fields) j[f.key] = c.*f.member;
  return j;
}

json json_of(const cuda::peer_link& p) {
  using t = cuda::peer_link;
  return fields_json(p, json_field{"from", &t::from}, json_field{"to", &t::to}, json_field{"access", &t::access},
                     json_field{"native_atomics", &t::native_atomics},
                     json_field{"cuda_array_access", &t::array_access},
                     json_field{"performance_rank", &t::performance_rank});
}

void identity_fields(json& j, const device_identity& id) {
  j["name"] = text_or_null(id.name);
  j["uuid"] = id.uuid ? json(id.uuid->to_string()) : json(nullptr);
  j["pci_bus_id"] = text_or_null(id.pci_bus_id);
}

void property_fields(json& j, const cuda_device_report& d) {
  const auto& p = d.properties;
  j["compute_capability"] = p ? json(compute_capability_text(p->compute_capability)) : json(nullptr);
  j["total_memory_bytes"] = p ? json(p->total_memory_bytes) : json(nullptr);
  j["free_memory_bytes"] = d.memory ? json(d.memory->free_bytes) : json(nullptr);
  j["free_memory_error"] = json_of(d.memory_error);
  j["granularity_bytes"] = p ? json(p->granularity_bytes) : json(nullptr);
  j["recommended_granularity_bytes"] = p ? json(p->recommended_granularity_bytes) : json(nullptr);
  j["capabilities"] = p ? json_of(p->capabilities) : json(nullptr);
  if (d.compression) {
    json c = json::object();
    c["created"] = d.compression->created;
    c["compressed"] = d.compression->compressed;
    c["exports_fd"] = d.compression->exports_fd;
    c["summary"] = d.compression->summary;
    c["error"] = json_of(d.compression->failure);
    j["compressible_memory"] = c;
  } else {
    j["compressible_memory"] = nullptr;
  }
}

json json_of(const std::optional<interop_verdict>& v) {
  if (!v) return nullptr;
  json j = json::object();
  j["ready"] = v->ready;
  j["vulkan_device"] = or_null(v->vulkan_device);
  j["reason"] = v->reason;
  return j;
}

json json_of(const cuda_device_report& d) {
  json j = json::object();
  j["ordinal"] = d.ordinal;
  identity_fields(j, d.identity);
  property_fields(j, d);
  j["usable"] = d.usability.usable;
  j["usable_reason"] = d.usability.reason;
  j["error"] = json_of(d.open_error);
  j["vulkan_interop"] = json_of(d.vulkan_interop);
  return j;
}

json json_of(const cuda_report& c) {
  json j = json::object();
  j["available"] = c.available;
  j["error"] = json_of(c.failure);
  j["driver_version"] = or_null(c.driver_version);
  j["library"] = c.library;
  j["device_count"] = or_null(c.device_count);
  j["devices"] = json::array();
  for (const auto& d : c.devices) j["devices"].push_back(json_of(d));
  j["peers"] = json::array();
  for (const auto& p : c.peers) j["peers"].push_back(json_of(p));
  j["peers_error"] = json_of(c.peers_error);
  return j;
}

}  // namespace

// ------------------------------------------------------------------------------ public API ---

report collect(const collect_options& options) {
  auto loaded = cuda::driver::load(options.cuda_library);
  report r = loaded ? collect(*loaded, options) : collect_unavailable(std::move(loaded).error(), options);
#if MEMBRIDGE_HAS_VULKAN
  vulkan_probe_options vulkan_options;
  vulkan_options.library = options.vulkan_library;
  r.vulkan = probe_vulkan(vulkan_options);
  link_vulkan(r);
#endif
  return r;
}

report collect(const std::shared_ptr<const cuda::driver>& drv, const collect_options& options) {
  report r = empty_report(options);
  r.cuda.library = drv->library_name();
  r.cuda.driver_version = drv->version();
  auto count = cuda::device::count(drv);
  if (!count) {
    r.cuda.failure = std::move(count).error();
    return r;
  }
  r.cuda.available = true;
  r.cuda.device_count = *count;
  for (const int ordinal : ordinals_to_list(*count, options)) r.cuda.devices.push_back(collect_device(drv, ordinal));
  if (auto peers = cuda::peer_matrix(*drv)) r.cuda.peers = std::move(peers).value();
  else r.cuda.peers_error = std::move(peers).error();
  return r;
}

report collect_unavailable(error load_error, const collect_options& options) {
  report r = empty_report(options);
  r.cuda.failure = std::move(load_error);
  return r;
}

exit_status exit_status_of(const report& r) noexcept {
  for (const auto& d : r.cuda.devices)
    if (d.usability.usable) return exit_status::usable;
  return exit_status::not_usable;
}

std::string format_cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string render_text(const report& r) {
  std::string out = "membridge " + std::string(r.membridge_version.string) + "\n";
  cuda_section(out, r.cuda);
  if (r.vulkan) append_vulkan_text(out, *r.vulkan);
  if (r.gl) append_gl_text(out, *r.gl);
  out += "\nSummary: " + summary(r.cuda) + "\n";
  out += interop_lines(r.cuda);
  if (r.gl) out += gl_interop_lines(*r.gl);
  return out;
}

json make_json(const report& r) {
  json j = json::object();
  j["membridge"] = json::object();
  j["membridge"]["version"] = std::string(r.membridge_version.string);
  j["membridge"]["major"] = r.membridge_version.major;
  j["membridge"]["minor"] = r.membridge_version.minor;
  j["membridge"]["patch"] = r.membridge_version.patch;
  j["cuda"] = json_of(r.cuda);
  j["vulkan"] = r.vulkan ? make_vulkan_json(*r.vulkan) : json(nullptr);
  if (r.gl) j["gl"] = make_gl_json(*r.gl);
  return j;
}

std::string render_json(const report& r) {
  // Names and driver messages are not guaranteed UTF-8: replace bad bytes instead of throwing.
  return make_json(r).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace membridge::info
