// bench/vulkan_read/vulkan_read_bench.cpp: read bandwidth of a Vulkan compute shader on CUDA memory
// imported into Vulkan versus on memory Vulkan allocated itself, interleaved in one process:
//   imported: a cuda::growable_buffer of several chunks (default 2 GiB in 8 chunks of 256 MiB), filled
//             by CUDA with a fresh pattern, seen by Vulkan through sync::mirror_in_vulkan as one sparse
//             VkBuffer;
//   own:      a DEVICE_LOCAL VkBuffer of the same size on vkAllocateMemory'd memory, filled with
//             vkCmdCopyBuffer from the imported one.
// shaders/read_reduce.comp reads every byte with 16-byte loads and writes one sum per workgroup;
// every dispatch is timed alone with timestamp queries and its sums are checked against the CPU's.
// Prints the tables, the goal and, last, one JSON line starting with {"bench":"vulkan_read".
// Exit status: 0 when every data check passed (goal met or not), 1 on a CUDA/Vulkan/membridge error
// or wrong data, 2 without a usable CUDA device (or Vulkan device with sparse binding on it), 64 for
// a bad command line. See bench/README.md.
#include "reader.hpp"
#include "report.hpp"
#include "support.hpp"

#include "cli.hpp"
#include "kernels.cuh"

#include <membridge/core/units.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/sync/same_gpu.hpp>
#include <membridge/sync/vulkan_mirror.hpp>
#include <membridge/vulkan/chunked_buffer.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>

namespace {

namespace bench = membridge::bench;
namespace vr = membridge::bench::vulkan_read;
using namespace membridge::literals;
using vr::bench_failure;
using vr::device_unavailable;

/// Workgroups per dispatch (x 256 invocations): 4 Mi invocations, so each reads 32 elements of
/// 16 bytes over 2 GiB (8 rounds of 4 loads in flight).
constexpr std::uint32_t workgroups = 16384;
/// Device memory the benchmark leaves for the driver beyond its two buffers.
constexpr std::size_t memory_slack = 512_MiB;

/// The command line.
struct options : bench::common_options {
  std::size_t size_mib = 2048;  ///< Bytes each buffer holds, MiB.
  std::size_t chunk_mib = 256;  ///< chunk_policy::max_chunk of the imported buffer, MiB.
  int pairs = 30;               ///< Timed pairs (one dispatch over each memory).
  int warmup = 5;               ///< Pairs before them, checked but not recorded.
  bool quick = false;           ///< --quick.
};

/// Reads the command line into `opts`. Returns an exit status when the program should stop now
/// (--help: 0, a bad command line: exit_usage, with the reason on stderr).
std::optional<int> parse_options(int argc, char** argv, options& opts) {
  CLI::App app{"membridge Vulkan read benchmark: a compute shader's read bandwidth on CUDA memory imported into "
               "Vulkan (growable_buffer of several chunks, one sparse VkBuffer) versus memory Vulkan allocated itself"};
  app.add_option("--size-mib", opts.size_mib, "bytes each buffer holds, MiB (a multiple of 2)")
      ->check(CLI::Range(std::size_t{64}, std::size_t{4094}))
      ->capture_default_str();
  app.add_option("--chunk-mib", opts.chunk_mib, "largest chunk of the imported buffer, MiB (a multiple of 2)")
      ->check(CLI::Range(std::size_t{2}, std::size_t{2048}))
      ->capture_default_str();
  app.add_option("--pairs", opts.pairs, "timed pairs (one dispatch over each memory, the first alternating)")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--warmup", opts.warmup, "warm-up pairs before them (checked, not recorded)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  app.add_flag("--quick", opts.quick, "512 MiB in 128 MiB chunks, 2 warm-up + 5 timed pairs (a smoke run)");
  bench::add_common_options(app, opts);
  if (const auto stop = bench::parse_command_line(app, argc, argv)) return stop;
  if (opts.quick) {
    if (app.count("--size-mib") == 0) opts.size_mib = 512;
    if (app.count("--chunk-mib") == 0) opts.chunk_mib = 128;
    if (app.count("--pairs") == 0) opts.pairs = 5;
    if (app.count("--warmup") == 0) opts.warmup = 2;
  }
  if (opts.size_mib % 2 != 0 || opts.chunk_mib % 2 != 0) {
    std::cerr << "--size-mib and --chunk-mib must be multiples of 2 (the CUDA granularity is 2 MiB)\n";
    return bench::exit_usage;
  }
  if (opts.chunk_mib * 2 > opts.size_mib) {
    std::cerr << "--chunk-mib " << opts.chunk_mib << " gives fewer than 2 chunks of " << opts.size_mib
              << " MiB: the imported buffer must be made of several chunks\n";
    return bench::exit_usage;
  }
  return std::nullopt;
}

/// A fresh seed for the fill pattern (leftovers of an earlier run cannot pass the check).
std::uint32_t fresh_seed() {
  std::random_device rd;
  return static_cast<std::uint32_t>(rd()) ^ static_cast<std::uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

/// A Vulkan context on the CUDA device's GPU (no validation layers: a benchmark).
membridge::vulkan::device_context open_vulkan(const membridge::cuda::device& cu) {
  membridge::vulkan::create_options vo;
  vo.validation = false;
  vo.sparse = true;
  auto made = membridge::sync::create_vulkan_context_for(cu, vo);
  if (!made) {
    const auto code = made.error().code();
    const std::string text = "no usable Vulkan device on CUDA device " + std::to_string(cu.ordinal()) + " (" +
                             cu.name() + "): " + made.error().message();
    if (code == membridge::errc::driver_unavailable || code == membridge::errc::invalid_argument ||
        code == membridge::errc::unsupported)
      throw device_unavailable(text);
    throw bench_failure(text);
  }
  membridge::vulkan::device_context vk = std::move(made).value();
  vr::ok_or_fail(membridge::sync::require_same_gpu(cu, vk), "require_same_gpu");
  const auto& caps = vk.capabilities();
  if (!caps.external_memory_fd)
    throw device_unavailable("the Vulkan device " + vk.name() + " cannot import memory fds (VK_KHR_external_memory_fd)");
  if (!caps.sparse_binding)
    throw device_unavailable("the Vulkan device " + vk.name() + " has no sparse binding (feature, buffer residency "
                             "or a sparse queue): the benchmark reads the imported chunks through one sparse VkBuffer");
  return vk;
}

/// The commit the benchmark was built from; MEMBRIDGE_COMMIT in the environment overrides it.
std::string commit_text() {
  const char* env = std::getenv("MEMBRIDGE_COMMIT");
  return env != nullptr && *env != '\0' ? env : MEMBRIDGE_BENCH_VULKAN_READ_COMMIT;
}

/// Throws bench_failure describing dispatch `index` over `m` when its sums differ from `expected`.
void check_dispatch(const vr::dispatch_result& d, const std::vector<std::uint32_t>& expected, vr::memory m,
                    int pair, bool warmup) {
  const vr::sums_check c = vr::compare_sums(d.sums, expected);
  if (c.wrong == 0) return;
  std::ostringstream text;
  text << "data check failed: the read over the " << vr::memory_name(m) << " buffer (" << (warmup ? "warm-up " : "")
       << "pair " << pair << ") returned " << c.wrong << " of " << expected.size()
       << " workgroup sums different from the CPU's; first: workgroup " << c.first_wrong << " got 0x" << std::hex
       << c.got << ", expected 0x" << c.expected << std::dec
       << (c.got == vr::reader::poison ? " (the shader did not write it)" : "")
       << (c.got == vr::reader::host_poison ? " (the sums were not copied back)" : "");
  throw bench_failure(text.str());
}

int run(const options& opts) {
  const std::size_t bytes = opts.size_mib * 1_MiB;
  const std::size_t chunk = opts.chunk_mib * 1_MiB;

  // CUDA first: without a device, say so and exit 2 before touching Vulkan.
  bench::open_runtime_device(opts.device);
  auto opened = membridge::cuda::device::open(opts.device);
  if (!opened) throw device_unavailable(opened.error().message());
  const membridge::cuda::device cu = std::move(opened).value();
  {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    MEMBRIDGE_VULKAN_READ_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (free_bytes < 2 * bytes + memory_slack)
      throw device_unavailable(membridge::format_bytes(free_bytes) + " of " + membridge::format_bytes(total_bytes) +
                               " free, the benchmark needs " + membridge::format_bytes(2 * bytes + memory_slack));
  }

  // The expected sums, on the host's cores while the GPU side is set up.
  const std::uint32_t seed = fresh_seed();
  auto expected_future = std::async(std::launch::async, [&] { return vr::expected_group_sums(bytes, seed, workgroups); });

  vr::run_info info;
  {
    int driver = 0;
    int runtime = 0;
    MEMBRIDGE_VULKAN_READ_CUDA(cudaDriverGetVersion(&driver));
    MEMBRIDGE_VULKAN_READ_CUDA(cudaRuntimeGetVersion(&runtime));
    const auto cc = cu.compute_capability();
    info.ordinal = opts.device;
    info.gpu_name = cu.name();
    info.gpu_uuid = cu.uuid().to_string();
    info.pci_bus_id = cu.pci_bus_id();
    info.compute_capability = std::to_string(cc[0]) + '.' + std::to_string(cc[1]);
    info.cuda_driver = vr::cuda_version_text(driver);
    info.cuda_runtime = vr::cuda_version_text(runtime);
  }
  const membridge::vulkan::device_context vk = open_vulkan(cu);
  const vr::device_limits limits = vr::read_device_limits(vk, bytes, workgroups);

  // The imported memory: a growable_buffer of several chunks, filled by CUDA and checked there.
  membridge::cuda::growable_buffer_options bo;
  bo.size = bytes;
  bo.max_size = bytes;
  bo.chunks.max_chunk = chunk;
  auto buffer = vr::value_or_fail(membridge::cuda::growable_buffer::create(cu, bo),
                                  "growable_buffer::create(" + membridge::format_bytes(bytes) + ", max_chunk " +
                                      membridge::format_bytes(chunk) + ")");
  if (buffer.chunk_count() < 2)
    throw bench_failure("the growable_buffer has " + std::to_string(buffer.chunk_count()) +
                        " chunk(s); the benchmark needs several");
  {
    const bench::cuda_stream stream;
    MEMBRIDGE_VULKAN_READ_CUDA(membridge::testing::gpu::fill_pattern(buffer.data(), bytes, seed, 0, stream.get()));
    unsigned long long bad = 0;
    MEMBRIDGE_VULKAN_READ_CUDA(membridge::testing::gpu::count_mismatches(buffer.data(), bytes, seed, bad, 0, stream.get()));
    if (bad != 0)
      throw bench_failure("data check failed: " + std::to_string(bad) + " words of the CUDA fill are wrong (read by CUDA)");
    MEMBRIDGE_VULKAN_READ_CUDA(cudaDeviceSynchronize());
  }

  // Vulkan's view: one sparse VkBuffer over every chunk.
  membridge::vulkan::chunked_buffer_info vi;
  vi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
  vi.mode = membridge::vulkan::growth_mode::sparse;
  auto mirrored = membridge::sync::mirror_in_vulkan(vk, buffer, vi);
  if (!mirrored) {
    const std::string text = "sync::mirror_in_vulkan (sparse, " + std::to_string(buffer.chunk_count()) +
                             " chunks): " + mirrored.error().message();
    if (mirrored.error().code() == membridge::errc::unsupported)
      throw device_unavailable("sparse binding unavailable: " + text);
    throw bench_failure(text);
  }
  const membridge::vulkan::chunked_buffer view = std::move(mirrored).value();
  const auto segments = view.segments();
  if (!view.is_sparse() || segments.size() != 1 || segments[0].offset != 0 || segments[0].size < bytes ||
      view.chunk_count() != buffer.chunk_count())
    throw bench_failure("Vulkan's view of the buffer is not one sparse VkBuffer over its " +
                        std::to_string(buffer.chunk_count()) + " chunks (sparse " + (view.is_sparse() ? "yes" : "no") +
                        ", " + std::to_string(segments.size()) + " segment(s), " + std::to_string(view.chunk_count()) +
                        " chunk(s) imported)");

  vr::reader reader(vk, segments[0].buffer, segments[0].buffer_offset, bytes, workgroups, limits);
  reader.copy_imported_to_own();
  const std::vector<std::uint32_t> expected = expected_future.get();

  info.vk_name = vk.name();
  info.vk_driver = vk.driver_info();
  info.sparse_binding = vk.capabilities().sparse_binding;
  info.timestamp_period_ns = limits.timestamp_period_ns;
  info.timestamp_valid_bits = limits.timestamp_valid_bits;
  info.max_storage_buffer_range = limits.max_storage_buffer_range;
  info.own_memory_type = reader.limits().own_memory_type;
  info.own_memory_flags = reader.limits().own_memory_flags;
  info.bytes = bytes;
  info.chunk_bytes = chunk;
  info.chunks = buffer.chunk_count();
  info.imported_sparse = view.is_sparse();
  info.workgroups = workgroups;
  info.warmup_pairs = opts.warmup;
  info.pairs = opts.pairs;
  info.quick = opts.quick;
  info.seed = seed;
  info.commit = commit_text();

  // Interleaved pairs; the first of a pair alternates. Every dispatch's sums are checked.
  vr::samples s;
  for (int p = 0; p < opts.warmup + opts.pairs; ++p) {
    const bool warmup = p < opts.warmup;
    const bool imported_first = p % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      const vr::memory m = (k == 0) == imported_first ? vr::memory::imported : vr::memory::own;
      const vr::dispatch_result d = reader.dispatch(m);
      check_dispatch(d, expected, m, warmup ? p : p - opts.warmup, warmup);
      ++s.dispatches_checked;
      if (!warmup) (m == vr::memory::imported ? s.imported_ns : s.own_ns).push_back(d.ns);
    }
    if (!warmup) s.imported_first.push_back(imported_first);
  }

  const bench::json j = vr::report(std::cout, info, s);
  bench::emit_json_line(j, opts.json_path);
  return bench::exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  options opts;
  if (const auto stop = parse_options(argc, argv, opts)) return *stop;
  return bench::run_main("membridge_bench_vulkan_read", [&opts] { return run(opts); });
}
