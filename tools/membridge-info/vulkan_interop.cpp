// Linking the Vulkan section to the CUDA one: which Vulkan device is which CUDA device (equal UUIDs),
// and whether membridge's Vulkan bridge can work on each CUDA device.
#include "report.hpp"

#include <string>
#include <utility>
#include <vector>

namespace membridge::info {

namespace {

std::string label_of(const vulkan_device_report& v) {
  return "Vulkan device " + std::to_string(v.index) + " (" + v.name + ")";
}

// What the Vulkan device lacks for the bridge: fd memory import and timeline semaphores exported as fds.
std::vector<std::string> vulkan_missing(const vulkan_device_report& v) {
  std::vector<std::string> missing;
  if (!v.external_memory.fd_extension) missing.emplace_back("VK_KHR_external_memory_fd");
  else if (!v.external_memory.opaque_fd_buffer_import) missing.emplace_back("opaque-fd buffer import");
  if (!v.external_semaphore.fd_extension) missing.emplace_back("VK_KHR_external_semaphore_fd");
  if (!v.timeline_semaphore) missing.emplace_back("the timelineSemaphore feature");
  else if (v.external_semaphore.fd_extension && !v.external_semaphore.timeline_opaque_fd_export)
    missing.emplace_back("timeline semaphore export as opaque fd");
  return missing;
}

// CUDA's half: it must import the timeline semaphores Vulkan exports (unknown when the device did not open).
bool cuda_lacks_timeline_interop(const cuda_device_report& d) {
  return d.properties && !d.properties->capabilities.timeline_semaphore_interop;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// "vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER", or membridge's own words.
std::string describe(const error& e) {
  if (!e.native_name().empty()) return std::string(e.call()) + ": " + std::string(e.native_name());
  if (!e.context().empty()) return std::string(e.context());
  return std::string(e.call()) + ": " + std::string(to_string(e.code()));
}

// The Vulkan device with this UUID that has everything, else the first one with this UUID.
const vulkan_device_report* same_gpu(const vulkan_report& v, const device_uuid& uuid) {
  const vulkan_device_report* first = nullptr;
  for (const auto& vd : v.devices) {
    if (vd.uuid != uuid) continue;
    if (vulkan_missing(vd).empty()) return &vd;
    if (first == nullptr) first = &vd;
  }
  return first;
}

std::string no_match_reason(const vulkan_report& v) {
  if (v.devices.empty()) return "no Vulkan device has this UUID (Vulkan lists no device)";
  std::vector<std::string> names;
  for (const auto& vd : v.devices) names.push_back(vd.name);
  return "no Vulkan device has this UUID (Vulkan lists: " + joined(names) + ")";
}

interop_verdict judge_match(const cuda_device_report& d, const vulkan_device_report& vd) {
  interop_verdict verdict;
  verdict.vulkan_device = vd.index;
  std::vector<std::string> problems;
  if (const auto missing = vulkan_missing(vd); !missing.empty()) problems.push_back(label_of(vd) + " lacks " + joined(missing));
  if (cuda_lacks_timeline_interop(d)) problems.emplace_back("the CUDA device lacks timeline semaphore interop");
  verdict.ready = problems.empty();
  if (verdict.ready) {
    verdict.reason = label_of(vd) + ": opaque-fd memory import and timeline semaphore export" +
                     (vd.external_memory.dedicated_only ? ", dedicated allocations only" : "");
  } else {
    for (const auto& p : problems) verdict.reason += (verdict.reason.empty() ? "" : "; ") + p;
  }
  return verdict;
}

std::optional<int> cuda_ordinal_of(const cuda_report& c, const device_uuid& uuid) {
  for (const auto& d : c.devices)
    if (d.identity.uuid && *d.identity.uuid == uuid) return d.ordinal;
  return std::nullopt;
}

}  // namespace

interop_verdict judge_vulkan_interop(const cuda_device_report& d, const vulkan_report& v) {
  if (!v.loader_found) return {false, std::nullopt, "the Vulkan loader " + v.library + " could not be loaded"};
  if (v.failure) return {false, std::nullopt, "Vulkan is unavailable (" + describe(*v.failure) + ")"};
  if (!d.identity.uuid) return {false, std::nullopt, "the CUDA device's UUID is unknown"};
  const vulkan_device_report* match = same_gpu(v, *d.identity.uuid);
  if (match == nullptr) return {false, std::nullopt, no_match_reason(v)};
  return judge_match(d, *match);
}

void link_vulkan(report& r) {
  if (!r.vulkan) return;
  for (auto& vd : r.vulkan->devices) vd.cuda_ordinal = cuda_ordinal_of(r.cuda, vd.uuid);
  for (auto& d : r.cuda.devices) d.vulkan_interop = judge_vulkan_interop(d, *r.vulkan);
}

}  // namespace membridge::info
