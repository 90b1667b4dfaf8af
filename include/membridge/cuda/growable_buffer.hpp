// membridge/cuda/growable_buffer.hpp: device memory that grows and shrinks in place, without copies.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/chunk_policy.hpp>
#include <membridge/cuda/chunked_range.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/peer.hpp>
#include <membridge/cuda/vmm_allocation.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <cstddef>
#include <memory>
#include <vector>

namespace membridge::cuda {

/// Where a growable buffer's chunks take their physical memory from.
///
/// One device (the default: the buffer's own), spread round-robin over several, or explicit per
/// chunk with round-robin after the list. The buffer's address range always lies on its own device;
/// only the physical memory behind each chunk moves. A GPU that uses the buffer needs peer access
/// to every chunk's GPU: create() checks that for the buffer's own device and every access entry.
struct chunk_placement {
  /// The GPUs whose memory holds the chunks; empty: the buffer's own device.
  /// Ownership: borrowed for create(); the buffer keeps what it needs (the devices' shared state).
  std::vector<const device*> devices{};
  /// Chunk i comes from devices[per_chunk[i]] for i < per_chunk.size(); later chunks round-robin:
  /// devices[i % devices.size()]. Chunk indices count from the buffer's first chunk, so growth
  /// continues the pattern.
  std::vector<std::size_t> per_chunk{};
};

/// Options for growable_buffer::create().
struct growable_buffer_options {
  std::size_t size = 0;          ///< Initial size in bytes (may be 0).
  std::size_t max_size = 0;      ///< Largest size ever needed: the address range reserved up front (required).
  chunk_policy chunks{};         ///< How growth is split into physical chunks.
  allocation_options memory{};   ///< Properties of every chunk (handle type, RDMA, compression).
  /// GPUs other than the buffer's own given rights on every chunk (the buffer's own device always
  /// has read_write). Ownership: the devices are borrowed for create(); the buffer keeps their shared
  /// state (and so their primary contexts) alive for its life.
  std::vector<device_access> access{};
  chunk_placement placement{};   ///< Which GPU's memory each chunk takes (default: the buffer's own).
};

/// Where one physical chunk lies in a buffer.
struct chunk_info {
  std::size_t offset = 0;  ///< Byte offset from the buffer's base address.
  std::size_t size = 0;    ///< Bytes (a granularity multiple).
  int device = 0;          ///< CUDA ordinal of the GPU whose memory holds the chunk.
};

/// One chunk exported for another API or process.
struct exported_chunk {
  os::shareable_handle fd; ///< The chunk's shareable handle (fd / NT handle). Ownership: the caller owns it.
  std::size_t offset = 0;  ///< Where the chunk lies in the buffer.
  std::size_t size = 0;    ///< The chunk's size, which an importer must pass to its import call.
};

/// Device memory at a fixed address that grows and shrinks without copying.
///
/// create() reserves `max_size` bytes of device address space once; grow() maps new physical chunks
/// after the existing ones, so data() never changes and nothing is copied; shrink() unmaps whole
/// chunks past the new size. Each chunk can be exported as an fd with its offset, so Vulkan, GL and
/// other processes import the same memory.
///
/// size() is what the caller asked for; capacity() what is mapped (>= size(), whole chunks, grown
/// geometrically per chunk_policy); max_size() the reserved range.
/// A failed grow() leaves the buffer exactly as it was: same size, capacity, address and contents,
/// nothing leaked. Not thread-safe: one thread grows or shrinks at a time, and no kernel may use
/// memory past size() while another thread shrinks.
///
/// Several GPUs: chunks may live on other GPUs than the buffer's own (options.placement), and other
/// GPUs may be given rights on every chunk (options.access); every chunk is mapped with one
/// cuMemSetAccess naming all of them. Teardown waits once per GPU with rights (each GPU's kernels may
/// still use the memory), not once per chunk.
///
/// Move-only. Destruction waits for the queued work of every GPU with access, then unmaps, releases
/// and frees.
class growable_buffer : public chunked_range {
 public:
  /// Reserves the range and maps `options.size` bytes (rounded up to the granularity; chunks no
  /// larger than max_chunk). The granularity is the largest of the placement devices'.
  /// Before anything is mapped, every GPU with access (`dev` and options.access) is checked against
  /// every placement GPU with require_peer_access.
  /// Errors: invalid_argument for max_size 0, size > max_size, a bad chunk_policy, a null or empty
  /// device or one of another driver in placement or access, a device named twice in access or the
  /// buffer's own device in access, or a per_chunk index out of range (of placement.devices, or of
  /// the one own device when that list is empty); unsupported
  /// when the device cannot export the handle type or a GPU with access cannot reach a placement
  /// GPU's memory (naming both GPUs); out_of_memory when memory or address space runs out.
  /// Ownership: the buffer owns its range and chunks; `dev` and the devices in options are borrowed
  /// (the buffer keeps their shared state).
  [[nodiscard]] static result<growable_buffer> create(const device& dev, const growable_buffer_options& options);

  /// An empty buffer (not created).
  growable_buffer() noexcept;
  /// Takes over `other`'s memory (the address does not change); `other` becomes empty.
  growable_buffer(growable_buffer&& other) noexcept;
  /// Releases the held memory, then takes over `other`'s.
  growable_buffer& operator=(growable_buffer&& other) noexcept;
  /// Waits once per GPU with access for its queued work (one cuCtxSynchronize each, whatever the
  /// number of chunks), then unmaps, releases and frees everything.
  ~growable_buffer();

  /// Grows to `new_size` bytes. Contents and address are kept; new bytes are uninitialised. If the
  /// capacity suffices no driver call is made, else chunks are added per the chunk policy.
  /// Errors: invalid_argument when new_size < size(); out_of_memory when the device is full or
  /// new_size > max_size() (address range full). On error the buffer is unchanged.
  [[nodiscard]] result<void> grow(std::size_t new_size);

  /// Shrinks to `new_size` bytes and unmaps every chunk that lies wholly past it, after waiting for
  /// the queued work of every GPU with access (one cuCtxSynchronize per GPU for all of them). Bytes below new_size are kept.
  /// Errors: invalid_argument when new_size > size(); the driver's error if waiting or unmapping
  /// fails, in which case size() is new_size and the chunks not yet unmapped stay mapped.
  [[nodiscard]] result<void> shrink(std::size_t new_size);

  /// grow() or shrink(), whichever takes the size to `new_size`.
  [[nodiscard]] result<void> resize(std::size_t new_size);

  /// Maps chunks after the existing ones until capacity() >= `new_capacity`, without changing size(),
  /// like std::vector::reserve: a later grow() up to capacity() makes no driver call. The chunks are
  /// exactly what is asked for (no growth factor), split at the policy's max_chunk, so a caller that
  /// prepares growth ahead of need (sync::follow_step) controls how much is mapped at once. Nothing
  /// happens when capacity() already suffices.
  /// Errors: invalid_argument for an empty buffer; out_of_memory when the device is full or
  /// new_capacity > max_size(). On error the buffer is unchanged.
  [[nodiscard]] result<void> reserve(std::size_t new_capacity);

  // address(), data(), size() (what the caller last asked for), capacity(), chunk_count() and valid()
  // come from chunked_range.

  /// Bytes reserved: the most the buffer can ever hold.
  [[nodiscard]] std::size_t max_size() const noexcept { return range_.size(); }
  /// The granularity every chunk size and offset is a multiple of.
  [[nodiscard]] std::size_t granularity() const noexcept { return granularity_; }

  /// Where chunk `index` lies. Precondition: index < chunk_count().
  [[nodiscard]] chunk_info chunk(std::size_t index) const noexcept;
  /// Where every chunk lies, in address order.
  [[nodiscard]] std::vector<chunk_info> chunks() const;

  /// Exports chunk `index` as a new shareable handle (fd on Linux, NT handle on Windows, see
  /// vmm_allocation::export_handle) with its offset and size.
  /// Ownership: the caller owns the returned handle; the chunk's memory stays alive while any exported
  /// handle or import of it does, even after the buffer shrinks or is destroyed.
  /// Errors: invalid_argument for an index out of range; unsupported for a non-exportable handle type.
  [[nodiscard]] result<exported_chunk> export_chunk(std::size_t index) const;

  /// The chunk policy in use.
  [[nodiscard]] const chunk_policy& policy() const noexcept { return policy_; }

  /// CUDA ordinals of the GPUs with rights on every chunk: the buffer's own first, then
  /// options.access in order. Empty for an empty buffer.
  [[nodiscard]] std::vector<int> access_devices() const;

 private:
  using state_ptr = std::shared_ptr<const detail::device_state>;
  growable_buffer(address_range range, std::size_t granularity, const growable_buffer_options& options,
                  std::vector<state_ptr> placement);
  [[nodiscard]] result<void> add_chunks(std::size_t required, const chunk_policy& policy);
  [[nodiscard]] const state_ptr& placement_of(std::size_t chunk_index) const noexcept;
  void release_all() noexcept;

  std::size_t granularity_ = 0;
  chunk_policy policy_{};
  allocation_options memory_options_{};
  std::vector<state_ptr> placement_;    // the GPUs chunks are created on (at least one: the buffer's own)
  std::vector<std::size_t> per_chunk_;  // explicit placement of the first chunks (indices into placement_)
};

}  // namespace membridge::cuda
