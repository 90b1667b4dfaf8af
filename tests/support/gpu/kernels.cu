#include "kernels.cuh"

#include <algorithm>
#include <array>

namespace membridge::testing::gpu {

namespace {

constexpr unsigned threads = 256;

unsigned blocks_for(std::size_t items) {
  // Grid-stride loops: enough blocks to fill any current GPU, never more than the work.
  return static_cast<unsigned>(std::min<std::size_t>((items + threads - 1) / threads, 132u * 16u));
}

__global__ void fill_kernel(std::uint32_t* p, std::size_t n, std::uint32_t seed, std::uint64_t first) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = pattern(first + i, seed);
}

__global__ void check_kernel(const std::uint32_t* p, std::size_t n, std::uint32_t seed, std::uint64_t first,
                             unsigned long long* bad) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (p[i] != pattern(first + i, seed)) ++local;
  if (local != 0) atomicAdd(bad, local);
}

__global__ void check_value_kernel(const std::uint32_t* p, std::size_t n, std::uint32_t value, unsigned long long* bad) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (p[i] != value) ++local;
  if (local != 0) atomicAdd(bad, local);
}

__global__ void copy16_kernel(const int4* __restrict__ src, int4* __restrict__ dst, std::size_t n) {
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * 4 + threadIdx.x;
  int4 v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::size_t i = base + static_cast<std::size_t>(k) * blockDim.x;
    if (i < n) v[k] = src[i];
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::size_t i = base + static_cast<std::size_t>(k) * blockDim.x;
    if (i < n) dst[i] = v[k];
  }
}

__global__ void write16_kernel(int4* dst, std::size_t n, std::uint32_t value) {
  const int v = static_cast<int>(value);
  const int4 w{v, v, v, v};
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * 4 + threadIdx.x;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::size_t i = base + static_cast<std::size_t>(k) * blockDim.x;
    if (i < n) dst[i] = w;
  }
}

// One counter per device for the whole process, made on first use on the current device with plain
// cudaMalloc (no memory pool: pools keep freed memory reserved, which would skew the free-memory checks
// of the tests). Per device, so a check kernel on another GPU never writes a counter it has no access to.
cudaError_t device_counter(unsigned long long*& counter) {
  static std::array<unsigned long long*, 64> made{};
  int device = 0;
  if (const cudaError_t rc = cudaGetDevice(&device); rc != cudaSuccess) return rc;
  if (device < 0 || static_cast<std::size_t>(device) >= made.size()) return cudaErrorInvalidDevice;
  unsigned long long*& slot = made[static_cast<std::size_t>(device)];
  if (slot == nullptr) {
    const cudaError_t rc = cudaMalloc(&slot, sizeof *slot);
    if (rc != cudaSuccess) return rc;
  }
  counter = slot;
  return cudaSuccess;
}

template <class Launch>
cudaError_t count_with(Launch launch, unsigned long long& bad, cudaStream_t stream) {
  unsigned long long* counter = nullptr;
  cudaError_t rc = device_counter(counter);
  if (rc == cudaSuccess) rc = cudaMemsetAsync(counter, 0, sizeof *counter, stream);
  if (rc == cudaSuccess) {
    launch(counter);
    rc = cudaGetLastError();
  }
  if (rc == cudaSuccess) rc = cudaMemcpyAsync(&bad, counter, sizeof bad, cudaMemcpyDeviceToHost, stream);
  const cudaError_t synced = cudaStreamSynchronize(stream);
  return rc != cudaSuccess ? rc : synced;
}

}  // namespace

cudaError_t fill_pattern(void* p, std::size_t bytes, std::uint32_t seed, std::uint64_t first_word,
                         cudaStream_t stream) {
  const std::size_t n = bytes / 4;
  if (n == 0) return cudaSuccess;
  fill_kernel<<<blocks_for(n), threads, 0, stream>>>(static_cast<std::uint32_t*>(p), n, seed, first_word);
  return cudaGetLastError();
}

cudaError_t count_mismatches(const void* p, std::size_t bytes, std::uint32_t seed, unsigned long long& bad,
                             std::uint64_t first_word, cudaStream_t stream) {
  const std::size_t n = bytes / 4;
  return count_with(
      [&](unsigned long long* counter) {
        if (n != 0)
          check_kernel<<<blocks_for(n), threads, 0, stream>>>(static_cast<const std::uint32_t*>(p), n, seed,
                                                              first_word, counter);
      },
      bad, stream);
}

cudaError_t count_not_equal(const void* p, std::size_t bytes, std::uint32_t value, unsigned long long& bad,
                            cudaStream_t stream) {
  const std::size_t n = bytes / 4;
  return count_with(
      [&](unsigned long long* counter) {
        if (n != 0)
          check_value_kernel<<<blocks_for(n), threads, 0, stream>>>(static_cast<const std::uint32_t*>(p), n, value,
                                                                    counter);
      },
      bad, stream);
}

cudaError_t copy16(const void* src, void* dst, std::size_t bytes, cudaStream_t stream) {
  const std::size_t n = bytes / 16;
  if (n == 0) return cudaSuccess;
  const auto blocks = static_cast<unsigned>((n + threads * 4 - 1) / (threads * 4));
  copy16_kernel<<<blocks, threads, 0, stream>>>(static_cast<const int4*>(src), static_cast<int4*>(dst), n);
  return cudaGetLastError();
}

cudaError_t write16(void* dst, std::size_t bytes, std::uint32_t value, cudaStream_t stream) {
  const std::size_t n = bytes / 16;
  if (n == 0) return cudaSuccess;
  const auto blocks = static_cast<unsigned>((n + threads * 4 - 1) / (threads * 4));
  write16_kernel<<<blocks, threads, 0, stream>>>(static_cast<int4*>(dst), n, value);
  return cudaGetLastError();
}

namespace {

__global__ void fill_2d_kernel(unsigned char* p, std::size_t pitch, std::uint32_t width, std::uint32_t height,
                               std::uint32_t seed) {
  const std::uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t y = blockIdx.y;
  if (x >= width || y >= height) return;
  reinterpret_cast<std::uint32_t*>(p + y * pitch)[x] = pattern(static_cast<std::uint64_t>(y) * width + x, seed);
}

__global__ void check_2d_kernel(const unsigned char* p, std::size_t pitch, std::uint32_t width, std::uint32_t height,
                                std::uint32_t value, unsigned long long* counter) {
  const std::uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t y = blockIdx.y;
  if (x >= width || y >= height) return;
  if (reinterpret_cast<const std::uint32_t*>(p + y * pitch)[x] != value) atomicAdd(counter, 1ULL);
}

__global__ void fill_surface_kernel(cudaSurfaceObject_t surface, std::uint32_t width, std::uint32_t height,
                                    std::uint32_t seed) {
  const std::uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t y = blockIdx.y;
  if (x >= width || y >= height) return;
  surf2Dwrite(pattern(static_cast<std::uint64_t>(y) * width + x, seed), surface, static_cast<int>(x * 4),
              static_cast<int>(y));
}

__global__ void check_surface_kernel(cudaSurfaceObject_t surface, std::uint32_t width, std::uint32_t height,
                                     std::uint32_t seed, unsigned long long* counter) {
  const std::uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t y = blockIdx.y;
  if (x >= width || y >= height) return;
  const auto texel = surf2Dread<unsigned int>(surface, static_cast<int>(x * 4), static_cast<int>(y));
  if (texel != pattern(static_cast<std::uint64_t>(y) * width + x, seed)) atomicAdd(counter, 1ULL);
}

__global__ void frame_kernel(std::uint32_t* slot, std::size_t words, std::uint32_t frame, const std::uint32_t* echo,
                             long long expected_echo, unsigned long long* errors) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i == 0 && expected_echo >= 0 && *echo != static_cast<std::uint32_t>(expected_echo)) atomicAdd(errors, 1ULL);
  for (std::size_t k = i; k < words; k += static_cast<std::size_t>(gridDim.x) * blockDim.x) slot[k] = frame;
}

__global__ void accumulate_not_equal_kernel(const std::uint32_t* p, std::size_t n, std::uint32_t value,
                                            unsigned long long* counter) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (p[i] != value) ++local;
  if (local != 0) atomicAdd(counter, local);
}

__global__ void touch_kernel(const unsigned char* p, std::size_t touches, std::size_t stride, unsigned long long* sink) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < touches;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    local ^= *reinterpret_cast<const volatile std::uint32_t*>(p + i * stride);
  if (local != 0) atomicXor(sink, local);
}

__device__ inline std::uint64_t global_timer_ns() {
  std::uint64_t t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void stamp_kernel(std::uint64_t* header, std::uint64_t frame) {
  header[0] = frame;
  header[1] = global_timer_ns();
}

__global__ void check_stamped_kernel(const std::uint64_t* header, const std::uint32_t* words, std::size_t count,
                                     std::uint64_t frame, std::uint64_t* log, unsigned long long* errors) {
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (first == 0) {
    log[0] = global_timer_ns();
    log[1] = header[1];
    if (header[0] != frame) atomicAdd(errors, 1ULL);
  }
  const auto value = static_cast<std::uint32_t>(frame);
  unsigned long long local = 0;
  for (std::size_t i = first; i < count; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (words[i] != value) ++local;
  if (local != 0) atomicAdd(errors, local);
}

}  // namespace

cudaError_t fill_pattern_2d(void* p, std::size_t pitch, std::uint32_t width, std::uint32_t height, std::uint32_t seed,
                            cudaStream_t stream) {
  if (width == 0 || height == 0) return cudaSuccess;
  const dim3 grid((width + threads - 1) / threads, height);
  fill_2d_kernel<<<grid, threads, 0, stream>>>(static_cast<unsigned char*>(p), pitch, width, height, seed);
  return cudaGetLastError();
}

cudaError_t count_not_equal_2d(const void* p, std::size_t pitch, std::uint32_t width, std::uint32_t height,
                               std::uint32_t value, unsigned long long& bad, cudaStream_t stream) {
  return count_with(
      [&](unsigned long long* counter) {
        if (width == 0 || height == 0) return;
        const dim3 grid((width + threads - 1) / threads, height);
        check_2d_kernel<<<grid, threads, 0, stream>>>(static_cast<const unsigned char*>(p), pitch, width, height,
                                                      value, counter);
      },
      bad, stream);
}

cudaError_t fill_surface_pattern(cudaSurfaceObject_t surface, std::uint32_t width, std::uint32_t height,
                                 std::uint32_t seed, cudaStream_t stream) {
  if (width == 0 || height == 0) return cudaSuccess;
  const dim3 grid((width + threads - 1) / threads, height);
  fill_surface_kernel<<<grid, threads, 0, stream>>>(surface, width, height, seed);
  return cudaGetLastError();
}

cudaError_t count_surface_mismatches(cudaSurfaceObject_t surface, std::uint32_t width, std::uint32_t height,
                                     std::uint32_t seed, unsigned long long& bad, cudaStream_t stream) {
  return count_with(
      [&](unsigned long long* counter) {
        if (width == 0 || height == 0) return;
        const dim3 grid((width + threads - 1) / threads, height);
        check_surface_kernel<<<grid, threads, 0, stream>>>(surface, width, height, seed, counter);
      },
      bad, stream);
}

cudaError_t frame_step(std::uint32_t* slot, std::size_t words, std::uint32_t frame, const std::uint32_t* echo,
                       long long expected_echo, unsigned long long* errors, cudaStream_t stream) {
  frame_kernel<<<64, threads, 0, stream>>>(slot, words, frame, echo, expected_echo, errors);
  return cudaGetLastError();
}

cudaError_t accumulate_not_equal(const void* p, std::size_t bytes, std::uint32_t value, unsigned long long* counter,
                                 cudaStream_t stream) {
  const std::size_t n = bytes / 4;
  if (n == 0) return cudaSuccess;
  accumulate_not_equal_kernel<<<blocks_for(n), threads, 0, stream>>>(static_cast<const std::uint32_t*>(p), n, value,
                                                                      counter);
  return cudaGetLastError();
}

cudaError_t touch_words(const void* p, std::size_t bytes, std::size_t stride, unsigned long long* sink,
                        cudaStream_t stream) {
  if (stride < 4 || stride % 4 != 0) return cudaErrorInvalidValue;
  const std::size_t touches = bytes / stride;
  if (touches == 0) return cudaSuccess;
  touch_kernel<<<blocks_for(touches), threads, 0, stream>>>(static_cast<const unsigned char*>(p), touches, stride, sink);
  return cudaGetLastError();
}

cudaError_t stamp_frame(std::uint64_t* header, std::uint64_t frame, cudaStream_t stream) {
  stamp_kernel<<<1, 1, 0, stream>>>(header, frame);
  return cudaGetLastError();
}

cudaError_t check_stamped_frame(const std::uint64_t* header, const std::uint32_t* words, std::size_t count,
                                std::uint64_t frame, std::uint64_t* log, unsigned long long* errors,
                                cudaStream_t stream) {
  // A small grid: a frame slot is a few MiB at most, and the consumer's kernel should start at once.
  const auto blocks = static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>((count + threads - 1) / threads, 128)));
  check_stamped_kernel<<<blocks, threads, 0, stream>>>(header, words, count, frame, log, errors);
  return cudaGetLastError();
}

}  // namespace membridge::testing::gpu
