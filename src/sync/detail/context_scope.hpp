// Private: what the sync parts that drive CUDA contexts themselves (cross_gpu_link.cpp,
// producer_graph.cpp) share: a scope that keeps a pushed context current, and the teardown log line.
#pragma once

#include <membridge/core/error.hpp>
#include <membridge/core/log.hpp>
#include <membridge/cuda/driver.hpp>

#include <string>
#include <utility>

namespace membridge::sync::detail {

/// Logs a failure in a destructor (teardown reports, never throws or returns errors).
inline void log_teardown_failure(const error& e) noexcept { log(log_level::error, "membridge teardown: " + e.message()); }

/// Keeps a context current until destroyed, then pops it (cuCtxPopCurrent), restoring the previous
/// one; does nothing when `pushed` is false (the context already was current). Move-only.
/// Ownership: borrows `api` (the driver outlives the scope).
class context_scope {
 public:
  context_scope(const cuda::driver_api* api, bool pushed) noexcept : api_(api), pushed_(pushed) {}
  context_scope(const context_scope&) = delete;
  context_scope& operator=(const context_scope&) = delete;
  context_scope(context_scope&& other) noexcept : api_(other.api_), pushed_(std::exchange(other.pushed_, false)) {}
  context_scope& operator=(context_scope&&) = delete;
  ~context_scope() {
    if (!pushed_) return;
    CUcontext popped = nullptr;
    if (const CUresult rc = api_->cuCtxPopCurrent(&popped); rc != CUDA_SUCCESS)
      log(log_level::warning, "membridge: cuCtxPopCurrent failed with CUresult " + std::to_string(static_cast<int>(rc)));
  }

 private:
  const cuda::driver_api* api_;
  bool pushed_;
};

}  // namespace membridge::sync::detail
