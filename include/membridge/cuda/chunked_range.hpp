// membridge/cuda/chunked_range.hpp: what growable_buffer and imported_buffer share: one reserved
// address range, chunks mapped back to back from byte 0, and the bytes in use.
#pragma once

#include <membridge/cuda/address_range.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace membridge::cuda {

namespace detail {
class chunk_list;
}  // namespace detail

/// The part of a chunked device buffer that its address, size and capacity come from: an address
/// range reserved once (so the address never changes), the chunks mapped into it from byte 0, and the
/// bytes in use. growable_buffer (which makes its chunks) and imported_buffer (which imports another
/// process's) derive from it; it is never used on its own.
///
/// Move-only, like its derived classes. Release order lives here: the chunks first (one wait per GPU
/// with access, then unmap and release each, newest first), then the address range they lie in.
class chunked_range {
 public:
  chunked_range(const chunked_range&) = delete;
  chunked_range& operator=(const chunked_range&) = delete;

  /// The device address of byte 0; fixed for the object's life. Ownership: owned by this object.
  [[nodiscard]] CUdeviceptr address() const noexcept { return range_.base(); }
  /// The device address as a typed pointer for kernels. Ownership: owned by this object.
  template <class T = void>
  [[nodiscard]] T* data() const noexcept {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(range_.base()));  // NOLINT(performance-no-int-to-ptr)
  }
  /// Bytes in use.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Bytes mapped (sum of chunk sizes).
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  /// Number of mapped chunks.
  [[nodiscard]] std::size_t chunk_count() const noexcept;
  /// True when the address range is reserved.
  [[nodiscard]] bool valid() const noexcept { return range_.valid(); }

 protected:
  /// Nothing reserved.
  chunked_range() noexcept;
  /// Takes `range` (reserved, nothing mapped yet) with an empty chunk list over it.
  explicit chunked_range(address_range range);
  /// Takes over `other`'s range and chunks; `other` becomes empty.
  chunked_range(chunked_range&& other) noexcept;
  /// Releases the held chunks and range (release_range()), then takes over `other`'s.
  chunked_range& operator=(chunked_range&& other) noexcept;
  /// Releases the chunks, then the range.
  ~chunked_range();

  /// Unmaps and releases the chunks (after waiting for the queued work of each GPU with access), then
  /// frees the address range; size and capacity become 0.
  void release_range() noexcept;

  address_range range_;                         ///< The reserved addresses. Ownership: owned.
  std::unique_ptr<detail::chunk_list> chunks_;  ///< The mapped chunks; null when empty. Ownership: owned.
  std::size_t size_ = 0;                        ///< Bytes in use.
  std::size_t capacity_ = 0;                    ///< Bytes mapped.
};

}  // namespace membridge::cuda
