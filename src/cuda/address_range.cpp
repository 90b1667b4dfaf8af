#include <membridge/core/units.hpp>
#include <membridge/cuda/address_range.hpp>

#include "detail/device_state.hpp"

#include <utility>

namespace membridge::cuda {

result<address_range> address_range::reserve(const device& dev, std::size_t size, std::size_t alignment) {
  if (!dev.valid()) return error(errc::invalid_argument, "address_range::reserve", "the device is empty");
  if (size == 0) return error(errc::invalid_argument, "address_range::reserve", "size is 0");
  const auto& s = *dev.state();
  if (alignment == 0) alignment = s.granularity;
  if (!is_aligned(alignment, s.granularity) || (alignment & (alignment - 1)) != 0)
    return error(errc::invalid_argument, "address_range::reserve",
                 "alignment " + std::to_string(alignment) + " is not a power-of-two multiple of the granularity (" +
                     format_bytes(s.granularity) + ")");
  const auto rounded = round_up(size, s.granularity);
  if (!rounded) return error(errc::invalid_argument, "address_range::reserve", "size overflows when rounded up");
  MEMBRIDGE_TRY_ASSIGN(auto scope, s.enter());
  CUdeviceptr base = 0;
  if (const CUresult rc = s.api().cuMemAddressReserve(&base, *rounded, alignment, 0, 0); rc != CUDA_SUCCESS)
    return s.fail(rc, "cuMemAddressReserve", "reserving " + format_bytes(*rounded) + " of device addresses");
  return address_range(dev.state(), base, *rounded);
}

address_range::address_range(address_range&& other) noexcept
    : state_(std::move(other.state_)), base_(std::exchange(other.base_, 0)), size_(std::exchange(other.size_, 0)) {}

address_range& address_range::operator=(address_range&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
    base_ = std::exchange(other.base_, 0);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

address_range::~address_range() { reset(); }

void address_range::reset() noexcept {
  if (base_ != 0) {
    auto scope = state_->enter();
    if (!scope) {
      detail::log_teardown_failure(scope.error());
    } else if (const CUresult rc = state_->api().cuMemAddressFree(base_, size_); rc != CUDA_SUCCESS) {
      detail::log_teardown_failure(
          state_->fail(rc, "cuMemAddressFree", "freeing " + format_bytes(size_) + " of device addresses"));
    }
  }
  base_ = 0;
  size_ = 0;
  state_.reset();
}

}  // namespace membridge::cuda
