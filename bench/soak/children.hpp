// bench/soak/children.hpp: the orchestrator's child processes: this binary started again in a role
// (fork + exec of /proc/self/exe), with its stdout on a pipe the orchestrator reads line by line.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace membridge::bench::soak {

/// What one child process reported (roles.hpp: the line protocol).
struct child_report {
  std::uint64_t frames = 0;
  std::uint64_t errors = 0;
  std::uint64_t sessions = 0;
  std::uint64_t resizes = 0;
  bool ready = false;
  bool has_fds = false;
  int fds_base = 0;
  int fds_end = 0;
  bool has_free = false;
  std::uint64_t free_bytes = 0;
  std::vector<std::string> error_lines;  ///< The first few "error" lines.
};

/// A running child. Move-only in spirit: the orchestrator keeps them in place.
struct child {
  pid_t pid = -1;
  int out = -1;           ///< Read end of its stdout.
  std::string role;       ///< "producer", "viewer 0", ...
  std::string pending;    ///< A partial line.
  child_report report;
  bool exited = false;
  int status = 0;         ///< waitpid status once exited.
  std::chrono::steady_clock::time_point last_progress = std::chrono::steady_clock::now();
};

/// Starts `/proc/self/exe args...` with stdout on a pipe. Throws bench_failure when it cannot.
[[nodiscard]] child spawn(const std::string& role, const std::vector<std::string>& args);

/// Reads what `c` wrote so far (non-blocking) and applies whole lines to its report.
void drain_output(child& c);

/// Reaps `c` if it exited (non-blocking); true when it has.
bool reap(child& c);

/// Sends `signal`, then waits up to `limit` for the exit, reading its output meanwhile.
/// Returns false when it did not exit in time (it is then killed with SIGKILL and reaped).
bool stop_child(child& c, int signal, std::chrono::milliseconds limit);

}  // namespace membridge::bench::soak
