// membridge-view's run: connect, make a Vulkan device on the buffers' GPU, import, then per frame
//   pump the publisher's events; follow growth (after the previous frame finished);
//   with a frame timeline: draw the newest announced frame m (slot m % S of every buffer), waiting
//   for produced >= m + 1 and, as consumer, signalling consumed = m + 1; without one: draw the
//   buffers as they are; windowed: blit into the swapchain and present.
// At the end: one statistics line and one JSON line, and the PNG of the last frame (--out).
#include "viewer.hpp"

#include "frame_stats.hpp"        // samples/common: frame times
#include "overlay_text.hpp"       // samples/common: the window's overlay
#include "png_writer.hpp"         // samples/common: PNG output
#include "session.hpp"
#include "window.hpp"             // samples/common: the GLFW window and swapchain
#include "window_input.hpp"       // samples/common: the mouse orbits the camera

#include <membridge/core/units.hpp>

#include <glm/gtc/matrix_transform.hpp>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <thread>

namespace membridge_view {

using membridge::errc;
using membridge::error;
using membridge::result;
using namespace std::chrono_literals;
using apps::ms_between;
using apps::orbit;
using apps::window_input;

namespace {

std::atomic<bool> stop_flag{false};
static_assert(std::atomic<bool>::is_always_lock_free, "request_stop() runs in a signal handler");

/// How long the loop waits for an event when there is nothing new to draw.
constexpr auto wait_slice = 5ms;
/// How long the end of the run waits for the last frame before releasing a dead publisher's frame.
constexpr std::uint64_t settle_ns = 1'000'000'000ULL;

class viewer {
 public:
  viewer(const view_options& o, std::ostream& out, apps::window_system* windows)
      : o_(o), out_(out), windows_(windows) {}

  result<void> run() {
    const auto start = clock_type::now();
    MEMBRIDGE_TRY_ASSIGN(session_, session::connect(o_, out_).with_context(
                                       "connecting to '" + (o_.path.empty() ? o_.name : o_.path) + "'"));
    MEMBRIDGE_TRY_ASSIGN(const auto gpu, session_->wait_for_drawable(clock_type::now() + std::chrono::milliseconds(o_.timeout_ms)));
    if (!gpu) return error(errc::protocol_error, "membridge-view", "the publisher went away before publishing a buffer");
    MEMBRIDGE_TRY(create_device(*gpu));
    session_->import_new(context_, o_);
    attach_ms_ = ms_between(start, clock_type::now());
    out_ << session_->describe() << '\n' << std::flush;
    if (session_->drawable_count() == 0)
      return error(errc::unsupported, "membridge-view", "none of the published buffers can be drawn (see above)");
    MEMBRIDGE_TRY_ASSIGN(renderer_, renderer::create(context_, o_.width, o_.height, o_.map));
    camera_ = orbit{o_.yaw_degrees, o_.pitch_degrees, o_.distance, false};
    if (windows_ != nullptr) {
      MEMBRIDGE_TRY_ASSIGN(window_, apps::window::create(*windows_, context_, o_.width, o_.height, 1,
                                                                   "membridge-view - " + o_.name, !o_.screenshot.empty())
                                        .with_context("opening the window"));
      auto input = window_input::attach(window_->native());
      if (input)
        input_ = std::move(*input);
      else
        out_ << "membridge-view: no mouse control (" << input.error().message() << ")\n";
    }
    first_draw_ = last_draw_ = clock_type::now();
    progress_.emplace(out_, static_cast<std::size_t>(o_.frames), std::chrono::seconds(2));
    const result<void> looped = loop();
    return finish(looped);
  }

 private:
  result<void> create_device(const membridge::device_uuid& uuid) {
    membridge::vulkan::create_options co = apps::app_context_options("membridge-view", o_.validation, windows_);
    co.uuid = uuid;  // the GPU the publisher's memory lives on: imports work on no other
    MEMBRIDGE_TRY_ASSIGN(context_, membridge::vulkan::device_context::create(co).with_context(
                                       "creating a Vulkan device on the publisher's GPU " + uuid.to_string()));
    return membridge::ok();
  }

  [[nodiscard]] bool ending() {
    if (stop_flag.load()) interrupted_ = true;
    if (window_ && window_->should_close()) window_closed_ = true;
    if (interrupted_ || window_closed_) return true;
    if (o_.frames == 0 || drawn_ < o_.frames) return false;
    return ms_between(first_draw_, clock_type::now()) >= static_cast<double>(o_.min_run_ms);
  }

  /// The r32f range of `it` this frame: --range, else the last sampled one (sampling again).
  void set_range(draw_item& it) const {
    const bool scalar = it.layout.colour == membridge::ipc::field_type::r32f;
    if (o_.range) {
      it.range_min = o_.range->first;
      it.range_max = o_.range->second;
    } else if (scalar) {
      it.sample_range = true;
      if (const auto r = renderer_.sampled_range(it.id)) {
        it.range_min = r->first;
        it.range_max = r->second;
      }
    }
  }

  [[nodiscard]] glm::mat4 camera() const {
    const float aspect = static_cast<float>(o_.width) / static_cast<float>(o_.height);
    // y up; yaw 0 looks from +z at the origin (x to the right), pitch raises the eye.
    const float yaw = glm::radians(camera_.yaw_degrees);
    const float pitch = glm::radians(camera_.pitch_degrees);
    const float d = camera_.distance;
    const glm::vec3 eye{d * std::cos(pitch) * std::sin(yaw), d * std::sin(pitch), d * std::cos(pitch) * std::cos(yaw)};
    const glm::mat4 view = glm::lookAtRH(eye, glm::vec3(0.0f), glm::vec3(0.0f, 1.0f, 0.0f));
    glm::mat4 proj = glm::perspectiveRH_ZO(glm::radians(45.0f), aspect, 0.01f * d, 100.0f * d);
    proj[1][1] *= -1.0f;  // Vulkan's clip space has y down
    return proj * view;
  }

  /// Records and submits `items` for `frame`; `signal`: as consumer, signal consumed for it.
  result<void> submit(std::vector<draw_item>& items, std::optional<std::uint64_t> frame, bool signal) {
    for (draw_item& it : items) set_range(it);
    frame_sync sync;
    if (frame && session_->synchronised()) {
      const auto wait = session_->timeline().wait_info(*frame);
      sync.waits.push_back({wait.semaphore, wait.value, read_stages});
      if (signal && session_->consumer()) {
        const auto done = session_->timeline().signal_info(*frame);
        sync.signals.push_back({done.semaphore, done.value, 0});
      }
    }
    std::optional<apps::present_job> job;
    if (window_) {
      MEMBRIDGE_TRY(renderer_.wait());  // the window records into its slot's command buffer
      if (overlay_.due()) window_->set_overlay(overlay_lines(items));
      MEMBRIDGE_TRY_ASSIGN(job, window_->begin_frame(0, renderer_.image(), o_.width, o_.height));
      if (job) {
        sync.waits.push_back({job->acquired, 0, VK_PIPELINE_STAGE_TRANSFER_BIT});
        sync.signals.push_back({job->rendered, 0, 0});
        sync.extra_commands.push_back(job->blit);
      }
    }
    MEMBRIDGE_TRY(renderer_.draw(items, camera(), sync));
    submitted_frame_ = frame;
    if (job) MEMBRIDGE_TRY(window_->present(*job));
    return membridge::ok();
  }

  result<void> draw(std::optional<std::uint64_t> frame) {
    std::vector<draw_item> items = session_->items(frame);
    // A frame of the timeline is submitted even with nothing to draw (a buffer left out), so that
    // its `consumed` is signalled and the publisher is not held up.
    if (items.empty() && !(frame && session_->synchronised())) return membridge::ok();
    const bool unranged = !o_.range && std::any_of(items.begin(), items.end(), [&](const draw_item& it) {
      return it.layout.colour == membridge::ipc::field_type::r32f && !renderer_.sampled_range(it.id);
    });
    MEMBRIDGE_TRY(submit(items, frame, !unranged));
    if (unranged) {
      // The first frame of an r32f buffer: sample its range, then draw the frame again with it
      // (the publisher's frame is signalled consumed by this second submit only).
      MEMBRIDGE_TRY(renderer_.wait());
      items = session_->items(frame);
      MEMBRIDGE_TRY(submit(items, frame, true));
    }
    session_->drew(frame);
    ++drawn_;
    if (!camera_.moved) camera_.yaw_degrees += o_.spin;  // the orbit, until the user moves the camera
    const auto now = clock_type::now();
    if (drawn_ == 1) first_draw_ = now;
    else stats_.add(last_draw_, now);
    last_draw_ = now;
    progress_->tick(stats_, now);
    return membridge::ok();
  }

  /// Windowed: the mouse moves the camera; the title shows the statistics twice a second.
  void handle_window() {
    window_->poll_events();
    if (!input_) return;
    input_->update(camera_);
    const auto now = clock_type::now();
    if (now - title_at_ < 500ms) return;
    const double seconds = std::chrono::duration<double>(now - title_at_).count();
    char text[160];
    (void)std::snprintf(text, sizeof text, "membridge-view - %s - %.1f fps - frames received %llu, drawn %llu",
                        o_.name.c_str(), static_cast<double>(drawn_ - title_drawn_) / seconds,
                        static_cast<unsigned long long>(session_->frames_received()),
                        static_cast<unsigned long long>(drawn_));
    std::string title = text;
    for (const auto& d : session_->buffers())
      if (d->problem.empty() && d->view.valid()) title += " - " + d->name + " " + membridge::format_bytes(d->view.size());
    input_->set_title(title);
    title_at_ = now;
    title_drawn_ = drawn_;
  }

  result<void> loop() {
    for (;;) {
      if (window_) handle_window();
      if (ending()) return membridge::ok();
      MEMBRIDGE_TRY(session_->pump(0ms));
      MEMBRIDGE_TRY(follow_growth());
      if (session_->synchronised()) {
        if (const auto frame = session_->next_frame()) {
          MEMBRIDGE_TRY(draw(frame));
          continue;
        }
        MEMBRIDGE_TRY(session_->pump(wait_slice));
        continue;
      }
      if (session_->disconnected() && !window_ && (session_->timeline().valid() || drawn_ > 0) &&
          o_.min_run_ms == 0) {
        gone_ = true;  // headless: nothing new will come
        return membridge::ok();
      }
      MEMBRIDGE_TRY(draw(std::nullopt));
      if (session_->drawable_count() == 0) MEMBRIDGE_TRY(session_->pump(wait_slice));
    }
  }

  result<void> follow_growth() {
    MEMBRIDGE_TRY(renderer_.wait());
    session_->import_new(context_, o_);  // buffers published after the start
    for (const std::uint32_t id : session_->follow_growth()) renderer_.forget(id);
    return membridge::ok();
  }

  /// Makes sure the GPU is done; a publisher that died may never signal the frame waited for.
  result<void> settle() {
    if (!renderer_.valid()) return membridge::ok();
    auto idle = renderer_.wait(settle_ns);
    if (idle || idle.error().code() != errc::timeout) return idle;
    if (session_->timeline().valid() && submitted_frame_) {
      out_ << "membridge-view: the publisher never finished frame " << *submitted_frame_
           << ": releasing the wait for it from the host\n";
      (void)session_->timeline().produced().signal(membridge::sync::frame_timeline::produced_value(*submitted_frame_));
    }
    return renderer_.wait();
  }

  /// The overlay's lines: the frame statistics, then the buffers drawn, their elements and bytes.
  [[nodiscard]] std::vector<std::string> overlay_lines(const std::vector<draw_item>& items) const {
    std::uint64_t count = 0;
    std::uint64_t bytes = 0;
    for (const draw_item& it : items) {
      count += it.count;
      bytes += it.bytes;
    }
    return {apps::overlay_frame_line(stats_), std::to_string(items.size()) + (items.size() == 1 ? " buffer  " : " buffers  ") +
                                                  std::to_string(count) + " elements  " + apps::byte_text(bytes)};
  }

  void print_summary() const {
    const apps::frame_summary s = stats_.summary();
    const double seconds = drawn_ > 1 ? ms_between(first_draw_, last_draw_) / 1000.0 : 0.0;
    const double fps = seconds > 0.0 ? static_cast<double>(drawn_ - 1) / seconds : 0.0;
    char line[512];
    (void)std::snprintf(line, sizeof line,
                        "membridge-view: drew %llu frames (%.1f fps, median %.2f ms, p99 %.2f ms), received %llu frame "
                        "announcements, %zu buffers drawn, attach %.2f ms (connect %.2f ms, Vulkan import %.2f ms)",
                        static_cast<unsigned long long>(drawn_), fps, s.median_ms, s.p99_ms,
                        static_cast<unsigned long long>(session_->frames_received()), session_->drawable_count(),
                        attach_ms_, session_->connect_ms(), session_->import_ms());
    out_ << line << '\n';
    (void)std::snprintf(line, sizeof line,
                        "{\"attach_ms\":%.3f,\"frames_drawn\":%llu,\"fps\":%.2f,\"frames_received\":%llu,"
                        "\"median_ms\":%.3f,\"p99_ms\":%.3f,\"connect_ms\":%.3f,\"import_ms\":%.3f,\"buffers\":%zu,"
                        "\"synchronised\":%s,\"lit_pixels\":%lld}",
                        attach_ms_, static_cast<unsigned long long>(drawn_), fps,
                        static_cast<unsigned long long>(session_->frames_received()), std::isnan(s.median_ms) ? 0.0 : s.median_ms,
                        std::isnan(s.p99_ms) ? 0.0 : s.p99_ms, session_->connect_ms(), session_->import_ms(),
                        session_->drawable_count(), session_->timeline().valid() ? "true" : "false", lit_pixels_);
    out_ << line << '\n' << std::flush;
  }

  result<void> write_png() {
    if (o_.out.empty()) return membridge::ok();
    MEMBRIDGE_TRY_ASSIGN(const std::vector<std::uint8_t> rgba, renderer_.read_back());
    MEMBRIDGE_TRY(apps::write_png(o_.out, rgba, o_.width, o_.height).with_context("writing " + o_.out));
    // Pixels that differ from the clear colour: a quick check that the image shows something.
    lit_pixels_ = static_cast<long long>(apps::image_stats(rgba, o_.width, o_.height, {5, 5, 10}).lit_pixels);
    out_ << "membridge-view: wrote " << o_.out << " (" << o_.width << "x" << o_.height << ", " << lit_pixels_
         << " pixels not background)\n"
         << std::flush;
    return membridge::ok();
  }

  result<void> finish(const result<void>& looped) {
    const result<void> settled = settle();
    result<void> written = membridge::ok();
    if (looped && settled) {
      if (drawn_ > 0) written = write_png();
      if (written && drawn_ > 0 && window_ && !o_.screenshot.empty()) {
        written = window_->save_screenshot(o_.screenshot).with_context("writing " + o_.screenshot);
        if (written) out_ << "membridge-view: wrote " << o_.screenshot << " (the window's last image, overlay included)\n";
      }
      print_summary();
    }
    window_.reset();
    renderer_ = renderer();
    session_.reset();
    if (!looped) return looped;
    if (!settled) return settled;
    if (!written) return written;
    if (const std::uint64_t count = apps::validation_messages(context_, windows_); o_.validation && count > 0)
      return error(errc::internal, "Vulkan validation", std::to_string(count) + " validation message(s) (printed above)");
    if (drawn_ == 0) return error(errc::timeout, "membridge-view", "no frame was drawn");
    if (o_.frames > 0 && drawn_ < o_.frames && !interrupted_ && !window_closed_)
      return error(errc::timeout, "membridge-view",
                   "drew " + std::to_string(drawn_) + " of " + std::to_string(o_.frames) + " frames: the publisher went away");
    return membridge::ok();
  }

  const view_options& o_;
  std::ostream& out_;
  apps::window_system* windows_;
  // Destroyed in reverse: the session (imports), the window, the renderer, then the context.
  membridge::vulkan::device_context context_;
  renderer renderer_;
  std::optional<apps::window> window_;
  std::optional<window_input> input_;
  orbit camera_;
  clock_type::time_point title_at_{};
  std::uint64_t title_drawn_ = 0;
  std::unique_ptr<session> session_;
  apps::frame_stats stats_{4096};
  apps::overlay_clock overlay_;
  std::optional<apps::progress_printer> progress_;
  clock_type::time_point first_draw_{}, last_draw_{};
  std::optional<std::uint64_t> submitted_frame_;
  std::uint64_t drawn_ = 0;
  double attach_ms_ = 0.0;
  long long lit_pixels_ = -1;  // -1: no PNG written
  bool interrupted_ = false, window_closed_ = false, gone_ = false;
};

}  // namespace

void request_stop() noexcept { stop_flag.store(true); }

result<void> run(const view_options& options, std::ostream& out, apps::window_system* windows) {
  viewer v(options, out, windows);
  return v.run();
}

}  // namespace membridge_view
