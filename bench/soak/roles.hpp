// bench/soak/roles.hpp: the soak's processes. The binary without --role is the orchestrator; it
// starts itself again as the producer, the viewers and (twice) the memory probe. Each child tells
// the orchestrator how it is doing in lines on its stdout:
//   progress frames=F errors=E sessions=S resizes=R   (every ~100 ms; counts since it started)
//   error <text>                                       (a data or call failure; counted once)
//   fds base=B end=E                                   (at an orderly exit: fd counts to compare)
//   free=BYTES                                         (the memory probe: cuMemGetInfo's free bytes)
#pragma once

#include <csignal>
#include <cstdint>
#include <string>

namespace membridge::bench::soak {

/// What a child role is told on its command line.
struct role_args {
  std::string socket;          ///< The producer's socket path.
  int id = 0;                  ///< The viewer's number (0, 1).
  std::uint64_t seed = 1;      ///< The producer's resize schedule.
  std::uint64_t max_mib = 256;  ///< The largest buffer the producer grows to.
};

/// Set by SIGTERM: the role finishes what it does, reports and exits 0.
inline volatile std::sig_atomic_t stop_requested = 0;

/// Installs the SIGTERM handler that sets stop_requested.
void catch_sigterm();

/// Open fds of this process (/proc/self/fd entries, the directory's own fd left out).
[[nodiscard]] int open_fd_count();

/// Writes one report line to stdout and flushes it.
void report_line(const std::string& line);

/// The roles; each returns the process's exit status.
int run_producer(const role_args& a);
int run_viewer(const role_args& a);
int run_memory_probe();

}  // namespace membridge::bench::soak
