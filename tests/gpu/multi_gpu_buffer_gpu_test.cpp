// gpu tier, several GPUs: a growable buffer whose chunks lie on GPU 0 and GPU 1 (round-robin, or
// explicit per chunk) with access for both. A kernel on one GPU writes a fresh random pattern over
// the whole buffer, a kernel on the other reads it back word by word (both ways); growth with mixed
// placement keeps the address and the old data. On one GPU every test is reported as not run;
// MEMBRIDGE_REQUIRE_GPUS=2 turns that into a failure.
#include "gpu_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/cuda/peer.hpp>

#include <cstdint>
#include <vector>

namespace membridge::testing {
namespace {

using namespace membridge::literals;

/// Device 0 (dev_) and device 1 (other_), with peer access both ways, or the test is not run.
class multi_gpu_buffer_gpu_test : public two_gpu_test {
 protected:
  void SetUp() override {
    two_gpu_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    require_peer_access_or_skip(dev_, other_);
    if (IsSkipped() || HasFatalFailure()) return;
    require_peer_access_or_skip(other_, dev_);
  }
  void TearDown() override {
    if (other_.valid()) {
      EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
    }
  }

  /// Words of `bytes` at `p` (first word index `first_word`) that differ from pattern `seed`, read
  /// by a kernel on GPU `gpu`.
  static unsigned long long mismatches_on(int gpu, const void* p, std::size_t bytes, std::uint32_t seed,
                                          std::uint64_t first_word = 0) {
    EXPECT_EQ(cudaSetDevice(gpu), cudaSuccess);
    const unsigned long long bad = mismatches(p, bytes, seed, first_word);
    EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
    return bad;
  }

  /// Fills `bytes` at `p` with pattern `seed` from a kernel on GPU `gpu` and waits for it.
  static cudaError_t fill_on(int gpu, void* p, std::size_t bytes, std::uint32_t seed, std::uint64_t first_word = 0) {
    cudaError_t rc = cudaSetDevice(gpu);
    if (rc == cudaSuccess) rc = gpu::fill_pattern(p, bytes, seed, first_word);
    if (rc == cudaSuccess) rc = cudaDeviceSynchronize();
    const cudaError_t back = cudaSetDevice(0);
    return rc != cudaSuccess ? rc : back;
  }

  static std::vector<int> devices_of(const cuda::growable_buffer& b) {
    std::vector<int> out;
    for (const cuda::chunk_info& c : b.chunks()) out.push_back(c.device);
    return out;
  }
};

TEST_F(multi_gpu_buffer_gpu_test, a_buffer_spread_round_robin_is_written_by_one_gpu_and_read_by_the_other) {
  constexpr std::size_t bytes = 256_MiB;
  auto b = cuda::growable_buffer::create(
      dev_, {.size = bytes, .max_size = 1_GiB, .chunks = {.growth_factor = 1.0, .max_chunk = 32_MiB},
             .access = {{&other_, cuda::access::read_write}}, .placement = {.devices = {&dev_, &other_}}});
  MB_OK(b);
  ASSERT_EQ(b->chunk_count(), 8U);
  EXPECT_EQ(devices_of(*b), (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(b->access_devices(), (std::vector<int>{0, 1}));

  const std::uint32_t from_0 = fresh_seed();
  MB_CUDA_OK(fill_on(0, b->data(), bytes, from_0));
  EXPECT_EQ(mismatches_on(1, b->data(), bytes, from_0), 0ULL) << "GPU 1 reads what GPU 0 wrote";
  const std::uint32_t from_1 = fresh_seed();
  MB_CUDA_OK(fill_on(1, b->data(), bytes, from_1));
  EXPECT_EQ(mismatches_on(0, b->data(), bytes, from_1), 0ULL) << "GPU 0 reads what GPU 1 wrote";
}

TEST_F(multi_gpu_buffer_gpu_test, growth_with_mixed_placement_keeps_the_address_and_the_old_data) {
  auto b = cuda::growable_buffer::create(
      dev_, {.size = 64_MiB, .max_size = 1_GiB, .chunks = {.growth_factor = 1.0, .max_chunk = 32_MiB},
             .access = {{&other_, cuda::access::read_write}},
             .placement = {.devices = {&dev_, &other_}, .per_chunk = {1, 0, 0, 1}}});
  MB_OK(b);
  EXPECT_EQ(devices_of(*b), (std::vector<int>{1, 0}));
  const CUdeviceptr base = b->address();
  const std::uint32_t seed = fresh_seed();
  MB_CUDA_OK(fill_on(0, b->data(), 64_MiB, seed));

  MB_OK(b->grow(160_MiB));  // chunks 2 and 3 from per_chunk (GPU 0, GPU 1), chunk 4 round-robin (GPU 0)
  EXPECT_EQ(b->address(), base);
  EXPECT_EQ(devices_of(*b), (std::vector<int>{1, 0, 0, 1, 0}));
  EXPECT_EQ(mismatches_on(1, b->data(), 64_MiB, seed), 0ULL) << "the old data, read by GPU 1 after the growth";
  // The new part continues the pattern (word offsets), written by GPU 1, read by GPU 0 with the old.
  MB_CUDA_OK(fill_on(1, b->data<char>() + 64_MiB, 96_MiB, seed, 64_MiB / 4));
  EXPECT_EQ(mismatches_on(0, b->data(), 160_MiB, seed), 0ULL) << "the whole buffer, read by GPU 0";

  MB_OK(b->shrink(32_MiB));  // waits on both GPUs, then unmaps chunks 1..4
  EXPECT_EQ(b->chunk_count(), 1U);
  EXPECT_EQ(mismatches_on(0, b->data(), 32_MiB, seed), 0ULL) << "the chunk kept, on GPU 1, read by GPU 0";
}

TEST_F(multi_gpu_buffer_gpu_test, a_buffer_on_gpu_1_with_memory_only_on_gpu_0_is_used_from_both) {
  constexpr std::size_t bytes = 96_MiB;
  auto b = cuda::growable_buffer::create(
      other_, {.size = bytes, .max_size = 512_MiB, .access = {{&dev_, cuda::access::read}},
               .placement = {.devices = {&dev_}}});
  MB_OK(b);
  for (const cuda::chunk_info& c : b->chunks()) EXPECT_EQ(c.device, 0);
  const std::uint32_t seed = fresh_seed();
  MB_CUDA_OK(fill_on(1, b->data(), bytes, seed));
  EXPECT_EQ(mismatches_on(0, b->data(), bytes, seed), 0ULL) << "GPU 0 (read access) sees GPU 1's writes";
}

}  // namespace
}  // namespace membridge::testing
