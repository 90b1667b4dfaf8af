// Private: the payloads of membridge's ipc messages (after the wire header), encoded little-endian
// and decoded with every field checked. A decode error is errc::protocol_error naming the field.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/ipc/resource.hpp>
#include <membridge/ipc/wire.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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

/// A buffer's header (a `resource` message with the kind byte, a `growth` message without): the
/// description without its chunk list, the chunk count, and the first chunk whose (offset, size,
/// fd) follow in `chunks` messages: 0 for a new buffer, the chunks it kept for a growth
/// (min(old count, new count)). No fds ride with it.
struct buffer_header {
  buffer_description description;  ///< chunks empty: they follow in chunk_batch messages
  std::uint32_t chunk_count = 0;
  std::uint32_t first_new_chunk = 0;
};

/// Chunks [first_chunk, first_chunk + chunks.size()) of the buffer whose header came last, with one
/// fd each (1..max_fds_per_message of them).
struct chunk_batch {
  std::uint32_t first_chunk = 0;
  std::vector<buffer_chunk> chunks;
};

/// What kind of resource a `resource` message carries (its first payload byte).
enum class resource_kind : std::uint8_t { buffer = 1, semaphore = 2 };

[[nodiscard]] std::vector<std::byte> encode(const hello_payload& p);
[[nodiscard]] std::vector<std::byte> encode(const welcome_payload& p);
/// For a `resource` (kind byte first) or a `growth` message (no kind byte); description.chunks is
/// not encoded.
[[nodiscard]] std::vector<std::byte> encode(const buffer_header& p, bool with_kind);
[[nodiscard]] std::vector<std::byte> encode(const chunk_batch& p);
[[nodiscard]] std::vector<std::byte> encode(const semaphore_description& p);  // with the kind byte
[[nodiscard]] std::vector<std::byte> encode_frame(std::uint64_t frame);
[[nodiscard]] std::vector<std::byte> encode_goodbye(const std::string& reason);

[[nodiscard]] result<hello_payload> decode_hello(std::span<const std::byte> bytes);
[[nodiscard]] result<welcome_payload> decode_welcome(std::span<const std::byte> bytes);
/// The kind byte of a `resource` message.
[[nodiscard]] result<resource_kind> peek_resource_kind(std::span<const std::byte> bytes);
/// A buffer header from a `resource` (with_kind) or `growth` message that came with `fds_received`
/// fds (must be 0): a valid name, chunk_count <= max_chunks, first_new_chunk <= chunk_count,
/// size <= reserved_size. The whole description is checked (ipc::check) once its chunks came.
[[nodiscard]] result<buffer_header> decode_buffer_header(std::span<const std::byte> bytes, bool with_kind,
                                                         std::size_t fds_received);
/// A `chunks` message that came with `fds_received` fds: 1..max_fds_per_message chunks, one per fd,
/// none of size 0, ending at or before max_chunks.
[[nodiscard]] result<chunk_batch> decode_chunk_batch(std::span<const std::byte> bytes, std::size_t fds_received);
[[nodiscard]] result<semaphore_description> decode_semaphore(std::span<const std::byte> bytes, std::size_t fds_received);
[[nodiscard]] result<std::uint64_t> decode_frame(std::span<const std::byte> bytes);
[[nodiscard]] result<std::string> decode_goodbye(std::span<const std::byte> bytes);

/// Empty when `fd` can be a memory or semaphore handle, else what it is instead. Per platform
/// (src/ipc/posix, src/ipc/win32). Linux: fine are a regular file such as a memfd, an anonymous
/// inode, a GPU driver's device file; refused a directory, socket, FIFO, block device, a memory
/// device of major 1 (/dev/zero, /dev/null...) or an O_PATH fd. Windows: fine is an open handle
/// of another object type than those refused (a section, an event, a driver's object); refused a
/// value that names nothing, a file / pipe / device, a process, thread or token, a registry key or
/// object directory, a desktop or window station (NtQueryObject's type name).
[[nodiscard]] std::string handle_fd_problem(os::borrowed_shareable_handle fd);
/// As handle_fd_problem(borrowed) for a handle a message or the caller owns.
[[nodiscard]] std::string handle_fd_problem(const os::shareable_handle& fd);

/// `text` with every byte outside printable ASCII (control bytes, DEL, bytes >= 0x80) and '\\'
/// written as \\xNN, so names and reasons from a peer can go into a log line safely.
[[nodiscard]] std::string printable(std::string_view text);

/// A message of `type` with `payload` and borrowed copies of nothing (fds are added by the caller).
[[nodiscard]] message make_message(message_type type, std::vector<std::byte> payload);

}  // namespace membridge::ipc::detail

namespace membridge::ipc::detail {

/// An fd the publisher keeps and every queued message that carries it shares (a shrink can drop a
/// chunk from the state while a message with its fd still waits in a subscriber's queue).
using shared_fd = std::shared_ptr<const os::shareable_handle>;

/// One encoded message waiting in one or more subscriber queues (encoded once, shared).
struct outgoing {
  message_type type = message_type::frame;
  std::vector<std::byte> payload;
  std::vector<shared_fd> fds;  ///< <= max_fds_per_message
};
using outgoing_ptr = std::shared_ptr<const outgoing>;

/// The messages that carry buffer `d`: its header (a `resource` when `type` is resource, else a
/// `growth`) and the `chunks` messages for chunks [first_new, d.chunks.size()) with fds[i] for
/// chunk i (fds.size() == d.chunks.size()).
[[nodiscard]] std::vector<outgoing_ptr> buffer_messages(message_type type, const buffer_description& d,
                                                        std::span<const shared_fd> fds, std::size_t first_new);

}  // namespace membridge::ipc::detail
