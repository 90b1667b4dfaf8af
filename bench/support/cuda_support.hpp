// bench/support/cuda_support.hpp: what every CUDA benchmark shares: its exit codes, the failures
// that end it (with messages that name the call), checks of CUDA runtime and membridge results, opening a device
// for the CUDA runtime, and main()'s mapping of those failures to messages and exit codes.
#pragma once

#include "stats.hpp"

#include <membridge/core/result.hpp>

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

/// The value of a membridge result; throws bench_failure with `doing` and the error's message when it
/// holds an error.
template <class T>
T value_or_fail(result<T>&& r, std::string_view doing) {
  if (!r) throw bench_failure(std::string(doing) + ": " + r.error().message());
  return std::move(r).value();
}

/// Throws bench_failure with `doing` and the error's message when `r` holds an error.
void ok_or_fail(const result<void>& r, std::string_view doing);

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

/// A CUDA event with timing (cudaEventCreate / cudaEventDestroy). Move-only.
/// Ownership: the object owns the event; a failure to create it ends the benchmark.
class cuda_event {
 public:
  cuda_event();
  cuda_event(const cuda_event&) = delete;
  cuda_event& operator=(const cuda_event&) = delete;
  /// Takes over `other`'s event; `other` becomes empty.
  cuda_event(cuda_event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  cuda_event& operator=(cuda_event&&) = delete;
  /// cudaEventDestroy (its status is ignored).
  ~cuda_event();
  /// The event. Ownership: still owned by this object.
  [[nodiscard]] cudaEvent_t get() const noexcept { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/// Milliseconds between two completed events (cudaEventElapsedTime); a failure ends the benchmark.
[[nodiscard]] double elapsed_ms(const cuda_event& from, const cuda_event& to);

// -------------------------------------------------------------------------------------- device ---

/// Makes CUDA device `ordinal` current for the CUDA runtime and creates its primary context
/// (cudaSetDevice, then cudaFree(nullptr)). Throws device_unavailable with the reason when the
/// runtime finds no device, `ordinal` does not exist or either call fails.
void open_runtime_device(int ordinal);

/// Bytes of device memory in use now on the current device (total - free, cudaMemGetInfo): this
/// process's and any other's. A failure ends the benchmark.
[[nodiscard]] std::size_t memory_in_use();

/// "13.0" for a CUDA version number such as 13000 (cudaDriverGetVersion, cudaRuntimeGetVersion).
[[nodiscard]] std::string cuda_version_text(int version);

// -------------------------------------------------------------------------------------- output ---

/// Writes `line` and a newline to the file at `path` (replacing it); throws bench_failure if it cannot.
void write_json_file(const std::string& path, const std::string& line);

/// Prints `j` as one line (the benchmark's last line) and, when `path` is not empty, writes it to
/// that file too (write_json_file).
void emit_json_line(const json& j, const std::string& path);

// ---------------------------------------------------------------------------------------- main ---

/// Runs `body` and returns its exit status. device_unavailable: "no usable CUDA device: <what>" on
/// stderr and exit_no_device; any other exception: "<program> failed: <what>" and exit_failed.
[[nodiscard]] int run_main(std::string_view program, const std::function<int()>& body);

}  // namespace membridge::bench
