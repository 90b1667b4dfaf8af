// bench/realtime/growth.hpp: what one paced growth run is and what it measured (Vulkan and GL share it).
#pragma once

#include "pacing.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace membridge::cuda {
class growable_buffer;
}  // namespace membridge::cuda

namespace membridge::bench::realtime {

/// How the view follows the growing buffer.
enum class follow_mode : std::uint8_t {
  at_need,  ///< follow_step with no headroom: grow() maps at need, the view imports what is mapped.
  ahead,    ///< follow_step with headroom_fraction 1.0: the next doubling is mapped and imported early.
};

/// One configuration of a paced growth run.
struct growth_config {
  follow_mode mode = follow_mode::ahead;
  std::size_t max_chunk = 0;          ///< chunk_policy::max_chunk (0: one chunk per doubling).
  double hz = 144.0;                  ///< Pacing.
  std::size_t start_particles = std::size_t{1} << 20U;
  std::size_t final_particles = std::size_t{16} << 20U;
  int frames_per_step = 48;           ///< Frames between doublings.
  [[nodiscard]] int steps() const;    ///< Doublings from start to final.
  [[nodiscard]] std::size_t frames() const { return static_cast<std::size_t>((steps() + 1) * frames_per_step); }
  [[nodiscard]] std::string label() const;
};

/// Cost of one kind of follow work at one chunk size.
struct work_cost {
  std::vector<double> ms;
};

/// What one run measured.
struct growth_run {
  growth_config config;
  paced_summary frames;                        ///< The user's view of the frames.
  std::map<std::string, work_cost> costs;      ///< e.g. "import+bind 64 MiB" -> times.
  std::size_t data_checks = 0;                 ///< Probes verified (every frame).
  std::size_t peak_capacity = 0;               ///< Bytes mapped at the end.
  std::size_t final_bytes = 0;
  double lag_frames_max = 0;                   ///< Frames from a grow until the renderer drew the new size.
};

/// "64 MiB": whole MiB (rounded down), for the work log.
[[nodiscard]] std::string mib(std::size_t bytes);

/// Blocks until `submitted` (frames the render thread submitted) reaches `n`, or `stop` is set: the
/// producer stays one frame ahead of the render thread.
void wait_submitted(const std::atomic<std::size_t>& submitted, std::size_t n, const std::atomic<bool>& stop);

/// Ends a run's waits: sets `stop`, moves `submitted` past the last of `frames` frames and `produced`
/// to `frames`, and wakes every thread waiting on either (the producer, the follower, the watcher).
void stop_waits(std::atomic<bool>& stop, std::atomic<std::size_t>& submitted, std::atomic<std::size_t>& produced,
                std::size_t frames);

/// Where a producer's particles grow. Ownership: borrows all three; they outlive every call.
struct growth_target {
  cuda::growable_buffer& buffer;  ///< The particles.
  std::mutex& buffer_mutex;       ///< Held by grow() here and by the follower's follow_step.
  work_log& log;                  ///< Each grow() is logged here.
  std::size_t particle_bytes;     ///< Bytes per particle.
};

/// Frame n's particle count: `count` doubled when n > 0 starts a step (every `frames_per_step` frames)
/// and `count` is below `final_particles`, the buffer then grown to hold them (under the lock) and
/// the grow logged as "grow to 128 MiB (maps 64 MiB)" or "(no map)"; else `count`. Throws
/// bench_failure when grow() fails.
[[nodiscard]] std::size_t grow_for_frame(const growth_target& target, std::size_t n, std::size_t count, int frames_per_step,
                                         std::size_t final_particles);

}  // namespace membridge::bench::realtime
