// membridge-info's Vulkan section: whether the loader is there, and for every physical device who it
// is (name, driver, UUID, the CUDA device with the same UUID) and what it offers membridge (external
// memory and semaphore fds, timeline semaphores, sparse binding, memory types). Probing never fails:
// every failure becomes part of the report. No Vulkan header here: flags are kept as plain integers.
#pragma once

#include <membridge/core/device_uuid.hpp>
#include <membridge/core/error.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace membridge::info {

/// What probe_vulkan() loads and how.
struct vulkan_probe_options {
  std::string library = "libvulkan.so.1";  ///< The Vulkan loader to dlopen.
  /// Enable VK_LAYER_KHRONOS_validation for the probe's instance (tests); a missing layer is a failure.
  bool validation = false;
  /// Receives each validation warning or error while `validation` is on.
  std::function<void(std::string_view)> on_validation_message;
};

/// Importing memory from an opaque POSIX fd (how CUDA's VMM allocations reach Vulkan).
struct vulkan_external_memory {
  bool fd_extension = false;             ///< VK_KHR_external_memory_fd is offered.
  bool opaque_fd_buffer_import = false;  ///< IMPORTABLE for a buffer (vkGetPhysicalDeviceExternalBufferProperties).
  bool dedicated_only = false;           ///< DEDICATED_ONLY: imports need a dedicated allocation.
  /// True when fd imports of buffers work.
  [[nodiscard]] bool usable() const noexcept { return fd_extension && opaque_fd_buffer_import; }
};

/// Sharing timeline semaphores through opaque POSIX fds (how Vulkan and CUDA keep in step).
struct vulkan_external_semaphore {
  bool fd_extension = false;               ///< VK_KHR_external_semaphore_fd is offered.
  bool timeline_opaque_fd_export = false;  ///< EXPORTABLE for a timeline semaphore, opaque fd.
  bool timeline_opaque_fd_import = false;  ///< IMPORTABLE for a timeline semaphore, opaque fd.
  /// True when timeline semaphores can be exported as fds.
  [[nodiscard]] bool usable() const noexcept { return fd_extension && timeline_opaque_fd_export; }
};

/// Sparse buffers (growth that keeps one VkBuffer).
struct vulkan_sparse_binding {
  bool sparse_binding = false;           ///< VkPhysicalDeviceFeatures::sparseBinding.
  bool sparse_residency_buffer = false;  ///< VkPhysicalDeviceFeatures::sparseResidencyBuffer.
  bool sparse_queue_family = false;      ///< A queue family has VK_QUEUE_SPARSE_BINDING_BIT.
  /// True when all three hold.
  [[nodiscard]] bool supported() const noexcept { return sparse_binding && sparse_residency_buffer && sparse_queue_family; }
};

/// One memory heap (its index is its position in vulkan_device_report::memory_heaps).
struct vulkan_memory_heap {
  std::uint64_t size_bytes = 0;  ///< VkMemoryHeap::size.
  std::uint32_t flags = 0;       ///< VkMemoryHeapFlags.
};

/// One memory type (its index is its position in vulkan_device_report::memory_types).
struct vulkan_memory_type {
  std::uint32_t heap_index = 0;      ///< The heap it allocates from.
  std::uint32_t property_flags = 0;  ///< VkMemoryPropertyFlags.
};

/// Everything membridge-info found about one Vulkan physical device.
struct vulkan_device_report {
  std::uint32_t index = 0;      ///< Its position in vkEnumeratePhysicalDevices.
  std::string name;             ///< deviceName, e.g. "NVIDIA H100 80GB HBM3".
  std::string type;             ///< "DISCRETE_GPU", "INTEGRATED_GPU", "VIRTUAL_GPU", "CPU" or "OTHER".
  std::string driver_name;      ///< VkPhysicalDeviceDriverProperties::driverName (empty before Vulkan 1.2).
  std::string driver_info;      ///< driverInfo, e.g. "580.65.06" (empty before Vulkan 1.2).
  std::uint32_t api_version = 0;  ///< The device's apiVersion (VK_MAKE_API_VERSION encoding).
  device_uuid uuid;             ///< VkPhysicalDeviceIDProperties::deviceUUID.
  std::optional<int> cuda_ordinal;  ///< The listed CUDA device with the same UUID (link_vulkan sets it).
  vulkan_external_memory external_memory;        ///< Opaque-fd memory import.
  vulkan_external_semaphore external_semaphore;  ///< Opaque-fd timeline semaphore export.
  bool timeline_semaphore = false;               ///< The timelineSemaphore feature.
  vulkan_sparse_binding sparse;                  ///< Sparse binding features and queues.
  std::vector<vulkan_memory_heap> memory_heaps;  ///< In heap-index order.
  std::vector<vulkan_memory_type> memory_types;  ///< In type-index order.
  std::optional<error> failure;  ///< A query that failed (listing extensions); the other fields still hold.
};

/// The Vulkan section: the loader and the physical devices it sees.
struct vulkan_report {
  std::string library;                           ///< The loader loaded (or tried), e.g. "libvulkan.so.1".
  bool loader_found = false;                     ///< The loader loaded and has vkGetInstanceProcAddr.
  std::optional<std::uint32_t> loader_version;   ///< vkEnumerateInstanceVersion; empty when not loaded.
  std::optional<error> failure;                  ///< Why devices could not be listed (loader, instance).
  std::vector<vulkan_device_report> devices;     ///< Every physical device, in enumeration order.
};

/// Loads the Vulkan loader, creates an instance (Vulkan 1.2, or the loader's version up to 1.3),
/// describes every physical device and destroys the instance again. Creates no VkDevice.
[[nodiscard]] vulkan_report probe_vulkan(const vulkan_probe_options& options);

/// A Vulkan version number as "major.minor.patch", e.g. "1.3.239".
[[nodiscard]] std::string format_vulkan_version(std::uint32_t version);

/// VkMemoryPropertyFlags as "DEVICE_LOCAL|HOST_VISIBLE"; unknown bits as hex ("0x1000"); "" for none.
[[nodiscard]] std::string format_memory_property_flags(std::uint32_t flags);

/// VkMemoryHeapFlags as "DEVICE_LOCAL|MULTI_INSTANCE"; unknown bits as hex; "" for none.
[[nodiscard]] std::string format_memory_heap_flags(std::uint32_t flags);

/// Appends the Vulkan section ("Vulkan" and one block per device) as aligned rows.
void append_vulkan_text(std::string& out, const vulkan_report& v);

/// The Vulkan section as JSON, in the schema README.md documents.
[[nodiscard]] nlohmann::ordered_json make_vulkan_json(const vulkan_report& v);

}  // namespace membridge::info
