#include <membridge/cuda/chunked_range.hpp>

#include "detail/chunk_list.hpp"

#include <memory>
#include <utility>

namespace membridge::cuda {

chunked_range::chunked_range() noexcept = default;

chunked_range::chunked_range(address_range range)
    : range_(std::move(range)), chunks_(std::make_unique<detail::chunk_list>(range_)) {}

chunked_range::chunked_range(chunked_range&& other) noexcept
    : range_(std::move(other.range_)),
      chunks_(std::move(other.chunks_)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

chunked_range& chunked_range::operator=(chunked_range&& other) noexcept {
  if (this != &other) {
    release_range();
    range_ = std::move(other.range_);
    chunks_ = std::move(other.chunks_);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

chunked_range::~chunked_range() { release_range(); }

// The chunks first (detail::chunk_list: one wait, then unmap and release each, newest first), then
// the address range they live in.
void chunked_range::release_range() noexcept {
  chunks_.reset();
  range_.reset();
  size_ = 0;
  capacity_ = 0;
}

std::size_t chunked_range::chunk_count() const noexcept { return chunks_ ? chunks_->count() : 0; }

}  // namespace membridge::cuda
