#include "support.hpp"

#include "kernels.cuh"  // membridge_gpu_kernels: patterns and their checks
#include "peer_kernels.cuh"

#include <membridge/core/units.hpp>

#include <iostream>

namespace membridge::bench::peer {

namespace gpu = membridge::testing::gpu;

void check_ok(const result<void>& r, std::string_view doing) {
  if (!r) throw bench_failure(std::string(doing) + ": " + r.error().message());
}

// ------------------------------------------------------------------------------------- devices ---

namespace {

/// The value of an opened device; throws device_unavailable with the error's message otherwise.
cuda::device opened_or_unavailable(result<cuda::device>&& dev) {
  if (!dev) throw device_unavailable(dev.error().message());
  return std::move(dev).value();
}

}  // namespace

gpu_pair open_gpu_pair(int local, int remote) {
  open_runtime_device(remote);
  open_runtime_device(local);  // left current
  // membridge after the runtime: the same primary contexts; both GPUs through one loaded driver.
  cuda::device local_device = opened_or_unavailable(cuda::device::open(local));
  cuda::device remote_device = opened_or_unavailable(cuda::device::open(local_device.shared_driver(), remote));
  gpu_pair pair{std::move(local_device), std::move(remote_device), {}, {}, 0, 0};
  pair.to_remote = value_or_fail(cuda::query_peer(pair.local, pair.remote), "query_peer");
  pair.to_local = value_or_fail(cuda::query_peer(pair.remote, pair.local), "query_peer");
  check_cuda(cudaDriverGetVersion(&pair.driver_version), "cudaDriverGetVersion");
  check_cuda(cudaRuntimeGetVersion(&pair.runtime_version), "cudaRuntimeGetVersion");
  return pair;
}

current_device::current_device(int ordinal) {
  check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
  if (ordinal != previous_) check_cuda(cudaSetDevice(ordinal), "cudaSetDevice(" + std::to_string(ordinal) + ")");
}

current_device::~current_device() {
  if (const cudaError_t rc = cudaSetDevice(previous_); rc != cudaSuccess)
    std::cerr << "warning: cudaSetDevice(" << previous_ << "): " << cuda_error_text(rc) << '\n';
}

void require_free_memory(int ordinal, std::size_t bytes) {
  const current_device on(ordinal);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (free_bytes < bytes)
    throw device_unavailable("GPU " + std::to_string(ordinal) + ": " + format_bytes(free_bytes) + " of " +
                             format_bytes(total_bytes) + " free, the benchmark needs " + format_bytes(bytes));
}

// -------------------------------------------------------------------------------------- memory ---

device_memory device_memory::allocate(int ordinal, std::size_t bytes) {
  const current_device on(ordinal);
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, bytes), "cudaMalloc(" + format_bytes(bytes) + ") on GPU " + std::to_string(ordinal));
  return {p, bytes, ordinal};
}

device_memory::~device_memory() {
  if (p_ == nullptr) return;
  int previous = 0;
  if (cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(ordinal_) == cudaSuccess) {
    if (const cudaError_t rc = cudaFree(p_); rc != cudaSuccess)
      std::cerr << "warning: cudaFree: " << cuda_error_text(rc) << '\n';
    (void)cudaSetDevice(previous);
  } else {
    std::cerr << "warning: cannot make GPU " << ordinal_ << " current to free its memory\n";
  }
}

peer_memory peer_memory::create(const cuda::device& owner, const cuda::device& reader, std::size_t bytes) {
  const std::string where = format_bytes(bytes) + " on GPU " + std::to_string(owner.ordinal());
  auto range = value_or_fail(cuda::address_range::reserve(owner, bytes), "address_range::reserve(" + where + ")");
  auto memory = value_or_fail(cuda::vmm_allocation::create(owner, bytes), "vmm_allocation::create(" + where + ")");
  auto map = value_or_fail(cuda::mapping::map(range, 0, memory), "mapping::map(" + where + ")");
  const cuda::device_access grants[] = {{&reader, cuda::access::read_write}};
  check_ok(cuda::set_access(owner, map.address(), map.size(), grants),
           "set_access(GPU " + std::to_string(reader.ordinal()) + " read_write on " + where + ")");
  return {std::move(range), std::move(memory), std::move(map)};
}

// -------------------------------------------------------------------------------------- timing ---

timing_lane::timing_lane(int ordinal) : ordinal_(ordinal), stream_([ordinal] {
  const current_device on(ordinal);
  return cuda_stream();
}()) {
  const current_device on(ordinal);
  check_cuda(cudaEventCreate(&start_), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop_), "cudaEventCreate");
  check_cuda(cudaMalloc(&sink_, sizeof *sink_), "cudaMalloc(sink)");
}

timing_lane::~timing_lane() {
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(ordinal_) != cudaSuccess) return;
  if (sink_ != nullptr) (void)cudaFree(sink_);
  if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
  if (start_ != nullptr) (void)cudaEventDestroy(start_);
  (void)cudaSetDevice(previous);
}

void timing_lane::clear_sink() {
  const current_device on(ordinal_);
  check_cuda(cudaMemsetAsync(sink_, 0, sizeof *sink_, stream()), "cudaMemsetAsync(sink)");
}

std::uint64_t timing_lane::read_sink() {
  const current_device on(ordinal_);
  unsigned long long value = 0;
  check_cuda(cudaMemcpyAsync(&value, sink_, sizeof value, cudaMemcpyDeviceToHost, stream()), "cudaMemcpyAsync(sink)");
  stream_.synchronize();
  return value;
}

double gbps(std::size_t bytes, double ms) { return static_cast<double>(bytes) / (ms * 1.0e6); }

// -------------------------------------------------------------------------------- data checks ---

std::uint64_t pattern_checksum(std::size_t bytes, std::uint32_t seed) {
  return read_checksum(bytes / 4, [seed](std::size_t i) { return gpu::pattern(i, seed); });
}

void verify_pattern(const void* p, std::size_t bytes, std::uint32_t seed, cudaStream_t stream, std::string_view what) {
  unsigned long long bad = 0;
  check_cuda(gpu::count_mismatches(p, bytes, seed, bad, 0, stream), "count_mismatches");
  if (bad != 0)
    throw bench_failure("data check failed: " + std::string(what) + ": " + std::to_string(bad) + " of " +
                        std::to_string(bytes / 4) + " words differ from the pattern written");
}

void verify_value(const void* p, std::size_t bytes, std::uint32_t value, cudaStream_t stream, std::string_view what) {
  unsigned long long bad = 0;
  check_cuda(gpu::count_not_equal(p, bytes, value, bad, stream), "count_not_equal");
  if (bad != 0)
    throw bench_failure("data check failed: " + std::string(what) + ": " + std::to_string(bad) + " of " +
                        std::to_string(bytes / 4) + " words differ from the value written");
}

void verify_checksum(std::uint64_t got, std::uint64_t expected, std::string_view what) {
  if (got != expected)
    throw bench_failure("data check failed: " + std::string(what) + ": checksum " + std::to_string(got) +
                        ", the pattern's is " + std::to_string(expected));
}

}  // namespace membridge::bench::peer
