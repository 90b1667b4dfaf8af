// membridge_ipc_producer: sample 03's producer. Runs sample 01's CUDA particle simulation in a membridge
// growable_buffer and publishes it, with its frame timeline, to other processes over a Unix socket;
// viewers (membridge_ipc_viewer) attach, import the same memory and draw it. The buffer grows in place
// every --grow-every frames and viewers follow. Needs a CUDA device (exit 2 without one).
// README.md beside this file describes the options, the buffer layout and the output.
#include "producer.hpp"
#include "producer_options.hpp"

#include <csignal>
#include <iostream>

namespace {

/// SIGINT / SIGTERM end the run after the current frame (the last frame is handed over, subscribers get
/// a goodbye). A second one kills the process as usual (the handler restores the default action).
void on_stop_signal(int signal_number) {
  particles::ipc_producer::request_stop(signal_number);
  std::signal(signal_number, SIG_DFL);  // async-signal-safe
}

}  // namespace

int main(int argc, char** argv) {
  using namespace particles::ipc_producer;
  const parsed_command_line parsed = parse_command_line(argc, argv);
  if (!parsed.options) return static_cast<int>(parsed.status);

  if (const std::string why = cuda_unavailable_reason(); !why.empty()) {
    std::cerr << "membridge_ipc_producer: error: no CUDA device (" << why
              << "); the producer simulates on a CUDA device and has no CPU path\n";
    return static_cast<int>(exit_status::runtime_failure);
  }
  if (const std::string problem = device_problem(*parsed.options, cuda_device_count()); !problem.empty()) {
    std::cerr << "membridge_ipc_producer: " << problem << "\nRun with --help for more information.\n";
    return static_cast<int>(exit_status::usage_error);
  }
  std::signal(SIGINT, &on_stop_signal);
  std::signal(SIGTERM, &on_stop_signal);
  std::signal(SIGPIPE, SIG_IGN);  // a viewer that vanishes must not kill the producer

  const membridge::result<void> ran = run(*parsed.options, std::cout);
  std::cout << std::flush;
  if (!ran) {
    std::cerr << "membridge_ipc_producer: error: " << ran.error().message() << '\n';
    return static_cast<int>(exit_status::runtime_failure);
  }
  return static_cast<int>(exit_status::ok);
}
