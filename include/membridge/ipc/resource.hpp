// membridge/ipc/resource.hpp: plain descriptions of what a publisher shares (buffers made of chunks,
// timeline semaphores). No GPU types: the sync module turns them into CUDA, Vulkan and GL objects.
#pragma once

#include <membridge/core/device_uuid.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace membridge::ipc {

/// The longest resource name (bytes). Names use letters, digits, '-', '_', '.' and '/'.
inline constexpr std::size_t max_name_size = 64;
/// The most chunks one buffer may have.
inline constexpr std::size_t max_chunks = 2048;

/// What kind of OS handle a resource's fds are.
enum class handle_kind : std::uint8_t {
  opaque_fd = 1,  ///< A POSIX fd from cuMemExportToShareableHandle / vkGetSemaphoreFdKHR (opaque).
  opaque_win32 = 2,  ///< An NT handle (CU_MEM_HANDLE_TYPE_WIN32, VK_..._OPAQUE_WIN32_BIT); Windows transport only.
};

/// The handle kind this platform's exports have (what sync:: publishes): opaque_win32 on Windows,
/// opaque_fd elsewhere.
#if defined(_WIN32)
inline constexpr handle_kind native_handle_kind = handle_kind::opaque_win32;
#else
inline constexpr handle_kind native_handle_kind = handle_kind::opaque_fd;
#endif

/// How a buffer's bytes are laid out, so a viewer can draw them without knowing the producer's code.
struct element_format {
  std::string name;         ///< A free-form type name, e.g. "float4" or "particle_v1" (<= max_name_size).
  std::uint32_t stride = 0;  ///< Bytes per element (0: unknown / raw bytes).
  /// Field-wise equality.
  friend bool operator==(const element_format&, const element_format&) = default;
};

/// Where one physical chunk of a published buffer lies.
struct buffer_chunk {
  std::uint64_t offset = 0;  ///< Byte offset from the buffer's start.
  std::uint64_t size = 0;    ///< Bytes (the size the importer passes to its import call).
  /// Field-wise equality.
  friend bool operator==(const buffer_chunk&, const buffer_chunk&) = default;
};

/// A published buffer: one reserved range with chunks mapped back to back from offset 0.
/// The fds travel beside it, one per chunk, in the same order.
struct buffer_description {
  std::string name;                    ///< Unique among the publisher's resources.
  device_uuid device;                  ///< The GPU the memory lives on.
  handle_kind handles = handle_kind::opaque_fd;  ///< What the chunk fds are.
  element_format format;               ///< How the bytes are laid out.
  std::uint64_t size = 0;              ///< Bytes in use (<= the sum of chunk sizes).
  std::uint64_t reserved_size = 0;     ///< The most bytes it can ever hold (the producer's max_size()).
  std::uint64_t generation = 0;        ///< Bumped by every change of size or chunks.
  std::vector<buffer_chunk> chunks;    ///< The chunks, in offset order, contiguous from 0.
  /// Field-wise equality.
  friend bool operator==(const buffer_description&, const buffer_description&) = default;
};

/// A published timeline semaphore (Vulkan-created, exportable as an opaque fd).
struct semaphore_description {
  std::string name;                    ///< Unique among the publisher's resources.
  device_uuid device;                  ///< The GPU it belongs to.
  handle_kind handles = handle_kind::opaque_fd;  ///< What the fd is.
  /// A number whose meaning the publisher defines (sync::frame_publisher: the frame ring's slots).
  std::uint64_t parameter = 0;
};

/// What a subscriber wants to be: a consumer paces the producer (it signals the frame timeline's
/// "consumed" semaphore; at most one at a time), an observer only watches.
enum class subscriber_role : std::uint8_t {
  observer = 1,  ///< Reads frames; never holds the producer back.
  consumer = 2,  ///< Signals "consumed"; the producer waits for it before reusing a slot.
};

/// Checks a buffer description: a valid name, chunks contiguous from offset 0, no chunk of size 0,
/// at most max_chunks, size <= sum of chunk sizes <= reserved_size, a short format name.
/// Returns an empty string when valid, else what is wrong (used on both ends of the wire).
[[nodiscard]] std::string check(const buffer_description& description);

/// Checks a resource name: 1..max_name_size bytes of letters, digits, '-', '_', '.', '/'.
[[nodiscard]] bool is_valid_resource_name(const std::string& name) noexcept;

}  // namespace membridge::ipc
