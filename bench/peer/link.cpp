#include "link.hpp"

#include "kernels.cuh"  // membridge_gpu_kernels: fill_pattern, write16
#include "peer_kernels.cuh"

#include <array>
#include <cstdint>
#include <functional>
#include <string>

namespace membridge::bench::peer {

namespace {

namespace gpu = membridge::testing::gpu;

constexpr std::uint32_t remote_seed = 0x9eed0001U;  // what the remote sources hold
constexpr std::uint32_t local_seed = 0x9eed0002U;   // what the local source holds
constexpr std::uint32_t poison = 0xdeadbeefU;       // written over a copy's target before the copy

/// The value write16 stores in round `round`: different in every round and never the poison.
std::uint32_t write_value(unsigned round) { return (0x51ed0000U + round) * 2654435761U | 1U; }

/// The buffers of part 1: remote memory for the kernels through membridge's mapping, and
/// cudaMalloc memory on both GPUs for the copy engine (what a runtime user copies between).
struct link_buffers {
  peer_memory kernel_source;          ///< Remote, the pattern of remote_seed: read by read16.
  peer_memory kernel_target;          ///< Remote: written by write16.
  device_memory copy_source_remote;   ///< Remote, the pattern of remote_seed: copied to local_target.
  device_memory copy_target_remote;   ///< Remote: local_source is copied here.
  device_memory local_source;         ///< Local, the pattern of local_seed.
  device_memory local_target;         ///< Local: copy_source_remote is copied here.
};

/// cudaDeviceEnablePeerAccess from the current (local) GPU to `remote`: the runtime's copy engine
/// and kernels then reach remote cudaMalloc memory directly. Already enabled is fine.
void enable_runtime_peer_access(int remote) {
  const cudaError_t rc = cudaDeviceEnablePeerAccess(remote, 0);
  if (rc == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();  // clears the error the call recorded
    return;
  }
  check_cuda(rc, "cudaDeviceEnablePeerAccess(" + std::to_string(remote) + ")");
}

/// Allocates part 1's buffers and writes the sources (from the local GPU), checking them.
link_buffers make_buffers(const gpu_pair& gpus, std::size_t bytes, cudaStream_t stream) {
  const int local = gpus.local.ordinal();
  const int remote = gpus.remote.ordinal();
  link_buffers b{peer_memory::create(gpus.remote, gpus.local, bytes),
                 peer_memory::create(gpus.remote, gpus.local, bytes),
                 device_memory::allocate(remote, bytes),
                 device_memory::allocate(remote, bytes),
                 device_memory::allocate(local, bytes),
                 device_memory::allocate(local, bytes)};
  check_cuda(gpu::fill_pattern(b.kernel_source.get(), bytes, remote_seed, 0, stream), "fill_pattern");
  check_cuda(gpu::fill_pattern(b.copy_source_remote.get(), bytes, remote_seed, 0, stream), "fill_pattern");
  check_cuda(gpu::fill_pattern(b.local_source.get(), bytes, local_seed, 0, stream), "fill_pattern");
  verify_pattern(b.kernel_source.get(), bytes, remote_seed, stream, "remote source (membridge mapping)");
  verify_pattern(b.copy_source_remote.get(), bytes, remote_seed, stream, "remote source (cudaMalloc)");
  verify_pattern(b.local_source.get(), bytes, local_seed, stream, "local source");
  return b;
}

/// The four transfers of a round, each timed alone on the local GPU's lane and then checked.
class link_round {
 public:
  link_round(const gpu_pair& gpus, const link_config& config, timing_lane& lane, link_buffers& buffers)
      : gpus_(gpus), bytes_(config.bytes), lane_(lane), b_(buffers),
        expected_checksum_(pattern_checksum(config.bytes, remote_seed)) {}

  /// read16 over the remote memory through membridge's mapping; the checksum is checked.
  double kernel_read(unsigned round) {
    lane_.clear_sink();
    const double ms = lane_.time_ms("read16 (peer mapping)", [&] {
      return read16(b_.kernel_source.get(), bytes_, lane_.sink(), 0, lane_.stream());
    });
    verify_checksum(lane_.read_sink(), expected_checksum_,
                    "kernel read of remote memory, round " + std::to_string(round));
    return gbps(bytes_, ms);
  }

  /// The copy engine, remote -> local; the local target (poisoned first) is checked.
  double copy_read(unsigned round) {
    check_cuda(gpu::write16(b_.local_target.get(), bytes_, poison, lane_.stream()), "write16(poison)");
    const double ms = lane_.time_ms("cudaMemcpyPeerAsync (remote -> local)", [&] {
      return cudaMemcpyPeerAsync(b_.local_target.get(), gpus_.local.ordinal(), b_.copy_source_remote.get(),
                                 gpus_.remote.ordinal(), bytes_, lane_.stream());
    });
    verify_pattern(b_.local_target.get(), bytes_, remote_seed, lane_.stream(),
                   "copy engine remote -> local, round " + std::to_string(round));
    return gbps(bytes_, ms);
  }

  /// write16 into the remote memory through membridge's mapping; every word is checked.
  double kernel_write(unsigned round) {
    const std::uint32_t value = write_value(round);
    const double ms = lane_.time_ms("write16 (peer mapping)", [&] {
      return gpu::write16(b_.kernel_target.get(), bytes_, value, lane_.stream());
    });
    verify_value(b_.kernel_target.get(), bytes_, value, lane_.stream(),
                 "kernel write of remote memory, round " + std::to_string(round));
    return gbps(bytes_, ms);
  }

  /// The copy engine, local -> remote; the remote target (poisoned first) is checked.
  double copy_write(unsigned round) {
    check_cuda(gpu::write16(b_.copy_target_remote.get(), bytes_, poison, lane_.stream()), "write16(poison)");
    const double ms = lane_.time_ms("cudaMemcpyPeerAsync (local -> remote)", [&] {
      return cudaMemcpyPeerAsync(b_.copy_target_remote.get(), gpus_.remote.ordinal(), b_.local_source.get(),
                                 gpus_.local.ordinal(), bytes_, lane_.stream());
    });
    verify_pattern(b_.copy_target_remote.get(), bytes_, local_seed, lane_.stream(),
                   "copy engine local -> remote, round " + std::to_string(round));
    return gbps(bytes_, ms);
  }

 private:
  const gpu_pair& gpus_;
  std::size_t bytes_;
  timing_lane& lane_;
  link_buffers& b_;
  std::uint64_t expected_checksum_;
};

}  // namespace

link_memory_need link_memory(const link_config& config) {
  return {2 * config.bytes, 4 * config.bytes};
}

link_samples measure_link(const gpu_pair& gpus, const link_config& config) {
  timing_lane lane(gpus.local.ordinal());
  enable_runtime_peer_access(gpus.remote.ordinal());
  link_buffers buffers = make_buffers(gpus, config.bytes, lane.stream());
  link_round one(gpus, config, lane, buffers);
  link_samples s;
  // Round r runs the four transfers starting at transfer r % 4, so that each one follows each other
  // one equally often and slow drift (clocks, temperature) hits them alike.
  const std::array<std::function<void(unsigned, bool)>, 4> transfers{
      [&](unsigned r, bool keep) {
        const double v = one.kernel_read(r);
        if (keep) s.kernel_read.push_back(v);
      },
      [&](unsigned r, bool keep) {
        const double v = one.copy_read(r);
        if (keep) s.copy_read.push_back(v);
      },
      [&](unsigned r, bool keep) {
        const double v = one.kernel_write(r);
        if (keep) s.kernel_write.push_back(v);
      },
      [&](unsigned r, bool keep) {
        const double v = one.copy_write(r);
        if (keep) s.copy_write.push_back(v);
      },
  };
  const auto total = static_cast<unsigned>(config.warmup + config.rounds);
  for (unsigned r = 0; r < total; ++r) {
    const bool keep = r >= static_cast<unsigned>(config.warmup);
    for (std::size_t k = 0; k < transfers.size(); ++k) transfers[(r + k) % transfers.size()](r, keep);
  }
  return s;
}

}  // namespace membridge::bench::peer
