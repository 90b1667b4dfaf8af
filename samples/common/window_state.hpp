// samples/common/window_state.hpp (private to window.cpp and window_overlay.cpp): what a window holds:
// GLFW's window, the surface and swapchain, the per-slot blit commands, the overlay panel's upload
// buffers and the screenshot read-back buffer.
#pragma once

#include "window.hpp"  // first: its Vulkan types come before GLFW's Vulkan declarations

#include "glfw_library.hpp"  // GLFW's header (prototypes only)
#include "png_writer.hpp"

#include <volk.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace apps {

/// The common GLFW functions and the Vulkan ones only the Vulkan window calls.
struct window_system::functions : samples::glfw_library {
  decltype(&::glfwVulkanSupported) vulkan_supported = nullptr;  ///< glfwVulkanSupported.
  decltype(&::glfwGetRequiredInstanceExtensions) required_instance_extensions = nullptr;  ///< Its surface extensions.
  decltype(&::glfwCreateWindowSurface) create_window_surface = nullptr;  ///< glfwCreateWindowSurface.
  std::vector<std::string> extensions;  ///< What required_instance_extensions returned.

  /// Loads the Vulkan functions (glfw_library::open's `load_extra`).
  membridge::result<void> load_vulkan() {
    MEMBRIDGE_TRY(load("glfwVulkanSupported", vulkan_supported));
    MEMBRIDGE_TRY(load("glfwGetRequiredInstanceExtensions", required_instance_extensions));
    MEMBRIDGE_TRY(load("glfwCreateWindowSurface", create_window_surface));
    return membridge::ok();
  }
};

/// The instance-level functions a window needs.
struct surface_api {
  PFN_vkDestroySurfaceKHR destroy_surface{};
  PFN_vkGetPhysicalDeviceSurfaceSupportKHR surface_support{};
  PFN_vkGetPhysicalDeviceSurfaceCapabilitiesKHR surface_capabilities{};
  PFN_vkGetPhysicalDeviceSurfaceFormatsKHR surface_formats{};
  PFN_vkGetPhysicalDeviceSurfacePresentModesKHR present_modes{};
  PFN_vkGetPhysicalDeviceFormatProperties format_properties{};
};

/// One device's handles a window's buffers and images are made on: the presenting device's, or
/// with a relay also the rendering device's. Ownership: borrowed from a device_context.
struct device_side {
  VkDevice device = VK_NULL_HANDLE;
  const VolkDeviceTable* vk = nullptr;
  VkPhysicalDeviceMemoryProperties memory_types{};
};

/// A host-visible, host-coherent buffer, mapped for its whole life.
struct host_buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  VkDeviceSize size = 0;
};

struct window_relay;  // window_relay.hpp: presenting through another device

struct window::state {
  const window_system::functions* glfw = nullptr;
  std::shared_ptr<const membridge::vulkan::detail::context_state> keep_alive;  // the device outlives us
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  const VolkDeviceTable* vk = nullptr;
  membridge::vulkan::queue_info queue;
  surface_api surface_fns;
  GLFWwindow* handle = nullptr;
  VkSurfaceKHR surface = VK_NULL_HANDLE;
  VkSurfaceFormatKHR format{};
  VkPresentModeKHR present_mode = VK_PRESENT_MODE_FIFO_KHR;
  VkFilter filter = VK_FILTER_NEAREST;
  VkSwapchainKHR swapchain = VK_NULL_HANDLE;
  VkExtent2D extent{0, 0};
  std::vector<VkImage> images;
  std::vector<VkSemaphore> rendered;  // one per swapchain image
  std::vector<VkSemaphore> acquired;  // one per frame slot
  VkCommandPool pool = VK_NULL_HANDLE;
  std::vector<VkCommandBuffer> blits;  // one per frame slot
  bool out_of_date = false;
  std::uint32_t generation = 0;
  VkPhysicalDeviceMemoryProperties memory_types{};
  // The overlay: the panel (RGBA8, rendered when the lines change) and one upload buffer per slot,
  // refilled when its panel_version is older than the panel's.
  std::vector<std::string> overlay_lines;
  rgba_image panel;
  std::uint64_t panel_version = 0;
  std::vector<host_buffer> panel_buffers;
  std::vector<std::uint64_t> panel_buffer_versions;
  // Screenshots (create(..., screenshots = true)): every presented image is copied into `capture`.
  bool screenshots = false;
  host_buffer capture;
  VkExtent2D captured{0, 0};  ///< The size of the image in `capture` (0x0: none yet).
  // Presenting through another device (window.hpp, "relay"): everything above is the presenting
  // device's; the relay holds the rendering device's side. Null when the render device presents.
  std::unique_ptr<window_relay> relay;

  state() = default;
  state(const state&) = delete;
  state& operator=(const state&) = delete;
  ~state();

  [[nodiscard]] VkExtent2D framebuffer_size() const {
    int w = 0;
    int h = 0;
    glfw->get_framebuffer_size(handle, &w, &h);
    return {static_cast<std::uint32_t>(std::max(w, 0)), static_cast<std::uint32_t>(std::max(h, 0))};
  }
  /// This window's presenting device.
  [[nodiscard]] device_side side() const noexcept { return {device, vk, memory_types}; }
  /// Takes the handles and instance functions of `context` (the presenting device from now on).
  /// Errors: unsupported without VK_KHR_surface on the instance or VK_KHR_swapchain on the device.
  membridge::result<void> use_context(const membridge::vulkan::device_context& context);
  /// Makes `surface` for the GLFW window on `instance`. Errors: Vulkan errors.
  membridge::result<void> make_surface();
  /// Checks that the queue can present to `surface` and chooses the format, filter and present mode.
  /// Errors: unsupported with the reason; Vulkan errors (VK_ERROR_UNKNOWN from NVIDIA under Xvfb).
  membridge::result<void> check_presentation();
  membridge::result<void> choose_format();
  membridge::result<void> make_swapchain();
  void destroy_swapchain_objects() noexcept;
};

/// The overlay panel's largest size (its upload buffers hold this much).
inline constexpr std::uint32_t overlay_max_width = 640;
inline constexpr std::uint32_t overlay_max_height = 160;

/// Records a barrier on `image` (colour, one level) from transfer work to `dst_stage` (TRANSFER, or
/// BOTTOM_OF_PIPE for presentation; then host reads of the screenshot buffer are ordered too), with
/// a memory barrier ordering buffer copies after earlier frames'.
void image_barrier(const window::state& s, VkCommandBuffer cmd, VkImage image, VkAccessFlags src, VkAccessFlags dst,
                   VkImageLayout from, VkImageLayout to, VkPipelineStageFlags dst_stage);
/// Makes a host-visible, coherent, mapped buffer of `size` bytes for `usage`.
/// Errors: unsupported when no memory type fits; Vulkan errors.
[[nodiscard]] membridge::result<host_buffer> make_host_buffer(const device_side& d, VkDeviceSize size,
                                                              VkBufferUsageFlags usage, const char* what);
/// Destroys `b` (nothing in flight may use it) and empties it.
void destroy_host_buffer(const device_side& d, host_buffer& b) noexcept;
/// The index of a memory type among `allowed` with all of `want`, or UINT32_MAX.
[[nodiscard]] std::uint32_t memory_type(const device_side& d, std::uint32_t allowed, VkMemoryPropertyFlags want);
/// Records, into `cmd` (begun), the frame on the presenting side: the swapchain image `target` cleared,
/// `source` (width x height, TRANSFER_SRC_OPTIMAL) blitted into it scaled to fit, then record_frame_end().
void record_present(window::state& s, VkCommandBuffer cmd, std::uint32_t slot, VkImage source, std::uint32_t width,
                    std::uint32_t height, VkImage target);
/// Makes on `d` a command pool for queue family `family` (buffers resettable one by one) and `count`
/// primary command buffers from it into `buffers`. Errors: Vulkan errors naming `what`.
[[nodiscard]] membridge::result<void> make_command_buffers(const device_side& d, std::uint32_t family,
                                                           std::uint32_t count, VkCommandPool& pool,
                                                           std::vector<VkCommandBuffer>& buffers, const char* what);
/// Makes `count` binary semaphores on `d` into `semaphores` (resized first: on error the ones not
/// made are VK_NULL_HANDLE, and destroying every entry is safe). Errors: Vulkan errors naming `what`.
[[nodiscard]] membridge::result<void> make_semaphores(const device_side& d, std::size_t count,
                                                      std::vector<VkSemaphore>& semaphores, const char* what);
/// Resets `cmd` and begins it for one submission. Errors: Vulkan errors.
[[nodiscard]] membridge::result<void> begin_one_time(const VolkDeviceTable& vk, VkCommandBuffer cmd);
/// Presents swapchain image `index` on the presenting queue once `rendered` is signalled.
[[nodiscard]] membridge::result<void> queue_present(window::state& s, VkSemaphore rendered, std::uint32_t index);
/// Makes the overlay's upload buffers (one per frame slot).
[[nodiscard]] membridge::result<void> make_overlay_buffers(window::state& s);
/// (Re)makes the screenshot read-back buffer for the swapchain's extent (device idle).
[[nodiscard]] membridge::result<void> make_capture_buffer(window::state& s);
/// Records, after the scene's blit into swapchain image `target` (TRANSFER_DST_OPTIMAL): the overlay
/// panel's copy, the screenshot copy when enabled, and the transition to PRESENT_SRC.
void record_frame_end(window::state& s, VkCommandBuffer cmd, std::uint32_t slot, VkImage target);

}  // namespace apps
