// Private (Linux): the state of a Unix socket channel and listener beyond their fd and path.
#pragma once

#include <cstdint>
#include <vector>

namespace membridge::ipc::detail {

/// A Unix socket channel needs nothing beyond its fd (never allocated).
struct channel_platform {};

/// A listener's uid rule and the socket file it bound (unlinked only while it is still that file).
struct listener_platform {
  std::vector<std::uint32_t> allowed_uids;
  std::uint64_t file_dev = 0;
  std::uint64_t file_ino = 0;
};

}  // namespace membridge::ipc::detail
