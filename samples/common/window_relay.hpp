// samples/common/window_relay.hpp (private to the window's files): presenting through another device.
// When the rendering device cannot present to the window, each frame goes: the renderer's image ->
// (copy on the rendering device) a host-visible read-back buffer -> (host memcpy after a fence) an
// upload buffer on the presenting device -> (copy) a staging image there -> the window's usual blit,
// overlay and screenshot path into the presenting device's swapchain (window.hpp, "relay").
#pragma once

#include "window_state.hpp"

#include <membridge/vulkan/device_context.hpp>

#include <memory>
#include <string>
#include <vector>

namespace apps {

/// How frames reach the screen (MEMBRIDGE_WINDOW_PRESENT: auto, direct, relay; window.hpp).
enum class present_choice : std::uint8_t { automatic, direct, relay };

/// Reads MEMBRIDGE_WINDOW_PRESENT (unset or empty: automatic).
/// Errors: invalid_argument naming the variable and its values for anything else.
[[nodiscard]] membridge::result<present_choice> present_choice_from_environment();

/// The rendering device's side of a relayed window, and the presenting side's upload path. The
/// window::state holds the presenting device (its swapchain, blits, overlay, screenshot).
struct window_relay {
  membridge::vulkan::device_context presenter;  ///< The presenting device's context (owned).
  std::string presenter_name;                   ///< Its device name, for describe().
  std::string reason;                           ///< Why the rendering device does not present itself.
  /// The rendering device (borrowed; kept alive by `render_keep_alive`).
  device_side render;
  std::shared_ptr<const membridge::vulkan::detail::context_state> render_keep_alive;
  membridge::vulkan::queue_info render_queue;  ///< The rendering context's graphics queue (the caller's).
  VkCommandPool pool = VK_NULL_HANDLE;         ///< Rendering side: the read-back copies' pool.
  std::vector<VkCommandBuffer> copies;         ///< Rendering side, one per slot: the image into `readback`.
  std::vector<VkSemaphore> acquired;  ///< Rendering side, one per slot: signalled by begin_frame (job.acquired).
  std::vector<VkSemaphore> rendered;  ///< Rendering side, one per slot: the caller's submit signals it (job.rendered).
  VkFence render_done = VK_NULL_HANDLE;  ///< Rendering side: present() waits for the frame with it.
  host_buffer readback;                  ///< Rendering side: the frame, RGBA8, tightly packed.
  host_buffer upload;                    ///< Presenting side: the frame copied from `readback`.
  VkImage staging = VK_NULL_HANDLE;      ///< Presenting side: R8G8B8A8_UNORM, the blit's source.
  VkDeviceMemory staging_memory = VK_NULL_HANDLE;
  VkExtent2D staging_extent{0, 0};
  VkFence present_done = VK_NULL_HANDLE;  ///< Presenting side: the last relayed submission.
  bool present_pending = false;           ///< `present_done` will be signalled by a submission.
  VkExtent2D frame{0, 0};                 ///< The frame begun: its size, slot and swapchain image.
  std::uint32_t frame_slot = 0;
  std::uint32_t frame_index = 0;
};

/// Turns `s` (its window and surface made on the rendering context `render`, which cannot present:
/// `reason`) into a relayed window: finds another device whose graphics queue can present to the
/// window (`render`'s own device too when `allow_same_device`), makes its context from
/// system.relay_options(), takes it as the presenting device with a new surface, and makes the
/// rendering side's objects for `slots` frame slots. On error `s` holds what was made (its destructor
/// releases it).
/// Errors: unsupported when no device can present (the message names `reason`); the context's and
/// Vulkan errors.
[[nodiscard]] membridge::result<void> start_relay(window::state& s, const window_system& system,
                                                  const membridge::vulkan::device_context& render, std::uint32_t slots,
                                                  bool allow_same_device, const std::string& reason);

/// begin_frame() relayed, after swapchain image `index` was acquired for `slot`: records the copy of
/// `source` (width x height, TRANSFER_SRC_OPTIMAL) into the read-back buffer and signals the slot's
/// rendering-side `acquired` semaphore (an empty submission on the rendering queue).
/// Errors: Vulkan errors.
[[nodiscard]] membridge::result<present_job> relay_begin(window::state& s, std::uint32_t slot, std::uint32_t index,
                                                         VkImage source, std::uint32_t width, std::uint32_t height);

/// present() relayed: waits (at most 10 s) for `job`'s submission, copies the frame to the presenting
/// device, records and submits the blit there and presents. Errors: timeout; Vulkan errors.
[[nodiscard]] membridge::result<void> relay_present(window::state& s, const present_job& job);

/// `; relayed through <device> (<reason>)`, or empty for a window that presents directly.
[[nodiscard]] std::string relay_description(const window::state& s);

/// Waits for both devices, then destroys the relay's objects (the state's destructor).
void destroy_relay(window::state& s) noexcept;

}  // namespace apps
