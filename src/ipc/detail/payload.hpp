// Private: the payloads of membridge's ipc messages (after the wire header), encoded little-endian
// and decoded with every field checked. A decode error is errc::protocol_error naming the field.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/ipc/resource.hpp>
#include <membridge/ipc/wire.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace membridge::ipc::detail {

/// Subscriber -> publisher, first message.
struct hello_payload {
  subscriber_role role = subscriber_role::observer;
  std::string client_name;
};

/// Publisher -> subscriber, after the initial state: the handshake is complete.
struct welcome_payload {
  std::string publisher_name;
  subscriber_role granted = subscriber_role::observer;
  std::optional<std::uint64_t> last_frame;
  std::uint32_t resource_count = 0;  ///< Resources sent before this welcome.
};

/// A buffer's state plus which chunks' fds ride with this message: [first_fd_chunk, + fd_count).
struct buffer_payload {
  buffer_description description;
  std::uint32_t first_fd_chunk = 0;
  std::uint32_t fd_count = 0;
};

/// What kind of resource a `resource` message carries (its first payload byte).
enum class resource_kind : std::uint8_t { buffer = 1, semaphore = 2 };

[[nodiscard]] std::vector<std::byte> encode(const hello_payload& p);
[[nodiscard]] std::vector<std::byte> encode(const welcome_payload& p);
/// For a `resource` (kind byte first) or a `growth` message (no kind byte).
[[nodiscard]] std::vector<std::byte> encode(const buffer_payload& p, bool with_kind);
[[nodiscard]] std::vector<std::byte> encode(const semaphore_description& p);  // with the kind byte
[[nodiscard]] std::vector<std::byte> encode_frame(std::uint64_t frame);
[[nodiscard]] std::vector<std::byte> encode_goodbye(const std::string& reason);

[[nodiscard]] result<hello_payload> decode_hello(std::span<const std::byte> bytes);
[[nodiscard]] result<welcome_payload> decode_welcome(std::span<const std::byte> bytes);
/// The kind byte of a `resource` message.
[[nodiscard]] result<resource_kind> peek_resource_kind(std::span<const std::byte> bytes);
/// A buffer from a `resource` (with_kind) or `growth` message that came with `fds_received` fds.
[[nodiscard]] result<buffer_payload> decode_buffer(std::span<const std::byte> bytes, bool with_kind,
                                                   std::size_t fds_received);
[[nodiscard]] result<semaphore_description> decode_semaphore(std::span<const std::byte> bytes, std::size_t fds_received);
[[nodiscard]] result<std::uint64_t> decode_frame(std::span<const std::byte> bytes);
[[nodiscard]] result<std::string> decode_goodbye(std::span<const std::byte> bytes);

/// A message of `type` with `payload` and borrowed copies of nothing (fds are added by the caller).
[[nodiscard]] message make_message(message_type type, std::vector<std::byte> payload);

}  // namespace membridge::ipc::detail
