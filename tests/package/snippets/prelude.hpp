// What every C++ block of the documentation may assume (tests/package/compile_doc_snippets.cmake puts
// it in front of each block): the umbrella header, the standard headers below, the `mb` namespace
// alias and the byte-size literals. Anything else a block uses it declares itself.
// An include guard, not #pragma once: the file is also the precompiled header of the snippets
// (GCC may not honour #pragma once across a PCH).
#ifndef MEMBRIDGE_DOC_SNIPPETS_PRELUDE_HPP
#define MEMBRIDGE_DOC_SNIPPETS_PRELUDE_HPP

#include <membridge/membridge.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace mb = membridge;
using namespace membridge::literals;

// A block marked `<!-- snippet: function -->` is the body of a function that returns
// membridge::result<void> and has these names in scope (see compile_doc_snippets.cmake):
//   dev, cu  const mb::cuda::device&            the CUDA device
//   vk       const mb::vulkan::device_context&  the engine's adopted Vulkan device
//   buf      mb::cuda::growable_buffer&         the CUDA buffer
//   view     mb::vulkan::chunked_buffer&        Vulkan's view of buf
//   tl       mb::sync::frame_timeline&          the frame timeline
//   stream   CUstream                           the producer's CUDA stream
//   queue    VkQueue                            a queue of vk's device
//   cmd      VkCommandBuffer                    a recorded command buffer
//   n        std::uint64_t                      the frame number

#endif  // MEMBRIDGE_DOC_SNIPPETS_PRELUDE_HPP
