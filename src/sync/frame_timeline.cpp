#include <membridge/sync/frame_timeline.hpp>

#include "../vulkan/detail/context_state.hpp"
#include "../vulkan/detail/vk_error.hpp"

#include <membridge/sync/same_gpu.hpp>

namespace membridge::sync {

namespace {

result<void> check_slots(const frame_timeline_options& options, const char* call) {
  if (options.slots == 0) return error(errc::invalid_argument, call, "slots must be at least 1");
  return ok();
}

}  // namespace

frame_timeline::frame_timeline() noexcept = default;
frame_timeline::frame_timeline(frame_timeline&& other) noexcept = default;
frame_timeline& frame_timeline::operator=(frame_timeline&& other) noexcept = default;
frame_timeline::~frame_timeline() = default;

result<frame_timeline> frame_timeline::create(const vulkan::device_context& context, const cuda::device& cuda_device,
                                              const frame_timeline_options& options) {
  MEMBRIDGE_TRY(check_slots(options, "frame_timeline::create"));
  MEMBRIDGE_TRY(require_same_gpu(cuda_device, context));
  frame_timeline out;
  out.context_ = context.state();
  out.slots_ = options.slots;
  MEMBRIDGE_TRY_ASSIGN(out.produced_, vulkan::timeline_semaphore::create(context, 0, true));
  MEMBRIDGE_TRY_ASSIGN(out.consumed_, vulkan::timeline_semaphore::create(context, 0, true));
  {
    MEMBRIDGE_TRY_ASSIGN(auto fd, out.produced_.export_fd());
    MEMBRIDGE_TRY_ASSIGN(out.cuda_produced_, cuda::external_semaphore::import_timeline(cuda_device, fd));
  }
  {
    MEMBRIDGE_TRY_ASSIGN(auto fd, out.consumed_.export_fd());
    MEMBRIDGE_TRY_ASSIGN(out.cuda_consumed_, cuda::external_semaphore::import_timeline(cuda_device, fd));
  }
  return out;
}

result<frame_timeline> frame_timeline::create_host_producer(const vulkan::device_context& context,
                                                            const frame_timeline_options& options) {
  MEMBRIDGE_TRY(check_slots(options, "frame_timeline::create_host_producer"));
  if (!context.valid()) return error(errc::invalid_argument, "frame_timeline::create_host_producer", "empty context");
  frame_timeline out;
  out.context_ = context.state();
  out.slots_ = options.slots;
  MEMBRIDGE_TRY_ASSIGN(out.produced_, vulkan::timeline_semaphore::create(context, 0, false));
  MEMBRIDGE_TRY_ASSIGN(out.consumed_, vulkan::timeline_semaphore::create(context, 0, false));
  return out;
}

result<frame_timeline> frame_timeline::import(const vulkan::device_context& context, os::borrowed_fd produced,
                                              os::borrowed_fd consumed, const frame_timeline_options& options,
                                              const cuda::device* cuda_device) {
  constexpr const char* call = "frame_timeline::import";
  MEMBRIDGE_TRY(check_slots(options, call));
  if (!context.valid()) return error(errc::invalid_argument, call, "empty context");
  if (!produced.valid() || !consumed.valid())
    return error(errc::invalid_argument, call, "the produced or consumed fd is empty");
  if (cuda_device != nullptr) MEMBRIDGE_TRY(require_same_gpu(*cuda_device, context));
  frame_timeline out;
  out.context_ = context.state();
  out.slots_ = options.slots;
  MEMBRIDGE_TRY_ASSIGN(out.produced_,
                       vulkan::timeline_semaphore::import(context, produced).with_context("the produced semaphore"));
  MEMBRIDGE_TRY_ASSIGN(out.consumed_,
                       vulkan::timeline_semaphore::import(context, consumed).with_context("the consumed semaphore"));
  if (cuda_device != nullptr) {
    MEMBRIDGE_TRY_ASSIGN(out.cuda_produced_, cuda::external_semaphore::import_timeline(*cuda_device, produced)
                                                 .with_context("the produced semaphore"));
    MEMBRIDGE_TRY_ASSIGN(out.cuda_consumed_, cuda::external_semaphore::import_timeline(*cuda_device, consumed)
                                                 .with_context("the consumed semaphore"));
  }
  return out;
}

result<frame_timeline_fds> frame_timeline::export_fds() const {
  if (!valid()) return error(errc::invalid_argument, "frame_timeline::export_fds", "the timeline is empty");
  frame_timeline_fds fds;
  MEMBRIDGE_TRY_ASSIGN(fds.produced, produced_.export_fd().with_context("exporting the produced semaphore"));
  MEMBRIDGE_TRY_ASSIGN(fds.consumed, consumed_.export_fd().with_context("exporting the consumed semaphore"));
  return fds;
}

result<void> frame_timeline::cuda_acquire(CUstream stream, std::uint64_t frame) const {
  if (!has_cuda())
    return error(errc::invalid_argument, "frame_timeline::cuda_acquire", "this timeline has no CUDA producer");
  if (frame < slots_) return ok();
  return cuda_consumed_.wait(stream, consumed_value(frame - slots_));
}

result<void> frame_timeline::cuda_release(CUstream stream, std::uint64_t frame) const {
  if (!has_cuda())
    return error(errc::invalid_argument, "frame_timeline::cuda_release", "this timeline has no CUDA producer");
  return cuda_produced_.signal(stream, produced_value(frame));
}

result<void> frame_timeline::host_acquire(std::uint64_t frame, std::chrono::nanoseconds timeout) const {
  if (!valid()) return error(errc::invalid_argument, "frame_timeline::host_acquire", "the timeline is empty");
  if (frame < slots_) return ok();
  return consumed_.wait(consumed_value(frame - slots_), timeout);
}

result<void> frame_timeline::host_release(std::uint64_t frame) const {
  if (!valid()) return error(errc::invalid_argument, "frame_timeline::host_release", "the timeline is empty");
  return produced_.signal(produced_value(frame));
}

semaphore_op frame_timeline::wait_info(std::uint64_t frame) const noexcept {
  return {produced_.get(), produced_value(frame)};
}

semaphore_op frame_timeline::signal_info(std::uint64_t frame) const noexcept {
  return {consumed_.get(), consumed_value(frame)};
}

result<void> frame_timeline::submit(VkQueue queue, std::span<const VkCommandBuffer> command_buffers,
                                    std::uint64_t frame, VkPipelineStageFlags wait_stage, VkFence fence) const {
  if (!valid()) return error(errc::invalid_argument, "frame_timeline::submit", "the timeline is empty");
  const semaphore_op wait = wait_info(frame);
  const semaphore_op signal = signal_info(frame);
  VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  values.waitSemaphoreValueCount = 1;
  values.pWaitSemaphoreValues = &wait.value;
  values.signalSemaphoreValueCount = 1;
  values.pSignalSemaphoreValues = &signal.value;
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.pNext = &values;
  info.waitSemaphoreCount = 1;
  info.pWaitSemaphores = &wait.semaphore;
  info.pWaitDstStageMask = &wait_stage;
  info.commandBufferCount = static_cast<std::uint32_t>(command_buffers.size());
  info.pCommandBuffers = command_buffers.data();
  info.signalSemaphoreCount = 1;
  info.pSignalSemaphores = &signal.semaphore;
  if (const VkResult rc = context_->table.vkQueueSubmit(queue, 1, &info, fence); rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, "vkQueueSubmit", "frame " + std::to_string(frame));
  return ok();
}

result<void> frame_timeline::wait_consumed(std::uint64_t frame, std::chrono::nanoseconds timeout) const {
  if (!valid()) return error(errc::invalid_argument, "frame_timeline::wait_consumed", "the timeline is empty");
  return consumed_.wait(consumed_value(frame), timeout);
}

result<void> frame_timeline::wait_produced(std::uint64_t frame, std::chrono::nanoseconds timeout) const {
  if (!valid()) return error(errc::invalid_argument, "frame_timeline::wait_produced", "the timeline is empty");
  return produced_.wait(produced_value(frame), timeout);
}

}  // namespace membridge::sync
