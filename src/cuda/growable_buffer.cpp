#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>

#include "detail/device_state.hpp"

#include <string>
#include <utility>

namespace membridge::cuda {

growable_buffer::growable_buffer(address_range range, std::size_t granularity,
                                 const growable_buffer_options& options) noexcept
    : range_(std::move(range)), granularity_(granularity), policy_(options.chunks), memory_options_(options.memory) {}

result<growable_buffer> growable_buffer::create(const device& dev, const growable_buffer_options& options) {
  if (!dev.valid()) return error(errc::invalid_argument, "growable_buffer::create", "the device is empty");
  if (options.max_size == 0)
    return error(errc::invalid_argument, "growable_buffer::create", "max_size is 0: reserve the largest size needed");
  if (options.size > options.max_size)
    return error(errc::invalid_argument, "growable_buffer::create",
                 "size (" + format_bytes(options.size) + ") exceeds max_size (" + format_bytes(options.max_size) + ")");
  MEMBRIDGE_TRY_ASSIGN(const std::size_t granularity, allocation_granularity(dev, options.memory));
  MEMBRIDGE_TRY(validate(options.chunks, granularity));
  const auto reserved = round_up(options.max_size, granularity);
  if (!reserved) return error(errc::invalid_argument, "growable_buffer::create", "max_size overflows when rounded up");
  MEMBRIDGE_TRY_ASSIGN(auto range, address_range::reserve(dev, *reserved, granularity));
  growable_buffer buffer(std::move(range), granularity, options);
  if (options.size > 0) {
    // The first mapping is exactly the requested size (no geometric slack), split by max_chunk.
    const chunk_policy exact{.growth_factor = 1.0, .min_chunk = 0, .max_chunk = options.chunks.max_chunk};
    if (auto mapped = buffer.add_chunks(options.size, exact); !mapped)
      return std::move(mapped).error().add_context("creating a " + format_bytes(options.size) + " growable buffer");
    buffer.size_ = options.size;
  }
  return buffer;
}

growable_buffer::growable_buffer(growable_buffer&& other) noexcept
    : range_(std::move(other.range_)),
      chunks_(std::exchange(other.chunks_, {})),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)),
      granularity_(other.granularity_),
      policy_(other.policy_),
      memory_options_(other.memory_options_) {}

growable_buffer& growable_buffer::operator=(growable_buffer&& other) noexcept {
  if (this != &other) {
    release_all();
    range_ = std::move(other.range_);
    chunks_ = std::exchange(other.chunks_, {});
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    granularity_ = other.granularity_;
    policy_ = other.policy_;
    memory_options_ = other.memory_options_;
  }
  return *this;
}

growable_buffer::~growable_buffer() { release_all(); }

// The one place the VMM teardown order lives: for each chunk, newest first, wait + unmap (mapping),
// then release the physical handle; last, free the address range.
void growable_buffer::release_all() noexcept {
  while (!chunks_.empty()) {
    owned_chunk& last = chunks_.back();
    last.map.reset();
    last.memory.reset();
    chunks_.pop_back();
  }
  range_.reset();
  size_ = 0;
  capacity_ = 0;
}

// Maps chunks after the current ones until capacity >= required, sized by `policy`. All or nothing: the new chunks
// live in a local vector until every one is created and mapped, so on any failure they are unmapped
// and released (in teardown order) when it goes out of scope, and the buffer is untouched.
result<void> growable_buffer::add_chunks(std::size_t required, const chunk_policy& policy) {
  MEMBRIDGE_TRY_ASSIGN(const auto sizes, plan_growth(policy, capacity_, required, range_.size(), granularity_));
  if (sizes.empty()) return ok();
  const device dev(range_.state());
  std::vector<owned_chunk> added;
  added.reserve(sizes.size());
  chunks_.reserve(chunks_.size() + sizes.size());  // so the final append cannot fail half-way
  std::size_t offset = capacity_;
  for (const std::size_t size : sizes) {
    owned_chunk c;
    c.offset = offset;
    MEMBRIDGE_TRY_ASSIGN(c.memory, vmm_allocation::create(dev, size, memory_options_));
    MEMBRIDGE_TRY_ASSIGN(c.map, mapping::map(range_, offset, c.memory, access::read_write));
    offset += size;
    added.push_back(std::move(c));
  }
  for (auto& c : added) chunks_.push_back(std::move(c));
  capacity_ = offset;
  return ok();
}

result<void> growable_buffer::grow(std::size_t new_size) {
  if (!valid()) return error(errc::invalid_argument, "growable_buffer::grow", "the buffer is empty");
  if (new_size < size_)
    return error(errc::invalid_argument, "growable_buffer::grow",
                 "new size " + format_bytes(new_size) + " is below the current size " + format_bytes(size_) +
                     " (use shrink)");
  if (new_size > capacity_) {
    if (auto mapped = add_chunks(new_size, policy_); !mapped)
      return std::move(mapped).error().add_context("growing a buffer from " + format_bytes(size_) + " to " +
                                                   format_bytes(new_size));
  }
  size_ = new_size;
  return ok();
}

result<void> growable_buffer::reserve(std::size_t new_capacity) {
  if (!valid()) return error(errc::invalid_argument, "growable_buffer::reserve", "the buffer is empty");
  if (new_capacity <= capacity_) return ok();
  const chunk_policy exact{.growth_factor = 1.0, .min_chunk = 0, .max_chunk = policy_.max_chunk};
  if (auto mapped = add_chunks(new_capacity, exact); !mapped)
    return std::move(mapped).error().add_context("reserving " + format_bytes(new_capacity) + " (size " +
                                                 format_bytes(size_) + ")");
  return ok();
}

result<void> growable_buffer::shrink(std::size_t new_size) {
  if (!valid()) return error(errc::invalid_argument, "growable_buffer::shrink", "the buffer is empty");
  if (new_size > size_)
    return error(errc::invalid_argument, "growable_buffer::shrink",
                 "new size " + format_bytes(new_size) + " exceeds the current size " + format_bytes(size_) +
                     " (use grow)");
  size_ = new_size;
  while (!chunks_.empty() && chunks_.back().offset >= new_size) {
    owned_chunk& last = chunks_.back();
    if (auto unmapped = last.map.unmap(); !unmapped)
      return std::move(unmapped).error().add_context("shrinking a buffer to " + format_bytes(new_size));
    last.memory.reset();
    capacity_ = last.offset;
    chunks_.pop_back();
  }
  return ok();
}

result<void> growable_buffer::resize(std::size_t new_size) {
  return new_size >= size_ ? grow(new_size) : shrink(new_size);
}

chunk_info growable_buffer::chunk(std::size_t index) const noexcept {
  return {chunks_[index].offset, chunks_[index].memory.size()};
}

std::vector<chunk_info> growable_buffer::chunks() const {
  std::vector<chunk_info> out;
  out.reserve(chunks_.size());
  for (std::size_t i = 0; i < chunks_.size(); ++i) out.push_back(chunk(i));
  return out;
}

result<exported_chunk> growable_buffer::export_chunk(std::size_t index) const {
  if (index >= chunks_.size())
    return error(errc::invalid_argument, "growable_buffer::export_chunk",
                 "chunk " + std::to_string(index) + " does not exist (" + std::to_string(chunks_.size()) + " chunks)");
  const auto& c = chunks_[index];
  auto fd = c.memory.export_fd();
  if (!fd) return std::move(fd).error().add_context("exporting chunk " + std::to_string(index));
  return exported_chunk{std::move(fd).value(), c.offset, c.memory.size()};
}

}  // namespace membridge::cuda
