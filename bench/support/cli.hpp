// bench/support/cli.hpp: the command-line pieces every benchmark repeats (CLI11): --json FILE,
// --device N (alone or as common_options), and parsing that turns --help and a bad command line into an exit status.
// Header-only: link CLI11::CLI11.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>

namespace membridge::bench {

/// The status a benchmark exits with after --help (0) and after a bad command line (EX_USAGE);
/// the same values as cuda_support.hpp's exit_ok and exit_usage.
inline constexpr int cli_exit_help = 0;
inline constexpr int cli_exit_usage = 64;

/// --json FILE: "also write the JSON line to FILE" into `path`.
inline CLI::Option* add_json_option(CLI::App& app, std::string& path) {
  return app.add_option("--json", path, "also write the JSON line to FILE")->type_name("FILE");
}

/// --device N: the CUDA device ordinal (non-negative, default shown) into `device`.
inline CLI::Option* add_device_option(CLI::App& app, int& device) {
  return app.add_option("--device", device, "CUDA device ordinal")->check(CLI::NonNegativeNumber)->capture_default_str();
}

/// The options most benchmarks share: --json FILE and --device N.
struct common_options {
  std::string json_path;  ///< Where to write the JSON line too (empty: stdout only).
  int device = 0;         ///< CUDA device ordinal.
};

/// Adds --json (add_json_option) and --device (add_device_option), read into `options`.
inline void add_common_options(CLI::App& app, common_options& options) {
  add_json_option(app, options.json_path);
  add_device_option(app, options.device);
}

/// Parses the command line, then runs `validate` (which may throw CLI::ValidationError). Returns an
/// exit status when the program should stop now (--help: cli_exit_help; a bad command line:
/// cli_exit_usage, with CLI11's message on stderr), std::nullopt to go on.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv,
                                             const std::function<void()>& validate = {}) {
  try {
    app.parse(argc, argv);
    if (validate) validate();
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? cli_exit_help : cli_exit_usage;
  }
  return std::nullopt;
}

}  // namespace membridge::bench
