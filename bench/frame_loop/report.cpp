#include "report.hpp"

#include <membridge/core/units.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <ostream>

namespace membridge::bench::frame_loop {

namespace {

constexpr double goal_vs_naive = 1.10;       // pipelined throughput >= 1.1 x naive
constexpr double goal_render_cpu_us = 50.0;  // render thread host time per frame
constexpr double goal_round_trips = 1.0;     // exactly one per drawn frame

constexpr std::array<std::string_view, mode_count> mode_labels = {
    "pipelined (membridge)", "naive (stream sync + queue wait idle)", "host staging copy"};
constexpr std::array<std::string_view, mode_count> mode_keys = {"pipelined", "naive", "staging"};

/// The per-frame values `pick(run)` of `mode` in every round, summarised across rounds.
across_rounds over_rounds(const config_result& r, mode m,
                          const std::function<const std::vector<double>&(const mode_run&)>& pick) {
  across_rounds out;
  for (const round_result& round : r.rounds) {
    const std::vector<double>& values = pick(round.runs[static_cast<std::size_t>(m)]);
    out.round_means.push_back(mean(values));
    out.round_medians.push_back(median(values));
    out.round_p99s.push_back(percentile(values, 0.99));
  }
  out.mean = median(out.round_means);
  out.median = median(out.round_medians);
  out.p99 = median(out.round_p99s);
  return out;
}

/// The median over rounds of `pick(round.floor)`.
double floor_median(const config_result& r, const std::function<double(const floor_parts&)>& pick) {
  std::vector<double> values;
  for (const round_result& round : r.rounds) values.push_back(pick(round.floor));
  return median(values);
}

std::string steps_label(int steps) { return std::to_string(steps) + (steps == 1 ? " step" : " steps"); }

/// "0.800..0.830": the range of per-round values.
std::string range_text(const std::vector<double>& values, int decimals) {
  if (values.empty()) return "";
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return fixed(*lo, decimals) + ".." + fixed(*hi, decimals);
}

json rounded_array(const std::vector<double>& values, int decimals) {
  json out = json::array();
  for (const double v : values) out.push_back(std::isfinite(v) ? json(rounded(v, decimals)) : json(nullptr));
  return out;
}

json across_json(const across_rounds& a, int decimals) {
  return {{"mean", rounded(a.mean, decimals)},
          {"median", rounded(a.median, decimals)},
          {"p99", rounded(a.p99, decimals)},
          {"round_means", rounded_array(a.round_means, decimals)},
          {"round_medians", rounded_array(a.round_medians, decimals)},
          {"round_p99s", rounded_array(a.round_p99s, decimals)}};
}

}  // namespace

std::string count_label(std::size_t count) {
  if (count != 0 && count % (std::size_t{1} << 20U) == 0) return std::to_string(count >> 20U) + "M";
  if (count != 0 && count % (std::size_t{1} << 10U) == 0) return std::to_string(count >> 10U) + "K";
  return std::to_string(count);
}

config_summary summarize(const config_result& r) {
  config_summary s;
  for (int i = 0; i < mode_count; ++i) {
    const auto m = static_cast<mode>(i);
    s.frame_ms[static_cast<std::size_t>(i)] =
        over_rounds(r, m, [](const mode_run& x) -> const auto& { return x.frame_ms; });
    s.thread_cpu_us[static_cast<std::size_t>(i)] =
        over_rounds(r, m, [](const mode_run& x) -> const auto& { return x.thread_cpu_us; });
  }
  s.pipelined_gpu_frame_ms =
      over_rounds(r, mode::pipelined, [](const mode_run& x) -> const auto& { return x.gpu_frame_ms; });
  s.render_work_cpu_us =
      over_rounds(r, mode::pipelined, [](const mode_run& x) -> const auto& { return x.render_work_cpu_us; });
  s.producer_cpu_us =
      over_rounds(r, mode::pipelined, [](const mode_run& x) -> const auto& { return x.producer_cpu_us; });
  s.sim_ms = floor_median(r, [](const floor_parts& f) { return f.sim_ms; });
  s.draw_ms = floor_median(r, [](const floor_parts& f) { return f.draw_ms; });
  s.round_trip_ms = floor_median(r, [](const floor_parts& f) { return f.round_trip_ms; });
  s.floor_ms = floor_median(r, [](const floor_parts& f) { return f.total(); });
  for (const round_result& round : r.rounds) s.round_floor_ms.push_back(round.floor.total());
  s.handoff_floor_ms = floor_median(r, [](const floor_parts& f) { return f.handoff_floor_ms; });
  s.handoff_floor_median_ms = floor_median(r, [](const floor_parts& f) { return f.handoff_floor_median_ms; });
  s.handoff_floor_raw_ms = floor_median(r, [](const floor_parts& f) { return f.handoff_floor_raw_ms; });
  for (const round_result& round : r.rounds) {
    s.round_handoff_floor_ms.push_back(round.floor.handoff_floor_ms);
    s.round_handoff_floor_raw_ms.push_back(round.floor.handoff_floor_raw_ms);
  }

  const double pipelined = s.frame_ms[0].mean;  // throughput: frames complete in bursts
  s.pipelined_over_floor = pipelined / s.floor_ms;
  s.handoff_ms = pipelined - s.sim_ms - s.draw_ms;
  // Both are per frame of the same loop: handoff_ms with the real work taken out, the floor with none put in.
  s.handoff_over_floor = s.handoff_ms / s.handoff_floor_ms;
  s.throughput_vs_naive = s.frame_ms[1].mean / pipelined;
  s.throughput_vs_staging = s.frame_ms[2].mean / pipelined;

  std::uint64_t cuda_waits = 0;
  std::uint64_t vulkan_waits = 0;
  std::uint64_t frames = 0;
  s.one_round_trip_every_round = !r.rounds.empty();
  for (const round_result& round : r.rounds) {
    const mode_run& p = round.runs[0];
    cuda_waits += p.cuda_waits;
    vulkan_waits += p.vulkan_waits;
    frames += p.measured_frames;
    s.one_round_trip_every_round = s.one_round_trip_every_round && p.measured_frames > 0 &&
                                   p.cuda_waits == p.measured_frames && p.vulkan_waits == p.measured_frames;
  }
  const double per_frame = frames == 0 ? std::nan("") : 1.0 / static_cast<double>(frames);
  s.cuda_waits_per_frame = static_cast<double>(cuda_waits) * per_frame;
  s.vulkan_waits_per_frame = static_cast<double>(vulkan_waits) * per_frame;
  s.round_trips_per_frame = std::max(s.cuda_waits_per_frame, s.vulkan_waits_per_frame);

  const std::string where = count_label(r.count) + ", " + steps_label(r.steps) + ": ";
  // No goal on the floor ratio: the isolated round trip is measured through host waits (1.2-1.6 ms on
  // an H100) while a pipelined frame pays ~0.12 ms for its handoff, so the ratio cannot fail; the
  // handoff itself (pipelined - sim - draw) is reported instead, and the viewed part has the goal.
  s.goals = {
      {"throughput_vs_naive", where + "pipelined throughput / naive (naive frame time / pipelined)", ">=",
       goal_vs_naive, s.throughput_vs_naive, s.throughput_vs_naive >= goal_vs_naive},
      {"render_host_us",
       where + "render thread CPU per frame, record + submit, fence wait excluded (median us)",
       "<=", goal_render_cpu_us, s.render_work_cpu_us.median, s.render_work_cpu_us.median <= goal_render_cpu_us},
      {"round_trips_per_frame", where + "round trips per drawn frame (CUDA and Vulkan waits, every round)", "==",
       goal_round_trips, s.round_trips_per_frame,
       s.one_round_trip_every_round && s.cuda_waits_per_frame == 1.0 && s.vulkan_waits_per_frame == 1.0},
  };
  return s;
}

void print_config(std::ostream& out, const config_result& r, const config_summary& s) {
  const std::size_t slot_bytes = r.count * sizeof(particles::particle);
  out << count_label(r.count) << " particles (" << r.count << ", " << format_bytes(slot_bytes) << " per slot, "
      << ring_slots << " slots), " << steps_label(r.steps) << " per drawn frame; " << r.loop.frames
      << " frames per run after " << r.loop.warmup << " warm-up, " << r.rounds.size() << " rounds\n";

  text_table frames({{"frame time"},
                     {"mean ms", align::right},
                     {"median ms", align::right},
                     {"p99 ms", align::right},
                     {"round means", align::right},
                     {"frames/s", align::right},
                     {"/ floor", align::right},
                     {"x pipelined", align::right}});
  for (int i = 0; i < mode_count; ++i) {
    const across_rounds& a = s.frame_ms[static_cast<std::size_t>(i)];
    frames.add_row({std::string(mode_labels[static_cast<std::size_t>(i)]), fixed(a.mean, 3), fixed(a.median, 3),
                    fixed(a.p99, 3), range_text(a.round_means, 3), fixed(1000.0 / a.mean, 1),
                    fixed(a.mean / s.floor_ms, 3) + "x", fixed(a.mean / s.frame_ms[0].mean, 2) + "x"});
  }
  frames.add_row({"pipelined, CUDA event clock (sim end to sim end)", fixed(s.pipelined_gpu_frame_ms.mean, 3),
                  fixed(s.pipelined_gpu_frame_ms.median, 3), fixed(s.pipelined_gpu_frame_ms.p99, 3),
                  range_text(s.pipelined_gpu_frame_ms.round_means, 3), fixed(1000.0 / s.pipelined_gpu_frame_ms.mean, 1),
                  "", ""});
  frames.add_row({"floor = sim + draw + round trip", fixed(s.floor_ms, 3), "", "", range_text(s.round_floor_ms, 3),
                  fixed(1000.0 / s.floor_ms, 1), "1.000x", ""});
  frames.add_row({"  sim GPU (copy + " + steps_label(r.steps) + ", CUDA events)", fixed(s.sim_ms, 3)});
  frames.add_row({"  draw GPU (" + std::to_string(floor_frames) + " back to back)", fixed(s.draw_ms, 3)});
  frames.add_row({"  CUDA<->Vulkan round trip (no work, host waits)", fixed(s.round_trip_ms, 3)});
  frames.add_row({"handoff per drawn frame = pipelined - sim - draw", fixed(s.handoff_ms, 3)});
  frames.add_row({"handoff floor (pipelined, no work)", fixed(s.handoff_floor_ms, 3),
                  fixed(s.handoff_floor_median_ms, 3), "", range_text(s.round_handoff_floor_ms, 3),
                  fixed(1000.0 / s.handoff_floor_ms, 1)});
  frames.add_row({"  the same, raw driver calls (no membridge)", fixed(s.handoff_floor_raw_ms, 3), "", "",
                  range_text(s.round_handoff_floor_raw_ms, 3), fixed(1000.0 / s.handoff_floor_raw_ms, 1)});
  frames.add_row({"handoff over floor = handoff / handoff floor", fixed(s.handoff_over_floor, 3) + "x"});
  frames.print(out);
  out << '\n';

  text_table cpu({{"host CPU per frame (thread CPU time)"}, {"median us", align::right}, {"p99 us", align::right}});
  cpu.add_row({"pipelined render thread: record + submit (the goal)", fixed(s.render_work_cpu_us.median, 1),
               fixed(s.render_work_cpu_us.p99, 1)});
  cpu.add_row({"pipelined render thread incl. its fence wait (throttling)", fixed(s.thread_cpu_us[0].median, 1),
               fixed(s.thread_cpu_us[0].p99, 1)});
  cpu.add_row({"pipelined producer thread (acquire + sim + release)", fixed(s.producer_cpu_us.median, 1),
               fixed(s.producer_cpu_us.p99, 1)});
  cpu.add_row({"naive loop thread", fixed(s.thread_cpu_us[1].median, 1), fixed(s.thread_cpu_us[1].p99, 1)});
  cpu.add_row({"staging loop thread", fixed(s.thread_cpu_us[2].median, 1), fixed(s.thread_cpu_us[2].p99, 1)});
  cpu.print(out);
  out << '\n';

  out << "  handoffs per drawn frame (pipelined, measured frames of every round): CUDA waits on Vulkan "
      << fixed(s.cuda_waits_per_frame, 3) << ", Vulkan waits on CUDA " << fixed(s.vulkan_waits_per_frame, 3)
      << " -> round trips " << fixed(s.round_trips_per_frame, 3) << '\n';
  out << "  data: ";
  if (r.bitwise_equal)
    out << "final particles bitwise equal in all " << r.runs_compared << " runs (" << r.loop.total() << " frames x "
        << steps_label(r.steps) << " each); ";
  else
    out << "final particles DIFFER between runs (see the failures at the end); ";
  out << "last image lit pixels";
  if (!r.rounds.empty())
    for (int i = 0; i < mode_count; ++i)
      out << ' ' << mode_keys[static_cast<std::size_t>(i)] << ' '
          << r.rounds.back().images[static_cast<std::size_t>(i)].lit_pixels;
  out << " of " << std::size_t{image_width} * image_height << "; images identical across runs: "
      << (r.images_identical ? "yes" : "NO (warning: same particles drawn differently)") << "\n\n";
}

void print_goals(std::ostream& out, const std::vector<config_result>& results,
                 const std::vector<config_summary>& summaries) {
  out << "goals (reported, not enforced)\n";
  for (std::size_t c = 0; c < results.size() && c < summaries.size(); ++c)
    for (const goal& g : summaries[c].goals)
      out << "  " << (g.met ? "met    " : "NOT MET") << "  " << g.description << ' ' << g.comparison << ' '
          << fixed(g.target, 2) << ": measured " << fixed(g.measured, 3) << '\n';
  out << '\n';
}

json config_json(const config_result& r, const config_summary& s) {
  json modes = json::object();
  for (int i = 0; i < mode_count; ++i) {
    const auto k = static_cast<std::size_t>(i);
    json m = {{"frame_ms", across_json(s.frame_ms[k], 4)},
              {"frames_per_s", rounded(1000.0 / s.frame_ms[k].mean, 1)},
              {"over_floor", rounded(s.frame_ms[k].mean / s.floor_ms, 4)},
              {"thread_cpu_us", across_json(s.thread_cpu_us[k], 2)},
              {"last_image_lit_pixels", r.rounds.empty() ? 0 : r.rounds.back().images[k].lit_pixels}};
    if (i == 0) {
      m["gpu_frame_ms"] = across_json(s.pipelined_gpu_frame_ms, 4);
      m["render_work_cpu_us"] = across_json(s.render_work_cpu_us, 2);
      m["producer_cpu_us"] = across_json(s.producer_cpu_us, 2);
    }
    modes[std::string(mode_keys[k])] = m;
  }
  json floor_rounds = json::array();
  for (const round_result& round : r.rounds)
    floor_rounds.push_back({{"sim_ms", rounded(round.floor.sim_ms, 4)},
                            {"draw_ms", rounded(round.floor.draw_ms, 4)},
                            {"round_trip_ms", rounded(round.floor.round_trip_ms, 4)},
                            {"total_ms", rounded(round.floor.total(), 4)},
                            {"handoff_floor_ms", rounded(round.floor.handoff_floor_ms, 4)},
                            {"handoff_floor_median_ms", rounded(round.floor.handoff_floor_median_ms, 4)},
                            {"handoff_floor_raw_ms", rounded(round.floor.handoff_floor_raw_ms, 4)}});
  json goals = json::object();
  for (const goal& g : s.goals)
    goals[g.key] = {{"comparison", g.comparison},
                    {"target", g.target},
                    {"measured", std::isfinite(g.measured) ? json(rounded(g.measured, 4)) : json(nullptr)},
                    {"met", g.met}};
  json out;
  out["particles"] = r.count;
  out["steps"] = r.steps;
  out["modes"] = modes;
  out["floor"] = {{"sim_ms", rounded(s.sim_ms, 4)},
                  {"draw_ms", rounded(s.draw_ms, 4)},
                  {"round_trip_ms", rounded(s.round_trip_ms, 4)},
                  {"total_ms", rounded(s.floor_ms, 4)},
                  {"handoff_floor_ms", rounded(s.handoff_floor_ms, 4)},
                  {"handoff_floor_median_ms", rounded(s.handoff_floor_median_ms, 4)},
                  {"handoff_floor_raw_ms", rounded(s.handoff_floor_raw_ms, 4)},
                  {"rounds", floor_rounds}};
  out["handoff_ms_per_frame"] = rounded(s.handoff_ms, 4);
  out["handoff_floor_ms"] = rounded(s.handoff_floor_ms, 4);
  out["handoff_floor_raw_ms"] = rounded(s.handoff_floor_raw_ms, 4);
  out["handoff_over_floor"] = rounded(s.handoff_over_floor, 4);
  out["ratios"] = {{"pipelined_over_floor", rounded(s.pipelined_over_floor, 4)},
                   {"throughput_vs_naive", rounded(s.throughput_vs_naive, 4)},
                   {"throughput_vs_staging", rounded(s.throughput_vs_staging, 4)}};
  out["handoffs_per_frame"] = {{"cuda_waits", rounded(s.cuda_waits_per_frame, 4)},
                               {"vulkan_waits", rounded(s.vulkan_waits_per_frame, 4)},
                               {"round_trips", rounded(s.round_trips_per_frame, 4)}};
  out["data"] = {{"runs_compared", r.runs_compared},
                 {"bitwise_equal", r.bitwise_equal},
                 {"final_differs_from_initial", r.final_differs_from_initial},
                 {"images_identical", r.images_identical},
                 {"failures", r.data_failures}};
  out["goals"] = goals;
  return out;
}

}  // namespace membridge::bench::frame_loop
