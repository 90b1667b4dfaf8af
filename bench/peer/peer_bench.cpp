// bench/peer/peer_bench.cpp: membridge on two GPUs (issue 14's benchmark, parts 1, 2 and the link's
// figures): kernel read and write bandwidth on another GPU's memory through a membridge peer mapping
// versus the copy engine's peer copies on the same link (goal peer_kernel_over_copy_engine >= 0.9),
// and a growable_buffer spread round-robin over both GPUs read by each, versus a buffer wholly on
// that GPU. Everything interleaved in one process, timed with CUDA events, data checked.
//
// Prints tables, the goal line and, last, one JSON line starting with {"bench":"peer". With fewer
// than two GPUs, or two without peer access, it measures nothing: it prints "not run: <reason>" and
// a JSON line with "not_run" and the goal's "measured" and "met" null, and exits 0 (1 when
// MEMBRIDGE_REQUIRE_GPUS >= 2 asks for two GPUs, as the gpu tests do).
// Exit status: 0 when every data check passed (goals met or not) or the run could not happen, 1 on
// a CUDA or membridge error or wrong data, 2 without a usable CUDA device, 64 for a bad command line.
#include "link.hpp"
#include "report.hpp"
#include "spread.hpp"
#include "support.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/driver.hpp>
#include <membridge/cuda/peer.hpp>

#include <CLI/CLI.hpp>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

namespace {

using namespace membridge::literals;
namespace bench = membridge::bench;
namespace peer = membridge::bench::peer;
using bench::exit_failed;
using bench::exit_ok;
using bench::exit_usage;

constexpr std::size_t memory_spare = 512_MiB;  // left free on each GPU beyond what a part allocates

/// The command line.
struct options {
  int device = 0;               ///< The GPU whose kernels run (CUDA ordinal).
  int peer = 1;                 ///< The GPU whose memory they use.
  int mib = 512;                ///< MiB per transfer of part 1.
  int rounds = 30;              ///< Timed rounds of each part.
  int warmup = 3;               ///< Untimed rounds first.
  int spread_mib = 1024;        ///< The spread buffer's size.
  int spread_chunk_mib = 64;    ///< Its chunks' size.
  bool no_spread = false;       ///< Leave part 2 out.
  bool quick = false;           ///< A short smoke run.
  std::string json_path;        ///< Where to write the JSON line too (empty: stdout only).
};

/// Reads the command line into `opts`. Returns an exit status when the program should stop now
/// (--help: 0, a bad command line: exit_usage, with CLI11's message).
std::optional<int> parse_options(int argc, char** argv, options& opts) {
  CLI::App app{"membridge peer benchmark (two GPUs): kernel bandwidth through a membridge peer mapping versus "
               "the copy engine on the same link, and a growable_buffer spread over both GPUs"};
  app.add_option("--device", opts.device, "GPU whose kernels run (CUDA ordinal)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--peer", opts.peer, "GPU whose memory they use (CUDA ordinal)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--mib", opts.mib, "MiB per transfer of part 1")->check(CLI::Range(256, 16384))->capture_default_str();
  app.add_option("--rounds", opts.rounds, "timed rounds of each part")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--warmup", opts.warmup, "untimed rounds first")->check(CLI::Range(0, 100))->capture_default_str();
  app.add_option("--spread-mib", opts.spread_mib, "size of the spread buffer (part 2)")
      ->check(CLI::Range(4, 32768))->capture_default_str();
  app.add_option("--spread-chunk-mib", opts.spread_chunk_mib, "size of its chunks (a multiple of the granularity)")
      ->check(CLI::Range(2, 16384))->capture_default_str();
  app.add_flag("--no-spread", opts.no_spread, "leave part 2 (the spread buffer) out");
  app.add_flag("--quick", opts.quick,
               "a short smoke run: 256 MiB transfers, a 512 MiB spread buffer, 5 rounds after 1 warm-up "
               "(options given explicitly win)");
  app.add_option("--json", opts.json_path, "also write the JSON line to FILE")->type_name("FILE");
  try {
    app.parse(argc, argv);
    if (opts.device == opts.peer) throw CLI::ValidationError("--peer", "must differ from --device");
    if (opts.quick) {
      if (app.count("--mib") == 0) opts.mib = 256;
      if (app.count("--rounds") == 0) opts.rounds = 5;
      if (app.count("--warmup") == 0) opts.warmup = 1;
      if (app.count("--spread-mib") == 0) opts.spread_mib = 512;
    }
    if (opts.spread_mib % opts.spread_chunk_mib != 0 || opts.spread_mib / opts.spread_chunk_mib < 2)
      throw CLI::ValidationError("--spread-mib", "must be a multiple of --spread-chunk-mib, at least two chunks");
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? exit_ok : exit_usage;
  }
  return std::nullopt;
}

/// What the options ask for.
peer::run_config config_of(const options& o) {
  const auto mib = [](int n) { return static_cast<std::size_t>(n) * 1_MiB; };
  return {.local = o.device,
          .remote = o.peer,
          .link = {.bytes = mib(o.mib), .warmup = o.warmup, .rounds = o.rounds},
          .spread = {.bytes = mib(o.spread_mib), .chunk_bytes = mib(o.spread_chunk_mib), .warmup = o.warmup,
                     .rounds = o.rounds},
          .quick = o.quick};
}

/// Prints `j` as the last line (and to --json).
void emit_json(const bench::json& j, const options& o) {
  bench::emit_json_line(j, o.json_path);
}

/// MEMBRIDGE_REQUIRE_GPUS as the gpu tests read it (1 when unset).
int gpus_required() {
  const char* value = std::getenv("MEMBRIDGE_REQUIRE_GPUS");
  const int n = value == nullptr ? 1 : std::atoi(value);
  return n > 0 ? n : 1;
}

/// The run that cannot happen: "not run: <reason>", the JSON line, and exit 0 (1 when
/// MEMBRIDGE_REQUIRE_GPUS asks for two GPUs).
int not_run(const std::string& reason, int gpu_count,
            const std::optional<std::vector<membridge::cuda::peer_link>>& matrix, const options& o) {
  const std::string why = "needs two GPUs with peer access (" + reason + ")";
  std::cout << "not run: " << why << '\n';
  emit_json(peer::not_run_json(why, gpu_count, matrix, config_of(o)), o);
  if (gpus_required() >= 2) {
    std::cerr << "membridge_bench_peer: not run with MEMBRIDGE_REQUIRE_GPUS=" << gpus_required() << '\n';
    return exit_failed;
  }
  return exit_ok;
}

/// The peer matrix of the system, or nothing when the driver cannot be loaded or queried.
std::optional<std::vector<membridge::cuda::peer_link>> system_matrix() {
  auto drv = membridge::cuda::driver::load();
  if (!drv) return std::nullopt;
  auto matrix = membridge::cuda::peer_matrix(**drv);
  if (!matrix) return std::nullopt;
  return std::move(matrix).value();
}

/// "yes"/"no".
const char* yes_no(bool b) { return b ? "yes" : "no"; }

/// The title lines: the GPUs, the link both ways, the CUDA versions.
void print_header(const peer::gpu_pair& g) {
  const auto gpu_text = [](const membridge::cuda::device& d) {
    const auto cc = d.compute_capability();
    return "GPU " + std::to_string(d.ordinal()) + " " + d.name() + " (" + d.pci_bus_id() + ", sm_" +
           std::to_string(cc[0]) + std::to_string(cc[1]) + ", " + membridge::format_bytes(d.total_memory()) + ")";
  };
  const auto link_text = [](const membridge::cuda::peer_link& l) {
    return "GPU " + std::to_string(l.from) + " -> GPU " + std::to_string(l.to) + ": access " + yes_no(l.access) +
           ", native atomics " + yes_no(l.native_atomics) + ", array access " + yes_no(l.array_access) +
           ", performance rank " + std::to_string(l.performance_rank);
  };
  std::cout << "membridge peer benchmark: kernels on " << gpu_text(g.local) << "\n  use the memory of "
            << gpu_text(g.remote) << "; CUDA driver " << peer::cuda_version_text(g.driver_version) << ", runtime "
            << peer::cuda_version_text(g.runtime_version) << "\nlink (cuDeviceGetP2PAttribute): "
            << link_text(g.to_remote) << "; " << link_text(g.to_local) << "\n\n";
}

/// The benchmark. Throws on failure.
int run(const options& o) {
  int count = 0;
  if (const cudaError_t rc = cudaGetDeviceCount(&count); rc != cudaSuccess || count == 0)
    throw bench::device_unavailable(rc != cudaSuccess ? "cudaGetDeviceCount: " + bench::cuda_error_text(rc)
                                                      : "cudaGetDeviceCount reports no device");
  if (count < 2) return not_run(std::to_string(count) + " GPU here", count, system_matrix(), o);
  const peer::gpu_pair gpus = peer::open_gpu_pair(o.device, o.peer);
  const auto matrix = peer::value_or_fail(membridge::cuda::peer_matrix(gpus.local.get_driver()), "peer_matrix");
  if (!gpus.to_remote.access || !gpus.to_local.access)
    return not_run("cuDeviceCanAccessPeer: GPU " + std::to_string(o.device) + " -> GPU " + std::to_string(o.peer) +
                       " " + yes_no(gpus.to_remote.access) + ", GPU " + std::to_string(o.peer) + " -> GPU " +
                       std::to_string(o.device) + " " + yes_no(gpus.to_local.access),
                   count, matrix, o);

  const peer::run_config config = config_of(o);
  const peer::link_memory_need link_need = peer::link_memory(config.link);
  const std::size_t spread_need = o.no_spread ? 0 : peer::spread_memory(config.spread);
  peer::require_free_memory(o.device, std::max(link_need.local, spread_need) + memory_spare);
  peer::require_free_memory(o.peer, std::max(link_need.remote, spread_need) + memory_spare);

  const peer::link_report link = peer::summarize_link(peer::measure_link(gpus, config.link));
  const peer::spread_report spread =
      o.no_spread ? peer::spread_report{} : peer::summarize_spread(peer::measure_spread(gpus, config.spread));

  print_header(gpus);
  peer::print_link(config, link);
  peer::print_spread(config, spread);
  peer::print_goals(link);
  emit_json(peer::report_json(gpus, matrix, config, link, spread), o);
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  options opts;
  if (const auto stop = parse_options(argc, argv, opts)) return *stop;
  return bench::run_main("membridge_bench_peer", [&opts] { return run(opts); });
}
