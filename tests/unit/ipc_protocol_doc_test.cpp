// docs/protocol.md's example messages equal what membridge's encoder makes of the same values, byte
// for byte (header and payload), so a client written from the page speaks the protocol.
#include "ipc/detail/payload.hpp"

#include <membridge/ipc/wire.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using membridge::ipc::message_type;
namespace detail = membridge::ipc::detail;

/// Every `<!-- wire-example: NAME -->` of the page, with the hex bytes of the fenced block after it.
std::map<std::string, std::vector<std::uint8_t>> examples_in(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::map<std::string, std::vector<std::uint8_t>> out;
  std::string line;
  std::string name;
  bool in_block = false;
  const std::string marker = "<!-- wire-example: ";
  while (std::getline(in, line)) {
    if (!in_block && line.rfind(marker, 0) == 0) {
      name = line.substr(marker.size(), line.find(" -->") - marker.size());
      EXPECT_EQ(out.count(name), 0U) << "example " << name << " twice";
      out[name];
      continue;
    }
    if (!name.empty() && !in_block && line.rfind("```", 0) == 0) {
      in_block = true;
      continue;
    }
    if (in_block && line.rfind("```", 0) == 0) {
      in_block = false;
      name.clear();
      continue;
    }
    if (in_block) {
      std::istringstream hex(line);
      std::string byte;
      while (hex >> byte) out[name].push_back(static_cast<std::uint8_t>(std::stoul(byte, nullptr, 16)));
    }
  }
  return out;
}

/// The datagram membridge sends: the encoded header, then the payload.
std::vector<std::uint8_t> datagram(message_type type, const std::vector<std::byte>& payload, std::uint16_t fds) {
  membridge::ipc::message_header h;
  h.type = type;
  h.payload_size = static_cast<std::uint32_t>(payload.size());
  h.fd_count = fds;
  std::vector<std::uint8_t> out;
  for (const std::byte b : membridge::ipc::encode_header(h)) out.push_back(std::to_integer<std::uint8_t>(b));
  for (const std::byte b : payload) out.push_back(std::to_integer<std::uint8_t>(b));
  return out;
}

membridge::device_uuid example_uuid() {
  membridge::device_uuid id;
  for (std::size_t i = 0; i < id.bytes.size(); ++i) id.bytes[i] = static_cast<std::uint8_t>(0x10 + i);
  return id;
}

detail::buffer_header particles(std::uint64_t size, std::uint64_t generation, std::uint32_t chunks,
                                std::uint32_t first_new) {
  detail::buffer_header h;
  h.description.name = "particles";
  h.description.device = example_uuid();
  h.description.format = {"float4", 16};
  h.description.size = size;
  h.description.reserved_size = std::uint64_t{1} << 30U;
  h.description.generation = generation;
  h.chunk_count = chunks;
  h.first_new_chunk = first_new;
  return h;
}

TEST(ipc_protocol_doc, every_example_message_is_what_the_encoder_sends) {
  constexpr std::uint64_t mib = std::uint64_t{1} << 20U;
  const auto doc = examples_in(MEMBRIDGE_PROTOCOL_DOC);
  std::map<std::string, std::vector<std::uint8_t>> want;
  want["hello"] = datagram(message_type::hello,
                           detail::encode(detail::hello_payload{membridge::ipc::subscriber_role::consumer, "viewer-1"}), 0);
  want["welcome"] = datagram(
      message_type::welcome,
      detail::encode(detail::welcome_payload{"particles-sim", membridge::ipc::subscriber_role::consumer, 41, 3}), 0);
  membridge::ipc::semaphore_description sem;
  sem.name = "frames.produced";
  sem.device = example_uuid();
  sem.parameter = 3;
  want["resource_semaphore"] = datagram(message_type::resource, detail::encode(sem), 1);
  want["resource_buffer"] = datagram(message_type::resource, detail::encode(particles(48 * mib, 1, 3, 0), true), 0);
  detail::chunk_batch batch;
  batch.first_chunk = 0;
  batch.chunks = {{0, 32 * mib}, {32 * mib, 8 * mib}, {40 * mib, 8 * mib}};
  want["chunks"] = datagram(message_type::chunks, detail::encode(batch), 3);
  want["growth"] = datagram(message_type::growth, detail::encode(particles(64 * mib, 2, 4, 3), false), 0);
  want["frame"] = datagram(message_type::frame, detail::encode_frame(42), 0);
  want["goodbye"] = datagram(message_type::goodbye, detail::encode_goodbye("publisher stopping"), 0);

  EXPECT_EQ(doc.size(), want.size()) << "the page's examples and the test's differ in number";
  for (const auto& [name, bytes] : want) {
    const auto found = doc.find(name);
    ASSERT_NE(found, doc.end()) << "docs/protocol.md has no example '" << name << "'";
    EXPECT_EQ(found->second, bytes) << "example '" << name << "' differs from the encoder";
  }
}

TEST(ipc_protocol_doc, the_page_states_the_version_this_build_speaks) {
  std::ifstream in(MEMBRIDGE_PROTOCOL_DOC);
  std::stringstream text;
  text << in.rdbuf();
  const std::string title = "# The membridge wire protocol (version " + std::to_string(membridge::ipc::wire_version) + ")";
  EXPECT_EQ(text.str().rfind(title, 0), 0U) << "the page's title must name wire_version";
  EXPECT_NE(text.str().find("| 4 | 2 | version | " + std::to_string(membridge::ipc::wire_version) + " |"),
            std::string::npos);
}

}  // namespace
