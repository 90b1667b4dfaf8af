// bench/realtime/realtime_bench.cpp: issue 12 part (b) for Vulkan: growth while drawing at a paced 144 Hz,
// particles 1M -> 16M by doubling, with the view following at need or ahead of need (sync::follow_step),
// per chunk cap; the import/bind and map cost per chunk size; what overlapped the worst frames.
//
// Prints a table and, last, one JSON line starting with {"bench":"realtime". Exit status: 0 when every
// data check passed (goals met or not), 1 on an error or wrong data, 2 without a usable CUDA + Vulkan
// device, 64 for a bad command line.
#include "vulkan_growth.hpp"

#include <membridge/core/units.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>

namespace {

using namespace membridge::literals;
namespace rt = membridge::bench::realtime;
namespace fl = membridge::bench::frame_loop;
using nlohmann::json;

struct options {
  double hz = 144.0;
  int rounds = 2;
  bool quick = false;
  std::string json_path;
  std::size_t goal_chunk_mib = 16;
  int ordinal = 0;
};

std::optional<int> parse(int argc, char** argv, options& o) {
  CLI::App app{"membridge_bench_realtime: growth while drawing at a paced rate (Vulkan, sparse view)"};
  app.add_option("--hz", o.hz, "Pacing rate (frames per second)")->check(CLI::Range(10.0, 1000.0));
  app.add_option("--rounds", o.rounds, "Rounds per configuration")->check(CLI::Range(1, 20));
  app.add_flag("--quick", o.quick, "Small sizes and few frames (smoke test)");
  app.add_option("--json", o.json_path, "Also write the JSON line to this file");
  app.add_option("--goal-chunk-mib", o.goal_chunk_mib, "Chunk cap (MiB) of the ahead configuration the goal uses");
  app.add_option("--device", o.ordinal, "CUDA device ordinal");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : membridge::bench::exit_usage;
  }
  return std::nullopt;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

json summary_json(const membridge::bench::paced_summary& f) {
  return {{"budget_ms", f.budget_ms},           {"frames", f.frames},
          {"latency_median_ms", f.latency_median_ms}, {"latency_p99_ms", f.latency_p99_ms},
          {"latency_worst_ms", f.latency_worst_ms},   {"over_budget", f.over_budget},
          {"period_median_ms", f.period_median_ms},   {"period_worst_ms", f.period_worst_ms},
          {"raw_worst_over_median", f.worst_over_median}, {"shown_period_median_ms", f.shown_period_median_ms},
          {"shown_period_worst_ms", f.shown_period_worst_ms}, {"shown_worst_over_median", f.shown_worst_over_median},
          {"warmup_worst_ms", f.warmup_worst_ms}, {"worst_frames", f.worst_overlaps}};
}

int run(const options& o) {
  fl::session s = fl::open_session(o.ordinal, particles::render_method::splat);
  std::vector<rt::growth_config> configs;
  const auto add = [&](rt::follow_mode m, std::size_t cap_mib) {
    rt::growth_config c;
    c.mode = m;
    c.max_chunk = cap_mib * 1_MiB;
    c.hz = o.hz;
    if (o.quick) {
      c.final_particles = std::size_t{4} << 20U;
      c.frames_per_step = 12;
    }
    configs.push_back(c);
  };
  add(rt::follow_mode::at_need, 0);
  add(rt::follow_mode::ahead, 0);
  add(rt::follow_mode::ahead, o.goal_chunk_mib);
  if (o.goal_chunk_mib != 16) add(rt::follow_mode::ahead, 16);
  std::vector<std::vector<rt::growth_run>> runs(configs.size());
  for (int r = 0; r < o.rounds; ++r)
    for (std::size_t i = 0; i < configs.size(); ++i) {
      runs[i].push_back(rt::run_vulkan_growth(s, configs[i]));
      std::cerr << "  " << configs[i].label() << " round " << r << ": worst frame "
                << runs[i].back().frames.latency_worst_ms << " ms\n";
    }

  std::cout << "membridge_bench_realtime  part (b), Vulkan: " << s.device.name() << ", paced at " << o.hz
            << " Hz (budget " << std::fixed << std::setprecision(2) << 1000.0 / o.hz << " ms), particles "
            << (configs.front().start_particles >> 20U) << "M -> " << (configs.front().final_particles >> 20U)
            << "M by doubling every " << configs.front().frames_per_step << " frames, " << o.rounds << " rounds\n";
  std::cout << std::left << std::setw(30) << "configuration" << std::right << std::setw(10) << "lat med" << std::setw(10)
            << "lat p99" << std::setw(10) << "lat max" << std::setw(8) << "over" << std::setw(10) << "per med"
            << std::setw(10) << "per max" << std::setw(9) << "raw m/m" << std::setw(9) << "shown m/m" << std::setw(6) << "lag"
            << std::setw(9) << "warm-up" << "\n";
  json jconfigs = json::array();
  json costs = json::object();
  double goal_ratio = 0;
  double goal_raw = 0;
  double goal_worst = 0;
  std::size_t checks = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    membridge::bench::paced_rounds all;
    double lag = 0;
    json jr = json::array();
    for (const rt::growth_run& g : runs[i]) {
      all.add(g.frames);
      lag = std::max(lag, g.lag_frames_max);
      checks += g.data_checks;
      json jrun = summary_json(g.frames);
      jrun["lag_frames_max"] = g.lag_frames_max;
      jrun["capacity_bytes"] = g.peak_capacity;
      jrun["final_bytes"] = g.final_bytes;
      jr.push_back(jrun);
      for (const auto& [what, cost] : g.costs)
        for (const double ms : cost.ms) costs[configs[i].label()][what].push_back(ms);
    }
    std::cout << std::left << std::setw(30) << configs[i].label() << std::right << std::setprecision(3) << std::setw(10)
              << median_of(all.latency_medians) << std::setw(10) << all.latency_p99_ms << std::setw(10)
              << all.latency_worst_ms << std::setw(8) << all.over_budget << std::setw(10) << median_of(all.period_medians)
              << std::setw(10) << all.period_worst_ms << std::setw(9) << all.worst_over_median << std::setw(9)
              << all.shown_worst_over_median << std::setw(6) << lag << std::setw(9) << all.warmup_worst_ms << "\n";
    for (const rt::growth_run& g : runs[i])
      for (const std::string& line : g.frames.worst_overlaps) std::cout << "    " << line << "\n";
    jconfigs.push_back({{"config", configs[i].label()}, {"runs", jr}});
    if (configs[i].mode == rt::follow_mode::ahead && configs[i].max_chunk == o.goal_chunk_mib * 1_MiB) {
      goal_ratio = all.shown_worst_over_median;
      goal_raw = all.worst_over_median;
      goal_worst = all.latency_worst_ms;
    }
  }
  std::cout << "follow work per chunk (median ms, count):\n";
  for (const auto& [config, whats] : costs.items())
    for (const auto& [what, list] : whats.items()) {
      std::vector<double> v = list.get<std::vector<double>>();
      std::cout << "  " << std::left << std::setw(30) << config << std::setw(26) << what << std::right
                << std::setw(9) << median_of(v) << " ms  x" << v.size() << "\n";
    }
  const double budget = 1000.0 / o.hz;
  const bool met = goal_ratio <= 1.2 && goal_worst <= budget;
  std::cout << "(lat: tick -> GPU done; per: raw completion period; shown: the period a display at " << o.hz
            << " Hz shows; warm-up: worst of the first frames_per_step/2 frames, before any growth, not judged)\n";
  std::cout << "goal vulkan_growth_worst_over_median: worst shown period / median " << goal_ratio << " (<= 1.2) and worst frame "
            << goal_worst << " ms (<= " << budget << " ms): " << (met ? "met" : "NOT met") << "\n";
  std::cout << "data: " << checks << " per-frame probes read their frame's stamp\n";
  json goals;
  goals["vulkan_growth_worst_over_median"] = {
      {"comparison", "<="},         {"target", 1.2},       {"measured", goal_ratio}, {"raw_completion_worst_over_median", goal_raw},
      {"worst_frame_ms", goal_worst}, {"budget_ms", budget}, {"met", met},
      {"config", "ahead, max_chunk " + std::to_string(o.goal_chunk_mib) + " MiB"}};
  const json line = {{"bench", "realtime"}, {"part", "b_vulkan"}, {"device", s.device.name()}, {"hz", o.hz},
                     {"configs", jconfigs}, {"costs_ms", costs}, {"data_checks", checks}, {"goals", goals}};
  std::cout << line.dump() << "\n";
  if (!o.json_path.empty()) std::ofstream(o.json_path) << line.dump() << "\n";
  return membridge::bench::exit_ok;
}

}  // namespace

int rt::growth_config::steps() const {
  int k = 0;
  for (std::size_t p = start_particles; p < final_particles; p *= 2) ++k;
  return k;
}

std::string rt::growth_config::label() const {
  return std::string(mode == follow_mode::ahead ? "ahead" : "at need") + ", max_chunk " +
         (max_chunk == 0 ? std::string("none") : std::to_string(max_chunk >> 20U) + " MiB");
}

int main(int argc, char** argv) {
  options o;
  if (const auto stop = parse(argc, argv, o)) return *stop;
  return membridge::bench::run_main("membridge_bench_realtime", [&o] { return run(o); });
}
