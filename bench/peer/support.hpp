// bench/peer/support.hpp: what the peer benchmark's parts share: the two GPUs (opened for the CUDA
// runtime and for membridge), a device made current for a scope, cudaMalloc memory of one device,
// memory of one GPU mapped for another with membridge's public API, a per-device timing lane
// (stream, CUDA events, checksum sink) and data checks.
#pragma once

#include "cuda_support.hpp"
#include "stats.hpp"

#include <membridge/core/result.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/peer.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace membridge::bench::peer {

// -------------------------------------------------------------------------------------- results ---

/// Throws bench_failure with `doing` and the error's message when `r` holds an error.
void check_ok(const result<void>& r, std::string_view doing);

/// The value of a membridge result (cuda_support.hpp), named here too for peer::.
using bench::value_or_fail;

// ------------------------------------------------------------------------------------- devices ---

/// The GPU that runs the kernels (`local`) and the GPU whose memory it reaches (`remote`), both
/// opened for the CUDA runtime (primary contexts) and for membridge (the same contexts).
struct gpu_pair {
  cuda::device local;           ///< The accessing GPU.
  cuda::device remote;          ///< The GPU whose memory is accessed over the link.
  cuda::peer_link to_remote;    ///< local -> remote: local's kernels on remote's memory.
  cuda::peer_link to_local;     ///< remote -> local.
  int driver_version = 0;       ///< cudaDriverGetVersion, e.g. 13000.
  int runtime_version = 0;      ///< cudaRuntimeGetVersion.
};

/// Opens GPUs `local` and `remote` (different ordinals) and queries the link both ways; leaves
/// `local` current. Throws device_unavailable when either does not exist or cannot be opened.
[[nodiscard]] gpu_pair open_gpu_pair(int local, int remote);

/// "13.0" for a CUDA version number such as 13000 (cuda_support.hpp), named here too for peer::.
using bench::cuda_version_text;

/// Makes CUDA device `ordinal` current for the runtime until the scope ends, then makes the
/// previous one current again.
class current_device {
 public:
  explicit current_device(int ordinal);
  current_device(const current_device&) = delete;
  current_device& operator=(const current_device&) = delete;
  ~current_device();

 private:
  int previous_ = 0;
};

/// Throws device_unavailable unless GPU `ordinal` has `bytes` free (cudaMemGetInfo).
void require_free_memory(int ordinal, std::size_t bytes);

// -------------------------------------------------------------------------------------- memory ---

/// cudaMalloc memory of one device, freed with cudaFree on that device. Move-only.
/// Ownership: the object owns the memory.
class device_memory {
 public:
  /// cudaMalloc(`bytes`) on device `ordinal`; a failure ends the benchmark.
  [[nodiscard]] static device_memory allocate(int ordinal, std::size_t bytes);

  device_memory() noexcept = default;
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;
  /// Takes over `other`'s memory; `other` becomes empty.
  device_memory(device_memory&& other) noexcept
      : p_(std::exchange(other.p_, nullptr)), bytes_(other.bytes_), ordinal_(other.ordinal_) {}
  device_memory& operator=(device_memory&&) = delete;
  /// cudaFree on the memory's device (a failure is printed as a warning).
  ~device_memory();

  /// The device address. Ownership: still owned by this object.
  [[nodiscard]] void* get() const noexcept { return p_; }
  /// Bytes allocated.
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }

 private:
  device_memory(void* p, std::size_t bytes, int ordinal) noexcept : p_(p), bytes_(bytes), ordinal_(ordinal) {}

  void* p_ = nullptr;
  std::size_t bytes_ = 0;
  int ordinal_ = 0;
};

/// `bytes` of physical memory on `owner` mapped with membridge's public API (cuda::vmm_allocation,
/// cuda::address_range, cuda::mapping) and opened to `reader` read_write with cuda::set_access: what
/// a user of membridge writes to reach another GPU's memory. Move-only; unmaps, releases and frees
/// in that order (members are destroyed in reverse).
/// Ownership: the object owns the range, the allocation and the mapping.
class peer_memory {
 public:
  /// Allocates, maps and grants; a failure ends the benchmark (bench_failure naming the step).
  [[nodiscard]] static peer_memory create(const cuda::device& owner, const cuda::device& reader, std::size_t bytes);

  /// The mapped address, usable by kernels on the owner and on the reader.
  [[nodiscard]] void* get() const noexcept { return reinterpret_cast<void*>(map_.address()); }  // NOLINT
  /// Bytes mapped.
  [[nodiscard]] std::size_t size() const noexcept { return map_.size(); }

 private:
  peer_memory(cuda::address_range range, cuda::vmm_allocation memory, cuda::mapping map) noexcept
      : range_(std::move(range)), memory_(std::move(memory)), map_(std::move(map)) {}

  cuda::address_range range_;
  cuda::vmm_allocation memory_;
  cuda::mapping map_;
};

// -------------------------------------------------------------------------------------- timing ---

/// Where one device's timed work runs: a non-blocking stream, a pair of CUDA events on it and an
/// 8-byte checksum sink, all on that device.
/// Ownership: the object owns the stream, the events and the sink.
class timing_lane {
 public:
  /// Makes them on device `ordinal` (made current for the call).
  explicit timing_lane(int ordinal);
  timing_lane(const timing_lane&) = delete;
  timing_lane& operator=(const timing_lane&) = delete;
  ~timing_lane();

  /// The device's CUDA ordinal.
  [[nodiscard]] int ordinal() const noexcept { return ordinal_; }
  /// The stream. Ownership: still owned by this object.
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_.get(); }

  /// Milliseconds the device spent on what `launch` enqueues on stream() between the two events
  /// (it returns the enqueue's status); `what` names it in errors. Waits for the stream.
  template <class Launch>
  double time_ms(std::string_view what, Launch launch) {
    const current_device on(ordinal_);
    check_cuda(cudaEventRecord(start_, stream()), "cudaEventRecord(start)");
    check_cuda(launch(), what);
    check_cuda(cudaEventRecord(stop_, stream()), "cudaEventRecord(stop)");
    check_cuda(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0.0F;
    check_cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return static_cast<double>(ms);
  }

  /// Zeroes the checksum sink on stream() (before a read).
  void clear_sink();
  /// The checksum sink (device memory of this device).
  [[nodiscard]] unsigned long long* sink() const noexcept { return sink_; }
  /// The sink's value once stream() has finished; waits for it.
  [[nodiscard]] std::uint64_t read_sink();

 private:
  int ordinal_ = 0;
  cuda_stream stream_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  unsigned long long* sink_ = nullptr;
};

/// Gigabytes (1e9 bytes) per second for `bytes` moved in `ms` milliseconds.
[[nodiscard]] double gbps(std::size_t bytes, double ms);

// -------------------------------------------------------------------------------- data checks ---
// verify_pattern and verify_value count with membridge_gpu_kernels, which keeps one counter for the
// process on the device that counted first: call them with the local GPU current, always.

/// What the read kernel's checksum is for `bytes` of the pattern of `seed` (word 0 first).
[[nodiscard]] std::uint64_t pattern_checksum(std::size_t bytes, std::uint32_t seed);

/// Throws bench_failure unless the `bytes` at `p` hold the pattern of `seed` (counted on the
/// current device, which must reach `p`, on `stream`); `what` names the buffer.
void verify_pattern(const void* p, std::size_t bytes, std::uint32_t seed, cudaStream_t stream, std::string_view what);

/// Throws bench_failure unless every 32-bit word of the `bytes` at `p` equals `value`.
void verify_value(const void* p, std::size_t bytes, std::uint32_t value, cudaStream_t stream, std::string_view what);

/// Throws bench_failure unless a read's checksum `got` equals `expected`; `what` names the read.
void verify_checksum(std::uint64_t got, std::uint64_t expected, std::string_view what);

}  // namespace membridge::bench::peer
