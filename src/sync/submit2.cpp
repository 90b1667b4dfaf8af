// frame_submit2: the frame timeline's semaphores for vkQueueSubmit2.
#include <membridge/sync/submit2.hpp>

#include <string>

namespace membridge::sync {

VkSemaphoreSubmitInfo to_submit_info(const semaphore_op& op, VkPipelineStageFlags2 stages) noexcept {
  VkSemaphoreSubmitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO};
  info.semaphore = op.semaphore;
  info.value = op.value;
  info.stageMask = stages;
  info.deviceIndex = 0;
  return info;
}

result<frame_submit2> frame_submit2::of(const frame_timeline& timeline, std::uint64_t frame,
                                        VkPipelineStageFlags2 wait_stages, VkPipelineStageFlags2 signal_stages) {
  constexpr const char* call = "frame_submit2::of";
  if (!timeline.valid()) return error(errc::invalid_argument, call, "the timeline is empty");
  if (timeline.has_consumer_slots())
    return error(errc::invalid_argument, call,
                 "the timeline has a semaphore per consumer: use frame_submit2::for_consumer");
  frame_submit2 out;
  out.wait = to_submit_info(timeline.wait_info(frame), wait_stages);
  out.signal = to_submit_info(timeline.signal_info(frame), signal_stages);
  return out;
}

result<frame_submit2> frame_submit2::for_consumer(const frame_timeline& timeline, std::uint64_t consumer_id,
                                                  std::uint64_t frame, VkPipelineStageFlags2 wait_stages,
                                                  VkPipelineStageFlags2 signal_stages) {
  constexpr const char* call = "frame_submit2::for_consumer";
  if (!timeline.valid()) return error(errc::invalid_argument, call, "the timeline is empty");
  if (!timeline.has_consumer_slots())
    return error(errc::invalid_argument, call, "the timeline has one consumed semaphore: use frame_submit2::of");
  const vulkan::timeline_semaphore* consumed = timeline.consumer(consumer_id);
  if (consumed == nullptr)
    return error(errc::invalid_argument, call, "no consumer " + std::to_string(consumer_id) + " on the timeline");
  frame_submit2 out;
  out.wait = to_submit_info(timeline.wait_info(frame), wait_stages);
  out.signal = to_submit_info({consumed->get(), frame_timeline::consumed_value(frame)}, signal_stages);
  return out;
}

VkSubmitInfo2 frame_submit2::submit_info(std::span<const VkCommandBufferSubmitInfo> command_buffers) const noexcept {
  VkSubmitInfo2 info{VK_STRUCTURE_TYPE_SUBMIT_INFO_2};
  info.waitSemaphoreInfoCount = 1;
  info.pWaitSemaphoreInfos = &wait;
  info.commandBufferInfoCount = static_cast<std::uint32_t>(command_buffers.size());
  info.pCommandBufferInfos = command_buffers.empty() ? nullptr : command_buffers.data();
  info.signalSemaphoreInfoCount = 1;
  info.pSignalSemaphoreInfos = &signal;
  return info;
}

}  // namespace membridge::sync
