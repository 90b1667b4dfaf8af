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
};

enum class path : std::uint8_t { stream = 0, graph = 1 };
const char* path_name(path p) { return p == path::stream ? "stream calls" : "producer_graph"; }

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
  std::vector<block_result> blocks[2];  // per path
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

  block_result run_block(std::size_t lane_index, std::uint32_t k, path p, std::uint32_t seed) {
    frame_memory& mem = *memory_[lane_index];
    sync::producer_graph& graph = graphs_[lane_index];
    mem.reset(seed, stream_.get());
    const std::uint64_t total = c_.warmup + c_.frames;
    const std::uint64_t first = next_frame_;
    block_result out;
    sync::producer_graph::launch_timing timing;
    out.host_us.reserve(c_.frames);
    run_paced_block(
        {first, total, c_.warmup, c_.slots, "waiting for the consumer to submit a frame"}, timeline_, stream_.get(), ev0_,
        ev1_,
        [&](std::uint64_t n) {
          ok_or_fail(timeline_.submit(queue_, {}, n, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT), "frame_timeline::submit");
        },
        [&](std::uint64_t n) {
          if (p == path::stream) {
            ok_or_fail(timeline_.cuda_acquire(stream_.get(), n), "frame_timeline::cuda_acquire");
            for (std::uint32_t j = 0; j < k; ++j)
              check_cuda(launch_frame_step(mem.args(timeline_.slot(n), j), stream_.get()), "launch_frame_step");
            ok_or_fail(timeline_.cuda_release(stream_.get(), n), "frame_timeline::cuda_release");
          } else {
            ok_or_fail(graph.launch(stream_.get(), n, &timing), "producer_graph::launch");
          }
        },
        [&](double host_us) {
          out.host_us.push_back(host_us);
          if (p == path::graph) {
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
    mem.verify(seed, first, total, std::string(path_name(p)) + ", k = " + std::to_string(k));
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

// graph / stream per block pair (block i of each path ran next to each other).
std::vector<double> paired_ratio(const lane& l, bool gpu) {
  std::vector<double> out;
  for (std::size_t i = 0; i < l.blocks[0].size() && i < l.blocks[1].size(); ++i) {
    const double s = gpu ? l.blocks[0][i].gpu_us : median(l.blocks[0][i].host_us);
    const double g = gpu ? l.blocks[1][i].gpu_us : median(l.blocks[1][i].host_us);
    out.push_back(g / s);
  }
  return out;
}

int run(const config& c) {
  const frame_devices devices = open_frame_devices(c.device);
  const auto& [cu, vk, driver_version, runtime_version] = devices;

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
    // Interleaved: per block round, every k, both paths, the path that goes first alternating.
    std::uint32_t seed = 0x9e3779b9U;
    for (int r = 0; r < c.blocks; ++r)
      for (std::size_t li = 0; li < lanes.size(); ++li)
        for (int q = 0; q < 2; ++q) {
          const path p = static_cast<path>((q + r) % 2);
          seed = seed * 1664525U + 1013904223U;
          lanes[li].blocks[static_cast<int>(p)].push_back(b.run_block(li, lanes[li].k, p, seed));
        }
  }
  // Where the graph path's host time comes from: the same frame step launched three ways (launch_floor.hpp).
  const launch_floor_samples floor = measure_launch_floor(cu, vk, c.blocks, c.quick ? 64 : 256);

  std::cout << "membridge producer benchmark on " << cu.name() << " (device " << c.device << "), Vulkan " << vk.name()
            << ", CUDA driver " << driver_version << ", runtime " << runtime_version << "\n"
            << c.blocks << " interleaved blocks per path and k, " << c.frames << " timed frames each after " << c.warmup
            << " warm-up; " << c.slots << " slots; Vulkan consumer (empty submits on the graphics queue, waiting "
            << "produced, signalling consumed); every frame's stamps checked\n";
  text_table t({{"k"}, {"path"}, {"host us median", align::right}, {"p99", align::right}, {"p10", align::right},
                {"GPU us/frame (median of blocks)", align::right}});
  json lanes_json = json::array();
  double worst_graph_host = 0.0;
  double worst_gpu_ratio = 0.0;
  for (const lane& l : lanes) {
    json lj = {{"k", l.k}, {"graph_create_us", rounded(l.graph_create_us, 1)}};
    for (int p = 0; p < 2; ++p) {
      const auto host = pooled(l.blocks[p]);
      const auto gpu = gpu_per_block(l.blocks[p]);
      t.add_row({std::to_string(l.k), path_name(static_cast<path>(p)), fixed(median(host), 2), fixed(p99(host), 2),
                 fixed(percentile(host, 0.1), 2), fixed(median(gpu), 1)});
      json pj = to_json(summarize(host), 3);
      pj["p99"] = rounded(p99(host), 3);
      lj[p == 0 ? "stream" : "graph"] = {{"host_us", pj}, {"gpu_us_per_frame", to_json(summarize(gpu), 2)}};
    }
    {  // where the graph path's host time goes (medians of the three driver calls)
      static constexpr const char* part_names[3] = {"wait_update", "signal_update", "graph_launch"};
      json bj = json::object();
      for (int q = 0; q < 3; ++q) bj[part_names[q]] = rounded(median(pooled_part(l.blocks[1], q)), 3);
      lj["graph"]["host_breakdown_us_median"] = bj;
    }
    const double host_ratio = median(paired_ratio(l, false));
    const double gpu_ratio = median(paired_ratio(l, true));
    lj["host_ratio_graph_over_stream"] = rounded(host_ratio, 4);
    lj["gpu_ratio_graph_over_stream"] = rounded(gpu_ratio, 4);
    lanes_json.push_back(lj);
    worst_graph_host = std::max(worst_graph_host, median(pooled(l.blocks[1])));
    worst_gpu_ratio = std::max(worst_gpu_ratio, gpu_ratio);
  }
  t.print(std::cout);
  for (const lane& l : lanes)
    std::cout << "  k = " << l.k << ": host graph/stream " << fixed(median(paired_ratio(l, false)), 3)
              << ", GPU graph/stream " << fixed(median(paired_ratio(l, true)), 3)
              << " (median of paired blocks); producer_graph::create " << fixed(l.graph_create_us, 0)
              << " us; graph host median by call: wait update " << fixed(median(pooled_part(l.blocks[1], 0)), 2)
              << " us, signal update " << fixed(median(pooled_part(l.blocks[1], 1)), 2) << " us, cuGraphLaunch "
              << fixed(median(pooled_part(l.blocks[1], 2)), 2) << " us\n";

  const std::pair<const char*, const std::vector<double>*> floor_ways[] = {
      {"kernel_graph_us", &floor.kernel_graph_us},
      {"semaphore_graph_us", &floor.semaphore_graph_us},
      {"updated_graph_us", &floor.updated_graph_us},
      {"updated_launch_only_us", &floor.updated_launch_only_us}};
  json floor_json = json::object();
  for (const auto& [key, samples] : floor_ways) {
    json fj = to_json(summarize(*samples), 3);
    fj["p99"] = rounded(p99(*samples), 3);
    floor_json[key] = fj;
  }
  std::cout << "launch floor (scratch timeline, 1 kernel, host us median / p10): graph of the kernel alone "
            << fixed(median(floor.kernel_graph_us), 2) << " / " << fixed(percentile(floor.kernel_graph_us, 0.1), 2)
            << "; producer graph as instantiated (no update) " << fixed(median(floor.semaphore_graph_us), 2) << " / "
            << fixed(percentile(floor.semaphore_graph_us, 0.1), 2) << "; producer_graph::launch (updates + launch) "
            << fixed(median(floor.updated_graph_us), 2) << " / " << fixed(percentile(floor.updated_graph_us, 0.1), 2)
            << ", of which cuGraphLaunch " << fixed(median(floor.updated_launch_only_us), 2) << '\n';

  struct goal {
    const char* key;
    const char* what;
    double target;
    double measured;
  };
  const goal goals[] = {
      {"producer_host_us_per_frame", "producer_graph host time per frame, median (worst k)", 5.0, worst_graph_host},
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
  json config_json = frame_options_json(c);
  config_json["quick"] = c.quick;
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
                                  "interleaved blocks per path and k", [](CLI::App&, config&) {}, run);
}
