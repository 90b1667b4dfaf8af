// membridge_bench_producer: a CUDA producer's per-frame host cost, frame_timeline's stream calls
// (cuda_acquire, k kernel launches, cuda_release) against sync::producer_graph (one graph launch),
// with a Vulkan consumer that keeps up, blocks of both paths interleaved, every frame's data checked.
// See bench/README.md (membridge_bench_producer).
#include "frame_memory.hpp"
#include "launch_floor.hpp"
#include "frame_options.hpp"
#include "producer_kernels.cuh"

#include "cli.hpp"
#include "cuda_support.hpp"
#include "stats.hpp"

#include <membridge/cuda/device.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/producer_graph.hpp>
#include <membridge/sync/same_gpu.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace membridge::bench::producer_bench {

namespace {

using steady = std::chrono::steady_clock;

struct config : frame_options {
  std::vector<std::uint32_t> ks{1, 4};  // frame steps per frame, one lane each
  int pin_cpu = -1;                     // --pin-cpu: every way also run with the producer thread on this CPU
};

// stream: frame_timeline's calls; graph: producer_graph::launch(stream, n), nothing else timed in
// it; graph_timed: launch(stream, n, &timing), which also reads the clock around each driver call
// (the measurement up to this commit, and where the breakdown by call comes from).
enum class path : std::uint8_t { stream = 0, graph = 1, graph_timed = 2 };
constexpr int path_count = 3;
// Each path's name in the table and key in the JSON, in path order.
struct path_text {
  const char* name;
  const char* key;
};
constexpr path_text path_texts[path_count] = {
    {"stream calls", "stream"}, {"producer_graph", "graph"}, {"producer_graph, timed by call", "graph_timed"}};
const char* path_name(path p) { return path_texts[static_cast<int>(p)].name; }
const char* path_key(path p) { return path_texts[static_cast<int>(p)].key; }

// A way of running a block: a path, the producer thread pinned or not. Index: path + 3 * pinned.
struct way {
  path p = path::stream;
  bool pinned = false;
  [[nodiscard]] int index() const { return static_cast<int>(p) + (pinned ? path_count : 0); }
};

// Inline here, as it always was (bench::ok_or_fail is out of line): the timed loop calls it.
void ok_or_fail(const result<void>& r, const char* doing) {
  if (!r) throw bench_failure(std::string(doing) + ": " + r.error().message());
}

struct block_result {
  std::vector<double> host_us;  // producer-thread time per timed frame
  std::vector<double> parts_us[3];  // graph path: wait update, signal update, cuGraphLaunch per timed frame
  double gpu_us = 0.0;          // GPU time per timed frame (CUDA events around the timed frames)
};

struct lane {  // one k
  std::uint32_t k = 1;
  double graph_create_us = 0.0;
  std::vector<block_result> blocks[2 * path_count];  // per way (way::index())
};

class bench_run {
 public:
  bench_run(const config& c, const cuda::device& cu, const vulkan::device_context& vk)
      : c_(c), cu_(cu), vk_(vk), queue_(vk.graphics_queue().queue) {
    timeline_ = value_or_fail(sync::frame_timeline::create(vk, cu, {.slots = c.slots}), "sync::frame_timeline::create");
    check_cuda(cudaEventCreate(&ev0_), "cudaEventCreate");
    check_cuda(cudaEventCreate(&ev1_), "cudaEventCreate");
  }
  bench_run(const bench_run&) = delete;
  bench_run& operator=(const bench_run&) = delete;
  ~bench_run() {
    (void)cudaEventDestroy(ev0_);
    (void)cudaEventDestroy(ev1_);
  }

  /// Creates k's graphs (timed once) and memory.
  void prepare(lane& l) {
    memory_.push_back(std::make_unique<frame_memory>(c_.warmup + c_.frames, c_.slots, c_.slot_words, l.k));
    const frame_memory& mem = *memory_.back();
    const std::uint32_t k = l.k;
    const auto t0 = steady::now();
    graphs_.push_back(value_or_fail(
        sync::producer_graph::create(cu_, timeline_,
                                     [&mem, k](CUstream stream, std::uint32_t slot) -> result<void> {
                                       for (std::uint32_t j = 0; j < k; ++j)
                                         if (const cudaError_t rc = launch_frame_step(mem.args(slot, j), stream);
                                             rc != cudaSuccess)
                                           return error(errc::internal, "launch_frame_step", cuda_error_text(rc));
                                       return ok();
                                     }),
        "sync::producer_graph::create (k = " + std::to_string(k) + ")"));
    l.graph_create_us = std::chrono::duration<double, std::micro>(steady::now() - t0).count();
  }

  block_result run_block(std::size_t lane_index, std::uint32_t k, way w, std::uint32_t seed) {
    const path p = w.p;
    frame_memory& mem = *memory_[lane_index];
    sync::producer_graph& graph = graphs_[lane_index];
    mem.reset(seed, stream_.get());
    const std::uint64_t total = c_.warmup + c_.frames;
    const std::uint64_t first = next_frame_;
    block_result out;
    sync::producer_graph::launch_timing timing;
    out.host_us.reserve(c_.frames);
    run_paced_block(
        {first, total, c_.warmup, c_.slots, "waiting for the consumer to submit a frame", w.pinned ? c_.pin_cpu : -1},
        timeline_, stream_.get(), ev0_, ev1_,
        [&](std::uint64_t n) {
          ok_or_fail(timeline_.submit(queue_, {}, n, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT), "frame_timeline::submit");
        },
        [&](std::uint64_t n) {
          if (p == path::stream) {
            ok_or_fail(timeline_.cuda_acquire(stream_.get(), n), "frame_timeline::cuda_acquire");
            for (std::uint32_t j = 0; j < k; ++j)
              check_cuda(launch_frame_step(mem.args(timeline_.slot(n), j), stream_.get()), "launch_frame_step");
            ok_or_fail(timeline_.cuda_release(stream_.get(), n), "frame_timeline::cuda_release");
          } else if (p == path::graph) {
            ok_or_fail(graph.launch(stream_.get(), n), "producer_graph::launch");
          } else {
            ok_or_fail(graph.launch(stream_.get(), n, &timing), "producer_graph::launch (timed by call)");
          }
        },
        [&](double host_us) {
          out.host_us.push_back(host_us);
          if (p == path::graph_timed) {
            const std::chrono::nanoseconds parts[3] = {timing.wait_update, timing.signal_update, timing.launch};
            for (int q = 0; q < 3; ++q)
              out.parts_us[q].push_back(std::chrono::duration<double, std::micro>(parts[q]).count());
          }
        },
        [this] { unblock(); });
    next_frame_ = first + total;
    ok_or_fail(timeline_.wait_consumed(next_frame_ - 1, wait_limit), "frame_timeline::wait_consumed (end of block)");
    check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize (end of block)");
    const std::uint64_t produced = value_or_fail(timeline_.produced().value(), "timeline_semaphore::value (produced)");
    if (produced != sync::frame_timeline::produced_value(next_frame_ - 1))
      throw bench_failure("the produced semaphore reads " + std::to_string(produced) + " after frame " +
                          std::to_string(next_frame_ - 1));
    float ms = 0.0F;
    check_cuda(cudaEventElapsedTime(&ms, ev0_, ev1_), "cudaEventElapsedTime");
    out.gpu_us = static_cast<double>(ms) * 1000.0 / static_cast<double>(c_.frames);
    mem.verify(seed, first, total,
               std::string(path_name(p)) + (w.pinned ? " (pinned)" : "") + ", k = " + std::to_string(k));
    return out;
  }

 private:
  // After a failure: signal both semaphores far ahead from the host, so neither the CUDA stream nor
  // the Vulkan queue is left waiting on a value nobody will signal (teardown would then hang).
  void unblock() noexcept {
    constexpr std::uint64_t far = std::uint64_t{1} << 40;
    (void)timeline_.produced().signal(far);
    (void)timeline_.consumed().signal(far);
    (void)cudaStreamSynchronize(stream_.get());
  }

  const config& c_;
  const cuda::device& cu_;
  const vulkan::device_context& vk_;
  VkQueue queue_ = VK_NULL_HANDLE;
  sync::frame_timeline timeline_;
  cuda_stream stream_;
  std::vector<std::unique_ptr<frame_memory>> memory_;
  std::vector<sync::producer_graph> graphs_;  // destroyed before the timeline (declared after)
  cudaEvent_t ev0_ = nullptr;
  cudaEvent_t ev1_ = nullptr;
  std::uint64_t next_frame_ = 0;
};

double p99(const std::vector<double>& v) { return percentile(v, 0.99); }

std::vector<double> pooled(const std::vector<block_result>& blocks) {
  std::vector<double> out;
  for (const auto& b : blocks) out.insert(out.end(), b.host_us.begin(), b.host_us.end());
  return out;
}

std::vector<double> pooled_part(const std::vector<block_result>& blocks, int part) {
  std::vector<double> out;
  for (const auto& b : blocks) out.insert(out.end(), b.parts_us[part].begin(), b.parts_us[part].end());
  return out;
}

std::vector<double> gpu_per_block(const std::vector<block_result>& blocks) {
  std::vector<double> out;
  for (const auto& b : blocks) out.push_back(b.gpu_us);
  return out;
}

// graph / stream per block pair (block i of each way ran next to each other), both unpinned or both pinned.
std::vector<double> paired_ratio(const lane& l, bool pinned, bool gpu) {
  const auto& stream = l.blocks[way{path::stream, pinned}.index()];
  const auto& graph = l.blocks[way{path::graph, pinned}.index()];
  std::vector<double> out;
  for (std::size_t i = 0; i < stream.size() && i < graph.size(); ++i) {
    const double s = gpu ? stream[i].gpu_us : median(stream[i].host_us);
    const double g = gpu ? graph[i].gpu_us : median(graph[i].host_us);
    out.push_back(g / s);
  }
  return out;
}

// The ways a run measures: the three paths unpinned, then (with --pin-cpu) pinned.
std::vector<way> ways_of(const config& c) {
  std::vector<way> out;
  for (const bool pinned : {false, true}) {
    if (pinned && c.pin_cpu < 0) break;
    for (int p = 0; p < path_count; ++p) out.push_back({static_cast<path>(p), pinned});
  }
  return out;
}

// One lane's ways (pinned or not) as JSON: each path's host_us and gpu_us_per_frame, the graph's
// breakdown by call (from the timed-by-call blocks) and the paired ratios graph / stream.
json ways_json(const lane& l, bool pinned) {
  json out = json::object();
  for (int p = 0; p < path_count; ++p) {
    const auto& blocks = l.blocks[way{static_cast<path>(p), pinned}.index()];
    const auto host = pooled(blocks);
    json pj = to_json(summarize(host), 3);
    pj["p99"] = rounded(p99(host), 3);
    out[path_key(static_cast<path>(p))] = {{"host_us", pj}, {"gpu_us_per_frame", to_json(summarize(gpu_per_block(blocks)), 2)}};
  }
  static constexpr const char* part_names[3] = {"wait_update", "signal_update", "graph_launch"};
  json bj = json::object();
  for (int q = 0; q < 3; ++q)
    bj[part_names[q]] = rounded(median(pooled_part(l.blocks[way{path::graph_timed, pinned}.index()], q)), 3);
  out["graph"]["host_breakdown_us_median"] = bj;
  out["host_ratio_graph_over_stream"] = rounded(median(paired_ratio(l, pinned, false)), 4);
  out["gpu_ratio_graph_over_stream"] = rounded(median(paired_ratio(l, pinned, true)), 4);
  return out;
}

// The worst k's median host time per frame of `w`'s pooled frames.
double worst_host(const std::vector<lane>& lanes, way w) {
  double worst = 0.0;
  for (const lane& l : lanes) worst = std::max(worst, median(pooled(l.blocks[w.index()])));
  return worst;
}

// The launch floor's ways: JSON key, what the text line calls it, samples, why they may be missing.
struct floor_way {
  const char* key;
  const char* label;
  const std::vector<double>* samples;
  const std::string* error = nullptr;
};

void print_launch_floor(const launch_floor_samples& floor, json& floor_json) {
  const floor_way ways[] = {
      {"kernel_graph_us", "graph of the kernel alone", &floor.kernel_graph_us},
      {"child_graph_us", "the kernel as a child graph node", &floor.child_graph_us},
      {"signal_graph_us", "kernel + produced signal node (no wait node), no update", &floor.signal_graph_us},
      {"wait_graph_us", "consumed wait node + kernel (no signal node), no update", &floor.wait_graph_us},
      {"semaphore_graph_us", "producer graph as instantiated (wait, kernel, signal), no update", &floor.semaphore_graph_us},
      {"captured_graph_us", "wait, kernel, signal captured into one flat graph (no child node), no update",
       &floor.captured_graph_us, &floor.captured_error},
      {"updated_graph_us", "producer_graph::launch (two updates + launch)", &floor.updated_graph_us},
      {"updated_launch_only_us", "  of which cuGraphLaunch", &floor.updated_launch_only_us},
      {"typed_updated_graph_us", "the same graph built here, updated by cuGraphExecExternalSemaphores*NodeSetParams",
       &floor.typed_updated_graph_us},
      {"typed_update_only_us", "  of which the two updates", &floor.typed_update_only_us},
      {"generic_updated_graph_us", "the same graph built here, updated by cuGraphExecNodeSetParams (CUDA 12.2+)",
       &floor.generic_updated_graph_us, &floor.generic_error},
      {"generic_update_only_us", "  of which the two updates", &floor.generic_update_only_us, &floor.generic_error}};
  std::cout << "launch floor (scratch timelines, 1 kernel, host us per call: median / p10)\n";
  for (const floor_way& w : ways) {
    if (w.samples->empty()) {  // a way the driver refused: the reason instead of figures
      const std::string why = w.error != nullptr && !w.error->empty() ? *w.error : "no samples";
      floor_json[w.key] = {{"error", why}};
      std::cout << "  " << w.label << ": not measured (" << why << ")\n";
      continue;
    }
    json fj = to_json(summarize(*w.samples), 3);
    fj["p99"] = rounded(p99(*w.samples), 3);
    floor_json[w.key] = fj;
    std::cout << "  " << w.label << ": " << fixed(median(*w.samples), 2) << " / " << fixed(percentile(*w.samples, 0.1), 2)
              << '\n';
  }
}

int run(const config& c) {
  const frame_devices devices = open_frame_devices(c.device);
  const auto& [cu, vk, driver_version, runtime_version] = devices;

  const std::vector<way> ways = ways_of(c);
  std::vector<lane> lanes;
  {
    bench_run b(c, cu, vk);
    check_cuda(load_frame_step(), "cudaFuncGetAttributes (loading the frame step before capture)");
    for (const std::uint32_t k : c.ks) {
      lane l;
      l.k = k;
      b.prepare(l);
      lanes.push_back(std::move(l));
    }
    // Interleaved: per block round, every k, every way, the way that goes first rotating.
    std::uint32_t seed = 0x9e3779b9U;
    const std::size_t n = ways.size();
    for (int r = 0; r < c.blocks; ++r)
      for (std::size_t li = 0; li < lanes.size(); ++li)
        for (std::size_t q = 0; q < n; ++q) {
          const way w = ways[(q + static_cast<std::size_t>(r)) % n];
          seed = seed * 1664525U + 1013904223U;
          lanes[li].blocks[w.index()].push_back(b.run_block(li, lanes[li].k, w, seed));
        }
  }
  // Where the graph path's host time comes from: the same frame step launched several ways (launch_floor.hpp).
  const launch_floor_samples floor = measure_launch_floor(cu, vk, c.blocks, c.quick ? 64 : 256);

  const std::string pin_text = c.pin_cpu < 0 ? "producer thread not pinned"
                                             : "each way also with the producer thread pinned to CPU " +
                                                   std::to_string(c.pin_cpu) + " (the consumer thread never)";
  std::cout << "membridge producer benchmark on " << cu.name() << " (device " << c.device << "), Vulkan " << vk.name()
            << ", CUDA driver " << driver_version << ", runtime " << runtime_version << "\n"
            << c.blocks << " interleaved blocks per way and k, " << c.frames << " timed frames each after " << c.warmup
            << " warm-up; " << c.slots << " slots; " << pin_text
            << "; Vulkan consumer (empty submits on the graphics queue, waiting "
            << "produced, signalling consumed); every frame's stamps checked\n";
  text_table t({{"k"}, {"path"}, {"pinned"}, {"host us median", align::right}, {"p99", align::right},
                {"p10", align::right}, {"GPU us/frame (median of blocks)", align::right}});
  json lanes_json = json::array();
  for (const lane& l : lanes) {
    for (const way& w : ways) {
      const auto& blocks = l.blocks[w.index()];
      const auto host = pooled(blocks);
      t.add_row({std::to_string(l.k), path_name(w.p), w.pinned ? "CPU " + std::to_string(c.pin_cpu) : "no",
                 fixed(median(host), 2), fixed(p99(host), 2), fixed(percentile(host, 0.1), 2),
                 fixed(median(gpu_per_block(blocks)), 1)});
    }
    json lj = {{"k", l.k}, {"graph_create_us", rounded(l.graph_create_us, 1)}};
    lj.update(ways_json(l, false));  // the unpinned ways at the top level, as before --pin-cpu existed
    if (c.pin_cpu >= 0) {
      lj["pinned"] = ways_json(l, true);
      lj["pinned"]["cpu"] = c.pin_cpu;
    }
    lanes_json.push_back(lj);
  }
  t.print(std::cout);
  for (const lane& l : lanes)
    for (const bool pinned : {false, true}) {
      if (pinned && c.pin_cpu < 0) break;
      const auto& timed = l.blocks[way{path::graph_timed, pinned}.index()];
      std::cout << "  k = " << l.k << (pinned ? ", pinned" : "") << ": host graph/stream "
                << fixed(median(paired_ratio(l, pinned, false)), 3) << ", GPU graph/stream "
                << fixed(median(paired_ratio(l, pinned, true)), 3) << " (median of paired blocks); "
                << "graph timed by call: wait update " << fixed(median(pooled_part(timed, 0)), 2)
                << " us, signal update " << fixed(median(pooled_part(timed, 1)), 2) << " us, cuGraphLaunch "
                << fixed(median(pooled_part(timed, 2)), 2) << " us"
                << (pinned ? "" : "; producer_graph::create " + fixed(l.graph_create_us, 0) + " us") << '\n';
    }

  json floor_json = json::object();
  print_launch_floor(floor, floor_json);

  // The goal's figure: producer_graph::launch with nothing else in the timed region, the worst k;
  // pinned when --pin-cpu was given (the row says so), the other figures beside it.
  const bool goal_pinned = c.pin_cpu >= 0;
  const double unpinned_host = worst_host(lanes, {path::graph, false});
  const double goal_host = goal_pinned ? worst_host(lanes, {path::graph, true}) : unpinned_host;
  double worst_gpu_ratio = 0.0;
  for (const lane& l : lanes) worst_gpu_ratio = std::max(worst_gpu_ratio, median(paired_ratio(l, goal_pinned, true)));
  const std::string variant = std::string("producer_graph::launch(stream, n), nothing else timed; producer thread ") +
                              (goal_pinned ? "pinned to CPU " + std::to_string(c.pin_cpu) : "not pinned");

  struct goal {
    const char* key;
    std::string what;
    double target;
    double measured;
  };
  const goal goals[] = {
      {"producer_host_us_per_frame", "producer_graph host time per frame, median (worst k; " + variant + ")", 5.0,
       goal_host},
      {"producer_gpu_ratio_graph_over_stream", "GPU time per frame graph / stream (informative, worst k)", 1.05,
       worst_gpu_ratio},
  };
  std::cout << "\ngoals (reported, not enforced)\n";
  json gj = json::object();
  bool all = true;
  for (const goal& g : goals) {
    const bool met = !std::isnan(g.measured) && g.measured <= g.target;
    std::cout << "  " << (met ? "met    " : "NOT MET") << "  " << g.what << " <= " << fixed(g.target, 2)
              << ": measured " << fixed(g.measured, 3) << '\n';
    gj[g.key] = {{"comparison", "<="}, {"target", g.target}, {"measured", rounded(g.measured, 4)}, {"met", met}};
    all = all && met;
  }
  auto& host_goal = gj["producer_host_us_per_frame"];
  host_goal["variant"] = variant;
  host_goal["pinned_cpu"] = goal_pinned ? json(c.pin_cpu) : json(nullptr);
  host_goal["measured_unpinned"] = rounded(unpinned_host, 4);
  host_goal["measured_unpinned_timed_by_call"] = rounded(worst_host(lanes, {path::graph_timed, false}), 4);
  if (goal_pinned) host_goal["measured_pinned_timed_by_call"] = rounded(worst_host(lanes, {path::graph_timed, true}), 4);
  std::cout << "  (" << variant << "; unpinned " << fixed(unpinned_host, 3) << " us, unpinned and timed by call "
            << fixed(worst_host(lanes, {path::graph_timed, false}), 3) << " us)\n";

  json config_json = frame_options_json(c);
  config_json["quick"] = c.quick;
  config_json["pin_cpu"] = goal_pinned ? json(c.pin_cpu) : json(nullptr);
  json j = {{"bench", "producer"}};
  j.update(devices_json(devices));
  j.update(json{{"driver_version", driver_version},
                {"runtime_version", runtime_version},
                {"config", config_json},
                {"lanes", lanes_json},
                {"launch_floor", floor_json},
                {"goals", gj},
                {"all_goals_met", all},
                {"data_checked", true}});
  emit_json_line(j, c.json_path);
  return exit_ok;
}

}  // namespace

}  // namespace membridge::bench::producer_bench

int main(int argc, char** argv) {
  using namespace membridge::bench::producer_bench;
  return frame_bench_main<config>(argc, argv, "membridge_bench_producer",
                                  "producer-thread host time per frame, stream calls vs producer_graph",
                                  "interleaved blocks per way and k", [](CLI::App& app, config& c) {
                                    app.add_option("--pin-cpu", c.pin_cpu,
                                                   "also run every way with the producer thread pinned to this CPU "
                                                   "(the goal then uses the pinned figure; both are reported)")
                                        ->check(CLI::Range(0, 1023));
                                  }, run);
}
