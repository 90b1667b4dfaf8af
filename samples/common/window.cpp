// The Vulkan window: GLFW loaded with dlopen (glfw_library.hpp), a surface and swapchain, and a blit
// of the renderer's image per frame (the overlay and screenshots: window_overlay.cpp). Device functions
// come from the context's VolkDeviceTable, instance functions through its vkGetInstanceProcAddr (VK_NO_PROTOTYPES).
#include "window.hpp"  // first: its Vulkan types come before GLFW's Vulkan declarations

#include "glfw_library.hpp"  // samples/common: GLFW's header (prototypes only) and the common functions
#include "vk_error.hpp"
#include "window_relay.hpp"
#include "window_state.hpp"

#include <membridge/core/log.hpp>

#include <volk.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <mutex>
#include <ostream>
#include <string_view>
#include <utility>

namespace apps {

using membridge::errc;
using membridge::error;
using membridge::result;

// -------------------------------------------------------------------------------- window_system ---

window_system::window_system()
    : functions_(std::make_unique<functions>()), relay_messages_(std::make_shared<std::atomic<std::uint64_t>>(0)) {}

std::uint64_t window_system::relay_validation_messages() const noexcept { return relay_messages_->load(); }

window_system::~window_system() = default;  // glfw_library terminates GLFW

result<std::unique_ptr<window_system>> window_system::open() {
  constexpr const char* call = "window_system::open";
  std::unique_ptr<window_system> system(new window_system());
  functions& f = *system->functions_;
  MEMBRIDGE_TRY(f.open(call, [&f] { return f.load_vulkan(); }));
  if (f.vulkan_supported() != GLFW_TRUE)
    return error(errc::unsupported, call, "GLFW found no Vulkan loader: " + f.last_error("glfwVulkanSupported"));
  std::uint32_t count = 0;
  const char** names = f.required_instance_extensions(&count);
  if (names == nullptr)
    return error(errc::unsupported, call,
                 "no Vulkan surface extension for this display: " + f.last_error("glfwGetRequiredInstanceExtensions"));
  for (std::uint32_t i = 0; i < count; ++i) f.extensions.emplace_back(names[i]);
  return system;
}

const std::vector<std::string>& window_system::instance_extensions() const noexcept { return functions_->extensions; }

std::unique_ptr<window_system> open_windows_or_headless(const char* program, bool headless, std::ostream& out) {
  if (headless) return nullptr;
  auto opened = window_system::open();
  if (opened) return std::move(*opened);
  out << program << ": no usable display (" << opened.error().context() << "); running headless\n";
  return nullptr;
}

membridge::vulkan::create_options app_context_options(const char* program, bool validation,
                                                      window_system* windows) {
  membridge::vulkan::create_options options;
  options.validation = validation;
  if (validation) {
    options.on_validation_message = [program](std::string_view message) {
      static std::mutex lock;  // drivers may report from several threads
      const std::scoped_lock hold(lock);
      std::fprintf(stderr, "%s: %.*s\n", program, static_cast<int>(message.size()), message.data());
    };
  }
  if (windows != nullptr) {
    options.instance_extensions = windows->instance_extensions();
    options.device_extensions.emplace_back(VK_KHR_SWAPCHAIN_EXTENSION_NAME);
    windows->relay_options_ = options;  // a relay's presenting device: the same, its messages counted too
    if (validation) {
      windows->relay_options_.on_validation_message = [print = options.on_validation_message,
                                                       count = windows->relay_messages_](std::string_view message) {
        count->fetch_add(1);
        print(message);
      };
    }
  }
  return options;
}

std::uint64_t validation_messages(const membridge::vulkan::device_context& context,
                                  const window_system* windows) noexcept {
  return context.validation_message_count() + (windows != nullptr ? windows->relay_validation_messages() : 0);
}

// --------------------------------------------------------------------------------------- window ---

namespace {

constexpr std::uint64_t acquire_timeout_ns = 10'000'000'000ull;

/// `call: native name: context` of `e`, without the source location (for describe()).
std::string brief(const error& e) {
  std::string text(e.call());
  if (!e.native_name().empty()) text += ": " + std::string(e.native_name());
  if (!e.context().empty()) text += ": " + std::string(e.context());
  return text;
}

/// `inner` (w x h) scaled to fit in `outer` with its aspect ratio kept, centred.
std::array<VkOffset3D, 2> fit(std::uint32_t w, std::uint32_t h, VkExtent2D outer) {
  const double scale = std::min(static_cast<double>(outer.width) / w, static_cast<double>(outer.height) / h);
  const auto fw =
      std::clamp<std::int32_t>(static_cast<std::int32_t>(w * scale + 0.5), 1, static_cast<std::int32_t>(outer.width));
  const auto fh =
      std::clamp<std::int32_t>(static_cast<std::int32_t>(h * scale + 0.5), 1, static_cast<std::int32_t>(outer.height));
  const std::int32_t x = (static_cast<std::int32_t>(outer.width) - fw) / 2;
  const std::int32_t y = (static_cast<std::int32_t>(outer.height) - fh) / 2;
  return {VkOffset3D{x, y, 0}, VkOffset3D{x + fw, y + fh, 1}};
}

}  // namespace

window::state::~state() {
  if (relay) destroy_relay(*this);  // waits for both devices
  if (device != VK_NULL_HANDLE) {
    if (const VkResult rc = vk->vkDeviceWaitIdle(device); rc != VK_SUCCESS)
      membridge::log(membridge::log_level::warning, "window: vkDeviceWaitIdle: " + vk_result_name(rc));
    destroy_swapchain_objects();
    for (host_buffer& b : panel_buffers) destroy_host_buffer(side(), b);
    destroy_host_buffer(side(), capture);
    if (swapchain != VK_NULL_HANDLE) vk->vkDestroySwapchainKHR(device, swapchain, nullptr);
    for (VkSemaphore s : acquired) vk->vkDestroySemaphore(device, s, nullptr);
    vk->vkDestroyCommandPool(device, pool, nullptr);
  }
  if (surface != VK_NULL_HANDLE) surface_fns.destroy_surface(instance, surface, nullptr);
  if (handle != nullptr) glfw->destroy_window(handle);
}

void window::state::destroy_swapchain_objects() noexcept {
  for (VkSemaphore s : rendered) vk->vkDestroySemaphore(device, s, nullptr);
  rendered.clear();
  images.clear();
}

result<void> window::state::choose_format() {
  std::uint32_t count = 0;
  if (const VkResult rc = surface_fns.surface_formats(physical_device, surface, &count, nullptr); rc != VK_SUCCESS)
    return vk_error(rc, "vkGetPhysicalDeviceSurfaceFormatsKHR");
  std::vector<VkSurfaceFormatKHR> formats(count);
  if (const VkResult rc = surface_fns.surface_formats(physical_device, surface, &count, formats.data());
      rc != VK_SUCCESS)
    return vk_error(rc, "vkGetPhysicalDeviceSurfaceFormatsKHR");
  formats.resize(count);
  const auto blittable = [&](VkFormat f) {
    VkFormatProperties props{};
    surface_fns.format_properties(physical_device, f, &props);
    return (props.optimalTilingFeatures & VK_FORMAT_FEATURE_BLIT_DST_BIT) != 0;
  };
  // UNORM first: the swapchain then shows the very bytes the PNG holds (an sRGB one would brighten them).
  const VkFormat preferred[] = {VK_FORMAT_B8G8R8A8_UNORM, VK_FORMAT_R8G8B8A8_UNORM};
  for (VkFormat want : preferred)
    for (const auto& f : formats)
      if (f.format == want && blittable(f.format)) {
        format = f;
        return membridge::ok();
      }
  for (const auto& f : formats)
    if (blittable(f.format)) {
      format = f;
      return membridge::ok();
    }
  return error(errc::unsupported, "window::create", "no surface format can be the destination of a blit");
}

result<void> window::state::make_swapchain() {
  // The old swapchain's images may still be in use: wait, then retire it.
  if (const VkResult rc = vk->vkDeviceWaitIdle(device); rc != VK_SUCCESS)
    return vk_error(rc, "vkDeviceWaitIdle", "recreating the swapchain");
  destroy_swapchain_objects();
  out_of_date = false;
  VkSurfaceCapabilitiesKHR caps{};
  if (const VkResult rc = surface_fns.surface_capabilities(physical_device, surface, &caps); rc != VK_SUCCESS)
    return vk_error(rc, "vkGetPhysicalDeviceSurfaceCapabilitiesKHR");
  VkExtent2D size = caps.currentExtent;
  if (size.width == std::numeric_limits<std::uint32_t>::max()) {  // the surface takes the swapchain's size
    const VkExtent2D fb = framebuffer_size();
    size.width = std::clamp(fb.width, caps.minImageExtent.width, caps.maxImageExtent.width);
    size.height = std::clamp(fb.height, caps.minImageExtent.height, caps.maxImageExtent.height);
  }
  if (size.width == 0 || size.height == 0) {  // minimised: no swapchain until restored
    if (swapchain != VK_NULL_HANDLE) vk->vkDestroySwapchainKHR(device, swapchain, nullptr);
    swapchain = VK_NULL_HANDLE;
    extent = {0, 0};
    return membridge::ok();
  }
  if ((caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_DST_BIT) == 0)
    return error(errc::unsupported, "window: swapchain", "the surface's images cannot be transfer (blit) destinations");
  if (screenshots && (caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_SRC_BIT) == 0)
    return error(errc::unsupported, "window: swapchain", "the surface's images cannot be copied from (screenshots)");
  std::uint32_t image_count = std::max(caps.minImageCount + 1, 3u);
  if (caps.maxImageCount != 0) image_count = std::min(image_count, caps.maxImageCount);
  VkCompositeAlphaFlagBitsKHR alpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
  for (const VkCompositeAlphaFlagBitsKHR candidate :
       {VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR, VK_COMPOSITE_ALPHA_INHERIT_BIT_KHR,
        VK_COMPOSITE_ALPHA_PRE_MULTIPLIED_BIT_KHR, VK_COMPOSITE_ALPHA_POST_MULTIPLIED_BIT_KHR})
    if ((caps.supportedCompositeAlpha & static_cast<VkCompositeAlphaFlagsKHR>(candidate)) != 0) {
      alpha = candidate;
      break;
    }

  VkSwapchainCreateInfoKHR info{};
  info.sType = VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR;
  info.surface = surface;
  info.minImageCount = image_count;
  info.imageFormat = format.format;
  info.imageColorSpace = format.colorSpace;
  info.imageExtent = size;
  info.imageArrayLayers = 1;
  info.imageUsage = VK_IMAGE_USAGE_TRANSFER_DST_BIT;
  if (screenshots) info.imageUsage |= VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
  info.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE;
  info.preTransform = caps.currentTransform;
  info.compositeAlpha = alpha;
  info.presentMode = present_mode;
  info.clipped = VK_TRUE;
  info.oldSwapchain = swapchain;
  VkSwapchainKHR created = VK_NULL_HANDLE;
  const VkResult rc = vk->vkCreateSwapchainKHR(device, &info, nullptr, &created);
  if (swapchain != VK_NULL_HANDLE) vk->vkDestroySwapchainKHR(device, swapchain, nullptr);  // retired either way
  swapchain = VK_NULL_HANDLE;
  if (rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateSwapchainKHR",
                    std::to_string(size.width) + "x" + std::to_string(size.height) + ", " +
                        std::to_string(image_count) + " images");
  swapchain = created;
  extent = size;
  ++generation;
  std::uint32_t count = 0;
  if (const VkResult r = vk->vkGetSwapchainImagesKHR(device, swapchain, &count, nullptr); r != VK_SUCCESS)
    return vk_error(r, "vkGetSwapchainImagesKHR");
  images.resize(count);
  if (const VkResult r = vk->vkGetSwapchainImagesKHR(device, swapchain, &count, images.data()); r != VK_SUCCESS)
    return vk_error(r, "vkGetSwapchainImagesKHR");
  images.resize(count);
  MEMBRIDGE_TRY(make_semaphores(side(), count, rendered, "a swapchain image's render-done semaphore"));
  return make_capture_buffer(*this);
}

window::window() noexcept = default;
window::window(std::unique_ptr<state> s) noexcept : state_(std::move(s)) {}
window::window(window&&) noexcept = default;
window& window::operator=(window&&) noexcept = default;
window::~window() = default;

result<void> window::state::use_context(const membridge::vulkan::device_context& context) {
  constexpr const char* call = "window::create";
  keep_alive = context.state();
  instance = context.instance();
  physical_device = context.physical_device();
  device = context.device();
  vk = &context.functions();
  queue = context.graphics_queue();
  const PFN_vkGetInstanceProcAddr gipa = context.get_instance_proc_addr();
  const auto instance_fn = [&](const char* name) { return gipa(instance, name); };
  surface_fns.destroy_surface = reinterpret_cast<PFN_vkDestroySurfaceKHR>(instance_fn("vkDestroySurfaceKHR"));
  surface_fns.surface_support =
      reinterpret_cast<PFN_vkGetPhysicalDeviceSurfaceSupportKHR>(instance_fn("vkGetPhysicalDeviceSurfaceSupportKHR"));
  surface_fns.surface_capabilities = reinterpret_cast<PFN_vkGetPhysicalDeviceSurfaceCapabilitiesKHR>(
      instance_fn("vkGetPhysicalDeviceSurfaceCapabilitiesKHR"));
  surface_fns.surface_formats =
      reinterpret_cast<PFN_vkGetPhysicalDeviceSurfaceFormatsKHR>(instance_fn("vkGetPhysicalDeviceSurfaceFormatsKHR"));
  surface_fns.present_modes = reinterpret_cast<PFN_vkGetPhysicalDeviceSurfacePresentModesKHR>(
      instance_fn("vkGetPhysicalDeviceSurfacePresentModesKHR"));
  surface_fns.format_properties =
      reinterpret_cast<PFN_vkGetPhysicalDeviceFormatProperties>(instance_fn("vkGetPhysicalDeviceFormatProperties"));
  const auto memory_properties = reinterpret_cast<PFN_vkGetPhysicalDeviceMemoryProperties>(
      instance_fn("vkGetPhysicalDeviceMemoryProperties"));
  if (memory_properties == nullptr)
    return error(errc::unsupported, call, "no vkGetPhysicalDeviceMemoryProperties");
  memory_properties(physical_device, &memory_types);
  const surface_api& sf = surface_fns;
  if (sf.destroy_surface == nullptr || sf.surface_support == nullptr || sf.surface_capabilities == nullptr ||
      sf.surface_formats == nullptr || sf.present_modes == nullptr || sf.format_properties == nullptr)
    return error(errc::unsupported, call, "the instance lacks VK_KHR_surface (was it created with GLFW's extensions?)");
  if (vk->vkCreateSwapchainKHR == nullptr || vk->vkQueuePresentKHR == nullptr)
    return error(errc::unsupported, call, "the device lacks VK_KHR_swapchain (was it created with it?)");
  return membridge::ok();
}

result<void> window::state::make_surface() {
  if (const VkResult rc = glfw->create_window_surface(instance, handle, nullptr, &surface); rc != VK_SUCCESS)
    return vk_error(rc, "glfwCreateWindowSurface", glfw->last_error("no surface"));
  return membridge::ok();
}

result<void> window::state::check_presentation() {
  constexpr const char* call = "window::create";
  const surface_api& sf = surface_fns;
  VkBool32 can_present = VK_FALSE;
  if (const VkResult rc = sf.surface_support(physical_device, queue.family, surface, &can_present); rc != VK_SUCCESS)
    return vk_error(rc, "vkGetPhysicalDeviceSurfaceSupportKHR");
  if (can_present != VK_TRUE)
    return error(errc::unsupported, call,
                 "the graphics queue family " + std::to_string(queue.family) + " cannot present to this window");
  VkFormatProperties source{};
  sf.format_properties(physical_device, VK_FORMAT_R8G8B8A8_UNORM, &source);
  if ((source.optimalTilingFeatures & VK_FORMAT_FEATURE_BLIT_SRC_BIT) == 0)
    return error(errc::unsupported, call, "R8G8B8A8_UNORM images cannot be blitted from on this device");
  filter = (source.optimalTilingFeatures & VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT) != 0 ? VK_FILTER_LINEAR
                                                                                                   : VK_FILTER_NEAREST;
  MEMBRIDGE_TRY(choose_format());
  // MAILBOX shows the newest frame without tearing and without capping the frame rate at the
  // display's; FIFO (always there) is vsync.
  std::uint32_t mode_count = 0;
  if (const VkResult rc = sf.present_modes(physical_device, surface, &mode_count, nullptr); rc != VK_SUCCESS)
    return vk_error(rc, "vkGetPhysicalDeviceSurfacePresentModesKHR");
  std::vector<VkPresentModeKHR> modes(mode_count);
  if (const VkResult rc = sf.present_modes(physical_device, surface, &mode_count, modes.data()); rc != VK_SUCCESS)
    return vk_error(rc, "vkGetPhysicalDeviceSurfacePresentModesKHR");
  present_mode = std::find(modes.begin(), modes.end(), VK_PRESENT_MODE_MAILBOX_KHR) != modes.end()
                     ? VK_PRESENT_MODE_MAILBOX_KHR
                     : VK_PRESENT_MODE_FIFO_KHR;
  return membridge::ok();
}

result<window> window::create(window_system& system, const membridge::vulkan::device_context& context,
                              std::uint32_t width, std::uint32_t height, std::uint32_t frame_slots,
                              const std::string& title, bool screenshots) {
  constexpr const char* call = "window::create";
  if (!context.valid() || frame_slots == 0 || width == 0 || height == 0)
    return error(errc::invalid_argument, call, "empty context, zero size or no frame slots");
  MEMBRIDGE_TRY_ASSIGN(const present_choice choice, present_choice_from_environment());
  auto s = std::make_unique<state>();
  const window_system::functions& glfw = system.glfw();
  s->glfw = &glfw;
  s->screenshots = screenshots;
  MEMBRIDGE_TRY(s->use_context(context));
  glfw.window_hint(GLFW_CLIENT_API, GLFW_NO_API);
  glfw.window_hint(GLFW_RESIZABLE, GLFW_TRUE);
  s->handle = glfw.create_window(static_cast<int>(width), static_cast<int>(height), title.c_str(), nullptr, nullptr);
  if (s->handle == nullptr) return error(errc::unsupported, "glfwCreateWindow", glfw.last_error("no window"));
  MEMBRIDGE_TRY(s->make_surface());
  std::string relay_reason;  // why the rendering device does not present itself
  if (choice == present_choice::relay) {
    relay_reason = "MEMBRIDGE_WINDOW_PRESENT=relay";
  } else if (result<void> direct = s->check_presentation(); !direct) {
    if (choice == present_choice::direct) return direct.error();
    relay_reason = brief(direct.error());
  }
  if (!relay_reason.empty())
    MEMBRIDGE_TRY(start_relay(*s, system, context, frame_slots, choice == present_choice::relay, relay_reason));

  MEMBRIDGE_TRY(make_command_buffers(s->side(), s->queue.family, frame_slots, s->pool, s->blits,
                                     "the window's blit commands"));
  MEMBRIDGE_TRY(make_semaphores(s->side(), frame_slots, s->acquired, "a swapchain acquire semaphore"));
  MEMBRIDGE_TRY(make_overlay_buffers(*s));
  MEMBRIDGE_TRY(s->make_swapchain());
  return window(std::move(s));
}

void window::poll_events() const {
  if (state_) state_->glfw->poll_events();
}

bool window::should_close() const { return !state_ || state_->glfw->window_should_close(state_->handle) == GLFW_TRUE; }

VkExtent2D window::extent() const noexcept { return state_ ? state_->extent : VkExtent2D{0, 0}; }
std::uint32_t window::swapchain_generation() const noexcept { return state_ ? state_->generation : 0; }

std::string window::describe() const {
  if (!state_) return "no window";
  const state& s = *state_;
  std::string format = "format " + std::to_string(s.format.format);
  if (s.format.format == VK_FORMAT_B8G8R8A8_UNORM) format = "B8G8R8A8_UNORM";
  if (s.format.format == VK_FORMAT_R8G8B8A8_UNORM) format = "R8G8B8A8_UNORM";
  return "swapchain " + std::to_string(s.extent.width) + "x" + std::to_string(s.extent.height) + " " + format + " " +
         (s.present_mode == VK_PRESENT_MODE_MAILBOX_KHR ? "MAILBOX" : "FIFO") + ", created " +
         std::to_string(s.generation) + (s.generation == 1 ? " time" : " times") + " (resizes recreate it)" +
         relay_description(s);
}

result<std::optional<present_job>> window::begin_frame(std::uint32_t slot, VkImage source, std::uint32_t width,
                                                       std::uint32_t height) {
  if (!state_ || slot >= state_->blits.size() || source == VK_NULL_HANDLE || width == 0 || height == 0)
    return error(errc::invalid_argument, "window::begin_frame", "empty window, bad slot or no source image");
  state& s = *state_;
  const VkExtent2D fb = s.framebuffer_size();
  const bool resized = fb.width != s.extent.width || fb.height != s.extent.height;
  if (s.out_of_date || resized || s.swapchain == VK_NULL_HANDLE) {
    if (fb.width == 0 || fb.height == 0) return std::optional<present_job>{};  // minimised
    MEMBRIDGE_TRY(s.make_swapchain());
  }
  if (s.swapchain == VK_NULL_HANDLE) return std::optional<present_job>{};

  std::uint32_t index = 0;
  VkResult rc = VK_ERROR_OUT_OF_DATE_KHR;
  for (int attempt = 0; attempt < 2 && rc == VK_ERROR_OUT_OF_DATE_KHR; ++attempt) {
    if (attempt > 0) {
      MEMBRIDGE_TRY(s.make_swapchain());
      if (s.swapchain == VK_NULL_HANDLE) return std::optional<present_job>{};
    }
    rc = s.vk->vkAcquireNextImageKHR(s.device, s.swapchain, acquire_timeout_ns, s.acquired[slot], VK_NULL_HANDLE,
                                     &index);
  }
  if (rc == VK_ERROR_OUT_OF_DATE_KHR) {  // still: skip presenting this frame, try again next frame
    s.out_of_date = true;
    return std::optional<present_job>{};
  }
  if (rc == VK_SUBOPTIMAL_KHR) {
    s.out_of_date = true;  // present this image, recreate afterwards
  } else if (rc == VK_TIMEOUT || rc == VK_NOT_READY) {
    return error::from_native(errc::timeout, membridge::error_source::vulkan, rc, vk_result_name(rc),
                              "vkAcquireNextImageKHR", "no swapchain image became available within 10 s");
  } else if (rc != VK_SUCCESS) {
    return vk_error(rc, "vkAcquireNextImageKHR");
  }

  if (s.relay) {
    MEMBRIDGE_TRY_ASSIGN(const present_job job, relay_begin(s, slot, index, source, width, height));
    return std::optional<present_job>{job};
  }
  const VolkDeviceTable& vk = *s.vk;
  const VkCommandBuffer cmd = s.blits[slot];
  MEMBRIDGE_TRY(begin_one_time(vk, cmd));
  record_present(s, cmd, slot, source, width, height, s.images[index]);
  if (const VkResult r = vk.vkEndCommandBuffer(cmd); r != VK_SUCCESS) return vk_error(r, "vkEndCommandBuffer");
  return std::optional<present_job>{present_job{s.acquired[slot], s.rendered[index], cmd, index}};
}

void record_present(window::state& s, VkCommandBuffer cmd, std::uint32_t slot, VkImage source, std::uint32_t width,
                    std::uint32_t height, VkImage target) {
  const VolkDeviceTable& vk = *s.vk;
  const VkImageSubresourceRange range{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  constexpr VkImageLayout dst_layout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
  // The acquire semaphore is waited at TRANSFER: the transition runs after the image is ours.
  image_barrier(s, cmd, target, 0, VK_ACCESS_TRANSFER_WRITE_BIT, VK_IMAGE_LAYOUT_UNDEFINED, dst_layout,
                VK_PIPELINE_STAGE_TRANSFER_BIT);
  const VkClearColorValue black{{0.0f, 0.0f, 0.0f, 1.0f}};
  vk.vkCmdClearColorImage(cmd, target, dst_layout, &black, 1, &range);
  // The clear before the blit (bars stay black).
  image_barrier(s, cmd, target, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, dst_layout, dst_layout,
                VK_PIPELINE_STAGE_TRANSFER_BIT);
  // The renderer's frame (splat or points) made its writes visible to transfer reads and left the
  // image in TRANSFER_SRC_OPTIMAL (particle_renderer.hpp); so does the relay's upload.
  VkImageBlit blit{};
  blit.srcSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  blit.srcOffsets[0] = {0, 0, 0};
  blit.srcOffsets[1] = {static_cast<std::int32_t>(width), static_cast<std::int32_t>(height), 1};
  blit.dstSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  const auto dst = fit(width, height, s.extent);
  blit.dstOffsets[0] = dst[0];
  blit.dstOffsets[1] = dst[1];
  vk.vkCmdBlitImage(cmd, source, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, target, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1,
                    &blit, s.filter);
  record_frame_end(s, cmd, slot, target);  // the overlay, the screenshot copy, then PRESENT_SRC
}

result<void> window::present(const present_job& job) {
  if (!state_) return error(errc::invalid_argument, "window::present", "empty window");
  if (state_->relay) return relay_present(*state_, job);
  return queue_present(*state_, job.rendered, job.image_index);
}

result<void> make_command_buffers(const device_side& d, std::uint32_t family, std::uint32_t count, VkCommandPool& pool,
                                  std::vector<VkCommandBuffer>& buffers, const char* what) {
  VkCommandPoolCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  info.queueFamilyIndex = family;
  if (const VkResult rc = d.vk->vkCreateCommandPool(d.device, &info, nullptr, &pool); rc != VK_SUCCESS)
    return vk_error(rc, "vkCreateCommandPool", what);
  buffers.resize(count);
  VkCommandBufferAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  alloc.commandPool = pool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = count;
  if (const VkResult rc = d.vk->vkAllocateCommandBuffers(d.device, &alloc, buffers.data()); rc != VK_SUCCESS)
    return vk_error(rc, "vkAllocateCommandBuffers", what);
  return membridge::ok();
}

result<void> make_semaphores(const device_side& d, std::size_t count, std::vector<VkSemaphore>& semaphores,
                             const char* what) {
  semaphores.resize(count, VK_NULL_HANDLE);
  VkSemaphoreCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
  for (VkSemaphore& sem : semaphores)
    if (const VkResult rc = d.vk->vkCreateSemaphore(d.device, &info, nullptr, &sem); rc != VK_SUCCESS)
      return vk_error(rc, "vkCreateSemaphore", what);
  return membridge::ok();
}

result<void> begin_one_time(const VolkDeviceTable& vk, VkCommandBuffer cmd) {
  if (const VkResult rc = vk.vkResetCommandBuffer(cmd, 0); rc != VK_SUCCESS)
    return vk_error(rc, "vkResetCommandBuffer");
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (const VkResult rc = vk.vkBeginCommandBuffer(cmd, &begin); rc != VK_SUCCESS)
    return vk_error(rc, "vkBeginCommandBuffer");
  return membridge::ok();
}

result<void> queue_present(window::state& s, VkSemaphore rendered, std::uint32_t index) {
  VkPresentInfoKHR info{};
  info.sType = VK_STRUCTURE_TYPE_PRESENT_INFO_KHR;
  info.waitSemaphoreCount = 1;
  info.pWaitSemaphores = &rendered;
  info.swapchainCount = 1;
  info.pSwapchains = &s.swapchain;
  info.pImageIndices = &index;
  const VkResult rc = s.vk->vkQueuePresentKHR(s.queue.queue, &info);
  if (rc == VK_ERROR_OUT_OF_DATE_KHR || rc == VK_SUBOPTIMAL_KHR) {
    s.out_of_date = true;
    return membridge::ok();
  }
  if (rc != VK_SUCCESS) return vk_error(rc, "vkQueuePresentKHR");
  return membridge::ok();
}

void* window::native() const noexcept { return state_ ? state_->handle : nullptr; }

}  // namespace apps
