// bench/peer/report.hpp: the peer benchmark's summaries, goals, table and JSON line (and the line of
// a run that could not happen: fewer than two GPUs, or no peer access).
#pragma once

#include "link.hpp"
#include "spread.hpp"
#include "stats.hpp"
#include "support.hpp"

#include <membridge/cuda/peer.hpp>

#include <optional>
#include <string>
#include <vector>

namespace membridge::bench::peer {

/// The goal of issue 14's benchmark: kernel bandwidth through a peer mapping over the copy engine's
/// on the same link, in the worse direction.
inline constexpr double kernel_over_copy_goal = 0.9;

/// What the command line asked for, for the header and the JSON.
struct run_config {
  int local = 0;             ///< The accessing GPU.
  int remote = 1;            ///< The GPU whose memory is accessed.
  link_config link;          ///< Part 1.
  spread_config spread;      ///< Part 2.
  bool quick = false;        ///< --quick.
};

/// Part 1 summarised: GB/s of each transfer and the kernel / copy engine ratios per direction.
struct link_report {
  summary kernel_read;   ///< Remote -> local by read16.
  summary copy_read;     ///< Remote -> local by the copy engine.
  summary kernel_write;  ///< Local -> remote by write16.
  summary copy_write;    ///< Local -> remote by the copy engine.
  ratio read;            ///< kernel_read / copy_read.
  ratio write;           ///< kernel_write / copy_write.
};

/// Summarises part 1's samples.
[[nodiscard]] link_report summarize_link(const link_samples& s);

/// The table of part 1 and its ratios on stdout.
void print_link(const run_config& config, const link_report& r);

/// The goal line (met or NOT MET, what, the bound and the measurement) on stdout.
void print_goals(const link_report& r);

/// The table of part 2 on stdout.
void print_spread(const run_config& config, const spread_report& r);

/// The whole run as one JSON object, "bench" first.
[[nodiscard]] json report_json(const gpu_pair& gpus, const std::vector<cuda::peer_link>& matrix,
                               const run_config& config, const link_report& link, const spread_report& spread);

/// The JSON object of a run that did not happen: "not_run" holds `reason`, every goal has
/// "measured" and "met" null; `matrix` is the peer matrix when it could be read.
[[nodiscard]] json not_run_json(const std::string& reason, int gpu_count,
                                const std::optional<std::vector<cuda::peer_link>>& matrix, const run_config& config);

}  // namespace membridge::bench::peer
