// bench/growth_bench.cpp: growing device memory from 64 MiB to 4 GiB by doubling with membridge's
// growable_buffer (maps one more chunk, copies nothing) versus cudaMalloc + cudaMemcpy + cudaFree
// (what a user would otherwise write), interleaved in one process with the data of both checked;
// then kernel bandwidth on growable_buffer memory versus cudaMalloc memory.
//
// Prints a table, one line per goal and, last, one JSON line starting with {"bench":"growth".
// Exit status: 0 when every data check passed (whether or not the goals are met), 1 on a CUDA or
// membridge error or wrong data, 2 without a usable CUDA device, 64 for a bad command line.
//
// growth/measure.* runs the growth rounds and bandwidth launches; growth/report.* summarises and prints.
#include "cli.hpp"
#include "cuda_support.hpp"
#include "growth/measure.hpp"
#include "growth/report.hpp"

#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <string>

namespace {

namespace bench = membridge::bench;
namespace growth = membridge::bench::growth;
using bench::exit_ok;

/// The command line: --rounds, and --json and --device (common_options).
struct options : bench::common_options {
  int rounds = 25;  ///< Interleaved rounds of each growth method (a round takes ~30 ms on an H100).
};

/// Reads the command line into `opts`. Returns an exit status when the program should stop now
/// (--help: 0, a bad command line: exit_usage, with CLI11's message).
std::optional<int> parse_options(int argc, char** argv, options& opts) {
  CLI::App app{"membridge growth benchmark: growable_buffer::grow versus cudaMalloc + cudaMemcpy + cudaFree "
               "(64 MiB -> 4 GiB), and kernel bandwidth on both memories"};
  app.add_option("--rounds", opts.rounds, "interleaved rounds of each growth method")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  bench::add_common_options(app, opts);
  return bench::parse_command_line(app, argc, argv);
}

/// The benchmark: open the device, measure, check, report. Throws on failure.
int run(const options& opts) {
  const growth::gpu_session gpu = growth::open_gpu(opts.device);
  growth::require_free_memory();
  const growth::growth_results measured = growth::run_growth(gpu.device, opts.rounds);
  const growth::bandwidth_results bandwidth = growth::run_bandwidth(gpu.device);
  const growth::report r = growth::make_report(measured, bandwidth);

  growth::print_report(std::cout, gpu, opts.rounds, r);
  bench::emit_json_line(growth::report_json(gpu, opts.rounds, r), opts.json_path);
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  options opts;
  if (const auto stop = parse_options(argc, argv, opts)) return *stop;
  return bench::run_main("membridge_bench_growth", [&opts] { return run(opts); });
}
