// (a) Attaching a fresh 1 GiB buffer in a second process: membridge (subscriber connect +
// sync::import_into_cuda, one 1 GiB chunk or 8 x 128 MiB) versus legacy CUDA IPC of a 1 GiB
// cudaMalloc buffer (connect to a Unix socket, receive the cudaIpcMemHandle, cudaIpcOpenMemHandle). The producer side (this process) makes, fills and publishes a fresh buffer per
// method and round; the child times its attach calls with CLOCK_MONOTONIC and checks the data.
// With another device asked for (--attach-peer-device), the 1-chunk membridge attach also runs with
// the child importing into that GPU (peer access to the publisher's), in the same rotation.
#include "ipc/parts.hpp"

#include "kernels.cuh"

#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/sync/ipc_buffers.hpp>

#include <membridge/os/unique_fd.hpp>

#include <array>
#include <cstring>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>
#include <tuple>
#include <unistd.h>

namespace membridge::bench::ipc_bench {

namespace {

namespace gpu = testing::gpu;

/// vmm1_other: the 1-chunk attach with the child subscribing on another GPU (last: run only when asked).
enum class method : std::uint8_t { vmm1 = 0, vmm8 = 1, legacy = 2, vmm1_other = 3 };
constexpr std::size_t all_methods = 4;

/// A pattern seed for round `round` (0: warm-up) and method `m`: distinct for every round and method.
std::uint32_t seed_for(int round, method m) {
  return 0x9e3779b9U * static_cast<std::uint32_t>(static_cast<int>(all_methods) * round + static_cast<int>(m) + 1) ^
         0xA77AC4U;
}

std::string round_text(int round) { return round == 0 ? "warm-up round" : "round " + std::to_string(round); }

/// Throws bench_failure with the child's message unless `r` reports success.
void check_reply(const child_reply& r, std::string_view what) {
  if (r.status != 0) throw bench_failure(std::string(what) + ": the child process failed: " + r.message);
}

/// membridge: a fresh growable_buffer of 1 GiB (`chunk` bytes per chunk), filled, published by a
/// fresh publisher; the child attaches it on CUDA device `child_device` (-1: its own) and checks it.
/// Returns the child's {connect, import} in us.
std::pair<double, double> attach_vmm(const cuda::device& dev, const child_process& child, const std::string& path,
                                     std::size_t chunk, std::uint32_t seed, const std::string& what,
                                     int child_device = -1) {
  cuda::chunk_policy policy;
  policy.max_chunk = chunk;
  auto buffer = value_or_fail(cuda::growable_buffer::create(dev, {.size = attach_bytes, .max_size = attach_bytes,
                                                                  .chunks = policy}),
                              "growable_buffer::create (" + what + ")");
  if (buffer.chunk_count() != attach_bytes / chunk)
    throw bench_failure(what + ": the buffer has " + std::to_string(buffer.chunk_count()) + " chunks, expected " +
                        std::to_string(attach_bytes / chunk));
  MEMBRIDGE_IPC_BENCH_CUDA(gpu::fill_pattern(buffer.data(), attach_bytes, seed));
  MEMBRIDGE_IPC_BENCH_CUDA(cudaDeviceSynchronize());
  auto pub = value_or_fail(ipc::publisher::start(publisher_options_for(path)),
                           "publisher::start (" + what + ")");
  ok_or_fail(sync::publish_buffer(pub, "attach", buffer, dev, {.name = "u32", .stride = 4}),
             "publish_buffer (" + what + ")");
  attach_vmm_request q;
  q.seed = seed;
  q.bytes = attach_bytes;
  q.device = child_device;
  copy_text(q.path, pub.path());
  copy_text(q.name, "attach");
  child.channel().send(q);
  const auto r = child.channel().receive<child_reply>(msg_kind::reply);
  check_reply(r, what);
  if (r.wrong != 0)
    throw bench_failure("data check failed: " + what + ": the child found " + std::to_string(r.wrong) +
                        " wrong words of " + std::to_string(attach_bytes / 4));
  if (r.chunks != buffer.chunk_count())
    throw bench_failure(what + ": the child imported " + std::to_string(r.chunks) + " chunks");
  pub.stop();
  return {us(r.t[0]), us(r.t[1])};
}

/// How legacy CUDA IPC gets its handle to the other process: a Unix stream socket the producer
/// listens on; one thread accepts one connection and writes the 64-byte cudaIpcMemHandle.
class handle_server {
 public:
  handle_server(const std::string& path, const cudaIpcMemHandle_t& handle) : path_(path) {
    sockaddr_un addr{};
    if (path.size() >= sizeof(addr.sun_path)) throw bench_failure("legacy handle socket path too long: " + path);
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    ::unlink(path.c_str());
    listener_ = os::unique_fd::from_native(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!listener_.valid()) throw bench_failure("legacy handle socket: socket() failed");
    if (::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listener_.get(), 1) != 0)
      throw bench_failure("legacy handle socket: bind/listen on " + path + " failed");
    thread_ = std::thread([this, handle] { serve(handle); });
  }
  handle_server(const handle_server&) = delete;
  handle_server& operator=(const handle_server&) = delete;
  ~handle_server() {
    if (thread_.joinable()) thread_.join();
    ::unlink(path_.c_str());
  }
  /// Waits for the serving thread; throws what it failed with.
  void finish() {
    if (thread_.joinable()) thread_.join();
    if (!failure_.empty()) throw bench_failure("legacy handle socket: " + failure_);
  }

 private:
  void serve(const cudaIpcMemHandle_t& handle) {
    pollfd p{listener_.get(), POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) {
      failure_ = "no connection within 10 s";
      return;
    }
    const os::unique_fd peer = os::unique_fd::from_native(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!peer.valid()) {
      failure_ = "accept failed";
      return;
    }
    if (::send(peer.get(), &handle, sizeof(handle), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(handle)))
      failure_ = "send failed";
  }

  std::string path_;
  os::unique_fd listener_;
  std::thread thread_;
  std::string failure_;
};

/// The peer: a fresh 1 GiB cudaMalloc buffer, filled; the child connects to a Unix socket, receives
/// its cudaIpcMemHandle, opens it (both timed), checks the data and closes it. Returns the child's
/// {connect + receive, open} in us.
std::pair<double, double> attach_legacy(const child_process& child, const std::string& socket_path, std::uint32_t seed,
                                        const std::string& what) {
  device_memory buffer(attach_bytes);
  MEMBRIDGE_IPC_BENCH_CUDA(gpu::fill_pattern(buffer.get(), attach_bytes, seed));
  MEMBRIDGE_IPC_BENCH_CUDA(cudaDeviceSynchronize());
  attach_legacy_request q;
  q.seed = seed;
  q.bytes = attach_bytes;
  MEMBRIDGE_IPC_BENCH_CUDA(cudaIpcGetMemHandle(&q.handle, buffer.get()));
  const std::string path = socket_path + "-legacy";
  copy_text(q.path, path);
  handle_server server(path, q.handle);
  child.channel().send(q);
  const auto r = child.channel().receive<child_reply>(msg_kind::reply);
  server.finish();
  check_reply(r, what);
  if (r.wrong != 0)
    throw bench_failure("data check failed: " + what + ": the child found " + std::to_string(r.wrong) +
                        " wrong words of " + std::to_string(attach_bytes / 4));
  return {us(r.t[0]), us(r.t[1])};
}

}  // namespace

std::vector<attach_round> run_attach(const cuda::device& dev, const child_process& child, const std::string& socket_path,
                                     int rounds, int other_device) {
  const std::size_t method_count = other_device >= 0 ? all_methods : all_methods - 1;
  std::vector<attach_round> out;
  for (int round = 0; round <= rounds; ++round) {
    attach_round r;
    for (std::size_t k = 0; k < method_count; ++k) {
      const auto m = static_cast<method>((k + static_cast<std::size_t>(round)) % method_count);
      const std::uint32_t seed = seed_for(round, m);
      switch (m) {
        case method::vmm1: {
          const std::string what = "attach 1 x 1 GiB, " + round_text(round);
          set_phase(what);
          std::tie(r.vmm1_connect_us, r.vmm1_import_us) = attach_vmm(dev, child, socket_path, attach_bytes, seed, what);
          break;
        }
        case method::vmm8: {
          const std::string what = "attach 8 x 128 MiB, " + round_text(round);
          set_phase(what);
          std::tie(r.vmm8_connect_us, r.vmm8_import_us) =
              attach_vmm(dev, child, socket_path, multi_chunk_bytes, seed, what);
          break;
        }
        case method::legacy: {
          const std::string what = "attach cudaIpcOpenMemHandle 1 GiB, " + round_text(round);
          set_phase(what);
          std::tie(r.legacy_transfer_us, r.legacy_us) = attach_legacy(child, socket_path, seed, what);
          break;
        }
        case method::vmm1_other: {
          const std::string what =
              "attach 1 x 1 GiB, subscriber on GPU " + std::to_string(other_device) + ", " + round_text(round);
          set_phase(what);
          std::tie(r.other1_connect_us, r.other1_import_us) =
              attach_vmm(dev, child, socket_path, attach_bytes, seed, what, other_device);
          break;
        }
      }
    }
    if (round > 0) out.push_back(r);
  }
  return out;
}

}  // namespace membridge::bench::ipc_bench
