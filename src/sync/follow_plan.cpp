#include <membridge/sync/follow_plan.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace membridge::sync {

namespace {

// size + the larger headroom, saturating, and never past max_size.
std::size_t wanted_capacity(const follow_state& s, const follow_options& o) {
  const double by_fraction = o.headroom_fraction * static_cast<double>(s.size);
  const auto limit = static_cast<double>(std::numeric_limits<std::size_t>::max());
  const std::size_t fraction_bytes = by_fraction >= limit ? std::numeric_limits<std::size_t>::max()
                                                          : static_cast<std::size_t>(std::ceil(by_fraction));
  const std::size_t extra = std::max(o.headroom, fraction_bytes);
  const std::size_t wanted = extra > s.max_size - std::min(s.size, s.max_size) ? s.max_size : s.size + extra;
  return std::min(wanted, s.max_size);
}

}  // namespace

result<follow_decision> plan_follow_step(const follow_state& state, const follow_options& options,
                                         const cuda::chunk_policy& policy) {
  if (!std::isfinite(options.headroom_fraction) || options.headroom_fraction < 0.0)
    return error(errc::invalid_argument, "plan_follow_step", "headroom_fraction must be finite and >= 0");
  if (state.view_chunks > state.buffer_chunks) return follow_decision{follow_action::dropped, 0};
  if (state.view_chunks < state.buffer_chunks) return follow_decision{follow_action::imported, 0};
  const std::size_t wanted = wanted_capacity(state, options);
  if (wanted <= state.capacity || state.capacity >= state.max_size) return follow_decision{};
  MEMBRIDGE_TRY_ASSIGN(const auto sizes,
                       cuda::plan_growth(policy, state.capacity, wanted, state.max_size, state.granularity));
  if (sizes.empty()) return follow_decision{};
  return follow_decision{follow_action::reserved, state.capacity + sizes.front()};
}

}  // namespace membridge::sync
