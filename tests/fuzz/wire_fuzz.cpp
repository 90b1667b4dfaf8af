// libFuzzer target for the ipc message parser: the header (ipc::decode_header) and then the payload
// of every message type (hello, welcome, resource, growth, frame, goodbye, chunks), any bytes, any fd
// count; and the same bytes as a Windows named-pipe message (ipc::split_handle_table, then the same
// validator: one parser for both transports).
// The parser must never crash, read out of bounds (ASan) or accept a message that breaks its rules.
#include "detail/payload.hpp"

#include <membridge/ipc/resource.hpp>
#include <membridge/ipc/wire.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

namespace {

// A decode either fails with protocol_error or gives a value that meets the rules.
template <class R>
bool accepted(const R& r) {
  if (!r && r.error().code() != membridge::errc::protocol_error) std::abort();
  return static_cast<bool>(r);
}

void check_payload(membridge::ipc::message_type type, std::span<const std::byte> payload, std::size_t fds) {
  using namespace membridge::ipc;
  switch (type) {
    case message_type::hello:
      if (accepted(detail::decode_hello(payload)) && detail::decode_hello(payload)->client_name.size() > max_name_size)
        std::abort();
      break;
    case message_type::welcome: (void)accepted(detail::decode_welcome(payload)); break;
    case message_type::frame: (void)accepted(detail::decode_frame(payload)); break;
    case message_type::goodbye: (void)accepted(detail::decode_goodbye(payload)); break;
    case message_type::resource:
    case message_type::growth: {
      const bool with_kind = type == message_type::resource;
      if (with_kind) {
        const auto kind = detail::peek_resource_kind(payload);
        if (!accepted(kind)) break;
        if (*kind == detail::resource_kind::semaphore) {
          const auto s = detail::decode_semaphore(payload, fds);
          if (accepted(s) && (fds != 1 || !is_valid_resource_name(s->name))) std::abort();
          break;
        }
      }
      const auto h = detail::decode_buffer_header(payload, with_kind, fds);
      if (!accepted(h)) break;
      if (fds != 0 || !is_valid_resource_name(h->description.name) || h->chunk_count > max_chunks ||
          h->first_new_chunk > h->chunk_count || (with_kind && h->first_new_chunk != 0) ||
          h->description.size > h->description.reserved_size || !h->description.chunks.empty())
        std::abort();
      break;
    }
    case message_type::chunks: {
      const auto c = detail::decode_chunk_batch(payload, fds);
      if (!accepted(c)) break;
      if (c->chunks.empty() || c->chunks.size() != fds || fds > max_fds_per_message ||
          std::uint64_t{c->first_chunk} + c->chunks.size() > max_chunks)
        std::abort();
      for (const auto& chunk : c->chunks)
        if (chunk.size == 0) std::abort();
      break;
    }
  }
}

/// One message as the Linux transport sees it: the header checked against `fds`, then its payload.
void check_message(std::span<const std::byte> bytes, std::size_t fds) {
  using namespace membridge::ipc;
  const auto header = decode_header(bytes, fds);
  if (!header) {
    if (header.error().code() != membridge::errc::protocol_error) std::abort();
    return;
  }
  // Accepted: every invariant the channel relies on holds.
  if (header->magic != wire_magic || header->version != wire_version || header->reserved != 0) std::abort();
  if (header->payload_size != bytes.size() - header_size || header->payload_size > max_payload_size) std::abort();
  if (header->fd_count != fds || header->fd_count > max_fds_per_message) std::abort();
  if (to_string(header->type) == "unknown") std::abort();
  // Re-encoding what was accepted gives the same bytes.
  const auto again = encode_header(*header);
  for (std::size_t i = 0; i < header_size; ++i)
    if (again[i] != bytes[i]) std::abort();
  check_payload(header->type, bytes.subspan(header_size), fds);
}

/// The Windows transport: a pipe message is header + payload + fd_count handle values. An accepted
/// split has exactly fd_count values (<= the cap), taken from the end; what is left goes through
/// check_message's checks.
void check_pipe_message(std::span<const std::byte> bytes) {
  using namespace membridge::ipc;
  const auto split = split_handle_table(bytes);
  if (!accepted(split)) return;
  const std::size_t n = split->handle_values.size();
  if (n > max_fds_per_message || split->message.size() < header_size ||
      split->message.size() + n * handle_value_size != bytes.size() || split->message.data() != bytes.data())
    std::abort();
  const auto table = encode_handle_table(split->handle_values);
  for (std::size_t i = 0; i < table.size(); ++i)
    if (table[i] != bytes[split->message.size() + i]) std::abort();
  check_message(split->message, n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace membridge::ipc;
  if (size == 0) return 0;
  const std::size_t fds = data[0] % (max_fds_per_message + 4);  // also counts beyond the cap
  const std::span bytes(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  check_message(bytes, fds);
  check_pipe_message(bytes);
  return 0;
}
