// membridge/cuda/mapping.hpp: physical memory mapped into an address range, with access rights.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace membridge::cuda {

/// What kernels on the owning device may do with mapped memory.
enum class access : std::uint8_t {
  none = 0,        ///< No access (mapped but unusable).
  read = 1,        ///< Read-only.
  read_write = 3,  ///< Read and write.
};

/// A whole vmm_allocation mapped (cuMemMap) at an offset of an address_range, with access set
/// (cuMemSetAccess) for the device.
///
/// Move-only. The destructor waits for the device's queued work (cuCtxSynchronize), because
/// cuMemUnmap does not wait for kernels still using the memory, then unmaps. Destroy mappings before
/// the range they live in; the allocation may be released before or after (the driver keeps mapped
/// memory alive).
///
/// One allocation may be mapped several times (into other ranges, or elsewhere in one range): each
/// mapping is an alias of the same bytes. Writes through one alias are guaranteed visible through
/// another only once the writing operation has completed, or inside one kernel after
/// `fence.proxy.alias` (docs/synchronization.md, "Two mappings of one chunk").
class mapping {
 public:
  /// Maps all of `memory` at `range.base() + offset` and grants `rights` to the range's device.
  /// Errors: invalid_argument when the offset is not a granularity multiple, the allocation does
  /// not fit, or the place is already mapped; the driver's error otherwise. On failure nothing stays
  /// mapped.
  /// Ownership: the mapping neither owns `range` nor `memory`; `range` must outlive it.
  [[nodiscard]] static result<mapping> map(const address_range& range, std::size_t offset,
                                           const vmm_allocation& memory, access rights = access::read_write);

  /// An empty object.
  mapping() noexcept = default;
  mapping(const mapping&) = delete;
  mapping& operator=(const mapping&) = delete;
  /// Takes over `other`'s mapping; `other` becomes empty.
  mapping(mapping&& other) noexcept;
  /// Unmaps the held mapping, then takes over `other`'s.
  mapping& operator=(mapping&& other) noexcept;
  /// Waits for the device, then unmaps (failures go to the log sink).
  ~mapping();

  /// Changes the device's access rights to the mapped memory. Narrowing them (read_write -> read or
  /// none, read -> none) first waits for the device's queued work (cuCtxSynchronize), since kernels
  /// still using the memory would fault; widening them does not wait.
  [[nodiscard]] result<void> set_access(access rights);

  /// Sets `rights` on several mappings that lie back to back in one range (each starting where the
  /// previous one ends) with one cuMemSetAccess over all of them instead of one per mapping.
  /// Narrowing waits for the device's queued work first, as set_access() does.
  /// Errors: invalid_argument when `maps` is empty, holds an empty mapping, or the mappings are not
  /// adjacent or not of one device; the driver's. On error the recorded rights stay as they were.
  /// Ownership: borrows `maps` for the call.
  [[nodiscard]] static result<void> set_access(std::span<mapping> maps, access rights);

  /// The first mapped address. Ownership: valid while the mapping lives.
  [[nodiscard]] CUdeviceptr address() const noexcept { return address_; }
  /// Mapped bytes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Current access rights.
  [[nodiscard]] access rights() const noexcept { return rights_; }
  /// True when something is mapped.
  [[nodiscard]] bool valid() const noexcept { return address_ != 0; }

  /// Waits for the device's queued work (cuCtxSynchronize), then unmaps; the object becomes empty.
  /// Errors: the driver's; on error the memory stays mapped and the object unchanged.
  [[nodiscard]] result<void> unmap();

  /// Like unmap(), but failures go to the log sink and the object becomes empty regardless.
  void reset() noexcept;

 private:
  mapping(std::shared_ptr<const detail::device_state> state, CUdeviceptr address, std::size_t size,
          access rights) noexcept
      : state_(std::move(state)), address_(address), size_(size), rights_(rights) {}

  std::shared_ptr<const detail::device_state> state_;
  CUdeviceptr address_ = 0;
  std::size_t size_ = 0;
  access rights_ = access::none;
};

}  // namespace membridge::cuda
