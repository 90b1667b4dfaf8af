#include "report.hpp"

#include <membridge/core/units.hpp>

#include <cmath>
#include <ostream>
#include <string_view>
#include <utility>

namespace membridge::bench::vulkan_read {

namespace {

/// GB/s (10^9 bytes per second) of reading `bytes` in each of `ns`.
std::vector<double> to_gbps(const std::vector<double>& ns, std::size_t bytes) {
  std::vector<double> out;
  out.reserve(ns.size());
  for (const double t : ns) out.push_back(static_cast<double>(bytes) / t);  // bytes per ns = GB/s
  return out;
}

std::vector<std::string> bandwidth_row(std::string_view what, const summary& gbps, const summary& us) {
  return {std::string(what), fixed(gbps.median, 1), fixed(gbps.p10, 1), fixed(gbps.p90, 1), fixed(gbps.min, 1),
          fixed(gbps.max, 1), fixed(us.median, 1)};
}

json values_json(const std::vector<double>& values, int decimals) {
  json out = json::array();
  for (const double v : values) out.push_back(rounded(v, decimals));
  return out;
}

}  // namespace

std::string memory_flags_text(VkMemoryPropertyFlags flags) {
  static constexpr std::pair<VkMemoryPropertyFlags, std::string_view> names[] = {
      {VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, "DEVICE_LOCAL"},   {VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, "HOST_VISIBLE"},
      {VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, "HOST_COHERENT"}, {VK_MEMORY_PROPERTY_HOST_CACHED_BIT, "HOST_CACHED"},
      {VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT, "LAZILY_ALLOCATED"}, {VK_MEMORY_PROPERTY_PROTECTED_BIT, "PROTECTED"}};
  std::string out;
  for (const auto& [bit, name] : names)
    if ((flags & bit) != 0) {
      if (!out.empty()) out += '|';
      out += name;
    }
  return out.empty() ? "none" : out;
}

json report(std::ostream& out, const run_info& info, const samples& s) {
  const std::vector<double> imported_gbps = to_gbps(s.imported_ns, info.bytes);
  const std::vector<double> own_gbps = to_gbps(s.own_ns, info.bytes);
  std::vector<double> imported_us;
  std::vector<double> own_us;
  for (const double t : s.imported_ns) imported_us.push_back(t / 1e3);
  for (const double t : s.own_ns) own_us.push_back(t / 1e3);
  const summary imported = summarize(imported_gbps);
  const summary own = summarize(own_gbps);
  const summary imported_time = summarize(imported_us);
  const summary own_time = summarize(own_us);
  const ratio r = compare(imported_gbps, own_gbps);
  const double measured = r.paired.median;
  const bool met = !std::isnan(measured) && measured >= bandwidth_ratio_goal;

  // ---- text
  std::string sm = info.compute_capability;  // "9.0" -> sm_90
  std::erase(sm, '.');
  out << "membridge Vulkan read benchmark on " << info.gpu_name << " (device " << info.ordinal << ", sm_" << sm
      << "), CUDA driver " << info.cuda_driver << ", runtime " << info.cuda_runtime
      << "\nVulkan " << info.vk_name << " (" << info.vk_driver << "), sparse binding "
      << (info.sparse_binding ? "yes" : "no") << ", timestampPeriod " << fixed(info.timestamp_period_ns, 3) << " ns, "
      << info.timestamp_valid_bits << " valid bits" << (info.quick ? "; --quick: a smoke run, not a measurement" : "")
      << "\n\n"
      << "read-reduce compute shader (shaders/read_reduce.comp: 16-byte loads, " << info.workgroups << " x 256 "
      << "invocations) over " << format_bytes(info.bytes) << ", " << info.pairs << " interleaved pairs after "
      << info.warmup_pairs << " warm-up pairs\n(the first of a pair alternates); each dispatch timed alone with "
      << "timestamp queries, and its " << info.workgroups << " workgroup sums checked against the CPU's\n"
      << "  imported: cuda::growable_buffer of " << info.chunks << " chunks (max_chunk " << format_bytes(info.chunk_bytes)
      << "), sync::mirror_in_vulkan -> " << (info.imported_sparse ? "one sparse VkBuffer" : "NOT sparse") << '\n'
      << "  own:      VkBuffer on vkAllocateMemory'd memory (type " << info.own_memory_type << ": "
      << memory_flags_text(info.own_memory_flags) << ")\n";
  text_table table({{"memory"},
                    {"median GB/s", align::right},
                    {"p10", align::right},
                    {"p90", align::right},
                    {"min", align::right},
                    {"max", align::right},
                    {"median us", align::right}});
  table.add_row(bandwidth_row("imported", imported, imported_time));
  table.add_row(bandwidth_row("own", own, own_time));
  table.print(out);
  out << '\n';
  text_table ratios({{"ratio imported / own"},
                     {"paired median", align::right},
                     {"of medians", align::right},
                     {"p10 paired", align::right},
                     {"p90 paired", align::right},
                     {"min paired", align::right},
                     {"max paired", align::right}});
  ratios.add_row({"read bandwidth", fixed(r.paired.median, 3) + "x", fixed(r.of_medians, 3) + "x",
                  fixed(r.paired.p10, 3) + "x", fixed(r.paired.p90, 3) + "x", fixed(r.paired.min, 3) + "x",
                  fixed(r.paired.max, 3) + "x"});
  ratios.print(out);
  out << "\ndata: " << s.dispatches_checked << " dispatches, every workgroup sum equal to the CPU's (seed 0x" << std::hex
      << info.seed << std::dec << ")\n\ngoals (reported, not enforced)\n"
      << "  " << (met ? "met    " : "NOT MET") << "  Vulkan read bandwidth, imported / own (median of per-pair ratios) >= "
      << fixed(bandwidth_ratio_goal, 2) << ": measured " << fixed(measured, 3) << "\n\n";

  // ---- JSON
  json j;
  j["bench"] = "vulkan_read";
  j["commit"] = info.commit;
  j["device"] = {{"ordinal", info.ordinal},
                 {"name", info.gpu_name},
                 {"uuid", info.gpu_uuid},
                 {"pci_bus_id", info.pci_bus_id},
                 {"compute_capability", info.compute_capability},
                 {"cuda_driver_version", info.cuda_driver},
                 {"cuda_runtime_version", info.cuda_runtime}};
  j["vulkan"] = {{"device", info.vk_name},
                 {"driver", info.vk_driver},
                 {"sparse_binding", info.sparse_binding},
                 {"timestamp_period_ns", info.timestamp_period_ns},
                 {"timestamp_valid_bits", info.timestamp_valid_bits},
                 {"max_storage_buffer_range", info.max_storage_buffer_range}};
  j["config"] = {{"bytes", info.bytes},
                 {"chunk_bytes", info.chunk_bytes},
                 {"workgroups", info.workgroups},
                 {"workgroup_size", 256},
                 {"load_bytes", 16},
                 {"warmup_pairs", info.warmup_pairs},
                 {"pairs", info.pairs},
                 {"quick", info.quick},
                 {"seed", info.seed}};
  json first = json::array();
  for (const bool b : s.imported_first) first.push_back(b ? "imported" : "own");
  j["imported"] = {{"memory", "cuda::growable_buffer via sync::mirror_in_vulkan"},
                   {"chunks", info.chunks},
                   {"sparse", info.imported_sparse},
                   {"gbps", to_json(imported, 2)},
                   {"dispatch_us", to_json(imported_time, 2)},
                   {"gbps_per_pair", values_json(imported_gbps, 2)}};
  j["own"] = {{"memory", "vkAllocateMemory"},
              {"memory_type", info.own_memory_type},
              {"memory_flags", memory_flags_text(info.own_memory_flags)},
              {"gbps", to_json(own, 2)},
              {"dispatch_us", to_json(own_time, 2)},
              {"gbps_per_pair", values_json(own_gbps, 2)}};
  j["first_of_pair"] = first;
  j["ratio_imported_over_own"] = {{"of_medians", rounded(r.of_medians, 4)}, {"paired", to_json(r.paired, 4)}};
  j["goals"] = {{"vulkan_import_read_bandwidth_ratio",
                 {{"comparison", ">="}, {"target", bandwidth_ratio_goal}, {"measured", rounded(measured, 4)}, {"met", met}}}};
  j["all_goals_met"] = met;
  j["data_checked"] = true;
  j["dispatches_checked"] = s.dispatches_checked;
  return j;
}

}  // namespace membridge::bench::vulkan_read
