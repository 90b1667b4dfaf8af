// tests/support/fork_exec_self.hpp: this binary re-executed in a child process with a socket as a known
// fd. Header-only and POSIX only: the two-process tests (child_process.cpp) and the benchmarks'
// second process (bench/support/child_exec.cpp) both start their children with it.
#pragma once

#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <fcntl.h>
#include <string>
#include <vector>

namespace membridge::testing {

/// What a child started by fork_exec_self() does when its parent dies first.
enum class parent_death : std::uint8_t {
  ignore = 0,  ///< Nothing: it runs on.
  kill = 1,    ///< It is killed (SIGKILL, PR_SET_PDEATHSIG); it exits 93 if the parent died before that was set.
};

/// Forks and re-executes this binary (/proc/self/exe) with `args` (args[0] is the program name it
/// sees) and `child_end` as its fd `child_fd` (close-on-exec cleared). The child makes only
/// async-signal-safe calls before exec; it exits 91 when it cannot place the fd, 92 when exec fails.
/// Returns the child's pid, or -1 with errno set when fork fails.
/// Ownership: `child_end` stays the caller's (the child gets its own copy); close it after the call.
[[nodiscard]] inline pid_t fork_exec_self(std::vector<std::string> args, int child_end, int child_fd,
                                          parent_death on_parent_death) {
  std::vector<char*> argv;  // built before fork: the child makes only async-signal-safe calls
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (on_parent_death == parent_death::kill) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(93);
  }
  // dup2 gives child_fd without close-on-exec; if the socket already is child_fd, clear the flag instead.
  if (child_end == child_fd) {
    if (::fcntl(child_fd, F_SETFD, 0) != 0) ::_exit(91);
  } else if (::dup2(child_end, child_fd) < 0) {
    ::_exit(91);
  }
  ::execv("/proc/self/exe", argv.data());
  ::_exit(92);
}

}  // namespace membridge::testing
