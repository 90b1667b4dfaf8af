// bench/producer/frame_options.hpp: the command line the producer and consumers benchmarks share
// (blocks of timed frames after a warm-up, a ring of slots, --quick, --json, --device) and its part of
// their JSON line. Header-only: link CLI11::CLI11 and nlohmann_json.
#pragma once

#include "cli.hpp"
#include "cuda_support.hpp"
#include "stats.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace membridge::bench::producer_bench {

/// Options of a frame benchmark; each benchmark's config adds its own.
struct frame_options {
  std::uint64_t frames = 500;       ///< Timed frames per block.
  std::uint64_t warmup = 50;        ///< Frames before them in every block.
  int blocks = 4;                   ///< Interleaved blocks per lane.
  std::uint32_t slots = 3;          ///< Ring slots (frames in flight).
  std::uint32_t slot_words = 4096;  ///< 32-bit words per slot.
  int device = 0;                   ///< CUDA device ordinal.
  bool quick = false;               ///< --quick: a smoke run.
  std::string json_path;            ///< Where to write the JSON line too (empty: stdout only).
};

/// --frames, --warmup, --blocks (`blocks_help` says per what) and --slots into `o`.
inline void add_frame_options(CLI::App& app, frame_options& o, const std::string& blocks_help) {
  app.add_option("--frames", o.frames, "timed frames per block")->check(CLI::Range(10, 100000))->capture_default_str();
  app.add_option("--warmup", o.warmup, "warm-up frames per block")->check(CLI::Range(5, 100000))->capture_default_str();
  app.add_option("--blocks", o.blocks, blocks_help)->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--slots", o.slots, "ring slots (frames in flight)")->check(CLI::Range(1, 8))->capture_default_str();
}

/// Adds --quick, --json and --device, parses the command line and applies --quick (2 blocks of 100
/// frames after 20 warm-up). Returns an exit status when the program should stop now (see
/// parse_command_line), std::nullopt to run.
inline std::optional<int> parse_frame_options(CLI::App& app, int argc, char** argv, frame_options& o) {
  app.add_flag("--quick", o.quick, "a smoke run: 2 blocks of 100 frames after 20 warm-up");
  add_json_option(app, o.json_path);
  add_device_option(app, o.device);
  if (const auto stop = parse_command_line(app, argc, argv)) return stop;
  if (o.quick) {
    o.frames = 100;
    o.warmup = 20;
    o.blocks = 2;
  }
  return std::nullopt;
}

/// {"frames", "warmup", "blocks", "slots", "slot_words"}: the start of the JSON line's "config".
[[nodiscard]] inline json frame_options_json(const frame_options& o) {
  return {{"frames", o.frames}, {"warmup", o.warmup}, {"blocks", o.blocks}, {"slots", o.slots}, {"slot_words", o.slot_words}};
}

/// main() of a frame benchmark `program`: its command line (the frame options, then what
/// add_options(app, config) adds, then --quick, --json and --device; `about` heads --help), then
/// run(config) under run_main.
template <class Config, class AddOptions, class Run>
int frame_bench_main(int argc, char** argv, const char* program, const std::string& about,
                     const std::string& blocks_help, AddOptions&& add_options, Run&& run) {
  Config c;
  CLI::App app{std::string(program) + ": " + about};
  add_frame_options(app, c, blocks_help);
  add_options(app, c);
  if (const auto stop = parse_frame_options(app, argc, argv, c)) return *stop;
  return run_main(program, [&] { return run(c); });
}

}  // namespace membridge::bench::producer_bench
