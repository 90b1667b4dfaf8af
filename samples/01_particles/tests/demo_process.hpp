// Running membridge_particles (or xvfb-run around it) from a test the way a user does: a child
// process in its own process group, stdout and stderr captured in files, a time limit.
#pragma once

#include <membridge/core/result.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace particles::testing {

/// How a child process ended and what it printed.
struct process_result {
  int exit_status = -1;  ///< The exit status, or 128 + signal when a signal ended it.
  std::string out;       ///< Everything it wrote to stdout.
  std::string err;       ///< Everything it wrote to stderr.
};

/// The membridge_particles binary: the build tree's (MEMBRIDGE_PARTICLES_BINARY) when it exists,
/// else the one beside this test binary (as in the GPU bundle, where both lie in one folder).
[[nodiscard]] std::filesystem::path demo_binary();

/// The full path of `name` found in PATH, or empty.
[[nodiscard]] std::filesystem::path find_in_path(const std::string& name);

/// A directory for a test's files (created if missing): MEMBRIDGE_PARTICLES_TEST_OUTPUT_DIR in the
/// build tree, else a folder in the temporary directory.
[[nodiscard]] std::filesystem::path output_dir();

/// Runs `argv` (argv[0] looked up in PATH when it has no slash) with stdin from /dev/null, its
/// output captured in `<output_dir>/<label>.stdout/.stderr`, and the environment minus `unset`
/// plus `set` ("NAME=VALUE" entries).
/// A child still running after `limit` is killed with its process group (then exit_status is
/// 128 + SIGKILL). Errors: os_error when it cannot be started.
[[nodiscard]] membridge::result<process_result> run_process(const std::vector<std::string>& argv,
                                                            const std::string& label, std::chrono::seconds limit,
                                                            const std::vector<std::string>& unset = {},
                                                            const std::vector<std::string>& set = {});

}  // namespace particles::testing
