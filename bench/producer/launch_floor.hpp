// bench/producer/launch_floor.hpp: where producer_graph's host time per frame comes from. Three ways
// of launching the same one-kernel frame step, interleaved, on a scratch frame timeline of one slot
// (no consumer): a graph of the kernel alone; the producer graph (consumed wait, kernel, produced
// signal) launched as instantiated, with no parameter update; the producer graph through
// producer_graph::launch (both semaphore values updated, then cuGraphLaunch), the scratch consumed
// semaphore signalled from the host before each launch (outside the timed call). The first is the
// floor of any graph launch; the second, of a graph with the two external-semaphore nodes; the gap
// between the second and third is what the per-frame value updates cost, inside cuGraphLaunch too.
#pragma once

#include <membridge/cuda/device.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <cstdint>
#include <vector>

namespace membridge::bench::producer_bench {

/// Host time per launch call (microseconds), one entry per timed launch, per way of launching.
struct launch_floor_samples {
  std::vector<double> kernel_graph_us;        ///< cudaGraphLaunch of a graph holding only the kernel.
  std::vector<double> semaphore_graph_us;     ///< cudaGraphLaunch of the producer graph, no update.
  std::vector<double> updated_graph_us;       ///< producer_graph::launch: two updates + cuGraphLaunch.
  std::vector<double> updated_launch_only_us; ///< Of the above, the cuGraphLaunch call alone.
};

/// Runs `rounds` rounds of `launches` launches of each way, interleaved (the order rotating per round),
/// synchronising the stream every 16 launches outside the timed calls. Throws bench_failure on a
/// failed call.
[[nodiscard]] launch_floor_samples measure_launch_floor(const cuda::device& cu, const vulkan::device_context& vk,
                                                        int rounds, int launches);

}  // namespace membridge::bench::producer_bench
