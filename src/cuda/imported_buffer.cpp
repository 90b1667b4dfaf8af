#include <membridge/core/units.hpp>
#include <membridge/cuda/imported_buffer.hpp>

#include "detail/chunk_list.hpp"
#include "detail/device_state.hpp"
#include "detail/platform.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace membridge::cuda {

result<imported_buffer> imported_buffer::reserve(const device& dev, std::size_t reserved_size) {
  if (!dev.valid()) return error(errc::invalid_argument, "imported_buffer::reserve", "the device is empty");
  if (reserved_size == 0) return error(errc::invalid_argument, "imported_buffer::reserve", "reserved_size is 0");
  MEMBRIDGE_TRY_ASSIGN(address_range range, address_range::reserve(dev, reserved_size));
  return imported_buffer(std::move(range));
}

imported_buffer::imported_buffer(address_range range) : chunked_range(std::move(range)) {}

imported_buffer::imported_buffer() noexcept = default;

imported_buffer::imported_buffer(imported_buffer&& other) noexcept
    : chunked_range(std::move(other)), chunk_gpus_(std::move(other.chunk_gpus_)) {}

imported_buffer& imported_buffer::operator=(imported_buffer&& other) noexcept {
  if (this != &other) {
    release_all();
    chunked_range::operator=(std::move(other));
    chunk_gpus_ = std::move(other.chunk_gpus_);
  }
  return *this;
}

imported_buffer::~imported_buffer() { release_all(); }

// The chunks and the range they live in (chunked_range's order), then the chunks' GPUs.
void imported_buffer::release_all() noexcept {
  release_range();
  chunk_gpus_.clear();
}

result<void> imported_buffer::append(os::borrowed_shareable_handle fd, std::size_t offset, std::size_t size, access rights) {
  const chunk_source one{fd, offset, size};
  return append_all(std::span(&one, 1), rights);
}

// Checks one chunk of an append against the view: `expected_offset` is where it must start.
result<void> imported_buffer::check_chunk(const chunk_source& c, std::size_t expected_offset) const {
  constexpr const char* call = "imported_buffer::append";
  if (!c.fd.valid()) return error(errc::invalid_argument, call, std::string("the ") + detail::handle_word() + " is empty");
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

// The GPU whose memory holds an imported chunk (cuMemGetAllocationPropertiesFromHandle): the
// importing device's own state, a GPU already known (a chunk's or a grant's), or newly opened.
result<imported_buffer::state_ptr> imported_buffer::memory_gpu(const vmm_allocation& memory) const {
  MEMBRIDGE_TRY_ASSIGN(const allocation_properties props, memory.properties());
  const state_ptr& owner = range_.state();
  if (props.device == owner->ordinal) return owner;
  for (const state_ptr& known : chunk_gpus_)
    if (known->ordinal == props.device) return known;
  for (const detail::peer_grant& g : chunks_->grants())
    if (g.gpu->ordinal == props.device) return g.gpu;
  MEMBRIDGE_TRY_ASSIGN(device opened, device::open(owner->drv, props.device)
                                          .with_context("opening the GPU that holds an imported chunk"));
  return opened.state();
}

// Every GPU with access (the importing device and the grants) can use memory on `memory_gpu`.
result<void> imported_buffer::check_reach(const state_ptr& memory_gpu) const {
  const device memory_device(memory_gpu);
  MEMBRIDGE_TRY(require_peer_access(device(range_.state()), memory_device));
  for (const detail::peer_grant& g : chunks_->grants())
    MEMBRIDGE_TRY(require_peer_access(device(g.gpu), memory_device));
  return ok();
}

// Every chunk is checked before any driver call; then each is imported, its memory's GPU checked
// against every GPU with access, and mapped without access; one access call covers them all. The
// new chunks live in `added` until everything succeeded: on any error they are destroyed (unmapped,
// released) and the view is as it was.
result<void> imported_buffer::append_all(std::span<const chunk_source> chunks, access rights) {
  if (!valid()) return error(errc::invalid_argument, "imported_buffer::append", "the buffer is empty (not reserved)");
  std::size_t end = capacity_;
  for (const chunk_source& c : chunks) {
    MEMBRIDGE_TRY(check_chunk(c, end));
    end = c.offset + c.size;
  }
  if (chunks.empty()) return ok();
  chunks_->reserve_more(chunks.size());
  chunk_gpus_.reserve(chunk_gpus_.size() + chunks.size());  // so that recording them below cannot throw
  std::vector<state_ptr> gpus;
  gpus.reserve(chunks.size());
  detail::append_guard added(*chunks_);
  const device dev(range_.state());
  for (const chunk_source& c : chunks) {
    const std::string where = "the chunk at offset " + format_bytes(c.offset);
    MEMBRIDGE_TRY_ASSIGN(auto memory,
                         vmm_allocation::import(dev, c.fd, c.size).with_context("importing " + where));
    MEMBRIDGE_TRY_ASSIGN(auto gpu, memory_gpu(memory).with_context("locating " + where));
    if (gpu != range_.state()) MEMBRIDGE_TRY(check_reach(gpu).with_context("importing " + where));
    MEMBRIDGE_TRY(chunks_->push(std::move(memory), c.offset, access::none).with_context("mapping " + where));
    gpus.push_back(std::move(gpu));
  }
  MEMBRIDGE_TRY(chunks_->grant(added.first(), rights)
                    .with_context("granting access to " + std::to_string(chunks.size()) + " chunk(s) from offset " +
                                  format_bytes(chunks.front().offset)));
  added.keep();
  chunk_gpus_.insert(chunk_gpus_.end(), std::make_move_iterator(gpus.begin()), std::make_move_iterator(gpus.end()));
  capacity_ = end;
  return ok();
}

// The grant list: devices of the buffer's driver, none empty, none twice, not the importing device;
// each reaches the importing device's memory and every chunk's.
result<void> imported_buffer::check_grants(std::span<const device_access> grants) const {
  constexpr const char* call = "imported_buffer::grant_access";
  if (!valid()) return error(errc::invalid_argument, call, "the buffer is empty (not reserved)");
  if (grants.empty()) return error(errc::invalid_argument, call, "no device to grant access to");
  const device owner(range_.state());
  for (std::size_t i = 0; i < grants.size(); ++i) {
    const device* gpu = grants[i].gpu;
    if (gpu == nullptr || !gpu->valid())
      return error(errc::invalid_argument, call, "grant " + std::to_string(i) + " names no device");
    if (gpu->get_driver().api().cuMemSetAccess != owner.get_driver().api().cuMemSetAccess)
      return error(errc::invalid_argument, call,
                   "grant " + std::to_string(i) + " was opened through another driver than the buffer's");
    if (gpu->native() == owner.native())
      return error(errc::invalid_argument, call,
                   "grant " + std::to_string(i) + " names the importing device (" + owner.state()->describe() +
                       "): append() sets its rights");
    for (std::size_t j = 0; j < i; ++j)
      if (grants[j].gpu->native() == gpu->native())
        return error(errc::invalid_argument, call, gpu->state()->describe() + " is named twice");
    MEMBRIDGE_TRY(require_peer_access(*gpu, owner).with_context("granting access to an imported buffer"));
    for (const state_ptr& memory : chunk_gpus_)
      MEMBRIDGE_TRY(require_peer_access(*gpu, device(memory)).with_context("granting access to an imported buffer"));
  }
  return ok();
}

// All checks first; then one access call over every chunk for the new grants, and only then are
// they recorded for future appends (so a failure changes nothing).
result<void> imported_buffer::grant_access(std::span<const device_access> grants) {
  MEMBRIDGE_TRY(check_grants(grants));
  std::vector<detail::peer_grant> added;
  added.reserve(grants.size());
  for (const device_access& g : grants) added.push_back({g.gpu->state(), g.rights});
  MEMBRIDGE_TRY(chunks_->apply(added).with_context("granting " + std::to_string(added.size()) +
                                                    " device(s) access to an imported buffer"));
  chunks_->add_grants(added);
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
  chunk_gpus_.resize(chunks_->count());
  capacity_ = chunks_->end();  // chunks lie back to back from offset 0
  if (size_ > capacity_) size_ = capacity_;
  if (!unmapped)
    return std::move(unmapped).error().add_context("truncating an imported buffer to " + std::to_string(chunk_count) +
                                                   " chunks");
  return ok();
}

result<void> imported_buffer::set_size(std::size_t bytes) {
  if (bytes > capacity_)
    return error(errc::invalid_argument, "imported_buffer::set_size",
                 "size " + format_bytes(bytes) + " exceeds the mapped capacity " + format_bytes(capacity_));
  size_ = bytes;
  return ok();
}

}  // namespace membridge::cuda
