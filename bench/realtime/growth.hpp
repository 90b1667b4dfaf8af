// bench/realtime/growth.hpp: what one paced growth run is and what it measured (Vulkan and GL share it).
#pragma once

#include "pacing.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

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

}  // namespace membridge::bench::realtime
