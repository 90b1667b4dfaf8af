// Two rules of the CUDA VMM chapter on the scripted driver: compressible memory (requested, read
// back with cuMemGetAllocationPropertiesFromHandle, refused as unsupported where the driver says no)
// and virtual aliasing (one allocation mapped at two addresses, each mapping torn down on its own).
#include "fake_driver_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::cuda::address_range;
using membridge::cuda::allocation_options;
using membridge::cuda::handle_type;
using membridge::cuda::mapping;
using membridge::cuda::platform_handles;
using membridge::cuda::vmm_allocation;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class compressible_test : public membridge::testing::fake_driver_test {
 protected:
  void SetUp() override { fake_.attributes[CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED] = 1; }
  static constexpr allocation_options compressible{.handles = platform_handles, .compressible = true};
};

TEST_F(compressible_test, granted_compression_is_read_back_at_creation) {
  auto dev = open_device();
  const std::size_t calls_before = fake_.calls().size();
  auto memory = vmm_allocation::create(dev, 4_MiB, compressible);
  ASSERT_TRUE(memory) << memory.error().message();
  EXPECT_TRUE(memory->compressed());
  const auto& calls = fake_.calls();
  EXPECT_NE(std::find(calls.begin() + static_cast<std::ptrdiff_t>(calls_before), calls.end(),
                      "cuMemGetAllocationPropertiesFromHandle"),
            calls.end());
  auto props = memory->properties();
  ASSERT_TRUE(props) << props.error().message();
  EXPECT_TRUE(props->compressed);
  EXPECT_EQ(props->handles, platform_handles);
  EXPECT_EQ(props->device, 0);
  EXPECT_FALSE(props->gpu_direct_rdma);
}

TEST_F(compressible_test, plain_memory_reads_back_uncompressed_and_skips_the_read_at_creation) {
  auto dev = open_device();
  const std::size_t calls_before = fake_.calls().size();
  auto memory = vmm_allocation::create(dev, 2_MiB);
  ASSERT_TRUE(memory) << memory.error().message();
  EXPECT_FALSE(memory->compressed());
  const auto& calls = fake_.calls();
  EXPECT_EQ(std::find(calls.begin() + static_cast<std::ptrdiff_t>(calls_before), calls.end(),
                      "cuMemGetAllocationPropertiesFromHandle"),
            calls.end())
      << "a plain allocation pays no extra driver call";
  auto props = memory->properties();
  ASSERT_TRUE(props) << props.error().message();
  EXPECT_FALSE(props->compressed);
  EXPECT_EQ(props->handles, platform_handles);
}

TEST_F(compressible_test, a_request_the_driver_does_not_grant_gives_plain_memory) {
  fake_.grants_compression = false;
  auto dev = open_device();
  auto memory = vmm_allocation::create(dev, 2_MiB, compressible);
  ASSERT_TRUE(memory) << memory.error().message();
  EXPECT_FALSE(memory->compressed());
  EXPECT_FALSE(memory->properties().value().compressed);
  EXPECT_TRUE(memory->export_handle()) << "plain memory exports as usual";
}

TEST_F(compressible_test, a_device_without_compression_refuses_before_allocating) {
  fake_.attributes[CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED] = 0;
  auto dev = open_device();
  const auto before = fake_.state();
  const auto memory = vmm_allocation::create(dev, 2_MiB, compressible);
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error().code(), errc::unsupported);
  EXPECT_TRUE(contains(memory.error().message(), "no generic compression")) << memory.error().message();
  EXPECT_EQ(fake_.state(), before);
}

TEST_F(compressible_test, a_driver_refusing_shareable_compressible_memory_is_unsupported_with_the_reason) {
  fake_.compressible_shareable_create = CUDA_ERROR_NOT_SUPPORTED;
  auto dev = open_device();
  const auto before = fake_.state();
  const auto memory = vmm_allocation::create(dev, 2_MiB, compressible);
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error().code(), errc::unsupported);
  EXPECT_EQ(memory.error().native_code(), CUDA_ERROR_NOT_SUPPORTED);
  const std::string message = memory.error().message();
  EXPECT_TRUE(contains(message, "cuMemCreate")) << message;
  EXPECT_TRUE(contains(message, "refuses compressible memory exportable as " + std::string(to_string(platform_handles))))
      << message;
  EXPECT_TRUE(contains(message, "handles = none")) << message;
  EXPECT_EQ(fake_.state(), before);

  // The advice holds: without a handle type the same request is accepted.
  auto local = vmm_allocation::create(dev, 2_MiB, {.handles = handle_type::none, .compressible = true});
  ASSERT_TRUE(local) << local.error().message();
  EXPECT_TRUE(local->compressed());
  const auto fd = local->export_handle();
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code(), errc::unsupported);
}

TEST_F(compressible_test, out_of_memory_stays_out_of_memory_for_compressible_requests) {
  fake_.compressible_shareable_create = CUDA_ERROR_NOT_SUPPORTED;
  auto dev = open_device();
  fake_.fail_function("cuMemCreate", CUDA_ERROR_OUT_OF_MEMORY);
  const auto memory = vmm_allocation::create(dev, 2_MiB, compressible);
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error().code(), errc::out_of_memory) << memory.error().message();
}

TEST_F(compressible_test, a_driver_refusing_to_export_compressed_memory_is_unsupported_with_the_reason) {
  fake_.compressed_export = CUDA_ERROR_NOT_SUPPORTED;
  auto dev = open_device();
  auto memory = vmm_allocation::create(dev, 2_MiB, compressible);
  ASSERT_TRUE(memory) << memory.error().message();
  ASSERT_TRUE(memory->compressed());
  const auto fd = memory->export_handle();
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code(), errc::unsupported);
  EXPECT_EQ(fd.error().native_code(), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_TRUE(contains(fd.error().message(), "refuses to export compressed memory")) << fd.error().message();
  EXPECT_TRUE(contains(fd.error().message(), "compressible = false")) << fd.error().message();
  EXPECT_TRUE(memory->valid()) << "a refused export leaves the allocation usable";
}

TEST_F(compressible_test, an_import_of_compressed_memory_reports_it_through_properties) {
  auto dev = open_device();
  auto memory = vmm_allocation::create(dev, 2_MiB, compressible);
  ASSERT_TRUE(memory) << memory.error().message();
  auto fd = memory->export_handle();
  ASSERT_TRUE(fd) << fd.error().message();
  auto imported = vmm_allocation::import(dev, *fd, 2_MiB);
  ASSERT_TRUE(imported) << imported.error().message();
  EXPECT_FALSE(imported->compressed()) << "compressed() is what create() read back; imports ask properties()";
  auto props = imported->properties();
  ASSERT_TRUE(props) << props.error().message();
  EXPECT_TRUE(props->compressed);
}

TEST_F(compressible_test, a_failed_read_back_fails_the_creation_and_releases_the_memory) {
  auto dev = open_device();
  const auto before = fake_.state();
  fake_.fail_function("cuMemGetAllocationPropertiesFromHandle", CUDA_ERROR_UNKNOWN);
  const auto memory = vmm_allocation::create(dev, 2_MiB, compressible);
  ASSERT_FALSE(memory);
  EXPECT_TRUE(contains(memory.error().message(), "cuMemGetAllocationPropertiesFromHandle")) << memory.error().message();
  EXPECT_EQ(fake_.state(), before) << "the handle must be released";
}

TEST_F(compressible_test, moves_and_release_carry_the_compression_flag) {
  auto dev = open_device();
  auto memory = vmm_allocation::create(dev, 2_MiB, compressible);
  ASSERT_TRUE(memory) << memory.error().message();
  vmm_allocation moved = std::move(*memory);
  EXPECT_TRUE(moved.compressed());
  EXPECT_FALSE(memory->compressed());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  vmm_allocation assigned;
  assigned = std::move(moved);
  EXPECT_TRUE(assigned.compressed());
  EXPECT_FALSE(moved.compressed());  // NOLINT(bugprone-use-after-move)
  assigned.reset();
  EXPECT_FALSE(assigned.compressed());
}

TEST_F(compressible_test, properties_of_an_empty_allocation_is_an_invalid_argument) {
  const vmm_allocation empty;
  const auto props = empty.properties();
  ASSERT_FALSE(props);
  EXPECT_EQ(props.error().code(), errc::invalid_argument);
}

// ------------------------------------------------------------------------------ virtual aliasing ---

class aliasing_test : public membridge::testing::fake_driver_test {};

TEST_F(aliasing_test, one_allocation_maps_at_two_addresses_and_each_mapping_unmaps_on_its_own) {
  auto dev = open_device();
  auto memory = vmm_allocation::create(dev, 4_MiB);
  auto range_a = address_range::reserve(dev, 4_MiB);
  auto range_b = address_range::reserve(dev, 8_MiB);
  ASSERT_TRUE(memory && range_a && range_b);
  auto a = mapping::map(*range_a, 0, *memory);
  ASSERT_TRUE(a) << a.error().message();
  auto b = mapping::map(*range_b, 4_MiB, *memory);
  ASSERT_TRUE(b) << b.error().message();
  ASSERT_NE(a->address(), b->address());

  const auto s = fake_.state();
  ASSERT_EQ(s.mappings.size(), 2U);
  EXPECT_EQ(s.mappings.at(a->address()).physical_id, s.mappings.at(b->address()).physical_id)
      << "both addresses must show the same physical memory";
  EXPECT_EQ(s.mappings.at(a->address()).access, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(s.mappings.at(b->address()).access, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);

  // Releasing the handle and unmapping one alias leave the other mapped (the memory lives on).
  const std::size_t free_with_memory = fake_.state().free_memory;
  memory->reset();
  a->reset();
  EXPECT_EQ(fake_.state().mappings.size(), 1U);
  EXPECT_EQ(fake_.state().free_memory, free_with_memory) << "the second mapping keeps the memory";
  b->reset();
  EXPECT_TRUE(fake_.state().mappings.empty());
  EXPECT_EQ(fake_.state().free_memory, fake_.total_memory);
}

TEST_F(aliasing_test, the_same_allocation_twice_in_one_range_is_two_aliases) {
  auto dev = open_device();
  auto memory = vmm_allocation::create(dev, 2_MiB);
  auto range = address_range::reserve(dev, 4_MiB);
  ASSERT_TRUE(memory && range);
  auto low = mapping::map(*range, 0, *memory);
  auto high = mapping::map(*range, 2_MiB, *memory);
  ASSERT_TRUE(low && high);
  EXPECT_EQ(high->address(), low->address() + 2_MiB);
  // Adjacent aliases can share one access call like adjacent chunks.
  mapping both[] = {std::move(*low), std::move(*high)};
  const auto narrowed = mapping::set_access(both, membridge::cuda::access::read);
  ASSERT_TRUE(narrowed) << narrowed.error().message();
  const auto s = fake_.state();
  ASSERT_EQ(s.mappings.size(), 2U);
  for (const auto& [address, m] : s.mappings) EXPECT_EQ(m.access, CU_MEM_ACCESS_FLAGS_PROT_READ);
  EXPECT_EQ(s.mappings.begin()->second.physical_id, s.mappings.rbegin()->second.physical_id);
}

}  // namespace
