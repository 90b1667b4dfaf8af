// What both paths of membridge_particles share once they have a context and a particle source:
// window, renderer, header, frames, statistics and PNG.
#include "app.hpp"
#include "window_frame.hpp"

#include <volk.h>

#include <cstdio>
#include <mutex>
#include <optional>
#include <ostream>
#include <string_view>

namespace particles::app {

using membridge::result;

membridge::vulkan::create_options context_options(const run_environment& env) {
  return apps::app_context_options("membridge_particles", env.options.validation, env.windows);
}

namespace {

std::string header_line(const path_description& d, const run_environment& env) {
  const app_options& o = env.options;
  std::string mode;
  if (env.windows != nullptr)
    mode = "window, " + (o.frames > 0 ? std::to_string(o.frames) + " frames" : std::string("until closed"));
  else
    mode = "headless, " + std::to_string(o.frames) + " frames";
  return "membridge_particles: " + d.path + " on " + d.device + ": " + std::to_string(o.particles) + " particles, " +
         std::to_string(o.steps) + (o.steps == 1 ? " step" : " steps") + "/frame, " + std::to_string(o.slots) +
         " slots, " + std::to_string(o.width) + "x" + std::to_string(o.height) + ", " + mode;
}

/// The `render:` line: the method and how it draws.
std::string render_description(render_method m) {
  if (m == render_method::points)
    return "points (graphics pipeline: one point primitive per particle, blended additively)";
  return "splat (compute: one thread per particle adds its colour to its pixel with atomics, then a resolve pass)";
}

}  // namespace

result<void> render(const membridge::vulkan::device_context& context, frame_source& source, const path_description& d,
                    run_environment& env) {
  const app_options& o = env.options;
  std::ostream& out = *env.out;
  out << header_line(d, env) << '\n'
      << "memory: " << d.memory << '\n'
      << "render: " << render_description(o.render) << '\n'
      << std::flush;

  std::optional<window> win;
  if (env.windows != nullptr) {
    MEMBRIDGE_TRY_ASSIGN(
        win, window::create(*env.windows, context, o.width, o.height, o.slots,
                            "membridge particles - " + d.path + " - " + std::to_string(o.particles) + " particles",
                            !o.screenshot.empty())
                 .with_context("opening the window"));
  }
  const renderer_device device = renderer_device_of(context);
  renderer_options ro;
  ro.width = o.width;
  ro.height = o.height;
  ro.frame_slots = o.slots;
  ro.brightness = brightness_for(o.particles);
  ro.method = o.render;
  MEMBRIDGE_TRY_ASSIGN(auto renderer, particle_renderer::create(device, ro).with_context("creating the renderer"));

  MEMBRIDGE_TRY_ASSIGN(const loop_result looped, run_frames(renderer, source, win ? &*win : nullptr, o, out));
  if (looped.interrupted) out << "interrupted after " << looped.frames << " frames\n";
  if (win) {
    out << "window: ";
    if (looped.window_closed) out << "closed by the user after " << looped.frames << " frames; ";
    out << win->describe() << '\n';
    if (!o.screenshot.empty() && looped.frames > 0) {
      MEMBRIDGE_TRY(win->save_screenshot(o.screenshot).with_context("writing " + o.screenshot));
      out << "wrote " << o.screenshot << " (the window's last image, overlay included)\n";
    }
  }
  out << statistics_line(looped) << '\n' << std::flush;
  if (!o.out.empty()) {
    if (looped.frames == 0) {
      out << "no frame was drawn: " << o.out << " not written\n";
    } else {
      MEMBRIDGE_TRY(write_last_frame(renderer, o.out).with_context("writing " + o.out));
      out << "wrote " << o.out << " (" << o.width << "x" << o.height << ", frame " << looped.frames - 1 << ")\n"
          << std::flush;
    }
  }
  return membridge::ok();
}

result<void> check_validation(const membridge::vulkan::device_context& context, const run_environment& env) {
  if (!env.options.validation) return membridge::ok();
  const std::uint64_t count = apps::validation_messages(context, env.windows);
  *env.out << "validation: " << count << (count == 1 ? " message" : " messages") << '\n' << std::flush;
  if (count > 0)
    return membridge::error(membridge::errc::internal, "Vulkan validation",
                            std::to_string(count) + " validation message(s) reported (printed above)");
  return membridge::ok();
}

}  // namespace particles::app
