#include "growth.hpp"

#include "cuda_support.hpp"

#include <membridge/cuda/growable_buffer.hpp>

namespace membridge::bench::realtime {

std::string mib(std::size_t bytes) { return std::to_string(bytes >> 20U) + " MiB"; }

void wait_submitted(const std::atomic<std::size_t>& submitted, std::size_t n, const std::atomic<bool>& stop) {
  for (std::size_t d = submitted.load(); d < n && !stop; d = submitted.load()) submitted.wait(d);
}

void stop_waits(std::atomic<bool>& stop, std::atomic<std::size_t>& submitted, std::atomic<std::size_t>& produced,
                std::size_t frames) {
  stop = true;
  submitted.store(frames + 1);
  submitted.notify_all();
  produced.store(frames);
  produced.notify_all();
}

std::size_t grow_for_frame(const growth_target& target, std::size_t n, std::size_t count, int frames_per_step,
                           std::size_t final_particles) {
  if (n == 0 || n % static_cast<std::size_t>(frames_per_step) != 0 || count >= final_particles) return count;
  const std::size_t bytes = 2 * count * target.particle_bytes;
  const std::size_t before = target.buffer.capacity();
  const auto t0 = steady::now();
  {
    const std::lock_guard lock(target.buffer_mutex);
    ok_or_fail(target.buffer.grow(bytes), "growable_buffer::grow");
  }
  const auto t1 = steady::now();
  const std::size_t after = target.buffer.capacity();
  target.log.add("grow to " + mib(bytes) + (after != before ? " (maps " + mib(after - before) + ")" : " (no map)"), t0, t1);
  return 2 * count;
}

}  // namespace membridge::bench::realtime
