// One connection of membridge_ipc_viewer to a producer: subscriber, imports, frame choice, growth.
#include "attachment.hpp"

#include "frame_stats.hpp"  // samples/common: ms_since
#include "particle_layout.hpp"

#include <membridge/core/units.hpp>
#include <membridge/os/borrowed_fd.hpp>
#include <membridge/sync/ipc_buffers.hpp>

#include <cstdio>
#include <limits>
#include <system_error>
#include <utility>

namespace particles::ipc_viewer {

using apps::ms_since;
using membridge::errc;
using membridge::error;
using membridge::result;
using namespace std::chrono_literals;

namespace {

/// Events handled per pump() at most, so a fast producer cannot keep the render thread in the pump.
constexpr int max_events_per_pump = 4096;

}  // namespace

// ------------------------------------------------------------------------------- growth_worker ---

growth_worker::~growth_worker() { (void)wait(); }

result<void> growth_worker::start(membridge::vulkan::chunked_buffer& view,
                                  const membridge::ipc::received_buffer& buffer) {
  if (busy()) return error(errc::invalid_argument, "growth_worker::start", "a growth import is already running");
  auto snapshot = std::make_shared<membridge::ipc::received_buffer>();
  snapshot->description = buffer.description;
  snapshot->fds.reserve(buffer.fds.size());
  for (const membridge::os::unique_fd& fd : buffer.fds) {
    MEMBRIDGE_TRY_ASSIGN(auto copy, membridge::os::borrowed_fd(fd).duplicate().with_context("copying a chunk's fd for the growth import"));
    snapshot->fds.push_back(std::move(copy));
  }
  done_.store(false);
  outcome_ = {};
  outcome_.generation = snapshot->description.generation;
  try {
    thread_ = std::thread([this, &view, snapshot] {
      const auto start = clock_type::now();
      outcome_.changed.emplace(membridge::sync::follow_growth(view, *snapshot));
      outcome_.import_ms = ms_since(start);
      done_.store(true);
    });
  } catch (const std::system_error& e) {
    return error(errc::os_error, "std::thread", std::string("starting the growth import thread: ") + e.what());
  }
  return membridge::ok();
}

growth_worker::outcome growth_worker::wait() {
  if (!thread_.joinable()) return {};
  thread_.join();
  return std::exchange(outcome_, {});
}

// --------------------------------------------------------------------------------- attachment ---

result<std::unique_ptr<attachment>> attachment::connect(const std::string& name, membridge::ipc::subscriber_role role,
                                                        std::chrono::milliseconds timeout) {
  std::unique_ptr<attachment> a(new attachment());
  membridge::ipc::subscriber_options so;
  so.name = name;
  so.role = role;
  so.client_name = "membridge_ipc_viewer";
  so.timeout = timeout;
  a->connect_start_ = clock_type::now();
  MEMBRIDGE_TRY_ASSIGN(a->subscriber_, membridge::ipc::subscriber::connect(so));
  a->times_.connect_ms = ms_since(a->connect_start_);
  a->join_frame_ = a->subscriber_.frame_at_join();
  return a;
}

attachment::~attachment() { (void)worker_.wait(); }

bool attachment::consumer() const noexcept { return subscriber_.role() == membridge::ipc::subscriber_role::consumer; }

const membridge::ipc::received_buffer* attachment::buffer() const noexcept {
  return subscriber_.buffer(ipc_layout::buffer_name);
}

std::optional<std::uint64_t> attachment::current_count() const noexcept {
  const auto* b = buffer();
  if (b == nullptr || slots_ == 0) return std::nullopt;
  return ipc_layout::count_for(b->description.size, slots_);
}

result<bool> attachment::wait_for_resources(clock_type::time_point deadline) {
  const auto start = clock_type::now();
  for (;;) {
    const auto* produced = subscriber_.semaphore(ipc_layout::produced_name);
    // Only a consumer receives a `consumed` semaphore (its own); an observer never signals one.
    const auto* consumed = subscriber_.semaphore(ipc_layout::consumed_name);
    if (buffer() != nullptr && produced != nullptr && (consumed != nullptr || !consumer())) {
      slots_ = static_cast<std::uint32_t>(std::min<std::uint64_t>(produced->description.parameter,
                                                                  std::numeric_limits<std::uint32_t>::max()));
      times_.resources_ms = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
      return true;
    }
    if (disconnected_) return false;
    const auto now = clock_type::now();
    if (now >= deadline)
      return error(errc::timeout, "membridge_ipc_viewer",
                   "the producer published no '" + std::string(ipc_layout::buffer_name) + "' buffer with '" +
                       std::string(ipc_layout::produced_name) + "'" +
                       (consumer() ? " and its own '" + std::string(ipc_layout::consumed_name) + "'" : std::string()) +
                       " semaphores in time");
    MEMBRIDGE_TRY(pump(std::min<std::chrono::milliseconds>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) + 1ms, 50ms)));
  }
}

result<void> attachment::import(const membridge::vulkan::device_context& context) {
  constexpr const char* call = "membridge_ipc_viewer";
  const auto* b = buffer();
  const auto* produced = subscriber_.semaphore(ipc_layout::produced_name);
  const auto* consumed = subscriber_.semaphore(ipc_layout::consumed_name);
  if (b == nullptr || produced == nullptr || (consumed == nullptr && consumer()))
    return error(errc::invalid_argument, call, "import() before wait_for_resources()");
  const membridge::ipc::buffer_description& d = b->description;
  if (d.format.name != ipc_layout::format_name || d.format.stride != ipc_layout::stride)
    return error(errc::unsupported, call,
                 "buffer '" + d.name + "' has format '" + d.format.name + "' (stride " + std::to_string(d.format.stride) +
                     "); this viewer draws " + std::string(ipc_layout::format_name) + " (stride 32)");
  if (slots_ == 0 || slots_ > 64 ||
      (consumed != nullptr && consumed->description.parameter != produced->description.parameter))
    return error(errc::unsupported, call,
                 "the frame semaphores give " + std::to_string(produced->description.parameter) + " and " +
                     (consumed != nullptr ? std::to_string(consumed->description.parameter) : std::string("no")) +
                     " slots; expected one count from 1 to 64");
  const auto count = ipc_layout::count_for(d.size, slots_);
  if (!count)
    return error(errc::unsupported, call,
                 "buffer '" + d.name + "' holds " + std::to_string(d.size) + " bytes, not " + std::to_string(slots_) +
                     " slots of 32-byte particles");
  if (d.device != context.uuid())
    return error(errc::invalid_argument, call,
                 "the producer's buffer lives on GPU " + d.device.to_string() + " but this viewer's Vulkan device (" +
                     context.name() + ") is GPU " + context.uuid().to_string() +
                     ": Vulkan imports memory only on its own GPU (membridge_ipc_producer --render-device chooses "
                     "the GPU the buffer lives on)");

  auto t = clock_type::now();
  MEMBRIDGE_TRY_ASSIGN(view_, membridge::sync::import_into_vulkan(context, *b).with_context(
                                  "importing the particle buffer (" + membridge::format_bytes(d.size) + ") into Vulkan"));
  times_.vulkan_import_ms = ms_since(t);
  snapshot_view();
  view_generation_ = d.generation;
  imported_count_ = *count;
  growth_announced_.reset();  // a growth announced while connecting is in this import already

  t = clock_type::now();
  // A consumer's `consumed` is its own (it starts at the frame it joined at); an observer has none.
  const membridge::os::borrowed_fd consumed_fd = consumed != nullptr ? membridge::os::borrowed_fd(consumed->fd)
                                                                     : membridge::os::borrowed_fd();
  MEMBRIDGE_TRY_ASSIGN(timeline_, membridge::sync::frame_timeline::import(context, produced->fd, consumed_fd,
                                                                          {.slots = slots_})
                                      .with_context("importing the frame semaphores"));
  times_.timeline_import_ms = ms_since(t);
  return membridge::ok();
}

void attachment::snapshot_view() {
  segments_.assign(view_.segments().begin(), view_.segments().end());
  bound_bytes_ = view_.size();
}

void attachment::handle(const membridge::ipc::subscriber_event& e) {
  using kind = membridge::ipc::subscriber_event::kind;
  switch (e.what) {
    case kind::frame:
      // The layout in effect: the description as of this event (growth is published before the first
      // frame that uses it, and the subscriber applies messages in order).
      if (const auto count = current_count()) latest_ = announced{e.frame, *count};
      break;
    case kind::buffer_changed:
      if (e.name == ipc_layout::buffer_name && !growth_announced_) growth_announced_ = clock_type::now();
      break;
    case kind::disconnected:
      disconnected_ = true;
      disconnect_reason_ = e.reason.empty() ? "the producer went away" : e.reason;
      break;
    case kind::buffer_added:
    case kind::semaphore_added:
      break;
  }
}

result<void> attachment::pump(std::chrono::milliseconds wait) {
  for (int handled = 0; !disconnected_ && handled < max_events_per_pump; ++handled) {
    auto e = subscriber_.next_event(handled == 0 ? wait : 0ms);
    if (!e) {
      if (e.error().code() == errc::timeout) return membridge::ok();
      // A malformed message closed the connection (no `disconnected` event follows).
      disconnected_ = true;
      disconnect_reason_ = e.error().message();
      return membridge::ok();
    }
    handle(*e);
  }
  return membridge::ok();
}

result<std::optional<growth_report>> attachment::update_growth() {
  std::optional<growth_report> report;
  if (worker_.busy()) {
    if (!worker_.finished()) return report;
    growth_worker::outcome done = worker_.wait();
    if (done.changed && !*done.changed)
      return std::move(*done.changed).error().add_context("following the buffer's growth in Vulkan");
    snapshot_view();
    view_generation_ = done.generation;
    const auto* b = buffer();
    const bool caught_up = b == nullptr || b->description.generation <= view_generation_;
    if (caught_up && growth_announced_) {
      growth_report r;
      r.generation = view_generation_;
      r.count = current_count().value_or(0);
      r.bytes = bound_bytes_;
      r.chunks = segments_.size() == 1 ? view_.chunk_count() : segments_.size();
      r.import_ms = done.import_ms;
      r.announced_ms = ms_since(*growth_announced_);
      growth_announced_.reset();
      report = r;
    }
  }
  if (const auto* b = buffer(); b != nullptr && view_.valid() && b->description.generation > view_generation_)
    MEMBRIDGE_TRY(worker_.start(view_, *b));
  return report;
}

result<std::optional<draw_target>> attachment::next_frame() const {
  std::optional<draw_target> none;
  if (!latest_ || !timeline_.valid() || worker_.busy()) return none;
  const std::uint64_t frame = latest_->frame;
  if (last_drawn_ && frame <= *last_drawn_) return none;
  if (join_frame_ && frame <= *join_frame_) return none;  // counted as consumed by the producer already
  const std::uint64_t count = latest_->count;
  if (count == 0 || count > std::numeric_limits<std::uint32_t>::max())
    return error(errc::invalid_argument, "membridge_ipc_viewer",
                 "frame " + std::to_string(frame) + " has " + std::to_string(count) + " particles");
  const std::uint64_t offset = ipc_layout::frame_offset(frame, count, slots_);
  const std::uint64_t end = offset + count * ipc_layout::stride;
  if (end > bound_bytes_) return none;  // a growth not bound yet: the import is running
  for (const auto& s : segments_) {
    if (offset >= s.offset && end <= s.offset + s.size)
      return std::optional<draw_target>(draw_target{frame, static_cast<std::uint32_t>(count), s.buffer,
                                                    static_cast<VkDeviceSize>(s.buffer_offset + (offset - s.offset))});
  }
  return error(errc::unsupported, "membridge_ipc_viewer",
               "frame " + std::to_string(frame) + " spans two of the " + std::to_string(segments_.size()) +
                   " VkBuffers of the per-chunk view (no sparse binding on this device); the renderer draws one "
                   "frame from one VkBuffer");
}

void attachment::drew(std::uint64_t frame) {
  if (!first_drawn_) first_drawn_ = frame;
  last_drawn_ = frame;
  ++drawn_;
}

std::uint64_t attachment::skipped() const noexcept {
  if (!first_drawn_ || !last_drawn_) return 0;
  return *last_drawn_ - *first_drawn_ + 1 - drawn_;
}

std::string attachment::describe(const std::string& name) const {
  const auto* b = buffer();
  std::string text = "attached to '" + name + "' (pid " + std::to_string(subscriber_.publisher().pid);
  if (!subscriber_.publisher_name().empty()) text += ", \"" + subscriber_.publisher_name() + "\"";
  text += ") as ";
  text += consumer() ? "consumer" : "observer";
  text += join_frame_ ? " after frame " + std::to_string(*join_frame_) : std::string(" before the first frame");
  if (b != nullptr) {
    text += ": " + std::to_string(imported_count_) + " particles x " + std::to_string(slots_) + " slots, " +
            membridge::format_bytes(b->description.size) + " in " + std::to_string(b->description.chunks.size()) +
            (b->description.chunks.size() == 1 ? " chunk" : " chunks") + " (" +
            membridge::format_bytes(b->description.reserved_size) + " reserved), " +
            (view_.is_sparse() ? "one sparse VkBuffer" : std::to_string(segments_.size()) + " VkBuffer(s), per chunk");
  }
  char times[256];
  (void)std::snprintf(times, sizeof times,
                      "; connect + state %.2f ms, Vulkan import %.2f ms, timeline import %.2f ms",
                      times_.connect_ms + times_.resources_ms, times_.vulkan_import_ms, times_.timeline_import_ms);
  return text + times;
}

}  // namespace particles::ipc_viewer
