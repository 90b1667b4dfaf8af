// The render loop shared by the GPU and CPU paths of membridge_particles.
#include "frame_loop.hpp"

#include "png_writer.hpp"
#include "window_frame.hpp"
#include "window_input.hpp"  // samples/common: the mouse orbits the camera

#include <glm/trigonometric.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ostream>
#include <span>

namespace particles::app {

using membridge::result;

namespace {
std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "request_stop() runs in a signal handler");
}  // namespace

void request_stop() noexcept { stop_requested.store(true); }

std::vector<std::string> overlay_lines(const frame_stats& stats, std::uint32_t count, const particle_renderer& r) {
  return {apps::overlay_frame_line(stats),
          std::to_string(count) + " particles  " + apps::byte_text(std::uint64_t{count} * sizeof(particle)) + "  " +
              std::to_string(r.width()) + "x" + std::to_string(r.height()) + " image"};
}

float camera_yaw(std::uint64_t frame) noexcept {
  // A full turn every ~1570 frames (26 s at 60 FPS), starting a little off the attractors' axis.
  return 0.35f + 0.004f * static_cast<float>(frame % 1571);
}

result<loop_result> run_frames(particle_renderer& renderer, frame_source& source, window* win,
                               const app_options& options, std::ostream& out) {
  using clock = std::chrono::steady_clock;
  const std::uint32_t slots = renderer.frame_slots();
  const float aspect = static_cast<float>(renderer.width()) / static_cast<float>(renderer.height());
  loop_result outcome;
  frame_stats stats(options.frames > 0 ? static_cast<std::size_t>(options.frames) : 4096);
  const auto start = clock::now();
  progress_printer progress(out, static_cast<std::size_t>(options.frames), std::chrono::seconds(2), start);
  std::uint64_t submitted = 0;
  apps::overlay_clock overlay;
  // Windowed: a left-button drag turns the camera, the wheel zooms; until then it orbits on its own.
  apps::orbit camera{0.0f, glm::degrees(0.6f), 6.5f, false};
  std::optional<apps::window_input> mouse;
  if (win != nullptr) {
    if (auto attached = apps::window_input::attach(win->native())) mouse = std::move(*attached);
  }

  auto loop = [&]() -> result<void> {
    auto last = start;
    for (std::uint64_t n = 0; options.frames == 0 || n < options.frames; ++n) {
      if (stop_requested.load()) {
        outcome.interrupted = true;
        break;
      }
      if (win != nullptr) {
        win->poll_events();
        if (win->should_close()) {
          outcome.window_closed = true;
          break;
        }
      }
      const auto slot = static_cast<std::uint32_t>(n % slots);
      MEMBRIDGE_TRY_ASSIGN(frame_input input, source.prepare(n, renderer).with_context("frame " + std::to_string(n)));
      if (mouse) mouse->update(camera);
      if (!camera.moved) camera.yaw_degrees = glm::degrees(camera_yaw(n));  // a drag starts from here
      const glm::mat4 view_proj =
          camera.moved ? orbit_view_proj(aspect, glm::radians(camera.yaw_degrees), glm::radians(camera.pitch_degrees),
                                         camera.distance)
                       : orbit_view_proj(aspect, camera_yaw(n), 0.6f, 6.5f);
      MEMBRIDGE_TRY(renderer.record(slot, input.buffer, input.offset, input.count, view_proj)
                        .with_context("recording frame " + std::to_string(n)));
      std::optional<present_job> job;
      if (win != nullptr) {
        if (overlay.due()) win->set_overlay(overlay_lines(stats, input.count, renderer));
        MEMBRIDGE_TRY_ASSIGN(job,
                             win->begin_frame(slot, renderer.colour_image(slot), renderer.width(), renderer.height())
                                 .with_context("frame " + std::to_string(n) + ": window"));
      }
      MEMBRIDGE_TRY(submit_with_window(renderer, slot, std::move(input.waits), std::move(input.signals), job,
                                       "frame " + std::to_string(n)));
      ++submitted;
      if (job) MEMBRIDGE_TRY(win->present(*job).with_context("presenting frame " + std::to_string(n)));
      const auto now = clock::now();
      stats.add(last, now);
      last = now;
      progress.tick(stats, now);
    }
    return membridge::ok();
  };
  const result<void> looped = loop();
  const result<void> finished = source.finish(submitted);
  if (!looped) {  // report both: a failed producer often makes the render thread time out first
    membridge::error e = looped.error();
    if (!finished) e.add_context("and then: " + finished.error().message());
    return e;
  }
  if (!finished) return finished.error();
  outcome.frames = submitted;
  outcome.warm_up = stats.count() > warm_up_frames ? warm_up_frames : 0;
  outcome.summary = stats.summary(outcome.warm_up);
  return outcome;
}

std::string statistics_line(const loop_result& r) {
  char line[256];
  (void)std::snprintf(line, sizeof line, "frames %zu  median %.2f ms  p99 %.2f ms  %.1f FPS", r.summary.count,
                      r.summary.median_ms, r.summary.p99_ms, r.summary.fps);
  std::string text = line;
  if (r.warm_up > 0) text += "  (first " + std::to_string(r.warm_up) + " frames not counted)";
  return text;
}

result<void> write_last_frame(particle_renderer& renderer, const std::string& path) {
  std::vector<std::uint8_t> rgba;
  MEMBRIDGE_TRY(renderer.read_back(rgba).with_context("reading back the last frame"));
  return apps::write_png(path, rgba, renderer.width(), renderer.height());
}

}  // namespace particles::app
