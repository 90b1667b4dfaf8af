// bench/realtime/vulkan_growth.cpp: part (b), Vulkan: particles double (1M -> 16M) while the particle
// renderer draws a paced 144 Hz loop from a sparse VkBuffer over a growable_buffer.
//   producer thread: per frame, frame_timeline::cuda_acquire, the particle step, a stamp of the frame
//     number into every particle, cuda_release; at each growth, growable_buffer::grow (under the
//     buffer mutex) and a seed of the new particles.
//   follower thread: sync::follow_step in a loop (under the buffer mutex): at need (no headroom) or
//     ahead (headroom_fraction 1: the next doubling mapped and imported before it is needed).
//   render thread: at tick n, draws min(particles of frame n, what the view covers) and copies the
//     stamp of one probe particle (every other frame one from the newest chunk) into a history.
//   watcher thread: stamps when consumed(n) is reached: the frame's completion.
// Every frame's probe must read the frame's own stamp.
#include "vulkan_growth.hpp"

#include "kernels.cuh"
#include "particle_sim_cuda.hpp"

#include <membridge/core/units.hpp>
#include <membridge/sync/frame_timeline.hpp>
#include <membridge/sync/vulkan_mirror.hpp>

#include <volk.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace membridge::bench::realtime {

namespace fl = frame_loop;

namespace {

constexpr std::size_t particle_bytes = 32;

// A host-visible history of one 32-bit probe per frame, and a command buffer per renderer slot that
// copies the frame's probe into it.
class probe_history {
 public:
  probe_history(const vulkan::device_context& ctx, std::size_t frames, std::uint32_t slots) : ctx_(ctx) {
    const VolkDeviceTable& f = ctx.functions();
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = frames * 4;
    bci.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    MEMBRIDGE_FRAME_LOOP_VK(f.vkCreateBuffer(ctx.device(), &bci, nullptr, &buffer_));
    VkMemoryRequirements req{};
    f.vkGetBufferMemoryRequirements(ctx.device(), buffer_, &req);
    VkPhysicalDeviceMemoryProperties props{};
    ctx.instance_functions().vkGetPhysicalDeviceMemoryProperties(ctx.physical_device(), &props);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    std::uint32_t type = UINT32_MAX;
    for (std::uint32_t i = 0; i < props.memoryTypeCount; ++i)
      if ((req.memoryTypeBits & (1U << i)) != 0 && (props.memoryTypes[i].propertyFlags & want) == want) {
        type = i;
        break;
      }
    if (type == UINT32_MAX) throw bench_failure("no host-visible coherent memory type for the probe history");
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = type;
    MEMBRIDGE_FRAME_LOOP_VK(f.vkAllocateMemory(ctx.device(), &mai, nullptr, &memory_));
    MEMBRIDGE_FRAME_LOOP_VK(f.vkBindBufferMemory(ctx.device(), buffer_, memory_, 0));
    MEMBRIDGE_FRAME_LOOP_VK(f.vkMapMemory(ctx.device(), memory_, 0, VK_WHOLE_SIZE, 0, &mapped_));
    std::fill_n(static_cast<std::uint32_t*>(mapped_), frames, 0xdeadbeefU);
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = ctx.graphics_queue().family;
    MEMBRIDGE_FRAME_LOOP_VK(f.vkCreateCommandPool(ctx.device(), &pci, nullptr, &pool_));
    commands_.resize(slots);
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = pool_;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = slots;
    MEMBRIDGE_FRAME_LOOP_VK(f.vkAllocateCommandBuffers(ctx.device(), &cai, commands_.data()));
  }
  probe_history(const probe_history&) = delete;
  probe_history& operator=(const probe_history&) = delete;
  ~probe_history() {
    const VolkDeviceTable& f = ctx_.functions();
    if (pool_ != VK_NULL_HANDLE) f.vkDestroyCommandPool(ctx_.device(), pool_, nullptr);
    if (buffer_ != VK_NULL_HANDLE) f.vkDestroyBuffer(ctx_.device(), buffer_, nullptr);
    if (memory_ != VK_NULL_HANDLE) f.vkFreeMemory(ctx_.device(), memory_, nullptr);
  }
  // Records slot's command buffer: copy 4 bytes at `offset` of `source` to history[frame]. The slot's
  // previous use has finished (the renderer's record() waited for the slot's fence).
  VkCommandBuffer record(std::uint32_t slot, VkBuffer source, VkDeviceSize offset, std::size_t frame) {
    const VolkDeviceTable& f = ctx_.functions();
    VkCommandBuffer cb = commands_[slot];
    MEMBRIDGE_FRAME_LOOP_VK(f.vkResetCommandBuffer(cb, 0));
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    MEMBRIDGE_FRAME_LOOP_VK(f.vkBeginCommandBuffer(cb, &bi));
    const VkBufferCopy region{offset, frame * 4, 4};
    f.vkCmdCopyBuffer(cb, source, buffer_, 1, &region);
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    f.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr,
                           0, nullptr);
    MEMBRIDGE_FRAME_LOOP_VK(f.vkEndCommandBuffer(cb));
    return cb;
  }
  [[nodiscard]] std::uint32_t at(std::size_t frame) const { return static_cast<const std::uint32_t*>(mapped_)[frame]; }

 private:
  const vulkan::device_context& ctx_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::vector<VkCommandBuffer> commands_;
};

// The particle frame n's probe reads among `visible` particles: every other frame one from the newest
// doubling (the memory the last growth added), else one anywhere.
std::size_t probe_particle(std::size_t n, std::size_t visible, std::size_t start) {
  const std::size_t low = (n % 2 == 0 && visible > start) ? visible / 2 : 0;
  return low + (n * 104729U + 7U) % (visible - low);
}

}  // namespace

growth_run run_vulkan_growth(fl::session& s, const growth_config& c) {
  growth_run out;
  out.config = c;
  const std::size_t frames = c.frames();
  const std::size_t max_bytes = c.final_particles * particle_bytes;
  const sync::follow_options follow{.headroom = 0, .headroom_fraction = c.mode == follow_mode::ahead ? 1.0 : 0.0};
  auto buffer = fl::value_or_fail(
      cuda::growable_buffer::create(s.device, {.size = c.start_particles * particle_bytes,
                                               .max_size = max_bytes,
                                               .chunks = {.growth_factor = 2.0, .min_chunk = 0, .max_chunk = c.max_chunk}}),
      "growable_buffer::create");
  auto* particles = buffer.data<particles::particle>();
  check_cuda(seed_particles(particles, 0, c.start_particles, s.stream.get()), "seed_particles");
  s.stream.synchronize();
  vulkan::chunked_buffer_info info;
  info.reserved_size = max_bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
  info.mode = vulkan::growth_mode::sparse;
  auto view = fl::value_or_fail(vulkan::chunked_buffer::create(s.context, info), "chunked_buffer::create (sparse)");
  for (;;) {  // setup: the view follows what is mapped (and the headroom), not timed
    if (fl::value_or_fail(sync::follow_step(view, buffer, follow), "follow_step (setup)") == sync::follow_action::none)
      break;
  }
  auto timeline = fl::value_or_fail(sync::frame_timeline::create(s.context, s.device, {.slots = 1}), "frame_timeline::create");
  probe_history history(s.context, frames, s.renderer.frame_slots());

  std::mutex buffer_mutex;  // grow() (producer) and follow_step() (follower)
  std::mutex wake_mutex;
  std::condition_variable wake;
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> covered{view.size()};
  std::atomic<std::size_t> produced{0};
  std::atomic<std::size_t> submitted{0};  // frames the render thread submitted: the producer stays one ahead
  std::vector<std::size_t> counts(frames, 0);
  std::vector<steady::time_point> grew_at(frames);
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto fail = [&](std::exception_ptr e) {
    const std::lock_guard lock(failure_mutex);
    if (!failure) failure = e;
    stop = true;
    wake.notify_all();
  };
  work_log log;
  pacer pace(c.hz);

  std::thread producer([&] {
    try {
      fl::check_cuda(cudaSetDevice(s.ordinal), "cudaSetDevice");
      std::size_t count = c.start_particles;
      const growth_target target{buffer, buffer_mutex, log, particle_bytes};
      for (std::size_t n = 0; n < frames && !stop; ++n) {
        wait_submitted(submitted, n, stop);
        if (stop) break;
        if (const std::size_t grown = grow_for_frame(target, n, count, c.frames_per_step, c.final_particles); grown != count) {
          check_cuda(seed_particles(particles, count, grown, s.stream.get()), "seed_particles (new half)");
          count = grown;
          wake.notify_all();
        }
        counts[n] = count;
        fl::ok_or_fail(timeline.cuda_acquire(s.stream.get(), n), "cuda_acquire");
        check_cuda(particles::step_cuda(particles, count, s.params, 1, s.stream.get()), "step_cuda");
        check_cuda(stamp_particles(particles, count, static_cast<std::uint32_t>(n + 1), s.stream.get()), "stamp");
        fl::ok_or_fail(timeline.cuda_release(s.stream.get(), n), "cuda_release");
        produced.store(n + 1);
        produced.notify_all();
      }
    } catch (...) {
      fail(std::current_exception());
    }
  });
  std::thread follower([&] {
    try {
      while (!stop) {
        sync::follow_action a = sync::follow_action::none;
        std::string what;
        const auto t0 = steady::now();
        {
          const std::lock_guard lock(buffer_mutex);
          const std::size_t chunks = view.chunk_count();
          a = fl::value_or_fail(sync::follow_step(view, buffer, follow), "follow_step");
          if (a == sync::follow_action::imported) what = "import+bind " + mib(buffer.chunk(chunks).size);
          if (a == sync::follow_action::reserved) what = "reserve (map) " + mib(buffer.chunk(buffer.chunk_count() - 1).size);
          if (a == sync::follow_action::dropped) what = "drop";
          covered.store(view.size());
        }
        const auto t1 = steady::now();
        if (a != sync::follow_action::none) {
          log.add(what, t0, t1);
          out.costs[what].ms.push_back(ms_between(t0, t1));
          // At most one step per drawn frame: the work is spread, never back to back.
          for (std::size_t f = submitted.load(); submitted.load() == f && !stop;) submitted.wait(f);
          continue;
        }
        std::unique_lock lock(wake_mutex);
        wake.wait_for(lock, std::chrono::milliseconds(1));
      }
    } catch (...) {
      fail(std::current_exception());
    }
  });
  completion_watcher watcher(frames, [&](std::uint64_t n) {
    return static_cast<bool>(timeline.wait_consumed(n, std::chrono::seconds(10)));
  });

  std::size_t drawn_new_at = 0;
  std::size_t lag_max = 0;
  std::size_t last_count = c.start_particles;
  std::size_t grew_frame = 0;
  try {
    pace.start();
    const VkBuffer vk_buffer = view.buffer();
    for (std::size_t n = 0; n < frames; ++n) {
      pace.wait(n);
      for (std::size_t p = produced.load(); p < n + 1 && !stop; p = produced.load()) produced.wait(p);
      if (stop) break;
      const std::size_t count = counts[n];
      if (count != last_count) {
        last_count = count;
        grew_frame = n;
        drawn_new_at = 0;
      }
      const std::size_t visible = std::min(count, covered.load() / particle_bytes);
      if (visible == count && drawn_new_at == 0 && grew_frame > 0) {
        drawn_new_at = n;
        lag_max = std::max(lag_max, n - grew_frame);
      }
      const std::uint32_t slot = static_cast<std::uint32_t>(n % s.renderer.frame_slots());
      (void)fl::value_or_fail(s.renderer.record(slot, vk_buffer, 0, static_cast<std::uint32_t>(visible), s.view_proj),
                              "particle_renderer::record");
      const std::size_t probe = probe_particle(n, visible, c.start_particles);
      const VkCommandBuffer probe_cb = history.record(slot, vk_buffer, probe * particle_bytes + 28, n);
      const sync::semaphore_op w = timeline.wait_info(n);
      const sync::semaphore_op sig = timeline.signal_info(n);
      const particles::semaphore_wait waits[] = {
          {w.semaphore, w.value, s.renderer.particle_stages() | VK_PIPELINE_STAGE_TRANSFER_BIT}};
      const particles::semaphore_signal signals[] = {{sig.semaphore, sig.value}};
      const VkCommandBuffer extra[] = {probe_cb};
      fl::ok_or_fail(s.renderer.submit(slot, {waits, signals, extra}), "particle_renderer::submit");
      submitted.store(n + 1);
      submitted.notify_all();
    }
  } catch (...) {
    fail(std::current_exception());
  }
  const bool watched = watcher.join();
  stop_waits(stop, submitted, produced, frames);
  wake.notify_all();
  producer.join();
  follower.join();
  (void)s.renderer.wait_idle();
  s.stream.synchronize();
  if (failure) std::rethrow_exception(failure);
  if (!watched) throw bench_failure("part (b), Vulkan: a frame was not consumed within 10 s");
  for (std::size_t n = 0; n < frames; ++n) {
    if (history.at(n) != n + 1)
      throw bench_failure("part (b), Vulkan: frame " + std::to_string(n) + " read stamp " + std::to_string(history.at(n)) +
                          " instead of " + std::to_string(n + 1) + " (" + c.label() + ")");
    ++out.data_checks;
  }
  out.frames = summarise_paced(pace, frames, watcher.done(), log.events(), static_cast<std::size_t>(c.frames_per_step / 2));
  out.peak_capacity = buffer.capacity();
  out.final_bytes = buffer.size();
  out.lag_frames_max = static_cast<double>(lag_max);
  s.renderer.forget_particle_buffers();
  return out;
}

}  // namespace membridge::bench::realtime
