#include "scene.hpp"

#include "particle_sim_cuda.hpp"

#include <membridge/core/units.hpp>
#include <membridge/sync/same_gpu.hpp>
#include <membridge/sync/vulkan_mirror.hpp>

#include <cstring>

namespace membridge::bench::frame_loop {

namespace {

/// Waits (at most wait_timeout) for everything enqueued on `stream` so far.
void sync_stream(cudaStream_t stream, std::string_view what) {
  const cuda_event done;
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaEventRecord(done.get(), stream));
  wait_event(done, what);
}

/// Checks the context's interop capabilities and makes the session's renderer (drawing with `method`),
/// camera and sim parameters.
void make_renderer(session& s, particles::render_method method) {
  const vulkan::context_capabilities& caps = s.context.capabilities();
  if (!caps.external_memory_fd || !caps.external_semaphore_fd || !caps.timeline_semaphore)
    throw device_unavailable("the Vulkan device " + s.context.name() +
                             " lacks external memory fds, external semaphore fds or timeline semaphores");

  const vulkan::queue_info& graphics = s.context.graphics_queue();
  const particles::renderer_device rd{s.context.get_instance_proc_addr(), s.context.instance(),
                                      s.context.physical_device(),       s.context.device(),
                                      &s.context.functions(),            graphics.family,
                                      graphics.queue};
  particles::renderer_options ro;
  ro.width = image_width;
  ro.height = image_height;
  ro.frame_slots = ring_slots;
  ro.method = method;
  s.method = method;
  s.renderer = value_or_fail(particles::particle_renderer::create(rd, ro), "particle_renderer::create");
  s.view_proj = particles::orbit_view_proj(static_cast<float>(image_width) / static_cast<float>(image_height), 0.6F,
                                           0.45F, 6.0F);
  s.params = particles::default_params();
}

}  // namespace

session open_session(int ordinal, particles::render_method method) {
  open_runtime_device(ordinal);
  auto device = cuda::device::open(ordinal);
  if (!device) throw device_unavailable(device.error().message());
  if (!device->capabilities().timeline_semaphore_interop)
    throw device_unavailable(device->name() + " has no timeline semaphore interop (CUDA cannot wait on Vulkan)");

  session s;
  s.device = std::move(device).value();
  s.ordinal = ordinal;
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaDriverGetVersion(&s.driver_version));
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaRuntimeGetVersion(&s.runtime_version));

  vulkan::create_options options;
  options.validation = false;  // a benchmark: no layers in the way
  auto context = sync::create_vulkan_context_for(s.device, options);
  if (!context) {
    const errc code = context.error().code();
    const std::string text = "no usable Vulkan device on CUDA device " + std::to_string(ordinal) + " (" +
                             s.device.name() + "): " + context.error().message();
    if (code == errc::driver_unavailable || code == errc::invalid_argument || code == errc::unsupported)
      throw device_unavailable(text);
    throw bench_failure(text);
  }
  s.context = std::move(context).value();
  make_renderer(s, method);
  return s;
}

session open_vulkan_session(const device_uuid& uuid, particles::render_method method) {
  session s{.stream = cuda_stream(nullptr)};  // no CUDA call in this process
  vulkan::create_options options;
  options.validation = false;  // a benchmark: no layers in the way
  options.uuid = uuid;
  auto context = vulkan::device_context::create(options);
  if (!context) {
    const errc code = context.error().code();
    const std::string text = "no usable Vulkan device with UUID " + uuid.to_string() + ": " + context.error().message();
    if (code == errc::driver_unavailable || code == errc::invalid_argument || code == errc::unsupported)
      throw device_unavailable(text);
    throw bench_failure(text);
  }
  s.context = std::move(context).value();
  s.ordinal = -1;
  make_renderer(s, method);
  return s;
}

particles::particle* scene::slot_data(std::uint32_t slot) const noexcept {
  return buffer.data<particles::particle>() + std::size_t{slot} * count;
}

scene make_scene(const session& s, std::size_t count) {
  scene sc;
  sc.count = count;
  sc.slot_bytes = count * sizeof(particles::particle);
  const std::size_t ring_bytes = std::size_t{ring_slots} * sc.slot_bytes;
  const auto size = round_up(ring_bytes, s.device.granularity());
  if (!size) throw bench_failure("particle ring of " + std::to_string(count) + " particles overflows");
  // The ring, the renderer's own vertex buffer (staging mode) and some room for the driver.
  const std::size_t needed = *size + sc.slot_bytes + 512_MiB;
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < needed)
    throw device_unavailable(format_bytes(free_bytes) + " of " + format_bytes(total_bytes) + " free, " +
                             std::to_string(count) + " particles need " + format_bytes(needed));

  sc.initial = particles::initial_particles(count, particle_seed, s.params);
  sc.buffer = value_or_fail(cuda::growable_buffer::create(s.device, {.size = *size, .max_size = *size}),
                            "growable_buffer::create(" + format_bytes(*size) + ")");
  sc.view = value_or_fail(sync::mirror_in_vulkan(s.context, sc.buffer), "mirror_in_vulkan");
  const auto segments = sc.view.segments();
  if (segments.size() != 1 || segments[0].offset != 0 || segments[0].size < ring_bytes)
    throw bench_failure("Vulkan's view of the particle ring is not one buffer covering " + format_bytes(ring_bytes) +
                        " (" + std::to_string(segments.size()) + " segments, sparse " +
                        (sc.view.is_sparse() ? "yes" : "no") + ")");
  sc.vk_buffer = segments[0].buffer;
  sc.vk_base = segments[0].buffer_offset;
  sc.host = pinned_memory(sc.slot_bytes);
  return sc;
}

void reset_particles(const session& s, const scene& sc) {
  const std::uint32_t before_first = scene::slot_of(ring_slots - 1);  // the slot of frame -1
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaMemcpyAsync(sc.slot_data(before_first), sc.initial.data(), sc.slot_bytes,
                                            cudaMemcpyHostToDevice, s.stream.get()));
  sync_stream(s.stream.get(), "uploading the initial particles");
}

void enqueue_sim(const session& s, const scene& sc, std::uint64_t frame, int steps, cudaStream_t stream) {
  particles::particle* const dst = sc.slot_data(scene::slot_of(frame));
  const particles::particle* const src = sc.slot_data(scene::slot_of(frame + ring_slots - 1));
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaMemcpyAsync(dst, src, sc.slot_bytes, cudaMemcpyDeviceToDevice, stream));
  for (int k = 0; k < steps; ++k) MEMBRIDGE_FRAME_LOOP_CUDA(particles::step_cuda(dst, sc.count, s.params, 1, stream));
}

void read_particles(const session& s, const scene& sc, std::uint64_t last_frame,
                    std::vector<particles::particle>& out) {
  out.resize(sc.count);
  // On the frames' stream (a plain cudaMemcpy would not wait for a non-blocking stream), through
  // the pinned buffer.
  MEMBRIDGE_FRAME_LOOP_CUDA(cudaMemcpyAsync(sc.host.get(), sc.slot_data(scene::slot_of(last_frame)), sc.slot_bytes,
                                            cudaMemcpyDeviceToHost, s.stream.get()));
  sync_stream(s.stream.get(), "reading the particles back");
  std::memcpy(out.data(), sc.host.get(), sc.slot_bytes);
}

image_check check_last_image(session& s) {
  constexpr int lit_threshold = 24;
  std::vector<std::uint8_t> rgba;
  ok_or_fail(s.renderer.read_back(rgba), "particle_renderer::read_back");
  image_check out;
  out.pixels = std::size_t{image_width} * image_height;
  if (rgba.size() != out.pixels * 4)
    throw bench_failure("read_back returned " + std::to_string(rgba.size()) + " bytes, expected " +
                        std::to_string(out.pixels * 4));
  const auto background = s.renderer.background_rgb8();
  std::uint64_t hash = 14695981039346656037ULL;
  for (std::size_t i = 0; i < out.pixels; ++i) {
    const std::uint8_t* px = rgba.data() + 4 * i;
    // Lit: some channel clearly above the background (rounding of the clear colour differs by driver).
    const auto above = [&](int c) { return px[c] > background[static_cast<std::size_t>(c)] + lit_threshold; };
    if (above(0) || above(1) || above(2)) ++out.lit_pixels;
  }
  for (const std::uint8_t byte : rgba) hash = (hash ^ byte) * 1099511628211ULL;
  out.hash = hash;
  return out;
}

}  // namespace membridge::bench::frame_loop
