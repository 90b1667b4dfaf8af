// bench/soak/orchestrator.hpp: the soak's schedule and its result.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace membridge::bench::soak {

/// What the orchestrator runs.
struct soak_options {
  double seconds = 60.0;       ///< How long the producer and viewers run (kills included).
  std::uint64_t seed = 0;      ///< The schedule's seed (0: from the clock; printed).
  std::uint64_t max_mib = 256;  ///< The largest buffer the producer grows to.
  std::string json_path;       ///< Also write the JSON line here.
};

/// One step of the schedule, every 300-900 ms.
enum class action : std::uint8_t {
  none = 0,
  kill_viewer = 1,      ///< SIGKILL a viewer, start it again.
  kill_producer = 2,    ///< SIGKILL the producer, start it again after 100-300 ms.
  restart_viewer = 3,   ///< SIGTERM a viewer (it leaves in order and reports), start it again.
};

/// The schedule's next action for a random number `r` (uniform): 40% kill a viewer, 15% kill the
/// producer, 25% restart a viewer in order, 20% nothing.
[[nodiscard]] action pick_action(std::uint64_t r) noexcept;

/// Runs the soak; returns the exit status (0 when clean, 1 otherwise).
int run_orchestrator(const soak_options& options);

}  // namespace membridge::bench::soak
