// membridge/vulkan/device_context.hpp: a Vulkan device membridge works with, adopted from an engine or
// created for samples and tests.
#pragma once

#include <membridge/core/device_uuid.hpp>
#include <membridge/core/result.hpp>
#include <membridge/vulkan/instance_api.hpp>

#include <vulkan/vulkan_core.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct VolkDeviceTable;  // volk's per-device function table (<volk.h>)

namespace membridge::vulkan {

namespace detail {
struct context_state;
}  // namespace detail

/// One queue of a device.
struct queue_info {
  VkQueue queue = VK_NULL_HANDLE;  ///< The queue. Ownership: owned by the VkDevice.
  std::uint32_t family = VK_QUEUE_FAMILY_IGNORED;  ///< Its queue family index.
  std::uint32_t index = 0;                         ///< Its index within the family.
  /// True when a queue is set.
  [[nodiscard]] bool valid() const noexcept { return queue != VK_NULL_HANDLE; }
};

/// Device features the engine enabled and membridge uses (Vulkan cannot be asked for them).
struct enabled_features {
  bool timeline_semaphore = false;     ///< VkPhysicalDeviceVulkan12Features::timelineSemaphore.
  bool sparse_binding = false;         ///< VkPhysicalDeviceFeatures::sparseBinding.
  bool sparse_residency_buffer = false;///< VkPhysicalDeviceFeatures::sparseResidencyBuffer.
};

/// What an engine hands to device_context::adopt(). Every handle stays the engine's.
struct adopt_info {
  /// The loader entry point the engine uses. Ownership: borrowed; must stay valid for the context's life.
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
  VkInstance instance = VK_NULL_HANDLE;               ///< Ownership: borrowed, never destroyed by membridge.
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;  ///< Ownership: borrowed.
  VkDevice device = VK_NULL_HANDLE;                   ///< Ownership: borrowed, never destroyed by membridge.
  std::uint32_t api_version = VK_API_VERSION_1_2;     ///< The apiVersion the instance was created with (>= 1.2).
  std::vector<std::string> enabled_extensions;        ///< Device extensions the engine enabled.
  /// The same list as the engine's own array (e.g. its VkDeviceCreateInfo::ppEnabledExtensionNames);
  /// when non-empty it is used instead of `enabled_extensions`.
  /// Ownership: borrowed during adopt() only (the names are copied).
  std::span<const char* const> enabled_extension_names;
  /// Accept a device that lacks some of required_device_extensions() other than the memory one
  /// (VK_KHR_external_memory_fd on Linux, VK_KHR_external_memory_win32 on Windows: always required);
  /// capabilities() and missing_extensions() then report them. Without it, adopt() refuses such a device.
  bool allow_missing_extensions = false;
  enabled_features features{};                        ///< Features the engine enabled.
  queue_info graphics;  ///< A graphics+compute queue (required).
  queue_info transfer;  ///< A transfer queue, if the engine has one for membridge (optional).
  queue_info sparse;    ///< A queue with VK_QUEUE_SPARSE_BINDING_BIT (optional; needed for sparse growth).
};

/// Options for device_context::create() (samples, tests, tools).
struct create_options {
  /// Pick the physical device with this UUID (e.g. a CUDA device's); an error if none has it.
  /// Without it, the first device that has the required extensions is used.
  std::optional<device_uuid> uuid;
  /// Enable VK_LAYER_KHRONOS_validation and route its messages to `on_validation_message`
  /// (and count them, see validation_message_count()).
  bool validation = false;
  /// Receives each validation message (warnings and errors). Empty: messages go to membridge's log.
  std::function<void(std::string_view)> on_validation_message;
  /// The Vulkan loader to open (dlopen / LoadLibrary).
#if defined(_WIN32)
  std::string loader_path = "vulkan-1.dll";
#else
  std::string loader_path = "libvulkan.so.1";
#endif
  std::vector<std::string> instance_extensions;  ///< Extra instance extensions (e.g. GLFW's).
  std::vector<std::string> device_extensions;    ///< Extra device extensions (e.g. VK_KHR_swapchain).
  /// Enable sparse binding and a sparse-binding queue when the device has them.
  bool sparse = true;
  /// Report membridge's device extensions as missing instead of failing (for diagnostics).
  bool allow_missing_extensions = false;
};

/// What a device offers membridge (read when the context is made).
struct context_capabilities {
  /// The platform's external-memory extension is enabled (VK_KHR_external_memory_fd on Linux,
  /// VK_KHR_external_memory_win32 on Windows): imports of shareable handles work.
  bool external_memory = false;
  /// The platform's external-semaphore extension is enabled (VK_KHR_external_semaphore_fd on Linux,
  /// VK_KHR_external_semaphore_win32 on Windows): semaphores export to CUDA/GL.
  bool external_semaphore = false;
  bool external_memory_fd = false;     ///< VK_KHR_external_memory_fd enabled: fd imports work (Linux).
  bool external_semaphore_fd = false;  ///< VK_KHR_external_semaphore_fd enabled (Linux).
  bool timeline_semaphore = false;     ///< Timeline semaphores enabled.
  bool sparse_binding = false;         ///< Sparse buffers usable (feature + residency + queue): growth keeps one VkBuffer.
  bool dedicated_allocation = true;    ///< VK_KHR_dedicated_allocation (core in 1.1).
};

/// The device extensions membridge needs, in the order it checks them: VK_KHR_external_memory_fd and
/// VK_KHR_external_semaphore_fd on Linux, VK_KHR_external_memory_win32 and
/// VK_KHR_external_semaphore_win32 on Windows.
[[nodiscard]] const std::vector<std::string>& required_device_extensions();

/// The Vulkan device membridge works with: handles, a per-device function table (volk's
/// VolkDeviceTable, no global function pointers), the device's UUID, memory properties and capabilities.
///
/// adopt() wraps an engine's device and never destroys anything; create() makes an instance and device
/// of its own (for samples, tests and tools) and destroys them with the last object made from it.
/// Objects made from a context (memory, buffers, images, semaphores) share its state, so they stay
/// valid if the context object is destroyed first; with adopt(), the engine must keep its device alive
/// until they are gone.
///
/// Queues are not internally synchronised by Vulkan: membridge submits to the transfer or sparse queue
/// only inside calls that say so, and the caller must not submit to that queue from another thread at
/// the same time.
///
/// Move-only.
class device_context {
 public:
  /// Wraps an engine's device. Checks the API version and the required extensions, and reads the
  /// device's UUID. The timeline feature is taken from `info.features` as said (not checked).
  /// Errors: invalid_argument for null handles, a null extension name or a missing graphics queue;
  /// unsupported when the API version is below 1.2, when the platform's external-memory extension
  /// (VK_KHR_external_memory_fd / VK_KHR_external_memory_win32) is not enabled, or
  /// when another of required_device_extensions() is not enabled and `info.allow_missing_extensions`
  /// is false (the message lists the missing extensions).
  /// Ownership: borrows every handle; destroys nothing.
  [[nodiscard]] static result<device_context> adopt(const adopt_info& info);

  /// Loads the Vulkan loader, makes an instance (with validation if asked) and a device with the
  /// required extensions on the physical device whose UUID is `options.uuid`.
  /// Errors: driver_unavailable when the loader or any device is missing; invalid_argument when no
  /// device has the UUID (the message lists the UUIDs found; never another GPU silently); unsupported
  /// when the device lacks required extensions.
  /// Ownership: the context owns the instance and device.
  [[nodiscard]] static result<device_context> create(const create_options& options = {});

  /// An empty context.
  device_context() noexcept = default;
  device_context(const device_context&) = delete;
  device_context& operator=(const device_context&) = delete;
  /// Takes over `other`'s state; `other` becomes empty.
  device_context(device_context&&) noexcept = default;
  /// Takes over `other`'s state; `other` becomes empty.
  device_context& operator=(device_context&&) noexcept = default;
  /// Drops this object's share of the state (an owned device is destroyed with the last share).
  ~device_context() = default;

  /// True when the context holds a device.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  /// True when the context created (and will destroy) its instance and device.
  [[nodiscard]] bool owns_device() const noexcept;

  /// Ownership: borrowed from the engine (adopt) or owned by the context (create).
  [[nodiscard]] VkInstance instance() const noexcept;
  /// Ownership: not owned by anyone (physical devices are enumerated, never destroyed).
  [[nodiscard]] VkPhysicalDevice physical_device() const noexcept;
  /// Ownership: borrowed from the engine (adopt) or owned by the context (create).
  [[nodiscard]] VkDevice device() const noexcept;
  /// The graphics+compute queue.
  [[nodiscard]] const queue_info& graphics_queue() const noexcept;
  /// A transfer queue (the graphics queue if the device or engine has no separate one).
  [[nodiscard]] const queue_info& transfer_queue() const noexcept;
  /// The queue used for sparse binds (invalid when sparse binding is unavailable).
  [[nodiscard]] const queue_info& sparse_queue() const noexcept;

  /// Device-level functions, loaded with vkGetDeviceProcAddr for this device (include <volk.h>).
  [[nodiscard]] const VolkDeviceTable& functions() const noexcept;
  /// Instance-level functions membridge uses.
  [[nodiscard]] const instance_api& instance_functions() const noexcept;
  /// The loader entry point. Ownership: borrowed (adopt) or from the context's loaded library (create).
  [[nodiscard]] PFN_vkGetInstanceProcAddr get_instance_proc_addr() const noexcept;

  /// VkPhysicalDeviceIDProperties::deviceUUID: equal to the CUDA UUID of the same GPU.
  [[nodiscard]] const device_uuid& uuid() const noexcept;
  /// The device name, e.g. "NVIDIA H100 80GB HBM3" or "llvmpipe (LLVM 15.0.6, 256 bits)".
  [[nodiscard]] const std::string& name() const noexcept;
  /// The driver's name and version info, e.g. "NVIDIA 580.159.04".
  [[nodiscard]] const std::string& driver_info() const noexcept;
  /// The API version in use (min of the instance's and the device's).
  [[nodiscard]] std::uint32_t api_version() const noexcept;
  /// What the device offers membridge.
  [[nodiscard]] const context_capabilities& capabilities() const noexcept;
  /// Required device extensions that are not enabled (empty when all are).
  [[nodiscard]] const std::vector<std::string>& missing_extensions() const noexcept;
  /// The memory heaps and types.
  [[nodiscard]] const VkPhysicalDeviceMemoryProperties& memory_properties() const noexcept;
  /// Core device properties (limits, vendor, type).
  [[nodiscard]] const VkPhysicalDeviceProperties& properties() const noexcept;

  /// The index of the memory type in `type_bits` that has all of `required` flags, preferring types
  /// without any of `avoided` flags. Errors: unsupported when no type fits.
  [[nodiscard]] result<std::uint32_t> find_memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                                                       VkMemoryPropertyFlags avoided = 0) const;

  /// Validation messages received so far (create() with validation only; 0 otherwise).
  [[nodiscard]] std::uint64_t validation_message_count() const noexcept;

  /// Another context object for the same device, sharing this one's state (for objects that keep
  /// calling the device's functions, e.g. sync::frame_timeline). Empty when this one is.
  /// Ownership: shares the state; an owned device is destroyed with the last share.
  [[nodiscard]] device_context share() const noexcept { return device_context(state_); }

  /// Internal: the state that objects made from the context share.
  /// Ownership: shared with every object made from the context.
  [[nodiscard]] const std::shared_ptr<const detail::context_state>& state() const noexcept { return state_; }

 private:
  friend class chunked_buffer;  // re-forms a context from the state it keeps, to import chunks
  explicit device_context(std::shared_ptr<const detail::context_state> state) noexcept : state_(std::move(state)) {}
  std::shared_ptr<const detail::context_state> state_;
};

/// The error for a failed Vulkan call `call` that returned `result` (category from the VkResult, e.g.
/// device_lost, out_of_memory; the message names the enumerant), for code that calls functions().
[[nodiscard]] error make_vulkan_error(VkResult result, std::string call, std::string context = {},
                                      std::source_location where = std::source_location::current());

}  // namespace membridge::vulkan
