#include <membridge/core/units.hpp>
#include <membridge/cuda/chunk_policy.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace membridge::cuda {

result<void> validate(const chunk_policy& policy, std::size_t granularity) {
  if (granularity == 0 || (granularity & (granularity - 1)) != 0)
    return error(errc::invalid_argument, "chunk_policy", "granularity " + std::to_string(granularity) +
                                                             " is not a power of two");
  if (!std::isfinite(policy.growth_factor) || policy.growth_factor < 1.0)
    return error(errc::invalid_argument, "chunk_policy",
                 "growth_factor must be a finite number >= 1.0, not " + std::to_string(policy.growth_factor));
  if (policy.max_chunk != 0 && !is_aligned(policy.max_chunk, granularity))
    return error(errc::invalid_argument, "chunk_policy",
                 "max_chunk (" + format_bytes(policy.max_chunk) + ") is not a multiple of the granularity (" +
                     format_bytes(granularity) + ")");
  if (policy.max_chunk != 0 && policy.min_chunk > policy.max_chunk)
    return error(errc::invalid_argument, "chunk_policy",
                 "min_chunk (" + format_bytes(policy.min_chunk) + ") exceeds max_chunk (" +
                     format_bytes(policy.max_chunk) + ")");
  return ok();
}

result<std::vector<std::size_t>> plan_growth(const chunk_policy& policy, std::size_t capacity, std::size_t required,
                                             std::size_t max_size, std::size_t granularity) {
  MEMBRIDGE_TRY(validate(policy, granularity));
  if (!is_aligned(capacity, granularity))
    return error(errc::invalid_argument, "plan_growth",
                 "capacity " + std::to_string(capacity) + " is not a multiple of the granularity");
  std::vector<std::size_t> sizes;
  if (required <= capacity) return sizes;
  if (required > max_size)
    return error(errc::out_of_memory, "plan_growth",
                 "the reserved address range is full: " + format_bytes(required) + " requested, " +
                     format_bytes(max_size) + " reserved");
  // Round everything to whole granules; max_size is a granule multiple for any reserved range, but a
  // caller may pass any number, so round it down to stay inside.
  const std::size_t limit = max_size / granularity * granularity;
  const std::size_t needed = *round_up(required, granularity);  // <= limit since required <= max_size ...
  if (needed > limit)                                           // ... unless max_size is not a multiple
    return error(errc::out_of_memory, "plan_growth",
                 "the reserved address range is full: " + format_bytes(needed) + " needed, " +
                     format_bytes(limit) + " usable");

  // Geometric target: capacity * growth_factor, at least one minimum chunk more, at least `needed`,
  // never past the range. Computed in long double so huge capacities do not overflow.
  const long double geometric = static_cast<long double>(capacity) * static_cast<long double>(policy.growth_factor);
  std::size_t target = geometric >= static_cast<long double>(limit) ? limit : static_cast<std::size_t>(geometric);
  const auto min_rounded = round_up(std::max(policy.min_chunk, granularity), granularity);
  const std::size_t min_chunk = min_rounded ? *min_rounded : limit;
  if (limit - capacity >= min_chunk) target = std::max(target, capacity + min_chunk);
  target = std::min(std::max(target, needed), limit);
  target = target / granularity * granularity;  // >= needed, which is a multiple

  std::size_t remaining = target - capacity;
  while (remaining > 0) {
    const std::size_t piece = policy.max_chunk != 0 ? std::min(remaining, policy.max_chunk) : remaining;
    sizes.push_back(piece);
    remaining -= piece;
  }
  return sizes;
}

}  // namespace membridge::cuda
