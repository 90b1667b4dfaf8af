// bench/support/cuda_support.hpp: what every CUDA benchmark shares: its exit codes, the failures
// that end it (with messages that name the call), checks of CUDA runtime results, opening a device
// for the CUDA runtime, and main()'s mapping of those failures to messages and exit codes.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>

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
