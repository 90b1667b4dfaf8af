// membridge-info's Vulkan probe against the real loader and whatever driver it finds (Mesa lavapipe in
// CI), with VK_LAYER_KHRONOS_validation on: any validation message fails the test.
#include "report.hpp"

#include "test_environment.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace {

using membridge::info::vulkan_device_report;
using membridge::info::vulkan_report;

struct probed {
  vulkan_report report;
  std::vector<std::string> validation_messages;
};

probed probe_with_validation() {
  probed out;
  membridge::info::vulkan_probe_options options;
  options.validation = true;
  options.on_validation_message = [&out](std::string_view message) { out.validation_messages.emplace_back(message); };
  out.report = membridge::info::probe_vulkan(options);
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += "\n  " + line;
  return out;
}

std::string failure_of(const vulkan_report& r) { return r.failure ? r.failure->message() : "(none)"; }

const vulkan_device_report* find_lavapipe(const vulkan_report& r) {
  for (const auto& d : r.devices)
    if (d.driver_name == "llvmpipe" || d.name.rfind("llvmpipe", 0) == 0) return &d;
  return nullptr;
}

// The loader, the ICDs and LLVM are loaded once before the fd-leak listener takes its first snapshot.
void warm_up_vulkan() { (void)probe_with_validation(); }
const membridge::testing::warm_up vulkan_warm_up(&warm_up_vulkan);

TEST(vulkan_probe, every_device_is_described_without_validation_messages) {
  const probed p = probe_with_validation();
  if (!p.report.loader_found) GTEST_SKIP() << "no Vulkan loader: " << failure_of(p.report);
  EXPECT_TRUE(p.validation_messages.empty()) << joined(p.validation_messages);
  ASSERT_FALSE(p.report.failure) << failure_of(p.report);
  EXPECT_EQ(p.report.library, "libvulkan.so.1");
  ASSERT_TRUE(p.report.loader_version);
  if (p.report.devices.empty()) GTEST_SKIP() << "the Vulkan loader found no driver";
  for (std::size_t i = 0; i < p.report.devices.size(); ++i) {
    const auto& d = p.report.devices[i];
    SCOPED_TRACE(d.name);
    EXPECT_EQ(d.index, i);
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.type.empty());
    EXPECT_FALSE(d.uuid.is_zero());
    EXPECT_GE(d.api_version, 1U << 22U | 1U << 12U) << "below Vulkan 1.1";
    EXPECT_FALSE(d.cuda_ordinal) << "probing alone links nothing to CUDA";
    EXPECT_FALSE(d.failure) << d.failure->message();
    ASSERT_FALSE(d.memory_heaps.empty());
    ASSERT_FALSE(d.memory_types.empty());
    for (const auto& t : d.memory_types) EXPECT_LT(t.heap_index, d.memory_heaps.size());
    for (const auto& h : d.memory_heaps) EXPECT_GT(h.size_bytes, 0U);
  }
}

TEST(vulkan_probe, lavapipe_imports_fds_but_has_no_sparse_binding) {
  const probed p = probe_with_validation();
  const vulkan_device_report* lvp = find_lavapipe(p.report);
  if (lvp == nullptr) GTEST_SKIP() << "lavapipe is not among the Vulkan devices (" << failure_of(p.report) << ")";
  EXPECT_TRUE(p.validation_messages.empty()) << joined(p.validation_messages);
  EXPECT_EQ(lvp->type, "CPU");
  EXPECT_EQ(lvp->driver_name, "llvmpipe");
  EXPECT_NE(lvp->driver_info.find("Mesa"), std::string::npos) << lvp->driver_info;
  EXPECT_TRUE(lvp->external_memory.fd_extension);
  EXPECT_TRUE(lvp->external_memory.opaque_fd_buffer_import);
  EXPECT_TRUE(lvp->timeline_semaphore);
  EXPECT_FALSE(lvp->sparse.sparse_binding);
  EXPECT_FALSE(lvp->sparse.supported());

  const auto j = membridge::info::make_vulkan_json(p.report)["devices"][lvp->index];
  EXPECT_EQ(j["name"], lvp->name);
  EXPECT_EQ(j["external_memory"]["fd_extension"], true);
  EXPECT_EQ(j["sparse_binding"]["supported"], false);
  EXPECT_EQ(j["uuid"], lvp->uuid.to_string());
}

// A CUDA device with lavapipe's UUID (made up: lavapipe is no CUDA device) is linked to it and judged
// by what lavapipe really offers.
TEST(vulkan_probe, a_cuda_device_with_the_same_uuid_is_linked_and_judged) {
  const probed p = probe_with_validation();
  const vulkan_device_report* lvp = find_lavapipe(p.report);
  if (lvp == nullptr) GTEST_SKIP() << "lavapipe is not among the Vulkan devices (" << failure_of(p.report) << ")";
  membridge::info::report r;
  r.cuda.available = true;
  r.cuda.devices.resize(1);
  r.cuda.devices[0].ordinal = 3;
  r.cuda.devices[0].identity.uuid = lvp->uuid;
  r.vulkan = p.report;
  membridge::info::link_vulkan(r);
  EXPECT_EQ(r.vulkan->devices.at(lvp->index).cuda_ordinal, 3);
  const auto& verdict = r.cuda.devices[0].vulkan_interop;
  ASSERT_TRUE(verdict);
  EXPECT_EQ(verdict->vulkan_device, lvp->index);
  EXPECT_EQ(verdict->ready, lvp->external_semaphore.usable() && lvp->timeline_semaphore) << verdict->reason;
  EXPECT_NE(verdict->reason.find("Vulkan device " + std::to_string(lvp->index)), std::string::npos) << verdict->reason;
}

}  // namespace
