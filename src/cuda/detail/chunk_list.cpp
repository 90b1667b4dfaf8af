#include "chunk_list.hpp"

#include <membridge/core/units.hpp>

#include "device_state.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace membridge::cuda::detail {

namespace {

/// One cuCtxSynchronize in `gpu`'s primary context.
result<void> wait_for(const device_state& gpu) {
  MEMBRIDGE_TRY_ASSIGN(auto scope, gpu.enter());
  if (const CUresult rc = gpu.api().cuCtxSynchronize(); rc != CUDA_SUCCESS)
    return gpu.fail(rc, "cuCtxSynchronize", "waiting for queued work before unmapping");
  return ok();
}

}  // namespace

chunk_list::chunk_list(const address_range& range) noexcept : state_(range.state()), base_(range.base()) {}

chunk_list::~chunk_list() { drop(0); }

void chunk_list::reserve_more(std::size_t more) {
  const std::size_t needed = chunks_.size() + more;
  if (chunks_.capacity() < needed) chunks_.reserve(std::max<std::size_t>({4, 2 * chunks_.size(), needed}));
}

std::size_t chunk_list::end() const noexcept {
  return chunks_.empty() ? 0 : chunks_.back().offset + chunks_.back().memory.size();
}

void chunk_list::add_grants(std::span<const peer_grant> grants) {
  for (const peer_grant& g : grants) {
    const auto same = std::find_if(grants_.begin(), grants_.end(),
                                   [&](const peer_grant& have) { return have.gpu->handle == g.gpu->handle; });
    if (same != grants_.end()) same->rights = g.rights;
    else grants_.push_back(g);
  }
}

std::vector<CUmemAccessDesc> chunk_list::access_descs(access owner_rights) const {
  std::vector<CUmemAccessDesc> descs;
  descs.reserve(1 + grants_.size());
  if (owner_rights != access::none) descs.push_back(state_->access_desc(owner_rights));
  for (const peer_grant& g : grants_)
    if (g.rights != access::none) descs.push_back(g.gpu->access_desc(g.rights));
  return descs;
}

result<void> chunk_list::set_access(std::size_t begin, const std::vector<CUmemAccessDesc>& descs) const {
  if (descs.empty() || begin >= end()) return ok();
  const device_state& s = *state_;
  const std::size_t bytes = end() - begin;
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  if (const CUresult rc = s.api().cuMemSetAccess(base_ + begin, bytes, descs.data(), descs.size()); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemSetAccess",
                  "granting " + std::to_string(descs.size()) + " device(s) access to " + format_bytes(bytes));
  return ok();
}

result<void> chunk_list::apply(std::span<const peer_grant> grants) const {
  std::vector<CUmemAccessDesc> descs;
  for (const peer_grant& g : grants)
    if (g.rights != access::none) descs.push_back(g.gpu->access_desc(g.rights));
  return set_access(0, descs);
}

result<void> chunk_list::push(vmm_allocation memory, std::size_t offset, access rights) {
  const device_state& s = *state_;
  const std::size_t size = memory.size();
  const CUdeviceptr address = base_ + offset;
  const std::vector<CUmemAccessDesc> descs = access_descs(rights);
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  if (const CUresult rc = s.api().cuMemMap(address, size, 0, memory.native(), 0); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemMap", "mapping " + format_bytes(size) + " at offset " + format_bytes(offset));
  if (!descs.empty()) {
    if (const CUresult rc = s.api().cuMemSetAccess(address, size, descs.data(), descs.size()); rc != CUDA_SUCCESS) {
      error e = s.fail(rc, "cuMemSetAccess",
                       "granting " + std::to_string(descs.size()) + " device(s) access to " + format_bytes(size));
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
  if (first >= chunks_.size()) return ok();
  return set_access(chunks_[first].offset, access_descs(rights));
}

result<void> chunk_list::wait_all() const {
  MEMBRIDGE_TRY(wait_for(*state_));
  for (const peer_grant& g : grants_) MEMBRIDGE_TRY(wait_for(*g.gpu));
  return ok();
}

void chunk_list::wait_all_logged() const noexcept {
  // Unmap even if a wait fails: a context that cannot synchronise (device lost) runs nothing more.
  if (auto waited = wait_for(*state_); !waited) log_teardown_failure(waited.error());
  for (const peer_grant& g : grants_)
    if (auto waited = wait_for(*g.gpu); !waited) log_teardown_failure(waited.error());
}

result<void> chunk_list::truncate(std::size_t count) {
  if (count >= chunks_.size()) return ok();
  MEMBRIDGE_TRY(wait_all());
  const device_state& s = *state_;
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
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
  wait_all_logged();
  if (auto scope = s.enter(); !scope) {
    log_teardown_failure(scope.error());
  } else {
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
