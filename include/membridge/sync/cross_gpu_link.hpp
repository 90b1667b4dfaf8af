// membridge/sync/cross_gpu_link.hpp: a CUDA producer on one GPU feeding frame slots that live on
// another GPU (the one a Vulkan or GL renderer runs on), ordered by CUDA events and the frame
// timeline, with no host wait in the loop.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/sync/frame_timeline.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace membridge::sync {

/// Who moves a frame across the link from the producer's GPU (B) to the renderer's GPU (A).
enum class cross_gpu_mode : std::uint8_t {
  automatic = 0,    ///< create() picks: default_cross_gpu_peer_mode when B can access A's memory, else staged.
  peer_write = 1,   ///< B's kernels write A's slot directly through the peer mapping.
  copy_engine = 2,  ///< B's kernels write a buffer on B; a copy on B's copy stream moves it into A's slot.
  staged = 3,       ///< No peer path: B copies into pinned host memory, A copies from there into its slot.
};

/// The mode `automatic` picks when the GPUs can peer. copy_engine until a two-GPU measurement says
/// peer_write is faster (bench/cross_gpu, key cross_gpu_frame_throughput_ratio per mode).
inline constexpr cross_gpu_mode default_cross_gpu_peer_mode = cross_gpu_mode::copy_engine;

/// "automatic", "peer_write", "copy_engine" or "staged".
[[nodiscard]] std::string_view to_string(cross_gpu_mode mode) noexcept;

/// Options for cross_gpu_link::create().
struct cross_gpu_link_options {
  cross_gpu_mode mode = cross_gpu_mode::automatic;  ///< peer_write and copy_engine need peer access B -> A.
};

/// The slots of a frame ring that live on the renderer's GPU (A) and a producer on another GPU (B)
/// that fills them, frame by frame, without a host wait.
///
/// A is the GPU whose memory holds the slots (imported into Vulkan or GL there) and whose CUDA
/// device the frame_timeline was created with; B is the GPU the producer's kernels run on. The link
/// owns two streams on A, "acquire" (begin_frame's timeline acquire) and "relay" (the moves' waits and
/// the timeline's release), and in copy_engine and
/// staged modes a copy stream on B, a buffer of `slots x slot_bytes` on B that the kernels write
/// (write_target()), and in staged mode as much pinned host memory.
///
/// Per frame n (slot k = n % slots), in this host order on the producer's thread:
///
///   begin_frame(timeline, producer, n):
///     acquire (A):  timeline.cuda_acquire(n)   waits consumed >= n - slots + 1 (the renderer read slot k)
///                   record freed[k]           (not on the relay stream: it would wait behind frame n - 1's move)
///     producer (B): peer_write: wait freed[k]  (B writes A's slot k only after the renderer is done with it)
///                   otherwise:  wait moved[k]  (the copy of frame n - slots out of B's buffer k is done)
///   <the producer's kernels write write_target(n) on `producer`>
///   end_frame(timeline, producer, n):
///     producer (B): record written[k]          (the frame's kernels are done)
///     copy_engine:  copy (B): wait written[k], wait freed[k], cuMemcpyDtoDAsync B's buffer k -> A's slot k,
///                             record moved[k]
///                   relay (A): wait moved[k]
///     staged:       copy (B): wait written[k], wait freed[k], cuMemcpyDtoHAsync B's buffer k -> host k,
///                             record moved[k]
///                   relay (A): wait moved[k], cuMemcpyHtoDAsync host k -> A's slot k
///     peer_write:   relay (A): wait written[k]
///     relay (A):    timeline.cuda_release(n)   signals produced = n + 1: the renderer may read slot k
///
/// So: the renderer's read of frame n - slots happens before anything writes slot k for frame n
/// (consumed -> acquire stream -> freed[k] -> the producer or the copy stream); the producer's writes of
/// frame n happen before `produced` reaches n + 1 (written[k] / moved[k] -> relay -> produced);
/// host buffer k is reused only after A copied out of it (A's copy of frame n - slots precedes its
/// `produced` signal, hence the renderer's read and `consumed`, which freed[k] waits for). cuStreamWaitEvent waits for the event's latest record at the time of the call, which is
/// why the host order above matters and why begin_frame/end_frame must alternate, one frame at a time.
/// Nothing blocks the host: every step is enqueued.
///
/// Thread use: begin_frame/end_frame from one thread (the producer's). Move-only. Destruction waits
/// on the host for the acquire, relay and copy streams (so for the producer's work up to the last end_frame),
/// then destroys the events, the streams and the buffers. The frame timeline and the slot memory must
/// outlive the link's use of them; B's access to the slots (peer modes) stays granted.
class cross_gpu_link {
 public:
  /// Links `producer_gpu` (B) to the slots on `render_gpu` (A): `slots` are the CUDA addresses of the
  /// ring's slots on A (memory mapped there, e.g. a growable buffer's range), `slot_bytes` each. For
  /// the peer modes each run of adjacent slots must cover whole mapped allocations (cuMemSetAccess
  /// grants per allocation): lay the slots out back to back in a buffer of exactly their size, or of
  /// chunks that end where the slots do.
  /// Picks the mode (options.mode), grants B read-write access to every slot for peer_write and
  /// copy_engine (cuMemSetAccess, the last step: a failure before it changes nothing), creates the
  /// events and streams, and in copy_engine and staged modes B's buffer (staged: the pinned host memory).
  /// `automatic` falls back to staged where B cannot access A's memory, and logs that it did.
  /// Errors: invalid_argument for an empty device, the same GPU twice (use frame_timeline alone),
  /// devices of two drivers, no slot, a slot address of 0 or a slot_bytes of 0; unsupported naming
  /// both GPUs when peer_write or copy_engine is asked for and B cannot access A's memory; the driver's.
  /// Ownership: the link owns its streams, events and buffers; it keeps both devices' state (and
  /// primary contexts) alive; the slot memory stays the caller's.
  [[nodiscard]] static result<cross_gpu_link> create(const cuda::device& render_gpu, const cuda::device& producer_gpu,
                                                     std::span<const CUdeviceptr> slots, std::size_t slot_bytes,
                                                     const cross_gpu_link_options& options = {});

  /// An empty object.
  cross_gpu_link() noexcept;
  cross_gpu_link(const cross_gpu_link&) = delete;
  cross_gpu_link& operator=(const cross_gpu_link&) = delete;
  /// Takes over `other`'s streams, events and buffers; `other` becomes empty.
  cross_gpu_link(cross_gpu_link&& other) noexcept;
  /// Tears this link down (see the destructor), then takes over `other`'s.
  cross_gpu_link& operator=(cross_gpu_link&& other) noexcept;
  /// Waits for the relay and copy streams, then destroys events, streams and buffers.
  ~cross_gpu_link();

  /// True when created.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  /// The mode in use (never automatic).
  [[nodiscard]] cross_gpu_mode mode() const noexcept;
  /// True when frames go through pinned host memory (mode() == staged).
  [[nodiscard]] bool staged() const noexcept { return mode() == cross_gpu_mode::staged; }
  /// The number of slots.
  [[nodiscard]] std::uint32_t slots() const noexcept;
  /// The bytes of one slot.
  [[nodiscard]] std::size_t slot_bytes() const noexcept;
  /// Where the producer's kernels write frame `frame`: A's slot (peer_write) or B's buffer for the
  /// slot (copy_engine, staged). Ownership: owned by the caller (A's slot) or the link (B's buffer).
  [[nodiscard]] CUdeviceptr write_target(std::uint64_t frame) const noexcept;
  /// The relay stream on A (the frame timeline's CUDA side runs there). Ownership: owned by the link.
  [[nodiscard]] CUstream relay_stream() const noexcept;
  /// The copy stream on B (null for peer_write). Ownership: owned by the link.
  [[nodiscard]] CUstream copy_stream() const noexcept;

  /// Frame `frame`'s start (see the class comment): `timeline.cuda_acquire` on the link's acquire stream
  /// on A, freed[k] recorded there, and the producer's wait as open_slot() does. Returns write_target(frame).
  /// Errors: invalid_argument for an empty link, a timeline without CUDA, a timeline whose slot count
  /// is not slots(), or a frame already open; the driver's (the frame is then half enqueued: stop,
  /// and destroy the link).
  /// Ownership: borrows `timeline` (created with A's CUDA device) and `producer` (a stream on B).
  [[nodiscard]] result<CUdeviceptr> begin_frame(const frame_timeline& timeline, CUstream producer, std::uint64_t frame);
  /// Frame `frame`'s end: close_slot(producer, frame), then `timeline.cuda_release` on the relay stream.
  /// Errors: invalid_argument for an empty link, a timeline as above, or `frame` not the open frame;
  /// the driver's.
  [[nodiscard]] result<void> end_frame(const frame_timeline& timeline, CUstream producer, std::uint64_t frame);

  /// begin_frame without the timeline: for a protocol of the caller's own that has already enqueued on
  /// relay_stream() the wait until slot `frame % slots()` is no longer read on A. Records freed[k] on
  /// the relay stream and makes `producer` wait as the class comment says. Returns write_target(frame).
  /// Errors: invalid_argument for an empty link or a frame already open; the driver's.
  [[nodiscard]] result<CUdeviceptr> open_slot(CUstream producer, std::uint64_t frame);
  /// end_frame without the timeline: enqueues the move into A's slot and the relay stream's wait for
  /// it; after it returns, work the caller enqueues on relay_stream() sees frame `frame` in A's slot.
  /// Errors: invalid_argument for an empty link or `frame` not the open frame; the driver's.
  [[nodiscard]] result<void> close_slot(CUstream producer, std::uint64_t frame);

  /// Waits on the host until the relay and copy streams are idle (teardown, tests).
  /// Errors: the driver's; invalid_argument for an empty link.
  [[nodiscard]] result<void> synchronize() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace membridge::sync
