// bench/gl/report.hpp: the GL benchmark's tables, goals and JSON line.
#pragma once

#include "parts.hpp"

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace membridge::bench::gl_bench {

/// What the header and the JSON line say about the run besides the measurements.
struct run_info {
  std::string gpu_name;
  std::string gpu_uuid;
  std::string compute_capability;
  std::string cuda_driver;   ///< e.g. "13.0"
  std::string cuda_runtime;
  std::string gl_vendor;
  std::string gl_renderer;
  std::string gl_version;    ///< NVIDIA: "4.6.0 NVIDIA 580.xx" (the driver's version)
  bool gl_semaphore_fd = false;
  bool gl_timeline_semaphore = false;
  bool gl_sparse_growth = false;
  std::string ordering_note; ///< Why host ordering, when it is.
  std::string commit;
  std::string parts;         ///< Which parts ran ("abc").
};

/// The measurements (parts that did not run are empty).
struct run_results {
  std::optional<std::vector<steady_size>> steady;
  std::optional<growth_result> growth;
  std::optional<steps_result> steps;
};

/// Prints the tables and goals to `out` and returns the JSON object.
[[nodiscard]] json report(std::ostream& out, const bench_env& env, const run_info& info, const run_results& r);

}  // namespace membridge::bench::gl_bench
