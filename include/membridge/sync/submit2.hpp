// membridge/sync/submit2.hpp: the frame timeline's semaphores as VkSemaphoreSubmitInfo, for engines
// that submit with vkQueueSubmit2 (Vulkan 1.3 / VK_KHR_synchronization2) instead of frame_timeline::submit.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/sync/frame_timeline.hpp>

#include <vulkan/vulkan_core.h>

#include <cstdint>
#include <span>

namespace membridge::sync {

/// `op` as one VkSemaphoreSubmitInfo at `stages` (deviceIndex 0, pNext null).
/// Ownership: the semaphore stays its owner's (the frame_timeline's for wait_info / signal_info).
[[nodiscard]] VkSemaphoreSubmitInfo to_submit_info(const semaphore_op& op, VkPipelineStageFlags2 stages) noexcept;

/// Frame `frame`'s membridge semaphores for one vkQueueSubmit2: wait for `produced` (wait_info) and
/// signal `consumed` (signal_info), or the signal of one consumer's own semaphore (consumer slots).
/// Put `wait` and `signal` into the engine's own arrays next to its swapchain semaphores, or, for a
/// submit with no other semaphore, use submit_info().
///
/// A plain value type (copyable); no handle is owned.
struct frame_submit2 {
  VkSemaphoreSubmitInfo wait{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO};    ///< Ownership: the frame_timeline's semaphore.
  VkSemaphoreSubmitInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO};  ///< Ownership: the frame_timeline's semaphore.

  /// The operations of frame `frame` on `timeline` (one `consumed` semaphore): the wait at
  /// `wait_stages` (the first stage that reads the producer's data), the signal at `signal_stages`
  /// (the last stage that reads it). Calls timeline.wait_info(frame) (which notes the wait, see drain()).
  /// Errors: invalid_argument for an empty timeline or one with consumer slots (use for_consumer).
  /// Ownership: borrows `timeline` during the call; the semaphores stay the timeline's.
  [[nodiscard]] static result<frame_submit2> of(const frame_timeline& timeline, std::uint64_t frame,
                                                VkPipelineStageFlags2 wait_stages,
                                                VkPipelineStageFlags2 signal_stages = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);

  /// The same for consumer `consumer_id` of a timeline with consumer slots: the signal is that
  /// consumer's semaphore at consumed_value(frame).
  /// Errors: invalid_argument for an empty timeline, one without consumer slots, or an unknown consumer.
  /// Ownership: borrows `timeline` during the call; the semaphores stay the timeline's.
  [[nodiscard]] static result<frame_submit2> for_consumer(const frame_timeline& timeline, std::uint64_t consumer_id,
                                                          std::uint64_t frame, VkPipelineStageFlags2 wait_stages,
                                                          VkPipelineStageFlags2 signal_stages =
                                                              VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);

  /// A VkSubmitInfo2 that waits for `wait`, runs `command_buffers` and signals `signal`.
  /// Ownership: points into this object and into `command_buffers`; both must outlive the
  /// vkQueueSubmit2 call.
  [[nodiscard]] VkSubmitInfo2 submit_info(std::span<const VkCommandBufferSubmitInfo> command_buffers) const noexcept;
};

}  // namespace membridge::sync
