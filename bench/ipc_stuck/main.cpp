// membridge_bench_ipc_stuck: the producer never waits for a subscriber. A publisher of memfd-backed
// chunks announces a frame every millisecond and grows every 100 ms while three subscribers that
// joined never read again and three joiners never read their 1000-chunk state; one well-behaved
// subscriber reads on. Reports the longest producer call (announce_frame, update_buffer) and the
// longest gap between frames at the good subscriber while all six are dropped (send_timeout 1 s).
// CPU only (no GPU). Exit 0 when the run is valid (every frame in order at the good subscriber, all
// six dropped, chunk data right), goals met or not; 1 otherwise.
#include "stuck_scenario.hpp"

#include "stats.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

namespace {

namespace bench = membridge::bench;
namespace stuck = membridge::stuck;

double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"membridge_bench_ipc_stuck: producer calls and frame gaps with subscribers that never read"};
  stuck::options o;
  bool quick = false;
  std::string json_path;
  std::size_t chunks = o.chunks;
  long send_timeout_ms = o.send_timeout.count();
  app.add_flag("--quick", quick, "100 chunks and a 200 ms send_timeout (a smoke run)");
  app.add_option("--chunks", chunks, "chunks of the state the joiners never read (default 1000)");
  app.add_option("--send-timeout-ms", send_timeout_ms, "the publisher's send_timeout (default 1000)");
  app.add_option("--json", json_path, "also write the JSON line to this file");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    chunks = 100;
    send_timeout_ms = 200;
  }
  o.chunks = std::clamp<std::size_t>(chunks, 2, membridge::ipc::max_chunks - 100);
  o.send_timeout = std::chrono::milliseconds(send_timeout_ms);
  char dir[] = "/tmp/membridge-bench-stuck-XXXXXX";
  if (::mkdtemp(dir) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  o.socket_path = std::string(dir) + "/pub.sock";
  const stuck::result r = stuck::run(o);
  ::rmdir(dir);

  const auto calls = [&] {
    std::vector<double> all = r.frame_call_ms;
    all.insert(all.end(), r.growth_call_ms.begin(), r.growth_call_ms.end());
    return all;
  }();
  const double worst_call = max_of(calls);
  const double worst_gap = max_of(r.frame_gap_ms);
  const double measured = std::max(worst_call, worst_gap);
  const std::size_t expected_drops = static_cast<std::size_t>(o.stuck_subscribers + o.stuck_joiners);
  std::vector<std::string> errors = r.errors;
  if (!r.frames_in_order)
    errors.push_back("the good subscriber saw " + std::to_string(r.frames_seen) + " of " +
                     std::to_string(r.frames_announced) + " frames or not in order");
  if (r.dropped != expected_drops)
    errors.push_back(std::to_string(r.dropped) + " of " + std::to_string(expected_drops) + " stuck subscribers dropped");
  if (!r.good_contents_ok) errors.push_back("the good subscriber's chunks are not the publisher's");
  if (r.subscribers_at_end != 1) errors.push_back(std::to_string(r.subscribers_at_end) + " subscribers left, not 1");

  std::cout << "membridge_bench_ipc_stuck: " << o.chunks << " chunks, " << o.stuck_subscribers
            << " subscribers and " << o.stuck_joiners << " joiners that never read, send_timeout "
            << o.send_timeout.count() << " ms, a frame every " << o.frame_period.count() << " us\n";
  bench::text_table t({{"metric"}, {"n", bench::align::right}, {"median", bench::align::right},
                       {"p90", bench::align::right}, {"max", bench::align::right}});
  const auto row = [&](const std::string& name, const std::vector<double>& v) {
    const auto s = bench::summarize(v);
    t.add_row({name, std::to_string(s.count), bench::fixed(s.median, 3), bench::fixed(s.p90, 3), bench::fixed(s.max, 3)});
  };
  row("announce_frame (ms)", r.frame_call_ms);
  row("update_buffer (ms)", r.growth_call_ms);
  row("gap between frames at the good subscriber (ms)", r.frame_gap_ms);
  row("gap between announce_frame calls (ms)", r.announce_gap_ms);
  row("announce -> arrival at the good subscriber (ms)", r.latency_ms);
  t.print(std::cout);
  std::cout << "  frames announced " << r.frames_announced << ", seen in order by the good subscriber "
            << r.frames_seen << (r.frames_in_order ? " (all, in order)" : " (NOT all in order)") << "; growths "
            << r.growths << "; dropped " << r.dropped << "/" << expected_drops << " after "
            << bench::fixed(r.all_dropped_after_ms, 1) << " ms; the good subscriber has " << r.good_chunks
            << " chunks" << (r.good_contents_ok ? " (data checked)" : " (DATA WRONG)") << "\n";
  const bool met = errors.empty() && measured < 5.0;
  std::cout << "goal: longest producer call and frame gap " << bench::fixed(measured, 3) << " ms < 5 ms: "
            << (met ? "met" : "NOT MET") << "\n";
  for (const auto& e : errors) std::cout << "ERROR: " << e << "\n";

  bench::json j;
  j["bench"] = "ipc_stuck";
  j["config"] = {{"chunks", o.chunks},
                 {"stuck_subscribers", o.stuck_subscribers},
                 {"stuck_joiners", o.stuck_joiners},
                 {"send_timeout_ms", o.send_timeout.count()},
                 {"frame_period_us", o.frame_period.count()},
                 {"growth_period_ms", o.growth_period.count()}};
  j["announce_frame_ms"] = bench::to_json(bench::summarize(r.frame_call_ms), 4);
  j["update_buffer_ms"] = bench::to_json(bench::summarize(r.growth_call_ms), 4);
  j["frame_gap_ms"] = bench::to_json(bench::summarize(r.frame_gap_ms), 4);
  j["announce_gap_ms"] = bench::to_json(bench::summarize(r.announce_gap_ms), 4);
  j["delivery_latency_ms"] = bench::to_json(bench::summarize(r.latency_ms), 4);
  j["producer_call_max_ms"] = bench::rounded(worst_call, 4);
  j["frame_gap_max_ms"] = bench::rounded(worst_gap, 4);
  j["frames_announced"] = r.frames_announced;
  j["frames_seen"] = r.frames_seen;
  j["frames_in_order"] = r.frames_in_order;
  j["dropped"] = r.dropped;
  j["all_dropped_after_ms"] = bench::rounded(r.all_dropped_after_ms, 1);
  j["goals"] = {{"producer_call_max_ms_with_stuck_subscribers",
                 {{"comparison", "<"}, {"target", 5.0}, {"measured", bench::rounded(measured, 4)}, {"met", met}}}};
  j["all_goals_met"] = met;
  j["data_checked"] = errors.empty();
  j["errors"] = errors;
  const std::string line = j.dump();
  std::cout << line << "\n";
  if (!json_path.empty()) {
    if (FILE* f = std::fopen(json_path.c_str(), "w")) {
      std::fputs((line + "\n").c_str(), f);
      std::fclose(f);
    }
  }
  return errors.empty() ? 0 : 1;
}
