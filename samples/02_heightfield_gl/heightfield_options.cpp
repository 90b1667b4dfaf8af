// The command line of membridge_heightfield_gl (CLI11).
#include "heightfield_options.hpp"

#include "view_cli.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>

namespace heightfield {

parsed_command_line parse_command_line(int argc, const char* const* argv) {
  CLI::App app(
      "A CUDA wave-equation heightfield drawn by OpenGL from the same GPU memory (membridge sample 02).\n"
      "CUDA steps the field and writes each frame into a membridge growable_buffer that GL imports as a\n"
      "shader storage buffer: no copies, one timeline-semaphore handoff per frame. Without a CUDA device\n"
      "(or with --cpu) the field is stepped on the CPU into Vulkan-exported memory that GL imports.\n"
      "Windowed (GLFW, EGL) when a display exists; --headless renders offscreen and writes a PNG.\n"
      "Exit status: 0 ok, 1 invalid command line, 2 runtime failure, 3 the image is blank.",
      "membridge_heightfield_gl");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app_options o;
  CLI::Option* frames =
      samples::add_run_mode(app, {o.headless, o.frames, o.out, o.screenshot}, default_headless_frames, default_png,
                            "Render offscreen through EGL (no window) and write a PNG of the last frame");
  app.add_option("--grid", o.grid,
                 "Cells per side of the field (default " + std::to_string(default_gpu_grid) + " on the GPU, " +
                     std::to_string(default_cpu_grid) + " on the CPU)")
      ->check(CLI::Range(16, 16384))
      ->type_name("N");
  app.add_option("--steps", o.steps, "Simulation steps per drawn frame (0 freezes the field)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000))
      ->type_name("K");
  app.add_option("--slots", o.slots, "Frames in flight: height slots in the ring")
      ->capture_default_str()
      ->check(CLI::Range(std::uint32_t{1}, max_slots))
      ->type_name("S");
  samples::add_image_size(app, o.width, o.height);
  app.add_flag("--cpu", o.cpu, "Step the field on the CPU even when a CUDA device exists");
  app.add_flag("--host-ordering", o.host_ordering,
               "Order frames with host waits (GL fences, Vulkan semaphore host waits) even when GL can wait on "
               "the timeline semaphores");
  app.add_flag("--check", o.check, "Exit 3 when the written image is blank (always on with --headless)");
  app.add_flag("--gpu-or-skip", o.gpu_or_skip,
               "Without a CUDA device exit 77 (CTest's skip code) instead of running the CPU path (tests)");
  app.add_option("--seed", o.seed, "Where the drops fall")->capture_default_str()->type_name("N");

  if (const auto rc = samples::parse(app, argc, argv))
    return {std::nullopt, *rc == 0 ? exit_status::ok : exit_status::usage_error};
  if (!samples::frames_fit_the_mode("membridge_heightfield_gl", o.headless, frames->count() > 0, o.frames))
    return {std::nullopt, exit_status::usage_error};
  return {std::move(o), exit_status::ok};
}

void apply_mode_defaults(app_options& options, bool windowed) {
  if (windowed) return;
  samples::apply_headless_defaults(options.frames, options.out, default_headless_frames, default_png);
  options.check = true;
}

}  // namespace heightfield
