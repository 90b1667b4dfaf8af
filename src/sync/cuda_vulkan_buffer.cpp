// cuda_vulkan_buffer: a growable CUDA buffer, its Vulkan view and the worker that keeps them in step.
#include <membridge/sync/cuda_vulkan_buffer.hpp>

#include <membridge/os/start_thread.hpp>
#include <membridge/sync/same_gpu.hpp>
#include <membridge/sync/vulkan_mirror.hpp>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace membridge::sync {

struct cuda_vulkan_buffer::state {
  mutable std::mutex lock;
  std::condition_variable wake;               // the worker waits here for work or stop
  mutable std::condition_variable followed;   // wait_followed() waits here
  cuda::growable_buffer buffer;               // guarded by lock
  vulkan::chunked_buffer view;                // guarded by lock; declared after buffer: destroyed first
  follow_options follow;
  std::uint64_t requested = 0;                // resizes so far (guarded by lock)
  std::uint64_t done = 0;                     // the last `requested` the worker finished (guarded by lock)
  std::optional<error> failure;               // the worker's error for `done` (guarded by lock)
  bool stopping = false;                      // guarded by lock
  std::thread worker;

  // The worker: one follow step per lock hold until the view is in step, then sleep until woken.
  void run() {
    std::unique_lock<std::mutex> held(lock);
    while (!stopping) {
      wake.wait(held, [&] { return stopping || done != requested; });
      if (stopping) break;
      const std::uint64_t target = requested;
      auto step = follow_step(view, buffer, follow);
      if (!step || *step == follow_action::none) {
        if (!step) failure = std::move(step).error();
        done = target;
        followed.notify_all();
        continue;
      }
      // More to do: let readers (with_view) and resize() in between steps.
      held.unlock();
      std::this_thread::yield();
      held.lock();
    }
  }

};

cuda_vulkan_buffer::cuda_vulkan_buffer() noexcept = default;
cuda_vulkan_buffer::cuda_vulkan_buffer(cuda_vulkan_buffer&&) noexcept = default;

cuda_vulkan_buffer& cuda_vulkan_buffer::operator=(cuda_vulkan_buffer&& other) noexcept {
  if (this != &other) {
    stop();
    state_ = std::move(other.state_);
  }
  return *this;
}

cuda_vulkan_buffer::~cuda_vulkan_buffer() { stop(); }

void cuda_vulkan_buffer::stop() noexcept {
  if (state_ == nullptr) return;
  {
    const std::lock_guard<std::mutex> guard(state_->lock);
    state_->stopping = true;
  }
  state_->wake.notify_all();
  if (state_->worker.joinable()) state_->worker.join();
  state_.reset();
}

result<cuda_vulkan_buffer> cuda_vulkan_buffer::create(const cuda::device& cuda_device,
                                                      const vulkan::device_context& context,
                                                      const cuda_vulkan_buffer_options& options) {
  constexpr const char* call = "cuda_vulkan_buffer::create";
  if (!cuda_device.valid() || !context.valid())
    return error(errc::invalid_argument, call, "the CUDA device and the Vulkan context must both be set");
  MEMBRIDGE_TRY(require_same_gpu(cuda_device, context));
  auto s = std::make_unique<state>();
  MEMBRIDGE_TRY_ASSIGN(s->buffer, cuda::growable_buffer::create(cuda_device, options.buffer));
  MEMBRIDGE_TRY_ASSIGN(s->view, mirror_in_vulkan(context, s->buffer, options.view));
  s->follow = options.follow;
  // The headroom (if any) is followed from the start.
  s->requested = options.follow.headroom != 0 || options.follow.headroom_fraction > 0.0 ? 1 : 0;
  state* raw = s.get();
  MEMBRIDGE_TRY_ASSIGN(s->worker, os::start_thread("cuda_vulkan_buffer's growth worker", [raw] { raw->run(); }));
  cuda_vulkan_buffer out;
  out.state_ = std::move(s);
  return out;
}

result<void> cuda_vulkan_buffer::resize(std::size_t new_size) {
  if (state_ == nullptr) return error(errc::invalid_argument, "cuda_vulkan_buffer::resize", "the object is empty");
  {
    const std::lock_guard<std::mutex> guard(state_->lock);
    MEMBRIDGE_TRY(state_->buffer.resize(new_size));
    ++state_->requested;
    state_->failure.reset();
  }
  state_->wake.notify_all();
  return ok();
}

result<void> cuda_vulkan_buffer::wait_followed(std::chrono::nanoseconds timeout) const {
  constexpr const char* call = "cuda_vulkan_buffer::wait_followed";
  if (state_ == nullptr) return error(errc::invalid_argument, call, "the object is empty");
  std::unique_lock<std::mutex> held(state_->lock);
  const std::uint64_t target = state_->requested;
  if (!state_->followed.wait_for(held, timeout, [&] { return state_->done >= target; }))
    return error(errc::timeout, call, "the worker has not brought the Vulkan view in step yet");
  if (state_->failure) return *state_->failure;
  return ok();
}

CUdeviceptr cuda_vulkan_buffer::address() const noexcept {
  return state_ != nullptr ? state_->buffer.address() : CUdeviceptr{0};
}

std::size_t cuda_vulkan_buffer::size() const {
  if (state_ == nullptr) return 0;
  const std::lock_guard<std::mutex> guard(state_->lock);
  return state_->buffer.size();
}

void cuda_vulkan_buffer::with_view(
    const std::function<void(const vulkan::chunked_buffer& view, std::size_t cuda_size)>& fn) const {
  if (state_ == nullptr || !fn) return;
  const std::lock_guard<std::mutex> guard(state_->lock);
  fn(state_->view, state_->buffer.size());
}

}  // namespace membridge::sync
