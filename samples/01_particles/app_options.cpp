// The command line of membridge_particles.
#include "app_options.hpp"

#include "view_cli.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <string>

namespace particles::app {

std::optional<std::uint64_t> parse_count(std::string_view text) {
  std::uint64_t multiplier = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'k':
      case 'K':
        multiplier = std::uint64_t{1} << 10;
        break;
      case 'm':
      case 'M':
        multiplier = std::uint64_t{1} << 20;
        break;
      default:
        break;
    }
    if (multiplier != 1) text.remove_suffix(1);
  }
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  if (value == 0 || value > max_particle_count / multiplier) return std::nullopt;
  return value * multiplier;
}

parsed_command_line parse_command_line(int argc, const char* const* argv) {
  CLI::App app(
      "A CUDA particle simulation drawn by Vulkan from the same GPU memory (membridge sample 01).\n"
      "CUDA writes the particles into a membridge growable_buffer that Vulkan imports as a vertex buffer:\n"
      "no copies, one timeline-semaphore handoff per frame. Without a CUDA device (or with --cpu) the\n"
      "same simulation runs on the CPU and is uploaded, so the renderer still works.\n"
      "Windowed when a display exists; --headless renders offscreen and writes a PNG of the last frame.\n"
      "Exit status: 0 ok, 1 invalid command line, 2 runtime failure (or validation messages).",
      "membridge_particles");
  // A later option wins (`scripts/demo --frames 50` overrides the script's own --frames).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app_options o;
  std::string particles_text;
  CLI::Option* frames = samples::add_run_mode(app, {o.headless, o.frames, o.out, o.screenshot},
                                              default_headless_frames, default_png,
                                              "Render offscreen (no window) and write a PNG of the last frame");
  const CLI::Validator count_check(
      [](std::string& text) -> std::string {
        if (parse_count(text)) return {};
        return "'" + text + "' is not a particle count from 1 to 64M (e.g. 200000, 256K, 1M, 4M)";
      },
      "COUNT", "particle count");
  app.add_option("--particles", particles_text, "Particles to simulate; K = 1024, M = 1048576 (default 1M = 1048576)")
      ->check(count_check)
      ->type_name("N");
  app.add_option("--steps", o.steps, "Simulation steps per drawn frame (0 freezes the particles)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000))
      ->type_name("K");
  app.add_option("--slots", o.slots, "Frames in flight: slots of the particle ring and renderer images")
      ->capture_default_str()
      ->check(CLI::Range(std::uint32_t{1}, max_slots))
      ->type_name("S");
  samples::add_image_size(app, o.width, o.height);
  app.add_flag("--cpu", o.cpu, "Simulate on the CPU even when a CUDA device exists");
  std::string render_text(render_method_name(o.render));
  app.add_option("--render", render_text,
                 "How particles become pixels: splat (compute shaders add each particle to its pixel with atomics; "
                 "fast on compute GPUs) or points (graphics pipeline, additive point sprites)")
      ->check(CLI::IsMember({std::string(render_method_name(render_method::splat)),
                             std::string(render_method_name(render_method::points))}))
      ->capture_default_str()
      ->type_name("METHOD");
  app.add_flag("--validation", o.validation, "Enable the Khronos validation layer; exit 2 if it reported any message");
  app.add_option("--seed", o.seed, "Random seed of the initial particle disc")->capture_default_str()->type_name("N");
  app.add_option("--render-device", o.render_device, "CUDA device whose GPU holds the particles and draws them")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->type_name("N");
  app.add_option("--sim-device", o.sim_device,
                 "CUDA device that simulates; another than --render-device moves each frame across (peer "
                 "copy, or pinned host memory when the GPUs cannot peer)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->type_name("N");

  if (const auto rc = samples::parse(app, argc, argv))
    return {std::nullopt, *rc == 0 ? exit_status::ok : exit_status::usage_error};
  if (!particles_text.empty()) o.particles = *parse_count(particles_text);  // checked by count_check
  o.render = *parse_render_method(render_text);                               // checked by IsMember
  o.frames_given = frames->count() > 0;
  if (!samples::frames_fit_the_mode("membridge_particles", o.headless, o.frames_given, o.frames))
    return {std::nullopt, exit_status::usage_error};
  return {std::move(o), exit_status::ok};
}

void apply_mode_defaults(app_options& options, bool windowed) {
  if (windowed) return;
  samples::apply_headless_defaults(options.frames, options.out, default_headless_frames, default_png);
}

float brightness_for(std::uint64_t count) noexcept {
  constexpr double reference = 0.15;  // particle_renderer's default, right for 1M particles
  if (count == 0) return 1.0f;
  const double scaled = reference * static_cast<double>(default_particle_count) / static_cast<double>(count);
  return static_cast<float>(std::clamp(scaled, reference / 4.0, 1.0));
}

}  // namespace particles::app
