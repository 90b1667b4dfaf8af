// samples/01_particles/window_frame.hpp: what sample 01 and 03_ipc_viewer do alike around the
// particle renderer: the renderer's device from a membridge device_context, and one frame's submit
// with the window's blit (waiting for the acquired image, signalling the render-done semaphore).
#pragma once

#include "particle_renderer.hpp"
#include "window.hpp"  // samples/common

#include <membridge/core/result.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace particles {

/// The renderer's view of `context`: its instance, device, functions and graphics queue.
/// Ownership: borrows everything from `context`, which must outlive the renderer.
[[nodiscard]] inline renderer_device renderer_device_of(const membridge::vulkan::device_context& context) {
  renderer_device device;
  device.get_instance_proc_addr = context.get_instance_proc_addr();
  device.instance = context.instance();
  device.physical_device = context.physical_device();
  device.device = context.device();
  device.functions = &context.functions();
  device.queue_family = context.graphics_queue().family;
  device.queue = context.graphics_queue().queue;
  return device;
}

/// Submits `slot` with `waits` and `signals` and, when `job` is set (a window's frame), the window's
/// blit after the slot's commands (waiting for its acquired image at TRANSFER, signalling its
/// render-done semaphore; the caller presents the job next). `what` names the frame in errors.
/// Errors: the renderer's submit.
[[nodiscard]] inline membridge::result<void> submit_with_window(particle_renderer& renderer, std::uint32_t slot,
                                                               std::vector<semaphore_wait> waits,
                                                               std::vector<semaphore_signal> signals,
                                                               const std::optional<apps::present_job>& job,
                                                               const std::string& what) {
  VkCommandBuffer extra = VK_NULL_HANDLE;
  if (job) {
    waits.push_back({job->acquired, 0, VK_PIPELINE_STAGE_TRANSFER_BIT});
    signals.push_back({job->rendered, 0});
    extra = job->blit;
  }
  submit_sync sync;
  sync.waits = waits;
  sync.signals = signals;
  if (job) sync.extra_commands = std::span<const VkCommandBuffer>(&extra, 1);
  return renderer.submit(slot, sync).with_context("submitting " + what);
}

}  // namespace particles
