// samples/common/cuda_runtime_check.hpp: what the samples' CUDA paths share (01's and 02's GPU paths,
// the 03 producer): CUDA runtime errors as membridge errors, and why no CUDA device can be used here.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/os/dynamic_library.hpp>

#include <cuda_runtime_api.h>

#include <source_location>
#include <string>

namespace samples {

/// The error of the CUDA runtime call `call` that returned `rc`: out_of_memory for
/// cudaErrorMemoryAllocation, else internal; the message is CUDA's, then `context` when given.
[[nodiscard]] inline membridge::error cuda_error(cudaError_t rc, const char* call, std::string context = {},
                                                 std::source_location where = std::source_location::current()) {
  const membridge::errc code = rc == cudaErrorMemoryAllocation ? membridge::errc::out_of_memory
                                                               : membridge::errc::internal;
  return membridge::error::from_native(code, membridge::error_source::cuda, rc, cudaGetErrorName(rc), call,
                                       std::string(cudaGetErrorString(rc)) + (context.empty() ? "" : ": " + context),
                                       where);
}

/// Why CUDA device 0 cannot be used on this machine (no driver, no device, the device refusing a
/// context), or an empty string when it can. Initialises the CUDA runtime on device 0 when it succeeds.
[[nodiscard]] inline std::string cuda_unavailable_reason() {
  int count = 0;
  if (const cudaError_t rc = cudaGetDeviceCount(&count); rc != cudaSuccess) {
    if (rc == cudaErrorInsufficientDriver && !membridge::os::dynamic_library::open("libcuda.so.1"))
      return "no CUDA driver: libcuda.so.1 is not installed";
    return std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
  }
  if (count == 0) return "the CUDA driver reports no devices";
  if (const cudaError_t rc = cudaSetDevice(0); rc != cudaSuccess)
    return std::string("cudaSetDevice(0): ") + cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc);
  if (const cudaError_t rc = cudaFree(nullptr); rc != cudaSuccess)  // creates the primary context
    return std::string("cudaFree(nullptr): ") + cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc);
  return {};
}

}  // namespace samples
