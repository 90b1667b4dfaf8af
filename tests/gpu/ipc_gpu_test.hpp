// gpu tier, ipc: what ipc_gpu_test.cpp and consumers_gpu_test.cpp share: the frame ring's layout,
// helpers, the parent <-> child messages (the child roles live in ipc_gpu_test.cpp; every role
// answers with `reply`) and the fixtures (a temporary socket directory; a frame_publisher on a
// Vulkan context of the CUDA GPU).
#pragma once

#include "child_process.hpp"
#include "fd_leak_listener.hpp"
#include "gpu_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/external_semaphore.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/imported_buffer.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/ipc/resource.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/sync/frame_publisher.hpp>
#include <membridge/sync/ipc_buffers.hpp>
#include <membridge/sync/same_gpu.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace membridge::testing {
namespace {

using namespace membridge::literals;
using namespace std::chrono_literals;

// ------------------------------------------------------------------------------- shared setup ---

/// The frame ring of tests 2 and 3: `frame_slots` slots of `slot_bytes`; frame n fills slot n % 3
/// with the 32-bit word n.
constexpr std::uint32_t frame_slots = 3;
constexpr std::size_t slot_bytes = 1_MiB;
constexpr const char* slots_name = "slots";
constexpr const char* data_name = "data";

/// A private temporary directory (0700) for the test's socket, removed with its contents.
struct temp_dir {
  std::string path;
  temp_dir() {
    std::string tmpl = "/tmp/membridge-ipc-gpu-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path = tmpl;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

/// Polls `done` every 5 ms until it holds or `timeout` passes; returns its last answer.
inline bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(5ms);
  }
}

/// Runs a function when it goes out of scope.
struct scope_exit {
  explicit scope_exit(std::function<void()> f) : run(std::move(f)) {}
  std::function<void()> run;
  scope_exit(const scope_exit&) = delete;
  scope_exit& operator=(const scope_exit&) = delete;
  ~scope_exit() { run(); }
};

/// Waits for `stream` without blocking forever: polls cudaStreamQuery until `timeout`.
/// Returns cudaErrorNotReady when the stream is still busy then (a stalled producer).
inline cudaError_t wait_stream(cudaStream_t stream, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const cudaError_t rc = cudaStreamQuery(stream);
    if (rc != cudaErrorNotReady || std::chrono::steady_clock::now() >= deadline) return rc;
    std::this_thread::sleep_for(200us);
  }
}

// ------------------------------------------------------------------- parent <-> child messages ---

/// What the parent asks a child to do (the growth subscriber and the producer roles).
enum class op : std::int32_t {
  check = 1,   ///< Import the buffer (first time) and check `size` bytes hold pattern `seed`.
  follow = 2,  ///< Wait for buffer_changed, follow_growth, check `size` bytes hold pattern `seed`.
  write = 3,   ///< Write pattern `seed` to [offset, offset + bytes) (word offset/4 onwards).
  quit = 4,    ///< Answer and exit 0.
};

struct command {
  op what = op::quit;
  std::uint32_t seed = 0;
  std::uint64_t size = 0;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

/// What a child answers (every role; fields a role does not use stay 0).
struct reply {
  std::int32_t status = 0;              ///< 0: ok; else the step that failed (see message).
  std::uint64_t size = 0;               ///< The imported view's size().
  std::uint64_t chunks = 0;             ///< Its chunk_count().
  std::uint64_t address = 0;            ///< Its device address (must never move).
  unsigned long long wrong_words = 0;   ///< Words that differed from what was expected.
  std::int32_t role = 0;                ///< The subscriber role granted (frame consumer).
  std::int64_t frame_at_join = -1;      ///< -1: none.
  std::uint64_t frames_seen = 0;        ///< Frames consumed.
  std::int64_t first_frame = -1;        ///< The first frame consumed.
  std::int64_t last_frame = -1;         ///< The last frame consumed.
  std::int32_t increasing = 1;          ///< 1 when every frame was larger than the one before.
  char message[480] = {};
};

inline reply failure(std::int32_t status, const std::string& why) { return failed_reply<reply>(status, why); }

inline bool send_reply(const reply& r) { return send_value(child_socket(), r).has_value(); }

/// Receives one reply from `child` within `timeout`; a failure to receive becomes a failed reply.
inline reply receive_reply(const child_process& child, std::chrono::milliseconds timeout = 60s) {
  auto in = receive_message(child.socket(), sizeof(reply), timeout);
  if (!in) return failure(100, "no answer from the child: " + in.error().message());
  if (in->payload.size() != sizeof(reply)) return failure(101, "a malformed answer from the child");
  reply r;
  std::memcpy(&r, in->payload.data(), sizeof r);
  return r;
}

/// Sends `c` to `child` and returns its reply.
inline reply ask(const child_process& child, const command& c) {
  if (auto sent = send_value(child.socket(), c); !sent) return failure(102, sent.error().message());
  return receive_reply(child);
}

// ------------------------------------------------------------------------------------ fixtures ---

class ipc_gpu_test : public gpu_test {
 protected:
  void SetUp() override {
    gpu_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_FALSE(dir_.path.empty()) << "mkdtemp failed";
  }
  /// A socket path of this test's own.
  [[nodiscard]] std::string socket_path(const std::string& name) const { return dir_.path + "/" + name + ".sock"; }

  temp_dir dir_;
};

/// With a Vulkan context on the CUDA GPU (the frame timeline's semaphores are Vulkan's).
class ipc_frames_gpu_test : public ipc_gpu_test {
 protected:
  void SetUp() override {
    ipc_gpu_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto made = sync::create_vulkan_context_for(dev_);
    ASSERT_TRUE(made) << made.error().message();
    vk_ = std::move(made).value();
  }
  void TearDown() override {
    if (dev_.valid()) {
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
    frames_ = sync::frame_publisher();  // the publisher and timeline first, then the memory, then Vulkan
    slots_ = cuda::growable_buffer();
    vk_ = vulkan::device_context();
  }

  /// The slot ring (poisoned with 0xFF bytes) and a frame_publisher on `path` that publishes it.
  void start_frames(const std::string& path) {
    auto made = cuda::growable_buffer::create(dev_, {.size = frame_slots * slot_bytes, .max_size = 64_MiB});
    ASSERT_TRUE(made) << made.error().message();
    slots_ = std::move(made).value();
    MB_CUDA_OK(cudaMemset(slots_.data(), 0xFF, slots_.size()));
    MB_CUDA_OK(cudaDeviceSynchronize());
    sync::frame_publisher_options options;
    options.ipc.listen.path = path;
    options.ipc.publisher_name = "gpu-test frames";
    options.timeline.slots = frame_slots;
    auto fp = sync::frame_publisher::create(vk_, dev_, std::move(options));
    ASSERT_TRUE(fp) << fp.error().message();
    frames_ = std::move(fp).value();
    MB_OK(sync::publish_buffer(frames_.publisher(), slots_name, slots_, dev_, {.name = "u32", .stride = 4}));
  }

  /// Enqueues frame `n` on `stream`: acquire its slot, write n into it, release, announce.
  result<void> produce(cudaStream_t stream, std::uint64_t n) {
    MEMBRIDGE_TRY(frames_.timeline().cuda_acquire(stream, n));
    auto* slot = slots_.data<std::uint32_t>() + frames_.timeline().slot(n) * (slot_bytes / 4);
    if (const cudaError_t rc = gpu::frame_step(slot, slot_bytes / 4, static_cast<std::uint32_t>(n), nullptr, -1,
                                               nullptr, stream);
        rc != cudaSuccess)
      return error(errc::internal, "frame_step", cudaGetErrorName(rc));
    MEMBRIDGE_TRY(frames_.timeline().cuda_release(stream, n));
    return frames_.publish_frame(n);
  }

  vulkan::device_context vk_;
  cuda::growable_buffer slots_;
  sync::frame_publisher frames_;  // declared after the buffer: stopped before the memory goes
};

}  // namespace
}  // namespace membridge::testing
