#include <membridge/cuda/external_semaphore.hpp>

#include "detail/device_state.hpp"
#include "detail/platform.hpp"

#include <string>
#include <utility>
#include <vector>

namespace membridge::cuda {

result<external_semaphore> external_semaphore::import_timeline(const device& dev, os::borrowed_shareable_handle fd) {
  constexpr const char* call = "external_semaphore::import_timeline";
  if (!dev.valid()) return error(errc::invalid_argument, call, "the device is empty");
  if (!fd.valid()) return error(errc::invalid_argument, call, std::string("the ") + detail::handle_word() + " is invalid");
  const auto& state = dev.state();
  if (!state->caps.timeline_semaphore_interop)
    return error(errc::unsupported, call, state->describe() + " has no timeline semaphore interop");
  MEMBRIDGE_TRY_ASSIGN(auto scope, state->enter());
  const std::string word = detail::handle_word();
  auto imported = detail::import_timeline_semaphore(*state, fd, "importing a timeline semaphore " + word);
  if (!imported) {
    error e = std::move(imported).error();
    const auto rc = static_cast<CUresult>(e.native_code());
    if (e.source() == error_source::cuda && (rc == CUDA_ERROR_UNKNOWN || rc == CUDA_ERROR_INVALID_VALUE))
      return error::from_native(errc::invalid_argument, error_source::cuda, rc, std::string(e.native_name()),
                                "cuImportExternalSemaphore",
                                "the " + word + " is not a timeline semaphore CUDA can import (wrong type or another GPU's)");
    return e;
  }
  const CUexternalSemaphore semaphore = *imported;
  external_semaphore out;
  out.device_ = state;
  out.semaphore_ = semaphore;
  return out;
}

result<void> external_semaphore::signal(CUstream stream, std::uint64_t value) const {
  if (!valid()) return error(errc::invalid_argument, "external_semaphore::signal", "the semaphore is empty");
  MEMBRIDGE_TRY_ASSIGN(auto scope, device_->enter());
  CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS params{};
  params.params.fence.value = value;
  if (const CUresult rc = device_->api().cuSignalExternalSemaphoresAsync(&semaphore_, &params, 1, stream);
      rc != CUDA_SUCCESS)
    return device_->fail(rc, "cuSignalExternalSemaphoresAsync", "signalling value " + std::to_string(value));
  return ok();
}

result<void> external_semaphore::wait(CUstream stream, std::uint64_t value) const {
  if (!valid()) return error(errc::invalid_argument, "external_semaphore::wait", "the semaphore is empty");
  MEMBRIDGE_TRY_ASSIGN(auto scope, device_->enter());
  CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS params{};
  params.params.fence.value = value;
  if (const CUresult rc = device_->api().cuWaitExternalSemaphoresAsync(&semaphore_, &params, 1, stream);
      rc != CUDA_SUCCESS)
    return device_->fail(rc, "cuWaitExternalSemaphoresAsync", "waiting for value " + std::to_string(value));
  return ok();
}

result<void> external_semaphore::wait_all(CUstream stream, std::span<const external_semaphore* const> semaphores,
                                          std::span<const std::uint64_t> values) {
  constexpr const char* call = "external_semaphore::wait_all";
  if (semaphores.size() != values.size())
    return error(errc::invalid_argument, call,
                 std::to_string(semaphores.size()) + " semaphores for " + std::to_string(values.size()) + " values");
  if (semaphores.empty()) return ok();
  std::vector<CUexternalSemaphore> handles;
  std::vector<CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS> params(semaphores.size());
  handles.reserve(semaphores.size());
  for (std::size_t i = 0; i < semaphores.size(); ++i) {
    const external_semaphore* s = semaphores[i];
    if (s == nullptr || !s->valid())
      return error(errc::invalid_argument, call, "semaphore " + std::to_string(i) + " is empty");
    if (s->device_ != semaphores[0]->device_)
      return error(errc::invalid_argument, call, "the semaphores were imported into different devices");
    handles.push_back(s->semaphore_);
    params[i].params.fence.value = values[i];
  }
  const auto& device = semaphores[0]->device_;
  MEMBRIDGE_TRY_ASSIGN(auto scope, device->enter());
  if (const CUresult rc = device->api().cuWaitExternalSemaphoresAsync(handles.data(), params.data(),
                                                                       static_cast<unsigned int>(handles.size()), stream);
      rc != CUDA_SUCCESS)
    return device->fail(rc, "cuWaitExternalSemaphoresAsync", "waiting on " + std::to_string(handles.size()) + " semaphores");
  return ok();
}

external_semaphore::external_semaphore(external_semaphore&& other) noexcept
    : device_(std::move(other.device_)), semaphore_(std::exchange(other.semaphore_, nullptr)) {}

external_semaphore& external_semaphore::operator=(external_semaphore&& other) noexcept {
  if (this != &other) {
    reset();
    device_ = std::move(other.device_);
    semaphore_ = std::exchange(other.semaphore_, nullptr);
  }
  return *this;
}

external_semaphore::~external_semaphore() { reset(); }

void external_semaphore::reset() noexcept {
  if (semaphore_ != nullptr && device_) {
    auto scope = device_->enter();
    if (const CUresult rc = device_->api().cuDestroyExternalSemaphore(semaphore_); rc != CUDA_SUCCESS)
      detail::log_teardown_failure(device_->fail(rc, "cuDestroyExternalSemaphore", "destroying an imported semaphore"));
  }
  semaphore_ = nullptr;
  device_.reset();
}

}  // namespace membridge::cuda
