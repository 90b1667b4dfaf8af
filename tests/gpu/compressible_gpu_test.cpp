// gpu tier: compressible VMM memory (allocation_options::compressible) on a real GPU. What the driver
// grants is read back (cuMemGetAllocationPropertiesFromHandle) and printed; kernels write and read
// fresh patterns through it; then, as far as the driver allows, a compressed chunk is exported as an
// fd, imported back in this process, sent to another process and imported into Vulkan. Where the
// driver refuses a step, membridge must answer `unsupported` with the reason (checked) and the step
// is reported "not run". Last, the bandwidth of kernel writes and reads, compressible vs plain, on
// compressible (zeros) and incompressible (hash pattern) data, 1 GiB each, timed with CUDA events.
#include "child_process.hpp"
#include "gpu_test.hpp"
#include "vmm_rules_kernels.cuh"

#include <membridge/core/units.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#ifdef MEMBRIDGE_GPU_TESTS_HAVE_VULKAN
#include "vulkan_test.hpp"

#include <membridge/vulkan/shared_buffer.hpp>
#endif

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace membridge::testing {
namespace {

using namespace membridge::literals;
using namespace std::chrono_literals;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// One line of the test's report, on stdout (the gpu-run log keeps it).
void report(const std::string& line) {
  std::printf("[compressible] %s\n", line.c_str());
  std::fflush(stdout);
}

constexpr cuda::allocation_options shareable_compressible{.handles = cuda::handle_type::posix_fd, .compressible = true};
constexpr cuda::allocation_options local_compressible{.handles = cuda::handle_type::none, .compressible = true};

/// A chunk and one mapping of it.
struct mapped_chunk {
  cuda::vmm_allocation memory;
  cuda::address_range range;
  cuda::mapping map;
  [[nodiscard]] void* data() const { return as_ptr(map.address()); }
};

/// Reserves a range aligned to `granularity` (compressible memory may need more than the device's)
/// and maps all of `memory` there.
membridge::result<mapped_chunk> map_chunk(const cuda::device& dev, cuda::vmm_allocation memory, std::size_t granularity) {
  mapped_chunk c;
  c.memory = std::move(memory);
  const std::size_t alignment = std::max(granularity, dev.granularity());
  MEMBRIDGE_TRY_ASSIGN(c.range, cuda::address_range::reserve(dev, c.memory.size(), alignment));
  MEMBRIDGE_TRY_ASSIGN(c.map, cuda::mapping::map(c.range, 0, c.memory));
  return c;
}

class compressible_gpu_test : public gpu_test {
 protected:
  void SetUp() override {
    gpu_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!dev_.capabilities().generic_compression) {
      // The library's promise on such a device: a compressible request is refused, not ignored.
      const auto refused = cuda::vmm_allocation::create(dev_, 2_MiB, shareable_compressible);
      ASSERT_FALSE(refused) << dev_.name() << " reports no generic compression, yet the allocation was made";
      EXPECT_EQ(refused.error().code(), errc::unsupported) << refused.error().message();
      GTEST_SKIP() << "not run: " << dev_.name() << " reports no generic compression (creation refused as unsupported)";
    }
  }

  /// A granule-multiple compressible allocation exportable as an fd, or the skip that says why the
  /// driver cannot make one (after checking the refusal is `unsupported` with the reason), or
  /// plain memory when the driver did not grant compression (then also a skip: nothing compressed
  /// to share).
  membridge::result<cuda::vmm_allocation> shareable_compressed_chunk(std::size_t size, std::string& not_run) {
    auto granularity = cuda::allocation_granularity(dev_, shareable_compressible);
    if (!granularity) return std::move(granularity).error();
    auto memory = cuda::vmm_allocation::create(dev_, membridge::round_up(size, *granularity).value(), shareable_compressible);
    if (!memory) {
      EXPECT_EQ(memory.error().code(), errc::unsupported) << memory.error().message();
      EXPECT_TRUE(contains(memory.error().message(), "refuses compressible memory")) << memory.error().message();
      not_run = "the driver refuses compressible memory with POSIX fd handles: " + memory.error().message();
      return memory;
    }
    if (!memory->compressed()) not_run = "the driver granted plain memory for a compressible request";
    return memory;
  }

  /// A compressed chunk for another process or API: its exported fd, the chunk mapped here, its size.
  struct shared_chunk {
    os::shareable_handle fd;
    mapped_chunk chunk;
    std::size_t size = 0;
  };

  /// Makes a compressed 32 MiB chunk, exports it as an fd, maps it here and fills it with pattern
  /// `seed`; or ends the test: not run when the driver cannot make or export one (an export refusal
  /// must be `unsupported`), failed on any other error. The caller returns when IsSkipped() or
  /// HasFatalFailure().
  void share_compressed_chunk(std::uint32_t seed, shared_chunk& out) {
    std::string not_run;
    auto memory = shareable_compressed_chunk(32_MiB, not_run);
    if (!not_run.empty()) GTEST_SKIP() << "not run: " << not_run;
    MB_OK(memory);
    const auto granularity = cuda::allocation_granularity(dev_, shareable_compressible).value();
    auto fd = memory->export_fd();
    if (!fd) {
      EXPECT_EQ(fd.error().code(), errc::unsupported) << fd.error().message();
      GTEST_SKIP() << "not run: " << fd.error().message();
    }
    out.size = memory->size();
    auto chunk = map_chunk(dev_, std::move(*memory), granularity);
    MB_OK(chunk);
    MB_CUDA_OK(gpu::fill_pattern(chunk->data(), out.size, seed));
    MB_CUDA_OK(cudaDeviceSynchronize());
    out.fd = std::move(fd).value();
    out.chunk = std::move(chunk).value();
  }
};

TEST_F(compressible_gpu_test, compressible_chunks_read_back_their_properties_and_hold_kernel_data) {
  for (const auto& options : {shareable_compressible, local_compressible}) {
    const std::string kind = options.handles == cuda::handle_type::none ? "handles = none" : "handles = posix_fd";
    auto granularity = cuda::allocation_granularity(dev_, options);
    MB_OK(granularity);
    report(kind + ": granularity " + membridge::format_bytes(*granularity) + " (device " +
           membridge::format_bytes(dev_.granularity()) + ")");
    auto memory = cuda::vmm_allocation::create(dev_, membridge::round_up(64_MiB, *granularity).value(), options);
    if (!memory) {
      // Allowed only as the documented refusal: compressible memory with a shareable handle type.
      ASSERT_NE(options.handles, cuda::handle_type::none) << memory.error().message();
      EXPECT_EQ(memory.error().code(), errc::unsupported) << memory.error().message();
      EXPECT_TRUE(contains(memory.error().message(), "refuses compressible memory")) << memory.error().message();
      report(kind + ": creation refused (unsupported): " + memory.error().message());
      continue;
    }
    auto props = memory->properties();
    MB_OK(props);
    EXPECT_EQ(props->compressed, memory->compressed());
    EXPECT_EQ(props->device, dev_.ordinal());
    EXPECT_EQ(props->handles, options.handles);
    report(kind + ": created " + membridge::format_bytes(memory->size()) + "; read back: compressionType " +
           (props->compressed ? "GENERIC (compression granted)" : "NONE (plain memory)") + ", handle type " +
           std::string(cuda::to_string(props->handles)));
    auto chunk = map_chunk(dev_, std::move(*memory), *granularity);
    MB_OK(chunk);
    const std::size_t bytes = chunk->memory.size();
    for (const std::uint32_t seed : {0xC0A1u, 0xC0A2u}) {
      MB_CUDA_OK(gpu::fill_pattern(chunk->data(), bytes, seed));
      EXPECT_EQ(mismatches(chunk->data(), bytes, seed), 0u) << kind << ", seed " << seed;
    }
    EXPECT_EQ(mismatches(chunk->data(), bytes, 0xBAD), bytes / 4) << "the check must see a wrong seed";
    // Compressible data (a constant), then the pattern again: the contents follow every write.
    MB_CUDA_OK(gpu::write16(chunk->data(), bytes, 0));
    unsigned long long nonzero = ~0ULL;
    MB_CUDA_OK(gpu::count_not_equal(chunk->data(), bytes, 0, nonzero));
    EXPECT_EQ(nonzero, 0u) << kind;
    MB_CUDA_OK(gpu::fill_pattern(chunk->data(), bytes, 0xC0A3));
    EXPECT_EQ(mismatches(chunk->data(), bytes, 0xC0A3), 0u) << kind;
  }
}

TEST_F(compressible_gpu_test, a_compressed_chunk_exports_as_an_fd_and_imports_back_in_this_process) {
  std::string not_run;
  auto memory = shareable_compressed_chunk(32_MiB, not_run);
  if (!not_run.empty()) GTEST_SKIP() << "not run: " << not_run;
  MB_OK(memory);
  auto fd = memory->export_fd();
  if (!fd) {
    EXPECT_EQ(fd.error().code(), errc::unsupported) << fd.error().message();
    EXPECT_TRUE(contains(fd.error().message(), "refuses to export compressed memory")) << fd.error().message();
    report("export as a POSIX fd refused (unsupported): " + fd.error().message());
    GTEST_SKIP() << "not run: " << fd.error().message();
  }
  report("a compressed chunk exported as a POSIX fd");
  const std::size_t size = memory->size();
  auto imported = cuda::vmm_allocation::import(dev_, *fd, size);
  if (!imported) {
    report("cuMemImportFromShareableHandle refused the fd: " + imported.error().message());
    FAIL() << "the driver exported a compressed chunk but refused its import: " << imported.error().message();
  }
  auto props = imported->properties();
  MB_OK(props);
  report(std::string("imported back in this process; the import reads back ") +
         (props->compressed ? "compressed" : "NOT compressed"));
  const auto granularity = cuda::allocation_granularity(dev_, shareable_compressible).value();
  auto original = map_chunk(dev_, std::move(*memory), granularity);
  auto alias = map_chunk(dev_, std::move(*imported), granularity);
  MB_OK(original);
  MB_OK(alias);
  MB_CUDA_OK(gpu::fill_pattern(original->data(), size, 0xE1));
  MB_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(mismatches(alias->data(), size, 0xE1), 0u) << "the import does not show the exporter's data";
  MB_CUDA_OK(gpu::fill_pattern(alias->data(), size, 0xE2));
  MB_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(mismatches(original->data(), size, 0xE2), 0u) << "the exporter does not see the import's writes";
}

// ------------------------------------------------------------------------------ another process ---

struct import_request {
  std::uint64_t size;
  std::uint32_t read_seed;
  std::uint32_t write_seed;
};

struct import_reply {
  std::int32_t status;  // 0 ok, else the step that failed
  std::int32_t compressed;
  unsigned long long wrong_words;
  char message[400];
};

import_reply child_failure(std::int32_t status, const std::string& why) {
  return failed_reply<import_reply>(status, why);
}

import_reply import_in_child(const import_request& q, os::borrowed_fd fd) {
  auto dev = open_gpu();
  if (!dev) return child_failure(1, dev.error().message());
  auto memory = cuda::vmm_allocation::import(*dev, fd, q.size);
  if (!memory) return child_failure(2, "import: " + memory.error().message());
  auto props = memory->properties();
  if (!props) return child_failure(3, "properties: " + props.error().message());
  auto granularity = cuda::allocation_granularity(*dev, shareable_compressible);
  if (!granularity) return child_failure(4, granularity.error().message());
  auto chunk = map_chunk(*dev, std::move(*memory), *granularity);
  if (!chunk) return child_failure(5, "map: " + chunk.error().message());
  import_reply r{};
  r.compressed = props->compressed ? 1 : 0;
  if (gpu::count_mismatches(chunk->data(), q.size, q.read_seed, r.wrong_words) != cudaSuccess)
    return child_failure(6, "count_mismatches failed");
  if (gpu::fill_pattern(chunk->data(), q.size, q.write_seed) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
    return child_failure(7, "fill_pattern failed");
  return r;
}

int import_compressed_child(const std::vector<std::string>&) { return answer_one_request(&import_in_child); }
const child_role import_compressed_role("import_compressed", &import_compressed_child);

TEST_F(compressible_gpu_test, a_compressed_chunk_reaches_another_process) {
  shared_chunk shared;
  share_compressed_chunk(0xF00D, shared);
  if (IsSkipped() || HasFatalFailure()) return;
  auto& [fd, chunk, size] = shared;

  auto child = spawn_child("import_compressed");
  MB_OK(child);
  const std::array<os::borrowed_fd, 1> fds{fd};
  MB_OK(send_value(child->socket(), import_request{size, 0xF00D, 0xBEEF}, fds));
  fd.reset();
  auto answer = receive_message(child->socket(), sizeof(import_reply), 120s);
  MB_OK(answer);
  ASSERT_EQ(answer->payload.size(), sizeof(import_reply));
  import_reply r{};
  std::memcpy(&r, answer->payload.data(), sizeof r);
  const auto status = child->wait(30s);
  ASSERT_TRUE(status && *status == 0) << "the child exited with status " << (status ? *status : -1);
  if (r.status != 0) report(std::string("the other process could not use the chunk: ") + r.message);
  ASSERT_EQ(r.status, 0) << r.message;
  report(std::string("another process imported the compressed chunk; it reads back ") +
         (r.compressed != 0 ? "compressed" : "NOT compressed") + "; " + std::to_string(r.wrong_words) +
         " wrong words");
  EXPECT_EQ(r.wrong_words, 0u) << "the other process did not see this process's data";
  EXPECT_EQ(mismatches(chunk.data(), size, 0xBEEF), 0u) << "the other process's writes are not here";
}

// ------------------------------------------------------------------------------------- Vulkan ---

#ifdef MEMBRIDGE_GPU_TESTS_HAVE_VULKAN
TEST_F(compressible_gpu_test, a_compressed_chunk_imports_into_vulkan) {
  shared_chunk shared;
  share_compressed_chunk(0x7777, shared);
  if (IsSkipped() || HasFatalFailure()) return;
  auto& [fd, chunk, size] = shared;

  membridge::vulkan::create_options options;
  options.uuid = dev_.uuid();
  auto vk = make_validated_context(options);
  MB_OK(vk);
  {
    auto buffer = membridge::vulkan::shared_buffer::import(vk->context, fd, {.allocation_size = size});
    if (!buffer) {
      // Vulkan's answer, categorised (never a crash); the test reports it as the driver's refusal.
      report("Vulkan refused the compressed chunk: " + buffer.error().message());
      EXPECT_TRUE(buffer.error().code() == errc::unsupported || buffer.error().code() == errc::invalid_argument)
          << buffer.error().message();
      GTEST_SKIP() << "not run: Vulkan refused the compressed chunk: " << buffer.error().message();
    }
    auto staging = staging_buffer::create(vk->context, size);
    MB_OK(staging);
    const auto& fn = vk->context.functions();
    // Vulkan reads CUDA's pattern, then overwrites the chunk with a constant CUDA must see.
    MB_OK(run_commands(vk->context, [&](VkCommandBuffer cb) {
      full_barrier(vk->context, cb);
      const VkBufferCopy region{0, 0, size};
      fn.vkCmdCopyBuffer(cb, buffer->get(), staging->get(), 1, &region);
      full_barrier(vk->context, cb);
      fn.vkCmdFillBuffer(cb, buffer->get(), 0, size, 0x5A5A5A5Au);
      full_barrier(vk->context, cb);
    }));
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < size / 4; ++i)
      if (staging->words()[i] != gpu::pattern(i, 0x7777)) ++wrong;
    report("Vulkan imported the compressed chunk (memory type " + std::to_string(buffer->memory().memory_type()) +
           "); Vulkan read " + std::to_string(wrong) + " wrong words of CUDA's pattern");
    EXPECT_EQ(wrong, 0u) << "Vulkan does not see CUDA's data in compressed memory";
    unsigned long long not_fill = ~0ULL;
    MB_CUDA_OK(gpu::count_not_equal(chunk.data(), size, 0x5A5A5A5Au, not_fill));
    EXPECT_EQ(not_fill, 0u) << "CUDA does not see Vulkan's fill of compressed memory";
  }
  vk->context = membridge::vulkan::device_context();
  for (const auto& m : *vk->messages) ADD_FAILURE() << "validation: " << m;
}
#endif

// ---------------------------------------------------------------------------------- bandwidth ---

/// Median GB/s of `runs` timed launches of `launch` over `bytes` (after one warm-up launch).
template <class Launch>
double median_gb_per_s(cudaStream_t stream, std::size_t bytes, int runs, Launch launch) {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  EXPECT_EQ(cudaEventCreate(&start), cudaSuccess);
  EXPECT_EQ(cudaEventCreate(&stop), cudaSuccess);
  EXPECT_EQ(launch(), cudaSuccess);
  std::vector<double> rates;
  for (int i = 0; i < runs; ++i) {
    EXPECT_EQ(cudaEventRecord(start, stream), cudaSuccess);
    EXPECT_EQ(launch(), cudaSuccess);
    EXPECT_EQ(cudaEventRecord(stop, stream), cudaSuccess);
    EXPECT_EQ(cudaEventSynchronize(stop), cudaSuccess);
    float ms = 0;
    EXPECT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
    if (ms > 0) rates.push_back(static_cast<double>(bytes) / (static_cast<double>(ms) * 1e-3) / 1e9);
  }
  EXPECT_EQ(cudaEventDestroy(start), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(stop), cudaSuccess);
  if (rates.empty()) return 0.0;
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

TEST_F(compressible_gpu_test, bandwidth_of_compressible_versus_plain_memory) {
  constexpr std::size_t bytes = 1_GiB;
  constexpr int runs = 7;
  // Compressible memory as sharing would use it when the driver allows, else process-local.
  cuda::allocation_options compressible = shareable_compressible;
  if (const auto probe =
          cuda::vmm_allocation::create(dev_, cuda::allocation_granularity(dev_, compressible).value(), compressible);
      !probe) {
    EXPECT_EQ(probe.error().code(), errc::unsupported) << probe.error().message();
    compressible = local_compressible;
  }
  struct kind {
    const char* name;
    cuda::allocation_options options;
  };
  const kind kinds[] = {{"plain", {}}, {"compressible", compressible}};
  cudaStream_t stream = nullptr;
  MB_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned long long* sink = nullptr;
  MB_CUDA_OK(cudaMalloc(&sink, sizeof *sink));
  report("bandwidth, 1 GiB, median of " + std::to_string(runs) + " kernels after a warm-up (CUDA events), GB/s:");
  std::printf("[compressible]   %-13s %-22s %10s %10s\n", "memory", "data", "write", "read");
  for (const kind& k : kinds) {
    auto granularity = cuda::allocation_granularity(dev_, k.options);
    MB_OK(granularity);
    auto memory = cuda::vmm_allocation::create(dev_, bytes, k.options);
    MB_OK(memory);
    const bool compressed = memory->compressed();
    auto chunk = map_chunk(dev_, std::move(*memory), *granularity);
    MB_OK(chunk);
    void* p = chunk->data();
    const auto read = [&] { return gpu::read16(p, bytes, sink, stream); };
    // Compressible data: zeros.
    const double zero_write = median_gb_per_s(stream, bytes, runs, [&] { return gpu::write16(p, bytes, 0, stream); });
    const double zero_read = median_gb_per_s(stream, bytes, runs, read);
    unsigned long long nonzero = ~0ULL;
    MB_CUDA_OK(gpu::count_not_equal(p, bytes, 0, nonzero, stream));
    EXPECT_EQ(nonzero, 0u) << k.name;
    // Incompressible data: the hash pattern.
    const double pattern_write =
        median_gb_per_s(stream, bytes, runs, [&] { return gpu::fill_pattern(p, bytes, 0xB4D, 0, stream); });
    const double pattern_read = median_gb_per_s(stream, bytes, runs, read);
    unsigned long long wrong = ~0ULL;
    MB_CUDA_OK(gpu::count_mismatches(p, bytes, 0xB4D, wrong, 0, stream));
    EXPECT_EQ(wrong, 0u) << k.name;
    const std::string name = std::string(k.name) + (k.options.compressible ? (compressed ? " (granted)" : " (NOT granted)") : "");
    std::printf("[compressible]   %-13s %-22s %10.0f %10.0f\n", name.c_str(), "zeros (compressible)", zero_write, zero_read);
    std::printf("[compressible]   %-13s %-22s %10.0f %10.0f\n", name.c_str(), "hash pattern", pattern_write, pattern_read);
    RecordProperty(std::string(k.name) + "_zeros_write_gb_s", std::to_string(zero_write));
    RecordProperty(std::string(k.name) + "_zeros_read_gb_s", std::to_string(zero_read));
    RecordProperty(std::string(k.name) + "_pattern_write_gb_s", std::to_string(pattern_write));
    RecordProperty(std::string(k.name) + "_pattern_read_gb_s", std::to_string(pattern_read));
    EXPECT_GT(zero_write, 0.0);
    EXPECT_GT(pattern_read, 0.0);
  }
  std::fflush(stdout);
  MB_CUDA_OK(cudaFree(sink));
  MB_CUDA_OK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace membridge::testing
