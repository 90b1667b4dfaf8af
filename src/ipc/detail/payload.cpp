#include "payload.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace membridge::ipc::detail {

namespace {

class writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<std::byte>(v)); }
  void u16(std::uint16_t v) { put(v, 2); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void str(const std::string& s) {
    u16(static_cast<std::uint16_t>(s.size()));
    for (char c : s) out_.push_back(static_cast<std::byte>(c));
  }
  void uuid(const device_uuid& id) {
    for (std::uint8_t b : id.bytes) u8(b);
  }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  void put(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<std::byte>((v >> (8U * static_cast<unsigned>(i))) & 0xFFU));
  }
  std::vector<std::byte> out_;
};

// Reads fields in order; the first short read or bad value sets the error (later reads give 0).
class reader {
 public:
  reader(std::span<const std::byte> bytes, const char* what) : bytes_(bytes), what_(what) {}
  std::uint8_t u8(const char* field) { return static_cast<std::uint8_t>(get(1, field)); }
  std::uint16_t u16(const char* field) { return static_cast<std::uint16_t>(get(2, field)); }
  std::uint32_t u32(const char* field) { return static_cast<std::uint32_t>(get(4, field)); }
  std::uint64_t u64(const char* field) { return get(8, field); }
  std::string str(const char* field, std::size_t max) {
    const std::size_t n = u16(field);
    if (failed()) return {};
    if (n > max) {
      fail(std::string(field) + " is " + std::to_string(n) + " bytes, more than " + std::to_string(max));
      return {};
    }
    if (bytes_.size() - pos_ < n) {
      fail(std::string(field) + " runs past the payload");
      return {};
    }
    std::string s(n, '\0');
    std::memcpy(s.data(), bytes_.data() + pos_, n);
    pos_ += n;
    return s;
  }
  device_uuid uuid(const char* field) {
    device_uuid id;
    for (auto& b : id.bytes) b = u8(field);
    return id;
  }
  void fail(std::string why) {
    if (!error_) error_ = error(errc::protocol_error, "ipc::decode", std::string(what_) + ": " + std::move(why));
  }
  [[nodiscard]] bool failed() const noexcept { return error_.has_value(); }
  // Ends the decode: an earlier error, or bytes left over, is a protocol error.
  [[nodiscard]] result<void> finish() {
    if (!failed() && pos_ != bytes_.size())
      fail(std::to_string(bytes_.size() - pos_) + " unexpected bytes after the last field");
    if (error_) return *error_;
    return {};
  }

 private:
  std::uint64_t get(std::size_t n, const char* field) {
    if (failed()) return 0;
    if (bytes_.size() - pos_ < n) {
      fail(std::string("payload ends before ") + field);
      return 0;
    }
    std::uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8U) | std::to_integer<std::uint64_t>(bytes_[pos_ + i]);
    pos_ += n;
    return v;
  }
  std::span<const std::byte> bytes_;
  std::size_t pos_ = 0;
  const char* what_;
  std::optional<error> error_;
};

subscriber_role read_role(reader& r) {
  const auto v = r.u8("role");
  if (v != static_cast<std::uint8_t>(subscriber_role::observer) && v != static_cast<std::uint8_t>(subscriber_role::consumer))
    r.fail("unknown role " + std::to_string(v));
  return static_cast<subscriber_role>(v);
}

handle_kind read_handles(reader& r) {
  const auto v = r.u8("handle kind");
  if (v != static_cast<std::uint8_t>(handle_kind::opaque_fd) && v != static_cast<std::uint8_t>(handle_kind::opaque_win32))
    r.fail("unknown handle kind " + std::to_string(v));
  return static_cast<handle_kind>(v);
}

void read_kind(reader& r, resource_kind expected) {
  const auto v = r.u8("resource kind");
  if (v != static_cast<std::uint8_t>(expected)) r.fail("resource kind " + std::to_string(v) + " where another was expected");
}

}  // namespace

std::vector<std::byte> encode(const hello_payload& p) {
  writer w;
  w.u8(static_cast<std::uint8_t>(p.role));
  w.str(p.client_name);
  return w.take();
}

std::vector<std::byte> encode(const welcome_payload& p) {
  writer w;
  w.str(p.publisher_name);
  w.u8(static_cast<std::uint8_t>(p.granted));
  w.u8(p.last_frame ? 1 : 0);
  w.u64(p.last_frame.value_or(0));
  w.u32(p.resource_count);
  return w.take();
}

std::vector<std::byte> encode(const buffer_header& p, bool with_kind) {
  writer w;
  if (with_kind) w.u8(static_cast<std::uint8_t>(resource_kind::buffer));
  const buffer_description& d = p.description;
  w.str(d.name);
  w.uuid(d.device);
  w.u8(static_cast<std::uint8_t>(d.handles));
  w.str(d.format.name);
  w.u32(d.format.stride);
  w.u64(d.size);
  w.u64(d.reserved_size);
  w.u64(d.generation);
  w.u32(p.chunk_count);
  w.u32(p.first_new_chunk);
  return w.take();
}

std::vector<std::byte> encode(const chunk_batch& p) {
  writer w;
  w.u32(p.first_chunk);
  w.u32(static_cast<std::uint32_t>(p.chunks.size()));
  for (const buffer_chunk& c : p.chunks) {
    w.u64(c.offset);
    w.u64(c.size);
  }
  return w.take();
}

std::vector<std::byte> encode(const semaphore_description& p) {
  writer w;
  w.u8(static_cast<std::uint8_t>(resource_kind::semaphore));
  w.str(p.name);
  w.uuid(p.device);
  w.u8(static_cast<std::uint8_t>(p.handles));
  w.u64(p.parameter);
  return w.take();
}

std::vector<std::byte> encode_frame(std::uint64_t frame) {
  writer w;
  w.u64(frame);
  return w.take();
}

std::vector<std::byte> encode_goodbye(const std::string& reason) {
  writer w;
  w.str(reason.size() > 256 ? reason.substr(0, 256) : reason);
  return w.take();
}

result<hello_payload> decode_hello(std::span<const std::byte> bytes) {
  reader r(bytes, "hello");
  hello_payload p;
  p.role = read_role(r);
  p.client_name = r.str("client name", max_name_size);
  MEMBRIDGE_TRY(r.finish());
  return p;
}

result<welcome_payload> decode_welcome(std::span<const std::byte> bytes) {
  reader r(bytes, "welcome");
  welcome_payload p;
  p.publisher_name = r.str("publisher name", max_name_size);
  p.granted = read_role(r);
  const auto has_frame = r.u8("has frame");
  const auto frame = r.u64("last frame");
  if (has_frame > 1) r.fail("has frame is " + std::to_string(has_frame));
  if (has_frame == 1) p.last_frame = frame;
  p.resource_count = r.u32("resource count");
  MEMBRIDGE_TRY(r.finish());
  return p;
}

result<resource_kind> peek_resource_kind(std::span<const std::byte> bytes) {
  if (bytes.empty()) return error(errc::protocol_error, "ipc::decode", "resource: empty payload");
  const auto v = std::to_integer<std::uint8_t>(bytes[0]);
  if (v == static_cast<std::uint8_t>(resource_kind::buffer)) return resource_kind::buffer;
  if (v == static_cast<std::uint8_t>(resource_kind::semaphore)) return resource_kind::semaphore;
  return error(errc::protocol_error, "ipc::decode", "resource: unknown resource kind " + std::to_string(v));
}

result<buffer_header> decode_buffer_header(std::span<const std::byte> bytes, bool with_kind, std::size_t fds_received) {
  reader r(bytes, with_kind ? "buffer resource" : "growth");
  if (with_kind) read_kind(r, resource_kind::buffer);
  buffer_header p;
  buffer_description& d = p.description;
  d.name = r.str("name", max_name_size);
  d.device = r.uuid("device uuid");
  d.handles = read_handles(r);
  d.format.name = r.str("format name", max_name_size);
  d.format.stride = r.u32("format stride");
  d.size = r.u64("size");
  d.reserved_size = r.u64("reserved size");
  d.generation = r.u64("generation");
  p.chunk_count = r.u32("chunk count");
  p.first_new_chunk = r.u32("first new chunk");
  MEMBRIDGE_TRY(r.finish());
  const auto refuse = [&](const std::string& why) {
    return error(errc::protocol_error, "ipc::decode", "buffer '" + printable(d.name) + "': " + why);
  };
  if (!is_valid_resource_name(d.name)) return refuse("invalid name");
  if (fds_received != 0) return refuse("its header came with " + std::to_string(fds_received) + " fds instead of 0");
  if (p.chunk_count > max_chunks)
    return refuse("chunk count " + std::to_string(p.chunk_count) + " over " + std::to_string(max_chunks));
  if (p.first_new_chunk > p.chunk_count)
    return refuse("first new chunk " + std::to_string(p.first_new_chunk) + " past its " + std::to_string(p.chunk_count) +
                  " chunks");
  if (with_kind && p.first_new_chunk != 0) return refuse("a new buffer whose chunks do not start at 0");
  if (d.size > d.reserved_size)
    return refuse("size " + std::to_string(d.size) + " over the reserved size " + std::to_string(d.reserved_size));
  return p;
}

result<chunk_batch> decode_chunk_batch(std::span<const std::byte> bytes, std::size_t fds_received) {
  reader r(bytes, "chunks");
  chunk_batch p;
  p.first_chunk = r.u32("first chunk");
  const std::uint32_t count = r.u32("chunk count");
  if (count == 0 || count > max_fds_per_message)
    r.fail("chunk count " + std::to_string(count) + " outside 1.." + std::to_string(max_fds_per_message));
  if (!r.failed()) {
    p.chunks.resize(count);
    for (buffer_chunk& c : p.chunks) {
      c.offset = r.u64("chunk offset");
      c.size = r.u64("chunk size");
    }
  }
  MEMBRIDGE_TRY(r.finish());
  if (count != fds_received)
    return error(errc::protocol_error, "ipc::decode",
                 "chunks: " + std::to_string(count) + " chunks came with " + std::to_string(fds_received) + " fds");
  if (std::uint64_t{p.first_chunk} + count > max_chunks)
    return error(errc::protocol_error, "ipc::decode",
                 "chunks: chunks " + std::to_string(p.first_chunk) + "+" + std::to_string(count) + " past " +
                     std::to_string(max_chunks));
  for (const buffer_chunk& c : p.chunks)
    if (c.size == 0) return error(errc::protocol_error, "ipc::decode", "chunks: a chunk of size 0");
  return p;
}

result<semaphore_description> decode_semaphore(std::span<const std::byte> bytes, std::size_t fds_received) {
  reader r(bytes, "semaphore resource");
  read_kind(r, resource_kind::semaphore);
  semaphore_description d;
  d.name = r.str("name", max_name_size);
  d.device = r.uuid("device uuid");
  d.handles = read_handles(r);
  d.parameter = r.u64("parameter");
  MEMBRIDGE_TRY(r.finish());
  if (!is_valid_resource_name(d.name))
    return error(errc::protocol_error, "ipc::decode", "semaphore: invalid name '" + printable(d.name) + "'");
  if (fds_received != 1)
    return error(errc::protocol_error, "ipc::decode",
                 "semaphore '" + d.name + "' came with " + std::to_string(fds_received) + " fds instead of 1");
  return d;
}

result<std::uint64_t> decode_frame(std::span<const std::byte> bytes) {
  reader r(bytes, "frame");
  const std::uint64_t frame = r.u64("frame");
  MEMBRIDGE_TRY(r.finish());
  return frame;
}

result<std::string> decode_goodbye(std::span<const std::byte> bytes) {
  reader r(bytes, "goodbye");
  std::string reason = r.str("reason", 256);
  MEMBRIDGE_TRY(r.finish());
  return reason;
}

std::string printable(std::string_view text) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(ch);
    } else {
      out += "\\x";
      out.push_back(digits[c >> 4U]);
      out.push_back(digits[c & 0xFU]);
    }
  }
  return out;
}

message make_message(message_type type, std::vector<std::byte> payload) {
  message m;
  m.type = type;
  m.payload = std::move(payload);
  return m;
}

std::vector<outgoing_ptr> buffer_messages(message_type type, const buffer_description& d,
                                          std::span<const shared_fd> fds, std::size_t first_new) {
  std::vector<outgoing_ptr> out;
  out.reserve(1 + (d.chunks.size() - first_new + max_fds_per_message - 1) / max_fds_per_message);
  const bool resource = type == message_type::resource;
  buffer_header h;
  h.description.name = d.name;
  h.description.device = d.device;
  h.description.handles = d.handles;
  h.description.format = d.format;
  h.description.size = d.size;
  h.description.reserved_size = d.reserved_size;
  h.description.generation = d.generation;
  h.chunk_count = static_cast<std::uint32_t>(d.chunks.size());
  h.first_new_chunk = static_cast<std::uint32_t>(first_new);
  out.push_back(std::make_shared<const outgoing>(outgoing{resource ? message_type::resource : message_type::growth,
                                                          encode(h, resource), {}}));
  for (std::size_t next = first_new; next < d.chunks.size(); next += max_fds_per_message) {
    const std::size_t n = std::min(max_fds_per_message, d.chunks.size() - next);
    chunk_batch b;
    b.first_chunk = static_cast<std::uint32_t>(next);
    b.chunks.assign(d.chunks.begin() + static_cast<std::ptrdiff_t>(next),
                    d.chunks.begin() + static_cast<std::ptrdiff_t>(next + n));
    outgoing m{message_type::chunks, encode(b), {}};
    m.fds.assign(fds.begin() + static_cast<std::ptrdiff_t>(next), fds.begin() + static_cast<std::ptrdiff_t>(next + n));
    out.push_back(std::make_shared<const outgoing>(std::move(m)));
  }
  return out;
}

}  // namespace membridge::ipc::detail
