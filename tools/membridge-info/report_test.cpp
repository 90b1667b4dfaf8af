// membridge-info's report, collected through the scripted CUDA driver (and a real failed load) and
// checked field by field, in the struct, in the JSON and in the text.
#include "report.hpp"

#include "fake_driver_test.hpp"

#include <membridge/config.hpp>
#include <membridge/core/units.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::info::collect_options;
using membridge::info::exit_status;
using membridge::info::report;

constexpr const char* uuid_of_device_0 = "10111213-1415-1617-1819-1a1b1c1d1e1f";
constexpr const char* uuid_of_device_1 = "20212223-2425-2627-2829-2a2b2c2d2e2f";

// The fake's attributes hold for every device; this one reports no VMM on device 1 only.
CUresult attribute_without_vmm_on_device_1(int* value, CUdevice_attribute attribute, CUdevice dev) {
  if (attribute == CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED && dev == 1) {
    *value = 0;
    return CUDA_SUCCESS;
  }
  return membridge::testing::fake_cuda::table().cuDeviceGetAttribute(value, attribute, dev);
}

nlohmann::json parsed_json(const report& r) { return nlohmann::json::parse(membridge::info::render_json(r)); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class report_test : public membridge::testing::fake_driver_test {
 protected:
  /// Two fake H100s; device 1 lacks VMM.
  std::shared_ptr<const membridge::cuda::driver> driver_with_one_good_device() {
    fake_.device_count = 2;
    auto table = membridge::testing::fake_cuda::table();
    table.cuDeviceGetAttribute = &attribute_without_vmm_on_device_1;
    return membridge::cuda::driver::from_table(table, 13000).value();
  }

  report collect_two_devices(const collect_options& options = {}) {
    const auto r = membridge::info::collect(driver_with_one_good_device(), options);
    EXPECT_EQ(fake_.primary_retains(), 0) << "collect must close every device it opened";
    return r;
  }
};

TEST_F(report_test, collects_the_driver_and_every_device) {
  const report r = collect_two_devices();
  EXPECT_EQ(r.membridge_version.string, MEMBRIDGE_VERSION_STRING);
  EXPECT_EQ(r.membridge_version.minor, MEMBRIDGE_VERSION_MINOR);
  EXPECT_TRUE(r.cuda.available);
  EXPECT_FALSE(r.cuda.failure);
  EXPECT_EQ(r.cuda.driver_version, 13000);
  EXPECT_EQ(r.cuda.library, "");  // a from_table() driver has no library
  EXPECT_EQ(r.cuda.device_count, 2);
  ASSERT_EQ(r.cuda.devices.size(), 2U);
  EXPECT_EQ(membridge::info::exit_status_of(r), exit_status::usable);
}

TEST_F(report_test, a_good_device_reports_identity_properties_memory_and_capabilities) {
  fake_.device_name = "Fake H100";
  const auto d = collect_two_devices().cuda.devices.at(0);
  EXPECT_EQ(d.ordinal, 0);
  EXPECT_EQ(d.identity.name, "Fake H100");
  ASSERT_TRUE(d.identity.uuid);
  EXPECT_EQ(d.identity.uuid->to_string(), uuid_of_device_0);
  EXPECT_EQ(d.identity.pci_bus_id, "0000:01:00.0");
  ASSERT_TRUE(d.properties);
  EXPECT_EQ(d.properties->compute_capability[0], 9);
  EXPECT_EQ(d.properties->compute_capability[1], 0);
  EXPECT_EQ(d.properties->total_memory_bytes, 80_GiB);
  EXPECT_EQ(d.properties->granularity_bytes, 2_MiB);
  EXPECT_EQ(d.properties->recommended_granularity_bytes, 2_MiB);
  ASSERT_TRUE(d.memory);
  EXPECT_EQ(d.memory->free_bytes, 80_GiB);
  EXPECT_FALSE(d.memory_error);
  const auto& caps = d.properties->capabilities;
  EXPECT_TRUE(caps.virtual_memory_management);
  EXPECT_TRUE(caps.posix_fd_handles);
  EXPECT_FALSE(caps.win32_handles);
  EXPECT_TRUE(caps.fabric_handles);
  EXPECT_TRUE(caps.gpu_direct_rdma_with_vmm);
  EXPECT_FALSE(caps.generic_compression);
  EXPECT_TRUE(caps.timeline_semaphore_interop);
  EXPECT_TRUE(caps.unified_addressing);
  EXPECT_FALSE(d.open_error);
  EXPECT_TRUE(d.usability.usable);
  EXPECT_EQ(d.usability.reason, "VMM and POSIX fd export supported");
}

TEST_F(report_test, a_device_without_vmm_is_listed_with_its_error_and_identity) {
  const auto d = collect_two_devices().cuda.devices.at(1);
  EXPECT_EQ(d.ordinal, 1);
  ASSERT_TRUE(d.open_error);
  EXPECT_EQ(d.open_error->code(), errc::unsupported);
  EXPECT_FALSE(d.properties);
  EXPECT_FALSE(d.memory);
  EXPECT_EQ(d.identity.name, "Fake GPU");
  ASSERT_TRUE(d.identity.uuid);
  EXPECT_EQ(d.identity.uuid->to_string(), uuid_of_device_1);
  EXPECT_EQ(d.identity.pci_bus_id, "0000:02:00.0");
  EXPECT_FALSE(d.usability.usable);
  EXPECT_TRUE(contains(d.usability.reason, "does not support CUDA virtual memory management")) << d.usability.reason;
}

TEST_F(report_test, json_carries_every_field) {
  const auto j = parsed_json(collect_two_devices());
  EXPECT_EQ(j["membridge"]["version"], MEMBRIDGE_VERSION_STRING);
  EXPECT_EQ(j["membridge"]["major"], MEMBRIDGE_VERSION_MAJOR);
  EXPECT_EQ(j["membridge"]["minor"], MEMBRIDGE_VERSION_MINOR);
  EXPECT_EQ(j["membridge"]["patch"], MEMBRIDGE_VERSION_PATCH);
  const auto& cuda = j["cuda"];
  EXPECT_EQ(cuda["available"], true);
  EXPECT_TRUE(cuda["error"].is_null());
  EXPECT_EQ(cuda["driver_version"], 13000);
  EXPECT_EQ(cuda["library"], "");
  EXPECT_EQ(cuda["device_count"], 2);
  ASSERT_EQ(cuda["devices"].size(), 2U);

  const auto& good = cuda["devices"][0];
  EXPECT_EQ(good["ordinal"], 0);
  EXPECT_EQ(good["name"], "Fake GPU");
  EXPECT_EQ(good["uuid"], uuid_of_device_0);
  EXPECT_EQ(good["pci_bus_id"], "0000:01:00.0");
  EXPECT_EQ(good["compute_capability"], "9.0");
  EXPECT_EQ(good["total_memory_bytes"], 80_GiB);
  EXPECT_EQ(good["free_memory_bytes"], 80_GiB);
  EXPECT_TRUE(good["free_memory_error"].is_null());
  EXPECT_EQ(good["granularity_bytes"], 2_MiB);
  EXPECT_EQ(good["recommended_granularity_bytes"], 2_MiB);
  const nlohmann::json expected_caps = {
      {"virtual_memory_management", true}, {"posix_fd_handles", true},          {"win32_handles", false},
      {"fabric_handles", true},            {"gpu_direct_rdma_with_vmm", true},  {"generic_compression", false},
      {"timeline_semaphore_interop", true}, {"unified_addressing", true}};
  EXPECT_EQ(good["capabilities"], expected_caps);
  EXPECT_EQ(good["usable"], true);
  EXPECT_EQ(good["usable_reason"], "VMM and POSIX fd export supported");
  EXPECT_TRUE(good["error"].is_null());

  const auto& bad = cuda["devices"][1];
  EXPECT_EQ(bad["ordinal"], 1);
  EXPECT_EQ(bad["uuid"], uuid_of_device_1);
  EXPECT_EQ(bad["usable"], false);
  EXPECT_EQ(bad["error"]["category"], "unsupported");
  EXPECT_TRUE(contains(bad["error"]["message"].get<std::string>(), "does not support CUDA virtual memory management"));
  for (const char* unknown : {"compute_capability", "total_memory_bytes", "free_memory_bytes", "granularity_bytes",
                              "recommended_granularity_bytes", "capabilities", "compressible_memory"})
    EXPECT_TRUE(bad[unknown].is_null()) << unknown;
  EXPECT_TRUE(good["compressible_memory"].is_null()) << "the fake device reports no generic compression";
}

// ---------------------------------------------------------------------- compressible memory probe ---

TEST_F(report_test, a_device_with_compression_reports_what_the_driver_granted_and_exported) {
  fake_.attributes[CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED] = 1;
  const report r = membridge::info::collect(fake_.driver(), {});
  ASSERT_EQ(r.cuda.devices.size(), 1U);
  const auto& d = r.cuda.devices[0];
  ASSERT_TRUE(d.compression);
  EXPECT_TRUE(d.compression->created);
  EXPECT_TRUE(d.compression->compressed);
  EXPECT_TRUE(d.compression->exports_fd);
  EXPECT_FALSE(d.compression->failure);
  EXPECT_EQ(d.compression->summary, "granted; exports as a POSIX fd");
  const auto j = parsed_json(r)["cuda"]["devices"][0]["compressible_memory"];
  EXPECT_EQ(j["created"], true);
  EXPECT_EQ(j["compressed"], true);
  EXPECT_EQ(j["exports_fd"], true);
  EXPECT_EQ(j["summary"], "granted; exports as a POSIX fd");
  EXPECT_TRUE(j["error"].is_null());
  const std::string text = membridge::info::render_text(r);
  EXPECT_TRUE(contains(text, "\n  compressible memory:          granted; exports as a POSIX fd\n")) << text;
  EXPECT_TRUE(fake_.leaks().empty()) << "the probe must release what it made";
}

TEST_F(report_test, compression_the_driver_does_not_grant_is_reported) {
  fake_.attributes[CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED] = 1;
  fake_.grants_compression = false;
  const auto d = membridge::info::collect(fake_.driver(), {}).cuda.devices.at(0);
  ASSERT_TRUE(d.compression);
  EXPECT_TRUE(d.compression->created);
  EXPECT_FALSE(d.compression->compressed);
  EXPECT_FALSE(d.compression->exports_fd);
  EXPECT_EQ(d.compression->summary, "not granted (the driver gave plain memory)");
}

TEST_F(report_test, a_refused_export_of_compressed_memory_is_reported_with_its_error) {
  fake_.attributes[CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED] = 1;
  fake_.compressed_export = CUDA_ERROR_NOT_SUPPORTED;
  const report r = membridge::info::collect(fake_.driver(), {});
  const auto& d = r.cuda.devices.at(0);
  ASSERT_TRUE(d.compression);
  EXPECT_TRUE(d.compression->compressed);
  EXPECT_FALSE(d.compression->exports_fd);
  ASSERT_TRUE(d.compression->failure);
  EXPECT_EQ(d.compression->failure->code(), errc::unsupported);
  EXPECT_EQ(d.compression->summary, "granted; export as a POSIX fd refused");
  const auto j = parsed_json(r)["cuda"]["devices"][0]["compressible_memory"];
  EXPECT_EQ(j["error"]["category"], "unsupported");
  EXPECT_TRUE(contains(j["error"]["message"].get<std::string>(), "refuses to export compressed memory"));
  EXPECT_TRUE(d.usability.usable) << "plain memory still works";
}

TEST_F(report_test, a_refused_compressible_allocation_is_reported_with_its_error) {
  fake_.attributes[CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED] = 1;
  fake_.compressible_shareable_create = CUDA_ERROR_NOT_SUPPORTED;
  const report r = membridge::info::collect(fake_.driver(), {});
  const auto& d = r.cuda.devices.at(0);
  ASSERT_TRUE(d.compression);
  EXPECT_FALSE(d.compression->created);
  EXPECT_FALSE(d.compression->compressed);
  ASSERT_TRUE(d.compression->failure);
  EXPECT_EQ(d.compression->failure->code(), errc::unsupported);
  EXPECT_EQ(d.compression->summary, "refused with POSIX fd handles");
  EXPECT_TRUE(contains(membridge::info::render_text(r), "compressible memory error")) << membridge::info::render_text(r);
}

TEST_F(report_test, json_keys_follow_the_documented_order) {
  const auto j = membridge::info::make_json(collect_two_devices());
  std::string keys;
  for (const auto& [key, value] : j["cuda"]["devices"][0].items()) keys += key + " ";
  EXPECT_EQ(keys,
            "ordinal name uuid pci_bus_id compute_capability total_memory_bytes free_memory_bytes free_memory_error "
            "granularity_bytes recommended_granularity_bytes capabilities compressible_memory usable usable_reason error "
            "vulkan_interop ");
}

TEST_F(report_test, the_peer_matrix_is_in_the_text_and_the_json) {
  fake_.no_peer_access = {{1, 0}};
  const report r = collect_two_devices();
  ASSERT_FALSE(r.cuda.peers_error);
  ASSERT_EQ(r.cuda.peers.size(), 2U);
  EXPECT_TRUE(r.cuda.peers[0].access);
  EXPECT_FALSE(r.cuda.peers[1].access);
  const std::string text = membridge::info::render_text(r);
  EXPECT_TRUE(contains(text, "\nCUDA peers (GPU -> memory of GPU)\n")) << text;
  EXPECT_TRUE(contains(text, "0 -> 1:") && contains(text, "access yes, native atomics yes, CUDA arrays yes, "
                                                          "performance rank 0\n"))
      << text;
  EXPECT_TRUE(contains(text, "1 -> 0:") && contains(text, "no access\n")) << text;
  const auto j = parsed_json(r);
  ASSERT_EQ(j["cuda"]["peers"].size(), 2U);
  EXPECT_EQ(j["cuda"]["peers"][1]["from"], 1);
  EXPECT_EQ(j["cuda"]["peers"][1]["to"], 0);
  EXPECT_EQ(j["cuda"]["peers"][1]["access"], false);
  EXPECT_EQ(j["cuda"]["peers"][0]["native_atomics"], true);
  EXPECT_TRUE(j["cuda"]["peers_error"].is_null());

  fake_.device_count = 1;
  const report one = membridge::info::collect(fake_.driver(), {});
  EXPECT_TRUE(one.cuda.peers.empty());
  EXPECT_TRUE(contains(membridge::info::render_text(one), "none (one GPU)"));
}

TEST_F(report_test, text_lists_every_device_with_a_verdict) {
  const std::string text = membridge::info::render_text(collect_two_devices());
  EXPECT_TRUE(contains(text, std::string("membridge ") + MEMBRIDGE_VERSION_STRING + "\n")) << text;
  EXPECT_TRUE(contains(text, "\n  available:                    yes\n")) << text;
  EXPECT_TRUE(contains(text, "\n  driver version:               13.0 (13000)\n")) << text;
  EXPECT_TRUE(contains(text, "\nCUDA device 0\n")) << text;
  EXPECT_TRUE(contains(text, "\n  UUID:                         " + std::string(uuid_of_device_0) + "\n")) << text;
  EXPECT_TRUE(contains(text, "\n  granularity:                  2 MiB (recommended 2 MiB)\n")) << text;
  EXPECT_TRUE(contains(text, "\n    Win32 handles:              no\n")) << text;
  EXPECT_TRUE(contains(text, "\n    timeline semaphore interop: yes\n")) << text;
  EXPECT_TRUE(contains(text, "\n  usable by membridge:          yes (VMM and POSIX fd export supported)\n")) << text;
  EXPECT_TRUE(contains(text, "\nCUDA device 1\n")) << text;
  EXPECT_TRUE(contains(text, "\n  error:                        unsupported\n")) << text;
  EXPECT_TRUE(contains(text, "\n  usable by membridge:          no (device 1 (Fake GPU) does not support")) << text;
  EXPECT_TRUE(contains(text, "\nSummary: 1 of 2 listed CUDA devices usable by membridge.\n")) << text;
}

TEST_F(report_test, a_failing_free_memory_query_is_reported_not_fatal) {
  fake_.fail_function("cuMemGetInfo", CUDA_ERROR_UNKNOWN);
  const report r = membridge::info::collect(fake_.driver(), {});
  ASSERT_EQ(r.cuda.devices.size(), 1U);
  const auto& d = r.cuda.devices[0];
  EXPECT_FALSE(d.memory);
  ASSERT_TRUE(d.memory_error);
  EXPECT_EQ(d.memory_error->code(), errc::internal);
  EXPECT_TRUE(d.usability.usable);
  const auto j = parsed_json(r)["cuda"]["devices"][0];
  EXPECT_TRUE(j["free_memory_bytes"].is_null());
  EXPECT_EQ(j["free_memory_error"]["category"], "internal");
  EXPECT_TRUE(contains(j["free_memory_error"]["message"].get<std::string>(), "CUDA_ERROR_UNKNOWN"));
  EXPECT_EQ(j["total_memory_bytes"], 80_GiB);
  EXPECT_TRUE(contains(membridge::info::render_text(r), "\n  free memory:                  (unknown)\n"));
}

TEST_F(report_test, a_device_without_posix_fd_export_opens_but_is_not_usable) {
  fake_.attributes[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED] = 0;
  const report r = membridge::info::collect(fake_.driver(), {});
  ASSERT_EQ(r.cuda.devices.size(), 1U);
  const auto& d = r.cuda.devices[0];
  EXPECT_FALSE(d.open_error);
  ASSERT_TRUE(d.properties);
  EXPECT_FALSE(d.properties->capabilities.posix_fd_handles);
  EXPECT_FALSE(d.usability.usable);
  EXPECT_EQ(d.usability.reason, "VMM allocations cannot be exported as POSIX fds");
  EXPECT_EQ(membridge::info::exit_status_of(r), exit_status::not_usable);
  EXPECT_EQ(parsed_json(r)["cuda"]["devices"][0]["capabilities"]["posix_fd_handles"], false);
}

TEST_F(report_test, the_device_option_lists_only_that_device) {
  collect_options only_1;
  only_1.device = 1;
  const report r = collect_two_devices(only_1);
  EXPECT_EQ(r.cuda.device_count, 2);
  ASSERT_EQ(r.cuda.devices.size(), 1U);
  EXPECT_EQ(r.cuda.devices[0].ordinal, 1);
  EXPECT_FALSE(r.cuda.devices[0].usability.usable);
  EXPECT_EQ(membridge::info::exit_status_of(r), exit_status::not_usable);
}

TEST_F(report_test, a_device_that_does_not_exist_is_listed_with_its_error) {
  collect_options only_5;
  only_5.device = 5;
  const report r = collect_two_devices(only_5);
  ASSERT_EQ(r.cuda.devices.size(), 1U);
  const auto& d = r.cuda.devices[0];
  EXPECT_EQ(d.ordinal, 5);
  ASSERT_TRUE(d.open_error);
  EXPECT_EQ(d.open_error->code(), errc::invalid_argument);
  EXPECT_TRUE(d.identity.name.empty());
  EXPECT_FALSE(d.identity.uuid);
  EXPECT_EQ(d.usability.reason, "device 5 does not exist (2 CUDA devices present)");
  const auto j = parsed_json(r)["cuda"]["devices"][0];
  EXPECT_TRUE(j["name"].is_null());
  EXPECT_TRUE(j["uuid"].is_null());
  EXPECT_EQ(j["error"]["category"], "invalid_argument");
  EXPECT_EQ(membridge::info::exit_status_of(r), exit_status::not_usable);
}

TEST_F(report_test, a_failed_device_count_makes_cuda_unavailable) {
  fake_.fail_function("cuDeviceGetCount", CUDA_ERROR_NO_DEVICE);
  const report r = membridge::info::collect(fake_.driver(), {});
  EXPECT_FALSE(r.cuda.available);
  ASSERT_TRUE(r.cuda.failure);
  EXPECT_EQ(r.cuda.failure->code(), errc::driver_unavailable);
  EXPECT_EQ(r.cuda.driver_version, 13000);
  EXPECT_FALSE(r.cuda.device_count);
  EXPECT_TRUE(r.cuda.devices.empty());
  EXPECT_EQ(membridge::info::exit_status_of(r), exit_status::not_usable);
  const auto j = parsed_json(r);
  EXPECT_EQ(j["cuda"]["error"]["category"], "driver_unavailable");
  EXPECT_TRUE(j["cuda"]["device_count"].is_null());
}

// A real failed load: the library does not exist on any machine.
TEST(report_without_driver, a_missing_library_reports_driver_unavailable) {
  collect_options options;
  options.cuda_library = "libcuda-does-not-exist.so.1";
  options.vulkan_library = "libvulkan-does-not-exist.so.1";  // the unit tier touches no driver
  auto loaded = membridge::cuda::driver::load(options.cuda_library);
  ASSERT_FALSE(loaded);
  for (const report& r : {membridge::info::collect_unavailable(loaded.error(), options),
                          membridge::info::collect(options)}) {
    EXPECT_FALSE(r.cuda.available);
    ASSERT_TRUE(r.cuda.failure);
    EXPECT_EQ(r.cuda.failure->code(), errc::driver_unavailable);
    EXPECT_EQ(r.cuda.library, "libcuda-does-not-exist.so.1");
    EXPECT_FALSE(r.cuda.driver_version);
    EXPECT_TRUE(r.cuda.devices.empty());
    EXPECT_EQ(membridge::info::exit_status_of(r), exit_status::not_usable);

    const auto j = parsed_json(r);
    EXPECT_EQ(j["membridge"]["version"], MEMBRIDGE_VERSION_STRING);
    EXPECT_EQ(j["cuda"]["available"], false);
    EXPECT_EQ(j["cuda"]["error"]["category"], "driver_unavailable");
    EXPECT_EQ(j["cuda"]["error"]["message"], r.cuda.failure->message());
    EXPECT_TRUE(contains(j["cuda"]["error"]["message"].get<std::string>(), "libcuda-does-not-exist.so.1"));
    EXPECT_TRUE(j["cuda"]["driver_version"].is_null());
    EXPECT_TRUE(j["cuda"]["device_count"].is_null());
    EXPECT_EQ(j["cuda"]["devices"], nlohmann::json::array());

    const std::string text = membridge::info::render_text(r);
    EXPECT_TRUE(contains(text, "\n  available:                    no\n")) << text;
    EXPECT_TRUE(contains(text, "\n  error:                        driver_unavailable\n")) << text;
    EXPECT_TRUE(contains(text, "\nSummary: CUDA is unavailable, so membridge cannot run here.\n")) << text;
  }
}

#ifdef MEMBRIDGE_CUDA_STUB_LIBRARY
TEST(report_without_driver, the_toolkit_stub_reports_its_cuinit_failure) {
  collect_options options;
  options.cuda_library = MEMBRIDGE_CUDA_STUB_LIBRARY;
  options.vulkan_library = "libvulkan-does-not-exist.so.1";
  const report r = membridge::info::collect(options);
  EXPECT_FALSE(r.cuda.available);
  ASSERT_TRUE(r.cuda.failure);
  EXPECT_EQ(r.cuda.failure->code(), errc::driver_unavailable);
  EXPECT_EQ(r.cuda.failure->native_name(), "CUDA_ERROR_STUB_LIBRARY");
  EXPECT_TRUE(contains(parsed_json(r)["cuda"]["error"]["message"].get<std::string>(), "CUDA_ERROR_STUB_LIBRARY"));
}
#endif

TEST(report_exit_status, usable_only_when_a_listed_device_is) {
  EXPECT_EQ(static_cast<int>(exit_status::usable), 0);
  EXPECT_EQ(static_cast<int>(exit_status::usage_error), 1);
  EXPECT_EQ(static_cast<int>(exit_status::not_usable), 2);
  report r;
  EXPECT_EQ(membridge::info::exit_status_of(r), exit_status::not_usable);  // no devices
  r.cuda.available = true;
  r.cuda.devices.resize(2);
  EXPECT_EQ(membridge::info::exit_status_of(r), exit_status::not_usable);  // none usable
  r.cuda.devices[1].usability.usable = true;
  EXPECT_EQ(membridge::info::exit_status_of(r), exit_status::usable);
}

TEST(report_format, cuda_versions_read_like_people_write_them) {
  EXPECT_EQ(membridge::info::format_cuda_version(13000), "13.0");
  EXPECT_EQ(membridge::info::format_cuda_version(12080), "12.8");
  EXPECT_EQ(membridge::info::format_cuda_version(12020), "12.2");
  EXPECT_EQ(membridge::info::format_cuda_version(11040), "11.4");
}

}  // namespace
