// bench/ipc_bench.cpp: sharing CUDA memory and frames with a second process through membridge's
// publisher/subscriber, against what a user would otherwise do, in one run with a second process
// (this binary re-executed in child mode, its CUDA context warm before any timing):
//  (a) attaching a fresh 1 GiB buffer in the other process: subscriber::connect +
//      sync::import_into_cuda (one 1 GiB chunk, and 8 x 128 MiB) versus cudaIpcOpenMemHandle of a
//      1 GiB cudaMalloc buffer; with --attach-peer-device N also the 1-chunk attach with the child
//      subscribing on GPU N (peer access to the publisher's GPU), interleaved, and its ratio to the
//      same-GPU attach (a figure, no goal);
//  (b) a 1 GiB growth reaching the subscriber: grow() returned in the producer -> the subscriber's
//      follow_growth and a kernel over the new range done (CLOCK_MONOTONIC, shared by both processes);
//  (c) frame handoff from a CUDA producer thread to a Vulkan consumer: throughput and latency
//      (producer's release -> consumer done, CLOCK_MONOTONIC read in each process right before the
//      release and right after the consumer's host wait; never negative, checked) with the consumer in
//      another process (sync::frame_publisher, import_into_vulkan, frame_timeline::import) versus the
//      same Vulkan consumer in the producer's process (frame_timeline, mirror_in_vulkan), unpaced and
//      paced at 144 Hz (the latency goal); the unpaced pair with a CUDA consumer runs too, for reference.
// Every buffer's and frame's data is checked. --parts runs only some of (a), (b), (c).
//
// Prints tables, one line per goal and, last, one JSON line starting with {"bench":"ipc". Exit
// status: 0 when every data check passed (goals met or not), 1 on a CUDA/Vulkan/membridge error or
// wrong data, 2 without a usable CUDA device (or Vulkan device on it) or enough free memory, 64 for
// a bad command line.
#include "cli.hpp"
#include "ipc/parts.hpp"
#include "ipc/report.hpp"
#include "ipc/support.hpp"
#include "stats.hpp"
#include "temp_dir.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/peer.hpp>
#include <membridge/sync/same_gpu.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace membridge::bench::ipc_bench;
namespace bench = membridge::bench;

/// The command line.
struct options {
  run_config run;
  std::string json_path;  ///< Where to write the JSON line too (empty: stdout only).
};

/// Reads the command line into `opts`. Returns an exit status when the program should stop now
/// (--help: 0, a bad command line: exit_usage, with CLI11's message).
std::optional<int> parse_options(int argc, char** argv, options& opts) {
  CLI::App app{"membridge cross-process benchmark: attach of a fresh 1 GiB buffer in another process (membridge "
               "versus cudaIpcOpenMemHandle), growth reaching a subscriber, and frame handoff to a Vulkan consumer in "
               "another process versus in the producer's process"};
  run_config& c = opts.run;
  app.add_option("--rounds", c.rounds, "rounds of the attach and growth measurements (after 1 warm-up round each)")
      ->check(CLI::Range(1, 200))
      ->capture_default_str();
  app.add_option("--steps", c.growth_steps, "1 GiB growth steps per round")->check(CLI::Range(1, 16))->capture_default_str();
  app.add_option("--frames", c.frames.frames, "measured frames per frame-handoff run")
      ->check(CLI::Range(std::uint64_t{10}, std::uint64_t{100000}))
      ->capture_default_str();
  app.add_option("--warmup-frames", c.frames.warmup, "frames before the measured ones in every run")
      ->check(CLI::Range(std::uint64_t{3}, std::uint64_t{100000}))
      ->capture_default_str();
  app.add_option("--frame-rounds", c.frames.rounds, "runs of each frame-handoff pipeline (their order alternates)")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  app.add_option("--pace-hz", c.frames.pace_hz, "paced frame-handoff runs: frames per second the producer starts (0: none)")
      ->check(CLI::Range(0.0, 10000.0))
      ->capture_default_str();
  app.add_option("--paced-frames", c.frames.paced_frames, "measured frames per paced run")
      ->check(CLI::Range(std::uint64_t{10}, std::uint64_t{100000}))
      ->capture_default_str();
  bool vulkan_only = false;
  app.add_flag("--vulkan-only", vulkan_only, "frame handoff: skip the CUDA-consumer reference pipelines");
  app.add_flag("--quick", c.quick,
               "a short run: 5 rounds, 500 frames after 100 warm-up, paced 144 after 24, 1 frame round");
  bench::add_json_option(app, opts.json_path);
  bench::add_device_option(app, c.device);
  app.add_option("--attach-peer-device", c.attach_peer_device,
                 "(a): also attach with the subscriber on CUDA device N (peer access to --device's memory), "
                 "interleaved with the same-GPU attach; reports both and the ratio (not run, exit 0, without such a "
                 "device or peer access)")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  std::vector<std::string> parts{"attach", "growth", "frames"};
  app.add_option("--parts", parts, "which parts run: attach (a), growth (b), frames (c), comma-separated")
      ->delimiter(',')
      ->check(CLI::IsMember({"attach", "growth", "frames"}))
      ->capture_default_str();
  const auto check_peer = [&c] {
    if (c.attach_peer_device >= 0 && c.attach_peer_device == c.device)
      throw CLI::ValidationError("--attach-peer-device", "must differ from --device (" + std::to_string(c.device) + ")");
  };
  if (const auto stop = bench::parse_command_line(app, argc, argv, check_peer)) return stop;
  const auto asked = [&parts](std::string_view part) { return std::find(parts.begin(), parts.end(), part) != parts.end(); };
  c.run_attach = asked("attach");
  c.run_growth = asked("growth");
  c.run_frames = asked("frames");
  c.frames.cuda_consumers = !vulkan_only;
  if (c.quick) {
    c.rounds = 5;
    c.frames.frames = 500;
    c.frames.warmup = 100;
    c.frames.paced_frames = 144;
    c.frames.paced_warmup = 24;
    c.frames.rounds = 1;
  }
  return std::nullopt;
}

/// "done in 1.23 s" on stderr, for the log.
void progress(const std::string& what, std::int64_t since_ns) {
  std::cerr << "membridge_bench_ipc: " << what << " done in " << bench::fixed(static_cast<double>(monotonic_ns() - since_ns) * 1e-9, 2)
            << " s\n";
}

/// Why the attach with the subscriber on `config.attach_peer_device` cannot run (empty: it can):
/// no such device, or no peer access from it to the publisher's device `dev` (the import needs it).
std::string other_gpu_obstacle(const run_config& config, const membridge::cuda::device& dev) {
  const int other = config.attach_peer_device;
  if (!config.run_attach) return "the attach part is not in --parts";
  int count = 0;
  MEMBRIDGE_IPC_BENCH_CUDA(cudaGetDeviceCount(&count));
  if (other >= count)
    return std::to_string(count) + (count == 1 ? " GPU" : " GPUs") + " here, no device " + std::to_string(other);
  auto opened = membridge::cuda::device::open(other);
  if (!opened) return "cannot open CUDA device " + std::to_string(other) + ": " + opened.error().message();
  const auto link = membridge::cuda::query_peer(*opened, dev);
  if (!link) return "query_peer GPU " + std::to_string(other) + " -> GPU " + std::to_string(config.device) + ": " +
                    link.error().message();
  if (!link->access)
    return "cuDeviceCanAccessPeer: GPU " + std::to_string(other) + " cannot use GPU " + std::to_string(config.device) +
           "'s memory";
  return {};
}

int run(const options& opts) {
  const run_config& config = opts.run;
  bench::open_runtime_device(config.device);
  auto opened = membridge::cuda::device::open(config.device);
  if (!opened) throw device_unavailable(opened.error().message());
  const membridge::cuda::device dev = std::move(opened).value();

  // The growth round holds (steps + 1) GiB; attach rounds 1 GiB at a time; keep 2 GiB spare.
  const std::size_t growth_gib = config.run_growth ? static_cast<std::size_t>(config.growth_steps) + 1 : 1;
  const std::size_t needed = (growth_gib + 2) * 1_GiB;
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  MEMBRIDGE_IPC_BENCH_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < needed)
    throw device_unavailable(membridge::format_bytes(free_bytes) + " of " + membridge::format_bytes(total_bytes) +
                             " free, the benchmark needs " + membridge::format_bytes(needed));

  auto made = membridge::sync::create_vulkan_context_for(dev);
  if (!made)
    throw device_unavailable("no Vulkan device on CUDA device " + std::to_string(config.device) +
                             " (the frame handoff's semaphores are Vulkan's): " + made.error().message());
  const membridge::vulkan::device_context vk = std::move(made).value();

  run_environment env;
  env.device_name = dev.name();
  env.device_uuid = dev.uuid().to_string();
  env.pci_bus_id = dev.pci_bus_id();
  const auto cc = dev.compute_capability();
  env.compute_capability = std::to_string(cc[0]) + std::to_string(cc[1]);
  env.vulkan_device = vk.name();
  MEMBRIDGE_IPC_BENCH_CUDA(cudaDriverGetVersion(&env.driver_version));
  MEMBRIDGE_IPC_BENCH_CUDA(cudaRuntimeGetVersion(&env.runtime_version));

  child_process child = child_process::spawn(config.device);
  const watchdog guard(std::chrono::seconds(60), child.pid());
  set_phase("waiting for the child process to open the device and warm up");
  const auto hello = child.channel().receive<child_reply>(msg_kind::reply, std::chrono::seconds(60));
  if (hello.status == exit_no_device) throw device_unavailable(std::string("in the child process: ") + hello.message);
  if (hello.status != 0) throw bench_failure(hello.message);

  const bench::temp_dir dir("membridge-bench-ipc");
  run_results results;
  if (config.attach_peer_device >= 0) {
    results.other_gpu_not_run = other_gpu_obstacle(config, dev);
    if (!results.other_gpu_not_run.empty())
      std::cerr << "membridge_bench_ipc: attach on another GPU: not run (" << results.other_gpu_not_run << ")\n";
  }
  const int other_device = config.attach_peer_device >= 0 && results.other_gpu_not_run.empty() ? config.attach_peer_device : -1;
  std::int64_t t0 = monotonic_ns();
  if (config.run_attach) {
    results.attach = run_attach(dev, child, dir.file("attach.sock"), config.rounds, other_device);
    progress("(a) attach", t0);
  }
  if (config.run_growth) {
    t0 = monotonic_ns();
    results.growth = run_growth(dev, child, dir.file("growth.sock"), config.rounds, config.growth_steps);
    progress("(b) growth", t0);
  }
  if (config.run_frames) {
    t0 = monotonic_ns();
    results.frames = run_frames(vk, dev, child, dir.file("frames.sock"), config.frames);
    progress("(c) frame handoff", t0);
  }

  set_phase("stopping the child process");
  child.channel().send(plain_request{.kind = msg_kind::quit});
  (void)child.channel().receive<child_reply>(msg_kind::reply);
  if (const int status = child.wait(std::chrono::seconds(10)); status != 0)
    std::cerr << "warning: the child process exited with status " << status << '\n';

  print_report(std::cout, config, env, results);
  bench::emit_json_line(report_json(config, env, results), opts.json_path);
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], child_flag.data()) == 0)
    return child_main(std::atoi(argv[2]));
  options opts;
  if (const auto stop = parse_options(argc, argv, opts)) return *stop;
  return bench::run_main("membridge_bench_ipc", [&opts] { return run(opts); });
}
