// bench/gl/gl_bench.cpp: membridge's OpenGL path against legacy CUDA-GL interop, in one process and
// one headless EGL context on the CUDA device's GPU, interleaved, data checked every frame:
//   (a) steady frames at 1080p and 4K RGBA sizes: GPU frame time, render-thread host time per frame,
//       and the one-time cost (registration versus import);
//   (b) a buffer doubling every 60 frames from 64 MiB to 2 GiB: worst frame and peak memory;
//   (c) k = 1, 2, 4, 8 CUDA steps per drawn frame: CUDA<->GL transfers per drawn frame and what they
//       cost in GPU frame time;
//   (p) growth while GL draws at a paced rate; (v) the sim viewed by GL at a paced 60 and 144 Hz
//       (viewed.hpp): sim steps/s with the viewer against the sim alone.
// Prints a table per part, the goals and, last, one JSON line starting with {"bench":"gl".
// Exit status: 0 when every data check passed (goals met or not), 1 on a CUDA/GL/membridge error or
// wrong data, 2 without a usable CUDA device (or no GL context on it), 64 for a bad command line.
// See README.md beside this file.
#include "parts.hpp"
#include "paced_growth.hpp"
#include "report.hpp"
#include "viewed.hpp"

#include "cli.hpp"

#include <membridge/core/units.hpp>
#include <membridge/sync/gl_bridge.hpp>
#include <membridge/sync/same_gpu.hpp>

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>

namespace {

using namespace membridge::bench::gl_bench;
namespace bench = membridge::bench;
using bench::cuda_version_text;
using namespace membridge::literals;

struct options {
  int frames = 200;
  int blocks = 6;
  int growth_rounds = 3;
  std::uint32_t slots = 2;
  bool quick = false;
  bool import_on_render_thread = false;
  std::string parts = "abc";
  double hz = 144.0;
  std::size_t goal_chunk_mib = 64;
  std::string json_path;
  int device = 0;
};

std::optional<int> parse_options(int argc, char** argv, options& opts) {
  CLI::App app{"membridge GL benchmark: VMM memory imported into GL and ordered by timeline semaphores versus "
               "legacy cudaGraphicsGLRegisterBuffer + map/unmap (steady frames, growth, several CUDA steps per frame)"};
  app.add_option("--frames", opts.frames, "timed frames per block (parts a and c)")
      ->check(CLI::Range(10, 100000))
      ->capture_default_str();
  app.add_option("--blocks", opts.blocks, "interleaved blocks per path (part c runs half as many per k)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--growth-rounds", opts.growth_rounds, "interleaved rounds per path of part b")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--slots", opts.slots, "frames in flight and ring slots, both paths")
      ->check(CLI::Range(1, 4))
      ->capture_default_str();
  app.add_flag("--quick", opts.quick, "small sizes and few frames (a smoke run, not a measurement)");
  app.add_flag("--import-on-render-thread", opts.import_on_render_thread,
               "part b: follow growth on the render thread instead of a thread with a shared GL context");
  app.add_option("--parts", opts.parts, "which parts to run, any of a, b, c, p (paced growth), v (the sim viewed by GL)")->capture_default_str();
  app.add_option("--hz", opts.hz, "part p: pacing rate")->check(CLI::Range(10.0, 1000.0))->capture_default_str();
  app.add_option("--goal-chunk-mib", opts.goal_chunk_mib, "part p: chunk cap (MiB) of the configuration the goal uses")
      ->capture_default_str();
  bench::add_json_option(app, opts.json_path);
  bench::add_device_option(app, opts.device);
  const auto check_parts = [&opts] {
    if (opts.parts.find_first_not_of("abcpv") != std::string::npos || opts.parts.empty())
      throw CLI::ValidationError("--parts", "use letters among a, b, c, p, v");
  };
  if (const auto stop = bench::parse_command_line(app, argc, argv, check_parts)) return stop;
  if (opts.quick) {
    if (opts.frames == 200) opts.frames = 30;
    if (opts.blocks == 6) opts.blocks = 2;
    if (opts.growth_rounds == 3) opts.growth_rounds = 1;
  }
  return std::nullopt;
}

int run(const options& opts) {
  // The CUDA device first: without one, say so and exit 2 before touching EGL or GL.
  bench::open_runtime_device(opts.device);
  auto opened = membridge::cuda::device::open(opts.device);
  if (!opened) throw bench::device_unavailable(opened.error().message());
  const membridge::cuda::device cu = std::move(opened).value();
  if (!opts.quick) {
    const std::size_t need = 6_GiB;  // part b: legacy holds 1 + 2 GiB at its last step, plus slack
    std::size_t free_bytes = 0, total_bytes = 0;
    MEMBRIDGE_GL_BENCH_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (free_bytes < need)
      throw bench::device_unavailable(membridge::format_bytes(free_bytes) + " free, the benchmark needs " +
                                      membridge::format_bytes(need));
  }
  // Declared before the GL context so it is destroyed after it: on the H100 (driver 580), GL calls
  // failed with EGL_NOT_INITIALIZED once the process's last VkInstance was gone.
  std::optional<membridge::vulkan::device_context> vk;
  auto made = membridge::sync::create_gl_context_for(cu);
  if (!made) throw bench::device_unavailable("no GL context on the CUDA device's GPU: " + made.error().message());
  const membridge::gl::headless_context gl = std::move(made).value();
  ok_or_fail(membridge::sync::require_same_gpu(cu, gl.gl()), "require_same_gpu (GL)");
  const auto& caps = gl.gl().capabilities();

  run_info info;
  {
    int driver = 0, runtime = 0;
    MEMBRIDGE_GL_BENCH_CUDA(cudaDriverGetVersion(&driver));
    MEMBRIDGE_GL_BENCH_CUDA(cudaRuntimeGetVersion(&runtime));
    const auto cc = cu.compute_capability();
    info.gpu_name = cu.name();
    info.gpu_uuid = cu.uuid().to_string();
    info.compute_capability = std::to_string(cc[0]) + std::to_string(cc[1]);
    info.cuda_driver = cuda_version_text(driver);
    info.cuda_runtime = cuda_version_text(runtime);
  }
  info.gl_vendor = caps.vendor;
  info.gl_renderer = caps.renderer;
  info.gl_version = caps.version;
  info.gl_semaphore_fd = caps.semaphore_import();
  info.gl_timeline_semaphore = caps.timeline_semaphore;
  info.gl_sparse_growth = caps.sparse_growth();
  info.parts = opts.parts;
  const char* commit_env = std::getenv("MEMBRIDGE_COMMIT");
  info.commit = commit_env != nullptr && *commit_env != '\0' ? commit_env : MEMBRIDGE_BENCH_GL_COMMIT;

  bench_env env;
  env.cu = &cu;
  env.gl = &gl;
  env.slots = opts.slots;
  env.frames = opts.frames;
  env.warmup = opts.quick ? 4 : 10;
  env.blocks = opts.blocks;
  env.growth_rounds = opts.growth_rounds;
  env.quick = opts.quick;
  env.import_on_render_thread = opts.import_on_render_thread;

  // The frame timeline's semaphores come from Vulkan; GL imports them as timeline semaphores.
  if (!caps.semaphore_import() || !caps.timeline_semaphore) {
    env.order = ordering::host;
    info.ordering_note = std::string("GL lacks ") +
                         (!caps.semaphore_import() ? "GL_EXT_semaphore_fd" : "GL_NV_timeline_semaphore");
  } else if (auto v = membridge::sync::create_vulkan_context_for(cu); !v) {
    env.order = ordering::host;
    info.ordering_note = "no Vulkan context for the frame timeline's semaphores: " + v.error().message();
  } else {
    vk.emplace(std::move(v).value());
    env.vk = &*vk;
  }
  if (env.order == ordering::host)
    std::cerr << "NOTE: " << info.ordering_note
              << "; membridge frames are ordered by the host, so the comparison is NOT the semaphore path\n";

  run_results results;
  if (opts.parts.find('a') != std::string::npos) results.steady = run_steady(env);
  if (opts.parts.find('b') != std::string::npos) results.growth = run_growth(env);
  if (opts.parts.find('c') != std::string::npos) results.steps = run_steps(env);
  std::optional<bench::json> paced;
  if (opts.parts.find('p') != std::string::npos) paced = run_paced_growth(env, std::cout, opts.hz, opts.goal_chunk_mib);
  std::optional<bench::json> viewed;
  if (opts.parts.find('v') != std::string::npos) viewed = run_viewed(env, std::cout);
  check_gl("end of the benchmark");

  bench::json j = report(std::cout, env, info, results);
  if (paced) {
    j["goals"]["gl_growth_worst_over_median"] = (*paced)["goal"];
    j["paced_growth"] = std::move(*paced);
  }
  if (viewed) {
    j["goals"]["gl_sim_throughput_viewed_144hz"] = (*viewed)["goal"];
    j["viewed"] = std::move(*viewed);
  }
  bench::emit_json_line(j, opts.json_path);
  glFinish();
  for (const auto& failure : peer_data_failures())
    std::cout << "DATA CHECK FAILED (legacy interop, the peer): " << failure << "\n";
  return peer_data_failures().empty() ? bench::exit_ok : bench::exit_failed;
}

}  // namespace

int main(int argc, char** argv) {
  options opts;
  if (const auto stop = parse_options(argc, argv, opts)) return *stop;
  return bench::run_main("membridge_bench_gl", [&opts] { return run(opts); });
}
