#include <membridge/sync/frame_timeline.hpp>

#include "frame_timeline_consumers.hpp"

#include <membridge/sync/same_gpu.hpp>

#include <volk.h>

#include <algorithm>
#include <string>
#include <utility>

namespace membridge::sync {

namespace {

result<void> check_slots(const frame_timeline_options& options, const char* call) {
  if (options.slots == 0) return error(errc::invalid_argument, call, "slots must be at least 1");
  return ok();
}

}  // namespace

frame_timeline::frame_timeline() noexcept = default;
frame_timeline::frame_timeline(frame_timeline&& other) noexcept = default;
frame_timeline& frame_timeline::operator=(frame_timeline&& other) noexcept {
  if (this != &other) {
    // In destruction order: the consumers' imports and semaphores, then the CUDA imports, then the
    // Vulkan semaphores.
    consumers_.reset();
    cuda_consumed_ = {};
    cuda_produced_ = {};
    consumed_ = {};
    produced_ = {};
    context_ = std::move(other.context_);
    produced_ = std::move(other.produced_);
    consumed_ = std::move(other.consumed_);
    cuda_produced_ = std::move(other.cuda_produced_);
    cuda_consumed_ = std::move(other.cuda_consumed_);
    consumers_ = std::move(other.consumers_);
    slots_ = std::exchange(other.slots_, 0U);
    consumer_slots_ = std::exchange(other.consumer_slots_, false);
  }
  return *this;
}
frame_timeline::~frame_timeline() = default;

frame_timeline frame_timeline::with_options(const vulkan::device_context& context, const frame_timeline_options& options) {
  frame_timeline out;
  out.context_ = context.share();
  out.slots_ = options.slots;
  out.consumer_slots_ = options.consumer_slots;
  out.consumers_ = std::make_unique<consumer_set>();
  return out;
}

result<frame_timeline> frame_timeline::create(const vulkan::device_context& context, const cuda::device& cuda_device,
                                              const frame_timeline_options& options) {
  MEMBRIDGE_TRY(check_slots(options, "frame_timeline::create"));
  MEMBRIDGE_TRY(require_same_gpu(cuda_device, context));
  frame_timeline out = with_options(context, options);
  MEMBRIDGE_TRY_ASSIGN(out.produced_, vulkan::timeline_semaphore::create(context, 0, true));
  {
    MEMBRIDGE_TRY_ASSIGN(auto fd, out.produced_.export_handle());
    MEMBRIDGE_TRY_ASSIGN(out.cuda_produced_, cuda::external_semaphore::import_timeline(cuda_device, fd));
  }
  if (options.consumer_slots) {
    // The consumers' semaphores are imported later (add_consumer): keep a device of our own.
    MEMBRIDGE_TRY_ASSIGN(out.consumers_->cuda, cuda::device::open(cuda_device.shared_driver(), cuda_device.ordinal())
                                                   .with_context("opening the CUDA device for the consumers' semaphores"));
    return out;
  }
  MEMBRIDGE_TRY_ASSIGN(out.consumed_, vulkan::timeline_semaphore::create(context, 0, true));
  {
    MEMBRIDGE_TRY_ASSIGN(auto fd, out.consumed_.export_handle());
    MEMBRIDGE_TRY_ASSIGN(out.cuda_consumed_, cuda::external_semaphore::import_timeline(cuda_device, fd));
  }
  return out;
}

result<frame_timeline> frame_timeline::create_host_producer(const vulkan::device_context& context,
                                                            const frame_timeline_options& options) {
  MEMBRIDGE_TRY(check_slots(options, "frame_timeline::create_host_producer"));
  if (!context.valid()) return error(errc::invalid_argument, "frame_timeline::create_host_producer", "empty context");
  frame_timeline out = with_options(context, options);
  MEMBRIDGE_TRY_ASSIGN(out.produced_, vulkan::timeline_semaphore::create(context, 0, false));
  if (!options.consumer_slots) {
    MEMBRIDGE_TRY_ASSIGN(out.consumed_, vulkan::timeline_semaphore::create(context, 0, false));
  }
  return out;
}

result<frame_timeline> frame_timeline::import(const vulkan::device_context& context, os::borrowed_shareable_handle produced,
                                              os::borrowed_shareable_handle consumed, const frame_timeline_options& options,
                                              const cuda::device* cuda_device) {
  constexpr const char* call = "frame_timeline::import";
  MEMBRIDGE_TRY(check_slots(options, call));
  if (options.consumer_slots)
    return error(errc::invalid_argument, call, "consumer_slots is the producer's: a consumer imports its own semaphore");
  if (!context.valid()) return error(errc::invalid_argument, call, "empty context");
  if (!produced.valid()) return error(errc::invalid_argument, call, "the produced fd is empty");
  if (cuda_device != nullptr) MEMBRIDGE_TRY(require_same_gpu(*cuda_device, context));
  frame_timeline out;
  out.context_ = context.share();
  out.slots_ = options.slots;
  out.consumers_ = std::make_unique<consumer_set>();
  MEMBRIDGE_TRY_ASSIGN(out.produced_,
                       vulkan::timeline_semaphore::import(context, produced).with_context("the produced semaphore"));
  if (consumed.valid()) {
    MEMBRIDGE_TRY_ASSIGN(out.consumed_,
                         vulkan::timeline_semaphore::import(context, consumed).with_context("the consumed semaphore"));
  }
  if (cuda_device != nullptr) {
    MEMBRIDGE_TRY_ASSIGN(out.cuda_produced_, cuda::external_semaphore::import_timeline(*cuda_device, produced)
                                                 .with_context("the produced semaphore"));
    if (consumed.valid()) {
      MEMBRIDGE_TRY_ASSIGN(out.cuda_consumed_, cuda::external_semaphore::import_timeline(*cuda_device, consumed)
                                                   .with_context("the consumed semaphore"));
    }
  }
  return out;
}

result<frame_timeline_fds> frame_timeline::export_fds() const {
  if (!valid()) return error(errc::invalid_argument, "frame_timeline::export_fds", "the timeline is empty");
  frame_timeline_fds fds;
  MEMBRIDGE_TRY_ASSIGN(fds.produced, produced_.export_handle().with_context("exporting the produced semaphore"));
  if (consumed_.valid()) {
    MEMBRIDGE_TRY_ASSIGN(fds.consumed, consumed_.export_handle().with_context("exporting the consumed semaphore"));
  }
  return fds;
}

result<void> frame_timeline::cuda_acquire(CUstream stream, std::uint64_t frame) const {
  if (!has_cuda())
    return error(errc::invalid_argument, "frame_timeline::cuda_acquire", "this timeline has no CUDA producer");
  if (!consumer_slots_) {
    if (frame < slots_) return ok();
    return cuda_consumed_.wait(stream, consumed_value(frame - slots_));
  }
  std::vector<consumer_set::slot_ptr> waited;  // copies: alive while the wait is enqueued
  std::vector<const cuda::external_semaphore*> semaphores;
  {
    std::vector<consumer_set::slot_ptr> dead;  // destroyed after the lock is released
    const std::lock_guard lock(consumers_->mutex);
    MEMBRIDGE_TRY(consumers_->tend_retired(produced_, dead));
    if (frame < slots_ || consumers_->active.empty()) return ok();
    // last_ref is set under the lock: a consumer removed from now on is raised past this wait and
    // kept alive until `produced` shows the stream passed frame `frame` (after the wait below).
    waited = consumers_->active;
    semaphores.reserve(waited.size());
    for (const consumer_set::slot_ptr& s : waited) {
      semaphores.push_back(&s->cuda);
      s->last_ref = frame;
    }
  }
  // Outside the lock: a stream operation can block the host behind an unresolved external wait, and
  // remove_consumer (which takes the lock) may be what resolves it. One driver call however many
  // consumers there are: N waits on the GPU, one enqueue on the host.
  const std::vector<std::uint64_t> values(semaphores.size(), consumed_value(frame - slots_));
  return cuda::external_semaphore::wait_all(stream, semaphores, values)
      .with_context("waiting for " + std::to_string(semaphores.size()) + " consumers before frame " + std::to_string(frame));
}

result<void> frame_timeline::cuda_release(CUstream stream, std::uint64_t frame) const {
  if (!has_cuda())
    return error(errc::invalid_argument, "frame_timeline::cuda_release", "this timeline has no CUDA producer");
  MEMBRIDGE_TRY(cuda_produced_.signal(stream, produced_value(frame)));
  consumers_->note_released(produced_value(frame));
  return ok();
}

result<void> frame_timeline::host_acquire(std::uint64_t frame, std::chrono::nanoseconds timeout) const {
  if (!valid()) return error(errc::invalid_argument, "frame_timeline::host_acquire", "the timeline is empty");
  if (!consumer_slots_) {
    if (frame < slots_) return ok();
    return consumed_.wait(consumed_value(frame - slots_), timeout);
  }
  {
    std::vector<consumer_set::slot_ptr> dead;  // destroyed after the lock is released
    const std::lock_guard lock(consumers_->mutex);
    if (frame < slots_) return consumers_->tend_retired(produced_, dead);
    for (const consumer_set::slot_ptr& s : consumers_->active) s->last_ref = frame;
  }
  return wait_for_consumers(consumed_value(frame - slots_), timeout);
}

result<void> frame_timeline::host_release(std::uint64_t frame) const {
  if (!valid()) return error(errc::invalid_argument, "frame_timeline::host_release", "the timeline is empty");
  MEMBRIDGE_TRY(produced_.signal(produced_value(frame)));
  consumers_->note_released(produced_value(frame));
  if (!consumer_slots_) return ok();
  std::vector<consumer_set::slot_ptr> dead;  // destroyed after the lock is released
  const std::lock_guard lock(consumers_->mutex);
  return consumers_->tend_retired(produced_, dead);
}

void frame_timeline::note_wait(std::uint64_t value) const noexcept {
  if (consumers_) consumers_->note_waited(value);
}

semaphore_op frame_timeline::wait_info(std::uint64_t frame) const noexcept {
  note_wait(produced_value(frame));
  return {produced_.get(), produced_value(frame)};
}

semaphore_op frame_timeline::signal_info(std::uint64_t frame) const noexcept {
  return {consumed_.get(), consumed_value(frame)};
}

result<void> frame_timeline::submit(VkQueue queue, std::span<const VkCommandBuffer> command_buffers,
                                    std::uint64_t frame, VkPipelineStageFlags wait_stage, VkFence fence) const {
  if (!valid()) return error(errc::invalid_argument, "frame_timeline::submit", "the timeline is empty");
  if (!consumed_.valid())
    return error(errc::invalid_argument, "frame_timeline::submit",
                 "with consumer_slots each consumer signals its own semaphore (consumer(id))");
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
  if (const VkResult rc = context_.functions().vkQueueSubmit(queue, 1, &info, fence); rc != VK_SUCCESS)
    return vulkan::make_vulkan_error(rc, "vkQueueSubmit", "frame " + std::to_string(frame));
  return ok();
}

result<void> frame_timeline::wait_consumed(std::uint64_t frame, std::chrono::nanoseconds timeout) const {
  if (!valid()) return error(errc::invalid_argument, "frame_timeline::wait_consumed", "the timeline is empty");
  if (!consumer_slots_) return consumed_.wait(consumed_value(frame), timeout);
  return wait_for_consumers(consumed_value(frame), timeout);
}

result<void> frame_timeline::wait_produced(std::uint64_t frame, std::chrono::nanoseconds timeout) const {
  if (!valid()) return error(errc::invalid_argument, "frame_timeline::wait_produced", "the timeline is empty");
  return produced_.wait(produced_value(frame), timeout);
}

result<void> frame_timeline::drain(std::chrono::nanoseconds timeout) const {
  constexpr const char* call = "frame_timeline::drain";
  if (!valid()) return error(errc::invalid_argument, call, "the timeline is empty");
  const std::uint64_t waited = consumers_->highest_waited.load();
  MEMBRIDGE_TRY_ASSIGN(const std::uint64_t current, produced_.value());
  // Submits that wait for frames the producer never released: let them run (they draw stale data).
  if (waited > current)
    MEMBRIDGE_TRY(produced_.signal(waited).with_context("releasing the submits that wait for frames never produced"));
  // With one `consumed`, every frame released or waited for is consumed once the consumer's submits
  // ran (produced and consumed values are equal for a frame): the highest of the two. Consumers of
  // their own (other processes) only consume the frames released (announced).
  const std::uint64_t released = consumers_->highest_released.load();
  if (!consumer_slots_) {
    const std::uint64_t value = std::max(waited, released);
    return value == 0 ? ok() : consumed_.wait(value, timeout).with_context("draining");
  }
  return released == 0 ? ok() : wait_for_consumers(released, timeout).with_context("draining");
}

}  // namespace membridge::sync
