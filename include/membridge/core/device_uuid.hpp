// membridge/core/device_uuid.hpp: the 16-byte UUID that CUDA, Vulkan and OpenGL report for a GPU.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace membridge {

/// A GPU's 16-byte UUID, as CUDA (cuDeviceGetUuid), Vulkan (VkPhysicalDeviceIDProperties::deviceUUID)
/// and OpenGL (GL_DEVICE_UUID_EXT) report it: equal UUIDs mean the same physical GPU.
struct device_uuid {
  std::array<std::uint8_t, 16> bytes{};  ///< Raw bytes, in the driver's order.

  /// The UUID held by a driver struct with a 16-byte `bytes` member (CUDA's CUuuid).
  template <class Native>
  [[nodiscard]] static device_uuid from_native(const Native& raw) noexcept {
    static_assert(sizeof(raw.bytes) == 16, "a device UUID has 16 bytes");
    return from_bytes(raw.bytes);
  }

  /// The UUID in 16 raw bytes (Vulkan's and GL's uint8_t[16]).
  template <class Byte>
  [[nodiscard]] static device_uuid from_bytes(const Byte (&raw)[16]) noexcept {
    static_assert(sizeof(Byte) == 1, "a device UUID is made of bytes");
    device_uuid uuid;
    for (std::size_t i = 0; i < uuid.bytes.size(); ++i) uuid.bytes[i] = static_cast<std::uint8_t>(raw[i]);
    return uuid;
  }

  /// Lower-case hex in 8-4-4-4-12 groups, e.g. "1a2b3c4d-...".
  [[nodiscard]] std::string to_string() const;
  /// True if every byte is zero (an unset UUID).
  [[nodiscard]] bool is_zero() const noexcept;
  /// Byte-wise equality.
  friend bool operator==(const device_uuid&, const device_uuid&) = default;
};

}  // namespace membridge

/// Hash of a device_uuid (FNV-1a over its bytes), so UUIDs key unordered containers.
template <>
struct std::hash<membridge::device_uuid> {
  /// FNV-1a of the 16 bytes.
  [[nodiscard]] std::size_t operator()(const membridge::device_uuid& uuid) const noexcept {
    std::uint64_t h = 14695981039346656037ULL;
    for (const std::uint8_t b : uuid.bytes) h = (h ^ b) * 1099511628211ULL;
    return static_cast<std::size_t>(h);
  }
};
