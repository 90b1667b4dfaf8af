#include "spread.hpp"

#include "kernels.cuh"  // membridge_gpu_kernels: fill_pattern
#include "peer_kernels.cuh"

#include <membridge/cuda/growable_buffer.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <string>

namespace membridge::bench::peer {

namespace {

namespace gpu = membridge::testing::gpu;

constexpr std::uint32_t spread_seed = 0x59ead001U;  // what every buffer of part 2 holds

/// The chunk policy of every buffer of part 2: chunks of exactly `chunk_bytes`.
cuda::chunk_policy exact_chunks(std::size_t chunk_bytes) {
  return {.growth_factor = 1.0, .min_chunk = chunk_bytes, .max_chunk = chunk_bytes};
}

/// The spread buffer: made on the local GPU, chunks round-robin local, remote, local ...; both GPUs
/// read_write. Throws when a chunk is not on the GPU the placement names.
cuda::growable_buffer make_spread_buffer(const gpu_pair& gpus, const spread_config& config) {
  cuda::growable_buffer_options options;
  options.size = config.bytes;
  options.max_size = config.bytes;
  options.chunks = exact_chunks(config.chunk_bytes);
  options.access = {{&gpus.remote, cuda::access::read_write}};
  options.placement = {.devices = {&gpus.local, &gpus.remote}, .per_chunk = {}};
  auto buffer = value_or_fail(cuda::growable_buffer::create(gpus.local, options),
                              "growable_buffer::create (spread over GPUs " + std::to_string(gpus.local.ordinal()) +
                                  " and " + std::to_string(gpus.remote.ordinal()) + ")");
  const std::array<int, 2> round_robin{gpus.local.ordinal(), gpus.remote.ordinal()};
  for (std::size_t i = 0; i < buffer.chunk_count(); ++i)
    if (const int on = buffer.chunk(i).device; on != round_robin[i % 2])
      throw bench_failure("spread buffer: chunk " + std::to_string(i) + " is on GPU " + std::to_string(on) +
                          ", the placement asked for GPU " + std::to_string(round_robin[i % 2]));
  if (buffer.chunk_count() < 2) throw bench_failure("spread buffer: fewer than two chunks (--spread-chunk-mib)");
  return buffer;
}

/// A buffer of the same size and chunks wholly on `dev`.
cuda::growable_buffer make_own_buffer(const cuda::device& dev, const spread_config& config) {
  cuda::growable_buffer_options options;
  options.size = config.bytes;
  options.max_size = config.bytes;
  options.chunks = exact_chunks(config.chunk_bytes);
  return value_or_fail(cuda::growable_buffer::create(dev, options),
                       "growable_buffer::create (on GPU " + std::to_string(dev.ordinal()) + ")");
}

/// Writes the pattern into `buffer` from device `ordinal` and waits for it.
void fill(const cuda::growable_buffer& buffer, int ordinal) {
  const current_device on(ordinal);
  check_cuda(gpu::fill_pattern(buffer.data(), buffer.size(), spread_seed), "fill_pattern");
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

/// One timed read of `buffer` by the lane's GPU; its checksum is checked.
double timed_read(timing_lane& lane, const cuda::growable_buffer& buffer, std::uint64_t expected,
                  const std::string& what) {
  lane.clear_sink();
  const double ms = lane.time_ms("read16 (" + what + ")", [&] {
    return read16(buffer.data(), buffer.size(), lane.sink(), 0, lane.stream());
  });
  verify_checksum(lane.read_sink(), expected, what);
  return gbps(buffer.size(), ms);
}

}  // namespace

std::size_t spread_memory(const spread_config& config) { return config.bytes / 2 + config.bytes; }

spread_samples measure_spread(const gpu_pair& gpus, const spread_config& config) {
  timing_lane on_local(gpus.local.ordinal());
  timing_lane on_remote(gpus.remote.ordinal());
  const cuda::growable_buffer spread = make_spread_buffer(gpus, config);
  const cuda::growable_buffer own_local = make_own_buffer(gpus.local, config);
  const cuda::growable_buffer own_remote = make_own_buffer(gpus.remote, config);
  fill(spread, gpus.local.ordinal());
  fill(own_local, gpus.local.ordinal());
  fill(own_remote, gpus.remote.ordinal());
  const std::uint64_t expected = pattern_checksum(config.bytes, spread_seed);

  spread_samples s;
  for (const cuda::chunk_info& c : spread.chunks()) s.chunk_devices.push_back(c.device);
  const std::string local_name = "GPU " + std::to_string(gpus.local.ordinal());
  const std::string remote_name = "GPU " + std::to_string(gpus.remote.ordinal());
  // The four reads of a round, started at read r % 4 in round r (as part 1 does).
  const std::array<std::function<void(bool)>, 4> reads{
      [&](bool keep) {
        const double v = timed_read(on_local, spread, expected, "spread buffer read by " + local_name);
        if (keep) s.spread_on_local.push_back(v);
      },
      [&](bool keep) {
        const double v = timed_read(on_local, own_local, expected, local_name + "'s own buffer");
        if (keep) s.own_on_local.push_back(v);
      },
      [&](bool keep) {
        const double v = timed_read(on_remote, spread, expected, "spread buffer read by " + remote_name);
        if (keep) s.spread_on_remote.push_back(v);
      },
      [&](bool keep) {
        const double v = timed_read(on_remote, own_remote, expected, remote_name + "'s own buffer");
        if (keep) s.own_on_remote.push_back(v);
      },
  };
  const auto total = static_cast<unsigned>(config.warmup + config.rounds);
  for (unsigned r = 0; r < total; ++r) {
    const bool keep = r >= static_cast<unsigned>(config.warmup);
    for (std::size_t k = 0; k < reads.size(); ++k) reads[(r + k) % reads.size()](keep);
  }
  return s;
}

spread_report summarize_spread(const spread_samples& s) {
  return {.ran = true,
          .spread_on_local = summarize(s.spread_on_local),
          .own_on_local = summarize(s.own_on_local),
          .spread_on_remote = summarize(s.spread_on_remote),
          .own_on_remote = summarize(s.own_on_remote),
          .local_ratio = compare(s.spread_on_local, s.own_on_local),
          .remote_ratio = compare(s.spread_on_remote, s.own_on_remote),
          .chunk_devices = s.chunk_devices};
}

}  // namespace membridge::bench::peer
