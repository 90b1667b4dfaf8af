// Physical allocations, ranges and mappings on a real GPU: kernels write and read through mapped
// memory; an exported fd imported back maps the same bytes at a second address.
#include "gpu_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <vector>

namespace membridge::testing {
namespace {

using namespace membridge::literals;
namespace cu = membridge::cuda;

TEST_F(gpu_test, kernels_write_and_read_mapped_vmm_memory) {
  auto memory = cu::vmm_allocation::create(dev_, 256_MiB);
  MB_OK(memory);
  auto range = cu::address_range::reserve(dev_, 512_MiB);
  MB_OK(range);
  auto mapped = cu::mapping::map(*range, 128_MiB, *memory);
  MB_OK(mapped);
  void* p = as_ptr(mapped->address());
  MB_CUDA_OK(gpu::fill_pattern(p, 256_MiB, 0x1234));
  EXPECT_EQ(mismatches(p, 256_MiB, 0x1234), 0u);
  EXPECT_EQ(mismatches(p, 256_MiB, 0x9999), 256_MiB / 4) << "the check must see a wrong seed";
  // The host sees the same bytes.
  std::vector<std::uint32_t> host(1024);
  MB_CUDA_OK(cudaMemcpy(host.data(), p, host.size() * 4, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < host.size(); ++i) ASSERT_EQ(host[i], gpu::pattern(i, 0x1234)) << i;
}

TEST_F(gpu_test, an_exported_fd_imported_back_aliases_the_same_memory) {
  auto memory = cu::vmm_allocation::create(dev_, 64_MiB);
  MB_OK(memory);
  auto fd = memory->export_fd();
  MB_OK(fd);
  EXPECT_TRUE(*membridge::os::borrowed_fd(*fd).is_close_on_exec());
  auto imported = cu::vmm_allocation::import(dev_, *fd, 64_MiB);
  MB_OK(imported);
  auto range_a = cu::address_range::reserve(dev_, 64_MiB);
  auto range_b = cu::address_range::reserve(dev_, 64_MiB);
  MB_OK(range_a);
  MB_OK(range_b);
  auto a = cu::mapping::map(*range_a, 0, *memory);
  auto b = cu::mapping::map(*range_b, 0, *imported);
  MB_OK(a);
  MB_OK(b);
  ASSERT_NE(a->address(), b->address());
  MB_CUDA_OK(gpu::fill_pattern(as_ptr(a->address()), 64_MiB, 0xA11A5));
  EXPECT_EQ(mismatches(as_ptr(b->address()), 64_MiB, 0xA11A5), 0u);
  MB_CUDA_OK(gpu::fill_pattern(as_ptr(b->address()), 64_MiB, 0xB0B));
  EXPECT_EQ(mismatches(as_ptr(a->address()), 64_MiB, 0xB0B), 0u);
  // Released handles and a closed fd do not free memory that is still mapped.
  memory->reset();
  fd->reset();
  EXPECT_EQ(mismatches(as_ptr(b->address()), 64_MiB, 0xB0B), 0u);
}

TEST_F(gpu_test, read_only_access_can_be_granted_and_restored) {
  auto memory = cu::vmm_allocation::create(dev_, 2_MiB);
  auto range = cu::address_range::reserve(dev_, 2_MiB);
  MB_OK(memory);
  MB_OK(range);
  auto mapped = cu::mapping::map(*range, 0, *memory);
  MB_OK(mapped);
  MB_CUDA_OK(gpu::fill_pattern(as_ptr(mapped->address()), 2_MiB, 77));
  MB_OK(mapped->set_access(cu::access::read));
  EXPECT_EQ(mismatches(as_ptr(mapped->address()), 2_MiB, 77), 0u);  // reading is allowed
  MB_OK(mapped->set_access(cu::access::read_write));
  MB_CUDA_OK(gpu::fill_pattern(as_ptr(mapped->address()), 2_MiB, 78));
  EXPECT_EQ(mismatches(as_ptr(mapped->address()), 2_MiB, 78), 0u);
}

TEST_F(gpu_test, allocation_failures_are_clear_errors) {
  const auto too_big = cu::vmm_allocation::create(dev_, dev_.total_memory() * 2);
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code(), membridge::errc::out_of_memory) << too_big.error().message();
  EXPECT_NE(too_big.error().message().find("cuMemCreate"), std::string::npos);
  const auto memfd = membridge::os::unique_fd::from_native(::memfd_create("not-cuda", MFD_CLOEXEC));
  ASSERT_TRUE(memfd.valid());
  const auto foreign = cu::vmm_allocation::import(dev_, memfd, 2_MiB);
  ASSERT_FALSE(foreign) << "a memfd is not a CUDA allocation";
  EXPECT_EQ(foreign.error().code(), membridge::errc::invalid_argument) << foreign.error().message();
  EXPECT_NE(::fcntl(memfd.get(), F_GETFD), -1) << "the caller's fd must stay open";
}

}  // namespace
}  // namespace membridge::testing
