// tools/membridge-view/renderer.hpp: draws laid-out buffers (ipc/layout.hpp) straight from the
// storage buffers they were imported into: points and heightfields in one 3D scene, images as 2D
// insets. Offscreen into an RGBA8 image it owns (the window blits it; headless reads it back).
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/ipc/layout.hpp>
#include <membridge/vulkan/chunked_buffer.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <glm/mat4x4.hpp>
#include <vulkan/vulkan_core.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace membridge_view {

/// The colour map r32f values are drawn through.
enum class colour_map : std::uint8_t { turbo = 0, viridis = 1 };

/// One buffer to draw this frame: which bytes of its Vulkan view, laid out how.
struct draw_item {
  std::uint32_t id = 0;                    ///< The buffer's index (its descriptor set and scratch buffer).
  membridge::ipc::layout layout;           ///< How the bytes are laid out.
  /// The view's pieces. Ownership: borrowed from the buffer's chunked_buffer.
  std::span<const membridge::vulkan::buffer_segment> segments;
  std::uint64_t offset = 0;                ///< The slot's first byte in the view.
  std::uint64_t bytes = 0;                 ///< The slot's bytes drawn (whole elements).
  std::uint64_t count = 0;                 ///< Elements (points) or texels (image, heightfield).
  float range_min = 0.0f;                  ///< r32f values drawn as the colour map's first colour.
  float range_max = 1.0f;                  ///< ... and its last.
  bool sample_range = false;               ///< Sample the r32f values this frame (sampled_range() after wait()).
};

/// A semaphore the frame's submit waits for or signals (timeline value; 0 for binary).
struct semaphore_use {
  VkSemaphore semaphore = VK_NULL_HANDLE;  ///< Ownership: borrowed.
  std::uint64_t value = 0;                 ///< Timeline value.
  VkPipelineStageFlags stages = 0;         ///< Waits only: the stages that wait.
};

/// What a frame's submit waits for and signals, and extra command buffers after the drawing (a blit).
struct frame_sync {
  std::vector<semaphore_use> waits;              ///< Waited before the commands.
  std::vector<semaphore_use> signals;            ///< Signalled when done.
  std::vector<VkCommandBuffer> extra_commands;   ///< Submitted after the renderer's. Ownership: borrowed.
};

/// The stages that read the published buffers (a produced-wait names them).
inline constexpr VkPipelineStageFlags read_stages =
    VK_PIPELINE_STAGE_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;

/// The offscreen renderer. One frame in flight: draw() waits for the previous frame first.
/// Move-only; the destructor waits for the GPU and destroys what it made (never the context).
class renderer {
 public:
  /// Creates the image (width x height), pipelines and buffers on `context` (borrowed; must outlive it).
  /// Errors: Vulkan errors (out_of_memory, ...).
  [[nodiscard]] static membridge::result<renderer> create(const membridge::vulkan::device_context& context,
                                                          std::uint32_t width, std::uint32_t height, colour_map map);
  renderer() noexcept;
  renderer(renderer&&) noexcept;
  renderer& operator=(renderer&&) noexcept;
  ~renderer();

  /// Waits for the previous frame, records `items` (points and heightfields with `view_proj`, images
  /// as insets) and submits with `sync`. A slot that lies in one segment at an aligned offset is read
  /// in place; one that spans segments is first copied into the buffer's scratch buffer on the GPU.
  /// Errors: invalid_argument for an item the device cannot bind (range too large); Vulkan errors.
  [[nodiscard]] membridge::result<void> draw(std::span<const draw_item> items, const glm::mat4& view_proj,
                                             const frame_sync& sync);
  /// Waits until the last frame finished (up to `timeout_ns`). Errors: timeout; Vulkan errors.
  [[nodiscard]] membridge::result<void> wait(std::uint64_t timeout_ns = UINT64_MAX);
  /// The min and max of the values sampled for buffer `id` by the last finished frame that sampled
  /// it (call after wait()); nothing when none was sampled or all were NaN.
  [[nodiscard]] std::optional<std::pair<float, float>> sampled_range(std::uint32_t id) const;
  /// Forgets buffer `id`'s scratch buffer and samples (its view changed or went). The GPU must be done with it.
  void forget(std::uint32_t id);
  /// Copies the image to the host (after the last frame): width * height * 4 bytes, rows top to bottom.
  /// Errors: Vulkan errors.
  [[nodiscard]] membridge::result<std::vector<std::uint8_t>> read_back();

  /// The image drawn into (TRANSFER_SRC_OPTIMAL after a frame). Ownership: owned by the renderer.
  [[nodiscard]] VkImage image() const noexcept;
  /// Its size.
  [[nodiscard]] std::uint32_t width() const noexcept;
  [[nodiscard]] std::uint32_t height() const noexcept;  ///< Its height.
  /// True when created.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

  struct state;  ///< Internal (renderer.cpp).

 private:
  explicit renderer(std::unique_ptr<state> s) noexcept;
  std::unique_ptr<state> state_;
};

}  // namespace membridge_view
