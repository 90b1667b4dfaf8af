// The soak's orchestrator: a producer and two viewers, killed and restarted on a seeded schedule,
// the GPU's free memory read by a short-lived probe before and after, and the verdict.
#include "orchestrator.hpp"

#include "children.hpp"
#include "cuda_support.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>

namespace membridge::bench::soak {

namespace {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto stall_limit = 15s;  // a viewer with a producer up and no new frame for this long is hung

struct totals {
  std::uint64_t frames = 0, data_errors = 0, sessions = 0, resizes = 0;
  std::uint64_t viewer_kills = 0, producer_kills = 0, orderly_restarts = 0, hung = 0;
  std::int64_t leaked_fds = 0;
  std::vector<std::string> errors;

  /// Adds a finished child's counts.
  void add(const child& c) {
    const child_report& r = c.report;
    if (c.role == "producer") resizes += r.resizes;
    else {
      frames += r.frames;
      sessions += r.sessions;
    }
    data_errors += r.errors;
    for (const std::string& e : r.error_lines)
      if (errors.size() < 10) errors.push_back(e);
    if (r.has_fds && r.fds_end > r.fds_base) {
      leaked_fds += r.fds_end - r.fds_base;
      if (errors.size() < 10)
        errors.push_back(c.role + ": " + std::to_string(r.fds_end - r.fds_base) + " fds more at its exit than at its start");
    }
  }
};

/// The GPU's free bytes, read by a probe process (the orchestrator never makes a CUDA context).
std::uint64_t free_bytes_now() {
  child probe = spawn("memory probe", {"--role", "memory"});
  if (!stop_child(probe, 0, 30s)) throw bench_failure("the memory probe did not finish in 30 s");
  if (WIFEXITED(probe.status) && WEXITSTATUS(probe.status) == exit_no_device)
    throw device_unavailable("the memory probe found no usable CUDA device");
  if (!probe.report.has_free) throw bench_failure("the memory probe reported nothing");
  return probe.report.free_bytes;
}

void wait_ready(child& c, std::chrono::milliseconds limit) {
  const auto deadline = clock::now() + limit;
  while (!c.report.ready && clock::now() < deadline) {
    drain_output(c);
    if (reap(c)) throw bench_failure(c.role + " exited during its setup");
    std::this_thread::sleep_for(5ms);
  }
  if (!c.report.ready) throw bench_failure(c.role + " was not ready within " + std::to_string(limit.count()) + " ms");
}

}  // namespace

action pick_action(std::uint64_t r) noexcept {
  const std::uint64_t p = r % 100;
  if (p < 40) return action::kill_viewer;
  if (p < 55) return action::kill_producer;
  if (p < 80) return action::restart_viewer;
  return action::none;
}

int run_orchestrator(const soak_options& o) {
  const std::uint64_t seed = o.seed != 0 ? o.seed : static_cast<std::uint64_t>(clock::now().time_since_epoch().count());
  std::mt19937_64 rng(seed);
  char dir_template[] = "/tmp/membridge-soak-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) throw bench_failure("mkdtemp failed");
  const std::string socket = std::string(dir_template) + "/soak.sock";
  struct remove_dir {  // the socket directory goes whatever happens
    std::string dir, socket;
    ~remove_dir() {
      ::unlink(socket.c_str());
      ::rmdir(dir.c_str());
    }
  } const cleanup{dir_template, socket};
  const std::string max_mib = std::to_string(o.max_mib);
  std::cerr << "[soak] seed " << seed << ", " << o.seconds << " s, socket " << socket << "\n";

  const std::uint64_t free_before = free_bytes_now();
  totals t;
  std::uint64_t producer_seed = seed;
  const auto start_producer = [&] {
    child p = spawn("producer", {"--role", "producer", "--socket", socket, "--seed", std::to_string(++producer_seed),
                                 "--max-mib", max_mib});
    wait_ready(p, 60s);
    return p;
  };
  const auto start_viewer = [&](int id) {
    return spawn("viewer " + std::to_string(id), {"--role", "viewer", "--socket", socket, "--id", std::to_string(id)});
  };
  child producer = start_producer();
  std::vector<child> viewers;
  viewers.push_back(start_viewer(0));
  viewers.push_back(start_viewer(1));

  const auto end = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(o.seconds));
  auto next_action = clock::now() + 2s;  // let the viewers join first
  while (clock::now() < end) {
    std::this_thread::sleep_for(10ms);
    drain_output(producer);
    for (child& v : viewers) drain_output(v);
    if (reap(producer)) throw bench_failure("the producer exited on its own (status " + std::to_string(producer.status) + ")");
    for (std::size_t i = 0; i < viewers.size(); ++i) {
      child& v = viewers[i];
      if (reap(v)) throw bench_failure(v.role + " exited on its own (status " + std::to_string(v.status) + ")");
      if (clock::now() - v.last_progress > stall_limit && clock::now() - producer.last_progress < 1s) {
        ++t.hung;
        t.errors.push_back(v.role + " made no progress for 15 s while the producer ran");
        (void)stop_child(v, SIGKILL, 5s);
        t.add(v);
        v = start_viewer(static_cast<int>(i));
      }
    }
    if (clock::now() < next_action) continue;
    next_action = clock::now() + std::chrono::milliseconds(300 + rng() % 601);
    const std::size_t which = rng() % viewers.size();
    switch (pick_action(rng())) {
      case action::kill_viewer:
        (void)stop_child(viewers[which], SIGKILL, 5s);
        t.add(viewers[which]);
        ++t.viewer_kills;
        viewers[which] = start_viewer(static_cast<int>(which));
        break;
      case action::kill_producer:
        (void)stop_child(producer, SIGKILL, 5s);
        t.add(producer);
        ++t.producer_kills;
        std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 201));
        producer = start_producer();
        break;
      case action::restart_viewer:
        if (!stop_child(viewers[which], SIGTERM, 10s)) {
          ++t.hung;
          t.errors.push_back(viewers[which].role + " did not leave within 10 s of SIGTERM");
        }
        t.add(viewers[which]);
        ++t.orderly_restarts;
        viewers[which] = start_viewer(static_cast<int>(which));
        break;
      case action::none: break;
    }
  }
  // The end: viewers leave in order, then the producer (with no consumer left) reports and exits.
  for (child& v : viewers) {
    if (!stop_child(v, SIGTERM, 10s)) {
      ++t.hung;
      t.errors.push_back(v.role + " did not exit within 10 s of SIGTERM at the end");
    }
    t.add(v);
  }
  if (!stop_child(producer, SIGTERM, 10s)) {
    ++t.hung;
    t.errors.push_back("the producer did not exit within 10 s of SIGTERM at the end");
  }
  t.add(producer);
  for (const child* c : {&producer, &viewers[0], &viewers[1]})
    if (c->exited && WIFEXITED(c->status) && WEXITSTATUS(c->status) != 0)
      t.errors.push_back(c->role + " exited with status " + std::to_string(WEXITSTATUS(c->status)));

  // Killed processes' memory goes back to the driver asynchronously: wait up to 5 s for it.
  std::uint64_t free_after = free_bytes_now();
  for (int i = 0; i < 10 && free_after < free_before; ++i) {
    std::this_thread::sleep_for(500ms);
    free_after = free_bytes_now();
  }
  const std::uint64_t leaked_bytes = free_after < free_before ? free_before - free_after : 0;
  const std::uint64_t kills = t.viewer_kills + t.producer_kills;
  const double measured = static_cast<double>(t.data_errors) + static_cast<double>(t.leaked_fds) +
                          static_cast<double>(leaked_bytes) + static_cast<double>(t.hung);
  const bool clean = measured == 0.0 && t.frames > 0;

  std::cout << "membridge soak: " << o.seconds << " s, seed " << seed << ", a producer (one slot, resizing "
            << "8 MiB .. " << o.max_mib << " MiB every 150-600 ms, ~1 kHz) and two consumer viewers\n"
            << "  frames checked by viewers   " << t.frames << "\n"
            << "  kills (SIGKILL)             " << kills << " (viewers " << t.viewer_kills << ", producer "
            << t.producer_kills << ")\n"
            << "  orderly viewer restarts     " << t.orderly_restarts << "\n"
            << "  viewer sessions (connects)  " << t.sessions << "\n"
            << "  producer resizes            " << t.resizes << "\n"
            << "  data errors                 " << t.data_errors << "\n"
            << "  leaked fds                  " << t.leaked_fds << "\n"
            << "  GPU free bytes before/after " << free_before << " / " << free_after << " (leaked " << leaked_bytes
            << ")\n"
            << "  hung processes              " << t.hung << "\n";
  for (const std::string& e : t.errors) std::cout << "  ! " << e << "\n";
  std::cout << "goal soak_clean (data_errors + leaked_fds + leaked_bytes + hung == 0, frames > 0): "
            << (clean ? "met" : "NOT MET") << "\n";
  nlohmann::json j = {
      {"bench", "soak"},
      {"seconds", o.seconds},
      {"seed", seed},
      {"frames", t.frames},
      {"kills", kills},
      {"viewer_kills", t.viewer_kills},
      {"producer_kills", t.producer_kills},
      {"orderly_restarts", t.orderly_restarts},
      {"reconnects", t.sessions},
      {"resizes", t.resizes},
      {"data_errors", t.data_errors},
      {"leaked_fds", t.leaked_fds},
      {"leaked_bytes", leaked_bytes},
      {"hung", t.hung},
      {"errors", t.errors},
      {"goals",
       {{"soak_clean", {{"comparison", "=="}, {"target", 0}, {"measured", measured}, {"met", clean}}}}}};
  const std::string line = j.dump();
  std::cout << line << std::endl;
  if (!o.json_path.empty()) {
    std::ofstream file(o.json_path);
    file << line << '\n';
    if (!file.flush()) throw bench_failure("cannot write " + o.json_path);
  }
  return clean ? exit_ok : exit_failed;
}

}  // namespace membridge::bench::soak
