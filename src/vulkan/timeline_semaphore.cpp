#include <membridge/vulkan/timeline_semaphore.hpp>

#include "detail/context_state.hpp"
#include "detail/external_handle.hpp"
#include "detail/vk_error.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace membridge::vulkan {

namespace {

constexpr const char* create_call = "timeline_semaphore::create";
constexpr const char* import_call = "timeline_semaphore::import";

bool can_export_timeline(const detail::context_state& s) {
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkPhysicalDeviceExternalSemaphoreInfo info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO};
  info.pNext = &type;
  info.handleType = detail::semaphore_handle_type;
  VkExternalSemaphoreProperties props{VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES};
  s.instance_fns.vkGetPhysicalDeviceExternalSemaphoreProperties(s.physical_device, &info, &props);
  return (props.externalSemaphoreFeatures & VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT) != 0;
}

}  // namespace

result<timeline_semaphore> timeline_semaphore::create(const device_context& context, std::uint64_t initial_value,
                                                      bool exportable) {
  if (!context.valid()) return error(errc::invalid_argument, create_call, "the device context is empty");
  const auto& state = context.state();
  if (!state->caps.timeline_semaphore)
    return error(errc::unsupported, create_call, "timeline semaphores are not enabled on the device");
  if (exportable && !state->caps.external_semaphore)
    return error(errc::unsupported, create_call,
                 "sharing a semaphore needs " + std::string(detail::semaphore_extension) +
                     ", which the device does not have enabled");
  if (exportable && !can_export_timeline(*state))
    return error(errc::unsupported, create_call,
                 std::string("the driver cannot export timeline semaphores as ") + detail::handle_name + "s");
  timeline_semaphore out;
  out.context_ = state;
  out.exportable_ = exportable;
  MEMBRIDGE_TRY_ASSIGN(out.semaphore_, detail::create_timeline_semaphore(*state, initial_value, exportable));
  return out;
}

result<timeline_semaphore> timeline_semaphore::import(const device_context& context,
                                                      os::borrowed_shareable_handle handle) {
  if (!context.valid()) return error(errc::invalid_argument, import_call, "the device context is empty");
  if (!handle.valid())
    return error(errc::invalid_argument, import_call, std::string("the ") + detail::handle_name + " is invalid");
  const auto& state = context.state();
  if (!state->caps.timeline_semaphore || !state->caps.external_semaphore)
    return error(errc::unsupported, import_call,
                 "importing needs timeline semaphores and " + std::string(detail::semaphore_extension) +
                     " enabled on the device");
  timeline_semaphore out;
  out.context_ = state;
  MEMBRIDGE_TRY_ASSIGN(out.semaphore_, detail::create_timeline_semaphore(*state, 0, false));
  MEMBRIDGE_TRY(detail::import_semaphore(*state, out.semaphore_, handle));
  return out;
}

result<os::shareable_handle> timeline_semaphore::export_handle() const {
  constexpr const char* call = "timeline_semaphore::export_handle";
  if (!valid()) return error(errc::invalid_argument, call, "the semaphore is empty");
  if (!exportable_) return error(errc::unsupported, call, "the semaphore was created without exportable");
  return detail::export_semaphore(*context_, semaphore_, first_export_);
}

result<std::uint64_t> timeline_semaphore::value() const {
  if (!valid()) return error(errc::invalid_argument, "timeline_semaphore::value", "the semaphore is empty");
  std::uint64_t v = 0;
  if (const VkResult rc = context_->table.vkGetSemaphoreCounterValue(context_->device, semaphore_, &v);
      rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, "vkGetSemaphoreCounterValue");
  return v;
}

result<void> timeline_semaphore::signal(std::uint64_t value) const {
  if (!valid()) return error(errc::invalid_argument, "timeline_semaphore::signal", "the semaphore is empty");
  VkSemaphoreSignalInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
  info.semaphore = semaphore_;
  info.value = value;
  if (const VkResult rc = context_->table.vkSignalSemaphore(context_->device, &info); rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, "vkSignalSemaphore", "to " + std::to_string(value));
  return ok();
}

result<void> timeline_semaphore::wait(std::uint64_t value, std::chrono::nanoseconds timeout) const {
  if (!valid()) return error(errc::invalid_argument, "timeline_semaphore::wait", "the semaphore is empty");
  // Polls the counter rather than sleeping in vkWaitSemaphores: on NVIDIA's driver (580, H100) a
  // blocking wait for a value that CUDA or another process signals woke up to ~10 ms after the value
  // was reached, while polling saw it within the poll period (docs/synchronization.md, "Host waits").
  // A few polls back to back first (a value about to be reached), then one every poll_period.
  using clock = std::chrono::steady_clock;
  constexpr int spin_polls = 32;
  constexpr auto poll_period = std::chrono::microseconds(100);
  const auto deadline = clock::now() + std::max(timeout, std::chrono::nanoseconds(0));
  for (int i = 0;; ++i) {
    MEMBRIDGE_TRY_ASSIGN(const std::uint64_t now, this->value());
    if (now >= value) return ok();
    const auto left = deadline - clock::now();
    if (left <= clock::duration::zero())
      return vulkan::detail::make_error(VK_TIMEOUT, "timeline_semaphore::wait",
                                        "waiting for value " + std::to_string(value) + " (the counter is at " +
                                            std::to_string(now) + ")");
    if (i >= spin_polls) std::this_thread::sleep_for(std::min<clock::duration>(poll_period, left));
  }
}

timeline_semaphore::timeline_semaphore(timeline_semaphore&& other) noexcept
    : context_(std::move(other.context_)),
      semaphore_(std::exchange(other.semaphore_, VK_NULL_HANDLE)),
      exportable_(other.exportable_),
      first_export_(std::move(other.first_export_)) {}

timeline_semaphore& timeline_semaphore::operator=(timeline_semaphore&& other) noexcept {
  if (this != &other) {
    reset();
    context_ = std::move(other.context_);
    semaphore_ = std::exchange(other.semaphore_, VK_NULL_HANDLE);
    exportable_ = other.exportable_;
    first_export_ = std::move(other.first_export_);
  }
  return *this;
}

timeline_semaphore::~timeline_semaphore() { reset(); }

void timeline_semaphore::reset() noexcept {
  if (semaphore_ != VK_NULL_HANDLE && context_)
    context_->table.vkDestroySemaphore(context_->device, semaphore_, nullptr);
  semaphore_ = VK_NULL_HANDLE;
  first_export_.reset();
  context_.reset();
}

}  // namespace membridge::vulkan
