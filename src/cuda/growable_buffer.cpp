#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>

#include "detail/chunk_list.hpp"
#include "detail/device_state.hpp"

#include <string>
#include <utility>

namespace membridge::cuda {

growable_buffer::growable_buffer(address_range range, std::size_t granularity,
                                 const growable_buffer_options& options)
    : range_(std::move(range)),
      chunks_(std::make_unique<detail::chunk_list>(range_)),
      granularity_(granularity),
      policy_(options.chunks),
      memory_options_(options.memory) {}

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

growable_buffer::growable_buffer() noexcept = default;

growable_buffer::growable_buffer(growable_buffer&& other) noexcept
    : range_(std::move(other.range_)),
      chunks_(std::move(other.chunks_)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)),
      granularity_(other.granularity_),
      policy_(other.policy_),
      memory_options_(other.memory_options_) {}

growable_buffer& growable_buffer::operator=(growable_buffer&& other) noexcept {
  if (this != &other) {
    release_all();
    range_ = std::move(other.range_);
    chunks_ = std::move(other.chunks_);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    granularity_ = other.granularity_;
    policy_ = other.policy_;
    memory_options_ = other.memory_options_;
  }
  return *this;
}

growable_buffer::~growable_buffer() { release_all(); }

// The chunks first (detail::chunk_list: one wait, then unmap and release each, newest first), then
// the address range they live in.
void growable_buffer::release_all() noexcept {
  chunks_.reset();
  range_.reset();
  size_ = 0;
  capacity_ = 0;
}

// Maps chunks after the current ones until capacity >= required, sized by `policy`. All or nothing:
// on any failure the guard drops the chunks this call added (in teardown order), and the buffer is
// as it was.
result<void> growable_buffer::add_chunks(std::size_t required, const chunk_policy& policy) {
  MEMBRIDGE_TRY_ASSIGN(const auto sizes, plan_growth(policy, capacity_, required, range_.size(), granularity_));
  if (sizes.empty()) return ok();
  const device dev(range_.state());
  chunks_->reserve_more(sizes.size());
  detail::append_guard added(*chunks_);
  std::size_t offset = capacity_;
  for (const std::size_t size : sizes) {
    MEMBRIDGE_TRY_ASSIGN(auto memory, vmm_allocation::create(dev, size, memory_options_));
    MEMBRIDGE_TRY(chunks_->push(std::move(memory), offset, access::read_write));
    offset += size;
  }
  added.keep();
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
  std::size_t keep = chunks_->count();
  while (keep > 0 && chunks_->offset(keep - 1) >= new_size) --keep;
  auto unmapped = chunks_->truncate(keep);  // one wait for all the chunks it unmaps
  capacity_ = chunks_->end();               // the chunks left, whether or not every unmap succeeded
  if (!unmapped) return std::move(unmapped).error().add_context("shrinking a buffer to " + format_bytes(new_size));
  return ok();
}

result<void> growable_buffer::resize(std::size_t new_size) {
  return new_size >= size_ ? grow(new_size) : shrink(new_size);
}

std::size_t growable_buffer::chunk_count() const noexcept { return chunks_ ? chunks_->count() : 0; }

chunk_info growable_buffer::chunk(std::size_t index) const noexcept {
  return {chunks_->offset(index), chunks_->memory(index).size()};
}

std::vector<chunk_info> growable_buffer::chunks() const {
  std::vector<chunk_info> out;
  out.reserve(chunk_count());
  for (std::size_t i = 0; i < chunk_count(); ++i) out.push_back(chunk(i));
  return out;
}

result<exported_chunk> growable_buffer::export_chunk(std::size_t index) const {
  if (index >= chunk_count())
    return error(errc::invalid_argument, "growable_buffer::export_chunk",
                 "chunk " + std::to_string(index) + " does not exist (" + std::to_string(chunk_count()) + " chunks)");
  const vmm_allocation& memory = chunks_->memory(index);
  auto fd = memory.export_fd();
  if (!fd) return std::move(fd).error().add_context("exporting chunk " + std::to_string(index));
  return exported_chunk{std::move(fd).value(), chunks_->offset(index), memory.size()};
}

}  // namespace membridge::cuda
