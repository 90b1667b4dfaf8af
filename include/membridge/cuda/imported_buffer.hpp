// membridge/cuda/imported_buffer.hpp: memory another process (or API) exported chunk by chunk,
// mapped into this process's own address range so kernels see one contiguous buffer.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/chunked_range.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/peer.hpp>
#include <membridge/cuda/vmm_allocation.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace membridge::cuda {

/// Imported chunks at fixed offsets of a reserved address range: the importing side of a
/// growable_buffer shared across processes (ipc) or APIs.
///
/// reserve() reserves the exporter's whole reserved size once, so the buffer grows in place like the
/// exporter's: append() imports one more chunk (cuMemImportFromShareableHandle), maps it right after
/// the previous ones and grants access; truncate() drops chunks from the end. data() never changes.
///
/// Several GPUs: a chunk whose memory lives on another GPU than the importing device (the exporter
/// made it there) is imported only when the importing device has peer access to that GPU
/// (require_peer_access, naming both GPUs). grant_access() gives other GPUs rights on every chunk,
/// existing and future.
///
/// Move-only. Destruction waits once per GPU with access for its queued work (one cuCtxSynchronize
/// each, whatever the number of chunks), then unmaps, releases and frees (the exporter's memory lives
/// on while it or anyone else still holds it).
class imported_buffer : public chunked_range {
 public:
  /// Reserves `reserved_size` bytes of device addresses (rounded up to the granularity).
  /// Errors: invalid_argument for 0; out_of_memory when the address space is exhausted.
  /// Ownership: the buffer owns its range.
  [[nodiscard]] static result<imported_buffer> reserve(const device& dev, std::size_t reserved_size);

  /// An empty object.
  imported_buffer() noexcept;
  /// Takes over `other`'s range and chunks; `other` becomes empty.
  imported_buffer(imported_buffer&& other) noexcept;
  /// Releases the held chunks and range (in order), then takes over `other`'s.
  imported_buffer& operator=(imported_buffer&& other) noexcept;
  /// Waits for the device, then unmaps, releases and frees.
  ~imported_buffer();

  /// Imports the chunk exported as `fd`, a shareable handle (`size` bytes, as the exporter reports it), maps it at
  /// `offset` and grants `rights` to the importing device (and the grant_access() rights to the GPUs
  /// given them). Chunks are appended in order: `offset` must equal capacity().
  /// Errors: invalid_argument for an offset other than capacity(), a size that is 0, not a
  /// granularity multiple or past reserved_size(), an empty fd; unsupported when the chunk's memory
  /// lives on a GPU the importing device (or a GPU given access) cannot reach (naming both GPUs); the
  /// driver's error for an fd that is not a CUDA allocation. On error nothing changes.
  /// Ownership: `fd` is borrowed (Linux: duplicated for the driver call, the duplicate closed after;
  /// Windows: the driver borrows the NT handle itself).
  [[nodiscard]] result<void> append(os::borrowed_shareable_handle fd, std::size_t offset, std::size_t size,
                                    access rights = access::read_write);

  /// One exported chunk for append_all(): the exporter's fd, its offset and size.
  struct chunk_source {
    os::borrowed_shareable_handle fd;  ///< The chunk's exported handle. Ownership: borrowed.
    std::size_t offset = 0;   ///< Where the chunk starts in the exporter's buffer.
    std::size_t size = 0;     ///< The chunk's size, as the exporter reports it.
  };
  /// Appends several chunks in order, as append() does one by one, but grants `rights` over all of
  /// them with one access call (mapping::set_access over the new mappings) instead of one per chunk.
  /// Same rules and errors as append(); all or nothing: on error nothing changes. An empty list
  /// changes nothing.
  /// Ownership: the handles are borrowed (as in append()).
  [[nodiscard]] result<void> append_all(std::span<const chunk_source> chunks, access rights = access::read_write);
  /// Gives GPUs other than the importing device rights on every chunk, existing (now, with one
  /// cuMemSetAccess naming them all) and future (each append grants them too). A GPU already given
  /// rights gets the new ones. Every GPU is checked with require_peer_access against the GPU of
  /// every chunk's memory before anything changes.
  /// Errors: invalid_argument for an empty buffer, an empty list, a null or empty device, one of
  /// another driver, the importing device itself or a device named twice; unsupported when a GPU
  /// cannot reach a chunk's memory (naming both GPUs); the driver's. On error nothing changes.
  /// Ownership: the devices are borrowed for the call; the buffer keeps their shared state (and so
  /// their primary contexts) alive for its life.
  [[nodiscard]] result<void> grant_access(std::span<const device_access> grants);

  /// Keeps the first `chunk_count` chunks and unmaps the rest, after waiting once for the queued
  /// work of each GPU with access. Errors: invalid_argument when chunk_count > chunk_count(); the driver's (the
  /// chunks not yet unmapped then stay, counted in chunk_count() and capacity()).
  [[nodiscard]] result<void> truncate(std::size_t chunk_count);
  /// Records how many bytes are in use (the exporter's size()); at most capacity().
  /// Errors: invalid_argument when `bytes` > capacity().
  [[nodiscard]] result<void> set_size(std::size_t bytes);

  // address(), data(), size() (set_size()), capacity(), chunk_count() and valid() come from
  // chunked_range.

  /// Bytes of address range reserved.
  [[nodiscard]] std::size_t reserved_size() const noexcept { return range_.size(); }

 private:
  /// Takes the reserved `range`, nothing mapped (reserve()).
  explicit imported_buffer(address_range range);
  using state_ptr = std::shared_ptr<const detail::device_state>;
  void release_all() noexcept;
  [[nodiscard]] result<void> check_chunk(const chunk_source& c, std::size_t expected_offset) const;
  [[nodiscard]] result<state_ptr> memory_gpu(const vmm_allocation& memory) const;
  [[nodiscard]] result<void> check_reach(const state_ptr& memory_gpu) const;
  [[nodiscard]] result<void> check_grants(std::span<const device_access> grants) const;
  std::vector<state_ptr> chunk_gpus_;  // the GPU whose memory holds each chunk, in chunk order
};

}  // namespace membridge::cuda
