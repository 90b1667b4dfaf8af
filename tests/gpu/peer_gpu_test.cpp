// gpu tier: peers. On any machine: membridge's peer matrix agrees with the CUDA runtime's
// cudaDeviceCanAccessPeer for every pair. With two GPUs: memory made and mapped on GPU 0 is written
// by kernels on GPU 1 through cuda::set_access and read back on GPU 0, every word checked. On one GPU
// the two-GPU test is reported as not run; MEMBRIDGE_REQUIRE_GPUS=2 turns that into a failure.
#include "gpu_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/peer.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include <vector>

namespace membridge::testing {
namespace {

using namespace membridge::literals;

class peer_gpu_test : public gpu_test {
 protected:
  /// The number of GPUs, or -1 after a failure.
  static int gpu_count() {
    int n = 0;
    const cudaError_t rc = cudaGetDeviceCount(&n);
    EXPECT_EQ(rc, cudaSuccess) << cudaGetErrorName(rc);
    return rc == cudaSuccess ? n : -1;
  }
};

TEST_F(peer_gpu_test, the_peer_matrix_agrees_with_the_cuda_runtime) {
  const int n = gpu_count();
  ASSERT_GT(n, 0);
  const auto m = cuda::peer_matrix(dev_.get_driver());
  ASSERT_TRUE(m) << m.error().message();
  ASSERT_EQ(m->size(), static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1));
  for (const cuda::peer_link& link : *m) {
    int can = -1;
    MB_CUDA_OK(cudaDeviceCanAccessPeer(&can, link.from, link.to));
    EXPECT_EQ(link.access, can != 0) << link.from << " -> " << link.to;
  }
  EXPECT_TRUE(cuda::require_peer_access(dev_, dev_)) << "a GPU always reaches its own memory";
}

TEST_F(peer_gpu_test, a_second_gpu_writes_memory_of_the_first_through_set_access) {
  cuda::device other;
  open_second_gpu(other);
  if (IsSkipped() || HasFatalFailure()) return;
  MB_OK(cuda::require_peer_access(other, dev_));
  constexpr std::size_t bytes = 64_MiB;
  auto range = cuda::address_range::reserve(dev_, bytes);
  ASSERT_TRUE(range) << range.error().message();
  auto memory = cuda::vmm_allocation::create(dev_, bytes);
  ASSERT_TRUE(memory) << memory.error().message();
  auto mapped = cuda::mapping::map(*range, 0, *memory);
  ASSERT_TRUE(mapped) << mapped.error().message();
  const std::vector<cuda::device_access> grants{{&other, cuda::access::read_write}};
  MB_OK(cuda::set_access(dev_, mapped->address(), bytes, grants));

  void* p = reinterpret_cast<void*>(mapped->address());
  MB_CUDA_OK(cudaSetDevice(1));
  MB_CUDA_OK(gpu::fill_pattern(p, bytes, 0x5eed14));
  MB_CUDA_OK(cudaDeviceSynchronize());
  MB_CUDA_OK(cudaSetDevice(0));
  EXPECT_EQ(mismatches(p, bytes, 0x5eed14), 0ULL) << "GPU 0 reads what GPU 1 wrote";
  MB_CUDA_OK(gpu::fill_pattern(p, bytes, 0x5eed15));
  MB_CUDA_OK(cudaDeviceSynchronize());
  MB_CUDA_OK(cudaSetDevice(1));
  const unsigned long long seen_on_1 = mismatches(p, bytes, 0x5eed15);
  MB_CUDA_OK(cudaSetDevice(0));
  EXPECT_EQ(seen_on_1, 0ULL) << "GPU 1 reads what GPU 0 wrote";
}

}  // namespace
}  // namespace membridge::testing
