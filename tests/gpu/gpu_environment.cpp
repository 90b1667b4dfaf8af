// Opening the GPU for the tier, and the warm-up that runs before the fd-leak listener takes its first
// snapshot: the CUDA runtime and driver open their device files lazily (first context, first
// allocation, first launch, first export/import), and those long-lived fds are not leaks.
#include "gpu_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/peer.hpp>
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

/// The warm-up of one device: context, VMM allocation, mapping, kernels, export and import.
void warm_up_device(const cuda::device& dev) {
  using namespace membridge::literals;
  auto memory = cuda::vmm_allocation::create(dev, 2_MiB);
  auto range = cuda::address_range::reserve(dev, 2_MiB);
  if (!memory || !range) return;
  auto mapped = cuda::mapping::map(*range, 0, *memory);
  if (!mapped) return;
  unsigned long long bad = 0;
  (void)gpu::fill_pattern(reinterpret_cast<void*>(mapped->address()), 2_MiB, 1);
  (void)gpu::count_mismatches(reinterpret_cast<void*>(mapped->address()), 2_MiB, 1, bad);
  if (auto fd = memory->export_fd()) (void)cuda::vmm_allocation::import(dev, *fd, 2_MiB);
}

/// With several GPUs, GPU 1's kernels use GPU 0's memory once (the first peer access opens files too).
void warm_up_peer(const cuda::device& first, const cuda::device& second) {
  using namespace membridge::literals;
  if (!cuda::require_peer_access(second, first)) return;
  auto memory = cuda::vmm_allocation::create(first, 2_MiB);
  auto range = cuda::address_range::reserve(first, 2_MiB);
  if (!memory || !range) return;
  auto mapped = cuda::mapping::map(*range, 0, *memory);
  if (!mapped) return;
  const cuda::device_access grants[] = {{&first, cuda::access::read_write}, {&second, cuda::access::read_write}};
  if (!cuda::set_access(first, mapped->address(), 2_MiB, grants)) return;
  if (cudaSetDevice(second.ordinal()) == cudaSuccess) {
    (void)gpu::fill_pattern(reinterpret_cast<void*>(mapped->address()), 2_MiB, 1);
    (void)cudaDeviceSynchronize();
  }
  (void)cudaSetDevice(first.ordinal());
}

// Every GPU is warmed up, not only GPU 0: the runtime opens a device's files the first time a test
// uses it, and the fd-leak listener would report (and close) them as a leak of that test.
void warm_up_gpu() {
  auto dev = open_gpu();
  if (!dev) return;  // the tests will skip or fail with the reason
  warm_up_device(*dev);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return;
  for (int i = 1; i < count; ++i) {
    if (cudaSetDevice(i) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) continue;
    auto other = cuda::device::open(dev->shared_driver(), i);
    if (!other) continue;
    warm_up_device(*other);
    (void)cudaSetDevice(0);
    if (i == 1) warm_up_peer(*dev, *other);
  }
  (void)cudaSetDevice(0);
}

const warm_up gpu_warm_up(&warm_up_gpu);

}  // namespace
}  // namespace membridge::testing
