// The viewer of sample 03: draws a producer's frames from the producer's own GPU memory.
//
//   attach   ipc::subscriber::connect (consumer or observer) -> the buffer and frame semaphores with
//            their fds; a Vulkan device on the buffer's GPU (UUID; with --render-device A, refused unless
//            it is CUDA device A's); sync::import_into_vulkan (one sparse
//            VkBuffer on NVIDIA); frame_timeline::import of frames.produced / frames.consumed
//   frame    pump the subscriber's events (never blocking while there is something to draw); draw the
//            newest announced frame m after the join and the last drawn one: record, then submit waiting
//            produced >= m + 1 and (consumer) signalling consumed = m + 1; present when windowed
//   growth   buffer_changed -> sync::follow_growth on a worker thread; frames with the new layout are
//            drawn once it is bound (the producer announced the growth only after every earlier frame
//            was consumed, so there is nothing else to draw meanwhile)
//   departure the producer's goodbye or death: the GPU finishes (waits the producer never released are
//            released from the host), the window keeps the last image, and the viewer reconnects for
//            --reconnect-ms; a new producer means new imports
#include "viewer.hpp"

#include "app_options.hpp"  // brightness_for (sample 01)
#include "attachment.hpp"
#include "frame_stats.hpp"
#include "overlay_text.hpp"
#include "particle_layout.hpp"
#include "particle_renderer.hpp"
#include "png_writer.hpp"
#include "render_gpu.hpp"
#include "window_frame.hpp"  // sample 01: the renderer's device, the submit with the window's blit
#include "window_input.hpp"  // samples/common: the mouse orbits the camera

#include <membridge/core/units.hpp>
#include <membridge/cuda/driver.hpp>
#include <membridge/ipc/channel.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <glm/trigonometric.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace particles::ipc_viewer {

using membridge::errc;
using membridge::error;
using membridge::result;
using apps::frame_stats;
using apps::ms_between;
using apps::frame_summary;
using apps::progress_printer;
using namespace std::chrono_literals;

namespace {

/// Frames left out of the statistics at the start of a run (as sample 01).
constexpr std::size_t warm_up_frames = 10;
/// How long the loop waits for an event when nothing is drawable (shorter while a growth is imported,
/// so the new range is swapped in soon after the worker finished).
constexpr auto wait_slice = 5ms;
constexpr auto growth_wait_slice = 1ms;
/// Between connection attempts.
constexpr auto retry_period = 100ms;
/// Windowed, producer gone: the last frame is drawn again this often (resizes, exposes).
constexpr auto hold_period = 50ms;
/// How long a connection attempt may take (connection, handshake, state).
constexpr auto min_connect_timeout = 500ms;
constexpr auto max_connect_timeout = 5000ms;
/// After connecting, how long the buffer and semaphores may take to appear (a producer still starting).
constexpr auto resources_grace = 2s;
/// How long the viewer waits for its frames before releasing the waits of a producer that died.
constexpr std::uint64_t settle_ns = 1'000'000'000ULL;

std::atomic<bool> stop_flag{false};
static_assert(std::atomic<bool>::is_always_lock_free, "request_stop() runs in a signal handler");

/// The camera's yaw for producer frame `frame`: sample 01's orbit (frame_loop.cpp), so every viewer of
/// a producer sees frame f from the same place.
float camera_yaw(std::uint64_t frame) noexcept { return 0.35f + 0.004f * static_cast<float>(frame % 1571); }

std::string ms_text(double ms) {
  char text[32];
  (void)std::snprintf(text, sizeof text, "%.2f ms", ms);
  return text;
}

class viewer {
 public:
  explicit viewer(run_environment& env) : env_(env), o_(env.options), out_(*env.out) {}

  result<void> run() {
    const auto path = membridge::ipc::socket_path_for(o_.name);
    path_ = path ? *path : "$XDG_RUNTIME_DIR/membridge/" + o_.name + ".sock";
    MEMBRIDGE_TRY_ASSIGN(auto first,
                         connect_until(clock_type::now() + std::chrono::milliseconds(o_.reconnect_ms), false));
    if (!first) {
      out_ << "interrupted before a producer was found\n" << std::flush;
      return membridge::ok();
    }
    MEMBRIDGE_TRY_ASSIGN(const membridge::device_uuid gpu, render_gpu(first->description()->device));
    MEMBRIDGE_TRY(create_device(gpu));
    MEMBRIDGE_TRY(first->import(context_));
    MEMBRIDGE_TRY(create_renderer(first->slots(), first->imported_count()));
    out_ << header_line() << '\n';
    att_ = std::move(first);
    progress_.emplace(out_, static_cast<std::size_t>(o_.frames), std::chrono::seconds(2));
    on_attached();
    const result<void> looped = loop();
    return finish(looped);
  }

 private:
  // ------------------------------------------------------------------------------ setting up ---

  /// The GPU to render on: the producer's buffer's (`published`), checked against --render-device when
  /// given (which loads the CUDA driver for the ordinal's UUID; without it the viewer needs no CUDA).
  result<membridge::device_uuid> render_gpu(const membridge::device_uuid& published) const {
    if (!o_.render_device) return published;
    MEMBRIDGE_TRY_ASSIGN(const auto drv, membridge::cuda::driver::load().with_context(
                                             "loading the CUDA driver for --render-device " +
                                             std::to_string(*o_.render_device)));
    return pick_render_gpu(drv, *o_.render_device, published);
  }

  result<void> create_device(const membridge::device_uuid& uuid) {
    membridge::vulkan::create_options co = apps::app_context_options("membridge_ipc_viewer", o_.validation, env_.windows);
    co.uuid = uuid;  // the GPU the producer's memory lives on: imports work on no other
    MEMBRIDGE_TRY_ASSIGN(context_, membridge::vulkan::device_context::create(co).with_context(
                                       "creating a Vulkan device on the producer's GPU " + uuid.to_string()));
    return membridge::ok();
  }

  result<void> create_renderer(std::uint32_t slots, std::uint64_t count) {
    const renderer_device device = renderer_device_of(context_);
    renderer_options ro;
    ro.width = o_.width;
    ro.height = o_.height;
    ro.frame_slots = std::clamp<std::uint32_t>(slots, 1, 8);
    ro.brightness = app::brightness_for(count);  // the count at the first attach: growth shows as more light
    ro.method = o_.render;
    MEMBRIDGE_TRY_ASSIGN(renderer_, particle_renderer::create(device, ro).with_context("creating the renderer"));
    if (env_.windows != nullptr) {
      MEMBRIDGE_TRY_ASSIGN(window_, apps::window::create(*env_.windows, context_, o_.width, o_.height, ro.frame_slots,
                                                        "membridge ipc viewer - '" + o_.name + "'",
                                                        !o_.screenshot.empty())
                                        .with_context("opening the window"));
      if (auto attached = apps::window_input::attach(window_->native())) input_ = std::move(*attached);
    }
    return membridge::ok();
  }

  [[nodiscard]] std::string header_line() const {
    std::string mode;
    if (window_)
      mode = "window, " + (o_.frames > 0 ? std::to_string(o_.frames) + " frames" : std::string("until closed"));
    else
      mode = "headless, " + std::to_string(o_.frames) + " frames";
    return "membridge_ipc_viewer: " + mode + " on " + context_.name() + ", " +
           (o_.observer ? "observer (never paces the producer)" : "consumer (paces the producer)") + ", " +
           std::to_string(o_.width) + "x" + std::to_string(o_.height) + ", render " +
           std::string(render_method_name(o_.render));
  }

  void on_attached() {
    out_ << att_->describe(o_.name) << '\n';
    if (!o_.observer && !att_->consumer()) out_ << "note: another consumer is attached: watching as an observer\n";
    out_ << std::flush;
    attaches_.push_back({att_->times(), std::nullopt});
    attached_at_ = clock_type::now();
    last_draw_ = attached_at_;  // frame times restart: a reconnection's gap is not a frame
  }

  // ------------------------------------------------------------------------------ connecting ---

  /// Whether the run should end now (Ctrl+C, the window closed).
  bool ending() {
    if (stop_flag.load()) interrupted_ = true;
    if (window_ && window_->should_close()) window_closed_ = true;
    return interrupted_ || window_closed_;
  }

  [[nodiscard]] bool frames_reached() const noexcept { return o_.frames > 0 && drawn_ >= o_.frames; }

  /// Waits `duration`, keeping the window alive (events; the last image when `holding`).
  result<void> idle_for(clock_type::duration duration, bool holding) {
    const auto until = clock_type::now() + duration;
    for (auto now = clock_type::now(); now < until; now = clock_type::now()) {
      if (window_) window_->poll_events();
      if (ending()) return membridge::ok();
      if (holding) MEMBRIDGE_TRY(hold_last_image());
      std::this_thread::sleep_for(std::min<clock_type::duration>(until - now, 10ms));
    }
    return membridge::ok();
  }

  /// Connects as the role asked for, retrying every 100 ms until `deadline`, then waits for the
  /// buffer and semaphores. nullptr when the run is ending (Ctrl+C, window closed).
  /// Errors: timeout at the deadline (the last attempt's error in the context); invalid_argument for
  /// a socket path that cannot be formed (XDG_RUNTIME_DIR unset); a producer that publishes no
  /// particle buffer.
  result<std::unique_ptr<attachment>> connect_until(clock_type::time_point deadline, bool holding) {
    const auto role = o_.observer ? membridge::ipc::subscriber_role::observer : membridge::ipc::subscriber_role::consumer;
    std::string last;
    bool told = false;
    for (;;) {
      if (ending()) return std::unique_ptr<attachment>();
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
      auto connected = attachment::connect(o_.name, role, std::clamp(left, min_connect_timeout, max_connect_timeout));
      if (connected) {
        std::unique_ptr<attachment> a = std::move(*connected);
        MEMBRIDGE_TRY_ASSIGN(const bool ready, a->wait_for_resources(std::max(deadline, clock_type::now() + resources_grace)));
        if (ready) return a;
        last = "the producer went away while starting: " + a->disconnect_reason();
      } else {
        if (connected.error().code() == errc::invalid_argument) return std::move(connected).error();
        last = connected.error().message();
      }
      if (clock_type::now() >= deadline)
        return error(errc::timeout, "membridge_ipc_viewer",
                     "no producer at " + path_ + " within " + std::to_string(o_.reconnect_ms) + " ms (last attempt: " +
                         last + ")");
      if (!told && !holding) {
        out_ << "waiting for a producer at " << path_ << " (up to " << o_.reconnect_ms << " ms)\n" << std::flush;
        told = true;
      }
      MEMBRIDGE_TRY(idle_for(retry_period, holding));
    }
  }

  /// Makes sure the GPU is done with every frame submitted so far. A producer that died may never
  /// signal the frames it announced: after 1 s the viewer signals them on `produced` itself.
  result<void> settle() {
    if (!renderer_.valid() || submits_ == 0) return membridge::ok();
    auto idle = renderer_.wait_idle(settle_ns);
    if (idle) return membridge::ok();
    if (idle.error().code() != errc::timeout) return std::move(idle).error();
    if (att_ && att_->timeline().valid() && att_->last_drawn()) {
      const auto& produced = att_->timeline().produced();
      const std::uint64_t target = membridge::sync::frame_timeline::produced_value(*att_->last_drawn());
      if (auto value = produced.value(); value && *value < target) {
        out_ << "the producer never finished frame " << *att_->last_drawn()
             << ": releasing the viewer's wait for it from the host\n";
        (void)produced.signal(target);
      }
    }
    return renderer_.wait_idle().with_context("waiting for the frames submitted before the producer went away");
  }

  /// The producer went away: settle, then reconnect for --reconnect-ms. True when attached anew.
  result<bool> reconnect() {
    out_ << "producer disconnected"
         << (att_->last_drawn() ? " after frame " + std::to_string(*att_->last_drawn()) : std::string())
         << ": " << att_->disconnect_reason() << '\n'
         << std::flush;
    ++disconnects_;
    att_->abandon_growth();
    MEMBRIDGE_TRY(settle());
    if (o_.reconnect_ms == 0) {
      out_ << "not reconnecting (--reconnect-ms 0)\n";
      return false;
    }
    out_ << "reconnecting to " << path_ << " for up to " << o_.reconnect_ms << " ms"
         << (window_ ? "; the window keeps the last image" : "") << '\n'
         << std::flush;
    auto next = connect_until(clock_type::now() + std::chrono::milliseconds(o_.reconnect_ms), true);
    if (!next) {
      if (next.error().code() != errc::timeout) return std::move(next).error();
      out_ << "no producer came back: " << next.error().context() << '\n';
      return false;
    }
    if (!*next) return false;  // ending
    // A new producer: new imports. The old connection's memory goes once the GPU is done with it
    // (the last image may have been drawn again from it meanwhile).
    MEMBRIDGE_TRY(renderer_.wait_idle());
    renderer_.forget_particle_buffers();
    last_target_.reset();
    skipped_before_ += att_->skipped();
    att_.reset();
    MEMBRIDGE_TRY((*next)->import(context_));
    att_ = std::move(*next);
    on_attached();
    return true;
  }

  // -------------------------------------------------------------------------------- drawing ---

  /// Records and submits `t`; `synchronised`: wait for produced (and signal consumed as consumer).
  result<void> submit(const draw_target& t, bool synchronised) {
    const auto slot = static_cast<std::uint32_t>(submits_ % renderer_.frame_slots());
    const float aspect = static_cast<float>(renderer_.width()) / static_cast<float>(renderer_.height());
    const std::string what = "producer frame " + std::to_string(t.frame);
    if (input_) input_->update(camera_);
    if (!camera_.moved) camera_.yaw_degrees = glm::degrees(camera_yaw(t.frame));  // a drag starts from here
    const glm::mat4 view_proj =
        camera_.moved ? orbit_view_proj(aspect, glm::radians(camera_.yaw_degrees), glm::radians(camera_.pitch_degrees),
                                        camera_.distance)
                      : orbit_view_proj(aspect, camera_yaw(t.frame), 0.6f, 6.5f);
    MEMBRIDGE_TRY(renderer_.record(slot, t.buffer, t.offset, t.count, view_proj).with_context("recording " + what));
    std::optional<apps::present_job> job;
    if (window_) {
      if (overlay_.due())
        window_->set_overlay({apps::overlay_frame_line(stats_),
                              std::to_string(t.count) + " particles  " + apps::byte_text(std::uint64_t{t.count} * 32) +
                                  "  producer frame " + std::to_string(t.frame)});
      MEMBRIDGE_TRY_ASSIGN(job, window_->begin_frame(slot, renderer_.colour_image(slot), renderer_.width(),
                                                     renderer_.height())
                                    .with_context(what + ": window"));
    }
    std::vector<semaphore_wait> waits;
    std::vector<semaphore_signal> signals;
    if (synchronised) {
      const auto wait = att_->timeline().wait_info(t.frame);
      waits.push_back({wait.semaphore, wait.value, renderer_.particle_stages()});
      if (att_->consumer()) {
        const auto signal = att_->timeline().signal_info(t.frame);
        signals.push_back({signal.semaphore, signal.value});
      }
    }
    MEMBRIDGE_TRY(submit_with_window(renderer_, slot, std::move(waits), std::move(signals), job, what));
    ++submits_;
    if (job) MEMBRIDGE_TRY(window_->present(*job).with_context("presenting " + what));
    return membridge::ok();
  }

  result<void> draw(const draw_target& t) {
    MEMBRIDGE_TRY(submit(t, true));
    att_->drew(t.frame);
    ++drawn_;
    last_target_ = t;
    last_frame_ = t.frame;
    const auto now = clock_type::now();
    if (!attaches_.back().first_frame_ms) {
      const double ms = ms_between(attached_at_, now);
      attaches_.back().first_frame_ms = ms;
      out_ << "first frame: producer frame " << t.frame << ", submitted " << ms_text(ms) << " after the imports\n"
           << std::flush;
    }
    stats_.add(last_draw_, now);
    last_draw_ = now;
    progress_->tick(stats_, now);
    return membridge::ok();
  }

  /// Windowed, producer gone: draws the last frame again (no semaphores: its memory stays valid, the
  /// imports hold it) so the window keeps showing it through resizes.
  result<void> hold_last_image() {
    if (!window_ || !last_target_ || !att_ || att_->growth_busy()) return membridge::ok();
    const auto now = clock_type::now();
    if (last_hold_ && now - *last_hold_ < hold_period) return membridge::ok();
    last_hold_ = now;
    return submit(*last_target_, false).with_context("drawing the last image again");
  }

  result<void> follow_growth() {
    MEMBRIDGE_TRY_ASSIGN(const std::optional<growth_report> report, att_->update_growth());
    if (!report) return membridge::ok();
    growths_.push_back(*report);
    out_ << "followed growth to " << report->count << " particles (generation " << report->generation << ", "
         << membridge::format_bytes(report->bytes) << " bound in " << report->chunks
         << (report->chunks == 1 ? " chunk" : " chunks") << "): announced -> bound " << ms_text(report->announced_ms)
         << " (import " << ms_text(report->import_ms) << ")\n"
         << std::flush;
    return membridge::ok();
  }

  result<void> loop() {
    for (;;) {
      if (window_) window_->poll_events();
      if (ending() || frames_reached()) return membridge::ok();
      if (!att_->disconnected()) {
        MEMBRIDGE_TRY(att_->pump(0ms));
        MEMBRIDGE_TRY(follow_growth());
        MEMBRIDGE_TRY_ASSIGN(const std::optional<draw_target> target, att_->next_frame());
        if (target) {
          MEMBRIDGE_TRY(draw(*target));
          continue;
        }
        if (!att_->disconnected()) {
          MEMBRIDGE_TRY(att_->pump(att_->growth_busy() ? growth_wait_slice : wait_slice));
          continue;
        }
      }
      MEMBRIDGE_TRY_ASSIGN(const bool reattached, reconnect());
      if (reattached) continue;
      if (ending()) return membridge::ok();
      gave_up_ = true;
      if (!window_) return membridge::ok();
      out_ << "keeping the last image until the window is closed\n" << std::flush;
      while (!ending()) MEMBRIDGE_TRY(idle_for(100ms, true));
      return membridge::ok();
    }
  }

  // --------------------------------------------------------------------------------- the end ---

  [[nodiscard]] std::string statistics_line() const {
    const std::size_t warm_up = stats_.count() > warm_up_frames ? warm_up_frames : 0;
    const frame_summary s = stats_.summary(warm_up);
    char line[256];
    (void)std::snprintf(line, sizeof line, "frames %zu  median %.2f ms  p99 %.2f ms  %.1f FPS", s.count, s.median_ms,
                        s.p99_ms, s.fps);
    std::string text = line;
    if (warm_up > 0) text += "  (first " + std::to_string(warm_up) + " frames not counted)";
    return text;
  }

  void print_summary() {
    if (interrupted_) out_ << "interrupted after " << drawn_ << " frames\n";
    if (window_) {
      out_ << "window: ";
      if (window_closed_) out_ << "closed by the user after " << drawn_ << " frames; ";
      out_ << window_->describe() << '\n';
    }
    out_ << statistics_line() << '\n';
    std::uint64_t skipped = skipped_before_;
    if (att_) skipped += att_->skipped();
    out_ << "producer frames: drew " << drawn_ << " over " << attaches_.size()
         << (attaches_.size() == 1 ? " connection" : " connections") << ", skipped " << skipped
         << " (the viewer draws the newest announced frame)";
    if (disconnects_ > 0) out_ << ", " << disconnects_ << (disconnects_ == 1 ? " disconnection" : " disconnections");
    out_ << '\n';
    for (std::size_t i = 0; i < attaches_.size(); ++i) {
      const auto& a = attaches_[i];
      out_ << "attach " << i + 1 << ": connect + state " << ms_text(a.times.connect_ms + a.times.resources_ms)
           << ", Vulkan import " << ms_text(a.times.vulkan_import_ms) << ", timeline import "
           << ms_text(a.times.timeline_import_ms) << ", first frame "
           << (a.first_frame_ms ? ms_text(*a.first_frame_ms) + " after the imports" : std::string("none")) << '\n';
    }
    out_ << "growth: " << growths_.size() << " followed";
    for (std::size_t i = 0; i < growths_.size(); ++i)
      out_ << (i == 0 ? "; announced -> bound " : ", ") << ms_text(growths_[i].announced_ms) << " ("
           << growths_[i].count << " particles)";
    out_ << '\n' << std::flush;
  }

  result<void> write_png() {
    if (o_.out.empty()) return membridge::ok();
    if (drawn_ == 0) {
      out_ << "no frame was drawn: " << o_.out << " not written\n";
      return membridge::ok();
    }
    std::vector<std::uint8_t> rgba;
    MEMBRIDGE_TRY(renderer_.read_back(rgba).with_context("reading back the last frame"));
    MEMBRIDGE_TRY(apps::write_png(o_.out, rgba, renderer_.width(), renderer_.height())
                      .with_context("writing " + o_.out));
    out_ << "wrote " << o_.out << " (" << renderer_.width() << "x" << renderer_.height() << ", producer frame "
         << last_frame_ << ")\n"
         << std::flush;
    return membridge::ok();
  }

  /// Settles the GPU, prints the statistics, writes the PNG, releases everything but the context and
  /// checks the validation count. The loop's error comes first.
  result<void> finish(const result<void>& looped) {
    if (att_) att_->abandon_growth();
    const result<void> settled = settle();
    result<void> written = membridge::ok();
    if (looped && settled) {
      print_summary();
      written = write_png();
      if (written && window_ && !o_.screenshot.empty() && drawn_ > 0) {
        written = window_->save_screenshot(o_.screenshot).with_context("writing " + o_.screenshot);
        if (written) out_ << "wrote " << o_.screenshot << " (the window's last image, overlay included)\n";
      }
    }
    att_.reset();
    window_.reset();
    renderer_ = particle_renderer();
    std::optional<error> failure;
    if (!looped)
      failure = looped.error();
    else if (!settled)
      failure = settled.error();
    else if (!written)
      failure = written.error();
    if (o_.validation) {
      const std::uint64_t count = apps::validation_messages(context_, env_.windows);
      out_ << "validation: " << count << (count == 1 ? " message" : " messages") << '\n' << std::flush;
      if (count > 0 && !failure)
        failure = error(errc::internal, "Vulkan validation",
                        std::to_string(count) + " validation message(s) reported (printed above)");
    }
    if (failure) return *std::move(failure);
    if (gave_up_ && !window_closed_ && !interrupted_ && o_.frames > 0 && drawn_ < o_.frames)
      return error(errc::timeout, "membridge_ipc_viewer",
                   "drew " + std::to_string(drawn_) + " of " + std::to_string(o_.frames) +
                       " frames: the producer went away and none came back within " +
                       std::to_string(o_.reconnect_ms) + " ms");
    return membridge::ok();
  }

  struct attach_record {
    attach_times times;
    std::optional<double> first_frame_ms;
  };

  run_environment& env_;
  const viewer_options& o_;
  std::ostream& out_;
  std::string path_;
  // Destroyed in reverse: the connection (imports), the window, the renderer, then the context.
  membridge::vulkan::device_context context_;
  particle_renderer renderer_;
  std::optional<apps::window> window_;
  std::unique_ptr<attachment> att_;
  frame_stats stats_{4096};
  apps::overlay_clock overlay_;
  apps::orbit camera_{0.0f, glm::degrees(0.6f), 6.5f, false};  // the mouse takes over from the automatic orbit
  std::optional<apps::window_input> input_;
  std::optional<progress_printer> progress_;
  clock_type::time_point attached_at_{};
  clock_type::time_point last_draw_{};
  std::optional<draw_target> last_target_;
  std::optional<clock_type::time_point> last_hold_;
  std::uint64_t submits_ = 0;
  std::uint64_t drawn_ = 0;
  std::uint64_t last_frame_ = 0;
  std::uint64_t skipped_before_ = 0;
  std::uint64_t disconnects_ = 0;
  std::vector<attach_record> attaches_;
  std::vector<growth_report> growths_;
  bool interrupted_ = false;
  bool window_closed_ = false;
  bool gave_up_ = false;
};

}  // namespace

void request_stop() noexcept { stop_flag.store(true); }

result<void> run(run_environment& env) {
  viewer v(env);
  return v.run();
}

}  // namespace particles::ipc_viewer
