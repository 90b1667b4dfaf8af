// The CPU path of membridge_heightfield_gl (no CUDA device, --cpu, CI): the same wave equation on the
// CPU, written into host-visible memory that Vulkan (lavapipe in CI) allocated exportable and GL
// (llvmpipe) imports as a buffer: GL draws what the CPU wrote without a copy through the GL API.
// If GL refuses the import, a plain GL buffer is filled with glNamedBufferSubData instead.
#include "app.hpp"
#include "wave_sim_cpu.hpp"

#include <membridge/core/units.hpp>
#include <membridge/gl/buffer.hpp>
#include <membridge/gl/headless_context.hpp>
#include <membridge/os/borrowed_fd.hpp>
#include <membridge/os/unique_fd.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <volk.h>

#include <epoxy/gl.h>

#include <array>
#include <chrono>
#include <cstring>
#include <ostream>
#include <utility>

namespace heightfield {


namespace {

error vk_error(VkResult rc, const char* call, std::string context = {}) {
  const errc code = rc == VK_ERROR_OUT_OF_HOST_MEMORY || rc == VK_ERROR_OUT_OF_DEVICE_MEMORY ? errc::out_of_memory
                                                                                                : errc::internal;
  return error::from_native(code, membridge::error_source::vulkan, rc, "VkResult " + std::to_string(rc), call,
                            std::move(context));
}

/// Host-visible, coherent Vulkan memory allocated exportable as an OPAQUE_FD and mapped: the CPU
/// writes it, GL imports it. A storage buffer is made on it only to learn the memory types and
/// whether the driver wants a dedicated allocation.
class exported_host_memory {
 public:
  static result<exported_host_memory> allocate(const membridge::vulkan::device_context& vk, std::size_t bytes) {
    const VolkDeviceTable& fn = vk.functions();
    exported_host_memory m;
    m.vk_ = &vk;
    m.size_ = bytes;
    VkExternalMemoryBufferCreateInfo external{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
    external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.pNext = &external;
    bci.size = bytes;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    if (const VkResult rc = fn.vkCreateBuffer(vk.device(), &bci, nullptr, &m.buffer_); rc != VK_SUCCESS)
      return vk_error(rc, "vkCreateBuffer", "an exportable storage buffer of " + membridge::format_bytes(bytes));
    VkMemoryDedicatedRequirements dedicated_req{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_REQUIREMENTS};
    VkMemoryRequirements2 req{VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2};
    req.pNext = &dedicated_req;
    VkBufferMemoryRequirementsInfo2 req_info{VK_STRUCTURE_TYPE_BUFFER_MEMORY_REQUIREMENTS_INFO_2};
    req_info.buffer = m.buffer_;
    fn.vkGetBufferMemoryRequirements2(vk.device(), &req_info, &req);
    MEMBRIDGE_TRY_ASSIGN(const std::uint32_t type,
                         vk.find_memory_type(req.memoryRequirements.memoryTypeBits,
                                             VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT));
    m.dedicated_ = dedicated_req.requiresDedicatedAllocation == VK_TRUE;
    m.size_ = static_cast<std::size_t>(req.memoryRequirements.size);
    VkMemoryDedicatedAllocateInfo dedicated{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO};
    dedicated.buffer = m.buffer_;
    VkExportMemoryAllocateInfo export_info{VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO};
    export_info.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    export_info.pNext = m.dedicated_ ? &dedicated : nullptr;
    VkMemoryAllocateInfo info{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    info.pNext = &export_info;
    info.allocationSize = req.memoryRequirements.size;
    info.memoryTypeIndex = type;
    if (const VkResult rc = fn.vkAllocateMemory(vk.device(), &info, nullptr, &m.memory_); rc != VK_SUCCESS)
      return vk_error(rc, "vkAllocateMemory", "exportable host-visible memory of " + membridge::format_bytes(bytes));
    if (const VkResult rc = fn.vkBindBufferMemory(vk.device(), m.buffer_, m.memory_, 0); rc != VK_SUCCESS)
      return vk_error(rc, "vkBindBufferMemory");
    if (const VkResult rc = fn.vkMapMemory(vk.device(), m.memory_, 0, VK_WHOLE_SIZE, 0, &m.mapped_); rc != VK_SUCCESS)
      return vk_error(rc, "vkMapMemory");
    return m;
  }

  exported_host_memory() noexcept = default;
  exported_host_memory(const exported_host_memory&) = delete;
  exported_host_memory& operator=(const exported_host_memory&) = delete;
  exported_host_memory(exported_host_memory&& other) noexcept
      : vk_(other.vk_),
        buffer_(std::exchange(other.buffer_, VK_NULL_HANDLE)),
        memory_(std::exchange(other.memory_, VK_NULL_HANDLE)),
        mapped_(std::exchange(other.mapped_, nullptr)),
        size_(other.size_),
        dedicated_(other.dedicated_) {}
  exported_host_memory& operator=(exported_host_memory&&) = delete;
  ~exported_host_memory() {
    if (vk_ == nullptr) return;
    const VolkDeviceTable& fn = vk_->functions();
    if (buffer_ != VK_NULL_HANDLE) fn.vkDestroyBuffer(vk_->device(), buffer_, nullptr);
    if (memory_ != VK_NULL_HANDLE) fn.vkFreeMemory(vk_->device(), memory_, nullptr);  // unmaps too
  }

  /// A new OPAQUE_FD of the memory (close-on-exec). Ownership: the caller owns it.
  [[nodiscard]] result<membridge::os::unique_fd> export_fd() const {
    VkMemoryGetFdInfoKHR info{VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR};
    info.memory = memory_;
    info.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    int fd = -1;
    if (const VkResult rc = vk_->functions().vkGetMemoryFdKHR(vk_->device(), &info, &fd); rc != VK_SUCCESS)
      return vk_error(rc, "vkGetMemoryFdKHR", "exporting the heights' memory");
    auto owned = membridge::os::unique_fd::from_native(fd);
    MEMBRIDGE_TRY(membridge::os::set_close_on_exec(owned));
    return owned;
  }
  [[nodiscard]] std::byte* data() const noexcept { return static_cast<std::byte*>(mapped_); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool dedicated() const noexcept { return dedicated_; }

 private:
  const membridge::vulkan::device_context* vk_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
  std::size_t size_ = 0;
  bool dedicated_ = false;
};

/// The CPU producer: steps the field on the render thread and writes frame n into slot n % S, either
/// straight into the imported memory (mapped) or, in the fallback, with glNamedBufferSubData. The
/// loop's fences already keep GL off the slot being written (host ordering).
class cpu_source final : public frame_source {
 public:
  cpu_source(const app_options& o, std::size_t slot_stride, unsigned int buffer, std::byte* mapped)
      : wave_(o.grid, wave_params{}), o_(o), slot_stride_(slot_stride), buffer_(buffer), mapped_(mapped) {}

  result<draw_input> acquire(std::uint64_t frame) override {
    const auto start = std::chrono::steady_clock::now();
    std::array<drop, max_drops_per_frame> drops{};
    const std::size_t count = drops_for_frame(o_.seed, frame, o_.grid, drops.data(), drops.size());
    wave_.add_drops(std::span<const drop>(drops.data(), count));
    wave_.step(o_.steps);
    const std::span<const float> heights = wave_.heights();
    const std::size_t bytes = heights.size_bytes();
    const std::size_t offset = (frame % o_.slots) * slot_stride_;
    if (mapped_ != nullptr) {
      std::memcpy(mapped_ + offset, heights.data(), bytes);
    } else {
      glNamedBufferSubData(buffer_, static_cast<GLintptr>(offset), static_cast<GLsizeiptr>(bytes), heights.data());
      if (const GLenum rc = glGetError(); rc != GL_NO_ERROR)
        return error::from_native(errc::internal, membridge::error_source::gl, rc, "GL error", "glNamedBufferSubData");
    }
    sim_ms_.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    return draw_input{buffer_, offset, bytes};
  }
  result<void> release(std::uint64_t) override { return membridge::ok(); }
  result<void> retired(std::uint64_t) override { return membridge::ok(); }
  result<void> finish(std::uint64_t) override { return membridge::ok(); }
  std::vector<double> sim_times_ms() const override { return sim_ms_; }
  std::string sim_clock() const override { return "CPU clock, 1 thread"; }

 private:
  cpu_wave wave_;
  const app_options& o_;
  std::size_t slot_stride_;
  unsigned int buffer_;
  std::byte* mapped_;
  std::vector<double> sim_ms_;
};

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

result<void> run_cpu(run_environment& env, exit_status& status) {
  app_options& o = env.options;
  if (o.grid == 0) o.grid = default_cpu_grid;

  // Vulkan (lavapipe in CI) allocates the memory; GL (llvmpipe) imports it.
  MEMBRIDGE_TRY_ASSIGN(auto vk, membridge::vulkan::device_context::create().with_context(
                                    "creating a Vulkan device to allocate exportable memory"));

  // The GL context: a window's (GLFW on EGL) or a headless one, software allowed (llvmpipe).
  gl_target target;
  if (env.windowed) {
    MEMBRIDGE_TRY(open_window(target, o.width, o.height, "membridge heightfield (CPU path)", {},
                              "adopting the window's GL context", *env.out));
    if (!target.window) apply_mode_defaults(o, false);
  }
  if (!target.window) {
    membridge::gl::headless_options ho;
    ho.allow_software = true;
    MEMBRIDGE_TRY_ASSIGN(target.headless, membridge::gl::headless_context::create(ho).with_context(
                                              "creating a headless GL context (EGL)"));
  }
  const membridge::gl::context& gl = target.gl();
  gl_window* const window = target.window.get();
  {
    MEMBRIDGE_TRY_ASSIGN(auto renderer, heightfield_renderer::create({o.width, o.height, o.grid, 4}));
    const std::size_t slot_bytes = static_cast<std::size_t>(o.grid) * static_cast<std::size_t>(o.grid) * sizeof(float);
    const std::size_t slot_stride = *membridge::round_up(slot_bytes, renderer.storage_offset_alignment());
    const std::size_t total = slot_stride * o.slots;

    // Mesa 22.3's llvmpipe refuses (GL_OUT_OF_MEMORY from glNamedBufferStorageMemEXT) a buffer that
    // ends within 48 bytes of the imported memory's end, so the allocation gets a page of slack the
    // buffer does not cover. Other drivers do not mind the slack.
    constexpr std::size_t import_slack = 4096;
    MEMBRIDGE_TRY_ASSIGN(auto memory, exported_host_memory::allocate(vk, total + import_slack));
    std::memset(memory.data(), 0, total);
    path_description d;
    d.path = "CPU path (" + env.cpu_reason + ")";
    d.device = "the CPU";
    membridge::gl::buffer imported;
    GLuint plain = 0;
    std::string why_not;
    const auto import_start = std::chrono::steady_clock::now();
    auto fd = memory.export_fd();
    if (fd) {
      auto made = membridge::gl::buffer::import(gl, membridge::os::borrowed_fd(*fd),
                                                {.size = memory.size(), .dedicated = memory.dedicated()}, total, 0);
      if (made) imported = std::move(*made);
      else why_not = made.error().message();
    } else {
      why_not = fd.error().message();
    }
    d.import_ms = ms_since(import_start);
    const bool same_device = gl.is_on(vk.uuid());
    if (imported.valid()) {
      d.memory = std::to_string(o.slots) + " slots x " + membridge::format_bytes(slot_bytes) + " in " +
                 membridge::format_bytes(memory.size()) + " of host-visible memory exported by Vulkan (" + vk.name() +
                 ") and imported by GL as one buffer (GL_EXT_memory_object_fd" +
                 (same_device ? ", same device UUID" : ", other device UUID") +
                 "); the CPU writes the heights there, GL draws them: no upload";
    } else {
      *env.out << "membridge_heightfield_gl: GL did not import the Vulkan memory (" << why_not
               << "); falling back to a plain GL buffer filled with glNamedBufferSubData\n";
      glCreateBuffers(1, &plain);
      glNamedBufferStorage(plain, static_cast<GLsizeiptr>(total), nullptr, GL_DYNAMIC_STORAGE_BIT);
      if (const GLenum rc = glGetError(); rc != GL_NO_ERROR) {
        glDeleteBuffers(1, &plain);
        return error::from_native(errc::internal, membridge::error_source::gl, rc, "GL error", "glNamedBufferStorage",
                                  "the fallback buffer");
      }
      d.memory = std::to_string(o.slots) + " slots x " + membridge::format_bytes(slot_bytes) +
                 " in a plain GL buffer, uploaded with glNamedBufferSubData every frame (the import failed)";
    }
    d.ordering = "host: the CPU writes slot n % " + std::to_string(o.slots) +
                 " after a GL fence says frame n - " + std::to_string(o.slots) + " is drawn (no CUDA, no semaphores)";
    cpu_source source(o, slot_stride, imported.valid() ? imported.name() : plain,
                      imported.valid() ? memory.data() : nullptr);
    result<void> ran = run_frames(gl, renderer, source, d, window, env, status);
    if (plain != 0) glDeleteBuffers(1, &plain);
    MEMBRIDGE_TRY(std::move(ran));
  }  // GL objects go while the context is current; then the context, then the Vulkan memory and device
  return membridge::ok();
}

}  // namespace heightfield
