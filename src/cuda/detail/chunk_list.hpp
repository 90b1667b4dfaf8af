// Private: the chunks of a growable_buffer or an imported_buffer, mapped back to back into the
// buffer's address range, and the one place their VMM teardown order lives.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace membridge::cuda::detail {

struct device_state;

/// A GPU other than the range's own with rights on every chunk of a list.
struct peer_grant {
  std::shared_ptr<const device_state> gpu;  ///< Kept alive (with its primary context) by the list.
  access rights = access::read_write;
};

/// Chunks (allocations, created or imported) mapped at increasing offsets of one address range.
///
/// The access set: the range's own device (its rights given per push()/grant() call) and the GPUs
/// added with add_grants(), each with fixed rights. Every push() or grant() names the whole set in
/// ONE cuMemSetAccess (an array of descriptors). The caller checks peer access and duplicates first.
///
/// Teardown order, for truncate(), drop() and the destructor: ONE wait per GPU of the access set for
/// its queued work (cuCtxSynchronize in that GPU's primary context: cuMemUnmap does not wait for
/// kernels still using the memory), then for each chunk, newest first, cuMemUnmap and release of the
/// handle. One wait per GPU for any number of chunks: a context synchronise stalls every stream of the
/// context, so once per teardown, not per chunk.
///
/// The range is borrowed: it must outlive the list (the buffers declare it first and destroy the
/// list first). Move-only; moving keeps the addresses (the range does not move).
class chunk_list {
 public:
  /// An empty list over `range`.
  explicit chunk_list(const address_range& range) noexcept;
  chunk_list(const chunk_list&) = delete;
  chunk_list& operator=(const chunk_list&) = delete;
  chunk_list(chunk_list&&) = delete;
  chunk_list& operator=(chunk_list&&) = delete;
  /// drop(0).
  ~chunk_list();

  /// Makes room for `more` chunks (growing geometrically), so that the pushes of one append do not
  /// reallocate half-way.
  void reserve_more(std::size_t more);

  /// Adds GPUs to the access set (a GPU already in it takes the new rights). Chunks pushed or
  /// granted from now on name them; existing chunks are unchanged (apply() does that).
  /// Precondition: no null state, not the range's own device, no GPU twice in `grants`.
  void add_grants(std::span<const peer_grant> grants);

  /// Sets the rights of `grants` (and only theirs) over every chunk with one cuMemSetAccess. Nothing
  /// happens when the list is empty or every grant is access::none. Errors: the driver's.
  [[nodiscard]] result<void> apply(std::span<const peer_grant> grants) const;

  /// Maps `memory` at `offset` (at or past end()), granting the owner `rights` and the access set
  /// its rights, unless every right is none. On error nothing is mapped and `memory` is released.
  /// Errors: the driver's (cuMemMap, cuMemSetAccess).
  [[nodiscard]] result<void> push(vmm_allocation memory, std::size_t offset, access rights);

  /// Grants the owner `rights` and the access set its rights over chunks [first, count()) with one
  /// cuMemSetAccess (they lie back to back). Widening only (the chunks were pushed with fewer
  /// rights): no wait. Errors: the driver's.
  [[nodiscard]] result<void> grant(std::size_t first, access rights);

  /// Keeps the first `count` chunks: one wait, then unmaps and releases the rest, newest first.
  /// Errors: the driver's; when the wait fails nothing changes; when an unmap fails the chunks not
  /// yet unmapped stay (count() says how many are left).
  [[nodiscard]] result<void> truncate(std::size_t count);

  /// As truncate(), for teardown and for undoing a failed append: failures go to the log, and the
  /// chunks are unmapped and released whatever happens (a context that cannot synchronise runs
  /// nothing more).
  void drop(std::size_t count) noexcept;

  /// Number of chunks.
  [[nodiscard]] std::size_t count() const noexcept { return chunks_.size(); }
  /// Chunk `index`'s offset in the range. Precondition: index < count().
  [[nodiscard]] std::size_t offset(std::size_t index) const noexcept { return chunks_[index].offset; }
  /// Chunk `index`'s memory. Precondition: index < count().
  [[nodiscard]] const vmm_allocation& memory(std::size_t index) const noexcept { return chunks_[index].memory; }
  /// Where the last chunk ends (0 when empty).
  [[nodiscard]] std::size_t end() const noexcept;
  /// The GPUs other than the owner with rights, in the order added.
  [[nodiscard]] const std::vector<peer_grant>& grants() const noexcept { return grants_; }
  /// The device the range (and so the mappings) belongs to.
  [[nodiscard]] const device_state& owner() const noexcept { return *state_; }

 private:
  /// The descriptors of one access call: the owner with `owner_rights`, then each grant, skipping none.
  [[nodiscard]] std::vector<CUmemAccessDesc> access_descs(access owner_rights) const;
  /// Sets `descs` over [begin, end()) in the owner's context. Errors: the driver's.
  [[nodiscard]] result<void> set_access(std::size_t begin, const std::vector<CUmemAccessDesc>& descs) const;
  /// One cuCtxSynchronize per GPU of the access set, owner first. Errors: the first failure (the
  /// rest are not waited for).
  [[nodiscard]] result<void> wait_all() const;
  /// As wait_all(), logging each failure and going on.
  void wait_all_logged() const noexcept;

  struct chunk {
    vmm_allocation memory;
    std::size_t offset = 0;
  };

  std::shared_ptr<const device_state> state_;
  CUdeviceptr base_ = 0;
  std::vector<chunk> chunks_;
  std::vector<peer_grant> grants_;
};

/// Undoes an append that did not complete: chunks pushed since the guard was made are dropped
/// (one wait, unmapped, released) unless keep() was called.
class append_guard {
 public:
  explicit append_guard(chunk_list& list) noexcept : list_(list), first_(list.count()) {}
  append_guard(const append_guard&) = delete;
  append_guard& operator=(const append_guard&) = delete;
  ~append_guard() {
    if (!kept_) list_.drop(first_);
  }
  /// The index of the first chunk this append pushes.
  [[nodiscard]] std::size_t first() const noexcept { return first_; }
  /// The append completed: keep its chunks.
  void keep() noexcept { kept_ = true; }

 private:
  chunk_list& list_;
  std::size_t first_;
  bool kept_ = false;
};

}  // namespace membridge::cuda::detail
