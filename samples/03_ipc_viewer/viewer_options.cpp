// The command line of membridge_ipc_viewer.
#include "viewer_options.hpp"

#include "particle_layout.hpp"

#include "view_cli.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

namespace particles::ipc_viewer {

parsed_command_line parse_command_line(int argc, const char* const* argv) {
  CLI::App app(
      "Attaches to a membridge_ipc_producer (membridge sample 03) and draws its particles with Vulkan from the\n"
      "producer's own GPU memory, imported through membridge (no copy), following the buffer's growth live.\n"
      "By default it is the producer's consumer (the producer never overwrites a frame it is drawing); with\n"
      "--observer it only watches. Windowed when a display exists; --headless writes a PNG of the last frame.\n"
      "Prints the attach and import times and frame statistics.\n"
      "It renders on the GPU the producer's buffer lives on; --render-device A checks that this is CUDA device A\n"
      "and refuses otherwise (a producer on two GPUs: membridge_ipc_producer --sim-device B --render-device A).\n"
      "Exit status: 0 ok, 1 invalid command line, 2 runtime failure (no producer, producer gone, validation).",
      "membridge_ipc_viewer");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  viewer_options o;
  const CLI::Validator name_check(
      [](std::string& text) -> std::string {
        if (ipc_layout::is_valid_socket_name(text)) return {};
        return "'" + text + "' is not a socket name (1 to 64 letters, digits, '-', '_', '.')";
      },
      "", "socket name");
  app.add_option("--name", o.name, "The producer's socket name ($XDG_RUNTIME_DIR/membridge/NAME.sock)")
      ->capture_default_str()
      ->check(name_check)
      ->type_name("NAME");
  CLI::Option* frames = samples::add_run_mode(app, {o.headless, o.frames, o.out, o.screenshot},
                                              default_headless_frames, default_png,
                                              "Render offscreen (no window) and write a PNG of the last frame");
  app.add_flag("--observer", o.observer,
               "Watch only: never pace the producer (frames may be overwritten while drawn); default: consumer");
  app.add_option("--reconnect-ms", o.reconnect_ms,
                 "How long to keep trying to connect, at the start and after the producer went away (0 = once)")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{86'400'000}))
      ->type_name("MS");
  samples::add_image_size(app, o.width, o.height);
  std::string render_text(render_method_name(o.render));
  app.add_option("--render", render_text,
                 "How particles become pixels: splat (compute shaders, atomics) or points (graphics pipeline)")
      ->check(CLI::IsMember({std::string(render_method_name(render_method::splat)),
                             std::string(render_method_name(render_method::points))}))
      ->capture_default_str()
      ->type_name("METHOD");
  app.add_flag("--validation", o.validation, "Enable the Khronos validation layer; exit 2 if it reported any message");
  int render_device = 0;
  app.add_option("--render-device", render_device,
                 "CUDA device whose GPU draws: the producer's buffer must live there (its --render-device); "
                 "default: the buffer's GPU, whichever it is")
      ->check(CLI::Range(0, 1023))
      ->type_name("A");

  if (const auto rc = samples::parse(app, argc, argv))
    return {std::nullopt, *rc == 0 ? exit_status::ok : exit_status::usage_error};
  o.render = *parse_render_method(render_text);  // checked by IsMember
  o.frames_given = frames->count() > 0;
  if (app.count("--render-device") > 0) o.render_device = render_device;
  if (!samples::frames_fit_the_mode("membridge_ipc_viewer", o.headless, o.frames_given, o.frames))
    return {std::nullopt, exit_status::usage_error};
  return {std::move(o), exit_status::ok};
}

void apply_mode_defaults(viewer_options& options, bool windowed) {
  if (windowed) return;
  samples::apply_headless_defaults(options.frames, options.out, default_headless_frames, default_png);
}

}  // namespace particles::ipc_viewer
