#include "report.hpp"

#include <membridge/core/units.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string_view>
#include <utility>

namespace membridge::bench::peer {

namespace {

constexpr std::string_view goal_key = "peer_kernel_over_copy_engine";

/// The goal's measurement: the worse direction's paired median of kernel / copy engine.
double goal_measured(const link_report& r) { return std::min(r.read.paired.median, r.write.paired.median); }

/// A table row: label cells, then the median, min and max of `s`.
std::vector<std::string> summary_row(std::string a, std::string b, const summary& s) {
  return {std::move(a), std::move(b), fixed(s.median, 1), fixed(s.min, 1), fixed(s.max, 1)};
}

text_table bandwidth_table(std::string first, std::string second) {
  return text_table({{std::move(first)}, {std::move(second)}, {"median GB/s", align::right},
                     {"min", align::right}, {"max", align::right}});
}

/// A bandwidth table's row: two label cells and the samples' summary.
struct bandwidth_line {
  std::string first;
  std::string second;
  const summary& samples;
};

/// A ratio table's row.
struct ratio_line {
  std::string what;
  const ratio& value;
};

/// The bandwidth table of `lines` (columns `first`, `second`), then the ratio table titled `ratio_title`
/// of `ratios`, each followed by a blank line.
void print_comparison(std::string first, std::string second, const std::vector<bandwidth_line>& lines,
                      std::string ratio_title, const std::vector<ratio_line>& ratios) {
  text_table table = bandwidth_table(std::move(first), std::move(second));
  for (const bandwidth_line& l : lines) table.add_row(summary_row(l.first, l.second, l.samples));
  table.print(std::cout);
  std::cout << '\n';
  text_table ratio_rows = ratio_table(std::move(ratio_title));
  for (const ratio_line& l : ratios) ratio_rows.add_row(ratio_row(l.what, l.value));
  ratio_rows.print(std::cout);
  std::cout << '\n';
}

/// "GPU 0 -> GPU 1".
std::string arrow(int from, int to) { return "GPU " + std::to_string(from) + " -> GPU " + std::to_string(to); }

json link_json(const cuda::peer_link& l) {
  return {{"from", l.from},
          {"to", l.to},
          {"access", l.access},
          {"native_atomics", l.native_atomics},
          {"array_access", l.array_access},
          {"performance_rank", l.performance_rank}};
}

json matrix_json(const std::vector<cuda::peer_link>& matrix) {
  json out = json::array();
  for (const cuda::peer_link& l : matrix) out.push_back(link_json(l));
  return out;
}

json device_json(const cuda::device& d) {
  const auto cc = d.compute_capability();
  return {{"ordinal", d.ordinal()},
          {"name", d.name()},
          {"uuid", d.uuid().to_string()},
          {"pci_bus_id", d.pci_bus_id()},
          {"compute_capability", std::to_string(cc[0]) + '.' + std::to_string(cc[1])},
          {"total_memory_bytes", d.total_memory()}};
}

json config_json(const run_config& c) {
  return {{"local", c.local},
          {"remote", c.remote},
          {"quick", c.quick},
          {"transfer_bytes", c.link.bytes},
          {"warmup_rounds", c.link.warmup},
          {"rounds", c.link.rounds},
          {"spread_bytes", c.spread.bytes},
          {"spread_chunk_bytes", c.spread.chunk_bytes},
          {"spread_warmup_rounds", c.spread.warmup},
          {"spread_rounds", c.spread.rounds}};
}

/// GB/s (1e9 bytes per second) as bytes per second, an integer.
json bytes_per_second(double gigabytes_per_second) {
  return gigabytes_per_second > 0.0 ? json(std::llround(gigabytes_per_second * 1.0e9)) : json(nullptr);
}

json spread_json(const spread_report& s) {
  if (!s.ran) return {{"not_run", "left out (--no-spread)"}};
  return {{"chunk_devices", s.chunk_devices},
          {"local",
           {{"spread_gbps", to_json(s.spread_on_local, 2)},
            {"own_gbps", to_json(s.own_on_local, 2)},
            {"ratio_spread_over_own", ratio_json(s.local_ratio)}}},
          {"remote",
           {{"spread_gbps", to_json(s.spread_on_remote, 2)},
            {"own_gbps", to_json(s.own_on_remote, 2)},
            {"ratio_spread_over_own", ratio_json(s.remote_ratio)}}}};
}

json goal_json(json measured, json met) {
  return {{std::string(goal_key),
           {{"comparison", ">="},
            {"target", kernel_over_copy_goal},
            {"measured", std::move(measured)},
            {"met", std::move(met)}}}};
}

}  // namespace

link_report summarize_link(const link_samples& s) {
  return {.kernel_read = summarize(s.kernel_read),
          .copy_read = summarize(s.copy_read),
          .kernel_write = summarize(s.kernel_write),
          .copy_write = summarize(s.copy_write),
          .read = compare(s.kernel_read, s.copy_read),
          .write = compare(s.kernel_write, s.copy_write)};
}

void print_link(const run_config& c, const link_report& r) {
  const std::string in = arrow(c.remote, c.local);
  const std::string out = arrow(c.local, c.remote);
  std::cout << "part 1: the link, " << format_bytes(c.link.bytes) << " per transfer, " << c.link.rounds
            << " interleaved rounds after " << c.link.warmup << " warm-up, CUDA events on GPU " << c.local
            << "'s stream, every transfer's data checked;\n"
            << "kernels on GPU " << c.local << " use GPU " << c.remote
            << "'s memory through membridge (vmm_allocation + address_range + mapping + set_access);\n"
            << "the copy engine copies between cudaMalloc buffers with cudaMemcpyPeerAsync (peer access enabled)\n";
  print_comparison("transfer", "data",
                   {{"kernel read (read16)", in, r.kernel_read}, {"copy engine", in, r.copy_read},
                    {"kernel write (write16)", out, r.kernel_write}, {"copy engine", out, r.copy_write}},
                   "kernel / copy engine", {{"read, " + in, r.read}, {"write, " + out, r.write}});
}

void print_goals(const link_report& r) {
  const double measured = goal_measured(r);
  const bool met = measured >= kernel_over_copy_goal;
  std::cout << "goals (reported, not enforced)\n"
            << "  " << (met ? "met    " : "NOT MET") << "  " << goal_key
            << ": kernel / copy engine bandwidth, the worse of read and write (paired medians) >= "
            << fixed(kernel_over_copy_goal, 2) << ": measured " << fixed(measured, 3) << "\n\n";
}

void print_spread(const run_config& c, const spread_report& r) {
  if (!r.ran) {
    std::cout << "part 2: spread buffer not run (--no-spread)\n\n";
    return;
  }
  std::cout << "part 2: a growable_buffer of " << format_bytes(c.spread.bytes) << " in " << r.chunk_devices.size()
            << " chunks of " << format_bytes(c.spread.chunk_bytes) << " placed round-robin on GPUs " << c.local
            << " and " << c.remote << " (chunk GPUs:";
  for (const int d : r.chunk_devices) std::cout << ' ' << d;
  std::cout << "), read whole by read16 on each GPU, against a growable_buffer wholly on that GPU;\n"
            << c.spread.rounds << " interleaved rounds after " << c.spread.warmup
            << " warm-up, CUDA events, every read's checksum checked\n";
  const std::string local = "GPU " + std::to_string(c.local);
  const std::string remote = "GPU " + std::to_string(c.remote);
  print_comparison("read by", "buffer",
                   {{local, "spread", r.spread_on_local}, {local, "own (all on " + local + ")", r.own_on_local},
                    {remote, "spread", r.spread_on_remote}, {remote, "own (all on " + remote + ")", r.own_on_remote}},
                   "spread / own", {{"read by " + local, r.local_ratio}, {"read by " + remote, r.remote_ratio}});
}

json report_json(const gpu_pair& gpus, const std::vector<cuda::peer_link>& matrix, const run_config& config,
                 const link_report& link, const spread_report& spread) {
  json out;
  out["bench"] = "peer";
  out["devices"] = json::array({device_json(gpus.local), device_json(gpus.remote)});
  out["cuda_driver_version"] = cuda_version_text(gpus.driver_version);
  out["cuda_runtime_version"] = cuda_version_text(gpus.runtime_version);
  out["config"] = config_json(config);
  out["link"] = {{"local_to_remote", link_json(gpus.to_remote)},
                 {"remote_to_local", link_json(gpus.to_local)},
                 {"matrix", matrix_json(matrix)},
                 {"bytes_per_second",
                  {{"remote_to_local",
                    {{"kernel_read", bytes_per_second(link.kernel_read.median)},
                     {"copy_engine", bytes_per_second(link.copy_read.median)}}},
                   {"local_to_remote",
                    {{"kernel_write", bytes_per_second(link.kernel_write.median)},
                     {"copy_engine", bytes_per_second(link.copy_write.median)}}}}}};
  out["bandwidth"] = {{"kernel_read_gbps", to_json(link.kernel_read, 2)},
                      {"copy_read_gbps", to_json(link.copy_read, 2)},
                      {"kernel_write_gbps", to_json(link.kernel_write, 2)},
                      {"copy_write_gbps", to_json(link.copy_write, 2)},
                      {"ratio_read_kernel_over_copy", ratio_json(link.read)},
                      {"ratio_write_kernel_over_copy", ratio_json(link.write)}};
  out["spread"] = spread_json(spread);
  const double measured = goal_measured(link);
  const bool met = measured >= kernel_over_copy_goal;
  out["goals"] = goal_json(rounded(measured, 4), met);
  out["all_goals_met"] = met;
  out["data_checked"] = true;
  return out;
}

json not_run_json(const std::string& reason, int gpu_count, const std::optional<std::vector<cuda::peer_link>>& matrix,
                  const run_config& config) {
  json out;
  out["bench"] = "peer";
  out["not_run"] = reason;
  out["gpus"] = gpu_count;
  out["config"] = config_json(config);
  out["link"] = {{"matrix", matrix ? matrix_json(*matrix) : json(nullptr)}};
  out["goals"] = goal_json(nullptr, nullptr);
  out["all_goals_met"] = nullptr;
  out["data_checked"] = false;
  return out;
}

}  // namespace membridge::bench::peer
