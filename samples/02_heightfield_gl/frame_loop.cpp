// The frame loop both paths share: S frames in flight (GL fences), the draw, the window, statistics,
// the PNG of the last frame and the blank-image check.
#include "app.hpp"
#include "frame_stats.hpp"   // samples/common
#include "gl_overlay.hpp"
#include "overlay_text.hpp"  // samples/common
#include "png_writer.hpp"    // samples/common

#include <epoxy/gl.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <ostream>
#include <utility>

namespace heightfield {

using namespace std::chrono_literals;

namespace {

std::atomic<bool> stop_requested{false};

/// Longest GL may take for one frame before the run fails (llvmpipe draws a large grid slowly).
constexpr auto frame_limit = 60s;
/// Frames not counted in the statistics (warm-up), when the run has more.
constexpr std::size_t warmup_frames = 10;

struct pending_frame {
  std::uint64_t frame = 0;
  GLsync fence = nullptr;
};

/// Waits until GL finished `p` (in slices, so a producer failure is noticed and unblocked), then
/// tells the source. Errors: timeout after frame_limit; the source's.
result<void> retire(const pending_frame& p, frame_source& source, std::uint64_t submitted) {
  const auto deadline = std::chrono::steady_clock::now() + frame_limit;
  bool unblocked = false;
  for (;;) {
    const GLenum r = glClientWaitSync(p.fence, GL_SYNC_FLUSH_COMMANDS_BIT, 50'000'000);  // 50 ms
    if (r == GL_ALREADY_SIGNALED || r == GL_CONDITION_SATISFIED) break;
    if (r == GL_WAIT_FAILED) {
      glDeleteSync(p.fence);
      return error::from_native(errc::internal, membridge::error_source::gl, static_cast<std::int64_t>(glGetError()),
                                "GL_WAIT_FAILED", "glClientWaitSync", "frame " + std::to_string(p.frame));
    }
    if (!unblocked && source.failure()) {
      source.unblock(submitted);  // GL may wait on the GPU for frames the producer never made
      unblocked = true;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      glDeleteSync(p.fence);
      return error(errc::timeout, "glClientWaitSync",
                   "GL did not finish frame " + std::to_string(p.frame) + " within 60 s");
    }
  }
  glDeleteSync(p.fence);
  return source.retired(p.frame);
}

std::string fixed(double value, int decimals) {
  char text[64];
  (void)std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

}  // namespace

void request_stop() noexcept { stop_requested.store(true); }

std::string size_text(std::uint64_t w, std::uint64_t h) { return std::to_string(w) + "x" + std::to_string(h); }

result<void> run_frames(const membridge::gl::context& gl, heightfield_renderer& renderer, frame_source& source,
                        const path_description& description, gl_window* window, run_environment& env,
                        exit_status& status) {
  const app_options& o = env.options;
  std::ostream& out = *env.out;
  const auto& caps = gl.capabilities();
  out << "membridge_heightfield_gl: " << description.path << " on " << description.device << ": "
      << size_text(static_cast<std::uint64_t>(o.grid), static_cast<std::uint64_t>(o.grid)) << " grid, " << o.steps
      << (o.steps == 1 ? " step/frame, " : " steps/frame, ") << o.slots << " slots, " << size_text(o.width, o.height)
      << ", "
      << (window == nullptr ? "headless, " + std::to_string(o.frames) + " frames"
                            : (o.frames == 0 ? std::string("window, until closed")
                                             : "window, " + std::to_string(o.frames) + " frames"))
      << '\n';
  out << "gl: " << caps.renderer << " (" << caps.version << "), " << renderer.samples() << "x MSAA\n";
  out << "memory: " << description.memory << '\n';
  out << "ordering: " << description.ordering << '\n' << std::flush;

  apps::frame_stats stats(o.frames);
  apps::progress_printer progress(out, o.frames);
  std::deque<pending_frame> in_flight;
  std::uint64_t submitted = 0;
  bool closed_by_user = false;
  auto last = std::chrono::steady_clock::now();
  gl_overlay overlay;
  apps::overlay_clock overlay_clock;
  std::optional<std::vector<std::uint8_t>> screenshot;  // the window's last image (--screenshot)
  int screenshot_w = 0;
  int screenshot_h = 0;

  auto loop = [&]() -> result<void> {
    for (std::uint64_t n = 0; o.frames == 0 || n < o.frames; ++n) {
      if (stop_requested.load()) {
        out << "interrupted after " << n << " frames\n";
        break;
      }
      if (window != nullptr && window->should_close()) {
        closed_by_user = true;
        break;
      }
      // Slot n % S was last read by frame n - S: GL must be done with it before it is written again.
      while (in_flight.size() >= o.slots) {
        const pending_frame p = in_flight.front();
        in_flight.pop_front();
        MEMBRIDGE_TRY(retire(p, source, submitted));
      }
      MEMBRIDGE_TRY_ASSIGN(const draw_input input, source.acquire(n).with_context("frame " + std::to_string(n)));
      MEMBRIDGE_TRY(renderer.draw(input).with_context("frame " + std::to_string(n)));
      MEMBRIDGE_TRY(source.release(n).with_context("frame " + std::to_string(n)));
      submitted = n + 1;
      GLsync fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
      if (fence == nullptr)
        return error::from_native(errc::internal, membridge::error_source::gl,
                                  static_cast<std::int64_t>(glGetError()), "GL error", "glFenceSync");
      in_flight.push_back({n, fence});
      glFlush();
      if (window != nullptr) {
        int w = 0;
        int h = 0;
        window->framebuffer_size(w, h);
        renderer.blit_to_default(w, h);
        if (overlay_clock.due())
          overlay.set_lines({apps::overlay_frame_line(stats),
                             size_text(static_cast<std::uint64_t>(o.grid), static_cast<std::uint64_t>(o.grid)) +
                                 " grid  " + apps::byte_text(input.bytes) + " heights  " + size_text(o.width, o.height) +
                                 " image"});
        overlay.draw(w, h);
        if (!o.screenshot.empty() && n + 1 == o.frames) {  // before the swap: the back buffer is the frame
          MEMBRIDGE_TRY_ASSIGN(screenshot, read_window_pixels(w, h));
          screenshot_w = w;
          screenshot_h = h;
        }
        window->present();
      }
      const auto now = std::chrono::steady_clock::now();
      stats.add(last, now);
      last = now;
      (void)progress.tick(stats, now);
    }
    return membridge::ok();
  };
  result<void> ran = loop();
  // Drain: every submitted frame retired (host ordering signals its consumption), even after an error.
  while (!in_flight.empty()) {
    const pending_frame p = in_flight.front();
    in_flight.pop_front();
    if (auto r = retire(p, source, submitted); !r && ran) ran = std::move(r);
  }
  std::optional<std::vector<std::uint8_t>> pixels;
  if (ran && !o.out.empty() && submitted > 0) {
    auto read = renderer.read_pixels();
    if (!read) ran = std::move(read).error();
    else pixels = std::move(*read);
  }
  if (auto finished = source.finish(submitted); !finished) return std::move(finished).error();
  MEMBRIDGE_TRY(std::move(ran));

  if (closed_by_user) out << "window: closed by the user after " << submitted << " frames\n";
  const std::size_t skip = stats.count() > warmup_frames ? warmup_frames : 0;
  const apps::frame_summary s = stats.summary(skip);
  out << "frames " << s.count << "  median " << fixed(s.median_ms, 2) << " ms  p99 " << fixed(s.p99_ms, 2)
      << " ms  mean " << fixed(s.mean_ms, 2) << " ms  " << fixed(s.fps, 1) << " FPS"
      << (skip > 0 ? "  (first 10 frames not counted)" : "") << '\n';
  const std::vector<double> sim = source.sim_times_ms();
  const apps::frame_summary sim_summary = apps::summarize_frames(sim);
  out << "grid " << size_text(static_cast<std::uint64_t>(o.grid), static_cast<std::uint64_t>(o.grid)) << "  sim "
      << fixed(sim_summary.median_ms, 3) << " ms/frame median, " << fixed(sim_summary.mean_ms, 3) << " mean ("
      << source.sim_clock() << ", " << sim.size() << " frames, " << o.steps
      << (o.steps == 1 ? " step" : " steps") << " each)  import " << fixed(description.import_ms, 2) << " ms\n";
  out << "ordering used: " << description.ordering << '\n';

  if (screenshot) {
    MEMBRIDGE_TRY(apps::write_png(o.screenshot, *screenshot, static_cast<std::uint32_t>(screenshot_w),
                                  static_cast<std::uint32_t>(screenshot_h))
                      .with_context("writing " + o.screenshot));
    out << "wrote " << o.screenshot << " (the window's last image, overlay included)\n";
  } else if (!o.screenshot.empty() && window != nullptr) {
    out << "no screenshot: --screenshot needs --frames N (the window's image is read before the last swap)\n";
  }
  if (pixels) {
    MEMBRIDGE_TRY(apps::write_png(o.out, *pixels, o.width, o.height).with_context("writing " + o.out));
    out << "wrote " << o.out << " (" << size_text(o.width, o.height) << ", frame " << submitted - 1 << ")\n";
    if (o.check) {
      // Blank: (nearly) only background, or one flat colour. A lit, rippled field has many shades.
      const apps::image_summary is = apps::image_stats(*pixels, o.width, o.height, background_rgb);
      const bool blank = is.lit_pixels < is.pixels / 20 || is.colour_buckets < 8;
      out << "check: " << is.lit_pixels << " of " << is.pixels << " pixels lit, " << is.colour_buckets
          << " colours: " << (blank ? "BLANK" : "not blank") << '\n';
      if (blank) status = exit_status::blank_image;
    }
  }
  out << std::flush;
  return membridge::ok();
}

}  // namespace heightfield
