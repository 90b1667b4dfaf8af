// frame_timeline with several consumers (consumer_slots): one `consumed` semaphore per consumer, the
// wait set, retiring a consumer that left, and the host waits on all of them.
#include "frame_timeline_consumers.hpp"

#include <membridge/core/log.hpp>

#include <volk.h>

#include <algorithm>
#include <thread>
#include <string>
#include <utility>

namespace membridge::sync {

namespace {

using clock = std::chrono::steady_clock;

// A host wait on the consumers is cut in slices this long, so that a consumer removed meanwhile
// (remove_consumer takes the same lock) stops being waited for.
constexpr int spin_polls = 32;
constexpr auto poll_period = std::chrono::microseconds(100);

}  // namespace

result<void> frame_timeline::consumer_set::tend_retired(const vulkan::timeline_semaphore& produced,
                                                       std::vector<slot_ptr>& dead) {
  if (retired.empty()) return ok();
  MEMBRIDGE_TRY_ASSIGN(const std::uint64_t done, produced.value());
  for (auto it = retired.begin(); it != retired.end();) {
    slot& s = **it;
    if (s.last_ref && done < produced_value(*s.last_ref)) {
      // Acquires enqueued before the removal may still wait on it: keep it up.
      MEMBRIDGE_TRY_ASSIGN(const std::uint64_t now, s.semaphore.value());
      if (now < s.target) {
        log(log_level::warning, "frame_timeline: the semaphore of consumer " + std::to_string(s.id) +
                                    ", which left, went back to " + std::to_string(now) +
                                    " (GPU work of its process); raising it to " + std::to_string(s.target) + " again");
        MEMBRIDGE_TRY(s.semaphore.signal(s.target).with_context("raising a retired consumer's semaphore again"));
      }
      ++it;
      continue;
    }
    // The stream passed every wait that used it (or none did): destroyed by the caller, outside the
    // lock (the slot's CUDA import goes before its Vulkan semaphore: declared after it).
    dead.push_back(std::move(*it));
    it = retired.erase(it);
  }
  return ok();
}

result<void> frame_timeline::tend_retired() const {
  if (!consumers_) return ok();
  std::vector<consumer_set::slot_ptr> dead;  // destroyed after the lock is released
  const std::lock_guard lock(consumers_->mutex);
  return consumers_->tend_retired(produced_, dead);
}

result<void> frame_timeline::add_consumer(std::uint64_t id, std::optional<std::uint64_t> frame_at_join) {
  constexpr const char* call = "frame_timeline::add_consumer";
  if (!valid()) return error(errc::invalid_argument, call, "the timeline is empty");
  if (!consumer_slots_) return error(errc::invalid_argument, call, "the timeline was made without consumer_slots");
  const std::uint64_t initial = frame_at_join ? consumed_value(*frame_at_join) : 0;
  {
    const std::lock_guard lock(consumers_->mutex);
    if (auto it = consumer_set::find(consumers_->active, id); it != consumers_->active.end()) {
      // The join moved to a later frame before the consumer got its semaphore: nobody signals it yet.
      MEMBRIDGE_TRY_ASSIGN(const std::uint64_t now, (*it)->semaphore.value());
      if (now < initial) MEMBRIDGE_TRY((*it)->semaphore.signal(initial).with_context("consumer " + std::to_string(id)));
      return ok();
    }
  }
  // Made outside the lock (milliseconds with a CUDA import): the producer goes on meanwhile.
  auto s = std::make_shared<consumer_set::slot>();
  s->id = id;
  MEMBRIDGE_TRY_ASSIGN(s->semaphore, vulkan::timeline_semaphore::create(context_, initial, has_cuda())
                                         .with_context("consumer " + std::to_string(id) + "'s semaphore"));
  if (has_cuda()) {
    MEMBRIDGE_TRY_ASSIGN(auto fd, s->semaphore.export_handle());
    MEMBRIDGE_TRY_ASSIGN(s->cuda, cuda::external_semaphore::import_timeline(consumers_->cuda, fd)
                                      .with_context("consumer " + std::to_string(id) + "'s semaphore"));
  }
  const std::lock_guard lock(consumers_->mutex);
  if (consumer_set::find(consumers_->active, id) != consumers_->active.end())
    return error(errc::invalid_argument, call, "consumer " + std::to_string(id) + " was added twice at once");
  consumers_->active.push_back(std::move(s));
  return ok();
}

result<os::shareable_handle> frame_timeline::export_consumer(std::uint64_t id) const {
  constexpr const char* call = "frame_timeline::export_consumer";
  if (!consumers_) return error(errc::invalid_argument, call, "the timeline is empty");
  const std::lock_guard lock(consumers_->mutex);
  const auto it = consumer_set::find(consumers_->active, id);
  if (it == consumers_->active.end())
    return error(errc::invalid_argument, call, "no consumer " + std::to_string(id));
  return (*it)->semaphore.export_handle().with_context("consumer " + std::to_string(id) + "'s semaphore");
}

const vulkan::timeline_semaphore* frame_timeline::consumer(std::uint64_t id) const {
  if (!consumers_) return nullptr;
  const std::lock_guard lock(consumers_->mutex);
  const auto it = consumer_set::find(consumers_->active, id);
  return it == consumers_->active.end() ? nullptr : &(*it)->semaphore;
}

result<void> frame_timeline::remove_consumer(std::uint64_t id, std::optional<std::uint64_t> last_frame) {
  if (!consumers_) return ok();
  const std::lock_guard lock(consumers_->mutex);
  const auto it = consumer_set::find(consumers_->active, id);
  if (it == consumers_->active.end()) return ok();
  consumer_set::slot_ptr s = std::move(*it);
  consumers_->active.erase(it);
  // The highest value a wait already enqueued on it needs: no later acquire includes it, so once it
  // is there, nothing of the consumer's can hold the producer up.
  std::uint64_t target = last_frame ? consumed_value(*last_frame) : 0;
  if (s->last_ref && *s->last_ref >= slots_) target = std::max(target, consumed_value(*s->last_ref - slots_));
  s->target = target;
  const consumer_set::slot& kept = *s;
  consumers_->retired.push_back(std::move(s));
  MEMBRIDGE_TRY_ASSIGN(const std::uint64_t now, kept.semaphore.value());
  if (now < target)
    MEMBRIDGE_TRY(kept.semaphore.signal(target).with_context("consumer " + std::to_string(id) + " left"));
  return ok();
}

std::size_t frame_timeline::consumer_count() const {
  if (!consumers_) return 0;
  const std::lock_guard lock(consumers_->mutex);
  return consumers_->active.size();
}

std::size_t frame_timeline::retired_count() const {
  if (!consumers_) return 0;
  const std::lock_guard lock(consumers_->mutex);
  return consumers_->retired.size();
}

result<void> frame_timeline::wait_for_consumers(std::uint64_t value, std::chrono::nanoseconds timeout) const {
  const auto deadline = clock::now() + timeout;
  std::vector<consumer_set::slot_ptr> waited;  // copies: alive while waited on outside the lock
  std::vector<VkSemaphore> semaphores;
  int polls = 0;
  for (;;) {
    {
      std::vector<consumer_set::slot_ptr> dead;  // destroyed after the lock is released
      const std::lock_guard lock(consumers_->mutex);
      MEMBRIDGE_TRY(consumers_->tend_retired(produced_, dead));
      waited = consumers_->active;
    }
    if (waited.empty()) return ok();
    // Polls every consumer's counter (vkGetSemaphoreCounterValue) outside the lock, rather than
    // sleeping in vkWaitSemaphores, which woke up to ~10 ms late on NVIDIA's driver for values
    // another process signals (docs/synchronization.md, "Host waits"); a few polls back to back,
    // then one every poll_period. The set is read again each round, so a consumer removed
    // meanwhile stops being waited for.
    semaphores.clear();
    bool all = true;
    for (const consumer_set::slot_ptr& s : waited) {
      semaphores.push_back(s->semaphore.get());
      MEMBRIDGE_TRY_ASSIGN(const std::uint64_t now, s->semaphore.value());
      if (now < value) all = false;
    }
    waited.clear();
    if (all) return ok();
    if (++polls > spin_polls) {
      const auto left = deadline - clock::now();
      std::this_thread::sleep_for(std::clamp<std::chrono::nanoseconds>(left, std::chrono::nanoseconds(0), poll_period));
    }
    if (clock::now() >= deadline)
      return error(errc::timeout, "frame_timeline",
                   "waiting for " + std::to_string(semaphores.size()) + " consumers to reach " + std::to_string(value));
  }
}

}  // namespace membridge::sync
