// bench/ipc/support.hpp: what the parts of the cross-process benchmark share: checks of CUDA and
// membridge results, the monotonic clock both processes read, small CUDA RAII types, a watchdog,
// and the link to the second process (this binary re-executed in child mode, a SOCK_SEQPACKET
// socketpair on fd 3) with the fixed-size messages the two exchange.
#pragma once

#include "cuda_support.hpp"
#include "fixed_text.hpp"

#include <membridge/core/result.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/os/unique_fd.hpp>

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace membridge::bench::ipc_bench {

using bench::bench_failure;
using bench::check_cuda;
using bench::cuda_error_text;
using bench::device_unavailable;
using bench::ok_or_fail;
using bench::value_or_fail;
using bench::exit_failed;
using bench::exit_no_device;
using bench::exit_ok;
using bench::exit_usage;

/// Every wait of the benchmark for the other process (or a semaphore) gives up after this long.
inline constexpr std::chrono::seconds wait_timeout{20};

/// The argument that starts this binary in child mode (argv[1]); argv[2] is the CUDA device ordinal.
inline constexpr std::string_view child_flag = "--membridge-bench-child";

// ------------------------------------------------------------------------------------ failures ---



/// Checks a CUDA runtime call: on failure the benchmark ends with status 1 and a message naming
/// file:line, the call and the error.
#define MEMBRIDGE_IPC_BENCH_CUDA(...) ::membridge::bench::check_cuda((__VA_ARGS__), #__VA_ARGS__)

/// A publisher listening at `path` (named "membridge_bench_ipc"), the rest as defaults.
[[nodiscard]] ipc::publisher_options publisher_options_for(const std::string& path);

// --------------------------------------------------------------------------------------- clock ---

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the machine, so a timestamp
/// taken in the producer and one taken in the subscriber can be subtracted.
[[nodiscard]] std::int64_t monotonic_ns() noexcept;

/// Sleeps until CLOCK_MONOTONIC reaches `t_ns` (clock_nanosleep, TIMER_ABSTIME); returns at once
/// when it has passed.
void sleep_until_ns(std::int64_t t_ns) noexcept;

/// Microseconds in `ns` nanoseconds.
[[nodiscard]] inline double us(std::int64_t ns) noexcept { return static_cast<double>(ns) / 1000.0; }

// -------------------------------------------------------------------------------- CUDA objects ---


/// Device memory from cudaMalloc. Move-only.
class device_memory {
 public:
  device_memory() noexcept = default;
  /// cudaMalloc(`bytes`); a failure ends the benchmark.
  explicit device_memory(std::size_t bytes);
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;
  device_memory(device_memory&& other) noexcept : p_(std::exchange(other.p_, nullptr)) {}
  device_memory& operator=(device_memory&& other) noexcept;
  ~device_memory();
  template <class T = void>
  [[nodiscard]] T* get() const noexcept {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
};

/// Waits for `stream` on the host, polling, for at most wait_timeout; throws bench_failure naming
/// `what` on a timeout or an error (cudaStreamSynchronize has no timeout, and a stream behind a
/// semaphore nobody signals would wait forever).
void wait_stream(cudaStream_t stream, std::string_view what);

/// Throws bench_failure (a data check failed) unless the `bytes` at `p` hold pattern `seed` from
/// word `first_word` on.
void verify_pattern(const void* p, std::size_t bytes, std::uint32_t seed, std::string_view what,
                    std::uint64_t first_word = 0);

// ------------------------------------------------------------------------------------ watchdog ---

/// Records progress: the watchdog ends the process when nothing calls this for its limit.
void heartbeat() noexcept;

/// Names what the benchmark does now (for the watchdog's message) and beats.
void set_phase(std::string phase);

/// A thread that ends the process with exit status 1 (killing `child` first, if any) when no
/// heartbeat came for `limit`: the last resort against a CUDA launch blocked behind a semaphore wait
/// that is never resolved.
class watchdog {
 public:
  watchdog(std::chrono::seconds limit, pid_t child);
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;
  ~watchdog();

 private:
  std::jthread thread_;
};

// ------------------------------------------------------------------------------------ messages ---

/// What a message between the two processes is. Every message struct starts with its kind.
enum class msg_kind : std::uint32_t {
  // parent -> child
  attach_vmm = 1,     ///< attach_vmm_request
  attach_legacy = 2,  ///< attach_legacy_request
  growth_begin = 3,   ///< growth_request
  growth_verify = 4,  ///< growth_verify_request
  growth_end = 5,     ///< plain_request
  frames = 6,         ///< frames_request
  quit = 7,           ///< plain_request
  // child -> parent
  reply = 100,        ///< child_reply
  times = 101,        ///< times_message (after a frames run's reply)
};

/// Which API the consumer of (c) reads the slots with.
enum class consumer_api : std::uint32_t {
  vulkan = 0,  ///< vulkan_frame_consumer: per frame a copy of the slot's stamp and words (the goal's pair).
  cuda = 1,    ///< cuda_frame_consumer: per frame a kernel checking every word of the slot.
};

/// Longest socket path a request carries (sun_path holds 108 bytes with the NUL).
inline constexpr std::size_t path_capacity = 108;
/// Longest resource name a request carries (ipc::max_name_size + NUL).
inline constexpr std::size_t name_capacity = 65;

/// A request without fields (growth_end, quit).
struct plain_request {
  msg_kind kind = msg_kind::quit;
};

/// Attach the buffer `name` published at `path` (subscriber connect + sync::import_into_cuda) and
/// check that its `bytes` hold pattern `seed`, importing into CUDA device `device` (-1: the child's
/// own device; another one reaches the publisher's GPU over the peer link) and checking from there.
struct attach_vmm_request {
  msg_kind kind = msg_kind::attach_vmm;
  std::uint32_t seed = 0;
  std::uint64_t bytes = 0;
  std::int32_t device = -1;
  char path[path_capacity] = {};
  char name[name_capacity] = {};
};

/// Connect to the Unix socket `path`, receive a cudaIpcMemHandle there (it must equal `handle`), open
/// it (cudaIpcOpenMemHandle) and check that its `bytes` hold pattern `seed`.
struct attach_legacy_request {
  msg_kind kind = msg_kind::attach_legacy;
  std::uint32_t seed = 0;
  std::uint64_t bytes = 0;
  cudaIpcMemHandle_t handle{};
  char path[path_capacity] = {};
};

/// Attach the buffer `name` at `path` (untimed), check its `bytes` hold pattern `seed`, then follow
/// `steps` growths, timing each from the buffer_changed event to a kernel touching the new range.
struct growth_request {
  msg_kind kind = msg_kind::growth_begin;
  std::uint32_t seed = 0;
  std::uint64_t bytes = 0;
  std::uint32_t steps = 0;
  std::uint64_t touch_stride = 0;
  char path[path_capacity] = {};
  char name[name_capacity] = {};
};

/// Check that the first `size` bytes of the followed buffer hold the growth's pattern.
struct growth_verify_request {
  msg_kind kind = msg_kind::growth_verify;
  std::uint64_t size = 0;
};

/// Consume frames 0 .. total - 1 of the frame_publisher at `path` as its consumer, with `api`.
struct frames_request {
  msg_kind kind = msg_kind::frames;
  consumer_api api = consumer_api::vulkan;
  std::uint64_t total = 0;
  std::uint64_t warmup = 0;
  char path[path_capacity] = {};
};

/// The child's answer to any request (fields a request does not use stay 0).
struct child_reply {
  msg_kind kind = msg_kind::reply;
  std::int32_t status = 0;           ///< 0: ok; exit_no_device: no GPU; else failed (see message).
  std::int64_t t[4] = {};            ///< Durations or CLOCK_MONOTONIC timestamps, ns (per request).
  std::uint64_t size = 0;            ///< A view's size.
  std::uint64_t chunks = 0;          ///< A view's chunk count.
  unsigned long long wrong = 0;      ///< Words that differed from what was expected.
  std::uint64_t frames_seen = 0;     ///< Frames consumed.
  std::int64_t first_frame = -1;     ///< The first frame consumed.
  std::int64_t last_frame = -1;      ///< The last.
  std::int32_t increasing = 1;       ///< 1 when every frame was larger than the one before.
  char message[400] = {};
};

/// Per-frame CLOCK_MONOTONIC times of a frames run's consumer, sent after its reply in pieces:
/// `count` values of series `series` (0: told, 1: done) for frames first .. first + count - 1.
struct times_message {
  static constexpr std::size_t capacity = 1024;
  msg_kind kind = msg_kind::times;
  std::uint32_t series = 0;
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  std::int64_t ns[capacity] = {};
};

/// A connected SOCK_SEQPACKET socket to the other process; sends and receives the structs above.
class peer_link {
 public:
  peer_link() noexcept = default;
  explicit peer_link(os::unique_fd socket) noexcept : socket_(std::move(socket)) {}

  /// Sends `value` as one message.
  template <class T>
  void send(const T& value) const {
    static_assert(std::is_trivially_copyable_v<T>);
    send_bytes(&value, sizeof value);
  }

  /// Receives one message of type T (its kind must be `kind`) within `timeout`.
  template <class T>
  [[nodiscard]] T receive(msg_kind kind, std::chrono::milliseconds timeout = wait_timeout) const {
    static_assert(std::is_trivially_copyable_v<T>);
    const std::vector<std::byte> bytes = receive_bytes(sizeof(T), timeout);
    msg_kind got{};
    std::memcpy(&got, bytes.data(), sizeof got);
    if (got != kind || bytes.size() != sizeof(T))
      throw bench_failure("unexpected message from the other process (kind " +
                          std::to_string(static_cast<std::uint32_t>(got)) + ", " + std::to_string(bytes.size()) +
                          " bytes; expected kind " + std::to_string(static_cast<std::uint32_t>(kind)) + ")");
    T value;
    std::memcpy(&value, bytes.data(), sizeof value);
    return value;
  }

  /// The next message's kind, without taking it (waits up to `timeout`).
  [[nodiscard]] msg_kind peek_kind(std::chrono::milliseconds timeout = wait_timeout) const;

  [[nodiscard]] int native() const noexcept { return socket_.get(); }

 private:
  void send_bytes(const void* data, std::size_t size) const;
  [[nodiscard]] std::vector<std::byte> receive_bytes(std::size_t max, std::chrono::milliseconds timeout) const;

  os::unique_fd socket_;
};

/// The second process: this binary re-executed in child mode (`/proc/self/exe --membridge-bench-child
/// DEVICE`), its socket on fd 3, killed (SIGKILL) if this process dies (PR_SET_PDEATHSIG).
/// Destruction kills and reaps it if it is still running.
class child_process {
 public:
  /// Starts the child for CUDA device `device`.
  static child_process spawn(int device);

  child_process() noexcept = default;
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  child_process(child_process&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)), link_(std::move(other.link_)) {}
  child_process& operator=(child_process&&) = delete;
  ~child_process();

  [[nodiscard]] const peer_link& channel() const noexcept { return link_; }
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  /// Waits up to `timeout` for the child to exit; returns its status (128 + signal if killed), or
  /// -1 after killing it when it did not exit in time.
  int wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  peer_link link_;
};

/// In the child: its link to the parent (fd 3).
[[nodiscard]] peer_link parent_link();


}  // namespace membridge::bench::ipc_bench
