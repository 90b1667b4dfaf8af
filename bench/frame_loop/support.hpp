// bench/frame_loop/support.hpp: what the parts of the frame loop benchmark share: the exit codes,
// failures and CUDA checks of every CUDA benchmark (cuda_support.hpp), checks of Vulkan and
// membridge results, small CUDA RAII types, clocks, and a watchdog that ends the process when the
// run stops making progress.
#pragma once

#include "cuda_support.hpp"

#include <membridge/core/result.hpp>
#include <membridge/cuda/driver.hpp>

#include <cuda_runtime.h>
#include <vulkan/vulkan_core.h>

#include <chrono>
#include <cstddef>
#include <source_location>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace membridge::bench::frame_loop {

// ------------------------------------------------------------ shared with the other benchmarks ---

/// The exit codes, failures, CUDA checks, device opening and main()'s error handling every CUDA
/// benchmark shares (cuda_support.hpp), named here too: for frame_loop:: and `using namespace`.
using bench::bench_failure;
using bench::check_cuda;
using bench::cuda_event;
using bench::cuda_stream;
using bench::cuda_error_text;
using bench::device_unavailable;
using bench::elapsed_ms;
using bench::exit_failed;
using bench::exit_no_device;
using bench::exit_ok;
using bench::exit_usage;
using bench::open_runtime_device;
using bench::run_main;
using bench::where_text;
using bench::ok_or_fail;
using bench::value_or_fail;

/// Every host wait of the benchmark gives up after this long.
inline constexpr std::chrono::seconds wait_timeout{10};

// ------------------------------------------------------------------------------------ failures ---

/// Throws bench_failure naming the place, the call and the VkResult unless `rc` is VK_SUCCESS.
void check_vk(VkResult rc, std::string_view call, std::source_location where = std::source_location::current());
/// Throws bench_failure naming `call` and the error (`d`'s name for it) unless `rc` is CUDA_SUCCESS:
/// for driver calls made directly (the raw handoff floor, the second context of idle_cuda_context).
void check_cu(const cuda::driver& d, CUresult rc, std::string_view call);


/// Checks a CUDA runtime call: on failure the benchmark ends with status 1 and a message naming
/// file:line, the call and the error.
#define MEMBRIDGE_FRAME_LOOP_CUDA(...) ::membridge::bench::frame_loop::check_cuda((__VA_ARGS__), #__VA_ARGS__)
/// Checks a Vulkan call's VkResult the same way.
#define MEMBRIDGE_FRAME_LOOP_VK(...) ::membridge::bench::frame_loop::check_vk((__VA_ARGS__), #__VA_ARGS__)

// -------------------------------------------------------------------------------------- clocks ---

using steady = std::chrono::steady_clock;

/// Milliseconds from `from` to `to`.
[[nodiscard]] double ms_between(steady::time_point from, steady::time_point to);

/// CPU time this thread has used, in nanoseconds (clock_gettime(CLOCK_THREAD_CPUTIME_ID)).
[[nodiscard]] double thread_cpu_ns();

// -------------------------------------------------------------------------------- CUDA objects ---

/// Waits for `event` on the host, polling, for at most wait_timeout; throws bench_failure naming
/// `what` on a timeout or an error (cudaEventSynchronize has no timeout).
void wait_event(const cuda_event& event, std::string_view what);

/// Page-locked host memory (cudaMallocHost / cudaFreeHost). Move-only.
class pinned_memory {
 public:
  pinned_memory() noexcept = default;
  /// cudaMallocHost(`bytes`); a failure ends the benchmark.
  explicit pinned_memory(std::size_t bytes);
  pinned_memory(const pinned_memory&) = delete;
  pinned_memory& operator=(const pinned_memory&) = delete;
  pinned_memory(pinned_memory&& other) noexcept
      : p_(std::exchange(other.p_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  pinned_memory& operator=(pinned_memory&& other) noexcept;
  ~pinned_memory();
  /// The host address (nullptr when empty).
  [[nodiscard]] void* get() const noexcept { return p_; }
  /// Bytes allocated.
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// ------------------------------------------------------------------------------------ watchdog ---

/// Records progress: the watchdog ends the process when nothing calls this for its limit.
void heartbeat() noexcept;

/// Names what the benchmark does now (for the watchdog's and the progress messages) and beats.
void set_phase(std::string phase);

/// A thread that ends the process with exit status 1 (and a message naming the phase) when no
/// heartbeat() came for `limit`: the last resort against a wait without timeout that never returns
/// (cudaStreamSynchronize, vkQueueWaitIdle, a CUDA launch blocked behind a semaphore wait).
class watchdog {
 public:
  explicit watchdog(std::chrono::seconds limit);
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;
  /// Stops and joins the thread.
  ~watchdog();

 private:
  std::jthread thread_;
};

}  // namespace membridge::bench::frame_loop
