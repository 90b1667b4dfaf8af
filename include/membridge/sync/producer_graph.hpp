// membridge/sync/producer_graph.hpp: a CUDA producer's per-frame work (acquire, the frame's kernels,
// release) as CUDA graphs recorded once and launched with one call per frame.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/cuda/external_semaphore.hpp>
#include <membridge/sync/frame_timeline.hpp>

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace membridge::sync {

/// The CUDA side of a frame timeline that a producer_graph orders its frames with: the same
/// protocol as frame_timeline (frame n waits for consumed >= consumed_value(n - slots), signals
/// produced = produced_value(n)), for semaphores imported some other way than frame_timeline::create.
struct producer_semaphores {
  const cuda::external_semaphore* consumed = nullptr;  ///< Ownership: borrowed; must outlive the producer_graph.
  const cuda::external_semaphore* produced = nullptr;  ///< Ownership: borrowed; must outlive the producer_graph.
  std::uint32_t slots = 0;                             ///< The ring size (frame_timeline::slots()).
};

/// Enqueues one slot's work on a stream that is being captured: called once per slot while the
/// producer_graph is created, on the calling thread. It must enqueue on `stream` what the producer
/// would enqueue between cuda_acquire and cuda_release for a frame in `slot` (kernel launches of any
/// API: `<<<>>>`, cudaLaunchKernel, cuLaunchKernel; memsets, copies), nothing that synchronises, and
/// return an error if a launch failed. The captured arguments are fixed: what changes per frame must
/// come from device memory (a frame counter the kernels keep) or from the slot.
/// Ownership: `stream` is the producer_graph's capture stream, borrowed for the call.
using producer_record_fn = std::function<result<void>(CUstream stream, std::uint32_t slot)>;

/// A CUDA producer's frame as CUDA graphs: `launch(stream, n)` does what
///
///   timeline.cuda_acquire(stream, n); <the slot's kernels>; timeline.cuda_release(stream, n);
///
/// does, with one graph launch instead of two external-semaphore calls and k kernel launches, so
/// the producer thread spends less host time per frame (docs/synchronization.md has the figures).
///
/// create() records the caller's work once per slot (one graph per slot: slots are few, and per-slot
/// kernel arguments then cost nothing per frame), wraps it between an external-semaphore wait node
/// on `consumed` and a signal node on `produced`, and instantiates it. launch() sets the two nodes'
/// values for the frame (cuGraphExecExternalSemaphoresWaitNodeSetParams / ...SignalNodeSetParams)
/// and calls cuGraphLaunch: three driver calls per frame whatever the number of kernels. The first
/// `slots` frames wait for value 0 (always reached), as cuda_acquire enqueues no wait for them.
///
/// Thread use: launch() changes the executable graphs: one thread at a time (the producer's).
/// Move-only; destruction destroys the executable graphs (the driver finishes launches in flight
/// first) and their templates. The semaphores (the frame_timeline) must outlive it and every launch.
class producer_graph {
 public:
  /// Records `record`'s work for each slot of `timeline` and instantiates the graphs.
  /// Errors: invalid_argument for an empty device, a timeline without CUDA (create_host_producer) or
  /// an empty `record`; the error `record` returns (with the slot added as context); the driver's
  /// (capture, graph building, instantiation), each naming the call and the slot.
  /// Ownership: borrows `timeline`'s CUDA semaphores (it must outlive the producer_graph); owns the
  /// graphs; the capture stream lives only during create().
  [[nodiscard]] static result<producer_graph> create(const cuda::device& cuda_device, const frame_timeline& timeline,
                                                     const producer_record_fn& record);

  /// The same on semaphores given one by one (a timeline imported elsewhere; tests).
  /// Errors: invalid_argument for an empty device, a null or empty semaphore, slots 0 or an empty
  /// `record`; otherwise as above.
  /// Ownership: borrows both semaphores (they must outlive the producer_graph); owns the graphs.
  [[nodiscard]] static result<producer_graph> create(const cuda::device& cuda_device,
                                                     const producer_semaphores& semaphores,
                                                     const producer_record_fn& record);

  /// An empty object.
  producer_graph() noexcept;
  producer_graph(const producer_graph&) = delete;
  producer_graph& operator=(const producer_graph&) = delete;
  /// Takes over `other`'s graphs; `other` becomes empty.
  producer_graph(producer_graph&& other) noexcept;
  /// Destroys the held graphs, then takes over `other`'s.
  producer_graph& operator=(producer_graph&& other) noexcept;
  /// Destroys the executable graphs and their templates (failures go to the log).
  ~producer_graph();

  /// Enqueues frame `frame` on `stream`: wait until its slot is free (consumed >= frame - slots + 1),
  /// the slot's recorded work, then signal produced = frame + 1. Frames go in increasing order on
  /// one stream, as with cuda_acquire/cuda_release.
  /// Errors: invalid_argument when empty; the driver's (naming the call and the frame).
  /// Ownership: `stream` is borrowed.
  [[nodiscard]] result<void> launch(CUstream stream, std::uint64_t frame);
  /// Where one launch() spent its host time (a profiling aid for benchmarks; steady_clock).
  struct launch_timing {
    std::chrono::nanoseconds wait_update{};    ///< Entering the context + ...WaitNodeSetParams.
    std::chrono::nanoseconds signal_update{};  ///< cuGraphExecExternalSemaphoresSignalNodeSetParams.
    std::chrono::nanoseconds launch{};         ///< cuGraphLaunch.
  };
  /// launch(stream, frame), also writing the time of each driver call to `*timing` (not null).
  /// Errors and ownership: as launch(stream, frame).
  [[nodiscard]] result<void> launch(CUstream stream, std::uint64_t frame, launch_timing* timing);

  /// The ring size (number of graphs).
  [[nodiscard]] std::uint32_t slots() const noexcept { return static_cast<std::uint32_t>(graphs_.size()); }
  /// The executable graph of `slot` (< slots()). Ownership: owned by this object.
  [[nodiscard]] CUgraphExec native(std::uint32_t slot) const noexcept { return graphs_[slot].exec; }
  /// True when created.
  [[nodiscard]] bool valid() const noexcept { return !graphs_.empty(); }

 private:
  // One slot's graph: the template (kept: the SetParams calls name its nodes) and its executable.
  struct slot_graph {
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    CUgraphNode wait = nullptr;
    CUgraphNode signal = nullptr;
  };

  void reset() noexcept;

  // The device through its public API (cuda::device): the driver, the primary context and its
  // description for errors. `device_keepalive_` holds the device's shared state type-erased (the
  // sync module does not know cuda's private layout): it keeps the primary context retained for as
  // long as the graphs live, as every object made from the device does.
  std::shared_ptr<const void> device_keepalive_;
  std::shared_ptr<const cuda::driver> driver_;
  CUcontext context_ = nullptr;
  std::string device_text_;
  CUexternalSemaphore consumed_ = nullptr;
  CUexternalSemaphore produced_ = nullptr;
  std::vector<slot_graph> graphs_;
};

}  // namespace membridge::sync
