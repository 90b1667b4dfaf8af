// bench/vulkan_read/report.hpp: the read benchmark's statistics, its text tables, its goal and its
// JSON line.
#pragma once

#include "stats.hpp"

#include <vulkan/vulkan_core.h>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace membridge::bench::vulkan_read {

/// The goal: imported / own read bandwidth (median of per-pair ratios) at least this.
inline constexpr double bandwidth_ratio_goal = 0.99;

/// What was run, where and how (for the header and the JSON line).
struct run_info {
  // CUDA
  int ordinal = 0;                  ///< CUDA device ordinal.
  std::string gpu_name;             ///< cuda::device::name().
  std::string gpu_uuid;             ///< cuda::device::uuid().
  std::string pci_bus_id;           ///< cuda::device::pci_bus_id().
  std::string compute_capability;   ///< "9.0".
  std::string cuda_driver;          ///< "13.0".
  std::string cuda_runtime;         ///< "13.0".
  // Vulkan
  std::string vk_name;              ///< device_context::name().
  std::string vk_driver;            ///< device_context::driver_info().
  bool sparse_binding = false;      ///< context_capabilities::sparse_binding.
  double timestamp_period_ns = 0.0; ///< VkPhysicalDeviceLimits::timestampPeriod.
  std::uint32_t timestamp_valid_bits = 0;       ///< Of the graphics queue family.
  std::uint64_t max_storage_buffer_range = 0;   ///< VkPhysicalDeviceLimits::maxStorageBufferRange.
  std::uint32_t own_memory_type = 0;            ///< Memory type of the own buffer.
  VkMemoryPropertyFlags own_memory_flags = 0;   ///< Its property flags.
  // Configuration
  std::size_t bytes = 0;            ///< Bytes each dispatch reads (both buffers' size).
  std::size_t chunk_bytes = 0;      ///< chunk_policy::max_chunk of the growable_buffer.
  std::size_t chunks = 0;           ///< Its chunks (= the sparse VkBuffer's imported chunks).
  bool imported_sparse = false;     ///< chunked_buffer::is_sparse() of the view.
  std::uint32_t workgroups = 0;     ///< Workgroups per dispatch (256 invocations each).
  int warmup_pairs = 0;             ///< Pairs run and checked before the timed ones.
  int pairs = 0;                    ///< Timed pairs.
  bool quick = false;               ///< --quick.
  std::uint32_t seed = 0;           ///< The fill pattern's seed (fresh every run).
  std::string commit;               ///< The commit the benchmark was built from.
};

/// The timed dispatches: entry i of each vector belongs to pair i.
struct samples {
  std::vector<double> imported_ns;   ///< GPU time of each timed dispatch over the imported buffer.
  std::vector<double> own_ns;        ///< The same over the own buffer.
  std::vector<bool> imported_first;  ///< Whether pair i ran the imported dispatch first.
  std::size_t dispatches_checked = 0;///< Dispatches whose sums were checked (warm-up included): all of them.
};

/// Prints the header, the bandwidth and ratio tables and the goal to `out`, and returns the JSON
/// object of the run ("bench" first; the caller prints it as the last line).
[[nodiscard]] json report(std::ostream& out, const run_info& info, const samples& s);

/// "DEVICE_LOCAL" / "DEVICE_LOCAL|HOST_VISIBLE|..." for memory property flags; "none" for 0.
[[nodiscard]] std::string memory_flags_text(VkMemoryPropertyFlags flags);

}  // namespace membridge::bench::vulkan_read
