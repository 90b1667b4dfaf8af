// bench/vulkan_read/support.hpp: what the parts of the Vulkan read benchmark share: the exit codes,
// failures and CUDA checks of every CUDA benchmark (cuda_support.hpp), checks of Vulkan and
// membridge results, and the CPU side of the data check (the per-workgroup sums the read-reduce
// shader must produce over the fill pattern).
#pragma once

#include "cuda_support.hpp"

#include <membridge/core/result.hpp>

#include <vulkan/vulkan_core.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace membridge::bench::vulkan_read {

using bench::bench_failure;
using bench::check_cuda;
using bench::device_unavailable;
using bench::ok_or_fail;
using bench::value_or_fail;

/// Every host wait of the benchmark (a fence) gives up after this long.
inline constexpr std::chrono::seconds wait_timeout{10};

/// Invocations per workgroup of shaders/read_reduce.comp (its local_size_x).
inline constexpr std::uint32_t workgroup_size = 256;

// ------------------------------------------------------------------------------------ failures ---

/// "VK_ERROR_OUT_OF_DEVICE_MEMORY" for the codes a benchmark meets; "VkResult <n>" for the others.
[[nodiscard]] std::string vk_result_text(VkResult rc);

/// Throws bench_failure naming the place, the call and the VkResult unless `rc` is VK_SUCCESS.
void check_vk(VkResult rc, std::string_view call, std::source_location where = std::source_location::current());



/// Checks a CUDA runtime call: on failure the benchmark ends with status 1 and a message naming
/// file:line, the call and the error.
#define MEMBRIDGE_VULKAN_READ_CUDA(...) ::membridge::bench::check_cuda((__VA_ARGS__), #__VA_ARGS__)
/// Checks a Vulkan call's VkResult the same way.
#define MEMBRIDGE_VULKAN_READ_VK(...) ::membridge::bench::vulkan_read::check_vk((__VA_ARGS__), #__VA_ARGS__)

// ---------------------------------------------------------------------------------- data check ---

/// The sums (mod 2^32) that shaders/read_reduce.comp writes, one per workgroup, when it reads
/// `bytes` (a multiple of 16) of the pattern membridge::testing::gpu::fill_pattern writes with
/// `seed` (word k = pattern(k, seed)) in a dispatch of `groups` workgroups: workgroup w sums the
/// four words of every 16-byte element e with (e mod (groups * 256)) / 256 == w. Computed on the
/// host, on up to 16 threads.
[[nodiscard]] std::vector<std::uint32_t> expected_group_sums(std::size_t bytes, std::uint32_t seed,
                                                             std::uint32_t groups);

/// How one dispatch's sums compare with the expected ones.
struct sums_check {
  std::size_t wrong = 0;        ///< Workgroups whose sum differs.
  std::size_t first_wrong = 0;  ///< The first of them (valid when wrong > 0).
  std::uint32_t got = 0;        ///< Its sum.
  std::uint32_t expected = 0;   ///< The sum it should have.
};

/// Compares `count` sums at `got` with `expected` (expected.size() == count).
[[nodiscard]] sums_check compare_sums(const std::uint32_t* got, const std::vector<std::uint32_t>& expected);

/// "13.0" for a CUDA version number such as 13000 (cuda_support.hpp), named here too for vr::.
using bench::cuda_version_text;

}  // namespace membridge::bench::vulkan_read
