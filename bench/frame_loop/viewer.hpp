// bench/frame_loop/viewer.hpp: the Vulkan side of the viewed part (viewed.hpp): a viewer that, per
// drawn frame, takes one slot of the particle ring that the simulation published, draws it with the
// session's particle_renderer (or only hands it over), records Vulkan timestamps around the frame's
// graphics work and copies a few sampled particles of what it drew into a host-visible history, so
// every drawn frame's data can be checked against the CPU reference afterwards.
#pragma once

#include "scene.hpp"

#include <vulkan/vulkan_core.h>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace membridge::bench::frame_loop {

/// How the viewer takes a slot.
enum class viewer_kind : std::uint8_t {
  handoff = 0,  ///< No draw: the graphics queue waits for the step, copies the sampled particles, signals.
  direct = 1,   ///< The graphics queue waits for the step and draws the slot itself.
  direct_host = 2,  ///< As direct, but submitted only once the step is done (a host wait on `ready`),
                    ///< so the queue never sits blocked on the GPU wait.
  copy = 3,     ///< The transfer queue waits for the step and copies the slot into the viewer's own
                ///< buffer (releasing the slot); the graphics queue draws that copy.
  idle_vulkan = 4,  ///< Control: per tick an empty graphics submit (two timestamps), no semaphore, no
                    ///< frame taken: what any Vulkan work at that rate costs the sim.
  idle_cuda = 5,    ///< Control: per tick a 4-byte memset on a second stream of the sim's own CUDA
                    ///< context: work at that rate with no switch to another context.
  ipc = 6,          ///< The viewer in another process (ipc_viewer.hpp): the ring and the semaphores
                    ///< reach it through membridge's ipc; it draws like direct.
  idle_cuda_context = 7,  ///< Control: per tick one tiny kernel in a second CUDA context on the same GPU
                          ///< (idle_work.hpp): work at that rate from another context, no graphics.
};
inline constexpr int viewer_kind_count = 8;

/// True for the control kinds, which take no frame from the sim (idle_vulkan, idle_cuda, idle_cuda_context).
[[nodiscard]] constexpr bool is_control(viewer_kind kind) noexcept {
  return kind == viewer_kind::idle_vulkan || kind == viewer_kind::idle_cuda || kind == viewer_kind::idle_cuda_context;
}

/// "handoff", "direct", "direct_host", "copy", "idle_vulkan", "idle_cuda", "ipc" or "idle_cuda_context".
[[nodiscard]] std::string_view viewer_kind_name(viewer_kind kind) noexcept;

/// A timeline semaphore operation of a viewer submit.
struct timeline_op {
  VkSemaphore semaphore = VK_NULL_HANDLE;  ///< Ownership: borrowed (the mailbox's).
  std::uint64_t value = 0;                 ///< Value to wait for or signal.
};

/// The Vulkan objects of the viewer: per renderer slot (frame % ring_slots) a command buffer before
/// the draw (the wait, a start timestamp, a barrier), one after it (sampled particles into the
/// history, an end timestamp), one for the transfer queue (copy kind) and a fence; a query pool of
/// two timestamps per frame; the history buffer; ring_slots device-local copy buffers (copy kind).
/// Not thread-safe: one thread submits (the viewer thread, or the caller between runs). Neither
/// copyable nor movable: it is made once per scene and kept in place.
class mailbox_viewer {
 public:
  /// Makes the objects for `sc` and up to `capacity` frames per run, sampling the particles at
  /// `samples`. Throws bench_failure on a Vulkan error or without timestamps on the graphics queue.
  mailbox_viewer(session& s, const scene& sc, std::vector<std::uint64_t> samples, std::uint64_t capacity);
  mailbox_viewer(const mailbox_viewer&) = delete;
  mailbox_viewer& operator=(const mailbox_viewer&) = delete;
  /// Waits for its submissions (at most wait_timeout), then destroys what it made.
  ~mailbox_viewer();

  /// Frames one run may draw.
  [[nodiscard]] std::uint64_t capacity() const noexcept { return capacity_; }
  /// The particle indices sampled into the history.
  [[nodiscard]] const std::vector<std::uint64_t>& samples() const noexcept { return samples_; }

  /// Poisons the history (every byte 0xFF) for a new run; call while nothing of the viewer's runs.
  void begin_run();

  /// Submits frame `frame` (0, 1, ... within a run; < capacity) of `kind` reading ring slot `slot`:
  /// the first submit waits for `ready` (the simulation's step), and `release` is signalled after
  /// the slot's last read (the draw for direct, the copy for copy, the sampled copy for handoff). A
  /// `ready` or `release` with no semaphore is left out (back-to-back draws). Waits for the
  /// resources of frame `frame` - ring_slots first (host). idle_vulkan submits only the two
  /// timestamps (no wait, no signal, nothing read); idle_cuda and ipc are not Vulkan kinds of this
  /// process (bench_failure).
  void submit(viewer_kind kind, std::uint64_t frame, std::uint32_t slot, timeline_op ready, timeline_op release);

  /// Waits (at most wait_timeout) until every submission of the viewer has finished.
  void wait_idle();

  /// GPU time of frames [first, end) in microseconds: end timestamp minus start timestamp (start:
  /// after the frame's wait, end: after its draw and sample copies). Call after wait_idle().
  [[nodiscard]] std::vector<double> frame_gpu_us(std::uint64_t first, std::uint64_t end) const;

  /// The sampled particles frame `frame` read (samples().size() of them). Call after wait_idle().
  [[nodiscard]] std::span<const particles::particle> history(std::uint64_t frame) const;

 private:
  struct slot_objects {
    VkCommandBuffer pre = VK_NULL_HANDLE;       // wait, reset queries, start timestamp, barrier
    VkCommandBuffer post = VK_NULL_HANDLE;      // sampled copy, host barrier, end timestamp
    VkCommandBuffer transfer = VK_NULL_HANDLE;  // copy kind: slot -> copy buffer
    VkFence fence = VK_NULL_HANDLE;             // the pre (or handoff) submit
    bool in_flight = false;
    VkBuffer copy_buffer = VK_NULL_HANDLE;      // copy kind: the viewer's own particles
    VkDeviceMemory copy_memory = VK_NULL_HANDLE;
  };

  void wait_slot(slot_objects& o, std::string_view what);
  void record_samples(VkCommandBuffer cmd, VkBuffer from, VkDeviceSize base, std::uint64_t frame) const;
  void submit_graphics(VkCommandBuffer cmd, timeline_op wait, timeline_op signal, VkFence fence) const;
  // Submits `cmd` to `queue`, waiting for `wait` at `stage` and signalling `signal` (either may be
  // empty), then `fence`.
  void submit_to(VkQueue queue, VkPipelineStageFlags stage, VkCommandBuffer cmd, timeline_op wait, timeline_op signal,
                 VkFence fence) const;
  void destroy() noexcept;

  session* s_;
  const scene* sc_;
  std::vector<std::uint64_t> samples_;
  std::uint64_t capacity_ = 0;
  double timestamp_period_ns_ = 1.0;
  std::uint64_t timestamp_mask_ = ~std::uint64_t{0};
  VkCommandPool graphics_pool_ = VK_NULL_HANDLE;
  VkCommandPool transfer_pool_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  VkBuffer history_buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory history_memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;                        // the history, mapped
  std::size_t history_bytes_ = 0;
  std::vector<slot_objects> slots_;
};

}  // namespace membridge::bench::frame_loop
