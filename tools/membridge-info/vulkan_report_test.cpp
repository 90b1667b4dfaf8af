// membridge-info's Vulkan section without a Vulkan driver: flag and version formatting, the JSON and
// text of hand-made reports, the UUID match with CUDA and the "Vulkan interop" verdicts, and a loader
// that is missing for real.
#include "report.hpp"

#include "fake_driver_test.hpp"

#include <membridge/config.hpp>
#include <membridge/core/units.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace {

using namespace membridge::literals;
using membridge::device_uuid;
using membridge::errc;
using membridge::info::cuda_device_report;
using membridge::info::format_memory_heap_flags;
using membridge::info::format_memory_property_flags;
using membridge::info::format_vulkan_version;
using membridge::info::report;
using membridge::info::vulkan_device_report;
using membridge::info::vulkan_report;

// VkMemoryPropertyFlagBits / VkMemoryHeapFlagBits, spelled out so the test does not lean on the code's table.
constexpr std::uint32_t device_local = 0x1;
constexpr std::uint32_t host_visible = 0x2;
constexpr std::uint32_t host_coherent = 0x4;
constexpr std::uint32_t host_cached = 0x8;
constexpr std::uint32_t heap_device_local = 0x1;
constexpr std::uint32_t heap_multi_instance = 0x2;

constexpr std::uint32_t api_version(std::uint32_t major, std::uint32_t minor, std::uint32_t patch) {
  return (major << 22U) | (minor << 12U) | patch;  // VK_MAKE_API_VERSION(0, major, minor, patch)
}

/// A UUID whose bytes are first, first+1, ... (the fake CUDA driver's device 0 is 0x10...0x1f).
device_uuid uuid_from(std::uint8_t first) {
  std::uint8_t raw[16];
  for (std::uint8_t i = 0; i < 16; ++i) raw[i] = static_cast<std::uint8_t>(first + i);
  return device_uuid::from_bytes(raw);
}

constexpr const char* gpu_uuid = "10111213-1415-1617-1819-1a1b1c1d1e1f";
constexpr const char* cpu_uuid = "6d6e6f70-7172-7374-7576-7778797a7b7c";

/// The identity of a hand-made device (its UUID's bytes start at uuid_first).
struct fake_identity {
  std::uint32_t index;
  const char* name;
  const char* type;
  const char* driver_name;
  const char* driver_info;
  std::uint32_t api_version;
  std::uint8_t uuid_first;
};

/// A device with `id` and nothing else set (what the fixtures below start from).
vulkan_device_report device_with(const fake_identity& id) {
  vulkan_device_report d;
  d.index = id.index;
  d.name = id.name;
  d.type = id.type;
  d.driver_name = id.driver_name;
  d.driver_info = id.driver_info;
  d.api_version = id.api_version;
  d.uuid = uuid_from(id.uuid_first);
  return d;
}

/// A GPU with everything membridge's Vulkan bridge needs, and the fake CUDA device 0's UUID.
vulkan_device_report ready_gpu() {
  vulkan_device_report d = device_with({0, "Fake NVIDIA GPU", "DISCRETE_GPU", "NVIDIA", "580.65.06", api_version(1, 4, 312), 0x10});
  d.external_memory = {true, true, false};
  d.external_semaphore = {true, true, true};
  d.timeline_semaphore = true;
  d.sparse = {true, true, true};
  d.memory_heaps = {{80_GiB, heap_device_local}, {256_GiB, 0}};
  d.memory_types = {{1, 0}, {0, device_local}, {1, host_visible | host_coherent}, {0, device_local | host_visible | host_coherent}};
  return d;
}

/// What lavapipe looks like: fd memory import, no semaphore fds, no sparse binding.
vulkan_device_report lavapipe_like() {
  vulkan_device_report d = device_with(
      {1, "llvmpipe (LLVM 15.0.6, 256 bits)", "CPU", "llvmpipe", "Mesa 22.3.6 (LLVM 15.0.6)", api_version(1, 3, 230), 0x6d});
  d.external_memory = {true, true, false};
  d.timeline_semaphore = true;
  d.memory_heaps = {{2_GiB, heap_device_local}};
  d.memory_types = {{0, device_local | host_visible | host_coherent | host_cached}};
  return d;
}

vulkan_report loader_with(std::vector<vulkan_device_report> devices) {
  vulkan_report v;
  v.library = "libvulkan.so.1";
  v.loader_found = true;
  v.loader_version = api_version(1, 3, 239);
  v.devices = std::move(devices);
  return v;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string keys_of(const nlohmann::ordered_json& j) {
  std::string keys;
  for (const auto& [key, value] : j.items()) keys += key + " ";
  return keys;
}

// ---------------------------------------------------------------------------- formatting ---

TEST(vulkan_report_format, memory_property_flags_read_like_vulkan_names) {
  EXPECT_EQ(format_memory_property_flags(0), "");
  EXPECT_EQ(format_memory_property_flags(device_local), "DEVICE_LOCAL");
  EXPECT_EQ(format_memory_property_flags(device_local | host_visible), "DEVICE_LOCAL|HOST_VISIBLE");
  EXPECT_EQ(format_memory_property_flags(host_cached | host_visible | host_coherent),
            "HOST_VISIBLE|HOST_COHERENT|HOST_CACHED");  // always in bit order
  EXPECT_EQ(format_memory_property_flags(0x10 | 0x20), "LAZILY_ALLOCATED|PROTECTED");
  EXPECT_EQ(format_memory_property_flags(0x40 | 0x80 | 0x100), "DEVICE_COHERENT_AMD|DEVICE_UNCACHED_AMD|RDMA_CAPABLE_NV");
  EXPECT_EQ(format_memory_property_flags(device_local | 0x1000), "DEVICE_LOCAL|0x1000");  // unknown bits as hex
  EXPECT_EQ(format_memory_property_flags(0x3000), "0x3000");
}

TEST(vulkan_report_format, memory_heap_flags_read_like_vulkan_names) {
  EXPECT_EQ(format_memory_heap_flags(0), "");
  EXPECT_EQ(format_memory_heap_flags(heap_device_local), "DEVICE_LOCAL");
  EXPECT_EQ(format_memory_heap_flags(heap_device_local | heap_multi_instance), "DEVICE_LOCAL|MULTI_INSTANCE");
  EXPECT_EQ(format_memory_heap_flags(0x4), "0x4");
}

TEST(vulkan_report_format, versions_read_major_minor_patch) {
  EXPECT_EQ(format_vulkan_version(api_version(1, 3, 239)), "1.3.239");
  EXPECT_EQ(format_vulkan_version(api_version(1, 2, 0)), "1.2.0");
  EXPECT_EQ(format_vulkan_version(api_version(1, 4, 4095)), "1.4.4095");
  EXPECT_EQ(format_vulkan_version((1U << 29U) | api_version(1, 0, 0)), "1.0.0");  // the variant is not shown
}

// ---------------------------------------------------------------- hand-made reports, linked ---

class vulkan_report_test : public membridge::testing::fake_driver_test {
 protected:
  /// The fake CUDA device 0 (UUID 10111213-...), plus `v` as the Vulkan section, linked.
  report with_vulkan(vulkan_report v) {
    report r = membridge::info::collect(fake_.driver(), {});
    EXPECT_FALSE(r.vulkan) << "collect() through a caller's driver does not probe Vulkan";
    r.vulkan = std::move(v);
    membridge::info::link_vulkan(r);
    return r;
  }

  /// CUDA device 0's verdict with `v` as the Vulkan section.
  membridge::info::interop_verdict verdict_with(vulkan_report v) {
    const report r = with_vulkan(std::move(v));
    EXPECT_EQ(r.cuda.devices.size(), 1U);
    EXPECT_TRUE(r.cuda.devices.at(0).vulkan_interop);
    return r.cuda.devices.at(0).vulkan_interop.value_or(membridge::info::interop_verdict{});
  }
};

TEST_F(vulkan_report_test, uuids_link_vulkan_devices_to_cuda_ordinals) {
  const report r = with_vulkan(loader_with({ready_gpu(), lavapipe_like()}));
  ASSERT_EQ(r.vulkan->devices.size(), 2U);
  EXPECT_EQ(r.vulkan->devices[0].cuda_ordinal, 0);
  EXPECT_FALSE(r.vulkan->devices[1].cuda_ordinal);
  const auto& verdict = r.cuda.devices.at(0).vulkan_interop;
  ASSERT_TRUE(verdict);
  EXPECT_TRUE(verdict->ready);
  EXPECT_EQ(verdict->vulkan_device, 0U);
  EXPECT_EQ(verdict->reason, "Vulkan device 0 (Fake NVIDIA GPU): opaque-fd memory import and timeline semaphore export");
}

TEST_F(vulkan_report_test, json_of_the_vulkan_section_has_the_documented_shape) {
  const auto j = membridge::info::make_json(with_vulkan(loader_with({ready_gpu(), lavapipe_like()})));
  EXPECT_EQ(keys_of(j), "membridge cuda vulkan ");
  const auto& v = j["vulkan"];
  EXPECT_EQ(keys_of(v), "loader_found library loader_version error devices ");
  EXPECT_EQ(v["loader_found"], true);
  EXPECT_EQ(v["library"], "libvulkan.so.1");
  EXPECT_EQ(v["loader_version"], "1.3.239");
  EXPECT_TRUE(v["error"].is_null());
  ASSERT_EQ(v["devices"].size(), 2U);

  const auto& gpu = v["devices"][0];
  EXPECT_EQ(keys_of(gpu),
            "index name type driver_name driver_info api_version uuid cuda_ordinal external_memory external_semaphore "
            "timeline_semaphore sparse_binding memory_heaps memory_types error ");
  EXPECT_EQ(gpu["index"], 0);
  EXPECT_EQ(gpu["name"], "Fake NVIDIA GPU");
  EXPECT_EQ(gpu["type"], "DISCRETE_GPU");
  EXPECT_EQ(gpu["driver_name"], "NVIDIA");
  EXPECT_EQ(gpu["driver_info"], "580.65.06");
  EXPECT_EQ(gpu["api_version"], "1.4.312");
  EXPECT_EQ(gpu["uuid"], gpu_uuid);
  EXPECT_EQ(gpu["cuda_ordinal"], 0);
  EXPECT_EQ(gpu["external_memory"],
            nlohmann::ordered_json({{"fd_extension", true}, {"opaque_fd_buffer_import", true}, {"dedicated_only", false}}));
  EXPECT_EQ(gpu["external_semaphore"],
            nlohmann::ordered_json(
                {{"fd_extension", true}, {"timeline_opaque_fd_export", true}, {"timeline_opaque_fd_import", true}}));
  EXPECT_EQ(gpu["timeline_semaphore"], true);
  EXPECT_EQ(gpu["sparse_binding"], nlohmann::ordered_json({{"supported", true},
                                                           {"sparse_binding", true},
                                                           {"sparse_residency_buffer", true},
                                                           {"sparse_queue_family", true}}));
  ASSERT_EQ(gpu["memory_heaps"].size(), 2U);
  EXPECT_EQ(keys_of(gpu["memory_heaps"][0]), "index size_bytes flags ");
  EXPECT_EQ(gpu["memory_heaps"][0]["size_bytes"], 80_GiB);
  EXPECT_EQ(gpu["memory_heaps"][0]["flags"], "DEVICE_LOCAL");
  EXPECT_EQ(gpu["memory_heaps"][1]["index"], 1);
  EXPECT_EQ(gpu["memory_heaps"][1]["flags"], "");
  ASSERT_EQ(gpu["memory_types"].size(), 4U);
  EXPECT_EQ(keys_of(gpu["memory_types"][0]), "index heap_index flags ");
  EXPECT_EQ(gpu["memory_types"][0]["heap_index"], 1);
  EXPECT_EQ(gpu["memory_types"][0]["flags"], "");
  EXPECT_EQ(gpu["memory_types"][3]["index"], 3);
  EXPECT_EQ(gpu["memory_types"][3]["flags"], "DEVICE_LOCAL|HOST_VISIBLE|HOST_COHERENT");
  EXPECT_TRUE(gpu["error"].is_null());

  const auto& cpu = v["devices"][1];
  EXPECT_EQ(cpu["uuid"], cpu_uuid);
  EXPECT_TRUE(cpu["cuda_ordinal"].is_null());
  EXPECT_EQ(cpu["external_semaphore"]["fd_extension"], false);
  EXPECT_EQ(cpu["sparse_binding"]["supported"], false);

  const auto& interop = j["cuda"]["devices"][0]["vulkan_interop"];
  EXPECT_EQ(keys_of(interop), "ready vulkan_device reason ");
  EXPECT_EQ(interop["ready"], true);
  EXPECT_EQ(interop["vulkan_device"], 0);
}

TEST_F(vulkan_report_test, text_lists_the_loader_every_device_and_a_verdict_per_cuda_device) {
  const std::string text = membridge::info::render_text(with_vulkan(loader_with({ready_gpu(), lavapipe_like()})));
  EXPECT_TRUE(contains(text, "\nVulkan\n  loader found:                 yes\n")) << text;
  EXPECT_TRUE(contains(text, "\n  loader version:               1.3.239\n")) << text;
  EXPECT_TRUE(contains(text, "\n  devices:                      2\n")) << text;
  EXPECT_TRUE(contains(text, "\nVulkan device 0\n  name:                         Fake NVIDIA GPU\n")) << text;
  EXPECT_TRUE(contains(text, "\n  type:                         DISCRETE_GPU\n")) << text;
  EXPECT_TRUE(contains(text, "\n  driver info:                  580.65.06\n")) << text;
  EXPECT_TRUE(contains(text, "\n  API version:                  1.4.312\n")) << text;
  EXPECT_TRUE(contains(text, "\n  UUID:                         " + std::string(gpu_uuid) + "\n")) << text;
  EXPECT_TRUE(contains(text, "\n  UUID match with CUDA:         CUDA device 0\n")) << text;
  EXPECT_TRUE(contains(text, "\n  VK_KHR_external_semaphore_fd: yes\n")) << text;
  EXPECT_TRUE(contains(text, "\n  sparse binding:               yes\n")) << text;
  EXPECT_TRUE(contains(text, "\n  memory heap 0:                80 GiB, DEVICE_LOCAL\n")) << text;
  EXPECT_TRUE(contains(text, "\n  memory heap 1:                256 GiB\n")) << text;
  EXPECT_TRUE(contains(text, "\n  memory type 0:                heap 1\n")) << text;
  EXPECT_TRUE(contains(text, "\n  memory type 3:                heap 0, DEVICE_LOCAL|HOST_VISIBLE|HOST_COHERENT\n")) << text;

  EXPECT_TRUE(contains(text, "\nVulkan device 1\n")) << text;
  EXPECT_TRUE(contains(text, "\n  UUID match with CUDA:         no\n")) << text;
  EXPECT_TRUE(contains(text, "\n  VK_KHR_external_semaphore_fd: no\n")) << text;
  EXPECT_TRUE(contains(text, "\n  sparse binding:               no (lacks sparseBinding, sparseResidencyBuffer, "
                             "a SPARSE_BINDING queue family)\n"))
      << text;
  // The Vulkan section comes after CUDA's, the verdicts after the summary.
  EXPECT_LT(text.find("\nCUDA device 0\n"), text.find("\nVulkan\n"));
  EXPECT_TRUE(contains(text, "\nSummary: 1 of 1 listed CUDA device usable by membridge.\n"
                             "  CUDA device 0: Vulkan interop: ready (Vulkan device 0 (Fake NVIDIA GPU): opaque-fd "
                             "memory import and timeline semaphore export)\n"))
      << text;
}

TEST_F(vulkan_report_test, a_report_without_vulkan_says_null_and_prints_no_vulkan_section) {
  const report r = membridge::info::collect(fake_.driver(), {});
  const auto j = membridge::info::make_json(r);
  EXPECT_TRUE(j["vulkan"].is_null());
  EXPECT_TRUE(j["cuda"]["devices"][0]["vulkan_interop"].is_null());
  const std::string text = membridge::info::render_text(r);
  EXPECT_FALSE(contains(text, "Vulkan")) << text;
}

TEST_F(vulkan_report_test, no_vulkan_device_with_the_cuda_uuid_is_not_ready) {
  const auto verdict = verdict_with(loader_with({lavapipe_like()}));
  EXPECT_FALSE(verdict.ready);
  EXPECT_FALSE(verdict.vulkan_device);
  EXPECT_EQ(verdict.reason, "no Vulkan device has this UUID (Vulkan lists: llvmpipe (LLVM 15.0.6, 256 bits))");
  EXPECT_EQ(verdict_with(loader_with({})).reason, "no Vulkan device has this UUID (Vulkan lists no device)");
}

TEST_F(vulkan_report_test, a_matching_device_without_semaphore_fds_says_what_it_lacks) {
  auto gpu = ready_gpu();
  gpu.external_semaphore = {};
  auto verdict = verdict_with(loader_with({gpu}));
  EXPECT_FALSE(verdict.ready);
  EXPECT_EQ(verdict.vulkan_device, 0U);
  EXPECT_EQ(verdict.reason, "Vulkan device 0 (Fake NVIDIA GPU) lacks VK_KHR_external_semaphore_fd");

  gpu = ready_gpu();
  gpu.external_semaphore.timeline_opaque_fd_export = false;
  gpu.external_memory = {};
  verdict = verdict_with(loader_with({gpu}));
  EXPECT_EQ(verdict.reason,
            "Vulkan device 0 (Fake NVIDIA GPU) lacks VK_KHR_external_memory_fd, timeline semaphore export as opaque fd");

  gpu = ready_gpu();
  gpu.external_memory.opaque_fd_buffer_import = false;
  gpu.timeline_semaphore = false;
  verdict = verdict_with(loader_with({gpu}));
  EXPECT_EQ(verdict.reason, "Vulkan device 0 (Fake NVIDIA GPU) lacks opaque-fd buffer import, the timelineSemaphore feature");
}

TEST_F(vulkan_report_test, sparse_binding_and_dedicated_imports_do_not_decide_readiness) {
  auto gpu = ready_gpu();
  gpu.sparse = {};
  gpu.external_memory.dedicated_only = true;
  const auto verdict = verdict_with(loader_with({gpu}));
  EXPECT_TRUE(verdict.ready);
  EXPECT_TRUE(contains(verdict.reason, ", dedicated allocations only")) << verdict.reason;
}

TEST_F(vulkan_report_test, the_cuda_side_needs_timeline_semaphore_interop) {
  fake_.attributes[CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED] = 0;
  const auto verdict = verdict_with(loader_with({ready_gpu()}));
  EXPECT_FALSE(verdict.ready);
  EXPECT_EQ(verdict.reason, "the CUDA device lacks timeline semaphore interop");
}

TEST_F(vulkan_report_test, of_two_devices_with_the_uuid_the_ready_one_is_judged) {
  auto lacking = ready_gpu();
  lacking.external_semaphore = {};
  auto ready = ready_gpu();
  ready.index = 1;
  const auto verdict = verdict_with(loader_with({lacking, ready}));
  EXPECT_TRUE(verdict.ready);
  EXPECT_EQ(verdict.vulkan_device, 1U);
}

TEST_F(vulkan_report_test, a_vulkan_failure_makes_every_cuda_device_not_ready) {
  vulkan_report v = loader_with({});
  v.failure = membridge::error::from_native(errc::driver_unavailable, membridge::error_source::vulkan, -9,
                                            "VK_ERROR_INCOMPATIBLE_DRIVER", "vkCreateInstance");
  const report r = with_vulkan(v);
  const auto& verdict = r.cuda.devices.at(0).vulkan_interop;
  ASSERT_TRUE(verdict);
  EXPECT_FALSE(verdict->ready);
  EXPECT_EQ(verdict->reason, "Vulkan is unavailable (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER)");
  const auto j = membridge::info::make_json(r);
  EXPECT_EQ(j["vulkan"]["error"]["category"], "driver_unavailable");
  const std::string text = membridge::info::render_text(r);
  EXPECT_TRUE(contains(text, "\n  error:                        driver_unavailable\n")) << text;
  EXPECT_FALSE(contains(text.substr(text.find("\nVulkan\n")), "\n  devices:")) << "no device count when listing failed:\n"
                                                                                  << text;
}

#if MEMBRIDGE_HAS_VULKAN
// A real failed dlopen: the loader does not exist on any machine.
TEST_F(vulkan_report_test, a_missing_loader_is_a_reported_state) {
  membridge::info::vulkan_probe_options options;
  options.library = "libvulkan-does-not-exist.so.1";
  const vulkan_report v = membridge::info::probe_vulkan(options);
  EXPECT_FALSE(v.loader_found);
  EXPECT_EQ(v.library, "libvulkan-does-not-exist.so.1");
  EXPECT_FALSE(v.loader_version);
  ASSERT_TRUE(v.failure);
  EXPECT_EQ(v.failure->code(), errc::driver_unavailable);
  EXPECT_TRUE(v.devices.empty());

  const report r = with_vulkan(v);
  const auto& verdict = r.cuda.devices.at(0).vulkan_interop;
  ASSERT_TRUE(verdict);
  EXPECT_FALSE(verdict->ready);
  EXPECT_EQ(verdict->reason, "the Vulkan loader libvulkan-does-not-exist.so.1 could not be loaded");
  EXPECT_EQ(membridge::info::exit_status_of(r), membridge::info::exit_status::usable) << "Vulkan never changes the exit status";

  const auto j = membridge::info::make_json(r)["vulkan"];
  EXPECT_EQ(j["loader_found"], false);
  EXPECT_EQ(j["library"], "libvulkan-does-not-exist.so.1");
  EXPECT_TRUE(j["loader_version"].is_null());
  EXPECT_EQ(j["error"]["category"], "driver_unavailable");
  EXPECT_TRUE(contains(j["error"]["message"].get<std::string>(), "libvulkan-does-not-exist.so.1"));
  EXPECT_EQ(j["devices"], nlohmann::ordered_json::array());
  const std::string text = membridge::info::render_text(r);
  EXPECT_TRUE(contains(text, "\nVulkan\n  loader found:                 no\n")) << text;
  EXPECT_TRUE(contains(text, "  CUDA device 0: Vulkan interop: not ready (the Vulkan loader "
                             "libvulkan-does-not-exist.so.1 could not be loaded)\n"))
      << text;
}

// collect(options) loads both libraries by name: with neither there, both sections say so.
TEST(vulkan_report_without_drivers, collect_probes_vulkan_even_without_cuda) {
  membridge::info::collect_options options;
  options.cuda_library = "libcuda-does-not-exist.so.1";
  options.vulkan_library = "libvulkan-does-not-exist.so.1";
  const report r = membridge::info::collect(options);
  EXPECT_FALSE(r.cuda.available);
  ASSERT_TRUE(r.vulkan);
  EXPECT_FALSE(r.vulkan->loader_found);
  EXPECT_EQ(r.vulkan->library, "libvulkan-does-not-exist.so.1");
  EXPECT_EQ(membridge::info::exit_status_of(r), membridge::info::exit_status::not_usable);
}
#endif

}  // namespace
