// libFuzzer target for the ipc message parser (ipc::decode_header): any bytes, any fd count. The
// parser must never crash, read out of bounds (ASan) or accept a header that breaks its own rules.
#include <membridge/ipc/wire.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace membridge::ipc;
  if (size == 0) return 0;
  const std::size_t fds = data[0] % (max_fds_per_message + 4);  // also counts beyond the cap
  const std::span bytes(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  const auto header = decode_header(bytes, fds);
  if (!header) {
    if (header.error().code() != membridge::errc::protocol_error) std::abort();
    return 0;
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
  return 0;
}
