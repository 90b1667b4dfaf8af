// Private: the state every object made from a cuda::device shares, and a guard that makes the
// device's primary context current for the length of a call.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/driver.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <string>

namespace membridge::cuda::detail {

/// Makes a context current until destroyed, restoring the previous one (push/pop). Does nothing
/// when the context was already current, which is the common case (the CUDA runtime's device).
class context_scope {
 public:
  context_scope(const driver_api* api, bool pushed) noexcept : api_(api), pushed_(pushed) {}
  context_scope(const context_scope&) = delete;
  context_scope& operator=(const context_scope&) = delete;
  context_scope(context_scope&& other) noexcept : api_(other.api_), pushed_(other.pushed_) { other.pushed_ = false; }
  context_scope& operator=(context_scope&&) = delete;
  ~context_scope();

 private:
  const driver_api* api_;
  bool pushed_;
};

/// Identity, capabilities and the retained primary context of one device.
struct device_state {
  std::shared_ptr<const driver> drv;
  CUdevice handle = 0;
  int ordinal = 0;
  CUcontext primary = nullptr;
  std::string name;
  std::string pci_bus_id;
  device_uuid uuid;
  device_capabilities caps;
  std::array<int, 2> compute_capability{};
  std::size_t total_memory = 0;
  std::size_t granularity = 0;
  std::size_t recommended_granularity = 0;

  device_state() = default;
  device_state(const device_state&) = delete;
  device_state& operator=(const device_state&) = delete;
  ~device_state();

  [[nodiscard]] const driver_api& api() const noexcept { return drv->api(); }

  /// Makes the primary context current for the caller's scope.
  [[nodiscard]] result<context_scope> enter() const;

  /// A categorised error for a failed driver call, with the device named in the context.
  [[nodiscard]] error fail(CUresult code, std::string call, std::string context,
                           std::source_location where = std::source_location::current()) const;

  /// The cuMemCreate properties for an allocation on this device.
  [[nodiscard]] CUmemAllocationProp allocation_prop(const allocation_options& options) const noexcept;

  /// The cuMemSetAccess descriptor giving this device `rights`.
  [[nodiscard]] CUmemAccessDesc access_desc(access rights) const noexcept;

  /// "device 0 (NVIDIA H100 80GB HBM3)", for error context.
  [[nodiscard]] std::string describe() const;
};

/// Logs a failure that a destructor or reset() cannot return.
void log_teardown_failure(const error& e) noexcept;

}  // namespace membridge::cuda::detail
