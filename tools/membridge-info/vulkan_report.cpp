// The Vulkan section as text and JSON, and the formatting of Vulkan versions and memory flags.
#include "vulkan_report.hpp"

#include "render_util.hpp"

#include <membridge/core/units.hpp>

#include <array>
#include <cstdio>
#include <utility>

namespace membridge::info {

namespace {

using namespace detail;  // render_util.hpp: json, row, yes_no, error_rows, text_or_null
using detail::json_of;   // an overload set with this file's json_of

using flag_name = std::pair<std::uint32_t, const char*>;

// VkMemoryPropertyFlagBits (vulkan_core.h; vulkan_probe.cpp checks the values against the header).
constexpr std::array<flag_name, 9> memory_property_names{{
    {0x001U, "DEVICE_LOCAL"},
    {0x002U, "HOST_VISIBLE"},
    {0x004U, "HOST_COHERENT"},
    {0x008U, "HOST_CACHED"},
    {0x010U, "LAZILY_ALLOCATED"},
    {0x020U, "PROTECTED"},
    {0x040U, "DEVICE_COHERENT_AMD"},
    {0x080U, "DEVICE_UNCACHED_AMD"},
    {0x100U, "RDMA_CAPABLE_NV"},
}};

// VkMemoryHeapFlagBits.
constexpr std::array<flag_name, 2> memory_heap_names{{
    {0x1U, "DEVICE_LOCAL"},
    {0x2U, "MULTI_INSTANCE"},
}};

template <std::size_t N>
std::string format_flags(std::uint32_t flags, const std::array<flag_name, N>& names) {
  std::string out;
  for (const auto& [bit, name] : names) {
    if ((flags & bit) == 0) continue;
    out += (out.empty() ? "" : "|") + std::string(name);
    flags &= ~bit;
  }
  if (flags != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%x", flags);
    out += (out.empty() ? "" : "|") + std::string(hex);
  }
  return out;
}

// ---------------------------------------------------------------------------------- text ---

std::string or_unknown(const std::string& text) { return text.empty() ? "(unknown)" : text; }

std::string cuda_match_text(const vulkan_device_report& d) {
  return d.cuda_ordinal ? "CUDA device " + std::to_string(*d.cuda_ordinal) : "no";
}

std::string sparse_text(const vulkan_sparse_binding& s) {
  if (s.supported()) return "yes";
  std::string missing;
  const auto add = [&](bool have, const char* what) {
    if (!have) missing += (missing.empty() ? "" : ", ") + std::string(what);
  };
  add(s.sparse_binding, "sparseBinding");
  add(s.sparse_residency_buffer, "sparseResidencyBuffer");
  add(s.sparse_queue_family, "a SPARSE_BINDING queue family");
  return "no (lacks " + missing + ")";
}

void identity_rows(std::string& out, const vulkan_device_report& d) {
  row(out, "  ", "name", or_unknown(d.name));
  row(out, "  ", "type", or_unknown(d.type));
  row(out, "  ", "driver", or_unknown(d.driver_name));
  row(out, "  ", "driver info", or_unknown(d.driver_info));
  row(out, "  ", "API version", format_vulkan_version(d.api_version));
  row(out, "  ", "UUID", d.uuid.to_string());
  row(out, "  ", "UUID match with CUDA", cuda_match_text(d));
}

void interop_rows(std::string& out, const vulkan_device_report& d) {
  row(out, "  ", "VK_KHR_external_memory_fd", yes_no(d.external_memory.fd_extension));
  row(out, "  ", "opaque-fd buffer import", yes_no(d.external_memory.opaque_fd_buffer_import));
  row(out, "  ", "dedicated allocation only", yes_no(d.external_memory.dedicated_only));
  row(out, "  ", "VK_KHR_external_semaphore_fd", yes_no(d.external_semaphore.fd_extension));
  row(out, "  ", "timeline semaphores", yes_no(d.timeline_semaphore));
  row(out, "  ", "timeline export as opaque fd", yes_no(d.external_semaphore.timeline_opaque_fd_export));
  row(out, "  ", "sparse binding", sparse_text(d.sparse));
}

void memory_rows(std::string& out, const vulkan_device_report& d) {
  for (std::size_t i = 0; i < d.memory_heaps.size(); ++i) {
    const auto& h = d.memory_heaps[i];
    const std::string flags = format_memory_heap_flags(h.flags);
    row(out, "  ", "memory heap " + std::to_string(i), format_bytes(h.size_bytes) + (flags.empty() ? "" : ", " + flags));
  }
  for (std::size_t i = 0; i < d.memory_types.size(); ++i) {
    const auto& t = d.memory_types[i];
    const std::string flags = format_memory_property_flags(t.property_flags);
    row(out, "  ", "memory type " + std::to_string(i),
        "heap " + std::to_string(t.heap_index) + (flags.empty() ? "" : ", " + flags));
  }
}

void device_section(std::string& out, const vulkan_device_report& d) {
  out += "\nVulkan device " + std::to_string(d.index) + "\n";
  identity_rows(out, d);
  interop_rows(out, d);
  memory_rows(out, d);
  if (d.failure) error_rows(out, "  ", "error", *d.failure);
}

// ---------------------------------------------------------------------------------- JSON ---

json json_of(const vulkan_external_memory& m) {
  using t = vulkan_external_memory;
  return fields_json(m, json_field{"fd_extension", &t::fd_extension},
                     json_field{"opaque_fd_buffer_import", &t::opaque_fd_buffer_import},
                     json_field{"dedicated_only", &t::dedicated_only});
}

json json_of(const vulkan_external_semaphore& s) {
  using t = vulkan_external_semaphore;
  return fields_json(s, json_field{"fd_extension", &t::fd_extension},
                     json_field{"timeline_opaque_fd_export", &t::timeline_opaque_fd_export},
                     json_field{"timeline_opaque_fd_import", &t::timeline_opaque_fd_import});
}

json json_of(const vulkan_sparse_binding& s) {
  using t = vulkan_sparse_binding;
  json j = {{"supported", s.supported()}};
  j.update(fields_json(s, json_field{"sparse_binding", &t::sparse_binding},
                       json_field{"sparse_residency_buffer", &t::sparse_residency_buffer},
                       json_field{"sparse_queue_family", &t::sparse_queue_family}));
  return j;
}

json memory_json(const vulkan_device_report& d) {
  json j = json::object();
  j["memory_heaps"] = json::array();
  for (std::size_t i = 0; i < d.memory_heaps.size(); ++i)
    j["memory_heaps"].push_back(json{{"index", i},
                                     {"size_bytes", d.memory_heaps[i].size_bytes},
                                     {"flags", format_memory_heap_flags(d.memory_heaps[i].flags)}});
  j["memory_types"] = json::array();
  for (std::size_t i = 0; i < d.memory_types.size(); ++i)
    j["memory_types"].push_back(json{{"index", i},
                                     {"heap_index", d.memory_types[i].heap_index},
                                     {"flags", format_memory_property_flags(d.memory_types[i].property_flags)}});
  return j;
}

json json_of(const vulkan_device_report& d) {
  json j = json::object();
  j["index"] = d.index;
  j["name"] = d.name;
  j["type"] = d.type;
  j["driver_name"] = text_or_null(d.driver_name);
  j["driver_info"] = text_or_null(d.driver_info);
  j["api_version"] = format_vulkan_version(d.api_version);
  j["uuid"] = d.uuid.to_string();
  j["cuda_ordinal"] = d.cuda_ordinal ? json(*d.cuda_ordinal) : json(nullptr);
  j["external_memory"] = json_of(d.external_memory);
  j["external_semaphore"] = json_of(d.external_semaphore);
  j["timeline_semaphore"] = d.timeline_semaphore;
  j["sparse_binding"] = json_of(d.sparse);
  j.update(memory_json(d));
  j["error"] = json_of(d.failure);
  return j;
}

}  // namespace

std::string format_vulkan_version(std::uint32_t version) {
  // VK_API_VERSION_MAJOR/MINOR/PATCH: 7, 10 and 12 bits above a 3-bit variant.
  return std::to_string((version >> 22U) & 0x7FU) + "." + std::to_string((version >> 12U) & 0x3FFU) + "." +
         std::to_string(version & 0xFFFU);
}

std::string format_memory_property_flags(std::uint32_t flags) { return format_flags(flags, memory_property_names); }

std::string format_memory_heap_flags(std::uint32_t flags) { return format_flags(flags, memory_heap_names); }

void append_vulkan_text(std::string& out, const vulkan_report& v) {
  out += "\nVulkan\n";
  row(out, "  ", "loader found", yes_no(v.loader_found));
  row(out, "  ", "library", v.library);
  if (v.loader_version) row(out, "  ", "loader version", format_vulkan_version(*v.loader_version));
  if (v.loader_found && !v.failure) row(out, "  ", "devices", std::to_string(v.devices.size()));
  if (v.failure) error_rows(out, "  ", "error", *v.failure);
  for (const auto& d : v.devices) device_section(out, d);
}

json make_vulkan_json(const vulkan_report& v) {
  json j = json::object();
  j["loader_found"] = v.loader_found;
  j["library"] = v.library;
  j["loader_version"] = v.loader_version ? json(format_vulkan_version(*v.loader_version)) : json(nullptr);
  j["error"] = json_of(v.failure);
  j["devices"] = json::array();
  for (const auto& d : v.devices) j["devices"].push_back(json_of(d));
  return j;
}

}  // namespace membridge::info
