// membridge/core/chunked_view.hpp: what every chunked view (Vulkan's, GL's) of memory that grows chunk
// by chunk keeps: its chunks in offset order, the segments to bind, its sizes and a change counter.
#pragma once

#include <membridge/core/result.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace membridge {

/// A contiguous piece of a chunked view and the API buffer that covers it (`Buffer`: a VkBuffer, a GL
/// buffer name).
template <class Buffer>
struct view_segment {
  Buffer buffer{};                ///< The API buffer. Ownership: owned by the chunked view.
  std::size_t buffer_offset = 0;  ///< Where the segment starts inside `buffer`.
  std::size_t offset = 0;         ///< Where the segment starts in the whole view (CUDA's offset).
  std::size_t size = 0;           ///< Bytes.
};

namespace detail {
/// One imported chunk of a chunked view: `memory` is bound or committed to the sparse buffer in sparse
/// mode, `buffer` is the chunk's own buffer in per-chunk mode.
template <class Memory, class Buffer>
struct view_chunk {
  Memory memory;
  Buffer buffer;
  std::size_t offset = 0;
  std::size_t size = 0;
};
}  // namespace detail

/// The base of vulkan::chunked_buffer and gl::chunked_buffer (never used on its own): the chunks,
/// contiguous from offset 0 in append order, the segments a renderer binds, the bytes visible and
/// reserved, the sparse page size and the generation, and truncate(), which is the same in both.
///
/// `Chunk` is a detail::view_chunk; `Segment` a view_segment.
/// `Derived` (a friend) supplies the API's part: `truncate_call` (the name errors give),
/// `is_sparse()`, `sparse_handle()` (the one sparse buffer), `chunk_handle(chunk)` (a per-chunk
/// buffer) and `drop_sparse_chunk(chunk)` (unbind or decommit; called in sparse mode only).
///
/// Move-only. The derived class releases what the chunks hold (clear_chunks()) in its own order.
template <class Derived, class Chunk, class Segment>
class chunked_view {
 public:
  chunked_view(const chunked_view&) = delete;
  chunked_view& operator=(const chunked_view&) = delete;

  /// Drops every chunk from index `chunk_count` on, newest first (sparse: unbinds or decommits each).
  /// The GPU must no longer use them.
  /// Errors: invalid_argument when chunk_count > this->chunk_count(); the API's error when a chunk
  /// cannot be dropped (the chunks before it stay, counted in chunk_count() and size()).
  [[nodiscard]] result<void> truncate(std::size_t chunk_count) {
    if (chunk_count > chunks_.size())
      return error(errc::invalid_argument, Derived::truncate_call,
                   "cannot keep " + std::to_string(chunk_count) + " of " + std::to_string(chunks_.size()) + " chunks");
    while (chunks_.size() > chunk_count) {
      const Chunk& last = chunks_.back();
      if (derived().is_sparse()) MEMBRIDGE_TRY(derived().drop_sparse_chunk(last));
      size_ -= last.size;
      chunks_.pop_back();
      ++generation_;
    }
    rebuild_segments();
    return ok();
  }

  /// The pieces to bind, in offset order (one piece in sparse mode).
  [[nodiscard]] std::span<const Segment> segments() const noexcept { return segments_; }
  /// Bytes visible (sum of chunk sizes).
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Bytes reserved.
  [[nodiscard]] std::size_t reserved_size() const noexcept { return reserved_size_; }
  /// Chunks imported.
  [[nodiscard]] std::size_t chunk_count() const noexcept { return chunks_.size(); }
  /// Counts appends and truncates: a change means segments() changed.
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }
  /// The alignment chunk sizes and offsets need in sparse mode (the API's sparse page size); 1 otherwise.
  [[nodiscard]] std::size_t page_size() const noexcept { return page_size_; }

 protected:
  /// No chunks, nothing reserved.
  chunked_view() noexcept = default;
  /// Takes over `other`'s chunks; `other` becomes empty.
  chunked_view(chunked_view&& other) noexcept
      : chunks_(std::move(other.chunks_)),
        segments_(std::move(other.segments_)),
        size_(std::exchange(other.size_, 0)),
        reserved_size_(std::exchange(other.reserved_size_, 0)),
        page_size_(std::exchange(other.page_size_, 1)),
        generation_(other.generation_) {}
  /// Takes over `other`'s chunks (the derived class released its own first); `other` becomes empty.
  chunked_view& operator=(chunked_view&& other) noexcept {
    chunks_ = std::move(other.chunks_);
    segments_ = std::move(other.segments_);
    size_ = std::exchange(other.size_, 0);
    reserved_size_ = std::exchange(other.reserved_size_, 0);
    page_size_ = std::exchange(other.page_size_, 1);
    generation_ = other.generation_;
    return *this;
  }
  /// Nothing to do: the derived class released the chunks.
  ~chunked_view() = default;

  /// Records `chunk`, just made visible after the others: counts its bytes, bumps the generation and
  /// rebuilds the segments.
  void add_chunk(Chunk chunk) {
    size_ += chunk.size;
    chunks_.push_back(std::move(chunk));
    ++generation_;
    rebuild_segments();
  }

  /// Drops every chunk (destroying what each holds) and the sizes; the page size and generation stay.
  void clear_chunks() noexcept {
    chunks_.clear();
    segments_.clear();
    size_ = 0;
    reserved_size_ = 0;
  }

  std::vector<Chunk> chunks_;      ///< In offset order, contiguous from 0.
  std::vector<Segment> segments_;  ///< What segments() returns.
  std::size_t size_ = 0;           ///< Sum of the chunk sizes.
  std::size_t reserved_size_ = 0;  ///< The most bytes the view will hold.
  std::size_t page_size_ = 1;      ///< Sparse page size; 1 in per-chunk mode.
  std::uint64_t generation_ = 0;   ///< Counts appends and dropped chunks.

 private:
  Derived& derived() noexcept { return static_cast<Derived&>(*this); }

  // Sparse: one segment over the visible bytes (none while empty); else one per chunk.
  void rebuild_segments() {
    segments_.clear();
    if (derived().is_sparse()) {
      if (size_ > 0) segments_.push_back(Segment{derived().sparse_handle(), 0, 0, size_});
      return;
    }
    for (const Chunk& c : chunks_) segments_.push_back(Segment{Derived::chunk_handle(c), 0, c.offset, c.size});
  }
};

}  // namespace membridge
