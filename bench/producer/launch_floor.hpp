// bench/producer/launch_floor.hpp: where producer_graph's host time per frame comes from. Nine ways
// of launching the same one-kernel frame step, interleaved, on scratch frame timelines of one slot
// (no consumer):
// - a graph of the kernel alone, the floor of any graph launch;
// - the kernel as a child graph node (as producer_graph holds the work);
// - the kernel then a produced signal node; a consumed wait node then the kernel (no update): what
//   each external-semaphore node adds alone;
// - the producer graph (consumed wait, kernel, produced signal) launched as instantiated, no update;
// - wait, kernel and signal captured on a stream into one flat graph (no child node), no update;
// - the producer graph through producer_graph::launch (both semaphore values updated, then
//   cuGraphLaunch): against the no-update launch, what the per-frame updates cost, inside
//   cuGraphLaunch too;
// - the producer-shaped graph built here through membridge's driver table, updated either by the
//   per-type calls producer_graph makes (cuGraphExecExternalSemaphores{Wait,Signal}NodeSetParams) or
//   by the generic cuGraphExecNodeSetParams (CUDA 12.2+, looked up through the runtime): whether the
//   generic call is cheaper.
// Each updated way has a timeline of its own, its consumed semaphore signalled from the host before
// each launch (outside the timed call); the fixed ways share one (the signal repeats value 1, the
// wait is for 0).
#pragma once

#include <membridge/cuda/device.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace membridge::bench::producer_bench {

/// Host time per launch call (microseconds), one entry per timed launch, per way of launching.
struct launch_floor_samples {
  std::vector<double> kernel_graph_us;          ///< cuGraphLaunch of a graph holding only the kernel.
  std::vector<double> child_graph_us;           ///< cuGraphLaunch of the kernel as a child graph node.
  std::vector<double> signal_graph_us;          ///< cuGraphLaunch of kernel -> produced signal, no update.
  std::vector<double> wait_graph_us;            ///< cuGraphLaunch of consumed wait -> kernel, no update.
  std::vector<double> semaphore_graph_us;       ///< cuGraphLaunch of the producer graph, no update.
  std::vector<double> captured_graph_us;        ///< cuGraphLaunch of wait, kernel, signal captured flat, no update.
  std::vector<double> updated_graph_us;         ///< producer_graph::launch: two updates + cuGraphLaunch.
  std::vector<double> updated_launch_only_us;   ///< Of the above, the cuGraphLaunch call alone.
  std::vector<double> typed_updated_graph_us;   ///< Built here: two per-type SetParams + cuGraphLaunch.
  std::vector<double> typed_update_only_us;     ///< Of the above, the two SetParams calls.
  std::vector<double> generic_updated_graph_us; ///< Built here: two cuGraphExecNodeSetParams + cuGraphLaunch.
  std::vector<double> generic_update_only_us;   ///< Of the above, the two SetParams calls.
  std::string captured_error;  ///< Why captured_graph_us is empty (the driver refused the capture), else empty.
  std::string generic_error;   ///< Why the generic_* samples are empty (no such call, it failed), else empty.
};

/// Runs `rounds` rounds of `launches` launches of each way, interleaved (the order rotating per round),
/// synchronising the stream every 16 launches outside the timed calls. Throws bench_failure on a
/// failed call, except for the flat capture and the generic update (their *_error says why they
/// were left out).
[[nodiscard]] launch_floor_samples measure_launch_floor(const cuda::device& cu, const vulkan::device_context& vk,
                                                        int rounds, int launches);

}  // namespace membridge::bench::producer_bench
