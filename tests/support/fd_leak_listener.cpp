#include "fd_leak_listener.hpp"

#include <cerrno>
#include <cstdlib>
#include <dirent.h>
#include <string>
#include <unistd.h>

namespace membridge::testing {

std::map<int, std::string> open_fds() {
  std::map<int, std::string> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  const int own = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const int fd = std::atoi(entry->d_name);
    if (fd == own) continue;
    char target[512] = {};
    const std::string link = std::string("/proc/self/fd/") + entry->d_name;
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    fds[fd] = n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string("?");
  }
  ::closedir(dir);
  return fds;
}

void fd_leak_listener::OnTestStart(const ::testing::TestInfo& /*info*/) { before_ = open_fds(); }

void fd_leak_listener::OnTestEnd(const ::testing::TestInfo& info) {
  if (info.result() != nullptr && info.result()->Skipped()) return;
  std::string leaked;
  for (const auto& [fd, target] : open_fds()) {
    if (before_.count(fd) != 0) continue;
    leaked += " fd " + std::to_string(fd) + " -> " + target + ";";
    ::close(fd);
  }
  // End events run in reverse listener order, so this failure is recorded before the printers run.
  if (!leaked.empty()) ADD_FAILURE() << "file descriptors leaked by " << info.test_suite_name() << "." << info.name() << ":" << leaked;
}

}  // namespace membridge::testing
