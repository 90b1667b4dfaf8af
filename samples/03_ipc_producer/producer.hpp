// samples/03_ipc_producer/producer.hpp: the producer process: the CUDA simulation of sample 01 in a
// growable_buffer published to other processes, one frame_publisher handoff per frame, growth in place.
#pragma once

#include "producer_options.hpp"

#include <membridge/core/result.hpp>

#include <iosfwd>
#include <string>

namespace particles::ipc_producer {

/// Why the producer cannot run here (no CUDA driver or device), or an empty string when it can.
/// Initialises the CUDA runtime on device 0 when it succeeds.
[[nodiscard]] std::string cuda_unavailable_reason();

/// The number of CUDA devices the runtime sees (0 when it cannot count them).
[[nodiscard]] int cuda_device_count();

/// Asks run() to stop after the frame it is producing (async-signal-safe: main() calls it from its
/// SIGINT/SIGTERM handler); `signal_number` is reported in the output.
void request_stop(int signal_number) noexcept;

/// Publishes the buffer and the frame timeline under options.name and produces frames until
/// options.frames were made or request_stop(); then waits (up to 2 s) until the consumer, if any,
/// drew the last frame, and says goodbye to every subscriber. Prints the header, subscriber events,
/// a statistics line per second, each growth and a summary to `out`.
/// With options.sim_device != options.render_device the kernels run on the simulation's GPU and a
/// sync::cross_gpu_link moves each frame into the published buffer on the render GPU.
/// Errors: membridge's (CUDA devices, Vulkan device, publisher, cross-GPU link, growth) and the CUDA
/// runtime's.
[[nodiscard]] membridge::result<void> run(const producer_options& options, std::ostream& out);

}  // namespace particles::ipc_producer
