// membridge/cuda/address_range.hpp: a reserved range of device virtual addresses.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>

#include <cstddef>
#include <memory>

namespace membridge::cuda {

/// Device virtual addresses reserved with cuMemAddressReserve. Physical memory appears there only
/// through mappings; the addresses stay fixed for the range's life, which is what lets a buffer grow
/// without its device pointer changing.
///
/// Move-only; the destructor frees the range (cuMemAddressFree). Every mapping into the range must be
/// destroyed first (growable_buffer does this in order).
class address_range {
 public:
  /// Reserves `size` bytes (rounded up to the device granularity), aligned to `alignment` (0: the
  /// granularity). Reserving costs no memory: reserve generously (the maximum a buffer may reach).
  /// Errors: invalid_argument for size 0 or an alignment that is not a power-of-two multiple of the
  /// granularity; out_of_memory when the address space is exhausted.
  /// Ownership: the returned object owns the range.
  [[nodiscard]] static result<address_range> reserve(const device& dev, std::size_t size, std::size_t alignment = 0);

  /// An empty object.
  address_range() noexcept = default;
  address_range(const address_range&) = delete;
  address_range& operator=(const address_range&) = delete;
  /// Takes over `other`'s range; `other` becomes empty.
  address_range(address_range&& other) noexcept;
  /// Frees the held range, then takes over `other`'s.
  address_range& operator=(address_range&& other) noexcept;
  /// Frees the range (failures go to the log sink).
  ~address_range();

  /// The first address. Ownership: the addresses belong to this object.
  [[nodiscard]] CUdeviceptr base() const noexcept { return base_; }
  /// Size in bytes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// True when a range is held.
  [[nodiscard]] bool valid() const noexcept { return base_ != 0; }
  /// True if [offset, offset + length) lies inside the range (and does not overflow).
  [[nodiscard]] bool contains(std::size_t offset, std::size_t length) const noexcept {
    return offset <= size_ && length <= size_ - offset;
  }

  /// Frees the range now; the object becomes empty.
  void reset() noexcept;

  /// Internal: the device state the range belongs to. Ownership: shared; for membridge types.
  [[nodiscard]] const std::shared_ptr<const detail::device_state>& state() const noexcept { return state_; }

 private:
  address_range(std::shared_ptr<const detail::device_state> state, CUdeviceptr base, std::size_t size) noexcept
      : state_(std::move(state)), base_(base), size_(size) {}

  std::shared_ptr<const detail::device_state> state_;
  CUdeviceptr base_ = 0;
  std::size_t size_ = 0;
};

}  // namespace membridge::cuda
