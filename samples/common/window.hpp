// samples/common/window.hpp: the Vulkan window of the samples and membridge-view: a GLFW window (GLFW
// is loaded at run time, so binaries start on machines without it, e.g. a headless GPU server), a
// Vulkan surface and swapchain, and per frame a blit of the renderer's image into the swapchain image,
// the overlay (a text panel: frame statistics, sizes drawn) on top, and on request a screenshot.
// When the rendering device cannot present to the display (NVIDIA's driver on an H100 machine answers
// vkGetPhysicalDeviceSurfacePresentModesKHR for an Xvfb window with VK_ERROR_UNKNOWN), the window
// relays: each frame is copied through host memory to another Vulkan device that can (e.g. lavapipe).
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <vulkan/vulkan_core.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace apps {

/// GLFW, loaded from libglfw.so.3 and initialised on a display. glfwTerminate()s when destroyed.
/// One per process; not movable (GLFW is process-global).
class window_system {
 public:
  /// Loads GLFW and connects to the display (DISPLAY or WAYLAND_DISPLAY must be set).
  /// Errors: unsupported with a readable reason when there is no display, GLFW is missing, cannot
  /// initialise, or has no Vulkan support (no loader).
  [[nodiscard]] static membridge::result<std::unique_ptr<window_system>> open();

  window_system(const window_system&) = delete;
  window_system& operator=(const window_system&) = delete;
  ~window_system();

  /// The instance extensions a surface needs (glfwGetRequiredInstanceExtensions), e.g.
  /// VK_KHR_surface and VK_KHR_xcb_surface.
  [[nodiscard]] const std::vector<std::string>& instance_extensions() const noexcept;

  struct functions;  ///< The GLFW functions used (window.cpp).
  /// Internal: the loaded functions.
  [[nodiscard]] const functions& glfw() const noexcept { return *functions_; }

  /// The options a relay's presenting device context is made with (window::create): the surface's
  /// instance extensions, VK_KHR_swapchain, and the app's validation choice (app_context_options()
  /// records it here).
  [[nodiscard]] const membridge::vulkan::create_options& relay_options() const noexcept { return relay_options_; }
  /// Validation messages reported by the presenting devices of this system's relayed windows; an
  /// app that checks its context's validation count adds these.
  [[nodiscard]] std::uint64_t relay_validation_messages() const noexcept;

 private:
  friend membridge::vulkan::create_options app_context_options(const char*, bool, window_system*);
  window_system();
  std::unique_ptr<functions> functions_;
  membridge::vulkan::create_options relay_options_;
  std::shared_ptr<std::atomic<std::uint64_t>> relay_messages_;
};

/// The windows of a run that wants them (`headless` false): GLFW opened on the display, or null
/// after printing `<program>: no usable display (<reason>); running headless` to `out` when there is
/// none (the run then goes headless). Null without a word when `headless`.
[[nodiscard]] std::unique_ptr<window_system> open_windows_or_headless(const char* program, bool headless,
                                                                      std::ostream& out);

/// Vulkan context options for an app: with `validation`, the Khronos layer on and each message
/// printed to stderr as `<program>: <message>` (and counted by the context); with `windows`, the
/// surface's instance extensions and VK_KHR_swapchain, and the same choices recorded in `windows` for
/// the presenting device of a relayed window. Ownership: `program` must outlive the context (a string
/// literal); `windows` is borrowed.
[[nodiscard]] membridge::vulkan::create_options app_context_options(const char* program, bool validation,
                                                                    window_system* windows);

/// Validation messages of an app's run: its context's, plus those of the presenting devices of
/// `windows`' relayed windows (null: none).
[[nodiscard]] std::uint64_t validation_messages(const membridge::vulkan::device_context& context,
                                                const window_system* windows) noexcept;

/// What one frame presents: wait for `acquired` (at TRANSFER) before `blit` runs, signal `rendered`
/// when the submission completes, then call window::present().
struct present_job {
  VkSemaphore acquired = VK_NULL_HANDLE;  ///< Signalled when the swapchain image is ready. Owned by the window.
  VkSemaphore rendered = VK_NULL_HANDLE;  ///< To signal when the frame is done; presentation waits for it.
  VkCommandBuffer blit = VK_NULL_HANDLE;  ///< Copies the renderer's image into the swapchain image.
  std::uint32_t image_index = 0;          ///< The acquired swapchain image.
};

/// A window with a swapchain on a device_context's graphics queue. The renderer's image (any size)
/// is blitted into the swapchain image, scaled to fit with its aspect ratio kept (black bars).
///
/// How frames reach the screen, chosen by create() and by the environment variable
/// MEMBRIDGE_WINDOW_PRESENT:
/// - `auto` (or unset): directly when the context's graphics queue can present to the window (its
///   surface support, formats and present modes all answer), else relayed;
/// - `direct`: directly, or create() fails with the reason;
/// - `relay`: always relayed (tests use it to run the relay on one device).
/// A relay copies each frame (the renderer's image, R8G8B8A8_UNORM) into host memory on the rendering
/// device, and from there into a swapchain on another Vulkan device that can present to the window
/// (the first one found; the rendering device itself only under `relay`, when no other can). It
/// costs a host wait for the frame and a copy of width x height x 4 bytes per presented frame, and
/// needs nothing from the caller: begin_frame() and present() are used the same way. describe() says
/// which device presents.
/// A resized window recreates the swapchain; so do VK_ERROR_OUT_OF_DATE_KHR and VK_SUBOPTIMAL_KHR.
/// A minimised window (zero size) presents nothing until it is restored.
///
/// Render-thread only, like the queue it presents on. Move-only; the destructor waits until the
/// device is idle, then destroys the swapchain, the surface and the window.
class window {
 public:
  /// Opens a `width` x `height` window titled `title` and makes its surface and swapchain for
  /// `context` (which must have been created with system.instance_extensions() and VK_KHR_swapchain).
  /// `frame_slots` is how many frames the caller keeps in flight (the renderer's slots). With
  /// `screenshots`, every presented image is also copied to host memory for save_screenshot().
  /// Errors: invalid_argument for an unknown MEMBRIDGE_WINDOW_PRESENT; unsupported when neither the
  /// graphics queue nor (relayed) any other device can present to the window, or the surface lacks
  /// what the blit needs (TRANSFER_DST usage, blittable format; TRANSFER_SRC for screenshots); the
  /// relay's device context's errors; Vulkan errors.
  [[nodiscard]] static membridge::result<window> create(window_system& system,
                                                        const membridge::vulkan::device_context& context,
                                                        std::uint32_t width, std::uint32_t height,
                                                        std::uint32_t frame_slots, const std::string& title,
                                                        bool screenshots = false);

  window() noexcept;
  window(window&&) noexcept;
  window& operator=(window&&) noexcept;
  window(const window&) = delete;
  window& operator=(const window&) = delete;
  ~window();

  /// Processes window events (glfwPollEvents).
  void poll_events() const;
  /// True once the user asked to close the window.
  [[nodiscard]] bool should_close() const;

  /// Acquires the next swapchain image and records, in the command buffer of `slot`, a blit of
  /// `source` (width x height, TRANSFER_SRC_OPTIMAL when the blit runs) into it. Nothing (nullopt)
  /// when the window is minimised. Call it after the renderer recorded `slot` (so the slot's previous
  /// frame, which used the same command buffer and semaphore, has finished).
  /// Errors: Vulkan errors of acquire, swapchain recreation and recording (surface lost, ...).
  [[nodiscard]] membridge::result<std::optional<present_job>> begin_frame(std::uint32_t slot, VkImage source,
                                                                          std::uint32_t width, std::uint32_t height);
  /// Presents the job's image (waiting for job.rendered) on the graphics queue. Out-of-date and
  /// suboptimal swapchains are recreated at the next begin_frame(). Relayed: waits (at most 10 s) on
  /// the host for the job's submission, copies the frame to the presenting device and presents there.
  /// Errors: Vulkan errors; timeout when a relayed frame does not finish within 10 s.
  [[nodiscard]] membridge::result<void> present(const present_job& job);

  /// The overlay's text from the next begin_frame() on: drawn (overlay_text.hpp) into a panel in the
  /// top-left corner of every presented image. No lines, no overlay.
  void set_overlay(std::vector<std::string> lines);
  /// Writes the last presented image (what the window shows, overlay included) to `path` as a PNG,
  /// after waiting for the device to be idle.
  /// Errors: invalid_argument when the window was made without screenshots or presented nothing;
  /// the PNG writer's; Vulkan errors.
  [[nodiscard]] membridge::result<void> save_screenshot(const std::filesystem::path& path);

  /// The swapchain's size now (0x0 while minimised).
  [[nodiscard]] VkExtent2D extent() const noexcept;
  /// Swapchains created so far (1 + recreations).
  [[nodiscard]] std::uint32_t swapchain_generation() const noexcept;
  /// One line for the run's output: `swapchain 1280x720 B8G8R8A8_UNORM MAILBOX, created 1 time`, and
  /// when relayed `; relayed through llvmpipe (LLVM 15.0.6, 256 bits) (why)`.
  [[nodiscard]] std::string describe() const;
  /// The GLFW window (a GLFWwindow*), for input and the title (membridge-view). Ownership: owned by the window.
  [[nodiscard]] void* native() const noexcept;

  struct state;  ///< Internal (window_state.hpp).

 private:
  explicit window(std::unique_ptr<state> s) noexcept;
  std::unique_ptr<state> state_;
};

}  // namespace apps
