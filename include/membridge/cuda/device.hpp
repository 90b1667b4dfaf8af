// membridge/cuda/device.hpp: a CUDA device, its identity and the capabilities membridge relies on.
#pragma once

#include <membridge/core/device_uuid.hpp>
#include <membridge/core/result.hpp>
#include <membridge/cuda/driver.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace membridge::cuda {

namespace detail {
struct device_state;
}  // namespace detail

class growable_buffer;
class imported_buffer;

/// The GPU UUID type (shared with the Vulkan and GL modules). See membridge::device_uuid.
using device_uuid = membridge::device_uuid;

/// What a device offers for shareable virtual memory. Read once when the device is opened; a flag
/// the driver cannot report (too old to know the attribute) reads as false.
struct device_capabilities {
  bool virtual_memory_management = false;  ///< cuMemCreate / cuMemMap (required by membridge).
  bool posix_fd_handles = false;           ///< Allocations exportable as POSIX fds (Linux sharing).
  bool win32_handles = false;              ///< Allocations exportable as Win32 handles.
  bool fabric_handles = false;             ///< Allocations exportable as fabric handles (multi-node NVLink).
  bool gpu_direct_rdma_with_vmm = false;   ///< VMM allocations usable by GPUDirect RDMA.
  bool generic_compression = false;        ///< Compressible VMM allocations.
  bool timeline_semaphore_interop = false; ///< External timeline semaphores (Vulkan/GL interop).
  bool unified_addressing = false;         ///< One address space shared with the host.
};

/// Free and total device memory, as cuMemGetInfo reports it.
struct memory_info {
  std::size_t free_bytes = 0;   ///< Bytes free on the device now.
  std::size_t total_bytes = 0;  ///< Bytes the device has.
};

/// A CUDA device opened for membridge: identity, capabilities and granularity, and a retain on its
/// primary context (the context the CUDA runtime uses, so runtime kernels and membridge see the same
/// memory).
///
/// Move-only. Every allocation, range or buffer made from a device shares its state, so the primary
/// context stays retained until the last of them is destroyed; destroying the device object itself
/// early is safe.
class device {
 public:
  /// The number of CUDA devices. Errors: driver_unavailable (see driver::load()).
  [[nodiscard]] static result<int> count();
  /// The number of CUDA devices seen through `drv`.
  [[nodiscard]] static result<int> count(std::shared_ptr<const driver> drv);

  /// Loads the driver and opens device `ordinal` (0-based, CUDA's numbering).
  /// Errors: driver_unavailable; invalid_argument for an ordinal out of range; unsupported when the
  /// device lacks virtual memory management.
  /// Ownership: retains the device's primary context (released with the last object made from it).
  [[nodiscard]] static result<device> open(int ordinal);
  /// Opens device `ordinal` through an already loaded (or scripted) driver.
  [[nodiscard]] static result<device> open(std::shared_ptr<const driver> drv, int ordinal);
  /// Opens the device whose UUID is `uuid` (e.g. the GPU a Vulkan device runs on).
  /// Errors: as open(), and invalid_argument when no device has that UUID.
  [[nodiscard]] static result<device> open_by_uuid(std::shared_ptr<const driver> drv, const device_uuid& uuid);

  /// An empty device (not opened); only assignment and destruction are valid on it.
  device() noexcept = default;
  device(const device&) = delete;
  device& operator=(const device&) = delete;
  /// Takes over `other`'s state; `other` becomes empty.
  device(device&&) noexcept = default;
  /// Takes over `other`'s state; `other` becomes empty.
  device& operator=(device&&) noexcept = default;
  /// Drops this object's share of the state.
  ~device() = default;

  /// True if this object holds an opened device.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

  /// CUDA's ordinal of the device.
  [[nodiscard]] int ordinal() const noexcept;
  /// The marketing name, e.g. "NVIDIA H100 80GB HBM3".
  [[nodiscard]] const std::string& name() const noexcept;
  /// The device UUID (equal to Vulkan's deviceUUID for the same GPU).
  [[nodiscard]] const device_uuid& uuid() const noexcept;
  /// The PCI bus id, e.g. "0000:01:00.0" (empty if the driver could not say).
  [[nodiscard]] const std::string& pci_bus_id() const noexcept;
  /// Compute capability major.minor, e.g. {9, 0}.
  [[nodiscard]] std::array<int, 2> compute_capability() const noexcept;
  /// Total device memory in bytes.
  [[nodiscard]] std::size_t total_memory() const noexcept;
  /// Shareable-memory capabilities.
  [[nodiscard]] const device_capabilities& capabilities() const noexcept;
  /// The minimum granularity of a device allocation exportable as a POSIX fd (2 MiB on H100):
  /// every VMM size and offset is a multiple of it.
  [[nodiscard]] std::size_t granularity() const noexcept;
  /// The granularity the driver recommends for performance (often equal to granularity()).
  [[nodiscard]] std::size_t recommended_granularity() const noexcept;

  /// Free and total memory now (cuMemGetInfo in the primary context).
  [[nodiscard]] result<memory_info> memory() const;

  /// Waits until all work queued in the primary context has finished (cuCtxSynchronize).
  [[nodiscard]] result<void> synchronize() const;

  /// The driver this device was opened through.
  [[nodiscard]] const driver& get_driver() const noexcept;
  /// The driver, shared.
  [[nodiscard]] std::shared_ptr<const driver> shared_driver() const noexcept;

  /// The CUdevice handle. Ownership: not transferable; valid while the device is.
  [[nodiscard]] CUdevice native() const noexcept;
  /// The retained primary context. Ownership: membridge holds the retain; do not release it.
  [[nodiscard]] CUcontext primary_context() const noexcept;

  /// Internal: the shared state objects made from this device keep.
  /// Ownership: shared with every object made from the device; membridge types use it, users need not.
  [[nodiscard]] const std::shared_ptr<const detail::device_state>& state() const noexcept { return state_; }

 private:
  friend class growable_buffer;  // re-forms a device from the state it keeps, to add chunks
  friend class imported_buffer;  // the same, to import chunks
  explicit device(std::shared_ptr<const detail::device_state> state) noexcept : state_(std::move(state)) {}

  std::shared_ptr<const detail::device_state> state_;
};

}  // namespace membridge::cuda
