#include "fake_driver_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::cuda::device;
using membridge::cuda::device_uuid;

class device_test : public membridge::testing::fake_driver_test {};

TEST_F(device_test, open_reads_identity_capabilities_and_granularity) {
  fake_.device_name = "Fake H100";
  auto dev = device::open(fake_.driver(), 0);
  ASSERT_TRUE(dev) << dev.error().message();
  EXPECT_TRUE(dev->valid());
  EXPECT_EQ(dev->ordinal(), 0);
  EXPECT_EQ(dev->name(), "Fake H100");
  EXPECT_EQ(dev->uuid().to_string(), "10111213-1415-1617-1819-1a1b1c1d1e1f");
  EXPECT_FALSE(dev->uuid().is_zero());
  EXPECT_EQ(dev->pci_bus_id(), "0000:01:00.0");
  EXPECT_EQ(dev->compute_capability()[0], 9);
  EXPECT_EQ(dev->compute_capability()[1], 0);
  EXPECT_EQ(dev->total_memory(), 80_GiB);
  EXPECT_EQ(dev->granularity(), 2_MiB);
  EXPECT_EQ(dev->recommended_granularity(), 2_MiB);
  const auto& caps = dev->capabilities();
  EXPECT_TRUE(caps.virtual_memory_management);
  // The fake is an H100 on this platform: it exports the platform's handle type only.
  EXPECT_EQ(caps.posix_fd_handles, membridge::cuda::platform_handles == membridge::cuda::handle_type::posix_fd);
  EXPECT_EQ(caps.win32_handles, membridge::cuda::platform_handles == membridge::cuda::handle_type::win32);
  EXPECT_TRUE(caps.fabric_handles);
  EXPECT_TRUE(caps.gpu_direct_rdma_with_vmm);
  EXPECT_FALSE(caps.generic_compression);
  EXPECT_TRUE(caps.timeline_semaphore_interop);
  EXPECT_TRUE(caps.unified_addressing);
  EXPECT_EQ(dev->primary_context(), membridge::testing::fake_primary_context());
  EXPECT_EQ(fake_.primary_retains(), 1);
}

TEST_F(device_test, the_primary_context_is_released_with_the_last_user) {
  {
    auto dev = device::open(fake_.driver(), 0);
    ASSERT_TRUE(dev);
    device moved = std::move(*dev);
    EXPECT_FALSE(dev->valid());  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(fake_.primary_retains(), 1);
  }
  EXPECT_EQ(fake_.primary_retains(), 0);
}

TEST_F(device_test, count_and_out_of_range_ordinals) {
  fake_.device_count = 2;
  EXPECT_EQ(*device::count(fake_.driver()), 2);
  const auto missing = device::open(fake_.driver(), 2);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), errc::invalid_argument);
  EXPECT_NE(missing.error().message().find("device 2 does not exist (2 CUDA devices present)"), std::string::npos)
      << missing.error().message();
  EXPECT_EQ(device::open(fake_.driver(), -1).error().code(), errc::invalid_argument);
  EXPECT_EQ(device::count(nullptr).error().code(), errc::invalid_argument);
}

TEST_F(device_test, a_device_without_vmm_is_unsupported_and_retains_nothing) {
  fake_.attributes[CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED] = 0;
  const auto dev = device::open(fake_.driver(), 0);
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error().code(), errc::unsupported);
  EXPECT_NE(dev.error().message().find("does not support CUDA virtual memory management"), std::string::npos);
  EXPECT_EQ(fake_.primary_retains(), 0);
}

TEST_F(device_test, an_attribute_the_driver_cannot_report_reads_as_unsupported) {
  fake_.attributes.erase(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED);
  auto dev = device::open(fake_.driver(), 0);
  ASSERT_TRUE(dev) << dev.error().message();
  EXPECT_FALSE(dev->capabilities().fabric_handles);
}

TEST_F(device_test, open_by_uuid_finds_the_matching_device) {
  fake_.device_count = 3;
  device_uuid wanted;
  for (std::size_t i = 0; i < 16; ++i) wanted.bytes[i] = static_cast<std::uint8_t>(0x30 + i);  // device 2
  auto dev = device::open_by_uuid(fake_.driver(), wanted);
  ASSERT_TRUE(dev) << dev.error().message();
  EXPECT_EQ(dev->ordinal(), 2);
  EXPECT_EQ(dev->uuid(), wanted);
  device_uuid unknown;
  unknown.bytes.fill(0xee);
  const auto none = device::open_by_uuid(fake_.driver(), unknown);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::invalid_argument);
  EXPECT_NE(none.error().message().find(unknown.to_string()), std::string::npos);
}

TEST_F(device_test, memory_and_synchronize_run_in_the_primary_context) {
  auto dev = open_device();
  const auto info = dev.memory();
  ASSERT_TRUE(info) << info.error().message();
  EXPECT_EQ(info->total_bytes, 80_GiB);
  EXPECT_EQ(info->free_bytes, 80_GiB);
  ASSERT_TRUE(dev.synchronize());
  EXPECT_EQ(fake_.synchronize_count(), 1);
  // Nothing was current, so membridge pushed and popped the primary context around each call.
  const auto& calls = fake_.calls();
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "cuCtxPushCurrent"), 2);
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "cuCtxPopCurrent"), 2);
}

TEST_F(device_test, no_push_when_the_runtime_already_made_the_primary_context_current) {
  auto dev = open_device();
  fake_.current_ = dev.primary_context();
  ASSERT_TRUE(dev.synchronize());
  const auto& calls = fake_.calls();
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "cuCtxPushCurrent"), 0);
  fake_.current_ = nullptr;
}

TEST_F(device_test, a_failure_at_any_step_of_open_leaks_nothing) {
  ASSERT_TRUE(device::open(fake_.driver(), 0));  // learn how many calls a successful open makes
  const int calls = fake_.counted_calls();
  ASSERT_EQ(fake_.primary_retains(), 0);
  for (int k = 0; k < calls; ++k) {
    fake_.fail_nth_call(k, CUDA_ERROR_UNKNOWN);
    {
      auto dev = device::open(fake_.driver(), 0);
      ASSERT_TRUE(fake_.injection_fired()) << "step " << k;
      if (!dev) {
        EXPECT_EQ(dev.error().code(), errc::internal) << dev.error().message();
      } else {
        // Only optional queries (capability flags, PCI bus id) may fail without failing open.
        const std::string failed = fake_.failed_function();
        EXPECT_TRUE(failed == "cuDeviceGetAttribute" || failed == "cuDeviceGetPCIBusId") << failed;
      }
    }
    EXPECT_EQ(fake_.primary_retains(), 0) << "step " << k;
  }
}

TEST_F(device_test, granularity_that_is_not_a_power_of_two_is_an_internal_error) {
  fake_.granularity = 3_MiB;
  const auto dev = device::open(fake_.driver(), 0);
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error().code(), errc::internal);
}

TEST(device_uuid, formats_as_lowercase_groups_and_compares_bytewise) {
  device_uuid a;
  EXPECT_TRUE(a.is_zero());
  EXPECT_EQ(a.to_string(), "00000000-0000-0000-0000-000000000000");
  a.bytes[0] = 0xAB;
  a.bytes[15] = 0x01;
  EXPECT_EQ(a.to_string(), "ab000000-0000-0000-0000-000000000001");
  device_uuid b = a;
  EXPECT_EQ(a, b);
  b.bytes[7] = 1;
  EXPECT_NE(a, b);
  CUuuid raw{};
  raw.bytes[0] = static_cast<char>(0xAB);
  raw.bytes[15] = 0x01;
  EXPECT_EQ(device_uuid::from_native(raw), a);
}

}  // namespace
