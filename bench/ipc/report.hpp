// bench/ipc/report.hpp: the cross-process benchmark's tables, goals and JSON line.
#pragma once

#include "ipc/parts.hpp"
#include "stats.hpp"

#include <iosfwd>
#include <string>
#include <vector>

namespace membridge::bench::ipc_bench {

/// What the run was asked to do.
struct run_config {
  int device = 0;
  int rounds = 15;          ///< (a) and (b) rounds after their warm-up round.
  int growth_steps = 4;     ///< (b) 1 GiB steps per round.
  frames_config frames;     ///< (c)
  bool quick = false;
  int attach_peer_device = -1;  ///< (a) also attaches with the child on this CUDA device (-1: not asked).
  bool run_attach = true;       ///< --parts: which of (a), (b), (c) run.
  bool run_growth = true;
  bool run_frames = true;
};

/// Where it ran.
struct run_environment {
  std::string device_name;
  std::string device_uuid;
  std::string pci_bus_id;
  std::string compute_capability;
  std::string vulkan_device;
  int driver_version = 0;
  int runtime_version = 0;
};

/// Everything measured.
struct run_results {
  std::vector<attach_round> attach;
  std::vector<growth_sample> growth;
  frames_results frames;
  /// (a) on another GPU, when asked: empty when it ran, else why not (one GPU, no peer access ...).
  std::string other_gpu_not_run;
};

/// Prints the tables and the goals to `out`.
void print_report(std::ostream& out, const run_config& config, const run_environment& env, const run_results& r);

/// The JSON line's object ({"bench":"ipc",...}).
[[nodiscard]] json report_json(const run_config& config, const run_environment& env, const run_results& r);

}  // namespace membridge::bench::ipc_bench
