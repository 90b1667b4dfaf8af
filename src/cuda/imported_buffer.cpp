#include <membridge/core/units.hpp>
#include <membridge/cuda/imported_buffer.hpp>

#include "detail/chunk_list.hpp"
#include "detail/device_state.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace membridge::cuda {

result<imported_buffer> imported_buffer::reserve(const device& dev, std::size_t reserved_size) {
  if (!dev.valid()) return error(errc::invalid_argument, "imported_buffer::reserve", "the device is empty");
  if (reserved_size == 0) return error(errc::invalid_argument, "imported_buffer::reserve", "reserved_size is 0");
  imported_buffer out;
  MEMBRIDGE_TRY_ASSIGN(out.range_, address_range::reserve(dev, reserved_size));
  out.chunks_ = std::make_unique<detail::chunk_list>(out.range_);
  return out;
}

imported_buffer::imported_buffer() noexcept = default;

imported_buffer::imported_buffer(imported_buffer&& other) noexcept
    : range_(std::move(other.range_)),
      chunks_(std::move(other.chunks_)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

imported_buffer& imported_buffer::operator=(imported_buffer&& other) noexcept {
  if (this != &other) {
    release_all();
    range_ = std::move(other.range_);
    chunks_ = std::move(other.chunks_);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

imported_buffer::~imported_buffer() { release_all(); }

// The chunks first (detail::chunk_list: one wait, then unmap and release each, newest first), then
// the address range they live in.
void imported_buffer::release_all() noexcept {
  chunks_.reset();
  range_.reset();
  size_ = 0;
  capacity_ = 0;
}

result<void> imported_buffer::append(os::borrowed_fd fd, std::size_t offset, std::size_t size, access rights) {
  const chunk_source one{fd, offset, size};
  return append_all(std::span(&one, 1), rights);
}

// Checks one chunk of an append against the view: `expected_offset` is where it must start.
result<void> imported_buffer::check_chunk(const chunk_source& c, std::size_t expected_offset) const {
  constexpr const char* call = "imported_buffer::append";
  if (!c.fd.valid()) return error(errc::invalid_argument, call, "the fd is empty");
  if (c.offset != expected_offset)
    return error(errc::invalid_argument, call,
                 "chunks are appended in order: expected offset " + std::to_string(expected_offset) + ", got " +
                     std::to_string(c.offset));
  if (c.size == 0) return error(errc::invalid_argument, call, "chunk size is 0");
  const std::size_t granularity = range_.state()->granularity;
  if (!is_aligned(c.size, granularity))
    return error(errc::invalid_argument, call,
                 "chunk size " + std::to_string(c.size) + " is not a multiple of the granularity (" +
                     format_bytes(granularity) + ")");
  if (!range_.contains(c.offset, c.size))
    return error(errc::invalid_argument, call,
                 "a " + format_bytes(c.size) + " chunk at offset " + format_bytes(c.offset) + " does not fit the " +
                     format_bytes(range_.size()) + " reserved");
  return ok();
}

// Every chunk is checked before any driver call; then each is imported and mapped without access,
// and one access call covers them all. The new chunks live in `added` until everything succeeded:
// on any error they are destroyed (unmapped, released) and the view is as it was.
result<void> imported_buffer::append_all(std::span<const chunk_source> chunks, access rights) {
  if (!valid()) return error(errc::invalid_argument, "imported_buffer::append", "the buffer is empty (not reserved)");
  std::size_t end = capacity_;
  for (const chunk_source& c : chunks) {
    MEMBRIDGE_TRY(check_chunk(c, end));
    end = c.offset + c.size;
  }
  if (chunks.empty()) return ok();
  chunks_->reserve_more(chunks.size());
  detail::append_guard added(*chunks_);
  const device dev(range_.state());
  for (const chunk_source& c : chunks) {
    MEMBRIDGE_TRY_ASSIGN(auto memory, vmm_allocation::import(dev, c.fd, c.size)
                                          .with_context("importing the chunk at offset " + format_bytes(c.offset)));
    MEMBRIDGE_TRY(chunks_->push(std::move(memory), c.offset, access::none)
                      .with_context("mapping the chunk at offset " + format_bytes(c.offset)));
  }
  MEMBRIDGE_TRY(chunks_->grant(added.first(), rights)
                    .with_context("granting access to " + std::to_string(chunks.size()) + " chunk(s) from offset " +
                                  format_bytes(chunks.front().offset)));
  added.keep();
  capacity_ = end;
  return ok();
}

result<void> imported_buffer::truncate(std::size_t chunk_count) {
  if (chunk_count > this->chunk_count())
    return error(errc::invalid_argument, "imported_buffer::truncate",
                 "cannot keep " + std::to_string(chunk_count) + " of " + std::to_string(this->chunk_count()) +
                     " chunks");
  if (chunk_count == this->chunk_count()) return ok();
  // One wait for the device's queued work, then the chunks go newest first; on failure the chunks
  // not yet unmapped stay mapped and counted, so the buffer stays consistent.
  auto unmapped = chunks_->truncate(chunk_count);
  capacity_ = chunks_->end();  // chunks lie back to back from offset 0
  if (size_ > capacity_) size_ = capacity_;
  if (!unmapped)
    return std::move(unmapped).error().add_context("truncating an imported buffer to " + std::to_string(chunk_count) +
                                                   " chunks");
  return ok();
}

std::size_t imported_buffer::chunk_count() const noexcept { return chunks_ ? chunks_->count() : 0; }

result<void> imported_buffer::set_size(std::size_t bytes) {
  if (bytes > capacity_)
    return error(errc::invalid_argument, "imported_buffer::set_size",
                 "size " + format_bytes(bytes) + " exceeds the mapped capacity " + format_bytes(capacity_));
  size_ = bytes;
  return ok();
}

}  // namespace membridge::cuda
