// tools/membridge-view/session.hpp: membridge-view's connection to one publisher: the subscriber,
// every published buffer with a drawable layout imported into Vulkan (following its growth), the frame
// timeline when the publisher has one, and which frame to draw next.
#pragma once

#include "options.hpp"
#include "renderer.hpp"

#include <membridge/core/result.hpp>
#include <membridge/ipc/layout.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/vulkan/chunked_buffer.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace membridge_view {

using clock_type = std::chrono::steady_clock;

/// The frame timeline's semaphores (sync::frame_publisher's names).
inline constexpr std::string_view produced_name = "frames.produced";
inline constexpr std::string_view consumed_name = "frames.consumed";  ///< The consumer's own `consumed`.

/// A published buffer and what the viewer made of it.
struct drawable {
  std::string name;                        ///< The resource name.
  std::uint32_t id = 0;                    ///< Index (renderer state).
  membridge::ipc::layout layout;           ///< Parsed from its element_format.
  membridge::vulkan::chunked_buffer view;  ///< Its Vulkan import (empty when not drawable).
  std::uint64_t generation = 0;            ///< The generation imported.
  std::string problem;                     ///< Why it is not drawn (empty: drawn).
};

/// One connection and its imports. Render-thread only.
class session {
 public:
  /// Connects as consumer (or observer) and receives the publisher's state.
  /// Errors: as ipc::subscriber::connect (os_error ENOENT / ECONNREFUSED: nobody publishes `name`).
  [[nodiscard]] static membridge::result<std::unique_ptr<session>> connect(const view_options& options, std::ostream& out);

  /// Handles the events that arrived, waiting up to `wait` for the first.
  [[nodiscard]] membridge::result<void> pump(std::chrono::milliseconds wait);
  /// Waits until some buffer has a layout the viewer can parse and returns its GPU, or nothing when
  /// the publisher went away. Errors: timeout at `deadline` (naming the buffers and why).
  [[nodiscard]] membridge::result<std::optional<membridge::device_uuid>> wait_for_drawable(clock_type::time_point deadline);
  /// Imports every buffer not looked at yet (reporting those it cannot draw on `out`) and, the first
  /// time, the frame timeline. Errors: none for a buffer (reported instead); Vulkan errors are reported too.
  void import_new(const membridge::vulkan::device_context& context, const view_options& options);
  /// Follows buffers whose generation changed (the GPU must be done with them: renderer::wait()).
  /// Returns the ids whose views changed. A failed import is reported and the buffer left out.
  [[nodiscard]] std::vector<std::uint32_t> follow_growth();

  /// The frame to draw next with a timeline: the newest announced after the join and the last drawn.
  [[nodiscard]] std::optional<std::uint64_t> next_frame() const;
  /// What to draw of every drawable buffer for `frame` (slot frame % S; without a timeline the whole buffer).
  [[nodiscard]] std::vector<draw_item> items(std::optional<std::uint64_t> frame) const;
  /// Records that `frame` was submitted.
  void drew(std::optional<std::uint64_t> frame) noexcept;

  /// True when drawing follows the frame timeline (imported and connected).
  [[nodiscard]] bool synchronised() const noexcept { return timeline_.valid() && !disconnected_; }
  /// The imported timeline. Ownership: owned by the session.
  [[nodiscard]] const membridge::sync::frame_timeline& timeline() const noexcept { return timeline_; }
  /// True when the publisher granted the consumer role.
  [[nodiscard]] bool consumer() const noexcept;
  /// True once the publisher went away.
  [[nodiscard]] bool disconnected() const noexcept { return disconnected_; }
  /// Buffers drawn now.
  [[nodiscard]] std::size_t drawable_count() const noexcept;
  /// Every buffer looked at.
  [[nodiscard]] const std::vector<std::unique_ptr<drawable>>& buffers() const noexcept { return buffers_; }
  /// Frame announcements received.
  [[nodiscard]] std::uint64_t frames_received() const noexcept { return frames_received_; }
  /// Connection, handshake and state (ms).
  [[nodiscard]] double connect_ms() const noexcept { return connect_ms_; }
  /// Vulkan imports of the buffers so far (ms).
  [[nodiscard]] double import_ms() const noexcept { return import_ms_; }
  /// One line: who, what role, which buffers and slots.
  [[nodiscard]] std::string describe() const;

  /// Drops the imports (the GPU must be done with them) and says goodbye.
  ~session();

 private:
  session() = default;
  void report(drawable& d, std::string problem);
  [[nodiscard]] std::optional<std::string> check(const drawable& d, const membridge::ipc::buffer_description& desc,
                                                 const membridge::vulkan::device_context& context) const;
  void import_timeline(const membridge::vulkan::device_context& context);

  std::ostream* out_ = nullptr;
  membridge::ipc::subscriber subscriber_;
  std::vector<std::unique_ptr<drawable>> buffers_;
  membridge::sync::frame_timeline timeline_;
  bool timeline_tried_ = false;
  std::uint32_t slots_ = 1;
  std::optional<std::uint64_t> latest_;
  std::optional<std::uint64_t> join_frame_;
  std::optional<std::uint64_t> last_drawn_;
  std::uint64_t frames_received_ = 0;
  double connect_ms_ = 0.0;
  double import_ms_ = 0.0;
  bool disconnected_ = false;
  std::string disconnect_reason_;
};

}  // namespace membridge_view
