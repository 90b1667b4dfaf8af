// membridge_bench_soak: a producer and two viewers in separate processes for a minute (or
// --seconds), killed and restarted on a seeded schedule, every frame's data checked; at the end no
// data error, no fd and no GPU memory left behind, no process hung (bench/README.md, "Soak").
#include "orchestrator.hpp"
#include "roles.hpp"

#include "cuda_support.hpp"

#include <CLI/CLI.hpp>

#include <cuda_runtime.h>

#include <csignal>
#include <cstdio>
#include <dirent.h>
#include <iostream>

namespace membridge::bench::soak {

namespace {

void on_sigterm(int) { stop_requested = 1; }

}  // namespace

void catch_sigterm() {
  struct sigaction sa {};
  sa.sa_handler = &on_sigterm;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
}

int open_fd_count() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(dir))
    if (e->d_name[0] != '.') ++n;
  ::closedir(dir);
  return n - 1;  // the directory's own fd
}

void report_line(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

int run_memory_probe() {
  open_runtime_device(0);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  report_line("free=" + std::to_string(free_bytes));
  return exit_ok;
}

}  // namespace membridge::bench::soak

int main(int argc, char** argv) {
  using namespace membridge::bench;
  soak::soak_options options;
  soak::role_args role_args;
  std::string role;
  bool quick = false;
  CLI::App app{"membridge_bench_soak: a producer and two viewers killed and restarted; every frame checked"};
  app.add_option("--seconds", options.seconds, "how long to run")->check(CLI::Range(1.0, 86400.0))->capture_default_str();
  app.add_flag("--quick", quick, "a smoke run of 8 s");
  app.add_option("--seed", options.seed, "the schedule's seed (0: from the clock)")->capture_default_str();
  app.add_option("--max-mib", options.max_mib, "the largest buffer (MiB)")->check(CLI::Range(16, 4096))->capture_default_str();
  app.add_option("--json", options.json_path, "also write the JSON line to FILE")->type_name("FILE");
  // The child roles (the orchestrator starts them).
  app.add_option("--role", role, "internal: producer, viewer or memory")->group("");
  app.add_option("--socket", role_args.socket, "internal: the producer's socket")->group("");
  app.add_option("--id", role_args.id, "internal: the viewer's number")->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? exit_ok : exit_usage;
  }
  role_args.seed = options.seed;
  role_args.max_mib = options.max_mib;
  if (quick) options.seconds = 8.0;
  if (role == "producer") return run_main("membridge_bench_soak (producer)", [&] { return soak::run_producer(role_args); });
  if (role == "viewer") return run_main("membridge_bench_soak (viewer)", [&] { return soak::run_viewer(role_args); });
  if (role == "memory") return run_main("membridge_bench_soak (memory probe)", [] { return soak::run_memory_probe(); });
  if (!role.empty()) {
    std::cerr << "unknown --role " << role << "\n";
    return exit_usage;
  }
  std::signal(SIGPIPE, SIG_IGN);
  return run_main("membridge_bench_soak", [&] { return soak::run_orchestrator(options); });
}
