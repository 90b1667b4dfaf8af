// bench/frame_loop/ipc_viewer.hpp: the viewed part's viewer in another process (viewer_kind::ipc).
//
// The sim stays in the benchmark process and keeps the in-process mailbox (viewed.hpp): 3 slots,
// `ready` signalled by CUDA after a published step, `released` signalled by the viewer after the
// slot's last read, the sim writing a slot again only once `released` reached it (read on the host
// without blocking). What changes is where the viewer runs: this binary re-executed as a child
// (`/proc/self/exe --membridge-frame-loop-ipc-viewer`, a SOCK_SEQPACKET socketpair on fd 3, killed
// with its parent). The particle ring and both semaphores reach it through membridge's ipc: an
// ipc::publisher in the benchmark process publishes the ring (sync::publish_buffer, "particles") and
// the semaphores ("ready", "released"); the child subscribes, opens Vulkan on the ring's GPU (by the
// UUID in its description; the child makes no CUDA call), imports the ring into Vulkan
// (sync::import_into_vulkan) and the semaphores (vulkan::timeline_semaphore::import), and draws
// with the same mailbox_viewer (direct kind) and renderer the in-process viewers use.
//
// Per tick of its paced rate the child sends a request for frame f on the socketpair; a thread of
// the benchmark process forwards it to the sim (the in-process `request` flag), waits for the
// publication and announces it through the publisher (ipc::publisher::announce_frame with
// ipc_frame_value(step, slot)); the child's submit waits for `ready` = f + 1 on the GPU and
// signals `released` = f + 1. At the end the child sends its drawn frames' sampled particles,
// GPU times and tick-to-submit times back, and the benchmark process checks them like the
// in-process viewers' (bitwise against particles::step_cpu at the published step).
#pragma once

#include "temp_dir.hpp"
#include "viewed.hpp"

#include <membridge/ipc/publisher.hpp>
#include <membridge/os/unique_fd.hpp>
#include <membridge/vulkan/timeline_semaphore.hpp>

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace membridge::bench::frame_loop {

/// argv[1] that starts this binary as the ipc viewer child (not a user option: --help omits it).
inline constexpr std::string_view ipc_viewer_flag = "--membridge-frame-loop-ipc-viewer";

/// The frame number announced for a publication of `step` in ring slot `slot` (< 4): step * 4 +
/// slot, strictly increasing with the step, so the announcement alone tells the child both.
[[nodiscard]] constexpr std::uint64_t ipc_frame_value(std::uint64_t step, std::uint32_t slot) noexcept {
  return step * 4U + slot;
}
/// The step of an announced frame value.
[[nodiscard]] constexpr std::uint64_t ipc_frame_step(std::uint64_t value) noexcept { return value / 4U; }
/// The ring slot of an announced frame value (may be >= ring_slots for a malformed value: check).
[[nodiscard]] constexpr std::uint32_t ipc_frame_slot(std::uint64_t value) noexcept {
  return static_cast<std::uint32_t>(value % 4U);
}

/// What the child reported for one run.
struct ipc_viewer_report {
  std::uint64_t frames = 0;                     ///< Frames it drew.
  std::uint64_t missed_ticks = 0;               ///< Ticks it fell behind by a whole period.
  std::size_t lit_pixels = 0;                   ///< Of its last image.
  std::vector<particles::particle> history;     ///< frames x viewed_samples: what each frame read.
  std::vector<double> frame_gpu_us;             ///< Per frame: its graphics work (its timestamps).
  std::vector<double> tick_to_submit_us;        ///< Per frame: the tick to the submit (its clock).
  std::vector<std::uint64_t> steps;             ///< Per frame: the step it was announced with.

  /// The viewed_samples sampled particles frame `frame` read. Throws bench_failure past the frames.
  [[nodiscard]] std::span<const particles::particle> frame_history(std::uint64_t frame) const;
};

/// The benchmark process's end of one ipc viewer run: the publisher (ring and semaphores published)
/// and the child, set up and ready to draw. Neither copyable nor movable.
class ipc_viewer_process {
 public:
  /// Publishes `sc`'s ring and the two semaphores (exported again from `ready` / `released`) at a
  /// socket in a private temporary directory, starts the child and waits until it subscribed,
  /// imported everything and made its viewer for `capacity` frames at `rate_hz`, sampling
  /// `samples`. Throws bench_failure on errors (also the child's, with its message), and
  /// device_unavailable when the child found no usable device.
  /// Ownership: borrows `s`, `sc` and the semaphores (they must outlive this object).
  ipc_viewer_process(const session& s, const scene& sc, const vulkan::timeline_semaphore& ready,
                     const vulkan::timeline_semaphore& released, int rate_hz, std::uint64_t capacity,
                     const std::vector<std::uint64_t>& samples);
  ipc_viewer_process(const ipc_viewer_process&) = delete;
  ipc_viewer_process& operator=(const ipc_viewer_process&) = delete;
  /// Kills and reaps the child if it still runs, stops the publisher, removes the directory.
  ~ipc_viewer_process();

  /// The next frame the child asks for, or nothing when none came within `timeout`. Throws
  /// bench_failure when the child went away or sent something else.
  [[nodiscard]] std::optional<std::uint64_t> next_request(std::chrono::milliseconds timeout);

  /// Announces the publication of `step` in `slot` through the publisher.
  void announce(std::uint64_t step, std::uint32_t slot);

  /// Tells the child that `frames` frames were announced, lets it draw them, and collects its
  /// report (its own failure rethrown as bench_failure with its message); waits for it to exit.
  [[nodiscard]] ipc_viewer_report finish(std::uint64_t frames);

 private:
  void cleanup() noexcept;

  std::optional<temp_dir> dir_;  // the publisher's socket directory, while the viewer runs
  ipc::publisher publisher_;
  os::unique_fd link_;
  pid_t pid_ = -1;
};

/// The child's main (argv[1] == ipc_viewer_flag): runs one viewer on fd 3's requests; returns the
/// process's exit status. Writes nothing to stdout (the parent's JSON line is there).
[[nodiscard]] int run_ipc_viewer_child();

}  // namespace membridge::bench::frame_loop
