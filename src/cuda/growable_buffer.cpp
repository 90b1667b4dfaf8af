#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>

#include "detail/chunk_list.hpp"
#include "detail/device_state.hpp"

#include <numeric>
#include <string>
#include <utility>

namespace membridge::cuda {

namespace {

constexpr const char* create_call = "growable_buffer::create";

/// Two loads of one driver are one driver: compare the functions, not the wrapper objects.
bool same_driver(const device& a, const device& b) noexcept {
  return a.get_driver().api().cuMemCreate == b.get_driver().api().cuMemCreate;
}

/// The devices chunks are created on: placement.devices, or the buffer's own when that is empty;
/// each checked, and every per_chunk index in range.
result<std::vector<const device*>> placement_devices(const device& dev, const chunk_placement& placement) {
  std::vector<const device*> out = placement.devices;
  if (out.empty()) out.push_back(&dev);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == nullptr || !out[i]->valid())
      return error(errc::invalid_argument, create_call, "placement device " + std::to_string(i) + " is empty");
    if (!same_driver(*out[i], dev))
      return error(errc::invalid_argument, create_call,
                   "placement device " + std::to_string(i) + " was opened through another driver than the buffer's");
  }
  for (std::size_t i = 0; i < placement.per_chunk.size(); ++i)
    if (placement.per_chunk[i] >= out.size())
      return error(errc::invalid_argument, create_call,
                   "per_chunk[" + std::to_string(i) + "] is " + std::to_string(placement.per_chunk[i]) + " but there " +
                       (out.size() == 1 ? "is 1 placement device" : "are " + std::to_string(out.size()) +
                                                                        " placement devices"));
  return out;
}

/// The access list: devices of the buffer's driver, none empty, none twice, not the buffer's own.
result<void> check_access_list(const device& dev, const std::vector<device_access>& list) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const device* gpu = list[i].gpu;
    if (gpu == nullptr || !gpu->valid())
      return error(errc::invalid_argument, create_call, "access entry " + std::to_string(i) + " names no device");
    if (!same_driver(*gpu, dev))
      return error(errc::invalid_argument, create_call,
                   "access entry " + std::to_string(i) + " was opened through another driver than the buffer's");
    if (gpu->native() == dev.native())
      return error(errc::invalid_argument, create_call,
                   "access entry " + std::to_string(i) + " names the buffer's own device (" + gpu->state()->describe() +
                       "), which always has read_write");
    for (std::size_t j = 0; j < i; ++j)
      if (list[j].gpu->native() == gpu->native())
        return error(errc::invalid_argument, create_call, gpu->state()->describe() + " is named twice in access");
  }
  return ok();
}

/// Every GPU with access (the buffer's own and the list) reaches every placement GPU's memory.
result<void> check_reach(const device& dev, const std::vector<device_access>& list,
                         const std::vector<const device*>& placement) {
  for (const device* memory : placement) {
    MEMBRIDGE_TRY(require_peer_access(dev, *memory).with_context("placing chunks of a buffer of " +
                                                                 dev.state()->describe()));
    for (const device_access& a : list)
      MEMBRIDGE_TRY(require_peer_access(*a.gpu, *memory).with_context("giving access to a buffer of " +
                                                                      dev.state()->describe()));
  }
  return ok();
}

/// A granularity every placement device accepts (granularities are powers of two: the largest).
result<std::size_t> common_granularity(const std::vector<const device*>& placement, const allocation_options& memory) {
  std::size_t out = 1;
  for (const device* gpu : placement) {
    MEMBRIDGE_TRY_ASSIGN(const std::size_t g, allocation_granularity(*gpu, memory));
    out = std::lcm(out, g);
  }
  return out;
}

}  // namespace

growable_buffer::growable_buffer(address_range range, std::size_t granularity,
                                 const growable_buffer_options& options, std::vector<state_ptr> placement)
    : chunked_range(std::move(range)),
      granularity_(granularity),
      policy_(options.chunks),
      memory_options_(options.memory),
      placement_(std::move(placement)),
      per_chunk_(options.placement.per_chunk) {
  std::vector<detail::peer_grant> grants;
  grants.reserve(options.access.size());
  for (const device_access& a : options.access) grants.push_back({a.gpu->state(), a.rights});
  chunks_->add_grants(grants);
}

result<growable_buffer> growable_buffer::create(const device& dev, const growable_buffer_options& options) {
  if (!dev.valid()) return error(errc::invalid_argument, create_call, "the device is empty");
  if (options.max_size == 0)
    return error(errc::invalid_argument, create_call, "max_size is 0: reserve the largest size needed");
  if (options.size > options.max_size)
    return error(errc::invalid_argument, create_call,
                 "size (" + format_bytes(options.size) + ") exceeds max_size (" + format_bytes(options.max_size) + ")");
  MEMBRIDGE_TRY_ASSIGN(const auto placement, placement_devices(dev, options.placement));
  MEMBRIDGE_TRY(check_access_list(dev, options.access));
  MEMBRIDGE_TRY(check_reach(dev, options.access, placement));
  MEMBRIDGE_TRY_ASSIGN(const std::size_t granularity, common_granularity(placement, options.memory));
  MEMBRIDGE_TRY(validate(options.chunks, granularity));
  const auto reserved = round_up(options.max_size, granularity);
  if (!reserved) return error(errc::invalid_argument, create_call, "max_size overflows when rounded up");
  MEMBRIDGE_TRY_ASSIGN(auto range, address_range::reserve(dev, *reserved, granularity));
  std::vector<state_ptr> states;
  states.reserve(placement.size());
  for (const device* gpu : placement) states.push_back(gpu->state());
  growable_buffer buffer(std::move(range), granularity, options, std::move(states));
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
    : chunked_range(std::move(other)),
      granularity_(other.granularity_),
      policy_(other.policy_),
      memory_options_(other.memory_options_),
      placement_(std::move(other.placement_)),
      per_chunk_(std::move(other.per_chunk_)) {}

growable_buffer& growable_buffer::operator=(growable_buffer&& other) noexcept {
  if (this != &other) {
    release_all();
    chunked_range::operator=(std::move(other));
    granularity_ = other.granularity_;
    policy_ = other.policy_;
    memory_options_ = other.memory_options_;
    placement_ = std::move(other.placement_);
    per_chunk_ = std::move(other.per_chunk_);
  }
  return *this;
}

growable_buffer::~growable_buffer() { release_all(); }

// The chunks and the range they live in (chunked_range's order), then the placement.
void growable_buffer::release_all() noexcept {
  release_range();
  placement_.clear();
  per_chunk_.clear();
}

const growable_buffer::state_ptr& growable_buffer::placement_of(std::size_t chunk_index) const noexcept {
  if (chunk_index < per_chunk_.size()) return placement_[per_chunk_[chunk_index]];
  return placement_[chunk_index % placement_.size()];
}

// Maps chunks after the current ones until capacity >= required, sized by `policy`, each created on
// its placement GPU and mapped with rights for the whole access set. All or nothing: on any failure
// the guard drops the chunks this call added (in teardown order), and the buffer is as it was.
result<void> growable_buffer::add_chunks(std::size_t required, const chunk_policy& policy) {
  MEMBRIDGE_TRY_ASSIGN(const auto sizes, plan_growth(policy, capacity_, required, range_.size(), granularity_));
  if (sizes.empty()) return ok();
  chunks_->reserve_more(sizes.size());
  detail::append_guard added(*chunks_);
  std::size_t offset = capacity_;
  for (const std::size_t size : sizes) {
    const device memory_gpu(placement_of(chunks_->count()));
    MEMBRIDGE_TRY_ASSIGN(auto memory, vmm_allocation::create(memory_gpu, size, memory_options_));
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

chunk_info growable_buffer::chunk(std::size_t index) const noexcept {
  const vmm_allocation& memory = chunks_->memory(index);
  return {chunks_->offset(index), memory.size(), memory.state()->ordinal};
}

std::vector<int> growable_buffer::access_devices() const {
  std::vector<int> out;
  if (!chunks_) return out;
  out.push_back(chunks_->owner().ordinal);
  for (const detail::peer_grant& g : chunks_->grants()) out.push_back(g.gpu->ordinal);
  return out;
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
  auto fd = memory.export_handle();
  if (!fd) return std::move(fd).error().add_context("exporting chunk " + std::to_string(index));
  return exported_chunk{std::move(fd).value(), chunks_->offset(index), memory.size()};
}

}  // namespace membridge::cuda
