// membridge-view's connection to a publisher: buffers by layout, imports, growth, the frame timeline.
#include "session.hpp"

#include "frame_stats.hpp"  // samples/common: ms_since

#include <membridge/core/units.hpp>
#include <membridge/sync/ipc_buffers.hpp>

#include <algorithm>
#include <cstdio>
#include <limits>

namespace membridge_view {

using membridge::errc;
using membridge::error;
using membridge::result;
using namespace std::chrono_literals;
using apps::ms_since;

namespace {

/// Buffers drawn at most (the renderer's descriptor sets).
constexpr std::uint32_t max_drawables = 64;
/// Events handled per pump() at most, so a fast publisher cannot keep the render thread in it.
constexpr int max_events_per_pump = 4096;

}  // namespace

result<std::unique_ptr<session>> session::connect(const view_options& options, std::ostream& out) {
  std::unique_ptr<session> s(new session());
  s->out_ = &out;
  membridge::ipc::subscriber_options so;
  so.name = options.name;
  so.path = options.path;
  so.role = options.observer ? membridge::ipc::subscriber_role::observer : membridge::ipc::subscriber_role::consumer;
  so.client_name = "membridge-view";
  so.timeout = std::chrono::milliseconds(options.timeout_ms);
  const auto start = clock_type::now();
  MEMBRIDGE_TRY_ASSIGN(s->subscriber_, membridge::ipc::subscriber::connect(so));
  s->connect_ms_ = ms_since(start);
  s->join_frame_ = s->subscriber_.frame_at_join();
  return s;
}

session::~session() {
  timeline_ = {};
  buffers_.clear();
}

bool session::consumer() const noexcept { return subscriber_.role() == membridge::ipc::subscriber_role::consumer; }

std::size_t session::drawable_count() const noexcept {
  return static_cast<std::size_t>(std::count_if(buffers_.begin(), buffers_.end(), [](const auto& d) {
    return d->problem.empty() && d->view.valid();
  }));
}

result<void> session::pump(std::chrono::milliseconds wait) {
  using kind = membridge::ipc::subscriber_event::kind;
  for (int handled = 0; !disconnected_ && handled < max_events_per_pump; ++handled) {
    auto e = subscriber_.next_event(handled == 0 ? wait : 0ms);
    if (!e) {
      if (e.error().code() == errc::timeout) return membridge::ok();
      disconnected_ = true;  // a malformed message closed the connection
      disconnect_reason_ = e.error().message();
      *out_ << "membridge-view: the connection closed: " << disconnect_reason_ << '\n' << std::flush;
      return membridge::ok();
    }
    if (e->what == kind::frame) {
      latest_ = e->frame;
      ++frames_received_;
    } else if (e->what == kind::disconnected) {
      disconnected_ = true;
      disconnect_reason_ = e->reason.empty() ? "the publisher went away" : e->reason;
      *out_ << "membridge-view: publisher disconnected: " << disconnect_reason_ << '\n' << std::flush;
    }
  }
  return membridge::ok();
}

result<std::optional<membridge::device_uuid>> session::wait_for_drawable(clock_type::time_point deadline) {
  for (;;) {
    std::string seen;
    for (const std::string& name : subscriber_.buffer_names()) {
      const auto* b = subscriber_.buffer(name);
      auto parsed = membridge::ipc::parse_layout(b->description.format);
      if (parsed) return std::optional<membridge::device_uuid>(b->description.device);
      seen += (seen.empty() ? "'" : "; '") + name + "': " + std::string(parsed.error().context());
    }
    if (disconnected_) return std::optional<membridge::device_uuid>();
    if (clock_type::now() >= deadline)
      return error(errc::timeout, "membridge-view",
                   "the publisher published no buffer with a layout membridge-view can draw" +
                       (seen.empty() ? std::string(" (no buffers at all)") : " (" + seen + ")"));
    MEMBRIDGE_TRY(pump(20ms));
  }
}

void session::report(drawable& d, std::string problem) {
  d.problem = std::move(problem);
  *out_ << "membridge-view: cannot draw buffer '" << d.name << "': " << d.problem << '\n' << std::flush;
}

std::optional<std::string> session::check(const drawable& d, const membridge::ipc::buffer_description& desc,
                                          const membridge::vulkan::device_context& context) const {
  const membridge::ipc::layout& l = d.layout;
  if (l.stride % 4 != 0)
    return "stride " + std::to_string(l.stride) + " is not a multiple of 4 (the shaders read 4-byte words)";
  if (l.kind == membridge::ipc::layout_kind::heightfield && (l.width < 2 || l.height < 2))
    return "a heightfield needs at least 2x2 heights, it has " + std::to_string(l.width) + "x" + std::to_string(l.height);
  if (desc.device != context.uuid())
    return "it lives on GPU " + desc.device.to_string() + ", this viewer's Vulkan device (" + context.name() + ") is GPU " +
           context.uuid().to_string();
  auto n = membridge::ipc::elements_in_slot(l, desc.size / slots_);
  if (!n)
    return std::string(n.error().context()) + " (" + std::to_string(desc.size) + " bytes in " + std::to_string(slots_) +
           (slots_ == 1 ? " slot)" : " slots)");
  const std::uint64_t bytes = l.kind == membridge::ipc::layout_kind::points ? *n * l.stride : l.min_slot_bytes();
  if (bytes > context.properties().limits.maxStorageBufferRange)
    return "a slot of " + membridge::format_bytes(bytes) + " is more than this device binds as one storage buffer (" +
           membridge::format_bytes(context.properties().limits.maxStorageBufferRange) + ")";
  if (d.id >= max_drawables) return "more than " + std::to_string(max_drawables) + " buffers";
  return std::nullopt;
}

void session::import_timeline(const membridge::vulkan::device_context& context) {
  timeline_tried_ = true;
  const auto* produced = subscriber_.semaphore(produced_name);
  if (produced == nullptr) return;  // no timeline: every buffer is one slot, drawn as it is
  const auto* consumed = subscriber_.semaphore(consumed_name);
  const std::uint64_t parameter = produced->description.parameter;
  if (parameter == 0 || parameter > 64) {
    *out_ << "membridge-view: '" << produced_name << "' gives " << parameter
          << " slots (expected 1 to 64): drawing the buffers without the frame timeline\n";
    return;
  }
  slots_ = static_cast<std::uint32_t>(parameter);
  const membridge::os::borrowed_fd consumed_fd =
      consumed != nullptr && consumer() ? membridge::os::borrowed_fd(consumed->fd) : membridge::os::borrowed_fd();
  auto imported = membridge::sync::frame_timeline::import(context, produced->fd, consumed_fd, {.slots = slots_});
  if (!imported) {
    *out_ << "membridge-view: cannot follow the frame timeline (" << imported.error().message()
          << "): drawing slot 0 of each buffer without synchronisation\n";
    return;
  }
  timeline_ = std::move(*imported);
}

void session::import_new(const membridge::vulkan::device_context& context, const view_options&) {
  if (!timeline_tried_) import_timeline(context);
  for (const std::string& name : subscriber_.buffer_names()) {
    if (std::any_of(buffers_.begin(), buffers_.end(), [&](const auto& d) { return d->name == name; })) continue;
    const auto* b = subscriber_.buffer(name);
    auto d = std::make_unique<drawable>();
    d->name = name;
    d->id = static_cast<std::uint32_t>(buffers_.size());
    drawable& ref = *d;
    buffers_.push_back(std::move(d));
    auto parsed = membridge::ipc::parse_layout(b->description.format);
    if (!parsed) {
      report(ref, std::string(parsed.error().context()));
      continue;
    }
    ref.layout = *parsed;
    if (auto problem = check(ref, b->description, context)) {
      report(ref, *problem);
      continue;
    }
    const auto start = clock_type::now();
    auto view = membridge::sync::import_into_vulkan(context, *b);
    if (!view) {
      report(ref, "importing it into Vulkan failed: " + view.error().message());
      continue;
    }
    import_ms_ += ms_since(start);
    ref.view = std::move(*view);
    ref.generation = b->description.generation;
  }
}

std::vector<std::uint32_t> session::follow_growth() {
  std::vector<std::uint32_t> changed;
  for (auto& d : buffers_) {
    if (!d->problem.empty() || !d->view.valid()) continue;
    const auto* b = subscriber_.buffer(d->name);
    if (b == nullptr || b->description.generation == d->generation) continue;
    const auto start = clock_type::now();
    auto followed = membridge::sync::follow_growth(d->view, *b);
    if (!followed) {
      report(*d, "following its growth failed: " + followed.error().message());
      d->view = {};
      changed.push_back(d->id);
      continue;
    }
    d->generation = b->description.generation;
    changed.push_back(d->id);
    char ms[32];
    (void)std::snprintf(ms, sizeof ms, "%.2f ms", ms_since(start));
    *out_ << "membridge-view: followed growth of '" << d->name << "' to " << membridge::format_bytes(b->description.size)
          << " (generation " << d->generation << ", " << d->view.chunk_count() << " chunks, import " << ms << ")\n"
          << std::flush;
  }
  return changed;
}

std::optional<std::uint64_t> session::next_frame() const {
  if (!latest_) return std::nullopt;
  if (last_drawn_ && *latest_ <= *last_drawn_) return std::nullopt;
  if (join_frame_ && *latest_ <= *join_frame_) return std::nullopt;  // counted as consumed by the publisher already
  if (!consumer() || !timeline_.valid()) return latest_;
  // A consumer never waits for a frame whose production waits for this consumer: the producer writes
  // frame f after consumed reached f - S + 1, and this consumer has signalled consumed for its last
  // drawn frame c (c + 1; at the join, the join frame), so frames up to c + S come without it. A
  // producer announcing frames further ahead (one that does not throttle on the host, such as a
  // Python loop) would otherwise deadlock with a viewer that waits for the newest one.
  const std::optional<std::uint64_t> consumed = last_drawn_ ? last_drawn_ : join_frame_;
  const std::uint64_t reachable = consumed ? *consumed + slots_ : slots_ - 1;
  return std::min(*latest_, reachable);
}

std::vector<draw_item> session::items(std::optional<std::uint64_t> frame) const {
  std::vector<draw_item> out;
  // Without a frame (no timeline, or the publisher gone) the slot of the last drawn frame.
  const std::uint64_t f = frame ? *frame : last_drawn_.value_or(0);
  for (const auto& d : buffers_) {
    if (!d->problem.empty() || !d->view.valid()) continue;
    const auto* b = subscriber_.buffer(d->name);
    if (b == nullptr) continue;
    const std::uint64_t slot_bytes = b->description.size / slots_;
    auto n = membridge::ipc::elements_in_slot(d->layout, slot_bytes);
    if (!n || *n == 0) continue;
    draw_item it;
    it.id = d->id;
    it.layout = d->layout;
    it.segments = d->view.segments();
    it.offset = (f % slots_) * slot_bytes;
    it.count = *n;
    it.bytes = d->layout.kind == membridge::ipc::layout_kind::points ? *n * d->layout.stride : d->layout.min_slot_bytes();
    if (it.offset + it.bytes > d->view.size()) continue;  // a growth not followed yet
    out.push_back(it);
  }
  return out;
}

void session::drew(std::optional<std::uint64_t> frame) noexcept {
  if (frame) last_drawn_ = frame;
}

std::string session::describe() const {
  std::string text = "attached to '" + (subscriber_.publisher_name().empty() ? std::string("?") : subscriber_.publisher_name()) +
                     "' (pid " + std::to_string(subscriber_.publisher().pid) + ") as " +
                     (consumer() ? "consumer" : "observer");
  if (timeline_.valid())
    text += ", frame timeline with " + std::to_string(slots_) + " slots" +
            (join_frame_ ? ", joined after frame " + std::to_string(*join_frame_) : std::string());
  else if (slots_ > 1)
    text += ", frame timeline of " + std::to_string(slots_) + " slots not followed (slot 0 drawn as it is)";
  else
    text += ", no frame timeline (buffers drawn as they are)";
  for (const auto& d : buffers_) {
    const auto* b = subscriber_.buffer(d->name);
    text += "\n  '" + d->name + "' " + (b != nullptr ? b->description.format.name : std::string("?"));
    if (b != nullptr) text += ", " + membridge::format_bytes(b->description.size);
    text += d->problem.empty() ? ": drawn" : ": not drawn (" + d->problem + ")";
  }
  return text;
}

}  // namespace membridge_view
