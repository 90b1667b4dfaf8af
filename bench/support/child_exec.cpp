// bench/support/child_exec.cpp: spawn_self, receive_from_other and reap_child (child_exec.hpp).
#include "child_exec.hpp"

#include "cuda_support.hpp"
#include "../../tests/support/fork_exec_self.hpp"  // shared with the tests' child processes

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

namespace membridge::bench {

pid_t spawn_self(std::vector<std::string> args, const os::unique_fd& child_end, int child_fd) {
  // Dies with the parent; the socket becomes child_fd.
  const pid_t pid = testing::fork_exec_self(std::move(args), child_end.get(), child_fd, testing::parent_death::kill);
  if (pid < 0) throw bench_failure(std::string("fork: ") + std::strerror(errno));
  return pid;
}

std::vector<std::byte> receive_from_other(int fd, std::size_t max, std::size_t min) {
  std::vector<std::byte> bytes(max + 1);  // one spare byte detects an oversized message
  ssize_t got = -1;
  do {
    got = ::recv(fd, bytes.data(), bytes.size(), 0);
  } while (got < 0 && errno == EINTR);
  if (got < 0) throw bench_failure(std::string("recv from the other process: ") + std::strerror(errno));
  if (got == 0) throw bench_failure("the other process went away (its socket closed)");
  if (static_cast<std::size_t>(got) < min) throw bench_failure("a short message from the other process");
  bytes.resize(static_cast<std::size_t>(got));
  return bytes;
}

int reap_child(pid_t pid, std::chrono::milliseconds timeout, signal_status on_signal) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status) && on_signal == signal_status::plus_128_signo) return 128 + WTERMSIG(status);
      return -1;
    }
    if (r < 0 || std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace membridge::bench
