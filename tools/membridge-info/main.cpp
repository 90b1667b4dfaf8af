// membridge-info: a preflight check that prints the CUDA driver, the devices, their UUIDs and the
// VMM/handle capabilities membridge needs, the Vulkan devices and their interop support, the GL
// (EGL) devices and GL interop per CUDA device, as text or (--json) as JSON for scripts.
#include "gl_report.hpp"
#include "report.hpp"

#include <membridge/config.hpp>
#include <membridge/version.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <limits>
#include <optional>
#include <string>

namespace {

using membridge::info::exit_status;

/// What the command line asked for.
struct command_line {
  bool json = false;                           ///< Print JSON instead of text.
  membridge::info::collect_options collect;    ///< Which libraries and devices to look at.
  membridge::info::gl_probe_options gl;        ///< Which EGL library the GL section loads.
};

/// Declares the flags on `app`, writing into `cmd` (and `device` for --device).
void declare_flags(CLI::App& app, command_line& cmd, int& device) {
  app.add_flag("--json", cmd.json, "Print the report as JSON on stdout (and nothing else there)");
  app.add_option("--device", device, "Only list the CUDA device with this ordinal")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()))
      ->type_name("N");
  app.add_option("--cuda-library", cmd.collect.cuda_library, "The CUDA driver library to load")
      ->capture_default_str()
      ->type_name("PATH");
  app.add_option("--vulkan-library", cmd.collect.vulkan_library, "The Vulkan loader to load")
      ->capture_default_str()
      ->type_name("PATH");
#if MEMBRIDGE_HAS_GL
  app.add_option("--egl-library", cmd.gl.library, "The EGL library to load for the GL section")
      ->capture_default_str()
      ->type_name("PATH");
#endif
  app.set_version_flag("--version", "membridge-info " + std::string(membridge::version().string),
                       "Print membridge's version and exit");
}

/// Parses argv into `cmd`. Returns the status to exit with when parsing ends the program (--help,
/// --version: 0; a usage error: 1, after CLI11 printed why), or nothing to go on.
std::optional<int> parse(int argc, char** argv, command_line& cmd) {
  CLI::App app("Prints what membridge needs from this machine: the CUDA driver, the devices, their UUIDs\n"
               "and VMM/handle capabilities, the Vulkan devices with their interop support, and the GL\n"
               "(EGL) devices with GL interop per CUDA device.\n"
               "Exit status: 0 when a CUDA device is usable, 2 when none is (or CUDA is unavailable),\n"
               "1 for a usage error.",
               "membridge-info");
  int device = -1;
  declare_flags(app, cmd, device);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? static_cast<int>(exit_status::usable) : static_cast<int>(exit_status::usage_error);
  }
  if (device >= 0) cmd.collect.device = device;
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  command_line cmd;
  if (const auto stop = parse(argc, argv, cmd)) return *stop;
  auto report = membridge::info::collect(cmd.collect);
#if MEMBRIDGE_HAS_GL
  report.gl = membridge::info::probe_gl(report, cmd.gl);
#endif
  const std::string text = cmd.json ? membridge::info::render_json(report) : membridge::info::render_text(report);
  std::fputs(text.c_str(), stdout);
  return static_cast<int>(membridge::info::exit_status_of(report));
}
