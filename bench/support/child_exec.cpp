// bench/support/child_exec.cpp: spawn_self, receive_from_other and reap_child (child_exec.hpp).
#include "child_exec.hpp"

#include "cuda_support.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

namespace membridge::bench {

pid_t spawn_self(std::vector<std::string> args, const os::unique_fd& child_end, int child_fd) {
  std::vector<char*> argv;  // built before fork: the child makes only async-signal-safe calls
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw bench_failure(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Only async-signal-safe calls until exec. Die with the parent; the socket becomes child_fd.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(93);
    if (child_end.get() == child_fd) {
      if (::fcntl(child_fd, F_SETFD, 0) != 0) ::_exit(91);
    } else if (::dup2(child_end.get(), child_fd) < 0) {
      ::_exit(91);
    }
    ::execv("/proc/self/exe", argv.data());
    ::_exit(92);
  }
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
