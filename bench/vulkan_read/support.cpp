#include "support.hpp"

#include "kernels.cuh"  // membridge::testing::gpu::pattern, the words fill_pattern writes

#include <algorithm>
#include <thread>

namespace membridge::bench::vulkan_read {

std::string vk_result_text(VkResult rc) {
  switch (rc) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_INVALID_EXTERNAL_HANDLE: return "VK_ERROR_INVALID_EXTERNAL_HANDLE";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_UNKNOWN: return "VK_ERROR_UNKNOWN";
    default: return "VkResult " + std::to_string(static_cast<int>(rc));
  }
}

void check_vk(VkResult rc, std::string_view call, std::source_location where) {
  if (rc != VK_SUCCESS)
    throw bench_failure(where_text(where) + ' ' + std::string(call) + ": " + vk_result_text(rc) + " (" +
                        std::to_string(static_cast<int>(rc)) + ")");
}


std::vector<std::uint32_t> expected_group_sums(std::size_t bytes, std::uint32_t seed, std::uint32_t groups) {
  using membridge::testing::gpu::pattern;
  if (bytes % 16 != 0 || groups == 0) throw bench_failure("expected_group_sums: bytes not a multiple of 16, or no groups");
  const std::size_t elements = bytes / 16;
  const std::size_t stride = std::size_t{groups} * workgroup_size;  // elements per grid-stride row
  const std::size_t rows = (elements + stride - 1) / stride;
  const std::size_t threads =
      std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, std::min<std::size_t>(16, std::max<std::size_t>(rows, 1)));

  // Each thread sums its own rows into its own vector; sums mod 2^32 add up in any order.
  std::vector<std::vector<std::uint32_t>> partial(threads, std::vector<std::uint32_t>(groups, 0));
  const auto work = [&](std::size_t t) {
    std::vector<std::uint32_t>& out = partial[t];
    for (std::size_t row = rows * t / threads; row < rows * (t + 1) / threads; ++row) {
      const std::size_t first = row * stride;
      const std::size_t count = std::min(stride, elements - first);
      for (std::size_t c = 0; c < count; ++c) {
        const std::uint64_t word = 4 * static_cast<std::uint64_t>(first + c);
        const std::uint32_t s = pattern(word, seed) + pattern(word + 1, seed) + pattern(word + 2, seed) +
                                pattern(word + 3, seed);
        out[c / workgroup_size] += s;
      }
    }
  };
  {
    std::vector<std::jthread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
  }  // joined
  std::vector<std::uint32_t> sums(groups, 0);
  for (const auto& p : partial)
    for (std::uint32_t w = 0; w < groups; ++w) sums[w] += p[w];
  return sums;
}

sums_check compare_sums(const std::uint32_t* got, const std::vector<std::uint32_t>& expected) {
  sums_check out;
  for (std::size_t w = 0; w < expected.size(); ++w)
    if (got[w] != expected[w]) {
      if (out.wrong == 0) {
        out.first_wrong = w;
        out.got = got[w];
        out.expected = expected[w];
      }
      ++out.wrong;
    }
  return out;
}

}  // namespace membridge::bench::vulkan_read
