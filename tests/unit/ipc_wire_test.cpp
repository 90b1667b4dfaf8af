// unit tier: the ipc header codec: round trips and every malformed field refused as protocol_error.
#include <membridge/ipc/wire.hpp>

#include <gtest/gtest.h>

#include <algorithm>

#include <sys/mman.h>

#include <vector>

namespace membridge::ipc {
namespace {

std::vector<std::byte> datagram(const message_header& h, std::size_t payload) {
  const auto head = encode_header(h);
  // Sized first, then the header copied in (constructing from the array and resizing trips a GCC 12
  // -Warray-bounds false positive at -O3).
  std::vector<std::byte> out(header_size + payload, std::byte{0x5A});
  std::copy(head.begin(), head.end(), out.begin());
  return out;
}

message_header header(message_type type, std::uint32_t payload, std::uint16_t fds) {
  message_header h;
  h.type = type;
  h.payload_size = payload;
  h.fd_count = fds;
  return h;
}

TEST(ipc_wire, a_header_round_trips_through_its_bytes) {
  const auto h = header(message_type::growth, 1234, 3);
  const auto bytes = datagram(h, 1234);
  EXPECT_EQ(std::to_integer<int>(bytes[0]), 'M');  // little-endian magic reads "MBRG"
  EXPECT_EQ(std::to_integer<int>(bytes[3]), 'G');
  auto decoded = decode_header(bytes, 3);
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->type, message_type::growth);
  EXPECT_EQ(decoded->payload_size, 1234U);
  EXPECT_EQ(decoded->fd_count, 3U);
  EXPECT_EQ(to_string(decoded->type), "growth");
}

void expect_refused(std::span<const std::byte> bytes, std::size_t fds, std::string_view needle) {
  auto decoded = decode_header(bytes, fds);
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().code(), errc::protocol_error);
  EXPECT_NE(decoded.error().message().find(needle), std::string::npos) << decoded.error().message();
}

TEST(ipc_wire, every_malformed_field_is_a_protocol_error) {
  auto h = header(message_type::frame, 8, 0);
  auto bad_magic = h;
  bad_magic.magic = 0xDEADBEEF;
  expect_refused(datagram(bad_magic, 8), 0, "magic");
  auto bad_version = h;
  bad_version.version = wire_version + 1;
  expect_refused(datagram(bad_version, 8), 0, "version");
  auto bad_type = h;
  bad_type.type = static_cast<message_type>(99);
  expect_refused(datagram(bad_type, 8), 0, "type");
  auto zero_type = h;
  zero_type.type = static_cast<message_type>(0);
  expect_refused(datagram(zero_type, 8), 0, "type");
  auto reserved = h;
  reserved.reserved = 1;
  expect_refused(datagram(reserved, 8), 0, "reserved");
  expect_refused(datagram(h, 7), 0, "arrived");                                  // shorter payload
  expect_refused(datagram(h, 9), 0, "arrived");                                  // longer payload
  expect_refused(datagram(header(message_type::frame, max_payload_size + 1, 0), 0), 0, "cap");
  expect_refused(datagram(header(message_type::resource, 0, 2), 0), 1, "fds");   // fewer fds came
  expect_refused(datagram(header(message_type::resource, 0, 1), 0), 2, "fds");   // more fds came
  expect_refused(datagram(header(message_type::resource, 0, max_fds_per_message + 1), 0), max_fds_per_message + 1,
                 "cap");
  const auto short_bytes = datagram(h, 8);
  expect_refused(std::span(short_bytes).first(header_size - 1), 0, "shorter");
  expect_refused({}, 0, "shorter");
}

TEST(ipc_wire, outgoing_messages_are_checked_against_the_caps) {
  message m;
  m.type = message_type::resource;
  m.payload.resize(max_payload_size);
  EXPECT_TRUE(validate_outgoing(m));
  m.payload.resize(max_payload_size + 1);
  EXPECT_EQ(validate_outgoing(m).error().code(), errc::invalid_argument);
  m.payload.clear();
  m.fds.emplace_back();  // an empty (invalid) fd
  EXPECT_EQ(validate_outgoing(m).error().code(), errc::invalid_argument);
  m.fds.clear();
  for (std::size_t i = 0; i <= max_fds_per_message; ++i)
    m.fds.push_back(os::unique_fd::from_native(::memfd_create("wire-test", MFD_CLOEXEC)));
  EXPECT_EQ(validate_outgoing(m).error().code(), errc::invalid_argument);
  m.fds.pop_back();
  EXPECT_TRUE(validate_outgoing(m));
  m.type = static_cast<message_type>(42);
  EXPECT_EQ(validate_outgoing(m).error().code(), errc::invalid_argument);
}

}  // namespace
}  // namespace membridge::ipc
