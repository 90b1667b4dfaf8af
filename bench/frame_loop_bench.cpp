// bench/frame_loop_bench.cpp: the particle sample's frame loop (CUDA sim kernels + Vulkan draw of
// the same memory) three ways, interleaved in one process: membridge's pipelined loop (producer
// thread + render thread, frame_timeline waits on the GPU, ring of 3 slots), the naive loop
// (cudaStreamSynchronize + vkQueueWaitIdle every frame) and a copy through host staging memory;
// against the floor measured in the same run (sim GPU time + draw GPU time + one CUDA<->Vulkan
// round trip: on one GPU the two APIs time-slice, they never overlap). Frame time median and p99,
// host CPU per frame, semaphore waits per drawn frame; the final particles of every run are compared
// bitwise and the last image must not be blank. The handoff per drawn frame (pipelined - sim - draw)
// is compared with the handoff floor: the pipelined loop with no work, measured each round.
//
// The viewed part (--parts viewed, frame_loop/viewed.hpp): the sim alone against the sim with a
// viewer drawing the newest step at a paced 60 / 144 Hz, through a 3-slot mailbox; sim steps/s over
// the sim alone, the viewer's GPU time and the handoff cost per drawn frame; every drawn frame's
// sampled particles are checked bitwise against the CPU reference. The `ipc` viewer runs in another
// process (this binary re-executed, frame_loop/ipc_viewer.hpp) and gets the ring and the mailbox's
// semaphores through membridge's ipc.
//
// Prints a section per (particle count, steps) configuration as it completes, one line per goal
// and, last, one JSON line starting with {"bench":"frame_loop". Exit status: 0 when every data check
// passed (goals met or not), 1 on a CUDA/Vulkan/membridge error or wrong data, 2 without a usable
// CUDA device (or Vulkan device on it), 64 for a bad command line.
#include "cli.hpp"
#include "frame_loop/ipc_viewer.hpp"
#include "frame_loop/modes.hpp"
#include "frame_loop/report.hpp"
#include "frame_loop/scene.hpp"
#include "frame_loop/support.hpp"
#include "frame_loop/viewed.hpp"
#include "frame_loop/viewed_report.hpp"
#include "stats.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace membridge::bench::frame_loop;
namespace bench = membridge::bench;

/// The watchdog ends the process after this long without progress (every host wait times out
/// after 10 s before that, with a message naming it).
constexpr std::chrono::seconds stall_limit{45};

// ---------------------------------------------------------------------------------- options ---

/// The command line.
struct options {
  std::uint64_t frames = 600;                ///< Measured frames per run.
  std::uint64_t warmup = 60;                 ///< Warm-up frames per run.
  int rounds = 3;                            ///< Rounds of the three modes.
  std::vector<std::size_t> particle_counts;  ///< --particles, parsed.
  std::vector<int> steps;                    ///< --steps, parsed.
  std::string json_path;                     ///< Where to write the JSON line too (empty: stdout only).
  int device = 0;                            ///< CUDA device ordinal.
  particles::render_method render = particles::render_method::splat;  ///< --render.
  bool loop = true;                          ///< --parts: the three frame loops and the floor.
  bool viewed = true;                        ///< --parts: the sim with a paced viewer (viewed.hpp).
  viewed_options view;                       ///< --viewed-*.
};

/// The comma-separated items of `text`, blanks removed.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out(1);
  for (const char c : text) {
    if (c == ',')
      out.emplace_back();
    else if (std::isspace(static_cast<unsigned char>(c)) == 0)
      out.back() += c;
  }
  return out;
}

/// "1M" -> 1048576, "512K" -> 524288, "100000" -> 100000 (K and M are binary: 1M = 2^20).
std::optional<std::size_t> parse_count(const std::string& item) {
  if (item.empty() || std::isdigit(static_cast<unsigned char>(item[0])) == 0) return std::nullopt;
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(item, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string suffix = item.substr(used);
  unsigned shift = 0;
  if (suffix == "K" || suffix == "k")
    shift = 10;
  else if (suffix == "M" || suffix == "m")
    shift = 20;
  else if (!suffix.empty())
    return std::nullopt;
  // One draw takes at most 2^32 - 1 vertices; 3 slots of 32 bytes each must fit easily.
  constexpr unsigned long long most = 1ULL << 28U;
  if (value == 0 || value > (most >> shift)) return std::nullopt;
  return static_cast<std::size_t>(value << shift);
}

/// Reads the command line into `opts`. Returns an exit status when the program should stop now
/// (--help: 0, a bad command line: exit_usage, with the reason on stderr).
std::optional<int> parse_options(int argc, char** argv, options& opts) {
  CLI::App app{"membridge frame loop benchmark: CUDA sim + Vulkan draw of the same memory, membridge's pipelined "
               "frame_timeline loop versus the naive synchronising loop and a host staging copy, against the floor "
               "(sim + draw + one CUDA<->Vulkan round trip)"};
  std::string particles_text = "1M,4M";
  std::string steps_text = "1,4";
  app.add_option("--frames", opts.frames, "measured frames per mode, size and round")
      ->check(CLI::Range(std::uint64_t{2}, std::uint64_t{100000}))
      ->capture_default_str();
  app.add_option("--warmup", opts.warmup, "warm-up frames before each run's measured frames (at least 3)")
      ->check(CLI::Range(std::uint64_t{3}, std::uint64_t{100000}))
      ->capture_default_str();
  app.add_option("--rounds", opts.rounds, "rounds of the three modes (medians over rounds are reported)")
      ->check(CLI::Range(1, 50))
      ->capture_default_str();
  app.add_option("--particles", particles_text, "particle counts, comma-separated (K, M: binary; 1M = 1048576)")
      ->capture_default_str();
  app.add_option("--steps", steps_text, "simulation steps (kernel launches) per drawn frame, comma-separated")
      ->capture_default_str();
  bench::add_json_option(app, opts.json_path);
  bench::add_device_option(app, opts.device);
  std::string render_text(particles::render_method_name(opts.render));
  app.add_option("--render", render_text,
                 "how the renderer draws: splat (compute shaders, atomics) or points (graphics pipeline)")
      ->check(CLI::IsMember({std::string(particles::render_method_name(particles::render_method::splat)),
                             std::string(particles::render_method_name(particles::render_method::points))}))
      ->capture_default_str();
  std::string parts_text = "loop,viewed";
  app.add_option("--parts", parts_text,
                 "what to run, comma-separated: loop (pipelined/naive/staging frame loops and the floor), viewed "
                 "(the sim as fast as it runs with a viewer at a paced rate)")
      ->capture_default_str();
  std::string viewed_particles_text = "1M";
  std::string rates_text = "60,144";
  std::string viewers_text = "handoff,direct,direct_host,copy,idle_vulkan,idle_cuda,idle_cuda_context,ipc";
  app.add_option("--viewed-particles", viewed_particles_text, "viewed: particle count (K, M: binary)")
      ->capture_default_str();
  app.add_option("--viewed-seconds", opts.view.seconds, "viewed: measured seconds per run")
      ->check(CLI::Range(0.2, 60.0))
      ->capture_default_str();
  app.add_option("--viewed-warmup", opts.view.warmup_seconds, "viewed: warm-up seconds per run")
      ->check(CLI::Range(0.05, 10.0))
      ->capture_default_str();
  app.add_option("--viewed-rates", rates_text, "viewed: viewer rates in Hz, comma-separated")->capture_default_str();
  app.add_option("--viewed-viewers", viewers_text,
                 "viewed: viewers, comma-separated: handoff, direct, direct_host, copy, idle_vulkan, idle_cuda, idle_cuda_context, "
                 "ipc (a viewer in another process, through membridge's ipc)")
      ->capture_default_str();
  app.add_option("--viewed-depth", opts.view.depth, "viewed: sim steps in flight at most")
      ->check(CLI::Range(2, 256))
      ->capture_default_str();
  app.add_flag("--viewed-sim-yields", opts.view.sim_yields,
               "viewed: the sim's stream waits for the viewer's draw of each frame it publishes (the viewer's "
               "work then preempts no running kernel)");
  if (const auto stop = bench::parse_command_line(app, argc, argv)) return stop;
  opts.render = *particles::parse_render_method(render_text);  // checked by IsMember
  opts.loop = false;
  opts.viewed = false;
  for (const std::string& item : split_list(parts_text)) {
    if (item == "loop") {
      opts.loop = true;
    } else if (item == "viewed") {
      opts.viewed = true;
    } else {
      std::cerr << "--parts: '" << item << "' is not a part (loop, viewed)\n";
      return exit_usage;
    }
  }
  if (const auto count = parse_count(viewed_particles_text)) {
    opts.view.count = *count;
  } else {
    std::cerr << "--viewed-particles: '" << viewed_particles_text << "' is not a particle count\n";
    return exit_usage;
  }
  opts.view.rates_hz.clear();
  for (const std::string& item : split_list(rates_text)) {
    int rate = 0;
    try {
      std::size_t used = 0;
      rate = std::stoi(item, &used);
      if (used != item.size()) rate = 0;
    } catch (const std::exception&) {
      rate = 0;
    }
    if (rate < 1 || rate > 1000) {
      std::cerr << "--viewed-rates: '" << item << "' is not a rate (1 .. 1000 Hz)\n";
      return exit_usage;
    }
    opts.view.rates_hz.push_back(rate);
  }
  opts.view.kinds.clear();
  for (const std::string& item : split_list(viewers_text)) {
    bool known = false;
    for (int k = 0; k < viewer_kind_count; ++k)
      if (item == viewer_kind_name(static_cast<viewer_kind>(k))) {
        opts.view.kinds.push_back(static_cast<viewer_kind>(k));
        known = true;
      }
    if (!known) {
      std::cerr << "--viewed-viewers: '" << item
                << "' is not a viewer (handoff, direct, direct_host, copy, idle_vulkan, idle_cuda, idle_cuda_context, ipc)\n";
      return exit_usage;
    }
  }
  for (const std::string& item : split_list(particles_text)) {
    const auto count = parse_count(item);
    if (!count) {
      std::cerr << "--particles: '" << item << "' is not a particle count (e.g. 1M, 512K, 100000; 1 .. 256M)\n";
      return exit_usage;
    }
    opts.particle_counts.push_back(*count);
  }
  for (const std::string& item : split_list(steps_text)) {
    int steps = 0;
    try {
      std::size_t used = 0;
      steps = std::stoi(item, &used);
      if (used != item.size()) steps = 0;
    } catch (const std::exception&) {
      steps = 0;
    }
    if (steps < 1 || steps > 64) {
      std::cerr << "--steps: '" << item << "' is not a step count (1 .. 64)\n";
      return exit_usage;
    }
    opts.steps.push_back(steps);
  }
  return std::nullopt;
}

// ------------------------------------------------------------------------------- measurement ---

constexpr std::array<std::string_view, mode_count> mode_names = {"pipelined", "naive", "staging"};

/// Runs mode `m` once.
mode_run run_mode(session& s, const scene& sc, mode m, const loop_config& loop) {
  switch (m) {
    case mode::pipelined: return run_pipelined(s, sc, loop);
    case mode::naive: return run_naive(s, sc, loop);
    case mode::staging: return run_staging(s, sc, loop);
  }
  throw bench_failure("unknown mode");
}

/// How many particles of `a` and `b` differ bitwise (same size).
std::size_t differing_particles(const std::vector<particles::particle>& a, const std::vector<particles::particle>& b) {
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(particles::particle)) != 0) ++differ;
  return differ;
}

/// Every round of one configuration: the three modes one after another (the first mode rotates from
/// round to round), each run's data checked, then the floor.
config_result run_config(session& s, const scene& sc, int steps, const options& opts) {
  config_result r;
  r.count = sc.count;
  r.steps = steps;
  r.loop = {opts.warmup, opts.frames, steps};
  const std::string what = count_label(sc.count) + " particles, " + std::to_string(steps) + " step(s)";
  std::vector<particles::particle> reference;
  std::vector<particles::particle> final_state;
  std::optional<std::uint64_t> first_image;
  std::string first_run;
  for (int round = 0; round < opts.rounds; ++round) {
    round_result rr;
    const std::string round_text = "round " + std::to_string(round + 1) + "/" + std::to_string(opts.rounds);
    for (int k = 0; k < mode_count; ++k) {
      const int i = (k + round) % mode_count;
      const auto m = static_cast<mode>(i);
      const std::string run_name =
          what + ", " + round_text + ", " + std::string(mode_names[static_cast<std::size_t>(i)]);
      set_phase(run_name);
      rr.runs[static_cast<std::size_t>(i)] = run_mode(s, sc, m, r.loop);

      // Data: the final particles of every run equal the first run's (same kernels, same inputs).
      set_phase(run_name + ": checking the data");
      const bool first = reference.empty();
      read_particles(s, sc, r.loop.total() - 1, first ? reference : final_state);
      if (first) {
        first_run = run_name;
        r.final_differs_from_initial = differing_particles(reference, sc.initial) != 0;
        if (!r.final_differs_from_initial)
          r.data_failures.push_back(run_name + ": the final particles equal the initial ones (the sim did not run)");
      } else if (const std::size_t differ = differing_particles(reference, final_state); differ != 0) {
        r.bitwise_equal = false;
        r.data_failures.push_back(run_name + ": " + std::to_string(differ) + " of " + std::to_string(sc.count) +
                                  " final particles differ bitwise from " + first_run);
      }
      ++r.runs_compared;
      const image_check image = check_last_image(s);
      rr.images[static_cast<std::size_t>(i)] = image;
      if (image.lit_pixels == 0)
        r.data_failures.push_back(run_name + ": the last image is blank (every pixel is the background)");
      if (!first_image) first_image = image.hash;
      r.images_identical = r.images_identical && image.hash == *first_image;
      const auto& times = rr.runs[static_cast<std::size_t>(i)].frame_ms;
      double total_ms = 0.0;
      for (const double t : times) total_ms += t;
      std::cerr << "[frame_loop] " << run_name << ": mean frame "
                << bench::fixed(times.empty() ? 0.0 : total_ms / static_cast<double>(times.size()), 3)
                << " ms, median " << bench::fixed(bench::median(times), 3) << " ms\n";
    }
    set_phase(what + ", " + round_text + ": the floor");
    rr.floor = measure_floor(s, sc, steps);
    std::cerr << "[frame_loop] " << what << ", " << round_text << ": floor " << bench::fixed(rr.floor.total(), 3)
              << " ms (sim " << bench::fixed(rr.floor.sim_ms, 3) << ", draw " << bench::fixed(rr.floor.draw_ms, 3)
              << ", round trip " << bench::fixed(rr.floor.round_trip_ms, 3) << "); handoff floor "
              << bench::fixed(rr.floor.handoff_floor_ms, 3) << " ms (raw driver calls "
              << bench::fixed(rr.floor.handoff_floor_raw_ms, 3) << ")\n";
    r.rounds.push_back(std::move(rr));
  }
  return r;
}

// ------------------------------------------------------------------------------------ report ---

/// The title lines: devices, versions and what was measured how.
void print_header(const session& s, const options& opts) {
  const auto cc = s.device.compute_capability();
  std::cout << "membridge frame loop benchmark on " << s.device.name() << " (device " << s.ordinal << ", sm_" << cc[0]
            << cc[1] << "), CUDA driver " << cuda_version_text(s.driver_version) << ", runtime "
            << cuda_version_text(s.runtime_version) << "\n"
            << "Vulkan " << s.context.name() << " (" << s.context.driver_info() << "); " << image_width << "x"
            << image_height << " RGBA8, render " << particles::render_method_name(s.method) << ", " << ring_slots
            << " particle/image/timeline slots\n\n";
  if (!opts.loop) return;
  std::cout << "per size and step count: " << opts.rounds << " rounds; a round runs the three modes one after another "
            << "(the first rotates), " << opts.warmup << " warm-up + " << opts.frames << " measured frames each,\n"
            << "then the floor. Frame time: pipelined = interval between consecutive frames' `consumed` signals "
            << "(monitor thread,\nvkWaitSemaphores); naive and staging = wall time per loop iteration. Tables: "
            << "median over rounds of each round's median / p99.\n"
            << "Handoff floor: the pipelined loop (same threads, slots and frame_timeline calls) with no work, the "
            << "sim one kernel\nof one particle and the draw an empty command buffer, " << handoff_floor_frames
            << " frames after " << handoff_floor_warmup << " warm-up (mean interval between `consumed` signals): "
            << "what the driver\ncosts per pipelined handoff; again with raw driver calls instead of membridge's "
            << "on the same semaphores.\nHandoff over floor = (pipelined - sim - draw) / handoff floor.\n\n";
}

/// What the viewed part measured (absent when it did not run).
struct viewed_part {
  viewed_result result;    ///< The runs.
  viewed_summary summary;  ///< Made once the part ended (or failed).
};

/// The whole run as one JSON object, "bench" first.

bench::json report_json(const session* s, const options& opts, const std::vector<config_result>& results,
                        const std::vector<config_summary>& summaries, const std::optional<viewed_part>& viewed,
                        const std::string& error) {
  bench::json out;
  out["bench"] = "frame_loop";
  if (s != nullptr) {
    const auto cc = s->device.compute_capability();
    out["device"] = {{"ordinal", s->ordinal},
                     {"name", s->device.name()},
                     {"uuid", s->device.uuid().to_string()},
                     {"pci_bus_id", s->device.pci_bus_id()},
                     {"compute_capability", std::to_string(cc[0]) + '.' + std::to_string(cc[1])},
                     {"cuda_driver_version", cuda_version_text(s->driver_version)},
                     {"cuda_runtime_version", cuda_version_text(s->runtime_version)}};
    out["vulkan"] = {{"device", s->context.name()},
                     {"driver", s->context.driver_info()},
                     {"sparse_binding", s->context.capabilities().sparse_binding}};
  }
  out["config"] = {{"parts", [&] {
                     bench::json parts = bench::json::array();
                     if (opts.loop) parts.push_back("loop");
                     if (opts.viewed) parts.push_back("viewed");
                     return parts;
                   }()},
                   {"frames", opts.frames},
                   {"warmup_frames", opts.warmup},
                   {"rounds", opts.rounds},
                   {"particles", opts.particle_counts},
                   {"steps", opts.steps},
                   {"width", image_width},
                   {"height", image_height},
                   {"render", std::string(particles::render_method_name(opts.render))},
                   {"slots", ring_slots},
                   {"floor_frames", floor_frames},
                   {"floor_repeats", floor_repeats},
                   {"round_trip_warmup", round_trip_warmup},
                   {"round_trip_iterations", round_trip_iterations},
                   {"handoff_floor_warmup", handoff_floor_warmup},
                   {"handoff_floor_frames", handoff_floor_frames}};
  bench::json configs = bench::json::array();
  bool any_goal = false;
  bool all_met = true;
  bool data_ok = true;
  for (std::size_t c = 0; c < results.size() && c < summaries.size(); ++c) {
    configs.push_back(config_json(results[c], summaries[c]));
    for (const goal& g : summaries[c].goals) {
      any_goal = true;
      all_met = all_met && g.met;
    }
    data_ok = data_ok && results[c].data_failures.empty();
  }
  out["results"] = configs;
  if (viewed) {
    out["viewed"] = viewed_json(viewed->result, viewed->summary);
    for (const goal& g : viewed->summary.goals) {
      any_goal = true;
      all_met = all_met && g.met;
    }
    data_ok = data_ok && viewed->result.data_failures.empty();
  }
  out["all_goals_met"] = any_goal && all_met;
  out["data_checked"] = !results.empty() || (viewed && viewed->result.frames_checked > 0);
  out["data_ok"] = data_ok;
  out["completed"] = error.empty();
  if (!error.empty()) out["error"] = error;
  return out;
}

/// Writes `line` and a newline to the file at `path`; returns false (with a message) if it cannot.
bool write_json_file(const std::string& path, const std::string& line) {
  std::ofstream file(path, std::ios::out | std::ios::trunc);
  file << line << '\n';
  file.flush();
  if (file) return true;
  std::cerr << "membridge_bench_frame_loop: cannot write the JSON line to " << path << '\n';
  return false;
}

/// Prints the goals and the JSON line (stdout, and --json FILE). Returns false if the file failed.
bool finish_report(const session* s, const options& opts, const std::vector<config_result>& results,
                   const std::vector<config_summary>& summaries, const std::optional<viewed_part>& viewed,
                   const std::string& error) {
  if (!results.empty()) print_goals(std::cout, results, summaries);
  if (viewed) {
    if (results.empty()) std::cout << "goals (reported, not enforced)\n";
    for (const goal& g : viewed->summary.goals)
      std::cout << "  " << (g.met ? "met    " : "NOT MET") << "  " << g.description << ' ' << g.comparison << ' '
                << bench::fixed(g.target, 2) << ": measured " << bench::fixed(g.measured, 4) << '\n';
    std::cout << '\n';
  }
  for (const config_result& r : results)
    for (const std::string& failure : r.data_failures) std::cout << "DATA CHECK FAILED: " << failure << '\n';
  if (viewed)
    for (const std::string& failure : viewed->result.data_failures)
      std::cout << "DATA CHECK FAILED: " << failure << '\n';
  const std::string line = report_json(s, opts, results, summaries, viewed, error)
                               .dump(-1, ' ', false, bench::json::error_handler_t::replace);
  std::cout << line << std::endl;
  return opts.json_path.empty() || write_json_file(opts.json_path, line);
}

// -------------------------------------------------------------------------------------- main ---

int run(const options& opts) {
  const watchdog dog(stall_limit);
  set_phase("opening the CUDA device and a Vulkan context on it");
  std::optional<session> opened;
  try {
    opened.emplace(open_session(opts.device, opts.render));
  } catch (const device_unavailable& e) {
    std::cerr << "no usable CUDA device: " << e.what() << '\n';
    return exit_no_device;
  }
  session& s = *opened;
  print_header(s, opts);
  std::cout.flush();

  std::vector<config_result> results;
  std::vector<config_summary> summaries;
  std::optional<viewed_part> viewed;
  std::string error;
  int status = exit_ok;
  try {
    for (const std::size_t count : opts.loop ? opts.particle_counts : std::vector<std::size_t>{}) {
      set_phase("making the scene of " + count_label(count) + " particles");
      const scene sc = make_scene(s, count);
      try {
        for (const int steps : opts.steps) {
          config_result r = run_config(s, sc, steps, opts);
          config_summary summary = summarize(r);
          print_config(std::cout, r, summary);
          std::cout.flush();
          results.push_back(std::move(r));
          summaries.push_back(std::move(summary));
        }
      } catch (const std::exception& e) {
        // Said now, and the GPU drained (best effort) before the scene's memory goes away.
        std::cerr << "[frame_loop] failed: " << e.what() << '\n';
        try {
          drain(s, "the frames queued before the failure");
        } catch (const std::exception& again) {
          std::cerr << "[frame_loop] after the failure: " << again.what() << '\n';
        }
        throw;
      }
      set_phase("releasing the scene of " + count_label(count) + " particles");
      drain(s, "the last frames of " + count_label(count) + " particles");
    }
    if (opts.viewed) {
      viewed.emplace();
      run_viewed(s, opts.view, viewed->result);  // drains before it returns or throws
    }
  } catch (const device_unavailable& e) {
    error = std::string("not enough device: ") + e.what();
    status = exit_no_device;
  } catch (const std::exception& e) {
    error = e.what();
    status = exit_failed;
  }
  set_phase("reporting");
  if (viewed) {
    viewed->summary = summarize_viewed(viewed->result);
    print_viewed(std::cout, viewed->result, viewed->summary);
  }
  const bool written = finish_report(&s, opts, results, summaries, viewed, error);
  if (!error.empty()) {
    std::cerr << "membridge_bench_frame_loop failed: " << error << '\n';
    return status;
  }
  bool wrong = viewed && !viewed->result.data_failures.empty();
  for (const config_result& r : results) wrong = wrong || !r.data_failures.empty();
  if (wrong) {
    std::cerr << "membridge_bench_frame_loop failed: wrong data (see DATA CHECK FAILED above)\n";
    return exit_failed;
  }
  return written ? exit_ok : exit_failed;
}

}  // namespace

int main(int argc, char** argv) {
  // The viewed part's ipc viewer: this binary re-executed in another process (ipc_viewer.hpp).
  if (argc == 2 && std::string_view(argv[1]) == ipc_viewer_flag) return run_ipc_viewer_child();
  options opts;
  if (const auto stop = parse_options(argc, argv, opts)) return *stop;
  return run_main("membridge_bench_frame_loop", [&opts] { return run(opts); });
}
