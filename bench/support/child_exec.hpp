// bench/support/child_exec.hpp: the benchmarks' second process: this binary re-executed in a
// child role with a socket as a known fd, dying with its parent, and reaped with a deadline.
#pragma once

#include <membridge/os/unique_fd.hpp>

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace membridge::bench {

/// Forks and re-executes this binary (/proc/self/exe) with `args` (args[0] is the program name it
/// sees), `child_end` as its fd `child_fd` (close-on-exec cleared), killed when the parent dies.
/// Returns the child's pid; throws bench_failure when fork fails. The child exits 91 when it cannot
/// place the fd, 92 when exec fails, 93 when its parent already died.
/// Ownership: `child_end` stays the caller's (the child gets its own copy); close it after the call.
[[nodiscard]] pid_t spawn_self(std::vector<std::string> args, const os::unique_fd& child_end, int child_fd);

/// Receives one message of at most `max` bytes from the other process on `fd` (retrying on EINTR) into
/// a buffer with one byte to spare, so a larger message shows up as longer than `max`. Throws
/// bench_failure when recv fails, the socket closed, or the message is shorter than `min` bytes.
[[nodiscard]] std::vector<std::byte> receive_from_other(int fd, std::size_t max, std::size_t min);

/// How reap_child reports a child that ended on a signal.
enum class signal_status : std::uint8_t {
  minus_one = 0,       ///< -1, as for a child that was killed past its deadline.
  plus_128_signo = 1,  ///< 128 + the signal's number, as a shell reports it.
};

/// Waits up to `timeout` for `pid` to exit (polling every 5 ms); kills it (SIGKILL) and returns -1
/// past that or when waitpid fails. Returns its exit status when it exited, and for a signal what
/// `on_signal` says.
[[nodiscard]] int reap_child(pid_t pid, std::chrono::milliseconds timeout,
                             signal_status on_signal = signal_status::minus_one);

}  // namespace membridge::bench
