// Opening the GPU for the tier, and the warm-up that runs before the fd-leak listener takes its first
// snapshot: the CUDA runtime and driver open their device files lazily (first context, first
// allocation, first launch, first export/import), and those long-lived fds are not leaks.
#include "gpu_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

namespace membridge::testing {

result<cuda::device> open_gpu() {
  int count = 0;
  if (const cudaError_t rc = cudaGetDeviceCount(&count); rc != cudaSuccess || count == 0)
    return error(errc::driver_unavailable, "cudaGetDeviceCount",
                 rc != cudaSuccess ? cudaGetErrorName(rc) : "no CUDA devices");
  if (const cudaError_t rc = cudaSetDevice(0); rc != cudaSuccess)
    return error(errc::driver_unavailable, "cudaSetDevice", cudaGetErrorName(rc));
  if (const cudaError_t rc = cudaFree(nullptr); rc != cudaSuccess)  // creates the primary context
    return error(errc::driver_unavailable, "cudaFree(nullptr)", cudaGetErrorName(rc));
  return cuda::device::open(0);
}

namespace {

void warm_up_gpu() {
  using namespace membridge::literals;
  auto dev = open_gpu();
  if (!dev) return;  // the tests will skip or fail with the reason
  auto memory = cuda::vmm_allocation::create(*dev, 2_MiB);
  auto range = cuda::address_range::reserve(*dev, 2_MiB);
  if (!memory || !range) return;
  auto mapped = cuda::mapping::map(*range, 0, *memory);
  if (!mapped) return;
  unsigned long long bad = 0;
  (void)gpu::fill_pattern(reinterpret_cast<void*>(mapped->address()), 2_MiB, 1);
  (void)gpu::count_mismatches(reinterpret_cast<void*>(mapped->address()), 2_MiB, 1, bad);
  if (auto fd = memory->export_fd()) (void)cuda::vmm_allocation::import(*dev, *fd, 2_MiB);
}

const warm_up gpu_warm_up(&warm_up_gpu);

}  // namespace
}  // namespace membridge::testing
