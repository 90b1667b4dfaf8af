// bench/cross_gpu/main.cpp: the particle frame loop with the simulation on one GPU (B, --sim-device)
// and the frame slots and their Vulkan consumer on another (A, --render-device), through
// sync::cross_gpu_link in each mode (peer_write, copy_engine, staged), against the same pipeline on
// A alone, interleaved round by round in one process.
//
// A frame: the sim steps its particles (particles::step_cuda, state on the sim's GPU), a copy kernel
// writes them into the frame's write target (A's slot, or B's buffer that the link moves), the frame
// timeline on A hands the slot to Vulkan, and Vulkan's submit waits for it and signals `consumed`
// (an empty submit: the renderer's own cost is the same in both pipelines). Three slots, no host wait
// in the loop. Frames per second over --frames frames after --warmup frames; ratio = cross-GPU fps
// over one-GPU fps. The link's bandwidth is a copy of one slot from B to A on B's copy engine; the
// link's share is the cross-GPU loop's bytes per second over it. Goal (issue 14):
// cross_gpu_frame_throughput_ratio >= 0.9 for the default mode, at the largest particle count whose
// one-GPU bytes per second fit the link (null when none fits, or when the GPUs cannot peer).
// After the rounds, A's last slot is compared bitwise with the sim's particles.
//
// With one GPU: a JSON line with "not_run" and goals met null, exit 0. Exit status otherwise: 0 when
// every data check passed (goals met or not), 1 on an error or wrong data, 2 without a usable device.
#include "cuda_support.hpp"
#include "stats.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/peer.hpp>
#include <membridge/sync/cross_gpu_link.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/same_gpu.hpp>

#include "kernels.cuh"
#include "particle_sim_cuda.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace bench = membridge::bench;
namespace sync = membridge::sync;
using membridge::bench::bench_failure;
using membridge::bench::check_cuda;
using namespace std::chrono_literals;

constexpr std::uint32_t default_slots = 6;  // across GPUs, fewer slots leave the link idle (docs/performance.md)

struct options {
  int render_device = 0;                       ///< A: the slots and Vulkan.
  int sim_device = 1;                          ///< B: the simulation.
  std::vector<std::size_t> particles{1 << 20, 1 << 22};
  int frames = 300;
  int warmup = 30;
  int rounds = 3;
  std::uint32_t slots = default_slots;  ///< Frame slots (the same for every pipeline).
  std::string json_path;
};

template <class T>
T take(membridge::result<T> r, const char* what) {
  if (!r) throw bench_failure(std::string(what) + ": " + r.error().message());
  return std::move(r).value();
}
void take(membridge::result<void> r, const char* what) {
  if (!r) throw bench_failure(std::string(what) + ": " + r.error().message());
}

/// The state of one pipeline: the slots on A, the timeline, the sim's particles, and (cross-GPU) the link.
struct pipeline {
  std::optional<sync::cross_gpu_mode> mode;  ///< empty: everything on A
  std::size_t count = 0;
  membridge::cuda::growable_buffer slots;
  sync::frame_timeline timeline;
  sync::cross_gpu_link link;
  particles::particle* state = nullptr;  ///< on the sim's GPU (A for the one-GPU pipeline)
  int sim_device = 0;
  cudaStream_t stream = nullptr;  ///< the sim's stream
  std::uint64_t next_frame = 0;
  std::uint32_t slot_count = default_slots;

  [[nodiscard]] std::size_t bytes() const { return count * sizeof(particles::particle); }
  [[nodiscard]] CUdeviceptr slot(std::uint64_t frame) const { return slots.address() + (frame % slot_count) * bytes(); }
};

std::string name_of(const pipeline& p) { return p.mode ? std::string(sync::to_string(*p.mode)) : "one_gpu"; }

pipeline make_pipeline(const membridge::cuda::device& a, const membridge::cuda::device& b,
                       const membridge::vulkan::device_context& vk, std::size_t count,
                       std::uint32_t slots, std::optional<sync::cross_gpu_mode> mode) {
  pipeline p;
  p.slot_count = slots;
  p.mode = mode;
  p.count = count;
  p.sim_device = mode ? b.ordinal() : a.ordinal();
  const std::size_t bytes = membridge::round_up(p.slot_count * p.bytes(), a.granularity()).value();
  p.slots = take(membridge::cuda::growable_buffer::create(a, {.size = bytes, .max_size = bytes}), "the slots");
  p.timeline = take(sync::frame_timeline::create(vk, a, {.slots = p.slot_count}), "the frame timeline");
  if (mode) {
    std::vector<CUdeviceptr> addresses;
    for (std::uint32_t k = 0; k < p.slot_count; ++k) addresses.push_back(p.slot(k));
    p.link = take(sync::cross_gpu_link::create(a, b, addresses, p.bytes(), {.mode = *mode}), "the link");
  }
  check_cuda(cudaSetDevice(p.sim_device), "cudaSetDevice");
  check_cuda(cudaStreamCreateWithFlags(&p.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check_cuda(cudaMalloc(&p.state, p.bytes()), "cudaMalloc");
  const auto initial = particles::initial_particles(count, 7);
  check_cuda(cudaMemcpy(p.state, initial.data(), p.bytes(), cudaMemcpyHostToDevice), "cudaMemcpy");
  return p;
}

void free_pipeline(pipeline& p) {
  if (p.link.valid()) take(p.link.synchronize(), "synchronising the link");
  check_cuda(cudaSetDevice(p.sim_device), "cudaSetDevice");
  check_cuda(cudaStreamSynchronize(p.stream), "cudaStreamSynchronize");
  check_cuda(cudaStreamDestroy(p.stream), "cudaStreamDestroy");
  check_cuda(cudaFree(p.state), "cudaFree");
}

/// One frame, enqueued without a host wait.
void frame(pipeline& p, VkQueue queue) {
  const std::uint64_t n = p.next_frame++;
  CUdeviceptr target = p.slot(n);
  if (p.mode)
    target = take(p.link.begin_frame(p.timeline, p.stream, n), "begin_frame");
  else
    take(p.timeline.cuda_acquire(p.stream, n), "cuda_acquire");
  check_cuda(cudaSetDevice(p.sim_device), "cudaSetDevice");
  check_cuda(particles::step_cuda(p.state, p.count, particles::default_params(), 1, p.stream), "step_cuda");
  check_cuda(membridge::testing::gpu::copy16(p.state, reinterpret_cast<void*>(target), p.bytes(), p.stream), "copy16");
  if (p.mode)
    take(p.link.end_frame(p.timeline, p.stream, n), "end_frame");
  else
    take(p.timeline.cuda_release(p.stream, n), "cuda_release");
  take(p.timeline.submit(queue, {}, n, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT), "the consumer's submit");
}

/// Frames per second of `frames` frames after `warmup`.
double run_frames(pipeline& p, VkQueue queue, int warmup, int frames) {
  for (int i = 0; i < warmup; ++i) frame(p, queue);
  take(p.timeline.wait_consumed(p.next_frame - 1, 60s), "waiting for the warm-up");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < frames; ++i) frame(p, queue);
  take(p.timeline.wait_consumed(p.next_frame - 1, 60s), "waiting for the last frame");
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - t0;
  return frames / elapsed.count();
}

/// A's last written slot equals the sim's particles, bit for bit.
void check_last_slot(const pipeline& p) {
  std::vector<std::byte> slot(p.bytes()), state(p.bytes());
  // Each copy runs on the GPU that owns the memory (the slots are A's, the state the sim's).
  check_cuda(cudaSetDevice(p.slots.chunk(0).device), "cudaSetDevice");
  check_cuda(cudaMemcpy(slot.data(), reinterpret_cast<const void*>(p.slot(p.next_frame - 1)), p.bytes(),
                        cudaMemcpyDeviceToHost),
             "cudaMemcpy (the slot)");
  check_cuda(cudaSetDevice(p.sim_device), "cudaSetDevice");
  check_cuda(cudaMemcpy(state.data(), p.state, p.bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy (the state)");
  if (std::memcmp(slot.data(), state.data(), p.bytes()) != 0)
    throw bench_failure(name_of(p) + ", " + std::to_string(p.count) + " particles: A's last slot differs from the sim");
}

/// The link's bandwidth B -> A in bytes per second: one slot copied by B's copy engine, median of 9.
double link_bandwidth(pipeline& copy_engine) {
  const std::size_t bytes = copy_engine.bytes();
  check_cuda(cudaSetDevice(copy_engine.sim_device), "cudaSetDevice");
  cudaEvent_t start = nullptr, stop = nullptr;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> rates;
  for (int i = 0; i < 9; ++i) {
    check_cuda(cudaEventRecord(start, copy_engine.stream), "cudaEventRecord");
    check_cuda(cudaMemcpyAsync(reinterpret_cast<void*>(copy_engine.slot(0)), copy_engine.state, bytes,
                               cudaMemcpyDefault, copy_engine.stream),
               "cudaMemcpyAsync (B -> A)");
    check_cuda(cudaEventRecord(stop, copy_engine.stream), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    rates.push_back(static_cast<double>(bytes) / (static_cast<double>(ms) * 1e-3));
  }
  check_cuda(cudaEventDestroy(start), "cudaEventDestroy");
  check_cuda(cudaEventDestroy(stop), "cudaEventDestroy");
  return bench::median(rates);
}

bench::json goal_json(std::optional<double> measured, const std::string& note) {
  bench::json g = {{"comparison", ">="}, {"target", 0.9}};
  g["measured"] = measured ? bench::json(bench::rounded(*measured, 4)) : bench::json(nullptr);
  g["met"] = measured ? bench::json(*measured >= 0.9) : bench::json(nullptr);
  g["note"] = note;
  return g;
}

void emit(const bench::json& out, const options& opts) {
  const std::string line = out.dump(-1, ' ', false, bench::json::error_handler_t::replace);
  std::cout << line << std::endl;
  if (!opts.json_path.empty()) {
    std::ofstream file(opts.json_path);
    file << line << '\n';
    if (!file) throw bench_failure("cannot write " + opts.json_path);
  }
}

int run(const options& opts) {
  int gpus = 0;
  if (const cudaError_t rc = cudaGetDeviceCount(&gpus); rc != cudaSuccess)
    throw bench::device_unavailable("cudaGetDeviceCount: " + bench::cuda_error_text(rc));
  bench::json out = {{"bench", "cross_gpu"}};
  if (gpus < 2 || opts.sim_device >= gpus || opts.render_device >= gpus || opts.sim_device == opts.render_device) {
    const std::string why = "needs two GPUs (" + std::to_string(gpus) + " here, sim device " +
                            std::to_string(opts.sim_device) + ", render device " + std::to_string(opts.render_device) + ")";
    std::cout << "not run: " << why << '\n';
    out["not_run"] = why;
    out["goals"] = {{"cross_gpu_frame_throughput_ratio", goal_json(std::nullopt, "not run")}};
    out["all_goals_met"] = nullptr;
    emit(out, opts);
    return bench::exit_ok;
  }
  bench::open_runtime_device(opts.sim_device);
  bench::open_runtime_device(opts.render_device);
  const auto a = take(membridge::cuda::device::open(opts.render_device), "opening the render device");
  const auto b = take(membridge::cuda::device::open(a.shared_driver(), opts.sim_device), "opening the sim device");
  const auto vk = take(sync::create_vulkan_context_for(a), "a Vulkan context on the render device");
  const VkQueue queue = vk.graphics_queue().queue;
  const auto peer = take(membridge::cuda::query_peer(b, a), "the peer link");
  out["render_device"] = a.name() + " (" + a.pci_bus_id() + ")";
  out["sim_device"] = b.name() + " (" + b.pci_bus_id() + ")";
  out["peer_access"] = peer.access;
  out["default_mode"] = std::string(sync::to_string(sync::default_cross_gpu_peer_mode));
  out["slots"] = opts.slots;
  std::cout << "cross-GPU frame loop: sim on " << out["sim_device"].get<std::string>() << ", slots and Vulkan on "
            << out["render_device"].get<std::string>() << ", peer access " << (peer.access ? "yes" : "no") << '\n';

  std::vector<sync::cross_gpu_mode> modes{sync::cross_gpu_mode::staged};
  if (peer.access) modes = {sync::cross_gpu_mode::peer_write, sync::cross_gpu_mode::copy_engine, sync::cross_gpu_mode::staged};
  bench::json runs = bench::json::array();
  std::optional<double> goal_ratio;
  std::string goal_note = peer.access ? "no particle count's one-GPU bytes per second fit the link" : "no peer access";
  for (const std::size_t count : opts.particles) {
    std::vector<pipeline> pipes;
    pipes.push_back(make_pipeline(a, b, vk, count, opts.slots, std::nullopt));
    for (const auto m : modes) pipes.push_back(make_pipeline(a, b, vk, count, opts.slots, m));
    std::optional<double> link_bps;  // measured first: nothing is in flight yet
    for (auto& p : pipes)
      if (p.mode == sync::cross_gpu_mode::copy_engine) link_bps = link_bandwidth(p);
    std::vector<std::vector<double>> fps(pipes.size());
    for (int r = 0; r < opts.rounds; ++r)
      for (std::size_t i = 0; i < pipes.size(); ++i) fps[i].push_back(run_frames(pipes[i], queue, opts.warmup, opts.frames));
    for (auto& p : pipes) {
      take(p.timeline.wait_consumed(p.next_frame - 1, 60s), "the last frame");
      if (p.link.valid()) take(p.link.synchronize(), "synchronising the link");
      check_last_slot(p);
    }
    const double base = bench::median(fps[0]);
    const double bytes = static_cast<double>(pipes[0].bytes());
    const bool fits = link_bps && base * bytes <= *link_bps;
    std::cout << count << " particles (" << membridge::format_bytes(pipes[0].bytes()) << " per frame): one GPU "
              << bench::fixed(base, 1) << " fps";
    if (link_bps) std::cout << ", link " << bench::fixed(*link_bps / 1e9, 1) << " GB/s";
    std::cout << '\n';
    for (std::size_t i = 1; i < pipes.size(); ++i) {
      const double cross = bench::median(fps[i]);
      const double ratio = cross / base;
      bench::json run = {{"particles", count}, {"mode", name_of(pipes[i])}, {"bytes_per_frame", pipes[i].bytes()},
                         {"one_gpu_fps", bench::rounded(base, 2)}, {"cross_gpu_fps", bench::rounded(cross, 2)},
                         {"cross_gpu_frame_throughput_ratio", bench::rounded(ratio, 4)},
                         {"one_gpu_fps_summary", bench::to_json(bench::summarize(fps[0]), 2)},
                         {"cross_gpu_fps_summary", bench::to_json(bench::summarize(fps[i]), 2)}};
      run["link_gbps"] = link_bps ? bench::json(bench::rounded(*link_bps / 1e9, 2)) : bench::json(nullptr);
      run["link_share"] = link_bps ? bench::json(bench::rounded(cross * bytes / *link_bps, 4)) : bench::json(nullptr);
      run["fits_link"] = fits;
      runs.push_back(run);
      std::cout << "  " << name_of(pipes[i]) << ": " << bench::fixed(cross, 1) << " fps, ratio " << bench::fixed(ratio, 3);
      if (link_bps) std::cout << ", link share " << bench::fixed(cross * bytes / *link_bps, 3);
      std::cout << '\n';
      if (fits && pipes[i].mode == sync::default_cross_gpu_peer_mode) {
        goal_ratio = ratio;  // the largest count that fits wins (counts ascend)
        goal_note = std::to_string(count) + " particles, " + name_of(pipes[i]);
      }
    }
    for (auto& p : pipes) free_pipeline(p);
  }
  out["frames"] = opts.frames;
  out["rounds"] = opts.rounds;
  out["runs"] = runs;
  out["goals"] = {{"cross_gpu_frame_throughput_ratio", goal_json(goal_ratio, goal_note)}};
  out["all_goals_met"] = goal_ratio ? bench::json(*goal_ratio >= 0.9) : bench::json(nullptr);
  out["data_checked"] = true;
  emit(out, opts);
  return bench::exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  options opts;
  CLI::App app{"membridge_bench_cross_gpu: the particle frame loop with the sim on another GPU than the slots"};
  app.add_option("--render-device", opts.render_device, "GPU A: the slots and the Vulkan consumer");
  app.add_option("--sim-device", opts.sim_device, "GPU B: the simulation");
  app.add_option("--particles", opts.particles, "particle counts (ascending)");
  app.add_option("--frames", opts.frames, "timed frames per run")->check(CLI::PositiveNumber);
  app.add_option("--warmup", opts.warmup, "frames before timing")->check(CLI::NonNegativeNumber);
  app.add_option("--rounds", opts.rounds, "interleaved rounds")->check(CLI::PositiveNumber);
  app.add_option("--slots", opts.slots, "frame slots of every pipeline")->check(CLI::Range(2, 16))->capture_default_str();
  app.add_option("--json", opts.json_path, "write the JSON line to this file too");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? bench::exit_ok : bench::exit_usage;
  }
  return bench::run_main("membridge_bench_cross_gpu", [&opts] { return run(opts); });
}
