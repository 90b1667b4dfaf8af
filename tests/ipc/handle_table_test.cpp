// The Windows transport's handle table codec (ipc::split_handle_table, ipc::encode_handle_table) is
// platform-independent: checked here on Linux too, so a change to it fails without Wine. The pipe
// itself is tested under Wine (tests/windows/ipc_pipe_test.cpp).
#include <membridge/ipc/wire.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

namespace ipc = membridge::ipc;

std::vector<std::byte> pipe_message(std::uint16_t fd_count, std::size_t payload, const std::vector<std::uint64_t>& table) {
  ipc::message_header h;
  h.type = ipc::message_type::chunks;
  h.payload_size = static_cast<std::uint32_t>(payload);
  h.fd_count = fd_count;
  const auto head = ipc::encode_header(h);
  std::vector<std::byte> out(head.begin(), head.end());
  for (std::size_t i = 0; i < payload; ++i) out.push_back(static_cast<std::byte>(i * 7U));
  const auto t = ipc::encode_handle_table(table);
  out.insert(out.end(), t.begin(), t.end());
  return out;
}

TEST(ipc_handle_table, values_are_u64_little_endian_after_the_payload) {
  const std::vector<std::uint64_t> values{0x1122334455667788ULL, 0x4C};
  const auto table = ipc::encode_handle_table(values);
  ASSERT_EQ(table.size(), 2 * ipc::handle_value_size);
  EXPECT_EQ(table[0], std::byte{0x88});
  EXPECT_EQ(table[7], std::byte{0x11});
  EXPECT_EQ(table[8], std::byte{0x4C});
  EXPECT_EQ(table[15], std::byte{0});

  const auto bytes = pipe_message(2, 5, values);
  const auto split = ipc::split_handle_table(bytes);
  ASSERT_TRUE(split) << split.error().message();
  EXPECT_EQ(split->handle_values, values);
  ASSERT_EQ(split->message.size(), ipc::header_size + 5);
  const auto header = ipc::decode_header(split->message, split->handle_values.size());
  ASSERT_TRUE(header) << header.error().message();
  EXPECT_EQ(header->payload_size, 5U);
  EXPECT_EQ(header->fd_count, 2U);
}

TEST(ipc_handle_table, a_table_that_cannot_be_trusted_yields_no_values) {
  for (const auto& bytes : {pipe_message(17, 0, std::vector<std::uint64_t>(17, 4)),  // over the cap
                            pipe_message(3, 0, {4, 8}),                               // table cut short
                            std::vector<std::byte>(ipc::header_size - 1)}) {          // no header
    const auto split = ipc::split_handle_table(bytes);
    ASSERT_FALSE(split);
    EXPECT_EQ(split.error().code(), membridge::errc::protocol_error);
  }
  // A table that fits but a header that lies about the payload: split, then refused by the validator.
  auto lying = pipe_message(1, 4, {0x44});
  lying[8] = std::byte{9};  // payload_size 9, 4 bytes follow
  const auto split = ipc::split_handle_table(lying);
  ASSERT_TRUE(split);
  EXPECT_EQ(split->handle_values, std::vector<std::uint64_t>{0x44}) << "owned (and closed) by a Windows receiver";
  EXPECT_FALSE(ipc::decode_header(split->message, 1));
}

}  // namespace
