// Private: the consumers of a frame_timeline with consumer_slots (one semaphore each), and the
// highest values waited for and released (for drain()).
#pragma once

#include <membridge/cuda/device.hpp>
#include <membridge/cuda/external_semaphore.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/vulkan/timeline_semaphore.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace membridge::sync {

struct frame_timeline::consumer_set {
  struct slot {
    std::uint64_t id = 0;
    vulkan::timeline_semaphore semaphore;
    cuda::external_semaphore cuda;          // declared after: destroyed before the Vulkan semaphore
    std::optional<std::uint64_t> last_ref;  // the last frame whose acquire included it
    std::uint64_t target = 0;               // retired: the value it is kept at
  };
  // Shared: a host wait holds copies while it waits outside the lock, so a slot retired and passed
  // meanwhile is destroyed only when the last holder lets go (never under the lock). Stable
  // addresses: consumer(id) hands one out.
  using slot_ptr = std::shared_ptr<slot>;

  std::mutex mutex;               // guards active and retired
  std::vector<slot_ptr> active;   // waited for by every acquire
  std::vector<slot_ptr> retired;  // removed; kept up and alive until the stream passed last_ref
  cuda::device cuda;              // imports the consumers' semaphores (empty for a host producer)
  std::atomic<std::uint64_t> highest_waited{0};    // the highest `produced` value a submit waits for
  std::atomic<std::uint64_t> highest_released{0};  // the highest `produced` value released

  static std::vector<slot_ptr>::iterator find(std::vector<slot_ptr>& slots, std::uint64_t id) {
    return std::find_if(slots.begin(), slots.end(), [id](const slot_ptr& s) { return s->id == id; });
  }
  static void raise_to(std::atomic<std::uint64_t>& a, std::uint64_t value) noexcept {
    std::uint64_t seen = a.load();
    while (seen < value && !a.compare_exchange_weak(seen, value)) {
    }
  }
  void note_waited(std::uint64_t value) noexcept { raise_to(highest_waited, value); }
  void note_released(std::uint64_t value) noexcept { raise_to(highest_released, value); }

  // Raises retired semaphores that went back below their target (GPU work of a consumer that
  // died) and moves those the producer's stream has passed to `dead`, which the caller destroys
  // after releasing the lock (declare it before the lock_guard): no CUDA call is made under the
  // lock, so a CUDA call that blocks behind a stream's unresolved wait can never hold up
  // remove_consumer, which resolves it. Lock held.
  [[nodiscard]] result<void> tend_retired(const vulkan::timeline_semaphore& produced, std::vector<slot_ptr>& dead);
};

}  // namespace membridge::sync
