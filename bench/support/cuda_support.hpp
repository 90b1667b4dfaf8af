// bench/support/cuda_support.hpp: what every CUDA benchmark shares: its exit codes, the failures
// that end it (with messages that name the call), checks of CUDA runtime results, opening a device
// for the CUDA runtime, and main()'s mapping of those failures to messages and exit codes.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace membridge::bench {

// ---------------------------------------------------------------------------------- exit codes ---

inline constexpr int exit_ok = 0;          ///< Every data check passed (goals met or not).
inline constexpr int exit_failed = 1;      ///< Wrong data, or a CUDA/Vulkan/membridge call failed.
inline constexpr int exit_no_device = 2;   ///< No usable CUDA device (or no Vulkan device on it).
inline constexpr int exit_usage = 64;      ///< Bad command line (EX_USAGE).

// ------------------------------------------------------------------------------------ failures ---

/// Ends the benchmark with exit status 1: a CUDA, Vulkan or membridge error, or wrong data.
class bench_failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Ends the benchmark with exit status 2: no CUDA device (or Vulkan device on it) it can use.
class device_unavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "file.cpp:123": where a check failed, without the file's directories.
[[nodiscard]] std::string where_text(const std::source_location& where);

/// "cudaErrorMemoryAllocation: out of memory": a runtime status's name and description.
[[nodiscard]] std::string cuda_error_text(cudaError_t rc);

/// Throws bench_failure naming the place, the call and CUDA's error unless `rc` is cudaSuccess.
void check_cuda(cudaError_t rc, std::string_view call, std::source_location where = std::source_location::current());

// -------------------------------------------------------------------------------- CUDA objects ---

/// A non-blocking CUDA stream (cudaStreamCreateWithFlags / cudaStreamDestroy). Move-only.
/// Ownership: the object owns the stream; a failure to create it ends the benchmark.
class cuda_stream {
 public:
  cuda_stream();
  /// No stream (get() is nullptr) and no CUDA call: for a process that never touches CUDA.
  explicit cuda_stream(std::nullptr_t) noexcept {}
  cuda_stream(const cuda_stream&) = delete;
  cuda_stream& operator=(const cuda_stream&) = delete;
  /// Takes over `other`'s stream; `other` becomes empty.
  cuda_stream(cuda_stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  cuda_stream& operator=(cuda_stream&&) = delete;
  /// cudaStreamDestroy (a failure is printed as a warning).
  ~cuda_stream();
  /// The stream. Ownership: still owned by this object.
  [[nodiscard]] cudaStream_t get() const noexcept { return stream_; }
  /// cudaStreamSynchronize; a failure ends the benchmark.
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

// -------------------------------------------------------------------------------------- device ---

/// Makes CUDA device `ordinal` current for the CUDA runtime and creates its primary context
/// (cudaSetDevice, then cudaFree(nullptr)). Throws device_unavailable with the reason when the
/// runtime finds no device, `ordinal` does not exist or either call fails.
void open_runtime_device(int ordinal);

// ---------------------------------------------------------------------------------------- main ---

/// Runs `body` and returns its exit status. device_unavailable: "no usable CUDA device: <what>" on
/// stderr and exit_no_device; any other exception: "<program> failed: <what>" and exit_failed.
[[nodiscard]] int run_main(std::string_view program, const std::function<int()>& body);

}  // namespace membridge::bench
