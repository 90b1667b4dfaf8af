#include "support.hpp"

#include "vk_error.hpp"  // apps::vk_result_name

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <mutex>
#include <stop_token>

namespace membridge::bench::frame_loop {

void check_cu(const cuda::driver& d, CUresult rc, std::string_view call) {
  if (rc != CUDA_SUCCESS) throw bench_failure(std::string(call) + " failed: " + d.error_name(rc));
}

void check_vk(VkResult rc, std::string_view call, std::source_location where) {
  if (rc != VK_SUCCESS)
    throw bench_failure(where_text(where) + ' ' + std::string(call) + ": " + apps::vk_result_name(rc) + " (" +
                        std::to_string(static_cast<int>(rc)) + ")");
}


double ms_between(steady::time_point from, steady::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

double thread_cpu_ns() {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0.0;
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

// -------------------------------------------------------------------------------- CUDA objects ---

void wait_event(const cuda_event& event, std::string_view what) {
  const auto deadline = steady::now() + wait_timeout;
  for (;;) {
    const cudaError_t rc = cudaEventQuery(event.get());
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady)
      throw bench_failure("cudaEventQuery (" + std::string(what) + "): " + cuda_error_text(rc));
    if (steady::now() > deadline)
      throw bench_failure("timeout: the GPU did not finish " + std::string(what) + " within " +
                          std::to_string(wait_timeout.count()) + " s");
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

pinned_memory::pinned_memory(std::size_t bytes) : bytes_(bytes) {
  check_cuda(cudaMallocHost(&p_, bytes), "cudaMallocHost(" + std::to_string(bytes) + " bytes)");
}

pinned_memory& pinned_memory::operator=(pinned_memory&& other) noexcept {
  if (this != &other) {
    if (p_ != nullptr) (void)cudaFreeHost(p_);
    p_ = std::exchange(other.p_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

pinned_memory::~pinned_memory() {
  if (p_ != nullptr)
    if (const cudaError_t rc = cudaFreeHost(p_); rc != cudaSuccess)
      std::cerr << "warning: cudaFreeHost: " << cuda_error_text(rc) << '\n';
}

// ------------------------------------------------------------------------------------ watchdog ---

namespace {

std::atomic<std::int64_t> last_beat_ns{0};
std::mutex phase_lock;
std::string current_phase = "starting";

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch()).count();
}

}  // namespace

void heartbeat() noexcept { last_beat_ns.store(now_ns(), std::memory_order_relaxed); }

void set_phase(std::string phase) {
  {
    const std::lock_guard<std::mutex> guard(phase_lock);
    current_phase = std::move(phase);
  }
  heartbeat();
}

watchdog::watchdog(std::chrono::seconds limit) {
  heartbeat();
  thread_ = std::jthread([limit](const std::stop_token& stop) {
    const auto limit_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(limit).count();
    while (!stop.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (now_ns() - last_beat_ns.load(std::memory_order_relaxed) <= limit_ns) continue;
      std::string phase;
      {
        const std::lock_guard<std::mutex> guard(phase_lock);
        phase = current_phase;
      }
      // Another thread is stuck in a driver call: nothing can be torn down cleanly, so end here.
      std::fflush(stdout);
      std::fprintf(stderr,
                   "membridge_bench_frame_loop failed: no progress for %lld s during: %s (a GPU wait without a "
                   "timeout never returned); exiting\n",
                   static_cast<long long>(limit.count()), phase.c_str());
      std::fflush(stderr);
      std::_Exit(exit_failed);
    }
  });
}

watchdog::~watchdog() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace membridge::bench::frame_loop
