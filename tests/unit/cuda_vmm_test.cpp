// vmm_allocation, address_range and mapping on the scripted driver: sizes, ownership of fds,
// teardown order and clean failure paths.
#include "fake_driver_test.hpp"
#include "fd_leak_listener.hpp"

#include "log_capture.hpp"

#include <membridge/core/log.hpp>
#include <membridge/core/units.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::cuda::access;
using membridge::cuda::address_range;
using membridge::cuda::allocation_options;
using membridge::cuda::handle_type;
using membridge::cuda::mapping;
using membridge::cuda::vmm_allocation;
namespace os = membridge::os;

class vmm_test : public membridge::testing::fake_driver_test {
 protected:
  /// A range of `range_bytes` reserved on device 0 and `memory_bytes` of memory made there (empty, with
  /// the test failed, when a step fails).
  struct range_and_memory {
    address_range range;
    vmm_allocation memory;
  };
  range_and_memory reserve_and_create(std::size_t range_bytes, std::size_t memory_bytes) {
    const auto dev = open_device();
    return {membridge::testing::value_or_failure(address_range::reserve(dev, range_bytes)),
            membridge::testing::value_or_failure(vmm_allocation::create(dev, memory_bytes))};
  }
};

TEST_F(vmm_test, create_rounds_up_to_the_granularity_and_releases_on_destruction) {
  auto dev = open_device();
  {
    auto memory = vmm_allocation::create(dev, 3_MiB);
    ASSERT_TRUE(memory) << memory.error().message();
    EXPECT_TRUE(memory->valid());
    EXPECT_EQ(memory->size(), 4_MiB);
    EXPECT_EQ(memory->handles(), handle_type::posix_fd);
    EXPECT_EQ(fake_.state().handles.size(), 1u);
    EXPECT_EQ(fake_.state().free_memory, 80_GiB - 4_MiB);
  }
  EXPECT_TRUE(fake_.state().handles.empty());
  EXPECT_EQ(fake_.state().free_memory, 80_GiB);
}

TEST_F(vmm_test, create_refuses_bad_requests_with_clear_errors) {
  auto dev = open_device();
  EXPECT_EQ(vmm_allocation::create(dev, 0).error().code(), errc::invalid_argument);
  EXPECT_EQ(vmm_allocation::create(dev, 2_MiB, {.handles = handle_type::win32}).error().code(), errc::unsupported);
  EXPECT_EQ(vmm_allocation::create(dev, 2_MiB, {.compressible = true}).error().code(), errc::unsupported);
  EXPECT_EQ(vmm_allocation::create({}, 2_MiB).error().code(), errc::invalid_argument);
  const auto oom = vmm_allocation::create(dev, 100_GiB);
  ASSERT_FALSE(oom);
  EXPECT_EQ(oom.error().code(), errc::out_of_memory);
  EXPECT_NE(oom.error().message().find("cuMemCreate: CUDA_ERROR_OUT_OF_MEMORY (2): allocating 100 GiB on device 0"),
            std::string::npos)
      << oom.error().message();
  EXPECT_TRUE(fake_.state().handles.empty());
}

TEST_F(vmm_test, a_device_without_fd_export_cannot_make_fd_allocations) {
  fake_.attributes[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED] = 0;
  auto dev = open_device();
  const auto memory = vmm_allocation::create(dev, 2_MiB);
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error().code(), errc::unsupported);
  EXPECT_NE(memory.error().message().find("cannot export POSIX fd handles"), std::string::npos);
  EXPECT_TRUE(vmm_allocation::create(dev, 2_MiB, {.handles = handle_type::none}));
}

TEST_F(vmm_test, export_returns_a_new_close_on_exec_fd_the_caller_owns) {
  auto dev = open_device();
  auto memory = vmm_allocation::create(dev, 2_MiB);
  ASSERT_TRUE(memory);
  auto fd = memory->export_fd();
  ASSERT_TRUE(fd) << fd.error().message();
  ASSERT_TRUE(fd->valid());
  EXPECT_TRUE(*os::borrowed_fd(*fd).is_close_on_exec());  // the driver's fd was not
  auto second = memory->export_fd();
  ASSERT_TRUE(second);
  EXPECT_NE(second->get(), fd->get());
  auto unshareable = vmm_allocation::create(dev, 2_MiB, {.handles = handle_type::none});
  ASSERT_TRUE(unshareable);
  EXPECT_EQ(unshareable->export_fd().error().code(), errc::unsupported);
  EXPECT_EQ(vmm_allocation{}.export_fd().error().code(), errc::invalid_argument);
}

TEST_F(vmm_test, import_borrows_the_callers_fd_and_shares_the_memory) {
  auto dev = open_device();
  auto memory = vmm_allocation::create(dev, 4_MiB);
  ASSERT_TRUE(memory);
  auto fd = memory->export_fd();
  ASSERT_TRUE(fd);
  const auto fds_before = membridge::testing::open_fds();
  auto imported = vmm_allocation::import(dev, *fd, 4_MiB);
  ASSERT_TRUE(imported) << imported.error().message();
  EXPECT_EQ(membridge::testing::open_fds(), fds_before);  // the duplicate was closed, the original kept
  EXPECT_NE(::fcntl(fd->get(), F_GETFD), -1);
  EXPECT_EQ(imported->size(), 4_MiB);
  EXPECT_NE(imported->native(), memory->native());
  // Same physical memory: releasing the original leaves it allocated until the import goes.
  memory->reset();
  EXPECT_EQ(fake_.state().free_memory, 80_GiB - 4_MiB);
  imported->reset();
  EXPECT_EQ(fake_.state().free_memory, 80_GiB);
}

TEST_F(vmm_test, import_of_a_foreign_fd_fails_and_leaves_the_fd_open) {
  auto dev = open_device();
  auto foreign = os::unique_fd::from_native(::memfd_create("not-cuda", MFD_CLOEXEC));
  const auto imported = vmm_allocation::import(dev, foreign, 2_MiB);
  ASSERT_FALSE(imported);
  EXPECT_EQ(imported.error().code(), errc::invalid_argument);
  EXPECT_EQ(imported.error().call(), "cuMemImportFromShareableHandle");
  EXPECT_EQ(imported.error().native_name(), "CUDA_ERROR_UNKNOWN");
  EXPECT_NE(imported.error().message().find("the fd is not an exported CUDA allocation"), std::string::npos)
      << imported.error().message();
  EXPECT_NE(::fcntl(foreign.get(), F_GETFD), -1);
  EXPECT_EQ(vmm_allocation::import(dev, foreign, 3_MiB).error().code(), errc::invalid_argument);
  EXPECT_EQ(vmm_allocation::import(dev, os::borrowed_fd{}, 2_MiB).error().code(), errc::invalid_argument);
}

TEST_F(vmm_test, from_native_adopts_and_release_gives_back) {
  auto dev = open_device();
  auto made = vmm_allocation::create(dev, 2_MiB);
  ASSERT_TRUE(made);
  const CUmemGenericAllocationHandle raw = made->release();
  EXPECT_FALSE(made->valid());
  EXPECT_EQ(fake_.state().handles.count(raw), 1u);  // still alive: the caller owns it now
  {
    auto adopted = vmm_allocation::from_native(dev, raw, 2_MiB, handle_type::posix_fd);
    EXPECT_EQ(adopted.native(), raw);
  }
  EXPECT_EQ(fake_.state().handles.count(raw), 0u);
}

TEST_F(vmm_test, reserve_rounds_and_checks_alignment) {
  auto dev = open_device();
  auto range = address_range::reserve(dev, 5_MiB);
  ASSERT_TRUE(range) << range.error().message();
  EXPECT_EQ(range->size(), 6_MiB);
  EXPECT_EQ(range->base() % 2_MiB, 0u);
  EXPECT_TRUE(range->contains(0, 6_MiB));
  EXPECT_TRUE(range->contains(4_MiB, 2_MiB));
  EXPECT_FALSE(range->contains(4_MiB, 4_MiB));
  EXPECT_FALSE(range->contains(SIZE_MAX, 2));
  auto aligned = address_range::reserve(dev, 2_MiB, 1_GiB);
  ASSERT_TRUE(aligned);
  EXPECT_EQ(aligned->base() % 1_GiB, 0u);
  EXPECT_EQ(address_range::reserve(dev, 2_MiB, 3_MiB).error().code(), errc::invalid_argument);
  EXPECT_EQ(address_range::reserve(dev, 2_MiB, 1_MiB).error().code(), errc::invalid_argument);
  EXPECT_EQ(address_range::reserve(dev, 0).error().code(), errc::invalid_argument);
  EXPECT_EQ(address_range::reserve(dev, SIZE_MAX).error().code(), errc::invalid_argument);
  fake_.address_space = 8_MiB;
  EXPECT_EQ(address_range::reserve(dev, 16_MiB).error().code(), errc::out_of_memory);
}

TEST_F(vmm_test, map_grants_access_and_unmap_waits_for_the_device_first) {
  auto [range, memory] = reserve_and_create(8_MiB, 4_MiB);
  ASSERT_TRUE(range.valid() && memory.valid());
  {
    auto mapped = mapping::map(range, 4_MiB, memory);
    ASSERT_TRUE(mapped) << mapped.error().message();
    EXPECT_EQ(mapped->address(), range.base() + 4_MiB);
    EXPECT_EQ(mapped->size(), 4_MiB);
    EXPECT_EQ(mapped->rights(), access::read_write);
    const auto state = fake_.state();
    ASSERT_EQ(state.mappings.size(), 1u);
    EXPECT_EQ(state.mappings.begin()->second.access, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    std::size_t mark = fake_.calls().size();
    ASSERT_TRUE(mapped->set_access(access::read));
    EXPECT_EQ(fake_.state().mappings.begin()->second.access, CU_MEM_ACCESS_FLAGS_PROT_READ);
    EXPECT_EQ(mapped->rights(), access::read);
    EXPECT_TRUE(contains_in_order(calls_since(mark), {"cuCtxSynchronize", "cuMemSetAccess"}))
        << "narrowing access must wait for queued kernels first";
    mark = fake_.calls().size();
    const int syncs = fake_.synchronize_count();
    ASSERT_TRUE(mapped->set_access(access::read_write));  // widening needs no wait
    EXPECT_EQ(fake_.synchronize_count(), syncs);
    ASSERT_TRUE(mapped->set_access(access::read));
    mark = fake_.calls().size();
    ASSERT_TRUE(mapped->unmap());
    EXPECT_FALSE(mapped->valid());
    EXPECT_TRUE(contains_in_order(calls_since(mark), {"cuCtxSynchronize", "cuMemUnmap"}));
    ASSERT_TRUE(mapped->unmap());  // unmapping an empty mapping is a no-op
  }
  EXPECT_TRUE(fake_.state().mappings.empty());
}

TEST_F(vmm_test, map_refuses_misplaced_memory_without_calling_the_driver) {
  auto [range, memory] = reserve_and_create(8_MiB, 4_MiB);
  ASSERT_TRUE(range.valid() && memory.valid());
  const int before = fake_.counted_calls();
  EXPECT_EQ(mapping::map(range, 1_MiB, memory).error().code(), errc::invalid_argument);   // misaligned
  EXPECT_EQ(mapping::map(range, 6_MiB, memory).error().code(), errc::invalid_argument);   // past the end
  EXPECT_EQ(mapping::map(address_range{}, 0, memory).error().code(), errc::invalid_argument);
  EXPECT_EQ(mapping::map(range, 0, vmm_allocation{}).error().code(), errc::invalid_argument);
  EXPECT_EQ(fake_.counted_calls(), before);
  auto first = mapping::map(range, 0, memory);
  ASSERT_TRUE(first);
}

TEST_F(vmm_test, a_failed_access_grant_leaves_nothing_mapped) {
  auto [range, memory] = reserve_and_create(4_MiB, 4_MiB);
  ASSERT_TRUE(range.valid() && memory.valid());
  fake_.fail_function("cuMemSetAccess", CUDA_ERROR_OUT_OF_MEMORY);
  const auto mapped = mapping::map(range, 0, memory);
  ASSERT_FALSE(mapped);
  EXPECT_EQ(mapped.error().call(), "cuMemSetAccess");
  EXPECT_TRUE(fake_.state().mappings.empty());
}

TEST_F(vmm_test, map_only_grants_when_asked) {
  auto [range, memory] = reserve_and_create(2_MiB, 2_MiB);
  ASSERT_TRUE(range.valid() && memory.valid());
  auto mapped = mapping::map(range, 0, memory, access::none);
  ASSERT_TRUE(mapped);
  EXPECT_EQ(std::count(fake_.calls().begin(), fake_.calls().end(), "cuMemSetAccess"), 0);
  EXPECT_EQ(mapped->rights(), access::none);
}

// Allocate + reserve + map, failing each driver call in turn: every failure leaves nothing behind.
TEST_F(vmm_test, a_failure_at_every_step_of_allocate_reserve_map_leaks_nothing) {
  auto dev = open_device();
  int forward_end = 0;  // counted calls when the forward steps are done (teardown follows)
  auto attempt = [&]() -> membridge::result<void> {
    MEMBRIDGE_TRY_ASSIGN(auto memory, vmm_allocation::create(dev, 4_MiB));
    MEMBRIDGE_TRY_ASSIGN(auto range, address_range::reserve(dev, 8_MiB));
    MEMBRIDGE_TRY_ASSIGN(auto mapped, mapping::map(range, 2_MiB, memory));
    MEMBRIDGE_TRY_ASSIGN(auto fd, memory.export_fd());
    forward_end = fake_.counted_calls();
    return membridge::ok();
  };
  const int start = fake_.counted_calls();
  ASSERT_TRUE(attempt());
  const auto clean = fake_.state();
  const int calls = forward_end - start;
  int failures = 0;
  for (int k = 0; k < calls; ++k) {
    fake_.fail_nth_call(k, CUDA_ERROR_OUT_OF_MEMORY);
    const auto r = attempt();
    EXPECT_TRUE(fake_.injection_fired()) << "step " << k;
    if (!r) {
      ++failures;
      EXPECT_EQ(r.error().code(), errc::out_of_memory) << r.error().message();
    }
    EXPECT_EQ(fake_.state(), clean) << "step " << k;
    EXPECT_TRUE(fake_.misuse().empty()) << "step " << k;
  }
  EXPECT_GE(failures, 5);  // create, reserve, map, set access, export at least
}

TEST_F(vmm_test, teardown_failures_are_logged_not_thrown) {
  membridge::testing::log_capture logs;
  {
    auto dev = open_device();
    auto memory = vmm_allocation::create(dev, 2_MiB);
    ASSERT_TRUE(memory);
    fake_.fail_function("cuMemRelease", CUDA_ERROR_INVALID_VALUE);
  }
  ASSERT_EQ(logs.lines().size(), 1u);
  EXPECT_NE(logs.lines()[0].find("cuMemRelease: CUDA_ERROR_INVALID_VALUE"), std::string::npos) << logs.lines()[0];
  check_leaks_ = false;  // the fake keeps the handle whose release it refused
}

TEST_F(vmm_test, moves_transfer_ownership) {
  auto dev = open_device();
  auto memory = vmm_allocation::create(dev, 2_MiB);
  auto range = address_range::reserve(dev, 2_MiB);
  ASSERT_TRUE(memory && range);
  vmm_allocation m2 = std::move(*memory);
  address_range r2 = std::move(*range);
  EXPECT_FALSE(memory->valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_FALSE(range->valid());   // NOLINT(bugprone-use-after-move)
  auto mapped = mapping::map(r2, 0, m2);
  ASSERT_TRUE(mapped);
  mapping moved = std::move(*mapped);
  EXPECT_FALSE(mapped->valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(moved.valid());
  vmm_allocation m3;
  m3 = std::move(m2);
  address_range r3;
  r3 = std::move(r2);
  mapping moved2;
  moved2 = std::move(moved);
  EXPECT_EQ(fake_.state().mappings.size(), 1u);
  moved2.reset();
  EXPECT_TRUE(fake_.state().mappings.empty());
}

}  // namespace
