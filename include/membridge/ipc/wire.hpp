// membridge/ipc/wire.hpp: the framing of membridge's cross-process messages (no GPU types).
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace membridge::ipc {

/// "MBRG" in the first four bytes of every message.
inline constexpr std::uint32_t wire_magic = 0x4752424DU;
/// The protocol version this build speaks; a peer with another version is refused.
/// Version 2: a buffer travels as a header (no chunk list, no fds) followed by `chunks` messages
/// that carry only their own chunks and fds (version 1 repeated the whole chunk list with every
/// 16 fds).
/// Version 3: the same messages, with new meaning: up to publisher_options::max_consumers
/// subscribers hold the consumer role at once, and each consumer receives resources of its own
/// (publisher_options::on_consumer_join: for sync::frame_publisher its own `<timeline>.consumed`
/// semaphore) after the shared state and before its welcome; observers receive none of them. A
/// version 2 peer would assume a shared `consumed` semaphore, so it is refused.
inline constexpr std::uint16_t wire_version = 3;
/// Bytes of the fixed header that starts every message.
inline constexpr std::size_t header_size = 16;
/// The largest payload a message may carry (bytes).
inline constexpr std::size_t max_payload_size = 64 * 1024;
/// The most fds one message may carry.
inline constexpr std::size_t max_fds_per_message = 16;

/// What a message is. Unknown values are a protocol error.
enum class message_type : std::uint16_t {
  hello = 1,      ///< Subscriber -> publisher: first message after connecting.
  welcome = 2,    ///< Publisher -> subscriber: the answer to hello.
  resource = 3,   ///< A published resource: a semaphore with its fd, or a buffer's header.
  growth = 4,     ///< A buffer grew or shrank: its new header (sizes, chunk count).
  frame = 5,      ///< A frame number was produced.
  goodbye = 6,    ///< Either side: closing in order.
  chunks = 7,     ///< The next chunks (offset, size) of the buffer whose header came last, with their fds.
};

/// The name of a message type, e.g. "resource"; "unknown" for other values.
[[nodiscard]] std::string_view to_string(message_type type) noexcept;

/// The fixed header. On the wire: magic u32, version u16, type u16, payload_size u32, fd_count u16,
/// reserved u16 (must be 0), all little-endian, 16 bytes.
struct message_header {
  std::uint32_t magic = wire_magic;      ///< wire_magic.
  std::uint16_t version = wire_version;  ///< wire_version.
  message_type type = message_type::hello;  ///< What the payload is.
  std::uint32_t payload_size = 0;        ///< Bytes after the header (<= max_payload_size).
  std::uint16_t fd_count = 0;            ///< fds sent with the message (<= max_fds_per_message).
  std::uint16_t reserved = 0;            ///< Must be 0.
};

/// A message: header fields, payload bytes and the fds (NT handles on Windows) that came or go with it.
/// Ownership: the message owns its fds / handles (received ones are wrapped before anything is parsed).
struct message {
  message_type type = message_type::hello;  ///< What the payload is.
  std::vector<std::byte> payload;           ///< The payload (<= max_payload_size bytes).
  std::vector<os::shareable_handle> fds;    ///< The fds / handles (<= max_fds_per_message).
};

/// The 16 header bytes for `header` (no checks: encode what you validated).
[[nodiscard]] std::array<std::byte, header_size> encode_header(const message_header& header) noexcept;

/// Parses and checks a received datagram's header: `bytes` is the whole datagram (header + payload)
/// and `fds_received` the number of fds that came with it. Every field is checked: magic, version,
/// known type, reserved 0, payload_size equal to the bytes that follow and within max_payload_size,
/// fd_count equal to fds_received and within max_fds_per_message.
/// Errors: protocol_error naming the field and the values.
[[nodiscard]] result<message_header> decode_header(std::span<const std::byte> bytes, std::size_t fds_received);

/// Bytes of one entry of the Windows transport's handle table (a HANDLE value, u64 little-endian).
inline constexpr std::size_t handle_value_size = 8;

/// A Windows transport message split into its parts (docs/protocol.md, "Windows transport"): on a
/// named pipe a message is the header, the payload, then `fd_count` handle values that the sender
/// duplicated into the receiving process. The parts point into the bytes given to
/// split_handle_table().
struct handle_table_split {
  std::span<const std::byte> message;         ///< Header and payload: what decode_header() checks.
  std::vector<std::uint64_t> handle_values;   ///< The handle table, in order.
};

/// Splits a named-pipe message into header + payload and its handle table, reading only the
/// header's fd_count: the table is the last fd_count * handle_value_size bytes. Platform-independent
/// (the fuzz target runs it on Linux). A receiver owns the returned handle values before it checks
/// anything else (decode_header on `message` with handle_values.size()), so a message it refuses
/// leaks none of them.
/// Errors: protocol_error when `bytes` is shorter than a header, fd_count exceeds
/// max_fds_per_message or the table does not fit after the header; no handle value is returned
/// then (there is no trustworthy table to close).
[[nodiscard]] result<handle_table_split> split_handle_table(std::span<const std::byte> bytes);

/// The handle table bytes for `values` (u64 little-endian each), appended to header + payload.
[[nodiscard]] std::vector<std::byte> encode_handle_table(std::span<const std::uint64_t> values);

/// Checks a message before sending it. Errors: invalid_argument for a payload or fd count over the
/// limits, an invalid fd, or an unknown type.
[[nodiscard]] result<void> validate_outgoing(const message& m);

}  // namespace membridge::ipc
