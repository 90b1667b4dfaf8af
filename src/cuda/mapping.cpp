#include <membridge/core/units.hpp>
#include <membridge/cuda/mapping.hpp>

#include "detail/device_state.hpp"

#include <string>
#include <utility>

namespace membridge::cuda {

namespace {

result<void> set_rights(const detail::device_state& s, CUdeviceptr address, std::size_t size, access rights) {
  const CUmemAccessDesc desc = s.access_desc(rights);
  if (const CUresult rc = s.api().cuMemSetAccess(address, size, &desc, 1); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemSetAccess", "granting access to " + format_bytes(size));
  return ok();
}

}  // namespace

result<mapping> mapping::map(const address_range& range, std::size_t offset, const vmm_allocation& memory,
                             access rights) {
  if (!range.valid()) return error(errc::invalid_argument, "mapping::map", "the address range is empty");
  if (!memory.valid()) return error(errc::invalid_argument, "mapping::map", "the allocation is empty");
  const auto& s = *range.state();
  if (memory.state()->handle != s.handle || memory.state()->drv != s.drv)
    return error(errc::invalid_argument, "mapping::map", "the allocation and the range belong to different devices");
  if (!is_aligned(offset, s.granularity))
    return error(errc::invalid_argument, "mapping::map",
                 "offset " + std::to_string(offset) + " is not a multiple of the granularity (" +
                     format_bytes(s.granularity) + ")");
  if (!range.contains(offset, memory.size()))
    return error(errc::invalid_argument, "mapping::map",
                 "a " + format_bytes(memory.size()) + " allocation at offset " + format_bytes(offset) +
                     " does not fit a " + format_bytes(range.size()) + " range");
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  const CUdeviceptr address = range.base() + offset;
  if (const CUresult rc = s.api().cuMemMap(address, memory.size(), 0, memory.native(), 0); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemMap", "mapping " + format_bytes(memory.size()) + " at offset " + format_bytes(offset));
  mapping mapped(range.state(), address, memory.size(), access::none);
  if (rights != access::none) {
    if (auto granted = set_rights(s, address, memory.size(), rights); !granted) return std::move(granted).error();
    mapped.rights_ = rights;
  }
  return mapped;  // on the error path above, `mapped` is destroyed and unmaps
}

mapping::mapping(mapping&& other) noexcept
    : state_(std::move(other.state_)),
      address_(std::exchange(other.address_, 0)),
      size_(std::exchange(other.size_, 0)),
      rights_(std::exchange(other.rights_, access::none)) {}

mapping& mapping::operator=(mapping&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
    address_ = std::exchange(other.address_, 0);
    size_ = std::exchange(other.size_, 0);
    rights_ = std::exchange(other.rights_, access::none);
  }
  return *this;
}

mapping::~mapping() { reset(); }

result<void> mapping::set_access(access rights) {
  if (!valid()) return error(errc::invalid_argument, "mapping::set_access", "nothing is mapped");
  MEMBRIDGE_TRY_ASSIGN(auto scope, state_->enter());
  // Taking rights away from memory that queued kernels still use makes them fault (found by
  // compute-sanitizer): wait for them first. Granting more needs no wait.
  if (static_cast<int>(rights) < static_cast<int>(rights_)) {
    if (const CUresult rc = state_->api().cuCtxSynchronize(); rc != CUDA_SUCCESS)
      return state_->fail(rc, "cuCtxSynchronize", "waiting for queued work before narrowing access");
  }
  MEMBRIDGE_TRY(set_rights(*state_, address_, size_, rights));
  rights_ = rights;
  return ok();
}

result<void> mapping::set_access(std::span<mapping> maps, access rights) {
  constexpr const char* call = "mapping::set_access";
  if (maps.empty()) return error(errc::invalid_argument, call, "no mappings given");
  bool narrows = false;
  for (std::size_t i = 0; i < maps.size(); ++i) {
    const mapping& m = maps[i];
    if (!m.valid()) return error(errc::invalid_argument, call, "mapping " + std::to_string(i) + " is empty");
    if (i > 0 && (m.state_ != maps[0].state_ || m.address_ != maps[i - 1].address_ + maps[i - 1].size_))
      return error(errc::invalid_argument, call,
                   "mapping " + std::to_string(i) + " does not start where mapping " + std::to_string(i - 1) +
                       " ends on the same device");
    narrows = narrows || static_cast<int>(rights) < static_cast<int>(m.rights_);
  }
  const auto& s = *maps[0].state_;
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  if (narrows) {
    if (const CUresult rc = s.api().cuCtxSynchronize(); rc != CUDA_SUCCESS)
      return s.fail(rc, "cuCtxSynchronize", "waiting for queued work before narrowing access");
  }
  const mapping& last = maps.back();
  MEMBRIDGE_TRY(set_rights(s, maps[0].address_, last.address_ + last.size_ - maps[0].address_, rights));
  for (mapping& m : maps) m.rights_ = rights;
  return ok();
}

result<void> mapping::unmap() {
  if (!valid()) return ok();
  const auto& s = *state_;
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  // cuMemUnmap does not wait for kernels that still use the memory: wait first.
  if (const CUresult rc = s.api().cuCtxSynchronize(); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuCtxSynchronize", "waiting for queued work before unmapping");
  if (const CUresult rc = s.api().cuMemUnmap(address_, size_); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemUnmap", "unmapping " + format_bytes(size_));
  address_ = 0;
  size_ = 0;
  rights_ = access::none;
  state_.reset();
  return ok();
}

void mapping::reset() noexcept {
  if (!valid()) return;
  const auto& s = *state_;
  if (auto scope = s.enter(); !scope) {
    detail::log_teardown_failure(scope.error());
  } else {
    // Unmap even if the wait fails: a context that cannot synchronise (device lost) runs nothing more.
    if (const CUresult rc = s.api().cuCtxSynchronize(); rc != CUDA_SUCCESS)
      detail::log_teardown_failure(s.fail(rc, "cuCtxSynchronize", "waiting for queued work before unmapping"));
    if (const CUresult rc = s.api().cuMemUnmap(address_, size_); rc != CUDA_SUCCESS)
      detail::log_teardown_failure(s.fail(rc, "cuMemUnmap", "unmapping " + format_bytes(size_)));
  }
  address_ = 0;
  size_ = 0;
  rights_ = access::none;
  state_.reset();
}

}  // namespace membridge::cuda
