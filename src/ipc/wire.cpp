#include <membridge/ipc/wire.hpp>

#include <string>

namespace membridge::ipc {

namespace {

constexpr const char* decode_call = "ipc::decode_header";

void put16(std::byte* out, std::uint16_t v) noexcept {
  out[0] = static_cast<std::byte>(v & 0xFFU);
  out[1] = static_cast<std::byte>(v >> 8U);
}

void put32(std::byte* out, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::byte>((v >> (8U * static_cast<unsigned>(i))) & 0xFFU);
}

std::uint16_t get16(const std::byte* in) noexcept {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(in[0]) | (std::to_integer<unsigned>(in[1]) << 8U));
}

std::uint32_t get32(const std::byte* in) noexcept {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8U) | std::to_integer<std::uint32_t>(in[i]);
  return v;
}

bool known(std::uint16_t type) noexcept {
  return type >= static_cast<std::uint16_t>(message_type::hello) &&
         type <= static_cast<std::uint16_t>(message_type::chunks);
}

error refuse(std::string what) { return error(errc::protocol_error, decode_call, std::move(what)); }

}  // namespace

std::string_view to_string(message_type type) noexcept {
  switch (type) {
    case message_type::hello: return "hello";
    case message_type::welcome: return "welcome";
    case message_type::resource: return "resource";
    case message_type::growth: return "growth";
    case message_type::frame: return "frame";
    case message_type::goodbye: return "goodbye";
    case message_type::chunks: return "chunks";
  }
  return "unknown";
}

std::array<std::byte, header_size> encode_header(const message_header& header) noexcept {
  std::array<std::byte, header_size> out{};
  put32(out.data(), header.magic);
  put16(out.data() + 4, header.version);
  put16(out.data() + 6, static_cast<std::uint16_t>(header.type));
  put32(out.data() + 8, header.payload_size);
  put16(out.data() + 12, header.fd_count);
  put16(out.data() + 14, header.reserved);
  return out;
}

result<message_header> decode_header(std::span<const std::byte> bytes, std::size_t fds_received) {
  if (bytes.size() < header_size)
    return refuse("a message of " + std::to_string(bytes.size()) + " bytes is shorter than the " +
                  std::to_string(header_size) + "-byte header");
  message_header h;
  h.magic = get32(bytes.data());
  h.version = get16(bytes.data() + 4);
  const std::uint16_t type = get16(bytes.data() + 6);
  h.payload_size = get32(bytes.data() + 8);
  h.fd_count = get16(bytes.data() + 12);
  h.reserved = get16(bytes.data() + 14);
  if (h.magic != wire_magic) return refuse("bad magic " + std::to_string(h.magic) + ": not a membridge peer");
  if (h.version != wire_version)
    return refuse("protocol version " + std::to_string(h.version) + ", this build speaks " +
                  std::to_string(wire_version));
  if (!known(type)) return refuse("unknown message type " + std::to_string(type));
  h.type = static_cast<message_type>(type);
  if (h.reserved != 0) return refuse("reserved header field is " + std::to_string(h.reserved) + ", not 0");
  if (h.payload_size > max_payload_size)
    return refuse("payload of " + std::to_string(h.payload_size) + " bytes exceeds the cap of " +
                  std::to_string(max_payload_size));
  if (h.payload_size != bytes.size() - header_size)
    return refuse("header says " + std::to_string(h.payload_size) + " payload bytes, " +
                  std::to_string(bytes.size() - header_size) + " arrived");
  if (h.fd_count > max_fds_per_message)
    return refuse("header says " + std::to_string(h.fd_count) + " fds, more than the cap of " +
                  std::to_string(max_fds_per_message));
  if (h.fd_count != fds_received)
    return refuse("header says " + std::to_string(h.fd_count) + " fds, " + std::to_string(fds_received) +
                  " arrived");
  return h;
}

result<handle_table_split> split_handle_table(std::span<const std::byte> bytes) {
  if (bytes.size() < header_size)
    return refuse("a message of " + std::to_string(bytes.size()) + " bytes is shorter than the " +
                  std::to_string(header_size) + "-byte header");
  const std::size_t count = get16(bytes.data() + 12);
  if (count > max_fds_per_message)
    return refuse("header says " + std::to_string(count) + " handles, more than the cap of " +
                  std::to_string(max_fds_per_message));
  const std::size_t table = count * handle_value_size;
  if (bytes.size() - header_size < table)
    return refuse("header says " + std::to_string(count) + " handles, the message has only " +
                  std::to_string(bytes.size() - header_size) + " bytes after its header");
  handle_table_split out;
  out.message = bytes.first(bytes.size() - table);
  out.handle_values.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::byte* at = bytes.data() + out.message.size() + i * handle_value_size;
    out.handle_values.push_back(static_cast<std::uint64_t>(get32(at)) | (static_cast<std::uint64_t>(get32(at + 4)) << 32U));
  }
  return out;
}

std::vector<std::byte> encode_handle_table(std::span<const std::uint64_t> values) {
  std::vector<std::byte> out(values.size() * handle_value_size);
  for (std::size_t i = 0; i < values.size(); ++i) {
    put32(out.data() + i * handle_value_size, static_cast<std::uint32_t>(values[i] & 0xFFFFFFFFU));
    put32(out.data() + i * handle_value_size + 4, static_cast<std::uint32_t>(values[i] >> 32U));
  }
  return out;
}

result<void> validate_outgoing(const message& m) {
  constexpr const char* call = "ipc::validate_outgoing";
  if (!known(static_cast<std::uint16_t>(m.type)))
    return error(errc::invalid_argument, call, "unknown message type " + std::to_string(static_cast<int>(m.type)));
  if (m.payload.size() > max_payload_size)
    return error(errc::invalid_argument, call,
                 "payload of " + std::to_string(m.payload.size()) + " bytes exceeds the cap of " +
                     std::to_string(max_payload_size));
  if (m.fds.size() > max_fds_per_message)
    return error(errc::invalid_argument, call,
                 std::to_string(m.fds.size()) + " fds exceed the cap of " + std::to_string(max_fds_per_message));
  for (const auto& fd : m.fds)
    if (!fd.valid()) return error(errc::invalid_argument, call, "the message carries an invalid fd");
  return ok();
}

}  // namespace membridge::ipc
