#include "chunk_list.hpp"

#include <membridge/core/units.hpp>

#include "device_state.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace membridge::cuda::detail {

chunk_list::chunk_list(const address_range& range) noexcept : state_(range.state()), base_(range.base()) {}

chunk_list::~chunk_list() { drop(0); }

void chunk_list::reserve_more(std::size_t more) {
  const std::size_t needed = chunks_.size() + more;
  if (chunks_.capacity() < needed) chunks_.reserve(std::max<std::size_t>({4, 2 * chunks_.size(), needed}));
}

std::size_t chunk_list::end() const noexcept {
  return chunks_.empty() ? 0 : chunks_.back().offset + chunks_.back().memory.size();
}

result<void> chunk_list::push(vmm_allocation memory, std::size_t offset, access rights) {
  const device_state& s = *state_;
  const std::size_t size = memory.size();
  const CUdeviceptr address = base_ + offset;
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  if (const CUresult rc = s.api().cuMemMap(address, size, 0, memory.native(), 0); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemMap", "mapping " + format_bytes(size) + " at offset " + format_bytes(offset));
  if (rights != access::none) {
    const CUmemAccessDesc desc = s.access_desc(rights);
    if (const CUresult rc = s.api().cuMemSetAccess(address, size, &desc, 1); rc != CUDA_SUCCESS) {
      error e = s.fail(rc, "cuMemSetAccess", "granting access to " + format_bytes(size));
      // Never accessible, so no queued work can use it: unmap without waiting.
      if (const CUresult undo = s.api().cuMemUnmap(address, size); undo != CUDA_SUCCESS)
        log_teardown_failure(s.fail(undo, "cuMemUnmap", "unmapping " + format_bytes(size)));
      return e;
    }
  }
  chunks_.push_back(chunk{std::move(memory), offset});
  return ok();
}

result<void> chunk_list::grant(std::size_t first, access rights) {
  if (first >= chunks_.size() || rights == access::none) return ok();
  const device_state& s = *state_;
  const std::size_t begin = chunks_[first].offset;
  const std::size_t bytes = end() - begin;
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  const CUmemAccessDesc desc = s.access_desc(rights);
  if (const CUresult rc = s.api().cuMemSetAccess(base_ + begin, bytes, &desc, 1); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemSetAccess", "granting access to " + format_bytes(bytes));
  return ok();
}

result<void> chunk_list::truncate(std::size_t count) {
  if (count >= chunks_.size()) return ok();
  const device_state& s = *state_;
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  if (const CUresult rc = s.api().cuCtxSynchronize(); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuCtxSynchronize", "waiting for queued work before unmapping");
  while (chunks_.size() > count) {
    chunk& last = chunks_.back();
    const std::size_t size = last.memory.size();
    if (const CUresult rc = s.api().cuMemUnmap(base_ + last.offset, size); rc != CUDA_SUCCESS)
      return s.fail(rc, "cuMemUnmap", "unmapping " + format_bytes(size) + " at offset " + format_bytes(last.offset));
    chunks_.pop_back();  // releases the handle
  }
  return ok();
}

void chunk_list::drop(std::size_t count) noexcept {
  if (count >= chunks_.size()) return;
  const device_state& s = *state_;
  auto scope = s.enter();
  if (!scope) {
    log_teardown_failure(scope.error());
  } else {
    // Unmap even if the wait fails: a context that cannot synchronise (device lost) runs nothing more.
    if (const CUresult rc = s.api().cuCtxSynchronize(); rc != CUDA_SUCCESS)
      log_teardown_failure(s.fail(rc, "cuCtxSynchronize", "waiting for queued work before unmapping"));
    for (std::size_t i = chunks_.size(); i > count; --i) {
      const chunk& c = chunks_[i - 1];
      if (const CUresult rc = s.api().cuMemUnmap(base_ + c.offset, c.memory.size()); rc != CUDA_SUCCESS)
        log_teardown_failure(
            s.fail(rc, "cuMemUnmap", "unmapping " + format_bytes(c.memory.size()) + " at offset " + format_bytes(c.offset)));
    }
  }
  // Newest first, as the unmaps: each handle is released once its mapping is gone.
  while (chunks_.size() > count) chunks_.pop_back();
}

}  // namespace membridge::cuda::detail
